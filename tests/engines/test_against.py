"""dedup --save-index / --against / --update-index on real SQLite files, and sources.

The reference is always a joint run: ``dedup A B`` (two inputs, so records carry sources). For
the records of B, ``dedup A --save-index`` then ``dedup B --against`` must give the same lines of
clusters.jsonl and the same verified pairs.
"""

from __future__ import annotations

import json
import random

import pytest

from neardup import DedupConfig
from neardup.cli import main
from neardup.store import SeenIndex
from neardup.engines import against
from neardup import config
from neardup.store import run_records

VOCAB = [f"w{i}" for i in range(4000)]


def corpus(n: int, seed: int = 7) -> list[dict]:
    """Near copies (a few words changed), exact copies (punctuation and case), chains (copies of
    copies) and unique texts, mixed so that both halves hold members of the same clusters."""
    rng = random.Random(seed)
    bases = [" ".join(rng.choice(VOCAB) for _ in range(150)) for _ in range(n // 6)]
    docs = []
    for i in range(n):
        r = rng.random()
        if r < 0.25:
            text = " ".join(rng.choice(VOCAB) for _ in range(150))
        elif r < 0.35 and docs:
            text = rng.choice(docs)["text"].upper() + "!"  # an exact copy of an earlier record
        elif r < 0.5 and docs:
            words = rng.choice(docs)["text"].split()  # a copy of an earlier record, changed
            for _ in range(rng.randint(1, 8)):
                words[rng.randrange(len(words))] = rng.choice(VOCAB)
            text = " ".join(words)
        else:
            words = rng.choice(bases).split()
            for _ in range(rng.randint(0, 12)):
                words[rng.randrange(len(words))] = rng.choice(VOCAB)
            text = " ".join(words)
        docs.append({"id": f"d{i}", "text": text})
    return docs


def write(path, docs) -> str:
    with open(path, "w", encoding="utf-8") as fh:
        for d in docs:
            fh.write(json.dumps(d) + "\n")
    return str(path)


def lines(path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def run(*argv) -> int:
    return main(["dedup", *map(str, argv), "-q"])


@pytest.fixture(params=["runs", "rows and runs", "rows"])
def layout(request, monkeypatch):
    """How ``--save-index`` lays its band postings out: every write in posting runs (as a bulk
    save does), small writes in rows and bulk ones in runs (as the default does from 1,000
    documents; here from 100, so that these tests' saves are runs and their smaller updates
    rows), or rows only (indexes made before the runs)."""
    if request.param == "runs":
        monkeypatch.setitem(config.INDEX_DEFAULTS, "rows_below", 0)
    elif request.param == "rows and runs":
        monkeypatch.setitem(config.INDEX_DEFAULTS, "rows_below", 100)
    elif request.param == "rows":
        monkeypatch.setitem(config.INDEX_DEFAULTS, "posting_runs", False)
    return request.param


@pytest.fixture
def halves(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # sources are the inputs as given: short relative names
    docs = corpus(360)
    return write("A.jsonl", docs[:180]), write("B.jsonl", docs[180:]), docs


def test_against_equals_a_joint_run_record_for_record(tmp_path, halves, layout):
    a, b, _ = halves
    assert run(a, "-o", "outA", "--save-index", "A.db") == 0
    assert run(b, "-o", "outB", "--against", "A.db") == 0
    assert run(a, b, "-o", "joint") == 0
    joint = [r for r in lines("joint/clusters.jsonl") if r["source"] == "B.jsonl"]
    mine = lines("outB/clusters.jsonl")
    assert len(mine) == 180 and mine == joint
    # the corpus exercises every way a new record meets the index
    assert {r["reason"] for r in mine} >= {"unique", "kept", "exact", "near"}
    assert any(r["duplicate_of_source"] == "A.jsonl" and r["reason"] == "exact" for r in mine)
    assert any(r["duplicate_of_source"] == "A.jsonl" and r["reason"] == "near" for r in mine)
    b_ids = {r["id"] for r in mine}
    joint_pairs = [p for p in lines("joint/pairs.jsonl") if p["a"] in b_ids or p["b"] in b_ids]
    # ids repeat across the halves only through the corpus's own naming (d0..d359 are distinct)
    assert sorted(map(json.dumps, lines("outB/pairs.jsonl"))) == sorted(map(json.dumps, joint_pairs))
    assert any(p["a"] not in b_ids for p in joint_pairs)  # pairs across the halves exist


@pytest.mark.parametrize("ratio", [0.0, float("inf")])  # scanned, looked up
def test_update_index_then_a_third_run_equals_the_joint_run(tmp_path, monkeypatch, ratio, layout):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(against.Against, "SCAN_AFTER", ratio)
    monkeypatch.setattr(against.Against, "SCAN_RECORDS_PER_DOCUMENT", ratio)
    docs = corpus(360, seed=11)
    a, b, c = write("A.jsonl", docs[:120]), write("B.jsonl", docs[120:240]), write("C.jsonl", docs[240:])
    assert run(a, "-o", "o1", "--save-index", "seen.db") == 0
    assert run(b, "-o", "o2", "--against", "seen.db", "--update-index") == 0
    assert run(c, "-o", "o3", "--against", "seen.db") == 0
    assert run(a, b, "-o", "jab") == 0
    assert run(a, b, c, "-o", "jabc") == 0
    assert lines("o2/clusters.jsonl") == [r for r in lines("jab/clusters.jsonl") if r["source"] == "B.jsonl"]
    assert lines("o3/clusters.jsonl") == [r for r in lines("jabc/clusters.jsonl") if r["source"] == "C.jsonl"]
    summary = json.load(open("o2/summary.json"))
    with SeenIndex(tmp_path / "seen.db", create=False) as index:
        added = summary["index"]["documents_added"]
        assert len(index) == json.load(open("o1/summary.json"))["index"]["documents_saved"] + added
        # every kept record and every near duplicate is added; exact copies are not
        assert summary["kept"] <= added <= summary["input"] - summary["exact_duplicates"] - summary["skipped"]


def test_update_index_is_one_transaction(tmp_path, halves, monkeypatch):
    a, b, _ = halves
    assert run(a, "-o", "outA", "--save-index", "A.db") == 0
    with SeenIndex("A.db", create=False) as index:
        before = (len(index), index.ids())
    calls = []
    real = SeenIndex._insert_columns

    def failing(self, conn, ids, *args, **kw):
        calls.append(len(ids))
        if len(calls) == 3:  # after two chunks are in the transaction
            raise OSError("disk gone")
        return real(self, conn, ids, *args, **kw)

    monkeypatch.setattr(run_records, "WRITE_CHUNK", 20)
    monkeypatch.setattr(SeenIndex, "_insert_columns", failing)
    with pytest.raises(OSError, match="disk gone"):
        run(b, "-o", "outB", "--against", "A.db", "--update-index")
    monkeypatch.setattr(SeenIndex, "_insert_columns", real)
    with SeenIndex("A.db", create=False) as index:
        assert (len(index), index.ids()) == before
        assert index.integrity_check() == "ok"
    assert run(b, "-o", "outB", "--against", "A.db", "--update-index") == 0
    with SeenIndex("A.db", create=False) as index:
        assert len(index) > before[0]


def test_index_of_other_parameters_is_refused_naming_both(tmp_path, halves, capsys):
    a, b, _ = halves
    assert run(a, "-o", "outA", "--save-index", "A.db") == 0
    capsys.readouterr()
    assert run(b, "-o", "outB", "--against", "A.db", "--threshold", "0.9") == 2
    err = capsys.readouterr().err
    assert "other parameters than the dedup run" in err and "threshold: index 0.8, dedup run 0.9" in err
    assert err.count("\n") == 1
    assert run(b, "-o", "outB", "--update-index") == 2
    assert "--update-index needs --against" in capsys.readouterr().err


def test_against_refuses_an_index_without_shingle_ids(tmp_path, halves, capsys):
    a, b, docs = halves
    with SeenIndex.for_dedup("plain.db", DedupConfig()) as index:
        index.add_many([(d["id"], d["text"]) for d in docs[:50]])
    assert run(b, "-o", "outB", "--against", "plain.db") == 2
    assert "holds no shingle ids" in capsys.readouterr().err


def test_sources_two_inputs_with_the_same_ids(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    texts = [" ".join(random.Random(i).choice(VOCAB) for _ in range(80)) for i in range(3)]
    write("old.jsonl", [{"id": "d0", "text": texts[0]}, {"id": "d1", "text": texts[1]}])
    write("new.jsonl", [{"id": "d0", "text": texts[0] + "!"}, {"id": "d1", "text": texts[2]}])
    assert run("old.jsonl", "new.jsonl", "-o", "out") == 0
    got = lines("out/clusters.jsonl")
    assert [(r["id"], r["source"], r["reason"], r["duplicate_of"], r["duplicate_of_source"]) for r in got] == [
        ("d0", "old.jsonl", "kept", None, None), ("d1", "old.jsonl", "unique", None, None),
        ("d0", "new.jsonl", "exact", "d0", "old.jsonl"), ("d1", "new.jsonl", "unique", None, None)]
    assert json.load(open("out/summary.json"))["duplicate_ids"] == 0  # unique within each source
    # --keep source: the preferred source survives
    assert run("old.jsonl", "new.jsonl", "-o", "pref", "--keep", "source:new.jsonl,old.jsonl") == 0
    got = {(r["source"], r["id"]): r for r in lines("pref/clusters.jsonl")}
    assert got[("new.jsonl", "d0")]["kept"] and got[("old.jsonl", "d0")]["duplicate_of_source"] == "new.jsonl"


def test_source_field_and_single_input_lines(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = " ".join(random.Random(1).choice(VOCAB) for _ in range(80))
    write("one.jsonl", [{"id": "x", "text": text, "site": "s1"}, {"id": "x", "text": text, "site": "s2"}])
    assert run("one.jsonl", "-o", "plain") == 0
    # one input and no source field: the lines of every earlier version, without a source
    assert list(lines("plain/clusters.jsonl")[0]) == ["id", "cluster", "kept", "duplicate_of", "similarity",
                                                        "reason"]
    assert run("one.jsonl", "-o", "sited", "--source-field", "site", "--keep", "source:s2") == 0
    got = lines("sited/clusters.jsonl")
    assert [(r["source"], r["kept"], r["duplicate_of_source"]) for r in got] == [("s1", False, "s2"),
                                                                                   ("s2", True, None)]


def test_api_result_carries_sources_as_the_cli_does(tmp_path, monkeypatch):
    import neardup

    monkeypatch.chdir(tmp_path)
    docs = corpus(60, seed=5)
    records = [dict(d, site="a" if i % 2 else "b") for i, d in enumerate(docs)]
    write("sited.jsonl", records)
    assert run("sited.jsonl", "-o", "out", "--source-field", "site", "--keep", "source:a") == 0
    result = neardup.dedup(records, source_field="site", keep="source", keep_sources=("a",))
    assert result.outcomes.column_names == ["id", "source", "cluster", "kept", "duplicate_of", "duplicate_of_source",
                                            "similarity", "reason"]
    assert result.outcomes.to_pylist() == lines("out/clusters.jsonl")
    assert any(r["duplicate_of_source"] == "a" for r in result.outcomes.to_pylist())


# -- the look-ups: joined, or matched against one scan of the postings ------------------------

def _count_calls(monkeypatch, cls, name) -> list:
    """Calls of ``cls.name`` (the real method still runs)."""
    calls = []
    real = getattr(cls, name)

    def counted(self, *args, **kw):
        calls.append(1)
        return real(self, *args, **kw)

    monkeypatch.setattr(cls, name, counted)
    return calls


@pytest.mark.parametrize("ratio, most, joins, scans, streams", [
    (float("inf"), None, "all", 0, 0), (0.0, None, 0, 1, 0), (0.5, None, "some", 1, 0),
    (0.0, 0, 0, 0, 1), (0.5, 0, "some", 0, 1)])
def test_against_looked_up_scanned_or_streamed_equals_the_joint_run(tmp_path, monkeypatch, layout, ratio, most,
                                                                     joins, scans, streams):
    """Looked up batch by batch, scanned from the first batch on, or looked up until the
    batches' band keys reach half the index's postings (and their records half its documents,
    for the content fingerprints) and then scanned; with a scan that may hold no posting, the
    keys kept for one pass at the end instead: B's lines as the joint run's."""
    from neardup.engines.local.run import Deduplicator
    from neardup.io.read import jsonl as readers

    monkeypatch.chdir(tmp_path)
    docs = corpus(600, seed=3)
    a, b = write("A.jsonl", docs[:300]), write("B.jsonl", docs[300:])
    assert run(a, "-o", "outA", "--save-index", "A.db") == 0
    assert run(a, b, "-o", "joint") == 0
    monkeypatch.setattr(readers, "JSONL_BLOCK_BYTES", 1 << 14)  # B read in small blocks,
    monkeypatch.setattr(Deduplicator, "BATCH_BYTES", 20_000)  # sketched in about ten batches
    # (every way of reading a posting at one cost: the scan starts once the keys reach `ratio`
    # of the postings, whatever the layout)
    for name in ("JOIN_SECONDS_A_BUCKET", "SCAN_SECONDS_A_ROW", "SCAN_SECONDS_A_RUN_POSTING"):
        monkeypatch.setattr(against.Against, name, 1e-6)
    monkeypatch.setattr(against.Against, "LOOKUP_SECONDS_A_RUN", 0.0)
    monkeypatch.setattr(against.Against, "SCAN_AFTER", ratio)
    monkeypatch.setattr(against.Against, "SCAN_RECORDS_PER_DOCUMENT", ratio)
    if most is not None:
        monkeypatch.setattr(against.Against, "SCAN_MAX_POSTINGS", most)
    joined = _count_calls(monkeypatch, against.Against, "_bucket_postings")
    scanned = _count_calls(monkeypatch, against.Against, "_scanned_postings")
    streamed = _count_calls(monkeypatch, against.Against, "_streamed_postings")
    fingerprints = _count_calls(monkeypatch, against.Against, "_scanned_fingerprints")
    assert run(b, "-o", "outB", "--against", "A.db") == 0
    assert (len(scanned), len(streamed)) == (scans, streams)
    assert len(fingerprints) == (0 if most == 0 or ratio == float("inf") else 1)
    assert any(r["reason"] == "exact" and r["duplicate_of_source"] == "A.jsonl" for r in lines("outB/clusters.jsonl"))
    if joins == "all":
        assert len(joined) >= 5
    elif joins == "some":
        assert 1 <= len(joined) <= 8
    else:
        assert not joined
    assert lines("outB/clusters.jsonl") == [r for r in lines("joint/clusters.jsonl") if r["source"] == "B.jsonl"]
    b_ids = {r["id"] for r in lines("outB/clusters.jsonl")}
    joint_pairs = [p for p in lines("joint/pairs.jsonl") if p["a"] in b_ids or p["b"] in b_ids]
    assert sorted(map(json.dumps, lines("outB/pairs.jsonl"))) == sorted(map(json.dumps, joint_pairs))


def test_scan_and_join_take_the_same_oldest_documents_of_a_full_bucket(tmp_path, monkeypatch, layout):
    """Many indexed copies of a few texts (buckets past a small cap): the look-ups, the scan and
    the pass at the end give each bucket the same oldest documents, so the same outcomes and
    pairs."""
    monkeypatch.chdir(tmp_path)
    base = corpus(12, seed=9)
    docs = [{"id": f"a{i}", "text": base[i % 6]["text"] + f" x{i}"} for i in range(120)]
    new = [{"id": f"b{i}", "text": base[i % 6]["text"] + f" y{i}"} for i in range(30)]
    a, b = write("A.jsonl", docs), write("B.jsonl", new)
    assert run(a, "-o", "outA", "--save-index", "A.db") == 0
    assert run(b, "-o", "uncapped", "--against", "A.db") == 0
    monkeypatch.setattr(SeenIndex, "CANDIDATES_PER_BUCKET", 3)
    got = _each_way(monkeypatch, b)
    assert got["joined"] == got["scanned"] == got["streamed"]
    uncapped = json.load(open("uncapped/summary.json"))["index"]
    assert got["joined"][2]["against_candidate_pairs"] < uncapped["against_candidate_pairs"]  # the cap held
    assert any(r["duplicate_of_source"] == "A.jsonl" for r in lines("joined/clusters.jsonl"))


def _each_way(monkeypatch, new: str) -> dict:
    """``dedup new --against A.db`` with its keys looked up, scanned and streamed: each way's
    clusters.jsonl, pairs.jsonl (bytes) and the summary's index figures."""
    got = {}
    for name, ratio, most in (("joined", float("inf"), None), ("scanned", 0.0, None), ("streamed", 0.0, 0)):
        monkeypatch.setattr(against.Against, "SCAN_AFTER", ratio)
        if most is not None:
            monkeypatch.setattr(against.Against, "SCAN_MAX_POSTINGS", most)
        assert run(new, "-o", name, "--against", "A.db") == 0
        got[name] = (open(f"{name}/clusters.jsonl", "rb").read(), open(f"{name}/pairs.jsonl", "rb").read(),
                     json.load(open(f"{name}/summary.json"))["index"])
    return got


def test_replaced_documents_do_not_take_a_full_buckets_places(tmp_path, monkeypatch, layout):
    """Re-crawled pages (the same source and id, another text) replace indexed ones: the posting
    runs keep the postings of the old texts, and these must not count among a bucket's oldest
    documents. The oldest copies of a few texts are replaced by unrelated ones; with a cap of 3
    a bucket, the new records still find the oldest copies left, each way of reading the index."""
    monkeypatch.chdir(tmp_path)
    base = corpus(12, seed=9)
    docs = [{"id": f"a{i}", "text": base[i % 6]["text"] + f" x{i}"} for i in range(120)]
    rng = random.Random(21)
    replaced = [{"id": f"a{i}", "text": " ".join(rng.choice(VOCAB) for _ in range(150)), "src": "A.jsonl"}
                for i in range(60)]
    new = [{"id": f"b{i}", "text": base[i % 6]["text"] + f" y{i}"} for i in range(30)]
    a, r, b = write("A.jsonl", docs), write("R.jsonl", replaced), write("B.jsonl", new)
    assert run(a, "-o", "outA", "--save-index", "A.db") == 0
    assert run(r, "-o", "outR", "--against", "A.db", "--update-index", "--source-field", "src") == 0
    with SeenIndex("A.db", create=False) as index:
        assert len(index) == 120
    monkeypatch.setattr(SeenIndex, "CANDIDATES_PER_BUCKET", 3)
    got = _each_way(monkeypatch, b)
    assert got["joined"] == got["scanned"] == got["streamed"]
    found = [rec for rec in lines("joined/clusters.jsonl") if rec["duplicate_of_source"] == "A.jsonl"]
    assert len(found) == 30 and all(int(rec["duplicate_of"][1:]) >= 60 for rec in found)


def test_bucket_pairs_are_a_buckets_first_documents():
    """_bucket_pairs against its definition, over every key and over the keys that the scan's
    map of buckets keeps (which must keep every key whose bucket holds a posting)."""
    import numpy as np

    from neardup.store.schema import DOC_BITS, band_buckets

    rng = np.random.default_rng(5)
    keys = rng.integers(0, 2**63, size=(400, 6), dtype=np.uint64)
    keys[50:60] = keys[0]  # records sharing every bucket
    buckets = band_buckets(keys)
    # indexed documents in some of the keys' buckets (several in a few) and in others, some of
    # those sharing their low bits (but not the bucket) with a key's
    near = buckets[rng.integers(0, 400, 40), rng.integers(0, 6, 40)] ^ (rng.integers(1, 8, 40) << 30)
    chosen = np.concatenate([buckets[rng.integers(0, 400, 300), rng.integers(0, 6, 300)],
                             np.repeat(buckets[0, :2], 7), rng.integers(0, 2**35, 200), near])
    docs = rng.integers(0, 5000, chosen.size)
    postings = np.unique((chosen.astype(np.int64) << DOC_BITS) | docs)
    held = against._Held(postings)
    flat = buckets.ravel()
    maybe = held.maybe(flat)
    holding = set((postings >> DOC_BITS).tolist())
    assert {k for k, b in enumerate(flat.tolist()) if b in holding} <= set(maybe.tolist())
    assert maybe.size < flat.size
    for cap in (1, 3, 1000):
        by_bucket: dict = {}
        for p in postings.tolist():
            by_bucket.setdefault(p >> DOC_BITS, []).append(p & ((1 << DOC_BITS) - 1))
        want = sorted({(r, d) for r in range(400) for bk in buckets[r].tolist() for d in by_bucket.get(bk, [])[:cap]})
        for candidates in (None, (flat[maybe], maybe)):
            rows, nums = against._bucket_pairs(keys, postings, cap, candidates=candidates)
            assert list(zip(rows.tolist(), nums.tolist())) == want
    assert len(want) > 300


def test_clusters_with_sources_the_same_bytes_from_the_arrays(tmp_path, monkeypatch):
    """clusters.jsonl of a run against an index, assembled from its columns, byte for byte what
    the writer of a dict a line gives; ids and source names that JSON escapes included."""
    from neardup.io.write import result_lines

    monkeypatch.chdir(tmp_path)
    docs = corpus(240, seed=13)
    odd = ['q"uote', "back\\slash", "tab\there", "é ü ∂", "ctl\x01", "nul\x00l"]
    for k, d in enumerate(docs):
        d["id"] = odd[k % len(odd)] + str(k)
    a, b = write('A "one".jsonl', docs[:120]), write("B\\two.jsonl", docs[120:])
    assert run(a, "-o", "outA", "--save-index", "A.db") == 0
    assembled = []
    real = result_lines.cluster_chunks
    monkeypatch.setattr(result_lines, "cluster_chunks", lambda *args, **kw: assembled.append(1) or real(*args, **kw))
    assert run(b, "-o", "arrays", "--against", "A.db") == 0
    assert assembled  # (the lines came from the arrays)
    monkeypatch.setattr(result_lines, "available", lambda *args, **kw: False)
    assert run(b, "-o", "dicts", "--against", "A.db") == 0
    got = open("arrays/clusters.jsonl", "rb").read()
    assert got == open("dicts/clusters.jsonl", "rb").read()
    rows = [json.loads(line) for line in got.splitlines()]
    assert {r["source"] for r in rows} == {"B\\two.jsonl"}
    assert any(r["duplicate_of_source"] == 'A "one".jsonl' for r in rows)
    assert any(r["duplicate_of"] is None for r in rows) and any("\x00" in r["id"] for r in rows)
