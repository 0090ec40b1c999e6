"""neardup plan: its predictions against the real neardup dedup run on a generated corpus.

The corpus is benchmarks/scale.py's (random Zipf text, 5% of documents with a planted near-copy
right after them). Tolerances, as the planner states them for samples of this size: documents
within 5%, candidate and verified pairs within a factor of 2, peak memory within a factor of 2,
spill within a factor of 2 or both zero. Time is predicted but never checked here (the machine's
load decides it; benchmarks/plan_check.py reports it).
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from neardup import DedupConfig, exitcodes
from neardup.cli.plan import local_engine
from neardup.plan import plan, sample_inputs, scale_pairs

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from scale import generate, run_sampled  # noqa: E402

DOCS = 80_000
SAMPLE = 16_000  # a fifth of the corpus: the pairs model has to extrapolate


def neardup(*args, check=True):
    done = subprocess.run([sys.executable, "-m", "neardup", *map(str, args)], capture_output=True, text=True)
    if check and done.returncode:
        pytest.fail(f"neardup {' '.join(map(str, args))} exited {done.returncode}: {done.stderr}")
    return done


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("plan") / "corpus.jsonl"
    generate(path, DOCS, 0.05, 1)
    return path


@pytest.fixture(scope="module")
def shuffled(corpus) -> Path:
    """The same records in a random order: each planted copy far from its original."""
    lines = corpus.read_bytes().splitlines(keepends=True)
    order = np.random.default_rng(7).permutation(len(lines))  # test data only
    path = corpus.with_name("shuffled.jsonl")
    path.write_bytes(b"".join(lines[i] for i in order))
    return path


def lines_of(path: Path) -> int:
    with open(path, "rb") as fh:
        return sum(1 for _ in fh)


def within_factor(predicted: float, measured: float, factor: float = 2.0) -> bool:
    return measured / factor <= predicted <= measured * factor


def plan_and_run(path: Path, tmp_path: Path, *options) -> tuple[dict, dict]:
    """The plan, and the real run's summary with its peak resident memory as sampled from outside
    (``peak_rss_mb``): the summary's own ``peak_memory_mb`` is the process's ``ru_maxrss``, which
    on Linux counts the parent's resident memory at the fork before exec (this test process)."""
    predicted = json.loads(neardup("plan", path, "--json", "--sample-records", SAMPLE, *options).stdout)
    out = tmp_path / "out"
    memory = run_sampled([sys.executable, "-m", "neardup", "dedup", str(path), "-o", str(out), "--quiet",
                          *map(str, options)], every=0.02)
    summary = json.loads((out / "summary.json").read_text())
    return predicted, dict(summary, peak_rss_mb=memory["peak_rss_mb"], peak_anonymous_mb=memory["peak_anonymous_mb"])


def check_against(predicted: dict, summary: dict) -> None:
    assert abs(predicted["documents"] - summary["input"]) <= 0.05 * summary["input"], (predicted["documents"],
                                                                                        summary["input"])
    assert within_factor(predicted["candidate_pairs"], summary["candidate_pairs"]), predicted["basis"]
    assert within_factor(predicted["verified_pairs"], summary["verified_pairs"]), predicted["basis"]
    assert within_factor(predicted["peak_memory_mb"], summary["peak_rss_mb"]), (summary["peak_rss_mb"],
                                                                               predicted["basis"])
    assert within_factor(predicted["peak_anonymous_mb"], summary["peak_anonymous_mb"]), (
        summary["peak_anonymous_mb"], predicted["basis"]["peak_anonymous_mb"])
    spilled = summary["spilled_mb"] * (1 << 20)
    if spilled == 0:
        assert predicted["spill_bytes"] == 0, predicted["basis"]["spill_bytes"]
    else:
        assert within_factor(predicted["spill_bytes"], spilled), (predicted["spill_bytes"], spilled)


def test_plan_predicts_the_run(corpus, tmp_path):
    predicted, summary = plan_and_run(corpus, tmp_path)
    check_against(predicted, summary)
    assert summary["candidate_pairs"] > 1000  # the corpus has copies to find: the pair check means something
    assert predicted["sample"]["inputs"][0]["how"] == "spread"
    assert 0.15 < predicted["sample"]["fraction"] < 0.25
    # copies next to their originals: found in proportion to the sampled fraction
    assert predicted["model"]["candidate_pairs"]["exponent"] < 1.3
    for key in ("documents", "candidate_pairs", "verified_pairs", "peak_memory_mb", "spill_bytes", "seconds"):
        low, high = predicted["ranges"][key]
        assert low <= predicted[key] <= high, key
    # the predicted time is reported, never asserted here: it is checked against a real run only
    # in benchmarks/plan_check.py (a unit test must pass on a fast idle and a loaded slow machine)
    assert predicted["assumptions"]


def test_plan_predicts_the_spill(corpus, tmp_path):
    predicted, summary = plan_and_run(corpus, tmp_path, "--in-memory-mb", 16)
    assert summary["spilled_mb"] > 0
    check_against(predicted, summary)


def test_plan_finds_spread_copies_scale_as_the_square(shuffled, tmp_path):
    predicted, summary = plan_and_run(shuffled, tmp_path)
    check_against(predicted, summary)
    model = predicted["model"]["verified_pairs"]
    assert model["exponent"] > 1.6, model


def test_a_small_input_is_planned_from_all_of_it(corpus, tmp_path):
    path = tmp_path / "small.jsonl"
    path.write_bytes(b"".join(corpus.read_bytes().splitlines(keepends=True)[:3000]))
    predicted, summary = plan_and_run(path, tmp_path)
    assert predicted["model"]["sample_is_whole_input"]
    assert predicted["documents"] == summary["input"] == 3000
    assert predicted["candidate_pairs"] == summary["candidate_pairs"] > 0
    assert predicted["verified_pairs"] == summary["verified_pairs"]
    assert within_factor(predicted["peak_memory_mb"], summary["peak_rss_mb"])


def test_plan_prints_a_table(corpus):
    out = neardup("plan", corpus, "--sample-records", 8000).stdout
    for name in ("documents", "candidate pairs", "verified pairs", "peak memory", "spill disk", "wall time"):
        assert name in out
    assert "machine:" in out


def test_compressed_input_is_sampled_as_a_prefix(corpus, tmp_path):
    path = tmp_path / "corpus.jsonl.gz"
    with gzip.open(path, "wb", compresslevel=1) as fh:
        fh.write(corpus.read_bytes())
    s = sample_inputs([str(path)], DedupConfig(), 8000)
    assert s.inputs[0].how == "prefix" and s.inputs[0].codec == "gzip"
    assert abs(s.documents - DOCS) <= 0.05 * DOCS, s.documents
    # the sample written for the engine keeps the compression
    paths, n = s.write(str(tmp_path / "sample"))
    assert Path(paths[0]).read_bytes()[:2] == b"\x1f\x8b" and n == s.records


def test_several_inputs_are_sampled_in_proportion_to_their_size(corpus, tmp_path):
    lines = corpus.read_bytes().splitlines(keepends=True)
    cut = len(lines) // 4
    small, large = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    small.write_bytes(b"".join(lines[:cut]))
    large.write_bytes(b"".join(lines[cut:]))
    s = sample_inputs([str(small), str(large)], DedupConfig(), 8000)
    a, b = s.inputs
    assert a.how == b.how == "spread"
    assert 0.8 < (b.records / a.records) / (large.stat().st_size / small.stat().st_size) < 1.25
    assert abs(a.records_estimated - cut) <= 0.05 * cut
    assert abs(s.documents - len(lines)) <= 0.05 * len(lines)


def test_parquet_rows_are_counted_from_the_footer(corpus, tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    import orjson

    rows = [orjson.loads(line) for line in corpus.read_bytes().splitlines()]
    path = tmp_path / "corpus.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=2000)
    s = sample_inputs([str(path)], DedupConfig(), 8000)
    assert s.inputs[0].how == "spread" and s.documents == len(rows)
    assert 0.7 * 8000 <= s.records <= 1.3 * 8000


def test_a_small_machine_gets_warnings_and_the_budget_to_use(corpus, tmp_path):
    config = DedupConfig()
    default = plan([str(corpus)], config, engine=local_engine(), sample_records=SAMPLE, jobs=2)
    assert default["suggested_in_memory_mb"] is None
    avail = default["peak_anonymous_mb"] * 0.9  # a machine without room for the default run's own memory
    # planned from the same sample runs (a second measurement of the same sample can find another
    # anonymous peak, sampled every 20 ms, and this machine's advice is about the first's)
    small = plan([str(corpus)], config, engine=local_engine(), sample_records=SAMPLE, jobs=2,
                 machine={"memory_available_mb": avail, "tmpdir_free_bytes": 1}, runs=default["runs"])
    for key in ("documents", "peak_memory_mb", "peak_anonymous_mb", "spill_bytes", "candidate_pairs"):
        assert small[key] == default[key], key  # the same predictions: only the advice differs
    suggested = small["suggested_in_memory_mb"]
    assert suggested is not None and suggested < 512, small["warnings"]
    assert any(f"--in-memory-mb {suggested}" in w for w in small["warnings"])
    assert any("TMPDIR" in w for w in small["warnings"])  # what a smaller budget spills does not fit in 1 byte
    # the advice, run: its anonymous memory is what the plan said it would be (and under the
    # memory given when the plan found a budget that fits)
    out = tmp_path / "out"
    memory = run_sampled([sys.executable, "-m", "neardup", "dedup", str(corpus), "-o", str(out), "--quiet",
                          "--jobs", "2", "--in-memory-mb", str(suggested)], every=0.02)
    assert json.loads((out / "summary.json").read_text())["spilled_mb"] > 0
    assert within_factor(small["anonymous_mb_with_suggestion"], memory["peak_anonymous_mb"]), (memory, small)
    if suggested > 0:
        assert memory["peak_anonymous_mb"] <= avail, (memory, avail, small["warnings"])
    else:
        assert any("split the input" in w for w in small["warnings"])


def test_pair_model_reads_the_exponent_from_the_two_counts():
    local = scale_pairs(0.1, 100, 0.2, 200)
    assert local["predicted"] == pytest.approx(1000) and local["exponent"] == pytest.approx(1.0)
    spread = scale_pairs(0.1, 10, 0.2, 40)
    assert spread["predicted"] == pytest.approx(1000) and spread["exponent"] == pytest.approx(2.0)
    mixed = scale_pairs(0.1, 100 + 10, 0.2, 200 + 40)  # 1000 local and 1000 spread pairs
    assert 1 < mixed["exponent"] < 2 and 1000 < mixed["predicted"] < 2000 <= mixed["high"]
    assert mixed["low"] < mixed["predicted"] < mixed["high"]
    none = scale_pairs(0.1, 0, 0.2, 0)
    assert none["predicted"] == 0 and none["high"] > 0  # none seen is not none there
    whole = scale_pairs(0.5, 7, 1.0, 12)
    assert whole["predicted"] == whole["low"] == whole["high"] == 12


@pytest.mark.parametrize("args, says, status", [
    (["missing.jsonl"], "missing.jsonl", exitcodes.INPUT_ERROR),  # as neardup dedup says it
    (["{corpus}", "--engine", "spark"], "local engine", exitcodes.USAGE),
    (["-"], "standard input", exitcodes.USAGE),
    (["{folder}"], "samples JSONL and Parquet", exitcodes.USAGE),
])
def test_bad_input_is_one_line_and_its_status(args, says, status, corpus, tmp_path):
    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / "a.txt").write_text("some text of a page")
    done = neardup("plan", *[a.format(corpus=corpus, folder=folder) for a in args], check=False)
    assert done.returncode == status, done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("neardup: error:") and says in lines[0], done.stderr


def test_the_anonymous_parts_follow_the_engine_structures():
    """Two of the parts the plan adds are the engine's own rules: the fingerprint table's slots
    at its last growth (filled here for real), and arrays that double as the engine's do."""
    import numpy as np

    from neardup.stages.columns import Growable
    from neardup.stages.exact import FingerprintTable

    table, peak = FingerprintTable(), 0
    fps = (np.arange(1, 200_001, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) | np.uint64(1)
    for lo in range(0, fps.size, 10_000):
        before = table.nbytes
        table.insert(fps[lo:lo + 10_000], np.arange(lo, lo + 10_000))
        # while it grows, the old slots are held beside the new ones
        peak = max(peak, table.nbytes + (before if table.nbytes != before else 0))
    assert FingerprintTable.peak_bytes_for(fps.size) == peak
    column = Growable(np.int64)
    for k in range(5000):
        column.append(k)
    assert Growable.slots_for(5000) == column._data.size  # noqa: SLF001 - the rule against the array
