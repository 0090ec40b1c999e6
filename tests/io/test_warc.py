"""Web archives (neardup.io.read.warc): WARC (.warc, .warc.gz, .warc.zst), WET conversion records and
ARC read into documents; WARC input deduplicated into kept.warc.gz of the kept records' bytes."""

import gzip
import io
import json
import zlib
from pathlib import Path

import pytest

pytest.importorskip("fastwarc")
pytest.importorskip("warcio")
pytest.importorskip("selectolax")

from neardup.io import Document, Skipped, read_documents  # noqa: E402
from neardup.config import DedupConfig  # noqa: E402
from neardup.engines.local.run import Deduplicator  # noqa: E402
from neardup.io.read.warc import archive_kind, is_warc_magic, read_warc_records  # noqa: E402


STORY = "<p>" + " ".join(f"word{i} of the story told here" for i in range(60)) + "</p>"


def _page(title, body, nav="<nav><a href=/>Home</a> <a href=/a>About</a> <a href=/b>Blog</a></nav>"):
    return f"<html><head><title>{title}</title></head><body>{nav}<main><h1>{title}</h1>{body}</main></body></html>"


def _records():
    """(url, status, content type, body) of a small crawl: a page, its copy elsewhere, a near copy,
    two unrelated pages, a redirect and an image."""
    other = "<p>" + " ".join(f"unrelated{i} sentence about something else" for i in range(60)) + "</p>"
    third = "<p>" + " ".join(f"third{i} page on yet another topic" for i in range(60)) + "</p>"
    return [
        ("http://a.example/story", "200 OK", "text/html; charset=utf-8", _page("Story", STORY).encode()),
        ("http://b.example/copy", "200 OK", "text/html", _page("Story", STORY, nav="<nav><a>Other</a></nav>").encode()),
        ("http://a.example/near", "200 OK", "text/html",
         _page("Story", STORY.replace("word59 of", "word59 from")).encode()),
        ("http://a.example/other", "200 OK", "text/html", _page("Other", other).encode()),
        ("http://a.example/old", "301 Moved Permanently", "text/html", b"<a href=/new>moved</a>"),
        ("http://a.example/logo.png", "200 OK", "image/png", b"\x89PNG\r\n\x1a\n"),
        ("http://a.example/third", "200 OK", "text/html", _page("Third", third).encode()),
    ]


def _write_warc(path, gz=True, records=None, wet=False):
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as fh:
        w = WARCWriter(fh, gzip=gz)
        w.write_record(w.create_warcinfo_record(Path(path).name, {"software": "neardup tests"}))
        for url, status, ctype, body in records or _records():
            if wet:
                w.write_record(w.create_warc_record(url, "conversion", payload=io.BytesIO(body),
                                                    warc_content_type="text/plain"))
                continue
            req = StatusAndHeaders("GET / HTTP/1.1", [("Host", "example")], is_http_request=True)
            w.write_record(w.create_warc_record(url, "request", payload=io.BytesIO(b""), http_headers=req))
            http = StatusAndHeaders(status, [("Content-Type", ctype)], protocol="HTTP/1.1")
            w.write_record(w.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http))
    return str(path)


def _write_arc(path, gz):
    """An ARC v1 file: the filedesc header record, then one record per page (header line, HTTP
    response), each record its own gzip member when ``gz``."""
    version = b"1 0 InternetArchive\nURL IP-address Archive-date Content-type Archive-length\n"
    blocks = [b"filedesc://" + Path(path).name.encode() + b" 0.0.0.0 20240101000000 text/plain "
              + str(len(version)).encode() + b"\n" + version + b"\n"]
    for url, status, ctype, body in _records():
        http = f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\n\r\n".encode() + body
        head = f"{url} 192.0.2.1 20240101000000 {ctype.split(';')[0]} {len(http)}\n".encode()
        blocks.append(head + http + b"\n")
    with open(path, "wb") as fh:
        for b in blocks:
            fh.write(gzip.compress(b, mtime=0) if gz else b)
    return str(path)


def _dedup(paths, out):
    Deduplicator(DedupConfig(threshold=0.8, content="html"), jobs=1).run([str(p) for p in paths], str(out))
    rows = [json.loads(line) for line in open(out / "clusters.jsonl")]
    return rows, json.loads((out / "summary.json").read_text())


def test_archive_kind_sniffs_bytes(tmp_path):
    plain = _write_warc(tmp_path / "a.warc", gz=False)
    gz = _write_warc(tmp_path / "a.warc.gz", gz=True)
    arc = _write_arc(tmp_path / "a.arc.gz", gz=True)
    zstandard = pytest.importorskip("zstandard")
    zst = tmp_path / "a.warc.zst"
    zst.write_bytes(zstandard.ZstdCompressor().compress(Path(plain).read_bytes()))  # one frame: a block in
    for p, kind in ((plain, "warc"), (gz, "warc"), (arc, "arc"), (zst, "warc")):
        head = Path(p).read_bytes()[:512 if p != zst else 1 << 18]
        assert archive_kind(head) == kind and is_warc_magic(head)
    for junk in (b"", b"{\"id\": 1}\n", b"\x1f\x8b\x08junk", b"<html>", b"WARC"):
        assert archive_kind(junk) is None and not is_warc_magic(junk)


@pytest.mark.parametrize("name", ["c.warc", "c.warc.gz", "c.warc.zst"])
def test_read_records_and_documents(tmp_path, name):
    p = _write_warc(tmp_path / "c.warc", gz=False)
    if name.endswith(".gz"):
        p = _write_warc(tmp_path / name, gz=True)
    elif name.endswith(".zst"):
        zstandard = pytest.importorskip("zstandard")
        (tmp_path / name).write_bytes(zstandard.ZstdCompressor().compress(Path(p).read_bytes()))
        p = str(tmp_path / name)
    recs = list(read_warc_records(p))
    assert [r.type for r in recs] == ["warcinfo"] + ["request", "response"] * 7
    assert [r.number for r in recs] == list(range(1, 16))
    responses = [r for r in recs if r.type == "response"]
    assert [r.url for r in responses] == [u for u, *_ in _records()]
    assert all(r.record_id.startswith("urn:uuid:") for r in recs)
    assert len({r.record_id for r in recs}) == len(recs)
    assert [r.status for r in responses] == [200, 200, 200, 200, 301, 200, 200]
    assert responses[0].mime == "text/html" and responses[0].charset == "utf-8"
    assert responses[0].body == _records()[0][3]
    offsets = [r.offset for r in recs]
    assert offsets == sorted(offsets) and offsets[0] == 0

    docs = list(read_documents([p]))
    assert [d.id for d in docs] == [u for u, *_ in _records()]
    assert [type(d) for d in docs] == [Document] * 4 + [Skipped, Skipped, Document]
    assert [d.reason for d in docs if isinstance(d, Skipped)] == ["http_status", "not_html"]
    assert docs[0].meta["url"] == "http://a.example/story"
    assert docs[0].meta["record_id"] == responses[0].record_id
    assert "word3 of the story" in docs[0].text and "About" not in docs[0].text


def test_wet_conversion_records_are_text(tmp_path):
    texts = [("http://a.example/1", "", "", b"Plain text of page one.\nSecond line."),
             ("http://a.example/2", "", "", "Caf\xe9 texte".encode())]
    p = _write_warc(tmp_path / "c.warc.wet.gz", gz=True, records=texts, wet=True)
    docs = list(read_documents([p], format="warc"))
    assert [(d.id, d.text) for d in docs] == [("http://a.example/1", "Plain text of page one.\nSecond line."),
                                              ("http://a.example/2", "Café texte")]


@pytest.mark.parametrize("gz", [False, True])
def test_arc(tmp_path, gz):
    p = _write_arc(tmp_path / ("c.arc.gz" if gz else "c.arc"), gz)
    recs = list(read_warc_records(p))
    assert recs[0].type == "warcinfo" and [r.url for r in recs[1:]] == [u for u, *_ in _records()]
    docs = list(read_documents([p]))
    assert [type(d).__name__ for d in docs] == ["Document"] * 4 + ["Skipped", "Skipped", "Document"]
    assert "word3 of the story" in docs[0].text


def test_dedup_warc_gz_writes_the_kept_records_byte_for_byte(tmp_path):
    p = _write_warc(tmp_path / "c.warc.gz", gz=True)
    rows, summary = _dedup([p], tmp_path / "out")
    by_id = {r["id"]: r for r in rows}
    assert len(rows) == 7
    assert by_id["http://b.example/copy"]["duplicate_of"] == "http://a.example/story"
    assert by_id["http://a.example/near"]["duplicate_of"] == "http://a.example/story"
    assert by_id["http://a.example/other"]["kept"] and by_id["http://a.example/third"]["kept"]
    assert by_id["http://a.example/story"]["url"] == "http://a.example/story"
    assert "url" in by_id["http://b.example/copy"]
    kept_urls = [r["id"] for r in rows if r["kept"]]
    assert kept_urls == ["http://a.example/story", "http://a.example/other", "http://a.example/third"]

    out = tmp_path / "out" / "kept.warc.gz"
    assert summary["kept_output"]["path"] == str(out) and out.exists()
    src = Path(p).read_bytes()
    members = {}
    recs = list(read_warc_records(p, bodies=False))
    for a, b in zip(recs, recs[1:] + [None]):
        members[a.record_id] = src[a.offset:b.offset if b else len(src)]
    got = list(read_warc_records(out, bodies=False))
    assert [r.url for r in got] == kept_urls and all(r.type == "response" for r in got)
    data = out.read_bytes()
    ends = [r.offset for r in got[1:]] + [len(data)]
    for r, end in zip(got, ends):
        assert data[r.offset:end] == members[r.record_id]  # the input's gzip member, byte for byte
    # the kept archive is read back as the same pages
    assert [d.text for d in read_documents([str(out)])] == [
        d.text for d in read_documents([p]) if d.id in kept_urls]


@pytest.mark.parametrize("name", ["c.warc", "c.warc.zst", "whole.warc.gz", "whole.warc.zst"])
def test_dedup_uncompressed_warc_gzips_each_kept_record(tmp_path, name):
    # whole.*: the archive compressed as one gzip member or zstd frame (``gzip c.warc``), so the
    # records' offsets are no places to copy from: each kept record is gzipped from the plain bytes
    p = _write_warc(tmp_path / "c.warc", gz=False)
    if name == "whole.warc.gz":
        (tmp_path / name).write_bytes(gzip.compress(Path(p).read_bytes()))
        source, p = p, str(tmp_path / name)
    elif name == "whole.warc.zst":
        zstandard = pytest.importorskip("zstandard")
        (tmp_path / name).write_bytes(zstandard.ZstdCompressor().compress(Path(p).read_bytes()))
        source, p = p, str(tmp_path / name)
    elif name.endswith(".zst"):
        zstandard = pytest.importorskip("zstandard")
        raw = Path(p).read_bytes()
        offs = [r.offset for r in read_warc_records(p, bodies=False)] + [len(raw)]
        c = zstandard.ZstdCompressor()
        (tmp_path / name).write_bytes(b"".join(c.compress(raw[a:b]) for a, b in zip(offs, offs[1:])))
        source = p
        p = str(tmp_path / name)
    else:
        source = p
    rows, _ = _dedup([p], tmp_path / "out")
    kept = [r["id"] for r in rows if r["kept"]]
    raw = Path(source).read_bytes()
    recs = list(read_warc_records(source, bodies=False))
    spans = {r.url: raw[r.offset:(b.offset if b else len(raw))]
             for r, b in zip(recs, recs[1:] + [None]) if r.type == "response"}
    out = (tmp_path / "out" / "kept.warc.gz").read_bytes()
    # one gzip member per kept record, holding that record's bytes as they were
    members, rest = [], out
    while rest:
        d = zlib.decompressobj(31)
        members.append(d.decompress(rest))
        rest = d.unused_data
    assert members == [spans[u] for u in kept]


def test_dedup_arc_writes_kept_arc(tmp_path):
    p = _write_arc(tmp_path / "c.arc.gz", gz=True)
    rows, _ = _dedup([p], tmp_path / "out")
    kept = [r["id"] for r in rows if r["kept"]]
    out = tmp_path / "out" / "kept.arc.gz"
    got = list(read_warc_records(out))
    assert [r.url for r in got[1:]] == kept  # the filedesc header record first


def test_truncated_archive_keeps_what_was_read(tmp_path):
    p = _write_warc(tmp_path / "c.warc.gz", gz=True)
    data = Path(p).read_bytes()
    cut = tmp_path / "cut.warc.gz"
    cut.write_bytes(data[: len(data) - 40])
    docs = list(read_documents([str(cut)]))
    assert isinstance(docs[-1], Skipped) and docs[-1].reason == "unreadable_file"
    assert [d.id for d in docs[:-1]] == [u for u, *_ in _records()][: len(docs) - 1]


def test_bad_content_encoding_is_one_skipped_record(tmp_path):
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    p = tmp_path / "c.warc.gz"
    with open(p, "wb") as fh:
        w = WARCWriter(fh, gzip=True)
        for url, headers, body in (("http://x/bad", [("Content-Encoding", "gzip")], b"not gzip at all"),
                                   ("http://x/gz", [("Content-Encoding", "gzip")], gzip.compress(b"<p>zipped page</p>")),
                                   ("http://x/chunked", [("Transfer-Encoding", "chunked")],
                                    b"7\r\n<p>chun\r\n8\r\nked ok</p\r\n1\r\n>\r\n0\r\n\r\n")):
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")] + headers, protocol="HTTP/1.1")
            w.write_record(w.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http))
    docs = list(read_documents([str(p)]))
    assert isinstance(docs[0], Skipped) and docs[0].reason == "undecodable"
    assert docs[1].text == "zipped page" and docs[2].text == "chunked ok"


def test_pipe_and_file_object(tmp_path):
    p = _write_warc(tmp_path / "c.warc.gz", gz=True)
    with open(p, "rb") as fh:
        a = [(r.type, r.url, r.body) for r in read_warc_records(fh)]

    class Pipe(io.RawIOBase):  # a stream that cannot seek, as stdin
        def __init__(self, data):
            self._b = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, buf):
            chunk = self._b.read(min(len(buf), 1000))
            buf[: len(chunk)] = chunk
            return len(chunk)

    b = [(r.type, r.url, r.body) for r in read_warc_records(io.BufferedReader(Pipe(Path(p).read_bytes())))]
    assert a == b and len(a) == 15


@pytest.mark.parametrize("name", ["c.warc", "c.warc.gz", "c.wet.gz", "c.arc.gz", "cut.warc.gz"])
def test_the_write_pass_counts_the_records_the_readers_count(tmp_path, name):
    """write_kept_warc finds the records in one pass over the WARC headers (no HTTP heads): the
    same offsets and the same input records (ordinals) as read_warc_records and the readers."""
    from neardup.io.read import warc
    from neardup.io.write import warc as kept_warc

    if name == "c.arc.gz":
        p = _write_arc(tmp_path / name, gz=True)
    elif name == "c.wet.gz":
        texts = [("http://a.example/1", "", "", b"Plain text one."), ("http://a.example/2", "", "", b"Two.")]
        p = _write_warc(tmp_path / name, gz=True, records=texts, wet=True)
        # a conversion record that is no text takes no ordinal
        from warcio.warcwriter import WARCWriter

        with open(p, "ab") as fh:
            w = WARCWriter(fh, gzip=True)
            w.write_record(w.create_warc_record("http://a.example/3", "conversion", payload=io.BytesIO(b"%PDF"),
                                                warc_content_type="application/pdf"))
            w.write_record(w.create_warc_record("http://a.example/4", "conversion", payload=io.BytesIO(b"Four."),
                                                warc_content_type="text/plain"))
    else:
        p = _write_warc(tmp_path / name, gz=name.endswith(".gz"))
        if name.startswith("cut"):
            data = Path(p).read_bytes()
            Path(p).write_bytes(data[: len(data) * 2 // 3])
    want = []
    try:
        for rec in read_warc_records(p, bodies=False):
            want.append((rec.offset, warc.is_input_record(rec)))
    except warc.ArchiveError:
        pass
    got = []
    try:
        got.extend(warc.record_starts(p))
    except warc.ArchiveError:
        pass
    assert got == want and any(c for _, c in got) and (name != "c.wet.gz" or [c for _, c in got][-2:] == [False, True])
    ordinals = None if name == "cut.warc.gz" else len(list(read_documents([p])))
    out = io.BytesIO()
    n, written = kept_warc.write_kept_warc(p, lambda o: True, out)
    assert n == sum(c for _, c in want) and (ordinals is None or n == ordinals)
    assert written == n or name == "cut.warc.gz"


def test_the_write_pass_uses_the_record_starts_the_read_pass_saw(tmp_path, monkeypatch):
    """After the read pass has read an archive to its end, write_kept_warc copies the kept records
    without reading the archive again, the same bytes; a file changed since is read again."""
    from neardup.io.read import warc
    from neardup.io.write import warc as kept_warc

    p = _write_warc(tmp_path / "c.warc.gz", gz=True)
    keep = lambda o: o % 2 == 0  # noqa: E731
    warc._SEEN.clear()
    fresh = io.BytesIO()
    assert kept_warc.write_kept_warc(p, keep, fresh) == (7, 4)
    docs = list(read_documents([p]))
    assert len(docs) == 7 and p in warc._SEEN

    def no_pass(path):
        raise AssertionError("the archive was read again")

    monkeypatch.setattr(kept_warc, "record_starts", no_pass)
    remembered = io.BytesIO()
    assert kept_warc.write_kept_warc(p, keep, remembered) == (7, 4)
    assert remembered.getvalue() == fresh.getvalue()
    assert p not in warc._SEEN  # used once

    list(read_documents([p]))
    with open(p, "ab") as fh:  # the file changes after the read pass: its starts are not trusted
        fh.write(Path(_write_warc(tmp_path / "d.warc.gz", gz=True)).read_bytes())
    with pytest.raises(AssertionError, match="read again"):
        kept_warc.write_kept_warc(p, keep, io.BytesIO())
    monkeypatch.undo()
    assert kept_warc.write_kept_warc(p, keep, io.BytesIO())[0] == 14

    # a cut archive: a read pass stopped by a record cut short remembers nothing, one that
    # FastWARC ends quietly remembers what the write pass would see: the same bytes either way
    data = Path(p).read_bytes()
    remembered_some = forgot_some = False
    for tenths in range(1, 10):
        cut = tmp_path / f"cut{tenths}.warc.gz"
        cut.write_bytes(data[: len(data) * tenths // 10])
        list(read_documents([str(cut)]))
        remembered_some |= str(cut) in warc._SEEN
        forgot_some |= str(cut) not in warc._SEEN
        with_starts = io.BytesIO()
        counts = kept_warc.write_kept_warc(str(cut), keep, with_starts)
        assert str(cut) not in warc._SEEN
        without = io.BytesIO()
        assert kept_warc.write_kept_warc(str(cut), keep, without) == counts
        assert with_starts.getvalue() == without.getvalue()
    assert remembered_some and forgot_some


def test_the_remembered_record_starts_are_bounded(tmp_path, monkeypatch):
    from neardup.io.read import warc
    from neardup.io.write import warc as kept_warc

    a = _write_warc(tmp_path / "a.warc.gz", gz=True)  # 15 records each
    b = _write_warc(tmp_path / "b.warc.gz", gz=True)
    warc._SEEN.clear()
    monkeypatch.setattr(warc, "_SEEN_MAX_RECORDS", 20)
    list(read_documents([a]))
    list(read_documents([b]))
    assert list(warc._SEEN) == [b]  # a went to make room
    monkeypatch.setattr(warc, "_SEEN_MAX_RECORDS", 10)
    list(read_documents([a]))
    assert a not in warc._SEEN  # more records than the bound: not remembered
