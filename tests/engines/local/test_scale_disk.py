"""The run's own disk check (Deduplicator._check_disk, neardup.engines.local.disk.work_disk_estimate): a run
whose work folder would not fit is refused before anything is written, with one line and exit 4."""

import os

import pytest

import orjson

from neardup.cli import main
from neardup.config import DedupConfig
from neardup.exitcodes import OUTPUT_ERROR
from neardup.engines.local.disk import work_disk_estimate


def _corpus(path, n=600):
    words = [f"w{k}" for k in range(300)]
    with open(path, "wb") as fh:
        for i in range(n):
            text = " ".join(words[(i * 7 + j * 13) % 300] for j in range(60))
            fh.write(orjson.dumps({"id": f"d{i}", "text": text}) + b"\n")


def test_estimate_counts_shingles_and_signatures(tmp_path):
    path = tmp_path / "c.jsonl"
    _corpus(path)
    est = work_disk_estimate([str(path)], DedupConfig())
    assert 450 <= est["records"] <= 750
    # 60 words give 56 distinct 5-shingles; 128 signature values
    assert 50 <= est["shingles_per_record"] <= 60
    # a MinHash run keeps its 128 signature values as uint32, and the shingle ids of the documents
    # in candidate pairs only (made again from a second read): counted for a quarter of them
    from neardup.engines.local.disk import CANDIDATE_SHARE, PER_RECORD_BYTES

    assert est["bytes_per_record"] == pytest.approx(4 * 128 + 8 * est["shingles_per_record"] * CANDIDATE_SHARE
                                                    + PER_RECORD_BYTES)
    exact = work_disk_estimate([str(path)], DedupConfig(method="exact"))
    assert exact["bytes_per_record"] < est["bytes_per_record"]
    assert est["kept_bytes"] == os.path.getsize(path)


def test_run_refused_when_the_disk_is_too_small(tmp_path, monkeypatch, capsys):
    # a full disk cannot be made here without privileges: the free space is what the check reads
    import neardup.io.write.outputs as outputs

    path, out = tmp_path / "c.jsonl", tmp_path / "out"
    _corpus(path)
    monkeypatch.setattr(outputs, "free_bytes", lambda p: 10_000)
    code = main(["dedup", str(path), "-o", str(out), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == OUTPUT_ERROR
    assert len(err) == 1 and "not enough disk for this run" in err[0] and "GB free" in err[0]
    assert not (out / "summary.json").exists() and not (out / "clusters.jsonl").exists()
    monkeypatch.undo()
    assert main(["dedup", str(path), "-o", str(out), "--quiet"]) == 0
    assert (out / "summary.json").exists()


def test_folder_inputs_are_checked_without_opening_the_folder(tmp_path):
    # a dataset folder (JSONL or Parquet shards) is not bounded from its first MB: the bound is
    # None and the run goes on to the sampled estimate, instead of opening the folder as a file
    from neardup.engines.local.disk import work_disk_bound

    folder = tmp_path / "shards"
    folder.mkdir()
    for k in range(2):
        _corpus(folder / f"part-{k}.jsonl", n=100)
    assert work_disk_bound([str(folder)], DedupConfig()) is None
    out = tmp_path / "out"
    assert main(["dedup", str(folder), "-o", str(out), "--quiet"]) == 0
    assert (out / "summary.json").exists()
