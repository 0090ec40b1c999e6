"""Broder's clustering of the 1997 experiment, over arrays: samples, shared-sample counts, greedy.

The experiment (Broder, Glassman, Manasse and Zweig 1997; the second seed document) clustered 30
million pages in four passes, which these functions are, each a plain function of arrays:

1. **Sample** each document's shingle ids: ``MOD_m`` keeps the ids divisible by ``m`` ("keeping 1
   in 25 shingles", :func:`mod_m_sample`), ``MIN_s`` the ``s`` smallest (:func:`min_s_sample`). The
   ids must already be a random-looking permutation of the shingles (Rabin fingerprints
   premultiplied by ``x^64``, or xxh3), so sampling them directly is sampling shingles uniformly.
2. **Group** the ``<sample, ID>`` list by sample (a sort) and, for every two documents that share
   a sample, emit ``<ID, ID>`` (:func:`pairs_in_groups` on each group; :func:`shared_sample_pairs`
   in memory, :func:`neardup.stages.candidates.sampled_candidates` past memory through the
   partitioned spill of :mod:`neardup.stages.grouping`).
3. **Count** the pairs: ``<ID, ID, count>``, the size of the intersection of the two samples.
4. **Estimate** resemblance from the counts and the sample sizes,
   ``|S(A) ∩ S(B)| / (|S(A)| + |S(B)| - |S(A) ∩ S(B)|)`` (:func:`resemblance`), keep the pairs at the
   threshold (50 % in the experiment) and join them with union-find.

A sample that very many documents share (a licence paragraph, a navigation bar) makes a
quadratic number of pairs. :func:`shared_sample_pairs` skips a sample held by more than ``cap``
documents and counts what it skipped. The pairs lost are those whose only evidence was such
samples. Two documents that are near-copies share many samples, so a few capped ones cost little
recall. The cost is measured, not assumed: see ``benchmarks/broder.py``.

:func:`greedy_clusters` is the experiment's streaming alternative: one pass in input order, a
table from sample to cluster, each document joining the cluster of the first of its samples seen
before, or founding its own. It needs no pairs at all. It depends on the order of the input, and it
joins documents that share a single sample, so its clusters are coarser than union-find over
estimated resemblance. The two are compared in the tests and in the benchmark.
"""

from __future__ import annotations

import numpy as np

#: Documents sharing one sample beyond which the sample gives no pairs (see the module).
DEFAULT_CAP = 1000


def _doc_of(offsets: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(offsets.size - 1, dtype=np.int64), np.diff(offsets))


def mod_m_sample(ids: np.ndarray, offsets: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The ids divisible by ``m`` of each document: ``(values, offsets)`` in the same layout
    (document ``d``'s values are ``values[offsets[d]:offsets[d+1]]``, in the input's order);
    ``ids`` is one array or a list of arrays taken as their concatenation."""
    if m < 1:
        raise ValueError(f"m must be at least 1, got {m}")
    offsets = np.asarray(offsets, dtype=np.int64)
    # ids may be a list of arrays read as their concatenation (the engine's held or spilled
    # pieces): each is sampled in place, and only the one-byte mask is joined
    pieces = [np.asarray(p, dtype=np.uint64) for p in ids] if isinstance(ids, list) else [np.asarray(ids, np.uint64)]
    masks = [p % np.uint64(m) == 0 for p in pieces]
    values = np.concatenate([p[k] for p, k in zip(pieces, masks)]) if pieces else np.empty(0, np.uint64)
    keep = np.concatenate(masks) if masks else np.empty(0, bool)
    kept_before = np.concatenate(([0], np.cumsum(keep, dtype=np.int64)))
    return values, kept_before[offsets]


def min_s_sample(ids: np.ndarray, offsets: np.ndarray, s: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``s`` smallest ids of each document (all of them if it has fewer), same layout.
    Each document's ids must be sorted, as shingle ids are."""
    if s < 1:
        raise ValueError(f"s must be at least 1, got {s}")
    offsets = np.asarray(offsets, dtype=np.int64)
    sizes = np.minimum(np.diff(offsets), s)
    new_offsets = np.concatenate(([0], np.cumsum(sizes)))
    # ids may be a list of arrays read as their concatenation (the engine's held or spilled
    # pieces): each is sampled where it is, by each id's rank within its document, and only the
    # samples are joined (never the whole id store in memory)
    pieces = [np.asarray(p, dtype=np.uint64) for p in ids] if isinstance(ids, list) else [np.asarray(ids, np.uint64)]
    values, start = [], 0
    for piece in pieces:
        position = np.arange(start, start + piece.size, dtype=np.int64)
        doc = np.searchsorted(offsets, position, side="right") - 1  # the document holding each id
        values.append(piece[position - offsets[doc] < s])
        start += piece.size
    return (np.concatenate(values) if values else np.empty(0, np.uint64)), new_offsets


def pairs_in_groups(sorted_values: np.ndarray, docs: np.ndarray, *, cap: int = DEFAULT_CAP) -> tuple[np.ndarray, dict]:
    """The ``<ID, ID>`` pairs of documents sharing a sample, from a ``<sample, ID>`` list sorted by
    sample (whole groups: every record of each sample it has; the documents of a sample in
    increasing order): ``i << 32 | j`` for ``i < j``, one per shared sample (a pair sharing three
    samples comes three times), and the list's stats (see :func:`shared_sample_pairs`; they add
    up over lists of disjoint samples, the largest group by its maximum)."""
    sv = np.asarray(sorted_values, dtype=np.uint64)
    sd = np.asarray(docs, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate(([True], sv[1:] != sv[:-1]))) if sv.size else np.empty(0, np.int64)
    sizes = np.diff(np.concatenate((starts, [sv.size])))
    big = sizes > cap
    stats = {"samples": int(starts.size), "shared_samples": int((sizes >= 2).sum()),
             "largest_group": int(sizes.max()) if sizes.size else 0,
             "capped_samples": int(big.sum()), "capped_pairs": int((sizes[big] * (sizes[big] - 1) // 2).sum())}
    # positions that take part: groups of 2..cap
    group = np.repeat(np.arange(starts.size), sizes)
    usable = np.repeat((sizes >= 2) & ~big, sizes)
    pos = np.flatnonzero(usable)
    gpos, dpos = group[pos], sd[pos]
    packed = []
    # pairs at distance d inside a group, for d = 1, 2, ...: one vector pass per distance up to
    # the largest usable group, each emitting every pair exactly once
    for d in range(1, int(sizes[(sizes >= 2) & ~big].max(initial=1))):
        same = gpos[d:] == gpos[:-d]
        if not same.any():
            break
        packed.append((dpos[:-d][same] << 32) | dpos[d:][same])
    out = np.concatenate(packed).view(np.uint64) if packed else np.empty(0, np.uint64)
    return out, stats


def add_stats(total: dict, part: dict) -> dict:
    """Stats of :func:`pairs_in_groups` over two disjoint lists."""
    if not total:
        return dict(part)
    return {k: max(total[k], part[k]) if k == "largest_group" else total[k] + part[k] for k in total}


def shared_sample_pairs(values: np.ndarray, offsets: np.ndarray, *, cap: int = DEFAULT_CAP
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """Every pair of documents ``i < j`` that share a sample, with how many they share, in memory
    (:func:`neardup.stages.candidates.sampled_candidates` groups past memory).

    Returns ``(i, j, count, stats)``: int64 arrays sorted by ``(i, j)``, and stats with the
    number of distinct samples, the samples shared by two or more documents, the largest group,
    and the samples skipped because more than ``cap`` documents hold them (with the pairs they
    would have given).
    """
    values = np.asarray(values, dtype=np.uint64)
    doc = _doc_of(np.asarray(offsets, dtype=np.int64))
    order = np.argsort(values, kind="stable")  # stable: within a sample, documents in input order
    packed, stats = pairs_in_groups(values[order], doc[order], cap=cap)
    keys, count = np.unique(packed, return_counts=True)
    keys = keys.view(np.int64)
    return keys >> 32, keys & 0xFFFFFFFF, count.astype(np.int64), stats


def resemblance(count: np.ndarray, size_i: np.ndarray, size_j: np.ndarray) -> np.ndarray:
    """Estimated resemblance from shared samples: ``c / (|S(A)| + |S(B)| - c)``."""
    count = np.asarray(count, dtype=np.float64)
    union = np.asarray(size_i, dtype=np.float64) + np.asarray(size_j, dtype=np.float64) - count
    return np.divide(count, union, out=np.zeros_like(count), where=union > 0)


def containment(count: np.ndarray, size_i: np.ndarray) -> np.ndarray:
    """Estimated containment of document ``i`` in ``j``: ``c / |S(A)|``."""
    count = np.asarray(count, dtype=np.float64)
    size_i = np.asarray(size_i, dtype=np.float64)
    return np.divide(count, size_i, out=np.zeros_like(count), where=size_i > 0)


def greedy_clusters(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Streaming clusters (see the module): for each document in input order, the cluster of the
    first of its samples (in its values' order: increasing, for shingle ids) already in the table,
    else a new cluster named by the document's index;
    then every sample of the document not yet in the table points to that cluster. Documents
    with no sample are clusters of their own. Returns the cluster index of every document."""
    values = np.asarray(values, dtype=np.uint64)
    offsets = np.asarray(offsets, dtype=np.int64)
    n = offsets.size - 1
    cluster = np.arange(n, dtype=np.int64)
    table: dict[int, int] = {}
    vals = values.tolist()
    bounds = offsets.tolist()
    for d in range(n):
        mine = vals[bounds[d]:bounds[d + 1]]
        found = d
        for v in mine:
            c = table.get(v)
            if c is not None:
                found = c
                break
        cluster[d] = found
        for v in mine:
            table.setdefault(v, found)
    return cluster


def estimate_keep(i: np.ndarray, j: np.ndarray, count: np.ndarray, sizes: np.ndarray, threshold: float, *,
                  measure: str = "jaccard", slack_errors: float = 4.0) -> tuple[np.ndarray, np.ndarray]:
    """``(keep, estimate)`` of pairs with ``count`` shared samples, documents' sample ``sizes``:
    pass 4 of the experiment, with the slack of :func:`sampled_candidates`."""
    si, sj = sizes[i], sizes[j]
    if measure == "containment":
        est = np.maximum(containment(count, si), containment(count, sj))
        n = np.minimum(si, sj).astype(np.float64)
    else:
        est = resemblance(count, si, sj)
        n = (si + sj - count).astype(np.float64)
    t = float(threshold)
    se = np.sqrt(t * (1 - t) / np.maximum(n, 1.0))
    return est >= t - slack_errors * se, est


def sampled_candidates(values: np.ndarray, offsets: np.ndarray, threshold: float, *, measure: str = "jaccard",
                       cap: int = DEFAULT_CAP, slack_errors: float = 4.0) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """The pairs worth verifying, from shared samples: passes 2 to 4 of the experiment.

    A pair is kept when its estimate from the counts (resemblance, or for ``measure=
    "containment"`` the larger of the two containments) is at least ``threshold`` less
    ``slack_errors`` standard errors of a proportion measured on the pair's samples (the union's
    for resemblance, the smaller document's for containment), so that pairs at the threshold are
    rarely lost to sampling noise; every kept pair is then measured exactly by the caller, as for
    the other methods. Returns ``(i, j, estimate, stats)``.
    """
    i, j, count, stats = shared_sample_pairs(values, offsets, cap=cap)
    sizes = np.diff(np.asarray(offsets, dtype=np.int64))
    keep, est = estimate_keep(i, j, count, sizes, threshold, measure=measure, slack_errors=slack_errors)
    stats = {**stats, "sample_pairs": int(i.size), "sample_pairs_kept": int(keep.sum())}
    return i[keep], j[keep], est[keep], stats
