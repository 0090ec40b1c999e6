"""The lines of ``clusters.jsonl`` and ``pairs.jsonl`` assembled from the run's arrays.

The writer of :mod:`neardup.io.write.results` builds a dict per record and dumps it with orjson: about
8 microseconds a record, 40 s of the 5-million-document run. Here the lines are the same bytes,
made a chunk of records at a time: every piece of a line (a constant such as ``,"cluster":``, a
record's id as JSON, its similarity as orjson writes the float) is a segment of a few buffers
(the ids' one UTF-8 buffer, a table of constants, the floats dumped at once), and the compiled
``gather`` joins the segments of a chunk in one pass.

Ids need no escaping in JSON unless they hold ``"``, ``\\``, a control character or a byte that
may start a surrogate (``\\xed``): those few are dumped by orjson one by one (which raises, as the
dict writer does, on a lone surrogate), every other is its UTF-8 bytes between quotes.
"""

from __future__ import annotations

import numpy as np
import orjson

from ... import _native
from ...stages.columns import Floats, Ids, Labels, Names

__all__ = ["available", "available_for_ids", "cluster_chunks", "pair_chunks"]

#: Records per chunk: 15 segments each, two int64 per segment (about 60 MB of segments).
CHUNK = 1 << 18


def _gather():
    return _native.gather_function()


def available(outcome, urls=None) -> bool:
    """Whether :func:`cluster_chunks` can write ``outcome`` (the local engine's arrays and the
    compiled kernel, records without URLs): ids an :class:`Ids` column (or :class:`Names` of
    one) that the clusters and survivors name too; with sources, both source columns
    :class:`Names` of one :class:`Labels` column."""
    if _gather() is None or urls or not (isinstance(outcome.reason, Labels) and isinstance(outcome.similarity, Floats)):
        return False
    table = _id_table_of(outcome.ids)
    if table is None or not all(isinstance(c, Names) and c.names is table for c in (outcome.cluster, outcome.duplicate_of)):
        return False
    sources = getattr(outcome, "source", None)
    if sources is None:
        return True
    dup = getattr(outcome, "duplicate_of_source", None)
    return (isinstance(sources, Names) and isinstance(sources.names, Labels) and isinstance(dup, Names)
            and dup.names is sources.names)


def _id_table_of(ids):
    """The :class:`Ids` column the record ids are read from (themselves, or what they name)."""
    if isinstance(ids, Ids):
        return ids
    if isinstance(ids, Names) and isinstance(ids.names, Ids):
        return ids.names
    return None


def available_for_ids() -> bool:
    """Whether :func:`pair_chunks` can run (the compiled kernel is built)."""
    return _gather() is not None


#: Bytes of the ids' buffer looked at by one step of :class:`_IdTable`'s scan.
_SCAN_BYTES = 1 << 24


class _IdTable:
    """Each record's id as a JSON string: a segment of the ids' buffer between two quotes, or,
    for the few ids JSON must escape, a segment of a buffer of their orjson dumps."""

    def __init__(self, ids: Ids, base: int):
        self.ids = ids
        self.ends = ids.ends
        self.base = base  # where the ids' buffer starts in the gathered buffers
        data = np.frombuffer(ids.data, dtype=np.uint8)
        # the bytes JSON escapes (and 0xED, which starts an encoded surrogate), looked for a slice
        # at a time: masks of the whole buffer would be several bytes per byte of ids at once
        bad = [a + np.flatnonzero((d < 0x20) | (d == 0x22) | (d == 0x5C) | (d == 0xED))
               for a in range(0, data.size, _SCAN_BYTES) for d in (data[a:a + _SCAN_BYTES],)]
        bad = np.concatenate(bad) if bad else np.empty(0, np.int64)
        self.special = np.unique(np.searchsorted(self.ends, bad, side="right")) if bad.size else np.empty(0, np.int64)
        dumped = [orjson.dumps(s) for s in ids.take(self.special)] if self.special.size else []
        self.escaped = b"".join(dumped)
        lens = np.fromiter(map(len, dumped), np.int64, len(dumped))
        self.esc_len = lens
        self.esc_start = np.cumsum(lens) - lens
        self.esc_base = base + len(ids.data)

    def buffers(self) -> list:
        return [self.ids.data, self.escaped]

    def segments(self, ords: np.ndarray):
        """``(start, length, quotes)`` of the ids at ``ords`` (all >= 0): quotes 1 where the id is
        its bytes between quotes, 0 where the segment is an escaped dump (quotes included)."""
        ends = self.ends
        start = np.where(ords > 0, ends[np.maximum(ords - 1, 0)], 0) if ords.size else np.empty(0, np.int64)
        length = ends[ords] - start
        start = start + self.base
        quotes = np.ones(ords.size, dtype=np.int64)
        if self.special.size:
            pos = np.minimum(np.searchsorted(self.special, ords), self.special.size - 1)
            hit = np.flatnonzero(self.special[pos] == ords)
            if hit.size:
                k = pos[hit]
                start[hit] = self.esc_base + self.esc_start[k]
                length[hit] = self.esc_len[k]
                quotes[hit] = 0
        return start, length, quotes


def _floats_text(values: np.ndarray):
    """``(text, starts, lengths)``: the floats as orjson writes them, in one buffer."""
    if not values.size:
        return b"", np.empty(0, np.int64), np.empty(0, np.int64)
    text = orjson.dumps(values.tolist())[1:-1]  # "[a,b,...]": floats hold no comma
    commas = np.flatnonzero(np.frombuffer(text, dtype=np.uint8) == 0x2C)
    starts = np.concatenate(([0], commas + 1))
    ends = np.concatenate((commas, [len(text)]))
    return text, starts, ends - starts


class _Constants:
    """A table of constant pieces, each named once: ``offset[name]``, ``length[name]``."""

    def __init__(self, pieces: dict[str, bytes]):
        self.data = b"".join(pieces.values())
        self.at, self.len = {}, {}
        pos = 0
        for name, piece in pieces.items():
            self.at[name], self.len[name] = pos, len(piece)
            pos += len(piece)


def _put_quoted(starts: np.ndarray, lens: np.ndarray, col: int, start, length, quotes) -> None:
    """Fill columns ``col``, ``col + 1``, ``col + 2`` of a segment table: quote, id, quote (the
    quotes' starts are filled by the caller; ``quotes`` 0 drops them for an escaped dump)."""
    lens[:, col] = lens[:, col + 2] = quotes
    starts[:, col + 1], lens[:, col + 1] = start, length


def _ref_segments(ids: _IdTable, refs: np.ndarray, null_at: int):
    """Quote, id and quote segments of references (-1: ``null``)."""
    has = refs >= 0
    start = np.full(refs.size, null_at, dtype=np.int64)
    length = np.full(refs.size, 4, dtype=np.int64)
    quotes = np.zeros(refs.size, dtype=np.int64)
    if has.any():
        s, l, q = ids.segments(refs[has])
        start[has], length[has], quotes[has] = s, l, q
    return start, length, quotes


def cluster_chunks(outcome, chunk: int = CHUNK):
    """The bytes of ``clusters.jsonl`` for ``outcome`` (see :func:`available`), a chunk at a time:
    what :func:`neardup.io.write.results.write_clusters` writes, byte for byte (with sources: the
    ``source`` after the id and the ``duplicate_of_source`` after the survivor, each a constant
    per label)."""
    gather = _gather()
    labels = outcome.reason.labels
    sourced = getattr(outcome, "source", None) is not None
    pieces = {"open": b'{"id":', "quote": b'"', "null": b"null", "cluster": b',"cluster":',
              "kept1": b',"kept":true,"duplicate_of":', "kept0": b',"kept":false,"duplicate_of":',
              "similarity": b',"similarity":'}
    pieces.update({f"reason{k}": b',"reason":' + orjson.dumps(label) + b"}\n" for k, label in enumerate(labels)})
    if sourced:
        source_labels = outcome.source.names.labels
        pieces.update({f"source{k}": b',"source":' + orjson.dumps(label) for k, label in enumerate(source_labels)})
        pieces.update({f"dsource{k}": b',"duplicate_of_source":' + orjson.dumps(label)
                       for k, label in enumerate(source_labels)})
        pieces["dsource_null"] = b',"duplicate_of_source":null'
    const = _Constants(pieces)
    table = _id_table_of(outcome.ids)
    ids = _IdTable(table, len(const.data))
    rows_of = None if isinstance(outcome.ids, Ids) else outcome.ids.ordinals  # the records' ids in the table
    sims = outcome.similarity.values
    has_sim = ~np.isnan(sims)
    sim_base = ids.esc_base + len(ids.escaped)
    kept = np.asarray(outcome.kept, dtype=bool)
    codes = outcome.reason.codes.array()
    reason_at = np.array([const.at[f"reason{k}"] for k in range(len(labels))], dtype=np.int64)
    reason_len = np.array([const.len[f"reason{k}"] for k in range(len(labels))], dtype=np.int64)
    if sourced:
        source_codes = outcome.source.names.codes.array()
        k_all = range(len(source_labels))
        source_at = np.array([const.at[f"source{k}"] for k in k_all], dtype=np.int64)
        source_len = np.array([const.len[f"source{k}"] for k in k_all], dtype=np.int64)
        # (the last entry: a record without a survivor)
        dsource_at = np.array([const.at[f"dsource{k}"] for k in k_all] + [const.at["dsource_null"]], dtype=np.int64)
        dsource_len = np.array([const.len[f"dsource{k}"] for k in k_all] + [const.len["dsource_null"]], dtype=np.int64)
    n = len(outcome.ids)
    q_at = const.at["quote"]
    # the columns of a line's segments: with sources two more (its source; its survivor's)
    width = 17 if sourced else 15
    col_id, col_cluster, col_dup = 1, (6 if sourced else 5), (10 if sourced else 9)
    col_kept, col_sim, col_reason = col_dup - 1, width - 2, width - 1
    # one table of segments for every chunk, its constant columns filled once (a fresh table per
    # chunk cost more in first-touch page faults than the filling itself)
    rows = min(n, chunk)
    table_starts = np.empty((rows, width), dtype=np.int64)
    table_lens = np.empty((rows, width), dtype=np.int64)
    for col, name in ((0, "open"), (col_cluster - 1, "cluster"), (col_sim - 1, "similarity")):
        table_starts[:, col], table_lens[:, col] = const.at[name], const.len[name]
    table_starts[:, [col_id, col_id + 2, col_cluster, col_cluster + 2, col_dup, col_dup + 2]] = q_at
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        m = hi - lo
        starts, lens = table_starts[:m], table_lens[:m]
        own = np.arange(lo, hi, dtype=np.int64) if rows_of is None else rows_of[lo:hi]
        _put_quoted(starts, lens, col_id, *ids.segments(own))
        _put_quoted(starts, lens, col_cluster, *_ref_segments(ids, outcome.cluster.ordinals[lo:hi], const.at["null"]))
        k = kept[lo:hi]
        starts[:, col_kept] = np.where(k, const.at["kept1"], const.at["kept0"])
        lens[:, col_kept] = np.where(k, const.len["kept1"], const.len["kept0"])
        dup = outcome.duplicate_of.ordinals[lo:hi]
        _put_quoted(starts, lens, col_dup, *_ref_segments(ids, dup, const.at["null"]))
        if sourced:
            sc = source_codes[outcome.source.ordinals[lo:hi]]
            starts[:, col_id + 3], lens[:, col_id + 3] = source_at[sc], source_len[sc]
            ds = outcome.duplicate_of_source.ordinals[lo:hi]
            dc = np.where(ds >= 0, source_codes[np.maximum(ds, 0)], len(source_labels))
            starts[:, col_dup + 3], lens[:, col_dup + 3] = dsource_at[dc], dsource_len[dc]
        # the chunk's similarities as text (every kept record has one: the whole corpus's at once
        # were a Python float and a list slot per record)
        h = has_sim[lo:hi]
        sim_text, sim_start, sim_len = _floats_text(sims[lo:hi][h])
        starts[:, col_sim], lens[:, col_sim] = const.at["null"], 4
        starts[h, col_sim], lens[h, col_sim] = sim_base + sim_start, sim_len
        c = codes[lo:hi]
        starts[:, col_reason], lens[:, col_reason] = reason_at[c], reason_len[c]
        yield gather([const.data, *ids.buffers(), sim_text], starts.ravel(), lens.ravel())


def pair_chunks(ids: Ids, a: np.ndarray, b: np.ndarray, jaccard: np.ndarray, estimate: np.ndarray,
                chunk: int = CHUNK):
    """The bytes of ``pairs.jsonl``: ``{"a", "b", "jaccard", "estimate"}`` per pair (ordinals into
    ``ids``; similarities rounded to 6 places as Python's ``round`` does), a chunk at a time."""
    gather = _gather()
    const = _Constants({"a": b'{"a":', "quote": b'"', "b": b',"b":', "jaccard": b',"jaccard":',
                        "estimate": b',"estimate":', "close": b"}\n"})
    table = _IdTable(ids, len(const.data))
    float_base = table.esc_base + len(table.escaped)
    for lo in range(0, a.size, chunk):
        hi = min(a.size, lo + chunk)
        m = hi - lo
        j_text, j_start, j_len = _floats_text(np.array([round(v, 6) for v in jaccard[lo:hi].tolist()]))
        e_text, e_start, e_len = _floats_text(np.array([round(v, 6) for v in estimate[lo:hi].tolist()]))
        buffers = [const.data, *table.buffers(), j_text, e_text]
        starts = np.empty((m, 13), dtype=np.int64)
        lens = np.empty((m, 13), dtype=np.int64)
        starts[:, [1, 3, 5, 7]] = const.at["quote"]
        for col, ords in ((1, a[lo:hi]), (5, b[lo:hi])):
            _put_quoted(starts, lens, col, *table.segments(ords))
        starts[:, 0], lens[:, 0] = const.at["a"], const.len["a"]
        starts[:, 4], lens[:, 4] = const.at["b"], const.len["b"]
        starts[:, 8], lens[:, 8] = const.at["jaccard"], const.len["jaccard"]
        starts[:, 9], lens[:, 9] = float_base + j_start, j_len
        starts[:, 10], lens[:, 10] = const.at["estimate"], const.len["estimate"]
        starts[:, 11], lens[:, 11] = float_base + len(j_text) + e_start, e_len
        starts[:, 12], lens[:, 12] = const.at["close"], const.len["close"]
        yield gather(buffers, starts.ravel(), lens.ravel())
