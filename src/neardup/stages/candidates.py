"""Candidate pairs: the banding policy, pairs from band keys or simhashes, the estimate filter.

Pairs are local indices ``(i < j)`` of the sketched documents, as int64 arrays sorted by
``(i, j)``.
"""

from __future__ import annotations

import math

import numpy as np

from ..cluster.broder import greedy_clusters, mod_m_sample, sampled_candidates
from ..cluster.candidates import BUCKET_WINDOW, candidate_pairs, estimate_similarity
from ..lsh.banding import band_keys
from ..lsh.params import Banding, banding as banding_of_bands, recall_banding

__all__ = ["RECALL_AT_THRESHOLD", "BUCKET_WINDOW", "band_keys", "resemblance_target", "default_banding", "banding_for",
           "estimate_floor", "band_candidates", "estimate_filter", "simhash_candidates", "mod_m_sample",
           "sampled_candidates", "greedy_pairs"]

#: The default banding: the most rows whose candidate probability at the threshold is at least
#: this (18 bands x 7 rows at 0.8 with 128 permutations: 0.985 at 0.8, 0.998 at 0.85, 0.13 at
#: 0.5). Every candidate is verified exactly afterwards, so the banding favours recall: a false
#: candidate costs one verification, a missed pair is lost for good.
RECALL_AT_THRESHOLD = 0.98


def resemblance_target(threshold: float, measure: str = "jaccard") -> float:
    """The resemblance that bands and the estimate filter aim at for a similarity threshold.

    Containment pairs of unequal sizes have a lower resemblance than their containment: aim at
    a lower resemblance so that more of them are candidates (they are verified).
    """
    return threshold if measure == "jaccard" else max(threshold / 2, 0.05)


def default_banding(threshold: float, num_perm: int, measure: str = "jaccard") -> Banding:
    """The banding policy of every engine and of the index (see :data:`RECALL_AT_THRESHOLD`)."""
    return recall_banding(min(resemblance_target(threshold, measure), 0.99), num_perm,
                          min_recall=RECALL_AT_THRESHOLD)


def banding_for(threshold: float, num_perm: int, measure: str = "jaccard", *, bands: int | None = None,
                rows: int | None = None) -> Banding:
    """The banding for explicit ``bands`` and/or ``rows``, else :func:`default_banding`."""
    if bands is not None and rows is not None:
        return Banding(bands=bands, rows=rows, num_perm=num_perm)
    if bands is not None:
        return banding_of_bands(num_perm, bands)
    if rows is not None:
        return Banding(bands=num_perm // rows, rows=rows, num_perm=num_perm)
    return default_banding(threshold, num_perm, measure)


def estimate_floor(threshold: float, num_perm: int, measure: str = "jaccard") -> float:
    """Candidates whose MinHash estimate is below this are dropped before exact verification:
    four standard errors and one value below the target, so that a pair at the target is
    dropped with probability below 1 in 30,000."""
    t = resemblance_target(threshold, measure)
    return t - 4 * math.sqrt(t * (1 - t) / num_perm) - 1.0 / num_perm


def band_candidates(keys: np.ndarray, *, window: int = BUCKET_WINDOW) -> tuple[np.ndarray, np.ndarray, dict]:
    """Distinct pairs of rows of the (n, bands) band-key matrix that share a key in some band,
    with the bucket statistics (see :func:`neardup.cluster.candidates.candidate_pairs`)."""
    return candidate_pairs(keys, window=window)


def estimate_filter(signatures, ci: np.ndarray, cj: np.ndarray, floor: float | None, *, jobs: int = 1):
    """``(ci, cj, estimates, dropped)``: the MinHash estimate of every pair, and the pairs whose
    estimate is at least ``floor`` (all of them when ``floor`` is None). ``signatures`` is the
    (n, m) matrix or a list of such matrices, read in place as their concatenation."""
    est = estimate_similarity(signatures, ci, cj, jobs=jobs)
    if floor is None:
        return ci, cj, est, 0
    keep = est >= floor
    return ci[keep], cj[keep], est[keep], int(np.count_nonzero(~keep))


def simhash_candidates(simhashes: np.ndarray, max_distance: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ci, cj, estimates)``: pairs within ``max_distance`` bits, with ``1 - distance / 64``."""
    from ..index.simhash import SimhashIndex

    n = simhashes.size
    index = SimhashIndex(max_distance=max_distance, expected_size=n)
    index.add(np.arange(n, dtype=np.int64), simhashes)
    pairs = list(index.pairs())
    ci = np.array([min(a, b) for a, b, _ in pairs], dtype=np.int64)
    cj = np.array([max(a, b) for a, b, _ in pairs], dtype=np.int64)
    dist = np.array([d for _, _, d in pairs], dtype=np.float64)
    order = np.lexsort((cj, ci))
    return ci[order], cj[order], 1.0 - dist[order] / 64.0


def greedy_pairs(values: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The edges of the greedy one-pass clustering (:func:`neardup.cluster.broder.greedy_clusters`)
    on samples: ``(founder, member)`` for every document that joined an earlier one's cluster.
    They are measured exactly for the outputs but not filtered: greedy clusters are what they are."""
    cluster = greedy_clusters(values, offsets)
    member = np.flatnonzero(cluster != np.arange(cluster.size))
    return cluster[member], member
