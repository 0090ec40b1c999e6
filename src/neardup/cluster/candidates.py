"""Candidate pairs from LSH band keys, and their verification on stored shingle ids.

Pure numpy functions of arrays, shared by the local engine and the Spark engine.
"""

from __future__ import annotations

import numpy as np

from .. import _native

#: Within one bucket, each document is compared with at most this many documents after it
#: (in input order). Buckets no larger than this give all their pairs; larger ones (boilerplate
#: that many documents share) give a linear number of pairs instead of a quadratic one, still
#: connecting every member to its neighbours so that union-find joins the cluster.
BUCKET_WINDOW = 64


def candidate_pairs(band_keys: np.ndarray, *, window: int = BUCKET_WINDOW) -> tuple[np.ndarray, np.ndarray, dict]:
    """Distinct pairs (i < j) of rows that share a key in some band.

    Returns ``(i, j, stats)`` with int64 arrays sorted by (i, j) and stats counting buckets,
    the largest bucket and the buckets that hit the window.
    """
    n, bands = band_keys.shape
    if n and _native.available():  # buckets by hashing, one pass per band: no sort of every key
        raw, shared_buckets, largest, capped = _native.band_pairs(
            np.ascontiguousarray(band_keys, dtype=np.uint64), window)
        packed = [np.frombuffer(raw, dtype=np.int64)] if raw else []
    else:
        packed, (shared_buckets, largest, capped) = _packed_pairs(band_keys, window)
    if packed:
        # sort, then drop repeats (np.unique hashes first, several times slower on these sizes)
        allp = np.sort(np.concatenate(packed))
        if allp.size > 1:
            allp = allp[np.concatenate(([True], allp[1:] != allp[:-1]))]
    else:
        allp = np.empty(0, dtype=np.int64)
    stats = {"buckets_shared": shared_buckets, "largest_bucket": largest, "buckets_over_window": capped}
    return allp >> 32, allp & 0xFFFFFFFF, stats


def _packed_pairs(band_keys: np.ndarray, window: int) -> tuple[list[np.ndarray], tuple[int, int, int]]:
    """The definition of :func:`candidate_pairs`'s pairs by sorting each band (what the compiled
    kernel computes by hashing): packed ``lo << 32 | hi`` arrays, with repeats, and the stats."""
    n, bands = band_keys.shape
    packed = []
    largest, capped, shared_buckets = 0, 0, 0
    for band in range(bands):
        keys = band_keys[:, band]
        order = np.argsort(keys, kind="stable")
        sk = keys[order]
        same_next = sk[1:] == sk[:-1]
        if not same_next.any():
            continue
        # keep only rows in buckets of two or more
        in_group = np.zeros(n, dtype=bool)
        in_group[:-1] |= same_next
        in_group[1:] |= same_next
        order, sk = order[in_group], sk[in_group]
        starts = np.flatnonzero(np.concatenate(([True], sk[1:] != sk[:-1])))
        sizes = np.diff(np.append(starts, sk.size))
        shared_buckets += sizes.size
        largest = max(largest, int(sizes.max()))
        capped += int(np.count_nonzero(sizes > window))
        for d in range(1, min(window, int(sizes.max()))):
            ok = sk[d:] == sk[:-d]
            if not ok.any():
                break
            a, b = order[:-d][ok], order[d:][ok]
            lo, hi = np.minimum(a, b), np.maximum(a, b)
            packed.append((lo.astype(np.int64) << 32) | hi.astype(np.int64))
    return packed, (shared_buckets, largest, capped)


def estimate_similarity(signatures, i: np.ndarray, j: np.ndarray, chunk: int = 65536, *,
                        jobs: int = 1) -> np.ndarray:
    """MinHash estimates of the pairs: the fraction of equal signature positions (on ``jobs``
    threads with the compiled kernel). ``signatures`` is the (n, m) uint64 matrix, or a list of
    such matrices whose rows, in order, are the n documents."""
    pieces = signatures if isinstance(signatures, list) else [signatures]
    m = pieces[0].shape[1] if pieces and pieces[0].ndim == 2 else 0
    if i.size and m and _native.available():  # compares in place: no gathering of two rows per pair
        return _native.agreements(pieces, i, j, jobs=jobs) / m
    signatures = np.concatenate(pieces) if len(pieces) > 1 else pieces[0] if pieces else np.empty((0, 0))
    out = np.empty(i.size, dtype=np.float64)
    for s in range(0, i.size, chunk):
        a = signatures[i[s : s + chunk]]
        b = signatures[j[s : s + chunk]]
        out[s : s + chunk] = (a == b).mean(axis=1)
    return out


def exact_overlaps(ids, offsets: np.ndarray, i: np.ndarray, j: np.ndarray, *, jobs: int = 1) -> np.ndarray:
    """|A ∩ B| of the sorted distinct shingle-id runs of documents i and j, for each pair (on
    ``jobs`` threads with the compiled kernel). ``ids`` is one uint64 array, or a list of them
    read as their concatenation, each holding whole runs."""
    if _native.available():
        return _native.intersections(ids, offsets, i, j, jobs=jobs)
    if isinstance(ids, list):
        ids = np.concatenate(ids) if ids else np.empty(0, dtype=np.uint64)
    out = np.empty(i.size, dtype=np.int64)
    for k, (a, b) in enumerate(zip(i.tolist(), j.tolist())):
        out[k] = np.intersect1d(ids[offsets[a] : offsets[a + 1]], ids[offsets[b] : offsets[b + 1]],
                                assume_unique=True).size
    return out


def similarities(sizes: np.ndarray, inter: np.ndarray, i: np.ndarray, j: np.ndarray) -> dict[str, np.ndarray]:
    """Resemblance and both containments of pairs from their sizes and intersections."""
    na, nb = sizes[i].astype(np.float64), sizes[j].astype(np.float64)
    union = na + nb - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        jac = np.where(union > 0, inter / union, 1.0)
        c_ab = np.where(na > 0, inter / na, 0.0)
        c_ba = np.where(nb > 0, inter / nb, 0.0)
    return {"jaccard": jac, "containment_a_in_b": c_ab, "containment_b_in_a": c_ba}
