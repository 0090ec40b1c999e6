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

Hostile clients: sketching and queries run in ``work_threads`` worker threads and the
writer, never on the event loop; budgets bound each document's cost; ``neardup serve`` adds a
deadline for request headers (:func:`protocol_with_header_timeout`, slowloris) and uvicorn's
``limit_concurrency`` (503 past it). Measured in ``docs/service.md``.

The app holds no global state: :func:`create_app` wraps the index it is given, and several apps
(tests) can live in one process.

The modules: :mod:`~neardup.service.settings` (the options), :mod:`~neardup.service.schemas`
(the bodies), :mod:`~neardup.service.guard` (token, body size and deadline, document budget,
header deadline), :mod:`~neardup.service.routes` (the endpoints, the error handlers and the fast
path), :mod:`~neardup.service.workers` (worker threads, batch processes and what one app's routes
share), :mod:`~neardup.service.writer` (the group-committing writer), :mod:`~neardup.service.metrics`
and :mod:`~neardup.service.errors`.
"""

from __future__ import annotations

import json
import os
from contextlib import asynccontextmanager
from functools import partial

from ..errors import require

require("fastapi", "service")

from fastapi import FastAPI  # noqa: E402

from .._version import __version__  # noqa: E402
from ..store import SeenIndex  # noqa: E402
from .guard import Guard, protocol_with_header_timeout  # noqa: E402
from .routes import add_exception_handlers, fast, precheck, router  # noqa: E402
from .settings import DEFAULT_HEADER_TIMEOUT, SERVE_ENV, Settings  # noqa: E402
from .workers import Service  # noqa: E402

__all__ = ["create_app", "app_from_environment", "protocol_with_header_timeout", "SERVE_ENV"]


def create_app(index, **options) -> FastAPI:
    """An ASGI app serving ``index`` (a :class:`~neardup.store.SeenIndex`); ``options`` are the
    fields of :class:`~neardup.service.settings.Settings` (token, body and document budgets,
    timeouts, worker threads, batch and writer processes), checked there."""
    service = Service(index, Settings(**options))
    app = FastAPI(title="neardup", version=__version__, lifespan=_lifespan,
                  description="A persistent \"seen before?\" index: exact copies, near-copies, containment "
                              "and simhash neighbours of text and HTML pages.")
    app.state.index = index
    app.state.metrics = service.metrics
    app.state.service = service
    app.include_router(router)
    add_exception_handlers(app)
    s = service.settings
    app.add_middleware(Guard, token=s.token, max_body_bytes=s.max_body_bytes, fast=partial(fast, service),
                       precheck=partial(precheck, service), metrics=service.metrics, body_timeout=s.body_timeout)
    return app


@asynccontextmanager
async def _lifespan(app: FastAPI):
    service = app.state.service
    service.start()
    yield
    service.close()


def app_from_environment():
    """The app of one worker of ``neardup serve --workers N`` (uvicorn imports it in each process).

    Settings come from the :data:`SERVE_ENV` environment variable (JSON: ``db``, ``token_file``,
    ``max_body_bytes``, ``max_batch``, ``html_mode``, ``synchronous``, ``resident`` and the budgets
    ``max_document_chars``, ``max_document_tokens``, ``request_timeout``, ``body_timeout``); the index exists already
    (the parent created and checked it). Every worker opens its own connections to the file.
    """
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
        settings = json.loads(os.environ.get(SERVE_ENV, "{}"))
        return protocol_with_header_timeout(float(settings.get("header_timeout", DEFAULT_HEADER_TIMEOUT)))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
