"""The input layer's shared pieces (neardup.io.read): the reader a run builds from its
configuration, and compression recognised by its bytes, whatever the file's name."""

import bz2
import gzip
import lzma

import pytest

from neardup.config import DedupConfig
from neardup.io.read import RecordReader, read_documents, record_fields, record_reader
from neardup.io.read.compression import MAGIC_BYTES, compression_of, decompressor, open_decompressed, read_whole


def test_the_reader_of_a_run_keeps_the_fields_the_run_uses():
    config = DedupConfig(id_field="doc", text_field="body", content="html", html="whole", max_bytes=1000,
                         keep="field", keep_field="score", source_field="site", url_field="link")
    reader = record_reader(config, jobs=2, on_error="error")
    assert isinstance(reader, RecordReader)
    assert (reader.id_field, reader.text_field, reader.content, reader.html, reader.max_bytes) == \
        ("doc", "body", "html", "whole", 1000)
    assert reader.keep_fields == record_fields(config) == ("score", "site", "link")
    assert reader.claims and reader.jobs == 2 and reader.on_error == "error"
    plain = record_reader(DedupConfig())
    assert plain.keep_fields == () and not plain.claims and plain.on_error == "skip"


def test_the_reader_of_a_run_reads_as_read_documents(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"doc": "x", "body": "one two", "score": 3}\n{"doc": "y", "body": ""}\nnot json\n')
    config = DedupConfig(id_field="doc", text_field="body", keep="field", keep_field="score")
    got = list(record_reader(config).read([str(path)]))
    want = list(read_documents([str(path)], id_field="doc", text_field="body", keep_fields=("score",)))
    assert got == want and [type(r).__name__ for r in got] == ["Document", "Skipped", "Skipped"]
    assert got[0].meta == {"score": 3}


def _zstd(data: bytes) -> bytes:
    zstandard = pytest.importorskip("zstandard")
    return zstandard.ZstdCompressor().compress(data)


@pytest.mark.parametrize("codec,compress", [("gzip", gzip.compress), ("bz2", bz2.compress), ("xz", lzma.compress),
                                            ("zstd", _zstd), (None, lambda d: d)])
def test_compression_is_known_by_its_bytes_whatever_the_name(tmp_path, codec, compress):
    data = b"".join(b'{"id": %d, "text": "line %d"}\n' % (i, i) for i in range(2000))
    path = tmp_path / "input.txt"  # a name that says nothing of the compression
    path.write_bytes(compress(data))
    assert compression_of(path.read_bytes()[:MAGIC_BYTES]) == codec
    with open_decompressed(str(path)) as fh:
        assert fh.read() == data
    if codec is not None:
        with open(path, "rb") as raw:
            stream = decompressor(raw, codec)
            assert stream.read() == data
            assert raw.tell() == path.stat().st_size  # what the planner measures a sample by
    assert [r.text for r in read_documents([str(path)], format="jsonl")][-1] == "line 1999"
    # unbuffered, whole or cut after the limit: the same bytes as through the buffered stream
    for limit, want in ((None, data), (len(data), data), (len(data) - 1, data), (99, data[:100])):
        with open_decompressed(str(path), buffering=0) as fh:
            assert read_whole(fh, limit) == want
