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

The rows (fingerprints, ids, tombstones) are kept by :mod:`neardup.index.simhash_rows`, a
segment's sorted tables and its compiled probe by :mod:`neardup.index.simhash_segment`, the
layout by :mod:`neardup.index.simhash_layout` and the file by :mod:`neardup.index.simhash_file`.

Nothing here depends on Python's ``hash()`` or on random state: the same input gives the same
index, file and answers.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from numbers import Integral

import numpy as np

from ..errors import ConfigError
from . import simhash_file
from .simhash_file import SimhashIndexFormatError
from .simhash_layout import BITS, DEFAULT_MEMORY_BUDGET, MAX_DISTANCE, TableLayout, layout_for, plan_layout
from .simhash_rows import MASK64, GrowableArray, IdStore, as_fingerprint, as_fingerprints, normalize_ids
from .simhash_segment import INDEX_THREADS, Segment, compile_probe

try:
    from .. import _hamming
except ImportError:  # not built: queries use the numpy path (same answers)
    _hamming = None

__all__ = ["SimhashIndex", "SimhashIndexFormatError", "brute_force_pairs"]

_CHUNK = 1 << 21  # candidate pairs handled per vectorised step in query_many
_DEFAULT_BUFFER = 4096
_DEFAULT_MERGE_FACTOR = 4
_PARALLEL_QUERIES = 8192  # compiled query_many splits batches at least this large over INDEX_THREADS


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
        self._layout: TableLayout | None = None
        if blocks is not None:
            if isinstance(blocks, bool) or not isinstance(blocks, Integral):
                raise ConfigError(f"blocks must be an int, got {blocks!r}")
            self._layout = layout_for(self._k, int(blocks))
        elif expected_size is not None:
            self._layout = layout_for(self._k, plan_layout(int(expected_size), self._k,
                                                           memory_budget=memory_budget)["blocks"])
        self._fps = GrowableArray(np.uint64)
        self._dead = GrowableArray(np.bool_)
        self._n_dead = 0
        self._ids = IdStore()
        self._segments: list[Segment] = []
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
        return {"format_version": simhash_file.FORMAT_VERSION, **self._layout.config()}

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

    def _ensure_layout(self, n_hint: int) -> TableLayout:
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
        fps = as_fingerprints(fingerprints)
        kind, vals = normalize_ids(ids, len(fps))
        n_new = len(fps)
        if n_new == 0:
            return
        if self._fps.n + n_new > simhash_file.MAX_ROWS:
            raise ValueError(f"a SimhashIndex holds at most {simhash_file.MAX_ROWS} fingerprints")
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

    def _build(self, lo: int, hi: int) -> Segment:
        dead = self._dead.view if self._n_dead and self._dead.view[lo:hi].any() else None
        return Segment.build(self._layout, self._fps.view, lo, hi, dead)

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
            else as_fingerprint(fingerprint)
        p = self._prober or self._native()
        if p is not None:  # compiled probe: ids (int) or rows (str ids) with distances, sorted
            found = p.query(fp)
            return self._rows_to_ids(found) if self._ids.kind == "str" and found else found
        k = self._k
        found: dict[int, int] = {}
        for seg in self._segments:
            probe = seg.probe
            if probe is None:
                probe = seg.probe = compile_probe(self._layout, seg.stride, seg.size, seg.dbits)
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
        part, or for a large batch parts run in ``INDEX_THREADS`` threads (the probe releases the GIL)."""
        nq = len(qs)
        if nq < _PARALLEL_QUERIES or INDEX_THREADS < 2:
            return [(0, p.query_many(qs, lists))]
        step = -(-nq // (2 * INDEX_THREADS))
        starts = list(range(0, nq, step))
        with ThreadPoolExecutor(max_workers=INDEX_THREADS) as ex:
            return list(zip(starts, ex.map(lambda a: p.query_many(qs[a:a + step], lists), starts)))

    def query_many(self, fingerprints) -> list[list[tuple[object, int]]]:
        """:meth:`query` for each fingerprint (compiled, or vectorised over the batch and the tables)."""
        qs = as_fingerprints(fingerprints)
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
        qs = as_fingerprints(fingerprints)
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

    # -- persistence (the format: neardup.index.simhash_file) ----------------------------------

    def save(self, path) -> None:
        """Write the index to one file (compacting it first), via a temporary file renamed into place.

        The format is described in :mod:`neardup.index.simhash_file`.
        """
        self._ensure_layout(self._fps.n)
        self.compact()
        lay = self._layout
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
            arrays["dirs"] = np.tile(np.array([0, 0], np.int32), lay.n_tables)
        simhash_file.write_index_file(path, lay, arrays, {
            "n_rows": self._fps.n,
            "n_removed": int(self._n_dead),
            "table_size": 0 if seg is None else seg.size,
            "dir_bits": 0 if seg is None else seg.dbits,
            "id_kind": self._ids.kind,
            "buffer_size": self._buffer_size,
            "merge_factor": self._merge_factor,
        })

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
        saved = simhash_file.read_index_file(path, max_distance=max_distance, verify=verify, mmap=mmap)
        lay = saved.layout
        n = len(saved.fingerprints)
        ids = IdStore()
        ids.kind = saved.id_kind
        if saved.id_kind == "int":
            ids.ints = GrowableArray(np.int64, saved.ids_int)
        elif saved.id_kind == "str":
            ids.blob, ids.offsets, ids.n_base = saved.ids_blob, saved.ids_offsets, n
        idx = cls(lay.k, blocks=lay.blocks, buffer_size=int(saved.buffer_size or _DEFAULT_BUFFER),
                  merge_factor=int(saved.merge_factor or _DEFAULT_MERGE_FACTOR))
        idx._fps = GrowableArray(np.uint64, saved.fingerprints)
        idx._dead = GrowableArray(np.bool_, saved.dead)
        idx._n_dead = int(saved.dead.sum())
        idx._ids = ids
        idx._segments = ([Segment(0, n, saved.keys, saved.rows, saved.dirs, saved.dir_bits)]
                         if saved.table_size else [])
        idx._tail_start = n
        return idx


    @classmethod
    def from_fingerprints(cls, fingerprints, ids=None, max_distance: int = 3, **kwargs) -> "SimhashIndex":
        """Build an index in one batch; ids default to 0..n-1."""
        fps = as_fingerprints(fingerprints)
        if ids is None:
            ids = np.arange(len(fps), dtype=np.int64)
        kwargs.setdefault("expected_size", len(fps))
        idx = cls(max_distance, **kwargs)
        idx.add(ids, fps)
        return idx


def brute_force_pairs(fingerprints, max_distance: int) -> Iterator[tuple[int, int, int]]:
    """Every pair ``(i, j, distance)``, ``i < j``, within ``max_distance``: the quadratic reference."""
    fps = as_fingerprints(fingerprints)
    for i in range(len(fps) - 1):
        dist = np.bitwise_count(fps[i + 1:] ^ fps[i])
        for j in np.flatnonzero(dist <= max_distance).tolist():
            yield i, i + 1 + j, int(dist[j])
