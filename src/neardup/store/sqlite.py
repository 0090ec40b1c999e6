"""SeenIndex: a crawler's persistent "have I seen this page?" index on one SQLite file.

For every document the index keeps its content fingerprint (exact copies), its band postings
and MinHash signature (near-copies), its MOD_m sample (containment, Broder 1997) and its 64-bit
simhash (Hamming neighbours), all computed with the library's own functions, so the index answers
what :func:`neardup.fingerprint`, :class:`neardup.MinHash`, :class:`neardup.ModM` and
:class:`neardup.SimHash` would answer for the same two texts. What is stored is a profile
(:data:`PROFILES`): ``default`` keeps the signatures' low 16 bits and no samples (so no
containment answers), ``lean`` no signatures (near answers estimated from the shared bands),
``full`` everything.

Answer shape (the same from the library, ``neardup index query`` and the HTTP service)::

    {"id": <the id given with the query, or null>,
     "exact":        ["id", ...],                                  same content fingerprint
     "near":         [{"id", "jaccard", "exact_jaccard"?}, ...],   estimated (and exact) resemblance
     "contains":     [{"id", "containment", "exact_containment"?}, ...],
     "contained_in": [{"id", "containment", "exact_containment"?}, ...],
     "simhash":      [{"id", "distance"}, ...]}

- ``exact``: documents whose normalized text has the same 64-bit fingerprint, ordered by id.
- ``near``: LSH candidates (at least one band key in common) whose estimated Jaccard (the
  fraction of agreeing MinHash values) is at least ``threshold``. With ``store_shingles`` every
  candidate is verified on the stored shingle ids, ``exact_jaccard`` is reported and the filter
  applies to it instead of the estimate. Ordered by the filtered value, descending.
- ``contains``: stored documents D that the queried text Q contains: ``containment`` estimates
  c(D, Q) = |D ∩ Q| / |D| as |MOD_m(D) ∩ MOD_m(Q)| / |MOD_m(D)|.
- ``contained_in``: stored documents D that contain Q: ``containment`` estimates c(Q, D).
  Both are filtered at ``containment_threshold`` (on the exact value with ``store_shingles``);
  candidates are the documents sharing a sample value with Q, so a text whose MOD_m sample is
  empty (fewer than about ``mod_m`` shingles) has no containment answers.
- ``simhash``: documents within ``simhash_max_distance`` bits, ordered by distance ascending.

Every list is complete on its own: an exact copy also shows in ``near`` with Jaccard 1.0, in
both containment lists and in ``simhash`` at distance 0. Ties are ordered by id, and each list
is cut at ``limit`` entries (100 by default). The query's own id is not excluded: a document that
is stored reports itself. A text without tokens has no content (its fingerprint is None, as
:func:`neardup.fingerprint` says): it can be stored under an id, but it matches nothing and
nothing matches it, so ``check_and_add`` always adds it.

Ids are unique: adding an id that is present replaces its entry (a re-crawled URL). ``add``
always stores; ``check_and_add`` stores only when no document has the same fingerprint, and
decides that under SQLite's write lock, so concurrent callers (threads or processes) never both
see the same content as new.

Durability: WAL journal with ``synchronous=NORMAL`` by default. A transaction is in the WAL file
(the operating system's page cache) when ``COMMIT`` returns, so every acknowledged add survives
the death of the process (SIGKILL, OOM kill, crash). A power cut or kernel panic can lose the
last transactions (never corrupt the file); ``synchronous="full"`` fsyncs every commit to survive
those too, at the cost of one fsync per transaction.

Uint64 values (fingerprints, band keys, samples, simhashes) are stored as signed 64-bit SQLite
integers, two's complement (``x - 2**64`` when ``x >= 2**63``); blobs are little-endian uint64.
The file format is documented in ``docs/store.md``. The class is assembled from three modules of
one concern each: :mod:`.schema` (the file's format and configuration), :mod:`.writer` (group
commit, locks, checkpoints) and :mod:`.queries` (the answers); this module holds opening,
sketching and the writes themselves.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time

import numpy as np

from .._validate import check_int
from ..config import DedupConfig
from ..errors import ConfigError, IncompatibleSketchError, InputError, StoreError
from ..io.documents import Document, EncodedDocuments
from ..params import TOKENIZER_VERSION, MinHashParams, ShingleParams
from ..stages.candidates import band_keys
from .ids import (ID_SQL, PrefixHints, RunKeyFilter, id_hashes, keys32, prefix_counts, prefix_length, row_keys,
                  run_buckets)
from .queries import Queries, as_record as _as_record, check_limit as _check_limit, docs_of
from .schema import (APPLICATION_ID, DEFAULT_LIMIT, DEFAULTS, DOC_BITS, LAYOUT_FIELDS, MAX_DOCUMENTS, MAX_VARS,
                     PROFILES, READABLE_VERSIONS, ROWS_BELOW, SCHEMA, SCHEMA_VERSION, IndexConfig, Sketch, band_bucket, band_buckets, band_posting,
                     block_bucket, block_postings, config_fingerprint, differences, fingerprint_buckets, flatten, signed,
                     simhash_blocks, unsigned)
from .writer import GroupCommit, Pending, Prepared

__all__ = ["SeenIndex", "IndexConfig", "SCHEMA_VERSION", "APPLICATION_ID", "DEFAULTS", "PROFILES", "POLICIES",
           "DOC_BITS", "MAX_DOCUMENTS", "band_bucket", "band_posting", "block_bucket", "simhash_blocks"]


class SeenIndex(GroupCommit, Queries):
    """A persistent "seen before?" index: exact copies, near-copies, containment and simhash.

    A configuration value (defaults in :data:`DEFAULTS`) left at None is taken from the file when
    it exists, else from the defaults; a value given for an existing file must equal the recorded
    one, or :class:`IncompatibleSketchError` names every difference.

    Args:
        path: the SQLite file; created (with its WAL side files) when missing and ``create``.
        shingle: the shingles (default: words, 5 at a time).
        minhash: the permutations (default: 128 ``mulshift32`` with seed 1).
        threshold: the Jaccard threshold of near answers (0.8), with the banding ``neardup dedup``
            chooses for it (18 x 7) unless ``bands`` and ``rows`` are given.
        containment_threshold: the threshold of containment answers (0.8), on MOD_m samples.
        mod_m: the modulus of the MOD_m samples (8).
        simhash_max_distance: simhash neighbours within this many bits (3).
        store_shingles: store each document's shingle ids (default: no).
        profile: what is stored (:data:`PROFILES`): ``"default"`` (signatures, band postings,
            simhash blocks, fingerprints), ``"lean"`` (no signatures: near answers estimated
            from the number of shared bands) or ``"full"`` (also MOD_m samples for containment
            answers); ``signatures`` and ``containment`` set one part alone.
        posting_runs: how a new file lays its postings out (an existing file keeps its own): in
            posting runs (default); ``posting_runs=False``: a row per posting (before schema 4).
        rows_below: writes of fewer documents than this go to the row tables, not to a posting
            run (:data:`~neardup.store.schema.ROWS_BELOW` in profiles default and full, 0 in lean).
        create: create a missing file (else :class:`StoreError`).
        synchronous: ``"normal"`` (durable when the process dies) or ``"full"`` (also when the
            machine does; one fsync per commit).
        jobs: threads used to sketch a batch (the compiled kernel releases the GIL).
        timeout: seconds to wait for another writer's lock before :class:`StoreError`.
        cache_mb: SQLite page cache per connection (default 4 MB). Reads go through ``mmap`` (the
            first 2 GB of the file) and the operating system's page cache, so a larger cache only
            helps large batches of adds (``neardup index add`` uses 1024 MB); it costs every small
            write transaction (a ``check_and_add``) time in proportion to its size: with SQLite
            3.40, ending a write transaction scans the whole cache (measured: 64 MB halves the
            rate of single-document ``check_and_add`` calls).
        mmap: read the file through ``mmap`` (default). The mapped pages a process reads count in
            its resident memory, up to the whole file (2 GB at most); ``neardup index add`` turns
            it off, so that a bulk load's memory stays bounded by its batch and ``cache_mb``
            whatever the size of the index.
        resident: keep the whole file mapped in this process, from a background thread
            (:class:`neardup.store.resident.ResidentFile`), so that queries do not wait for disk
            reads after the operating system evicted pages that were not read for a while
            (proactive reclaim, a busy machine's LRU). Costs the file's size in page cache
            (shared with other processes) and about 2 MB of page tables per GB. ``neardup
            serve`` turns it on; :meth:`keep_resident` does it later.

    Safe to share between threads: each thread gets its own SQLite connection, and writers in
    one process queue on a lock. Other processes may open the same file at the same time.

    >>> import tempfile, os
    >>> with SeenIndex(os.path.join(tempfile.mkdtemp(), "seen.db")) as index:
    ...     index.check_and_add("a", "the crawler fetches each page and follows its links")["added"]
    ...     index.check_and_add("b", "The crawler fetches each page, and follows its links!")["exact"]
    True
    ['a']
    """

    #: Most documents taken from one LSH band bucket, one simhash block bucket or one MOD_m
    #: sample value per query (the oldest ones). Honest near-copies rarely fill a bucket past a
    #: handful; only many stored copies of one text do, and then the first ones stand for the rest.
    CANDIDATES_PER_BUCKET = 1000

    def __init__(self, path, *, shingle: ShingleParams | None = None, minhash: MinHashParams | None = None,
                 threshold: float | None = None, containment_threshold: float | None = None,
                 mod_m: int | None = None, simhash_max_distance: int | None = None,
                 store_shingles: bool | None = None, bands: int | None = None, rows: int | None = None,
                 profile: str | None = None, signatures: bool | None = None, containment: bool | None = None,
                 posting_runs: bool | None = None, rows_below: int | None = None, create: bool = True, synchronous: str = "normal",
                 jobs: int = 1, timeout: float = 30.0, cache_mb: int = 4, resident: bool = False,
                 mmap: bool = True):
        if synchronous not in ("normal", "full"):
            raise ConfigError(f"The 'synchronous' parameter of SeenIndex must be one of 'normal', 'full'. "
                              f"Got {synchronous!r} instead.")
        check_int("jobs", jobs, 1, 1024, owner="SeenIndex")
        self.path = os.fspath(path)
        self.synchronous = synchronous
        self.jobs = jobs
        self.timeout = float(timeout)
        self.cache_mb = int(cache_mb)
        self.mmap = bool(mmap)
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._checkpoint_lock = threading.Lock()
        self._queue_lock = threading.Lock()
        self._queue: list[Pending] = []
        self._flock_fd: int | None = None
        self._closed = False
        self._checkpointer: threading.Thread | None = None
        self._write_conn: sqlite3.Connection | None = None
        self._stop = threading.Event()
        self._written = False
        #: ids.RunKeyFilter of the id runs, made by the first bulk write that needs it; dropped
        #: after a write transaction rolls back (writer.py)
        self._run_key_filter = None
        #: which id prefixes to store (ids.PrefixHints; files with IndexConfig.id_prefixes)
        self._prefix_hints = PrefixHints()
        #: how many times the background checkpoint cut the write-ahead log back (``stats()``)
        self.truncations = 0
        self._resident = None
        given = {k: v for k, v in dict(shingle=shingle, minhash=minhash, threshold=threshold,
                                        containment_threshold=containment_threshold, mod_m=mod_m,
                                        simhash_max_distance=simhash_max_distance,
                                        store_shingles=store_shingles, bands=bands, rows=rows,
                                        signatures=signatures, containment=containment,
                                        posting_runs=posting_runs, rows_below=rows_below).items()
                 if v is not None}
        if profile is not None:
            if profile not in PROFILES:
                raise ConfigError(f"The 'profile' parameter of SeenIndex must be one of {', '.join(PROFILES)}. "
                                  f"Got {profile!r} instead.")
            given = {**PROFILES[profile], **given}
        if os.path.isdir(self.path):
            raise StoreError(f"{self.path} is a folder; give the path of an index file")
        if not create and not os.path.exists(self.path):
            raise StoreError(f"no index at {self.path}: create one with 'neardup index add --db {self.path} INPUT...'")
        if create:
            self._create_private_file()
        try:
            self.config = self._open(given, create)
        except BaseException:
            self.close()
            raise
        self._prepare()
        try:
            import fcntl  # noqa: F401 - POSIX only
        except ImportError:
            fcntl = None
        if fcntl is not None:
            # 0600 like the database; O_NOFOLLOW: a symbolic link planted at <path>-lock would
            # otherwise make this process create or lock whatever file it points to.
            flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
            try:
                self._flock_fd = os.open(self.path + "-lock", flags, 0o600)
            except OSError:
                if os.path.islink(self.path + "-lock"):
                    self.close()
                    raise StoreError(f"{self.path}-lock is a symbolic link; the index's lock file must be a "
                                     f"regular file (remove the link)") from None
                # Another reason (a read-only folder): SQLite's own locking does the job alone.
                self._flock_fd = None
        if resident:
            self.keep_resident()

    def _create_private_file(self) -> None:
        """Create a missing index file with mode 0600 (not the umask's usual 0644): it holds every
        document's id and metadata. SQLite gives the -wal and -shm files the database's mode."""
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        except FileExistsError:
            return
        except OSError:
            return  # sqlite3.connect reports the problem (a missing folder, no permission) in its words
        os.close(fd)

    @classmethod
    def for_dedup(cls, path, config: DedupConfig, **options) -> "SeenIndex":
        """The index of ``path`` for the documents of a dedup run made with ``config``: the same
        shingles, permutations, threshold and banding, so that both find the same candidate pairs.

        A file made with other parameters is refused (:class:`IncompatibleSketchError` naming
        the index's value and the dedup run's of each that differs). ``options`` are the other
        arguments of :class:`SeenIndex`.
        """
        if config.method != "minhash" or config.measure != "jaccard":
            raise ConfigError(f"an index answers MinHash resemblance: a dedup run with method={config.method!r} and "
                              f"measure={config.measure!r} cannot seed one (use method='minhash', measure='jaccard')")
        band = config.banding()
        wanted = dict(shingle=config.shingle, minhash=config.minhash, threshold=config.threshold, bands=band.bands,
                      rows=band.rows)
        stored = cls.stored_config(path)
        if stored is not None:
            have = IndexConfig.from_dict(stored)
            diffs = []
            for name, value in wanted.items():
                ours = getattr(have, name)
                a = ours.as_dict() if hasattr(ours, "as_dict") else ours
                b = value.as_dict() if hasattr(value, "as_dict") else value
                if a != b:
                    fa, fb = (flatten(a), flatten(b)) if isinstance(a, dict) else ({"": a}, {"": b})
                    diffs += [f"{name}{'.' + k if k else ''}: index {fa.get(k)!r}, dedup run {fb.get(k)!r}"
                              for k in sorted(set(fa) | set(fb)) if fa.get(k) != fb.get(k)]
            if diffs:
                raise IncompatibleSketchError(
                    f"index {os.fspath(path)} (config {config_fingerprint(stored):016x}) was made with other parameters "
                    f"than the dedup run (config {config.fingerprint()}): {'; '.join(diffs)}")
        return cls(path, **wanted, **options)

    def keep_resident(self) -> dict:
        """Keep the file mapped from now until :meth:`close` (see the ``resident`` argument).

        Returns at once (the pages are mapped in a background thread); idempotent. Returns
        :meth:`resident_info`.
        """
        from .resident import ResidentFile

        with self._conns_lock:
            if self._closed:
                raise StoreError(f"the index {self.path} is closed")
            if self._resident is None:
                self._resident = ResidentFile(self.path)
        return self.resident_info()

    def resident_info(self) -> dict | None:
        """``{"state", "mapped_bytes", "rounds"}`` of the file's mapping, None when not kept resident."""
        return None if self._resident is None else self._resident.info()

    # -- opening -----------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open index {self.path}: {exc}") from None
        try:
            conn.execute(f"PRAGMA synchronous={self.synchronous.upper()}")
            conn.execute(f"PRAGMA cache_size=-{self.cache_mb * 1024}")
            conn.execute("PRAGMA temp_store=MEMORY")
            # SQLite caps this at its SQLITE_MAX_MMAP_SIZE (2 GB in the usual builds).
            conn.execute(f"PRAGMA mmap_size={1 << 31 if self.mmap else 0}")
            # No checkpoint inside COMMIT: the writer that crossed the threshold would hold
            # every other writer's lock while the pages are copied and fsynced (a second at
            # 1M documents). A background thread checkpoints instead (_checkpoint_loop).
            conn.execute("PRAGMA wal_autocheckpoint=0")
            # After a checkpoint that reset the log, the file is cut back to this size.
            conn.execute(f"PRAGMA journal_size_limit={self.WAL_LIMIT_BYTES}")
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(f"{self.path} is not a neardup index ({exc})") from None
        with self._conns_lock:
            self._conns.append(conn)
        return conn

    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreError(f"the index {self.path} is closed")
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
        return conn

    def _open(self, given: dict, create: bool) -> IndexConfig:
        conn = self._conn()
        try:
            if self._new_config(given).posting_runs and create and os.path.getsize(self.path) == 0:
                # a new file for posting runs: merges free the pages of the runs they replace,
                # given back to the file system after each merge (runs.add_run) instead of
                # leaving the file at its largest size. Only an empty file can take this, and
                # only before the WAL header is written.
                conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise StoreError(f"cannot switch {self.path} to WAL mode (journal mode is {mode})")
            conn.execute("BEGIN IMMEDIATE")
            try:
                stored = self._read_config(conn)
                if stored is None:
                    if not create:
                        raise StoreError(f"no index at {self.path}")
                    config = self._new_config(given)
                    self._create(conn, config)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.OperationalError as exc:
            raise self._store_error(exc) from None
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path} is not a neardup index ({exc})") from None
        if stored is None:
            return config
        tv = stored["shingle"].get("tokenizer_version")
        if tv != TOKENIZER_VERSION:
            raise IncompatibleSketchError(
                f"index {self.path} was made with tokenizer version {tv}, this neardup tokenizes with version "
                f"{TOKENIZER_VERSION}: rebuild the index")
        config = IndexConfig.from_dict(stored)
        # the postings' layout is the file's own (a profile named for an existing file, or a
        # file made before profile default had runs, does not change it)
        given = {k: v for k, v in given.items() if k not in LAYOUT_FIELDS}
        if given:
            wanted = {**{f: getattr(config, f) for f in DEFAULTS}, **given}
            if "bands" not in given and "rows" not in given and (
                    wanted["threshold"] != config.threshold or wanted["minhash"].num_perm != config.minhash.num_perm):
                # the banding the given threshold and permutations imply, not the stored one
                wanted["bands"] = wanted["rows"] = None
            wanted = IndexConfig(**wanted)
            diffs = differences(config.as_dict(), wanted.as_dict())
            if diffs:
                raise IncompatibleSketchError(
                    f"index {self.path} was made with other parameters: {'; '.join(diffs)} "
                    f"(leave these options out to use the stored ones, or use another index file)")
        if config.as_dict() != stored:
            raise IncompatibleSketchError(
                f"index {self.path} records a configuration this neardup does not produce: "
                f"{'; '.join(differences(stored, config.as_dict()))}")
        return config

    @staticmethod
    def _new_config(given: dict) -> IndexConfig:
        """The configuration of a new file: the defaults, then what was given. An index that
        stores shingle ids and signatures (made for ``dedup --against``) keeps its content
        fingerprints in ``docs``, where a run against it reads them all at once."""
        merged = {**DEFAULTS, **given}
        if merged["store_shingles"] and merged["signatures"]:
            merged["fingerprint_runs"] = False
        if not merged["posting_runs"]:
            merged["fingerprint_runs"] = False
        return IndexConfig(**merged)

    def _read_config(self, conn) -> dict | None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        app = conn.execute("PRAGMA application_id").fetchone()[0]
        if version == 0 and app == 0:
            if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                raise StoreError(f"{self.path} is an SQLite file but not a neardup index")
            return None
        if app != APPLICATION_ID:
            raise StoreError(f"{self.path} is an SQLite file but not a neardup index (application_id {app:#x})")
        if version > SCHEMA_VERSION:
            raise StoreError(f"index {self.path} has schema version {version}, newer than this neardup "
                             f"understands ({SCHEMA_VERSION}): upgrade neardup")
        if version < 1:
            raise StoreError(f"index {self.path} has an unknown schema version {version}")
        if version < min(READABLE_VERSIONS):
            raise StoreError(f"index {self.path} has schema version {version}, older than this neardup writes "
                             f"({SCHEMA_VERSION}): rebuild it (export the documents and 'neardup index add' them "
                             f"into a new file), or use the neardup version that made it")
        rows = dict(conn.execute("SELECT key, value FROM meta"))
        try:
            config = json.loads(rows["config"])
        except (KeyError, ValueError):
            raise StoreError(f"index {self.path} has no readable configuration in its meta table") from None
        fp = int(rows.get("config_fingerprint", "0"), 16)
        if fp != config_fingerprint(config):
            raise StoreError(f"index {self.path}: the stored configuration does not match its fingerprint "
                             f"(expected {config_fingerprint(config):#018x}, actual {fp:#018x})")
        return config

    def _create(self, conn, config: IndexConfig) -> None:
        from .._version import __version__

        for statement in SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        meta = {
            "config": json.dumps(config.as_dict(), sort_keys=True),
            "config_fingerprint": f"{config.fingerprint():016x}",
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "created_by": f"neardup {__version__}",
            "documents": "0",
        }
        conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", meta.items())
        conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    @staticmethod
    def stored_config(path) -> dict | None:
        """The configuration recorded in an index file (as in ``stats()["config"]``), or None if absent."""
        path = os.fspath(path)
        if not os.path.isfile(path):
            return None
        try:
            from urllib.parse import quote

            conn = sqlite3.connect(f"file:{quote(os.path.abspath(path))}?mode=ro", uri=True, timeout=30.0)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open index {path}: {exc}") from None
        try:
            try:
                if conn.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
                    if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0:
                        return None
                    raise StoreError(f"{path} is an SQLite file but not a neardup index")
                row = conn.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"{path} is not a neardup index ({exc})") from None
            return json.loads(row[0]) if row else None
        finally:
            conn.close()

    def _prepare(self) -> None:
        cfg = self.config
        self._bands, self._rows = cfg.bands, cfg.rows
        self._m = cfg.minhash.num_perm
        widths = simhash_blocks(cfg.simhash_max_distance)
        self._blocks = []
        pos = 0
        self._block_widths = widths
        for w in widths:
            self._blocks.append((64 - pos - w, (1 << w) - 1))
            pos += w
        # Each bucket gives at most CANDIDATES_PER_BUCKET documents (the oldest: the primary
        # key orders a bucket by doc number), so that a flood of copies of one text cannot make
        # every similar query load all of them before ``limit`` applies.
        mask = (1 << DOC_BITS) - 1
        #: SQL of the whole id of row ``d`` of ``docs`` (ids.ID_SQL where prefixes are stored)
        self._id_sql = ID_SQL if cfg.id_prefixes else "d.id"
        #: the columns of ``docs d`` that :meth:`_remove_rows` takes, in its rows' order
        self._removed_columns = f"d.num, {self._id_sql}, d.n_shingles, d.signature, d.sample, d.simhash"
        self._near_sql = (f"SELECT {self._id_sql}, d.signature" + (", d.shingles" if cfg.store_shingles else "")
                          + ", c.shared FROM (SELECT doc, count(*) AS shared FROM ("
                          + " UNION ALL ".join(f"SELECT doc FROM (SELECT posting & {mask} AS doc FROM bands WHERE "
                                               f"posting BETWEEN ? AND ? ORDER BY posting LIMIT ?)"
                                               for _ in range(self._bands))
                          + ") GROUP BY doc) c JOIN docs d ON d.num = c.doc")
        self._simhash_sql = ("SELECT DISTINCT d.num, d.simhash FROM ("
                             + " UNION ALL ".join(f"SELECT doc FROM (SELECT posting & {mask} AS doc FROM simhash_blocks "
                                                  f"WHERE posting BETWEEN ? AND ? ORDER BY posting LIMIT ?)"
                                                  for _ in self._blocks)
                             + ") c JOIN docs d ON d.num = c.doc")

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

    # -- sketching ---------------------------------------------------------------------------
    def _sketch_batch(self, texts: list[str]):
        """The batch's sketches (:func:`neardup.stages.sketch.sketch_documents`) and band keys."""
        return self._sketch_parts([texts])

    def _sketch_parts(self, parts: list):
        """:meth:`_sketch_batch` of a batch given as parts: lists of texts and EncodedDocuments
        (:func:`neardup.stages.sketch.sketch_document_parts`)."""
        from ..stages.sketch import sketch_document_parts

        for part in parts:
            if type(part) is list:
                for t in part:
                    if not isinstance(t, str):
                        raise InputError(f"a document's text must be a str, got {type(t).__name__}")
        cfg = self.config
        # the MOD_m samples only where they are stored: without them a query has no containment
        # answers to look for (Queries), and taking them costs a pass over every shingle id
        sk = sketch_document_parts(parts, cfg.shingle, cfg.minhash, mod_m=cfg.mod_m, jobs=self.jobs,
                                   with_samples=cfg.containment, with_ids=cfg.store_shingles)
        return sk, band_keys(sk.signatures.values, self._bands, self._rows)

    def _sketch_many(self, texts: list[str]) -> list[Sketch]:
        if not texts:
            return []
        cfg = self.config
        sk, keys = self._sketch_batch(texts)
        sig = sk.signatures
        values, offsets = sig.values, sig.offsets
        ids = sig.ids if cfg.store_shingles else None
        out = []
        for i, text in enumerate(texts):
            lo, hi = int(offsets[i]), int(offsets[i + 1])
            out.append(Sketch(
                fingerprint=sk.fingerprints[i],
                length=len(text),
                n_shingles=hi - lo,
                signature=values[i],
                bands=keys[i],
                sample=sk.samples[i],
                simhash=sk.simhashes[i],
                shingles=ids[lo:hi] if cfg.store_shingles else None,
            ))
        return out

    def _check_id(self, doc_id, fingerprint: int | None) -> str:
        if doc_id is None:
            if fingerprint is None:
                raise InputError("a document without words needs an id (its content has no fingerprint)")
            return f"{fingerprint:016x}"
        if not isinstance(doc_id, str):
            raise InputError(f"a document id must be a string, got {type(doc_id).__name__} {doc_id!r}")
        if not doc_id:
            raise InputError("a document id must not be empty")
        try:
            doc_id.encode("utf-8")
        except UnicodeEncodeError:
            raise InputError(f"document id {doc_id!r} is not valid Unicode (it holds a lone surrogate)") from None
        return doc_id

    def _check_ids(self, doc_ids: list, fingerprints: list) -> list[str]:
        """:meth:`_check_id` of a batch: a batch of non-empty str ids is checked as a whole (one
        encoding of them all), any other one id by id, which says which id is wrong."""
        if all(type(doc_id) is str and doc_id for doc_id in doc_ids):
            try:
                "".join(doc_ids).encode("utf-8")
                return doc_ids
            except UnicodeEncodeError:
                pass
        return [self._check_id(doc_id, fp) for doc_id, fp in zip(doc_ids, fingerprints)]

    @staticmethod
    def _meta_json(meta) -> str | None:
        if meta is None:
            return None
        if not isinstance(meta, dict):
            raise InputError(f"document meta must be a JSON object (dict), got {type(meta).__name__}")
        try:
            return json.dumps(meta, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InputError(f"document meta cannot be stored as JSON: {exc}") from None

    # -- writing -----------------------------------------------------------------------------
    def _block_keys(self, simhash: int) -> list[tuple[int, int]]:
        return [(i, (simhash >> shift) & mask) for i, (shift, mask) in enumerate(self._blocks)]

    def _insert(self, conn, items: list[tuple[str, Sketch, str | None]]) -> None:
        """Insert documents whose ids are not in the index (the caller removed them)."""
        if items:
            self._write_columns(conn, self._columns_of(items))

    def _columns_of(self, items: list[tuple[str, Sketch, str | None]]) -> "_Columns":
        """:meth:`_columns` of ``(id, sketch, meta)`` items."""
        sks = [sk for _, sk, _ in items]
        return self._columns([doc_id for doc_id, _, _ in items], [sk.fingerprint for sk in sks],
                             [sk.length for sk in sks], [sk.n_shingles for sk in sks],
                             # (the band keys come along: without stored signatures they are not needed)
                             np.stack([sk.signature for sk in sks]) if self.config.signatures else None,
                             [sk.sample for sk in sks],
                             [sk.simhash for sk in sks], [sk.shingles for sk in sks], [m for _, _, m in items],
                             band_keys=np.stack([sk.bands for sk in sks]))

    def _insert_columns(self, conn, ids, fingerprints, lengths, n_shingles, signatures: np.ndarray, samples,
                        simhashes, shingles, metas, *, band_keys: np.ndarray, source: str = "",
                        clusters=None) -> int:
        """Insert documents (not in the index: the caller removed them) given column by column;
        returns the number of the first one (the others follow). ``clusters`` holds, for each
        document, the number of its cluster's survivor (None: itself)."""
        if not len(ids):
            return 0
        return self._write_columns(conn, self._columns(ids, fingerprints, lengths, n_shingles, signatures, samples,
                                                       simhashes, shingles, metas, band_keys=band_keys, source=source,
                                                       packable=clusters is None),
                                   clusters=clusters)

    def _columns(self, ids, fingerprints, lengths, n_shingles, signatures: np.ndarray, samples, simhashes, shingles,
                 metas, *, band_keys: np.ndarray, source: str = "", packable: bool = True) -> "_Columns":
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
                                            *key_cols, *prefix_cols))).decode(),
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
                            *([run_fp_col or [None] * n] if cfg.fingerprint_runs else []), *key_cols,
                            *prefix_cols))
        return _Columns(n, rows, bands, simhash, sample_rows, encoded, packed, id_run, bool(key_cols), prefixes)

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
            if cols.keyed:
                key, key_value, extra = ", id_key", f", {item(extra)}", extra + 1
            id_value, prefix, prefix_value, join = item(0), "", "", ""
            if prefixed:
                id_value, prefix_value, join = _prefixed_id(item(0), item(extra))
                prefix = ", id_prefix"
            conn.execute("INSERT INTO docs (num, source, id, fingerprint, length, n_shingles, n_sample, simhash, "
                         f"signature, meta, added_at{run_fp}{key}{prefix}) "
                         f"SELECT {int(first)} + j.key, ?1, {id_value}, {item(1)}, {item(2)}, {item(3)}, "
                         f"0, {item(4)}, {signature}, {item(5)}, {now!r}"
                         f"{run_fp_value}{key_value}{prefix_value} FROM json_each(?3) j{join}", (source, blob, text))
        else:
            # the row's values by position (?1 its offset, ?3 its id, ...: an id with a prefix is
            # read twice, and the prefix's number is joined in)
            names = ["num", "source", "id", "fingerprint", "length", "n_shingles", "n_sample", "simhash",
                     "signature", "sample", "shingles", "meta"]
            names += ["run_fingerprint"] * self.config.fingerprint_runs + ["id_key"] * cols.keyed
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

    def add(self, doc_id: str | None, text: str, meta: dict | None = None) -> str:
        """Store a document (replacing any entry with the same id); returns its id.

        Without an id, the id is the 16-hex-digit content fingerprint.
        """
        return self.add_many([(doc_id, text, meta)])[0]

    def add_many(self, docs) -> list[str]:
        """Store many documents in one transaction: all or none. Returns their ids.

        ``docs`` holds ``(id, text)`` or ``(id, text, meta)`` tuples, dicts with ``id``, ``text``
        and ``meta``, or :class:`neardup.io.Document` objects. When an id repeats, the last one wins.
        """
        return self._run_write(self.prepare_add(docs).work)

    def prepare_add(self, docs) -> "Prepared":
        """:meth:`add_many`'s sketching and checks, without writing: for :meth:`run_prepared`.

        Raises what :meth:`add_many` raises for a bad document.
        """
        # parts: lists of (id, text, meta) records, and the reader's EncodedDocuments as they are
        # (JSONL texts as UTF-8, which the kernel reads in place: ``neardup index add``)
        parts: list = []
        n = 0
        for d in docs:
            if type(d) is EncodedDocuments:
                parts.append(d)
                n += len(d)
                continue
            # (the reader's Documents taken apart here, without as_record's checks of other kinds)
            record = (d.id, d.text, d.meta or None) if type(d) is Document else _as_record(d)
            if parts and type(parts[-1]) is list:
                parts[-1].append(record)
            else:
                parts.append([record])
            n += 1
        if n < ROWS_BELOW:
            records = [r for part in parts for r in (part if type(part) is list else
                                                     [(i, part.text(k), None) for k, i in enumerate(part.ids)])]
            return self._add_work(records, self._sketch_many([r[1] for r in records]))
        return self._bulk_add_work(parts)

    def _bulk_add_work(self, parts: list) -> "Prepared":
        """:meth:`_add_work` of a bulk write, from the batch's sketch arrays without a
        :class:`Sketch` per document (the same documents, in the same order: an id that repeats
        is stored once, at the place of its last occurrence, with its last text). ``parts``:
        lists of (id, text, meta) records and EncodedDocuments (no meta), in order."""
        cfg = self.config
        ids: list = []
        lengths: list = []
        metas: list = []
        texts_of = []
        for part in parts:
            if type(part) is list:
                ids.extend([r[0] for r in part])
                texts = [r[1] for r in part]
                texts_of.append(texts)
                lengths.extend([len(t) if isinstance(t, str) else 0 for t in texts])
                metas.extend([self._meta_json(r[2]) for r in part])
            else:
                ids.extend(part.ids)
                texts_of.append(part)
                lengths.extend(part.lengths.tolist())
                metas.extend([None] * len(part))
        sk, keys = self._sketch_parts(texts_of)
        sig = sk.signatures
        ids = given = self._check_ids(ids, sk.fingerprints)
        offsets = sig.offsets
        n_shingles = np.diff(offsets)
        fingerprints, samples, simhashes = sk.fingerprints, sk.samples, sk.simhashes
        signatures = sig.values if cfg.signatures else None
        last = {doc_id: k for k, doc_id in enumerate(ids)}
        keep = range(len(ids))
        if len(last) < len(ids):
            # (only a batch that repeats an id is picked from: the common case takes the lists whole)
            keep = sorted(last.values())
            pick = np.asarray(keep, dtype=np.int64)
            ids, fingerprints, samples, simhashes, lengths, metas = (
                [col[k] for k in keep] for col in (ids, fingerprints, samples, simhashes, lengths, metas))
            n_shingles, keys = n_shingles[pick], keys[pick]
            signatures = None if signatures is None else signatures[pick]
        shingles = ([sig.ids[int(offsets[k]):int(offsets[k + 1])] for k in keep] if cfg.store_shingles
                    else [None] * len(keep))
        columns = self._columns(ids, fingerprints, lengths, n_shingles, signatures, samples, simhashes, shingles,
                                metas, band_keys=keys)
        stored = ids

        def work(conn):
            self._delete(conn, stored)
            self._write_columns(conn, columns)
            return given

        return Prepared(self, work)

    def _add_work(self, records, sketches) -> "Prepared":
        items = {}
        ids = []
        for (doc_id, _, meta), sk in zip(records, sketches):
            doc_id = self._check_id(doc_id, sk.fingerprint)
            items.pop(doc_id, None)
            items[doc_id] = (doc_id, sk, self._meta_json(meta))
            ids.append(doc_id)

        columns = self._columns_of(list(items.values())) if items else None  # (on the caller's thread)

        def work(conn):
            self._delete(conn, list(items))
            if columns is not None:
                self._write_columns(conn, columns)
            return ids

        return Prepared(self, work)

    def prepare_many(self, requests) -> list:
        """:meth:`prepare_add` and :meth:`prepare_check_and_add` of several requests at once.

        ``requests``: ``("add", docs)`` or ``("check_and_add", docs, limit[, policy])`` each. The texts of
        all are sketched as one batch, which costs about half as much per document as one at a
        time (measured with 8 single-document requests). Returns, for each request, its
        prepared write, or the exception its own ``prepare_*`` call would have raised.
        """
        return self.prepared_of(self.sketch_requests(requests))

    def sketch_requests(self, requests) -> list:
        """:meth:`prepare_many` in two halves, so that a server can sketch in one process and
        write in another: this half reads and sketches the texts (no index access) and returns,
        for each request, a picklable ``(kind, records, sketches, limit, policy)`` (the records
        without their texts) or the exception; :meth:`prepared_of` turns these into prepared writes."""
        out: list = [None] * len(requests)
        parsed = []  # (position, kind, records, limit, policy)
        for i, request in enumerate(requests):
            try:
                kind, docs = request[0], request[1]
                limit = request[2] if len(request) > 2 else DEFAULT_LIMIT
                policy = request[3] if len(request) > 3 else "exact"
                if kind == "check_and_add":
                    _check_limit(limit)
                    _check_policy(policy)
                elif kind != "add":
                    raise InputError(f"unknown kind of write {kind!r}: 'add' or 'check_and_add'")
                parsed.append((i, kind, [_as_record(d) for d in docs], limit, policy))
            except Exception as exc:
                out[i] = exc
        texts = [r[1] for _, _, records, _, _ in parsed for r in records]
        try:
            sketches = self._sketch_many(texts)
        except Exception:
            sketches = None  # a bad text: sketch request by request, so that only its own fails
        start = 0
        for i, kind, records, limit, policy in parsed:
            try:
                if sketches is not None:
                    mine = sketches[start:start + len(records)]
                    start += len(records)
                else:
                    mine = self._sketch_many([r[1] for r in records])
                out[i] = (kind, [(r[0], None, r[2]) for r in records], mine, limit, policy)
            except Exception as exc:
                out[i] = exc
        return out

    def prepared_of(self, sketched: list) -> list:
        """The prepared writes (or exceptions) of what :meth:`sketch_requests` returned."""
        out = []
        for item in sketched:
            if isinstance(item, BaseException):
                out.append(item)
                continue
            kind, records, sketches, limit, policy = item
            try:
                out.append(self._add_work(records, sketches) if kind == "add"
                           else self._check_and_add_work(records, sketches, limit, policy))
            except Exception as exc:
                out.append(exc)
        return out

    def remove(self, doc_id: str) -> bool:
        """Remove a document; False when no document has that id."""
        return bool(self._run_write(lambda conn: self._delete(conn, [doc_id])))

    def remove_many(self, doc_ids) -> list[str]:
        """Remove documents in one transaction; returns the ids that were not in the index."""
        doc_ids = list(dict.fromkeys(doc_ids))
        found = self._run_write(lambda conn: self._delete(conn, doc_ids))
        return [d for d in doc_ids if d not in found]


    def check_and_add(self, doc_id: str | None, text: str, meta: dict | None = None, *,
                      limit: int | None = DEFAULT_LIMIT, policy: str = "exact") -> dict:
        """Query and, unless a copy is present, store, as one atomic step.

        ``policy``: what counts as a copy: ``"exact"`` (the same content fingerprint) or
        ``"near"`` (that, or a near answer: an estimated, or with stored shingles exact,
        Jaccard of at least the threshold). Either way the check and the add happen under the
        write lock, so of two near-copies posted at once under ``"near"`` exactly one is added.

        Returns the answer plus ``"added"``: True when no copy was found (the document is now
        stored; ``id`` is the id it was stored under), False when one was (nothing stored; the
        copies are in ``exact`` and ``near``).
        """
        return self.check_and_add_many([(doc_id, text, meta)], limit=limit, policy=policy)[0]

    def check_and_add_many(self, docs, *, limit: int | None = DEFAULT_LIMIT, policy: str = "exact") -> list[dict]:
        """:meth:`check_and_add` for many documents in one transaction, in order.

        Each document is checked against the index and the documents before it in ``docs``.
        """
        return self._run_write(self.prepare_check_and_add(docs, limit=limit, policy=policy).work)

    def prepare_check_and_add(self, docs, *, limit: int | None = DEFAULT_LIMIT, policy: str = "exact") -> "Prepared":
        """:meth:`check_and_add_many`'s sketching and checks, without reading or writing the
        index: for :meth:`run_prepared`, which does the check and the add under the write lock.

        Raises what :meth:`check_and_add_many` raises for a bad document.
        """
        _check_limit(limit)
        _check_policy(policy)
        records = [_as_record(d) for d in docs]
        return self._check_and_add_work(records, self._sketch_many([r[1] for r in records]), limit, policy)

    def _check_and_add_work(self, records, sketches, limit, policy: str) -> "Prepared":
        prepared = [(self._check_id(doc_id, sk.fingerprint), sk, self._meta_json(meta))
                    for (doc_id, _, meta), sk in zip(records, sketches)]

        def work(conn):
            answers = []
            for doc_id, sk, meta in prepared:
                answer = self._query(conn, sk, doc_id, limit)
                answer["added"] = not answer["exact"] and (policy == "exact" or not answer["near"])
                if answer["added"]:
                    self._delete(conn, [doc_id])
                    self._insert(conn, [(doc_id, sk, meta)])
                answers.append(answer)
            return answers

        return Prepared(self, work)


    # -- closing -----------------------------------------------------------------------------
    def close(self) -> None:
        """Close every connection (idempotent). The last one to close checkpoints the WAL."""
        self._closed = True
        with self._conns_lock:
            resident, self._resident = getattr(self, "_resident", None), None
        if resident is not None:
            resident.close()
        stop, checkpointer = getattr(self, "_stop", None), getattr(self, "_checkpointer", None)
        if stop is not None:
            stop.set()
        if checkpointer is not None and checkpointer is not threading.current_thread():
            checkpointer.join()
        fd, self._flock_fd = getattr(self, "_flock_fd", None), None
        if fd is not None:
            os.close(fd)
        with self._conns_lock:
            conns, self._conns = self._conns, []
            self._write_conn = None
        for conn in conns:
            try:
                conn.close()
            except sqlite3.Error:
                pass

    def __enter__(self) -> "SeenIndex":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SeenIndex({self.path!r}, config_fingerprint={self.config.fingerprint():#018x})"


class _Columns:
    """A batch's rows and postings before its documents are numbered (:meth:`SeenIndex._columns`)."""

    __slots__ = ("n", "rows", "bands", "simhash", "sample_rows", "encoded", "packed", "id_run", "keyed", "prefixes")

    def __init__(self, n, rows, bands, simhash, sample_rows, encoded, packed=None, id_run=None, keyed=False,
                 prefixes=None):
        self.n, self.rows, self.bands, self.simhash = n, rows, bands, simhash
        self.sample_rows, self.encoded, self.packed = sample_rows, encoded, packed
        #: the id run's blocks (a bulk write of schema 6), and whether the rows carry id_key
        self.id_run, self.keyed = id_run, keyed
        #: the batch's id prefixes and how many of its ids have each (None: the file stores none)
        self.prefixes = prefixes


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
POLICIES = ("exact", "near")


def _check_policy(policy) -> None:
    if policy not in POLICIES:
        raise ConfigError(f"The 'policy' parameter of SeenIndex.check_and_add must be one of 'exact', 'near'. "
                          f"Got {policy!r} instead.")


