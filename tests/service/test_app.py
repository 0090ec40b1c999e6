"""The HTTP service, as a real ``python -m neardup serve`` process on loopback, called with httpx:
endpoints and answer shape, authentication, body limits, bad requests, concurrent check-and-add,
and schemathesis fuzzing the OpenAPI schema for server errors."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from cloud_servers import free_port
from service_server import Server

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from neardup.store import SeenIndex  # noqa: E402

pytestmark = pytest.mark.service

TOKEN = "test-token-5f1c2a"
MAX_BODY = 200_000
MAX_BATCH = 50


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("service")
    token_file = folder / "token"
    token_file.write_text(TOKEN + "\n")
    srv = Server(str(folder / "seen.db"), token_file=str(token_file),
                 extra=("--max-body-bytes", str(MAX_BODY), "--max-batch", str(MAX_BATCH)))
    yield srv
    # uvicorn shuts down gracefully on SIGTERM, then exits by that signal
    assert srv.stop() in (0, -signal.SIGTERM), srv.output()
    assert "Finished server process" in srv.output() and "Traceback" not in srv.output(), srv.output()


@pytest.fixture
def client(server):
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as c:
        yield c


def page(rng: random.Random, n: int = 120) -> str:
    return " ".join(f"w{rng.randrange(3000)}" for _ in range(n))


# -- endpoints ----------------------------------------------------------------------------------

def test_check_add_check_and_add_delete(client, server):
    rng = random.Random(1)
    text = page(rng)
    r = client.post("/v1/check", json={"text": text})
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.json() == {"id": None, "exact": [], "near": [], "contains": [], "contained_in": [], "simhash": []}

    r = client.post("/v1/add", json={"id": "https://example.org/a?x=1", "text": text, "meta": {"status": 200}})
    assert r.json() == {"id": "https://example.org/a?x=1", "added": True}

    r = client.post("/v1/check-and-add", json={"id": "https://example.org/b", "text": text.upper() + " !!"})
    body = r.json()
    assert body["added"] is False and body["exact"] == ["https://example.org/a?x=1"]
    assert body["near"] == [{"id": "https://example.org/a?x=1", "jaccard": 1.0}]
    assert body["simhash"] == [{"id": "https://example.org/a?x=1", "distance": 0}]

    # the same answer as the library on the same file
    probe = " ".join(text.split()[:100]) + " " + page(rng, 10)
    with SeenIndex(server.db, create=False) as index:
        expected = index.query(probe, "p")
    assert client.post("/v1/check", json={"id": "p", "text": probe}).json() == expected

    # ids may hold slashes and query strings
    r = client.delete("/v1/documents/https://example.org/a%3Fx=1")
    assert r.status_code == 200 and r.json() == {"id": "https://example.org/a?x=1", "removed": True}
    r = client.delete("/v1/documents/https://example.org/a%3Fx=1")
    assert r.status_code == 404 and "no document" in r.json()["error"]


def test_batches_html_and_limit(client):
    rng = random.Random(2)
    texts = [page(rng) for _ in range(5)]
    docs = [{"id": f"batch-{i}", "text": t} for i, t in enumerate(texts)]
    docs.append({"id": "batch-html", "html": f"<html><body><main><p>{texts[0]}</p></main></body></html>"})
    r = client.post("/v1/check-and-add", json={"documents": docs})
    results = r.json()["results"]
    assert [x["id"] for x in results] == [d["id"] for d in docs]
    assert [x["added"] for x in results] == [True] * 5 + [False]  # the HTML page's main text is batch-0
    assert results[5]["exact"] == ["batch-0"]
    r = client.post("/v1/add", json={"documents": [{"text": texts[1]}, {"id": "batch-x", "text": texts[1]}]})
    added = r.json()["results"]
    assert added[0]["id"] == f"{__import__('neardup').fingerprint(texts[1]):016x}" and added[1]["id"] == "batch-x"
    r = client.post("/v1/check?limit=1", json={"documents": [{"text": texts[1]}]})
    (answer,) = r.json()["results"]
    assert len(answer["exact"]) == 1 and len(answer["near"]) == 1
    stats = client.get("/v1/stats").json()
    assert stats["documents"] >= 7 and stats["config"]["minhash"]["num_perm"] == 128
    assert client.get("/healthz").json()["status"] == "ok"


def test_fast_path_answers_as_fastapi(client):
    # One plain-text document skips FastAPI's routing and pydantic; a body FastAPI alone takes
    # (an explicit "html": null) must get the same status, headers and answer.
    rng = random.Random(3)
    base = page(rng)
    client.post("/v1/add", json={"id": "fast-base", "text": base})
    probe = " ".join(base.split()[:115]) + " " + page(rng, 5)
    # (check-and-add of an exact copy: nothing is stored, so both calls see the same index)
    for path, limit, text in (("/v1/check", "", probe), ("/v1/check", "?limit=1", probe),
                              ("/v1/check-and-add", "", base.upper())):
        answers = []
        for i, extra in enumerate(({}, {"html": None})):
            body = {"id": f"fast-{path}-{limit}-{i}", "text": text, **extra}
            r = client.post(path + limit, json=body)
            assert r.status_code == 200 and r.headers["content-type"] == "application/json"
            answer = r.json()
            answer["id"] = None
            answers.append(answer)
        assert answers[0] == answers[1] and answers[0]["near"]
    r = client.post("/v1/add", json={"id": "fast-meta", "text": probe + " more", "meta": {"a": [1, 2]}})
    assert r.json() == {"id": "fast-meta", "added": True}
    # a user mistake found by the index, not by the schema: the same 400 either way
    for extra in ({}, {"html": None}):
        r = client.post("/v1/check-and-add", json={"text": "!!! ...", **extra})
        assert r.status_code == 400 and "needs an id" in r.json()["error"]
    # what the fast path does not take goes to FastAPI: wrong types, unknown keys, odd limits
    assert client.post("/v1/check", json={"text": 5}).status_code == 422
    assert client.post("/v1/check", json={"text": "a", "extra": 1}).status_code == 422
    assert client.post("/v1/check?limit=0", json={"text": "a"}).status_code == 422
    assert client.post("/v1/check", json={"id": "", "text": "a"}).status_code == 422


def test_openapi_schema(client):
    schema = client.get("/openapi.json").json()
    assert set(schema["paths"]) >= {"/v1/check", "/v1/add", "/v1/check-and-add", "/v1/documents/{doc_id}",
                                    "/v1/stats", "/healthz"}
    answer = schema["components"]["schemas"]["Answer"]["properties"]
    assert {"url_seen", "url_match"} <= set(answer)
    assert "url" in schema["components"]["schemas"]["DocumentIn"]["properties"]


def test_url_seen_beside_content_seen_on_every_path(client):
    """The fast path (one plain-text document), FastAPI's (HTML, an explicit null) and a batch
    answer "URL seen?" alike: one canonical URL under several spellings, the content deciding
    ``added``."""
    rng = random.Random(7)
    first, recrawl, other = page(rng), page(rng), page(rng)
    r = client.post("/v1/check-and-add", json={"id": "url-a", "text": first,
                                               "url": "https://Docs.Example.org:443/faq?utm_source=x&b=2&a=1"})
    body = r.json()
    assert (body["added"], body["url_seen"], body["url_match"]) == (True, False, None)
    for extra in ({}, {"html": None}):  # the fast path, then FastAPI's
        r = client.post("/v1/check", json={"text": recrawl, "url": "https://docs.example.org/faq?a=1&b=2#top", **extra})
        assert (r.json()["url_seen"], r.json()["url_match"], r.json()["exact"]) == (True, "url-a", [])
    r = client.post("/v1/check-and-add", json={"documents": [
        {"id": "url-b", "html": f"<html><body><main><p>{recrawl}</p></main></body></html>",
         "url": "https://docs.example.org/faq?b=2&a=1"},
        {"id": "url-c", "text": first, "url": "https://docs.example.org/elsewhere"},
        {"id": "url-d", "text": other}]})
    results = r.json()["results"]
    assert [(x["added"], x["url_seen"], x["url_match"]) for x in results[:2]] == [(True, True, "url-a"),
                                                                                (False, False, None)]
    assert results[1]["exact"] == ["url-a"] and "url_seen" not in results[2]
    assert client.post("/v1/add", json={"text": other, "url": ""}).status_code == 422


# -- security -----------------------------------------------------------------------------------

ENDPOINTS = [("POST", "/v1/check"), ("POST", "/v1/add"), ("POST", "/v1/check-and-add"),
             ("DELETE", "/v1/documents/x"), ("GET", "/v1/stats"), ("GET", "/openapi.json"), ("GET", "/docs"),
             ("GET", "/no/such/path")]


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"},
                                     {"Authorization": "Bearer"}, {"Authorization": f"Bearer {TOKEN}x"}],
                         ids=["none", "wrong", "basic", "empty", "longer"])
def test_every_endpoint_but_healthz_needs_the_token(server, headers):
    with httpx.Client(base_url=server.url, timeout=30) as c:
        for method, path in ENDPOINTS:
            r = c.request(method, path, headers=headers, json={"text": "a page"} if method == "POST" else None)
            assert r.status_code == 401, (method, path, r.status_code)
            assert r.headers["www-authenticate"].startswith("Bearer") and r.json()["error"]
        assert c.get("/healthz", headers=headers).status_code == 200


def test_oversized_bodies_get_413(client):
    big = {"text": "word " * (MAX_BODY // 5 + 10)}
    r = client.post("/v1/add", json=big)
    assert r.status_code == 413 and "limit" in r.json()["error"]

    def chunks():  # no Content-Length: the limit is counted while reading
        for _ in range(30):
            yield b'{"text": "' + b"x" * 10_000
        yield b'"}'

    r = client.post("/v1/add", content=chunks(), headers={"Content-Type": "application/json"})
    assert r.status_code == 413
    assert client.post("/v1/add", json={"id": "small", "text": "a small page fits"}).status_code == 200


@pytest.mark.parametrize("body,status,fragment", [
    (b"{not json", 422, "JSON"),
    (b"", 422, ""),
    (b"[]", 422, "JSON object"),
    (b'"text"', 422, "JSON object"),
    (b'{"text": 3}', 422, "text"),
    (b'{"text": "a", "html": "<p>a</p>"}', 422, "exactly one"),
    (b'{"id": "x"}', 422, "exactly one"),
    (b'{"text": "a", "extra": 1}', 422, "extra"),
    (b'{"id": "", "text": "a"}', 422, "id"),
    (b'{"text": "a", "documents": [{"text": "b"}]}', 422, "either"),
    (b'{"documents": []}', 422, "documents"),
    (b'{"documents": [{"text": 1}]}', 422, "documents.0.text"),
    (b'{"text": "a", "meta": [1]}', 422, "meta"),
    (b'{"id": "\\ud800", "text": "a"}', 422, "id"),
    (b'{"text": "!!! ???"}', 400, "needs an id"),
    (b'\xff\xfe', 422, ""),
])
def test_bad_requests_get_4xx_naming_the_problem(client, body, status, fragment):
    r = client.post("/v1/add", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == status, r.text
    assert fragment in r.json()["error"] or fragment in json.dumps(r.json().get("detail"))


def test_other_client_mistakes(client):
    r = client.post("/v1/add", content=b'{"text": "a"}', headers={"Content-Type": "text/plain"})
    assert r.status_code == 415 and "application/json" in r.json()["error"]
    too_many = {"documents": [{"text": f"doc {i}"} for i in range(MAX_BATCH + 1)]}
    r = client.post("/v1/check", json=too_many)
    assert r.status_code == 422 and f"at most {MAX_BATCH}" in r.json()["error"]
    assert client.get("/v1/check").status_code == 405
    assert client.post("/v1/check?limit=0", json={"text": "a"}).status_code == 422
    assert client.get("/v1/nothing").status_code == 404


def test_warning_without_token_beyond_loopback(tmp_path):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "neardup", "serve", "--db", str(tmp_path / "w.db"),
                             "--host", "0.0.0.0", "--port", str(port), "--log-level", "warning"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = proc.stdout.readline()
        assert "warning" in line and "without --token-file" in line
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    empty = tmp_path / "empty-token"
    empty.write_text("\n")
    r = subprocess.run([sys.executable, "-m", "neardup", "serve", "--db", str(tmp_path / "w.db"),
                        "--token-file", str(empty)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "empty" in r.stderr



# -- hostile clients (issue 19) -----------------------------------------------------------------

def raw_request(url: str, head: bytes, *parts: bytes, guard: float = 30.0) -> tuple[bytes, bool]:
    """Send ``head`` and ``parts`` on a fresh socket, then read until the server closes it or
    ``guard`` seconds pass (a hang guard: a test expecting an answer fails on it). Returns what
    was read and whether the server closed the connection."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=guard) as sock:
        try:
            sock.sendall(head)
            for part in parts:
                sock.sendall(part)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server refused and closed while we were still sending
        data = b""
        try:
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    return data, True
                data += chunk
        except ConnectionResetError:
            return data, True
        except TimeoutError:
            return data, False


def auth_head(method: str, path: str, *extra: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Authorization: Bearer {TOKEN}", *extra]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def test_chunked_body_is_refused_after_the_limit_without_reading_the_rest(server):
    # Chunks past the limit and no last chunk: the 413 must come without the body's end, and
    # the server closes the connection instead of reading (before: it waited for the whole body).
    head = auth_head("POST", "/v1/add", "Content-Type: application/json", "Transfer-Encoding: chunked")
    chunk = b"x" * 50_000
    chunks = [b"%x\r\n%s\r\n" % (len(chunk), chunk)] * (MAX_BODY // len(chunk) + 2)
    data, closed = raw_request(server.url, head, b'5\r\n{"te"\r\n', *chunks)
    assert data.startswith(b"HTTP/1.1 413 "), data[:200]
    assert b"connection: close" in data.lower() and closed


def test_content_length_over_the_limit_is_refused_unread(server):
    head = auth_head("POST", "/v1/add", "Content-Type: application/json", f"Content-Length: {MAX_BODY + 1}")
    data, closed = raw_request(server.url, head)  # not one byte of the body sent
    assert data.startswith(b"HTTP/1.1 413 ") and closed


def test_document_that_expands_under_nfkc_is_refused(client):
    # 60,000 U+FDFA (180 kB of UTF-8, under the body limit) become 1,080,000 code points under
    # NFKC, past the default budget of 1,048,576: refused before it is sketched.
    r = client.post("/v1/check", json={"text": "\ufdfa" * 60_000})
    assert r.status_code == 413 and "NFKC" in r.json()["error"], r.text
    r = client.post("/v1/check-and-add", json={"documents": [{"text": "a page"}, {"text": "\ufdfa" * 60_000}]})
    assert r.status_code == 413 and "document 1" in r.json()["error"], r.text
    assert client.post("/v1/check", json={"text": "\ufdfa" * 50_000}).status_code == 200  # 900,000: within
    # a small body whose text NFKC makes long (the batch process sketches it): the same answers
    r = client.post("/v1/check-and-add", content=json.dumps({"id": "fdfa", "text": "\ufdfa" * 5000},
                                                            ensure_ascii=False).encode(),
                    headers={"Content-Type": "application/json"})
    assert r.status_code == 200 and r.json()["added"] is True, r.text
    r = client.post("/v1/check-and-add", json={"id": "fdfa-2", "text": "\ufdfa" * 5000})
    assert r.json()["added"] is False and r.json()["exact"] == ["fdfa"]


def test_batch_size_is_checked_before_the_documents_are_validated(client):
    # Before: FastAPI validated every document first and named the first bad one.
    r = client.post("/v1/check", json={"documents": [{"bogus": i} for i in range(MAX_BATCH + 1)]})
    assert r.status_code == 422 and f"at most {MAX_BATCH}" in r.json()["error"], r.text


def test_readyz_and_metrics(server, client):
    assert httpx.get(server.url + "/readyz", timeout=30).json() == {"status": "ready"}  # no token needed
    assert httpx.get(server.url + "/metrics", timeout=30).status_code == 401

    def metric(text: str, name: str) -> float:
        m = re.search("^" + re.escape(name) + r" (\S+)$", text, re.M)
        return float(m.group(1)) if m else 0.0

    client.post("/v1/check", json={"text": "a page about metrics"})
    before = client.get("/metrics")
    assert before.status_code == 200 and before.headers["content-type"].startswith("text/plain")
    httpx.get(server.url + "/v1/stats", timeout=30)  # one 401
    client.post("/v1/check", json={"text": "another page about metrics"})
    after = client.get("/metrics").text
    ok = 'neardup_requests_total{route="/v1/check",status="200"}'
    assert metric(after, ok) == metric(before.text, ok) + 1
    unauthorized = 'neardup_errors_total{kind="unauthorized"}'
    assert metric(after, unauthorized) == metric(before.text, unauthorized) + 1
    assert metric(after, 'neardup_requests_total{route="/v1/stats",status="401"}') >= 1
    count = metric(after, 'neardup_request_duration_seconds_count{route="/v1/check"}')
    assert metric(after, 'neardup_request_duration_seconds_bucket{route="/v1/check",le="+Inf"}') == count >= 2
    assert metric(after, "neardup_documents") == client.get("/v1/stats").json()["documents"]
    assert re.search(r"^neardup_wal_bytes \d+$", after, re.M)


def test_large_bodies_answered_by_a_batch_process_as_by_the_endpoints(client, server):
    # Bodies over 64 KiB are parsed, checked, validated and run in the server's batch process:
    # the same statuses, answers and error messages as the small ones.
    rng = random.Random(21)
    big = page(rng, 14_000)  # about 90 kB
    assert len(json.dumps({"text": big})) > 1 << 16
    r = client.post("/v1/check-and-add", json={"id": "big-1", "text": big})
    assert r.status_code == 200 and r.json()["added"] is True, r.text
    r = client.post("/v1/check-and-add", json={"id": "big-2", "text": big.upper()})
    assert r.json()["added"] is False and r.json()["exact"] == ["big-1"]
    with SeenIndex(server.db, create=False) as index:
        assert client.post("/v1/check?limit=3", json={"text": big}).json() == index.query(big, limit=3)
    r = client.post("/v1/add", json={"documents": [{"id": "big-3", "text": big + " more"}, {"text": 5}]})
    assert r.status_code == 422 and "documents.1.text" in r.json()["error"], r.text
    assert client.delete("/v1/documents/big-3").status_code == 404  # a refused batch stores nothing
    pad = " " * (1 << 16)
    for body, fragment in ((b"[" + pad.encode() + b"]", "JSON object"), (b"{not json" + pad.encode(), "JSON"),
                           (json.dumps({"text": big, "html": "<p>x</p>"}).encode(), "exactly one")):
        r = client.post("/v1/add", content=body, headers={"Content-Type": "application/json"})
        assert r.status_code == 422 and fragment in r.json()["error"], r.text


class ThreadServer:
    """uvicorn serving ``create_app(index, **options)`` from a thread of this process, on loopback
    (for limits that a test sets small, and for an index the test holds on to)."""

    def __init__(self, index, *, header_timeout: float = 10.0, limit_concurrency: int | None = None, **options):
        import uvicorn

        from neardup.service import create_app
        from neardup.service.app import protocol_with_header_timeout

        self.app = create_app(index, resident=False, **options)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning",
                                limit_concurrency=limit_concurrency,
                                http=protocol_with_header_timeout(header_timeout, self.app.state.metrics))
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        for _ in range(600):  # hang guard
            if self.server.started:
                break
            time.sleep(0.05)
        assert self.server.started

    def metrics(self) -> str:
        return httpx.get(self.url + "/metrics", timeout=30).text

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=60)


class BlockingIndex(SeenIndex):
    """A real index whose queries wait for the test's go (an event, counted, not timed): what
    runs while one is held shows what the server does meanwhile."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.go = threading.Event()
        self.entered = threading.Event()

    def query_many(self, docs, **kwargs):
        self.entered.set()
        assert self.go.wait(60), "hang guard"
        return super().query_many(docs, **kwargs)


@pytest.mark.parametrize("body", [{"text": "one plain page"}, {"documents": [{"text": "a batch page"}]}],
                         ids=["fast-path", "batch"])
def test_queries_run_off_the_event_loop(tmp_path, body):
    # While a check is held inside the index, /healthz answers: the event loop is free.
    # Before: the single-text check sketched and queried on the event loop.
    index = BlockingIndex(str(tmp_path / "seen.db"))
    srv = ThreadServer(index)
    result = {}
    try:
        worker = threading.Thread(target=lambda: result.update(r=httpx.post(srv.url + "/v1/check", json=body,
                                                                             timeout=60)))
        worker.start()
        assert index.entered.wait(30)
        try:
            health = httpx.get(srv.url + "/healthz", timeout=10)
        finally:
            index.go.set()
        worker.join(60)
        assert health.status_code == 200 and result["r"].status_code == 200
    finally:
        srv.stop()
        index.close()


def test_request_over_its_time_budget_gets_503(tmp_path):
    index = BlockingIndex(str(tmp_path / "seen.db"))
    srv = ThreadServer(index, request_timeout=0.2)
    try:
        r = httpx.post(srv.url + "/v1/check", json={"text": "a page that waits"}, timeout=60)
        index.go.set()  # the held query finishes after its answer went out
        assert r.status_code == 503 and r.headers["retry-after"] == "1" and "0.2 s" in r.json()["error"]
        assert 'neardup_errors_total{kind="request_timeout"} 1' in srv.metrics()
        assert httpx.post(srv.url + "/v1/check", json={"text": "the next page"}, timeout=60).status_code == 200
    finally:
        index.go.set()
        srv.stop()
        index.close()


def test_document_budgets_in_characters_and_tokens(tmp_path):
    with SeenIndex(str(tmp_path / "seen.db")) as index:
        srv = ThreadServer(index, max_document_chars=5000, max_document_tokens=1000)
        try:
            post = lambda path, body: httpx.post(srv.url + path, json=body, timeout=60)  # noqa: E731
            r = post("/v1/check-and-add", {"id": "long", "text": "x" * 5001})
            assert r.status_code == 413 and "5001 characters" in r.json()["error"]
            r = post("/v1/add", {"text": " ".join(f"w{i}" for i in range(1001))})
            assert r.status_code == 413 and "1001 word tokens" in r.json()["error"]
            r = post("/v1/add", {"html": "<p>" + "\ufdfa" * 300 + "</p>"})  # 5,400 after NFKC
            assert r.status_code == 413 and "NFKC" in r.json()["error"]
            assert post("/v1/add", {"text": " ".join(f"w{i}" for i in range(999))}).status_code == 200
            assert len(index) == 1
            text = srv.metrics()
            assert 'neardup_errors_total{kind="document_too_large"} 2' in text
            assert 'neardup_errors_total{kind="document_too_many_tokens"} 1' in text
        finally:
            srv.stop()


def test_slow_headers_and_slow_bodies_are_cut_off(tmp_path):
    with SeenIndex(str(tmp_path / "seen.db")) as index:
        srv = ThreadServer(index, header_timeout=0.3, body_timeout=0.3)
        try:
            # headers that never end (slowloris): the connection is closed, no answer
            data, closed = raw_request(srv.url, b"POST /v1/check HTTP/1.1\r\nHost: 127.0.0.1\r\nX-a: 1\r\n")
            assert closed and data == b""
            # a body that never ends: 408 and the connection closed
            head = ("POST /v1/check HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    "Content-Length: 100\r\n\r\n").encode()
            data, closed = raw_request(srv.url, head, b'{"text": "')
            assert data.startswith(b"HTTP/1.1 408 ") and closed
            # a kept-alive connection gets the deadline again for its next request's headers
            data, closed = raw_request(srv.url, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /heal")
            assert data.startswith(b"HTTP/1.1 200 ") and data.count(b"HTTP/1.1") == 1 and closed
            text = srv.metrics()
            assert 'neardup_errors_total{kind="header_timeout"} 2' in text
            assert 'neardup_errors_total{kind="body_timeout"} 1' in text
        finally:
            srv.stop()


def test_connections_past_the_concurrency_limit_get_503(tmp_path):
    with SeenIndex(str(tmp_path / "seen.db")) as index:
        srv = ThreadServer(index, limit_concurrency=3)
        idle = [socket.create_connection(("127.0.0.1", srv.port)) for _ in range(2)]
        try:
            statuses = []
            for _ in range(100):  # until the server has accepted the idle connections (a hang guard)
                statuses.append(httpx.get(srv.url + "/healthz", timeout=30).status_code)
                if statuses[-1] == 503:
                    break
                time.sleep(0.05)
            assert statuses[-1] == 503 and set(statuses) <= {200, 503}
        finally:
            for sock in idle:
                sock.close()
        try:
            for _ in range(100):
                if httpx.get(srv.url + "/healthz", timeout=30).status_code == 200:
                    break
                time.sleep(0.05)
            else:
                pytest.fail("the server still refuses after the idle connections closed")
        finally:
            srv.stop()


def test_error_bodies_do_not_name_the_database_path(tmp_path):
    import fcntl

    db = str(tmp_path / "private-folder" / "seen.db")
    os.makedirs(os.path.dirname(db))
    with SeenIndex(db, timeout=0.2) as index:
        srv = ThreadServer(index)
        try:
            with open(db + "-lock", "rb") as lock:  # another process holding the write lock
                fcntl.flock(lock, fcntl.LOCK_EX)
                for body in ({"id": "a", "text": "a page to add"}, {"documents": [{"id": "b", "text": "a page"}]}):
                    r = httpx.post(srv.url + "/v1/add", json=body, timeout=60)
                    assert r.status_code == 503 and "busy" in r.json()["error"], r.text
                    assert str(tmp_path) not in r.text and "private-folder" not in r.text, r.text
            stats = httpx.get(srv.url + "/v1/stats", timeout=30).json()
            assert "path" not in stats and str(tmp_path) not in json.dumps(stats)
        finally:
            srv.stop()


# -- concurrency --------------------------------------------------------------------------------

def test_eight_clients_check_and_add_each_page_new_exactly_once(server):
    rng = random.Random(3)
    pages = [f"page {i} " + page(rng, 60) for i in range(1000)]
    added = [0] * len(pages)
    errors = []
    lock = threading.Lock()

    def client_run(seed: int) -> None:
        # Each client sends every page, in its own order; most requests hold one page, some a
        # few (a batch is one transaction), so that the clients race on single pages and batches.
        order = list(range(len(pages)))
        r_seed = random.Random(seed)
        r_seed.shuffle(order)
        try:
            with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as c:
                pos = 0
                while pos < len(order):
                    group = order[pos:pos + r_seed.choice((1, 1, 1, 4, 16))]
                    pos += len(group)
                    if len(group) == 1:
                        results = [c.post("/v1/check-and-add", json={"id": f"c{seed}-{group[0]}",
                                                                      "text": pages[group[0]]})]
                        results = [r.raise_for_status().json() for r in results]
                    else:
                        r = c.post("/v1/check-and-add", json={"documents": [
                            {"id": f"c{seed}-{i}", "text": pages[i]} for i in group]})
                        results = r.raise_for_status().json()["results"]
                    with lock:
                        for i, answer in zip(group, results):
                            added[i] += answer["added"]
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(repr(exc))

    threads = [threading.Thread(target=client_run, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert added == [1] * len(pages)


def test_writer_commits_concurrent_requests_together(tmp_path):
    """The fast path's writer thread: requests that arrive while it is busy share one
    transaction, in order (the same page is new exactly once), and a bad one fails alone."""
    import asyncio

    from neardup.errors import InputError
    from neardup.service.writer import Writer

    text = "the crawler fetches each page and follows every link it finds there"
    with SeenIndex(str(tmp_path / "seen.db")) as index:
        groups = []
        run_prepared = index.run_prepared
        index.run_prepared = lambda prepared: (groups.append(len(prepared)), run_prepared(prepared))[1]
        writer = Writer(index)

        async def main():
            index._write_lock.acquire()  # the writer is "busy": everything below queues up
            try:
                tasks = [asyncio.ensure_future(writer.run(
                    ("check_and_add", [(f"p{i}", text) if i != 7 else (None, " ... ")], 100)))
                    for i in range(20)]
                await asyncio.sleep(0)  # every task has queued its request
            finally:
                index._write_lock.release()
            return await asyncio.gather(*tasks, return_exceptions=True)

        results = asyncio.run(main())
        writer.close()
        assert isinstance(results[7], InputError)
        answers = [r[0] for i, r in enumerate(results) if i != 7]
        assert [a["added"] for a in answers] == [True] + [False] * 18
        assert all(a["exact"] == ["p0"] for a in answers[1:])
        assert sum(groups) == 19 and len(groups) <= 2  # the first request alone, or not even that
        assert len(index) == 1
        with pytest.raises(Exception, match="shutting down"):
            asyncio.run(writer.run(("add", [("late", text)])))


def test_writer_process_commits_in_order_and_survives_its_death(tmp_path):
    """The writer process of ``neardup serve``: concurrent requests are answered in order (the
    same page is new exactly once), a bad one fails alone, every answer comes after the commit,
    and after the process died the next request starts a new one."""
    import asyncio

    from neardup.errors import InputError, StoreError
    from neardup.service.writer import Writer

    text = "the crawler fetches each page and follows every link it finds there"
    with SeenIndex(str(tmp_path / "seen.db")) as index:
        writer = Writer(index, process=True)
        writer.start()

        async def burst(prefix, n=20):
            return await asyncio.gather(*[writer.run(
                ("check_and_add", [(f"{prefix}{i}", text) if i != 7 else (None, " ... ")], 100))
                for i in range(n)], return_exceptions=True)

        results = asyncio.run(burst("p"))
        assert isinstance(results[7], InputError)
        answers = [r[0] for i, r in enumerate(results) if i != 7]
        assert [a["added"] for a in answers] == [True] + [False] * 18
        assert all(a["exact"] == ["p0"] for a in answers[1:])
        assert index.ids() == ["p0"]  # committed before it was answered, seen from this process

        writer._child[0].kill()
        writer._child[0].join()
        again = asyncio.run(writer.run(("add", [("after-kill", "another page entirely")])))
        assert again == ["after-kill"]  # a new writer process took over
        assert sorted(index.ids()) == ["after-kill", "p0"]
        writer.close()
        assert writer._child is None
        with pytest.raises(StoreError, match="shutting down"):
            asyncio.run(writer.run(("add", [("late", text)])))


# -- fuzzing ------------------------------------------------------------------------------------

@pytest.mark.slow
def test_schemathesis_finds_no_failure(server, tmp_path):
    """Every schemathesis check, per operation (examples, coverage, fuzzing) and stateful (the
    add -> delete link of the schema), with 0 failures."""
    # The interpreter's own bin folder first: a venv's python run without activating the venv.
    exe = (shutil.which("schemathesis", path=os.path.dirname(sys.executable)) or shutil.which("schemathesis")
           or shutil.which("st"))
    if exe is None:
        pytest.skip("schemathesis is not installed (pip install schemathesis)")
    config = os.path.join(os.path.dirname(__file__), "..", "schemathesis.toml")
    r = subprocess.run([exe, "--config-file", config, "run", f"{server.url}/openapi.json",
                        "-H", f"Authorization: Bearer {TOKEN}", "--checks", "all", "--max-time", "60",
                        "--seed", "1", "--workers", "1", "--phases", "examples,coverage,fuzzing,stateful",
                        "--request-timeout", "20", "--report", "junit", "--report-dir", str(tmp_path)],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path,
                       env={**os.environ, "NO_COLOR": "1", "SCHEMATHESIS_TELEMETRY": "false"})
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    m = re.search(r"(\d+) generated, (\d+) passed", r.stdout)
    assert m and int(m.group(1)) > 0 and m.group(1) == m.group(2), r.stdout[-3000:]
    stateful = re.search(r"Stateful \(in [^)]*\)\s+Scenarios:\s+(\d+)", r.stdout)
    assert stateful and int(stateful.group(1)) > 0, r.stdout[-3000:]  # the stateful phase ran
    assert "Traceback" not in server.output()
