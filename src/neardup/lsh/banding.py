"""Band keys and an in-memory MinHash LSH index.

A band key is one 64-bit value per (document, band): the band's ``rows`` signature values folded
with splitmix64, seeded by the band number so that equal values in different bands give
different keys. The same function makes the keys in the local engine, the SQLite store and on
Spark, so all of them put the same documents in the same buckets.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ..errors import IncompatibleSketchError
from ..hashing import splitmix64_array

try:
    from .. import _kernel
except ImportError:  # not built: numpy computes the same keys
    _kernel = None
from .params import Banding, optimal_banding


def band_keys(signatures: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """Band keys of signatures of shape (n, num_perm): an (n, bands) uint64 array.

    Only the first ``bands * rows`` values of each signature are used.
    """
    sig = np.asarray(signatures, dtype=np.uint64)
    if sig.ndim == 1:
        sig = sig[None, :]
    n = sig.shape[0]
    if _kernel is not None and sig.shape[1] >= bands * rows and n:
        raw = _kernel.band_keys(np.ascontiguousarray(sig), sig.shape[1], bands, rows)
        return np.frombuffer(raw, dtype=np.uint64).reshape(n, bands)
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


class MinHashLSH:
    """Buckets of band keys in memory: ``add`` sketches, ``query`` for likely similar ones.

    >>> from neardup import MinHash
    >>> lsh = MinHashLSH(threshold=0.8, num_perm=128)
    >>> lsh.add("a", MinHash.from_text("one two three four five six seven eight nine ten"))
    >>> lsh.query(MinHash.from_text("one two three four five six seven eight nine ten"))
    ['a']
    """

    def __init__(self, threshold: float = 0.8, num_perm: int = 128, *, bands: int | None = None,
                 rows: int | None = None, banding: Banding | None = None):
        if banding is None:
            if bands is not None and rows is not None:
                banding = Banding(bands=bands, rows=rows, num_perm=num_perm)
            else:
                banding = optimal_banding(threshold, num_perm)
        if banding.bands * banding.rows > num_perm:
            raise IncompatibleSketchError(f"{banding.bands} bands x {banding.rows} rows need {banding.bands * banding.rows}"
                                          f" values, the sketches have {num_perm}")
        self.banding = banding
        self.num_perm = num_perm
        self._tables: list[dict[int, list]] = [defaultdict(list) for _ in range(banding.bands)]
        self._keys: dict = {}
        self._params = None  # (MinHash params, hash) of the sketches in the index, fixed by the first one

    def _keys_of(self, sketch) -> np.ndarray:
        if len(sketch) != self.num_perm:
            raise IncompatibleSketchError(f"sketch has {len(sketch)} values, the index expects {self.num_perm}")
        # sketches of other permutations or hashes share band keys only by chance: refused
        made_with = (getattr(sketch, "params", None), getattr(sketch, "hash", None))
        if self._params is None:
            self._params = made_with
        elif made_with != self._params:
            raise IncompatibleSketchError(f"sketch made with {made_with[0]} (hash {made_with[1]}), the index holds "
                                          f"sketches made with {self._params[0]} (hash {self._params[1]})")
        return band_keys(sketch.hashvalues, self.banding.bands, self.banding.rows)[0]

    def add(self, key, sketch) -> None:
        if key in self._keys:
            raise ValueError(f"key {key!r} is already in the index")
        keys = self._keys_of(sketch)
        self._keys[key] = keys
        for table, k in zip(self._tables, keys.tolist()):
            table[k].append(key)

    def remove(self, key) -> None:
        keys = self._keys.pop(key)
        for table, k in zip(self._tables, keys.tolist()):
            bucket = table[k]
            bucket.remove(key)
            if not bucket:
                del table[k]

    def query(self, sketch) -> list:
        """Keys sharing at least one band with ``sketch``, in insertion order."""
        found = {}
        for table, k in zip(self._tables, self._keys_of(sketch).tolist()):
            for key in table.get(k, ()):
                found[key] = None
        order = {k: i for i, k in enumerate(self._keys)}
        return sorted(found, key=order.__getitem__)

    def __contains__(self, key) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)
