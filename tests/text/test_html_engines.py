"""One extraction everywhere: the same page gives the same text through extract_text, the readers
of `neardup dedup` (JSONL of HTML, a folder of .html files, a .warc.gz; serial and parallel),
`neardup index add`, the service's {"html": ...} requests, `neardup report`'s site loader and the
Spark engine (local mode)."""

import io
import json
from pathlib import Path

import pytest

pytest.importorskip("selectolax")

from neardup.io import Document, read_documents  # noqa: E402
from neardup.text.html import extract_text  # noqa: E402

DEBIAN = Path(__file__).parent.parent / "data" / "html" / "debian"


def _pages() -> list[tuple[str, bytes]]:
    pages = sorted(DEBIAN.glob("*.html"))[:14]
    assert pages, "tests/data/html/debian is missing"
    return [(p.stem, p.read_bytes()) for p in pages]


def _corpus(tmp_path):
    """The pages as a JSONL of HTML, a folder of .html files and a .warc.gz, and their texts."""
    pytest.importorskip("warcio")
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    pages = _pages()
    html = {name: data.decode("utf-8") for name, data in pages}
    jsonl = tmp_path / "pages.jsonl"
    jsonl.write_text("".join(json.dumps({"id": name, "text": text}) + "\n" for name, text in html.items()))
    folder = tmp_path / "site"
    folder.mkdir()
    for name, data in pages:
        (folder / f"{name}.html").write_bytes(data)
    warc = tmp_path / "pages.warc.gz"
    with open(warc, "wb") as fh:
        w = WARCWriter(fh, gzip=True)
        for name, data in pages:
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
            w.write_record(w.create_warc_record(f"http://docs.example/{name}.html", "response",
                                                payload=io.BytesIO(data), http_headers=http))
    texts = {name: extract_text(text) for name, text in html.items()}
    assert all(texts.values())
    return html, texts, str(jsonl), str(folder), str(warc)


@pytest.mark.parametrize("jobs,workers", [(1, "processes"), (2, "processes"), (2, "threads")])
def test_readers_give_extract_text(tmp_path, monkeypatch, jobs, workers):
    from neardup.io.read import extract

    monkeypatch.setattr(extract, "EXTRACT_WORKERS", workers)
    html, texts, jsonl, folder, warc = _corpus(tmp_path)
    want = list(texts.values())
    got = [d.text for d in read_documents([jsonl], content="html", jobs=jobs)]
    assert got == want
    got = [d.text for d in read_documents([folder], jobs=jobs)]
    assert got == want
    got = [d.text for d in read_documents([warc], jobs=jobs)]
    assert got == want
    whole = [d.text for d in read_documents([warc], html="whole", jobs=jobs)]
    assert whole == [extract_text(h, "whole") for h in html.values()]


def test_dedup_of_a_folder_extracts_each_page_once(tmp_path, monkeypatch):
    # the kept corpus (kept.jsonl of extracted text) is copied from the texts of the read pass,
    # the same bytes as extracting the kept pages again
    import numpy as np

    from neardup.cli import main
    from neardup.io import write_kept
    from neardup.io.read import rows

    html, texts, jsonl, folder, warc = _corpus(tmp_path)
    for name in list(html)[:4]:  # copies, so that some pages are not kept
        (Path(folder) / f"{name}-copy.html").write_text(html[name])
    calls = []
    extract = rows.extract_page
    monkeypatch.setattr(rows, "extract_page", lambda *a, **k: calls.append(1) or extract(*a, **k))
    out = tmp_path / "out"
    assert main(["dedup", folder, "-o", str(out), "--jobs", "1", "-q"]) == 0
    assert len(calls) == len(html) + 4  # once per page: none again for the kept corpus
    kept_ids = {c["id"] for c in map(json.loads, open(out / "clusters.jsonl")) if c["kept"]}
    docs = list(read_documents([folder]))
    keep = np.array([isinstance(d, Document) and d.id in kept_ids for d in docs])
    assert 0 < keep.sum() == len(html) < len(docs)
    want = write_kept([folder], keep, str(tmp_path / "again"))
    assert (out / "kept.jsonl").read_bytes() == Path(want["path"]).read_bytes()


def test_report_loader_gives_extract_text(tmp_path):
    from neardup.report.metrics import load_site

    html, texts, jsonl, folder, warc = _corpus(tmp_path)
    pages, skipped, info = load_site(folder)
    assert not skipped
    assert {Path(p.id).stem: p.main for p in pages} == texts
    assert {Path(p.id).stem: p.whole for p in pages} == {k: extract_text(h, "whole") for k, h in html.items()}


def test_index_add_and_query_use_the_same_text(tmp_path):
    from neardup.cli import main
    from neardup.store import SeenIndex

    html, texts, jsonl, folder, warc = _corpus(tmp_path)
    db = str(tmp_path / "seen.db")
    assert main(["index", "add", "--db", db, jsonl, "--content", "html"]) == 0
    with SeenIndex(db, create=False) as index:
        for name, text in texts.items():
            assert name in index.query(text)["exact"], name


@pytest.mark.service
def test_service_html_requests_use_the_same_text(tmp_path):
    httpx = pytest.importorskip("httpx")
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    import sys

    sys.path.insert(0, str(Path(__file__).parent.parent / "service"))
    from test_app import Server  # tests/service/test_app.py: a real `neardup serve` process

    html, texts, jsonl, folder, warc = _corpus(tmp_path)
    token = tmp_path / "token"
    token.write_text("t0ken-for-html\n")
    srv = Server(str(tmp_path / "svc.db"), token_file=str(token))
    try:
        with httpx.Client(base_url=srv.url, headers={"Authorization": "Bearer t0ken-for-html"}, timeout=60) as c:
            for name, page in html.items():
                assert c.post("/v1/add", json={"id": name, "html": page}).json()["added"] is True
            for name, text in texts.items():
                assert c.post("/v1/check", json={"text": text}).json()["exact"] == [name], name
    finally:
        srv.stop()


@pytest.mark.spark
def test_spark_engine_gives_the_local_engines_answers_on_html(tmp_path):
    pytest.importorskip("pyspark")
    from neardup.cli import main

    html, texts, jsonl, folder, warc = _corpus(tmp_path)
    # near copies with other navigation around the same content, so that there are pairs to agree on
    rows = [json.loads(line) for line in open(jsonl)]
    for r in rows[:5]:
        page = r["text"].replace("<body", "<body><nav><a href=/>Home</a> <a href=/x>Index</a></nav", 1)
        page = page.replace("</p>", " and one sentence more, in the copy only.</p>", 1)  # near, not exact
        rows.append({"id": r["id"] + "-copy", "text": page})
    src = tmp_path / "more.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    outs = {}
    for engine in ("local", "spark"):
        out = tmp_path / engine
        extra = ["--spark-master", "local[2]"] if engine == "spark" else []
        assert main(["dedup", str(src), "-o", str(out), "--content", "html", "--engine", engine, "-q", *extra]) == 0
        # both engines write the same files (the local writers)
        clusters = [json.loads(line) for line in open(out / "clusters.jsonl")]
        pairs = sorted((p["a"], p["b"], p["jaccard"]) for p in map(json.loads, open(out / "pairs.jsonl")))
        summary = json.loads((out / "summary.json").read_text())
        assert summary["config"]["extraction"].startswith("neardup-main/")
        outs[engine] = ([(c["id"], c["cluster"], c["kept"], c["reason"]) for c in clusters], pairs,
                        summary["config_fingerprint"])
    assert outs["spark"][0] == outs["local"][0]
    assert outs["spark"][1] == outs["local"][1] and len(outs["local"][1]) >= 5
    assert outs["spark"][2] == outs["local"][2]
    for name in ("clusters.jsonl", "pairs.jsonl", "kept.jsonl"):  # and byte for byte
        assert (tmp_path / "spark" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
