"""Measurements of a site: every number of ``report.json``, computed with the library.

Each page is measured twice, on its whole text (navigation, sidebars and footer included) and on
its main content (boilerplate removed by :func:`neardup.text.html.extract_text`, the extraction
``dedup`` uses). Conventions, chosen once and documented in the report:

- Pairs: all ``n(n-1)/2`` pairs when there are at most ``sample`` of them, else ``sample``
  distinct pairs drawn with splitmix64 from ``seed`` (the same seed gives the same pairs on every
  machine). Jaccard is exact, on the sorted shingle-id arrays of both pages.
- ``above`` counts pairs *at or above* 0.5 / 0.8 / 0.9, the same comparison the cluster
  threshold uses.
- A page without main content (extraction found none) shares no main content with any page: its
  main-content Jaccard is 0 in the pair statistics, and it takes no part in the main-content
  duplicate groups and clusters; it is listed under ``main_content_empty``.
- Clusters: candidate pairs are all pairs for a small site (when the sample is all pairs), else
  the MinHash LSH band collisions (banding chosen for ``threshold``) plus the sampled pairs; every
  candidate is verified with the exact Jaccard, pages with the same fingerprint are joined
  directly, and union-find makes the clusters. ``clusters`` and ``exact_duplicate_groups`` are on
  main content; ``whole_page_clusters`` and ``whole_page_exact_duplicate_groups`` on whole pages.
- Boilerplate share of a page: the fraction of its distinct shingles that occur on more than
  ``boilerplate_fraction`` of the site's pages (default 0.5: a 4-word sequence on more than half of
  all pages is template, not prose).
- Figure 1 follows the site's most similar pair that is not an exact copy (the estimate of an
  exact copy is always 1); run ``r`` uses MinHash seed ``derive(seed, "report-figure1", r)``.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from dataclasses import dataclass

import numpy as np

from ..config import InputOptions, ReportConfig
from ..errors import InputError
from ..exact.similarity import jaccard_sorted
from ..hashing import derive, splitmix64_array
from ..lsh.banding import band_keys
from ..lsh.params import optimal_banding, probability, threshold as band_threshold
from ..params import MinHashParams
from ..sketch.estimate import binomial_stderr
from ..sketch.minhash import EMPTY, MinHash
from ..sketch.permutations import family_for
from ..sketch.simhash import SimHash, hamming
from ..stages.candidates import band_candidates
from ..stages.exact import first_holders
from ..stages.survivors import components
from ..stages.verify import pair_similarities

LEVELS = ("0.5", "0.8", "0.9")
#: The seed's banding examples: a 200-value sketch cut three ways.
REFERENCE_BANDINGS = ((40, 5), (20, 10), (10, 20))


# ---------------------------------------------------------------------------------------------
# Reading a site: each record twice, as whole-page text and as main content, with the readers
# and the extraction that ``dedup`` uses.

@dataclass
class Page:
    id: str
    whole: str
    main: str


def _read_share(paths, opts: InputOptions, mode: str, jobs: int, share: int):
    """``(ordinal, Document | Skipped)`` of the records with ``ordinal % jobs == share``."""
    from ..io import read_documents

    kwargs = dict(format=opts.format, id_field=opts.id_field, text_field=opts.text_field, content=opts.content,
                  html=mode, max_bytes=opts.max_bytes)
    if jobs > 1:
        try:  # the readers' ordinal filter: records of other shares are counted, not extracted
            from ..io.read import RecordReader, plan_inputs

            records = RecordReader(want=lambda n: n % jobs == share, **{k: v for k, v in kwargs.items() if k != "format"}
                              ).read(plan_inputs(paths, opts.format))
        except (ImportError, TypeError):
            records = read_documents(paths, **kwargs)
    else:
        records = read_documents(paths, **kwargs)
    return [(r.ordinal, r) for r in records if r.ordinal % jobs == share]


def _read_both(args):
    paths, opts, jobs, share = args
    return _read_share(paths, opts, "whole", jobs, share), _read_share(paths, opts, "main", jobs, share)


def _resolve_fields(site: str, opts: InputOptions) -> InputOptions:
    if opts.text_field is not None:
        return InputOptions(format=opts.format, id_field=opts.id_field, text_field=opts.text_field,
                            content=opts.content or "text", max_bytes=opts.max_bytes)
    from ..io import iter_raw_records

    has_html = False
    for _, rec in iter_raw_records([site], format=opts.format, max_bytes=opts.max_bytes):
        if isinstance(rec, (bytes, bytearray)):
            try:
                rec = json.loads(rec)
            except ValueError:
                continue
        if isinstance(rec, dict):
            has_html = isinstance(rec.get("html"), str)
        break
    field_name = "html" if has_html else "text"
    return InputOptions(format=opts.format, id_field=opts.id_field, text_field=field_name,
                        content=opts.content or ("html" if has_html else "text"), max_bytes=opts.max_bytes)


def load_site(path: str, opts: InputOptions = InputOptions(), *, jobs: int = 1):
    """Pages of a site with their whole-page and main-content text, read with :mod:`neardup.io`.

    Returns ``(pages, skipped, info)``: the records read as documents, in input order, with ids
    relative to ``path`` when it is a folder; the records skipped, ``{"id", "reason", "detail"}``
    (non-HTML files in a folder of HTML pages only counted); and ``{"format", "extractor",
    "skipped_by_reason", ...}``. ``jobs`` processes share the extraction.
    """
    from ..io import detect_format

    if not os.path.exists(path):
        raise InputError(f"no such site: {path} (give a folder of HTML pages, a WARC file or a JSONL file)")
    opts = _resolve_fields(path, opts)
    fmt = detect_format(path) if opts.format == "auto" else opts.format
    jobs = max(1, int(jobs))
    tasks = [([path], opts, jobs, w) for w in range(jobs)]
    if jobs == 1:
        results = [_read_both(tasks[0])]
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        ctx = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            results = list(pool.map(_read_both, tasks))
    whole = dict(pair for res in results for pair in res[0])
    main = dict(pair for res in results for pair in res[1])
    prefix = path.rstrip("/") + "/" if os.path.isdir(path) else None

    def short(ident: str) -> str:
        return ident[len(prefix):] if prefix and ident.startswith(prefix) else ident

    from ..io import Document

    pages, skipped, reasons, seen = [], [], Counter(), Counter()
    for n in sorted(whole):
        rec = whole[n]
        if not isinstance(rec, Document):
            reasons[rec.reason] += 1
            if rec.reason != "not_html":
                skipped.append({"id": short(rec.id), "reason": rec.reason, "detail": rec.detail})
            continue
        m = main.get(n)
        ident = short(rec.id)
        seen[ident] += 1
        if seen[ident] > 1:  # ids must be unique in a report
            ident = f"{ident}#{seen[ident]}"
        pages.append(Page(ident, rec.text, m.text if isinstance(m, Document) else ""))
    info = {"format": fmt, "extractor": "neardup.text.html.extract_text", "text_field": opts.text_field,
            "content": opts.content, "skipped_by_reason": dict(sorted(reasons.items()))}
    return pages, skipped, info


# ---------------------------------------------------------------------------------------------
# Helpers

def pair_from_index(t: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Pair ``(i, j)``, ``i < j``, of linear index ``t`` in the order (0,1), (0,2), ..., (1,2), ..."""
    t = np.asarray(t, dtype=np.int64)

    def start(i):
        return i * (2 * n - i - 1) // 2

    b = 2 * n - 1
    i = np.floor((b - np.sqrt(np.maximum(b * b - 8.0 * t, 0.0))) / 2).astype(np.int64)
    i = np.clip(i, 0, max(n - 2, 0))
    for _ in range(3):  # correct float rounding at the row boundaries
        i = np.where(start(i) > t, i - 1, i)
        i = np.where((i + 1 <= n - 2) & (start(i + 1) <= t), i + 1, i)
    return i, t - start(i) + i + 1


def sample_pairs(n: int, sample: int, seed: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """Pairs of pages to measure: all pairs when there are at most ``sample``, else a deterministic sample.

    Returns ``(i, j, all_pairs)`` with the pairs in linear-index order.
    """
    total = n * (n - 1) // 2
    if total <= sample:
        i, j = np.triu_indices(n, 1)
        return i.astype(np.int64), j.astype(np.int64), True
    salt = derive(seed, "report-pairs", 0)
    chosen: dict[int, None] = {}
    start = 0
    while len(chosen) < sample:
        batch = 2 * (sample - len(chosen)) + 16
        draws = splitmix64_array(np.arange(start, start + batch, dtype=np.uint64), salt) % np.uint64(total)
        start += batch
        for v in draws.tolist():
            chosen.setdefault(v)
            if len(chosen) == sample:
                break
    t = np.array(sorted(chosen), dtype=np.int64)
    i, j = pair_from_index(t, n)
    return i, j, False


def summary(values, levels=LEVELS) -> dict:
    """``{"mean", "median", "min", "max", "above": {level: count at or above}}`` of some values."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return {"mean": None, "median": None, "min": None, "max": None, "above": {lv: 0 for lv in levels}}
    return {"mean": float(v.mean()), "median": float(np.median(v)), "min": float(v.min()), "max": float(v.max()),
            "above": {lv: int(np.count_nonzero(v >= float(lv))) for lv in levels}}


def _popcount(x: np.ndarray) -> np.ndarray:
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x).astype(np.int64)
    return np.unpackbits(x.view(np.uint8).reshape(-1, 8), axis=1).sum(axis=1).astype(np.int64)


def _measure_text(text: str, cfg: ReportConfig) -> tuple[np.ndarray, int | None, int]:
    """Shingle ids, content fingerprint and simhash of one text, its words listed once.

    The same values as :func:`shingle_ids`, :func:`fingerprint` and :meth:`SimHash.from_text`
    (tests check it); tokenizing is most of their cost, and each of them tokenizes on its own.
    """
    from ..exact.fingerprint import fingerprint_of_content
    from ..stages.sketch import shingle_runs
    from ..text.tokenize import words

    params = cfg.shingle
    word_list = words(text, params.normalize)
    ids, _ = shingle_runs([text], params)
    content = " ".join(word_list).encode("utf-8", "surrogatepass")
    fp = fingerprint_of_content(content) if content else None
    sh = SimHash.from_features(Counter(word_list), hash=cfg.simhash_hash).value
    return ids, fp, sh


class _Side:
    """One text of every page (whole page or main content): shingles, fingerprints, sketches.

    Exact copies, candidate pairs, verification and clusters are the dedup stages'
    (:mod:`neardup.stages`), called on this side's arrays, so that the report measures what
    ``dedup`` would find; only the candidates differ in one choice (every pair of a band bucket,
    not a window of them: a site is small, and the report counts its candidates)."""

    def __init__(self, texts: list[str], cfg: ReportConfig, family):
        self.cfg = cfg
        self.family = family
        self.ids, self.fps, simhashes = [], [], []
        for text in texts:
            ids, fp, sh = _measure_text(text, cfg)
            self.ids.append(ids)
            self.fps.append(fp)
            simhashes.append(sh)
        self.sizes = np.array([a.size for a in self.ids], dtype=np.int64)
        self.offsets = np.concatenate(([0], np.cumsum(self.sizes))).astype(np.int64)
        self.valid = self.sizes > 0
        sigs = np.full((len(texts), cfg.num_perm), EMPTY, dtype=np.uint64)
        for p, ids in enumerate(self.ids):
            if ids.size:
                sk = MinHash(cfg.minhash, hash=cfg.shingle.hash, family=family)
                sk.update_ids(ids)
                sigs[p] = sk.hashvalues
        self.sigs = sigs
        self.simhash = np.array(simhashes, dtype=np.uint64)
        self._cache: dict[tuple[int, int], float] = {}
        self._exact_groups: list[list[int]] | None = None

    def jaccards(self, pairs) -> np.ndarray:
        """Exact Jaccard of each pair ``(i, j)`` of pages (the verify stage's); 0 where either
        page has no text on this side."""
        keys = [(i, j) if i < j else (j, i) for i, j in pairs]
        todo = sorted({k for k in keys if k not in self._cache})
        if todo:
            ci, cj = (np.array(c, dtype=np.int64) for c in zip(*todo))
            both = self.valid[ci] & self.valid[cj]
            found = np.zeros(ci.size)
            if both.any():
                found[both] = pair_similarities(self.ids, self.offsets, self.sizes, ci[both], cj[both])["jaccard"]
            self._cache.update(zip(todo, found.tolist()))
        return np.array([self._cache[k] for k in keys], dtype=np.float64)

    def jaccard(self, i: int, j: int) -> float:
        """Exact Jaccard of pages i and j; 0 when either page has no text on this side."""
        got = self._cache.get((i, j) if i < j else (j, i))
        return got if got is not None else float(self.jaccards([(i, j)])[0])

    def sketch(self, p: int) -> MinHash:
        return MinHash(self.cfg.minhash, hash=self.cfg.shingle.hash, family=self.family, hashvalues=self.sigs[p])

    def exact_groups(self) -> list[list[int]]:
        """Pages with the same content fingerprint, first holder first (the exact stage's), in
        the order of their first holders; pages without text take no part."""
        if self._exact_groups is None:
            fps = np.array([fp or 0 for fp in self.fps], dtype=np.uint64)
            has_content = np.array([fp is not None for fp in self.fps], dtype=np.int64)
            _, _, copies = first_holders(range(len(self.fps)), fps, has_content, {})
            groups: dict[int, list[int]] = {}
            for copy, holder in copies:
                groups.setdefault(holder, [holder]).append(copy)
            self._exact_groups = [groups[h] for h in sorted(groups)]
        return self._exact_groups

    def lsh_candidates(self, bands: int, rows: int) -> set[tuple[int, int]]:
        """Pairs that share a band key, one page per exact-duplicate group."""
        in_group = {p for g in self.exact_groups() for p in g[1:]}
        members = np.array([p for p in range(len(self.ids)) if self.valid[p] and p not in in_group], dtype=np.int64)
        if members.size < 2:
            return set()
        ci, cj, _ = band_candidates(band_keys(self.sigs[members], bands, rows), window=int(members.size))
        return set(zip(members[ci].tolist(), members[cj].tolist()))

    def clusters(self, candidates, threshold: float) -> tuple[list[list[int]], int, set[tuple[int, int]]]:
        """Components of the verified pairs at ``threshold`` plus the exact-duplicate groups (the
        cluster stage's), the number of pairs verified, and the pairs that passed."""
        # no text, or already joined as exact copies: not verified
        verify = sorted((i, j) for i, j in candidates
                        if self.valid[i] and self.valid[j] and self.fps[i] != self.fps[j])
        passed = {pr for pr, jac in zip(verify, self.jaccards(verify).tolist()) if jac >= threshold}
        edges = [(g[0], p) for g in self.exact_groups() for p in g[1:]] + sorted(passed)
        ei, ej = (np.array([e[k] for e in edges], dtype=np.int64) for k in (0, 1))
        groups: dict[int, list[int]] = {}
        for p, smallest in enumerate(components(len(self.ids), ei, ej).tolist()):
            groups.setdefault(smallest, []).append(p)
        return sorted((g for g in groups.values() if len(g) > 1), key=lambda g: g[0]), len(verify), passed

    def boilerplate(self, fraction: float) -> tuple[np.ndarray, int, int]:
        """Per-page share of shingles on more than ``fraction`` of this side's pages (NaN: no text)."""
        n = int(self.valid.sum())
        min_pages = math.floor(fraction * n) + 1
        share = np.full(len(self.ids), np.nan)
        if n == 0:
            return share, min_pages, 0
        everything = np.concatenate([a for a in self.ids if a.size])
        uniq, counts = np.unique(everything, return_counts=True)
        common = uniq[counts >= min_pages]
        for p, ids in enumerate(self.ids):
            if ids.size:
                share[p] = np.isin(ids, common, assume_unique=True).mean() if common.size else 0.0
        return share, min_pages, int(common.size)


def _stats_of(values: np.ndarray) -> dict:
    v = values[~np.isnan(values)]
    if v.size == 0:
        return {"mean": None, "median": None, "min": None, "max": None}
    return {"mean": float(v.mean()), "median": float(np.median(v)), "min": float(v.min()), "max": float(v.max())}


def convergence(ids_a: np.ndarray, ids_b: np.ndarray, cfg: ReportConfig, label: str = "report-figure1") -> dict:
    """Figure 1: ``cfg.runs`` runs of the MinHash estimate as m grows from 1 to ``cfg.num_perm``.

    Run ``r`` has its own permutations, seed ``derive(cfg.seed, label, r)``; the estimate with m
    functions is the agreement over the first m positions (the first m permutations of a family
    are the m-permutation family of the same seed).
    """
    true_j = jaccard_sorted(ids_a, ids_b)[0]
    m = np.arange(1, cfg.num_perm + 1)
    runs = np.empty((cfg.runs, cfg.num_perm))
    for r in range(cfg.runs):
        params = MinHashParams(num_perm=cfg.num_perm, seed=derive(cfg.seed, label, r), family=cfg.family)
        a, b = MinHash(params), MinHash(params)
        a.update_ids(ids_a)
        b.update_ids(ids_b)
        agree = (a.hashvalues == b.hashvalues) & ~((a.hashvalues == EMPTY) & (b.hashvalues == EMPTY))
        runs[r] = np.cumsum(agree) / m
    q25, median, q75 = np.percentile(runs, [25, 50, 75], axis=0)
    stderr = np.array([binomial_stderr(true_j, int(k)) for k in m])
    checkpoints = [k for k in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000) if k <= cfg.num_perm]
    if cfg.num_perm not in checkpoints:
        checkpoints.append(cfg.num_perm)
    return {
        "jaccard": true_j, "runs": cfg.runs, "num_perm": cfg.num_perm,
        "at": [{"m": k, "median": float(median[k - 1]), "q25": float(q25[k - 1]), "q75": float(q75[k - 1]),
                "stderr": float(stderr[k - 1]),
                "within_one_stderr": int(np.count_nonzero(np.abs(runs[:, k - 1] - true_j) <= stderr[k - 1] + 1e-12))}
               for k in checkpoints],
        "series": {"m": m.tolist(), "median": median.tolist(), "q25": q25.tolist(), "q75": q75.tolist(),
                   "stderr": stderr.tolist()},
        "_runs": runs,  # for the plot; dropped from report.json
    }


def banding_curves(num_perm: int, threshold: float, used=None) -> dict:
    """Figure 2: the seed's three bandings of a 200-value sketch and the banding used for ``threshold``."""
    used = used or optimal_banding(threshold, num_perm)
    configs = [{"bands": b, "rows": r, "num_perm": b * r, "threshold": band_threshold(b, r), "used": False}
               for b, r in REFERENCE_BANDINGS]
    configs.append({"bands": used.bands, "rows": used.rows, "num_perm": num_perm, "threshold": used.threshold,
                    "used": True, "target": threshold, "false_positive_area": used.false_positive_area,
                    "false_negative_area": used.false_negative_area})
    js = (1 / 3, 0.5, 0.8, 0.9)
    for c in configs:
        c["probabilities"] = {f"{j:.4g}": probability(j, c["bands"], c["rows"]) for j in js}
    return {"configs": configs}


# ---------------------------------------------------------------------------------------------
# The site report

def measure_site(pages: list[Page], cfg: ReportConfig, *, site: str = "", skipped=(), info=None) -> dict:
    """Every measurement of the site as one JSON-ready dict (plot data under keys starting with ``_``)."""
    n = len(pages)
    if n < 2:
        raise InputError(f"{site or 'the site'} has {n} page{'s' if n != 1 else ''} with text; a report needs at least 2")
    names = [p.id for p in pages]
    family = family_for(cfg.family, cfg.num_perm, cfg.seed)
    whole = _Side([p.whole for p in pages], cfg, family)
    main = _Side([p.main for p in pages], cfg, family)
    total = n * (n - 1) // 2

    # sampled pairs
    pi, pj, all_pairs = sample_pairs(n, cfg.sample, cfg.seed)
    jw = whole.jaccards(zip(pi.tolist(), pj.tolist()))
    jm = main.jaccards(zip(pi.tolist(), pj.tolist()))
    hw = _popcount(whole.simhash[pi] ^ whole.simhash[pj])
    both_main = main.valid[pi] & main.valid[pj]
    hm = _popcount(main.simhash[pi] ^ main.simhash[pj])[both_main]

    # candidates and clusters
    used = optimal_banding(cfg.threshold, cfg.num_perm)
    sampled = set(zip(pi.tolist(), pj.tolist()))
    if all_pairs:
        cand_main = cand_whole = sampled
        method = "all_pairs"
    else:
        cand_main = main.lsh_candidates(used.bands, used.rows) | sampled
        cand_whole = whole.lsh_candidates(used.bands, used.rows) | sampled
        method = "lsh"
    clusters_main, verified_main, passed_main = main.clusters(cand_main, cfg.threshold)
    clusters_whole, verified_whole, passed_whole = whole.clusters(cand_whole, cfg.threshold)

    # top pairs: sampled pairs, candidate pairs at the threshold, and exact copies
    pool = set(sampled) | passed_main | passed_whole
    for side in (main, whole):
        for g in side.exact_groups():
            pool.update((g[0], p) for p in g[1:])
    pool = sorted(pool)
    by_main, by_whole = main.jaccards(pool).tolist(), whole.jaccards(pool).tolist()
    ranked = [pr for _, _, pr in sorted(zip((-x for x in by_main), (-x for x in by_whole), pool))]
    top = []
    m = cfg.num_perm
    for i, j in ranked[: cfg.top]:
        jmain = main.jaccard(i, j)
        est = main.sketch(i).jaccard(main.sketch(j)) if main.valid[i] and main.valid[j] else None
        top.append({
            "a": names[i], "b": names[j], "jaccard_whole": whole.jaccard(i, j), "jaccard_main": jmain,
            "minhash_estimate": est.value if est else None,
            "expected_error": binomial_stderr(jmain, m),
            "hamming": hamming(int(main.simhash[i]), int(main.simhash[j])) if est else None,
            "hamming_whole": hamming(int(whole.simhash[i]), int(whole.simhash[j])),
            "sampled": (i, j) in sampled,
        })

    # Figure 1: the most similar pair that is not an exact copy
    fig1_pair = next((pr for pr in ranked if main.valid[pr[0]] and main.valid[pr[1]] and main.jaccard(*pr) < 1.0),
                     ranked[0])
    fig1_side = main if main.valid[fig1_pair[0]] and main.valid[fig1_pair[1]] else whole
    fig1 = convergence(fig1_side.ids[fig1_pair[0]], fig1_side.ids[fig1_pair[1]], cfg)
    fig1["pair"] = [names[fig1_pair[0]], names[fig1_pair[1]]]
    fig1["text"] = "main_content" if fig1_side is main else "whole_page"

    bw, minw, commonw = whole.boilerplate(cfg.boilerplate_fraction)
    bm, minm, commonm = main.boilerplate(cfg.boilerplate_fraction)

    def ids_of(groups):
        return [[names[p] for p in g] for g in groups]

    def size_stats(side):
        s = side.sizes[side.valid]
        return {"mean": float(s.mean()) if s.size else None, "median": float(np.median(s)) if s.size else None,
                "total": int(s.sum())}

    whole_summary, main_summary = summary(jw), summary(jm)
    result = {
        "pages": n,
        "exact_duplicate_groups": ids_of(main.exact_groups()),
        "sampled_pairs": int(pi.size),
        "total_pairs": total,
        "all_pairs": all_pairs,
        "whole_page": whole_summary,
        "main_content": main_summary,
        "inflation": {
            "mean_whole_minus_main": float((jw - jm).mean()) if jw.size else None,
            "pairs_whole_higher": int(np.count_nonzero(jw > jm)),
            "pairs_main_higher": int(np.count_nonzero(jm > jw)),
            "ratio_of_means": (whole_summary["mean"] / main_summary["mean"]) if main_summary["mean"] else None,
        },
        "top_pairs": top,
        "clusters": ids_of(clusters_main),
        "whole_page_clusters": ids_of(clusters_whole),
        "whole_page_exact_duplicate_groups": ids_of(whole.exact_groups()),
        "candidates": {"method": method, "bands": used.bands, "rows": used.rows, "threshold": used.threshold,
                       "main_content": len(cand_main), "whole_page": len(cand_whole),
                       "verified_main_content": verified_main, "verified_whole_page": verified_whole},
        "boilerplate_share": {
            "fraction": cfg.boilerplate_fraction, "min_pages": minw, "shingles": commonw,
            **_stats_of(bw),
            "main_content": {"min_pages": minm, "shingles": commonm, **_stats_of(bm)},
            "per_page": [{"id": names[p], "whole_page": float(bw[p]),
                          "main_content": None if math.isnan(bm[p]) else float(bm[p])} for p in range(n)],
        },
        "simhash": {
            "whole_page": {**summary(hw, ()), "within_3": int(np.count_nonzero(hw <= 3))},
            "main_content": {**summary(hm, ()), "within_3": int(np.count_nonzero(hm <= 3))},
        },
        "shingles_per_page": {"whole_page": size_stats(whole), "main_content": size_stats(main)},
        "main_content_empty": [names[p] for p in range(n) if not main.valid[p]],
        "skipped": list(skipped),
        "figure1": fig1,
        "figure2": banding_curves(cfg.num_perm, cfg.threshold, used),
        "config": {"site": site, **(info or {}), **cfg.as_dict(),
                   "banding": {"bands": used.bands, "rows": used.rows, "threshold": used.threshold},
                   "candidates": method},
        "_series": {"jaccard_whole": jw, "jaccard_main": jm, "hamming_whole": hw, "hamming_main": hm,
                    "boilerplate_whole": bw[~np.isnan(bw)], "boilerplate_main": bm[~np.isnan(bm)]},
    }
    for side in ("whole_page", "main_content"):
        result["simhash"][side].pop("above")
    return result


def public(obj):
    """A copy without the plot-only keys (those starting with ``_``), ready for JSON."""
    if isinstance(obj, dict):
        return {k: public(v) for k, v in obj.items() if not str(k).startswith("_")}
    if isinstance(obj, (list, tuple)):
        return [public(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and math.isnan(obj):
        return None
    return obj
