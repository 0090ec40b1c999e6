"""``neardup index add|query|stats|remove`` and ``neardup serve``: the persistent index.

Exit status: 0 on success; ``index query`` exits 1 when some queried record has an exact copy in
the index (it was seen), like ``grep`` finding a match; ``index remove`` exits 1 when some id was
not in the index; 2 for every user error (one line on standard error).

The index options (``-k``, ``--num-perm``, ``--threshold``, ...) configure a new index. For an
existing index an option left out takes the recorded value, and one that is given must equal it
(else the error names the stored and given values).
"""

from __future__ import annotations

import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from ..config import INDEX_DEFAULTS, IndexConfig, index_profile
from ..options import INDEX_OPTIONS, MINHASH_OPTIONS, SHINGLE_OPTIONS
from ..service.settings import SERVE_OPTIONS, SERVE_SETTINGS, ServerOptions, Settings
from ..cpus import available_cpus
from ..io.read.reader import ON_ERROR
from ._common import add_options, add_record_options, option_value, positive_int, url_rules_from, url_rules_given

EXIT_SEEN = 1


def register(sub) -> None:
    p = sub.add_parser("index", help="the persistent \"seen before?\" index: add, query, stats, remove",
                       description="A persistent index of documents on one SQLite file: exact copies, "
                                   "near-copies (MinHash LSH), containment (MOD_m samples) and simhash "
                                   "neighbours. See 'neardup index ACTION --help'.")
    actions = p.add_subparsers(dest="index_action", metavar="ACTION", required=True)

    a = actions.add_parser("add", help="add documents (creating the index if needed)",
                           description="Add every document of the inputs to the index, in transactions of "
                                       "--batch-size documents. A document whose id is in the index replaces it.")
    _db(a)
    a.add_argument("inputs", nargs="*", metavar="INPUT",
                   help="files, folders, globs, '-' or URLs (jsonl, csv, tsv, parquet, arrow, warc, html, text)")
    _input_options(a)
    _url_options(a, "keep each record's canonical URL, so that queries answer \"URL seen?\" (url_seen, "
                    "url_match)")
    _index_options(a)
    a.add_argument("--batch-size", type=positive_int("--batch-size"), default=5000,
                   help="documents per transaction (default 5000; the memory of a run is bounded by one batch's "
                        "texts and sketches, not by the input). Large transactions write each index page "
                        "once for many documents, and batches of 1000 or more append their postings as a run "
                        "(fewer: rows, slower); a server writing to the same index waits for each one, so "
                        "use fewer (1000) while it runs")
    a.add_argument("--cache-mb", type=positive_int("--cache-mb"), default=256,
                   help="SQLite page cache in MB (default 256; holds a transaction's changed pages)")
    a.add_argument("--jobs", "-j", type=positive_int("--jobs"), default=None,
                   help="threads for sketching (default: the CPUs this process may use, from its affinity and cgroup quota)")
    a.add_argument("--fsync", action="store_true",
                   help="fsync every commit (survives power loss; default: survives the process dying)")
    a.add_argument("--verbose", "-v", action="store_true",
                   help="a line on standard error after every committed batch (count and last id)")
    a.set_defaults(handler=add_command)

    q = actions.add_parser("query", help="what the index holds that resembles each input record",
                           description="Print one answer per input record: exact copies, near-copies, "
                                       "containment both ways and simhash neighbours. Exit status 1 when "
                                       "some record has an exact copy in the index.")
    _db(q)
    q.add_argument("inputs", nargs="*", metavar="INPUT")
    q.add_argument("--json", action="store_true", help="JSON lines: one answer object per input record")
    q.add_argument("--limit", type=positive_int("--limit"), default=100, help="entries per list (default 100)")
    _input_options(q)
    _url_options(q, "answer whether each record's canonical URL is stored (url_seen, url_match)")
    _index_options(q)
    q.add_argument("--jobs", "-j", type=positive_int("--jobs"), default=None, help="threads for sketching")
    q.set_defaults(handler=query_command)

    s = actions.add_parser("stats", help="documents, sizes and configuration of an index")
    _db(s)
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.set_defaults(handler=stats_command)

    r = actions.add_parser("remove", help="remove documents by id",
                           description="Remove documents by id, in one transaction. Exit status 1 when some "
                                       "id was not in the index.")
    _db(r)
    r.add_argument("ids", nargs="+", metavar="ID")
    r.set_defaults(handler=remove_command)

    v = sub.add_parser("serve", help="serve an index over HTTP (needs neardup[service])",
                       description="Serve the index over HTTP with FastAPI and uvicorn: POST /v1/check, "
                                   "/v1/add, /v1/check-and-add; DELETE /v1/documents/ID; GET /v1/stats, "
                                   "/healthz; OpenAPI schema at /openapi.json. Creates the index if missing.")
    _db(v)

    def serve_options(*fields):
        add_options(v, [SERVE_OPTIONS[f] for f in fields], {"settings": SERVE_SETTINGS, "server": ServerOptions()})

    serve_options("server.host", "server.port", "server.token_file")
    serve_options("settings.max_body_bytes", "settings.max_batch", "settings.max_document_chars",
                  "settings.max_document_tokens", "settings.request_timeout", "settings.body_timeout",
                  "server.header_timeout", "server.limit_concurrency", "settings.batch_processes")
    add_record_options(v, fields=("html",))
    serve_options("server.workers", "server.fsync", "settings.resident", "server.access_log", "server.log_level")
    _index_options(v)
    v.set_defaults(handler=serve_command, jobs=1)


def _db(p) -> None:
    p.add_argument("--db", required=True, metavar="PATH", help="the index file (SQLite)")


def _input_options(p) -> None:
    from ._common import add_input_list_options

    g = p.add_argument_group("input")
    add_input_list_options(g)
    add_record_options(g)
    g.add_argument("--on-error", choices=ON_ERROR, default="error",
                   help="a file that cannot be read: stop with its path and exit status 3 (default), or skip it")


def _url_options(p, what: str) -> None:
    from ._common import add_url_options

    add_url_options(p.add_argument_group("URLs"),
                    f"JSONL/CSV/Parquet/Arrow field with the record's URL (WARC: url, the target URI): {what}; "
                    "without it no URL is read. The URL rules below are recorded when the index is created")


def _index_options(p) -> None:
    g = p.add_argument_group("index configuration (recorded when the index is created, checked afterwards)")
    # left out: None, the recorded value of an existing index (the help shows a new one's)
    options = [*(o for f, o in SHINGLE_OPTIONS.items() if f != "shingle.hash"), *MINHASH_OPTIONS.values(),
               *INDEX_OPTIONS.values()]
    add_options(g, options, INDEX_DEFAULTS, given_only=True)


def index_params(args) -> dict:
    """SeenIndex keyword arguments for the index options given on the command line.

    Options left out are not passed (the index keeps its recorded values); for the shingle and
    MinHash parameters, the ones given replace those fields of the recorded (or default) value.
    """
    import dataclasses

    from ..store.sqlite import SeenIndex

    stored = SeenIndex.stored_config(args.db)
    base = IndexConfig.from_dict(stored) if stored else IndexConfig(**INDEX_DEFAULTS)
    out = {}
    shingle_changes = {k: v for k, v in (("k", args.k), ("unit", args.unit)) if v is not None}
    norm_changes = {k: not v for k, v in (("remove_punctuation", args.keep_punctuation),
                                           ("casefold", args.no_casefold), ("nfkc", args.no_nfkc)) if v is not None}
    if shingle_changes or norm_changes:
        norm = dataclasses.replace(base.shingle.normalize, **norm_changes)
        out["shingle"] = dataclasses.replace(base.shingle, normalize=norm, **shingle_changes)
    minhash_changes = {k: v for k, v in (("num_perm", args.num_perm), ("seed", args.seed), ("family", args.family))
                       if v is not None}
    if minhash_changes:
        out["minhash"] = dataclasses.replace(base.minhash, **minhash_changes)
    for name, value in (("threshold", args.threshold), ("containment_threshold", args.containment_threshold),
                        ("mod_m", args.mod_m), ("simhash_max_distance", args.max_distance),
                        ("store_shingles", args.store_shingles), ("profile", getattr(args, "profile", None)),
                        ("containment", getattr(args, "containment", None))):
        if value is not None:
            out[name] = value
    if url_rules_given(args):
        out["url_rules"] = url_rules_from(args)
    # checked now, before an input is read or an index file made (the index checks them on open)
    if "profile" in out:
        index_profile(out["profile"])
    config_fields = {f.name for f in dataclasses.fields(IndexConfig)}
    dataclasses.replace(base, **{k: v for k, v in out.items() if k in config_fields})
    return out


def _check_options(args) -> None:
    """Every option that a configuration takes, checked by it before anything is read or made."""
    from ._common import check_url_field, read_options_from

    read_options_from(args)
    check_url_field(args)
    index_params(args)


def _open(args, *, create: bool, synchronous: str = "normal"):
    from ..store import SeenIndex

    jobs = getattr(args, "jobs", None) or available_cpus()
    # Only 'index add' has --cache-mb (large batches); queries and the server's single-document
    # transactions are faster with SeenIndex's small default cache.
    # 'index add' (the only one with --cache-mb) reads pages without mmap: the pages of a large
    # index it touches would otherwise count in its resident memory, up to 2 GB
    extra = {"cache_mb": args.cache_mb, "mmap": False} if getattr(args, "cache_mb", None) else {}
    return SeenIndex(args.db, create=create, synchronous=synchronous, jobs=jobs, **extra, **index_params(args))


def _records(args, normalize=None, plan=None, page_fingerprints: bool = False):
    """The input's records (of ``plan``, the inputs already checked, when given). With
    ``normalize`` (the index's, for ``index add``), runs of ordinary JSONL records come as
    EncodedDocuments, their texts UTF-8 that the kernel reads in place, as ``neardup dedup``
    reads them (:func:`neardup.io.read.read_encoded`); with ``page_fingerprints``, an HTML record's
    whole-page fingerprint beside its main content (``Document.page_fingerprint``)."""
    from ..io import read_documents

    from ._common import expanded_inputs

    inputs = plan if plan is not None else expanded_inputs(args)
    options = dict(format=args.format, id_field=args.id_field, text_field=args.text_field, content=args.content,
                   html=args.html, max_bytes=args.max_bytes, on_error=args.on_error,
                   page_fingerprints=page_fingerprints)
    if getattr(args, "url_field", None):
        options["keep_fields"] = (args.url_field,)
    if normalize is None:
        return read_documents(inputs, **options)
    from ..io.read import read_encoded
    from ..stages.sketch import flag_table

    return read_encoded(inputs, table=flag_table(normalize), **options)


def _with_url(doc, url_field: str | None):
    """A Document as the index takes it: ``(id, text, meta, url)``, the URL (a non-empty string
    in the ``url_field`` of its record, else None) taken out of its meta; the Document itself
    without ``url_field``."""
    if url_field is None:
        return doc
    meta = dict(doc.meta or {})
    url = meta.pop(url_field, None)
    return doc.id, doc.text, meta or None, url if isinstance(url, str) and url.strip() else None


def _with_page(rec, url_field: str):
    """A Document read with its whole-page fingerprint as ``(id, text, meta, url, page_fingerprint)``."""
    return (*_with_url(rec, url_field), rec.page_fingerprint)


def _check_urls(index, args) -> None:
    """Refuse ``--url-field`` for an index that stores no URLs (made before schema 7)."""
    if getattr(args, "url_field", None) and index.config.urls is None:
        from ..errors import ConfigError

        raise ConfigError(f"--url-field: the index {args.db} stores no URLs (schema version "
                          f"{index.stats()['schema_version']}; URLs from version 7 on): add the documents to a new "
                          "index to answer \"URL seen?\"")


def _batches(records, size: int):
    """Lists of ``size`` records (Documents, Skipped and the records of EncodedDocuments, which
    are cut where a batch ends), the last one shorter."""
    from ..io.documents import EncodedDocuments

    batch, count = [], 0
    for rec in records:
        while type(rec) is EncodedDocuments and count + len(rec) > size:
            head, rec = rec.split(size - count)
            batch.append(head)
            yield batch
            batch, count = [], 0
        batch.append(rec)
        count += len(rec) if type(rec) is EncodedDocuments else 1
        if count >= size:
            yield batch
            batch, count = [], 0
    if batch:
        yield batch


def _read_ahead(batches, depth: int = 1):
    """The batches of ``batches``, read on a thread up to ``depth`` ahead: parsing the next
    batch's records (Python, under the GIL) then overlaps with SQLite's writes of the last one
    (which release the GIL). An exception of the reader is raised here, in order; leaving the
    loop early stops the reader."""
    import queue
    import threading

    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    end = object()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            for batch in batches:
                if not put(batch):
                    return
            put(end)
        except BaseException as exc:  # handed to the consumer, which raises it
            put(exc)

    reader = threading.Thread(target=read, name="neardup-index-read", daemon=True)
    reader.start()
    try:
        while True:
            item = q.get()
            if item is end:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        reader.join()


def add_command(args) -> int:
    from ..io import Document, Skipped
    from ..io.documents import EncodedDocuments
    from ..io.read import plan_inputs
    from ..progress import Progress

    from ._common import expanded_inputs

    # (the options and inputs checked before the index is opened: a missing one creates no index file)
    _check_options(args)
    plan = plan_inputs(expanded_inputs(args), args.format)
    added = 0
    skipped: dict[str, int] = {}
    start = time.monotonic()
    progress = Progress(f"index add {args.db}")
    with _open(args, create=True, synchronous="full" if args.fsync else "normal") as index, \
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="neardup-index-sketch") as sketcher:

        def commit(sketching, docs) -> None:
            nonlocal added
            outcome = index.run_prepared([sketching.result()])[0]
            if isinstance(outcome, BaseException):
                raise outcome
            count = sum(len(d) if type(d) is EncodedDocuments else 1 for d in docs)
            added += count
            # (progress in characters for Documents, in UTF-8 bytes for EncodedDocuments; a
            # document with its URL is an (id, text, meta, url) tuple)
            progress.update(count, sum(int(d.offsets[-1] - d.offsets[0]) if type(d) is EncodedDocuments
                                       else len(d[1]) if type(d) is tuple else len(d.text) for d in docs))
            if args.verbose:
                last = (docs[-1].ids[-1] if type(docs[-1]) is EncodedDocuments
                        else docs[-1][0] if type(docs[-1]) is tuple else docs[-1].id)
                print(f"neardup: committed {added} documents (last id {last})", file=sys.stderr, flush=True)

        # A batch is sketched on a thread (the kernel releases the GIL) while the one before it
        # is written and the next one read: at most two batches are held, and the reading, the
        # sketching and SQLite's inserts overlap instead of taking turns. Batches commit in order.
        _check_urls(index, args)
        waiting = None
        # the whole page's fingerprint beside the main content's, so that 'neardup changes'
        # against this index can tell a page whose template alone changed (from the same read)
        pages = bool(args.url_field) and args.html != "whole" and (args.content == "html"
                                                                    or bool(plan.formats() & {"html", "warc"}))
        records = _records(args, index.config.shingle.normalize, plan, page_fingerprints=pages)
        for batch in _read_ahead(_batches(records, args.batch_size)):
            docs = [(_with_page(r, args.url_field) if pages and type(r) is Document else _with_url(r, args.url_field))
                    for r in batch if not isinstance(r, Skipped)]
            for r in batch:
                if isinstance(r, Skipped):
                    skipped[r.reason] = skipped.get(r.reason, 0) + 1
            if not docs:
                continue
            sketching = sketcher.submit(index.prepare_add, docs)
            if waiting is not None:
                commit(*waiting)
            waiting = (sketching, docs)
        if waiting is not None:
            commit(*waiting)
        total = len(index)
    progress.close()
    seconds = time.monotonic() - start
    n_skipped = sum(skipped.values())
    why = f" ({', '.join(f'{k} {v}' for k, v in sorted(skipped.items()))})" if skipped else ""
    print(f"added {added} documents to {args.db} in {seconds:.1f} s, skipped {n_skipped}{why}; "
          f"the index holds {total} documents")
    return 0


def query_command(args) -> int:
    from ..io import Document

    _check_options(args)
    records = _records(args)
    seen = False
    out = sys.stdout
    with _open(args, create=False) as index:
        for batch in _batches(records, 256):
            docs = [r for r in batch if isinstance(r, Document)]
            answers = iter(index.query_many([(d.id, d.text, None, _with_url(d, args.url_field)[3] if args.url_field
                                              else None) for d in docs], limit=args.limit))
            for r in batch:
                if isinstance(r, Document):
                    answer = next(answers)
                    seen = seen or bool(answer["exact"])
                else:
                    answer = {"id": r.id, "skipped": r.reason, "detail": r.detail, "source": r.source}
                if args.json:
                    out.write(json.dumps(answer, ensure_ascii=False) + "\n")
                else:
                    out.write(_describe(answer) + "\n")
            out.flush()
    return EXIT_SEEN if seen else 0


def _describe(answer: dict) -> str:
    if "skipped" in answer:
        return f"{answer['id']}\tskipped: {answer['skipped']} ({answer['detail']})"
    parts = []
    if answer.get("url_seen"):
        parts.append(f"url {answer['url_match']}")
    if answer["exact"]:
        parts.append(f"exact {', '.join(answer['exact'][:3])}{' ...' if len(answer['exact']) > 3 else ''}")
    for key, value, fmt in (("near", "jaccard", "{:.3f}"), ("contains", "containment", "{:.3f}"),
                            ("contained_in", "containment", "{:.3f}"), ("simhash", "distance", "{}")):
        items = answer[key]
        if items:
            best = items[0]
            more = f" (+{len(items) - 1})" if len(items) > 1 else ""
            parts.append(f"{key} {best['id']} {fmt.format(best[value])}{more}")
    return f"{answer['id']}\t{'; '.join(parts) if parts else 'new'}"


def stats_command(args) -> int:
    from ..store import SeenIndex

    with SeenIndex(args.db, create=False) as index:
        stats = index.stats()
    if args.json:
        print(json.dumps(stats, indent=2, ensure_ascii=False))
        return 0
    cfg = stats["config"]
    sh, mh, lsh = cfg["shingle"], cfg["minhash"], cfg["lsh"]
    print(f"index      {stats['path']}")
    print(f"documents  {stats['documents']}")
    print(f"size       {(stats['database_bytes'] + stats['wal_bytes']) / 1e6:,.1f} MB "
          f"(database {stats['database_bytes']:,} bytes, WAL {stats['wal_bytes']:,} bytes)")
    print(f"created    {stats['created_at']} by {stats['created_by']}, schema version {stats['schema_version']}")
    print(f"shingles   {sh['k']}-{sh['unit']}, hash {sh['hash']}" + (", stored" if cfg["store_shingles"] else ""))
    print(f"minhash    {mh['num_perm']} x {mh['family']}, seed {mh['seed']}; "
          f"{lsh['bands']} bands x {lsh['rows']} rows, threshold {lsh['threshold']}")
    print(f"contains   mod {cfg['containment']['mod_m']} samples, threshold {cfg['containment']['threshold']}"
          + ("" if cfg["containment"]["stored"] else " (not stored: no containment answers)"))
    print("signatures " + (f"stored, {cfg['signatures']['bytes_per_value']} bytes a value" if cfg["signatures"]["stored"]
                            else "not stored (profile lean: near answers estimated from the shared bands)"))
    print(f"simhash    within {cfg['simhash']['max_distance']} bits ({len(cfg['simhash']['blocks'])} blocks)")
    print("urls       " + ("canonical URLs of the documents added with one (rules version "
                           f"{cfg['urls']['rules']['version']})" if "urls" in cfg else
                           "not stored (an index made before schema 7)"))
    print(f"config     fingerprint {stats['config_fingerprint']}")
    return 0


def remove_command(args) -> int:
    from ..store import SeenIndex

    with SeenIndex(args.db, create=False) as index:
        missing = index.remove_many(args.ids)
    ids = list(dict.fromkeys(args.ids))
    print(f"removed {len(ids) - len(missing)} of {len(ids)} documents from {args.db}"
          + (f"; not in the index: {', '.join(missing)}" if missing else ""))
    return 1 if missing else 0


def _is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _serve_fields(args, part: str) -> dict:
    """The fields of ``part`` (``settings``: :class:`~neardup.service.settings.Settings`, ``server``:
    :class:`~neardup.service.settings.ServerOptions`) that ``neardup serve``'s options set."""
    return {o.parameter: option_value(args, o) for f, o in SERVE_OPTIONS.items() if f.startswith(part + ".")}


def serve_command(args) -> int:
    from ..errors import ConfigError, require

    _check_options(args)
    # the app's settings and the server's options, checked before anything is opened
    settings = _serve_fields(args, "settings")
    Settings(**settings)
    server = ServerOptions(**_serve_fields(args, "server"))
    uvicorn = require("uvicorn", "service")
    from ..service import create_app

    token = None
    if server.token_file is not None:
        with open(server.token_file, encoding="utf-8") as fh:
            token = fh.read().strip()
        if not token:
            raise ConfigError(f"the token file {server.token_file} is empty")
    elif not _is_loopback(server.host):
        print(f"neardup: warning: listening on {server.host} without --token-file: anyone who can reach port "
              f"{server.port} can read and change the index", file=sys.stderr)
    synchronous = "full" if server.fsync else "normal"
    index = _open(args, create=True, synchronous=synchronous)
    from ..service.app import protocol_with_header_timeout

    # limit_concurrency: past N connections and requests, uvicorn answers 503 at once instead
    # of taking more work (memory stays bounded); the header deadline frees the connections
    # that slow clients hold.
    run = dict(host=server.host, port=server.port, log_level=server.log_level, access_log=server.access_log,
               server_header=False, limit_concurrency=server.limit_concurrency)
    try:
        print(f"neardup: serving {args.db} ({len(index)} documents) on http://{server.host}:{server.port}"
              + (f" with {server.workers} worker processes" if server.workers > 1 else ""), file=sys.stderr,
              flush=True)
        if server.workers > 1:
            # Each worker process opens the index itself; SQLite serialises their writers.
            from ..service.app import SERVE_ENV

            index.close()
            os.environ[SERVE_ENV] = json.dumps({
                "db": os.path.abspath(args.db), "synchronous": synchronous, "html_mode": args.html,
                "token_file": os.path.abspath(server.token_file) if server.token_file is not None else None,
                "header_timeout": server.header_timeout, **settings})
            # By name: the worker processes import it (a class made here would not pickle).
            uvicorn.run("neardup.service.app:app_from_environment", factory=True, workers=server.workers,
                        http="neardup.service.app:EnvironmentHeaderTimeoutProtocol", **run)
        else:
            app = create_app(index, token=token, html_mode=args.html, close_index=True, writer_process=True,
                             **settings)
            uvicorn.run(app, http=protocol_with_header_timeout(server.header_timeout, app.state.metrics), **run)
    finally:
        index.close()
    return 0
