"""The sorted tables of a :class:`neardup.index.simhash.SimhashIndex` over one range of rows (a
*segment*), built in parallel threads, and the probe compiled for a segment's constants."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..cpus import available_cpus
from .simhash_layout import BITS, SMALL_BUCKET, TableLayout, dir_bits

__all__ = ["INDEX_THREADS", "compile_probe", "Segment"]

#: Threads that sort a segment's tables and answer a large query batch (numpy and the compiled
#: probe release the GIL).
INDEX_THREADS = min(2, available_cpus())

_PROBE_CACHE: dict[tuple, object] = {}


def compile_probe(lay: TableLayout, stride: int, m: int, dbits: int):
    """A function probing every table of one segment for one fingerprint, unrolled over the tables
    with the segment's constants inlined (the Python-level cost of a query is mostly here).

    ``probe(x, dirs, keys, rows, k, found, big)``: for each table, reads the directory bucket of
    the permuted ``x``; a bucket of at most ``SMALL_BUCKET`` entries is checked in place (rows
    within ``k`` go into ``found``), a larger one is appended to ``big`` as ``(t, lo, hi, pv)``.
    The source holds integer constants only.
    """
    key = (lay.k, lay.blocks, stride, m, dbits, SMALL_BUCKET)
    fn = _PROBE_CACHE.get(key)
    if fn is not None:
        return fn
    sh = BITS - dbits
    lines = ["def probe(x, dirs, keys, rows, k, found, big):"]
    for t, expr in enumerate(lay.exprs):
        lines.append(f"    pv = {expr}")
        lines.append(f"    b = {t * stride} + (pv >> {sh})" if sh < BITS else f"    b = {t * stride}")
        lines += [
            "    lo = dirs[b]",
            "    hi = dirs[b + 1]",
            f"    if hi - lo > {SMALL_BUCKET}:",
            f"        big.append(({t}, lo, hi, pv))",
            "    elif hi > lo:",
            f"        for i in range({t * m} + lo, {t * m} + hi):" if t else "        for i in range(lo, hi):",
            "            d = (keys[i] ^ pv).bit_count()",
            "            if d <= k:",
            "                found[rows[i]] = d",
        ]
    ns: dict = {}
    exec("\n".join(lines), {"__builtins__": {"range": range}}, ns)  # noqa: S102
    fn = ns["probe"]
    if len(_PROBE_CACHE) > 256:
        _PROBE_CACHE.clear()
    _PROBE_CACHE[key] = fn
    return fn



class Segment:
    """Sorted tables over one contiguous range of rows (rows removed before the build left out).

    ``keys[t]`` are table ``t``'s permuted fingerprints sorted by (prefix, row), ``rows[t]`` their
    rows, both ``(tables, size)`` arrays; ``dirs[t][b]`` is the first position whose top ``dbits``
    bits are ``b`` (``dirs[t][2**dbits] == size``).
    """

    __slots__ = ("row_lo", "row_hi", "size", "keys", "rows", "dirs", "dbits", "keys_flat", "rows_flat",
                 "dirs_flat", "keys_mv", "rows_mv", "dirs_mv", "stride", "probe")

    def __init__(self, row_lo: int, row_hi: int, keys: np.ndarray, rows: np.ndarray, dirs: np.ndarray, dbits: int):
        self.row_lo, self.row_hi = row_lo, row_hi
        self.keys, self.rows, self.dirs, self.dbits = keys, rows, dirs, dbits
        self.size = keys.shape[1]
        self.stride = dirs.shape[1]
        self.keys_flat = keys.reshape(-1)
        self.rows_flat = rows.reshape(-1)
        self.dirs_flat = dirs.reshape(-1)
        self.keys_mv = memoryview(self.keys_flat)
        self.rows_mv = memoryview(self.rows_flat)
        self.dirs_mv = memoryview(self.dirs_flat)
        self.probe = None  # compiled on the first query

    @classmethod
    def build(cls, lay: TableLayout, fps_all: np.ndarray, row_lo: int, row_hi: int,
              dead: np.ndarray | None) -> "Segment":
        if dead is not None:
            rows_in = (np.flatnonzero(~dead[row_lo:row_hi]) + row_lo).astype(np.int32)
            fps = fps_all[rows_in]
        else:
            rows_in = None
            fps = fps_all[row_lo:row_hi]
        m = len(fps)
        T = lay.n_tables
        db = dir_bits(m, min(lay.prefix_bits))
        keys = np.empty((T, m), dtype=np.uint64)
        rows = np.empty((T, m), dtype=np.int32)
        dirs = np.empty((T, (1 << db) + 1), dtype=np.int32)
        posbits = max(1, (max(m, 1) - 1).bit_length())
        ar = np.arange(m, dtype=np.uint64)

        def one(t: int) -> None:
            pk = lay.permute(t, fps)
            p_bits = lay.prefix_bits[t]
            if p_bits + posbits <= BITS:
                # sort (prefix, position) packed in one word: a plain sort instead of an argsort
                packed = pk & np.uint64(lay.prefix_mask[t])
                packed |= ar
                packed.sort()
                packed &= np.uint64((1 << posbits) - 1)
                pos = packed.view(np.int64)
            else:
                prefix = pk if p_bits == BITS else pk >> np.uint64(BITS - p_bits)
                pos = np.argsort(prefix, kind="stable")
                del prefix
            np.take(pk, pos, out=keys[t])
            del pk
            if rows_in is None:
                np.add(pos, row_lo, out=rows[t], casting="unsafe")
            else:
                np.take(rows_in, pos, out=rows[t])
            del pos
            if db:
                k_t = keys[t]
                if (1 << db) * 8 < m:
                    bounds = np.arange((1 << db) + 1, dtype=np.uint64)
                    bounds[:-1] <<= np.uint64(BITS - db)
                    dirs[t, :-1] = np.searchsorted(k_t, bounds[:-1])
                    dirs[t, -1] = m
                else:
                    counts = np.bincount((k_t >> np.uint64(BITS - db)).astype(np.intp), minlength=1 << db)
                    dirs[t, 0] = 0
                    np.cumsum(counts, out=dirs[t, 1:])
            else:
                dirs[t, 0], dirs[t, 1] = 0, m

        if T > 1 and m >= 1 << 16 and INDEX_THREADS > 1:
            with ThreadPoolExecutor(max_workers=min(INDEX_THREADS, T)) as ex:
                list(ex.map(one, range(T)))  # numpy releases the GIL; each table is independent
        else:
            for t in range(T):
                one(t)
        return cls(row_lo, row_hi, keys, rows, dirs, db)
