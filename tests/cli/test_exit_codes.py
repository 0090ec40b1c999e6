"""The documented exit statuses of ``neardup dedup`` (neardup.exitcodes, docs/cli.md "Exit codes"):
0 done, 1 done with more skips than --max-skipped (any, with --strict), 2 usage, 3 an input that
cannot be read; --on-error skip goes on and names each skipped file in summary.json."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest

from neardup import exitcodes

GOOD = [{"id": f"g{i}", "text": f"document {i} talks about subject {i} at some length today"} for i in range(20)]


def jsonl(records, extra_lines=()):
    return b"".join(json.dumps(r).encode() + b"\n" for r in records) + b"".join(extra_lines)


def run_cli(*args):
    proc = subprocess.run([sys.executable, "-m", "neardup", "dedup", *map(str, args)], capture_output=True,
                          timeout=600)
    return proc.returncode, proc.stderr.decode()


def summary(out):
    with open(os.path.join(out, "summary.json")) as fh:
        return json.load(fh)


@pytest.fixture
def truncated_gzip(tmp_path):
    data = gzip.compress(jsonl([{"id": f"t{i}", "text": f"line {i} " * 40} for i in range(3000)]))
    p = tmp_path / "cut.jsonl.gz"
    p.write_bytes(data[: len(data) // 2])
    return p


def test_usage_mistake_is_2(tmp_path):
    (tmp_path / "a.jsonl").write_bytes(jsonl(GOOD))
    code, err = run_cli(tmp_path / "a.jsonl", "-o", tmp_path / "out", "--threshold", "2")
    assert code == exitcodes.USAGE == 2 and "--threshold" in err
    code, err = run_cli(tmp_path / "a.jsonl", "-o", tmp_path / "out", "--max-skipped", "lots")
    assert code == 2 and "--max-skipped" in err


def test_missing_input_is_3(tmp_path):
    code, err = run_cli(tmp_path / "nope.jsonl", "-o", tmp_path / "out")
    assert code == exitcodes.INPUT_ERROR == 3
    assert str(tmp_path / "nope.jsonl") in err and "no such file" in err


def test_unreadable_file_is_3_naming_it(tmp_path, truncated_gzip):
    good = tmp_path / "good.jsonl"
    good.write_bytes(jsonl(GOOD))
    code, err = run_cli(good, truncated_gzip, "-o", tmp_path / "out")
    assert code == 3
    line = err.strip().splitlines()[-1]
    assert line.startswith("neardup: error: ") and str(truncated_gzip) in line and "--on-error skip" in line
    assert "Traceback" not in err


@pytest.mark.parametrize("make", ["corrupt_parquet", "broken_link", "bad_zstd"])
def test_other_unreadable_files_are_3(tmp_path, make):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(jsonl(GOOD))
    if make == "corrupt_parquet":
        bad = folder / "b.parquet"
        bad.write_bytes(b"PAR1 this is not really a parquet file PAR1")
    elif make == "broken_link":
        bad = folder / "b.jsonl"
        os.symlink(tmp_path / "gone.jsonl", bad)
    else:
        bad = folder / "b.jsonl.zst"
        bad.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00garbage" * 20)
    code, err = run_cli(folder, "-o", tmp_path / "out")
    assert code == 3, err
    assert str(bad) in err


def test_on_error_skip_counts_the_file(tmp_path, truncated_gzip):
    good = tmp_path / "good.jsonl"
    good.write_bytes(jsonl(GOOD))
    out = tmp_path / "out"
    code, err = run_cli(good, truncated_gzip, "-o", out, "--on-error", "skip")
    assert code == exitcodes.OK, err
    s = summary(out)
    assert [f["path"] for f in s["skipped_files"]] == [str(truncated_gzip)]
    assert "cannot read the file after line" in s["skipped_files"][0]["reason"]
    assert s["skipped_by_reason"]["unreadable_file"] == 1
    assert s["input"] > len(GOOD)  # the lines before the break were read
    assert "could not be read" in err and str(truncated_gzip) in err
    # and --strict makes the same run exit 1
    code, err = run_cli(good, truncated_gzip, "-o", tmp_path / "strict", "--on-error", "skip", "--strict")
    assert code == exitcodes.SKIPPED == 1
    assert "--strict" in err


@pytest.fixture
def three_bad_lines(tmp_path):
    p = tmp_path / "mixed.jsonl"
    p.write_bytes(jsonl(GOOD, [b"{not json\n", b"[1, 2]\n", b'{"id": "x"}\n']))
    return p


def test_skipped_records_exit_0_without_a_limit(tmp_path, three_bad_lines):
    code, err = run_cli(three_bad_lines, "-o", tmp_path / "out")
    assert code == 0, err
    assert summary(tmp_path / "out")["skipped"] == 3


def test_strict_exits_1_on_any_skipped_record(tmp_path, three_bad_lines):
    code, err = run_cli(three_bad_lines, "-o", tmp_path / "out", "--strict")
    assert code == 1
    assert "3 records skipped" in err and "summary.json" in err
    assert summary(tmp_path / "out")["skipped"] == 3  # the outputs are written all the same
    ok = tmp_path / "ok.jsonl"
    ok.write_bytes(jsonl(GOOD))
    code, err = run_cli(ok, "-o", tmp_path / "ok-out", "--strict")
    assert code == 0, err


@pytest.mark.parametrize("limit, expected", [("2", 1), ("3", 0), ("0", 1), ("0.1", 1), ("0.2", 0), ("10%", 1),
                                             ("15%", 0)])
def test_max_skipped_count_or_fraction(tmp_path, three_bad_lines, limit, expected):
    # 3 skipped of 23 records: 13%
    code, err = run_cli(three_bad_lines, "-o", tmp_path / "out", "--max-skipped", limit)
    assert code == expected, err
    if expected:
        assert "over --max-skipped" in err


@pytest.fixture
def parquet_folder(tmp_path):
    """part-*.parquet as pyarrow and Spark write them, with the metadata files Spark writes beside
    them (_SUCCESS, _committed_*, .crc checksums)."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    folder = tmp_path / "dataset"
    folder.mkdir()
    for i in range(2):
        pq.write_table(pa.Table.from_pylist(GOOD[i * 10:(i + 1) * 10]), folder / f"part-{i:05d}.parquet")
        (folder / f".part-{i:05d}.parquet.crc").write_bytes(b"crc\x00")
    (folder / "_SUCCESS").write_bytes(b"")
    (folder / "_committed_4711").write_text('{"added": []}')
    return folder


def test_strict_ignores_a_datasets_metadata_files(tmp_path, parquet_folder):
    code, err = run_cli(parquet_folder, "-o", tmp_path / "out", "--strict")
    assert code == 0, err
    s = summary(tmp_path / "out")
    assert s["input"] == 20 and s["skipped"] == 0 and s["ignored_files"] == []


def test_strict_counts_other_files_of_a_dataset_folder_as_skipped(tmp_path, parquet_folder):
    """A README.md and a notes.txt among the part files are not read; the run goes on and says
    so (exit 0), and under --strict they are skipped files: exit 1, each named."""
    (parquet_folder / "README.md").write_text("# The dataset's card\n")
    (parquet_folder / "notes.txt").write_text("collected in 2024\n")
    code, err = run_cli(parquet_folder, "-o", tmp_path / "lenient")
    assert code == 0, err
    ignored = [f["path"] for f in summary(tmp_path / "lenient")["ignored_files"]]
    assert ignored == [str(parquet_folder / "README.md"), str(parquet_folder / "notes.txt")]

    code, err = run_cli(parquet_folder, "-o", tmp_path / "strict", "--strict")
    assert code == exitcodes.SKIPPED == 1
    line = [ln for ln in err.splitlines() if "--strict" in ln]
    assert len(line) == 1 and "2 files of a dataset folder not read" in line[0]
    assert str(parquet_folder / "README.md") in line[0] and str(parquet_folder / "notes.txt") in line[0]
    s = summary(tmp_path / "strict")  # the outputs are written all the same
    assert s["input"] == 20 and s["skipped"] == 0 and len(s["ignored_files"]) == 2
    # --max-skipped limits skipped records; files left out of a dataset are --strict's alone
    code, err = run_cli(parquet_folder, "-o", tmp_path / "limit", "--max-skipped", "0")
    assert code == 0, err


def test_strict_counted_leaves_out_hidden_names():
    from neardup.io.read.sources import strict_counted

    listed = [{"path": p, "reason": "r"} for p in
              ("/d/README.md", "s3://b/d/_SUCCESS", "/d/.part-0.parquet.crc", "gs://b/d/notes.txt", "/d/_delta_log/",
               "/d/_year=2024/x.md")]
    assert [f["path"] for f in strict_counted(listed)] == ["/d/README.md", "gs://b/d/notes.txt", "/d/_year=2024/x.md"]
