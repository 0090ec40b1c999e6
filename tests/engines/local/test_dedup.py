"""neardup dedup end to end on real and planted text: outputs, accounting, policies, determinism."""

import json
import os
import random
import subprocess
import sys

import numpy as np
import orjson
import pytest

from neardup import ShingleParams, jaccard, shingle_ids
from neardup.config import DedupConfig
from neardup.engines.local.run import Deduplicator

from conftest import real_texts


def mutate(text, rate, rng):
    words = text.split()
    for _ in range(max(1, int(len(words) * rate))):
        words[rng.randrange(len(words))] = f"edit{rng.randrange(10**6)}"
    return " ".join(words)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """Real copyright texts, plus exact copies (case/space changed) and lightly edited near-copies."""
    rng = random.Random(7)
    base = real_texts(limit=80, min_bytes=3000)
    records = []
    for path, text in base:
        records.append({"id": path, "text": text})
    truth_near = []
    for k, (path, text) in enumerate(base[:20]):
        copy_id = f"copy-{k}"
        if k % 2:
            records.append({"id": copy_id, "text": text.upper().replace(" ", "  ")})
        else:
            records.append({"id": copy_id, "text": mutate(text, 0.01, rng)})
            truth_near.append((path, copy_id))
    rng.shuffle(records)
    d = tmp_path_factory.mktemp("planted")
    p = d / "corpus.jsonl"
    with open(p, "wb") as fh:
        for r in records:
            fh.write(orjson.dumps(r) + b"\n")
    return str(p), records, truth_near


def load(out):
    rows = [json.loads(l) for l in open(os.path.join(out, "clusters.jsonl"))]
    pairs = [json.loads(l) for l in open(os.path.join(out, "pairs.jsonl"))]
    summary = json.load(open(os.path.join(out, "summary.json")))
    return rows, pairs, summary


def test_dedup_finds_planted_copies_and_accounts_for_everything(planted, tmp_path):
    path, records, truth_near = planted
    out = str(tmp_path / "out")
    summary = Deduplicator(DedupConfig(), jobs=2).run([path], out)
    rows, pairs, s = load(out)
    assert [r["id"] for r in rows] == [r["id"] for r in records]
    assert s["input"] == len(records) == len(rows)
    assert s["kept"] + s["exact_duplicates"] + s["near_duplicates"] + s["skipped"] == s["input"]
    assert s["exact_duplicates"] >= 10
    by_id = {r["id"]: r for r in rows}
    for orig, copy in truth_near:
        assert by_id[orig]["cluster"] == by_id[copy]["cluster"], (orig, copy)
    for r in rows:
        assert r["reason"] in ("unique", "kept", "exact", "near")
        if r["kept"]:
            assert r["cluster"] == r["id"] and r["duplicate_of"] is None
        else:
            assert r["duplicate_of"] == r["cluster"] and by_id[r["cluster"]]["kept"]
    # every edge is verified exactly
    texts = {r["id"]: r["text"] for r in records}
    for e in pairs:
        j = jaccard(shingle_ids(texts[e["a"]], ShingleParams(k=5)), shingle_ids(texts[e["b"]], ShingleParams(k=5)))
        assert e["jaccard"] == pytest.approx(j, abs=1e-6)
        assert j >= 0.8
    kept_lines = [json.loads(l) for l in open(os.path.join(out, "kept.jsonl"))]
    assert [k["id"] for k in kept_lines] == [r["id"] for r in rows if r["kept"]]
    assert summary["config"]["bands"] * summary["config"]["rows"] <= 128


def test_results_do_not_depend_on_jobs_or_batching(planted, tmp_path):
    path, _, _ = planted
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    Deduplicator(DedupConfig(), jobs=1).run([path], a)
    d = Deduplicator(DedupConfig(), jobs=2)
    d.BATCH_BYTES = 50_000  # many small batches
    d.run([path], b)
    assert open(os.path.join(a, "clusters.jsonl")).read() == open(os.path.join(b, "clusters.jsonl")).read()
    assert open(os.path.join(a, "pairs.jsonl")).read() == open(os.path.join(b, "pairs.jsonl")).read()


def test_spilling_to_disk_gives_the_same_outputs(planted, tmp_path):
    # with the default budget every batch's ids and signatures stay in memory; with a small one
    # the first batches stay and the rest spill to files that come back memory-mapped; with
    # none, all spill
    path, _, _ = planted
    outputs, spilled = [], []
    from neardup.params import IN_MEMORY_MB

    for budget_mb in (IN_MEMORY_MB, 0.1, 0):  # 0.1 MB: about half of what these ~100 texts spill with none
        out = str(tmp_path / f"budget-{budget_mb}")
        d = Deduplicator(DedupConfig(), jobs=2, in_memory_mb=budget_mb)
        d.BATCH_BYTES = 50_000
        d.AGAIN_BATCH_BYTES = 50_000  # the second read's shingle ids, in pieces the small budget partly holds
        summary = d.run([path], out)
        spilled.append(summary["spilled_mb"])
        outputs.append([open(os.path.join(out, name)).read() for name in ("clusters.jsonl", "pairs.jsonl", "kept.jsonl")])
    assert spilled[0] == 0 and 0 < spilled[1] < spilled[2]
    assert outputs[0] == outputs[1] == outputs[2]


def test_input_is_read_again_only_when_the_shingle_ids_pass_the_budget(planted, tmp_path):
    # ids that fit the memory budget are kept from the first pass (one read, as a small corpus
    # always was); past it they are dropped and the candidates' made again from a second read
    path, _, _ = planted
    from neardup.params import IN_MEMORY_MB

    second_reads = []

    class Counting(Deduplicator):
        def _ids_again(self, *args, **kwargs):
            second_reads.append(1)
            return super()._ids_again(*args, **kwargs)

    outputs = []
    for budget_mb, reads in ((IN_MEMORY_MB, 0), (0.2, 1), (0, 1)):
        second_reads.clear()
        out = str(tmp_path / f"budget-{budget_mb}")
        d = Counting(DedupConfig(), jobs=2, in_memory_mb=budget_mb)
        d.BATCH_BYTES = 50_000
        d.run([path], out)
        assert len(second_reads) == reads, budget_mb
        outputs.append([open(os.path.join(out, name)).read() for name in ("clusters.jsonl", "pairs.jsonl", "kept.jsonl")])
    assert outputs[0] == outputs[1] == outputs[2]


@pytest.mark.parametrize("method", ["minhash", "simhash", "exact"])
def test_jsonl_fast_path_and_python_reader_give_the_same_outputs(planted, tmp_path, monkeypatch, method):
    # the planted corpus plus lines the scanner leaves to the Python reader, and texts NFKC changes
    path, _, _ = planted
    mixed = tmp_path / "mixed.jsonl"
    extra = ['{"id": 5, "text": "ﬁne ligatures ½ and ´ acute, fullwidth ＡＢＣ"}', '{"id": "bad", "text": "\\ud800"}',
             '{"text": "no id, a text long enough to make some shingles of five words"}', "not json", "",
             '{"id": "esc", "text": "an escaped \\u00e9 and a pair \\ud83d\\ude00 in a text of words"}']
    lines = open(path, encoding="utf-8").read().splitlines()
    mixed.write_text("\n".join(lines[:30] + extra + lines[30:] + extra) + "\n", encoding="utf-8")
    cfg = DedupConfig(method=method)
    fast, slow = str(tmp_path / "fast"), str(tmp_path / "slow")
    Deduplicator(cfg, jobs=2).run([str(mixed)], fast)
    from neardup.io.read import jsonl as readers

    monkeypatch.setattr(readers, "_jsonl", None)
    Deduplicator(cfg, jobs=2).run([str(mixed)], slow)
    for name in ("clusters.jsonl", "pairs.jsonl", "kept.jsonl"):
        assert open(os.path.join(fast, name), "rb").read() == open(os.path.join(slow, name), "rb").read(), name
    sf, ss = (json.load(open(os.path.join(d, "summary.json"))) for d in (fast, slow))
    for key in ("input", "kept", "exact_duplicates", "near_duplicates", "skipped_by_reason", "candidate_pairs"):
        assert sf[key] == ss[key], key


@pytest.mark.parametrize("keep", ["longest", "shortest"])
def test_keep_policies(tmp_path, keep):
    text = " ".join(f"word{i}" for i in range(300))
    longer = text + " extra tail words here"
    p = tmp_path / "c.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in [{"id": "short", "text": text}, {"id": "long", "text": longer}]) + "\n")
    out = str(tmp_path / keep)
    Deduplicator(DedupConfig(keep=keep)).run([str(p)], out)
    rows, _, _ = load(out)
    survivor = "long" if keep == "longest" else "short"
    assert {r["id"]: r["kept"] for r in rows} == {"long": survivor == "long", "short": survivor == "short"}


def test_keep_by_numeric_field(tmp_path):
    text = " ".join(f"w{i}" for i in range(200))
    recs = [{"id": "a", "text": text, "score": 1}, {"id": "b", "text": text + " x", "score": 5},
            {"id": "c", "text": text + " y", "score": "n/a"}]
    p = tmp_path / "c.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    out = str(tmp_path / "o")
    Deduplicator(DedupConfig(keep="field", keep_field="score")).run([str(p)], out)
    rows, _, _ = load(out)
    assert [r["id"] for r in rows if r["kept"]] == ["b"]


def test_nothing_lost_on_bad_input(tmp_path):
    p = tmp_path / "bad.jsonl"
    big = "lorem ipsum dolor " * (50 * 1024 * 1024 // 18)
    lines = [
        json.dumps({"id": "ok1", "text": "a perfectly normal document with enough words in it"}),
        json.dumps({"id": "empty", "text": ""}),
        json.dumps({"id": "blank", "text": "   \n\t  "}),
        json.dumps({"id": "punct", "text": "!!! ... ???"}),
        "{not json",
        json.dumps({"id": "nofield", "body": "text under another key"}),
        json.dumps(["not", "an", "object"]),
        json.dumps({"id": "dup", "text": "first record with a duplicate id"}),
        json.dumps({"id": "dup", "text": "second record with a duplicate id"}),
        json.dumps({"id": 17, "text": "integer id"}),
        json.dumps({"text": "no id at all here"}),
        json.dumps({"id": "big", "text": big}),
    ]
    with open(p, "wb") as fh:
        for line in lines:
            fh.write(line.encode() + b"\n")
        fh.write(b'{"id": "junk", "text": "\xff\xfe\x00binary"}\n')
    out = str(tmp_path / "out")
    s = Deduplicator(DedupConfig()).run([str(p)], out)
    rows, _, _ = load(out)
    assert len(rows) == len(lines) + 1 == s["input"]
    assert s["kept"] + s["exact_duplicates"] + s["near_duplicates"] + s["skipped"] == s["input"]
    src = f"{p}:"
    # two records sharing the id "dup" share its cluster count (2), so both are "kept";
    # the 50 MB record is under the 64 MiB default --max-bytes, so it is read and unique
    assert [(r["id"], r["reason"]) for r in rows] == [
        ("ok1", "unique"), ("empty", "skipped:empty"), ("blank", "skipped:empty"), ("punct", "skipped:empty"),
        (src + "5", "skipped:bad_json"), ("nofield", "skipped:missing_text"), (src + "7", "skipped:not_an_object"),
        ("dup", "kept"), ("dup", "kept"), ("17", "unique"), (src + "11", "unique"), ("big", "unique"),
        (src + "13", "skipped:undecodable"),
    ]
    assert s["skipped_by_reason"] == {"bad_json": 1, "empty": 3, "missing_text": 1, "not_an_object": 1,
                                      "undecodable": 1}


def test_simhash_and_exact_methods(planted, tmp_path):
    path, records, truth_near = planted
    for method in ("exact", "simhash"):
        out = str(tmp_path / method)
        s = Deduplicator(DedupConfig(method=method)).run([path], out)
        rows, pairs, _ = load(out)
        assert s["kept"] + s["exact_duplicates"] + s["near_duplicates"] + s["skipped"] == s["input"]
        assert s["exact_duplicates"] >= 10
        if method == "exact":
            assert s["near_duplicates"] == 0 and pairs == []
        else:
            by_id = {r["id"]: r for r in rows}
            found = sum(by_id[a]["cluster"] == by_id[b]["cluster"] for a, b in truth_near)
            assert found >= len(truth_near) // 2


def test_cli_dedup_and_evaluate(planted, tmp_path):
    path, _, _ = planted
    out = str(tmp_path / "cli")
    r = subprocess.run([sys.executable, "-m", "neardup", "dedup", path, "-o", out, "--quiet"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "neardup", "evaluate", out, path, "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    ev = json.loads(r.stdout)
    assert ev["recall_at_0.85_or_more"] == 1.0
    assert ev["edges_below_threshold"] == 0
    bad = subprocess.run([sys.executable, "-m", "neardup", "dedup", "/no/such.jsonl", "-o", out], capture_output=True, text=True)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr and bad.stderr.count("\n") == 1


def test_oracle_matches_brute_force():
    from neardup.evaluate import all_pairs, shingle_runs

    rng = random.Random(3)
    base = [t for _, t in real_texts(limit=15, min_bytes=1500)]
    texts = base + [mutate(t, rate, rng) for t, rate in zip(base, [0.02, 0.05, 0.1, 0.2, 0.3] * 3)]
    params = ShingleParams(k=3)
    ids, offsets = shingle_runs(texts, params)
    i, j, sim = all_pairs(ids, offsets, 0.5)
    got = {(a, b): s for a, b, s in zip(i.tolist(), j.tolist(), sim.tolist())}
    sets = [ids[offsets[k]:offsets[k + 1]] for k in range(len(texts))]
    want = {}
    for a in range(len(texts)):
        for b in range(a + 1, len(texts)):
            s = jaccard(sets[a], sets[b])
            if s >= 0.5:
                want[(a, b)] = s
    assert got.keys() == want.keys()
    for k in want:
        assert got[k] == pytest.approx(want[k])


def test_candidate_pairs_equal_brute_force():
    """Every pair sharing a band key within the bucket window, each once, sorted by (i, j)."""
    from neardup.cluster.candidates import candidate_pairs

    rng = np.random.default_rng(3)  # test data only
    keys = rng.integers(0, 40, size=(300, 6), dtype=np.uint64)  # many collisions, buckets of ~8
    ci, cj, stats = candidate_pairs(keys, window=64)
    expected = sorted({(a, b) for a in range(300) for b in range(a + 1, 300) if (keys[a] == keys[b]).any()})
    assert list(zip(ci.tolist(), cj.tolist())) == expected
    assert stats["buckets_over_window"] == 0
    none_i, none_j, _ = candidate_pairs(np.arange(20, dtype=np.uint64).reshape(10, 2))
    assert none_i.size == none_j.size == 0


def test_kept_ids_are_views_of_the_new_documents_ids():
    from types import SimpleNamespace

    from neardup.engines.local.sketching import _kept_ids

    rng = np.random.default_rng(11)  # test data only
    counts = rng.integers(0, 6, size=40)
    ids = np.arange(counts.sum(), dtype=np.uint64)
    offsets = np.concatenate(([0], np.cumsum(counts)))
    cuts = [0, 7, 8, 8, 25, 40]  # kernel chunks of whole documents, one of them empty
    parts = tuple(ids[offsets[a] : offsets[b]] for a, b in zip(cuts, cuts[1:]))
    sig = SimpleNamespace(id_parts=parts, offsets=offsets)
    for new in (np.ones(40, bool), np.zeros(40, bool), rng.random(40) < 0.7, rng.random(40) < 0.2):
        pieces = list(_kept_ids(sig, new))
        got = np.concatenate(pieces) if pieces else np.empty(0, np.uint64)
        assert got.tolist() == ids[np.repeat(new, counts)].tolist()
        assert all(p.base is not None and p.size for p in pieces)  # views, no empty ones


def test_one_engine_run_twice_reads_each_runs_own_inputs(tmp_path):
    # the second run's inputs are its own: more of them than the first run had, other names
    def corpus(name, n):
        p = tmp_path / f"{name}.jsonl"
        p.write_text("".join(json.dumps({"id": f"{name}{k}", "text": f"{name} words {k} " * 20}) + "\n"
                             for k in range(n)))
        return str(p)

    engine = Deduplicator(DedupConfig())
    first = engine.run([corpus("a", 2), corpus("b", 2)], str(tmp_path / "first"))
    assert first["input"] == 4
    inputs = [corpus("c", 2), corpus("d", 3), corpus("e", 1)]
    second = engine.run(inputs, str(tmp_path / "second"))
    assert second["input"] == 6
    rows, _, _ = load(str(tmp_path / "second"))
    assert {r["id"]: r["source"] for r in rows} == {
        **{f"c{k}": inputs[0] for k in range(2)}, **{f"d{k}": inputs[1] for k in range(3)}, "e0": inputs[2]}


def test_keep_source_with_several_better_copies_in_one_batch():
    """keep="source": when two copies of one text from ever better sources follow their holder in
    one batch, the second competes with the first (which took the holder's place), not with the
    holder replaced; the best source survives and every other copy points at it."""
    import neardup

    text = " ".join(f"word{i} plain{i % 7}" for i in range(60))
    records = [{"id": "a", "text": text, "site": "c"}, {"id": "b", "text": text, "site": "b"},
               {"id": "c", "text": text, "site": "a"}, {"id": "d", "text": "something else " * 20, "site": "c"}]
    result = neardup.dedup(records, source_field="site", keep="source", keep_sources=("a", "b", "c"))
    rows = {r["id"]: r for r in result.outcomes.to_pylist()}
    assert [i for i, r in rows.items() if r["kept"]] == ["c", "d"]
    assert {i: (r["duplicate_of"], r["reason"]) for i, r in rows.items() if not r["kept"]} == {
        "a": ("c", "exact"), "b": ("c", "exact")}
