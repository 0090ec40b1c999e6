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
from neardup.store import incremental

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


@pytest.fixture
def halves(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # sources are the inputs as given: short relative names
    docs = corpus(360)
    return write("A.jsonl", docs[:180]), write("B.jsonl", docs[180:]), docs


def test_against_equals_a_joint_run_record_for_record(tmp_path, halves):
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


def test_update_index_then_a_third_run_equals_the_joint_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
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

    monkeypatch.setattr(incremental, "WRITE_CHUNK", 20)
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
