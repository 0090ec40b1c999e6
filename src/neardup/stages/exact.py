"""Exact duplicates: the first holder of each content fingerprint, in input order."""

from __future__ import annotations

import numpy as np

__all__ = ["first_holders"]


def first_holders(ordinals, fingerprints: np.ndarray, n_shingles: np.ndarray, first_by_fp: dict):
    """Split a batch of records into empty ones, exact copies and first holders.

    ``first_by_fp`` maps a fingerprint to the ordinal of its first holder; it carries over from
    batch to batch (records must come in input order) and gains this batch's first holders.
    Returns ``(new, empty, copies)``: a boolean mask of the batch's first holders, a list of the
    ordinals without shingles, and ``(ordinal, first holder)`` for each exact copy.
    """
    new = np.zeros(len(ordinals), dtype=bool)
    empty: list[int] = []
    copies: list[tuple[int, int]] = []
    for k, (o, fp, ns) in enumerate(zip(ordinals, fingerprints.tolist(), n_shingles.tolist())):
        if ns == 0:
            empty.append(o)
            continue
        first = first_by_fp.get(fp)
        if first is not None:
            copies.append((o, first))
            continue
        first_by_fp[fp] = o
        new[k] = True
    return new, empty, copies
