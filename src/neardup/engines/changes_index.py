"""Change detection against a saved index: ``neardup changes INDEX NEW``, the earlier crawl being an
index made by ``neardup index add --url-field`` or ``neardup dedup --url-field --save-index``
(schema 7), whose records are not read again.

What an index keeps of each page, and so what can be told from it (``docs/changes.md``):

- its canonical URL (``docs.url_hash``, and ``docs.url`` where it is not the id), under the URL
  rules recorded in the index, which this comparison uses for NEW too: the join;
- its main-content fingerprint: ``unchanged`` (the same exact fingerprint) is exact;
- its MinHash signature (profiles default and full; lean stores none and is refused): the
  ``similarity`` of a ``changed`` page is **estimated** from the signatures, the fraction of equal
  values (with 16-bit values, profile default, less the 2**-16 by which unequal values agree by
  chance), and the containments both ways from that estimate and the two shingle counts
  (|A ∩ B| = J (|A| + |B|) / (1 + J)); exact values would need the shingle ids
  (``--store-shingles``), which this comparison does not read;
- its whole-page fingerprint, where ``index add`` was given HTML with ``--url-field``
  (``docs.page_fingerprint``, :func:`neardup.text.html_pages.page_fingerprint`): ``template`` (the
  same main content, another whole page) is then told apart from ``unchanged`` exactly, as
  between two crawls, NEW's fingerprints computed in the read of their main content; a page
  stored without it is ``unchanged`` whenever its main content is (the summary counts those
  pages). The fingerprints of an index whose configuration records no definition of them, or
  another (``IndexConfig.page_fingerprints``: made before the definition changed), count as
  absent, with a note in the summary's ``estimates``;
- no text: the report shows no word diffs;
- ``moved``: a gone page whose content is found under a URL only in NEW, among the index's near
  answers for that page (its LSH banding, at its own threshold) whose estimate is at least
  ``--threshold``; matched once each way, best first, as between two crawls. The near answers of
  all of NEW's pages under new URLs are found in one pass over the index's band postings
  (:func:`neardup.engines.against.band_pairs`), not a query each.

Pages of the index without a URL (added without ``--url-field``) take no part; of several stored
pages with one canonical URL, the first stored counts and the others are ``duplicate_urls``.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections import Counter

import numpy as np
import orjson

from ..config import DedupConfig
from ..errors import ConfigError
from ..io.write.outputs import write_atomic
from ..store import SeenIndex
from ..store.queries import docs_of, jaccard
from ..store.schema import url_hash_of
from ..text.html_scan import PAGE_FINGERPRINT_VERSION
from ..urls import surt
from .against import band_pairs
from .changes import (CHANGES_FILE, REPORT_FILE, SUMMARY_FILE, _Crawl, _line, _read_crawl, _report, _summary,
                      lines_bytes)

__all__ = ["detect_changes_since_index"]

_WORK = ".neardup-changes-work"


def detect_changes_since_index(index_path: str, new: list[str], output: str, config: DedupConfig = DedupConfig(), *,
                               url_field: str | None = None, jobs: int = 1, top: int = 20,
                               on_error: str = "error", rules=None) -> dict:
    """Compare the pages stored in index ``index_path`` with crawl ``new`` and write
    ``changes.jsonl``, ``summary.json`` and ``changes.html`` into ``output``, as
    :func:`neardup.engines.changes.detect_changes` does for two crawls; returns the summary.
    The shingles, MinHash and URL rules are the index's; ``config`` gives NEW's read options,
    ``threshold`` and ``measure`` (``measure`` must be jaccard: the index holds no samples).
    ``rules``: URL rules given for the run, which must be the index's (None: the index's)."""
    with SeenIndex(index_path, create=False) as index:
        cfg = index.config
        if cfg.urls is None:
            raise ConfigError(f"{index_path} stores no URLs (made before index schema 7): make it with 'neardup index "
                              "add --url-field NAME' or 'neardup dedup --url-field NAME --save-index', or give the "
                              "earlier crawl's files")
        if rules is not None and rules != cfg.urls:
            raise ConfigError(f"the URL rules given differ from those recorded in {index_path} "
                              f"({cfg.urls.as_dict()}): leave them out to use the index's")
        if not cfg.signatures:
            raise ConfigError(f"{index_path} stores no MinHash signatures (profile lean): a changed page's "
                              "similarity cannot be estimated; make the index with profile default or full")
        if config.measure != "jaccard":
            raise ConfigError("--measure containment: against an index a moved page is found by its estimated "
                              "resemblance only (use --measure jaccard)")
        run = dataclasses.replace(config, shingle=cfg.shingle, minhash=cfg.minhash)
        os.makedirs(output, exist_ok=True)
        work = os.path.join(output, _WORK)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        field_name = url_field or "url"
        width = cfg.signature_width
        dtype = {2: np.uint16, 4: np.uint32, 8: np.uint64}[width]
        try:
            old = _stored_pages(index)
            if not len(old.crawl) and old.crawl.records:
                raise ConfigError(f"no page of {index_path} has a URL (it was filled by 'neardup index add' or "
                                  "'neardup dedup --save-index' without --url-field): add the crawl with --url-field "
                                  "NAME")
            with open(os.path.join(work, "texts"), "w+b") as spill:
                # NEW's band keys under the index's banding (moved pages are its near answers);
                # NEW's whole pages only where the index has some to compare them with
                crawl = _read_crawl(new, run, url_field=field_name, rules=cfg.urls, jobs=jobs, spill=spill,
                                    bands=cfg.bands, rows=cfg.rows, on_error=on_error, signature_dtype=dtype,
                                    pages=any(page is not None for page in old.pages),
                                    shingle_ids=cfg.store_shingles)
                spill.flush()
                pairs = _pairs(old, crawl)
                lines, most = _join(index, old, crawl, pairs, run, width)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        summary = _summary([old.crawl, crawl], lines, most[:top], run, field_name, cfg.urls)
        summary["old"]["index"] = os.path.abspath(index_path)
        summary["old"]["index_config_fingerprint"] = f"{cfg.fingerprint():016x}"
        summary["estimates"] = {
            "similarity": f"estimated from {cfg.minhash.num_perm} MinHash values of {8 * width} bits (the index "
                          "keeps no shingle ids to measure it exactly)",
            "pages_without_whole_page": sum(page is None for page in old.pages),
            "template": "told apart where the index keeps the whole page's fingerprint (index add of HTML with "
                        "--url-field); elsewhere a page with the same main content is unchanged"}
        if not cfg.current_page_fingerprints:
            summary["estimates"]["whole_page_fingerprints"] = (
                "the index's whole-page fingerprints are of an earlier definition than this neardup's (version "
                f"{PAGE_FINGERPRINT_VERSION}): treated as absent, so template is not told; make the index again "
                "to tell it")
        report = _report(summary, most[:top], None)
    write_atomic(os.path.join(output, CHANGES_FILE), lines_bytes(lines))
    write_atomic(os.path.join(output, REPORT_FILE), report.encode("utf-8"))
    write_atomic(os.path.join(output, SUMMARY_FILE), orjson.dumps(summary, option=orjson.OPT_INDENT_2) + b"\n")
    return summary


@dataclasses.dataclass
class _Stored:
    """The index's pages that have a URL, the first stored of each canonical URL."""

    crawl: _Crawl
    hashes: np.ndarray  # the canonical URL's hash of each (int64, as stored)
    fingerprints: np.ndarray  # uint64
    n_shingles: np.ndarray
    nums: np.ndarray  # the index's number of each (ascending)
    pages: list  # the whole page's fingerprint (unsigned), None where none was stored


def _stored_pages(index: SeenIndex) -> _Stored:
    cfg = index.config
    crawl = _Crawl()
    hashes: list = []
    seen: set = set()
    fps, counts, pages, nums = [], [], [], []
    crawl.records = len(index)
    for num, doc_id, url_hash, url, fp, n, page in index.url_pages():
        if url_hash in seen:
            crawl.duplicate_urls += 1
            continue
        seen.add(url_hash)
        hashes.append(url_hash)
        crawl.urls.append(url if url is not None else doc_id)
        crawl.ids.append(doc_id)
        nums.append(num)
        fps.append(0 if fp is None else fp)
        counts.append(n)
        # (fingerprints of an earlier definition than NEW's would differ for every page: absent)
        pages.append(page if cfg.current_page_fingerprints else None)
    crawl.skipped = Counter({"no_url": crawl.records - len(crawl.urls) - crawl.duplicate_urls})
    return _Stored(crawl, np.array(hashes, dtype=np.int64), np.array(fps, dtype=np.uint64), np.array(counts, dtype=np.int64),
                   np.array(nums, dtype=np.int64), pages)


def _estimate(equal: np.ndarray, num_perm: int, width: int) -> np.ndarray:
    """Jaccard estimates from the number of equal signature values: with b-bit values (16),
    unequal values agree with probability 2**-b, which is taken out (Li and Konig)."""
    share = equal / num_perm
    if width == 2:
        chance = 2.0 ** -16
        share = (share - chance) / (1 - chance)
    return np.clip(share, 0.0, 1.0)


def _containments(jaccard: float, a: int, b: int) -> tuple[float, float]:
    """(|A ∩ B| / |A|, |A ∩ B| / |B|) of two sets of sizes a and b with resemblance ``jaccard``."""
    inter = jaccard * (a + b) / (1 + jaccard)
    return (min(1.0, inter / a) if a else 0.0), (min(1.0, inter / b) if b else 0.0)


def crawl_fingerprints(crawl: _Crawl) -> np.ndarray:
    """The main-content fingerprints of a crawl's pages, in order (uint64)."""
    return np.concatenate(crawl.fingerprints) if crawl.fingerprints else np.zeros(0, dtype=np.uint64)


def _pairs(old: _Stored, new: _Crawl) -> list:
    """(stored position, NEW position) of every URL in both, in NEW's order: NEW's URL hashes
    joined with the stored ones, sorted (each stored hash is one page's: the first of its URL)."""
    if not len(new.urls) or not old.hashes.size:
        return []
    wanted = np.fromiter((url_hash_of(url) for url in new.urls), dtype=np.int64, count=len(new.urls))
    order = np.argsort(old.hashes, kind="stable")
    ranked = old.hashes[order]
    at = np.minimum(np.searchsorted(ranked, wanted), ranked.size - 1)
    found = np.flatnonzero(ranked[at] == wanted)
    return list(zip(order[at[found]].tolist(), found.tolist()))


def _join(index: SeenIndex, old: _Stored, new: _Crawl, pairs: list, config: DedupConfig, width: int):
    num_perm = config.minhash.num_perm
    new_fps = crawl_fingerprints(new)
    new_sigs = np.concatenate(new.signatures) if new.signatures else np.zeros((0, num_perm), dtype=np.uint64)
    new_counts = np.concatenate(new.n_shingles) if new.n_shingles else np.zeros(0, dtype=np.int64)
    new_pages = new.whole_pages()
    lines: dict = {}
    matched = np.zeros(len(old.crawl), dtype=bool)
    changed: list = []
    in_both = {j for _, j in pairs}
    added = [j for j in range(len(new.urls)) if j not in in_both]
    for i, j in pairs:
        url = new.urls[j]
        matched[i] = True
        if old.fingerprints[i] == new_fps[j]:
            page = old.pages[i]
            same_page = page is None or new_pages[j] is None or page == new_pages[j]
            lines[url] = _line(url, "unchanged" if same_page else "template", 1.0, old.crawl.ids[i], new.ids[j])
        else:
            changed.append((i, j))
    if changed:
        ci = np.array([i for i, _ in changed], dtype=np.int64)
        cj = np.array([j for _, j in changed], dtype=np.int64)
        equal = np.count_nonzero(index.signatures(old.nums[ci]) == new_sigs[cj], axis=1)
        sims = _estimate(equal, num_perm, width)
        for (i, j), sim in zip(changed, sims.tolist()):
            url = new.urls[j]
            line = _line(url, "changed", sim, old.crawl.ids[i], new.ids[j])
            a_in_b, b_in_a = _containments(sim, int(old.n_shingles[i]), int(new_counts[j]))
            line["containment_old_in_new"] = round(a_in_b, 6)
            line["containment_new_in_old"] = round(b_in_a, 6)
            line["_pair"] = (i, j)
            lines[url] = line
    moves = _moves(index, old, new, added, ~matched, config, new_sigs, new_counts)
    moved_to = set()
    for i in np.flatnonzero(~matched).tolist():
        url = old.crawl.urls[i]
        if i in moves:
            j, sim = moves[i]
            line = _line(url, "moved", sim, old.crawl.ids[i], new.ids[j])
            line["new_url"] = new.urls[j]
            lines[url] = line
            moved_to.add(j)
        else:
            lines[url] = _line(url, "gone", None, old.crawl.ids[i], None)
    for j in added:
        if j not in moved_to:
            lines[new.urls[j]] = _line(new.urls[j], "new", None, None, new.ids[j])
    ordered = [lines[u] for u in sorted(lines, key=lambda u: (surt(u), u))]
    most = [dict(line) for line in sorted((x for x in ordered if x["status"] == "changed"),
                                          key=lambda x: (x["similarity"], x["url"]))]
    for line in ordered:
        line.pop("_pair", None)
    return ordered, most


def _moves(index: SeenIndex, old: _Stored, new: _Crawl, added: list, gone: np.ndarray, config: DedupConfig,
           new_sigs: np.ndarray, new_counts: np.ndarray) -> dict:
    """gone position -> (new position, estimated similarity): the index's near answers for each
    page of NEW under a new URL (the stored pages sharing a band bucket with it, each bucket's
    oldest first, estimated as a query estimates them: the fraction of equal signature values,
    kept from the index's threshold on), kept where the stored page is gone and the estimate is
    at least the threshold; each page matched once, best first."""
    if not added or not gone.any():
        return {}
    added_at = np.asarray(added, dtype=np.int64)
    added_at = added_at[new_counts[added_at] > 0]  # (a page without shingles has no near answers)
    keys = np.concatenate(new.band_keys)[added_at] if new.band_keys else np.zeros((0, 0), dtype=np.uint64)
    rows, nums = band_pairs(index, keys)
    # the stored pages (the first of each URL) among the answers: their positions
    at = np.minimum(np.searchsorted(old.nums, nums), max(old.nums.size - 1, 0))
    stored = old.nums[at] == nums if old.nums.size else np.zeros(nums.size, dtype=bool)
    gi, nj = at[stored], added_at[rows[stored]]
    still = gone[gi]
    gi, nj = gi[still], nj[still]
    equal = np.count_nonzero(index.signatures(old.nums[gi]) == new_sigs[nj], axis=1)
    sims = equal / config.minhash.num_perm
    keep = sims >= config.threshold
    # the index's own threshold, on the exact resemblance where it keeps the shingle ids
    keep[keep] = (_exact_jaccards(index, old, new, new_counts, gi[keep], nj[keep]) if index.config.store_shingles
                  else sims[keep]) >= index.config.threshold
    edges = [(-sim, old.crawl.urls[i], new.urls[j], i, j, sim)
             for i, j, sim in zip(gi[keep].tolist(), nj[keep].tolist(), sims[keep].tolist())]
    edges.sort()
    moves: dict = {}
    taken: set = set()
    for _, _, _, i, j, sim in edges:
        if i in moves or j in taken:
            continue
        moves[i] = (j, sim)
        taken.add(j)
    return moves


def _exact_jaccards(index: SeenIndex, old: _Stored, new: _Crawl, new_counts: np.ndarray, gi: np.ndarray,
                    nj: np.ndarray) -> np.ndarray:
    """The exact resemblance of each pair (stored position, NEW position), from the shingle ids
    the index keeps and NEW's."""
    ids = np.concatenate(new.id_parts) if new.id_parts else np.empty(0, dtype=np.uint64)
    starts = np.concatenate(([0], np.cumsum(new_counts)))
    with index._read() as conn:
        stored = dict(docs_of(conn, "d.shingles", np.unique(old.nums[gi])))
    out = np.empty(gi.size, dtype=np.float64)
    for k, (i, j) in enumerate(zip(gi.tolist(), nj.tolist())):
        blob = stored.get(int(old.nums[i]))
        other = np.frombuffer(blob, dtype="<u8") if blob is not None else np.empty(0, np.uint64)
        out[k] = jaccard(ids[starts[j]:starts[j + 1]], other)
    return out
