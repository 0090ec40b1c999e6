"""The service's endpoints and exception handlers (FastAPI), and the two steps the guard runs
before them: :func:`precheck` (document count and sizes, before FastAPI validates anything) and
:func:`fast` (the everyday single-document requests, answered without FastAPI's routing).

Every function finds what it works with in ``request.app.state.service`` (a
:class:`~neardup.service.workers.Service`), so that several apps can live in one process.
"""

from __future__ import annotations

import asyncio
import os

from ..errors import require

require("fastapi", "service")

import orjson  # noqa: E402
from fastapi import APIRouter, FastAPI, Query, Request  # noqa: E402
from fastapi.exceptions import RequestValidationError  # noqa: E402
from fastapi.responses import Response  # noqa: E402
from starlette.exceptions import HTTPException as StarletteHTTPException  # noqa: E402

from ..errors import MissingDependencyError, NeardupError, StoreError  # noqa: E402
from .errors import Busy, UserError, error_of  # noqa: E402
from .guard import nfkc_length, over_budget, send_json  # noqa: E402
from .schemas import ERRORS, Added, Answer, Error, RequestBody, Removed, Results, validation_answer  # noqa: E402
from .settings import MAX_ID_LENGTH  # noqa: E402
from .workers import FAST_KEYS, FAST_PATHS, LARGE_BODY, LARGE_TEXT, Service  # noqa: E402

__all__ = ["router", "add_exception_handlers", "precheck", "fast", "json_response"]

router = APIRouter()


def json_response(obj, status: int = 200, headers: dict | None = None) -> Response:
    return Response(orjson.dumps(obj), status_code=status, media_type="application/json", headers=headers)


def service_of(request: Request) -> Service:
    return request.app.state.service


# -- the endpoints -----------------------------------------------------------------------------

@router.post("/v1/check", response_model=Answer | Results, responses=ERRORS,
             summary="what the index holds that resembles the document(s); stores nothing")
async def check(request: Request, body: RequestBody, limit: int = Query(100, ge=1, le=100_000)):
    answers, batch = await service_of(request).run_documents("check", body, limit)
    return json_response({"results": answers} if batch else answers[0])


# The link lets schemathesis's stateful phase delete what it added (and find the 404s).
@router.post("/v1/add", response_model=Added | Results,
             responses={**ERRORS, 200: {"description": "the stored id(s)", "links": {"RemoveDocument": {
                 "operationId": "remove_v1_documents__doc_id__delete",
                 "parameters": {"doc_id": "$response.body#/id"}}}}},
             summary="store the document(s), replacing any with the same id")
async def add(request: Request, body: RequestBody):
    ids, batch = await service_of(request).run_documents("add", body)
    results = [{"id": i, "added": True} for i in ids]
    return json_response({"results": results} if batch else results[0])


@router.post("/v1/check-and-add", response_model=Answer | Results, responses=ERRORS,
             summary="check and, unless a copy is stored, add: one atomic step")
async def check_and_add(request: Request, body: RequestBody, limit: int = Query(100, ge=1, le=100_000),
                        policy: str = Query("exact", pattern="^(exact|near)$",
                                            description="a copy is an exact one (exact), or an exact or "
                                                        "near one (near)")):
    answers, batch = await service_of(request).run_documents("check_and_add", body, limit, policy)
    return json_response({"results": answers} if batch else answers[0])


@router.delete("/v1/documents/{doc_id:path}", response_model=Removed, responses={**ERRORS, 404: {"model": Error}},
               summary="remove a document")
async def remove(request: Request, doc_id: str):
    service = service_of(request)
    if not await service.in_pool(service.index.remove, doc_id):
        raise UserError(404, f"no document with id {doc_id!r}")
    return json_response({"id": doc_id, "removed": True})


# Cheap reads run on the event loop: a thread hop would cost more than they do.
@router.get("/v1/stats", summary="documents, sizes and the index configuration")
async def stats(request: Request):
    out = service_of(request).index.stats()
    out.pop("path", None)  # the server's file system is none of the client's business
    return json_response(out)


@router.get("/healthz", summary="liveness; needs no token")
async def healthz(request: Request):
    return json_response({"status": "ok", "documents": len(service_of(request).index)})


@router.get("/readyz", summary="readiness: the index answers and its writer runs; needs no token",
            responses={503: {"model": Error, "description": "not ready (starting, stopping, writer down)"}})
async def readyz(request: Request):
    service = service_of(request)
    problem = None
    if not service.ready:
        problem = "the server is starting or stopping"
    elif not service.writer.ready():
        problem = "the index's writer process is not running"
    else:
        try:
            len(service.index)
        except Exception as exc:  # noqa: BLE001 - any failure means "not ready"
            problem = f"the index does not answer ({type(exc).__name__})"
    if problem:
        return json_response({"error": problem}, 503, headers={"Retry-After": "1"})
    return json_response({"status": "ready"})


@router.get("/metrics", summary="Prometheus metrics (text format 0.0.4)",
            responses={200: {"content": {"text/plain": {}}, "description": "the metrics"}})
async def metrics_endpoint(request: Request):
    service = service_of(request)
    index = service.index
    wal = index.path + "-wal"
    gauges = {
        "documents": ("Documents in the index.", len(index)),
        "wal_bytes": ("Size of the index's write-ahead log.", os.path.getsize(wal) if os.path.exists(wal) else 0),
        "writer_queue": ("Requests waiting for the writer.", service.writer.queued()),
    }
    return Response(service.metrics.render(gauges), media_type="text/plain; version=0.0.4; charset=utf-8")


# -- the exception handlers --------------------------------------------------------------------

async def user_error(request: Request, exc: UserError):
    service_of(request).metrics.refuse(exc.kind)
    return json_response({"error": exc.message}, exc.status)


async def busy_request(request: Request, exc: Busy):
    return json_response({"error": str(exc)}, 503, headers={"Retry-After": "1"})


async def invalid(request: Request, exc: RequestValidationError):
    metrics = service_of(request).metrics
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if request.method == "POST" and media != "application/json" and not media.endswith("+json"):
        metrics.refuse("unsupported_media_type")
        return json_response({"error": f"the body must be JSON sent with 'Content-Type: application/json' "
                                       f"(got {media or 'no Content-Type'})"}, 415)
    metrics.refuse("invalid")
    return json_response(validation_answer(exc.errors()), 422)


async def http_error(request: Request, exc: StarletteHTTPException):
    message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    if exc.status_code == 404:
        message = f"no such endpoint: {request.method} {request.url.path}"
    elif exc.status_code == 405:
        message = f"{request.method} is not allowed on {request.url.path}"
    service_of(request).metrics.refuse({404: "not_found", 405: "method_not_allowed"}.get(exc.status_code,
                                                                                         "http_error"))
    return json_response({"error": message}, exc.status_code, headers=getattr(exc, "headers", None))


async def index_error(request: Request, exc: Exception):
    service = service_of(request)
    status, obj, headers = error_of(exc, f"{request.method} {request.url.path}", service.scrub, service.metrics)
    return json_response(obj, status, headers={k.decode(): v.decode() for k, v in headers or ()})


def add_exception_handlers(app: FastAPI) -> None:
    """Every error answered as ``{"error": ...}`` with its status (see :mod:`neardup.service.app`)."""
    app.add_exception_handler(UserError, user_error)
    app.add_exception_handler(Busy, busy_request)
    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(StarletteHTTPException, http_error)
    # One handler, registered for each class: Starlette's handler for Exception itself runs
    # outside the others and re-raises (a bug is logged with its traceback by the server too).
    for cls in (StoreError, MissingDependencyError, NeardupError, Exception):
        app.add_exception_handler(cls, index_error)


# -- before FastAPI: the guard's precheck and the fast path --------------------------------------

async def precheck(service: Service, scope, body: bytes):
    """(refusal, parsed body): the document count and each document's size checked before
    FastAPI validates anything; (None, None) when the body is not a JSON object (FastAPI's
    validation answers it).

    With batch processes, a large body (more than LARGE_BODY bytes) is answered whole by
    one of them: parsing, checks, validation and the work stay off this process's GIL, so
    that megabytes of hostile JSON do not slow everyone else's requests."""
    if service.heavy is not None and len(body) > LARGE_BODY:
        answer = await service.in_batch_process(scope, body)
        if answer is not None:
            return answer, None

    def parse():
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            return None

    # orjson parses about 1 GB/s: on the loop for small bodies, else off it.
    doc = parse() if len(body) <= 1 << 16 else await service.in_pool(parse)
    if type(doc) is not dict:
        return None, None
    max_batch, max_chars = service.settings.max_batch, service.settings.max_document_chars
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
    if any(service.needs_budget(t) for _, t in texts):
        def check_all():
            longest = 0
            for where, t in texts:
                problem = over_budget(t, where, service.budget)
                if problem:
                    return problem, longest
                longest = max(longest, len(t) if t.isascii() else nfkc_length(t, max_chars))
            return None, longest

        problem, longest = await service.in_pool(check_all)
        if problem:
            kind = "document_too_many_tokens" if "tokens" in problem else "document_too_large"
            return (413, {"error": problem + "; split the document"}, kind), None
        if service.heavy is not None and longest > LARGE_TEXT:
            # A small body whose text NFKC makes long (21,800 U+FDFA: 64 KiB, 390,000 code
            # points, 0.1-0.16 s to sketch) is heavy work too: the batch process does it.
            answer = await service.in_batch_process(scope, body)
            if answer is not None:
                return answer, None
    return None, doc



async def fast(service: Service, scope, doc, send) -> bool:
    """The everyday requests, one plain-text document to check, check-and-add or add, answered
    without FastAPI's routing and pydantic (they cost as much CPU as the query itself).

    ``doc`` is the parsed body (its size already checked). Anything else, including every
    malformed request, returns False and goes to FastAPI, whose validation and error messages
    stay the only ones. The answers are the endpoints'.
    """
    op = FAST_PATHS.get(scope["path"])
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
    if not doc.keys() <= FAST_KEYS or type(doc.get("text")) is not str:
        return False
    doc_id, meta, url = doc.get("id"), doc.get("meta"), doc.get("url")
    if doc_id is not None and (type(doc_id) is not str or not 1 <= len(doc_id) <= MAX_ID_LENGTH):
        return False
    if url is not None and (type(url) is not str or not 1 <= len(url) <= MAX_ID_LENGTH):
        return False
    if meta is not None and type(meta) is not dict:
        return False
    index, timeout, metrics = service.index, service.settings.request_timeout, service.metrics
    try:
        if op == "check":
            answer = (await service.in_pool(lambda: index.query_many([(doc_id, doc["text"], None, url)],
                                                                     limit=limit)))[0]
        else:
            # Sketched, checked and stored by the writer thread, together with whatever other
            # requests arrived meanwhile (one transaction, one COMMIT).
            if op == "check-and-add":
                request = ("check_and_add", [(doc_id, doc["text"], meta, url)], limit)
            else:
                request = ("add", [(doc_id, doc["text"], meta, url)])
            try:
                result = await asyncio.wait_for(service.writer.run(request), timeout)
            except (asyncio.TimeoutError, TimeoutError):
                metrics.refuse("request_timeout")
                raise Busy(f"the request took more than {timeout:g} s; retry later (it may "
                            f"have been stored: a retried check-and-add then reports an exact copy)") from None
            answer = result[0] if op == "check-and-add" else {"id": result[0], "added": True}
    except Exception as exc:  # the same answers as the exception handlers below
        status, obj, headers = error_of(exc, f"POST {scope['path']}", service.scrub, metrics)
        await send_json(send, status, obj, headers)
        return True
    await send_json(send, 200, orjson.dumps(answer))
    return True

