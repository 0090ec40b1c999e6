"""The simhash-vs-MinHash benchmark harness (benchmarks/simhash_vs_minhash.py) on a tiny corpus:
real copyright files plus planted edits; checks the table's invariants, not its numbers."""

import importlib.util
from collections import Counter
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from conftest import real_texts

pytest.importorskip("scipy")

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "simhash_vs_minhash.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("simhash_vs_minhash", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _planted(texts):
    """(texts with planted edits, [(original, rearranged)] index pairs)."""
    out = list(texts)
    rearranged = []
    rng = np.random.default_rng(7)
    for d, t in enumerate(texts[:24]):
        kind = d % 4
        if kind == 0:  # paragraphs in another order: same word counts, shingles change at the seams
            paras = [p for p in t.split("\n\n") if p.strip()]
            if len(paras) < 3:
                continue
            out.append("\n\n".join(paras[1:] + paras[:1]))
            rearranged.append((d, len(out) - 1))
        elif kind == 1:  # a few scattered word substitutions
            w = t.split()
            for q in rng.choice(len(w), size=max(1, len(w) // 80), replace=False).tolist():
                w[q] = "planted"
            out.append(" ".join(w))
        elif kind == 2:  # the last tenth cut off
            out.append(t[: int(len(t) * 0.9)])
        else:  # a short paragraph appended
            out.append(t + "\n\nThis copy was mirrored by an automated process for testing purposes.")
    out.append(texts[0].upper())  # an exact duplicate after normalization
    return out, rearranged


@pytest.fixture(scope="module")
def corpus():
    texts = [t[:8000] for _, t in real_texts(limit=32, min_bytes=1500)]
    assert len(texts) == 32  # tests/data/texts ships 420
    return _planted(texts)


def test_table_invariants(bench, corpus):
    texts, rearranged = corpus
    ids = [f"d{i}" for i in range(len(texts))]
    ids, texts_u, dropped = bench.collapse_exact(ids, texts, 1)
    assert dropped["exact_duplicates"] >= 1 and len(texts_u) == len(texts) - dropped["exact_duplicates"] - dropped["empty"]
    r = bench.compare(texts_u, check_simhash=20, check_pairs=20)
    truth = r["truth"]
    assert truth["jaccard>=0.8"] >= 1 and truth["cosine>=0.95"] >= 1
    assert truth["cosine>=0.95"] <= truth["cosine>=0.9"]
    assert r["truth_overlap"]["cosine>=0.95 & cosine>=0.9"] == truth["cosine>=0.95"]
    rows = {row["method"]: row for row in r["rows"]}
    assert [f"simhash k={k}" for k in range(7)] == [row["method"] for row in r["rows"][:7]]
    for row in r["rows"]:
        for name, s in row["scores"].items():
            tp = s["true_positives"]
            assert 0 <= tp <= min(row["pairs"], truth[name])
            for v in (s["precision"], s["recall"]):
                assert v is None or 0.0 <= v <= 1.0
            if row["pairs"]:
                assert s["precision"] * row["pairs"] == pytest.approx(tp)
            assert s["recall"] * truth[name] == pytest.approx(tp)
        if row["family"] == "simhash":
            assert sum(row["pairs_by_distance"]) == row["pairs"]
    sim = [rows[f"simhash k={k}"] for k in range(7)]
    for a, b in pairwise(sim):
        assert a["pairs"] <= b["pairs"]
        for name in truth:
            assert a["scores"][name]["recall"] <= b["scores"][name]["recall"]
            assert a["scores"][name]["true_positives"] <= b["scores"][name]["true_positives"]
    cand, est, ver = rows["MinHash LSH candidates"], rows["MinHash estimate >= 0.8"], rows["MinHash + verification"]
    assert est["pairs"] <= cand["pairs"] and ver["pairs"] <= cand["pairs"]
    assert ver["scores"]["jaccard>=0.8"]["precision"] == 1.0
    for name in truth:
        assert ver["scores"][name]["recall"] <= cand["scores"][name]["recall"]
    # the planted rearrangements: identical word counts, so identical simhash (k = 0 finds them)
    assert rearranged
    assert sim[0]["scores"]["cosine>=0.95"]["true_positives"] >= len(rearranged)
    table = bench.format_table(r)
    assert sum(line.startswith("| ") for line in table.splitlines()) == len(r["rows"]) + 1


def test_vectorised_simhash_and_cosine(bench, corpus):
    from neardup.exact.similarity import cosine
    from neardup.sketch.simhash import SimHash
    from neardup.text.tokenize import words

    texts, rearranged = corpus
    texts = texts[:16] + [texts[b] for _, b in rearranged]
    counts, vocab = bench.word_counts(texts)
    fps = bench.simhashes(counts, vocab)
    assert [int(f) for f in fps] == [SimHash.from_text(t).value for t in texts]
    i, j, c = bench.cosine_pairs(counts, 0.5, dense_cols=50, chunk=7)  # both parts, several chunks
    got = {(a, b): v for a, b, v in zip(i.tolist(), j.tolist(), c.tolist())}
    bags = [Counter(words(t)) for t in texts]
    for a in range(len(texts)):
        for b in range(a + 1, len(texts)):
            ref = cosine(bags[a], bags[b])
            if ref >= 0.5 + 1e-9:
                assert got[(a, b)] == pytest.approx(ref, abs=1e-9)
            elif ref < 0.5 - 1e-9:
                assert (a, b) not in got
