"""Outputs of ``neardup dedup``: fsspec URLs (a real S3 API on loopback, moto's server mode, and a
real GCS JSON API, gcp-storage-emulator: tests/cloud_servers.py), the
kept corpus's shards and compression, Parquet in and out, and publishing with summary.json last."""

from __future__ import annotations

import gzip
import json
import os
import sys

import orjson
import pytest

from cloud_servers import free_port, gcs_emulator
from dedup_runs import dedup, folder_digest, write_corpus


def _kept_files(out):
    return sorted(n for n in os.listdir(out) if n.startswith("kept"))


def _read_all(out, names):
    data = b""
    for name in names:
        with open(os.path.join(out, name), "rb") as fh:
            raw = fh.read()
        if name.endswith(".gz"):
            raw = gzip.decompress(raw)
        elif name.endswith(".zst"):
            import zstandard

            raw = zstandard.ZstdDecompressor().stream_reader(raw).read()
        data += raw
    return data


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    return write_corpus(d / "in.jsonl")


@pytest.fixture(scope="module")
def plain_run(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("plain") / "out"
    dedup(corpus, "-o", out, check=True)
    return out


def test_plain_run_layout(plain_run, corpus):
    names = sorted(os.listdir(plain_run))
    assert names == ["clusters.jsonl", "kept.jsonl", "pairs.jsonl", "summary.json"]  # no work folder left
    summary = json.loads((plain_run / "summary.json").read_text())
    assert summary["kept_output"]["files"] == ["kept.jsonl"] and summary["resumed_from"] is None
    # the kept records byte for byte: the input's lines of the records clusters.jsonl keeps
    kept_ids = {orjson.loads(line)["id"] for line in open(plain_run / "clusters.jsonl", "rb")
                if orjson.loads(line)["kept"]}
    want = b"".join(line for line in open(corpus, "rb") if orjson.loads(line)["id"] in kept_ids)
    assert (plain_run / "kept.jsonl").read_bytes() == want
    assert summary["kept"] == len(kept_ids) < summary["input"]


@pytest.mark.parametrize("shards", [1, 3, 7])
def test_output_shards_split_the_same_bytes(plain_run, corpus, tmp_path, shards):
    out = tmp_path / "out"
    dedup(corpus, "-o", out, "--output-shards", shards, check=True)
    names = _kept_files(out)
    assert names == [f"kept-{i:05d}-of-{shards:05d}.jsonl" for i in range(shards)]
    assert _read_all(out, names) == (plain_run / "kept.jsonl").read_bytes()
    counts = [sum(1 for _ in open(out / n, "rb")) for n in names]
    assert max(counts) - min(counts) <= 1  # shards of K//N or K//N + 1 records
    for name in ("clusters.jsonl", "pairs.jsonl"):
        assert (out / name).read_bytes() == (plain_run / name).read_bytes()


def test_more_shards_than_kept_records(tmp_path):
    src = tmp_path / "few.jsonl"
    src.write_bytes(b'{"id": "a", "text": "one two three four five six"}\n'
                    b'{"id": "b", "text": "seven eight nine ten eleven twelve"}\n')
    out = tmp_path / "out"
    dedup(src, "-o", out, "--output-shards", 4, check=True)
    names = _kept_files(out)
    assert len(names) == 4 and _read_all(out, names) == src.read_bytes()
    assert sum(os.path.getsize(out / n) == 0 for n in names) == 2  # the empty shards are empty files


def test_shard_size(plain_run, corpus, tmp_path):
    out = tmp_path / "out"
    dedup(corpus, "-o", out, "--shard-size", "20KB", check=True)
    names = _kept_files(out)
    n = len(names)
    assert n > 3 and names == [f"kept-{i:05d}-of-{n:05d}.jsonl" for i in range(n)]
    assert _read_all(out, names) == (plain_run / "kept.jsonl").read_bytes()
    sizes = [os.path.getsize(out / name) for name in names]
    longest_line = max(len(line) for line in open(plain_run / "kept.jsonl", "rb"))
    for size in sizes[:-1]:  # every shard but the last reaches the size, by less than one record more
        assert 20 * 1024 <= size < 20 * 1024 + longest_line
    assert 0 < sizes[-1] < 20 * 1024 + longest_line


@pytest.mark.parametrize("compress,suffix", [("gzip", ".gz"), ("zstd", ".zst")])
def test_compressed_like_the_input(plain_run, tmp_path, compress, suffix):
    src = write_corpus(tmp_path / f"in.jsonl{suffix}", compress=compress)
    out = tmp_path / "out"
    dedup(src, "-o", out, "--output-shards", 2, check=True)
    names = _kept_files(out)
    assert names == [f"kept-0000{i}-of-00002.jsonl{suffix}" for i in range(2)]
    assert _read_all(out, names) == (plain_run / "kept.jsonl").read_bytes()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["kept_output"]["compression"] == compress
    # as asked instead of like the input
    out2 = tmp_path / "out2"
    dedup(src, "-o", out2, "--compression", "none", check=True)
    assert _kept_files(out2) == ["kept.jsonl"]
    assert (out2 / "kept.jsonl").read_bytes() == (plain_run / "kept.jsonl").read_bytes()


def test_compression_asked(plain_run, corpus, tmp_path):
    for compression, suffix in (("zstd", ".zst"), ("gzip", ".gz")):
        out = tmp_path / compression
        dedup(corpus, "-o", out, "--compression", compression, check=True)
        assert _kept_files(out) == [f"kept.jsonl{suffix}"]
        assert _read_all(out, _kept_files(out)) == (plain_run / "kept.jsonl").read_bytes()
    # gzip shards carry no time stamp: two runs give the same bytes
    again = tmp_path / "gzip-again"
    dedup(corpus, "-o", again, "--compression", "gzip", check=True)
    assert (again / "kept.jsonl.gz").read_bytes() == (tmp_path / "gzip" / "kept.jsonl.gz").read_bytes()


def test_parquet_in_parquet_out_sharded(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = [orjson.loads(line) for line in open(write_corpus(tmp_path / "src.jsonl", docs=600), "rb")]
    table = pa.Table.from_pylist(rows)
    pq.write_table(table, tmp_path / "in.parquet", compression="zstd", row_group_size=100)
    plain, sharded = tmp_path / "plain", tmp_path / "sharded"
    dedup(tmp_path / "in.parquet", "-o", plain, check=True)
    dedup(tmp_path / "in.parquet", "-o", sharded, "--output-shards", 3, "--compression", "gzip", check=True)
    assert _kept_files(plain) == ["kept.parquet"]
    names = _kept_files(sharded)
    assert names == [f"kept-0000{i}-of-00003.parquet" for i in range(3)]
    whole = pq.read_table(plain / "kept.parquet")
    parts = [pq.read_table(sharded / n) for n in names]
    assert pa.concat_tables(parts).equals(whole) and whole.schema.equals(table.schema, check_metadata=False)
    assert pq.ParquetFile(plain / "kept.parquet").metadata.row_group(0).column(0).compression == "ZSTD"
    assert pq.ParquetFile(sharded / names[0]).metadata.row_group(0).column(0).compression == "GZIP"
    kept_ids = {orjson.loads(line)["id"] for line in open(plain / "clusters.jsonl", "rb") if orjson.loads(line)["kept"]}
    assert whole.column("id").to_pylist() == [r["id"] for r in rows if r["id"] in kept_ids]


def test_a_new_run_replaces_an_older_runs_shards(corpus, tmp_path):
    out = tmp_path / "out"
    dedup(corpus, "-o", out, "--output-shards", 4, check=True)
    dedup(corpus, "-o", out, "--output-shards", 2, check=True)
    assert _kept_files(out) == ["kept-00000-of-00002.jsonl", "kept-00001-of-00002.jsonl"]


def test_an_older_summary_is_removed_before_anything_is_rewritten(corpus, tmp_path):
    out = tmp_path / "out"
    dedup(corpus, "-o", out, check=True)
    assert (out / "summary.json").exists()
    killed = dedup(corpus, "-o", out, "--threshold", "0.7", env={"NEARDUP_TEST_KILL_AT": "cluster"})
    assert killed.returncode == -9
    # the older outputs are still there, but the folder no longer looks complete
    assert not (out / "summary.json").exists() and (out / "clusters.jsonl").exists()


def test_bad_layout_options(corpus, tmp_path):
    both = dedup(corpus, "-o", tmp_path / "o", "--output-shards", 2, "--shard-size", "1MB")
    assert both.returncode == 2 and "cannot be used together" in both.stderr
    bad = dedup(corpus, "-o", tmp_path / "o", "--shard-size", "lots")
    assert bad.returncode == 2 and "--shard-size must be a size" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------------------- fsspec URLs


@pytest.fixture(scope="module")
def s3_server():
    pytest.importorskip("s3fs", reason="s3:// outputs need s3fs (pip install 'neardup[s3]')")
    server_mod = pytest.importorskip("moto.server", reason="the S3 test server is moto[server] (the test extra)")
    port = free_port()
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_EC2_METADATA_DISABLED": "true"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        import s3fs

        fs = s3fs.S3FileSystem(client_kwargs={"endpoint_url": env["AWS_ENDPOINT_URL"]})
        fs.mkdir("dedup-bucket")
        yield fs, env
    finally:
        server.stop()
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.mark.parametrize("scheme, server", [("s3", "s3_server"), ("gs", "gcs_server")])
def test_object_store_output(scheme, server, request, corpus, plain_run, tmp_path):
    fs, env = request.getfixturevalue(server)  # moto's S3 server, or the GCS emulator
    res = dedup(corpus, "-o", f"{scheme}://dedup-bucket/run1/", "--output-shards", 2, "--work-dir", tmp_path / "work",
                env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert not os.path.exists(tmp_path / f"{scheme}:")  # not a local folder named after the URL
    names = sorted(p.rsplit("/", 1)[-1] for p in fs.ls("dedup-bucket/run1", detail=False))
    assert names == ["clusters.jsonl", "kept-00000-of-00002.jsonl", "kept-00001-of-00002.jsonl", "pairs.jsonl",
                     "summary.json"]
    for name in ("clusters.jsonl", "pairs.jsonl"):
        assert fs.cat_file(f"dedup-bucket/run1/{name}") == (plain_run / name).read_bytes()
    kept = b"".join(fs.cat_file(f"dedup-bucket/run1/{n}") for n in names if n.startswith("kept"))
    assert kept == (plain_run / "kept.jsonl").read_bytes()
    summary = json.loads(fs.cat_file("dedup-bucket/run1/summary.json"))
    assert summary["kept_output"]["path"] == f"{scheme}://dedup-bucket/run1/kept-00000-of-00002.jsonl"
    assert os.listdir(tmp_path / "work") == []
    # the same folder again with one shard: the older run's two shards are removed
    res = dedup(corpus, "-o", f"{scheme}://dedup-bucket/run1/", "--work-dir", tmp_path / "work", env=env)
    assert res.returncode == 0, res.stderr
    fs.invalidate_cache()
    names = sorted(p.rsplit("/", 1)[-1] for p in fs.ls("dedup-bucket/run1", detail=False))
    assert names == ["clusters.jsonl", "kept.jsonl", "pairs.jsonl", "summary.json"]


@pytest.fixture(scope="module")
def gcs_server():
    with gcs_emulator("dedup-bucket") as (fs, env):
        yield fs, env


@pytest.mark.parametrize("scheme, server", [("s3", "s3_server"), ("gs", "gcs_server")])
def test_object_store_output_killed_then_resumed(scheme, server, request, corpus, plain_run, tmp_path):
    fs, env = request.getfixturevalue(server)
    args = (corpus, "-o", f"{scheme}://dedup-bucket/run2", "--work-dir", tmp_path / "work")
    killed = dedup(*args, env=dict(env, NEARDUP_TEST_KILL_AT="publish-moved"))
    assert killed.returncode == -9
    fs.invalidate_cache()
    # every file uploaded but summary.json: the object store's folder does not look complete
    assert fs.exists("dedup-bucket/run2/clusters.jsonl") and not fs.exists("dedup-bucket/run2/summary.json")
    resumed = dedup(*args, env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(fs.cat_file("dedup-bucket/run2/summary.json"))["resumed_from"] == "cluster"
    assert fs.cat_file("dedup-bucket/run2/kept.jsonl") == (plain_run / "kept.jsonl").read_bytes()


def test_missing_client_names_the_extra(corpus, tmp_path):
    # s3fs hidden from the interpreter: the one line names the extra to install
    code = ("import sys; sys.modules['s3fs'] = None; from neardup.cli import main; "
            f"sys.exit(main(['dedup', {str(corpus)!r}, '-o', 's3://bucket/out/', '--quiet']))")
    import subprocess

    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        "neardup: error: s3:// outputs need s3fs: pip install 'neardup[s3]'"]
    assert os.listdir(tmp_path) == []


def test_file_url_is_a_local_folder(corpus, plain_run, tmp_path):
    out = tmp_path / "viaurl"
    dedup(corpus, "-o", f"file://{out}", check=True)
    assert folder_digest(out) == folder_digest(plain_run)


def test_the_work_folder_is_removed_whole(tmp_path):
    from neardup.io.write.runfolder import RunFolder

    out = tmp_path / "out"
    run = RunFolder(str(out / ".neardup-work"))
    run.begin({"test": 1}, str(out))
    os.makedirs(os.path.join(run.path, "sketch"))
    open(os.path.join(run.path, "sketch", "ids.u64"), "wb").close()
    run.remove()
    assert os.listdir(out) == []  # nothing left, under any name
    run.remove()  # (a folder already gone)


def test_a_work_folder_that_cannot_be_removed_is_said_and_never_taken_for_an_interrupted_run(tmp_path, monkeypatch):
    """A removal that leaves files behind raises one line naming what was left and why, and the
    folder left is no longer the work folder: the next run on the output starts afresh instead of
    resuming from it, or refusing other options."""
    from neardup.errors import OutputError
    from neardup.io.write.runfolder import RunFolder

    out = tmp_path / "out"
    run = RunFolder(str(out / ".neardup-work"))
    run.begin({"test": 1}, str(out))
    stuck = os.path.join(run.path, "staged", "stuck.jsonl")
    open(stuck, "wb").close()
    unlink = os.unlink

    def refused(path, *args, **kwargs):  # a file the system will not let go of (root ignores modes)
        if os.path.basename(path) == "stuck.jsonl":
            raise PermissionError(1, "Operation not permitted", path)
        return unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", refused)
    with pytest.raises(OutputError) as failed:
        run.remove()
    said = str(failed.value)
    assert "\n" not in said and "the work folder could not be removed" in said, said
    assert "stuck.jsonl" in said and "Operation not permitted" in said, said
    assert not os.path.exists(run.path) and not RunFolder(run.path).exists()
    (left,) = os.listdir(out)
    assert left.startswith(".neardup-work.removing-") and left in said
    monkeypatch.setattr(os, "unlink", unlink)
    again = RunFolder(str(out / ".neardup-work"))
    assert again.begin({"test": 2}, str(out)) is False  # a new run, not "other options"
