"""MinHashLSH: band tables in memory, for users who add sketches and query them one at a time.

The band keys are :func:`neardup.lsh.banding.band_keys`, the same keys the dedup engines, the
SQLite index and Spark bucket documents by; the banding is chosen by
:func:`neardup.lsh.params.optimal_banding` unless given.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ..errors import IncompatibleSketchError
from ..lsh.banding import band_keys
from ..lsh.params import Banding, optimal_banding

__all__ = ["MinHashLSH"]


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
