"""What stands between a client and the index: the bearer token, the body's size and read
deadline, the per-document budget checked before FastAPI parses anything (:class:`Guard`), and
the deadline for request headers (:func:`protocol_with_header_timeout`, slowloris)."""

from __future__ import annotations

import asyncio
import hmac
import time
import unicodedata

import orjson

from ..text.normalize import fold
from ..text.tokenize import words_of_folded
from .metrics import Metrics, count
from .settings import DEFAULT_BODY_TIMEOUT, DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_BODY_BYTES

__all__ = ["Guard", "OPEN_PATHS", "DOCUMENT_PATHS", "send_json", "protocol_with_header_timeout", "nfkc_length",
           "nfkc_length_within", "over_budget", "limit_of", "media_of"]

#: Paths that need no token: probes of orchestrators and load balancers.
OPEN_PATHS = frozenset({"/healthz", "/readyz"})
#: Paths whose JSON bodies are checked (document count and sizes) before FastAPI validates them.
DOCUMENT_PATHS = frozenset({"/v1/check", "/v1/add", "/v1/check-and-add"})


class Guard:
    """ASGI middleware: bearer token (all paths but /healthz and /readyz), the request body size
    limit and body read timeout, the batch size and document size limits, and the metrics.

    The body is read here, up to the limit, and replayed to the app, so an oversized body is
    refused with 413 whether or not it declares a Content-Length: at most ``max_body_bytes``
    (plus the last chunk, 64 KiB with uvicorn) are read, then the 413 goes out with
    ``Connection: close`` and nothing more is read (the server closes the connection).
    """

    def __init__(self, app, token: str | None = None, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, fast=None,
                 precheck=None, metrics: Metrics | None = None, body_timeout: float = DEFAULT_BODY_TIMEOUT):
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
        if self.token is not None and scope["path"] not in OPEN_PATHS:
            problem = self._auth_problem(scope)
            if problem:
                count(metrics, "unauthorized")
                return await send_json(send, 401, {"error": problem}, [(b"www-authenticate", b'Bearer realm="neardup"')])
        declared = None
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    count(metrics, "bad_request")
                    return await send_json(send, 400, {"error": "the Content-Length header is not a number"},
                                       close=True)
        too_large = {"error": f"request body is larger than the limit of {self.max_body_bytes} bytes; "
                              "send fewer documents per request"}
        if declared is not None and declared > self.max_body_bytes:
            count(metrics, "body_too_large")
            return await send_json(send, 413, too_large, close=True)
        body = bytearray()
        deadline = asyncio.get_running_loop().time() + self.body_timeout
        while True:
            try:
                # A client that sends its body slowly (slowloris) holds a connection and a
                # buffer: the whole body must arrive within body_timeout.
                message = await asyncio.wait_for(receive(), deadline - asyncio.get_running_loop().time())
            except (asyncio.TimeoutError, TimeoutError):
                count(metrics, "body_timeout")
                return await send_json(send, 408, {"error": f"the request body did not arrive within "
                                                        f"{self.body_timeout:g} s"}, close=True)
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > self.max_body_bytes:
                # Refused now, with nothing more read: the connection is closed after the answer.
                count(metrics, "body_too_large")
                return await send_json(send, 413, too_large, close=True)
            if not message.get("more_body", False):
                break
        body = bytes(body)
        doc = None
        if self.precheck is not None and scope["method"] == "POST" and scope["path"] in DOCUMENT_PATHS:
            refused, doc = await self.precheck(scope, body)
            if refused is not None:  # refused, or answered whole by a batch process
                status, obj, kind, headers = (*refused, None)[:4]
                if kind:
                    count(metrics, kind)
                return await send_json(send, status, obj, headers)
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


async def send_json(send, status: int, obj: dict, headers: list | None = None, *, close: bool = False) -> None:
    body = obj if isinstance(obj, bytes) else orjson.dumps(obj)
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if close:
        head.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": head + (headers or [])})
    await send({"type": "http.response.body", "body": body})



def protocol_with_header_timeout(timeout: float = DEFAULT_HEADER_TIMEOUT, metrics: Metrics | None = None):
    """uvicorn's HTTP protocol class (its ``http=`` setting) with a deadline for request headers.

    uvicorn has none: a client that sends a header byte every few seconds (slowloris) keeps its
    connection, and with ``limit_concurrency`` its slot, forever. Here a connection must deliver
    the complete headers of each request (the blank line that ends them) within ``timeout``
    seconds of connecting or of the previous answer, or it is closed. The body has its own
    deadline in :class:`Guard`.
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


def nfkc_length(text: str, limit: int) -> int:
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


def nfkc_length_within(text: str, limit: int) -> bool:
    """Whether NFKC(text) has at most ``limit`` code points (:func:`nfkc_length`)."""
    return nfkc_length(text, limit) <= limit




def over_budget(text: str, where: str, budget: tuple) -> str | None:
    """Why ``text`` is over the per-document budget ``(max_chars, max_tokens, normalize params)``,
    or None. Runs off the event loop."""
    max_chars, max_tokens, norm = budget
    if len(text) > max_chars:
        return f"{where} has {len(text)} characters, more than the limit of {max_chars}"
    # NFKC leaves ASCII as it is; other text is measured before anything folds it whole.
    if not text.isascii() and not nfkc_length_within(text, max_chars):
        return f"{where} grows past the limit of {max_chars} characters under NFKC normalization"
    if len(text) > max_tokens:  # a shorter text cannot hold more tokens
        n = len(words_of_folded(fold(text, norm), norm.remove_punctuation))
        if n > max_tokens:
            return f"{where} has {n} word tokens, more than the limit of {max_tokens}"
    return None


def limit_of(query: bytes) -> int | None:
    """``?limit=N`` (default 100), or None for any other query string (FastAPI answers it)."""
    if not query:
        return 100
    name, _, value = query.partition(b"=")
    if name != b"limit" or not value.isdigit() or value.startswith(b"0") or len(value) > 6:
        return None
    limit = int(value)
    return limit if limit <= 100_000 else None


def media_of(scope) -> bytes:
    media = b""
    for name, value in scope["headers"]:
        if name == b"content-type":
            media = value
    return media.split(b";")[0].strip().lower()
