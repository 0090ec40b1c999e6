"""Pages added to the HTTP service as HTML keep their whole-page fingerprint beside their URL (a real
``python -m neardup serve`` on loopback), so that ``neardup changes`` against its index tells a
page whose navigation alone changed (``template``) from one that did not (``unchanged``)."""

from __future__ import annotations

import json
import signal
import sqlite3
from pathlib import Path

import orjson
import pytest

from neardup.cli import main
from neardup.text.html_pages import page_fingerprint

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from service_server import Server  # noqa: E402

pytestmark = pytest.mark.service

DEBIAN = Path(__file__).resolve().parents[1] / "data" / "html" / "debian"
SITE = "https://docs.debian.test/"


def page(name: str) -> str:
    return (DEBIAN / name).read_text(encoding="utf-8")


def test_html_added_through_the_service_tells_template_from_unchanged(tmp_path):
    pages = {SITE + "a.html": page("sphinx-0001.html"), SITE + "b.html": page("sphinx-0000.html"),
             SITE + "c.html": page("docbook-0000.html")}
    db = str(tmp_path / "seen.db")
    srv = Server(db)
    try:
        with httpx.Client(base_url=srv.url, timeout=60) as client:
            # one page alone (FastAPI's path for HTML), two in a batch
            first, *rest = pages.items()
            r = client.post("/v1/add", json={"id": "a", "html": first[1], "url": first[0]})
            assert r.status_code == 200, r.text
            r = client.post("/v1/add", json={"documents": [{"id": url[len(SITE):-5], "html": html, "url": url}
                                                           for url, html in rest]})
            assert r.status_code == 200, r.text
    finally:
        assert srv.stop() in (0, -signal.SIGTERM), srv.output()
    with sqlite3.connect(db) as conn:
        stored = dict(conn.execute("SELECT id, page_fingerprint FROM docs"))
    assert {k: v % (1 << 64) for k, v in stored.items()} == {
        url[len(SITE):-5]: page_fingerprint(html) for url, html in pages.items()}

    # the next crawl: a's breadcrumbs name another version, b is as it was, c gained a paragraph
    anchor = "3.25.1 Documentation"
    assert pages[SITE + "a.html"].count(anchor) >= 1
    new = {SITE + "a.html": pages[SITE + "a.html"].replace(anchor, "3.25.2 Documentation"),
           SITE + "b.html": pages[SITE + "b.html"],
           SITE + "c.html": pages[SITE + "c.html"].replace("</body>", "<p>A paragraph added at the end of the "
                                                                      "page, long enough to count.</p></body>")}
    crawl = tmp_path / "new.jsonl"
    crawl.write_bytes(b"".join(orjson.dumps({"id": f"new-{k}", "url": url, "html": html}) + b"\n"
                               for k, (url, html) in enumerate(new.items())))
    out = tmp_path / "out"
    assert main(["changes", db, str(crawl), "--output", str(out), "--content", "html", "--text-field", "html",
                 "--quiet"]) == 0
    got = {json.loads(x)["url"]: json.loads(x)["status"] for x in (out / "changes.jsonl").read_text().splitlines()}
    assert got == {SITE + "a.html": "template", SITE + "b.html": "unchanged", SITE + "c.html": "changed"}
    assert json.loads((out / "summary.json").read_text())["estimates"]["pages_without_whole_page"] == 0
