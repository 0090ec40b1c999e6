"""What a :class:`neardup.index.simhash.SimhashIndex` keeps per row, and the caller's values checked
on the way in: fingerprints as ``uint64`` (signed 64-bit values read as two's complement), ids as
an ``int64`` array or as strings (a UTF-8 blob and offsets when they come from a saved file)."""

from __future__ import annotations

from numbers import Integral

import numpy as np

__all__ = ["MASK64", "as_fingerprint", "as_fingerprints", "normalize_ids", "GrowableArray", "IdStore"]

MASK64 = (1 << 64) - 1


def as_fingerprint(x) -> int:
    """One fingerprint as a Python int in [0, 2**64); signed 64-bit values are read as two's complement."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (Integral, np.integer)):
        raise TypeError(f"a fingerprint must be an int, got {type(x).__name__}")
    v = int(x)
    if v < 0:
        if v < -(1 << 63):
            raise ValueError(f"fingerprint {v} does not fit in 64 bits")
        v &= MASK64
    elif v > MASK64:
        raise ValueError(f"fingerprint {v} does not fit in 64 bits")
    return v


def as_fingerprints(xs) -> np.ndarray:
    """A 1-d uint64 array; int64 arrays are reinterpreted (two's complement), lists are checked."""
    if isinstance(xs, np.ndarray):
        if xs.ndim != 1:
            xs = xs.reshape(-1)
        if xs.dtype == np.uint64:
            return np.ascontiguousarray(xs)
        if xs.dtype == np.int64:
            return np.ascontiguousarray(xs).view(np.uint64)
        if xs.dtype.kind == "u":
            return xs.astype(np.uint64)
        if xs.dtype.kind == "i":
            return xs.astype(np.int64).view(np.uint64)
        if xs.dtype == object:
            xs = xs.tolist()
        else:
            raise TypeError(f"fingerprints must be integers, got dtype {xs.dtype}")
    if isinstance(xs, (Integral, np.integer)):
        xs = [xs]
    vals = [as_fingerprint(x) for x in xs]
    return np.array(vals, dtype=np.uint64) if vals else np.empty(0, dtype=np.uint64)


def normalize_ids(ids, n: int) -> tuple[str, object]:
    """(kind, values): kind 'int' with an int64 array, or 'str' with a list of str."""
    if isinstance(ids, (str, Integral, np.integer)) and not isinstance(ids, (bool, np.bool_)):
        ids = [ids]
    if isinstance(ids, np.ndarray):
        if ids.ndim != 1:
            ids = ids.reshape(-1)
        if ids.dtype.kind in "iu":
            if ids.dtype == np.uint64 and ids.size and int(ids.max()) > (1 << 63) - 1:
                raise ValueError("integer ids must fit in a signed 64-bit integer")
            vals = ids.astype(np.int64)
            kind = "int"
        elif ids.dtype.kind == "U":
            vals = ids.tolist()
            kind = "str"
        elif ids.dtype == object:
            ids = ids.tolist()
            kind, vals = _normalize_ids_list(ids)
        else:
            raise TypeError(f"ids must be str or int, got dtype {ids.dtype}")
    else:
        kind, vals = _normalize_ids_list(list(ids))
    if len(vals) != n:
        raise ValueError(f"{len(vals)} ids for {n} fingerprints")
    return kind, vals


def _normalize_ids_list(ids: list) -> tuple[str, object]:
    if not ids:
        return "empty", []
    if all(isinstance(x, str) for x in ids):
        return "str", ids
    if all(isinstance(x, (Integral, np.integer)) and not isinstance(x, (bool, np.bool_)) for x in ids):
        lo, hi = -(1 << 63), (1 << 63) - 1
        vals = [int(x) for x in ids]
        if any(v < lo or v > hi for v in vals):
            raise ValueError("integer ids must fit in a signed 64-bit integer")
        return "int", np.array(vals, dtype=np.int64)
    raise TypeError("ids must be all str or all int")



class GrowableArray:
    """A growable 1-d array (capacity doubling); the base may be a read-only memory map."""

    def __init__(self, dtype, base: np.ndarray | None = None):
        self.dtype = np.dtype(dtype)
        self.buf = base if base is not None else np.empty(0, dtype=self.dtype)
        self.n = len(self.buf)

    def append(self, arr) -> None:
        arr = np.asarray(arr, dtype=self.dtype)
        need = self.n + len(arr)
        if need > len(self.buf) or not self.buf.flags.writeable:
            cap = max(need, int(len(self.buf) * 1.5) + 1024)
            new = np.empty(cap, dtype=self.dtype)
            new[: self.n] = self.buf[: self.n]
            self.buf = new
        self.buf[self.n:need] = arr
        self.n = need

    @property
    def view(self) -> np.ndarray:
        return self.buf[: self.n]

    def make_writeable(self) -> None:
        if not self.buf.flags.writeable:
            self.buf = np.array(self.buf[: self.n], dtype=self.dtype)


class IdStore:
    """Ids by row: an int64 array, or str (UTF-8 blob + offsets from a file, then a list)."""

    def __init__(self):
        self.kind: str | None = None
        self.ints = GrowableArray(np.int64)
        self.blob: np.ndarray | None = None  # uint8, ids of the first n_base rows (from a file)
        self.offsets: np.ndarray | None = None  # int64, n_base + 1
        self.n_base = 0
        self.strs: list[str] = []
        self.lookup: dict | None = None
        self.dups: dict = {}

    def __len__(self) -> int:
        return self.ints.n if self.kind == "int" else self.n_base + len(self.strs)

    def append(self, kind: str, vals) -> None:
        if kind == "empty":
            return
        if self.kind is None:
            self.kind = kind
        elif kind != self.kind:
            raise TypeError(f"this index has {self.kind} ids; got {kind} ids")
        start = len(self)
        if kind == "int":
            self.ints.append(vals)
            vals_list = vals.tolist() if self.lookup is not None else None
        else:
            self.strs.extend(vals)
            vals_list = vals
        if self.lookup is not None:
            for r, v in enumerate(vals_list, start):
                self._index_one(v, r)

    def _index_one(self, v, r: int) -> None:
        old = self.lookup.get(v)
        if old is None:
            self.lookup[v] = r
        else:
            self.dups.setdefault(v, [old]).append(r)

    def get(self, r: int):
        if self.kind == "int":
            return self.ints.buf[r].item()
        if r < self.n_base:
            return bytes(self.blob[self.offsets[r]:self.offsets[r + 1]]).decode("utf-8", "surrogatepass")
        return self.strs[r - self.n_base]

    def take(self, rows) -> list:
        if self.kind == "int":
            return self.ints.buf[np.asarray(rows, dtype=np.intp)].tolist()
        return [self.get(r) for r in (rows.tolist() if isinstance(rows, np.ndarray) else rows)]

    def take_array(self, rows: np.ndarray) -> np.ndarray:
        if self.kind == "int":
            return self.ints.buf[rows]
        out = np.empty(len(rows), dtype=object)
        out[:] = self.take(rows)
        return out

    def rows_of(self, v) -> list[int]:
        if self.lookup is None:
            self.lookup, self.dups = {}, {}
            n = len(self)
            if self.kind == "int":
                keys = self.ints.view.tolist()
            else:
                keys = [self.get(r) for r in range(n)]
            d = dict(zip(keys, range(n)))
            if len(d) == n:
                self.lookup = d
            else:
                for r, x in enumerate(keys):
                    self._index_one(x, r)
        if self.kind == "int":
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (Integral, np.integer)):
                return []
            v = int(v)
        elif not isinstance(v, str):
            return []
        if v in self.dups:
            return list(self.dups[v])
        r = self.lookup.get(v)
        return [] if r is None else [r]

    def save_arrays(self) -> dict[str, np.ndarray]:
        if self.kind == "int":
            return {"ids_int": self.ints.view}
        if self.kind == "str":
            parts = [] if self.blob is None else [self.blob[: self.offsets[self.n_base]].tobytes()]
            enc = [s.encode("utf-8", "surrogatepass") for s in self.strs]
            lens = np.fromiter((len(e) for e in enc), dtype=np.int64, count=len(enc))
            base_end = 0 if self.offsets is None else int(self.offsets[self.n_base])
            offs = np.empty(len(self) + 1, dtype=np.int64)
            if self.n_base:
                offs[: self.n_base + 1] = self.offsets[: self.n_base + 1]
            else:
                offs[0] = 0
            offs[self.n_base + 1:] = base_end + np.cumsum(lens)
            blob = np.frombuffer(b"".join(parts + enc), dtype=np.uint8)
            return {"ids_blob": blob, "ids_offsets": offs}
        return {}
