"""A run past its memory budget gives the same outputs, byte for byte, as one within it: band
keys grouped by partitioned spill (stages/candidates.py BandKeys), the held shingle ids and
signatures spilled and memory-mapped, the pairs measured in slices with their pages released
(engines.local.memory.in_pair_slices), ids and outcomes in arrays (stages/columns.py)."""

import hashlib
import json

import numpy as np
import orjson

from neardup.config import DedupConfig
from neardup.engines.local import memory
from neardup.engines.local.run import Deduplicator


def _corpus(path, n=3000, seed=5):
    rng = np.random.default_rng(seed)  # test data only
    vocab = [f"w{k}" for k in range(2000)]
    lines = []
    for i in range(n):
        words = rng.integers(0, len(vocab), size=int(rng.integers(30, 90)))
        lines.append({"id": f"d{i}", "text": " ".join(vocab[w] for w in words)})
        if i % 7 == 0:  # a near copy: one word in forty changed
            edited = words.copy()
            edited[:: 40] = rng.integers(0, len(vocab), size=edited[::40].size)
            lines.append({"id": f"d{i}-near", "text": " ".join(vocab[w] for w in edited)})
        if i % 11 == 0:
            lines.append({"id": f"d{i}-exact", "text": lines[-1]["text"]})
        if i % 97 == 0:
            lines.append({"id": f"d{i}", "text": "a repeated id with its own text " + str(i)})  # a shared id
    with open(path, "wb") as fh:
        for r in lines:
            fh.write(orjson.dumps(r) + b"\n")
    return len(lines)


def _digests(out):
    return {name: hashlib.md5((out / name).read_bytes()).hexdigest()
            for name in ("clusters.jsonl", "pairs.jsonl", "kept.jsonl")}


def test_spilled_run_is_byte_identical(tmp_path, monkeypatch):
    corpus = tmp_path / "c.jsonl"
    n = _corpus(corpus)
    Deduplicator(DedupConfig()).run([str(corpus)], str(tmp_path / "held"))
    monkeypatch.setattr(memory, "PAIR_SLICE", 97)  # many slices
    monkeypatch.setattr(Deduplicator, "GROUPING_MIN_MB", 0.01)  # band keys past the budget
    monkeypatch.setattr(memory, "BAND_ROWS", 333)
    Deduplicator(DedupConfig(), in_memory_mb=0).run([str(corpus)], str(tmp_path / "spilled"))
    held, spilled = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("held", "spilled"))
    assert _digests(tmp_path / "held") == _digests(tmp_path / "spilled")
    assert "band_grouping" not in held and spilled["band_grouping"]["bands"]["spilled_bytes"] > 0
    assert spilled["spilled_mb"] > held["spilled_mb"] == 0
    for s in (held, spilled):  # every record accounted for
        assert s["input"] == n == s["kept"] + s["exact_duplicates"] + s["near_duplicates"] + s["skipped"]
        assert s["duplicate_ids"] == 31 and s["near_duplicates"] > 250 and s["exact_duplicates"] > 200
    assert held["clusters"] == spilled["clusters"] and held["candidate_pairs"] == spilled["candidate_pairs"]
    lines = (tmp_path / "held" / "clusters.jsonl").read_bytes().splitlines()
    assert len(lines) == n


def _mapped_rss_in(folder) -> int:
    """Resident bytes of this process's mappings of files under ``folder`` (/proc/self/smaps)."""
    total, inside = 0, False
    with open("/proc/self/smaps") as fh:
        for line in fh:
            head = line.split()
            if head and not head[0].endswith(":"):  # a mapping's first line: range perms offset dev inode [path]
                inside = len(head) >= 6 and head[5].startswith(str(folder))
            elif inside and head[0] == "Rss:":
                total += int(head[1]) * 1024
    return total


def test_a_spilled_run_holds_a_bounded_stretch_of_its_mapped_spill(tmp_path, monkeypatch):
    """The spilled sketches' pages a run holds resident are let go in stretches: right before a
    release (the stretch at its largest) they are within memory.mapped_resident_bound, what the
    planner counts as file-backed memory, though the spill is many times larger. (Before the
    stretches were sized by the grains a slice's rows lie in, this run held 7 MB of an 8 MB spill
    where the bound was 0.9 MB.)"""
    import os
    import sys

    if not sys.platform.startswith("linux") or not os.path.exists("/proc/self/smaps"):
        import pytest

        pytest.skip("reads /proc/self/smaps")
    corpus = tmp_path / "c.jsonl"
    _corpus(corpus, n=60000)
    # a stretch of two grains (the grain is the kernel's, not patched: a smaller one than it maps
    # would be a wrong bound), and copies both next to their originals and spread (the shared ids)
    monkeypatch.setattr(memory, "MAPPED_PASS_BYTES", 2 * memory.MAPPING_GRAIN)
    monkeypatch.setattr(memory, "PAIR_SLICE", 4097)
    monkeypatch.setattr(memory, "BAND_ROWS", 333)
    out = tmp_path / "out"
    seen, releases = [], [0]
    real_release = memory.release_pages

    def measured_release(arrays):
        releases[0] += 1
        if releases[0] % 16 == 1:  # a sample of the releases: reading smaps takes milliseconds
            seen.append(_mapped_rss_in(out))
        real_release(arrays)

    monkeypatch.setattr(memory, "release_pages", measured_release)
    summary = Deduplicator(DedupConfig(), in_memory_mb=0).run([str(corpus)], str(out))
    row_bytes = DedupConfig().minhash.num_perm * 4
    spilled = summary["spilled_mb"] * (1 << 20)
    bound = memory.mapped_resident_bound(row_bytes)
    assert spilled > 3 * bound  # the spill is far past the stretch: the bound means something
    assert len(seen) > 10 and max(seen) > 0, seen  # releases happened, with pages resident before them
    assert max(seen) <= bound, (max(seen), bound)
