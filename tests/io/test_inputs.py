"""Every input a user may point ``neardup dedup`` at (issue 16): standard input through a real pipe,
globs, --files-from, each compression, formats found by their content, CSV/TSV, Arrow IPC, dataset
folders written by Spark and by pyarrow, s3:// on a real S3 API (moto's server on loopback), gs://
on a real GCS JSON API (gcp-storage-emulator on loopback), hf://datasets/ on a stand-in for the
Hugging Face Hub's HTTP API (tests/cloud_servers.py) and http:// on a local HTTP server. Each variant must give the clusters and kept corpus of the same
records read from one plain JSONL file."""

from __future__ import annotations

import bz2
import functools
import gzip
import http.server
import importlib.util
import io
import json
import lzma
import os
import subprocess
import sys
import threading

import orjson
import pytest

from neardup.io import detect_format
from neardup.io.read.sources import expand_inputs, is_hidden_name, walk

from cloud_servers import FakeHub, gcs_emulator


def parquet():
    """pyarrow.parquet, or the calling test skipped: only the Arrow and Parquet inputs need pyarrow."""
    return pytest.importorskip("pyarrow.parquet")


BASE = [
    "the crawler fetches each page and follows its links to new pages on the web",
    "a rose is a rose is a rose and the garden holds many of them in the summer",
    "prices rose sharply in the third quarter as demand outran the supply of chips",
    "the committee will meet again next week to discuss the budget for the new year",
    "rain is expected over the northern hills tonight with snow on the highest peaks",
]


def make_records():
    """40 records: each base text, exact copies of it and near copies (one word changed)."""
    out = []
    for i in range(40):
        text = BASE[i % len(BASE)]
        if i % 3 == 1:
            words = text.split()
            words[i % len(words)] = f"word{i}"
            text = " ".join(words)
        out.append({"id": f"doc{i:02d}", "text": text, "lang": "en" if i % 2 else "fr"})
    return out


RECORDS = make_records()
JSONL = b"".join(json.dumps(r).encode() + b"\n" for r in RECORDS)


def run_cli(args, *, stdin=None, env=None, cwd=None):
    """``neardup ARGS`` in a child process, standard input from a real pipe when ``stdin`` is bytes."""
    proc = subprocess.run([sys.executable, "-m", "neardup", *args], input=stdin, capture_output=True, env=env,
                          cwd=cwd, timeout=600)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def outcome(out_dir):
    """What a run decided, without file names: clusters.jsonl and the kept records."""
    with open(os.path.join(out_dir, "clusters.jsonl"), "rb") as fh:
        # several inputs give each line the file it came from (source, duplicate_of_source):
        # file names, which this comparison leaves out
        # file names, which this comparison leaves out (the other keys keep their order and bytes)
        clusters = b"".join(orjson.dumps({k: v for k, v in json.loads(line).items()
                                          if k not in ("source", "duplicate_of_source")}) + b"\n" for line in fh)
    with open(os.path.join(out_dir, "summary.json")) as fh:
        summary = json.load(fh)
    kept_path = summary["kept_output"]["path"]
    if kept_path.endswith(".parquet"):
        kept = sorted((r["id"], r["text"]) for r in parquet().read_table(kept_path).to_pylist())
    else:
        # the kept corpus is compressed like the input (kept.jsonl.gz for gzip input: docs/formats.md)
        with open(kept_path, "rb") as fh:
            data = fh.read()
        if kept_path.endswith(".gz"):
            data = gzip.decompress(data)
        elif kept_path.endswith(".zst"):
            import zstandard

            data = zstandard.ZstdDecompressor().stream_reader(data).read()
        kept = sorted((r["id"], r["text"]) for r in map(json.loads, data.splitlines()))
    return clusters, kept, summary


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    d = tmp_path_factory.mktemp("ref")
    (d / "all.jsonl").write_bytes(JSONL)
    code, _, err = run_cli(["dedup", str(d / "all.jsonl"), "-o", str(d / "out"), "-q"])
    assert code == 0, err
    clusters, kept, summary = outcome(d / "out")
    assert summary["input"] == 40 and 5 <= summary["kept"] < 40  # duplicates were found
    return clusters, kept


def assert_same(reference, out_dir):
    clusters, kept, summary = outcome(out_dir)
    assert summary["input"] == len(RECORDS) and summary["skipped"] == 0
    assert clusters == reference[0]
    assert kept == reference[1]
    return summary


# ------------------------------------------------------------------------------- standard input


@pytest.mark.parametrize("name", ["-", "/dev/stdin"])
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_stdin_through_a_pipe_is_read_once(tmp_path, reference, name, compress):
    spool = tmp_path / "tmp"
    spool.mkdir()
    env = dict(os.environ, TMPDIR=str(spool))
    data = gzip.compress(JSONL) if compress else JSONL
    code, _, err = run_cli(["dedup", name, "-o", str(tmp_path / "out"), "-q"], stdin=data, env=env)
    assert code == 0, err
    assert_same(reference, tmp_path / "out")
    kept = tmp_path / "out" / ("kept.jsonl.gz" if compress else "kept.jsonl")  # compressed like the input
    with (gzip.open(kept, "rb") if compress else open(kept, "rb")) as fh:
        assert all(line in JSONL.splitlines(keepends=True) for line in fh)  # the record bytes as they came in
    assert not [p for p in os.listdir(spool) if p.startswith("neardup-stdin-")]  # the copy is removed


def test_named_pipe_is_read_once(tmp_path, reference):
    """A FIFO given by name (as bash's ``<(zcat a.gz)`` gives /dev/fd/63) can be read once only."""
    fifo = tmp_path / "feed"
    os.mkfifo(fifo)
    data = gzip.compress(JSONL)

    def feed():
        with open(fifo, "wb") as fh:  # blocks until the command opens the pipe
            fh.write(data)

    threading.Thread(target=feed, daemon=True).start()
    code, _, err = run_cli(["dedup", str(fifo), "-o", str(tmp_path / "out"), "-q"])
    assert code == 0, err
    assert_same(reference, tmp_path / "out")


def test_stdin_named_twice_is_a_usage_error(tmp_path):
    code, _, err = run_cli(["dedup", "-", "/dev/stdin", "-o", str(tmp_path / "out")], stdin=JSONL)
    assert code == 2 and "only once" in err


# ------------------------------------------------------------------------------- globs and lists


def shards(folder, n=4, compress=True):
    folder.mkdir(parents=True, exist_ok=True)
    lines = JSONL.splitlines(keepends=True)
    step = len(lines) // n
    paths = []
    for i in range(n):
        part = b"".join(lines[i * step : (i + 1) * step if i < n - 1 else None])
        p = folder / (f"shard-{i}.jsonl.gz" if compress else f"shard-{i}.jsonl")
        p.write_bytes(gzip.compress(part) if compress else part)
        paths.append(str(p))
    return paths


def test_quoted_glob_is_expanded_in_sorted_order(tmp_path, reference):
    shards(tmp_path / "crawl")
    code, _, err = run_cli(["dedup", str(tmp_path / "crawl" / "*.jsonl.gz"), "-o", str(tmp_path / "out"), "-q"])
    assert code == 0, err
    assert_same(reference, tmp_path / "out")


def test_double_star_glob_reaches_any_depth(tmp_path, reference):
    paths = shards(tmp_path / "crawl", compress=False)
    deep = tmp_path / "crawl" / "y2024" / "01"  # sorts after shard-*
    deep.mkdir(parents=True)
    os.rename(paths[3], deep / "shard-9.jsonl")  # sorted last: its records stay last
    assert expand_inputs([str(tmp_path / "crawl" / "**" / "*.jsonl")]) == [*paths[:3], str(deep / "shard-9.jsonl")]
    code, _, err = run_cli(["dedup", str(tmp_path / "crawl" / "**" / "*.jsonl"), "-o", str(tmp_path / "out"), "-q"])
    assert code == 0, err
    assert_same(reference, tmp_path / "out")


def test_glob_matching_nothing_is_an_input_error(tmp_path):
    code, _, err = run_cli(["dedup", str(tmp_path / "nothing-*.jsonl"), "-o", str(tmp_path / "out")])
    assert code == 3
    assert "nothing-*.jsonl" in err and "matches" in err


def test_files_from_a_list_and_from_stdin(tmp_path, reference):
    paths = shards(tmp_path / "crawl")
    listing = tmp_path / "inputs.txt"
    listing.write_text("# the shards of the crawl\n" + "\n".join(paths[:2]) + "\n\n")
    # the rest given on the command line: the list's paths come after them
    code, _, err = run_cli(["dedup", *paths[2:], "--files-from", str(listing), "-o", str(tmp_path / "a"), "-q"])
    assert code == 0, err
    clusters, _, summary = outcome(tmp_path / "a")
    assert summary["input"] == 40
    ids = [json.loads(line)["id"] for line in clusters.splitlines()]
    assert ids == [r["id"] for r in RECORDS[20:] + RECORDS[:20]]
    code, _, err = run_cli(["dedup", "--files-from", "-", "-o", str(tmp_path / "b"), "-q"],
                           stdin="\n".join(paths).encode())
    assert code == 0, err
    assert_same(reference, tmp_path / "b")


def test_no_input_at_all_is_a_usage_error(tmp_path):
    code, _, err = run_cli(["dedup", "-o", str(tmp_path / "out")])
    assert code == 2 and "--files-from" in err


# ------------------------------------------------------------------------------- compression and formats


def zstd_compress(data: bytes) -> bytes:
    zstd = pytest.importorskip("zstandard")
    return zstd.ZstdCompressor().compress(data)


COMPRESSIONS = {"gz": gzip.compress, "zst": zstd_compress, "bz2": bz2.compress, "xz": lzma.compress}


@pytest.mark.parametrize("ext", sorted(COMPRESSIONS))
@pytest.mark.parametrize("named", [True, False], ids=["named", "unnamed"])
def test_each_compression_is_found_by_its_magic(tmp_path, reference, ext, named):
    """``.jsonl.bz2`` and friends, and the same bytes behind a plain ``.jsonl`` name."""
    path = tmp_path / (f"data.jsonl.{ext}" if named else "data.jsonl")
    path.write_bytes(COMPRESSIONS[ext](JSONL))
    assert detect_format(str(path)) == "jsonl"
    code, _, err = run_cli(["dedup", str(path), "-o", str(tmp_path / "out"), "-q"])
    assert code == 0, err
    assert_same(reference, tmp_path / "out")


def test_compressed_file_without_any_hint_is_found_by_content(tmp_path):
    path = tmp_path / "dump"
    path.write_bytes(bz2.compress(JSONL))
    assert detect_format(str(path)) == "jsonl"


def table():
    """The records as an Arrow table, or the calling test skipped without pyarrow."""
    return pytest.importorskip("pyarrow").Table.from_pylist(RECORDS)


def test_parquet_under_another_name_is_parquet(tmp_path, reference):
    path = tmp_path / "export.dat"
    parquet().write_table(table(), path)
    assert detect_format(str(path)) == "parquet"
    code, _, err = run_cli(["dedup", str(path), "-o", str(tmp_path / "out"), "-q"])
    assert code == 0, err
    assert_same(reference, tmp_path / "out")


@pytest.mark.parametrize("kind", ["arrow", "feather", "stream", "unnamed"])
def test_arrow_ipc_files(tmp_path, reference, kind):
    t = table()
    import pyarrow.feather as feather
    import pyarrow.ipc as ipc

    if kind == "feather":
        path = tmp_path / "data.feather"
        feather.write_feather(t, path, chunksize=7)  # several record batches
    elif kind == "stream":
        path = tmp_path / "data.arrows"
        with ipc.new_stream(str(path), t.schema) as w:
            w.write_table(t, max_chunksize=9)
    else:
        path = tmp_path / ("data.arrow" if kind == "arrow" else "blob")
        with ipc.new_file(str(path), t.schema) as w:
            w.write_table(t, max_chunksize=11)
    assert detect_format(str(path)) == "arrow"
    code, _, err = run_cli(["dedup", str(path), "-o", str(tmp_path / "out"), "-q"])
    assert code == 0, err
    assert_same(reference, tmp_path / "out")


@pytest.mark.parametrize("ext", ["csv", "tsv", "csv.gz"])
def test_csv_and_tsv_with_text_and_id_fields(tmp_path, reference, ext):
    import csv

    buf = io.StringIO()
    w = csv.writer(buf, delimiter="\t" if ext == "tsv" else ",", lineterminator="\n")
    w.writerow(["key", "lang", "body"])
    for r in RECORDS:
        w.writerow([r["id"], r["lang"], r["text"]])
    data = buf.getvalue().encode()
    path = tmp_path / f"data.{ext}"
    path.write_bytes(gzip.compress(data) if ext.endswith(".gz") else data)
    assert detect_format(str(path)) == ext.split(".")[0]
    code, _, err = run_cli(["dedup", str(path), "--id-field", "key", "--text-field", "body",
                            "-o", str(tmp_path / "out"), "-q"])
    assert code == 0, err
    assert_same(reference, tmp_path / "out")
    # without --text-field every row is skipped, naming the columns there are
    code, _, err = run_cli(["dedup", str(path), "-o", str(tmp_path / "none")])
    assert code == 0 and "missing_text" in err


def test_csv_field_spanning_lines(tmp_path):
    from neardup.io import read_documents

    path = tmp_path / "multi.csv"
    path.write_text('id,text\na,"first line\nsecond line"\nb,plain\n')
    docs = list(read_documents([str(path)]))
    assert [(d.id, d.text, d.source) for d in docs] == [
        ("a", "first line\nsecond line", f"{path}:1"), ("b", "plain", f"{path}:2")]


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


def test_warc_and_arc_magic_route_to_the_warc_reader(tmp_path):
    pytest.importorskip("warcio")
    from neardup.io import read_documents

    pages = [(f"http://example.com/{i}", f"<html><body><p>{BASE[i % 5]}</p></body></html>") for i in range(4)]
    path = tmp_path / "crawl.bin"  # no hint in the name
    path.write_bytes(warc_bytes(pages))
    assert detect_format(str(path)) == "warc"
    docs = list(read_documents([str(path)]))
    assert [d.id for d in docs] == [u for u, _ in pages]
    arc = tmp_path / "old.dat"
    arc.write_bytes(gzip.compress(b"filedesc://old.arc 0.0.0.0 20050101000000 text/plain 70\n"
                                  b"1 0 Internet Archive\nURL IP-address Archive-date Content-type Archive-length\n"))
    assert detect_format(str(arc)) == "warc"


def test_text_and_html_files_still_found(tmp_path):
    (tmp_path / "page").write_text("<!DOCTYPE html><html><body>hello</body></html>")
    (tmp_path / "notes.txt").write_text("just some words")
    (tmp_path / "obj").write_text('{"text": "a record"}\n')
    assert detect_format(str(tmp_path / "page")) == "html"
    assert detect_format(str(tmp_path / "notes.txt")) == "text"
    assert detect_format(str(tmp_path / "obj")) == "jsonl"


# ------------------------------------------------------------------------------- dataset folders


def test_hidden_name_rule_is_sparks():
    for name in ["_SUCCESS", "_committed_123", "_started_123", "_delta_log", ".part-00000.parquet.crc",
                 ".DS_Store", "part-0.parquet.crc", "part-0.parquet._COPYING_", "_temporary"]:
        assert is_hidden_name(name), name
    for name in ["part-00000-abc.snappy.parquet", "lang=en", "_year=2024", "README.md", "data.jsonl"]:
        assert not is_hidden_name(name), name


def test_pyarrow_part_files_with_marker_files_and_a_readme(tmp_path, reference):
    """The folder of the issue: part-*.parquet, _SUCCESS, .crc files and a README.md; it is
    read as Parquet (the README is listed as ignored, not read as a document; --strict counts it
    as a skipped file, exit 1; the _SUCCESS and .crc files do not count)."""
    folder = tmp_path / "dataset"
    folder.mkdir()
    t = table()
    for i, start in enumerate(range(0, 40, 10)):
        parquet().write_table(t.slice(start, 10), folder / f"part-{i:05d}-c000.snappy.parquet")
        (folder / f".part-{i:05d}-c000.snappy.parquet.crc").write_bytes(b"crc\x00\x01")
    (folder / "_SUCCESS").write_bytes(b"")
    (folder / "README.md").write_text("# A dataset\nwith a card\n")
    assert detect_format(str(folder)) == "parquet"
    code, _, err = run_cli(["dedup", str(folder), "-o", str(tmp_path / "out"), "--strict"])
    assert code == 1, err
    summary = assert_same(reference, tmp_path / "out")
    assert summary["ignored_files"] == [{"path": str(folder / "README.md"),
                                         "reason": f"a text file in a folder of data files ({folder})"}]
    assert f"1 file of a dataset folder not read ({folder / 'README.md'}), --strict allows none" in err
    os.remove(folder / "README.md")  # the marker and checksum files alone: not counted
    code, _, err = run_cli(["dedup", str(folder), "-o", str(tmp_path / "out2"), "--strict"])
    assert code == 0, err
    assert assert_same(reference, tmp_path / "out2")["ignored_files"] == []
    assert summary["kept_output"]["format"] == "parquet"  # Parquet in, Parquet out


HAVE_SPARK = importlib.util.find_spec("pyspark") is not None


@pytest.mark.spark
@pytest.mark.skipif(not HAVE_SPARK, reason="pyspark is not installed: pip install 'neardup[spark]'")
def test_spark_written_parquet_folder_with_partitions(tmp_path, reference):
    """A folder written by Spark itself (local mode): part files under key=value/ partition
    folders, _SUCCESS and .crc files. The local reader reads exactly the files Spark reads back."""
    from neardup.spark import get_session

    spark = get_session("local[1]", app_name="neardup-tests-inputs", conf={"spark.sql.shuffle.partitions": "2"})
    folder = str(tmp_path / "spark-out")
    try:
        df = spark.createDataFrame(RECORDS).repartition(2)
        df.write.partitionBy("lang").parquet(folder)
        spark_files = sorted(os.path.realpath(f.replace("file://", "")) for f in spark.read.parquet(folder).inputFiles())
    finally:
        spark.stop()
    names = [n for _, _, files in os.walk(folder) for n in files]
    assert "_SUCCESS" in names and any(n.endswith(".crc") for n in names)  # what Spark writes beside the data
    assert os.path.isdir(os.path.join(folder, "lang=en"))
    ours = sorted(os.path.realpath(p) for p, why in walk(folder))
    assert ours == spark_files
    assert detect_format(folder) == "parquet"
    code, _, err = run_cli(["dedup", folder, "-o", str(tmp_path / "out"), "--strict"])
    assert code == 0, err
    clusters, kept, summary = outcome(tmp_path / "out")
    # Spark's order is its own (partitions, then parts): the same records, clustered alike
    assert summary["input"] == 40 and summary["skipped"] == 0 and summary["ignored_files"] == []
    assert partition(clusters) == partition(reference[0])
    assert len(kept) == len(reference[1])


def partition(clusters: bytes) -> set:
    """The clusters as sets of ids (whichever member survives depends on the input order)."""
    groups: dict = {}
    for line in clusters.splitlines():
        row = json.loads(line)
        groups.setdefault(row["cluster"], set()).add(row["id"])
    return {frozenset(g) for g in groups.values()}


# ------------------------------------------------------------------------------- URLs


@pytest.fixture(scope="module")
def http_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("web")
    handler = functools.partial(QuietHandler, directory=str(root))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def test_http_url_input(tmp_path, reference, http_root):
    pytest.importorskip("aiohttp")
    root, base = http_root
    (root / "crawl.jsonl.gz").write_bytes(gzip.compress(JSONL))
    code, _, err = run_cli(["dedup", f"{base}/crawl.jsonl.gz", "-o", str(tmp_path / "out"), "-q"])
    assert code == 0, err
    assert_same(reference, tmp_path / "out")
    code, _, err = run_cli(["dedup", f"{base}/missing.jsonl", "-o", str(tmp_path / "none")])
    assert code == 3 and "missing.jsonl" in err


def test_file_url_input(tmp_path, reference):
    (tmp_path / "a b.jsonl").write_bytes(JSONL)
    code, _, err = run_cli(["dedup", "file://" + str(tmp_path / "a%20b.jsonl"), "-o", str(tmp_path / "out"), "-q"])
    assert code == 0, err
    assert_same(reference, tmp_path / "out")


@pytest.fixture(scope="module")
def s3():
    """A real S3 API: moto's server on a loopback port; the command finds it through fsspec's
    configuration (FSSPEC_S3_ENDPOINT_URL), as a user would point it at MinIO."""
    pytest.importorskip("s3fs")
    server_mod = pytest.importorskip("moto.server")
    boto3 = pytest.importorskip("boto3")
    srv = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    srv.start()
    host, port = srv.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    creds = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
    client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
    client.create_bucket(Bucket="crawl")
    env = dict(os.environ, **creds, FSSPEC_S3_ENDPOINT_URL=endpoint)
    yield client, env
    srv.stop()


@pytest.fixture(scope="module")
def gcs():
    """A real GCS JSON API on loopback (tests/cloud_servers.py); the child finds it through
    ``STORAGE_EMULATOR_HOST``, as gcsfs users point it at an emulator."""
    with gcs_emulator("crawl") as (fs, env):
        yield fs, dict(os.environ, **env)


@pytest.fixture(scope="module", params=["s3", "gs"])
def object_store(request):
    """``(scheme, put(key, bytes), env)`` of the bucket ``crawl`` on moto's S3 server or on the
    GCS emulator: the same inputs, read through either."""
    if request.param == "s3":
        client, env = request.getfixturevalue("s3")
        return "s3", lambda key, body: client.put_object(Bucket="crawl", Key=key, Body=body), env
    fs, env = request.getfixturevalue("gcs")
    return "gs", lambda key, body: fs.pipe_file(f"crawl/{key}", body), env


def test_object_store_url_inputs(tmp_path, reference, object_store):
    scheme, put, env = object_store
    lines = JSONL.splitlines(keepends=True)
    put("jsonl/part-0.jsonl.gz", gzip.compress(b"".join(lines[:25])))
    put("jsonl/part-1.jsonl.zst", zstd_compress(b"".join(lines[25:])))
    put("jsonl/_SUCCESS", b"")
    for args in ([f"{scheme}://crawl/jsonl/"], [f"{scheme}://crawl/jsonl/part-*"],
                 [f"{scheme}://crawl/jsonl/part-0.jsonl.gz", f"{scheme}://crawl/jsonl/part-1.jsonl.zst"]):
        out = tmp_path / str(len(os.listdir(tmp_path)))
        code, _, err = run_cli(["dedup", *args, "-o", str(out), "-q", "--strict"], env=env)
        assert code == 0, (args, err)
        assert_same(reference, out)
    code, _, err = run_cli(["dedup", f"{scheme}://crawl/nothing/", "-o", str(tmp_path / "none")], env=env)
    assert code == 3 and f"{scheme}://crawl/nothing/" in err


def test_object_store_parquet_dataset(tmp_path, reference, object_store):
    scheme, put, env = object_store
    t = table()
    for i, start in enumerate(range(0, 40, 20)):
        buf = io.BytesIO()
        parquet().write_table(t.slice(start, 20), buf)
        put(f"pq/lang=x{i}/part-{i:05d}.parquet", buf.getvalue())
    put("pq/_SUCCESS", b"")
    put("pq/lang=x0/.part-00000.parquet.crc", b"x")
    code, _, err = run_cli(["dedup", f"{scheme}://crawl/pq", "-o", str(tmp_path / "out"), "-q", "--strict"], env=env)
    assert code == 0, err
    summary = assert_same(reference, tmp_path / "out")
    assert summary["kept_output"]["format"] == "parquet" and summary["ignored_files"] == []


# ------------------------------------------------------------------------------- hf://


@pytest.fixture(scope="module")
def hub():
    """A stand-in for the Hugging Face Hub (which cannot run here), on loopback: the routes
    HfFileSystem calls to list and read a dataset repository (tests/cloud_servers.py). The child
    finds it through ``HF_ENDPOINT``, which huggingface_hub reads when it is imported."""
    pytest.importorskip("huggingface_hub", reason="hf:// needs huggingface_hub (pip install 'neardup[hf]')")
    with FakeHub() as fake:
        env = dict(os.environ, HF_ENDPOINT=fake.endpoint, HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_OFFLINE="0")
        env.pop("HF_TOKEN", None)
        yield fake, env


def test_hf_dataset_jsonl_and_parquet(tmp_path, reference, hub):
    """``hf://datasets/ORG/NAME/...``: a folder of JSONL shards, a glob, one Parquet file, and the
    repository's root, whose README.md (the dataset card) and .gitattributes are not data."""
    fake, env = hub
    lines = JSONL.splitlines(keepends=True)
    buf = io.BytesIO()
    parquet().write_table(table(), buf)
    fake.repos["org/crawl"] = {
        ".gitattributes": b"*.parquet filter=lfs diff=lfs merge=lfs -text\n",
        "README.md": b"---\nlicense: cc0\n---\n# A dataset card\n",
        "data/train-00000-of-00002.jsonl": b"".join(lines[:25]),
        "data/train-00001-of-00002.jsonl.gz": gzip.compress(b"".join(lines[25:])),
        "parquet/train.parquet": buf.getvalue(),
    }
    for args in (["hf://datasets/org/crawl/data"], ["hf://datasets/org/crawl/data/train-*"],
                 ["hf://datasets/org/crawl/parquet/train.parquet"]):
        out = tmp_path / str(len(os.listdir(tmp_path)))
        fake.requests.clear()
        code, _, err = run_cli(["dedup", *args, "-o", str(out), "-q", "--strict"], env=env)
        assert code == 0, (args, err)
        summary = assert_same(reference, out)
        assert any(r.startswith("GET /datasets/org/crawl/resolve/main/") for r in fake.requests)  # read from it
    assert summary["kept_output"]["format"] == "parquet"
    # the repository's root: JSONL and Parquet (two formats), the card left out and named
    code, _, err = run_cli(["dedup", "hf://datasets/org/crawl", "-o", str(tmp_path / "root"), "-q"], env=env)
    assert code == 0, err
    summary = json.loads((tmp_path / "root" / "summary.json").read_text())
    assert summary["input"] == 80 and summary["skipped"] == 0
    assert [f["path"] for f in summary["ignored_files"]] == ["hf://datasets/org/crawl/README.md"]


def test_hf_missing_repo_and_file(tmp_path, hub):
    fake, env = hub
    fake.repos.setdefault("org/small", {"a.jsonl": JSONL})
    for url in ("hf://datasets/org/nothing/data", "hf://datasets/org/small/missing.jsonl"):
        code, _, err = run_cli(["dedup", url, "-o", str(tmp_path / "none")], env=env)
        assert code == 3 and url in err and "Traceback" not in err, err
        assert not (tmp_path / "none" / "summary.json").exists()


def test_a_missing_client_names_its_extra(tmp_path):
    """gcsfs made unimportable in the child, as on a machine without neardup[gcs]: one line naming
    the extra, exit status 2."""
    prelude = ("import sys; sys.modules['gcsfs'] = None; from neardup.cli import main; "
               f"sys.exit(main(['dedup', 'gs://bucket/data.jsonl', '-o', {str(tmp_path / 'out')!r}]))")
    proc = subprocess.run([sys.executable, "-c", prelude], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert "pip install 'neardup[gcs]'" in proc.stderr and "gs://bucket/data.jsonl" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_index_add_reads_stdin_and_globs(tmp_path):
    shards(tmp_path / "crawl")
    db = str(tmp_path / "seen.sqlite")
    code, _, err = run_cli(["index", "add", "--db", db, str(tmp_path / "crawl" / "shard-[01].jsonl.gz")])
    assert code == 0, err
    code, _, err = run_cli(["index", "add", "--db", db, "-"], stdin=b"".join(JSONL.splitlines(keepends=True)[20:]))
    assert code == 0, err
    code, out, err = run_cli(["index", "stats", "--db", db, "--json"])
    assert code == 0, err
    assert json.loads(out)["documents"] == 40
