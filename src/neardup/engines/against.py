"""Dedup against an index: ``neardup dedup NEW... --against INDEX`` (and ``--update-index``).

A run ``--against`` an index deduplicates the new records as a run over the indexed documents
followed by the new ones would, for the new records: the indexed documents that matter (those
sharing a content fingerprint or a band key with a new record, and the survivors of their
clusters) join the run as the first nodes of the graph, each joined to its recorded survivor, and
the stages (estimate filter, verification, union-find, survivors, outcomes) run over the whole.
Indexed documents always survive (only new records are removed): a cluster holding an indexed
document is led by the indexed survivor that was added first, which is what ``keep="first"``
chooses in a joint run. With ``--update-index`` the sketched new records are added in the same
transaction (all or none), with the number of their survivor, and clusters that a new record
joined are merged in the index, so that the next run finds what a joint run of all three would.
What a run saves of its records (``--save-index``) is :mod:`neardup.store.run_records`. With URL
identity (``--url-field``) the indexed pages under the new records' URLs and claims join the run
too: :mod:`neardup.engines.against_urls`.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import orjson

from ..errors import ConfigError, StoreError
from ..stages.candidates import estimate_filter, estimate_floor
from ..stages.columns import Floats, Ids, Labels, Names, SourcedNames
from ..stages.grouping import sorted_unique
from ..stages.survivors import Outcome, cluster_kinds, similarity_to_survivors
from ..stages.verify import Edges, verify_pairs
from ..store import runs
from ..store.run_records import RunRecords, write_indexed_copies, write_records
from ..store.schema import DOC_BITS, MAX_VARS, band_buckets, unsigned
from ..store.sqlite import SeenIndex
from .against_urls import IndexedUrls, survivor_priority
from .common import cluster_outcomes

__all__ = ["Against", "band_pairs", "band_postings_in"]

class _Held:
    """Every live band posting of the index, sorted (so by bucket, then number), read in one scan
    (:meth:`Against._scanned_postings`), and a bit map of their buckets' top bits: a key whose
    bucket's bits are not set cannot share a bucket with the index. Most of a run's keys find
    none: the map drops nearly all of them, and only the others are searched in the postings."""

    #: bits of the map a posting (1.8M postings: a 16 MB map, 1.3 % of its bits set, so about 1
    #: key in 75 without a posting is searched; with a byte a bit and 8 a posting, 1 in 9 was,
    #: and their searches were most of the matching's time)
    MAP_BITS_A_POSTING = 64
    #: the most bits of a map (64 MB)
    MAX_MAP_BITS = 29
    #: postings whose bits are set at a time
    MAP_SLICE = 1 << 20

    def __init__(self, postings: np.ndarray):
        self.postings = postings
        self.map = None
        if postings.size:
            bits = min(max(int(postings.size * self.MAP_BITS_A_POSTING).bit_length(), 16), self.MAX_MAP_BITS)
            # its top bits (buckets are hashes), so that the postings set it in order
            self.shift = runs.BUCKET_BITS - bits
            self.map = np.zeros(1 << (bits - 3), dtype=np.uint8)
            for lo in range(0, postings.size, self.MAP_SLICE):  # (temporaries of a slice: see runs.iter_postings)
                slots = postings[lo : lo + self.MAP_SLICE] >> (DOC_BITS + self.shift)
                byte = slots >> 3
                starts = np.flatnonzero(np.concatenate(([True], byte[1:] != byte[:-1])))  # (sorted: runs of a byte)
                mask = np.left_shift(1, slots & 7).astype(np.uint8)
                self.map[byte[starts]] |= np.bitwise_or.reduceat(mask, starts)

    def maybe(self, buckets: np.ndarray) -> np.ndarray:
        """The positions in ``buckets`` (flat, int64) that the map keeps: every bucket that holds
        a posting among them."""
        if self.map is None or not buckets.size:
            return np.empty(0, dtype=np.int64)
        slots = buckets >> self.shift
        return np.flatnonzero((self.map[slots >> 3] >> (slots & 7).astype(np.uint8)) & 1)


def _bucket_pairs(keys: np.ndarray, held: np.ndarray, cap: int, *,
                  candidates: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Distinct ``(row of keys, index number)`` pairs sharing a band bucket, sorted, from the
    index's live postings ``held`` (sorted: those of the buckets of ``keys``, or more: the others
    are not read); each bucket gives its oldest ``cap`` documents (its first postings).
    ``candidates``: ``(buckets, positions in keys.ravel())`` of the only keys that may share one
    (those a :class:`_Held` map kept); by default every key."""
    none = np.empty(0, dtype=np.int64)
    if not held.size or not keys.size:
        return none, none
    mask = (1 << DOC_BITS) - 1
    if candidates is None:
        buckets = band_buckets(keys).ravel()
        position = np.arange(buckets.size)
    else:
        buckets, position = candidates
        if not buckets.size:
            return none, none
    # the keys' buckets sorted (searched in that order they walk the postings once: 6 times
    # faster than in key order), with their positions; (bucket, position) packed in one
    # integer where the position fits beside the 35-bit bucket: a sort, faster than an argsort
    if keys.size <= mask:
        packed = np.sort(buckets << DOC_BITS | position)
        buckets, position = packed >> DOC_BITS, packed & mask
    else:
        order = np.argsort(buckets)
        buckets, position = buckets[order], position[order]
    # each key's bucket is a range of the postings (by bucket, then number): its first `cap`
    first = buckets << DOC_BITS
    left = np.searchsorted(held, first, side="left")
    hit = np.flatnonzero((held[np.minimum(left, held.size - 1)] >> DOC_BITS) == buckets)
    if not hit.size:
        return none, none
    left = left[hit]
    n = np.minimum(np.searchsorted(held, first[hit] + (1 << DOC_BITS), side="left") - left, cap)
    at = np.repeat(left - (np.cumsum(n) - n), n) + np.arange(int(n.sum()))
    # (row, number) packed in one integer: distinct and sorted by one sort of integers
    rows = position[hit] // keys.shape[1]
    pairs = sorted_unique(np.repeat(rows, n) << DOC_BITS | (held[at] & mask))
    return pairs >> DOC_BITS, pairs & mask


def band_postings_in(conn, buckets: np.ndarray, n_runs: int) -> np.ndarray:
    """The index's live band postings in ``buckets`` (sorted): the row table's, by a join, and
    those of its ``n_runs`` posting runs, read whole a slice at a time (:func:`runs.iter_postings`)
    and kept where their bucket is one of these: one pass, whatever the number of keys."""
    distinct = sorted_unique(np.asarray(buckets, dtype=np.int64).ravel())
    parts = [_row_postings_in(conn, distinct)]
    if n_runs and distinct.size:
        for part in runs.iter_postings(conn, runs.KIND_BANDS):
            bucket = part >> DOC_BITS
            at = np.minimum(np.searchsorted(distinct, bucket), distinct.size - 1)
            parts.append(part[distinct[at] == bucket])
    return _live(conn, np.sort(np.concatenate(parts)), n_runs)


def band_pairs(index: SeenIndex, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct ``(row of keys, index number)`` pairs sharing a band bucket (``keys``: band keys
    under the index's banding), each bucket giving its oldest ``CANDIDATES_PER_BUCKET`` live
    documents, as a query's near look-up takes them: from one pass over the index's band
    postings, however many keys (a look-up per key reads every posting run: its cost grows with
    the index)."""
    none = np.empty(0, dtype=np.int64)
    if not keys.size:
        return none, none
    buckets = band_buckets(keys).ravel()
    with index._read() as conn:
        n_runs = conn.execute("SELECT count(*) FROM posting_runs WHERE kind = ?", (runs.KIND_BANDS,)).fetchone()[0] \
            if index.config.posting_runs else 0
        postings = band_postings_in(conn, buckets, n_runs)
    return _bucket_pairs(keys, postings, index.CANDIDATES_PER_BUCKET, candidates=(buckets, np.arange(buckets.size)))


def _row_postings_in(conn, distinct: np.ndarray) -> np.ndarray:
    """The postings of the row table in the buckets ``distinct`` (sorted, distinct), by a
    join; sorted."""
    none = np.empty(0, dtype=np.int64)
    if not distinct.size:
        return none
    mask = (1 << DOC_BITS) - 1
    # the buckets in a temporary table, and one join: each bucket is a range of the postings' key
    # (handed over as one JSON array: 3 times faster than an insert per bucket; sorted, so
    # the join walks the postings' B-tree in order; orjson writes it from the array, where the
    # json module's encoder walked a Python list under the GIL)
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS against_buckets (lo INTEGER NOT NULL)")
    conn.execute("DELETE FROM temp.against_buckets")
    conn.execute("INSERT INTO temp.against_buckets (lo) SELECT value FROM json_each(?)",
                 (orjson.dumps(distinct << DOC_BITS, option=orjson.OPT_SERIALIZE_NUMPY).decode(),))
    rows = conn.execute(f"SELECT b.posting FROM temp.against_buckets q JOIN bands b "
                        f"ON b.posting BETWEEN q.lo AND q.lo + {mask}").fetchall()
    conn.execute("DELETE FROM temp.against_buckets")
    return np.sort(np.array(rows, dtype=np.int64).ravel()) if rows else none


def _live(conn, postings: np.ndarray, n_runs: int) -> np.ndarray:
    """``postings`` without those of documents the index no longer holds. The row tables
    lose a document's postings with it; the runs keep them (:func:`runs.stale_documents`),
    and they must go before a bucket's oldest documents are taken."""
    if not postings.size or not n_runs or not runs.stale_documents(conn):
        return postings
    nums = sorted_unique(postings & ((1 << DOC_BITS) - 1))
    live = np.array(conn.execute("SELECT d.num FROM json_each(?) j JOIN docs d ON d.num = j.value",
                                 (orjson.dumps(nums, option=orjson.OPT_SERIALIZE_NUMPY).decode(),)).fetchall(),
                    dtype=np.int64).ravel()
    return postings[np.isin(postings & ((1 << DOC_BITS) - 1), live)]


def _parsed(text: str, why: str) -> np.ndarray:
    """The integers of a text of them separated by single spaces (as ``group_concat`` writes
    them), parsed by numpy; ``why`` is the error when one could not be read."""
    values = np.fromstring(text, dtype=np.int64, sep=" ")
    if values.size != text.count(" ") + 1:
        raise StoreError(why)
    return values


class Against:
    """The index side of ``dedup --against``: the exact pass's lookups and the resolution of the
    new records' clusters over the indexed documents they touch (see the module docstring)."""

    def __init__(self, index: SeenIndex, label: str, *, update: bool = False, measure: str = "jaccard",
                 verify: bool = True, urls: bool = False):
        """``urls``: the run has URL identity (``--url-field``): the index must store canonical
        URLs (:mod:`neardup.engines.against_urls`)."""
        if not index.config.store_shingles:
            raise ConfigError(f"index {label} holds no shingle ids (made without store_shingles): --against "
                              f"verifies pairs exactly on them; write the index with 'neardup dedup --save-index' "
                              f"or 'neardup index add --store-shingles'")
        if not index.config.signatures:
            raise ConfigError(f"index {label} holds no MinHash signatures (profile lean): --against needs an index "
                              f"of profile default or full (as 'neardup dedup --save-index' writes)")
        if urls and len(index) and not index.has_urls():
            raise ConfigError(f"index {label} stores no canonical URLs (saved without --url-field): --against "
                              f"--url-field finds the new records' URLs in it; save it again with 'neardup dedup "
                              f"--url-field NAME --save-index' (or 'neardup index add --url-field NAME'), or run "
                              f"without --url-field")
        self.index = index
        self.label = label
        self.urls = urls
        self.update = update
        self.measure = measure
        self.verify = verify
        self.holder_nums: list[int] = []  # k -> the index number of exact holder k (pseudo ordinal -1 - k)
        self._holder_of: dict = {}  # fingerprint -> k
        self._pool = None
        self._lookups: list = []  # futures of look_up's joins, in batch order
        self._scan = None  # the future of the scan of the index's postings once started (or _STREAMED)
        self._streamed: list = []  # (keys, first local) of the batches kept for one pass (_STREAMED)
        self._fingerprint_scan = None  # the future of the scan of its content fingerprints, once started
        self._buckets = 0  # band keys of the batches so far (expect)
        self._records = 0  # and their records
        self._runs = self._run_postings = self._row_postings = 0  # (expect: the index's band posting runs)
        self._documents = 0
        self._rows: dict = {}  # what _load read: the documents matched and their survivors
        self._read_nums: list = []  # the numbers of the documents read, in order
        self._counts: list = []  # and their counts of shingle ids
        self._shingle_pieces: list = []  # their shingle ids and signatures, a piece per _load
        self._signature_pieces: list = []
        self.stats: dict = {}

    # -- the exact pass ----------------------------------------------------------------------
    def indexed_holders(self, fingerprints: np.ndarray, n_shingles: np.ndarray) -> np.ndarray:
        """Per record of a batch, its content's holder in the index as a pseudo ordinal
        ``-1 - k`` standing for indexed holder k (the oldest document of that fingerprint), 0
        where the index has none (or the record has no shingles), for
        :func:`neardup.stages.exact.first_holders`."""
        fps = np.asarray(fingerprints, dtype=np.uint64)
        out = np.zeros(fps.size, dtype=np.int64)
        distinct = sorted_unique(fps[np.asarray(n_shingles) != 0].view(np.int64)).view(np.uint64)
        if not distinct.size:
            return out
        if self._fingerprint_scan is not None:  # matched against every fingerprint of the index
            held_fps, held_nums = self._fingerprint_scan.result()
            signed_fps = distinct.view(np.int64)
            rows = []
            if held_fps.size:
                at = np.minimum(np.searchsorted(held_fps, signed_fps), held_fps.size - 1)
                hit = held_fps[at] == signed_fps
                rows = list(zip(signed_fps[hit].tolist(), held_nums[at[hit]].tolist()))  # (by signed value, as the join)
        else:
            with self.index._read() as conn:
                # the fingerprints handed over as one JSON array of their signed values (sorted, so
                # the join walks the fingerprint index in order): one statement, where a list of
                # bound parameters was 2.5 times the time
                rows = conn.execute("SELECT d.fingerprint, min(d.num) FROM json_each(?) q JOIN docs d "
                                    "ON d.fingerprint = q.value GROUP BY d.fingerprint",
                                    (orjson.dumps(distinct.view(np.int64), option=orjson.OPT_SERIALIZE_NUMPY).decode(),)
                                    ).fetchall()
        if not rows:
            return out
        held, pseudo = [], []
        for fp, num in rows:
            fp = unsigned(fp)
            k = self._holder_of.get(fp)
            if k is None:
                k = self._holder_of[fp] = len(self.holder_nums)
                self.holder_nums.append(num)
            held.append(fp)
            pseudo.append(-1 - k)
        held, pseudo = np.array(held, dtype=np.uint64), np.array(pseudo, dtype=np.int64)
        order = np.argsort(held)
        held, pseudo = held[order], pseudo[order]
        at = np.minimum(np.searchsorted(held, fps), held.size - 1)
        hit = (held[at] == fps) & (np.asarray(n_shingles) != 0)
        out[hit] = pseudo[at[hit]]
        return out

    # -- candidates --------------------------------------------------------------------------
    #: What reading the index's band postings costs, in seconds, for :meth:`expect`'s choice: a
    #: bucket looked up in the rows (``bands``, one join a batch), a bucket looked up in each
    #: posting run (a range of its blocks), a posting of the rows read in a scan (as text), and a
    #: posting of the runs read in a scan (its block decoded in C, the runs merged). Measured on
    #: the reference machine (2026-12-04) against the two layouts of half the 200,000 generated
    #: documents (1.8M postings; the runs: 13): 0.46-0.71 us a bucket joined, 4.4-4.7 us a bucket
    #: and a run looked up, 171-196 ns a row and 40-60 ns a run's posting scanned.
    JOIN_SECONDS_A_BUCKET = 0.6e-6
    LOOKUP_SECONDS_A_RUN = 4.5e-6
    SCAN_SECONDS_A_ROW = 0.18e-6
    SCAN_SECONDS_A_RUN_POSTING = 0.05e-6
    #: The batches of a run are looked up (joined in the rows, their buckets' blocks read in the
    #: runs) until what their keys cost so far reaches this many times what one scan of every
    #: posting of the index costs; then the postings are scanned, and that batch and the later
    #: ones matched against them (so a run never pays more than about twice the cheaper of the
    #: two, whatever its size against the index's).
    SCAN_AFTER = 1.0
    #: The most postings a scan holds (8 bytes each, until the run's clusters are resolved):
    #: past this many, the keys of the batches left are matched in one pass over the postings
    #: once every batch is sketched (the runs read a slice at a time, see
    #: :meth:`_streamed_postings`). Its documents' fingerprints are scanned only below this
    #: many documents too.
    SCAN_MAX_POSTINGS = 1 << 25
    #: Postings of the rows read per statement of a scan (a range of the key): bounds the text
    #: SQLite hands over (about 20 bytes a posting).
    SCAN_CHUNK = 1 << 20
    #: Reading one document's content fingerprint (and number) in a scan of the fingerprint
    #: index costs about a seventh of looking one fingerprint up in :meth:`indexed_holders`'s
    #: join (the 100,000 of 100,000 generated documents scanned in 0.019 s, the 100,000 of
    #: as many new records joined in 0.135 s, 2026-12-03). Once the run's records reach this
    #: many per indexed document, the fingerprints are read in one scan (on a thread of its
    #: own, while the batch is sketched) and that batch's and the later ones' are matched
    #: against them.
    SCAN_RECORDS_PER_DOCUMENT = 0.2
    #: :attr:`_scan` when the postings are too many to hold: the keys wait for one pass
    _STREAMED = "streamed"

    def expect(self, records: int) -> None:
        """A batch of this many records is about to be sketched (called before its
        :meth:`look_up` and its :meth:`indexed_holders`): once looking up the run's band keys
        would cost :attr:`SCAN_AFTER` times a scan of the index's postings, the scan is started
        on this object's thread, while the batch is sketched (its keys and the later batches'
        are matched against it), or past :attr:`SCAN_MAX_POSTINGS` the later keys wait for one
        pass over the postings; once its records reach :attr:`SCAN_RECORDS_PER_DOCUMENT` of the
        index's documents, the scan of their fingerprints, first."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="neardup-against")
            self._documents = len(self.index)
            with self.index._read() as conn:
                self._runs, self._run_postings = (conn.execute(
                    "SELECT count(*), coalesce(sum(postings), 0) FROM posting_runs WHERE kind = ?",
                    (runs.KIND_BANDS,)).fetchone() if self.index.config.posting_runs else (0, 0))
            # (the rows: at most the rest of a posting a band for every document)
            self._row_postings = max(0, self._documents * self.index.config.bands - self._run_postings)
        self._records += records
        self._buckets += records * self.index.config.bands  # (at most: copies and empty texts have none)
        if (self._fingerprint_scan is None and self._documents <= self.SCAN_MAX_POSTINGS
                and self._records >= self.SCAN_RECORDS_PER_DOCUMENT * self._documents):
            # (on a thread of its own: the next batch's exact pass waits for it, not behind the
            # postings' scan and the look-ups)
            pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="neardup-against-fingerprints")
            self._fingerprint_scan = pool.submit(self._scanned_fingerprints)
            pool.shutdown(wait=False)  # (its thread ends with the scan)
        if self._scan is None:
            looked_up = self._buckets * (self.JOIN_SECONDS_A_BUCKET + self._runs * self.LOOKUP_SECONDS_A_RUN)
            scanned = (self._row_postings * self.SCAN_SECONDS_A_ROW
                       + self._run_postings * self.SCAN_SECONDS_A_RUN_POSTING)
            if looked_up >= self.SCAN_AFTER * scanned:
                self._scan = (self._pool.submit(self._scanned_postings)
                              if self._row_postings + self._run_postings <= self.SCAN_MAX_POSTINGS else self._STREAMED)

    def look_up(self, keys: np.ndarray, *, first_local: int) -> None:
        """Start looking up a batch's band keys (its records are the sketched ones from
        ``first_local`` on) on this object's thread, with its own connection: SQLite releases
        the GIL, so the lookups overlap with the sketching of the next batch. They are looked up
        in the index, or matched against its postings once :meth:`expect` started their scan
        (on the same thread, so that scan is read by then: the thread runs its tasks in turn),
        or kept for one pass over the postings at the end (:meth:`_matches`)."""
        if self._pool is None:
            self.expect(0)
        cap, scan = self.index.CANDIDATES_PER_BUCKET, self._scan
        if scan is self._STREAMED:
            self._streamed.append((keys, first_local))
            return

        def run():
            with self.index._read() as conn:
                buckets = band_buckets(keys).ravel()
                if scan is None:
                    bi, bn = _bucket_pairs(keys, self._bucket_postings(conn, buckets), cap,
                                           candidates=(buckets, np.arange(buckets.size)))
                else:
                    held = scan.result()
                    maybe = held.maybe(buckets)
                    bi, bn = _bucket_pairs(keys, held.postings, cap, candidates=(buckets[maybe], maybe))
                # the documents matched, read here while the run sketches (resolve needs them all)
                self._load(conn, sorted_unique(bn).tolist())
            return bi + first_local, bn

        self._lookups.append(self._pool.submit(run))

    def _matches(self, keys) -> tuple[np.ndarray, np.ndarray]:
        """Distinct ``(new local, index number)`` pairs sharing a band bucket, of every batch
        looked up or kept for one pass (or of ``keys``, the run's, when none was)."""
        if self._pool is None:
            self.expect(0)
        found = [f.result() for f in self._lookups]
        self._pool.shutdown()
        streamed = self._streamed
        self._lookups, self._scan, self._fingerprint_scan, self._streamed = [], None, None, []
        if not found and not streamed and keys is not None and keys.size:
            streamed = [(keys, 0)]
        if streamed:
            cap = self.index.CANDIDATES_PER_BUCKET
            keys = np.concatenate([k for k, _ in streamed])
            local = np.concatenate([np.arange(first, first + k.shape[0]) for k, first in streamed])
            buckets = band_buckets(keys).ravel()
            with self.index._read() as conn:
                bi, bn = _bucket_pairs(keys, self._streamed_postings(conn, buckets), cap,
                                       candidates=(buckets, np.arange(buckets.size)))
            found.append((local[bi], bn))
        if not found:
            none = np.empty(0, dtype=np.int64)
            return none, none
        if len(found) == 1:
            return found[0]
        return np.concatenate([f[0] for f in found]), np.concatenate([f[1] for f in found])

    def _bucket_postings(self, conn, buckets: np.ndarray) -> np.ndarray:
        """The index's live postings in ``buckets`` (sorted): the rows', by a join, and the
        runs', their buckets' blocks read (each bucket's oldest documents, as many as a bucket
        gives a run)."""
        distinct = sorted_unique(np.asarray(buckets, dtype=np.int64).ravel())
        postings = _row_postings_in(conn, distinct)
        if self._runs and distinct.size:
            cap = self.index.CANDIDATES_PER_BUCKET
            step = max(1, 2000 // self._runs)  # (bucket, run) ranges a statement
            found = []
            for lo in range(0, distinct.size, step):
                part = distinct[lo : lo + step]
                docs = runs.lookup(conn, runs.KIND_BANDS, part.tolist(), cap)
                sizes = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs))
                if sizes.any():
                    found.append(np.repeat(part << DOC_BITS, sizes) | np.concatenate(docs))
            if found:
                postings = np.sort(np.concatenate([postings, *found]))
        return _live(conn, postings, self._runs)

    def _streamed_postings(self, conn, buckets: np.ndarray) -> np.ndarray:
        """:func:`band_postings_in` of this index: for more keys than a scan may hold postings, one pass."""
        return band_postings_in(conn, buckets, self._runs)

    def _scanned_postings(self) -> _Held:
        """Every live band posting of the index (:class:`_Held`): the runs' blocks decoded and the
        runs merged (about 0.05 us a posting), the rows' read in ranges of the key, each range's
        as one text that numpy parses (a Python int a row cost twice the time)."""
        parts = []
        with self.index._read() as conn:
            if self._runs:
                parts.append(runs.all_postings(conn, runs.KIND_BANDS))
            top = 1 << 63  # postings are below: a 35-bit bucket shifted by DOC_BITS
            step = -(-top // max(1, -(-self._row_postings // self.SCAN_CHUNK)))
            for lo in range(0, top, step):
                text = conn.execute("SELECT group_concat(posting, ' ') FROM bands WHERE posting BETWEEN ? AND ?",
                                    (lo, min(lo + step, top) - 1)).fetchone()[0]
                if text:
                    parts.append(_parsed(text, f"index {self.label}: a band posting could not be read"))
            parts = [p for p in parts if p.size]
            if len(parts) == 1:  # (sorted: the runs' merged, or the rows' read in key order)
                postings = parts[0]
            else:  # (sorted parts: merged)
                postings = np.sort(np.concatenate(parts), kind="stable") if parts else np.empty(0, dtype=np.int64)
            postings = _live(conn, postings, self._runs)
        return _Held(postings)

    def _scanned_fingerprints(self) -> tuple[np.ndarray, np.ndarray]:
        """Every distinct content fingerprint of the index (signed, sorted) and the number of
        its oldest document, from one scan of the fingerprint index (its entries are
        ``(fingerprint, num)``, read as two texts that numpy parses)."""
        with self.index._read() as conn:
            fps, nums = conn.execute("SELECT group_concat(fingerprint, ' '), group_concat(num, ' ') FROM docs "
                                     "WHERE fingerprint IS NOT NULL").fetchone()
        if not fps:
            none = np.empty(0, dtype=np.int64)
            return none, none
        why = f"index {self.label}: a content fingerprint could not be read"
        fps, nums = _parsed(fps, why), _parsed(nums, why)
        if fps.size != nums.size:
            raise StoreError(why)
        # the oldest document of each fingerprint: the first of its run once sorted by
        # (fingerprint, number), the fingerprint index's own order (sorted here if it is not)
        if fps.size > 1 and not ((fps[1:] > fps[:-1]) | ((fps[1:] == fps[:-1]) & (nums[1:] > nums[:-1]))).all():
            order = np.lexsort((nums, fps))
            fps, nums = fps[order], nums[order]
        first = np.ones(fps.size, dtype=bool)
        first[1:] = fps[1:] != fps[:-1]
        return fps[first], nums[first]

    def _load(self, conn, nums) -> None:
        """Read these documents and the survivors of their clusters, those not read yet: into
        :attr:`_rows` ``num -> (id, source, length, cluster)`` (None for a number the index no
        longer holds), their shingle ids and signatures into one piece each per call (the
        documents in the order read: :meth:`resolve` numbers them so, each blob copied once)."""
        rows = self._rows
        want = sorted(set(nums) - rows.keys())
        sigs, shingles = [], []
        while want:
            for lo in range(0, len(want), MAX_VARS):
                chunk = want[lo : lo + MAX_VARS]
                for num, doc_id, source, length, cluster, sig, ids in conn.execute(
                        f"SELECT d.num, {self.index._id_sql}, d.source, d.length, d.cluster, d.signature, "
                        f"d.shingles FROM docs d WHERE d.num IN ({','.join('?' * len(chunk))})", chunk):
                    rows[num] = (doc_id, source, length, cluster)
                    self._read_nums.append(num)
                    self._counts.append(len(ids) // 8)
                    sigs.append(sig)
                    shingles.append(ids)
            # a survivor may have been replaced since (a re-crawled id): its members lead themselves
            for num in want:
                rows.setdefault(num, None)
            want = sorted({v[3] for v in (rows[num] for num in want) if v is not None and v[3] is not None}
                          - rows.keys())
        if sigs:
            self._signature_pieces.append(self.index._signature_matrix(sigs, narrow=True))
            self._shingle_pieces.append(np.frombuffer(b"".join(shingles), dtype="<u8").astype(np.uint64, copy=False))

    # -- clusters ----------------------------------------------------------------------------
    def resolve(self, *, ids, sources, reason, lengths, keyvals, exact_of, sk, records: RunRecords, keys,
                edges: Edges, config, jobs: int, url_keys: dict | None = None, claim_keys: dict | None = None):
        """The new records' outcomes over the indexed documents they touch; with URL identity
        (``urls`` given to the constructor), ``url_keys`` and ``claim_keys``: the new records'
        canonical URLs and claims by ordinal, whose indexed documents join them
        (:mod:`neardup.engines.against_urls`).

        Returns ``(outcome, pairs, cluster_sizes, kinds, chained, write)``: the outcome of the
        new records (by their ordinals, with their sources and their survivors'), the verified
        pairs as ``(edges, sketched ordinals, names)`` of the combined run, the cluster sizes
        (by ``(source, id)``) and kinds as the new records see them, the chained members, and
        ``write`` (None, or a function of a connection that adds the new records, for
        ``--update-index``: the caller runs it as one transaction).
        """
        index = self.index
        m = index.config.minhash.num_perm
        bi, bn = self._matches(keys)
        urls = IndexedUrls(url_keys or {}, claim_keys or {}) if self.urls else None
        with index._read() as conn:  # (the look-ups read their documents already)
            self._load(conn, bn.tolist() + self.holder_nums + (urls.look_up(index, conn) if urls is not None else []))
        # the indexed documents by local index in the order read (their pieces'), and by ordinal
        # in the order of their numbers (the oldest first, as in a run over the index's records
        # and then the new ones): ordinal_of[local]
        nums = np.array(self._read_nums, dtype=np.int64)
        n_a = nums.size
        by_num = np.argsort(nums)
        ordinal_of = np.empty(n_a, dtype=np.int64)
        ordinal_of[by_num] = np.arange(n_a)
        a_rows = [self._rows[num] for num in nums[by_num].tolist()]  # by ordinal
        local_of_num = {num: k for k, num in enumerate(self._read_nums)}
        a_counts = np.array(self._counts, dtype=np.int64)
        a_shingles, a_sigs = self._shingle_pieces, self._signature_pieces
        self._rows, self._read_nums, self._counts, self._shingle_pieces, self._signature_pieces = {}, [], [], [], []
        a_ids = [r[0] for r in a_rows]
        a_sources = [r[1] or self.label for r in a_rows]
        a_offsets = np.zeros(n_a + 1, dtype=np.int64)
        np.cumsum(a_counts, out=a_offsets[1:])

        n_b = sk.size
        shingles = a_shingles + list(records.shingle_ids)
        offsets = np.concatenate((a_offsets[:-1], records.offsets + a_offsets[-1]))
        counts = np.concatenate((a_counts, records.counts))
        signatures = a_sigs + list(records.signatures)
        sk_all = np.concatenate((ordinal_of, sk + n_a))

        # candidates new x indexed, the estimate filter and exact verification, as a joint run's
        ci = by_num[np.searchsorted(nums[by_num], bn)]  # (every matched number was read)
        cj = bi + n_a
        order = np.lexsort((cj, ci))
        ci, cj = ci[order], cj[order]
        floor = estimate_floor(config.threshold, m, config.measure) if config.verify else None
        ci, cj, est, filtered = estimate_filter(signatures, ci, cj, floor, jobs=jobs)
        cross = verify_pairs(shingles, offsets, counts, ci, cj, est, measure=config.measure,
                             threshold=config.threshold if config.verify else None, jobs=jobs)
        self.stats = {"against_candidate_pairs": int(bn.size), "against_estimate_filtered": filtered,
                      "against_verified_pairs": len(cross), "indexed_documents_read": n_a}
        joined = Edges(*(np.concatenate((getattr(cross, f), getattr(edges, f) + (n_a if f in "ij" else 0)))
                         for f in ("i", "j", "jaccard", "estimate", "score")))
        # the pairs in the order of their ordinals, as a joint run has them (an indexed document's
        # local index comes before every new record's: i < j holds)
        order = np.lexsort((sk_all[joined.j], sk_all[joined.i]))
        joined = Edges(*(getattr(joined, f)[order] for f in ("i", "j", "jaccard", "estimate", "score")))

        # each indexed document joined to its recorded survivor (not a pair of the outputs)
        a_cluster = {num: row[3] for num, row in zip(nums[by_num].tolist(), a_rows)}
        cluster_of = [a_cluster[num] if a_cluster[num] in local_of_num else None for num in nums.tolist()]  # by local
        link_a = np.array([local_of_num[c] for c in cluster_of if c is not None], dtype=np.int64)
        link_b = np.array([k for k, c in enumerate(cluster_of) if c is not None], dtype=np.int64)
        lengths_all = np.concatenate((np.array([r[2] for r in a_rows], dtype=np.int64), lengths))
        keyvals_all = None if keyvals is None else np.concatenate((np.full(n_a, np.nan), keyvals))
        # indexed survivors first, then the other indexed documents, then the new records
        priority = np.concatenate((np.array([0 if c is None else 1 for c in cluster_of], dtype=np.int64),
                                   np.full(n_b, 2, dtype=np.int64)))
        n_records = len(ids)
        exact_all = {}
        for o, first in exact_of.items():
            exact_all[o + n_a] = first + n_a if first >= 0 else int(ordinal_of[local_of_num[self.holder_nums[-1 - first]]])
        # the combined run's records named (source, id) by two columns (the indexed documents'
        # then the run's), and the new records' outcome as columns of them: no tuple per record
        all_ids = Ids()
        all_ids.extend(a_ids)
        all_ids = Ids(bytes(all_ids.data) + bytes(ids.data), np.concatenate((all_ids.ends, ids.ends + len(all_ids.data))))
        all_sources = Labels()
        # each distinct source coded once (in the order of first use), then a dict look-up a record
        code = {s: all_sources.code(s) for s in dict.fromkeys(itertools.chain(a_sources, sources))}
        all_sources.codes.extend(np.fromiter(map(code.__getitem__, itertools.chain(a_sources, sources)), np.uint8,
                                             n_a + n_records))
        names = SourcedNames(all_sources, all_ids)
        # the reasons as a column (the run's Labels), the indexed documents' empty
        reasons = Labels(reason.labels, np.concatenate((np.full(n_a, reason.code(""), dtype=np.uint8),
                                                        reason.codes.array())))

        links = None
        if urls is not None:
            links = urls.links(nums=nums, sk=sk, sk_all=sk_all, exact_all=exact_all, names=all_ids, shingles=shingles,
                               offsets=offsets, counts=counts, config=config, jobs=jobs)
            self.stats.update(urls.stats, urls_identity=links.stats)
            # the indexed documents first whatever the claims: the priority made here, not by
            # cluster_outcomes (which puts a claimed record first)
            priority = survivor_priority(priority, links)
            links = dataclasses.replace(links, priority=None)

        def member_similarity(survivor_local):
            members, sims = similarity_to_survivors(shingles, offsets, counts, survivor_local, config.measure,
                                                    jobs=jobs)
            by_ordinal = np.argsort(sk_all[members], kind="stable")  # (the chained members in input order)
            return members[by_ordinal], sims[by_ordinal]

        made = cluster_outcomes(names, reasons, sk_all,
                                (np.concatenate((joined.i, link_a)), np.concatenate((joined.j, link_b))), exact_all,
                                keep=config.keep, lengths=lengths_all, keyvals=keyvals_all, priority=priority,
                                member_similarity=member_similarity,
                                chain_below=config.threshold if config.verify else None, links=links)
        outcome, chained, repeated, survivor_local = made.outcome, made.chained, made.repeated, made.survivor_local
        kept = outcome.kept
        own = np.arange(n_a, n_a + n_records, dtype=np.int64)
        cluster, duplicate_of = outcome.cluster.ordinals[n_a:], outcome.duplicate_of.ordinals[n_a:]
        new_reason = Labels(outcome.reason.labels, outcome.reason.codes.array()[n_a:])
        # the clusters of two or more as the new records see them, by name: their members, and
        # the survivor (a record alone in its cluster is not named; records of one name count
        # together, as their lines share it)
        again = np.concatenate(repeated) if repeated else np.empty(0, dtype=np.int64)
        survivors, count = np.unique(cluster[cluster >= 0], return_counts=True)
        named = (count > 1) | (survivors < n_a) | np.isin(survivors, again)
        clusters = Counter()
        for name, c in zip(names.take(survivors[named]), count[named].tolist()):
            clusters[name] += c
        # an indexed survivor counts itself, unless a new record has its name (then they are
        # in one group of ordinals with that name)
        shared = {int(o) for g in repeated if g[-1] >= n_a for o in g.tolist()}
        indexed = survivors[named & (survivors < n_a)]
        for c in set(names.take(np.array([o for o in indexed.tolist() if o not in shared], dtype=np.int64))):
            clusters[c] += 1
        kinds = cluster_kinds(Outcome(ids=None, reason=new_reason, cluster=Names(cluster, names), duplicate_of=None,
                                      similarity=None, kept=None), clusters)
        mine = Outcome(ids=Names(own, all_ids), reason=new_reason, cluster=Names(cluster, all_ids),
                       duplicate_of=Names(duplicate_of, all_ids), similarity=Floats(outcome.similarity.values[n_a:]),
                       kept=kept[n_a:], source=Names(own, all_sources), duplicate_of_source=Names(duplicate_of, all_sources))
        write = None
        if self.update:
            write = self._update_write(records, survivor_local, n_a, nums.tolist(), cluster_of, by_num,
                                       set(urls.numbers.values()) if urls is not None else set())
        return mine, (joined, sk_all, all_ids), clusters, kinds, [i for _, i in chained], write

    def _update_write(self, records: RunRecords, survivor_local: np.ndarray, n_a: int, nums: list, cluster_of,
                      by_num: np.ndarray, indexed_urls: set):
        """The write of ``--update-index``: the new sketched records with their survivors, and
        the indexed clusters that a new record merged, joined under their new survivor (``nums``
        and ``cluster_of`` by local index, ``by_num`` the local indices in the order of numbers).
        With URL identity, an exact copy of an indexed document that is the first record of its
        URL is stored with that document's sketch, unless the index holds the URL already
        (``indexed_urls``): as a run over the indexed records and the new ones would store it."""
        index = self.index
        # (a copy whose id the run stores already is not stored again: that record stands for it)
        names = set(zip(records.sources, records.ids)) if any(c.holder < 0 for c in records.copies) else set()
        held = [(self.holder_nums[-1 - c.holder], c) for c in records.copies
                if c.holder < 0 and c.url not in indexed_urls and (c.source, c.id) not in names]
        records = dataclasses.replace(records, copies=[c for c in records.copies if c.holder >= 0])
        clusters = []
        for k in range(n_a, survivor_local.size):
            s = int(survivor_local[k])
            clusters.append(nums[s] if s < n_a else (None if s == k else -1 - (s - n_a)))
        merges = []
        for k in by_num.tolist():  # (in the order of their numbers, as they were made)
            s = int(survivor_local[k])
            if cluster_of[k] is None and s != k:  # an indexed survivor that now follows another
                merges.append((nums[s], nums[k]))

        def work(conn):
            if merges:
                # (the new survivor leads itself: with URL identity a claimed member of the cluster
                # may lead it, and it is then one of the documents the cluster's rows name)
                conn.executemany("UPDATE docs SET cluster = CASE WHEN num = ?1 THEN NULL ELSE ?1 END "
                                 "WHERE num = ?2 OR cluster = ?2", merges)
            stored = write_records(index, conn, records, clusters)
            return stored + (write_indexed_copies(index, conn, held) if held else 0)

        return work
