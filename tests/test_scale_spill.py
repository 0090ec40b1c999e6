"""A run past its memory budget gives the same outputs, byte for byte, as one within it: band
keys grouped by partitioned spill (stages/candidates.py BandKeys), the held shingle ids and
signatures spilled and memory-mapped, the pairs measured in slices with their pages released
(pipeline.in_pair_slices), ids and outcomes in arrays (stages/columns.py)."""

import hashlib
import json

import numpy as np
import orjson

import neardup.pipeline as pipeline
from neardup.pipeline import DedupConfig, Deduplicator


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
    monkeypatch.setattr(pipeline, "PAIR_SLICE", 97)  # many slices
    monkeypatch.setattr(Deduplicator, "GROUPING_MIN_MB", 0.01)  # band keys past the budget
    monkeypatch.setattr(Deduplicator, "BAND_ROWS", 333)
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
