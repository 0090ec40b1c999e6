"""Ids found through a 31-bit key (schema 6): one copy of each id in the file, answers as before.

Schema 5 and earlier made ids unique with a ``UNIQUE (id, source)`` index, a second copy of
every id (137 of a lean document's 307 bytes on the benchmark corpus, whose ids are file paths).
Schema 6 stores an id once and finds it through ``docs.id_key`` (``schema.id_keys``) and the
``docs_id`` index; the rows a key finds are compared on id and source. Tested here: the id
index's size, every operation by id with every id forced onto one key, repeated ids within one
``dedup --save-index`` run, and files of schema 5 (``tests/data/index/make_schema5.py``) opening,
answering and taking writes in their own layout.
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from pathlib import Path

import pytest

from neardup.cli import main
from neardup.store import SeenIndex, schema
from neardup.store import rows as store_rows  # the module that keys ids (patched below)
from neardup.store import ids

import numpy as np

DATA = Path(__file__).resolve().parent.parent / "data" / "index"
VOCAB = [f"w{i}" for i in range(3000)]


def text(rng: random.Random, n: int = 40) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(n))


def url(i: int) -> str:
    return f"https://www.example.org/archive/2026/section-{i % 7}/articles/page-{i:06d}-of-the-long-url.html"


@pytest.fixture
def one_key(monkeypatch):
    """Every id of every source on the same hash: look-ups must still tell ids apart."""
    def constant(source, ids):
        return np.full(len(list(ids)), 0x9E3779B97F4A7C15, dtype=np.uint64)

    monkeypatch.setattr(store_rows, "id_hashes", constant)
    return constant


def test_keys_are_stable_and_depend_on_source_and_id():
    hashes = ids.id_hashes("", ["a", "b", "https://example.org/"])
    assert hashes.tolist() == ids.id_hashes("", ["a", "b", "https://example.org/"]).tolist()
    assert len(set(hashes.tolist())) == 3
    assert ids.id_hashes("A.jsonl", ["a"])[0] != ids.id_hashes("B.jsonl", ["a"])[0]
    # the format: XXH3-64 (seeded) of source NUL id; row keys its top 32 bits less 2**31, run
    # buckets its top 35 bits. A change here makes old files' keys wrong.
    import xxhash
    h = xxhash.xxh3_64_intdigest(b"\0a", schema.ID_KEY_SEED)
    assert int(hashes[0]) == h
    assert ids.row_keys(hashes[:1]) == [(h >> 32) - 2 ** 31] and -2 ** 31 <= ids.row_keys(hashes)[1] < 2 ** 31
    assert int(ids.run_buckets(hashes[:1])[0]) == h >> 29


def test_the_run_key_filter_is_a_superset_that_catches_up(tmp_path):
    """A second writer (another process, here another SeenIndex on the file) adds ids between two
    bulk writes of the first: the first's filter catches up and replaces them, not duplicates."""
    rng = random.Random(7)
    path = tmp_path / "x.db"
    with SeenIndex(path, profile="lean") as first, SeenIndex(path, create=False) as second:
        first.add_many([(url(i), text(rng)) for i in range(1000)])
        second.add_many([(url(i), text(rng)) for i in range(1000, 2000)])  # (its own filter)
        first.add_many([(url(i), text(rng)) for i in range(500, 1500)])  # replaces 500 of each
        assert len(first) == 2000 == len(set(first.ids()))
        flt = first._run_key_filter
        conn = first._conn()
        every = ids.keys32(ids.id_hashes("", [url(i) for i in range(2000)]))
        assert flt.may_hold(every).all()
        # what it saw before its own last write, which the next write's refresh reads back
        assert flt.seen_last == 2000 < int(conn.execute("SELECT value FROM meta WHERE key = 'last_num'").fetchone()[0])
        # new ids are mostly not held (a 32-bit key: about one in 2**32 by chance)
        assert not flt.may_hold(ids.keys32(ids.id_hashes("", [url(i) for i in range(5000, 6000)]))).any()


def test_the_run_key_filter_answers_few_false_positives_at_its_capacity():
    """At its capacity (16 bits a key) the Bloom filter holds every key it was given and says
    "may hold" for about 0.2 % of others (a block of two 64-bit words, four bits in each: one
    word with five bits at 12 bits a key said it for 1 %, with six at 16 bits 0.4 %); half full,
    far fewer."""
    rng = np.random.default_rng(11)
    keys = rng.integers(0, 1 << 32, size=400_000, dtype=np.uint64).astype(np.uint32)
    held, others = keys[:200_000], keys[200_000:]
    others = others[~np.isin(others, held)]
    flt = ids.RunKeyFilter()
    flt.capacity = held.size
    flt.words = np.zeros(held.size * flt.BITS_PER_KEY // 64, dtype=np.uint64)
    flt._add(held[:100_000])
    half = flt.may_hold(others).mean()
    flt._add(held[100_000:])
    assert flt.may_hold(held).all()
    full = flt.may_hold(others).mean()
    assert full < 0.003 and half < full / 5, (half, full)
    assert flt.words.nbytes == 200_000 * 16 // 8


def test_the_run_key_filter_is_made_again_when_the_index_outgrows_it(tmp_path, monkeypatch):
    monkeypatch.setattr(ids.RunKeyFilter, "MIN_CAPACITY", 1500)
    rng = random.Random(12)
    with SeenIndex(tmp_path / "x.db", profile="lean") as index:
        index.add_many([(url(i), text(rng)) for i in range(1000)])
        index.add_many([(url(i), text(rng)) for i in range(1000, 2000)])  # the filter: 1,500 keys
        flt = index._run_key_filter
        assert flt.capacity == 1500 and flt.seen_last == 1000
        index.add_many([(url(i), text(rng)) for i in range(1500, 3500)])  # 2,000 numbered: made again
        assert flt.capacity == int(2000 * flt.GROWTH) and flt.seen_last == 2000
        index.add_many([(url(i), text(rng)) for i in range(3000, 4000)])  # 500 replaced: made again
        assert flt.capacity == int(4000 * flt.GROWTH)  # (numbers, not documents: the replaced keep theirs)
        assert flt.may_hold(ids.keys32(ids.id_hashes("", [url(i) for i in range(3500)]))).all()
        assert len(index) == 4000 == len(set(index.ids()))


@pytest.mark.parametrize("profile", ["lean", "default"])
def test_an_id_is_stored_once(tmp_path, profile):
    rng = random.Random(1)
    n = 3000
    with SeenIndex(tmp_path / "x.db", profile=profile) as index:
        index.add_many([(url(i), text(rng)) for i in range(n)])
        index.checkpoint()
    conn = sqlite3.connect(tmp_path / "x.db")
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert "docs_id" in names and not any(x.startswith("sqlite_autoindex_docs") for x in names)
    id_bytes = sum(len(url(i)) for i in range(n))
    pages = dict(conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"))
    # a bulk write's keys in an id run (about 5 bytes a document), none in docs_id; schema 5's
    # UNIQUE index held the whole id again (87 bytes here)
    assert pages["docs_id"] <= 4096 and conn.execute("SELECT count(id_key) FROM docs").fetchone()[0] == 0
    run_bytes = conn.execute("SELECT sum(length(data)) FROM posting_blocks WHERE kind = 3").fetchone()[0]
    assert run_bytes < 6 * n < id_bytes / 10
    assert conn.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION == 7
    conn.close()


@pytest.mark.parametrize("profile", ["lean", "default"])
def test_every_operation_by_id_with_every_id_on_one_key(tmp_path, one_key, profile):
    rng = random.Random(2)
    docs = [(url(i), text(rng)) for i in range(1200)]  # a bulk write (runs, packed rows)
    with SeenIndex(tmp_path / "x.db", profile=profile) as index:
        index.add_many(docs)
        index.add_many([(url(5), docs[9][1]), ("short", text(rng))])  # a replacement and a small write
        assert len(index) == 1201
        assert index.get(url(5))["fingerprint"] == index.get(url(9))["fingerprint"]
        assert url(5) in index and url(1200) not in index and "short" in index
        assert sorted(index.query(docs[9][1])["exact"]) == sorted([url(5), url(9)])
        assert index.remove(url(9)) and not index.remove(url(9))
        assert index.query(docs[9][1])["exact"] == [url(5)]
        assert index.remove_many([url(1), url(2), "nope"]) == ["nope"]  # (the ids not found)
        assert url(1) not in index and url(3) in index and len(index) == 1198
        got = index.check_and_add(url(3), docs[4][1])  # re-crawled under its id, now a copy of 4
        assert got["exact"] == [url(4)] and not got["added"]
        assert index.ids().count(url(3)) == 1
        assert index.integrity_check() == "ok"


@pytest.mark.parametrize("profile", ["lean", "default"])
def test_a_bulk_write_replaces_ids_of_small_writes_and_of_runs(tmp_path, profile):
    """A bulk write looks its ids up in docs_id only when a small write put a key there; either
    way every id it repeats is replaced, whichever kind of write stored it."""
    rng = random.Random(3)
    with SeenIndex(tmp_path / "x.db", profile=profile) as index:
        index.add_many([(url(i), text(rng)) for i in range(1500)])  # runs only: docs_id empty
        conn = index._conn()
        assert conn.execute("SELECT count(id_key) FROM docs").fetchone()[0] == 0
        index.add_many([(url(i), text(rng)) for i in range(1000, 2500)])  # 500 of the runs' replaced
        assert len(index) == 2500 == len(set(index.ids()))
        index.add(url(3000), "a small write keyed in docs_id")
        index.check_and_add(url(3001), "another small write")
        # (lean writes every batch as runs, small ones too; default keys small writes in docs_id)
        assert conn.execute("SELECT count(id_key) FROM docs").fetchone()[0] == (2 if profile == "default" else 0)
        again = [(url(i), f"replaced {i} " + text(rng)) for i in [*range(2000, 3000), 3000, 3001]]
        index.add_many(again)  # replaces 500 of the runs' and both small writes' ids
        assert len(index) == 3002 == len(set(index.ids()))
        # the replaced texts are gone, the new ones stored once under their ids
        assert index.query("a small write keyed in docs_id")["exact"] == []
        assert index.query("another small write")["exact"] == []
        assert sorted(index.query(again[-1][1])["exact"]) == [url(3001)]
        assert sorted(index.query(again[-2][1])["exact"]) == [url(3000)]
        assert index.integrity_check() == "ok"


def _dedup(*argv) -> int:
    return main(["dedup", *map(str, argv), "-q"])


def _lines(path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def test_against_with_every_id_on_one_key_equals_the_joint_run(tmp_path, monkeypatch, one_key):
    monkeypatch.chdir(tmp_path)
    from tests.engines.test_against import corpus, write

    docs = corpus(240, seed=3)
    a, b = write("A.jsonl", docs[:120]), write("B.jsonl", docs[120:])
    assert _dedup(a, "-o", "oa", "--save-index", "A.db") == 0
    assert _dedup(b, "-o", "ob", "--against", "A.db", "--update-index") == 0
    assert _dedup(a, b, "-o", "joint") == 0
    assert _lines("ob/clusters.jsonl") == [r for r in _lines("joint/clusters.jsonl") if r["source"] == "B.jsonl"]
    with SeenIndex("A.db", create=False) as index:
        assert index.integrity_check() == "ok"


def test_an_id_repeated_in_a_save_index_run_is_stored_once_with_its_last_record(tmp_path, monkeypatch):
    """A shard that holds a page twice: the run writes the index (schema 5 refused it with
    'UNIQUE constraint failed'), keeping the id's last record, as index add does."""
    monkeypatch.chdir(tmp_path)
    rng = random.Random(4)
    first, second, other = text(rng, 60), text(rng, 60), text(rng, 60)
    near = " ".join(second.split()[:-1] + ["changed"])
    rows = [{"id": "p", "text": first}, {"id": "q", "text": other}, {"id": "p", "text": second},
            {"id": "r", "text": near}]
    Path("s.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert _dedup("s.jsonl", "-o", "out", "--save-index", "s.db") == 0
    summary = json.load(open("out/summary.json"))
    assert summary["index"]["documents_saved"] == 3
    with SeenIndex("s.db", create=False) as index:
        assert sorted(index.ids()) == ["p", "q", "r"] and len(index) == 3
        assert index.integrity_check() == "ok"
    # the index answers with the last record of p: a later run finds r's near-copy of it, not
    # of the first text
    Path("n.jsonl").write_text(json.dumps({"id": "n", "text": first}) + "\n"
                               + json.dumps({"id": "m", "text": second}) + "\n", encoding="utf-8")
    assert _dedup("n.jsonl", "-o", "on", "--against", "s.db") == 0
    got = {r["id"]: r for r in _lines("on/clusters.jsonl")}
    assert got["n"]["duplicate_of"] is None
    assert got["m"]["duplicate_of"] == "p" and got["m"]["reason"] == "exact"


@pytest.mark.parametrize("profile", ["default", "lean"])
def test_a_schema_5_file_opens_answers_and_keeps_its_layout(tmp_path, profile):
    """Written by schema 5 (make_schema5.py): ids behind UNIQUE (id, source), no id_key column.
    It opens, answers by id, takes bulk and small writes, replacements and removals in its own
    layout, and stays schema 5."""
    path = tmp_path / "old.db"
    shutil.copy(DATA / f"schema5-{profile}.db", path)
    rng = random.Random(5)  # the texts of make_schema5.py
    texts = [" ".join(rng.choice(VOCAB) for _ in range(30)) for _ in range(1000)]
    b = "https://example.org/pages/b{}.html".format
    with SeenIndex(path, create=False) as old:
        assert not old.config.id_keys and old.config.profile == profile
        assert sorted(old.query(texts[3])["exact"]) == sorted([b(3), "https://example.org/copies/c3.html", "s3"])
        assert b(7) not in old and b(8) in old and old.get(b(12))["fingerprint"] is not None
        old.add_many([(f"n{i}", texts[i % 20]) for i in range(1200)])  # bulk
        old.add_many([(b(8), texts[3])])  # a small replacement
        assert b(3) in old.query(texts[3])["exact"] and b(8) in old.query(texts[3])["exact"]
        assert old.remove(b(8)) and b(8) not in old
        assert old.stats()["schema_version"] == 5
        assert old.integrity_check() == "ok"
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 5
    assert "id_key" not in {r[1] for r in conn.execute("PRAGMA table_info(docs)")}
    conn.close()


def test_a_failed_write_drops_the_run_key_filter(tmp_path, monkeypatch):
    """The numbers a rolled-back write saw are given again: its filter must not keep them as seen."""
    from neardup.store import runs

    rng = random.Random(8)
    path = tmp_path / "x.db"
    with SeenIndex(path, profile="lean") as index:
        index.add_many([(url(i), text(rng)) for i in range(1000)])
        index.add_many([(url(i), text(rng)) for i in range(900, 1100)])  # a refresh: the filter exists
        assert index._run_key_filter is not None
        real = runs.add_encoded_run

        def failing(conn, kind, *args, **kw):
            if kind == runs.KIND_IDS:
                raise OSError("disk full")
            return real(conn, kind, *args, **kw)

        monkeypatch.setattr(runs, "add_encoded_run", failing)
        with pytest.raises(OSError):
            index.add_many([(url(i), text(rng)) for i in range(1100, 1300)])
        assert index._run_key_filter is None and len(index) == 1100
        monkeypatch.setattr(runs, "add_encoded_run", real)
        index.add_many([(url(i), text(rng)) for i in range(1000, 1300)])
        assert len(index) == 1300 == len(set(index.ids()))


def _stored_ids(path) -> list[tuple]:
    """(prefix text or None, id column) of every docs row, in number order."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT p.text, d.id FROM docs d LEFT JOIN id_prefixes p ON p.num = d.id_prefix "
                            "ORDER BY d.num").fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("profile", ["lean", "default"])
def test_shared_prefixes_are_stored_once(tmp_path, profile):
    rng = random.Random(9)
    path = tmp_path / "x.db"
    with SeenIndex(path, profile=profile) as index:
        assert index.config.id_prefixes
        index.add_many([(url(i), text(rng)) for i in range(1000)])  # a bulk write: packed rows
        index.add_many([(url(i), text(rng)) for i in range(1000, 1010)])  # a small write: rows
        index.add_many([("https://one.example.net/only/a.html", text(rng))])  # a prefix seen once
        index.add_many([("https://one.example.net/only/b.html", text(rng))])  # seen before: stored
        index.add_many([("no-slash", text(rng)), ("a/b", text(rng))])  # none, and too short
        assert len(index) == 1014 and index.integrity_check() == "ok"
        assert index.ids()[:3] == [url(0), url(1), url(2)] and index.ids()[-4:] == [
            "https://one.example.net/only/a.html", "https://one.example.net/only/b.html", "no-slash", "a/b"]
    rows = _stored_ids(path)
    prefixes = {p for p, _ in rows if p is not None}
    assert prefixes == {url(i)[:url(i).rfind("/") + 1] for i in range(7)} | {"https://one.example.net/only/"}
    assert all(p is not None and p + rest == url(k) for k, (p, rest) in enumerate(rows[:1010]))
    assert rows[1010:] == [(None, "https://one.example.net/only/a.html"),
                           ("https://one.example.net/only/", "b.html"), (None, "no-slash"), (None, "a/b")]
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT count(*) FROM id_prefixes").fetchone()[0] == 8
    conn.close()


@pytest.mark.parametrize("profile", ["lean", "default"])
def test_ids_answer_the_same_with_and_without_prefixes(tmp_path, monkeypatch, profile):
    """Every operation by id, on ids of which some are stored with a prefix and some whole (one
    written before its prefix was stored), against the same writes to a file without prefixes."""
    def run(path):
        rng = random.Random(10)
        docs = [(url(i), text(rng)) for i in range(1200)]
        late = [f"https://later.example.com/ページ/記事-{i}.html" for i in range(4)]  # (not ASCII)
        out = []
        with SeenIndex(path, profile=profile) as index:
            index.add_many([(late[0], docs[3][1])])  # whole: its prefix is not yet stored
            index.add_many(docs)
            index.add_many([(late[1], docs[3][1]), (late[2], text(rng))])  # the prefix is stored now
            index.add_many([(url(5), docs[9][1]), (late[2], docs[4][1])])  # replacements
            out.append(sorted(index.query(docs[3][1])["exact"]))
            out.append(sorted(index.query(docs[4][1])["exact"]))
            out.append([e["id"] for e in index.query(docs[9][1])["near"]])
            out.append([index.get(x)["fingerprint"] for x in (url(5), late[0], late[2])])
            out.append([x in index for x in (late[0], late[1], late[3], url(1199), url(1200))])
            out.append(index.remove_many([late[1], url(1), "nope"]))
            out.append(sorted(index.query(docs[3][1])["exact"]))
            got = index.check_and_add(late[3], docs[6][1])
            out.append((got["added"], got["exact"]))
            out.append(index.ids())
            out.append(len(index))
            assert index.integrity_check() == "ok"
        return out

    late = "https://later.example.com/ページ/記事-{}.html".format
    with_prefixes = run(tmp_path / "p.db")
    assert sum(p is not None for p, _ in _stored_ids(tmp_path / "p.db")) >= 1200
    assert (None, late(0)) in _stored_ids(tmp_path / "p.db")  # written before its prefix was stored
    monkeypatch.setattr(store_rows, "prefix_length", lambda doc_id: None)
    without = run(tmp_path / "w.db")
    assert all(p is None for p, _ in _stored_ids(tmp_path / "w.db"))
    assert with_prefixes == without
    assert with_prefixes[0] == sorted([url(3), late(0), late(1)]) and with_prefixes[6] == sorted([url(3), late(0)])


def test_prefix_hints_choose_shared_and_seen_prefixes():
    from collections import Counter

    hints = ids.PrefixHints(capacity=3)
    assert hints.choose(Counter({"a/": 2, "b/": 1})) == ["a/"]
    assert hints.choose(Counter({"b/": 1, "c/": 1})) == ["b/"]  # b seen before
    assert hints.choose(Counter({"c/": 1})) == ["c/"]
    assert hints.choose(Counter({"d/": 1, "e/": 1, "f/": 1, "g/": 1})) == []  # over capacity: forgets
    assert len(hints._seen) <= 3
    assert ids.prefix_length("https://x.org/a/b.html") == len("https://x.org/a/")
    assert ids.prefix_length("short/x") is None and ids.prefix_length("none") is None


def test_a_schema_6_file_without_prefixes_opens_answers_and_keeps_its_layout(tmp_path):
    """Written by schema 6 before prefixes (make_schema6.py): whole ids, no id_prefix column."""
    path = tmp_path / "old6.db"
    shutil.copy(DATA / "schema6-lean.db", path)
    rng = random.Random(6)  # the texts of make_schema6.py
    texts = [" ".join(rng.choice(VOCAB) for _ in range(30)) for _ in range(1000)]
    b = "https://example.org/pages/b{}.html".format
    with SeenIndex(path, create=False) as old:
        assert old.config.id_keys and not old.config.id_prefixes
        assert sorted(old.query(texts[3])["exact"]) == sorted(
            [b(3), "https://example.org/copies/c3.html", "https://example.org/small/s3"])
        assert b(7) not in old and b(8) in old
        old.add_many([(f"https://example.org/new/n{i}", texts[i % 20]) for i in range(1200)])  # bulk
        old.add_many([(b(8), texts[3])])  # a small replacement
        assert b(8) in old.query(texts[3])["exact"] and "https://example.org/new/n3" in old.query(texts[3])["exact"]
        assert old.remove(b(8)) and b(8) not in old
        assert old.stats()["schema_version"] == 6 and old.integrity_check() == "ok"
    conn = sqlite3.connect(path)
    assert "id_prefix" not in {r[1] for r in conn.execute("PRAGMA table_info(docs)")}
    assert "id_prefixes" not in {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
