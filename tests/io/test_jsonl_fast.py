"""The JSONL fast path (neardup._jsonl + read_encoded) gives exactly the records of the orjson reader."""

import gzip
import json
import random
import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.io import read_documents
from neardup.io.read import jsonl as readers
from neardup.io.documents import EncodedDocuments
from neardup.io.read import read_encoded
from neardup.text.nfkc import unsafe_table

pytestmark = pytest.mark.skipif(readers._jsonl is None, reason="neardup._jsonl is not built")

LINES = [
    b'{"id": "a", "text": "plain ascii text"}',
    b'{"text": "no id at all"}',
    b'{"id": null, "text": "null id"}',
    b'{"id": "", "text": "empty id"}',
    b'{"id": 17, "text": "integer id"}',
    b'{"id": -17, "text": "negative integer id"}',
    b'{"id": 0, "text": "zero id"}',
    b'{"id": -0, "text": "minus zero id"}',
    b'{"id": 1234567890123456789012, "text": "huge id"}',
    b'{"id": 1.5, "text": "float id"}',
    b'{"id": true, "text": "bool id"}',
    b'{"id": ["x"], "text": "list id"}',
    b'{"id": "caf\\u00e9 \\ud83d\\ude00", "text": "escaped id"}',
    '{"id": "naïve ✓", "text": "utf-8 id"}'.encode(),
    b'{"id": "esc", "text": "line\\nbreak \\"quoted\\" back\\\\slash \\/ \\b\\f\\r\\t tab \\u0000 nul"}',
    b'{"id": "pair", "text": "emoji \\ud83d\\ude00 and \\u00e9"}',
    b'{"id": "lone-hi", "text": "bad \\ud83d alone"}',
    b'{"id": "lone-lo", "text": "bad \\ude00 alone"}',
    b'{"id": "bad-esc", "text": "bad \\x escape"}',
    b'{"id": "short-u", "text": "bad \\u12"}',
    b'{"id": "raw-ctl", "text": "tab\there"}',
    b'{"id": "overlong", "text": "\xc0\xaf"}',
    b'{"id": "surrogate-utf8", "text": "\xed\xa0\x80"}',
    b'{"id": "beyond", "text": "\xf4\x90\x80\x80"}',
    b'{"id": "truncated-utf8", "text": "\xe2\x82"}',
    b'{"id": "latin1", "text": "caf\xe9"}',
    b'\xef\xbb\xbf{"id": "bom", "text": "byte order mark"}',
    b'{"id": "crlf", "text": "windows line"}\r',
    b'  {"id": "ws", "text": "surrounding white space"}  \t',
    b'',
    b'   ',
    b'[1, 2, 3]',
    b'"just a string"',
    b'{}',
    b'{"id": "no-text"}',
    b'{"id": "null-text", "text": null}',
    b'{"id": "num-text", "text": 5}',
    b'{"id": "obj-text", "text": {"a": 1}}',
    b'{"id": "empty-text", "text": ""}',
    b'{"id": "space-text", "text": "  \\n\\t "}',
    '{"id": "unicode-space", "text": "\u3000\u00a0\u2003"}'.encode(),
    '{"id": "unicode-only", "text": "日本語のテキスト"}'.encode(),
    '{"id": "mixed-space", "text": "\u3000x"}'.encode(),
    b'{"id": "dup-text", "text": "first", "text": "second"}',
    b'{"id": "dup-id", "id": "again", "text": "two ids"}',
    b'{"id": "esc-key", "t\\u0065xt": "escaped key"}',
    b'{"id": "other", "text": "fields", "n": -1.5e-7, "b": [true, false, null, {"x": [1, {}, []]}], "s": "\\u00e9"}',
    b'{"id": "deep", "text": "nested", "d": ' + b"[" * 80 + b"]" * 80 + b"}",
    b'{"id": "deeper", "text": "nested", "d": ' + b"[" * 1100 + b"]" * 1100 + b"}",
    b'{"id": "inf", "text": "big exponent", "x": 1e400}',
    b'{"id": "e99", "text": "exponent", "x": 1e99}',
    b'{"id": "longnum", "text": "long", "x": 123456789012345678901234567890}',
    b'{"id": "lead0", "text": "leading zero", "x": 01}',
    b'{"id": "dot", "text": "no digit", "x": 1.}',
    b'{"id": "minus", "text": "bare minus", "x": -}',
    b'{"id": "nan", "text": "nan", "x": NaN}',
    b'{"id": "trail", "text": "garbage after"} x',
    b'{"id": "comma", "text": "trailing comma",}',
    b'{"id": "unclosed", "text": "no brace"',
    b'{"id": "single", \'text\': "quotes"}',
    '{"id": "nfkc", "text": "the ﬁle ﬂow: ½ and Ⅻ, fullwidth ＡＢＣ, acute ´ here"}'.encode(),
    '{"id": "nfkc-lines", "text": "clean line\\nsecond ´ line\\nthird line\\n\\nlast ﬁ"}'.encode(),
    '{"id": "nfkc-escaped", "text": "escaped \\ufb01 ligature"}'.encode(),
    b'{"id": "last", "text": "final line without a newline"}',
]


def _records(items):
    out = []
    for r in items:
        out.extend(r.documents() if isinstance(r, EncodedDocuments) else [r])
    return out


def _both(paths, **kw):
    fast = list(read_encoded(paths, table=unsafe_table(), **kw))
    slow = list(read_documents(paths, **kw))
    return fast, slow


def _write(path, lines, end=b"\n", final_newline=False):
    data = end.join(lines) + (end if final_newline else b"")
    path.write_bytes(gzip.compress(data) if str(path).endswith(".gz") else data)
    return str(path)


@pytest.mark.parametrize("block", [8 << 20, 64, 7])
@pytest.mark.parametrize("name", ["a.jsonl", "a.jsonl.gz"])
@pytest.mark.parametrize("max_bytes", [None, 60])
def test_fast_path_gives_the_orjson_readers_records(tmp_path, monkeypatch, block, name, max_bytes):
    monkeypatch.setattr(readers, "JSONL_BLOCK_BYTES", block)
    path = _write(tmp_path / name, LINES)
    fast, slow = _both([path], max_bytes=max_bytes)
    assert _records(fast) == slow
    # most ordinary records really took the fast path
    taken = sum(len(r) for r in fast if isinstance(r, EncodedDocuments))
    assert taken >= (5 if max_bytes else 15)


def test_fast_path_text_is_utf8_of_the_str_with_lengths_and_flags(tmp_path):
    path = _write(tmp_path / "a.jsonl", LINES)
    table = unsafe_table()
    for part in read_encoded([path], table=table):
        if not isinstance(part, EncodedDocuments):
            continue
        for i in range(len(part)):
            text = part.text(i)
            raw = part.data[part.offsets[i] : part.offsets[i + 1]]
            assert raw == text.encode("utf-8") and part.lengths[i] == len(text)
            marked = [k for k, ch in enumerate(text) if table[ord(ch)]]
            assert bool(part.flagged[i]) == bool(marked)
            if marked:
                lo, hi = part.flag_spans[i]
                positions = [len(text[:k].encode()) for k in marked]
                assert lo == positions[0] and hi == positions[-1] + len(text[marked[-1]].encode())


def test_crlf_lines_and_a_final_newline(tmp_path):
    path = _write(tmp_path / "a.jsonl", LINES[:20], end=b"\r\n", final_newline=True)
    fast, slow = _both([path])
    assert _records(fast) == slow


def test_lines_over_the_limit_across_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "JSONL_BLOCK_BYTES", 16)
    big = b'{"id": "big", "text": "' + b"x" * 500 + b'"}'
    lines = [LINES[0], big, LINES[1], big + b"\r", LINES[2], big]
    for final in (False, True):
        path = _write(tmp_path / "a.jsonl", lines, final_newline=final)
        for limit in (100, 523, 524, 525, None):
            fast, slow = _both([path], max_bytes=limit)
            assert _records(fast) == slow, (final, limit)


def test_truncated_gzip_gives_the_same_records(tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "JSONL_BLOCK_BYTES", 1 << 12)
    lines = [json.dumps({"id": str(i), "text": f"record number {i} " * 20}).encode() for i in range(400)]
    data = gzip.compress(b"\n".join(lines) + b"\n")
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    fast, slow = _both([str(path)])
    assert _records(fast) == slow
    assert slow[-1].reason == "unreadable_file"


def test_options_that_need_the_python_reader(tmp_path):
    path = _write(tmp_path / "a.jsonl", LINES[:5])
    for kw in (dict(content="html"), dict(keep_fields=("id",)), dict(id_field="text")):
        fast = list(read_encoded([path], **kw))
        assert not any(isinstance(r, EncodedDocuments) for r in fast)
        assert fast == list(read_documents([path], **kw))


def test_other_fields_and_unicode_keys(tmp_path):
    lines = ['{"ключ": "значение", "body": "текст документа", "key": 5}'.encode(),
             b'{"body": "second", "key": "k2"}']
    path = _write(tmp_path / "a.jsonl", lines)
    fast, slow = _both([path], id_field="key", text_field="body")
    assert _records(fast) == slow and any(isinstance(r, EncodedDocuments) for r in fast)


def test_the_scanners_white_space_is_pythons():
    assert set(readers._jsonl.SPACES) == {c for c in range(0x110000) if chr(c).isspace()}


def test_nfkc_of_utf8_is_nfkc():
    from neardup.text.nfkc import nfkc_utf8

    for text in ["plain", "ﬁle\nclean\n½ ´", "line\n\nÅ\u030a ＡＢＣ\n", "日本語\u3000テキスト"]:
        got = nfkc_utf8(text.encode())
        want = unicodedata.normalize("NFKC", text)
        assert (got.decode() if got is not None else text) == want
        assert (got is None) == (want == text)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["id", "text", "x", "tëxt"]), _json_values, max_size=4)
                | st.lists(st.fixed_dictionaries({"id": st.text(max_size=8), "text": st.text(min_size=1)})), max_size=8),
       st.booleans(), st.integers(0, 2**32))
def test_random_json_lines(tmp_path_factory, objects, ascii_only, seed):
    rnd = random.Random(seed)
    lines = [json.dumps(o, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass") for o in objects]
    if lines and rnd.random() < 0.3:  # damage one line
        k = rnd.randrange(len(lines))
        cut = rnd.randrange(len(lines[k]) + 1)
        lines[k] = lines[k][:cut] + bytes([rnd.randrange(256)]) + lines[k][cut:]
    path = _write(tmp_path_factory.mktemp("j") / "r.jsonl", lines)
    fast, slow = _both([path])
    assert _records(fast) == slow


PAGE_LINES = [
    b'{"id": "p1", "url": "https://example.org/a", "text": "<html><body><p>A page of plain text</p></body></html>"}',
    b'{"url": "https://ex\\u00e4mple.org/\\ud83d\\ude00", "text": "<p>escaped URL, \\"quoted\\" \\u00e9 \\ud83d\\ude00</p>"}',
    '{"id": "p3", "url": "https://例え.jp/ページ", "text": "<p>日本語のページ ✓</p>"}'.encode(),
    b'{"id": "p4", "url": null, "text": "<p>null URL</p>"}',
    b'{"id": "p5", "url": {"href": "x"}, "text": "<p>URL not a string</p>"}',
    b'{"id": "p6", "url": "", "text": "<p>empty URL</p>"}',
    b'{"id": "p7", "url": "a", "url": "b", "text": "<p>two URLs: the last</p>"}',
    b'{"id": "p8", "url": "\\udc00", "text": "<p>lone surrogate in the URL</p>"}',
    b'{"id": "p9", "text": "<p>lone \\ud800 surrogate in the page</p>"}',
    b'{"id": "p10", "text": "<p>bad \xff UTF-8</p>", "url": "u"}',
    b'{"id": "p11", "text": "<p>NUL \\u0000 and line\\nbreaks\\r\\n\\t</p>"}',
    b'{"id": "p12", "text": "\\u3000\\u00a0 "}',
    b'{"id": "p13", "text": "   "}',
    b'{"id": "p14", "text": ""}',
    b'{"id": 15, "text": "<p>integer id</p>"}',
    b'{"id": "p16"}',
    b'{"id": "p17", "text": 17}',
    b'{"id": "p18", "text": "<p>no body</p>" x',
    '{"id": "p19", "text": "<title>ﬁ</title><p>\u3000text after a wide space ½</p>"}'.encode(),
]


def _pages_both(paths, monkeypatch, **kw):
    """The records of the JSONL of HTML through the scanner and line by line (orjson, a str)."""
    fast = list(read_documents(paths, content="html", **kw))
    with monkeypatch.context() as m:
        m.setattr(readers, "scans_jsonl_pages", lambda reader: False)
        slow = list(read_documents(paths, content="html", **kw))
    return fast, slow


@pytest.mark.parametrize("block", [8 << 20, 64])
def test_pages_from_the_scanner_are_the_orjson_readers_records(tmp_path, monkeypatch, block):
    monkeypatch.setattr(readers, "JSONL_BLOCK_BYTES", block)
    path = _write(tmp_path / "pages.jsonl", PAGE_LINES + LINES)
    fast, slow = _pages_both([path], monkeypatch)
    assert fast == slow
    assert {r.id for r in fast if r.__class__.__name__ == "Document"} >= {"p1", "p3", "p6", "p11", "15", "p19"}
    fast, slow = _pages_both([path], monkeypatch, max_bytes=60)
    assert fast == slow


def test_pages_go_to_the_workers_as_the_utf8_of_the_str(tmp_path, monkeypatch):
    from neardup.io.read.extract import PendingPage
    from neardup.io.read.reader import RecordReader

    path = _write(tmp_path / "pages.jsonl", PAGE_LINES)
    fast = list(RecordReader(content="html", jobs=2).read([path]))
    with monkeypatch.context() as m:
        m.setattr(readers, "scans_jsonl_pages", lambda reader: False)
        slow = list(RecordReader(content="html", jobs=2).read([path]))
    assert len(fast) == len(slow) == len(PAGE_LINES)
    line_by_line = []
    for f, s in zip(fast, slow):
        assert type(f) is type(s)
        if type(f) is not PendingPage:
            assert f == s
            continue
        assert (f.ident, f.n, f.src, f.meta, f.url) == (s.ident, s.n, s.src, s.meta, s.url)
        assert f.job(True) == s.job(True)  # what a worker process gets
        if type(f.html) is not bytes:
            line_by_line.append(f.ident)
    # every page came from the scanner but the one with a repeated key (orjson takes the last);
    # those with a lone surrogate are not JSON to orjson (bad_json)
    assert line_by_line == ["p7"]


def test_pages_read_line_by_line_when_the_options_need_it(tmp_path):
    from neardup.io.read.reader import RecordReader

    for kw in (dict(claims=True), dict(keep_fields=("url",)), dict(id_field="url"), dict(text_field="url")):
        assert not readers.scans_jsonl_pages(RecordReader(content="html", **kw))
    assert readers.scans_jsonl_pages(RecordReader(content="html"))
    assert not readers.scans_jsonl_pages(RecordReader(content="text"))
