"""Grouping ``<key, value>`` records by key past memory: a partitioned spill and an external sort.

Broder's 1997 experiment grouped its ``<shingle, ID>`` list by sorting it on disk; this stage does
the same for any uint64 keys with int64 values (sampled shingles and document indices, band keys,
packed pairs to count). Records are held in memory while they fit in the budget; past it they are
spilled to ``fanout`` partition files by the top byte of a mixed key (``key * 0x9E3779B97F4A7C15``
mod 2^64, a bijection, so equal keys always land together and skewed keys spread). Reading back,
a partition that fits is sorted in memory (stably: the values of one key stay in the order they
were added); one that does not is split again by the mixed key's next byte, down to single keys.

:meth:`KeyGrouper.groups` yields ``(keys, values)`` chunks sorted by key, each holding every
record of the keys it has (a group is never cut between chunks). Chunks come in partition order,
not key order: consumers that need a global order sort their (smaller) results. Without a spill
there is one chunk. The records in memory at once are bounded by the budget, except for a single
key whose own records exceed it (it is loaded whole; a key held by tens of millions of records).

Memory per record: 16 bytes held, about 48 while a chunk is sorted (the argsort and the gathered
copies), so a budget of B bytes holds ``B // 48`` records. The engine gives the folder (in its
work directory under ``$TMPDIR``) and removes it; :meth:`KeyGrouper.close` removes the files.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import numpy as np

__all__ = ["KeyGrouper", "BYTES_PER_RECORD", "group_starts", "sorted_unique", "stable_sorted"]

#: Memory per record while a chunk is sorted (see the module).
BYTES_PER_RECORD = 48
#: A partition's spill files: its keys (uint64) and its values (int64), in the same order. Two
#: files rather than one of records: each array is written and read whole, with no strided copy.
KEYS_SUFFIX, VALUES_SUFFIX = ".keys", ".values"
_MIX = np.uint64(0x9E3779B97F4A7C15)


def _mixed(keys: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return keys * _MIX


def _part_of(keys: np.ndarray, level: int, bits: int) -> np.ndarray:
    """Each key's partition at ``level``, in the narrowest unsigned type that holds it: numpy's
    stable argsort of 8- and 16-bit integers is a radix sort, several times faster than the
    merge sort it uses for wider ones."""
    shift = np.uint64(64 - bits * (level + 1))
    part = (_mixed(keys) >> shift) & np.uint64((1 << bits) - 1)
    return part.astype(np.uint8 if bits <= 8 else np.uint16 if bits <= 16 else np.int64)


def group_starts(sorted_keys: np.ndarray) -> np.ndarray:
    """Start of each run of equal keys in a sorted array."""
    if sorted_keys.size == 0:
        return np.empty(0, np.int64)
    return np.flatnonzero(np.concatenate(([True], sorted_keys[1:] != sorted_keys[:-1])))


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """Sorted distinct int64 values: a sort and a comparison (numpy 2's hash-based ``unique`` is
    several times slower on a batch's postings, and its first call in a process costs some 8 ms
    more)."""
    v = np.sort(np.asarray(values, dtype=np.int64))
    if v.size:
        v = v[group_starts(v)]
    return v


def stable_sorted(keys: np.ndarray, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``keys`` sorted, with ``vals`` in the same order and the values of equal keys in their
    original order: what a stable argsort gives. numpy's stable sort of 64-bit keys is a merge
    sort, 2.5 times slower than its quicksort; so the keys are ordered by quicksort, and only the
    runs of equal keys (rare: buckets that several documents share) are put back in their
    original order, by sorting their positions within each run."""
    order = np.argsort(keys)
    sorted_keys = keys[order]
    if sorted_keys.size > 1:
        equal_next = sorted_keys[1:] == sorted_keys[:-1]
        if equal_next.any():
            # every position in a run of equal keys, and the run each belongs to
            in_run = np.concatenate(([False], equal_next)) | np.concatenate((equal_next, [False]))
            at = np.flatnonzero(in_run)
            run = np.cumsum(~np.concatenate(([False], equal_next)))[at]
            order[at] = order[at][np.lexsort((order[at], run))]
    return sorted_keys, vals[order]


def _taken(name: str, dtype) -> np.ndarray:
    """One of a partition's files (``name`` + the suffix of ``dtype``'s array), read and removed."""
    path = name + (KEYS_SUFFIX if dtype == np.uint64 else VALUES_SUFFIX)
    out = np.fromfile(path, dtype=dtype)
    os.remove(path)
    return out


class KeyGrouper:
    """Add ``(keys, values)`` arrays, then read them back grouped by key (see the module).

    ``budget_bytes`` None keeps everything in memory (no folder needed). ``folder`` is where the
    partition files go (a new subfolder of it, removed by :meth:`close`).
    """

    def __init__(self, budget_bytes: int | None, folder: str | None = None, *, fanout: int = 256,
                 name: str = "group"):
        if fanout < 2 or fanout & (fanout - 1):
            raise ValueError(f"fanout must be a power of two of at least 2, got {fanout}")
        self.limit = None if budget_bytes is None else max(1, int(budget_bytes) // BYTES_PER_RECORD)
        self.bits = fanout.bit_length() - 1
        self.fanout = fanout
        self._folder = folder
        self._name = name
        self._dir: str | None = None
        self._keys: list[np.ndarray] = []
        self._vals: list[np.ndarray] = []
        self._held = 0
        self.records = 0
        self.spilled_bytes = 0  # bytes written to partition files, re-splits included
        self.partitions_read = 0
        self.max_depth = 0

    # -- writing --------------------------------------------------------------------------------
    def add(self, keys: np.ndarray, values: np.ndarray) -> None:
        keys = np.ascontiguousarray(keys, dtype=np.uint64)
        values = np.ascontiguousarray(values, dtype=np.int64)
        if keys.shape != values.shape:
            raise ValueError(f"keys and values differ in length: {keys.size} and {values.size}")
        if keys.size == 0:
            return
        self.records += keys.size
        self._keys.append(keys)
        self._vals.append(values)
        self._held += keys.size
        if self.limit is not None and self._held > self.limit:
            self._spill()

    def _spill(self) -> None:
        if self._dir is None:
            if self._folder is None:
                raise ValueError("a KeyGrouper with a budget needs a folder to spill to")
            self._dir = tempfile.mkdtemp(prefix=f"{self._name}-", dir=self._folder)
        keys, vals = np.concatenate(self._keys), np.concatenate(self._vals)
        self._keys, self._vals, self._held = [], [], 0
        self._write_parts(keys, vals, 0, "p")

    def _write_parts(self, keys: np.ndarray, vals: np.ndarray, level: int, prefix: str) -> None:
        part = _part_of(keys, level, self.bits)
        order = np.argsort(part, kind="stable")  # stable: the values of a key keep their order
        counts = np.bincount(part, minlength=self.fanout)
        keys, vals = keys[order], vals[order]
        del order, part
        start = 0
        for p in np.flatnonzero(counts).tolist():
            n = int(counts[p])
            name = os.path.join(self._dir, f"{prefix}{p:03d}")
            with open(name + KEYS_SUFFIX, "ab") as fk, open(name + VALUES_SUFFIX, "ab") as fv:
                keys[start:start + n].tofile(fk)
                vals[start:start + n].tofile(fv)
            start += n
        self.spilled_bytes += keys.nbytes + vals.nbytes

    # -- reading --------------------------------------------------------------------------------
    def groups(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """``(keys, values)`` chunks sorted by key, whole groups each (see the module)."""
        if self._dir is None:
            if self._keys:
                keys, vals = np.concatenate(self._keys), np.concatenate(self._vals)
                self._keys, self._vals, self._held = [], [], 0
                yield self._sorted(keys, vals)
            return
        if self._keys:
            self._spill()
        yield from self._read_level("p", 0)

    @staticmethod
    def _sorted(keys: np.ndarray, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return stable_sorted(keys, vals)

    def _read_level(self, prefix: str, level: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        self.max_depth = max(self.max_depth, level)
        for p in range(self.fanout):
            name = os.path.join(self._dir, f"{prefix}{p:03d}")
            if not os.path.exists(name + KEYS_SUFFIX):
                continue
            n = os.path.getsize(name + KEYS_SUFFIX) // 8
            # the mixed key's bits are used up after 64 // bits levels: one key per partition
            if n <= self.limit or level + 1 >= 64 // self.bits:
                keys, vals = _taken(name, np.uint64), _taken(name, np.int64)
                self.partitions_read += 1
                yield self._sorted(keys, vals)
                del keys, vals
                continue
            # too big: split by the mixed key's next bits, reading the files in budget-sized slices
            sub = f"{prefix}{p:03d}."
            for start in range(0, n, self.limit):
                keys = np.fromfile(name + KEYS_SUFFIX, dtype=np.uint64, count=self.limit, offset=start * 8)
                vals = np.fromfile(name + VALUES_SUFFIX, dtype=np.int64, count=self.limit, offset=start * 8)
                self._write_parts(keys, vals, level + 1, sub)
                del keys, vals
            os.remove(name + KEYS_SUFFIX)
            os.remove(name + VALUES_SUFFIX)
            yield from self._read_level(sub, level + 1)

    def close(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        self._keys, self._vals, self._held = [], [], 0

    def __enter__(self) -> KeyGrouper:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def stats(self) -> dict:
        return {"records": self.records, "spilled_bytes": self.spilled_bytes,
                "partitions_read": self.partitions_read, "depth": self.max_depth}
