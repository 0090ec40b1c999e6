"""Per-record columns held as arrays, not as a Python object per record.

A run of 30 million records cannot afford a ``str`` per id (about 60 bytes), an ``int`` per length
(28 bytes) and a list slot for each (8 bytes): these columns hold the same values in numpy arrays
and one byte buffer, and give them back as the sequences the writers read (indexing by ordinal,
iteration in input order, slices as lists).

- :class:`Growable`: an append-only numpy array (ordinals, lengths, keep values).
- :class:`Ids`: strings as one UTF-8 buffer and the end offset of each (record ids).
- :class:`Labels`: a few distinct strings as one byte code each (reasons).
- :class:`Names`: ordinals shown as another column's values, -1 as None (cluster, duplicate_of).
- :class:`Floats`: float64 shown with NaN as None (similarity).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["Growable", "Ids", "Labels", "Names", "SourcedNames", "Floats", "Copies", "repeated_names", "take_values"]

#: Values decoded at a time when a column is iterated (bounds the temporary Python objects).
_CHUNK = 1 << 16


class _Column(Sequence):
    """A sequence by ordinal whose values are made from arrays in chunks (see :meth:`_values`)."""

    def _values(self, lo: int, hi: int) -> list:
        raise NotImplementedError

    def __iter__(self):
        n = len(self)
        for lo in range(0, n, _CHUNK):
            yield from self._values(lo, min(n, lo + _CHUNK))

    def __getitem__(self, k):
        if isinstance(k, slice):
            lo, hi, step = k.indices(len(self))
            return self._values(lo, hi)[::step] if step != 1 else self._values(lo, hi)
        if isinstance(k, (int, np.integer)):
            k = int(k)
            if k < 0:
                k += len(self)
            if not 0 <= k < len(self):
                raise IndexError(k)
            return self._values(k, k + 1)[0]
        return self.take(np.asarray(k, dtype=np.int64))

    def take(self, ordinals: np.ndarray) -> list:
        return [self[int(o)] for o in ordinals.tolist()]

    def tolist(self) -> list:
        return self._values(0, len(self))

    def __eq__(self, other):  # equal to a list (or column) of the same values, as a list would be
        if isinstance(other, (list, tuple, _Column)):
            return len(self) == len(other) and self.tolist() == list(other)
        return NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        head = self._values(0, min(len(self), 5))
        return f"{type(self).__name__}({head}{', ...' if len(self) > 5 else ''} of {len(self)})"


class Growable:
    """An append-only array of ``dtype`` (doubling), read as :meth:`array` (a view of what was
    added); indexing, assignment and iteration go to that view."""

    #: Slots of a new array; each growth at least doubles them.
    FIRST_SLOTS = 1024

    @classmethod
    def slots_for(cls, n: int) -> int:
        """Slots of a Growable that ``n`` values were appended to a few at a time (doubling from
        :data:`FIRST_SLOTS`): what it occupies, for a plan of the memory a run needs."""
        slots = cls.FIRST_SLOTS
        while slots < n:
            slots *= 2
        return slots

    def __init__(self, dtype, values=None):
        self._data = np.empty(self.FIRST_SLOTS, dtype=dtype)
        self._n = 0
        if values is not None:
            self.extend(values)

    def _reserve(self, extra: int) -> None:
        need = self._n + extra
        if need > self._data.size:
            grown = np.empty(max(need, 2 * self._data.size), dtype=self._data.dtype)
            grown[: self._n] = self._data[: self._n]
            self._data = grown

    def append(self, value) -> None:
        self._reserve(1)
        self._data[self._n] = value
        self._n += 1

    def extend(self, values) -> None:
        values = np.asarray(values, dtype=self._data.dtype)
        self._reserve(values.size)
        self._data[self._n : self._n + values.size] = values.ravel()
        self._n += values.size

    def array(self) -> np.ndarray:
        return self._data[: self._n]

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, k):
        return self.array()[k]

    def __setitem__(self, k, value) -> None:
        self.array()[k] = value

    def __iter__(self):
        return iter(self.array().tolist())

    def __array__(self, dtype=None, copy=None):
        a = self.array()
        return a if dtype is None else a.astype(dtype, copy=False)


class Copies:
    """Exact copies as two arrays, ``copies[k]`` a copy of ``holders[k]`` (ordinals, in the order
    found): what a dict ``{copy: holder}`` gives, at 16 bytes a copy instead of about 100.
    ``items()`` and ``len()`` as the dict's; :meth:`arrays` for the stages."""

    def __init__(self, copies=None, holders=None):
        self.copies = Growable(np.int64, copies if copies is not None else np.empty(0, np.int64))
        self.holders = Growable(np.int64, holders if holders is not None else np.empty(0, np.int64))

    def add(self, pairs: list[tuple[int, int]]) -> None:
        if pairs:
            pairs = np.array(pairs, dtype=np.int64).reshape(-1, 2)
            self.copies.extend(pairs[:, 0])
            self.holders.extend(pairs[:, 1])

    def __len__(self) -> int:
        return len(self.copies)

    def items(self):
        return zip(self.copies, self.holders)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return self.copies.array(), self.holders.array()


class Ids(_Column):
    """Strings (record ids) as one UTF-8 buffer and the end offset of each: about 8 bytes a
    record besides the text, against some 60 for a ``str`` in a list."""

    def __init__(self, data: bytes | bytearray = b"", ends: np.ndarray | None = None):
        self._buf = bytearray(data)
        self._ends = Growable(np.int64, ends if ends is not None else np.empty(0, np.int64))

    def extend(self, strings) -> None:
        encoded = [s.encode("utf-8", "surrogatepass") for s in strings]
        if not encoded:
            return
        base = len(self._buf)
        self._buf += b"".join(encoded)
        self._ends.extend(np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded))) + base)

    def append(self, s: str) -> None:
        self._buf += s.encode("utf-8", "surrogatepass")
        self._ends.append(len(self._buf))

    def __len__(self) -> int:
        return len(self._ends)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """``(starts, ends)`` of every record's bytes in :attr:`data`."""
        ends = self._ends.array()
        starts = np.empty_like(ends)
        if ends.size:
            starts[0] = 0
            starts[1:] = ends[:-1]
        return starts, ends

    @property
    def data(self) -> bytearray:
        return self._buf

    @property
    def ends(self) -> np.ndarray:
        return self._ends.array()

    def _decode(self, starts, ends) -> list[str]:
        buf = self._buf
        return [buf[a:b].decode("utf-8", "surrogatepass") for a, b in zip(starts, ends)]

    def _values(self, lo: int, hi: int) -> list[str]:
        ends = self._ends.array()
        first = int(ends[lo - 1]) if lo > 0 else 0
        return self._decode([first, *ends[lo : hi - 1].tolist()], ends[lo:hi].tolist())

    def take(self, ordinals: np.ndarray) -> list[str]:
        starts, ends = self.bounds()
        return self._decode(starts[ordinals].tolist(), ends[ordinals].tolist())

    def hashes(self) -> np.ndarray:
        """A 64-bit hash of every string (equal strings, equal hashes). Ids of up to 64 bytes (all
        but a few) are hashed in whole-array steps, :data:`_HASH_ROWS` at a time: each padded to a
        row of eight-byte words, the words of its own length folded FNV-style (a row's padding is
        not folded: the hash must not depend on the longest id of its slice), the length mixed
        in; longer ones by XXH3. Bounds are taken a slice at a time too: only the hashes (8 bytes
        a record) outlive a slice."""
        import xxhash

        ends = self._ends.array()
        n = ends.size
        out = np.zeros(n, dtype=np.uint64)
        if not n:
            return out
        data = np.frombuffer(self._buf, dtype=np.uint8)
        prime = np.uint64(0x100000001B3)
        step = _HASH_ROWS
        with np.errstate(over="ignore"):
            for lo in range(0, n, step):
                hi = min(n, lo + step)
                stop = ends[lo:hi]
                start = np.empty_like(stop)
                start[0] = ends[lo - 1] if lo else 0
                start[1:] = stop[:-1]
                ln = stop - start
                short = ln <= 64
                width = (int(ln[short].max(initial=0)) + 7) // 8 * 8
                rows = np.flatnonzero(short)
                mat = np.zeros((hi - lo, max(width, 8)), dtype=np.uint8)
                if rows.size and width:
                    counts = ln[rows]
                    row = np.repeat(rows, counts)
                    col = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
                    mat[row, col] = data[start[row] + col]
                    del row, col
                words = mat.view(np.uint64)
                n_words = (ln + 7) // 8
                h = np.full(hi - lo, np.uint64(0xCBF29CE484222325))
                for w in range(words.shape[1]):
                    live = n_words > w
                    h[live] = (h[live] ^ words[live, w]) * prime
                h ^= ln.astype(np.uint64)
                h = (h ^ (h >> np.uint64(31))) * np.uint64(0xBF58476D1CE4E5B9)
                h ^= h >> np.uint64(29)
                for k in np.flatnonzero(~short).tolist():
                    a, b = int(start[k]), int(stop[k])
                    h[k] = xxhash.xxh3_64_intdigest(bytes(self._buf[a:b]))
                out[lo:hi] = h
        return out


#: Records hashed at a time by :meth:`Ids.hashes` (bounds its temporary arrays: about 16 bytes
#: per byte of ids of a slice, some 40 MB).
_HASH_ROWS = 1 << 18


def repeated_names(names) -> list[np.ndarray]:
    """The ordinals of every name held by two or more records (one array per name, ordinals in
    increasing order), found by hash for an :class:`Ids` column and confirmed by comparing the
    strings, so that a collision of hashes never joins two names. For a column, what lives
    besides the hashes is their sorted copy (16 bytes a record in all), not an argsort's
    ordinals: the repeated hashes are looked up again a slice at a time."""
    if isinstance(names, Ids):
        h = names.hashes()
        hs = np.sort(h)
        rep = hs[1:][hs[1:] == hs[:-1]]  # sorted: each value's copies are side by side
        # not np.unique, which imports numpy.ma (~13 ms of every command) to check for a mask
        dup = rep[np.concatenate(([True], rep[1:] != rep[:-1]))] if rep.size else rep
        del hs
        if not dup.size:
            return []
        groups: dict = {}
        for lo in range(0, h.size, _HASH_ROWS):
            part = h[lo:lo + _HASH_ROWS]
            pos = np.minimum(np.searchsorted(dup, part), dup.size - 1)
            for k in np.flatnonzero(dup[pos] == part).tolist():  # ordinals in increasing order
                groups.setdefault(int(part[k]), []).append(lo + k)
        out = []
        for ords in groups.values():
            by_name: dict = {}
            for o, name in zip(ords, names.take(np.array(ords, dtype=np.int64))):
                by_name.setdefault(name, []).append(o)
            out += [np.array(v, dtype=np.int64) for v in by_name.values() if len(v) > 1]
        return sorted(out, key=lambda a: int(a[0]))
    if isinstance(names, SourcedNames):
        # the ids repeated first (by hash, as for a column of ids: no string per record), then
        # each such id's records split by source
        labels, codes = names.sources.labels, names.sources.codes.array()
        out = []
        for group in repeated_names(names.ids):
            by_source: dict = {}
            for o, c in zip(group.tolist(), codes[group].tolist()):
                by_source.setdefault(labels[c], []).append(o)
            out += [np.array(v, dtype=np.int64) for v in by_source.values() if len(v) > 1]
        return sorted(out, key=lambda a: int(a[0]))  # (in the order of their first records)
    names = names if isinstance(names, list) else list(names)
    again = _repeated_values(names)
    by_name = {}
    for o, name in enumerate(names):
        if name in again:  # (a list of ordinals only for the names that repeat)
            by_name.setdefault(name, []).append(o)
    return [np.array(v, dtype=np.int64) for v in by_name.values()]


def _repeated_values(values: list) -> set:
    """The values that occur more than once."""
    seen, again = set(), set()
    for v in values:
        if v in seen:
            again.add(v)
        else:
            seen.add(v)
    return again


class Labels(_Column):
    """Strings from a small set (a record's reason) as one byte each, by code of first use.

    Assigning a string by ordinal (or an array of ordinals) gives it a code if it has none."""

    def __init__(self, labels: list[str] | None = None, codes: np.ndarray | None = None):
        self.labels: list[str] = list(labels or [""])
        self._code = {s: k for k, s in enumerate(self.labels)}
        self.codes = Growable(np.uint8, codes if codes is not None else np.empty(0, np.uint8))

    def code(self, label: str) -> int:
        k = self._code.get(label)
        if k is None:
            if len(self.labels) >= 255:
                raise ValueError("more than 255 distinct labels")
            k = self._code[label] = len(self.labels)
            self.labels.append(label)
        return k

    def append(self, label: str) -> None:
        self.codes.append(self.code(label))

    def extend_with(self, label: str, count: int) -> None:
        self.codes.extend(np.full(count, self.code(label), dtype=np.uint8))

    def __len__(self) -> int:
        return len(self.codes)

    def __setitem__(self, k, label: str) -> None:
        self.codes[k] = self.code(label)

    def _values(self, lo: int, hi: int) -> list[str]:
        labels = self.labels
        return [labels[c] for c in self.codes.array()[lo:hi].tolist()]

    def take(self, ordinals: np.ndarray) -> list[str]:
        labels = self.labels
        return [labels[c] for c in self.codes.array()[ordinals].tolist()]

    def mask(self, label: str) -> np.ndarray:
        """Which records have ``label``."""
        k = self._code.get(label)
        return np.zeros(len(self), bool) if k is None else self.codes.array() == k

    def copy(self) -> "Labels":
        return Labels(self.labels, self.codes.array().copy())


class Names(_Column):
    """Ordinals read as the values of ``names`` at them (-1: None): a record's cluster, its
    survivor."""

    def __init__(self, ordinals: np.ndarray, names):
        self.ordinals = ordinals
        self.names = names

    def __len__(self) -> int:
        return self.ordinals.size

    def _values(self, lo: int, hi: int) -> list:
        return self.take(np.arange(lo, hi, dtype=np.int64))

    def take(self, ordinals: np.ndarray) -> list:
        refs = self.ordinals[ordinals]
        out: list = [None] * refs.size
        some = np.flatnonzero(refs >= 0)
        if some.size:
            named = refs[some]
            values = self.names.take(named) if isinstance(self.names, _Column) else [self.names[o] for o in named.tolist()]
            for k, v in zip(some.tolist(), values):
                out[k] = v
        return out


class SourcedNames(_Column):
    """Records named ``(source, id)`` (ids unique only within a source) as two columns by
    ordinal, ``sources`` (a :class:`Labels` column) and ``ids`` (an :class:`Ids` column): a
    name is made when it is read."""

    def __init__(self, sources: "Labels", ids: Ids):
        self.sources = sources
        self.ids = ids

    def __len__(self) -> int:
        return len(self.ids)

    def _values(self, lo: int, hi: int) -> list:
        return list(zip(self.sources[lo:hi], self.ids[lo:hi]))

    def take(self, ordinals: np.ndarray) -> list:
        return list(zip(self.sources.take(ordinals), self.ids.take(ordinals)))


class Floats(_Column):
    """float64 values read with NaN as None (a record's similarity)."""

    def __init__(self, values: np.ndarray):
        self.values = values

    def __len__(self) -> int:
        return self.values.size

    def _values(self, lo: int, hi: int) -> list:
        return [None if v != v else v for v in self.values[lo:hi].tolist()]

    def take(self, ordinals: np.ndarray) -> list:
        return [None if v != v else v for v in self.values[ordinals].tolist()]


def take_values(seq, ordinals: np.ndarray) -> list:
    """``[seq[o] for o in ordinals]``: through the column's ``take`` (one decoding of the whole
    selection) when ``seq`` is a column, else by index (a list)."""
    take = getattr(seq, "take", None)
    return take(ordinals) if take is not None else [seq[o] for o in ordinals.tolist()]
