"""Posting runs: band and simhash-block postings as immutable sorted runs of delta-coded blocks.

The ``lean`` profile keeps its postings here instead of one B-tree row each (about 14 bytes a
posting, ``bands`` and ``simhash_blocks``). Every batch of added documents writes one run per
kind: its postings, sorted, cut into blocks of :data:`BLOCK`, each stored as one row of
``posting_blocks`` (its first posting whole, the others as byte-packed deltas). Runs are merged
on add, in the same transaction, when :data:`FANOUT` runs of one level gather (an LSM tree of
levels, each run about FANOUT times the size of the level below), so a query reads one short
range of blocks from each of a few runs.

Inside a run a posting is not ``bucket << DOC_BITS | doc`` but ``bucket << width | (doc -
first_doc)``, ``width`` the bits of the run's span of document numbers: a run's postings and
its span grow together, so the mean delta stays about 2**35 / (postings per document), and a
posting costs 4 to 5 bytes whatever the index's size.

Everything is rows of two SQLite tables, written in the add's transaction: a crash leaves the
index as before or with the whole batch (merges included), readers see one snapshot, and
``check_and_add`` sees the runs its own transaction wrote.
"""

from __future__ import annotations

import numpy as np

from .. import _native
from ..errors import StoreError
from ..stages.grouping import sorted_unique
from .schema import DOC_BITS

# the compiled coder (native/kernel/postings.c): the same bytes, 10-15 times faster than numpy's
# (without a compiler at install time: numpy's coder below, which is its reference)
_decode_compiled = _native.decode_posting_blocks if _native.available() else None
_encode_compiled = _native.encode_posting_blocks if _native.available() else None

__all__ = ["KIND_BANDS", "KIND_SIMHASH", "KIND_FINGERPRINTS", "KIND_IDS", "KIND_URLS", "BLOCK", "FANOUT", "BULK_FANOUT", "add_run", "encode_run", "add_encoded_run",
           "has_runs", "merge_all", "lookup", "lookup_every", "postings_after", "all_postings", "run_stats",
           "stale_documents", "count_stale", "iter_postings"]

#: ``posting_runs.kind``: band postings, simhash-block postings, content-fingerprint postings
#: (schema 5, ``IndexConfig.fingerprint_runs``), id postings (schema 6) and canonical-URL
#: postings (schema 7, ``IndexConfig.urls``)
KIND_BANDS, KIND_SIMHASH, KIND_FINGERPRINTS, KIND_IDS, KIND_URLS = 0, 1, 2, 3, 4
#: postings per block (a block is read whole: 128 postings are 500-700 bytes)
BLOCK = 128
#: runs of one level merged into one of the next
FANOUT = 4
#: the same for the runs of bulk writes (``neardup index add``'s batches): each posting is
#: rewritten once per level, and with 16 a level holds 16 times the documents of the one below,
#: so that a posting is rewritten once up to 80,000 documents in 5,000-document batches, twice up
#: to 1.3M, three times up to 20M (with 4: three, five and seven times), for up to 15 runs a
#: level to read in a query (at most 9 blocks of each: :func:`lookup`)
BULK_FANOUT = 16
#: the first level of the runs of bulk writes: they merge among themselves (levels 32, 33, ...)
#: and the runs of small writes among theirs (0, 1, ...; fanout 4 would need 4**32 documents to
#: reach 32). With one set of levels, the first small write after a bulk load (``index add``'s
#: last batch, a service's first check-and-add on a lean index) found up to 15 bulk runs on level
#: 0, merged them at its fanout of 4, and so on up: every posting of the index rewritten in one
#: transaction (2 s of a 13-15 s lean ``index add`` of 1M pages, and about 200 MB more at its peak).
BULK_LEVEL = 32
#: buckets have 35 bits (band_bucket, block_bucket)
BUCKET_BITS = 35
#: caps above this read a bucket's blocks unbounded (:func:`lookup`)
MAX_BOUNDED_CAP = 1 << 16
#: postings of one merge held in memory at once (the merge goes through the buckets in slices)
SLICE_POSTINGS = 1 << 21

_BLOCKS_OF_RANGE = ("SELECT first, data FROM posting_blocks WHERE kind = ?1 AND run = ?2 AND first >= "
                    "coalesce((SELECT max(first) FROM posting_blocks WHERE kind = ?1 AND run = ?2 AND first <= ?3), ?3) "
                    "AND first <= ?4 ORDER BY first")


def _width(span: int) -> int:
    return max(1, int(span).bit_length())


#: widest delta packed at its bit width; a block with a wider one stores 64-bit deltas
MAX_PACKED_BITS = 56
_ALL_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


def _bit_widths(largest: np.ndarray) -> np.ndarray:
    """Bits of each block's largest delta (at least 1), at most MAX_PACKED_BITS or else 64.
    (``frexp`` of the float: the rounding can only make a width larger, never too small.)"""
    w = np.frexp(np.maximum(largest, 1).astype(np.float64))[1].astype(np.int64)
    return np.where(w > MAX_PACKED_BITS, 64, w)


#: blocks from which the coding works on whole blocks grouped by bit width (a fixed cost of a
#: few dozen numpy calls per width, then about 20 ns a posting, against about 230 for the
#: value-by-value coding below, which small inputs such as a query's blocks keep)
GROUPED_BLOCKS = 64


def encode_blocks(q: np.ndarray) -> list[tuple[int, bytes]]:
    """``(first, data)`` rows of sorted distinct int64 run keys ``q``: per block of :data:`BLOCK`,
    its first key, and ``data``: one byte w (the bits of the block's largest delta, or 64), one
    byte n (the keys after the first), then the n deltas to them as w-bit integers, packed least
    significant bit first. All blocks at once, in C (numpy where the kernel is not built)."""
    if _encode_compiled is None:
        return encode_blocks_numpy(q)
    q = np.ascontiguousarray(q, dtype=np.int64)
    return _encode_compiled(q) if q.size else []


def encode_blocks_numpy(q: np.ndarray) -> list[tuple[int, bytes]]:
    """:func:`encode_blocks` in numpy: the reference of the compiled coder, and the coder where
    it is not built."""
    q = np.ascontiguousarray(q, dtype=np.int64)
    if not q.size:
        return []
    if q.size >= GROUPED_BLOCKS * BLOCK:
        return _encode_grouped(q)
    return _encode_by_value(q)


def _word_layout(w: int) -> tuple[np.ndarray, np.ndarray, int]:
    """For a block of width ``w``: the 64-bit word and the bit offset in it of each of the
    BLOCK - 1 deltas, and the words a block body spans (one spare)."""
    bit = np.arange(BLOCK - 1, dtype=np.int64) * w
    return bit >> 6, (bit & 63).astype(np.uint64), int(bit[-1] >> 6) + 2


def _encode_grouped(q: np.ndarray) -> list[tuple[int, bytes]]:
    """:func:`encode_blocks` for many blocks: the blocks as rows of a (blocks, BLOCK) matrix (the
    last one padded with its last key, so that its padding deltas are 0), packed a width at a
    time with whole-column operations: the same bytes as :func:`_encode_by_value`."""
    n = q.size
    nb = -(-n // BLOCK)
    m = np.concatenate((q, np.full(nb * BLOCK - n, q[-1], dtype=np.int64))).reshape(nb, BLOCK)
    d = np.diff(m, axis=1).view(np.uint64)
    counts = np.full(nb, BLOCK - 1, dtype=np.int64)
    counts[-1] = n - (nb - 1) * BLOCK - 1
    w = _bit_widths(d.max(axis=1))
    body = (counts * w + 7) // 8
    firsts = m[:, 0].tolist()
    out: list = [None] * nb
    for width in np.unique(w).tolist():
        sel = np.flatnonzero(w == width)
        dd = d[sel]
        wi, off, nwords = _word_layout(width)
        words = np.zeros((sel.size, nwords), dtype=np.uint64)
        # every word holds the start of some delta (they are at most 64 bits apart): OR the
        # low parts of the deltas starting in each word together, then add each spill (at most
        # one delta crosses a word boundary) to the next word
        first_of_word = np.flatnonzero(np.concatenate(([True], wi[1:] != wi[:-1])))
        words[:, wi[first_of_word]] = np.bitwise_or.reduceat(dd << off, first_of_word, axis=1)
        spill = np.flatnonzero(off + np.uint64(width) > np.uint64(64))
        if spill.size:
            words[:, wi[spill] + 1] |= dd[:, spill] >> (np.uint64(64) - off[spill])
        raw = words.astype("<u8", copy=False).tobytes()
        stride = nwords * 8
        for j, k in enumerate(sel.tolist()):
            out[k] = (firsts[k], bytes((width, int(counts[k]))) + raw[j * stride:j * stride + int(body[k])])
    return out


def _encode_by_value(q: np.ndarray) -> list[tuple[int, bytes]]:
    starts = np.arange(0, q.size, BLOCK)
    counts = np.minimum(starts + BLOCK, q.size) - starts - 1
    deltas = np.diff(q).astype(np.uint64)
    inner = np.ones(deltas.size, dtype=bool)
    inner[starts[1:] - 1] = False  # the step from a block's last key to the next block's first
    deltas = deltas[inner]
    largest = np.zeros(starts.size, dtype=np.uint64)
    has = counts > 0
    if deltas.size:
        largest[has] = np.maximum.reduceat(deltas, (np.cumsum(counts) - counts)[has])
    w = _bit_widths(largest)
    body = (counts * w + 7) // 8
    body_start = np.zeros(starts.size, dtype=np.int64)
    np.cumsum(body[:-1], out=body_start[1:])
    words = np.zeros(int(body.sum()) // 8 + 2, dtype=np.uint64)  # the bit stream, 64 bits at a time
    if deltas.size:
        block = np.repeat(np.arange(starts.size), counts)
        t = np.arange(deltas.size) - np.repeat(np.cumsum(counts) - counts, counts)  # index in its block
        bitpos = 8 * body_start[block] + t * w[block]
        word, off = bitpos >> 6, (bitpos & 63).astype(np.uint64)
        # a value's low bits go to its word, the rest (when it crosses into the next) to the
        # next; the values' bits never overlap, so adding them sets them
        np.add.at(words, word, deltas << off)
        spill = off + w[block].astype(np.uint64) > 64
        np.add.at(words, word[spill] + 1, deltas[spill] >> (np.uint64(64) - off[spill]))
    raw = words.astype("<u8").tobytes()
    return [(int(q[a]), bytes((int(wb), int(n))) + raw[b0:b0 + nb])
            for a, wb, n, b0, nb in zip(starts.tolist(), w.tolist(), counts.tolist(), body_start.tolist(),
                                        body.tolist())]


def decode_block(first: int, data: bytes) -> np.ndarray:
    """The int64 run keys of one block (:func:`encode_blocks`)."""
    return decode_many([(first, data)])[0]


def _append_blocks(conn, kind: int, run: int, postings: np.ndarray, first_doc: int, w: int) -> None:
    if not postings.size:
        return
    q = ((postings >> DOC_BITS) << w) | ((postings & ((1 << DOC_BITS) - 1)) - first_doc)
    conn.executemany(f"INSERT INTO posting_blocks (kind, run, first, data) VALUES ({int(kind)}, {int(run)}, ?, ?)",
                     encode_blocks(q))


def _read_range(conn, kind: int, run: int, first_doc: int, w: int, bucket_lo: int, bucket_hi: int) -> np.ndarray:
    """The absolute postings of one run whose buckets are in [bucket_lo, bucket_hi], sorted."""
    lo, hi = bucket_lo << w, ((bucket_hi + 1) << w) - 1
    q, _ = decode_many(conn.execute(_BLOCKS_OF_RANGE, (kind, run, lo, hi)).fetchall())
    # a run's keys are sorted (its blocks read in order): the range is one slice of them, and
    # the postings are made in place of one array (each temporary array of a slice of 2M
    # postings cost its 16 MB of page faults again)
    q = q[np.searchsorted(q, lo, side="left") : np.searchsorted(q, hi, side="right")]
    out = np.right_shift(q, w)
    np.left_shift(out, DOC_BITS, out=out)
    np.bitwise_and(q, (1 << w) - 1, out=q)
    q += first_doc
    out |= q
    return out


def encode_run(postings: np.ndarray, n_docs: int) -> tuple[list, int]:
    """The blocks of a batch's run, coded before its documents have numbers: ``postings`` (any
    order, repeats allowed) are ``bucket << DOC_BITS | k`` for the batch's k-th document. (Inside
    a run a document is its offset from the run's first one, and the width is that of the span,
    so the blocks do not depend on the numbers the documents get.) Returns (blocks, postings)."""
    p = sorted_unique(postings)
    w = _width(n_docs - 1)
    return encode_blocks(((p >> DOC_BITS) << w) | (p & ((1 << DOC_BITS) - 1))), int(p.size)


def add_run(conn, kind: int, postings: np.ndarray, first_doc: int, last_doc: int, *, bulk: bool = False) -> None:
    """Store a batch's absolute postings (any order, repeats allowed) of documents numbered
    ``first_doc`` to ``last_doc`` as a new run, then merge the levels that are full: of
    :data:`FANOUT` runs for a small write, :data:`BULK_FANOUT` for a bulk one (``bulk``, whose
    levels start at :data:`BULK_LEVEL`)."""
    add_encoded_run(conn, kind, encode_run(np.asarray(postings, dtype=np.int64) - first_doc, last_doc - first_doc + 1),
                    first_doc, last_doc, bulk=bulk)


def add_encoded_run(conn, kind: int, encoded: tuple[list, int], first_doc: int, last_doc: int, *,
                    bulk: bool = False) -> None:
    """:func:`add_run` of what :func:`encode_run` made of the batch (its documents numbered
    ``first_doc`` to ``last_doc``)."""
    blocks, count = encoded
    if not count:
        return
    fanout, level = (BULK_FANOUT, BULK_LEVEL) if bulk else (FANOUT, 0)
    w = _width(last_doc - first_doc)
    run = conn.execute("SELECT coalesce(max(run), 0) + 1 FROM posting_runs WHERE kind = ?", (kind,)).fetchone()[0]
    conn.execute("INSERT INTO posting_runs (kind, run, level, first_doc, last_doc, width, postings) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?)", (kind, run, level, first_doc, last_doc, w, count))
    conn.executemany(f"INSERT INTO posting_blocks (kind, run, first, data) VALUES ({int(kind)}, {int(run)}, ?, ?)",
                     blocks)
    merged = False
    while True:
        runs = conn.execute("SELECT run, first_doc, last_doc, width, postings FROM posting_runs "
                            "WHERE kind = ? AND level = ? ORDER BY run", (kind, level)).fetchall()
        if len(runs) < fanout:
            break
        _merge(conn, kind, level + 1, runs)
        level += 1
        merged = True
    if merged:
        _give_back_free_pages(conn)


def _give_back_free_pages(conn) -> None:
    """The merged runs' pages back to the file system (an index made with auto_vacuum
    INCREMENTAL), in this transaction."""
    if conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2:
        # Python's sqlite3 steps this pragma once per execute, and each step frees one page:
        # one execute per free page (about 3 us each).
        for _ in range(conn.execute("PRAGMA freelist_count").fetchone()[0]):
            conn.execute("PRAGMA incremental_vacuum")


def _merge(conn, kind: int, level: int, runs: list) -> None:
    """Replace ``runs`` by one run at ``level``: their postings merged, a slice of the buckets at a time."""
    first_doc = min(r[1] for r in runs)
    last_doc = max(r[2] for r in runs)
    total = sum(r[4] for r in runs)
    w = _width(last_doc - first_doc)
    run = conn.execute("SELECT coalesce(max(run), 0) + 1 FROM posting_runs WHERE kind = ?", (kind,)).fetchone()[0]
    slices = max(1, -(-total // SLICE_POSTINGS))
    step = -(-(1 << BUCKET_BITS) // slices)
    for lo in range(0, 1 << BUCKET_BITS, step):
        hi = min((1 << BUCKET_BITS) - 1, lo + step - 1)
        parts = [_read_range(conn, kind, r[0], r[1], r[3], lo, hi) for r in runs]
        # (distinct: document numbers differ between runs; a stable sort, timsort, merges sorted runs)
        merged = np.sort(np.concatenate(parts), kind="stable")
        _append_blocks(conn, kind, run, merged, first_doc, w)
    for r in runs:
        conn.execute("DELETE FROM posting_blocks WHERE kind = ? AND run = ?", (kind, r[0]))
        conn.execute("DELETE FROM posting_runs WHERE kind = ? AND run = ?", (kind, r[0]))
    conn.execute("INSERT INTO posting_runs (kind, run, level, first_doc, last_doc, width, postings) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?)", (kind, run, level, first_doc, last_doc, w, total))


def merge_all(conn, kind: int) -> None:
    """Merge every run of a kind into one, on the level above the highest (a bulk load that wrote
    its batches as runs, ``dedup --save-index``, leaves one run to read instead of up to 15 a
    level: a run against it reads its postings in order, without a merge of its own)."""
    found = conn.execute("SELECT run, first_doc, last_doc, width, postings, level FROM posting_runs "
                         "WHERE kind = ? ORDER BY run", (kind,)).fetchall()
    if len(found) > 1:
        _merge(conn, kind, max(r[5] for r in found) + 1, [r[:5] for r in found])
        _give_back_free_pages(conn)


def decode_many(blocks: list[tuple[int, bytes]]) -> tuple[np.ndarray, np.ndarray]:
    """The keys of many blocks at once, and for each key the position of its block in ``blocks``
    (arrays of their own, writable: :func:`_read_range` makes its postings in place of them).
    A block that cannot be one (shorter than its header, a width of 0 or past 64: a damaged
    file) raises :class:`StoreError`."""
    if not blocks:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    if _decode_compiled is not None:
        try:
            keys, block_of = _decode_compiled(blocks)
        except ValueError as exc:
            raise StoreError(f"the index file is damaged: {exc}") from None
        return np.frombuffer(keys, dtype=np.int64), np.frombuffer(block_of, dtype=np.int64)
    return decode_many_numpy(blocks)


def decode_many_numpy(blocks: list[tuple[int, bytes]]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`decode_many` in numpy: the reference of the compiled decoder, and the decoder where
    it is not built (well-formed blocks only)."""
    if not blocks:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    if len(blocks) >= GROUPED_BLOCKS:
        header = np.frombuffer(b"".join(b[1][:2] for b in blocks), dtype=np.uint8)
        if header.size == 2 * len(blocks):
            w, counts = header[0::2].astype(np.int64), header[1::2].astype(np.int64)
            if counts.max() < BLOCK and w.min() >= 1 and w.max() <= 64:
                return _decode_grouped(blocks, w, counts)
    return _decode_by_value(blocks)


def _decode_grouped(blocks: list, w: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`decode_many` of many well-formed blocks (at most BLOCK - 1 deltas, widths 1-64),
    a width at a time with whole-column operations. A body shorter than its count needs reads
    zeros (it is padded), as bytes past its end never come from another block."""
    nblk = len(blocks)
    firsts = np.fromiter((b[0] for b in blocks), dtype=np.int64, count=nblk)
    starts = np.zeros(nblk, dtype=np.int64)
    np.cumsum(counts[:-1] + 1, out=starts[1:])
    keys = np.empty(int(counts.sum()) + nblk, dtype=np.int64)
    column = np.arange(BLOCK, dtype=np.int64)
    for width in np.unique(w).tolist():
        sel = np.flatnonzero(w == width)
        wi, off, nwords = _word_layout(width)
        size = nwords * 8
        body = b"".join(blocks[k][1][2:2 + size].ljust(size, b"\0") for k in sel.tolist())
        words = np.frombuffer(body, dtype="<u8").reshape(sel.size, nwords).astype(np.uint64, copy=False)
        v = words[:, wi] >> off
        cross = np.flatnonzero(off > 0)  # the value's high bits, if any, are in the next word
        v[:, cross] |= words[:, wi[cross] + 1] << (np.uint64(64) - off[cross])
        v &= _ALL_ONES >> np.uint64(64 - width)
        mine = counts[sel]
        v[column[None, 1:] > mine[:, None]] = 0
        k2 = np.empty((sel.size, BLOCK), dtype=np.int64)
        k2[:, 0] = firsts[sel]
        k2[:, 1:] = v.view(np.int64)
        np.cumsum(k2, axis=1, out=k2)  # (may wrap: exact modulo 2**64, and every key is below 2**63)
        valid = column[None, :] <= mine[:, None]
        keys[(starts[sel][:, None] + column[None, :])[valid]] = k2[valid]
    return keys, np.repeat(np.arange(nblk), counts + 1)


def _decode_by_value(blocks: list[tuple[int, bytes]]) -> tuple[np.ndarray, np.ndarray]:
    firsts = np.array([b[0] for b in blocks], dtype=np.int64)
    w = np.array([b[1][0] for b in blocks], dtype=np.int64)
    counts = np.array([b[1][1] for b in blocks], dtype=np.int64)  # deltas per block
    sizes = np.array([len(b[1]) - 2 for b in blocks], dtype=np.int64)
    body_start = np.zeros(len(blocks), dtype=np.int64)
    np.cumsum(sizes[:-1], out=body_start[1:])
    joined = b"".join(b[1][2:] for b in blocks)
    words = np.frombuffer(joined + bytes(16 - len(joined) % 8), dtype="<u8").astype(np.uint64)
    n = int(counts.sum())
    starts = np.zeros(len(blocks), dtype=np.int64)  # where each block's first key goes
    np.cumsum(counts[:-1] + 1, out=starts[1:])
    deltas = np.zeros(n + len(blocks), dtype=np.int64)
    if n:
        block = np.repeat(np.arange(len(blocks)), counts)
        t = np.arange(n) - np.repeat(np.cumsum(counts) - counts, counts)
        bitpos = 8 * body_start[block] + t * w[block]
        word, off = bitpos >> 6, (bitpos & 63).astype(np.uint64)
        values = words[word] >> off
        crossing = off > 0  # the value's high bits, if any, are in the next word
        values[crossing] |= words[word[crossing] + 1] << (np.uint64(64) - off[crossing])
        values &= _ALL_ONES >> (64 - w[block]).astype(np.uint64)
        deltas[np.repeat(starts + 1, counts) + t] = values.view(np.int64)
    deltas[starts] = firsts
    block_of = np.repeat(np.arange(len(blocks)), counts + 1)
    # one running sum over every block (it may wrap: the differences below are exact modulo
    # 2**64, and every key is below 2**63), then each block's keys less the sum before it
    keys = np.cumsum(deltas)
    before = np.zeros(len(blocks), dtype=np.int64)
    before[1:] = keys[starts[1:] - 1]
    keys -= before[block_of]
    return keys, block_of


_LOOKUP_SQL: dict[tuple[int, bool], str] = {}


def _lookup_sql(n: int, bounded: bool) -> str:
    """Blocks of n (run, lo, hi) key ranges in one statement: for each, the block holding lo and
    those after it up to hi, tagged with the range's position; ``bounded``: of those after it,
    only the first so many (the last parameter): a bucket's keys in a run are in document order
    and its blocks but the last are full (a merge cuts blocks only between slices of buckets),
    so these hold its first ``cap`` documents, however many the bucket has."""
    sql = _LOOKUP_SQL.get((n, bounded))
    if sql is None:
        sql = _LOOKUP_SQL[n, bounded] = (
            "WITH q(i, run, lo, hi) AS (VALUES "
            + ", ".join(f"(?{4 * k + 3}, ?{4 * k + 4}, ?{4 * k + 5}, ?{4 * k + 6})" for k in range(n)) + ") "
            "SELECT q.i, b.first, b.data FROM q JOIN posting_blocks b ON b.kind = ?1 AND b.run = q.run AND b.first >= "
            "coalesce((SELECT max(first) FROM posting_blocks WHERE kind = ?1 AND run = q.run AND first <= q.lo), q.lo) "
            "AND b.first <= q.hi"
            + (" AND b.first < coalesce((SELECT first FROM posting_blocks WHERE kind = ?1 AND run = q.run AND "
               "first > q.lo ORDER BY first LIMIT 1 OFFSET ?2), q.hi + 1)" if bounded else ""))
    return sql


def has_runs(conn, kind: int) -> bool:
    return conn.execute("SELECT 1 FROM posting_runs WHERE kind = ? LIMIT 1", (kind,)).fetchone() is not None


def lookup(conn, kind: int, buckets: list[int], cap: int, *, drop_stale: bool = True,
           rows: list[np.ndarray] | None = None) -> list[np.ndarray]:
    """For each bucket, the sorted numbers of the first ``cap`` stored documents holding it (the
    oldest, as the row layout's ``ORDER BY posting LIMIT cap`` gives them), from the runs and,
    when given, ``rows``: each bucket's first ``cap`` documents in the row tables, sorted.

    Runs are immutable, so the postings of removed and replaced documents stay in them. Where the
    row layout deletes its postings of such a document (simhash blocks; band postings where whole
    signatures are stored), ``drop_stale``: where a bucket holds more than ``cap`` documents they
    are dropped before the cap, by looking the numbers up in ``docs``, the oldest first. (Below
    the cap the caller's own look-up in ``docs`` drops them.) When no document was ever removed or
    replaced (:func:`stale_documents` is 0) that look-up is skipped, and only the blocks that
    hold each bucket's first ``cap`` documents of each run are read. Where the row layout keeps them (band postings without whole signatures), they
    count toward the cap there, and so they do here (``drop_stale`` False)."""
    runs = conn.execute("SELECT run, first_doc, width FROM posting_runs WHERE kind = ?", (kind,)).fetchall()
    if not runs or not buckets:
        return [np.empty(0, dtype=np.int64) for _ in buckets] if rows is None else rows
    ranges = [(bucket << w, ((bucket + 1) << w) - 1, first_doc, w, run)
              for bucket in buckets for run, first_doc, w in runs]
    stale = drop_stale and stale_documents(conn) > 0  # (then a bucket's documents past the cap may be needed)
    params: list = [kind, -(-cap // BLOCK) + 1]
    for i, (lo, hi, _, _, run) in enumerate(ranges):
        params += (i, run, lo, hi)
    # (a cap beyond any run's size reads every block of the bucket: the bounding subquery's
    # OFFSET would step through the rest of the run to find that out)
    bounded = not stale and cap <= MAX_BOUNDED_CAP
    found = conn.execute(_lookup_sql(len(ranges), bounded), params).fetchall()
    keys, block_of = decode_many([(first, data) for _, first, data in found])
    which = np.array([r[0] for r in found], dtype=np.int64)[block_of]
    lo = np.array([r[0] for r in ranges], dtype=np.int64)[which]
    hi = np.array([r[1] for r in ranges], dtype=np.int64)[which]
    inside = (keys >= lo) & (keys <= hi)
    keys, which = keys[inside], which[inside]
    w = np.array([r[3] for r in ranges], dtype=np.int64)[which]
    docs = (keys & ((np.int64(1) << w) - 1)) + np.array([r[2] for r in ranges], dtype=np.int64)[which]
    bucket_of = which // len(runs)
    order = np.lexsort((docs, bucket_of))
    docs, bucket_of = docs[order], bucket_of[order]
    bounds = np.searchsorted(bucket_of, np.arange(len(buckets) + 1))
    out = []
    for k in range(len(buckets)):
        mine = docs[bounds[k]:bounds[k + 1]]
        if rows is not None and rows[k].size:
            mine = np.sort(np.concatenate((mine, rows[k])))  # (distinct: a document is in one place)
        out.append(mine if mine.size <= cap else _live_first(conn, mine, cap) if stale else mine[:cap])
    return out


def stale_documents(conn) -> int:
    """How many removed or replaced documents left postings in the runs (``meta``)."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'stale_documents'").fetchone()
    return int(row[0]) if row else 0


def count_stale(conn, n: int) -> None:
    conn.execute("INSERT INTO meta (key, value) VALUES ('stale_documents', ?) ON CONFLICT (key) DO UPDATE SET "
                 "value = CAST(CAST(value AS INTEGER) + ? AS TEXT)", (str(n), n))


def _live_first(conn, docs: np.ndarray, cap: int) -> np.ndarray:
    """The first ``cap`` of sorted document numbers that are in ``docs``."""
    live: list[int] = []
    start = 0
    while len(live) < cap and start < docs.size:
        chunk = docs[start:start + 2 * cap].tolist()
        start += len(chunk)
        for lo in range(0, len(chunk), 5000):
            part = chunk[lo:lo + 5000]
            found = {r[0] for r in conn.execute(f"SELECT num FROM docs WHERE num IN ({','.join('?' * len(part))})",
                                                part)}
            live += [d for d in part if d in found]
    return np.array(live[:cap], dtype=np.int64)


def lookup_every(conn, kind: int, buckets: list[int]) -> np.ndarray:
    """The numbers of every document holding any of ``buckets`` in the runs of ``kind``, stale
    ones included (the caller checks each in ``docs``), however many buckets: in statements of
    at most about 2,000 (bucket, run) ranges."""
    n_runs = conn.execute("SELECT count(*) FROM posting_runs WHERE kind = ?", (kind,)).fetchone()[0]
    if not n_runs or not buckets:
        return np.empty(0, dtype=np.int64)
    step = max(1, 2000 // n_runs)
    found = [np.concatenate(lookup(conn, kind, buckets[lo:lo + step], 1 << 62, drop_stale=False))
             for lo in range(0, len(buckets), step)]
    return np.concatenate(found)


def postings_after(conn, kind: int, after: int) -> np.ndarray:
    """The absolute postings (``bucket << DOC_BITS | num``) of the documents numbered after
    ``after`` in the runs of ``kind``, unsorted: the runs whose span reaches past it are read."""
    runs = conn.execute("SELECT run, first_doc, width FROM posting_runs WHERE kind = ? AND last_doc > ?",
                        (kind, after)).fetchall()
    parts = [_read_range(conn, kind, run, first_doc, w, 0, (1 << BUCKET_BITS) - 1) for run, first_doc, w in runs]
    if not parts:
        return np.empty(0, dtype=np.int64)
    postings = np.concatenate(parts)
    return postings[(postings & ((1 << DOC_BITS) - 1)) > after]


#: postings a slice of :func:`iter_postings` by default: arrays small enough that the memory
#: allocator keeps and reuses them (slices of 2M postings, 16 MB arrays, were mapped and given
#: back each time, and paid their page faults again: a scan of 1.8M postings in one run took
#: 0.07-0.1 s, against 0.05 s in slices of 256K)
READ_SLICE_POSTINGS = 1 << 18


def iter_postings(conn, kind: int, slice_postings: int = READ_SLICE_POSTINGS):
    """Every absolute posting of a kind, each run's in order and the runs one after the other,
    in arrays of at most about ``slice_postings`` (a run's buckets a slice at a time, as
    :func:`_merge` reads them)."""
    runs = conn.execute("SELECT run, first_doc, width, postings FROM posting_runs WHERE kind = ?", (kind,)).fetchall()
    for run, first_doc, w, total in runs:
        slices = max(1, -(-total // slice_postings))
        step = -(-(1 << BUCKET_BITS) // slices)
        for lo in range(0, 1 << BUCKET_BITS, step):
            part = _read_range(conn, kind, run, first_doc, w, lo, min((1 << BUCKET_BITS) - 1, lo + step - 1))
            if part.size:
                yield part


def all_postings(conn, kind: int) -> np.ndarray:
    """Every absolute posting of a kind, sorted: each run read a slice at a time (its postings in
    order) into one array, the runs then merged in place (a stable sort, timsort, merges sorted
    runs: 16M postings of 20 runs in 0.2 s, where numpy's quicksort took 1.1 s)."""
    total = conn.execute("SELECT coalesce(sum(postings), 0) FROM posting_runs WHERE kind = ?", (kind,)).fetchone()[0]
    postings = np.empty(total, dtype=np.int64)
    at = 0
    for part in iter_postings(conn, kind):
        if at + part.size > total:
            raise StoreError("the index file is damaged: a posting run holds more postings than it records")
        postings[at : at + part.size] = part
        at += part.size
    postings = postings[:at]
    if postings.size > 1 and not (postings[1:] > postings[:-1]).all():
        postings.sort(kind="stable")
    return postings


def run_stats(conn) -> dict:
    """Runs, postings and block bytes of each kind."""
    out = {}
    for name, kind in (("band_postings", KIND_BANDS), ("simhash_blocks", KIND_SIMHASH)):
        runs, postings = conn.execute("SELECT count(*), coalesce(sum(postings), 0) FROM posting_runs WHERE kind = ?",
                                      (kind,)).fetchone()
        data = conn.execute("SELECT coalesce(sum(length(data)), 0), count(*) FROM posting_blocks WHERE kind = ?",
                            (kind,)).fetchone()
        out[name] = {"runs": runs, "postings": postings, "block_bytes": data[0], "blocks": data[1]}
    return out
