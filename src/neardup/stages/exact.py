"""Exact duplicates: the first holder of each content fingerprint, in input order."""

from __future__ import annotations

import numpy as np

__all__ = ["first_holders", "FingerprintTable", "text_fingerprints"]


def text_fingerprints(texts: list[str], normalize, jobs: int = 1) -> np.ndarray:
    """The exact fingerprints (uint64, 0 for a text without tokens) of texts, as the sketch stage
    makes them: for texts that are not sketched (a web page's whole text beside its main content)."""
    from .. import _native
    from ..exact.fingerprint import fingerprint

    if _native.available():
        return np.asarray(_native.fingerprints(texts, normalize, jobs=jobs), dtype=np.uint64)
    return np.array([fingerprint(t, normalize) or 0 for t in texts], dtype=np.uint64)


class FingerprintTable:
    """Fingerprint -> ordinal of its first holder, as two arrays (open addressing, linear probing):
    12 bytes a slot at most 70% full, against about 100 bytes a record for a dict of Python ints.
    Looked up and filled a batch at a time in whole-array steps. Ordinals are below 2**32.

    Fingerprints are already hashes (XXH3): their low bits choose the slot. 0 marks an empty slot;
    the fingerprint 0 itself is held apart."""

    LOAD = 0.7
    #: Slots of the old table placed at a time when the table grows.
    GROW_SLICE = 1 << 20

    def __init__(self, capacity: int = 1 << 16):
        size = 1 << max(4, int(capacity - 1).bit_length())
        self.keys = np.zeros(size, dtype=np.uint64)
        self.values = np.zeros(size, dtype=np.uint32)
        self.count = 0
        self.zero: int | None = None  # the first holder of fingerprint 0

    def __len__(self) -> int:
        return self.count + (self.zero is not None)

    SLOT_BYTES = 12  # a uint64 key and a uint32 ordinal

    @classmethod
    def peak_bytes_for(cls, records: int, capacity: int = 1 << 16) -> int:
        """The most a table filled with ``records`` distinct fingerprints occupies at once: its
        last growth holds the old slots beside the new ones (for a plan of a run's memory)."""
        size = 1 << max(4, int(capacity - 1).bit_length())
        old = 0
        while records > cls.LOAD * size:
            old, size = size, size * 2
        return (size + old) * cls.SLOT_BYTES

    @property
    def nbytes(self) -> int:
        return self.keys.nbytes + self.values.nbytes

    def lookup(self, fps: np.ndarray) -> np.ndarray:
        """The first holder of each fingerprint, -1 where none is known."""
        fps = np.asarray(fps, dtype=np.uint64)
        out = np.full(fps.size, -1, dtype=np.int64)
        mask = np.uint64(self.keys.size - 1)
        slot = fps & mask
        todo = np.flatnonzero(fps != 0)
        while todo.size:
            s = slot[todo]
            k = self.keys[s]
            hit = k == fps[todo]
            out[todo[hit]] = self.values[s[hit]]
            todo = todo[~hit & (k != 0)]
            slot[todo] = (slot[todo] + np.uint64(1)) & mask
        if self.zero is not None:
            out[fps == 0] = self.zero
        return out

    def insert(self, fps: np.ndarray, ordinals: np.ndarray) -> None:
        """Add distinct fingerprints that are not in the table yet."""
        fps = np.asarray(fps, dtype=np.uint64)
        ordinals = np.asarray(ordinals, dtype=np.int64)
        zero = fps == 0
        if zero.any():
            self.zero = int(ordinals[zero][0])
            fps, ordinals = fps[~zero], ordinals[~zero]
        if (self.count + fps.size) > self.LOAD * self.keys.size:
            self._grow(self.count + fps.size)
        self._place(fps, ordinals)
        self.count += fps.size

    def _grow(self, need: int) -> None:
        size = self.keys.size
        while need > self.LOAD * size:
            size *= 2
        old_keys, old_values = self.keys, self.values
        self.keys = np.zeros(size, dtype=np.uint64)
        self.values = np.zeros(size, dtype=np.uint32)
        # the old slots placed again a slice at a time: a copy of every fingerprint and ordinal,
        # and _place's temporaries for all of them at once, were about 60 bytes a record beside
        # both tables (some 1.4 GB when a 30M-record run's table doubled)
        for lo in range(0, old_keys.size, self.GROW_SLICE):
            keys = old_keys[lo:lo + self.GROW_SLICE]
            full = np.flatnonzero(keys)
            if full.size:
                self._place(keys[full], old_values[lo:lo + self.GROW_SLICE][full].astype(np.int64))

    def _place(self, fps: np.ndarray, ordinals: np.ndarray) -> None:
        mask = np.uint64(self.keys.size - 1)
        slot = fps & mask
        todo = np.arange(fps.size)
        while todo.size:
            s = slot[todo]
            free = self.keys[s] == 0
            cand, cs = todo[free], s[free]
            # every candidate writes its fingerprint into its free slot; where several share a
            # slot one of them is left there, and reading the slots back tells which (the
            # fingerprints are distinct). Which one wins changes only the table's layout, never a
            # look-up's answer.
            self.keys[cs] = fps[cand]
            landed = self.keys[cs] == fps[cand]
            won = cand[landed]
            self.values[cs[landed]] = ordinals[won]
            todo = np.concatenate((cand[~landed], todo[~free]))
            slot[todo] = (slot[todo] + np.uint64(1)) & mask

    def items(self):
        """``(fingerprint, ordinal)`` pairs (in slot order)."""
        full = np.flatnonzero(self.keys)
        yield from zip(self.keys[full].tolist(), self.values[full].tolist())
        if self.zero is not None:
            yield 0, self.zero


def first_holders(ordinals, fingerprints: np.ndarray, n_shingles: np.ndarray, first_by_fp, indexed=None):
    """Split a batch of records into empty ones, exact copies and first holders.

    ``first_by_fp`` maps a fingerprint to the ordinal of its first holder (a dict, or a
    :class:`FingerprintTable`); it carries over from batch to batch (records must come in input
    order) and gains this batch's first holders. ``indexed`` (a run against an index): per
    record, the holder of its content in the index (a negative pseudo ordinal), 0 where the
    index has none; such a record is a copy of it (the index comes before the run), and its
    content is not added to ``first_by_fp``. Returns ``(new, empty, copies)``: a boolean mask
    of the batch's first holders, a list of the ordinals without shingles, and ``(ordinal, first
    holder)`` for each exact copy, in input order.
    """
    if isinstance(first_by_fp, FingerprintTable):
        return _first_holders_table(ordinals, fingerprints, n_shingles, first_by_fp, indexed)
    new = np.zeros(len(ordinals), dtype=bool)
    empty: list[int] = []
    copies: list[tuple[int, int]] = []
    held = indexed.tolist() if indexed is not None else [0] * len(ordinals)
    for k, (o, fp, ns, at) in enumerate(zip(ordinals, fingerprints.tolist(), n_shingles.tolist(), held)):
        if ns == 0:
            empty.append(o)
            continue
        if at:
            copies.append((o, at))
            continue
        first = first_by_fp.get(fp)
        if first is not None:
            copies.append((o, first))
            continue
        first_by_fp[fp] = o
        new[k] = True
    return new, empty, copies


def _first_holders_table(ordinals, fingerprints, n_shingles, table: FingerprintTable, indexed=None):
    """:func:`first_holders` with a :class:`FingerprintTable`, in whole-array steps."""
    ords = np.asarray(ordinals, dtype=np.int64)
    fps = np.asarray(fingerprints, dtype=np.uint64)
    ns = np.asarray(n_shingles)
    new = np.zeros(ords.size, dtype=bool)
    full = np.flatnonzero(ns != 0)
    empty = ords[ns == 0].tolist()
    if indexed is not None and full.size:
        at = np.asarray(indexed, dtype=np.int64)[full] != 0
        if at.any():  # copies of indexed holders; the others go through the table, as the run's own
            new_, _, copies = _first_holders_table(ords[full[~at]], fps[full[~at]], ns[full[~at]], table)
            new[full[~at]] = new_
            copies += zip(ords[full[at]].tolist(), np.asarray(indexed, dtype=np.int64)[full[at]].tolist())
            return new, empty, sorted(copies)
    if not full.size:
        return new, empty, []
    uniq, first_at, inverse = np.unique(fps[full], return_index=True, return_inverse=True)
    known = table.lookup(uniq)
    fresh = known < 0
    holder = np.where(fresh, ords[full[first_at]], known)  # per distinct fingerprint
    table.insert(uniq[fresh], holder[fresh])
    held_by = holder[inverse.ravel()]
    mine = held_by == ords[full]
    new[full[mine]] = True
    copy = full[~mine]
    copies = list(zip(ords[copy].tolist(), held_by[~mine].tolist()))
    return new, empty, copies
