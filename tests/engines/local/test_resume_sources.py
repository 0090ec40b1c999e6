"""Resume beside the features that record more per record than a plain run: web archives (their
kept ``kept.warc.gz`` and the ``url`` key) and runs with record sources (several inputs,
``--source-field``, ``--keep source:``), which resume like any run with byte-identical outputs;
and runs with an index (``--against``, ``--save-index``, ``--update-index``), which keep no
resumable work folder and refuse ``--resume`` in one line (the index is never written twice)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3

import orjson
import pytest

from dedup_runs import dedup, folder_digest, write_corpus

WORK = ".neardup-work"


def _write_warc(path) -> str:
    pytest.importorskip("warcio")
    import io

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    story = "<p>" + " ".join(f"word{i} of the story told here" for i in range(60)) + "</p>"
    other = "<p>" + " ".join(f"unrelated{i} sentence about something else" for i in range(60)) + "</p>"
    pages = [("http://a.example/story", story), ("http://b.example/copy", story),
             ("http://a.example/near", story.replace("word59 of", "word59 from")),
             ("http://a.example/other", other)]
    with open(path, "wb") as fh:
        w = WARCWriter(fh, gzip=True)
        for url, body in pages:
            html = f"<html><body><main>{body}</main></body></html>".encode()
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
            w.write_record(w.create_warc_record(url, "response", payload=io.BytesIO(html), http_headers=http))
    return str(path)


@pytest.mark.parametrize("point", ["cluster", "write", "publish"])
def test_a_web_archive_run_killed_then_resumed(tmp_path, point):
    src = _write_warc(tmp_path / "crawl.warc.gz")
    ref, out = tmp_path / "ref", tmp_path / "out"
    dedup(src, "-o", ref, check=True)
    assert sorted(os.listdir(ref)) == ["clusters.jsonl", "kept.warc.gz", "pairs.jsonl", "summary.json"]
    rows = [orjson.loads(line) for line in open(ref / "clusters.jsonl", "rb")]
    assert [r["url"] for r in rows] == ["http://a.example/story", "http://b.example/copy",
                                        "http://a.example/near", "http://a.example/other"]
    assert sum(r["kept"] for r in rows) == 2

    killed = dedup(src, "-o", out, env={"NEARDUP_TEST_KILL_AT": point})
    assert killed.returncode == -signal.SIGKILL
    assert not (out / "summary.json").exists()
    dedup(src, "-o", out, "--resume", check=True)
    assert folder_digest(out) == folder_digest(ref)  # the url key and kept.warc.gz's bytes included
    assert not (out / WORK).exists()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["resumed_from"] is not None


def _index_docs(db) -> int:
    with sqlite3.connect(db) as con:
        return con.execute("SELECT count(*) FROM docs").fetchone()[0]


def test_resume_with_an_index_is_refused_in_one_line(tmp_path):
    a = write_corpus(tmp_path / "a.jsonl", docs=200)
    b = write_corpus(tmp_path / "b.jsonl", docs=100, seed=4)
    db = tmp_path / "seen.db"
    for args, flag in (([a, "--save-index", db], "--save-index"), ([a, "--against", db], "--against"),
                       ([a, b, "--save-index", db], "--save-index"),
                       ([a, "--against", db, "--update-index"], "--against")):
        proc = dedup(*args, "-o", tmp_path / "out", "--resume")
        assert proc.returncode == 2, proc.stderr
        assert flag in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert not db.exists()  # refused before the index was created
        assert not (tmp_path / "out" / "summary.json").exists()


@pytest.mark.parametrize("flag", ["--save-index", "--against", "--update-index"])
def test_the_library_gets_the_commands_refusal_of_resume_with_an_index(tmp_path, capsys, flag):
    """Deduplicator.run refuses ``resume`` with an index as ``neardup dedup --resume`` does, with the
    same line (the local engine's refusals, asked by both), and writes nothing."""
    from neardup import DedupConfig, SeenIndex
    from neardup.cli import main
    from neardup.engines.against import Against
    from neardup.engines.local.run import Deduplicator
    from neardup.errors import ConfigError

    a = write_corpus(tmp_path / "a.jsonl", docs=50)
    seen, db, out = tmp_path / "seen.db", tmp_path / "new.db", tmp_path / "out"
    dedup(a, "-o", tmp_path / "first", "--save-index", seen, check=True)
    cli_args = {"--save-index": ["--save-index", str(db)], "--against": ["--against", str(seen)],
                "--update-index": ["--against", str(seen), "--update-index"]}[flag]
    assert main(["dedup", a, "-o", str(out), "-q", "--resume", *cli_args]) == 2
    said = capsys.readouterr().err.strip()
    assert len(said.splitlines()) == 1 and "--resume is not supported with " in said, said

    config = DedupConfig()
    if flag == "--save-index":
        index = SeenIndex.for_dedup(db, config, store_shingles=config.verify)
        engine = Deduplicator(config, save_index=index)
    else:
        index = SeenIndex.for_dedup(seen, config, create=False)
        engine = Deduplicator(config, against=Against(index, str(seen), update=flag == "--update-index"))
    try:
        with pytest.raises(ConfigError) as refused:
            engine.run([a], str(out), resume=True)
    finally:
        index.close()
    assert str(refused.value) in said and str(refused.value).startswith("--resume is not supported with ")
    assert not out.exists()


@pytest.mark.parametrize("point", ["write", "publish"])
def test_a_save_index_run_killed_after_writing_the_index_starts_over(tmp_path, point):
    src = write_corpus(tmp_path / "c.jsonl", docs=300)
    ref, out = tmp_path / "ref", tmp_path / "out"
    ref_db, db = tmp_path / "ref.db", tmp_path / "seen.db"
    dedup(src, "-o", ref, "--save-index", ref_db, check=True)
    saved = json.loads((ref / "summary.json").read_text())["index"]["documents_saved"]
    assert saved == _index_docs(ref_db) > 0

    assert dedup(src, "-o", out, "--save-index", db, env={"NEARDUP_TEST_KILL_AT": point}).returncode == -9
    assert _index_docs(db) == saved  # the index was written before the kill
    assert not os.path.exists(out / WORK / "sketch")  # no stage saved: nothing to resume from
    dedup(src, "-o", out, "--save-index", db, check=True)
    assert _index_docs(db) == saved  # written again in full, not twice
    got, want = folder_digest(out), folder_digest(ref)
    assert got.pop("summary.json") and want.pop("summary.json")  # it names the index files, which differ
    assert got == want
    summary = json.loads((out / "summary.json").read_text())
    assert summary["index"]["documents_saved"] == saved and summary["resumed_from"] is None
    assert not (out / WORK).exists()


@pytest.fixture(scope="module")
def two_inputs(tmp_path_factory):
    """Two inputs that share records: the second holds exact and near copies of the first's, and
    ids that repeat across the two (ids need only be unique within a source)."""
    d = tmp_path_factory.mktemp("sources")
    a = write_corpus(d / "a.jsonl", docs=600)
    lines = open(a, "rb").read().splitlines(keepends=True)
    copied = [orjson.loads(line) for line in lines[::5]]
    for i, row in enumerate(copied):
        if i % 2:
            row["text"] = row["text"].replace(" ", " and ", 1)  # a near copy
    extra = open(write_corpus(d / "other.jsonl", docs=300, seed=4), "rb").read()
    b = d / "b.jsonl"
    b.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in copied) + extra)
    return a, str(b)


#: where a run with sources is killed, with the stages its resume may continue after
SOURCE_KILLS = [("sketch", "start"), ("candidates", "sketch"), ("verify", "candidates"), ("cluster", "verify"),
                ("kept-shard-1", "verify|cluster"), ("write", "cluster"), ("write-pairs", "cluster"),
                ("publish", "cluster"), ("publish-moved", "cluster")]


def _killed_then_resumed(args, out, point, *, resume_flag):
    killed = dedup(*args, "-o", out, env={"NEARDUP_TEST_KILL_AT": point})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert not (out / "summary.json").exists() and (out / WORK / "run.json").exists()
    resumed = dedup(*args, "-o", out, *(("--resume",) if resume_flag else ()))
    assert resumed.returncode == 0, resumed.stderr
    assert not (out / WORK).exists()
    return json.loads((out / "summary.json").read_text())


@pytest.mark.parametrize("point,after", SOURCE_KILLS)
def test_a_run_with_several_inputs_killed_then_resumed(tmp_path, two_inputs, point, after):
    a, b = two_inputs
    args = (a, b, "--output-shards", 2)
    ref = tmp_path / "ref"
    dedup(*args, "-o", ref, check=True)
    rows = [orjson.loads(line) for line in open(ref / "clusters.jsonl", "rb")]
    assert {r["source"] for r in rows} == {a, b}
    assert any(r["duplicate_of_source"] == a and r["source"] == b for r in rows)  # copies across the inputs
    summary = _killed_then_resumed(args, tmp_path / "out", point, resume_flag=SOURCE_KILLS.index((point, after)) % 2)
    assert summary["resumed_from"] in after.split("|")
    assert folder_digest(tmp_path / "out") == folder_digest(ref)  # sources, kinds, largest clusters included


@pytest.mark.parametrize("options", [("--source-field", "site"), ("--keep", "source:b.jsonl,a.jsonl")],
                         ids=["source-field", "keep-source"])
@pytest.mark.parametrize("point", ["candidates", "cluster", "write-pairs"])
def test_source_field_and_keep_source_killed_then_resumed(tmp_path, two_inputs, options, point):
    a, b = two_inputs
    if options[0] == "--source-field":  # one input whose records name their site
        rows = [orjson.loads(line) for p in (a, b) for line in open(p, "rb")]
        src = tmp_path / "sites.jsonl"
        src.write_bytes(b"".join(orjson.dumps(dict(r, site=f"s{k % 3}")) + b"\n" for k, r in enumerate(rows)))
        args = (src, *options)
    else:  # the preferred source's copies survive: holders move during the sketch stage
        os.symlink(a, tmp_path / "a.jsonl")
        os.symlink(b, tmp_path / "b.jsonl")
        args = ("a.jsonl", "b.jsonl", *options)
    ref = tmp_path / "ref"
    dedup(*args, "-o", ref, check=True, cwd=tmp_path)
    killed = dedup(*args, "-o", tmp_path / "out", env={"NEARDUP_TEST_KILL_AT": point}, cwd=tmp_path)
    assert killed.returncode == -signal.SIGKILL
    dedup(*args, "-o", tmp_path / "out", "--resume", check=True, cwd=tmp_path)
    assert folder_digest(tmp_path / "out") == folder_digest(ref)
    rows = [orjson.loads(line) for line in open(ref / "clusters.jsonl", "rb")]
    if options[0] == "--keep":
        kept_b = [r for r in rows if r["kept"] and r["source"] == "b.jsonl" and r["cluster"] is not None]
        assert kept_b  # b.jsonl's copies survived their holders in a.jsonl


def test_a_failed_run_with_sources_keeps_its_work_and_resumes(tmp_path, two_inputs):
    a, b = two_inputs
    ref, out = tmp_path / "ref", tmp_path / "out"
    dedup(a, b, "-o", ref, check=True)
    failed = dedup(a, b, "-o", out, env={"NEARDUP_TEST_FAULT": "memory@cluster"})
    assert failed.returncode == 4, failed.stderr
    assert (out / WORK / "verify").exists() and not (out / "summary.json").exists()
    dedup(a, b, "-o", out, check=True)
    assert json.loads((out / "summary.json").read_text())["resumed_from"] == "verify"
    assert folder_digest(out) == folder_digest(ref)


def test_resume_with_other_inputs_is_refused(tmp_path, two_inputs):
    a, b = two_inputs
    out = tmp_path / "out"
    assert dedup(a, b, "-o", out, env={"NEARDUP_TEST_KILL_AT": "cluster"}).returncode == -signal.SIGKILL
    other = dedup(b, a, "-o", out, "--resume")  # the same files in the other order: other sources' order
    assert other.returncode == 2 and len(other.stderr.strip().splitlines()) == 1, other.stderr


def test_parquet_results_killed_while_written_resume_and_replace_an_older_runs_jsonl(tmp_path):
    pytest.importorskip("pyarrow")
    src = write_corpus(tmp_path / "c.jsonl", docs=300)
    ref, out = tmp_path / "ref", tmp_path / "out"
    dedup(src, "-o", ref, "--output-format", "parquet", check=True)
    dedup(src, "-o", out, check=True)  # an older run's clusters.jsonl and pairs.jsonl
    killed = dedup(src, "-o", out, "--output-format", "parquet", env={"NEARDUP_TEST_KILL_AT": "write-pairs"})
    assert killed.returncode == -signal.SIGKILL
    other = dedup(src, "-o", out, "--resume")  # the interrupted run wrote parquet
    assert other.returncode == 2 and "output_format 'parquet' -> 'jsonl'" in other.stderr, other.stderr
    dedup(src, "-o", out, "--output-format", "parquet", "--resume", check=True)
    assert sorted(os.listdir(out)) == ["clusters.parquet", "kept.jsonl", "pairs.parquet", "summary.json"]
    assert folder_digest(out) == folder_digest(ref)
