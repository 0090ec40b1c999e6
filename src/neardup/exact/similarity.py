"""Exact resemblance, containment and cosine: the reference every estimator is tested against.

Conventions for empty inputs: two empty sets are identical (resemblance 1); an empty set and a
non-empty one share nothing (resemblance 0, containment 0 either way).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

import numpy as np


def _as_sets(a, b):
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        ua, ub = np.unique(a), np.unique(b)
        inter = np.intersect1d(ua, ub, assume_unique=True).size
        return ua.size, ub.size, inter
    sa, sb = set(a), set(b)
    return len(sa), len(sb), len(sa & sb)


def overlap(a, b) -> tuple[int, int, int, int]:
    """``(|A|, |B|, |A ∩ B|, |A ∪ B|)`` of two collections (duplicates ignored)."""
    na, nb, inter = _as_sets(a, b)
    return na, nb, inter, na + nb - inter


def jaccard(a, b) -> float:
    """Resemblance ``|A ∩ B| / |A ∪ B|`` (Broder's r(A, B))."""
    na, nb, inter, union = overlap(a, b)
    if union == 0:
        return 1.0
    return inter / union


def containment(a, b) -> float:
    """Containment of A in B, ``|A ∩ B| / |A|`` (Broder's c(A, B))."""
    na, nb, inter, union = overlap(a, b)
    if union == 0:
        return 1.0
    if na == 0:
        return 0.0
    return inter / na


def jaccard_sorted(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """Resemblance and both containments of two sorted, distinct uint64 arrays, in one pass."""
    inter = np.intersect1d(a, b, assume_unique=True).size
    union = a.size + b.size - inter
    if union == 0:
        return 1.0, 1.0, 1.0
    return inter / union, (inter / a.size if a.size else 0.0), (inter / b.size if b.size else 0.0)


def cosine(a: Iterable[str] | Counter, b: Iterable[str] | Counter) -> float:
    """Cosine similarity of the count vectors of two token sequences (or Counters)."""
    ca = a if isinstance(a, Counter) else Counter(a)
    cb = b if isinstance(b, Counter) else Counter(b)
    if not ca and not cb:
        return 1.0
    dot = sum(v * cb.get(t, 0) for t, v in ca.items())
    na = math.sqrt(sum(v * v for v in ca.values()))
    nb = math.sqrt(sum(v * v for v in cb.values()))
    if na == 0 or nb == 0:
        return 0.0
    return dot / (na * nb)
