"""Posting runs (profile lean): the same answers as the one-row-per-posting layout, atomic
batches and merges, the block coding, and the bytes they save.

The reference is an index of the same configuration with its postings in rows (``signatures``
and ``containment`` off, ``posting_runs`` off: what profile lean stored before runs). Both get
the same adds, replacements, removals and checked adds; every answer must be equal. A small
``CANDIDATES_PER_BUCKET`` makes buckets overflow, so that the cap and the postings that removed
documents leave in the runs are exercised.
"""

from __future__ import annotations

import os
import random
import sqlite3

import numpy as np
import pytest
from conftest import real_texts

from neardup.errors import StoreError
from neardup.store import SeenIndex, runs
from neardup.store.sqlite import DOC_BITS, SCHEMA_VERSION

WORDS = ("crawler page link fetch index store query near copy shingle hash band row text web site "
         "server client token answer document content sample value block table file disk").split()


def synthetic(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) + str(rng.randrange(40)) for _ in range(n_words))


def mutate(rng: random.Random, text: str, rate: float) -> str:
    return " ".join("zz" + str(rng.randrange(10**6)) if rng.random() < rate else t for t in text.split())


def corpus(seed: int, n: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)  # test data only
    base = [synthetic(rng, rng.randrange(20, 120)) for _ in range(n // 2)]
    docs = [(f"d{i}", t) for i, t in enumerate(base)]
    docs += [(f"c{i}", mutate(rng, base[rng.randrange(len(base))], 0.03)) for i in range(n - len(base))]
    rng.shuffle(docs)
    return docs


def both(tmp_path, cap: int):
    rows = SeenIndex(tmp_path / "rows.db", signatures=False, containment=False, posting_runs=False)
    lean = SeenIndex(tmp_path / "runs.db", profile="lean")
    assert lean.config.posting_runs and not rows.config.posting_runs and rows.config.profile == "lean"
    for index in (rows, lean):
        index.CANDIDATES_PER_BUCKET = cap
    return rows, lean


def same_answers(rows, lean, queries):
    for q in queries:
        assert lean.query(q, limit=None) == rows.query(q, limit=None)


@pytest.mark.parametrize("cap", [1000, 3])
def test_runs_answer_as_rows_do(tmp_path, cap):
    docs = corpus(1, 700)
    rows, lean = both(tmp_path, cap)
    with rows, lean:
        for start in range(0, len(docs), 60):  # 12 batches: runs merge at levels 1 and 2
            for index in (rows, lean):
                index.add_many(docs[start:start + 60])
        levels = sorted(r[0] for r in lean._conn().execute("SELECT level FROM posting_runs WHERE kind = 0"))
        assert max(levels) >= 1 and len(levels) < 12
        queries = [t for _, t in docs[::23]] + [mutate(random.Random(5), docs[0][1], 0.05), "nothing like it"]
        same_answers(rows, lean, queries)
        # replaced and removed documents leave postings in the runs; answers drop them
        rng = random.Random(2)
        for index in (rows, lean):
            index.add_many([(doc_id, synthetic(rng, 50)) for doc_id, _ in docs[:30]])
            assert index.remove_many([doc_id for doc_id, _ in docs[30:50]]) == []
        assert runs.stale_documents(lean._conn()) == 50
        same_answers(rows, lean, queries)
        checked_adds_alike(rows, lean, docs[60:75], rng)
        same_answers(rows, lean, queries)


def checked_adds_alike(rows, other, docs, rng) -> None:
    """Near-copies of ``docs`` check-and-added under both policies give the same answers in both indexes."""
    for policy in ("exact", "near"):
        for doc_id, text in docs:
            copy = mutate(rng, text, 0.01)
            a = rows.check_and_add(f"{doc_id}-{policy}", copy, policy=policy, limit=None)
            assert other.check_and_add(f"{doc_id}-{policy}", copy, policy=policy, limit=None) == a


def test_checked_adds_see_their_own_runs(tmp_path):
    """check_and_add writes a run per document; the next one in the same transaction sees it."""
    rng = random.Random(4)
    text = synthetic(rng, 80)
    with SeenIndex(tmp_path / "lean.db", profile="lean") as index:
        answers = index.check_and_add_many([("a", text), ("b", mutate(rng, text, 0.01)), ("c", text)], policy="near")
        assert [a["added"] for a in answers] == [True, False, False]
        assert answers[2]["exact"] == ["a"]
        for k in range(9):  # single-document runs merge as they gather
            index.check_and_add(f"n{k}", synthetic(rng, 60))
        assert index.query(text)["exact"] == ["a"]
        assert len(index) == 10


@pytest.mark.parametrize("profile", ["lean", "default"])
def test_a_failed_batch_leaves_runs_and_merges_undone(tmp_path, monkeypatch, profile):
    docs = corpus(3, 240)
    with SeenIndex(tmp_path / "lean.db", profile=profile, rows_below=50 if profile == "default" else None) as index:
        for start in range(0, 180, 60):
            index.add_many(docs[start:start + 60])
        conn = index._conn()
        before = (conn.execute("SELECT * FROM posting_runs ORDER BY kind, run").fetchall(),
                  runs.all_postings(conn, runs.KIND_BANDS).tolist(), len(index))

        def broken(*args):
            raise OSError("disk gone in the middle of a merge")

        monkeypatch.setattr(runs, "_merge", broken)  # the 4th run of level 0 makes a merge
        with pytest.raises(OSError, match="disk gone"):
            index.add_many(docs[180:240])
        after = (conn.execute("SELECT * FROM posting_runs ORDER BY kind, run").fetchall(),
                 runs.all_postings(conn, runs.KIND_BANDS).tolist(), len(index))
        assert after == before
        monkeypatch.undo()
        index.add_many(docs[180:240])
        assert len(index) == 240 and index.integrity_check() == "ok"
    # another process's view: a fresh connection reads the merged runs
    with SeenIndex(tmp_path / "lean.db", create=False) as again:
        assert again.query(docs[200][1])["exact"][:1] != []


def test_runs_hold_the_row_layouts_postings(tmp_path):
    docs = corpus(6, 400)
    rows, lean = both(tmp_path, 1000)
    with rows, lean:
        for start in range(0, len(docs), 50):
            rows.add_many(docs[start:start + 50])
            lean.add_many(docs[start:start + 50])
        rc, lc = rows._conn(), lean._conn()
        for table, kind in (("bands", runs.KIND_BANDS), ("simhash_blocks", runs.KIND_SIMHASH)):
            want = np.array([r[0] for r in rc.execute(f"SELECT posting FROM {table} ORDER BY posting")], dtype=np.int64)
            assert np.array_equal(runs.all_postings(lc, kind), want)
            assert lc.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0
        assert int(rc.execute("SELECT max(posting) FROM bands").fetchone()[0]) & ((1 << DOC_BITS) - 1) <= 400


def test_block_coding_round_trips():
    rng = np.random.default_rng(8)  # test data only
    for n, span in ((1, 10), (2, 1 << 8), (128, 1 << 20), (129, 1 << 40), (1000, 1 << 62), (300, 300),
                    (3, (1 << 63) - 1), (257, 1 << 30)):  # (3 keys over 2**63: 64-bit deltas)
        keys = np.unique(rng.integers(0, span, size=n))
        blocks = runs.encode_blocks(keys)
        assert len(blocks) == -(-keys.size // runs.BLOCK)
        assert {b[1][0] for b in blocks} <= set(range(1, runs.MAX_PACKED_BITS + 1)) | {64}
        decoded, block_of = runs.decode_many(blocks)
        assert np.array_equal(decoded, keys)
        assert np.array_equal(np.concatenate([runs.decode_block(f, d) for f, d in blocks]), keys)
        assert np.array_equal(block_of, np.arange(keys.size) // runs.BLOCK)


def test_grouped_block_coding_is_the_value_by_value_coding():
    """Large inputs are coded a bit width at a time (runs._encode_grouped, _decode_grouped):
    the same bytes and keys as the value-by-value coding, for every width and a partial last block."""
    rng = np.random.default_rng(9)  # test data only
    for n, span in ((runs.GROUPED_BLOCKS * runs.BLOCK, 1 << 20), (runs.GROUPED_BLOCKS * runs.BLOCK + 1, 1 << 40),
                    (20000, 1 << 62), (9000, (1 << 63) - 1), (30000, 40000), (12345, 1 << 57)):
        keys = np.unique(rng.integers(0, span, size=n))
        if keys.size < runs.GROUPED_BLOCKS * runs.BLOCK:
            keys = np.unique(np.concatenate((keys, np.arange(runs.GROUPED_BLOCKS * runs.BLOCK))))
        blocks = runs.encode_blocks_numpy(keys)
        assert blocks == runs._encode_by_value(keys)
        assert len({b[1][0] for b in blocks}) > 1 or span == 40000
        decoded, block_of = runs.decode_many_numpy(blocks)
        by_value, block_of_by_value = runs._decode_by_value(blocks)
        assert np.array_equal(decoded, keys) and np.array_equal(by_value, keys)
        assert np.array_equal(block_of, block_of_by_value)


@pytest.mark.skipif(runs._encode_compiled is None, reason="the compiled kernel is not built")
def test_the_compiled_coder_writes_and_reads_numpys_bytes():
    """kernel/postings.c against runs.py's numpy coder: the same blocks for every width (a
    largest delta just under and over each power of two, 2**53 and up where a double rounds),
    a partial last block, keys in any order (deltas that wrap), and the same keys back, also
    from bodies shorter than their count needs (read as zeros)."""
    rng = np.random.default_rng(10)  # test data only
    cases = [np.arange(n, dtype=np.int64) for n in (1, 2, 127, 128, 129, 8193)]
    for bits in range(1, 64):
        steps = rng.integers(1, 1 << bits, size=300, dtype=np.int64)
        steps[::37] = (1 << bits) - 1
        cases.append(np.cumsum(steps % (1 << 62)).astype(np.int64))
    cases.append(rng.integers(-(1 << 63), (1 << 63) - 1, size=5000, dtype=np.int64))  # any order
    cases.append(np.array([0, (1 << 53) + 1, (1 << 54) + (1 << 53) - 1, (1 << 62)], dtype=np.int64))
    for keys in cases:
        blocks = runs.encode_blocks(keys)
        assert blocks == runs.encode_blocks_numpy(keys)
        decoded, block_of = runs.decode_many(blocks)
        want, want_block_of = runs.decode_many_numpy(blocks)
        assert np.array_equal(decoded, keys) and np.array_equal(want, keys)
        assert np.array_equal(block_of, want_block_of)
    # (each alone: numpy's value-by-value decoder joins the bodies, so that a short body there
    # reads on into the next block's bytes; the compiled one, as the grouped one, reads zeros)
    short = [(5, bytes((7, 3, 0xFF))), (-2, bytes((64, 2)) + bytes(range(9)))]
    alone = [runs._decode_by_value([block])[0] for block in short]
    assert [runs.decode_many([block])[0].tolist() for block in short] == [k.tolist() for k in alone]
    assert np.array_equal(runs.decode_many(short)[0], np.concatenate(alone))
    for damaged in ([(1, b"")], [(1, b"\x05")], [(1, bytes((0, 1, 1)))], [(1, bytes((65, 1, 1)))]):
        with pytest.raises(StoreError, match="damaged"):
            runs.decode_many([(0, bytes((1, 0)))] + damaged)


def test_lean_file_is_smaller_with_runs(tmp_path):
    texts = [t for _, t in real_texts(limit=40, min_bytes=1500)]
    docs = [(f"r{i}", t) for i, t in enumerate(texts)] + corpus(7, 800)
    rows, lean = both(tmp_path, 1000)
    with rows, lean:
        for start in range(0, len(docs), 100):
            rows.add_many(docs[start:start + 100])
            lean.add_many(docs[start:start + 100])
        for index in (rows, lean):
            index.checkpoint()
        assert lean._conn().execute("PRAGMA freelist_count").fetchone()[0] == 0  # merges gave their pages back
        same_answers(rows, lean, [t for _, t in docs[::37]])
    rows_bytes = os.path.getsize(tmp_path / "rows.db")
    runs_bytes = os.path.getsize(tmp_path / "runs.db")
    assert runs_bytes < 0.7 * rows_bytes, (rows_bytes, runs_bytes)
    with SeenIndex(tmp_path / "runs.db", create=False) as again:
        assert again.stats()["posting_runs"]["band_postings"]["postings"] > 0
    conn = sqlite3.connect(tmp_path / "runs.db")
    stats = runs.run_stats(conn)
    per = stats["band_postings"]["block_bytes"] / stats["band_postings"]["postings"]
    assert per < 7.0, stats  # bytes per band posting (14 in rows)
    conn.close()


def test_against_refuses_a_lean_index(tmp_path):
    from neardup.errors import ConfigError
    from neardup.engines.against import Against

    with SeenIndex(tmp_path / "lean.db", profile="lean", store_shingles=True) as index:
        with pytest.raises(ConfigError, match="profile lean"):
            Against(index, "lean.db")


@pytest.mark.parametrize("profile", ["default", "full"])
@pytest.mark.parametrize("cap", [1000, 3])
def test_bulk_runs_and_small_rows_answer_as_rows_do(tmp_path, profile, cap):
    """Profiles default and full: writes of ``rows_below`` documents and more append runs, smaller
    ones (check_and_add, small add_many) go to the row tables; queries read both and answer as an
    index with every posting in rows, through replacements, removals and both policies."""
    docs = corpus(11, 760)
    rows = SeenIndex(tmp_path / "rows.db", profile=profile, posting_runs=False)
    mixed = SeenIndex(tmp_path / "mixed.db", profile=profile, rows_below=50)
    assert not rows.config.posting_runs and mixed.config.posting_runs and mixed.config.rows_below == 50
    assert rows.config.profile == mixed.config.profile == profile
    with rows, mixed:
        for index in (rows, mixed):
            index.CANDIDATES_PER_BUCKET = cap
        for start in range(0, 720, 60):  # 12 bulk batches: runs merged at levels 1 and 2
            for index in (rows, mixed):
                index.add_many(docs[start:start + 60])
                index.add_many(docs[720 + start // 30:720 + start // 30 + 2])  # small: rows
        conn = mixed._conn()
        assert max(r[0] for r in conn.execute("SELECT level FROM posting_runs")) >= 1
        assert conn.execute("SELECT count(*) FROM bands").fetchone()[0] > 0
        assert conn.execute("SELECT count(*) FROM simhash_blocks").fetchone()[0] > 0
        queries = [t for _, t in docs[::19]] + [mutate(random.Random(5), docs[0][1], 0.05), "nothing like it"]
        same_answers(rows, mixed, queries)
        rng = random.Random(12)
        for index in (rows, mixed):  # (the same texts for both)
            index.add_many([(doc_id, synthetic(random.Random(doc_id), 50)) for doc_id, _ in docs[:30]])
            assert index.remove_many([doc_id for doc_id, _ in docs[30:50]] + [docs[725][0]]) == []
        same_answers(rows, mixed, queries)
        # a bulk batch with 8 copies of one text, the first 4 removed: the buckets overflow a cap
        # of 3 with the postings the runs keep for removed documents
        copies = [(f"cp{k}", docs[5][1]) for k in range(8)] + corpus(14, 52)
        for index in (rows, mixed):
            index.add_many(copies)
            assert index.remove_many([f"cp{k}" for k in range(4)]) == []
        same_answers(rows, mixed, queries + [docs[5][1]])
        for limit in (1, 2, 3):  # the first ids in id order, from the rows and the fingerprint runs
            assert mixed.query(docs[5][1], limit=limit)["exact"] == rows.query(docs[5][1], limit=limit)["exact"]
        # bulk writes' fingerprints are in runs, not in the docs_fingerprint index; get() shows them
        assert runs.has_runs(conn, runs.KIND_FINGERPRINTS)
        indexed, in_runs = conn.execute("SELECT count(fingerprint), count(run_fingerprint) FROM docs").fetchone()
        assert 0 < indexed < in_runs
        for doc_id in (docs[100][0], "cp5", docs[730][0], docs[10][0]):
            got, want = mixed.get(doc_id), rows.get(doc_id)
            assert got is not None and {**got, "added_at": 0} == {**want, "added_at": 0}, doc_id
        if cap == 3:
            assert {e["id"] for e in mixed.query(docs[5][1], limit=None)["simhash"]} & {"cp4", "cp5", "cp6"}
        checked_adds_alike(rows, mixed, docs[60:75], rng)
        same_answers(rows, mixed, queries)
        for table, kind in (("bands", runs.KIND_BANDS), ("simhash_blocks", runs.KIND_SIMHASH)):
            # every posting is in one place: rows or runs (the row layout's, plus the ones
            # runs keep for removed and replaced documents)
            in_rows = [r[0] for r in conn.execute(f"SELECT posting FROM {table}")]
            both_places = np.concatenate((runs.all_postings(conn, kind), np.array(in_rows, dtype=np.int64)))
            assert np.unique(both_places).size == both_places.size
        assert mixed.integrity_check() == "ok"


def test_files_of_schema_3_and_row_files_open_and_keep_their_layout(tmp_path):
    """A default-profile file with a row per posting (as schema 3 made them) opens with the
    profile named, keeps writing rows, and answers; so does one marked schema 3."""
    docs = corpus(13, 300)
    with SeenIndex(tmp_path / "old.db", profile="default", posting_runs=False) as old:
        old.add_many(docs[:200])
    conn = sqlite3.connect(tmp_path / "old.db")
    conn.execute("PRAGMA user_version=3")
    conn.close()
    with SeenIndex(tmp_path / "old.db", profile="default", create=False) as again:
        assert not again.config.posting_runs and again.config.profile == "default"
        again.add_many(docs[200:])  # rows, as before: a schema 3 reader still reads the file
        assert not runs.has_runs(again._conn(), runs.KIND_BANDS)
        assert again.query(docs[250][1])["exact"][:1] == [docs[250][0]] or \
            docs[250][0] in again.query(docs[250][1])["exact"]
    conn = sqlite3.connect(tmp_path / "old.db")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 3
    conn.close()
    with SeenIndex(tmp_path / "new.db") as new:
        assert new.config.posting_runs and new.config.rows_below == 1000 and new.config.profile == "default"
    conn = sqlite3.connect(tmp_path / "new.db")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


def test_a_schema_4_file_opens_answers_and_keeps_its_layout(tmp_path):
    """A file written by schema 4 (tests/data/index/make_schema4.py, with the code of that
    version: one bulk write, then small ones, a removal), whose fingerprints are all in the
    docs_fingerprint index: it opens, answers as before, takes bulk and small writes in its own
    layout (no fingerprint runs), and stays schema 4."""
    import shutil
    from pathlib import Path

    path = tmp_path / "old.db"
    shutil.copy(Path(__file__).resolve().parent.parent / "data" / "index" / "schema4-default.db", path)
    rng = random.Random(4)  # the texts of make_schema4.py
    words = [f"w{i}" for i in range(3000)]
    texts = [" ".join(rng.choice(words) for _ in range(30)) for _ in range(1000)]
    with SeenIndex(path, create=False) as old:
        assert old.config.posting_runs and not old.config.fingerprint_runs and old.config.profile == "default"
        assert old.query(texts[3])["exact"] == ["b3", "c3", "s3"]
        assert old.query(texts[7])["exact"] == ["c7"]  # b7 was removed
        assert old.get("b12")["fingerprint"] is not None
        old.add_many([(f"n{i}", texts[i % 20]) for i in range(1200)])  # bulk: a run of bands, no fingerprint run
        assert not runs.has_runs(old._conn(), runs.KIND_FINGERPRINTS)
        assert old.query(texts[3])["exact"] == sorted(["b3", "c3", "s3"] + [f"n{i}" for i in range(3, 1200, 20)])
        assert old.integrity_check() == "ok"
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 4
    conn.close()


def test_a_bulk_add_stores_what_small_adds_store(tmp_path):
    """add_many of ROWS_BELOW documents or more is prepared from the batch's sketch arrays (no
    Sketch per document): repeated ids (the last wins, at the place of its last occurrence),
    documents without ids, metas and answers as add_many in small pieces gives them."""
    from neardup.config import ROWS_BELOW

    docs = [(doc_id, text, {"k": i}) for i, (doc_id, text) in enumerate(corpus(15, ROWS_BELOW + 100))]
    rng = random.Random(16)
    docs += [(docs[k][0], synthetic(rng, 40), None) for k in range(0, 200, 4)]  # repeated ids, new texts
    docs += [(None, synthetic(rng, 30), None) for _ in range(3)]
    with SeenIndex(tmp_path / "bulk.db") as bulk, SeenIndex(tmp_path / "small.db") as small:
        got = bulk.add_many(docs)
        want = [x for start in range(0, len(docs), 400) for x in small.add_many(docs[start:start + 400])]
        assert got == want
        assert runs.has_runs(bulk._conn(), runs.KIND_BANDS) and not runs.has_runs(small._conn(), runs.KIND_BANDS)
        assert bulk.ids() == small.ids() and len(bulk) == len(small) == len(set(got))
        for doc_id in got[::37]:
            a, b = bulk.get(doc_id), small.get(doc_id)
            assert {k: v for k, v in a.items() if k != "added_at"} == {k: v for k, v in b.items() if k != "added_at"}
        same_answers(small, bulk, [t for _, t, _ in docs[::41]])


def test_bulk_writes_merge_bulk_fanout_runs_a_level(tmp_path, monkeypatch):
    """Runs of bulk writes (ROWS_BELOW documents and more) merge when BULK_FANOUT gather; small
    writes' runs (lean) merge at FANOUT; answers stay those of the rows."""
    from neardup.config import ROWS_BELOW

    monkeypatch.setattr(runs, "BULK_FANOUT", 3)
    docs = corpus(17, 3 * ROWS_BELOW)
    rows = SeenIndex(tmp_path / "rows.db", profile="default", posting_runs=False)
    bulk = SeenIndex(tmp_path / "bulk.db", profile="default")
    with rows, bulk:
        conn = bulk._conn()
        for k in range(3):
            part = docs[k * ROWS_BELOW:(k + 1) * ROWS_BELOW]
            rows.add_many(part)
            bulk.add_many(part)
            levels = sorted(r[0] for r in conn.execute("SELECT level FROM posting_runs WHERE kind = 0"))
            # (bulk writes' levels start at BULK_LEVEL) the third run merged the level
            assert levels == ([runs.BULK_LEVEL] * (k + 1) if k < 2 else [runs.BULK_LEVEL + 1])
        same_answers(rows, bulk, [t for _, t in docs[::97]])


def test_small_writes_after_a_bulk_load_merge_only_their_own_runs(tmp_path, monkeypatch):
    """A lean index filled by bulk writes, then written a document at a time (a service on it):
    the small writes' runs merge among themselves at FANOUT, and never pull the bulk runs into
    their merges (which rewrote every posting of the index at the first small write after a
    load); answers stay those of the rows."""
    from neardup.config import ROWS_BELOW

    monkeypatch.setattr(runs, "BULK_FANOUT", 8)
    docs = corpus(23, 5 * ROWS_BELOW + 12)
    rows = SeenIndex(tmp_path / "rows.db", profile="lean", posting_runs=False)
    lean = SeenIndex(tmp_path / "lean.db", profile="lean")
    with rows, lean:
        conn = lean._conn()

        def levels():
            return sorted(r[0] for r in conn.execute("SELECT level FROM posting_runs WHERE kind = 0"))

        for k in range(5):
            part = docs[k * ROWS_BELOW:(k + 1) * ROWS_BELOW]
            rows.add_many(part)
            lean.add_many(part)
        assert levels() == [runs.BULK_LEVEL] * 5
        merges = []
        real = runs._merge
        monkeypatch.setattr(runs, "_merge", lambda conn, kind, level, merged: (merges.append(
            (kind, level, len(merged), sum(r[4] for r in merged))), real(conn, kind, level, merged)))
        added = 0
        for doc in docs[5 * ROWS_BELOW:]:  # 12 single documents: runs of level 0, merged 4 at a time
            rows.check_and_add(*doc)
            added += lean.check_and_add(*doc)["added"]
        # the small runs: the base-4 digits of the documents added (an exact copy adds none)
        small, level, left = [], 0, added
        while left:
            small += [level] * (left % runs.FANOUT)
            left, level = left // runs.FANOUT, level + 1
        assert added >= 8 and levels() == sorted(small) + [runs.BULK_LEVEL] * 5
        assert merges and all(level < runs.BULK_LEVEL and n == runs.FANOUT for _, level, n, _ in merges)
        # (each merge rewrote 4 small runs' postings, never the 5,000 documents' of the load)
        assert max(postings for *_, postings in merges) < 100
        same_answers(rows, lean, [t for _, t in docs[::211]] + [t for _, t in docs[-12:]])
