"""Candidate pairs: the banding policy, pairs from band keys or simhashes, the estimate filter.

Pairs are local indices ``(i < j)`` of the sketched documents, as int64 arrays sorted by
``(i, j)``.
"""

from __future__ import annotations

import math

import numpy as np

from ..cluster.broder import (add_stats, estimate_keep, greedy_clusters, min_s_sample, mod_m_sample,
                              pairs_in_groups)
from .grouping import KeyGrouper, group_starts
from ..cluster.candidates import BUCKET_WINDOW, candidate_pairs, estimate_similarity
from ..lsh.banding import band_keys
from ..lsh.params import Banding, banding as banding_of_bands, recall_banding

__all__ = ["RECALL_AT_THRESHOLD", "BUCKET_WINDOW", "band_keys", "resemblance_target", "default_banding", "banding_for",
           "estimate_floor", "band_candidates", "estimate_filter", "simhash_candidates", "mod_m_sample",
           "min_s_sample", "SAMPLES", "sample_ids", "sampled_candidates", "greedy_pairs", "BandKeys"]

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


#: The samples of the 1997 experiment: MOD_m (the ids divisible by m) and MIN_s (the s smallest).
SAMPLES = ("mod_m", "min_s")


def sample_ids(ids, offsets: np.ndarray, sample: str, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``(values, offsets)``: each document's MOD_m sample (``size`` = m) or MIN_s sample
    (``size`` = s) of its sorted shingle ids, one array or the engine's pieces."""
    if sample == "mod_m":
        return mod_m_sample(ids, offsets, size)
    if sample == "min_s":
        return min_s_sample(ids, offsets, size)
    raise ValueError(f"sample must be one of {', '.join(SAMPLES)}, got {sample!r}")


#: Records added to a grouper per call (bounds the temporary arrays of one call).
_ADD_SLICE = 1 << 22


def sampled_candidates(values: np.ndarray, offsets: np.ndarray, threshold: float, *, measure: str = "jaccard",
                       cap: int = 1000, slack_errors: float = 4.0, budget_bytes: int | None = None,
                       folder: str | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """Passes 2 to 4 of the 1997 experiment with memory bounded by ``budget_bytes``
    (:class:`neardup.stages.grouping.KeyGrouper`; None: in memory), spilling to ``folder``.

    The ``<sample, ID>`` list is grouped by sample; each group of 2 to ``cap`` documents gives
    its ``<ID, ID>`` pairs (:func:`neardup.cluster.broder.pairs_in_groups`), which a second
    grouping counts into ``<ID, ID, count>``; the pairs whose estimate passes
    (:func:`neardup.cluster.broder.estimate_keep`) come out sorted by ``(i, j)`` with their
    estimates, as :func:`neardup.cluster.broder.sampled_candidates` gives them in memory. Half the
    budget goes to each grouping. Stats: the samples', the pairs', and each grouping's spill.
    """
    values = np.asarray(values, dtype=np.uint64)
    offsets = np.asarray(offsets, dtype=np.int64)
    sizes = np.diff(offsets)
    half = None if budget_bytes is None else max(1, budget_bytes // 2)
    stats: dict = {}
    found = kept = 0
    ki, kj, ke = [], [], []
    with KeyGrouper(half, folder, name="samples") as samples, KeyGrouper(half, folder, name="pairs") as pairs:
        doc_starts = offsets[:-1]
        for a in range(0, values.size, _ADD_SLICE):
            b = min(values.size, a + _ADD_SLICE)
            # the document of each value: the last document starting at or before it
            doc = np.searchsorted(doc_starts, np.arange(a, b, dtype=np.int64), side="right") - 1
            samples.add(values[a:b], doc)
        for sv, sd in samples.groups():
            packed, part = pairs_in_groups(sv, sd, cap=cap)
            stats = add_stats(stats, part)
            pairs.add(packed, np.zeros(packed.size, np.int64))
        for keys, _ in pairs.groups():
            starts = group_starts(keys)
            count = np.diff(np.concatenate((starts, [keys.size])))
            packed = keys[starts].view(np.int64)
            i, j = packed >> 32, packed & 0xFFFFFFFF
            keep, est = estimate_keep(i, j, count, sizes, threshold, measure=measure, slack_errors=slack_errors)
            found += int(i.size)
            kept += int(keep.sum())
            ki.append(i[keep])
            kj.append(j[keep])
            ke.append(est[keep])
        grouping = {"samples": samples.stats(), "pairs": pairs.stats()}
    if not stats:
        stats = {"samples": 0, "shared_samples": 0, "largest_group": 0, "capped_samples": 0, "capped_pairs": 0}
    i = np.concatenate(ki) if ki else np.empty(0, np.int64)
    j = np.concatenate(kj) if kj else np.empty(0, np.int64)
    est = np.concatenate(ke) if ke else np.empty(0, np.float64)
    order = np.lexsort((j, i))
    stats = {**stats, "sample_pairs": found, "sample_pairs_kept": kept, "grouping": grouping}
    return i[order], j[order], est[order], stats


_SPLITMIX_GAMMA = np.uint64(0x9E3779B97F4A7C15)


def _band_tagged(keys: np.ndarray, band: int) -> np.ndarray:
    """A band key made distinct from the other bands' (splitmix64 of key + band * gamma): one
    grouping holds every band. Two (band, key) pairs meeting by chance (about (n bands)^2 / 2^65
    times in a run) only add a candidate, which verification settles."""
    with np.errstate(over="ignore"):
        z = keys + np.uint64(band + 1) * _SPLITMIX_GAMMA
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


class BandKeys:
    """The (rows, bands) band keys of a run, added batch by batch, within a memory budget.

    While the keys fit in ``budget_bytes`` they are kept as matrices and :meth:`candidates` is
    :func:`band_candidates` on them (the kernel's hashing). Past the budget every key goes to a
    :class:`~neardup.stages.grouping.KeyGrouper` (``<band-tagged key, row>``, spilled to
    ``folder``), whose groups give the same pairs: within a bucket, rows in increasing order, each
    with the next ``window - 1`` (the definition of
    :func:`neardup.cluster.candidates.candidate_pairs`); a second grouping drops the pairs that
    several bands found. The same ``(i, j, stats)`` either way (tests/test_grouping.py).
    """

    def __init__(self, budget_bytes: int | None, folder: str | None = None, *, window: int = BUCKET_WINDOW):
        self.budget = budget_bytes
        self.folder = folder
        self.window = window
        self.rows = 0
        self.bands: int | None = None
        self._held: list[np.ndarray] = []
        self._held_bytes = 0
        self._grouper: KeyGrouper | None = None

    @property
    def spilled(self) -> bool:
        return self._grouper is not None

    def add(self, keys: np.ndarray) -> None:
        keys = np.asarray(keys, dtype=np.uint64)
        if self.bands is None:
            self.bands = keys.shape[1]
        if self._grouper is None:
            self._held.append(keys)
            self._held_bytes += keys.nbytes
            self.rows += keys.shape[0]
            if self.budget is not None and self._held_bytes > self.budget // 2:
                self._grouper = KeyGrouper(self.budget // 2, self.folder, name="bands")
                start = 0
                for part in self._held:
                    self._to_grouper(part, start)
                    start += part.shape[0]
                self._held, self._held_bytes = [], 0
            return
        self._to_grouper(keys, self.rows)
        self.rows += keys.shape[0]

    def _to_grouper(self, keys: np.ndarray, first_row: int) -> None:
        rows = np.arange(first_row, first_row + keys.shape[0], dtype=np.int64)
        for band in range(keys.shape[1]):
            self._grouper.add(_band_tagged(np.ascontiguousarray(keys[:, band]), band), rows)

    def candidates(self) -> tuple[np.ndarray, np.ndarray, dict]:
        """``(i, j, stats)`` as :func:`band_candidates` gives them (sorted by ``(i, j)``)."""
        if self._grouper is None:
            keys = np.concatenate(self._held) if self._held else np.empty((0, self.bands or 1), np.uint64)
            self._held = []
            ci, cj, stats = band_candidates(keys, window=self.window)
            return ci, cj, {**stats, "grouping": None}
        shared = largest = capped = 0
        with self._grouper as buckets, KeyGrouper(self.budget // 2, self.folder, name="bandpairs") as distinct:
            for sk, rows in buckets.groups():
                starts = group_starts(sk)
                sizes = np.diff(np.concatenate((starts, [sk.size])))
                multi = sizes >= 2
                shared += int(multi.sum())
                largest = max(largest, int(sizes[multi].max(initial=0)))
                capped += int(np.count_nonzero(sizes > self.window))
                keep = np.repeat(multi, sizes)
                sk, rows = sk[keep], rows[keep]
                for d in range(1, min(self.window, int(sizes.max(initial=1)))):
                    ok = sk[d:] == sk[:-d]
                    if not ok.any():
                        break
                    packed = (rows[:-d][ok] << 32) | rows[d:][ok]  # rows increase within a bucket
                    distinct.add(packed.view(np.uint64), np.zeros(packed.size, np.int64))
            out = [keys[group_starts(keys)] for keys, _ in distinct.groups()]
            grouping = {"bands": buckets.stats(), "pairs": distinct.stats()}
        allp = np.sort(np.concatenate(out)).view(np.int64) if out else np.empty(0, np.int64)
        stats = {"buckets_shared": shared, "largest_bucket": largest, "buckets_over_window": capped,
                 "grouping": grouping}
        return allp >> 32, allp & 0xFFFFFFFF, stats

    def close(self) -> None:
        if self._grouper is not None:
            self._grouper.close()
        self._held = []

    def __enter__(self) -> "BandKeys":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
