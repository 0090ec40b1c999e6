"""The work of the document endpoints, off the event loop: worker threads, batch processes
(a lower CPU priority, a GIL of their own), and :class:`Service`, what one app's routes share."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ..errors import require

require("fastapi", "service")

import orjson  # noqa: E402
from pydantic import ValidationError  # noqa: E402

from ..errors import StoreError  # noqa: E402
from ..text.html_pages import extract_with_page  # noqa: E402
from .errors import Busy, UserError, error_of, scrubber  # noqa: E402
from .guard import limit_of, media_of, over_budget  # noqa: E402
from .metrics import Metrics, count  # noqa: E402
from .schemas import RequestBody, validation_answer  # noqa: E402
from .settings import Settings  # noqa: E402
from .writer import Writer  # noqa: E402

__all__ = ["Service", "BatchProcesses", "run_documents", "answer_body", "FAST_PATHS", "FAST_KEYS", "LARGE_BODY",
           "LARGE_TEXT", "BATCH_NICE"]

#: The paths of the fast path (:func:`neardup.service.routes.fast`), and their operations.
FAST_PATHS = {"/v1/check": "check", "/v1/check-and-add": "check-and-add", "/v1/add": "add"}
FAST_KEYS = {"id", "text", "meta", "url"}


def run_documents(index, op: str, docs: list[tuple], limit, html_mode: str, budget: tuple, policy: str = "exact"):
    """``op`` on ``docs`` (``(id, text, html, meta, url)`` tuples): HTML to text and its whole-page
    fingerprint, from one read of the page (with the budget checked again on the extracted text;
    an index that keeps URLs stores the fingerprint beside the URL, so that ``neardup changes``
    against it tells ``template``), then the index's batch call. Runs in a worker thread or a
    batch process."""
    records = []
    for doc_id, text, html, meta, url in docs:
        page = None
        if text is None:
            got = extract_with_page(html, html_mode)
            text, page = got.text, got.page_fingerprint
            problem = over_budget(text, "the document's main text", budget)
            if problem:
                raise UserError(413, problem + "; split the document",
                                 "document_too_many_tokens" if "tokens" in problem else "document_too_large")
        records.append((doc_id, text, meta, url, page))
    if op == "check":
        return index.query_many([(i, t, None, u) for i, t, _, u, _ in records], limit=limit)
    if op == "add":
        return index.add_many(records)
    return index.check_and_add_many(records, limit=limit, policy=policy)


#: Bodies larger than this go whole to a batch process when there is one (see ``precheck``).
LARGE_BODY = 1 << 16
#: So do bodies with a document longer than this (code points after NFKC).
LARGE_TEXT = 1 << 16



def answer_body(op: str, body: bytes, limit: int, max_batch: int, html_mode: str, budget: tuple, index):
    """(status, answer, error kind or None) for a whole request body, as the endpoints answer it:
    parsed, the batch size and the documents' budgets checked, validated, run."""
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        return 422, {"error": f"invalid request: body: JSON decode error ({exc})",
                     "detail": [{"loc": ["body"], "msg": "JSON decode error", "type": "json_invalid"}]}, "invalid"
    if type(doc) is not dict:
        return 422, validation_answer([{"loc": ("body",), "msg": "Input should be a valid dictionary or "
                                         "object to extract fields from", "type": "model_attributes_type"}]), "invalid"
    docs = doc.get("documents")
    if type(docs) is list and len(docs) > max_batch:
        return 422, {"error": f"a batch holds at most {max_batch} documents, got {len(docs)}"}, "batch_too_large"
    items = docs if type(docs) is list else [doc]
    for i, d in enumerate(items):
        text = d.get("text") or d.get("html") if type(d) is dict else None
        if type(text) is str:
            problem = over_budget(text, f"document {i}" if docs is not None else "the document", budget)
            if problem:
                kind = "document_too_many_tokens" if "tokens" in problem else "document_too_large"
                return 413, {"error": problem + "; split the document"}, kind
    try:
        parsed = RequestBody.model_validate(doc)
    except ValidationError as exc:
        return 422, validation_answer([{**e, "loc": ("body", *e["loc"])} for e in exc.errors()]), "invalid"
    batch = parsed.documents is not None
    plain = [(d.id, d.text, d.html, d.meta, d.url) for d in (parsed.documents if batch else [parsed])]
    try:
        out = run_documents(index, op, plain, limit, html_mode, budget)
    except UserError as exc:
        return exc.status, {"error": exc.message}, exc.kind
    if op == "add":
        out = [{"id": i, "added": True} for i in out]
    return 200, ({"results": out} if batch else out[0]), None


#: The index of a batch process (:class:`BatchProcesses`), opened by its initializer.
_BATCH_INDEX = None
#: How much lower the batch processes' CPU priority is (``nice``): bulk work yields the cores
#: to single-document requests, which crawlers wait on one at a time.
BATCH_NICE = 10


def _batch_process_init(path: str, synchronous: str) -> None:
    global _BATCH_INDEX
    import signal

    from ..store import SeenIndex

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server stops this process itself
    _exit_with_parent()
    try:
        os.nice(BATCH_NICE)
    except (AttributeError, OSError):
        pass
    _BATCH_INDEX = SeenIndex(path, create=False, synchronous=synchronous)


def _exit_with_parent() -> None:
    """End this child process when the server that started it dies, even by SIGKILL: a pool
    worker waits on a queue whose other end it holds itself, so it would never see EOF and
    would live on, one more orphan per crash. A thread watches the parent's pid (portable)."""
    import threading

    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(0)

    threading.Thread(target=watch, name="neardup-parent-watch", daemon=True).start()


def _batch_process_run(op, docs, limit, policy, html_mode, budget):
    return run_documents(_BATCH_INDEX, op, docs, limit, html_mode, budget, policy)


def _batch_process_body(op, body, limit, max_batch, html_mode, budget):
    return answer_body(op, body, limit, max_batch, html_mode, budget, _BATCH_INDEX)


def _batch_process_ping() -> bool:
    return _BATCH_INDEX is not None


class BatchProcesses:
    """The batch processes: a ProcessPoolExecutor whose workers open the index by its path,
    restarted when one of them dies (the requests it held get 503)."""

    def __init__(self, index, processes: int):
        self.path, self.synchronous, self.processes = index.path, index.synchronous, processes
        self._lock = threading.Lock()
        self._pool = None

    def _get(self):
        with self._lock:
            if self._pool is None:
                import multiprocessing
                from concurrent.futures import ProcessPoolExecutor

                self._pool = ProcessPoolExecutor(
                    max_workers=self.processes, mp_context=multiprocessing.get_context("spawn"),
                    initializer=_batch_process_init, initargs=(self.path, self.synchronous))
            return self._pool

    def start(self) -> None:
        self._get().submit(_batch_process_ping)  # the children start now, not at the first batch

    async def run(self, op, docs, limit, policy, html_mode, budget, timeout, metrics):
        """The results of ``run_documents`` in a batch process."""
        return await self._call(timeout, metrics, _batch_process_run, op, docs, limit, policy, html_mode, budget)

    async def run_body(self, op, body, limit, max_batch, html_mode, budget, timeout, metrics):
        """(status, answer, error kind) of a whole request body (``answer_body``) in a batch process."""
        return await self._call(timeout, metrics, _batch_process_body, op, body, limit, max_batch, html_mode, budget)

    async def _call(self, timeout, metrics, fn, *args):
        from concurrent.futures.process import BrokenProcessPool

        pool = self._get()
        try:
            future = asyncio.get_running_loop().run_in_executor(pool, fn, *args)
            return await asyncio.wait_for(future, timeout)
        except (asyncio.TimeoutError, TimeoutError):
            count(metrics, "request_timeout")
            raise Busy(f"the request took more than {timeout:g} s; retry later") from None
        except BrokenProcessPool:
            with self._lock:
                if self._pool is pool:
                    self._pool = None
            pool.shutdown(wait=False)
            raise StoreError("a batch process of the server stopped; retry") from None

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


class Service:
    """What the routes of one app share: the index, the settings, the writer, the worker threads
    and batch processes, the metrics, and whether the server is up (``ready``)."""

    def __init__(self, index, settings: Settings):
        self.index = index
        self.settings = settings
        self.writer = Writer(index, process=settings.writer_process)
        self.metrics = Metrics()
        self.pool = ThreadPoolExecutor(max_workers=settings.work_threads, thread_name_prefix="neardup-work")
        self.heavy = BatchProcesses(index, settings.batch_processes) if settings.batch_processes else None
        self.ready = False
        self.scrub = scrubber(index)
        #: the per-document budget, as :func:`~neardup.service.guard.over_budget` takes it
        self.budget = (settings.max_document_chars, settings.max_document_tokens, index.config.shingle.normalize)

    def start(self) -> None:
        """When the server starts: the index's pages mapped, the writer and batch processes up."""
        if self.settings.resident and hasattr(self.index, "keep_resident"):
            self.index.keep_resident()  # returns at once; a thread maps the pages
        self.writer.start()
        if self.heavy is not None:
            self.heavy.start()
        self.ready = True

    def close(self) -> None:
        """When the server stops: what is queued answered, then every thread and process stopped."""
        self.ready = False
        self.writer.close()
        self.pool.shutdown(wait=True)
        if self.heavy is not None:
            self.heavy.close()
        if self.settings.close_index:
            self.index.close()

    def needs_budget(self, text) -> bool:
        """Whether ``text`` must be measured against the budget. Cheap on the event loop: an
        ASCII text no longer than the token budget is within every budget (NFKC keeps ASCII, a
        text has at most as many tokens as characters)."""
        s = self.settings
        return not (type(text) is str and text.isascii() and len(text) <= min(s.max_document_tokens,
                                                                              s.max_document_chars))

    async def in_pool(self, fn, *args):
        """``fn(*args)`` in a worker thread, within the request's time budget."""
        timeout = self.settings.request_timeout
        future = asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)
        try:
            return await asyncio.wait_for(future, timeout)
        except (asyncio.TimeoutError, TimeoutError):
            self.metrics.refuse("request_timeout")
            raise Busy(f"the request took more than {timeout:g} s; retry later") from None

    async def in_batch_process(self, scope, body: bytes):
        """The whole request answered by a batch process: (status, answer, error kind, headers),
        or None for a query string or media type that FastAPI must answer."""
        limit = limit_of(scope.get("query_string", b""))
        if limit is None or media_of(scope) != b"application/json":
            return None
        op = FAST_PATHS[scope["path"]].replace("-", "_")
        s = self.settings
        try:
            return await self.heavy.run_body(op, body, limit, s.max_batch, s.html_mode, self.budget,
                                             s.request_timeout, self.metrics)
        except Exception as exc:  # noqa: BLE001 - the same answers as the handlers
            status, obj, headers = error_of(exc, f"POST {scope['path']}", self.scrub, self.metrics)
            return status, obj, None, headers

    async def run_documents(self, op: str, body: RequestBody, limit: int | None = None, policy: str = "exact"):
        """``op`` ("check", "add", "check_and_add", with its ``policy``) on the body's documents:
        (results, batch).

        Batches and HTML go to the batch processes when there are any (their CPU then competes
        with single-document requests only for a core, not for this process's GIL), else, like
        everything else, to a worker thread."""
        s = self.settings
        batch = body.documents is not None
        docs = body.documents if batch else [body]
        if len(docs) > s.max_batch:  # (counted before validation already; kept for direct callers)
            raise UserError(422, f"a batch holds at most {s.max_batch} documents, got {len(docs)}")
        plain = [(d.id, d.text, d.html, d.meta, d.url) for d in docs]
        if self.heavy is not None and (batch or body.html is not None):
            return await self.heavy.run(op, plain, limit, policy, s.html_mode, self.budget, s.request_timeout,
                                        self.metrics), batch
        return await self.in_pool(run_documents, self.index, op, plain, limit, s.html_mode, self.budget,
                                  policy), batch
