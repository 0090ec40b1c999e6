"""``neardup dedup`` killed (SIGKILL) at every stage, then run again: it continues after the last
completed stage or kept shard and its outputs are byte-identical to an uninterrupted run's; a
resume with other options is refused in one line; the work folder is kept on failure only."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest

from dedup_runs import dedup, file_sha, folder_digest, write_corpus

#: named points of a run (neardup.io.write.runfolder.reached), in order, with the stage a run killed
#: there resumes after
KILL_POINTS = [("sketch", "start"), ("candidates", "sketch"), ("verify", "candidates"), ("cluster", "verify"),
               ("write", "cluster"), ("kept-shard-1", "verify|cluster"), ("kept-shard-2", "verify|cluster"),
               ("write-pairs", "cluster"), ("publish", "cluster"), ("publish-moved", "cluster")]
# (the kept corpus is written on its own thread from the moment the survivors are known, inside
# the cluster stage: a kill as a shard begins may come before or after that stage is saved)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("corpus") / "in.jsonl", docs=2500)


def _reference(corpus, root, *options):
    out = root / (os.path.basename(str(corpus)) + "".join(str(o) for o in options).replace("-", "_"))
    if not out.exists():
        dedup(corpus, "-o", out, *options, check=True)
    return folder_digest(out)


@pytest.fixture(scope="module")
def refs(tmp_path_factory):
    return tmp_path_factory.mktemp("refs")


@pytest.mark.parametrize("point,after", KILL_POINTS)
def test_killed_at_a_stage_then_resumed(corpus, refs, tmp_path, point, after):
    options = ("--output-shards", 3)
    want = _reference(corpus, refs, *options)
    out = tmp_path / "out"
    killed = dedup(corpus, "-o", out, *options, env={"NEARDUP_TEST_KILL_AT": point})
    assert killed.returncode == -signal.SIGKILL
    assert not (out / "summary.json").exists()  # nothing looks complete
    assert (out / ".neardup-work" / "run.json").exists()  # and the work is kept
    # half of the resumes say --resume, half just run the same command again
    again = ("--resume",) if KILL_POINTS.index((point, after)) % 2 else ()
    resumed = dedup(corpus, "-o", out, *options, *again)
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["resumed_from"] in after.split("|")
    assert folder_digest(out) == want
    # the work folder removed once published, and nothing else left under any name (a removal
    # that cannot finish is an error naming what was left and why: see resumed.stderr)
    assert sorted(os.listdir(out)) == sorted(want), (os.listdir(out), resumed.stderr)
    assert resumed.stderr == ""


@pytest.mark.parametrize("compression,point", [("gzip", "kept-shard-2"), ("zstd", "kept-shard-1"),
                                               ("zstd", "write-pairs")])
def test_compressed_shards_resume_byte_identical(corpus, refs, tmp_path, compression, point):
    options = ("--output-shards", 4, "--compression", compression)
    want = _reference(corpus, refs, *options)
    out = tmp_path / "out"
    assert dedup(corpus, "-o", out, *options, env={"NEARDUP_TEST_KILL_AT": point}).returncode == -9
    if point.startswith("kept-shard-"):  # killed as shard N begins: N shards recorded complete
        done = json.loads((out / ".neardup-work" / "kept.json").read_text())["done"]
        assert len(done) == int(point.rsplit("-", 1)[1])
    assert dedup(corpus, "-o", out, *options).returncode == 0
    assert folder_digest(out) == want


@pytest.mark.parametrize("options", [(), ("--output-shards", 3), ("--output-shards", 2, "--compression", "gzip"),
                                     ("--shard-size", "100KB")], ids=["one-file", "three-shards", "gzip-shards", "by-size"])
def test_killed_once_the_last_shard_is_recorded(corpus, refs, tmp_path, options):
    """Every shard recorded complete in kept.json, the final names not yet: the resume adds no
    shard and rewrites none (it once replaced the one kept.jsonl by an empty file, and gave N
    shards an empty N+1th)."""
    want = _reference(corpus, refs, *options)
    shards = len([n for n in want if n.startswith("kept")])
    out = tmp_path / "out"
    assert dedup(corpus, "-o", out, *options, env={"NEARDUP_TEST_KILL_AT": f"kept-shard-{shards}"}).returncode == -9
    manifest = json.loads((out / ".neardup-work" / "kept.json").read_text())
    assert "final" not in manifest and len(manifest["done"]) == shards
    assert dedup(corpus, "-o", out, *options).returncode == 0
    assert folder_digest(out) == want


def test_shard_size_resume(corpus, refs, tmp_path):
    options = ("--shard-size", "30KB")
    want = _reference(corpus, refs, *options)
    out = tmp_path / "out"
    assert dedup(corpus, "-o", out, *options, env={"NEARDUP_TEST_KILL_AT": "kept-shard-3"}).returncode == -9
    assert dedup(corpus, "-o", out, *options).returncode == 0
    assert folder_digest(out) == want and len([n for n in want if n.startswith("kept-")]) > 3


def test_parquet_resume(tmp_path, refs):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    import orjson

    rows = [orjson.loads(line) for line in open(write_corpus(tmp_path / "src.jsonl", docs=800), "rb")]
    src = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pylist(rows), src, row_group_size=200)
    options = ("--output-shards", 3)
    want = _reference(src, refs, *options)
    for point in ("kept-shard-1", "cluster"):
        out = tmp_path / point
        assert dedup(src, "-o", out, *options, env={"NEARDUP_TEST_KILL_AT": point}).returncode == -9
        assert dedup(src, "-o", out, *options).returncode == 0
        assert folder_digest(out) == want


def test_spilled_run_resumes_with_other_jobs_and_memory(corpus, refs, tmp_path):
    # --jobs and --in-memory-mb decide how, not what: a resume may change them
    want = _reference(corpus, refs)
    out = tmp_path / "out"
    killed = dedup(corpus, "-o", out, "--in-memory-mb", 0, "--jobs", 2, env={"NEARDUP_TEST_KILL_AT": "verify"})
    assert killed.returncode == -9
    sketch = out / ".neardup-work" / "sketch"
    # the signatures (uint32, of the 32-bit family) spilled; the shingle ids are not kept by the first
    # pass of a run on a local file (the candidates' are made again by a second read)
    assert os.path.getsize(sketch / "signatures-1.u32") > 0
    assert not (sketch / "shingles-1.u64").exists() and os.path.getsize(sketch / "shingles-0.u64") == 0
    assert dedup(corpus, "-o", out, "--jobs", 1).returncode == 0
    got = folder_digest(out)
    assert {k: v for k, v in got.items() if k != "summary.json"} == {k: v for k, v in want.items() if k != "summary.json"}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["jobs"] == 1 and summary["spilled_mb"] > 0  # the summary says how this run went


def test_resume_with_other_options_is_refused(corpus, refs, tmp_path):
    want = _reference(corpus, refs)
    out = tmp_path / "out"
    assert dedup(corpus, "-o", out, env={"NEARDUP_TEST_KILL_AT": "cluster"}).returncode == -9
    for options, named in ((("--threshold", 0.9), "threshold 0.8 -> 0.9"),
                           (("--output-shards", 2), "output.shards None -> 2"),
                           (("--no-kept",), "output.kept True -> False"),
                           (("--num-perm", 64, "--resume"), "minhash.num_perm 128 -> 64")):
        refused = dedup(corpus, "-o", out, *options)
        assert refused.returncode == 2
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and named in lines[0] and "interrupted run with other options" in lines[0], lines
    # the interrupted run is still there, and resumes with its own options
    assert (out / ".neardup-work" / "verify").exists()
    resumed = dedup(corpus, "-o", out, "--resume")
    assert resumed.returncode == 0 and json.loads((out / "summary.json").read_text())["resumed_from"] == "verify"
    assert folder_digest(out) == want


def test_resume_over_a_changed_input_is_refused(tmp_path):
    src = write_corpus(tmp_path / "in.jsonl", docs=300)
    out = tmp_path / "out"
    assert dedup(src, "-o", out, env={"NEARDUP_TEST_KILL_AT": "verify"}).returncode == -9
    with open(src, "ab") as fh:
        fh.write(b'{"id": "late", "text": "a record added after the run began"}\n')
    refused = dedup(src, "-o", out, "--resume")
    assert refused.returncode == 2 and "inputs (paths, sizes or modification times changed)" in refused.stderr


def test_damaged_stage_is_run_again(corpus, refs, tmp_path):
    # a stage's data that did not reach the disk (a machine crash) fails its checksum: run again
    want = _reference(corpus, refs)
    out = tmp_path / "out"
    assert dedup(corpus, "-o", out, env={"NEARDUP_TEST_KILL_AT": "cluster"}).returncode == -9
    held = out / ".neardup-work" / "sketch" / "signatures-0.u32"  # the held signatures (uint32)
    data = bytearray(held.read_bytes())
    data[len(data) // 2] ^= 0xFF
    held.write_bytes(bytes(data))
    resumed = dedup(corpus, "-o", out)
    assert resumed.returncode == 0
    assert json.loads((out / "summary.json").read_text())["resumed_from"] == "start"
    assert folder_digest(out) == want


def test_resume_of_a_complete_output_does_nothing(corpus, tmp_path):
    out = tmp_path / "out"
    dedup(corpus, "-o", out, check=True)
    before = {n: os.stat(out / n).st_mtime_ns for n in os.listdir(out)}
    assert dedup(corpus, "-o", out, "--resume").returncode == 0
    assert {n: os.stat(out / n).st_mtime_ns for n in os.listdir(out)} == before
    other = dedup(corpus, "-o", out, "--resume", "--threshold", 0.9)
    assert other.returncode == 2 and "is complete, made with other options (" in other.stderr
    assert "threshold 0.8 -> 0.9)" in other.stderr
    assert {n: os.stat(out / n).st_mtime_ns for n in os.listdir(out)} == before


def test_work_folder_kept_on_failure_removed_on_success(corpus, refs, tmp_path):
    out = tmp_path / "out"
    failed = dedup(corpus, "-o", out, env={"NEARDUP_TEST_FAULT": "memory@cluster"})
    assert failed.returncode == 4
    assert {"candidates", "run.json", "sketch", "verify"} <= set(os.listdir(out / ".neardup-work"))
    assert dedup(corpus, "-o", out).returncode == 0
    assert ".neardup-work" not in os.listdir(out)
    assert folder_digest(out) == _reference(corpus, refs)


@pytest.mark.slow
def test_killed_at_random_moments(tmp_path, refs):
    # real kills at seeded random moments of the whole run (not at named points), then resumed
    src = write_corpus(tmp_path / "big.jsonl", docs=30000, seed=5)
    options = ("--output-shards", 4)
    ref = tmp_path / "ref"
    trace = tmp_path / "trace.txt"
    dedup(src, "-o", ref, *options, env={"NEARDUP_TEST_TRACE": str(trace)}, check=True)
    want = folder_digest(ref)
    points = [line.split() for line in trace.read_text().splitlines()]
    span = float(points[-1][1]) - float(points[0][1])
    rng = random.Random(11)  # the moments: seeded
    sha = file_sha(src)
    for k in range(4):
        out = tmp_path / f"out{k}"
        moment = rng.uniform(0.2, 1.0) * span
        for _ in range(8):
            # The moment counts from the run's first named point, as the span does: its start-up
            # (seconds on a loaded machine) is not in the span. A run that still ends first (on a
            # machine less loaded than the reference run's) is run again, to be killed earlier.
            shutil.rmtree(out, ignore_errors=True)
            started = tmp_path / f"trace{k}.txt"
            started.unlink(missing_ok=True)
            proc = subprocess.Popen([sys.executable, "-m", "neardup", "dedup", src, "-o", out, *map(str, options),
                                     "--quiet"], env=dict(os.environ, NEARDUP_TEST_TRACE=str(started)))
            while proc.poll() is None and not (started.exists() and started.stat().st_size):
                time.sleep(0.005)
            try:
                proc.wait(timeout=moment)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
            if proc.returncode == -signal.SIGKILL:
                break
            assert proc.returncode == 0
            moment /= 2
        assert proc.returncode == -signal.SIGKILL, "every run ended before its moment"
        resumed = dedup(src, "-o", out, *options)
        assert resumed.returncode == 0, resumed.stderr
        assert folder_digest(out) == want
    assert file_sha(src) == sha


def test_a_summary_killed_while_written_leaves_no_stray_file(corpus, refs, tmp_path):
    # found by benchmarks/resume.py: a kill between writing summary.json's temporary file and its
    # rename left summary.json.tmp-PID beside the resumed run's outputs
    want = _reference(corpus, refs, "--output-shards", 3)
    out = tmp_path / "out"
    assert dedup(corpus, "-o", out, "--output-shards", 3, env={"NEARDUP_TEST_KILL_AT": "publish-moved"}).returncode == -9
    (out / "summary.json.tmp-99999").write_bytes(b'{"input": ')  # as the killed write left it
    assert dedup(corpus, "-o", out, "--output-shards", 3).returncode == 0
    assert folder_digest(out) == want  # every file of the folder: no stray one
