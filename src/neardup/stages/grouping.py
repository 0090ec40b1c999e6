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

__all__ = ["KeyGrouper", "BYTES_PER_RECORD", "RECORD", "group_starts"]

#: Memory per record while a chunk is sorted (see the module).
BYTES_PER_RECORD = 48
#: The spill files' record layout.
RECORD = np.dtype([("k", "<u8"), ("v", "<i8")])
_MIX = np.uint64(0x9E3779B97F4A7C15)


def _mixed(keys: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return keys * _MIX


def _part_of(keys: np.ndarray, level: int, bits: int) -> np.ndarray:
    shift = np.uint64(64 - bits * (level + 1))
    return ((_mixed(keys) >> shift) & np.uint64((1 << bits) - 1)).astype(np.int64)


def group_starts(sorted_keys: np.ndarray) -> np.ndarray:
    """Start of each run of equal keys in a sorted array."""
    if sorted_keys.size == 0:
        return np.empty(0, np.int64)
    return np.flatnonzero(np.concatenate(([True], sorted_keys[1:] != sorted_keys[:-1])))


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
        rec = np.empty(keys.size, dtype=RECORD)
        rec["k"], rec["v"] = keys[order], vals[order]
        del order, part
        start = 0
        for p in np.flatnonzero(counts).tolist():
            n = int(counts[p])
            with open(os.path.join(self._dir, f"{prefix}{p:03d}"), "ab") as fh:
                rec[start:start + n].tofile(fh)
            start += n
        self.spilled_bytes += rec.nbytes

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
        order = np.argsort(keys, kind="stable")
        return keys[order], vals[order]

    def _read_level(self, prefix: str, level: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        self.max_depth = max(self.max_depth, level)
        for p in range(self.fanout):
            path = os.path.join(self._dir, f"{prefix}{p:03d}")
            if not os.path.exists(path):
                continue
            n = os.path.getsize(path) // RECORD.itemsize
            # the mixed key's bits are used up after 64 // bits levels: one key per partition
            if n <= self.limit or level + 1 >= 64 // self.bits:
                rec = np.fromfile(path, dtype=RECORD)
                os.remove(path)
                self.partitions_read += 1
                yield self._sorted(np.ascontiguousarray(rec["k"]), np.ascontiguousarray(rec["v"]))
                del rec
                continue
            # too big: split by the mixed key's next bits, reading the file in budget-sized slices
            sub = f"{prefix}{p:03d}."
            for start in range(0, n, self.limit):
                rec = np.fromfile(path, dtype=RECORD, count=self.limit, offset=start * RECORD.itemsize)
                self._write_parts(np.ascontiguousarray(rec["k"]), np.ascontiguousarray(rec["v"]), level + 1, sub)
                del rec
            os.remove(path)
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
