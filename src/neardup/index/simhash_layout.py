"""Layouts of the Manku-style simhash index: blocks, tables, permutations, and choosing one.

The index (:mod:`neardup.index.simhash`) cuts the 64 bits of a fingerprint into ``B > k`` blocks
and keeps one table per choice of ``B - k`` of them (``C(B, k)`` tables); this module holds what
follows from ``(k, B)`` alone: the block sizes, each table's bit permutation and prefix, and the
cost model that :func:`plan_layout` uses to choose ``B`` for an expected number of fingerprints.
Nothing here touches an index's data.
"""

from __future__ import annotations

import math
from itertools import combinations
from numbers import Integral

import numpy as np

from ..errors import ConfigError

__all__ = ["BITS", "MAX_DISTANCE", "TableLayout", "layout_for", "plan_layout", "format_plan", "dir_bits"]

BITS = 64
MAX_DISTANCE = 7
SMALL_BUCKET = 16  # buckets up to this length are scanned in Python, longer ones with numpy

def _block_sizes(blocks: int) -> list[int]:
    base, extra = divmod(BITS, blocks)
    return [base + (1 if i < extra else 0) for i in range(blocks)]


class TableLayout:
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


_LAYOUT_CACHE: dict[tuple[int, int], TableLayout] = {}


def layout_for(max_distance: int, blocks: int) -> TableLayout:
    """The (cached) layout for ``max_distance`` and ``blocks``."""
    key = (max_distance, blocks)
    lay = _LAYOUT_CACHE.get(key)
    if lay is None:
        lay = _LAYOUT_CACHE[key] = TableLayout(max_distance, blocks)
    return lay



# ----------------------------------------------------------------------------------------------
# Planning the layout
# ----------------------------------------------------------------------------------------------

# Cost model of one query() in microseconds, fitted on the development machine (2-core AMD EPYC,
# numpy 2.4, shared and loaded, thread CPU time): a fixed cost, a cost per table probed, and per
# table the cost of its directory bucket: 0.5 us per entry checked in Python (up to
# SMALL_BUCKET entries), else 8 us + 0.05 us per entry for the numpy pass. Only the ranking of
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


def _est_query_us(n: int, lay: "TableLayout") -> float:
    db = dir_bits(n, min(lay.prefix_bits))
    total = _US_PER_QUERY
    for p in lay.prefix_bits:
        c = n / 2.0 ** min(p, db) if db else float(n)  # entries in the bucket read
        total += _US_PER_TABLE + (c * _US_PER_ENTRY_PY if c <= SMALL_BUCKET
                                  else _US_NUMPY_PASS + c * _US_PER_ENTRY_NP)
    return total


DEFAULT_MEMORY_BUDGET = 4 * 2**30  # bytes; plan_layout(memory_budget=None) lifts the limit
_DIR_EXTRA_BITS = 1


def dir_bits(m: int, prefix_bits: int) -> int:
    """Directory width for a table of ``m`` entries: about one entry per bucket, never wider than
    the prefix (nor than 26 bits)."""
    if m <= 1:
        return 0
    return max(0, min(prefix_bits, m.bit_length() - 1 + _DIR_EXTRA_BITS, 26))


def memory_bytes(n: int, lay: TableLayout) -> int:
    per_row = 8 + 1  # fingerprint + tombstone flag
    db = dir_bits(n, min(lay.prefix_bits))
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
            "memory_bytes": memory_bytes(n, lay),
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
                       "us_per_entry_numpy": _US_PER_ENTRY_NP, "python_bucket_max": SMALL_BUCKET},
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
