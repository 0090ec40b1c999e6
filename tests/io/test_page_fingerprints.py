"""``read_documents(page_fingerprints=True)``: an HTML record's main content and its whole-page
fingerprint from one read, the text that its mode gives alone and the fingerprint that
``page_fingerprint`` gives of the markup (serially and in worker processes), for JSONL pages, HTML
files and WARC responses of the Debian documentation pages."""

from pathlib import Path

import orjson
import pytest

from neardup.io import Document, read_documents
from neardup.text.html_pages import page_fingerprint

DEBIAN = Path(__file__).resolve().parents[1] / "data" / "html" / "debian"
PAGES = sorted(DEBIAN.glob("*.html"))


def texts(paths, **options) -> list:
    return [(r.ordinal, r.text if type(r) is Document else r.reason, getattr(r, "page_fingerprint", None))
            for r in read_documents(paths, **options)]


@pytest.fixture(scope="module")
def jsonl(tmp_path_factory):
    path = tmp_path_factory.mktemp("pages") / "pages.jsonl"
    rows = [{"id": p.name, "html": p.read_text(encoding="utf-8")} for p in PAGES]
    rows.append({"id": "blank", "html": "<html><body>  </body></html>"})  # no text in either mode
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return str(path)


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("html", ["main", "whole"])
def test_the_same_texts_as_alone_and_the_fingerprints_of_the_markup(jsonl, jobs, html):
    read = dict(content="html", text_field="html", jobs=jobs, html=html)
    both = texts([jsonl], **read, page_fingerprints=True)
    alone = texts([jsonl], **read)
    assert [(o, t) for o, t, _ in both] == [(o, t) for o, t, _ in alone]
    assert len(both) == len(PAGES) + 1 and both[-1][1] == "empty"
    assert all(page is None for _, _, page in alone)
    if html == "whole":  # the text is the whole page already: none beside it
        assert all(page is None for _, _, page in both)
        return
    markup = [orjson.loads(line)["html"] for line in open(jsonl, "rb")]
    assert [page for _, _, page in both[:-1]] == [page_fingerprint(m) for m in markup[:-1]]
    assert len({page for _, _, page in both[:-1]}) == len(PAGES)  # every page its own


def test_html_files_and_warc(tmp_path):
    from warcio.warcwriter import WARCWriter
    from warcio.statusandheaders import StatusAndHeaders
    import io

    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=False)
    for p in PAGES[:5]:
        headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(f"https://docs.debian.test/{p.name}", "response",
                                                      payload=io.BytesIO(p.read_bytes()), http_headers=headers))
    warc = tmp_path / "crawl.warc"
    warc.write_bytes(buf.getvalue())
    want = [page_fingerprint(p.read_bytes()) for p in PAGES[:5]]
    for paths in ([str(warc)], [str(p) for p in PAGES[:5]]):
        for jobs in (1, 2):
            both = texts(paths, jobs=jobs, page_fingerprints=True)
            assert [(o, t) for o, t, _ in both] == [(o, t) for o, t, _ in texts(paths, jobs=jobs)]
            assert [p for _, _, p in both] == want
