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
     "simhash":      [{"id", "distance"}, ...],
     "url_seen":     true | false | null,     only when the query gave a URL
     "url_match":    "id" | null}

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
- ``url_seen`` and ``url_match`` (present only when the query carries a URL): whether a stored
  document has the same canonical URL (:mod:`neardup.urls`, under the rules recorded in the file:
  ``IndexConfig.urls``), and the id of the first one stored. "URL seen?" is asked beside
  "content seen?", not instead of it: a re-crawled URL with new content has ``url_seen`` true and
  no ``exact`` copy. ``url_seen`` is null when the file stores no URLs (schema 3-6).

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
The file format is documented in ``docs/store.md``. The class is assembled from modules of one
concern each: :mod:`.schema` (the file's format and configuration), :mod:`.sketching` (texts to
sketches), :mod:`.writes` (add, remove, check-and-add), :mod:`.rows` (the rows those write and
remove), :mod:`.writer` (group commit, locks, checkpoints) and :mod:`.queries` (the answers);
this module opens the file, reads or records its configuration, and closes it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time


from .._validate import check_int
from ..config import DedupConfig
from ..errors import ConfigError, IncompatibleSketchError, StoreError
from ..params import TOKENIZER_VERSION, MinHashParams, ShingleParams
from .ids import ID_SQL, PrefixHints
from .queries import Queries
from ..config import INDEX_DEFAULTS as DEFAULTS, INDEX_PROFILES as PROFILES, index_profile
from .schema import (APPLICATION_ID, DOC_BITS, LAYOUT_FIELDS, MAX_DOCUMENTS, READABLE_VERSIONS,
                     SCHEMA, SCHEMA_VERSION, IndexConfig, band_bucket, band_posting, block_bucket,
                     config_fingerprint, differences, flatten, simhash_blocks)
from .rows import Rows
from .sketching import Sketching
from .writer import GroupCommit, Pending
from .writes import POLICIES, Writes

__all__ = ["SeenIndex", "IndexConfig", "SCHEMA_VERSION", "APPLICATION_ID", "DEFAULTS", "PROFILES", "POLICIES",
           "DOC_BITS", "MAX_DOCUMENTS", "band_bucket", "band_posting", "block_bucket", "simhash_blocks"]


class SeenIndex(Writes, Rows, Sketching, GroupCommit, Queries):
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
            run (:data:`~neardup.config.ROWS_BELOW` in profiles default and full, 0 in lean).
        url_rules: the :class:`neardup.urls.UrlRules` of the canonical URLs a new file stores
            (default :data:`neardup.urls.DEFAULT_RULES`); recorded and checked like the rest.
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
                 posting_runs: bool | None = None, rows_below: int | None = None, url_rules=None,
                 create: bool = True, synchronous: str = "normal",
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
                                        posting_runs=posting_runs, rows_below=rows_below, urls=url_rules).items()
                 if v is not None}
        if profile is not None:
            given = {**index_profile(profile), **given}
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
        # with URL identity the index keeps the canonical URLs, under the run's URL rules
        rules = config.rules_of_urls() if config.url_field is not None else None
        if stored is not None:
            have = IndexConfig.from_dict(stored)
            if rules is not None and have.urls is None:
                raise IncompatibleSketchError(
                    f"index {os.fspath(path)} stores no URLs (made before index schema 7): dedup --url-field can "
                    "neither add its pages' URLs to it nor find them in it; save the run into a new index")
            if rules is not None and have.urls != rules:
                raise IncompatibleSketchError(
                    f"index {os.fspath(path)} keeps canonical URLs under other URL rules ({have.urls.as_dict()}) than "
                    f"the dedup run's ({rules.as_dict()})")
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
        return cls(path, **wanted, **options, **({"url_rules": rules} if rules is not None else {}))

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
            # (the definition of the file's whole-page fingerprints is the file's, as its layout)
            wanted = {**{f: getattr(config, f) for f in DEFAULTS}, "page_fingerprints": config.page_fingerprints,
                      **given}
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


