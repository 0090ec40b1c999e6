"""Readers and writers of neardup.io: every format round trip, nothing lost, kept records byte for byte."""

import gzip
import importlib
import io
import os
import random
import shutil
import tracemalloc
from collections import Counter

import numpy as np
import orjson
import pytest

from neardup.errors import ConfigError, InputError
from neardup.io import (SKIP_REASONS, Document, JsonlWriter, Skipped, detect_format, iter_raw_records,
                        read_documents, write_kept)



def _optional(name: str):
    """The module, or None when its extra is not installed (only the tests needing it skip)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


pa = _optional("pyarrow")
pq = _optional("pyarrow.parquet")
zstd = _optional("zstandard")
needs_parquet = pytest.mark.skipif(pq is None, reason="Parquet needs pyarrow: pip install 'neardup[io]'")
needs_zstd = pytest.mark.skipif(zstd is None, reason=".zst needs zstandard: pip install 'neardup[io]'")
needs_warc = pytest.mark.skipif(_optional("warcio") is None, reason="WARC needs warcio: pip install 'neardup[io]'")
needs_html = pytest.mark.skipif(_optional("trafilatura") is None or _optional("lxml") is None,
                                reason="HTML extraction needs trafilatura and lxml: pip install 'neardup[io]'")

HTML_PAGE = os.path.join(os.path.dirname(__file__), "..", "data", "html", "article_with_nav.html")

RECORDS = [
    {"id": "a", "text": "the crawler fetches each page and follows its links", "n": 3},
    {"id": 7, "text": "näive café — unicode text ✓ 漢字", "n": 1.5},
    {"text": "a record without an id"},
    {"id": "d", "text": "last record", "n": None},
]


def _jsonl_bytes(records):
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def _write(path, data: bytes):
    if str(path).endswith(".gz"):
        with gzip.open(path, "wb") as fh:
            fh.write(data)
    elif str(path).endswith(".zst"):
        # two frames, to check that reading goes across frames
        half = len(data) // 2
        c = zstd.ZstdCompressor()
        path.write_bytes(c.compress(data[:half]) + c.compress(data[half:]))
    else:
        path.write_bytes(data)
    return str(path)


def _all(paths, **kw):
    out = list(read_documents(paths, **kw))
    assert [r.ordinal for r in out] == list(range(len(out)))
    return out


def _docs(out):
    return [r for r in out if isinstance(r, Document)]


def _skips(out):
    return [r for r in out if isinstance(r, Skipped)]


# ---------------------------------------------------------------------------- detection


def test_detect_format(tmp_path):
    names = {"a.jsonl": "jsonl", "a.json": "jsonl", "a.ndjson.gz": "jsonl", "A.JSONL.ZST": "jsonl",
             "a.parquet": "parquet", "a.pq": "parquet", "a.warc": "warc", "a.warc.gz": "warc",
             "a.html": "html", "a.htm": "html", "a.txt": "text", "README": "text", "a.txt.gz": "text"}
    for name, fmt in names.items():
        (tmp_path / name).write_bytes(b"x")
        assert detect_format(str(tmp_path / name)) == fmt, name
    with pytest.raises(InputError, match="no such file"):
        detect_format(str(tmp_path / "missing.jsonl"))
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "a.txt").write_text("x")
    (tmp_path / "t" / "b").write_text("x")
    assert detect_format(str(tmp_path / "t")) == "text"
    (tmp_path / "t" / "sub").mkdir()
    (tmp_path / "t" / "sub" / "p.htm").write_text("<p>x</p>")
    assert detect_format(str(tmp_path / "t")) == "html"
    (tmp_path / "shards").mkdir()
    for i in range(3):
        (tmp_path / "shards" / f"part-{i}.jsonl.gz").write_bytes(b"")
    assert detect_format(str(tmp_path / "shards")) == "jsonl"


def test_bad_options(tmp_path):
    p = _write(tmp_path / "a.jsonl", _jsonl_bytes(RECORDS))
    with pytest.raises(ConfigError):
        read_documents([p], format="xml")
    with pytest.raises(ConfigError):
        read_documents([p], content="markdown")
    with pytest.raises(ConfigError):
        read_documents([p], html="most")
    with pytest.raises(ConfigError):
        read_documents([p], errors="ignore")
    with pytest.raises(ConfigError):
        read_documents([p], max_bytes=0)
    with pytest.raises(InputError):  # raised when called, before any record is read
        read_documents([p, str(tmp_path / "nope.jsonl")])


# ---------------------------------------------------------------------------- JSONL


@pytest.mark.parametrize("name", ["c.jsonl", "c.jsonl.gz", pytest.param("c.jsonl.zst", marks=needs_zstd), "c.ndjson",
                                  "c.json"])
def test_jsonl_round_trip(tmp_path, name):
    p = _write(tmp_path / name, _jsonl_bytes(RECORDS))
    out = _all([p], keep_fields=("n",))
    assert all(isinstance(r, Document) for r in out)
    assert [d.id for d in out] == ["a", "7", f"{p}:3", "d"]
    assert [d.text for d in out] == [r["text"] for r in RECORDS]
    assert [d.source for d in out] == [f"{p}:{i}" for i in range(1, 5)]
    assert out[0].meta == {"n": 3} and out[1].meta == {"n": 1.5} and out[3].meta == {}


def test_jsonl_compression_is_sniffed_not_named(tmp_path):
    p = tmp_path / "really_gzip.jsonl"
    p.write_bytes(gzip.compress(_jsonl_bytes(RECORDS)))
    assert [d.text for d in _all([str(p)])] == [r["text"] for r in RECORDS]


def test_id_and_text_fields(tmp_path):
    p = _write(tmp_path / "f.jsonl", _jsonl_bytes([{"url": "u1", "body": "one"}, {"url": "u2", "body": "two"}]))
    out = _all([p])
    assert [s.reason for s in out] == ["missing_text", "missing_text"]
    assert out[0].detail == "record has no 'text' field; keys: url, body — use --text-field"
    out = _all([p], id_field="url", text_field="body")
    assert [(d.id, d.text) for d in out] == [("u1", "one"), ("u2", "two")]


@needs_html
def test_content_html_in_jsonl(tmp_path):
    page = open(HTML_PAGE, encoding="utf-8").read()
    recs = [{"id": "p", "text": page}, {"id": "q", "text": "<script>x()</script>"}, {"id": "r", "text": "<p>hi</p>"}]
    p = _write(tmp_path / "h.jsonl", _jsonl_bytes(recs))
    out = _all([p], content="html")
    assert "The river rose" in out[0].text and "Newsletters" not in out[0].text
    assert (out[1].reason, out[1].id) == ("empty", "q")
    assert out[2].text == "hi"
    whole = _all([p], content="html", html="whole")
    assert "Newsletters" in whole[0].text


# ---------------------------------------------------------------------------- nothing lost

FIFTY_MB = 50 << 20


def _nasty_jsonl(tmp_path):
    """Every kind of bad record, with the reason each must get (None: a Document)."""
    big = b'{"id": "big", "text": "' + b"word " * (FIFTY_MB // 5) + b'"}\n'
    lines = [
        (b'{"id": "ok1", "text": "a good document"}\n', None),
        (b'{"id": "e1", "text": ""}\n', "empty"),
        (b'{"id": "e2", "text": " \\n\\t "}\n', "empty"),
        (b"\n", "empty"),
        (b'\x00\x01\x02\xff\xfe binary junk \x00\x00\n', "undecodable"),
        (bytes(range(1, 10)) + b"\x7f junk without NUL\n", "bad_json"),
        (b'{"id": "bad", "text": "unterminated\n', "bad_json"),
        (b'{"id": "x", "text": "trailing"} garbage\n', "bad_json"),
        (b'{"id": "sur", "text": "\\ud800"}\n', "bad_json"),
        (b'{"id": "nt", "body": "no text field"}\n', "missing_text"),
        (b'{"id": "null", "text": null}\n', "missing_text"),
        (b'{"id": "num", "text": 42}\n', "not_a_string"),
        (b'{"id": "list", "text": ["a", "b"]}\n', "not_a_string"),
        (b"[1, 2, 3]\n", "not_an_object"),
        (b'"just a string"\n', "not_an_object"),
        (b"17\n", "not_an_object"),
        (b'{"id": "utf", "text": "caf\xe9"}\n', "undecodable"),
        (b'{"id": 12345, "text": "an int id"}\n', None),
        (b'{"text": "no id at all"}\n', None),
        (b'{"id": "dup", "text": "first of two with the same id"}\n', None),
        (b'{"id": "dup", "text": "second of two with the same id"}\n', None),
        (big, "too_large"),
        (b'{"id": "crlf", "text": "windows line"}\r\n', None),
        (b'{"id": "last", "text": "no final newline"}', None),
    ]
    p = tmp_path / "nasty.jsonl"
    with open(p, "wb") as fh:
        for line, _ in lines:
            fh.write(line)
    return str(p), lines


def test_nothing_lost_jsonl(tmp_path):
    p, lines = _nasty_jsonl(tmp_path)
    out = _all([p], max_bytes=1 << 20)
    assert len(out) == len(lines)
    for i, (rec, (_, reason)) in enumerate(zip(out, lines)):
        assert rec.source == f"{p}:{i + 1}"
        if reason is None:
            assert isinstance(rec, Document), (i, rec)
        else:
            assert isinstance(rec, Skipped) and rec.reason == reason, (i, rec)
            assert rec.reason in SKIP_REASONS and rec.detail and "\n" not in rec.detail
    ids = [r.id for r in out]
    assert ids.count("dup") == 2
    assert "12345" in ids and f"{p}:19" in ids
    assert ids[9] == "nt" and "keys: id, body" in out[9].detail
    big = out[21]
    assert big.id == f"{p}:22" and "over the 1048576 byte limit" in big.detail
    assert Counter(type(r).__name__ for r in out) == {"Document": 7, "Skipped": 17}


def test_too_large_line_is_never_held(tmp_path):
    p, lines = _nasty_jsonl(tmp_path)
    tracemalloc.start()
    try:
        out = list(read_documents([p], max_bytes=1 << 20))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out[21].reason == "too_large"
    assert peak < 12 << 20, peak  # the 50 MB line was read in 1 MB pieces and dropped


def test_fifty_megabyte_document_without_limit(tmp_path):
    p, lines = _nasty_jsonl(tmp_path)
    out = _all([p])
    assert isinstance(out[21], Document) and len(out[21].text) == FIFTY_MB and out[21].id == "big"


def test_text_errors_replace_or_strict(tmp_path):
    d = tmp_path / "docs"
    d.mkdir()
    (d / "a_utf8.txt").write_text("héllo wörld")
    (d / "b_latin1.txt").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    (d / "c_empty.txt").write_bytes(b"")
    (d / "d_blank.txt").write_bytes(b" \n\n\t")
    (d / "e_binary.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (d / "f_utf16.txt").write_text("sixteen bits", encoding="utf-16")
    (d / "g_bom.txt").write_bytes(b"\xef\xbb\xbfwith bom")
    (d / ".hidden").write_text("ignored")
    (d / "sub").mkdir()
    (d / "sub" / "z.txt").write_text("in a subfolder")
    os.symlink(str(d / "nowhere"), str(d / "h_broken_link"))
    out = _all([str(d)])
    by_name = {os.path.relpath(r.source, d): r for r in out}
    assert list(by_name) == ["a_utf8.txt", "b_latin1.txt", "c_empty.txt", "d_blank.txt", "e_binary.bin",
                             "f_utf16.txt", "g_bom.txt", "h_broken_link", "sub/z.txt"]
    assert by_name["a_utf8.txt"].text == "héllo wörld" and by_name["a_utf8.txt"].id == str(d / "a_utf8.txt")
    assert by_name["b_latin1.txt"].text == "caf\ufffd cr\ufffdme"
    assert by_name["c_empty.txt"].reason == by_name["d_blank.txt"].reason == "empty"
    assert by_name["e_binary.bin"].reason == "binary"
    assert by_name["f_utf16.txt"].text == "sixteen bits"
    assert by_name["g_bom.txt"].text == "with bom"
    assert by_name["h_broken_link"].reason == "unreadable_file"
    strict = {os.path.relpath(r.source, d): r for r in _all([str(d)], errors="strict")}
    assert strict["b_latin1.txt"].reason == "undecodable" and "byte 3" in strict["b_latin1.txt"].detail
    limited = {os.path.relpath(r.source, d): r for r in _all([str(d)], max_bytes=13)}
    assert limited["sub/z.txt"].reason == "too_large" and isinstance(limited["a_utf8.txt"], Document)


def test_truncated_gzip_keeps_what_was_read(tmp_path):
    data = gzip.compress(_jsonl_bytes([{"id": str(i), "text": f"document number {i} " * 50} for i in range(2000)]))
    p = tmp_path / "cut.jsonl.gz"
    p.write_bytes(data[: len(data) // 2])
    q = _write(tmp_path / "next.jsonl", _jsonl_bytes(RECORDS))
    out = _all([str(p), q])
    docs = _docs(out)
    broken = [s for s in _skips(out) if s.reason == "unreadable_file"]
    assert len(broken) == 1 and "after line" in broken[0].detail
    assert broken[0].ordinal == len(docs) - len(RECORDS)
    assert [d.id for d in docs[-4:]] == ["a", "7", f"{q}:3", "d"]  # the next file still reads


def test_ordinals_continue_across_paths_and_formats(tmp_path):
    a = _write(tmp_path / "a.jsonl", _jsonl_bytes(RECORDS))
    b = _write(tmp_path / "b.jsonl.gz", _jsonl_bytes(RECORDS[:2]))
    t = tmp_path / "t.txt"
    t.write_text("a text file")
    out = _all([a, b, str(t)])
    assert len(out) == 7 and out[-1].id == str(t) and out[4].source == f"{b}:1"


# ---------------------------------------------------------------------------- Parquet


def _parquet(path, table, **kw):
    pq.write_table(table, path, row_group_size=3, **kw)
    return str(path)


@needs_parquet
def test_parquet_round_trip(tmp_path):
    table = pa.table({
        "id": pa.array([10, 11, None, 13, 14, 15, 16]),
        "text": pa.array(["first", "second", "third", None, "", "x" * 100, "seventh"]),
        "score": pa.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, None]),
        "other": pa.array([[1], [2], [3], [4], [5], [6], [7]]),
    })
    p = _parquet(tmp_path / "t.parquet", table)
    out = _all([p], keep_fields=("score",), max_bytes=50)
    assert [r.id for r in out] == ["10", "11", f"{p}:2", "13", "14", "15", "16"]
    assert [r.source for r in out] == [f"{p}:{i}" for i in range(7)]
    assert [getattr(r, "reason", None) for r in out] == [None, None, None, "missing_text", "empty", "too_large", None]
    assert out[0].text == "first" and out[0].meta == {"score": 1.0} and out[6].meta == {}


@needs_parquet
def test_parquet_binary_and_wrong_columns(tmp_path):
    p = _parquet(tmp_path / "b.parquet", pa.table({"key": ["k1", "k2", "k3"],
                                                   "body": pa.array([b"bytes ok", b"caf\xe9", b"fine"])}))
    out = _all([p], id_field="key", text_field="body")
    assert [r.text for r in _docs(out)] == ["bytes ok", "caf\ufffd", "fine"]
    strict = _all([p], id_field="key", text_field="body", errors="strict")
    assert strict[1].reason == "undecodable" and strict[1].id == "k2"
    out = _all([p])
    assert [r.reason for r in out] == ["missing_text"] * 3
    assert "no 'text' column; columns: key, body" in out[0].detail
    q = _parquet(tmp_path / "n.parquet", pa.table({"text": pa.array([1, 2])}))
    assert [r.reason for r in _all([q])] == ["not_a_string"] * 2


@needs_parquet
def test_parquet_unreadable(tmp_path):
    p = tmp_path / "junk.parquet"
    p.write_bytes(b"this is not parquet at all")
    q = _write(tmp_path / "ok.jsonl", _jsonl_bytes(RECORDS[:1]))
    out = _all([str(p), q])
    assert out[0].reason == "unreadable_file" and out[1].id == "a"


# ---------------------------------------------------------------------------- WARC


def _warc(path, gz):
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    page = open(HTML_PAGE, "rb").read()
    with open(path, "wb") as fh:
        w = WARCWriter(fh, gzip=gz)
        w.write_record(w.create_warcinfo_record(os.path.basename(path), {"software": "neardup tests"}))

        def response(url, status, ctype, body):
            headers = [("Content-Type", ctype)] if ctype else []
            http = StatusAndHeaders(status, headers, protocol="HTTP/1.1")
            w.write_record(w.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http))

        req = StatusAndHeaders("GET / HTTP/1.1", [("Host", "example.org")], is_http_request=True)
        w.write_record(w.create_warc_record("http://example.org/", "request", payload=io.BytesIO(b""),
                                            http_headers=req))
        response("http://example.org/", "200 OK", "text/html; charset=utf-8", page)
        response("http://example.org/logo.png", "200 OK", "image/png", b"\x89PNG\r\n\x1a\n\x00\x00")
        response("http://example.org/old", "301 Moved Permanently", "text/html", b"<a href='/new'>moved</a>")
        response("http://example.org/fr", "200 OK", "text/html; charset=ISO-8859-1",
                 "<html><body><p>Le caf\xe9 est ouvert tous les jours.</p></body></html>".encode("latin-1"))
        response("http://example.org/nohdr", "200 OK", None, b"<!DOCTYPE html><p>sniffed as html</p>")
        response("http://example.org/empty", "200 OK", "text/html", b"<html><body><script>1</script></body></html>")
        response("http://example.org/big", "200 OK", "text/html", b"<p>" + b"big " * 5000 + b"</p>")
        w.write_record(w.create_warc_record("http://example.org/", "metadata", payload=io.BytesIO(b"k: v\n"),
                                            warc_content_type="application/warc-fields"))
    return str(path)


@needs_warc
@needs_html
@pytest.mark.parametrize("name", ["crawl.warc", "crawl.warc.gz"])
def test_warc_round_trip(tmp_path, name):
    p = _warc(tmp_path / name, name.endswith(".gz"))
    assert detect_format(p) == "warc"
    out = _all([p], max_bytes=10000)
    assert [r.id for r in out] == ["http://example.org/", "http://example.org/logo.png", "http://example.org/old",
                                   "http://example.org/fr", "http://example.org/nohdr", "http://example.org/empty",
                                   "http://example.org/big"]
    assert [getattr(r, "reason", None) for r in out] == [None, "not_html", "http_status", None, None, "empty",
                                                          "too_large"]
    assert [r.source for r in out] == [f"{p}:{n}" for n in range(3, 10)]  # 1 warcinfo, 2 request
    assert "The river rose" in out[0].text and "Newsletters" not in out[0].text
    assert out[0].meta["url"] == "http://example.org/" and out[0].meta["record_id"].startswith("urn:uuid:")
    assert out[3].text == "Le café est ouvert tous les jours."
    assert out[4].text == "sniffed as html"
    whole = _all([p], html="whole")
    assert "Newsletters" in whole[0].text and isinstance(whole[6], Document)


@needs_html
def test_html_folder(tmp_path):
    d = tmp_path / "site"
    (d / "b").mkdir(parents=True)
    shutil.copy(HTML_PAGE, d / "a.html")
    (d / "b" / "c.htm").write_bytes("<html><head><meta charset=windows-1252></head><body><p>na\xefve</p></body></html>"
                                    .encode("cp1252"))
    (d / "b" / "style.css").write_text("p { color: red }")
    (d / "b" / "d.html").write_bytes(b"\x00\x00 binary \x00")
    (d / "b" / "e.html").write_bytes(b"<html><body></body></html>")
    assert detect_format(str(d)) == "html"
    out = _all([str(d)])
    assert [os.path.relpath(r.source, d) for r in out] == ["a.html", "b/c.htm", "b/d.html", "b/e.html", "b/style.css"]
    assert "The river rose" in out[0].text and out[0].id == str(d / "a.html")
    assert out[1].text == "naïve"
    assert [getattr(r, "reason", None) for r in out[2:]] == ["binary", "empty", "not_html"]
    single = _all([str(d / "a.html")], html="whole")
    assert "Newsletters" in single[0].text


# ---------------------------------------------------------------------------- second pass


@needs_warc
@needs_html
def test_iter_raw_records_aligns_with_documents(tmp_path):
    p, lines = _nasty_jsonl(tmp_path)
    w = _warc(tmp_path / "c.warc.gz", True)
    t = tmp_path / "t.txt"
    t.write_text("text file")
    paths = [p, w, str(t)]
    docs = {r.ordinal: r for r in read_documents(paths, max_bytes=1 << 20)}
    raw = dict(iter_raw_records(paths, max_bytes=1 << 20))
    assert set(raw) <= set(docs)
    for o, r in docs.items():
        if isinstance(r, Document):
            assert o in raw
            if r.source.startswith(p):
                assert raw[o] == lines[o][0]
    assert raw[max(raw)] == str(t)


@pytest.mark.parametrize("as_array", [False, True])
def test_write_kept_jsonl_is_byte_for_byte(tmp_path, as_array):
    p, lines = _nasty_jsonl(tmp_path)
    gz = _write(tmp_path / "more.jsonl.gz", _jsonl_bytes(RECORDS))
    out = _all([p, gz], max_bytes=1 << 20)
    chosen = {r.ordinal for r in _docs(out) if r.id not in ("dup",)} | {out[20].ordinal}  # second "dup"
    keep = np.zeros(len(out), dtype=bool)
    keep[list(chosen)] = True
    info = write_kept([p, gz], keep if as_array else (lambda o: o in chosen), str(tmp_path / "out"),
                      max_bytes=1 << 20)
    assert info["path"] == str(tmp_path / "out" / "kept.jsonl") and info["format"] == "jsonl"
    assert info["records"] == len(chosen) and info["input_records"] == len(out)
    all_lines = [line for line, _ in lines] + _jsonl_bytes(RECORDS).splitlines(keepends=True)
    expected = b"".join(line if line.endswith(b"\n") else line + b"\n" for o, line in enumerate(all_lines) if o in chosen)
    assert (tmp_path / "out" / "kept.jsonl").read_bytes() == expected
    assert not os.path.exists(info["path"] + ".tmp")


@needs_parquet
def test_write_kept_parquet_same_schema(tmp_path):
    n = 50
    table = pa.table({"id": pa.array(range(n), pa.int64()), "text": [f"doc {i}" for i in range(n)],
                      "nested": pa.array([{"a": i} for i in range(n)])})
    p1 = _parquet(tmp_path / "a.parquet", table, compression="zstd")
    p2 = _parquet(tmp_path / "b.parquet", table.slice(0, 10), compression="zstd")
    keep = np.array([o % 3 == 0 for o in range(n + 10)])
    info = write_kept([p1, p2], keep, str(tmp_path / "out"))
    assert info["format"] == "parquet" and info["path"].endswith("kept.parquet")
    got = pq.read_table(info["path"])
    assert got.schema.equals(table.schema, check_metadata=False)
    want = pa.concat_tables([table, table.slice(0, 10)]).filter(pa.array(keep))
    assert got.equals(want) and info["records"] == want.num_rows
    assert pq.ParquetFile(info["path"]).metadata.row_group(0).column(0).compression == "ZSTD"


@needs_warc
@needs_html
def test_write_kept_text_html_warc(tmp_path):
    w = _warc(tmp_path / "c.warc", False)
    t = tmp_path / "t.txt"
    t.write_text("a text file")
    paths = [w, str(t)]
    out = _all(paths, html="whole")
    keep = np.array([isinstance(r, Document) for r in out])
    info = write_kept(paths, keep, str(tmp_path / "out"), html="whole")
    rows = [orjson.loads(line) for line in open(info["path"], "rb")]
    assert rows == [{"id": d.id, "source": d.source, "text": d.text} for d in _docs(out)]


def test_write_kept_detects_changed_input(tmp_path):
    p = _write(tmp_path / "a.jsonl", _jsonl_bytes(RECORDS))
    with pytest.raises(InputError, match="changed"):
        write_kept([p], np.ones(3, dtype=bool), str(tmp_path / "out"))
    with pytest.raises(InputError, match="changed"):
        write_kept([p], np.ones(5, dtype=bool), str(tmp_path / "out"))
    assert not os.path.exists(tmp_path / "out" / "kept.jsonl")


def test_jsonl_writer(tmp_path):
    for name in ("pairs.jsonl", "pairs.jsonl.gz"):
        path = tmp_path / name
        with JsonlWriter(path) as w:
            w.write({"a": "x", "b": "y", "jaccard": np.float64(0.75), "n": np.int64(3)})
            w.write_many([{"arr": np.arange(3)}, {"s": {2, 1}, "b": b"bytes"}])
            w.write_raw(b'{"raw": true}')
        assert w.count == 4
        data = gzip.open(path).read() if name.endswith(".gz") else path.read_bytes()
        assert [orjson.loads(line) for line in data.splitlines()] == [
            {"a": "x", "b": "y", "jaccard": 0.75, "n": 3}, {"arr": [0, 1, 2]}, {"s": [1, 2], "b": "bytes"},
            {"raw": True}]


@needs_warc
@needs_html
def test_reading_is_deterministic(tmp_path):
    p, _ = _nasty_jsonl(tmp_path)
    w = _warc(tmp_path / "c.warc.gz", True)
    first = list(read_documents([p, w], max_bytes=1 << 20))
    assert first == list(read_documents([p, w], max_bytes=1 << 20))


@needs_warc
@needs_html
def test_parallel_extraction_same_output(tmp_path):
    paths = _mixed_inputs(tmp_path)[:3]  # the WARC, the folder and the JSONL, not the broken file
    serial = _all(paths, max_bytes=10000, content="html")
    assert len(serial) == 7 + 31 + 20
    assert list(read_documents(paths, max_bytes=10000, content="html", jobs=2)) == serial
    keep = np.array([isinstance(r, Document) for r in serial])
    a = write_kept(paths, keep, str(tmp_path / "o1"), max_bytes=10000, content="html", jobs=2)
    b = write_kept(paths, keep, str(tmp_path / "o2"), max_bytes=10000, content="html")
    assert open(a["path"], "rb").read() == open(b["path"], "rb").read()
    assert a["records"] == keep.sum() == 3 + 30 + 20


@needs_warc
@needs_html
@pytest.mark.parametrize("errors", ["strict", "replace"])
def test_parallel_decoding_in_the_workers_same_skips(tmp_path, errors):
    # pages are decoded by the worker processes: the same Documents and Skipped (undecodable,
    # empty) as the serial reader
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    d = tmp_path / "site"
    d.mkdir()
    (d / "a.html").write_bytes(b"<meta charset=utf-8><p>caf\xe9 bad utf-8</p>")
    (d / "b.html").write_bytes(b"")
    (d / "c.html").write_bytes(b"   \n ")
    (d / "d.html").write_bytes("<p>caf\u00e9 ok</p>".encode("utf-8"))
    (d / "e.html").write_bytes("<meta charset=windows-1251><p>\u041f\u0440\u0438\u0432\u0435\u0442</p>".encode("cp1251"))
    w = tmp_path / "c.warc.gz"
    with open(w, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for i, (body, ctype) in enumerate([(b"<p>\xff\xfe broken</p>", "text/html; charset=utf-8"),
                                           (b"<p>fine</p>", "text/html"), (b"", "text/html")]):
            http = StatusAndHeaders("200 OK", [("Content-Type", ctype)], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(f"http://x.example/{i}", "response",
                                                          payload=io.BytesIO(body), http_headers=http))
    paths = [str(d), str(w)]
    serial = _all(paths, errors=errors)
    assert list(read_documents(paths, errors=errors, jobs=2)) == serial
    reasons = Counter(r.reason for r in serial if isinstance(r, Skipped))
    assert reasons["empty"] == 3 and reasons["undecodable"] == (2 if errors == "strict" else 0)


@needs_html
def test_a_str_sent_to_a_worker_as_utf8_comes_back_the_same():
    from neardup.io.read.extract import PendingPage
    from neardup.text.html import extract_text
    from neardup.text.html_pages import extract_page

    for page in ["<p>caf\u00e9 \U0001f600 text</p>", "<p>lone \ud800 surrogate</p>", "<p>plain</p>"]:
        pending = PendingPage("id", 0, "src", {}, page, None)
        sent = pending.job(pickled=True)
        assert type(sent[0]) is bytes
        assert extract_page("main", *sent) == extract_page("main", *pending.job()) == extract_text(page, "main")


def _mixed_inputs(tmp_path):
    """A WARC, a folder of pages (and a stylesheet: not HTML), a JSONL of HTML and a broken file."""
    w = _warc(tmp_path / "c.warc.gz", True)
    d = tmp_path / "site"
    d.mkdir()
    for i in range(30):
        (d / f"p{i:02d}.html").write_text(f"<html><body><nav>menu</nav><p>page {i} " + "text " * i + "</p></body></html>")
    (d / "x.css").write_text("p {}")
    j = _write(tmp_path / "h.jsonl", _jsonl_bytes([{"id": str(i), "text": f"<p>row {i}</p>"} for i in range(20)]))
    broken = tmp_path / "broken.html"
    broken.write_bytes(b"<p>nul \x00 byte</p>")
    return [w, str(d), j, str(broken)]


@needs_warc
@needs_html
@pytest.mark.parametrize("jobs", [1, 2])
def test_kept_texts_of_the_read_pass_not_extracted_again(tmp_path, monkeypatch, jobs):
    from neardup.io.read import extract, rows
    from neardup.io.write.runfolder import RunFolder

    paths = _mixed_inputs(tmp_path)
    opts = dict(max_bytes=10000, content="html")
    run = tmp_path / "run"
    folder = RunFolder(str(run))
    folder.begin({"test": 1}, str(tmp_path))
    read = list(read_documents(paths, text_spill=str(run), jobs=jobs, **opts))
    assert read == _all(paths, **opts)  # keeping the texts changes nothing read
    assert os.path.isdir(run / "texts") and not os.path.exists(run / "texts.partial")
    rng = np.random.default_rng(7)
    keep = np.array([isinstance(r, Document) for r in read]) & (rng.random(len(read)) < 0.7)
    fresh = write_kept(paths, keep, str(tmp_path / "o1"), **opts)

    def no_extraction(*args, **kwargs):
        raise AssertionError("a page was extracted a second time")

    monkeypatch.setattr(rows, "extract_page", no_extraction)
    monkeypatch.setattr(extract, "extract_pages", no_extraction)
    kept = write_kept(paths, keep, folder.staged, run=folder, jobs=jobs, **opts)
    assert open(kept["path"], "rb").read() == open(fresh["path"], "rb").read()
    assert kept["records"] == fresh["records"] == keep.sum() > 20


@needs_warc
@needs_html
def test_kept_texts_only_from_a_complete_read_pass(tmp_path):
    from neardup.io.write.runfolder import RunFolder

    paths = _mixed_inputs(tmp_path)
    run = tmp_path / "run"
    folder = RunFolder(str(run))
    folder.begin({"test": 1}, str(tmp_path))
    records = read_documents(paths, text_spill=str(run), content="html")
    for _ in range(10):  # ten records read, then the pass is cut short
        next(records)
    assert os.path.isdir(run / "texts.partial")
    records.close()  # an interrupted read pass leaves nothing to copy from
    assert not os.path.exists(run / "texts") and not os.path.exists(run / "texts.partial")
    keep = np.ones(len(_all(paths, content="html")), dtype=bool)
    a = write_kept(paths, keep, folder.staged, content="html", run=folder)
    b = write_kept(paths, keep, str(tmp_path / "o2"), content="html")
    assert open(a["path"], "rb").read() == open(b["path"], "rb").read()
    # texts of other inputs (a file fewer) are not used either
    other = RunFolder(str(tmp_path / "run2"))
    other.begin({"test": 2}, str(tmp_path))
    list(read_documents(paths[1:], text_spill=other.path, content="html"))
    assert os.path.isdir(os.path.join(other.path, "texts"))
    c = write_kept(paths, keep, other.staged, content="html", run=other)
    assert open(c["path"], "rb").read() == open(b["path"], "rb").read()


def test_kept_texts_not_kept_when_the_corpus_copies_records(tmp_path):
    p = _write(tmp_path / "a.jsonl", _jsonl_bytes(RECORDS))
    run = tmp_path / "run"
    run.mkdir()
    list(read_documents([p], text_spill=str(run)))
    assert not os.path.exists(run / "texts")


@pytest.mark.parametrize("block_bytes", [64, 1000, 4 << 20])
def test_kept_lines_in_blocks_equal_line_by_line(tmp_path, monkeypatch, block_bytes):
    # the block writer (runs of kept lines straight from the read blocks) against the
    # line-by-line one it replaces: blank lines, CRLF, lines over max_bytes inside a block and
    # across blocks, a last line without newline, a truncated gzip stream
    import gzip as gz_module

    from neardup.io.write import kept

    monkeypatch.setattr(kept, "JSONL_BLOCK_BYTES", block_bytes)
    rng = random.Random(7)  # test data only
    lines = []
    for i in range(400):
        kind = rng.random()
        if kind < 0.05:
            lines.append(b"\n")
        elif kind < 0.1:
            lines.append(b'{"id": %d, "text": "%s"}\r\n' % (i, b"x" * rng.randint(0, 300)))
        else:
            lines.append(b'{"id": %d, "text": "%s"}\n' % (i, b"w " * rng.randint(0, 150)))
    data = b"".join(lines) + b'{"id": "last", "text": "no newline"}'
    plain = tmp_path / "a.jsonl"
    plain.write_bytes(data)
    broken = tmp_path / "b.jsonl.gz"
    broken.write_bytes(gz_module.compress(data)[:-200])
    for path in (plain, broken):
        for max_bytes in (None, 250):
            count = sum(1 for _ in kept.read_lines(str(path), max_bytes))
            for density in (0.0, 0.5, 0.95, 1.0):
                keep = kept._Keep(np.array([rng.random() < density for _ in range(count)]))
                written = []

                class write_lines:  # the sink's two methods _kept_lines calls (io.write.shards.JsonlShards)
                    @staticmethod
                    def write_raw_lines(view, n):
                        written.append(bytes(view))

                    @staticmethod
                    def write_raw(line):
                        written.append(line if line.endswith(b"\n") else line + b"\n")

                def drain(gen):
                    out = []
                    try:
                        while True:
                            out.append(next(gen))
                    except StopIteration as stop:
                        return out, stop.value

                got_items, got_n = drain(kept._kept_lines(str(path), max_bytes, keep, 0, write_lines))
                want_items, want_n = drain(kept._kept_lines(str(path), max_bytes, keep, 0, None))
                got = b"".join(written) + b"".join(x if x.endswith(b"\n") else x + b"\n" for x in got_items)
                want = b"".join(x if x.endswith(b"\n") else x + b"\n" for x in want_items)
                assert (got_n, got) == (want_n, want) and got_n == count


def _grandchildren() -> set[int]:
    """The live processes whose parent is a child of this one (a forkserver's workers)."""
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as fh:
                    state, parent = fh.read().rsplit(")", 1)[1].split()[:2]
            except OSError:
                continue
            if state != "Z":  # (an ended process its parent has not yet reaped)
                parents[int(name)] = int(parent)
    children = {pid for pid, parent in parents.items() if parent == os.getpid()}
    return {pid for pid, parent in parents.items() if parent in children}


@needs_html
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the process tree from /proc")
def test_a_reader_stopped_early_ends_its_extraction_workers(monkeypatch):
    # A run stopped while the extraction workers have chunks queued (an error, SIGTERM) closes the
    # reader: the chunks not started are cancelled and the workers have ended when close()
    # returns, not when the pool's own thread gets to it (a process ended by SIGTERM does not
    # wait for that thread, and its workers would wait for work forever, holding its pipes).
    from neardup.io.read import extract
    from neardup.io.read.extract import PendingPage, extract_pages

    monkeypatch.setattr(extract, "EXTRACT_WORKERS", "processes")
    before = _grandchildren()
    pages = (PendingPage(str(i), i, "src", {}, f"<p>page {i} " + "word " * 50 + "</p>", None) for i in range(100000))
    got = extract_pages(pages, "main", 2)
    for k in range(3000):  # past the warm-up: the workers have chunks queued
        assert next(got).text.startswith(f"page {k} ")
    workers = _grandchildren() - before
    assert workers
    got.close()
    assert not workers & _grandchildren()
    # read to its end, every text comes back
    pages = [PendingPage(str(i), i, "src", {}, f"<p>page {i}</p>", None) for i in range(50)]
    assert [d.text for d in extract_pages(iter(pages), "main", 2)] == [f"page {i}" for i in range(50)]
