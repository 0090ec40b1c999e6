"""Broder's sampled-shingle clustering (neardup.cluster.broder) against brute force on sets."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.cluster.broder import (containment, greedy_clusters, min_s_sample, mod_m_sample, resemblance,
                                    shared_sample_pairs)


def _layout(docs: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    ids = np.array([v for d in docs for v in sorted(set(d))], dtype=np.uint64)
    offsets = np.concatenate(([0], np.cumsum([len(set(d)) for d in docs]))).astype(np.int64)
    return ids, offsets


def _docs_of(values, offsets):
    return [values[offsets[d]:offsets[d + 1]].tolist() for d in range(offsets.size - 1)]


docs_strategy = st.lists(st.lists(st.integers(0, 60), max_size=25), max_size=25)


@settings(max_examples=200, deadline=None)
@given(docs=docs_strategy, m=st.integers(1, 7), s=st.integers(1, 9))
def test_samples_equal_their_definitions(docs, m, s):
    ids, offsets = _layout(docs)
    values, off = mod_m_sample(ids, offsets, m)
    assert _docs_of(values, off) == [sorted(v for v in set(d) if v % m == 0) for d in docs]
    values, off = min_s_sample(ids, offsets, s)
    assert _docs_of(values, off) == [sorted(set(d))[:s] for d in docs]


@settings(max_examples=200, deadline=None)
@given(docs=docs_strategy, cap=st.integers(2, 30))
def test_shared_sample_pairs_equal_brute_force(docs, cap):
    values, offsets = _layout(docs)
    i, j, count, stats = shared_sample_pairs(values, offsets, cap=cap)
    holders: dict[int, list[int]] = {}
    for d, doc in enumerate(docs):
        for v in set(doc):
            holders.setdefault(v, []).append(d)
    usable = {v for v, h in holders.items() if len(h) <= cap}
    want = {}
    for a, b in combinations(range(len(docs)), 2):
        shared = len(set(docs[a]) & set(docs[b]) & usable)
        if shared:
            want[(a, b)] = shared
    assert dict(zip(zip(i.tolist(), j.tolist()), count.tolist())) == want
    assert list(zip(i.tolist(), j.tolist())) == sorted(want)
    big = [len(h) for h in holders.values() if len(h) > cap]
    assert stats["capped_samples"] == len(big) and stats["capped_pairs"] == sum(g * (g - 1) // 2 for g in big)
    assert stats["samples"] == len(holders) and stats["shared_samples"] == sum(len(h) >= 2 for h in holders.values())


def test_estimates_from_counts():
    assert resemblance(np.array([5]), np.array([10]), np.array([10])).tolist() == [5 / 15]
    assert containment(np.array([5]), np.array([10])).tolist() == [0.5]
    assert resemblance(np.array([0]), np.array([0]), np.array([0])).tolist() == [0.0]


def test_greedy_joins_the_first_cluster_met_and_depends_on_order():
    # 0 and 1 share sample 7; 2 shares 9 with 1 (so joins 1's cluster, which is 0's); 3 is alone
    docs = [[7, 8], [7, 9], [9, 10], [11]]
    values, offsets = _layout(docs)
    assert greedy_clusters(values, offsets).tolist() == [0, 0, 0, 3]
    # the same documents in another order: 2 founds a cluster, 1 joins it through 9 (7 is not in
    # the table yet), and 0 joins through 7, which 1 put there
    order = [2, 1, 0, 3]
    values, offsets = _layout([docs[k] for k in order])
    assert greedy_clusters(values, offsets).tolist() == [0, 0, 0, 3]
    # order matters: a document that bridges two clusters joins the first and the rest stay apart
    docs = [[1], [2], [1, 2]]
    values, offsets = _layout(docs)
    assert greedy_clusters(values, offsets).tolist() == [0, 1, 0]
    values, offsets = _layout([[1, 2], [1], [2]])
    assert greedy_clusters(values, offsets).tolist() == [0, 0, 0]


def test_bad_arguments():
    ids, offsets = _layout([[1, 2]])
    with pytest.raises(ValueError, match="m must be"):
        mod_m_sample(ids, offsets, 0)
    with pytest.raises(ValueError, match="s must be"):
        min_s_sample(ids, offsets, 0)


def test_sampled_candidates_keep_pairs_near_the_threshold_and_drop_far_ones():
    from neardup.cluster.broder import sampled_candidates

    rng = np.random.default_rng(3)  # test data only
    base = rng.choice(1 << 40, 400, replace=False).astype(np.uint64)
    near = np.concatenate((base[:380], rng.choice(1 << 40, 20, replace=False).astype(np.uint64)))  # J ~ 0.9
    half = np.concatenate((base[:130], rng.choice(1 << 40, 270, replace=False).astype(np.uint64)))  # J ~ 0.19
    docs = [base, near, half]
    values = np.concatenate([np.sort(d) for d in docs])
    offsets = np.array([0, 400, 800, 1200])
    i, j, est, stats = sampled_candidates(values, offsets, 0.5)
    assert list(zip(i.tolist(), j.tolist())) == [(0, 1)] and est[0] == pytest.approx(380 / 420)
    assert stats["sample_pairs"] == 3 and stats["sample_pairs_kept"] == 1
    # containment: the small document inside the large one is kept, whatever their resemblance
    small = np.sort(base[:40])
    values = np.concatenate((np.sort(base), small))
    i, j, est, _ = sampled_candidates(values, np.array([0, 400, 440]), 0.8, measure="containment")
    assert (i.tolist(), j.tolist(), est.tolist()) == ([0], [1], [1.0])
    i, j, est, _ = sampled_candidates(values, np.array([0, 400, 440]), 0.8)
    assert i.size == 0  # resemblance 0.1


def _mutated_corpus(n_base=30, seed=11):
    import random

    from conftest import real_texts

    base = [t[:6000] for _, t in real_texts(limit=n_base, min_bytes=3000)]
    records = []
    for b, text in enumerate(base):
        records.append({"id": f"b{b}", "text": text})
        words = text.split()
        # one generator per base text: the mutations of one text do not depend on the others
        rng = random.Random(seed * 1_000_003 + b)
        for c, rate in enumerate((0.01, 0.03, 0.08)):
            w = list(words)
            for _ in range(max(1, int(len(w) * rate))):
                w[rng.randrange(len(w))] = f"x{rng.randrange(10**6)}"
            records.append({"id": f"b{b}-{c}", "text": " ".join(w)})
    return records


def _found_pairs(result, index):
    return {tuple(sorted((index[a], index[b]))) for a, b in zip(result.pairs.column("a").to_pylist(),
                                                                result.pairs.column("b").to_pylist())}


# A pair is "clear" of the threshold 0.8 at resemblance 0.9 or more: 18 bands of 7 rows miss it with
# probability (1 - 0.9**7)**18 < 1e-5, Broder's mod-5 samples of ~1,000 shingles with less.
CLEAR = 0.9


def check_broder_against_minhash(records, threshold=0.8):
    """What the test asserts, for one corpus; returns the figures (also for a sweep over seeds)."""
    import neardup
    from neardup.params import ShingleParams
    from neardup.shingle import shingle_set

    params = ShingleParams(k=5)
    sets = [shingle_set(r["text"], params) for r in records]
    jaccard = {(a, b): len(sets[a] & sets[b]) / len(sets[a] | sets[b])
               for a, b in combinations(range(len(records)), 2) if sets[a] and sets[b]}
    truth = {p for p, j in jaccard.items() if j >= threshold}
    assert len(truth) > 40
    result = neardup.dedup(records, method="broder", sample_mod=5, threshold=threshold)
    index = {r["id"]: n for n, r in enumerate(records)}
    found = _found_pairs(result, index)
    assert found <= truth  # verified exactly: no pair below the threshold
    # every pair the sketches can see: exact copies are settled by fingerprint before any sketch,
    # so the pairs that count are those among the first holders of each distinct text
    firsts = {}
    for n, r in enumerate(records):
        firsts.setdefault(r["text"], n)
    seen = set(firsts.values())
    sketchable = {(a, b) for a, b in truth if a in seen and b in seen}
    assert len(sketchable) > 40
    assert len(found) >= 0.97 * len(sketchable)
    kinds = result.summary["clusters"]["kinds"]
    assert kinds["clusters"] == result.summary["clusters"]["count"]
    assert kinds["identical"]["clusters"] + kinds["identical_or_similar"]["clusters"] == kinds["clusters"]
    assert kinds["identical_or_similar"]["documents"] >= 2 * kinds["identical_or_similar"]["clusters"]
    assert result.summary["samples"]["mod"] == 5 and result.summary["config"]["sample_mod"] == 5

    # The same records through MinHash. Both verify every candidate exactly, but each finds its
    # candidates by chance: near the threshold (a 3 % variant lands at J 0.80-0.85) 18x7 banding
    # misses a pair with probability 0.1-1.4 %. So the two are compared where theory gives them a
    # margin, never for equality at the threshold:
    other = neardup.dedup(records, threshold=threshold)
    config = other.summary["config"]
    bands, rows = config["bands"], config["rows"]
    minhash = _found_pairs(other, index)
    assert minhash <= truth
    # 1. they disagree only on pairs below CLEAR, and every clear pair is found by both
    clear = {p for p in sketchable if jaccard[p] >= CLEAR}
    assert len(clear) > 20
    assert clear <= found and clear <= minhash
    assert all(jaccard[p] < CLEAR for p in found ^ minhash)
    # 2. every clear pair's documents share a cluster in both outcomes (exact copies included)
    for outcome in (result.outcomes, other.outcomes):
        cluster = outcome.column("cluster").to_pylist()
        assert all(cluster[a] == cluster[b] for a, b in truth if jaccard[(a, b)] >= CLEAR)
    # 3. MinHash's recall is what the banding promises: a pair at resemblance J escapes 18x7
    # banding with probability (1 - J**rows)**bands; the number of escapes is the sum of these
    # independent trials (a Poisson-binomial), and more than `allowed` of them has odds < 1e-6
    escape = [(1 - jaccard[p] ** rows) ** bands for p in sketchable]
    odds = [1.0]  # odds[m]: the probability of exactly m escapes among the pairs so far
    for q in escape:
        odds = [(odds[m] if m < len(odds) else 0.0) * (1 - q) + (odds[m - 1] * q if m else 0.0)
                for m in range(len(odds) + 1)]
    allowed, tail = 0, 1.0 - odds[0]
    while tail > 1e-6:
        allowed += 1
        tail -= odds[allowed]
    missed = len(sketchable - minhash)
    assert missed <= allowed, (missed, allowed)
    return {"truth": len(truth), "sketchable": len(sketchable), "clear": len(clear), "broder": len(found),
            "missed": missed, "expected_missed": sum(escape), "allowed": allowed}


def test_dedup_method_broder_finds_the_exact_pairs_and_reports_the_experiment_table():
    check_broder_against_minhash(_mutated_corpus())


def test_dedup_method_greedy_is_the_one_pass_clustering_and_depends_on_order():
    import neardup

    # 0 and 2 share the first half of their words, 1 and 2 the second half; 0 and 1 nothing
    words = [f"w{n}" for n in range(400)]
    a, b = " ".join(words[:200]), " ".join(words[200:])
    records = [{"id": "a", "text": a}, {"id": "b", "text": b}, {"id": "ab", "text": a + " " + b}]
    k3 = neardup.ShingleParams(k=3)
    result = neardup.dedup(records, method="greedy", sample_mod=3, shingle=k3)
    # in this order the bridge joins one of the two clusters (that of its smallest sample already
    # in the table), and a and b stay apart
    got = result.outcomes.column("cluster").to_pylist()
    assert got[:2] == ["a", "b"] and got[2] in ("a", "b")
    # bridge first: a and b both join its cluster
    order = [records[2], records[0], records[1]]
    result = neardup.dedup(order, method="greedy", sample_mod=3, shingle=k3)
    assert result.outcomes.column("cluster").to_pylist() == ["ab", "ab", "ab"]
    assert result.summary["config"]["method"] == "greedy" and result.summary["samples"]["mod"] == 3
    # union-find over verified resemblance joins none of them at 0.8
    assert neardup.dedup(records, method="broder", sample_mod=3, shingle=k3).outcomes.column("reason").to_pylist() == \
        ["unique"] * 3


def test_dedup_method_broder_spilling_its_grouping_gives_the_in_memory_outcomes(monkeypatch):
    # the <sample, ID> list and the pair counts through partition files (a budget of ~50 KB, so
    # about a thousand records at a time), against the same run grouped in memory
    import neardup
    from neardup.engines.local.run import Deduplicator

    records = _mutated_corpus()
    want = neardup.dedup(records, method="broder", sample_mod=3, threshold=0.7)
    monkeypatch.setattr(Deduplicator, "GROUPING_MIN_MB", 0)
    got = neardup.dedup(records, method="broder", sample_mod=3, threshold=0.7, in_memory_mb=0.05)
    grouping = got.summary["samples"]["grouping"]
    assert grouping["samples"]["spilled_bytes"] > 0 and grouping["pairs"]["partitions_read"] > 1
    assert want.summary["samples"]["grouping"]["samples"]["spilled_bytes"] == 0
    assert got.outcomes.to_pylist() == want.outcomes.to_pylist()
    assert got.pairs.to_pylist() == want.pairs.to_pylist()
    assert got.summary["clusters"] == want.summary["clusters"]


def test_cli_method_broder_with_min_s_samples(tmp_path):
    # MIN_s from the command line: each document's S smallest ids, recorded in the summary and
    # the configuration; its verified pairs are exact, and it finds the clear-cut copies
    import json
    import subprocess
    import sys

    records = _mutated_corpus()
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "neardup", "dedup", str(inp), "-o", str(out), "--method", "broder",
                          "--sample", "min_s", "--sample-size", "40", "--threshold", "0.8", "--quiet"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["samples"]["kind"] == "min_s" and summary["samples"]["size"] == 40
    assert summary["config"]["sample"] == "min_s" and summary["config"]["sample_size"] == 40
    pairs = [json.loads(line) for line in (out / "pairs.jsonl").open()]
    assert pairs and all(p["jaccard"] >= 0.8 for p in pairs)
    bad = subprocess.run([sys.executable, "-m", "neardup", "dedup", str(inp), "-o", str(out), "--sample", "max_s"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "--sample" in bad.stderr
