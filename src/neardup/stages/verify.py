"""Verification: exact similarity of candidate pairs on their sorted distinct shingle ids."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..cluster.candidates import exact_overlaps, similarities

__all__ = ["Edges", "pair_similarities", "passing_similarities", "runs_of", "score_of", "verify_pairs"]


def score_of(sims: dict, measure: str) -> np.ndarray:
    """The similarity a measure compares with the threshold: the resemblance, or the larger
    containment of the pair (either way round)."""
    if measure == "jaccard":
        return sims["jaccard"]
    return np.maximum(sims["containment_a_in_b"], sims["containment_b_in_a"])


def pair_similarities(ids, offsets: np.ndarray, counts: np.ndarray, ci: np.ndarray, cj: np.ndarray, *,
                      jobs: int = 1) -> dict[str, np.ndarray]:
    """Resemblance and both containments of each pair ``(ci[q], cj[q])`` of id runs (run r is
    ``ids[offsets[r]:offsets[r+1]]``, ``counts[r]`` ids long; ``ids`` may be a list of arrays
    read in place as their concatenation)."""
    inter = exact_overlaps(ids, offsets, ci, cj, jobs=jobs)
    return similarities(counts, inter, ci, cj)


def passing_similarities(ids, offsets: np.ndarray, counts: np.ndarray, ci: np.ndarray, cj: np.ndarray,
                         passed: np.ndarray, measure: str) -> tuple[np.ndarray, np.ndarray]:
    """``(jaccard, score)`` of each pair ``(ci[q], cj[q])``: measured exactly where ``passed[q]``
    (the estimate filter let it through), NaN elsewhere. The distributed engines verify their
    pairs' slices with it, as the local engine's :func:`verify_pairs` does its own."""
    jaccard = np.full(ci.size, np.nan)
    score = np.full(ci.size, np.nan)
    sel = np.flatnonzero(passed)
    if sel.size:
        sims = pair_similarities(ids, offsets, counts, ci[sel], cj[sel])
        jaccard[sel] = sims["jaccard"]
        score[sel] = score_of(sims, measure)
    return jaccard, score


def runs_of(blobs: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ids, offsets, counts)`` of id runs given as little-endian uint64 bytes, one per run."""
    counts = np.array([len(r) // 8 for r in blobs], dtype=np.int64)
    offsets = np.zeros(len(blobs) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return np.frombuffer(b"".join(blobs), dtype=np.uint64), offsets, counts


@dataclass(frozen=True)
class Edges:
    """Verified pairs (local indices, ``i < j``) with their exact resemblance, their MinHash (or
    simhash) estimate and the score the threshold was applied to."""

    i: np.ndarray
    j: np.ndarray
    jaccard: np.ndarray
    estimate: np.ndarray
    score: np.ndarray

    @classmethod
    def empty(cls) -> "Edges":
        none = np.empty(0, dtype=np.int64)
        return cls(none, none, np.empty(0), np.empty(0), np.empty(0))

    def __len__(self) -> int:
        return int(self.i.size)


def verify_pairs(ids, offsets, counts, ci, cj, estimate, *, measure: str, threshold: float | None,
                 jobs: int = 1) -> Edges:
    """The candidate pairs measured exactly; those at or above ``threshold`` are the edges (all
    of them when ``threshold`` is None: unverified runs and simhash candidates keep every pair,
    their exact similarity still measured for the outputs)."""
    if not ci.size:
        return Edges.empty()
    sims = pair_similarities(ids, offsets, counts, ci, cj, jobs=jobs)
    score = score_of(sims, measure)
    if threshold is None:
        return Edges(ci, cj, sims["jaccard"], estimate, score)
    ok = score >= threshold
    return Edges(ci[ok], cj[ok], sims["jaccard"][ok], estimate[ok], score[ok])
