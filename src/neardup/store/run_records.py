"""A dedup run's sketched records written into an index: ``neardup dedup --save-index DB`` (a new
index of the run's records) and ``--against INDEX --update-index`` (the new records added).

A run with ``--save-index`` stores every record it sketched (the first holder of each content,
near duplicates included) with what the run already computed: content fingerprint, signature,
band keys, shingle ids (for exact verification later), the MOD_m sample (taken from the shingle
ids, no text needed) and the number of its cluster's survivor. Exact copies are not stored: their
first holder stands for them. Simhashes are not stored (they need the words, which a dedup run
does not tokenize again); the index answers the other questions for these documents. The run
itself is the engines' (:mod:`neardup.engines.local`, :mod:`neardup.engines.against`).

With URL identity (``dedup --url-field``) each stored record keeps its canonical URL, in the
layout ``index add --url-field`` writes (``docs.url_hash``, the text in ``docs.url`` where it is
not the id), and the first record of the run with a URL is the first stored with it: the page
``neardup changes`` and ``index query --url-field`` know under the URL, as ``neardup changes``
reading the crawl would. When that record is an exact copy, it is stored too (:class:`UrlCopy`,
after the sketched records), with its holder's sketch, a member of its holder's cluster (else its
URL would be unknown to the index), and the later records of its URL keep none. With HTML, each
record's whole page's fingerprint goes beside its URL (``docs.page_fingerprint``, from the same
read as its main content), so that ``neardup changes`` against the index tells ``template`` from
``unchanged``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import orjson

from ..stages.candidates import band_keys
from ..stages.sketch import mod_m_samples
from . import runs
from .queries import docs_of
from .schema import unsigned, url_hash_of
from .sqlite import SeenIndex

__all__ = ["RunRecords", "UrlCopy", "WRITE_CHUNK", "write_records", "write_indexed_copies", "save_run"]

#: Documents written per insert while a run is stored (one transaction for all of them).
WRITE_CHUNK = 8192


@dataclass
class RunRecords:
    """The sketched records of a run (by local index, in input order), as the local engine holds
    them: ids, sources (None where the index is not written), content fingerprints, lengths,
    shingle counts, shingle ids (pieces read as their concatenation, run r at
    ``offsets[r]:offsets[r+1]``) and signature matrices (pieces)."""

    ids: list | None
    sources: list | None
    fingerprints: np.ndarray
    lengths: np.ndarray
    counts: np.ndarray
    offsets: np.ndarray
    shingle_ids: list
    signatures: list
    #: with URL identity: per record its canonical URL (None: it has none, or the URL's first
    #: record is an exact copy), and the exact copies stored for their URL
    urls: list | None = None
    copies: list = field(default_factory=list)
    #: with URL identity: per record its whole-page fingerprint (signed; None: none)
    pages: list | None = None


class UrlCopy(NamedTuple):
    """An exact copy stored for its canonical URL: ``holder`` is the position among the run's
    records of the record whose content (and so sketch) it has; against an index, ``-1 - k`` for
    the index's document that is the run's holder k (:func:`write_indexed_copies`)."""

    holder: int
    id: str
    source: str
    url: str
    page: int | None = None  # its whole-page fingerprint (signed)


def _rows(pieces: list, lo: int, hi: int) -> np.ndarray:
    """Rows (or values) ``lo:hi`` of pieces read as their concatenation."""
    out, start = [], 0
    for p in pieces:
        n = p.shape[0]
        a, b = max(lo - start, 0), min(hi - start, n)
        if a < b:
            out.append(np.asarray(p[a:b]))
        start += n
        if start >= hi:
            break
    if not out:
        return np.empty((0,) + tuple(pieces[0].shape[1:]) if pieces else (0,), dtype=np.uint64)
    return out[0] if len(out) == 1 else np.concatenate(out)


def _take_rows(pieces: list, positions: list) -> np.ndarray:
    """Rows ``positions`` of pieces read as their concatenation."""
    ends = np.cumsum([p.shape[0] for p in pieces])
    which = np.searchsorted(ends, positions, side="right")
    return np.stack([np.asarray(pieces[w][pos - (ends[w] - pieces[w].shape[0])])
                     for w, pos in zip(which.tolist(), positions)])


def _url_columns(urls: list) -> tuple[list, list]:
    """``docs.url_hash`` and the canonical texts of canonical URLs (None: none)."""
    return [None if u is None else url_hash_of(u) for u in urls], list(urls)



def write_records(index: SeenIndex, conn, records: RunRecords, clusters: list) -> int:
    """Insert the run's records in order, then the exact copies stored for their URL, replacing
    documents of the same source and id; returns the number of documents stored.
    ``clusters[k]``: the index number of record k's survivor, ``-1 - j`` for record j of this
    write, or None (itself).

    An id repeated within the run (a page crawled twice in one shard) is stored once, with its
    last record: every record is written in order and the earlier ones of such an id removed
    after, as if each replaced the one before. Members of a cluster whose survivor was so
    replaced lead themselves when read, as after any replacement (its number is never given
    again)."""
    cfg = index.config
    n = len(records.ids)
    by_source: dict = {}
    for k in range(n):
        by_source.setdefault(records.sources[k], {})[records.ids[k]] = k  # (the last occurrence wins)
    # a copy whose id the run stores already is not stored again (that record stands for it)
    copies, taken = [], set()
    for copy in records.copies:
        if copy.id not in by_source.get(copy.source, ()) and (copy.source, copy.id) not in taken:
            taken.add((copy.source, copy.id))
            copies.append(copy)
    for source in {c.source for c in copies}:
        by_source.setdefault(source, {})
    for source, last in by_source.items():
        index._delete(conn, list(last) + [c.id for c in copies if c.source == source], source)
    url_hashes, url_texts = _url_columns(records.urls) if records.urls is not None else (None, None)
    replaced = [] if sum(map(len, by_source.values())) == n else \
        [k for k in range(n) if by_source[records.sources[k]][records.ids[k]] != k]
    # One writer inside one transaction: the records get consecutive numbers from `base`.
    base = index._next_number(conn)
    absolute = [None if c is None else (base + (-1 - c) if c < 0 else c) for c in clusters]
    for lo in range(0, n, WRITE_CHUNK):
        hi = min(lo + WRITE_CHUNK, n)
        sigs = _rows(records.signatures, lo, hi)
        off = records.offsets[lo : hi + 1]
        ids = _rows(records.shingle_ids, int(off[0]), int(off[-1]))
        local = off - off[0]
        samples = (mod_m_samples(ids, local, cfg.minhash.seed, cfg.mod_m) if cfg.containment
                   else [np.empty(0, dtype=np.uint64)] * (hi - lo))
        keys = band_keys(sigs, cfg.bands, cfg.rows)
        k = lo
        while k < hi:  # runs of one source, in order
            e = k + 1
            while e < hi and records.sources[e] == records.sources[k]:
                e += 1
            rel = slice(k - lo, e - lo)
            index._insert_columns(
                conn, records.ids[k:e], [int(f) for f in records.fingerprints[k:e]], records.lengths[k:e],
                records.counts[k:e], sigs[rel], samples[rel], [None] * (e - k),
                [ids[local[r] : local[r + 1]] for r in range(k - lo, e - lo)] if cfg.store_shingles else [None] * (e - k),
                [None] * (e - k), band_keys=keys[rel], source=records.sources[k], clusters=absolute[k:e],
                url_hashes=None if url_hashes is None else url_hashes[k:e],
                url_texts=None if url_texts is None else url_texts[k:e],
                page_fingerprints=None if records.pages is None else records.pages[k:e])
            k = e
    if copies:
        _write_copies(index, conn, records, copies, [base + k if c is None else c for k, c in enumerate(absolute)])
    if replaced:
        found = conn.execute(f"SELECT {index._removed_columns} FROM json_each(?) j JOIN docs d ON d.num = j.value",
                             (orjson.dumps([base + k for k in replaced]).decode(),)).fetchall()
        index._remove_rows(conn, found)
    return n - len(replaced) + len(copies)


def _write_copies(index: SeenIndex, conn, records: RunRecords, copies: list, survivors: list) -> None:
    """Insert the exact copies stored for their URL, in order, each with its holder's sketch and
    in its holder's cluster (``survivors[k]``: the number of record k's survivor)."""
    cfg = index.config
    for lo in range(0, len(copies), WRITE_CHUNK):
        chunk = copies[lo:lo + WRITE_CHUNK]
        holders = [c.holder for c in chunk]
        sigs = _take_rows(records.signatures, holders)
        parts = [_rows(records.shingle_ids, int(records.offsets[h]), int(records.offsets[h + 1])) for h in holders]
        ids = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)
        local = np.concatenate([[0], np.cumsum([p.size for p in parts])]).astype(np.int64)
        samples = (mod_m_samples(ids, local, cfg.minhash.seed, cfg.mod_m) if cfg.containment
                   else [np.empty(0, dtype=np.uint64)] * len(chunk))
        keys = band_keys(sigs, cfg.bands, cfg.rows)
        k = 0
        while k < len(chunk):  # runs of one source, in order
            e = k + 1
            while e < len(chunk) and chunk[e].source == chunk[k].source:
                e += 1
            hashes, texts = _url_columns([c.url for c in chunk[k:e]])
            index._insert_columns(
                conn, [c.id for c in chunk[k:e]], [int(records.fingerprints[h]) for h in holders[k:e]],
                records.lengths[holders[k:e]], records.counts[holders[k:e]], sigs[k:e], samples[k:e],
                [None] * (e - k), parts[k:e] if cfg.store_shingles else [None] * (e - k), [None] * (e - k),
                band_keys=keys[k:e], source=chunk[k].source, clusters=[survivors[h] for h in holders[k:e]],
                url_hashes=hashes, url_texts=texts, page_fingerprints=[c.page for c in chunk[k:e]])
            k = e


def write_indexed_copies(index: SeenIndex, conn, copies: list) -> int:
    """Insert the exact copies of indexed documents stored for their URL (``(holder number,
    UrlCopy)``, in order): each with its holder's sketch as stored, in its holder's cluster, as
    :func:`write_records` stores a copy of a record of the run; returns how many were stored (a
    holder that is no longer stored has nothing to copy)."""
    cfg = index.config
    fingerprint = "coalesce(d.fingerprint, d.run_fingerprint)" if cfg.fingerprint_runs else "d.fingerprint"
    nums = np.array(sorted({num for num, _ in copies}), dtype=np.int64)
    rows = {num: rest for num, *rest in docs_of(conn, f"{fingerprint}, d.length, d.n_shingles, d.signature, d.shingles, "
                                                      "d.cluster", nums)}
    copies = [(num, c) for num, c in copies if num in rows]
    for source in dict.fromkeys(c.source for _, c in copies):  # (replacing documents of the same ids)
        index._delete(conn, [c.id for _, c in copies if c.source == source], source)
    k = 0
    while k < len(copies):  # runs of one source, in order
        e = k + 1
        while e < len(copies) and copies[e][1].source == copies[k][1].source:
            e += 1
        held = [rows[num] for num, _ in copies[k:e]]
        sigs = index._signature_matrix([r[3] for r in held], narrow=True)
        parts = [np.frombuffer(r[4], dtype="<u8").astype(np.uint64) for r in held]
        local = np.concatenate([[0], np.cumsum([p.size for p in parts])]).astype(np.int64)
        samples = (mod_m_samples(np.concatenate(parts), local, cfg.minhash.seed, cfg.mod_m) if cfg.containment
                   else [np.empty(0, dtype=np.uint64)] * (e - k))
        hashes, texts = _url_columns([c.url for _, c in copies[k:e]])
        index._insert_columns(
            conn, [c.id for _, c in copies[k:e]], [None if r[0] is None else unsigned(r[0]) for r in held],
            np.array([r[1] for r in held], dtype=np.int64), np.array([r[2] for r in held], dtype=np.int64), sigs,
            samples, [None] * (e - k), parts if cfg.store_shingles else [None] * (e - k), [None] * (e - k),
            band_keys=band_keys(sigs, cfg.bands, cfg.rows), source=copies[k][1].source,
            clusters=[num if r[5] is None else r[5] for (num, _), r in zip(copies[k:e], held)],
            url_hashes=hashes, url_texts=texts, page_fingerprints=[c.page for _, c in copies[k:e]])
        k = e
    return len(copies)


def save_run(index: SeenIndex, records: RunRecords, survivor_local: np.ndarray) -> int:
    """``--save-index``: store the run's sketched records with their clusters, in one transaction;
    the runs its chunks wrote merged into one a kind (see :func:`runs.merge_all`)."""
    clusters = [None if int(s) == k else -1 - int(s) for k, s in enumerate(survivor_local.tolist())]

    def work(conn) -> int:
        saved = write_records(index, conn, records, clusters)
        if index.config.posting_runs:
            for kind in (runs.KIND_BANDS, runs.KIND_IDS):
                runs.merge_all(conn, kind)
        return saved

    return index._run_write(work)
