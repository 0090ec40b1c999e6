"""The HTML quality benchmark's own arithmetic, and one run of it on the checked-in sample."""

import json
import os
import sys

import pytest
from pathlib import Path

BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks")
sys.path.insert(0, BENCH)

import html_quality as Q  # noqa: E402

SAMPLE = os.path.join(os.path.dirname(__file__), "..", "data", "html", "debian")


def _labels(*ids, held=()):
    return [{"id": i, "generator": i.split("/")[0], "held_out": i.split("/")[0] in held} for i in ids]


def test_score_counts_recall_precision_and_traps():
    labels = _labels("g/1", "g/2", "g/3", "g/4", "h/1", "h/2", held=("h",))
    pairs = {
        ("g/1", "g/2"): (0.9, 0.95),   # near-duplicate, merged below
        ("g/3", "g/4"): (0.86, 0.9),   # near-duplicate, missed
        ("h/1", "h/2"): (0.1, 0.85),   # trap, merged below
        ("g/1", "h/1"): (0.2, 0.9),    # cross-generator trap, apart
    }
    edges = [("g/2", "g/1"), ("h/1", "h/2"), ("g/1", "g/3")]  # the last is absent from pairs: J < 0.3
    cluster = {"g/1": "g/1", "g/2": "g/1", "g/3": "g/1", "g/4": "g/4", "h/1": "h/1", "h/2": "h/1"}
    counts = Q.score(labels, pairs, edges, cluster)
    overall = Q.rates(counts["overall"])
    assert (overall["pos"], overall["recall"]) == (2, 0.5)
    assert (overall["edges"], overall["edge_precision"]) == (3, round(1 / 3, 4))
    assert (overall["traps"], overall["trap_rate"]) == (2, 0.5)
    g = Q.rates(counts["g"])
    assert (g["recall"], g["edge_precision"], g["trap_rate"]) == (0.5, 0.5, None)
    held = Q.rates(counts["held-out"])
    assert (held["traps"], held["trap_rate"], held["pos"]) == (1, 1.0, 0)
    developed = Q.rates(counts["developed"])
    assert developed["traps"] == 0 and developed["pos"] == 2  # the cross pair is in neither group


def test_load_set_reads_sample():
    labels, pairs = Q.load_set(Path(SAMPLE))
    assert len(labels) == 40
    assert all(a < b for a, b in pairs)
    assert all(os.path.exists(Q.page_path(Path(SAMPLE), r)) for r in labels)


def test_one_run_on_the_sample(tmp_path, capsys):
    pytest.importorskip("cssselect")  # the truth selectors, for page agreement
    out = tmp_path / "q.json"
    assert Q.main(["--set", SAMPLE, "--extractors", "neardup", "--no-speed", "--json", str(out)]) == 0
    res = json.loads(out.read_text())["extractors"]["neardup"]["groups"]["overall"]
    assert res["pos"] >= 5 and res["traps"] >= 5
    assert res["recall"] == 1.0 and res["trap_rate"] == 0.0
    assert "| overall | neardup |" in capsys.readouterr().out
