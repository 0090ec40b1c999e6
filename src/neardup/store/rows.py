"""The rows of a :class:`~neardup.store.sqlite.SeenIndex`: documents found by id, sketched
documents laid out as columns and written (row tables or posting runs), and rows removed.
:class:`Rows` is a mixin over the index's configuration and connections."""

from __future__ import annotations

import sqlite3
import time

import numpy as np

from ..errors import StoreError
from ..stages.candidates import band_keys
from .ids import RunKeyFilter, id_hashes, keys32, prefix_counts, prefix_length, row_keys, run_buckets
from .queries import docs_of
from ..config import ROWS_BELOW
from .schema import (DOC_BITS, MAX_DOCUMENTS, band_buckets, block_postings, fingerprint_buckets, signed,
                     unsigned, url_buckets)

__all__ = ["Rows"]


class Rows:
    """Writing and removing the rows of documents (see the module docstring)."""

    #: A look-up of at least this many ids asks the run key filter (ids.RunKeyFilter) before
    #: the id runs: a bulk write's batch, whose ids are mostly new.
    FILTERED_LOOKUP = 64

    def _rows_of_ids(self, conn, doc_ids: list, source: str, columns: str) -> list:
        """The ``docs d`` rows (``columns``, of ``d.``) of the stored documents with these ids
        of ``source``: through the ``UNIQUE (id, source)`` index of files of schema 3-5, or the
        ids' hashes (:mod:`.ids`): ``docs_id`` for small writes and the id runs for bulk writes,
        every row found compared on id and source."""
        import orjson

        if not doc_ids:
            return []
        if not self.config.id_keys:
            if len(doc_ids) == 1:
                return conn.execute(f"SELECT {columns} FROM docs d WHERE d.id = ? AND d.source = ?",
                                    (doc_ids[0], source)).fetchall()
            # (the ids as one JSON array, each a look-up of the index: a batch's IN list of
            # thousands of parameters was a statement to parse and a temporary index)
            return conn.execute(f"SELECT {columns} FROM json_each(?) j JOIN docs d ON d.id = j.value AND "
                                "d.source = ?", (orjson.dumps(doc_ids).decode(), source)).fetchall()
        hashes = id_hashes(source, doc_ids)
        keys = row_keys(hashes)
        if len(doc_ids) == 1:
            found = conn.execute(f"SELECT {columns} FROM docs d WHERE d.id_key = ? AND {self._id_sql} = ? "
                                 "AND d.source = ?",
                                 (keys[0], doc_ids[0], source)).fetchall()
        elif conn.execute("SELECT 1 FROM docs WHERE id_key IS NOT NULL LIMIT 1").fetchone() is None:
            # (no small write's id in docs_id, as in an index filled by bulk writes: the batch's
            # join with it, a JSON array of thousands of ids parsed and each looked up, was about
            # 5 % of index add's writer at 10M documents)
            found = []
        else:
            found = conn.execute(f"SELECT {columns} FROM json_each(?) j JOIN docs d ON d.id_key = {_json_item(1)} "
                                 f"AND {self._id_sql} = {_json_item(0)} AND d.source = ?",
                                 (orjson.dumps(list(zip(doc_ids, keys))).decode(), source)).fetchall()
        if not self.config.posting_runs:
            return found
        from . import runs

        if not runs.has_runs(conn, runs.KIND_IDS):
            return found
        pick = np.arange(len(doc_ids))
        if len(doc_ids) >= self.FILTERED_LOOKUP:
            if self._run_key_filter is None:
                self._run_key_filter = RunKeyFilter()
            self._run_key_filter.refresh(conn)
            pick = np.flatnonzero(self._run_key_filter.may_hold(keys32(hashes)))
        if pick.size:
            buckets = np.unique(run_buckets(hashes[pick])).tolist()
            wanted = {doc_ids[k] for k in pick.tolist()}
            # (a run's document has no id_key: one found through docs_id is not counted twice)
            found += [row[1:-3] for row in docs_of(conn, f"{columns}, {self._id_sql}, d.source, d.id_key",
                                                   np.unique(runs.lookup_every(conn, runs.KIND_IDS, buckets)))
                      if row[-2] == source and row[-1] is None and row[-3] in wanted]
        return found


    def _insert(self, conn, items: list[tuple]) -> None:
        """Insert documents whose ids are not in the index (the caller removed them)."""
        if items:
            self._write_columns(conn, self._columns_of(items))

    def _columns_of(self, items: list[tuple]) -> "_Columns":
        """:meth:`_columns` of ``(id, sketch, meta, url hash, canonical url, page fingerprint)``
        items."""
        sks = [item[1] for item in items]
        return self._columns([item[0] for item in items], [sk.fingerprint for sk in sks],
                             [sk.length for sk in sks], [sk.n_shingles for sk in sks],
                             # (the band keys come along: without stored signatures they are not needed)
                             np.stack([sk.signature for sk in sks]) if self.config.signatures else None,
                             [sk.sample for sk in sks],
                             [sk.simhash for sk in sks], [sk.shingles for sk in sks], [item[2] for item in items],
                             band_keys=np.stack([sk.bands for sk in sks]), url_hashes=[item[3] for item in items],
                             url_texts=[item[4] for item in items], page_fingerprints=[item[5] for item in items])

    def _insert_columns(self, conn, ids, fingerprints, lengths, n_shingles, signatures: np.ndarray, samples,
                        simhashes, shingles, metas, *, band_keys: np.ndarray, source: str = "",
                        clusters=None, url_hashes: list | None = None, url_texts: list | None = None,
                        page_fingerprints: list | None = None) -> int:
        """Insert documents (not in the index: the caller removed them) given column by column;
        returns the number of the first one (the others follow). ``clusters`` holds, for each
        document, the number of its cluster's survivor (None: itself); ``url_hashes`` and
        ``url_texts`` the canonical URLs' hashes and texts (None: a document without one), and
        ``page_fingerprints`` the whole pages' (signed; None: none)."""
        if not len(ids):
            return 0
        return self._write_columns(conn, self._columns(ids, fingerprints, lengths, n_shingles, signatures, samples,
                                                       simhashes, shingles, metas, band_keys=band_keys, source=source,
                                                       packable=clusters is None, url_hashes=url_hashes,
                                                       url_texts=url_texts, page_fingerprints=page_fingerprints),
                                   clusters=clusters)

    def _columns(self, ids, fingerprints, lengths, n_shingles, signatures: np.ndarray, samples, simhashes, shingles,
                 metas, *, band_keys: np.ndarray, source: str = "", packable: bool = True,
                 url_hashes: list | None = None, url_texts: list | None = None,
                 page_fingerprints: list | None = None) -> "_Columns":
        """Everything :meth:`_write_columns` inserts that does not depend on the numbers the
        documents get: the ``docs`` rows by their offset in the batch, the postings as
        ``bucket << DOC_BITS | offset``, and for a bulk write its runs' blocks, coded (a run
        numbers documents from its first, see :func:`runs.encode_run`). ``neardup index add``
        makes these on its sketching thread, beside the write of the batch before.

        A bulk write without containment samples or shingles (``packable``: no cluster column
        either) is packed: its rows as one JSON array, its signatures as one blob; the per-row
        tuples that ``executemany`` binds are made only for the other writes (a tuple of 14 values
        and a bytes object per document held the GIL for about 7 % of a 1M-document ``index add``,
        sampled with py-spy: time the reading and sketching threads need)."""
        n = len(ids)
        cfg = self.config
        sig_bytes = None
        if cfg.signatures:
            values = np.asarray(signatures, dtype=np.uint64)
            sig_bytes = values.astype({2: "<u2", 4: "<u4", 8: "<u8"}[cfg.signature_width])
        contained = cfg.containment
        # the columns as Python lists first (one conversion per column, not per value)
        counts = [int(c) for c in n_shingles]
        fp_col = [None if fp is None else signed(int(fp)) for fp in fingerprints]
        # (profiles default and full: a small write's postings go to the row tables, see ROWS_BELOW)
        as_run = cfg.posting_runs and n >= cfg.rows_below
        # a bulk write's fingerprints go to a run (found through it, not docs_fingerprint)
        run_fp_col = None
        if as_run and cfg.fingerprint_runs:
            run_fp_col, fp_col = fp_col, [None] * n
        sh_col = [None if sh is None else signed(int(sh)) for sh in simhashes]
        length_col = [int(x) for x in lengths]
        sample_sizes = [int(x.size) for x in samples] if contained else None
        offsets = np.arange(n, dtype=np.int64)
        banded = np.asarray(n_shingles, dtype=np.int64) > 0
        bands = simhash = None
        if banded.any():
            bands = ((band_buckets(band_keys[banded]) << DOC_BITS) | offsets[banded][:, None]).ravel()
        hashed = [k for k, h in enumerate(simhashes) if h is not None]
        if hashed:
            values = np.array([int(simhashes[k]) for k in hashed], dtype=np.uint64)
            simhash = block_postings(values, offsets[hashed], self._block_widths).ravel()
        sample_rows = None
        if contained and sum(sample_sizes):
            values = np.concatenate(samples).astype(np.uint64, copy=False).view(np.int64)
            sample_rows = (values, np.repeat(offsets, sample_sizes))
        encoded = None
        if as_run:
            from . import runs

            none = np.empty(0, dtype=np.int64)
            encoded = (runs.encode_run(none if bands is None else bands, n),
                       runs.encode_run(none if simhash is None else simhash, n))
            if run_fp_col is not None:
                has = [k for k, fp in enumerate(fingerprints) if fp is not None]
                fp_postings = none
                if has:
                    values = np.array([int(fingerprints[k]) for k in has], dtype=np.uint64)
                    fp_postings = (fingerprint_buckets(values) << DOC_BITS) | offsets[has]
                encoded += (runs.encode_run(fp_postings, n),)
        # ids (schema 6): a bulk write's in an id run, a small write's in docs.id_key (ids.py)
        hashes = id_hashes(source, ids) if cfg.id_keys else None
        key_cols = [row_keys(hashes)] if hashes is not None and not as_run else []
        id_run = None
        if as_run and hashes is not None:
            id_run = runs.encode_run((run_buckets(hashes) << DOC_BITS) | offsets, n)
        # canonical URLs (schema 7): the hash in docs.url_hash, found through docs_url for a small
        # write (its rows have an id_key) and through a URL run for a bulk write; the text in
        # docs.url where it is not the id, and the whole page's fingerprint where one was given
        # (none in a file whose fingerprints are of an earlier definition: the two never mix)
        url_cols = []
        url_run = None
        if cfg.urls is not None:
            url_col = url_hashes if url_hashes is not None else [None] * n
            texts = url_texts if url_texts is not None else [None] * n
            url_cols = [url_col, [None if t == doc_id else t for t, doc_id in zip(texts, ids)],
                        page_fingerprints if page_fingerprints is not None and cfg.current_page_fingerprints
                        else [None] * n]
            if as_run:
                has = [k for k, h in enumerate(url_col) if h is not None]
                if has:
                    values = np.array([url_col[k] for k in has], dtype=np.int64)
                    url_run = runs.encode_run((url_buckets(values) << DOC_BITS) | offsets[has], n)
        # id prefixes (ids.py): how long each id's storable prefix is; the write decides which
        # prefixes are stored and the insert finds their numbers (_write_columns)
        plens = [prefix_length(doc_id) for doc_id in ids] if cfg.id_prefixes else None
        prefixes = prefix_counts(ids, plens) if plens is not None else None
        prefix_cols = [plens] if plens is not None else []
        packed = rows = None
        if packable and n >= ROWS_BELOW and not contained and all(x is None for x in shingles):
            # a bulk write's rows as one JSON array (of tuples: orjson writes them as arrays) and
            # its signatures as one blob, inserted by one statement (json_each)
            import orjson

            width = self._m * cfg.signature_width if sig_bytes is not None else 0
            packed = (orjson.dumps(list(zip(ids, fp_col, length_col, counts, sh_col, metas,
                                            *([run_fp_col or [None] * n] if cfg.fingerprint_runs else []),
                                            *url_cols, *key_cols, *prefix_cols))).decode(),
                      np.ascontiguousarray(sig_bytes).tobytes() if width else b"", width, source)
        else:
            # a text without shingles has no signature (its values are all the "empty" marker,
            # 2**64 - 1, which 4 bytes cannot hold) and no band postings
            sig_col = ([None] * n if sig_bytes is None else
                       [row.tobytes() if c else None for row, c in zip(sig_bytes, counts)])
            sample_col = ([x.astype("<u8", copy=False).tobytes() for x in samples] if contained else [None] * n)
            shingle_col = [None if x is None else x.astype("<u8", copy=False).tobytes() for x in shingles]
            rows = list(zip(range(n), [source] * n, ids, fp_col, length_col, counts,
                            sample_sizes or [0] * n, sh_col, sig_col, sample_col, shingle_col, metas,
                            *([run_fp_col or [None] * n] if cfg.fingerprint_runs else []), *url_cols,
                            *key_cols, *prefix_cols))
        return _Columns(n, rows, bands, simhash, sample_rows, encoded, packed, id_run, bool(key_cols), prefixes,
                        url_run, bool(url_cols))

    def _write_columns(self, conn, cols: "_Columns", clusters=None) -> int:
        """Insert what :meth:`_columns` made (documents not in the index: the caller removed
        them), numbered from the next free number; returns the first."""
        n = cols.n
        first = self._next_number(conn)
        if first + n - 1 > MAX_DOCUMENTS:
            raise StoreError(f"index {self.path} is full: its band postings number documents in {DOC_BITS} bits "
                             f"({MAX_DOCUMENTS:,} documents); start another index file")
        # the insert joins id_prefixes only where some prefix of the batch is stored (ids
        # without one, as the generator's, and ids whose prefixes no other id shares cost no
        # look-up a row)
        prefixed = False
        if cols.prefixes:
            import orjson

            chosen = self._prefix_hints.choose(cols.prefixes)
            if chosen:
                conn.execute("INSERT OR IGNORE INTO id_prefixes (text) SELECT value FROM json_each(?)",
                             (orjson.dumps(chosen).decode(),))
            prefixed = bool(chosen) or bool(conn.execute(
                "SELECT EXISTS (SELECT 1 FROM json_each(?) j JOIN id_prefixes p ON p.text = j.value)",
                (orjson.dumps(list(cols.prefixes)).decode(),)).fetchone()[0])
        rows = cols.rows
        if rows is not None and cols.prefixes is not None and not prefixed:
            rows = [row[:-1] for row in rows]  # (their prefix lengths: the insert does not join)
        if clusters is not None:
            rows = [(*row, None if c == first + k else c) for k, (row, c) in enumerate(zip(rows, clusters))]
        # (the number and the time as literals: the rows were made before the numbers were known)
        # (whole seconds: SQLite keeps a REAL without a fraction as an integer, 4 bytes instead of
        # 8, which kept 13 rows of profile default to a page rather than 12)
        now = float(int(time.time()))
        if cols.packed is not None:
            assert clusters is None, "a packed write has no cluster column (see _columns' packable)"
            text, blob, width, source = cols.packed
            item = _json_item
            signature = (f"CASE WHEN {item(3)} > 0 THEN substr(?2, j.key * {int(width)} + 1, "
                         f"{int(width)}) END" if width else "NULL")
            extra = 6
            run_fp = run_fp_value = key = key_value = ""
            if self.config.fingerprint_runs:
                run_fp, run_fp_value, extra = ", run_fingerprint", f", {item(extra)}", extra + 1
            url = url_value = ""
            if cols.urls:
                url = ", url_hash, url, page_fingerprint"
                url_value = f", {item(extra)}, {item(extra + 1)}, {item(extra + 2)}"
                extra += 3
            if cols.keyed:
                key, key_value, extra = ", id_key", f", {item(extra)}", extra + 1
            id_value, prefix, prefix_value, join = item(0), "", "", ""
            if prefixed:
                id_value, prefix_value, join = _prefixed_id(item(0), item(extra))
                prefix = ", id_prefix"
            conn.execute("INSERT INTO docs (num, source, id, fingerprint, length, n_shingles, n_sample, simhash, "
                         f"signature, meta, added_at{run_fp}{url}{key}{prefix}) "
                         f"SELECT {int(first)} + j.key, ?1, {id_value}, {item(1)}, {item(2)}, {item(3)}, "
                         f"0, {item(4)}, {signature}, {item(5)}, {now!r}"
                         f"{run_fp_value}{url_value}{key_value}{prefix_value} FROM json_each(?3) j{join}",
                         (source, blob, text))
        else:
            # the row's values by position (?1 its offset, ?3 its id, ...: an id with a prefix is
            # read twice, and the prefix's number is joined in)
            names = ["num", "source", "id", "fingerprint", "length", "n_shingles", "n_sample", "simhash",
                     "signature", "sample", "shingles", "meta"]
            names += ["run_fingerprint"] * self.config.fingerprint_runs
            names += ["url_hash", "url", "page_fingerprint"] * cols.urls + ["id_key"] * cols.keyed
            values = [f"?{k + 1}" for k in range(len(names))]
            values[0] = f"?1 + {int(first)}"
            join = ""
            at = len(names) + 1
            if prefixed:
                values[2], prefix_value, join = _prefixed_id("?3", f"?{at}")
                names.append("id_prefix")
                values.append(prefix_value[2:])
                at += 1
            names += ["added_at", "cluster"]
            values += [repr(now), f"?{at}" if clusters is not None else "NULL"]
            conn.executemany(f"INSERT INTO docs ({', '.join(names)}) SELECT {', '.join(values)} "
                             f"FROM (SELECT 1){join}", rows)
        from . import runs  # (imported by the writes and the queries of runs: a read of rows does not)

        bulk = n >= ROWS_BELOW
        for kind, table, postings, encoded in ((runs.KIND_BANDS, "bands", cols.bands, 0),
                                               (runs.KIND_SIMHASH, "simhash_blocks", cols.simhash, 1)):
            if cols.encoded is not None:
                runs.add_encoded_run(conn, kind, cols.encoded[encoded], first, first + n - 1, bulk=bulk)
            elif postings is not None:
                _insert_postings(conn, table, np.sort(postings) + first)
        if cols.encoded is not None and len(cols.encoded) > 2:
            runs.add_encoded_run(conn, runs.KIND_FINGERPRINTS, cols.encoded[2], first, first + n - 1, bulk=bulk)
        if cols.id_run is not None:
            runs.add_encoded_run(conn, runs.KIND_IDS, cols.id_run, first, first + n - 1, bulk=bulk)
        if cols.url_run is not None:
            runs.add_encoded_run(conn, runs.KIND_URLS, cols.url_run, first, first + n - 1, bulk=bulk)
        if cols.sample_rows is not None:
            values, offsets = cols.sample_rows
            conn.executemany("INSERT INTO samples (value, doc) VALUES (?, ?)", _sorted_rows(values, offsets + first))
        self._count(conn, n)
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('last_num', ?)", (str(first + n - 1),))
        return first

    def _next_number(self, conn) -> int:
        """The number of the next document: one past every number ever given (the largest is in
        ``meta``), so that a stale posting never points at a newer document."""
        row = conn.execute("SELECT value FROM meta WHERE key = 'last_num'").fetchone()
        last = max(int(row[0]) if row else 0, conn.execute("SELECT coalesce(max(num), 0) FROM docs").fetchone()[0])
        return last + 1

    def _signature_matrix(self, blobs: list, *, narrow: bool = False) -> np.ndarray:
        """The (len(blobs), num_perm) uint64 signatures of stored signature blobs (``narrow``:
        uint32 where the index stores 4-byte values)."""
        width = self.config.signature_width
        values = np.frombuffer(b"".join(blobs), dtype={2: "<u2", 4: "<u4", 8: "<u8"}[width])
        dtype = np.uint32 if narrow and width == 4 else np.uint64
        return values.astype(dtype, copy=False).reshape(len(blobs), self._m)

    def _count(self, conn, delta: int) -> None:
        conn.execute("UPDATE meta SET value = CAST(CAST(value AS INTEGER) + ? AS TEXT) WHERE key = 'documents'",
                     (delta,))

    def _delete(self, conn, doc_ids, source: str = "") -> set:
        """Remove the documents with these ids (of ``source``); returns the ids that were found."""
        found = self._rows_of_ids(conn, list(doc_ids), source, self._removed_columns)
        return self._remove_rows(conn, found)

    def _remove_rows(self, conn, found: list) -> set:
        """Remove the documents of these ``docs`` rows (``_removed_columns``), their
        postings where rows hold them, and their count; returns their ids."""
        if not found:
            return set()
        banded = [r for r in found if r[2]]
        if banded and self.config.exact_signatures:
            # (without whole signatures, profiles lean and default: the postings of a removed
            # document stay, pointing at a number that is never given again; queries find no
            # document behind them)
            sigs = self._signature_matrix([r[3] for r in banded])
            nums = np.array([r[0] for r in banded], dtype=np.int64)
            postings = (band_buckets(band_keys(sigs, self._bands, self._rows)) << DOC_BITS) | nums[:, None]
            conn.executemany("DELETE FROM bands WHERE posting = ?", ((p,) for p in postings.ravel().tolist()))
        if banded and self.config.containment:
            conn.executemany("DELETE FROM samples WHERE value = ? AND doc = ?",
                             [(v, r[0]) for r in banded for v in np.frombuffer(r[4], dtype="<i8").tolist()])
        if self.config.posting_runs:
            from . import runs

            runs.count_stale(conn, len(found))
        if not self.config.posting_runs or self.config.rows_below:
            # the row tables' simhash postings (runs are immutable: there the postings of a
            # removed document stay, as the band postings of profiles lean and default do, and
            # queries drop them: runs.lookup)
            hashed = [r for r in found if r[5] is not None]
            if hashed:
                postings = block_postings(np.array([unsigned(r[5]) for r in hashed], dtype=np.uint64),
                                          np.array([r[0] for r in hashed], dtype=np.int64), self._block_widths)
                conn.executemany("DELETE FROM simhash_blocks WHERE posting = ?", ((p,) for p in postings.ravel().tolist()))
        conn.executemany("DELETE FROM docs WHERE num = ?", [(r[0],) for r in found])
        self._count(conn, -len(found))
        return {r[1] for r in found}


class _Columns:
    """A batch's rows and postings before its documents are numbered (:meth:`SeenIndex._columns`)."""

    __slots__ = ("n", "rows", "bands", "simhash", "sample_rows", "encoded", "packed", "id_run", "keyed", "prefixes",
                 "url_run", "urls")

    def __init__(self, n, rows, bands, simhash, sample_rows, encoded, packed=None, id_run=None, keyed=False,
                 prefixes=None, url_run=None, urls=False):
        self.n, self.rows, self.bands, self.simhash = n, rows, bands, simhash
        self.sample_rows, self.encoded, self.packed = sample_rows, encoded, packed
        #: the id run's blocks (a bulk write of schema 6), and whether the rows carry id_key
        self.id_run, self.keyed = id_run, keyed
        #: the batch's id prefixes and how many of its ids have each (None: the file stores none)
        self.prefixes = prefixes
        #: the URL run's blocks (a bulk write of schema 7), and whether the rows carry url_hash
        self.url_run, self.urls = url_run, urls


def _prefixed_id(whole: str, length: str) -> tuple[str, str, str]:
    """SQL of an insert into ``docs`` of an id (``whole``) whose prefix of ``length`` characters
    may be stored in ``id_prefixes``: the ``id`` column's value (the rest where the prefix is
    stored, else the whole id), the ``, id_prefix`` value, and the join that finds the prefix
    (by the table's unique index; a NULL length finds none)."""
    return (f"CASE WHEN p.num IS NULL THEN {whole} ELSE substr({whole}, {length} + 1) END", ", p.num",
            f" LEFT JOIN id_prefixes p ON p.text = substr({whole}, 1, {length})")


#: SQLite 3.38 added ``->>``; with an integer on its right it reads an array element without
#: parsing a path, and a bulk write's ``docs`` insert took 40 % less time with it than with
#: ``json_extract(j.value, '$[k]')`` (3.40.1, 200,000 rows). Older libraries (Ubuntu 22.04's
#: 3.37) get the function, which gives the same values.
_ARROW = sqlite3.sqlite_version_info >= (3, 38, 0)


def _json_item(k: int, value: str = "j.value") -> str:
    """SQL for element ``k`` of the JSON array ``value`` (a row of :meth:`SeenIndex._columns`'s
    packed rows), as an SQL value: text, integer or NULL."""
    return f"{value}->>{int(k)}" if _ARROW else f"json_extract({value}, '$[{int(k)}]')"


def _insert_postings(conn, table: str, postings: np.ndarray) -> None:
    """Insert sorted int64 postings into a one-column table in one statement: the list travels
    as one JSON array that SQLite reads itself (json_each), instead of a Python tuple bound per
    row (half the time of ``executemany`` for a batch's hundred thousand postings)."""
    import orjson

    text = orjson.dumps(np.ascontiguousarray(postings, dtype=np.int64), option=orjson.OPT_SERIALIZE_NUMPY).decode()
    conn.execute(f"INSERT OR IGNORE INTO {table} (posting) SELECT value FROM json_each(?)", (text,))


def _sorted_rows(*columns: np.ndarray) -> list:
    """Rows of int64 columns in key order: consecutive inserts then land on the same B-tree pages."""
    table = np.column_stack(columns)
    order = np.lexsort(columns[::-1])
    return table[order].tolist()



#: What ``check_and_add`` counts as a copy already stored.
