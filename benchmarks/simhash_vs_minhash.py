#!/usr/bin/env python3
"""Simhash (k = 0..6) against MinHash + LSH, scored against two exact ground truths.

The seed's section "Shingles or simhash" says the two methods measure different things: the
Jaccard coefficient of shingle sets is sensitive to word order and to every edit, while simhash
over words ignores order and moves only slightly under a short edit to a long page (it estimates
the cosine similarity of the word-count vectors). This script measures that on a real corpus.

Documents: a deterministic subset of ``benchmarks/data/corpus.jsonl`` (default: blocks of 100
consecutive lines, every 5th block, so that all sources are represented and near-duplicate
siblings, which sit next to each other in the file, stay together). Documents without a word are
dropped, and exact duplicates (the same content fingerprint of the word tokens, as ``neardup
dedup`` removes them before any sketching) are collapsed to their first occurrence: every method
finds those, and their quadratic number of pairs would swamp the table.

Ground truths, every pair computed exactly:

(a) Jaccard of the sets of word 5-shingles >= 0.8: ``neardup.evaluate.shingle_runs`` and
    ``all_pairs`` (all-pairs with prefix filtering, every candidate measured exactly);
(b) cosine of the word-count vectors >= 0.95 (and >= 0.9): the words are those of
    ``SimHash.from_text`` (``neardup.text.tokenize.words``, default normalization); the
    L2-normalised count vectors form a sparse matrix ``X`` and ``X X^T`` is computed exactly, rows
    in chunks. Words in many documents make that product nearly dense, so the columns are split:
    the ``dense_cols`` words in the most documents go into a dense matrix (one BLAS product per
    chunk), the rest stay sparse; both parts are summed.

Rows of the table:

* ``simhash k``: ``SimHash.from_text`` fingerprints (64 bits, words weighted by count, xxh3),
  computed here as one sparse product (count matrix x the +-1 bit matrix of every word's hash),
  checked equal to ``SimHash.from_text`` on a sample; all pairs within k bits from
  ``SimhashIndex(max_distance=k).pair_chunks()``. No verification: this is what
  ``neardup dedup --method simhash`` links.
* ``MinHash LSH candidates``: ``DedupConfig()`` defaults (128 permutations, mulshift64, seed 1,
  threshold 0.8, banding 18 x 7), ``_native.signatures``, ``band_keys``, ``candidate_pairs``
  (default bucket window).
* ``MinHash estimate >= 0.8``: the candidates whose MinHash estimate is at least 0.8 (sketch only,
  no exact check; what peers without verification report).
* ``MinHash + verification``: what ``neardup dedup`` keeps as edges: candidates whose estimate
  passes the pipeline's floor (0.8 - 4 sd - 1/128), then exact Jaccard >= 0.8 on the stored
  shingle ids. Its precision against (a) is 1 by construction.

Usage::

    python benchmarks/simhash_vs_minhash.py              # sample: 4,731 docs kept, ~1 min loaded
    python benchmarks/simhash_vs_minhash.py --every 1    # the whole corpus, ~7-9 min loaded
    python benchmarks/simhash_vs_minhash.py --limit 1000 --every 1 --out /tmp/x.json   # quick

Library use: ``compare(texts) -> dict`` (the table and the ground truths) and
``format_table(result) -> str``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from collections import Counter
from datetime import datetime, timezone
from itertools import pairwise
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

KS = tuple(range(7))
JACCARD_T = 0.8
COSINE_TS = (0.95, 0.9)
SHINGLE_K = 5
JACCARD_BANDS = (0.8, 0.85, 0.9, 0.95, 1.0)
COSINE_BANDS = (0.9, 0.95, 0.97, 0.98, 0.99, 1.0)


# ----------------------------------------------------------------------------- pair sets


def _pack(i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Sorted distinct pairs (min, max) packed as ``min << 32 | max`` (int64)."""
    i = np.asarray(i, dtype=np.int64)
    j = np.asarray(j, dtype=np.int64)
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    return np.unique((lo << 32) | hi)


def _score(reported: np.ndarray, truth: np.ndarray) -> dict:
    hit = int(np.isin(reported, truth, assume_unique=True).sum()) if reported.size and truth.size else 0
    return {
        "true_positives": hit,
        "precision": (hit / reported.size) if reported.size else None,
        "recall": (hit / truth.size) if truth.size else None,
    }


# ----------------------------------------------------------------------------- words, simhash, cosine


def word_counts(texts):
    """(csr count matrix n x V (float64), vocabulary list) of the texts' words as SimHash sees them."""
    from scipy import sparse

    from neardup.params import NormalizeParams
    from neardup.text.tokenize import words

    norm = NormalizeParams()
    vocab: dict[str, int] = {}
    indptr = [0]
    indices: list[int] = []
    data: list[int] = []
    for text in texts:
        c = Counter(words(text, norm))
        get = vocab.setdefault
        for w, v in c.items():
            indices.append(get(w, len(vocab)))
            data.append(v)
        indptr.append(len(indices))
    m = sparse.csr_matrix((np.array(data, dtype=np.float64), np.array(indices, dtype=np.int64),
                           np.array(indptr, dtype=np.int64)), shape=(len(texts), len(vocab)))
    return m, list(vocab)


def simhashes(counts, vocab) -> np.ndarray:
    """``SimHash.from_text`` of every document, from its count row: sign of counts @ (+-1 bits)."""
    from neardup.hashing import hash64

    h = np.fromiter((hash64(w, "xxh3") for w in vocab), dtype=np.uint64, count=len(vocab))
    shifts = np.arange(63, -1, -1, dtype=np.uint64)  # bit 1 (MSB) first, as sketch.simhash
    signs = 2.0 * ((h[:, None] >> shifts[None, :]) & np.uint64(1)).astype(np.float64) - 1.0
    totals = np.asarray(counts @ signs)  # integer sums: exact in float64
    bits = (totals > 0).astype(np.uint64)
    return (bits << shifts[None, :]).sum(axis=1, dtype=np.uint64)


def cosine_pairs(counts, floor: float, *, dense_cols: int = 2048, chunk: int = 512):
    """Every pair (i < j) whose word-count cosine is >= ``floor``, exactly: ``(i, j, cosine)``."""
    from scipy import sparse

    n = counts.shape[0]
    norms = np.sqrt(np.asarray(counts.multiply(counts).sum(axis=1)).ravel())
    x = sparse.diags(np.where(norms > 0, 1.0 / np.where(norms > 0, norms, 1.0), 0.0)) @ counts
    x = sparse.csr_matrix(x)
    df = np.diff(sparse.csc_matrix(counts).indptr)
    by_df = np.argsort(-df, kind="stable")
    common = np.sort(by_df[:dense_cols][df[by_df[:dense_cols]] >= 2])  # the most widespread words
    rare = np.setdiff1d(np.arange(df.size), common)
    xd = np.ascontiguousarray(x[:, common].toarray())          # n x |common|, dense
    xs = sparse.csr_matrix(x[:, rare])
    xst = sparse.csr_matrix(xs.T)
    out_i, out_j, out_c = [], [], []
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        block = xd[s:e] @ xd[s:].T                              # (e - s) x (n - s)
        block += (xs[s:e] @ xst[:, s:]).toarray()
        r, c = np.nonzero(block >= floor - 1e-12)
        gi, gj = r + s, c + s
        keep = gj > gi
        out_i.append(gi[keep])
        out_j.append(gj[keep])
        out_c.append(block[r[keep], c[keep]])
    if not out_i:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0)
    return (np.concatenate(out_i).astype(np.int64), np.concatenate(out_j).astype(np.int64),
            np.minimum(np.concatenate(out_c), 1.0))


def _binom_cdf(k: int, n: int, p: np.ndarray) -> np.ndarray:
    """P(Binomial(n, p) <= k), elementwise in p (scipy.stats takes seconds to import)."""
    return sum(math.comb(n, i) * p**i * (1.0 - p) ** (n - i) for i in range(k + 1))


def _check_cosine(texts, ci, cj, cval, floor: float, n_check: int) -> None:
    """The product agrees with ``neardup.exact.similarity.cosine`` on sampled reported pairs, and
    sampled other pairs are below the floor."""
    from neardup.exact.similarity import cosine
    from neardup.text.tokenize import words

    rng = np.random.default_rng(0)
    n = len(texts)
    if n < 2:
        return
    found = _pack(ci, cj)
    for q in rng.choice(ci.size, size=min(ci.size, n_check), replace=False).tolist() if ci.size else []:
        ref = cosine(words(texts[ci[q]]), words(texts[cj[q]]))
        if abs(ref - cval[q]) > 1e-9:
            raise AssertionError(f"cosine of ({ci[q]}, {cj[q]}): product {cval[q]}, exact.similarity {ref}")
    a = rng.integers(0, n, size=n_check)
    b = rng.integers(0, n, size=n_check)
    for x, y in zip(a.tolist(), b.tolist()):
        if x == y:
            continue
        ref = cosine(words(texts[x]), words(texts[y]))
        listed = bool(np.isin((min(x, y) << 32) | max(x, y), found))
        if (ref >= floor) != listed and abs(ref - floor) > 1e-9:
            raise AssertionError(f"pair ({x}, {y}) has cosine {ref} but listed={listed}")


def simhash_pairs(fps: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """All pairs within ``k`` bits (packed) with ``SimhashIndex``, and their distances."""
    from neardup.index import SimhashIndex

    index = SimhashIndex(max_distance=k, expected_size=fps.size)
    index.add(np.arange(fps.size, dtype=np.int64), fps)
    parts = list(index.pair_chunks())
    if not parts:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    a = np.concatenate([p[0] for p in parts]).astype(np.int64)
    b = np.concatenate([p[1] for p in parts]).astype(np.int64)
    d = np.concatenate([p[2] for p in parts]).astype(np.int64)
    packed = (np.minimum(a, b) << 32) | np.maximum(a, b)
    order = np.argsort(packed)
    packed, d = packed[order], d[order]
    if packed.size > 1 and (packed[1:] == packed[:-1]).any():
        raise AssertionError("SimhashIndex reported a pair twice")
    return packed, d


# ----------------------------------------------------------------------------- the comparison


def compare(texts, *, jobs: int = 1, dense_cols: int = 2048, check_simhash: int = 200, check_pairs: int = 100,
            log=None) -> dict:
    """Score simhash k = 0..6 and MinHash + LSH against exact Jaccard and exact cosine.

    ``texts`` are taken as they are (no dedup here; the caller collapses exact duplicates).
    Returns a dict with ``documents``, ``truth`` (pair counts and their overlap), ``rows`` (one
    per method: ``pairs`` and, per truth, ``true_positives``, ``precision``, ``recall``) and
    ``seconds`` per stage.
    """
    from neardup import _native
    from neardup.cluster.candidates import (
        candidate_pairs,
        estimate_similarity,
        exact_overlaps,
        similarities,
    )
    from neardup.evaluate import all_pairs, shingle_runs
    from neardup.lsh.banding import band_keys
    from neardup.params import ShingleParams
    from neardup import DedupConfig
    from neardup.sketch.simhash import SimHash

    say = log or (lambda *_: None)
    texts = list(texts)
    n = len(texts)
    seconds: dict[str, float] = {}

    def timed(name, fn, *a, **kw):
        t = time.perf_counter()
        r = fn(*a, **kw)
        seconds[name] = round(time.perf_counter() - t, 3)
        say(f"{name}: {seconds[name]:.1f} s")
        return r

    # (a) exact Jaccard of word 5-shingles
    sp = ShingleParams(k=SHINGLE_K)
    ids, offsets = timed("shingles", shingle_runs, texts, sp, jobs=jobs)
    ji, jj, jval = timed("truth_jaccard", all_pairs, ids, offsets, JACCARD_T)
    truth = {f"jaccard>={JACCARD_T:g}": _pack(ji, jj)}

    # (b) exact cosine of word counts
    counts, vocab = timed("word_counts", word_counts, texts)
    ci_, cj_, cval = timed("truth_cosine", cosine_pairs, counts, min(COSINE_TS), dense_cols=dense_cols)
    for t in COSINE_TS:
        sel = cval >= t - 1e-12
        truth[f"cosine>={t:g}"] = _pack(ci_[sel], cj_[sel])
    _check_cosine(texts, ci_, cj_, cval, min(COSINE_TS), check_pairs)

    # simhash fingerprints (vectorised) and a check against SimHash.from_text
    fps = timed("simhash_fingerprints", simhashes, counts, vocab)
    sample = np.unique(np.linspace(0, n - 1, min(n, check_simhash)).astype(np.int64)) if n else []
    for d in sample.tolist():
        ref = SimHash.from_text(texts[d]).value
        if ref != int(fps[d]):
            raise AssertionError(f"vectorised simhash of document {d} is {int(fps[d]):016x}, "
                                 f"SimHash.from_text gives {ref:016x}")

    rows = []
    found: dict[str, np.ndarray] = {}
    t0 = time.perf_counter()
    prev = None
    for k in KS:
        packed, dist = simhash_pairs(fps, k)
        if prev is not None and not np.isin(prev, packed, assume_unique=True).all():
            raise AssertionError(f"pairs within {k - 1} bits are not all within {k} bits")
        prev = packed
        found[f"simhash k={k}"] = packed
        rows.append({"method": f"simhash k={k}", "family": "simhash", "k": k, "pairs": int(packed.size),
                     "pairs_by_distance": np.bincount(dist, minlength=k + 1).tolist() if dist.size else [0] * (k + 1),
                     "scores": {name: _score(packed, tp) for name, tp in truth.items()}})
    seconds["simhash_pairs_all_k"] = round(time.perf_counter() - t0, 3)
    say(f"simhash_pairs_all_k: {seconds['simhash_pairs_all_k']:.1f} s")

    # MinHash + LSH with the dedup defaults
    cfg = DedupConfig()
    band = cfg.banding()
    sig = timed("minhash_signatures", _native.signatures, texts, cfg.shingle, cfg.minhash, jobs=jobs,
                with_ids=True)
    t = time.perf_counter()
    keys = band_keys(sig.values, band.bands, band.rows)
    ci, cj, cstats = candidate_pairs(keys)
    est = estimate_similarity(sig.values, ci, cj)
    m = cfg.minhash.num_perm
    tt = cfg.threshold
    floor = tt - 4 * math.sqrt(tt * (1 - tt) / m) - 1.0 / m
    pass_floor = est >= floor
    inter = exact_overlaps(sig.ids, sig.offsets, ci[pass_floor], cj[pass_floor])
    jac = similarities(sig.n_shingles, inter, ci[pass_floor], cj[pass_floor])["jaccard"]
    verified = jac >= tt
    seconds["minhash_lsh_and_verify"] = round(time.perf_counter() - t, 3)
    say(f"minhash_lsh_and_verify: {seconds['minhash_lsh_and_verify']:.1f} s")
    mh = {
        "MinHash LSH candidates": _pack(ci, cj),
        f"MinHash estimate >= {tt:g}": _pack(ci[est >= tt], cj[est >= tt]),
        "MinHash + verification": _pack(ci[pass_floor][verified], cj[pass_floor][verified]),
    }
    found.update(mh)
    for name, packed in mh.items():
        rows.append({"method": name, "family": "minhash", "pairs": int(packed.size),
                     "scores": {tn: _score(packed, tp) for tn, tp in truth.items()}})

    # recall by band of the true similarity, with the textbook model where there is one:
    # simhash bits differ independently with probability theta/pi (Charikar), so a pair at cosine c
    # is within k bits with probability P(Binomial(64, arccos(c)/pi) <= k); an LSH candidate at
    # resemblance J with probability 1 - (1 - J^r)^b.
    jp = _pack(ji, jj)
    jv = jval[np.argsort((np.minimum(ji, jj) << 32) | np.maximum(ji, jj), kind="stable")]
    cp = _pack(ci_, cj_)
    cv = cval[np.argsort((np.minimum(ci_, cj_) << 32) | np.maximum(ci_, cj_), kind="stable")]
    for row in rows:
        packed = found[row["method"]]
        by = {}
        for what, tp, tv, edges in (("jaccard", jp, jv, JACCARD_BANDS), ("cosine", cp, cv, COSINE_BANDS)):
            hit = np.isin(tp, packed, assume_unique=True)
            out = {}
            for lo, hi in pairwise(edges):
                sel = (tv >= lo - 1e-12) & ((tv < hi - 1e-12) if hi < 1.0 else (tv <= 1.0 + 1e-12))
                cell = {"pairs": int(sel.sum()), "found": int(hit[sel].sum()),
                        "recall": (float(hit[sel].mean()) if sel.any() else None)}
                if sel.any() and what == "cosine" and row["family"] == "simhash":
                    theta = np.arccos(np.clip(tv[sel], -1.0, 1.0))
                    cell["model"] = float(_binom_cdf(row["k"], 64, theta / np.pi).mean())
                if sel.any() and what == "jaccard" and row["method"] == "MinHash LSH candidates":
                    cell["model"] = float(np.mean(1.0 - (1.0 - tv[sel] ** band.rows) ** band.bands))
                out[f"[{lo:g}, {hi:g}" + (")" if hi < 1.0 else "]")] = cell
            by[what] = out
        row["recall_by_band"] = by

    # how the two truths disagree
    names = list(truth)
    overlap = {f"{a} & {b}": int(np.isin(truth[a], truth[b], assume_unique=True).sum())
               for x, a in enumerate(names) for b in names[x + 1:]}
    jset, c95, c90 = truth[names[0]], truth[f"cosine>={COSINE_TS[0]:g}"], truth[f"cosine>={COSINE_TS[1]:g}"]
    j_not_c = jset[~np.isin(jset, c95, assume_unique=True)]
    c_not_j = c95[~np.isin(c95, jset, assume_unique=True)]
    cj_i, cj_j = c_not_j >> 32, c_not_j & 0xFFFFFFFF
    jac_c_not_j = similarities(np.diff(offsets), exact_overlaps(ids, offsets, cj_i, cj_j), cj_i, cj_j)["jaccard"]
    disagree = {
        "jaccard_not_cosine0.95": {"pairs": int(j_not_c.size),
                                   "cosine_in_[0.9,0.95)": int(np.isin(j_not_c, c90, assume_unique=True).sum())},
        "cosine0.95_not_jaccard": {"pairs": int(c_not_j.size),
                                   "jaccard_quantiles_0_25_50_75": (np.quantile(jac_c_not_j, [0, .25, .5, .75]).round(4).tolist()
                                                                     if c_not_j.size else None),
                                   "jaccard_below_0.5": int((jac_c_not_j < 0.5).sum()),
                                   "lowest_jaccard_examples": []},
    }
    if c_not_j.size:
        pos = np.searchsorted(cp, c_not_j)
        for q in np.argsort(jac_c_not_j, kind="stable")[:8].tolist():
            disagree["cosine0.95_not_jaccard"]["lowest_jaccard_examples"].append(
                {"a": int(cj_i[q]), "b": int(cj_j[q]), "jaccard": round(float(jac_c_not_j[q]), 4),
                 "cosine": round(float(cv[pos[q]]), 4), "simhash_distance": int((int(fps[cj_i[q]]) ^ int(fps[cj_j[q]])).bit_count())})
    result = {
        "documents": n,
        "shingles": {"k": SHINGLE_K, "unit": "word", "distinct_total": int(ids.size)},
        "vocabulary": len(vocab),
        "minhash": {"num_perm": m, "family": cfg.minhash.family, "seed": cfg.minhash.seed, "threshold": tt,
                    "bands": band.bands, "rows": band.rows, "estimate_floor": floor,
                    "candidate_stats": cstats, "candidates_below_floor": int((~pass_floor).sum())},
        "truth": {name: int(p.size) for name, p in truth.items()},
        "truth_overlap": overlap,
        "disagreement": disagree,
        "simhash_checked_against_from_text": len(sample),
        "rows": rows,
        "seconds": seconds,
    }
    return result


# ----------------------------------------------------------------------------- output


def _f(x) -> str:
    return "–" if x is None else f"{x:.3f}"


def format_table(result: dict, markdown: bool = True) -> str:
    truths = list(result["truth"])
    head = ["method", "pairs"]
    for t in truths:
        head += [f"P {t}", f"R {t}"]
    lines = []
    if markdown:
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|---|" + "---:|" * (len(head) - 1))
    else:
        lines.append("  ".join(head))
    for row in result["rows"]:
        cells = [row["method"], f"{row['pairs']:,}"]
        for t in truths:
            s = row["scores"][t]
            cells += [_f(s["precision"]), _f(s["recall"])]
        lines.append(("| " + " | ".join(cells) + " |") if markdown else "  ".join(cells))
    lines.append("")
    lines.append("true pairs: " + ", ".join(f"{t}: {v:,}" for t, v in result["truth"].items())
                 + "; overlap: " + ", ".join(f"{k}: {v:,}" for k, v in result["truth_overlap"].items()))
    return "\n".join(lines)


def format_bands(result: dict, methods=("simhash k=3", "simhash k=6", "MinHash LSH candidates",
                                        "MinHash estimate >= 0.8")) -> str:
    """Recall by band of true similarity (observed, and the model's value in parentheses)."""
    rows = {r["method"]: r for r in result["rows"]}
    methods = [m for m in methods if m in rows]
    lines = []
    for what in ("jaccard", "cosine"):
        bands = list(rows[methods[0]]["recall_by_band"][what])
        lines.append(f"| true {what} | pairs | " + " | ".join(methods) + " |")
        lines.append("|---|---:|" + "---:|" * len(methods))
        for b in bands:
            first = rows[methods[0]]["recall_by_band"][what][b]
            cells = [b, f"{first['pairs']:,}"]
            for m in methods:
                c = rows[m]["recall_by_band"][what][b]
                cells.append(_f(c["recall"]) + (f" ({c['model']:.3f})" if "model" in c else ""))
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def machine() -> dict:
    from importlib.metadata import version

    facts = {"platform": platform.platform(), "python": platform.python_version(), "nproc": os.cpu_count(),
             "load_average_start": list(os.getloadavg())}
    try:
        with open("/proc/cpuinfo") as fh:
            facts["cpu_model"] = next(line.split(":", 1)[1].strip() for line in fh if line.startswith("model name"))
        with open("/proc/meminfo") as fh:
            facts["memory_gib"] = round(int(fh.readline().split()[1]) / 2**20, 1)
    except (OSError, StopIteration):
        pass
    facts["versions"] = {p: version(p) for p in ("neardup", "numpy", "scipy", "xxhash")}
    return facts


def load(path: Path, *, block: int, every: int, limit: int | None):
    """(ids, texts) of the deterministic subset: lines in every ``every``-th block of ``block``."""
    import orjson

    ids, texts, srcs = [], [], []
    with open(path, "rb") as fh:
        for i, line in enumerate(fh):
            if limit is not None and i >= limit:
                break
            if (i // block) % every:
                continue
            rec = orjson.loads(line)
            ids.append(rec["id"])
            texts.append(rec["text"])
            srcs.append(rec.get("src", "?"))
    return ids, texts, srcs


def collapse_exact(ids, texts, jobs: int):
    """Drop documents without words and all but the first of each exact-duplicate group."""
    from neardup import _native

    fps = _native.fingerprints(texts, jobs=jobs)
    seen: set[int] = set()
    keep = []
    empty = dup = 0
    for d, fp in enumerate(fps.tolist()):
        if fp == 0:
            empty += 1
        elif fp in seen:
            dup += 1
        else:
            seen.add(fp)
            keep.append(d)
    return [ids[d] for d in keep], [texts[d] for d in keep], {"empty": empty, "exact_duplicates": dup}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=str(HERE / "data" / "corpus.jsonl"))
    ap.add_argument("--block", type=int, default=100, help="lines per block (default 100)")
    ap.add_argument("--every", type=int, default=5, help="keep every N-th block (default 5; 1 = all lines)")
    ap.add_argument("--limit", type=int, default=None, help="read only the first N lines")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--dense-cols", type=int, default=2048,
                    help="the most widespread words go into a dense matrix for the cosine product")
    ap.add_argument("--out", default=None, help="JSON path (default results/simhash-vs-minhash-<date>.json)")
    args = ap.parse_args(argv)

    facts = machine()
    started = datetime.now(timezone.utc)
    t = time.perf_counter()
    ids, texts, srcs = load(Path(args.corpus), block=args.block, every=args.every, limit=args.limit)
    src_of = dict(zip(ids, srcs))
    n_read = len(texts)
    ids, texts, dropped = collapse_exact(ids, texts, args.jobs)
    load_s = time.perf_counter() - t
    print(f"{n_read:,} documents read, {len(texts):,} after dropping {dropped['empty']} empty and "
          f"{dropped['exact_duplicates']} exact duplicates ({load_s:.1f} s)", file=sys.stderr)
    result = compare(texts, jobs=args.jobs, dense_cols=args.dense_cols,
                     log=lambda s: print(s, file=sys.stderr, flush=True))
    facts["load_average_end"] = list(os.getloadavg())
    result["corpus"] = {"path": os.path.relpath(args.corpus, HERE.parent), "block": args.block,
                        "every": args.every, "limit": args.limit, "documents_read": n_read,
                        "bytes_of_text": int(sum(len(x.encode()) for x in texts)), **dropped,
                        "sources_after_collapse": dict(Counter(src_of[i] for i in ids)),
                        "gcloud_man_pages_after_collapse": sum("/gcloud" in i for i in ids)}
    for ex in result["disagreement"]["cosine0.95_not_jaccard"]["lowest_jaccard_examples"]:
        ex["a"], ex["b"] = ids[ex["a"]], ids[ex["b"]]
    result["machine"] = facts
    result["command"] = " ".join(["python benchmarks/simhash_vs_minhash.py", *(argv if argv is not None else sys.argv[1:])])
    result["started"] = started.isoformat(timespec="seconds")
    result["wall_seconds"] = round(time.perf_counter() - t, 1)
    out = Path(args.out) if args.out else HERE / "results" / f"simhash-vs-minhash-{started:%Y-%m-%d}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(format_table(result))
    print()
    print(format_bands(result))
    print(f"results: {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
