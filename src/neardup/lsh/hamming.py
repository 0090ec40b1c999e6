"""Hamming-distance index over 64-bit simhash fingerprints (Manku, Jain and Das Sarma 2007).

Two fingerprints are near-duplicates when they differ in at most ``k`` bits. Cut the 64 bits into
``B > k`` blocks: if two fingerprints differ in at most ``k`` bits, at least ``B - k`` of the blocks
are identical (pigeonhole). So keep one *table* per choice of ``B - k`` blocks, ``C(B, k)`` tables
in all. Table ``t`` stores every fingerprint *permuted* so that its chosen blocks come first (the
*prefix*, ``prefix_bits`` wide), sorted by that prefix. A query permutes itself the same way, finds
the run of entries with its prefix in every table, and checks the exact Hamming distance
(a popcount of the XOR) of each entry in the runs. Every fingerprint within ``k`` bits shares the
prefix of at least one table, so nothing is missed; identical fingerprints share every prefix.

How it is laid out here
-----------------------
- A table is two parallel arrays, the permuted fingerprints (``uint64``) and the internal row
  numbers (``int32``), sorted by (prefix, row), plus a *directory*: for the top ``d`` bits of the
  prefix (``d`` about ``log2 n``), the offset of the first entry with those bits, so that a probe
  reads two directory entries instead of binary searching (Manku et al. §3.1.1 do the same).
- Fingerprints and ids are kept per row (insertion order); ids are mapped to ``int32`` rows.
- **Online adds** go to an unsorted *buffer* (checked by brute force, at most ``buffer_size``
  fingerprints). When it is full it becomes a sorted *segment* (its own set of tables); a segment
  is merged with the one before it once it is at least ``1/merge_factor`` of that one's size, so
  each fingerprint is re-sorted ``O(log n)`` times (amortised) and there are ``O(log n)`` segments.
  A bulk ``add`` of at least ``buffer_size`` fingerprints becomes a segment at once.
- **Removals** set a bit in a tombstone bitmap; removed rows are filtered out of every answer and
  dropped from the tables when their segment is next rebuilt (merges, :meth:`compact`, :meth:`save`).
- :meth:`save` writes one file: a checksummed JSON header with the configuration (format version,
  ``max_distance``, blocks, block sizes, table permutations) and the sorted arrays at aligned
  offsets. :meth:`SimhashIndex.open` memory-maps those arrays: nothing is rebuilt or re-sorted.
- :meth:`pairs` finds every pair within ``k`` bits without the quadratic loop: in each table the
  members of a run of equal prefix are compared at offsets ``1, 2, ...`` (vectorised over the whole
  table per offset), and a pair is reported only by the first table in which it collides, which is
  decided from the XOR of the pair alone.

- **Queries** run in the compiled probe ``neardup._hamming`` when it is built: a ``Prober``
  object reads the segments' arrays, the buffer, the tombstones and integer ids in place through
  the buffer protocol (memory-mapped files included), probes every table in C and returns the
  sorted answers; ``query_many`` releases the GIL. It is rebuilt after every change of the index
  (add, remove, merge, compact). Without the extension the numpy/Python path below answers the
  same (tests check both).

Nothing here depends on Python's ``hash()`` or on random state: the same input gives the same
index, file and answers.
"""

from __future__ import annotations

import json
import math
import os
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from itertools import combinations
from numbers import Integral
from pathlib import Path

import numpy as np

from ..cpus import available_cpus
from ..errors import ConfigError, FormatError

try:
    from .. import _hamming
except ImportError:  # not built: queries use the numpy path (same answers)
    _hamming = None

__all__ = [
    "SimhashIndex",
    "SimhashIndexFormatError",
    "plan_layout",
    "format_plan",
    "layout_for",
]

BITS = 64
MASK64 = (1 << 64) - 1
MAX_DISTANCE = 7
FORMAT_VERSION = 1
MAGIC = b"NDSIMHX\x00"
_HEADER_FIXED = 24  # magic (8) + version u32 + header length u32 + header crc32 u32 + reserved u32
_ALIGN = 64
_MAX_ROWS = 2**31 - 1
_SMALL_BUCKET = 16  # buckets up to this length are scanned in Python, longer ones with numpy
_CHUNK = 1 << 21  # candidate pairs handled per vectorised step in query_many
_DEFAULT_BUFFER = 4096
_DEFAULT_MERGE_FACTOR = 4
_THREADS = min(2, available_cpus())  # tables are sorted in parallel (numpy releases the GIL)
_PARALLEL_QUERIES = 8192  # compiled query_many splits batches at least this large over _THREADS


class SimhashIndexFormatError(FormatError):
    """A saved simhash index is truncated, corrupt, of another format or of another configuration."""


# ----------------------------------------------------------------------------------------------
# Layout: blocks, tables and permutations
# ----------------------------------------------------------------------------------------------


def _block_sizes(blocks: int) -> list[int]:
    base, extra = divmod(BITS, blocks)
    return [base + (1 if i < extra else 0) for i in range(blocks)]


class _Layout:
    """Blocks, tables and the bit permutation of each table, for ``k`` and ``B`` blocks.

    Block 0 holds the most significant bits. Table ``t`` has the ``B - k`` prefix blocks
    ``tables[t]`` (in ``itertools.combinations`` order); its permutation puts those blocks first,
    then the other blocks, each group in block order.
    """

    def __init__(self, max_distance: int, blocks: int):
        k, b = max_distance, blocks
        if not (0 <= k <= MAX_DISTANCE):
            raise ConfigError(f"max_distance must be in [0, {MAX_DISTANCE}], got {k}")
        if k == 0:
            if b != 1:
                raise ConfigError("with max_distance=0 the layout has 1 block (one exact-match table)")
        elif not (k < b <= BITS):
            raise ConfigError(f"blocks must be in [{k + 1}, {BITS}] for max_distance={k}, got {b}")
        self.k = k
        self.blocks = b
        self.sizes = _block_sizes(b)
        starts = [sum(self.sizes[:i]) for i in range(b)]  # from the MSB
        self.tables: list[tuple[int, ...]] = list(combinations(range(b), b - k))
        self.perms: list[list[int]] = [list(s) + [x for x in range(b) if x not in s] for s in self.tables]
        self.prefix_bits: list[int] = [sum(self.sizes[i] for i in s) for s in self.tables]
        self.n_tables = len(self.tables)

        def block_mask(i: int) -> int:
            return ((1 << self.sizes[i]) - 1) << (BITS - starts[i] - self.sizes[i])

        # moves[t]: (src_shift, width, dst_shift), shifts counted from the LSB, adjacent blocks merged
        self.moves: list[list[tuple[int, int, int]]] = []
        for perm in self.perms:
            moves: list[list[int]] = []
            dst = 0
            prev = None
            for blk in perm:
                w = self.sizes[blk]
                src_shift = BITS - starts[blk] - w
                dst_shift = BITS - dst - w
                if prev is not None and prev == blk - 1 and moves:
                    m = moves[-1]  # extend the previous move downwards
                    m[0], m[1], m[2] = src_shift, m[1] + w, dst_shift
                else:
                    moves.append([src_shift, w, dst_shift])
                dst += w
                prev = blk
            self.moves.append([tuple(m) for m in moves])
        # cross[t][u]: the bits of table u's prefix, as they sit in table t's permuted word
        orig_prefix = [sum(block_mask(i) for i in s) for s in self.tables]
        self.cross: list[list[int]] = [[self.permute_int(t, orig_prefix[u]) for u in range(self.n_tables)]
                                       for t in range(self.n_tables)]
        self.prefix_mask = [self.cross[t][t] for t in range(self.n_tables)]
        # one generated function computing every table's permuted word from a Python int
        exprs = []
        for t in range(self.n_tables):
            terms = []
            for s, w, d in self.moves[t]:
                mask = ((1 << w) - 1) << d
                if s == d:
                    terms.append(f"(x & {mask})")
                elif s > d:
                    terms.append(f"((x >> {s - d}) & {mask})")
                else:
                    terms.append(f"((x << {d - s}) & {mask})")
            exprs.append(" | ".join(terms))
        self.exprs = exprs
        src = "lambda x: (" + ", ".join(exprs) + ",)"
        # the generated source contains only integer constants and the argument x
        self.permute_all_int = eval(src, {"__builtins__": {}})  # noqa: S307

    def permute_int(self, t: int, x: int) -> int:
        out = 0
        for s, w, d in self.moves[t]:
            out |= ((x >> s) & ((1 << w) - 1)) << d
        return out

    def permute(self, t: int, x: np.ndarray) -> np.ndarray:
        """Table ``t``'s permuted words of a uint64 array."""
        out = None
        for s, w, d in self.moves[t]:
            mask = np.uint64(((1 << w) - 1) << d)
            if s == d:
                part = x & mask
            elif s > d:
                part = (x >> np.uint64(s - d)) & mask
            else:
                part = (x << np.uint64(d - s)) & mask
            out = part if out is None else (out | part)
        return out

    def config(self) -> dict:
        return {
            "max_distance": self.k,
            "blocks": self.blocks,
            "block_sizes": list(self.sizes),
            "tables": [list(s) for s in self.tables],
            "permutations": [list(p) for p in self.perms],
        }


_LAYOUT_CACHE: dict[tuple[int, int], _Layout] = {}


def layout_for(max_distance: int, blocks: int) -> _Layout:
    """The (cached) layout for ``max_distance`` and ``blocks``."""
    key = (max_distance, blocks)
    lay = _LAYOUT_CACHE.get(key)
    if lay is None:
        lay = _LAYOUT_CACHE[key] = _Layout(max_distance, blocks)
    return lay


_PROBE_CACHE: dict[tuple, object] = {}


def _compile_probe(lay: _Layout, stride: int, m: int, dbits: int):
    """A function probing every table of one segment for one fingerprint, unrolled over the tables
    with the segment's constants inlined (the Python-level cost of a query is mostly here).

    ``probe(x, dirs, keys, rows, k, found, big)``: for each table, reads the directory bucket of
    the permuted ``x``; a bucket of at most ``_SMALL_BUCKET`` entries is checked in place (rows
    within ``k`` go into ``found``), a larger one is appended to ``big`` as ``(t, lo, hi, pv)``.
    The source holds integer constants only.
    """
    key = (lay.k, lay.blocks, stride, m, dbits, _SMALL_BUCKET)
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
            f"    if hi - lo > {_SMALL_BUCKET}:",
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


# ----------------------------------------------------------------------------------------------
# Planning the layout
# ----------------------------------------------------------------------------------------------

# Cost model of one query() in microseconds, fitted on the development machine (2-core AMD EPYC,
# numpy 2.4, shared and loaded, thread CPU time): a fixed cost, a cost per table probed, and per
# table the cost of its directory bucket: 0.5 us per entry checked in Python (up to
# _SMALL_BUCKET entries), else 8 us + 0.05 us per entry for the numpy pass. Only the ranking of
# layouts matters. The model is of the numpy/Python probe; the compiled probe (neardup._hamming)
# answers in about a tenth of the time and ranks the layouts it picks the same way at 8M (5 blocks:
# 2.0 us p50 against 4.3 us for 4 blocks and 3.0 us for 6); at 1M it would prefer 4 blocks by
# ~10 % (1.9 against 2.2 us), which the model keeps at 5 blocks (10 tables), where all pairs are
# far cheaper (about 1e5 candidate pairs instead of 3e7). Measured with the benchmark's data, load 2-4.
_US_PER_QUERY = 4.0
_US_PER_TABLE = 2.1
_US_PER_ENTRY_PY = 0.5
_US_NUMPY_PASS = 8.0
_US_PER_ENTRY_NP = 0.05


def _est_query_us(n: int, lay: "_Layout") -> float:
    db = _dir_bits(n, min(lay.prefix_bits))
    total = _US_PER_QUERY
    for p in lay.prefix_bits:
        c = n / 2.0 ** min(p, db) if db else float(n)  # entries in the bucket read
        total += _US_PER_TABLE + (c * _US_PER_ENTRY_PY if c <= _SMALL_BUCKET
                                  else _US_NUMPY_PASS + c * _US_PER_ENTRY_NP)
    return total


DEFAULT_MEMORY_BUDGET = 4 * 2**30  # bytes; plan_layout(memory_budget=None) lifts the limit
_DIR_EXTRA_BITS = 1


def _dir_bits(m: int, prefix_bits: int) -> int:
    """Directory width for a table of ``m`` entries: about one entry per bucket, never wider than
    the prefix (nor than 26 bits)."""
    if m <= 1:
        return 0
    return max(0, min(prefix_bits, m.bit_length() - 1 + _DIR_EXTRA_BITS, 26))


def _memory_bytes(n: int, lay: _Layout) -> int:
    per_row = 8 + 1  # fingerprint + tombstone flag
    db = _dir_bits(n, min(lay.prefix_bits))
    return per_row * n + lay.n_tables * (12 * n + 4 * ((1 << db) + 1))


def plan_layout(n_fingerprints: int, max_distance: int, *, max_tables: int = 256,
                memory_budget: int | None = DEFAULT_MEMORY_BUDGET) -> dict:
    """Candidate layouts (blocks and tables) for ``n_fingerprints`` at ``max_distance``, and the chosen one.

    For each number of blocks ``B`` from ``k + 1`` up (while the table count ``C(B, k)`` stays at
    most ``max_tables``, and until more tables stop paying), the returned dict lists:

    - ``blocks``, ``tables`` (``C(B, k)``), ``block_bits`` (sizes of the blocks, MSB first);
    - ``prefix_bits`` (the smallest prefix of any table; ``prefix_bits_max`` the largest);
    - ``memory_bytes``: fingerprints, tombstones and tables (12 bytes per entry per table plus the
      directory); ids are not counted;
    - ``expected_probes``: candidates checked per query for random fingerprints,
      ``sum over tables of n / 2**prefix_bits``;
    - ``expected_pair_candidates``: pairs compared by :meth:`SimhashIndex.pairs`,
      ``sum over tables of n**2 / 2**(prefix_bits + 1)``;
    - ``est_query_us``: a cost model of :meth:`SimhashIndex.query` (``cost_model`` in the result):
      a fixed cost, a cost per table, and per table the cost of checking its directory bucket
      (``n / 2**min(prefix_bits, dir_bits)`` entries) in Python or, when large, with numpy.

    ``chosen`` is the candidate with the lowest estimated query time within ``memory_budget``
    (bytes, 4 GiB by default, ``None`` for no limit; the one using the least memory if none fits);
    ties go to fewer tables.
    """
    if isinstance(n_fingerprints, bool) or not isinstance(n_fingerprints, Integral) or n_fingerprints < 0:
        raise ConfigError(f"n_fingerprints must be a non-negative int, got {n_fingerprints!r}")
    if isinstance(max_distance, bool) or not isinstance(max_distance, Integral) \
            or not 0 <= max_distance <= MAX_DISTANCE:
        raise ConfigError(f"max_distance must be an int in [0, {MAX_DISTANCE}], got {max_distance!r}")
    n, k = int(n_fingerprints), int(max_distance)
    candidates = []
    block_range = [1] if k == 0 else range(k + 1, BITS + 1)
    for b in block_range:
        if math.comb(b, k) > max_tables and candidates:
            break
        lay = layout_for(k, b)
        probes = sum(n / 2.0**p for p in lay.prefix_bits)
        pair_cands = sum(n * n / 2.0 ** (p + 1) for p in lay.prefix_bits)
        cand = {
            "blocks": b,
            "tables": lay.n_tables,
            "block_bits": list(lay.sizes),
            "prefix_bits": min(lay.prefix_bits),
            "prefix_bits_max": max(lay.prefix_bits),
            "memory_bytes": _memory_bytes(n, lay),
            "expected_probes": probes,
            "expected_pair_candidates": pair_cands,
            "est_query_us": round(_est_query_us(n, lay), 2),
        }
        candidates.append(cand)
        if probes < 0.05 * lay.n_tables or len(candidates) >= 8:
            break  # more tables cannot cut the probes any further
    fits = [c for c in candidates if memory_budget is None or c["memory_bytes"] <= memory_budget]
    if fits:
        chosen = min(fits, key=lambda c: (c["est_query_us"], c["tables"]))
    else:
        chosen = min(candidates, key=lambda c: (c["memory_bytes"], c["tables"]))
    return {
        "n_fingerprints": n,
        "max_distance": k,
        "memory_budget": memory_budget,
        "cost_model": {"us_per_query": _US_PER_QUERY, "us_per_table": _US_PER_TABLE,
                       "us_per_entry_python": _US_PER_ENTRY_PY, "us_per_numpy_pass": _US_NUMPY_PASS,
                       "us_per_entry_numpy": _US_PER_ENTRY_NP, "python_bucket_max": _SMALL_BUCKET},
        "candidates": candidates,
        "chosen": dict(chosen),
        "blocks": chosen["blocks"],
        "tables": chosen["tables"],
    }


def _human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _num(x: float) -> str:
    if x == 0:
        return "0"
    if x >= 1e6 or x < 0.01:
        return f"{x:.2e}"
    return f"{x:,.2f}" if x < 100 else f"{x:,.0f}"


def format_plan(plan: dict) -> str:
    """A human-readable table of :func:`plan_layout`'s result (the chosen row marked ``*``)."""
    head = (f"Simhash index layouts for {plan['n_fingerprints']:,} fingerprints, "
            f"max distance {plan['max_distance']}")
    cols = ["", "blocks", "tables", "prefix bits", "memory", "probes/query", "pair candidates", "est. query"]
    rows = []
    for c in plan["candidates"]:
        pb = str(c["prefix_bits"]) if c["prefix_bits"] == c["prefix_bits_max"] \
            else f"{c['prefix_bits']}-{c['prefix_bits_max']}"
        rows.append([
            "*" if c["blocks"] == plan["chosen"]["blocks"] else "",
            str(c["blocks"]), str(c["tables"]), pb, _human_bytes(c["memory_bytes"]),
            _num(c["expected_probes"]), _num(c["expected_pair_candidates"]), f"{c['est_query_us']:.1f} us",
        ])
    widths = [max(len(cols[i]), *(len(r[i]) for r in rows)) for i in range(len(cols))]
    lines = [head, ""]
    lines.append("  ".join(cols[i].rjust(widths[i]) for i in range(len(cols))))
    lines.append("  ".join("-" * widths[i] for i in range(len(cols))))
    for r in rows:
        lines.append("  ".join(r[i].rjust(widths[i]) for i in range(len(cols))))
    ch = plan["chosen"]
    lines.append("")
    lines.append(f"* chosen: {ch['blocks']} blocks, {ch['tables']} tables (lowest estimated query time"
                 + (f" within {_human_bytes(plan['memory_budget'])}" if plan.get("memory_budget") else "") + ").")
    lines.append("memory excludes ids; probes are candidates checked per query for random fingerprints.")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# Input normalisation
# ----------------------------------------------------------------------------------------------


def _as_fingerprint(x) -> int:
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


def _as_fingerprints(xs) -> np.ndarray:
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
    vals = [_as_fingerprint(x) for x in xs]
    return np.array(vals, dtype=np.uint64) if vals else np.empty(0, dtype=np.uint64)


def _normalize_ids(ids, n: int) -> tuple[str, object]:
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


# ----------------------------------------------------------------------------------------------
# Storage helpers
# ----------------------------------------------------------------------------------------------


class _Grow:
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


class _IdStore:
    """Ids by row: an int64 array, or str (UTF-8 blob + offsets from a file, then a list)."""

    def __init__(self):
        self.kind: str | None = None
        self.ints = _Grow(np.int64)
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


class _Segment:
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
    def build(cls, lay: _Layout, fps_all: np.ndarray, row_lo: int, row_hi: int,
              dead: np.ndarray | None) -> "_Segment":
        if dead is not None:
            rows_in = (np.flatnonzero(~dead[row_lo:row_hi]) + row_lo).astype(np.int32)
            fps = fps_all[rows_in]
        else:
            rows_in = None
            fps = fps_all[row_lo:row_hi]
        m = len(fps)
        T = lay.n_tables
        db = _dir_bits(m, min(lay.prefix_bits))
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

        if T > 1 and m >= 1 << 16 and _THREADS > 1:
            with ThreadPoolExecutor(max_workers=min(_THREADS, T)) as ex:
                list(ex.map(one, range(T)))  # numpy releases the GIL; each table is independent
        else:
            for t in range(T):
                one(t)
        return cls(row_lo, row_hi, keys, rows, dirs, db)


def _expand(lo: np.ndarray, cnt: np.ndarray, total: int) -> tuple[np.ndarray, np.ndarray]:
    """For ranges ``[lo[i], lo[i] + cnt[i])``: (range number, position) of each of their ``total`` members."""
    which = np.repeat(np.arange(len(cnt), dtype=np.intp), cnt)
    starts = np.cumsum(cnt) - cnt
    pos = np.arange(total, dtype=np.int64)
    pos += np.repeat(lo - starts, cnt)
    return which, pos


# ----------------------------------------------------------------------------------------------
# The index
# ----------------------------------------------------------------------------------------------


class SimhashIndex:
    """Find 64-bit fingerprints within ``max_distance`` bits (Manku, Jain and Das Sarma 2007).

    Parameters
    ----------
    max_distance:
        ``k``, the largest Hamming distance reported (0 to 7). Distance exactly ``k`` is found,
        ``k + 1`` is not; identical fingerprints are always found.
    expected_size:
        The number of fingerprints expected; it picks the number of blocks (and so of tables) with
        :func:`plan_layout`. ``None`` decides at the first :meth:`add` from its size (at least 65536).
    blocks:
        Force the number of blocks ``B`` (``k < B <= 64``; 1 when ``k = 0``): ``C(B, k)`` tables.
    memory_budget:
        Passed to :func:`plan_layout` when the layout is chosen from the size (bytes; 4 GiB).
    buffer_size:
        How many fingerprints added one at a time wait in the unsorted buffer (checked by brute
        force) before they are sorted into a segment.
    merge_factor:
        A segment is merged into the previous one once it holds at least ``1/merge_factor`` of
        that one's entries (amortised: each entry is re-sorted ``O(log n)`` times).

    Ids are str or int (all of one kind per index); internally each fingerprint has an ``int32``
    row number in insertion order. Ids are not checked for uniqueness; :meth:`remove` removes
    every fingerprint carrying the id (through an id -> row dict built on first use: a lookup
    only, no answer or file depends on hash order). The index is not thread-safe.
    """

    def __init__(self, max_distance: int = 3, expected_size: int | None = None, *, blocks: int | None = None,
                 buffer_size: int = _DEFAULT_BUFFER, merge_factor: int = _DEFAULT_MERGE_FACTOR,
                 memory_budget: int | None = DEFAULT_MEMORY_BUDGET):
        if isinstance(max_distance, bool) or not isinstance(max_distance, Integral) \
                or not 0 <= max_distance <= MAX_DISTANCE:
            raise ConfigError(f"max_distance must be an int in [0, {MAX_DISTANCE}], got {max_distance!r}")
        if expected_size is not None and (isinstance(expected_size, bool) or not isinstance(expected_size, Integral)
                                          or expected_size < 0):
            raise ConfigError(f"expected_size must be a non-negative int or None, got {expected_size!r}")
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, Integral) or buffer_size < 1:
            raise ConfigError(f"buffer_size must be a positive int, got {buffer_size!r}")
        if isinstance(merge_factor, bool) or not isinstance(merge_factor, Integral) or merge_factor < 1:
            raise ConfigError(f"merge_factor must be a positive int, got {merge_factor!r}")
        self._k = int(max_distance)
        self._buffer_size = int(buffer_size)
        self._merge_factor = int(merge_factor)
        self._memory_budget = memory_budget
        self._layout: _Layout | None = None
        if blocks is not None:
            if isinstance(blocks, bool) or not isinstance(blocks, Integral):
                raise ConfigError(f"blocks must be an int, got {blocks!r}")
            self._layout = layout_for(self._k, int(blocks))
        elif expected_size is not None:
            self._layout = layout_for(self._k, plan_layout(int(expected_size), self._k,
                                                           memory_budget=memory_budget)["blocks"])
        self._fps = _Grow(np.uint64)
        self._dead = _Grow(np.bool_)
        self._n_dead = 0
        self._ids = _IdStore()
        self._segments: list[_Segment] = []
        self._tail_start = 0  # rows [tail_start, n) are in the unsorted buffer
        self._prober = None  # the compiled probe over the current arrays (None: stale or absent)
        self._pquery = None  # its bound query method when it reports ids itself (int ids)

    # -- properties ----------------------------------------------------------------------------

    @property
    def max_distance(self) -> int:
        return self._k

    @property
    def blocks(self) -> int | None:
        """Number of blocks (``None`` until decided by the first add)."""
        return None if self._layout is None else self._layout.blocks

    @property
    def n_tables(self) -> int | None:
        return None if self._layout is None else self._layout.n_tables

    @property
    def config(self) -> dict:
        """The layout configuration, as recorded in saved files."""
        self._ensure_layout(0)
        return {"format_version": FORMAT_VERSION, **self._layout.config()}

    def __len__(self) -> int:
        return self._fps.n - self._n_dead

    def __repr__(self) -> str:
        return (f"SimhashIndex(max_distance={self._k}, blocks={self.blocks}, tables={self.n_tables}, "
                f"size={len(self)}, segments={len(self._segments)}, buffered={self._fps.n - self._tail_start})")

    def memory_bytes(self) -> int:
        """Bytes of fingerprints, tombstones, tables and int ids (str ids are not counted)."""
        total = self._fps.n * 8 + self._dead.n
        if self._ids.kind == "int":
            total += self._ids.ints.n * 8
        for seg in self._segments:
            total += seg.keys.nbytes + seg.rows.nbytes + seg.dirs.nbytes
        return total

    def _ensure_layout(self, n_hint: int) -> _Layout:
        if self._layout is None:
            self._layout = layout_for(self._k, plan_layout(max(int(n_hint), 1 << 16), self._k,
                                                           memory_budget=self._memory_budget)["blocks"])
        return self._layout

    # -- adding and removing ------------------------------------------------------------------

    def add(self, ids, fingerprints) -> None:
        """Add fingerprints with their ids: sequences or numpy arrays (uint64, or int64 read as
        two's complement), or one id and one fingerprint.

        A batch of at least ``buffer_size`` is sorted into a new segment at once; smaller ones wait
        in the unsorted buffer, which becomes a segment when full. Segments of similar size are
        merged (amortised ``O(log n)`` re-sorts per fingerprint).
        """
        fps = _as_fingerprints(fingerprints)
        kind, vals = _normalize_ids(ids, len(fps))
        n_new = len(fps)
        if n_new == 0:
            return
        if self._fps.n + n_new > _MAX_ROWS:
            raise ValueError(f"a SimhashIndex holds at most {_MAX_ROWS} fingerprints")
        self._ensure_layout(n_new)
        self._prober = self._pquery = None
        self._ids.append(kind, vals)
        self._fps.append(fps)
        self._dead.append(np.zeros(n_new, dtype=np.bool_))
        if self._fps.n - self._tail_start >= self._buffer_size:
            self._flush()

    def _flush(self) -> None:
        self._prober = self._pquery = None
        n = self._fps.n
        if n > self._tail_start:
            self._segments.append(self._build(self._tail_start, n))
            self._tail_start = n
        while len(self._segments) >= 2 and \
                self._segments[-1].size * self._merge_factor >= self._segments[-2].size:
            b = self._segments.pop()
            a = self._segments.pop()
            self._segments.append(self._build(a.row_lo, b.row_hi))

    def _build(self, lo: int, hi: int) -> _Segment:
        dead = self._dead.view if self._n_dead and self._dead.view[lo:hi].any() else None
        return _Segment.build(self._layout, self._fps.view, lo, hi, dead)

    def compact(self) -> None:
        """Sort the buffer and merge every segment into one, dropping removed fingerprints."""
        if self._layout is None:
            return
        n = self._fps.n
        if len(self._segments) == 1 and self._tail_start == n and self._segments[0].size == n - self._n_dead:
            return  # one segment holding exactly the live rows (rows never come back to life)
        self._prober = self._pquery = None
        self._segments = [self._build(0, n)] if n else []
        self._tail_start = n

    def remove(self, id) -> None:
        """Remove every fingerprint added with ``id`` (KeyError if there is none).

        The rows are marked in the tombstone bitmap and skipped by every answer; they leave the
        sorted tables at the next rebuild of their segment. The first call builds an id -> row map.
        """
        rows = [r for r in self._ids.rows_of(id) if not self._dead.buf[r]] if self._ids.kind else []
        if not rows:
            raise KeyError(id)
        self._prober = self._pquery = None
        self._dead.make_writeable()
        for r in rows:
            self._dead.buf[r] = True
        self._n_dead += len(rows)

    def __contains__(self, id) -> bool:
        if not self._ids.kind:
            return False
        return any(not self._dead.buf[r] for r in self._ids.rows_of(id))

    # -- queries -------------------------------------------------------------------------------

    def query(self, fingerprint) -> list[tuple[object, int]]:
        """Ids within ``max_distance`` of ``fingerprint``, as ``(id, distance)`` sorted by distance
        and then insertion order.

        With the compiled probe (``neardup._hamming``) one C call probes every table of every
        segment and the buffer and returns the sorted answer. Without it, every table is probed
        through its directory (two reads) with a function generated for the layout (unrolled over
        the tables), the candidates of a small bucket are checked in Python and of a large one
        with numpy, and the unsorted buffer by brute force.
        """
        q = self._pquery
        if q is not None and type(fingerprint) is int:
            try:
                return q(fingerprint)  # the whole answer, in C
            except OverflowError:  # negative (two's complement) or too large: checked below
                pass
        return self._query(fingerprint)

    def _query(self, fingerprint) -> list[tuple[object, int]]:
        fp = fingerprint if type(fingerprint) is int and 0 <= fingerprint <= MASK64 \
            else _as_fingerprint(fingerprint)
        p = self._prober or self._native()
        if p is not None:  # compiled probe: ids (int) or rows (str ids) with distances, sorted
            found = p.query(fp)
            return self._rows_to_ids(found) if self._ids.kind == "str" and found else found
        k = self._k
        found: dict[int, int] = {}
        for seg in self._segments:
            probe = seg.probe
            if probe is None:
                probe = seg.probe = _compile_probe(self._layout, seg.stride, seg.size, seg.dbits)
            big: list = []
            probe(fp, seg.dirs_mv, seg.keys_mv, seg.rows_mv, k, found, big)
            for t, lo, hi, pv in big:  # large buckets: one numpy pass each
                dist = np.bitwise_count(seg.keys[t, lo:hi] ^ np.uint64(pv))
                hit = np.flatnonzero(dist <= k)
                if hit.size:
                    for r, d in zip(seg.rows[t, lo + hit].tolist(), dist[hit].tolist()):
                        found[r] = d
        n = self._fps.n
        if n > self._tail_start:
            dist = np.bitwise_count(self._fps.buf[self._tail_start:n] ^ np.uint64(fp))
            hit = np.flatnonzero(dist <= k)
            for r, d in zip((hit + self._tail_start).tolist(), dist[hit].tolist()):
                found[r] = d
        if not found:
            return []
        if self._n_dead:
            dead = self._dead.buf
            items = sorted((d, r) for r, d in found.items() if not dead[r])
        elif len(found) == 1:
            items = [(d, r) for r, d in found.items()]
        else:
            items = sorted((d, r) for r, d in found.items())
        get = self._ids.get
        return [(get(r), d) for d, r in items]

    def _native(self):
        """The compiled probe over the current arrays (built here, kept until the index changes),
        or None without the extension or before the layout is known."""
        if _hamming is None or self._layout is None:
            return None
        n = self._fps.n
        segs = [(s.keys_flat, s.rows_flat, s.dirs_flat, s.size, s.stride, s.dbits) for s in self._segments]
        p = _hamming.Prober(self._k, self._layout.moves, segs, self._fps.buf[:n], self._tail_start, n,
                            self._dead.buf[:n] if self._n_dead else None,
                            self._ids.ints.buf[:n] if self._ids.kind == "int" else None)
        self._prober = p
        self._pquery = p.query if self._ids.kind != "str" else None
        return p

    def _rows_to_ids(self, found: list) -> list:
        get = self._ids.get
        return [(get(r), d) for r, d in found]

    def _native_many(self, p, qs: np.ndarray, lists: bool):
        """``[(first query, p.query_many(part, lists))]`` over consecutive parts of ``qs``: one
        part, or for a large batch parts run in ``_THREADS`` threads (the probe releases the GIL)."""
        nq = len(qs)
        if nq < _PARALLEL_QUERIES or _THREADS < 2:
            return [(0, p.query_many(qs, lists))]
        step = -(-nq // (2 * _THREADS))
        starts = list(range(0, nq, step))
        with ThreadPoolExecutor(max_workers=_THREADS) as ex:
            return list(zip(starts, ex.map(lambda a: p.query_many(qs[a:a + step], lists), starts)))

    def query_many(self, fingerprints) -> list[list[tuple[object, int]]]:
        """:meth:`query` for each fingerprint (compiled, or vectorised over the batch and the tables)."""
        qs = _as_fingerprints(fingerprints)
        nq = len(qs)
        if nq == 0:
            return []
        p = self._prober or self._native()
        if p is not None:
            out = []
            for _, part in self._native_many(p, qs, True):
                out.extend(part)
            if self._ids.kind == "str":
                out = [self._rows_to_ids(one) if one else one for one in out]
            return out
        qi, rows, dist = self.query_arrays(qs, ids=False)
        if not len(qi):
            return [[] for _ in range(nq)]
        found = list(zip(self._ids.take(rows), dist.tolist()))
        bounds = np.searchsorted(qi, np.arange(nq + 1)).tolist()
        return [found[a:b] for a, b in zip(bounds, bounds[1:])]

    def query_arrays(self, fingerprints, *, ids: bool = True):
        """Every match of a batch as arrays ``(query_index, id_or_row, distance)``, sorted by query,
        distance and insertion order (ids when ``ids=True``, else internal rows)."""
        qs = _as_fingerprints(fingerprints)
        p = self._prober or self._native()
        if p is not None:  # already filtered, sorted by (query, distance, row) and deduplicated
            qi_l, row_l, d_l = [], [], []
            for q0, (a, b, c) in self._native_many(p, qs, False):
                q = np.frombuffer(a, dtype=np.int64)
                if q0:
                    q += q0
                qi_l.append(q)
                row_l.append(np.frombuffer(b, dtype=np.int32))
                d_l.append(np.frombuffer(c, dtype=np.uint8))
            qi, rows, dist = (x[0] if len(x) == 1 else np.concatenate(x) for x in (qi_l, row_l, d_l))
            return qi, (self._ids.take_array(rows) if ids and self._ids.kind else rows), dist
        qi_parts, row_parts, d_parts = self._match_arrays(qs)
        if not qi_parts:
            e = np.empty(0, dtype=np.int64)
            return e, (self._ids.take_array(e) if ids and self._ids.kind else np.empty(0, np.int32)), \
                np.empty(0, dtype=np.uint8)
        qi = np.concatenate(qi_parts)
        rows = np.concatenate(row_parts)
        dist = np.concatenate(d_parts).astype(np.uint8)
        if self._n_dead:
            live = ~self._dead.buf[rows]
            qi, rows, dist = qi[live], rows[live], dist[live]
        if len(qs) < 1 << 24:
            # sort by (query, distance, row) packed in one word; a match found by several tables
            # gives equal words, kept once
            key = (qi.astype(np.uint64) << np.uint64(40)) | (dist.astype(np.uint64) << np.uint64(32)) \
                | rows.astype(np.uint64)
            key.sort()
            if len(key) > 1:
                key = key[np.concatenate(([True], key[1:] != key[:-1]))]
            qi = (key >> np.uint64(40)).astype(np.int64)
            dist = ((key >> np.uint64(32)) & np.uint64(0xFF)).astype(np.uint8)
            rows = (key & np.uint64(0xFFFFFFFF)).astype(np.int32)
        else:
            order = np.lexsort((rows, dist, qi))
            qi, rows, dist = qi[order], rows[order], dist[order]
            if len(qi) > 1:
                first = np.concatenate(([True], (qi[1:] != qi[:-1]) | (rows[1:] != rows[:-1])))
                qi, rows, dist = qi[first], rows[first], dist[first]
        return qi, (self._ids.take_array(rows) if ids else rows), dist

    def _match_arrays(self, qs: np.ndarray):
        """(query index, row, distance) arrays of every match (removed rows included); a match
        found by several tables appears several times."""
        k = self._k
        nq = len(qs)
        qi_parts, row_parts, d_parts = [], [], []
        if nq == 0:
            return qi_parts, row_parts, d_parts
        lay = self._layout
        T = lay.n_tables if lay is not None else 0
        if self._segments:
            pq = np.empty((T, nq), dtype=np.uint64)
            for t in range(T):
                pq[t] = lay.permute(t, qs)
            pq_flat = pq.reshape(-1)
            probe_table = np.repeat(np.arange(T, dtype=np.intp), nq)
            # process the (table, query) probes in chunks of about _CHUNK candidates
            pchunk = max(1, min(T * nq, _CHUNK // 4))
            for seg in self._segments:
                m = seg.size
                db = seg.dbits
                for p0 in range(0, T * nq, pchunk):
                    p1 = min(T * nq, p0 + pchunk)
                    ptab = probe_table[p0:p1]
                    pv = pq_flat[p0:p1]
                    b = ptab * seg.stride
                    if db:
                        b += (pv >> np.uint64(BITS - db)).astype(np.intp)
                    lo = seg.dirs_flat[b].astype(np.int64)
                    cnt = seg.dirs_flat[b + 1] - lo
                    lo += ptab * m
                    cum = np.cumsum(cnt)
                    if cum[-1] == 0:
                        continue
                    c0 = 0
                    while c0 < len(cnt):
                        base = int(cum[c0 - 1]) if c0 else 0
                        c1 = max(c0 + 1, int(np.searchsorted(cum, base + _CHUNK, side="right")))
                        total = int(cum[c1 - 1]) - base
                        if total:
                            which, pos = _expand(lo[c0:c1], cnt[c0:c1], total)
                            xr = seg.keys_flat[pos]
                            xr ^= pv[c0:c1][which]
                            dist = np.bitwise_count(xr)
                            ok = np.flatnonzero(dist <= k)
                            if ok.size:
                                # a match seen in several tables is dropped later, when sorted
                                probe = which[ok] + (p0 + c0)
                                qi_parts.append(probe % nq)
                                row_parts.append(seg.rows_flat[pos[ok]])
                                d_parts.append(dist[ok])
                        c0 = c1
        n = self._fps.n
        if n > self._tail_start:
            tail = self._fps.buf[self._tail_start:n]
            step = max(1, _CHUNK // max(len(tail), 1))
            for q0 in range(0, nq, step):
                dist = np.bitwise_count(qs[q0:q0 + step, None] ^ tail[None, :])
                a, b = np.nonzero(dist <= k)
                if a.size:
                    qi_parts.append(a.astype(np.int64) + q0)
                    row_parts.append((b + self._tail_start).astype(np.int32))
                    d_parts.append(dist[a, b])
        return qi_parts, row_parts, d_parts

    # -- all pairs -----------------------------------------------------------------------------

    def pair_chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """All pairs within ``max_distance`` as chunks of arrays ``(rows_a, rows_b, distances)``.

        Rows are internal row numbers (insertion order, ``rows_a < rows_b``); each unordered pair
        appears once. Compacts the index first. In every table, entries ``i`` and ``i + d`` of a
        run of equal prefix are compared for ``d = 1, 2, ...`` while any run is longer than ``d``:
        one vectorised step per offset over the entries whose run reaches that far, in slices of
        at most ``2**21`` entries, so a huge run (many identical fingerprints) costs time in
        proportion to its candidate pairs but never quadratic memory. A pair is kept only in the
        first table where its prefixes agree, decided from the XOR of the pair.
        """
        self.compact()
        if not self._segments:
            return
        lay = self._layout
        k = self._k
        seg = self._segments[0]
        m = seg.size
        if m < 2:
            return
        for t in range(lay.n_tables):
            keys = seg.keys[t]
            rows = seg.rows[t]
            p_bits = lay.prefix_bits[t]
            prefix = keys if p_bits == BITS else keys >> np.uint64(BITS - p_bits)
            same = prefix[1:] == prefix[:-1]
            del prefix
            idx = np.flatnonzero(same)
            if idx.size == 0:
                continue
            # end (exclusive) of the run holding each active index
            boundary = np.flatnonzero(~same) + 1
            del same
            ends = np.append(boundary, m)
            end = ends[np.searchsorted(boundary, idx, side="right")]
            del boundary, ends
            earlier = [np.uint64(lay.cross[t][u]) for u in range(t)]
            d = 1
            while idx.size:
                for s0 in range(0, idx.size, _CHUNK):
                    ii = idx[s0:s0 + _CHUNK]
                    jj = ii + d
                    xr = keys[ii]
                    xr ^= keys[jj]
                    dist = np.bitwise_count(xr)
                    ok = np.flatnonzero(dist <= k)
                    if ok.size:
                        xs = xr[ok]
                        keep = np.ones(ok.size, dtype=bool)
                        for cm in earlier:
                            keep &= (xs & cm) != 0
                        ok = ok[keep]
                        if ok.size:
                            ra = rows[ii[ok]]
                            rb = rows[jj[ok]]
                            yield np.minimum(ra, rb), np.maximum(ra, rb), dist[ok]
                d += 1
                still = idx + d < end
                if not still.all():
                    idx, end = idx[still], end[still]

    def pairs(self) -> Iterator[tuple[object, object, int]]:
        """Every pair of ids within ``max_distance``: ``(id_a, id_b, distance)``, ``id_a`` added
        before ``id_b``, each unordered pair once (see :meth:`pair_chunks` for how). Modifying the
        index while iterating is not supported."""
        for ra, rb, dist in self.pair_chunks():
            if self._n_dead:
                live = ~(self._dead.buf[ra] | self._dead.buf[rb])
                ra, rb, dist = ra[live], rb[live], dist[live]
            yield from zip(self._ids.take(ra), self._ids.take(rb), dist.tolist())

    # -- persistence ---------------------------------------------------------------------------

    def save(self, path) -> None:
        """Write the index to one file (compacting it first), via a temporary file renamed into place.

        Layout: ``MAGIC``, then little-endian u32 format version, header length, header CRC-32 and
        a reserved word, then a JSON header with the configuration and the offset, dtype, length
        and CRC-32 of each array, then the arrays, 64-byte aligned: fingerprints and tombstones by
        row, ids, and the tables (sorted permuted fingerprints, their rows, directories).
        """
        self._ensure_layout(self._fps.n)
        self.compact()
        lay = self._layout
        n = self._fps.n
        T = lay.n_tables
        arrays: dict[str, np.ndarray] = {
            "fingerprints": self._fps.view,
            "tombstones": np.packbits(self._dead.view.astype(np.uint8), bitorder="little"),
        }
        arrays.update(self._ids.save_arrays())
        seg = self._segments[0] if self._segments and self._segments[0].size else None
        if seg is not None:
            arrays["keys"], arrays["rows"], arrays["dirs"] = seg.keys_flat, seg.rows_flat, seg.dirs_flat
        else:
            arrays["keys"] = np.empty(0, np.uint64)
            arrays["rows"] = np.empty(0, np.int32)
            arrays["dirs"] = np.tile(np.array([0, 0], np.int32), T)
        meta = {}
        for name, arr in arrays.items():
            arr = np.ascontiguousarray(arr)
            arrays[name] = arr
            meta[name] = {"dtype": arr.dtype.str, "length": int(arr.shape[0]),
                          "crc32": zlib.crc32(memoryview(arr).cast("B"))}
        header = {
            "format": "neardup-simhash-index",
            "format_version": FORMAT_VERSION,
            **lay.config(),
            "n_rows": n,
            "n_removed": int(self._n_dead),
            "table_size": 0 if seg is None else seg.size,
            "dir_bits": 0 if seg is None else seg.dbits,
            "id_kind": self._ids.kind,
            "buffer_size": self._buffer_size,
            "merge_factor": self._merge_factor,
        }
        offset_guess = 4096  # offsets depend on the header's length: iterate until they fit
        while True:
            off = offset_guess
            for name, arr in arrays.items():
                meta[name]["offset"] = off
                off = -(-(off + arr.nbytes) // _ALIGN) * _ALIGN
            header["arrays"] = meta
            header["file_size"] = off
            hb = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
            need = -(-(_HEADER_FIXED + len(hb)) // _ALIGN) * _ALIGN
            if need <= offset_guess:
                break
            offset_guess = need
        path = Path(path)
        tmp = path.with_name(path.name + f".tmp{os.getpid()}")
        try:
            with open(tmp, "wb") as f:
                f.write(MAGIC)
                f.write(np.array([FORMAT_VERSION, len(hb), zlib.crc32(hb), 0], dtype="<u4").tobytes())
                f.write(hb)
                pos = _HEADER_FIXED + len(hb)
                for name, arr in arrays.items():
                    o = meta[name]["offset"]
                    f.write(b"\0" * (o - pos))
                    f.write(memoryview(arr).cast("B"))
                    pos = o + arr.nbytes
                f.write(b"\0" * (header["file_size"] - pos))
            os.replace(tmp, path)
        finally:
            if tmp.exists():
                tmp.unlink()

    @classmethod
    def open(cls, path, *, max_distance: int | None = None, verify: bool = False,
             mmap: bool = True) -> "SimhashIndex":
        """Open a saved index: the arrays are memory-mapped (``mmap=True``), nothing is rebuilt.

        Always checked: magic, format version, header CRC-32, file size, the recorded configuration
        (max_distance, blocks, block sizes, table permutations, format version) against the layout
        this version derives from ``(max_distance, blocks)``, and every array's place, dtype and
        length. ``verify=True`` also checks every array's CRC-32 and the tables' content (reads
        the whole file). ``max_distance``, if given, must match the file's. Any failure raises
        :class:`SimhashIndexFormatError` (a ValueError). The opened index accepts adds and removals
        in memory; :meth:`save` writes them out.
        """
        path = Path(path)
        size = path.stat().st_size
        name = str(path)

        def bad(msg: str) -> SimhashIndexFormatError:
            return SimhashIndexFormatError(f"{name}: {msg}")

        with open(path, "rb") as f:
            fixed = f.read(_HEADER_FIXED)
            if len(fixed) < _HEADER_FIXED or fixed[:8] != MAGIC:
                raise bad("not a neardup simhash index (bad magic number or truncated)")
            version, hlen, hcrc, _ = np.frombuffer(fixed[8:], dtype="<u4").tolist()
            if version != FORMAT_VERSION:
                raise bad(f"format version {version}; this neardup reads version {FORMAT_VERSION}")
            if _HEADER_FIXED + hlen > size:
                raise bad("truncated header")
            hb = f.read(hlen)
        if zlib.crc32(hb) != hcrc:
            raise bad("header checksum mismatch (corrupt file)")
        try:
            header = json.loads(hb.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise bad(f"unreadable header ({exc})") from None
        if not isinstance(header, dict) or header.get("format") != "neardup-simhash-index" \
                or header.get("format_version") != FORMAT_VERSION:
            raise bad("header is not a neardup simhash index header of this version")
        if header.get("file_size") != size:
            raise bad(f"file is {size} bytes, the header says {header.get('file_size')} (truncated or extended)")
        try:
            k, b = header["max_distance"], header["blocks"]
            if not (isinstance(k, int) and isinstance(b, int)):
                raise TypeError("max_distance and blocks must be ints")
            lay = layout_for(k, b)
        except (KeyError, TypeError, ValueError) as exc:
            raise bad(f"bad configuration ({exc})") from None
        cfg = lay.config()
        for key in ("block_sizes", "tables", "permutations"):
            if header.get(key) != cfg[key]:
                raise bad(f"recorded {key} differ from the layout for max_distance={k}, blocks={b}")
        if max_distance is not None and max_distance != k:
            raise bad(f"the index was built with max_distance={k}, not {max_distance}")
        n, m, db = header.get("n_rows"), header.get("table_size"), header.get("dir_bits")
        id_kind = header.get("id_kind")
        arrays_meta = header.get("arrays")
        T = lay.n_tables
        if not (isinstance(n, int) and isinstance(m, int) and 0 <= m <= n <= _MAX_ROWS
                and isinstance(arrays_meta, dict) and id_kind in (None, "int", "str")
                and db == (_dir_bits(m, min(lay.prefix_bits)) if m else 0)):
            raise bad("inconsistent header")

        raw = np.memmap(path, dtype=np.uint8, mode="r") if mmap else np.fromfile(path, dtype=np.uint8)

        def arr(key: str, dtype: str, length: int | None):
            am = arrays_meta.get(key)
            if not isinstance(am, dict):
                raise bad(f"array {key} missing")
            if am.get("dtype") != np.dtype(dtype).str:
                raise bad(f"array {key} has dtype {am.get('dtype')}, expected {np.dtype(dtype).str}")
            ln, off = am.get("length"), am.get("offset")
            if not (isinstance(ln, int) and isinstance(off, int)) or ln < 0 or (length is not None and ln != length):
                raise bad(f"array {key} has length {ln}, expected {length}")
            nbytes = ln * np.dtype(dtype).itemsize
            if off < _HEADER_FIXED + hlen or off % _ALIGN or off + nbytes > size:
                raise bad(f"array {key} lies outside the file")
            a = raw[off:off + nbytes].view(dtype)
            if verify and zlib.crc32(memoryview(np.ascontiguousarray(a)).cast("B")) != am.get("crc32"):
                raise bad(f"array {key} checksum mismatch (corrupt file)")
            return a

        fps = arr("fingerprints", "<u8", n)
        tomb = arr("tombstones", "u1", (n + 7) // 8)
        dead = np.unpackbits(tomb, count=n, bitorder="little").astype(np.bool_) if n else np.zeros(0, np.bool_)
        n_dead = int(dead.sum())
        ids = _IdStore()
        ids.kind = id_kind
        if id_kind == "int":
            ids.ints = _Grow(np.int64, arr("ids_int", "<i8", n))
        elif id_kind == "str":
            offs = arr("ids_offsets", "<i8", n + 1)
            blob = arr("ids_blob", "u1", None)
            if offs[0] != 0 or offs[-1] != len(blob):
                raise bad("string id offsets do not match the id data")
            ids.blob, ids.offsets, ids.n_base = blob, offs, n
        elif n:
            raise bad("rows without ids")
        if m != n - n_dead:
            raise bad(f"the tables hold {m} entries for {n - n_dead} live rows")
        keys = arr("keys", "<u8", T * m).reshape(T, m)
        rows = arr("rows", "<i4", T * m).reshape(T, m)
        dirs = arr("dirs", "<i4", T * ((1 << db) + 1)).reshape(T, (1 << db) + 1)
        if m and (np.any(dirs[:, 0] != 0) or np.any(dirs[:, -1] != m)):
            raise bad("a table directory does not span its table (corrupt file)")
        if verify and m:
            live_rows = np.flatnonzero(~dead)
            for t in range(T):
                r = rows[t]
                if not np.array_equal(np.sort(r), live_rows):
                    raise bad(f"table {t}: its rows are not the live rows")
                if not np.array_equal(keys[t], lay.permute(t, fps[r])):
                    raise bad(f"table {t}: permuted fingerprints do not match")
                p_bits = lay.prefix_bits[t]
                pre = keys[t] if p_bits == BITS else keys[t] >> np.uint64(BITS - p_bits)
                if np.any(pre[1:] < pre[:-1]):
                    raise bad(f"table {t}: not sorted")
                if db:
                    cnt = np.bincount((keys[t] >> np.uint64(BITS - db)).astype(np.intp), minlength=1 << db)
                    if not np.array_equal(np.diff(dirs[t].astype(np.int64)), cnt):
                        raise bad(f"table {t}: directory does not match")
        idx = cls(k, blocks=b, buffer_size=int(header.get("buffer_size", _DEFAULT_BUFFER)),
                  merge_factor=int(header.get("merge_factor", _DEFAULT_MERGE_FACTOR)))
        idx._fps = _Grow(np.uint64, fps)
        idx._dead = _Grow(np.bool_, dead)
        idx._n_dead = n_dead
        idx._ids = ids
        idx._segments = [_Segment(0, n, keys, rows, dirs, db)] if m else []
        idx._tail_start = n
        return idx

    # -- bulk helpers ----------------------------------------------------------------------------

    @classmethod
    def from_fingerprints(cls, fingerprints, ids=None, max_distance: int = 3, **kwargs) -> "SimhashIndex":
        """Build an index in one batch; ids default to 0..n-1."""
        fps = _as_fingerprints(fingerprints)
        if ids is None:
            ids = np.arange(len(fps), dtype=np.int64)
        kwargs.setdefault("expected_size", len(fps))
        idx = cls(max_distance, **kwargs)
        idx.add(ids, fps)
        return idx


def brute_force_pairs(fingerprints, max_distance: int) -> Iterator[tuple[int, int, int]]:
    """Every pair ``(i, j, distance)``, ``i < j``, within ``max_distance``: the quadratic reference."""
    fps = _as_fingerprints(fingerprints)
    for i in range(len(fps) - 1):
        dist = np.bitwise_count(fps[i + 1:] ^ fps[i])
        for j in np.flatnonzero(dist <= max_distance).tolist():
            yield i, i + 1 + j, int(dist[j])
