"""Band keys: the buckets of LSH banding (the in-memory index over them is :mod:`neardup.index.minhash_lsh`).

A band key is one 64-bit value per (document, band): the band's ``rows`` signature values folded
with splitmix64, seeded by the band number so that equal values in different bands give
different keys. The same function makes the keys in the local engine, the SQLite store and on
Spark, so all of them put the same documents in the same buckets.
"""

from __future__ import annotations

import numpy as np

from .. import _native
from ..hashing import splitmix64_array



def band_keys(signatures: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """Band keys of signatures of shape (n, num_perm): an (n, bands) uint64 array.

    Only the first ``bands * rows`` values of each signature are used.
    """
    sig = np.asarray(signatures, dtype=np.uint64)
    if sig.ndim == 1:
        sig = sig[None, :]
    n = sig.shape[0]
    if _native.available() and sig.shape[1] >= bands * rows and n:  # (else numpy computes the same keys)
        return _native.band_keys(np.ascontiguousarray(sig), bands, rows)
    return _band_keys_numpy(sig, bands, rows)


def _band_keys_numpy(sig: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """The definition of :func:`band_keys` (what the compiled kernel computes, in numpy).

    All bands fold their j-th row together: the same arithmetic as one value at a time, in
    ``rows`` numpy steps instead of ``bands * rows``.
    """
    n = sig.shape[0]
    folded = sig[:, : bands * rows].reshape(n, bands, rows)
    key = np.tile(np.arange(bands, dtype=np.uint64), (n, 1))
    for row in range(rows):
        key = splitmix64_array(key ^ folded[:, :, row])
    return key
