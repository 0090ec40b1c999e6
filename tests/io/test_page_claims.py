"""The reader puts a page's canonical link and og:url into its meta when asked (claims=True)."""

import io
from pathlib import Path

import orjson
import pytest

from neardup.io import Document, read_documents

DEBIAN = Path(__file__).resolve().parents[1] / "data" / "html" / "debian"
HANDBOOK = "https://debian-handbook.info/browse/cs-CZ/stable/sect.main-desktop-tools.html"
LYING = ("<html><head><link rel='canonical' href='/other.html'><meta property='og:url' content='/og.html'></head>"
         "<body><main><p>A page that names another URL as its own, in a few words of text.</p></main></body></html>")


def warc_bytes(pages):
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=True)
    for url, html in pages:
        headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(html.encode()),
                                                      http_headers=headers))
    return buf.getvalue()


@pytest.mark.parametrize("jobs", [1, 2])
def test_jsonl_html_warc_and_files(tmp_path, jobs):
    handbook = (DEBIAN / "publican-0006.html").read_text(encoding="utf-8")
    jsonl = tmp_path / "pages.jsonl"
    jsonl.write_bytes(orjson.dumps({"id": "j", "url": "https://www.example.org/a/b.html", "text": LYING}) + b"\n")
    warc = tmp_path / "crawl.warc.gz"
    warc.write_bytes(warc_bytes([("https://www.example.org/x/y.html", LYING)]))
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "handbook.html").write_text(handbook, encoding="utf-8")

    docs = [d for d in read_documents([str(jsonl)], content="html", claims=True, jobs=jobs) if type(d) is Document]
    assert docs[0].meta == {"canonical": "https://www.example.org/other.html", "og_url": "https://www.example.org/og.html"}
    docs = [d for d in read_documents([str(warc)], claims=True, jobs=jobs) if type(d) is Document]
    assert docs[0].meta["canonical"] == "https://www.example.org/other.html"
    assert docs[0].meta["url"] == "https://www.example.org/x/y.html"
    docs = [d for d in read_documents([str(folder)], claims=True, jobs=jobs) if type(d) is Document]
    assert docs[0].meta == {"canonical": HANDBOOK}
    # not asked: no meta added
    docs = [d for d in read_documents([str(folder)], jobs=jobs) if type(d) is Document]
    assert docs[0].meta == {}


@pytest.mark.parametrize("jobs", [1, 2])
def test_want_reads_only_the_records_asked_for(tmp_path, jobs):
    jsonl = tmp_path / "pages.jsonl"
    jsonl.write_bytes(b"".join(orjson.dumps({"id": f"p{k}", "text": LYING.replace("few", f"few {k}")}) + b"\n"
                               for k in range(4)))
    docs = list(read_documents([str(jsonl)], content="html", jobs=jobs, want={1, 3}.__contains__))
    assert [(d.id, d.ordinal) for d in docs] == [("p1", 1), ("p3", 3)]
