"""The HTTP service: a :class:`~neardup.store.SeenIndex` behind FastAPI.

Endpoints (JSON in, JSON out; OpenAPI schema at ``/openapi.json``, documentation at ``/docs``):

==========================  ===============================================================
``POST /v1/check``          the answer for a document, or ``{"results": [...]}`` for a batch
``POST /v1/add``            store; ``{"id", "added": true}`` or ``{"results": [...]}``
``POST /v1/check-and-add``  the answer plus ``"added"`` (atomic), or ``{"results": [...]}``
``DELETE /v1/documents/ID`` ``{"id", "removed": true}``, 404 when absent (ID may hold ``/``)
``GET /v1/stats``           :meth:`SeenIndex.stats`
``GET /healthz``            ``{"status": "ok", "documents": n}``; never needs the token
``GET /readyz``             ``{"status": "ready"}``, or 503 while starting, stopping or without
                            a writer process; never needs the token
``GET /metrics``            Prometheus text: requests by route and status, a latency histogram,
                            documents, WAL size, errors by kind
==========================  ===============================================================

Request bodies: ``{"id"?, "text"}`` or ``{"id"?, "html"}`` (HTML goes through main-content
extraction, :func:`neardup.text.html.extract_text`), optionally with ``"meta"`` (a JSON object
stored with the document), or ``{"documents": [one of those, ...]}`` for up to ``max_batch``
documents in one request and one transaction. Without an id, ``add`` and ``check-and-add``
store the document under its 16-hex-digit content fingerprint. ``?limit=N`` cuts each answer list.

Every user mistake gets a 4xx and ``{"error": "<what is wrong>"}``: 401 without the right bearer
token (when one is configured; every path but ``/healthz`` and ``/readyz``), 408 for a body that
does not arrive within ``body_timeout``, 413 for a body over ``max_body_bytes`` (refused once
that much is read, the connection closed) or a document over its budget (``max_document_chars``
code points, before and after NFKC, or ``max_document_tokens`` words), 415 for a body not sent
as ``application/json``, 422 for malformed JSON or a body of the wrong shape (with
``"detail"``, the list of problems; ids with lone surrogates are refused here too) or a batch of
more than ``max_batch`` documents (counted before anything is validated), 400 for a document
the index cannot take (a document without words and without an id), 404 for an unknown
document or path, 503 (with ``Retry-After``) when another process holds the index's write lock
too long or a request goes over ``request_timeout``. A 500 means a bug. Error bodies never
name the index file.

Hostile clients (issue 19): sketching and queries run in ``work_threads`` worker threads and the
writer, never on the event loop; budgets bound each document's cost; ``neardup serve`` adds a
deadline for request headers (:func:`protocol_with_header_timeout`, slowloris) and uvicorn's
``limit_concurrency`` (503 past it). Measured in ``docs/service.md``.

The app holds no global state: :func:`create_app` wraps the index it is given, and several apps
(tests) can live in one process.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
import re
import threading
import time
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any

from ..errors import require

require("fastapi", "service")

import orjson  # noqa: E402
from fastapi import FastAPI, Query, Request  # noqa: E402
from fastapi.exceptions import RequestValidationError  # noqa: E402
from fastapi.responses import Response  # noqa: E402
from pydantic import BaseModel, ConfigDict, Field, model_validator  # noqa: E402
from starlette.exceptions import HTTPException as StarletteHTTPException  # noqa: E402

from .._version import __version__  # noqa: E402
from ..errors import MissingDependencyError, NeardupError, StoreError  # noqa: E402

log = logging.getLogger("neardup.service")

DEFAULT_MAX_BODY_BYTES = 32 << 20
DEFAULT_MAX_BATCH = 1000
#: Longest document text, in code points after NFKC (a web page's main text is rarely 100,000).
DEFAULT_MAX_DOCUMENT_CHARS = 1 << 20
#: Most word tokens in one document: the simhash of a document costs 64 bytes per distinct word.
DEFAULT_MAX_DOCUMENT_TOKENS = 200_000
#: Seconds a request may take once its body has arrived (queueing included) before 503.
DEFAULT_REQUEST_TIMEOUT = 30.0
#: Seconds for the whole request body to arrive before 408.
DEFAULT_BODY_TIMEOUT = 30.0
#: Seconds for a request's headers to arrive (a new connection, or the next request of a
#: kept-alive one) before the connection is closed: :func:`protocol_with_header_timeout`.
DEFAULT_HEADER_TIMEOUT = 10.0
#: Threads that sketch and query for requests outside the writer (checks, batches, HTML).
DEFAULT_WORK_THREADS = 2
MAX_ID_LENGTH = 4096


# -- schemas ---------------------------------------------------------------------------------

class DocumentIn(BaseModel):
    """One document: ``text`` or ``html`` (exactly one), an optional id and metadata."""

    # The schema says what the validator checks (schemathesis sends what the schema allows): the
    # content given is a string, the other one is absent or null.
    model_config = ConfigDict(extra="forbid", json_schema_extra={"oneOf": [
        {"required": ["text"], "properties": {"text": {"type": "string"}, "html": {"type": "null"}}},
        {"required": ["html"], "properties": {"html": {"type": "string"}, "text": {"type": "null"}}}]})

    id: str | None = Field(default=None, min_length=1, max_length=MAX_ID_LENGTH,
                           description="the document's id (a URL, a key); default: its content fingerprint")
    text: str | None = Field(default=None, description="plain text")
    html: str | None = Field(default=None, description="an HTML page; its main content is indexed")
    meta: dict[str, Any] | None = Field(default=None, description="stored with the document (add only)")

    @model_validator(mode="after")
    def _one_content(self):
        if (self.text is None) == (self.html is None):
            raise ValueError("give exactly one of 'text' and 'html'")
        return self


class RequestBody(BaseModel):
    """A document (``id``, ``text`` or ``html``, ``meta``) or a batch (``documents``)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"oneOf": [
        {"required": ["text"], "properties": {"text": {"type": "string"}, "html": {"type": "null"},
                                              "documents": {"type": "null"}}},
        {"required": ["html"], "properties": {"html": {"type": "string"}, "text": {"type": "null"},
                                              "documents": {"type": "null"}}},
        {"required": ["documents"], "properties": {"documents": {"type": "array"}, **{
            name: {"type": "null"} for name in ("id", "text", "html", "meta")}}}]})

    id: str | None = Field(default=None, min_length=1, max_length=MAX_ID_LENGTH)
    text: str | None = None
    html: str | None = None
    meta: dict[str, Any] | None = None
    documents: list[DocumentIn] | None = Field(default=None, min_length=1,
                                               description="a batch, answered as {\"results\": [...]} in order")

    @model_validator(mode="after")
    def _one_form(self):
        single = [name for name in ("id", "text", "html", "meta") if getattr(self, name) is not None]
        if self.documents is not None:
            if single:
                raise ValueError(f"give either 'documents' or one document, not both (also got {', '.join(single)})")
            return self
        if (self.text is None) == (self.html is None):
            raise ValueError("give exactly one of 'text' and 'html' (or a batch in 'documents')")
        return self


class Near(BaseModel):
    id: str
    jaccard: float
    exact_jaccard: float | None = None


class Contained(BaseModel):
    id: str
    containment: float
    exact_containment: float | None = None


class Neighbour(BaseModel):
    id: str
    distance: int


class Answer(BaseModel):
    id: str | None
    exact: list[str]
    near: list[Near]
    contains: list[Contained]
    contained_in: list[Contained]
    simhash: list[Neighbour]
    added: bool | None = Field(default=None, description="check-and-add only")


class Added(BaseModel):
    id: str
    added: bool


class Results(BaseModel):
    results: list[dict[str, Any]]


class Removed(BaseModel):
    id: str
    removed: bool


class Error(BaseModel):
    error: str
    detail: list[dict[str, Any]] | None = None


_ERRORS = {status: {"model": Error, "description": text} for status, text in {
    400: "a document the index cannot take", 401: "missing or wrong bearer token",
    408: "the request body did not arrive in time",
    413: "request body too large, or a document over its budget (characters, also after NFKC, or tokens)",
    415: "the body is not sent as application/json",
    422: "malformed JSON or a body of the wrong shape, or a batch of more than max_batch documents",
    503: "the index is busy (another writer), or the request went over its time budget"}.items()}


def _json(obj, status: int = 200, headers: dict | None = None) -> Response:
    return Response(orjson.dumps(obj), status_code=status, media_type="application/json", headers=headers)


# -- authentication and body size, before anything is parsed ---------------------------------

#: Paths that need no token: probes of orchestrators and load balancers.
_OPEN_PATHS = frozenset({"/healthz", "/readyz"})
#: Paths whose JSON bodies are checked (document count and sizes) before FastAPI validates them.
_DOCUMENT_PATHS = frozenset({"/v1/check", "/v1/add", "/v1/check-and-add"})


class _Guard:
    """ASGI middleware: bearer token (all paths but /healthz and /readyz), the request body size
    limit and body read timeout, the batch size and document size limits, and the metrics.

    The body is read here, up to the limit, and replayed to the app, so an oversized body is
    refused with 413 whether or not it declares a Content-Length: at most ``max_body_bytes``
    (plus the last chunk, 64 KiB with uvicorn) are read, then the 413 goes out with
    ``Connection: close`` and nothing more is read (the server closes the connection).
    """

    def __init__(self, app, token: str | None = None, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, fast=None,
                 precheck=None, metrics: "_Metrics | None" = None, body_timeout: float = DEFAULT_BODY_TIMEOUT):
        self.app = app
        self.token = None if token is None else token.encode("utf-8")
        self.max_body_bytes = max_body_bytes
        self.fast = fast
        self.precheck = precheck
        self.metrics = metrics
        self.body_timeout = body_timeout

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if self.metrics is None:
            return await self._serve(scope, receive, send)
        started = time.perf_counter()
        status = 0

        async def counted_send(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self._serve(scope, receive, counted_send)
        finally:
            self.metrics.observe(scope["path"], status, time.perf_counter() - started)

    async def _serve(self, scope, receive, send):
        metrics = self.metrics
        if self.token is not None and scope["path"] not in _OPEN_PATHS:
            problem = self._auth_problem(scope)
            if problem:
                _count(metrics, "unauthorized")
                return await _send(send, 401, {"error": problem}, [(b"www-authenticate", b'Bearer realm="neardup"')])
        declared = None
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    _count(metrics, "bad_request")
                    return await _send(send, 400, {"error": "the Content-Length header is not a number"},
                                       close=True)
        too_large = {"error": f"request body is larger than the limit of {self.max_body_bytes} bytes; "
                              "send fewer documents per request"}
        if declared is not None and declared > self.max_body_bytes:
            _count(metrics, "body_too_large")
            return await _send(send, 413, too_large, close=True)
        body = bytearray()
        deadline = asyncio.get_running_loop().time() + self.body_timeout
        while True:
            try:
                # A client that sends its body slowly (slowloris) holds a connection and a
                # buffer: the whole body must arrive within body_timeout.
                message = await asyncio.wait_for(receive(), deadline - asyncio.get_running_loop().time())
            except (asyncio.TimeoutError, TimeoutError):
                _count(metrics, "body_timeout")
                return await _send(send, 408, {"error": f"the request body did not arrive within "
                                                        f"{self.body_timeout:g} s"}, close=True)
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > self.max_body_bytes:
                # Refused now, with nothing more read: the connection is closed after the answer.
                _count(metrics, "body_too_large")
                return await _send(send, 413, too_large, close=True)
            if not message.get("more_body", False):
                break
        body = bytes(body)
        doc = None
        if self.precheck is not None and scope["method"] == "POST" and scope["path"] in _DOCUMENT_PATHS:
            refused, doc = await self.precheck(scope, body)
            if refused is not None:  # refused, or answered whole by a batch process
                status, obj, kind, headers = (*refused, None)[:4]
                if kind:
                    _count(metrics, kind)
                return await _send(send, status, obj, headers)
        if self.fast is not None and doc is not None and await self.fast(scope, doc, send):
            return
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _auth_problem(self, scope) -> str | None:
        header = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                header = value
        if header is None:
            return "missing bearer token: send the header 'Authorization: Bearer <token>'"
        scheme, _, given = header.partition(b" ")
        if scheme.lower() != b"bearer" or not given.strip():
            return "the Authorization header must be 'Bearer <token>'"
        if not hmac.compare_digest(given.strip(), self.token):
            return "wrong bearer token"
        return None


async def _send(send, status: int, obj: dict, headers: list | None = None, *, close: bool = False) -> None:
    body = obj if isinstance(obj, bytes) else orjson.dumps(obj)
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if close:
        head.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": head + (headers or [])})
    await send({"type": "http.response.body", "body": body})


def _count(metrics, kind: str) -> None:
    if metrics is not None:
        metrics.refuse(kind)


# -- metrics ---------------------------------------------------------------------------------

_ROUTES = ("/v1/check", "/v1/add", "/v1/check-and-add", "/v1/stats", "/healthz", "/readyz", "/metrics",
           "/openapi.json", "/docs")


class _Metrics:
    """Counters for ``GET /metrics`` (Prometheus text format 0.0.4), updated from any thread."""

    #: Upper bounds (seconds) of the latency histogram's buckets.
    BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

    def __init__(self):
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, int], int] = {}
        self.latency: dict[str, list] = {}   # route -> [bucket counts..., sum, count]
        self.errors: dict[str, int] = {}

    @staticmethod
    def route(path: str) -> str:
        if path in _ROUTES:
            return path
        if path.startswith("/v1/documents/"):
            return "/v1/documents/{id}"
        return "other"  # unknown paths would otherwise make one series each

    def observe(self, path: str, status: int, seconds: float) -> None:
        route = self.route(path)
        with self._lock:
            key = (route, status)
            self.requests[key] = self.requests.get(key, 0) + 1
            h = self.latency.get(route)
            if h is None:
                h = self.latency[route] = [0] * len(self.BUCKETS) + [0.0, 0]
            for i, bound in enumerate(self.BUCKETS):
                if seconds <= bound:
                    h[i] += 1
                    break
            h[-2] += seconds
            h[-1] += 1

    def refuse(self, kind: str) -> None:
        with self._lock:
            self.errors[kind] = self.errors.get(kind, 0) + 1

    def render(self, gauges: dict) -> str:
        lines = ["# HELP neardup_requests_total HTTP requests answered, by route and status.",
                 "# TYPE neardup_requests_total counter"]
        with self._lock:
            requests = sorted(self.requests.items())
            latency = sorted((r, list(h)) for r, h in self.latency.items())
            errors = sorted(self.errors.items())
        for (route, status), n in requests:
            lines.append(f'neardup_requests_total{{route="{route}",status="{status}"}} {n}')
        lines += ["# HELP neardup_request_duration_seconds Time from the request's arrival to its answer.",
                  "# TYPE neardup_request_duration_seconds histogram"]
        for route, h in latency:
            total = 0
            for bound, n in zip(self.BUCKETS, h):
                total += n
                lines.append(f'neardup_request_duration_seconds_bucket{{route="{route}",le="{bound:g}"}} {total}')
            lines.append(f'neardup_request_duration_seconds_bucket{{route="{route}",le="+Inf"}} {h[-1]}')
            lines.append(f'neardup_request_duration_seconds_sum{{route="{route}"}} {h[-2]:.6f}')
            lines.append(f'neardup_request_duration_seconds_count{{route="{route}"}} {h[-1]}')
        lines += ["# HELP neardup_errors_total Requests refused or failed, by kind.",
                  "# TYPE neardup_errors_total counter"]
        for kind, n in errors:
            lines.append(f'neardup_errors_total{{kind="{kind}"}} {n}')
        for name, (help_text, value) in gauges.items():
            lines += [f"# HELP neardup_{name} {help_text}", f"# TYPE neardup_{name} gauge", f"neardup_{name} {value}"]
        return "\n".join(lines) + "\n"


# -- slow clients: a deadline for the request headers ------------------------------------------

def protocol_with_header_timeout(timeout: float = DEFAULT_HEADER_TIMEOUT, metrics: "_Metrics | None" = None):
    """uvicorn's HTTP protocol class (its ``http=`` setting) with a deadline for request headers.

    uvicorn has none: a client that sends a header byte every few seconds (slowloris) keeps its
    connection, and with ``limit_concurrency`` its slot, forever. Here a connection must deliver
    the complete headers of each request (the blank line that ends them) within ``timeout``
    seconds of connecting or of the previous answer, or it is closed. The body has its own
    deadline in :class:`_Guard`.
    """
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    class HeaderTimeoutProtocol(AutoHTTPProtocol):
        # The deadline runs from the connection (a silent new connection is held too) and, on a
        # kept-alive one, from the previous answer: the next request may already be buffered
        # (pipelined), which no later byte would announce. An idle kept-alive connection is
        # closed by uvicorn's timeout_keep_alive (5 s) before this deadline (10 s by default).
        def connection_made(self, transport):
            super().connection_made(transport)
            self._nd_tail = b""
            self._nd_timer = None
            self._nd_arm()

        def _nd_arm(self):
            self._nd_tail = b""
            if self._nd_timer is not None:
                self._nd_timer.cancel()
            self._nd_timer = asyncio.get_running_loop().call_later(timeout, self._nd_expired)

        def _nd_expired(self):
            self._nd_timer = None
            cycle = getattr(self, "cycle", None)
            if cycle is not None and not getattr(cycle, "response_complete", True):
                return  # a request is running (pipelined: its headers came with the last one)
            if metrics is not None:
                metrics.refuse("header_timeout")
            self.transport.close()

        def data_received(self, data):
            if self._nd_timer is not None:
                seen = self._nd_tail + data
                if b"\r\n\r\n" in seen:
                    self._nd_timer.cancel()
                    self._nd_timer = None
                else:
                    self._nd_tail = seen[-3:]
            super().data_received(data)

        def on_response_complete(self):
            super().on_response_complete()
            if not self.transport.is_closing():
                self._nd_arm()  # the next request's headers are due

        def connection_lost(self, exc):
            if self._nd_timer is not None:
                self._nd_timer.cancel()
                self._nd_timer = None
            super().connection_lost(exc)

    return HeaderTimeoutProtocol


# -- the per-document budget -------------------------------------------------------------------

def _nfkc_length(text: str, limit: int) -> int:
    """The length of NFKC(text) in code points, or a number above ``limit`` as soon as it is
    known to be, found without building more than about ``limit`` of them: NFKC can multiply a
    text's length by 18 (U+FDFA), and one call on a few MiB of such text holds the GIL for
    seconds and allocates gigabytes.

    Pieces of 64 Ki code points are normalized one at a time and their lengths summed; a cut
    may fall inside a combining sequence, which changes the sum by a few code points, which a
    budget does not mind.
    """
    if unicodedata.is_normalized("NFKC", text):
        return len(text)
    total = 0
    step = 1 << 16
    for start in range(0, len(text), step):
        total += len(unicodedata.normalize("NFKC", text[start:start + step]))
        if total > limit:
            break
    return total


def _nfkc_length_within(text: str, limit: int) -> bool:
    """Whether NFKC(text) has at most ``limit`` code points (:func:`_nfkc_length`)."""
    return _nfkc_length(text, limit) <= limit


# -- the app ---------------------------------------------------------------------------------

def create_app(index, *, token: str | None = None, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
               max_batch: int = DEFAULT_MAX_BATCH, html_mode: str = "main", close_index: bool = False,
               resident: bool = True, writer_process: bool = False,
               max_document_chars: int = DEFAULT_MAX_DOCUMENT_CHARS,
               max_document_tokens: int = DEFAULT_MAX_DOCUMENT_TOKENS,
               request_timeout: float = DEFAULT_REQUEST_TIMEOUT, body_timeout: float = DEFAULT_BODY_TIMEOUT,
               work_threads: int = DEFAULT_WORK_THREADS, batch_processes: int = 0):
    """An ASGI app serving ``index`` (a :class:`~neardup.store.SeenIndex`).

    Args:
        token: the bearer token every request but ``/healthz`` and ``/readyz`` must carry (None: no auth).
        max_body_bytes: larger request bodies are refused with 413, after reading at most this
            much of them.
        max_batch: most documents in one ``{"documents": [...]}`` request (more: 422, before
            the documents are validated or sketched).
        html_mode: ``"main"`` or ``"whole"``, how ``html`` bodies become text.
        close_index: close the index when the server shuts down (the app then owns it).
        resident: when the server starts, keep the index file mapped in memory
            (:meth:`SeenIndex.keep_resident`): a server's queries then do not wait for pages the
            operating system evicted while they were not read (the p99 of a large index).
        writer_process: run the fast path's writes (single-document add and check-and-add) in a
            child process of their own (:class:`_Writer`; ``neardup serve`` does). The index must
            be a file that the child can open.
        max_document_chars: the budget of one document: most code points of its text (or HTML)
            and of its text after NFKC (413 beyond).
        max_document_tokens: the budget of one document in word tokens (413 beyond).
        request_timeout: seconds a request may wait and work once its body has arrived; later,
            503 with ``Retry-After`` (a check-and-add or add may still be stored then).
        body_timeout: seconds for the whole body to arrive (408 and the connection closed).
        work_threads: threads sketching and querying for checks, batches and HTML, off the
            event loop (single-document writes go to the writer).
        batch_processes: child processes (at a lower CPU priority, ``nice`` +10) that run
            batches and HTML requests instead of the worker threads (``neardup serve`` uses
            1). Sketching a batch of 1000 pages holds a GIL for about a second; in a process of
            its own it does not hold this one's, which the event loop and the writer need for
            every single-document request. The index must be a file that the children can open.
    """
    from .._validate import check_float, check_int

    if token is not None and not token:
        from ..errors import ConfigError

        raise ConfigError("the service token must not be empty")
    check_int("max_document_chars", max_document_chars, 1, None, owner="create_app")
    check_int("max_document_tokens", max_document_tokens, 1, None, owner="create_app")
    check_int("work_threads", work_threads, 1, 1024, owner="create_app")
    check_int("batch_processes", batch_processes, 0, 1024, owner="create_app")
    check_float("request_timeout", request_timeout, 0.0, float("inf"), closed="neither", owner="create_app")
    check_float("body_timeout", body_timeout, 0.0, float("inf"), closed="neither", owner="create_app")

    writer = _Writer(index, process=writer_process)
    metrics = _Metrics()
    pool = ThreadPoolExecutor(max_workers=work_threads, thread_name_prefix="neardup-work")
    state = {"ready": False}
    scrub = _scrubber(index)
    norm = index.config.shingle.normalize

    @asynccontextmanager
    async def lifespan(app):
        if resident and hasattr(index, "keep_resident"):
            index.keep_resident()  # returns at once; a thread maps the pages
        writer.start()
        if heavy is not None:
            heavy.start()
        state["ready"] = True
        yield
        state["ready"] = False
        writer.close()
        pool.shutdown(wait=True)
        if heavy is not None:
            heavy.close()
        if close_index:
            index.close()

    app = FastAPI(title="neardup", version=__version__, lifespan=lifespan,
                  description="A persistent \"seen before?\" index: exact copies, near-copies, containment "
                              "and simhash neighbours of text and HTML pages.")
    app.state.index = index
    app.state.metrics = metrics

    budget = (max_document_chars, max_document_tokens, norm)

    def over_budget(text: str, where: str) -> str | None:
        return _over_budget(text, where, budget)

    def needs_budget(text) -> bool:
        # Cheap on the event loop: an ASCII text no longer than the token budget is within
        # every budget (NFKC keeps ASCII, a text has at most as many tokens as characters).
        return not (type(text) is str and text.isascii() and len(text) <= min(max_document_tokens,
                                                                              max_document_chars))

    async def in_pool(fn, *args):
        """``fn(*args)`` in a worker thread, within the request's time budget."""
        future = asyncio.get_running_loop().run_in_executor(pool, fn, *args)
        try:
            return await asyncio.wait_for(future, request_timeout)
        except (asyncio.TimeoutError, TimeoutError):
            metrics.refuse("request_timeout")
            raise _Busy(f"the request took more than {request_timeout:g} s; retry later") from None

    async def precheck(scope, body: bytes):
        """(refusal, parsed body): the document count and each document's size checked before
        FastAPI validates anything; (None, None) when the body is not a JSON object (FastAPI's
        validation answers it).

        With batch processes, a large body (more than LARGE_BODY bytes) is answered whole by
        one of them: parsing, checks, validation and the work stay off this process's GIL, so
        that megabytes of hostile JSON do not slow everyone else's requests."""
        if heavy is not None and len(body) > LARGE_BODY:
            answer = await in_batch_process(scope, body)
            if answer is not None:
                return answer, None

        def parse():
            try:
                return orjson.loads(body)
            except orjson.JSONDecodeError:
                return None

        # orjson parses about 1 GB/s: on the loop for small bodies, else off it.
        doc = parse() if len(body) <= 1 << 16 else await in_pool(parse)
        if type(doc) is not dict:
            return None, None
        docs = doc.get("documents")
        if type(docs) is list:
            if len(docs) > max_batch:
                return (422, {"error": f"a batch holds at most {max_batch} documents, got {len(docs)}"},
                        "batch_too_large"), None
            texts = [(f"document {i}", d.get("text") or d.get("html")) for i, d in enumerate(docs)
                     if type(d) is dict]
        else:
            texts = [("the document", doc.get("text") or doc.get("html"))]
        texts = [(where, t) for where, t in texts if type(t) is str]
        if any(needs_budget(t) for _, t in texts):
            def check_all():
                longest = 0
                for where, t in texts:
                    problem = over_budget(t, where)
                    if problem:
                        return problem, longest
                    longest = max(longest, len(t) if t.isascii() else _nfkc_length(t, max_document_chars))
                return None, longest

            problem, longest = await in_pool(check_all)
            if problem:
                kind = "document_too_many_tokens" if "tokens" in problem else "document_too_large"
                return (413, {"error": problem + "; split the document"}, kind), None
            if heavy is not None and longest > LARGE_TEXT:
                # A small body whose text NFKC makes long (21,800 U+FDFA: 64 KiB, 390,000 code
                # points, 0.1-0.16 s to sketch) is heavy work too: the batch process does it.
                answer = await in_batch_process(scope, body)
                if answer is not None:
                    return answer, None
        return None, doc

    async def in_batch_process(scope, body: bytes):
        """The whole request answered by a batch process: (status, answer, error kind, headers),
        or None for a query string or media type that FastAPI must answer."""
        limit = _limit_of(scope.get("query_string", b""))
        if limit is None or _media_of(scope) != b"application/json":
            return None
        op = _FAST_PATHS[scope["path"]].replace("-", "_")
        try:
            return await heavy.run_body(op, body, limit, max_batch, html_mode, budget, request_timeout, metrics)
        except Exception as exc:  # noqa: BLE001 - the same answers as the handlers
            status, obj, headers = _error_of(exc, f"POST {scope['path']}", scrub, metrics)
            return status, obj, None, headers

    heavy = _HeavyPool(index, batch_processes) if batch_processes else None

    async def run_documents(op: str, body: RequestBody, limit: int | None = None, policy: str = "exact"):
        """``op`` ("check", "add", "check_and_add", with its ``policy``) on the body's documents:
        (results, batch).

        Batches and HTML go to the batch processes when there are any (their CPU then competes
        with single-document requests only for a core, not for this process's GIL), else, like
        everything else, to a worker thread."""
        batch = body.documents is not None
        docs = body.documents if batch else [body]
        if len(docs) > max_batch:  # (counted before validation already; kept for direct callers)
            raise _UserError(422, f"a batch holds at most {max_batch} documents, got {len(docs)}")
        plain = [(d.id, d.text, d.html, d.meta) for d in docs]
        if heavy is not None and (batch or body.html is not None):
            return await heavy.run(op, plain, limit, policy, html_mode, budget, request_timeout, metrics), batch
        return await in_pool(_run_documents, index, op, plain, limit, html_mode, budget, policy), batch

    @app.post("/v1/check", response_model=Answer | Results, responses=_ERRORS,
              summary="what the index holds that resembles the document(s); stores nothing")
    async def check(body: RequestBody, limit: int = Query(100, ge=1, le=100_000)):
        answers, batch = await run_documents("check", body, limit)
        return _json({"results": answers} if batch else answers[0])

    # The link lets schemathesis's stateful phase delete what it added (and find the 404s).
    @app.post("/v1/add", response_model=Added | Results,
              responses={**_ERRORS, 200: {"description": "the stored id(s)", "links": {"RemoveDocument": {
                  "operationId": "remove_v1_documents__doc_id__delete",
                  "parameters": {"doc_id": "$response.body#/id"}}}}},
              summary="store the document(s), replacing any with the same id")
    async def add(body: RequestBody):
        ids, batch = await run_documents("add", body)
        results = [{"id": i, "added": True} for i in ids]
        return _json({"results": results} if batch else results[0])

    @app.post("/v1/check-and-add", response_model=Answer | Results, responses=_ERRORS,
              summary="check and, unless a copy is stored, add: one atomic step")
    async def check_and_add(body: RequestBody, limit: int = Query(100, ge=1, le=100_000),
                            policy: str = Query("exact", pattern="^(exact|near)$",
                                                description="a copy is an exact one (exact), or an exact or "
                                                            "near one (near)")):
        answers, batch = await run_documents("check_and_add", body, limit, policy)
        return _json({"results": answers} if batch else answers[0])

    @app.delete("/v1/documents/{doc_id:path}", response_model=Removed, responses={**_ERRORS, 404: {"model": Error}},
                summary="remove a document")
    async def remove(doc_id: str):
        if not await in_pool(index.remove, doc_id):
            raise _UserError(404, f"no document with id {doc_id!r}")
        return _json({"id": doc_id, "removed": True})

    # Cheap reads run on the event loop: a thread hop would cost more than they do.
    @app.get("/v1/stats", summary="documents, sizes and the index configuration")
    async def stats():
        out = index.stats()
        out.pop("path", None)  # the server's file system is none of the client's business
        return _json(out)

    @app.get("/healthz", summary="liveness; needs no token")
    async def healthz():
        return _json({"status": "ok", "documents": len(index)})

    @app.get("/readyz", summary="readiness: the index answers and its writer runs; needs no token",
             responses={503: {"model": Error, "description": "not ready (starting, stopping, writer down)"}})
    async def readyz():
        problem = None
        if not state["ready"]:
            problem = "the server is starting or stopping"
        elif not writer.ready():
            problem = "the index's writer process is not running"
        else:
            try:
                len(index)
            except Exception as exc:  # noqa: BLE001 - any failure means "not ready"
                problem = f"the index does not answer ({type(exc).__name__})"
        if problem:
            return _json({"error": problem}, 503, headers={"Retry-After": "1"})
        return _json({"status": "ready"})

    @app.get("/metrics", summary="Prometheus metrics (text format 0.0.4)",
             responses={200: {"content": {"text/plain": {}}, "description": "the metrics"}})
    async def metrics_endpoint():
        wal = index.path + "-wal"
        gauges = {
            "documents": ("Documents in the index.", len(index)),
            "wal_bytes": ("Size of the index's write-ahead log.", os.path.getsize(wal) if os.path.exists(wal) else 0),
            "writer_queue": ("Requests waiting for the writer.", writer.queued()),
        }
        return Response(metrics.render(gauges), media_type="text/plain; version=0.0.4; charset=utf-8")

    @app.exception_handler(_UserError)
    async def user_error(request: Request, exc: _UserError):
        metrics.refuse(exc.kind)
        return _json({"error": exc.message}, exc.status)

    @app.exception_handler(_Busy)
    async def busy_request(request: Request, exc: _Busy):
        return _json({"error": str(exc)}, 503, headers={"Retry-After": "1"})

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if request.method == "POST" and media != "application/json" and not media.endswith("+json"):
            metrics.refuse("unsupported_media_type")
            return _json({"error": f"the body must be JSON sent with 'Content-Type: application/json' "
                                   f"(got {media or 'no Content-Type'})"}, 415)
        metrics.refuse("invalid")
        return _json(_validation_answer(exc.errors()), 422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        if exc.status_code == 404:
            message = f"no such endpoint: {request.method} {request.url.path}"
        elif exc.status_code == 405:
            message = f"{request.method} is not allowed on {request.url.path}"
        metrics.refuse({404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error"))
        return _json({"error": message}, exc.status_code, headers=getattr(exc, "headers", None))

    async def index_error(request: Request, exc: Exception):
        status, obj, headers = _error_of(exc, f"{request.method} {request.url.path}", scrub, metrics)
        return _json(obj, status, headers={k.decode(): v.decode() for k, v in headers or ()})

    # One handler, registered for each class: Starlette's handler for Exception itself runs
    # outside the others and re-raises (a bug is logged with its traceback by the server too).
    for cls in (StoreError, MissingDependencyError, NeardupError, Exception):
        app.add_exception_handler(cls, index_error)

    async def fast(scope, doc, send) -> bool:
        """The everyday requests, one plain-text document to check, check-and-add or add, answered
        without FastAPI's routing and pydantic (they cost as much CPU as the query itself).

        ``doc`` is the parsed body (its size already checked). Anything else, including every
        malformed request, returns False and goes to FastAPI, whose validation and error messages
        stay the only ones. The answers are the endpoints'.
        """
        op = _FAST_PATHS.get(scope["path"])
        if op is None:
            return False
        limit = 100
        query = scope.get("query_string", b"")
        if query:
            name, _, value = query.partition(b"=")
            if name != b"limit" or not value.isdigit() or value.startswith(b"0") or len(value) > 6:
                return False
            limit = int(value)
            if limit > 100_000:
                return False
        media = b""
        for name, value in scope["headers"]:
            if name == b"content-type":
                media = value
        if media.split(b";")[0].strip().lower() != b"application/json":
            return False
        if not doc.keys() <= _FAST_KEYS or type(doc.get("text")) is not str:
            return False
        doc_id, meta = doc.get("id"), doc.get("meta")
        if doc_id is not None and (type(doc_id) is not str or not 1 <= len(doc_id) <= MAX_ID_LENGTH):
            return False
        if meta is not None and type(meta) is not dict:
            return False
        try:
            if op == "check":
                answer = (await in_pool(lambda: index.query_many([(doc_id, doc["text"])], limit=limit)))[0]
            else:
                # Sketched, checked and stored by the writer thread, together with whatever other
                # requests arrived meanwhile (one transaction, one COMMIT).
                if op == "check-and-add":
                    request = ("check_and_add", [(doc_id, doc["text"], meta)], limit)
                else:
                    request = ("add", [(doc_id, doc["text"], meta)])
                try:
                    result = await asyncio.wait_for(writer.run(request), request_timeout)
                except (asyncio.TimeoutError, TimeoutError):
                    metrics.refuse("request_timeout")
                    raise _Busy(f"the request took more than {request_timeout:g} s; retry later (it may "
                                f"have been stored: a retried check-and-add then reports an exact copy)") from None
                answer = result[0] if op == "check-and-add" else {"id": result[0], "added": True}
        except Exception as exc:  # the same answers as the exception handlers below
            status, obj, headers = _error_of(exc, f"POST {scope['path']}", scrub, metrics)
            await _send(send, status, obj, headers)
            return True
        await _send(send, 200, orjson.dumps(answer))
        return True

    app.add_middleware(_Guard, token=token, max_body_bytes=max_body_bytes, fast=fast, precheck=precheck,
                       metrics=metrics, body_timeout=body_timeout)
    return app


def _over_budget(text: str, where: str, budget: tuple) -> str | None:
    """Why ``text`` is over the per-document budget ``(max_chars, max_tokens, normalize params)``,
    or None. Runs off the event loop."""
    max_chars, max_tokens, norm = budget
    if len(text) > max_chars:
        return f"{where} has {len(text)} characters, more than the limit of {max_chars}"
    # NFKC leaves ASCII as it is; other text is measured before anything folds it whole.
    if not text.isascii() and not _nfkc_length_within(text, max_chars):
        return f"{where} grows past the limit of {max_chars} characters under NFKC normalization"
    if len(text) > max_tokens:  # a shorter text cannot hold more tokens
        from ..text.tokenize import words_of_folded
        from ..text.normalize import fold

        n = len(words_of_folded(fold(text, norm), norm.remove_punctuation))
        if n > max_tokens:
            return f"{where} has {n} word tokens, more than the limit of {max_tokens}"
    return None


def _run_documents(index, op: str, docs: list[tuple], limit, html_mode: str, budget: tuple, policy: str = "exact"):
    """``op`` on ``docs`` (``(id, text, html, meta)`` tuples): HTML to text (with the budget
    checked again on the extracted text), then the index's batch call. Runs in a worker thread
    or a batch process."""
    records = []
    for doc_id, text, html, meta in docs:
        if text is None:
            from ..text.html import extract_text

            text = extract_text(html, html_mode)
            problem = _over_budget(text, "the document's main text", budget)
            if problem:
                raise _UserError(413, problem + "; split the document",
                                 "document_too_many_tokens" if "tokens" in problem else "document_too_large")
        records.append((doc_id, text, meta))
    if op == "check":
        return index.query_many([(i, t) for i, t, _ in records], limit=limit)
    if op == "add":
        return index.add_many(records)
    return index.check_and_add_many(records, limit=limit, policy=policy)


#: Bodies larger than this go whole to a batch process when there is one (see ``precheck``).
LARGE_BODY = 1 << 16
#: So do bodies with a document longer than this (code points after NFKC).
LARGE_TEXT = 1 << 16


def _validation_answer(errors) -> dict:
    """The 422 body for pydantic's errors (locations starting with "body")."""
    detail = [_clean(e) for e in errors]
    if len(detail) == 1 and detail[0]["loc"] == ["body"] and detail[0]["type"] == "model_attributes_type":
        return {"error": "the body must be a JSON object: {\"text\": ...}, {\"html\": ...} or "
                         "{\"documents\": [...]}", "detail": detail}
    summary = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in detail[:5])
    return {"error": f"invalid request: {summary}", "detail": detail}


def _limit_of(query: bytes) -> int | None:
    """``?limit=N`` (default 100), or None for any other query string (FastAPI answers it)."""
    if not query:
        return 100
    name, _, value = query.partition(b"=")
    if name != b"limit" or not value.isdigit() or value.startswith(b"0") or len(value) > 6:
        return None
    limit = int(value)
    return limit if limit <= 100_000 else None


def _media_of(scope) -> bytes:
    media = b""
    for name, value in scope["headers"]:
        if name == b"content-type":
            media = value
    return media.split(b";")[0].strip().lower()


def _answer_body(op: str, body: bytes, limit: int, max_batch: int, html_mode: str, budget: tuple, index):
    """(status, answer, error kind or None) for a whole request body, as the endpoints answer it:
    parsed, the batch size and the documents' budgets checked, validated, run."""
    from pydantic import ValidationError

    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        return 422, {"error": f"invalid request: body: JSON decode error ({exc})",
                     "detail": [{"loc": ["body"], "msg": "JSON decode error", "type": "json_invalid"}]}, "invalid"
    if type(doc) is not dict:
        return 422, _validation_answer([{"loc": ("body",), "msg": "Input should be a valid dictionary or "
                                         "object to extract fields from", "type": "model_attributes_type"}]), "invalid"
    docs = doc.get("documents")
    if type(docs) is list and len(docs) > max_batch:
        return 422, {"error": f"a batch holds at most {max_batch} documents, got {len(docs)}"}, "batch_too_large"
    items = docs if type(docs) is list else [doc]
    for i, d in enumerate(items):
        text = d.get("text") or d.get("html") if type(d) is dict else None
        if type(text) is str:
            problem = _over_budget(text, f"document {i}" if docs is not None else "the document", budget)
            if problem:
                kind = "document_too_many_tokens" if "tokens" in problem else "document_too_large"
                return 413, {"error": problem + "; split the document"}, kind
    try:
        parsed = RequestBody.model_validate(doc)
    except ValidationError as exc:
        return 422, _validation_answer([{**e, "loc": ("body", *e["loc"])} for e in exc.errors()]), "invalid"
    batch = parsed.documents is not None
    plain = [(d.id, d.text, d.html, d.meta) for d in (parsed.documents if batch else [parsed])]
    try:
        out = _run_documents(index, op, plain, limit, html_mode, budget)
    except _UserError as exc:
        return exc.status, {"error": exc.message}, exc.kind
    if op == "add":
        out = [{"id": i, "added": True} for i in out]
    return 200, ({"results": out} if batch else out[0]), None


#: The index of a batch process (:class:`_HeavyPool`), opened by its initializer.
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
    return _run_documents(_BATCH_INDEX, op, docs, limit, html_mode, budget, policy)


def _batch_process_body(op, body, limit, max_batch, html_mode, budget):
    return _answer_body(op, body, limit, max_batch, html_mode, budget, _BATCH_INDEX)


def _batch_process_ping() -> bool:
    return _BATCH_INDEX is not None


class _HeavyPool:
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
        """The results of ``_run_documents`` in a batch process."""
        return await self._call(timeout, metrics, _batch_process_run, op, docs, limit, policy, html_mode, budget)

    async def run_body(self, op, body, limit, max_batch, html_mode, budget, timeout, metrics):
        """(status, answer, error kind) of a whole request body (``_answer_body``) in a batch process."""
        return await self._call(timeout, metrics, _batch_process_body, op, body, limit, max_batch, html_mode, budget)

    async def _call(self, timeout, metrics, fn, *args):
        from concurrent.futures.process import BrokenProcessPool

        pool = self._get()
        try:
            future = asyncio.get_running_loop().run_in_executor(pool, fn, *args)
            return await asyncio.wait_for(future, timeout)
        except (asyncio.TimeoutError, TimeoutError):
            _count(metrics, "request_timeout")
            raise _Busy(f"the request took more than {timeout:g} s; retry later") from None
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


_FAST_PATHS = {"/v1/check": "check", "/v1/check-and-add": "check-and-add", "/v1/add": "add"}
_FAST_KEYS = {"id", "text", "meta"}


def _scrubber(index):
    """A function that takes the index file's path (and its folder) out of a message: error
    bodies go to clients, who have no business knowing the server's file system."""
    path = os.fspath(getattr(index, "path", "") or "")
    names = sorted({p for p in (path, os.path.abspath(path) if path else "", os.path.realpath(path) if path else "")
                    if p}, key=len, reverse=True)
    if not names:
        return lambda message: message
    pattern = re.compile("(?:the )?(?:index )?(?:" + "|".join(re.escape(n) for n in names) + ")")
    return lambda message: pattern.sub("the index", message)


def _error_of(exc: Exception, where: str, scrub=None, metrics=None) -> tuple[int, dict, list | None]:
    """(status, body, headers) for an exception of the index, as the app's exception handlers give."""
    scrub = scrub or (lambda m: m)
    if isinstance(exc, _UserError):
        _count(metrics, exc.kind)
        return exc.status, {"error": exc.message}, None
    if isinstance(exc, _Busy):
        return 503, {"error": str(exc)}, [(b"retry-after", b"1")]
    if isinstance(exc, StoreError):
        log.warning("store error: %s", exc)
        _count(metrics, "store_busy")
        return 503, {"error": scrub(str(exc))}, [(b"retry-after", b"1")]
    if isinstance(exc, MissingDependencyError):
        _count(metrics, "missing_dependency")
        return 501, {"error": scrub(str(exc))}, None
    if isinstance(exc, NeardupError):
        _count(metrics, "bad_document")
        return 400, {"error": scrub(str(exc))}, None
    log.exception("internal error on %s", where, exc_info=exc)
    _count(metrics, "internal")
    return 500, {"error": f"internal error ({type(exc).__name__}); see the server log"}, None


#: Environment variable carrying the settings of ``neardup serve --workers N`` to each worker.
SERVE_ENV = "NEARDUP_SERVE_SETTINGS"


def app_from_environment():
    """The app of one worker of ``neardup serve --workers N`` (uvicorn imports it in each process).

    Settings come from the :data:`SERVE_ENV` environment variable (JSON: ``db``, ``token_file``,
    ``max_body_bytes``, ``max_batch``, ``html_mode``, ``synchronous``, ``resident`` and the budgets
    ``max_document_chars``, ``max_document_tokens``, ``request_timeout``, ``body_timeout``); the index exists already
    (the parent created and checked it). Every worker opens its own connections to the file.
    """
    import json
    import os

    from ..store import SeenIndex

    settings = json.loads(os.environ[SERVE_ENV])
    token = None
    if settings.get("token_file"):
        with open(settings["token_file"], encoding="utf-8") as fh:
            token = fh.read().strip()
    index = SeenIndex(settings["db"], create=False, synchronous=settings.get("synchronous", "normal"))
    limits = {k: settings[k] for k in ("max_document_chars", "max_document_tokens", "request_timeout",
                                         "body_timeout", "batch_processes") if k in settings}
    return create_app(index, token=token, max_body_bytes=settings["max_body_bytes"],
                      max_batch=settings["max_batch"], html_mode=settings["html_mode"], close_index=True,
                      resident=settings.get("resident", True), writer_process=True, **limits)


def __getattr__(name):
    # uvicorn imports the protocol of ``neardup serve --workers N`` by name in each worker.
    if name == "EnvironmentHeaderTimeoutProtocol":
        import json

        settings = json.loads(os.environ.get(SERVE_ENV, "{}"))
        return protocol_with_header_timeout(float(settings.get("header_timeout", DEFAULT_HEADER_TIMEOUT)))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _Writer:
    """The thread that runs the writes of the fast path (single-document add and check-and-add),
    in groups: group commit across requests.

    The event loop queues a request; this thread takes everything queued, sketches the group's
    texts as one batch, runs the writes in one write transaction (each request in order and in
    its own savepoint, so each sees the ones before it and "new exactly once" holds), and answers
    each request only after the ``COMMIT`` (an acknowledged add is in the WAL).

    With ``process=True`` (``neardup serve``) the writes run in a child process of their own
    (:func:`_writer_process`): this thread sketches a group and sends it, a second thread
    receives the answers, and the child runs whatever groups have arrived as one transaction.

    Why a process (measured at 1M documents, 8 clients, 2 cores). The writer is the service's
    bottleneck: about 3 ms of CPU per check-and-add, two thirds of it inside SQLite with the GIL
    released. In the server's process it shares the GIL with the event loop and with sketching,
    and each time it comes back from SQLite it may wait for the GIL; 200-218 requests/s. In a
    process of its own it never waits for a GIL, and the next group is sketched meanwhile, here,
    on the other core. Threads instead (a sketching thread beside the writer thread, or the reads
    done ahead of the write lock on another connection) measured slower: the threads take turns
    on the GIL, and a second connection rereads the pages the writer changed.

    Why one thread and not the thread pool (measured with 8 clients on a 100,000-document index).
    Before, each request went to its own thread-pool thread, sketched there and queued at the
    index's group commit: the threads waking each other and taking turns on the GIL cost about
    2 ms of server CPU per check-and-add beyond the 2.6 ms the same calls take in one thread
    (204 requests/s against 267/s). Requests of other paths (batches, HTML) still go through the
    thread pool and meet these at the index's own write lock.
    """

    #: Most requests in one group (a bound on the wait of the first of them).
    MAX_GROUP = 64
    #: With ``process=True``, most requests sketched and sent together. Small, so that the
    #: writer process always has a group to write while the next one is sketched: 8 clients whose
    #: requests all went out as one group would wait for its answers before sending the next,
    #: and sketching and writing would take turns instead of overlapping (measured without
    #: HTTP at 1M documents: 310 check-and-adds/s in groups of 4, 270/s in groups of up to 64).
    #: The writer process still commits every group that has arrived as one transaction.
    SEND_GROUP = 4

    def __init__(self, index, *, process: bool = False):
        self.index = index
        self.process = process
        self._queue: list = []
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._child = None          # the writer process and its pipes (process=True)
        self._sent: list = []       # groups sent to the child, oldest first, with their pipes

    def ready(self) -> bool:
        """Whether writes can be taken: not closed, and with process=True a live writer process."""
        with self._cond:
            if self._closed:
                return False
            return not self.process or (self._child is not None and self._child[0].is_alive())

    def queued(self) -> int:
        """Requests waiting for the writer thread."""
        with self._cond:
            return len(self._queue)

    def start(self) -> None:
        """Start the writer process now rather than at the first write (process=True)."""
        if self.process:
            with self._cond:
                self._start_child()

    async def run(self, request):
        """``request`` (``("add", docs)`` or ``("check_and_add", docs, limit)``, as
        :meth:`SeenIndex.prepare_many` takes) sketched, run and committed by the writer thread;
        its result, or its exception raised here."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        with self._cond:
            if self._closed:
                raise StoreError("the service is shutting down")
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="neardup-writer", daemon=True)
                self._thread.start()
            self._queue.append((request, future, loop))
            self._cond.notify()
        return await future

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    break
                size = self.SEND_GROUP if self.process else self.MAX_GROUP
                group, self._queue = self._queue[:size], self._queue[size:]
            requests = [request for request, _, _ in group]
            if self.process:
                self._send(group, requests)
                continue
            try:
                # One batch of sketches for the group (half the cost per document of one at a
                # time); a bad document fails its own request (400), not the others.
                results = _write_prepared(self.index, self.index.prepare_many(requests))
            except BaseException as exc:  # noqa: BLE001 - every waiting request gets an answer
                results = [exc] * len(group)
            _answer(group, results)
        with self._cond:
            child, self._child = self._child, None
        if child is not None:
            _stop_child(child)

    # -- process=True ----------------------------------------------------------------------------
    def _start_child(self):
        """The writer process (started if there is none, or the last one died); under _cond."""
        if self._child is not None and self._child[0].is_alive():
            return self._child
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")  # no fork of a process that runs threads
        requests_in, requests_out = ctx.Pipe(duplex=False)
        results_in, results_out = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_writer_process, name="neardup-writer", daemon=True,
                           args=(self.index.path, self.index.synchronous, requests_in, results_out))
        proc.start()
        requests_in.close()
        results_out.close()
        self._child = (proc, requests_out, results_in)
        threading.Thread(target=self._receive, args=(self._child,), name="neardup-writer-answers",
                         daemon=True).start()
        return self._child

    def _send(self, group, requests) -> None:
        try:
            # Sketched here, while the child writes the groups before this one.
            sketched = self.index.sketch_requests(requests)
        except BaseException as exc:  # noqa: BLE001
            return _answer(group, [exc] * len(group))
        with self._cond:
            try:
                child = self._start_child()
                self._sent.append((group, child))
                child[1].send(sketched)
            except Exception as exc:  # the child is gone (or cannot start): this group fails alone
                if self._sent and self._sent[-1][0] is group:
                    self._sent.pop()
                error = StoreError(f"the index's writer process is not available ({type(exc).__name__}: {exc}); "
                                   f"retry")
                _answer(group, [error] * len(group))

    def _receive(self, child) -> None:
        """Answer the groups sent to ``child``, in order, as its results arrive."""
        proc, _, results = child
        while True:
            try:
                answers = results.recv()
            except (EOFError, OSError):
                break
            with self._cond:  # the oldest group sent to this child (an earlier child's may linger)
                group = self._sent.pop(next(i for i, (_, c) in enumerate(self._sent) if c is child))[0]
            _answer(group, answers)
        # The child stopped: what it had not answered may or may not be committed.
        with self._cond:
            lost = [g for g, c in self._sent if c is child]
            self._sent = [(g, c) for g, c in self._sent if c is not child]
            if self._child is child:
                self._child = None
        for group in lost:
            log.error("the index's writer process stopped (exit code %s)", proc.exitcode)
            _answer(group, [StoreError("the index's writer process stopped; retry (an add may have been "
                                       "stored: a retried check-and-add then reports it as an exact copy)")]
                    * len(group))
        results.close()

    def close(self) -> None:
        """Answer what is queued, then stop the thread (and the writer process)."""
        with self._cond:
            self._closed = True
            self._cond.notify()
            thread = self._thread
            child = self._child if thread is None else None
            if thread is None:
                self._child = None
        if thread is not None:
            thread.join()
        if child is not None:
            _stop_child(child)


def _write_prepared(index, prepared: list) -> list:
    """The results of prepared writes (:meth:`SeenIndex.prepare_many`) run as one transaction:
    a request whose preparation failed keeps its exception; if the transaction fails, every
    request gets that exception."""
    results = list(prepared)
    ready = [i for i, p in enumerate(prepared) if not isinstance(p, BaseException)]
    try:
        for i, r in zip(ready, index.run_prepared([prepared[i] for i in ready])):
            results[i] = r
    except Exception as exc:  # noqa: BLE001 - every waiting request gets an answer
        results = [exc] * len(prepared)
    return results


def _answer(group, results) -> None:
    """Hand each request of ``group`` its result (or exception) on its own event loop."""
    by_loop: dict = {}
    for (_, future, loop), result in zip(group, results):
        by_loop.setdefault(loop, []).append((future, result))
    for loop, answers in by_loop.items():
        try:
            loop.call_soon_threadsafe(_resolve, answers)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass


def _stop_child(child) -> None:
    """Let the writer process finish what it was sent (it answers all of it), then stop."""
    proc, requests, _ = child
    try:
        requests.send(None)
    except (OSError, ValueError):
        pass
    proc.join(timeout=60)
    if proc.is_alive():
        proc.kill()
        proc.join()
    requests.close()


def _writer_process(path: str, synchronous: str, requests, results) -> None:
    """The writer process of :class:`_Writer`: runs every group that has arrived as one
    transaction (:meth:`SeenIndex.prepared_of`, :meth:`SeenIndex.run_prepared`) and sends each
    group its results after the ``COMMIT``; stops at ``None`` or when the server is gone."""
    import signal

    from ..store import SeenIndex

    # Ctrl-C reaches the whole process group: the server shuts down and stops this process
    # when it has answered everything (a write cut in the middle would only be rolled back).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    index = SeenIndex(path, create=False, synchronous=synchronous)
    try:
        while True:
            try:
                groups = [requests.recv()]
                while groups[-1] is not None and requests.poll():
                    groups.append(requests.recv())
            except (EOFError, OSError):
                return  # the server is gone
            stop = groups[-1] is None
            if stop:
                groups.pop()
            if groups:
                answers = _write_prepared(index, index.prepared_of([item for group in groups for item in group]))
                start = 0
                for group in groups:
                    results.send(answers[start:start + len(group)])
                    start += len(group)
            if stop:
                return
    finally:
        index.close()
        results.close()


def _resolve(answers) -> None:
    for future, result in answers:
        if future.done():  # the request was cancelled (client gone)
            continue
        if isinstance(result, BaseException):
            future.set_exception(result)
        else:
            future.set_result(result)


class _UserError(Exception):
    def __init__(self, status: int, message: str, kind: str | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind or {413: "document_too_large", 422: "batch_too_large", 404: "not_found"}.get(
            status, f"status_{status}")

    def __reduce__(self):  # raised in a batch process, re-raised here
        return (_UserError, (self.status, self.message, self.kind))


class _Busy(Exception):
    """A request over its time budget: 503 with Retry-After."""


def _clean(error: dict) -> dict:
    """A validation error without the echoed input or exception objects (JSON-safe, short)."""
    out = {"loc": [p if isinstance(p, (str, int)) else str(p) for p in error.get("loc", ())],
           "msg": str(error.get("msg", "")), "type": str(error.get("type", ""))}
    return out
