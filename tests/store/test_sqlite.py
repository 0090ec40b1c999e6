"""SeenIndex on a real SQLite file: answers equal the library's own measures, config checks,
check-and-add semantics, persistence, concurrency (threads and processes), and the CLI."""

from __future__ import annotations

import json
import random
import re
import os
import shutil
import tempfile
import sqlite3
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from conftest import real_texts
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup import (
    ConfigError,
    IncompatibleSketchError,
    InputError,
    MinHash,
    MinHashParams,
    ModM,
    NormalizeParams,
    ShingleParams,
    SimHash,
    StoreError,
    fingerprint,
)
from neardup.cli import main
from neardup.store import SeenIndex
from neardup.sketch.simhash import simhashes_of_words
from neardup.store.sqlite import APPLICATION_ID, DOC_BITS, SCHEMA_VERSION, simhash_blocks
from neardup.text.charclass import PUNCT, SOLO, WORD, regex_sources
from neardup.text.normalize import fold
from neardup.text.tokenize import words, words_of_folded

MH = MinHashParams(num_perm=128, seed=1, family="mulshift64")
WORDS = ("crawler page link fetch index store query near copy shingle hash band row text web site "
         "server client token answer document content sample value block table file disk").split()


def synthetic(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) + str(rng.randrange(50)) for _ in range(n_words))


def mutate(rng: random.Random, text: str, rate: float) -> str:
    toks = text.split()
    for i in range(len(toks)):
        if rng.random() < rate:
            toks[i] = "zz" + str(rng.randrange(10**6))
    return " ".join(toks)


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / "seen.db")


@pytest.fixture(scope="module")
def texts():
    return [t for _, t in real_texts(limit=40, min_bytes=3000)]


# -- the fast paths equal the library ---------------------------------------------------------

def regex_words(text: str, norm: NormalizeParams) -> list[str]:
    """The definition of a word token as a regular expression over the character classes: the
    oracle of :func:`words_of_folded`, which splits without regular expressions."""
    src = regex_sources()
    body = src[WORD] + ("" if norm.remove_punctuation else src[PUNCT])
    return re.findall(f"[{body}]+|[{src[SOLO]}]", fold(text, norm))


@settings(max_examples=80, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)) | st.sampled_from(" .,-_\n\t'"),
               max_size=200), st.booleans())
def test_words_of_folded_equals_the_regular_expression(text, remove_punctuation):
    norm = NormalizeParams(remove_punctuation=remove_punctuation)
    assert words_of_folded(fold(text, norm), remove_punctuation) == regex_words(text, norm)


def test_words_of_folded_on_real_and_mixed_text(texts):
    mixed = ["Ünïcödé façade — “quoted” 東京都 ภาษาไทย naïve_snake_case x²", "\ud800 lone surrogate \udfff", ""]
    for text in texts + mixed:
        for rp in (True, False):
            norm = NormalizeParams(remove_punctuation=rp)
            assert words_of_folded(fold(text, norm), rp) == regex_words(text, norm)


def test_simhashes_equal_library(texts):
    docs = texts[:20] + ["", "one", "a a a b"]
    norm = NormalizeParams()
    got = simhashes_of_words([words(t, norm) for t in docs], "xxh3")
    for text, value in zip(docs, got):
        if not words(text, norm):
            assert value is None
        else:
            assert value == SimHash.from_text(text).value


def test_simhash_blocks_cover_64_bits():
    for k in range(0, 32):
        blocks = simhash_blocks(k)
        assert len(blocks) == k + 1 and sum(blocks) == 64 and max(blocks) - min(blocks) <= 1


# -- answers equal the library's measures -----------------------------------------------------

def test_answers_match_library_measures(db, texts):
    rng = random.Random(5)
    base = texts[:12]
    docs = {f"doc{i}": t for i, t in enumerate(base)}
    docs["near0"] = mutate(rng, base[0], 0.02)
    docs["half1"] = " ".join(base[1].split()[: len(base[1].split()) // 2])
    with SeenIndex(db, threshold=0.5, containment_threshold=0.5, simhash_max_distance=6, profile="full") as index:
        index.add_many(list(docs.items()))
        sp, mp = index.config.shingle, index.config.minhash
        mins = {i: MinHash.from_text(t, sp, mp) for i, t in docs.items()}
        mods = {i: ModM.from_text(t, 8, sp, seed=mp.seed) for i, t in docs.items()}
        sims = {i: SimHash.from_text(t) for i, t in docs.items()}
        fps = {i: fingerprint(t) for i, t in docs.items()}
        for qid, q in [("q0", base[0]), ("q1", docs["near0"]), ("q2", base[1]), ("q3", docs["half1"])]:
            answer = index.query(q, qid, limit=None)
            assert answer["id"] == qid
            assert set(answer) == {"id", "exact", "near", "contains", "contained_in", "simhash"}
            assert answer["exact"] == sorted(i for i in docs if fps[i] == fingerprint(q))
            mq = MinHash.from_text(q, sp, mp)
            for e in answer["near"]:
                assert e["jaccard"] == mq.jaccard(mins[e["id"]]).value
                assert e["jaccard"] >= 0.5 and "exact_jaccard" not in e
            # every document whose estimate passes is reported (here they all share a band too)
            assert {e["id"] for e in answer["near"]} == {i for i in docs if mq.jaccard(mins[i]).value >= 0.5}
            sq = ModM.from_text(q, 8, sp, seed=mp.seed)
            want_contains = {i for i in docs if mods[i].values.size and mods[i].containment(sq).value >= 0.5}
            want_in = {i for i in docs if sq.containment(mods[i]).value >= 0.5}
            assert {e["id"] for e in answer["contains"]} == want_contains
            assert {e["id"] for e in answer["contained_in"]} == want_in
            for e in answer["contains"]:
                assert e["containment"] == pytest.approx(mods[e["id"]].containment(sq).value)
            for e in answer["contained_in"]:
                assert e["containment"] == pytest.approx(sq.containment(mods[e["id"]]).value)
            hq = SimHash.from_text(q)
            want = sorted((hq.distance(sims[i]), i) for i in docs if hq.distance(sims[i]) <= 6)
            assert [(e["distance"], e["id"]) for e in answer["simhash"]] == want
            for key, field in (("near", "jaccard"), ("contains", "containment"), ("contained_in", "containment")):
                values = [(-e[field], e["id"]) for e in answer[key]]
                assert values == sorted(values)
        # the half document is contained in doc1, and doc1 contains it
        answer = index.query(docs["half1"])
        assert "doc1" in {e["id"] for e in answer["contained_in"]}
        assert "half1" in {e["id"] for e in index.query(base[1])["contains"]}
        assert [e["id"] for e in index.query(docs["near0"])["near"]][:2] in (["near0", "doc0"], ["doc0", "near0"])


def test_store_shingles_reports_exact_values(db, texts):
    from neardup import shingle_ids
    from neardup.exact.similarity import jaccard_sorted

    rng = random.Random(2)
    a = texts[3]
    b = mutate(rng, a, 0.01)
    with SeenIndex(db, store_shingles=True) as index:
        index.add("a", a)
        answer = index.query(b)
        (e,) = answer["near"]
        ids_a, ids_b = shingle_ids(a), shingle_ids(b)
        j, c_ab, c_ba = jaccard_sorted(ids_a, ids_b)
        assert e["exact_jaccard"] == pytest.approx(j)
        for e in answer["contains"]:
            assert e["exact_containment"] == pytest.approx(c_ab)
        for e in answer["contained_in"]:
            assert e["exact_containment"] == pytest.approx(c_ba)


def test_limit_and_ordering(db):
    rng = random.Random(9)
    base = synthetic(rng, 400)
    with SeenIndex(db) as index:
        index.add_many([(f"c{i:02d}", mutate(rng, base, 0.01 * (i % 4))) for i in range(30)])
        answer = index.query(base, limit=5)
        assert len(answer["near"]) == 5
        assert answer["near"] == sorted(answer["near"], key=lambda e: (-e["jaccard"], e["id"]))
        full = index.query(base, limit=None)
        assert full["near"][:5] == answer["near"]
        with pytest.raises(ConfigError):
            index.query(base, limit=0)



def test_candidates_per_bucket_are_bounded(db):
    """Many stored copies of one text: a similar query takes at most CANDIDATES_PER_BUCKET of
    them (the oldest) from each band and simhash bucket, whatever the limit, so that a client
    storing copies under many ids cannot make later queries load them all."""
    rng = random.Random(12)
    base = synthetic(rng, 300)
    with SeenIndex(db, containment=True) as index:
        index.CANDIDATES_PER_BUCKET = 5
        index.add_many([(f"copy{i:02d}", base) for i in range(20)])
        answer = index.query(base, limit=None)
        oldest = [f"copy{i:02d}" for i in range(5)]
        assert [e["id"] for e in answer["near"]] == oldest
        assert [e["id"] for e in answer["simhash"]] == oldest
        assert [e["id"] for e in answer["contains"]] == oldest
        assert [e["id"] for e in answer["contained_in"]] == oldest
        assert len(answer["exact"]) == 20  # one indexed lookup, already cut by limit in SQL
        index.CANDIDATES_PER_BUCKET = 1000
        full = index.query(base, limit=None)
        assert [len(full[k]) for k in ("near", "contains", "contained_in", "simhash")] == [20] * 4


def test_files_are_created_private(tmp_path):
    """The database, its WAL and shared-memory files and the lock file are created 0600 whatever
    the umask: they hold every document's id and metadata."""
    import os
    import stat

    old = os.umask(0o022)
    try:
        path = str(tmp_path / "seen.db")
        with SeenIndex(path) as index:
            index.add("a", "the crawler fetches each page and follows its links")
            modes = {suffix: stat.S_IMODE(os.stat(path + suffix).st_mode) for suffix in ("", "-wal", "-shm", "-lock")}
    finally:
        os.umask(old)
    assert modes == {"": 0o600, "-wal": 0o600, "-shm": 0o600, "-lock": 0o600}


def test_a_lock_file_symlink_is_refused_not_followed(tmp_path):
    import os

    path = str(tmp_path / "seen.db")
    target = tmp_path / "planted"
    os.symlink(target, path + "-lock")
    with pytest.raises(StoreError, match="symbolic link"):
        SeenIndex(path)
    assert not target.exists()
    os.remove(path + "-lock")
    with SeenIndex(path) as index:  # the file the refused open created is a good index
        assert len(index) == 0


# -- add, check-and-add, remove ---------------------------------------------------------------

def test_check_and_add_semantics(db):
    with SeenIndex(db) as index:
        first = index.check_and_add("u1", "The crawler fetches each page and follows its links.", {"n": 1})
        assert first["added"] is True and first["exact"] == [] and first["id"] == "u1"
        again = index.check_and_add("u2", "the CRAWLER fetches each page, and follows its links")
        assert again["added"] is False and again["exact"] == ["u1"]
        assert "u2" not in index and len(index) == 1
        assert index.get("u1")["meta"] == {"n": 1}
        # the same id with new content replaces the entry
        replaced = index.check_and_add("u1", "a completely different page about gardening and roses")
        assert replaced["added"] is True and len(index) == 1
        assert index.query("The crawler fetches each page and follows its links.")["exact"] == []
        # no id: the id is the content fingerprint
        auto = index.check_and_add(None, "yet another page with its own words")
        assert auto["id"] == f"{fingerprint('yet another page with its own words'):016x}"
        assert auto["id"] in index
        # add always stores, even an exact copy
        assert index.add("u3", "yet another page with its own words") == "u3"
        assert index.query("yet another page with its own words")["exact"] == sorted([auto["id"], "u3"])


def test_batch_check_and_add_sees_earlier_documents_of_the_batch(db):
    with SeenIndex(db) as index:
        answers = index.check_and_add_many([("a", "one two three four five six"),
                                            ("b", "One two three, four five six!"),
                                            ("c", "something else entirely here")])
        assert [a["added"] for a in answers] == [True, False, True]
        assert answers[1]["exact"] == ["a"]


def test_documents_without_words(db):
    with SeenIndex(db) as index:
        a = index.check_and_add("p1", "!!! ... ???")
        b = index.check_and_add("p2", "")
        assert a["added"] and b["added"] and len(index) == 2
        assert index.query("...") == {"id": None, "exact": [], "near": [], "contains": [], "contained_in": [],
                                      "simhash": []}
        with pytest.raises(InputError):
            index.add(None, "!!!")
        assert index.remove("p1") and index.remove("p2") and len(index) == 0


def test_remove_cleans_every_table(db, texts):
    # (whole signatures: the band postings of a removed document can be found and removed)
    with SeenIndex(db, profile="full") as index:
        index.add_many([(f"d{i}", t) for i, t in enumerate(texts[:5])])
        index.add("d1", texts[7])  # replace: the old entry's rows go
        assert index.remove("d0") is True
        assert index.remove("d0") is False
        assert index.remove_many(["d2", "nope", "d2"]) == ["nope"]
        assert sorted(index.ids()) == ["d1", "d3", "d4"]
        assert index.query(texts[0])["near"] == [] and index.query(texts[1])["near"] == []
        conn = index._conn()
        nums = {r[0] for r in conn.execute("SELECT num FROM docs")}
        mask = (1 << DOC_BITS) - 1
        for table, doc in (("bands", f"posting & {mask}"), ("samples", "doc"), ("simhash_blocks", f"posting & {mask}")):
            assert {r[0] for r in conn.execute(f"SELECT DISTINCT {doc} FROM {table}")} <= nums
        banded = conn.execute("SELECT count(*) FROM docs WHERE n_shingles > 0").fetchone()[0]
        expected_bands = index.config.bands * banded
        assert conn.execute("SELECT count(*) FROM bands").fetchone()[0] == expected_bands
        assert conn.execute("SELECT sum(n_sample) FROM docs").fetchone()[0] == \
            conn.execute("SELECT count(*) FROM samples").fetchone()[0]


def test_bad_documents(db):
    with SeenIndex(db) as index:
        with pytest.raises(InputError):
            index.add("", "text")
        with pytest.raises(InputError):
            index.add(7, "text")
        with pytest.raises(InputError):
            index.add("x\ud800", "text")
        with pytest.raises(InputError):
            index.add("x", b"bytes")
        with pytest.raises(InputError):
            index.add("x", "text", meta=["not", "a", "dict"])
        with pytest.raises(InputError):
            index.add("x", "text", meta={"nan": float("nan")})
        assert len(index) == 0
        # a lone surrogate inside the text is fine (it is hashed with surrogatepass)
        index.add("ok", "text \ud800 more")
        assert "ok" in index


# -- the file: configuration, persistence, format ---------------------------------------------

def test_config_is_recorded_and_checked(db):
    with SeenIndex(db, shingle=ShingleParams(k=3), threshold=0.7) as index:
        index.add("a", "some words for the first document here")
    with SeenIndex(db) as index:  # nothing given: the stored config is used
        assert index.config.shingle.k == 3 and index.config.threshold == 0.7
        assert index.query("some words for the first document here")["exact"] == ["a"]
    with SeenIndex(db, shingle=ShingleParams(k=3), threshold=0.7, mod_m=8):  # equal values are fine
        pass
    with pytest.raises(IncompatibleSketchError) as err:
        SeenIndex(db, shingle=ShingleParams(k=5), minhash=MinHashParams(num_perm=64, family="mulshift64"))
    msg = str(err.value)
    assert "shingle.k stored 3, given 5" in msg and "minhash.num_perm stored 128, given 64" in msg
    with pytest.raises(IncompatibleSketchError, match="store_shingles stored False, given True"):
        SeenIndex(db, store_shingles=True)


def test_file_format_and_reopen(db, texts):
    with SeenIndex(db) as index:
        index.add_many([(f"d{i}", t) for i, t in enumerate(texts[:10])])
        before = index.query(texts[3])
        fp = index.stats()["config_fingerprint"]
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    meta = dict(conn.execute("SELECT key, value FROM meta"))
    assert meta["config_fingerprint"] == fp and json.loads(meta["config"])["minhash"]["family"] == "mulshift32"
    # uint64 values are stored as signed 64-bit integers, the same bits
    row = conn.execute("SELECT fingerprint, simhash FROM docs WHERE id = 'd3'").fetchone()
    assert row[0] & (2**64 - 1) == fingerprint(texts[3])
    assert row[1] & (2**64 - 1) == SimHash.from_text(texts[3]).value
    conn.close()
    with SeenIndex(db, create=False) as index:
        assert index.query(texts[3]) == before
        stats = index.stats()
        assert stats["documents"] == 10 and stats["schema_version"] == SCHEMA_VERSION


def test_files_that_are_not_indexes(tmp_path):
    with pytest.raises(StoreError, match="no index"):
        SeenIndex(tmp_path / "missing.db", create=False)
    with pytest.raises(StoreError, match="folder"):
        SeenIndex(tmp_path)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(StoreError, match="not a neardup index"):
        SeenIndex(junk)
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="not a neardup index"):
        SeenIndex(other)
    newer = tmp_path / "newer.db"
    SeenIndex(newer).close()
    conn = sqlite3.connect(newer)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer"):
        SeenIndex(newer)


def test_older_schema_is_refused_clearly(tmp_path, texts):
    # A file that says it is version 2 (unpacked band postings, 8-byte signatures).
    old = tmp_path / "old.db"
    with SeenIndex(old) as index:
        index.add_many([(f"d{i}", t) for i, t in enumerate(texts[:5])])
    conn = sqlite3.connect(old)
    conn.execute("PRAGMA user_version = 2")
    conn.close()
    for create in (True, False):
        with pytest.raises(StoreError, match=rf"schema version 2, older than this neardup writes \({SCHEMA_VERSION}\): rebuild"):
            SeenIndex(old, create=create)


def test_background_checkpoint(db, texts, tmp_path):
    # COMMIT never checkpoints (wal_autocheckpoint=0); a thread copies the WAL into the file.
    index = SeenIndex(db)
    index.CHECKPOINT_SECONDS = 0.05
    try:
        for i, t in enumerate(texts[:8]):
            index.add(f"d{i}", t)
        assert index._conn().execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        deadline = time.monotonic() + 300  # a hang guard: the checkpoint thread runs every 0.05 s
        while True:
            # the database file alone, without its WAL, holds every committed document
            copy = tmp_path / f"copy-{time.monotonic_ns()}.db"
            shutil.copyfile(db, copy)
            conn = sqlite3.connect(copy)
            try:
                n = conn.execute("SELECT count(*) FROM docs").fetchone()[0]
            except sqlite3.OperationalError:  # not even the schema is checkpointed yet
                n = 0
            finally:
                conn.close()
            if n == 8 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert n == 8
        index.add("d8", texts[8])
        log, done = index.checkpoint()  # now, in the caller's thread
        assert log == done > 0
    finally:
        index.close()
    assert not index._checkpointer.is_alive()


def test_closed_index_refuses(db):
    index = SeenIndex(db)
    index.close()
    index.close()
    with pytest.raises(StoreError, match="closed"):
        index.query("anything")


# -- concurrency --------------------------------------------------------------------------------

def test_threads_check_and_add_each_page_new_once(db):
    rng = random.Random(11)
    pages = [synthetic(rng, 60) for _ in range(200)]
    results = []
    lock = threading.Lock()

    with SeenIndex(db) as index:
        def worker(seed):
            order = list(range(len(pages)))
            random.Random(seed).shuffle(order)
            for i in order:
                a = index.check_and_add(f"w{seed}-{i}", pages[i])
                with lock:
                    results.append((i, a["added"]))

        threads = [threading.Thread(target=worker, args=(s,)) for s in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(index) == len(pages)
    added = [i for i, was_added in results if was_added]
    assert sorted(added) == list(range(len(pages)))


def test_group_commit_isolates_failing_work(db):
    """Work queued by several threads commits together; one piece failing undoes only itself."""
    with SeenIndex(db) as index:
        index.add("seed", "a first page so that the index is not empty")
        barrier = threading.Barrier(6)
        errors, results = [], []

        def writer(i):
            barrier.wait()
            try:
                if i == 3:
                    index._run_write(lambda conn: conn.execute("INSERT INTO nosuchtable VALUES (1)"))
                else:
                    results.append(index.add(f"t{i}", f"page number {i} with some words of its own"))
            except Exception as exc:  # noqa: BLE001
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(errors) == 1 and isinstance(errors[0], StoreError)
        assert sorted(results) == ["t0", "t1", "t2", "t4", "t5"]
        assert len(index) == 6 and index.integrity_check() == "ok"


def test_prepared_writes_commit_together_in_order(db, tmp_path):
    """run_prepared: one transaction, in order (each sees the ones before), failures isolated."""
    from neardup.store.writer import Prepared

    text = "the crawler fetches each page and follows every link it finds there"
    with SeenIndex(db) as index, SeenIndex(str(tmp_path / "other.db")) as other:
        index.add("seed", "a first page so that the index is not empty")
        first = index.prepare_check_and_add([("a", text)])
        copy = index.prepare_check_and_add([("b", text.upper() + "!")], limit=5)
        broken = Prepared(index, lambda conn: conn.execute("INSERT INTO nosuchtable VALUES (1)"))
        plain = index.prepare_add([("c", "other words entirely, nothing like the rest"), ("d", text)])
        assert len(index) == 1  # preparing writes nothing
        results = index.run_prepared([first, copy, broken, plain])
        assert results[0][0]["added"] is True and results[0][0]["exact"] == []
        assert results[1][0]["added"] is False and results[1][0]["exact"] == ["a"]
        assert isinstance(results[2], StoreError)
        assert results[3] == ["c", "d"]
        assert len(index) == 4 and index.integrity_check() == "ok"
        assert index.run_prepared([]) == []
        with pytest.raises(InputError, match="without words needs an id"):
            index.prepare_check_and_add([(None, "  ...  ")])
        with pytest.raises(InputError, match="run_prepared takes"):
            index.run_prepared([other.prepare_add([("x", text)])])
        with pytest.raises(InputError, match="run_prepared takes"):
            index.run_prepared([lambda conn: None])


def test_prepare_many_equals_one_request_at_a_time(db, texts, tmp_path):
    """Sketching several requests as one batch gives the writes and answers of one at a time."""
    requests = [("check_and_add", [(f"c{i}", t)], 3) for i, t in enumerate(texts[:6])]
    requests += [("add", [("a1", texts[6]), ("a2", texts[7])]), ("check_and_add", [("dup", texts[2].upper())]),
                 ("check_and_add", [(None, " ... ")]), ("remove", [("x", "y")]),
                 ("check_and_add", [("bad-limit", "some text")], 0), ("add", [("n", 5)]),
                 ("check_and_add", [(None, texts[8])])]
    with SeenIndex(db) as batched, SeenIndex(str(tmp_path / "one.db")) as single:
        prepared = batched.prepare_many(requests)
        assert isinstance(prepared[8], InputError) and "without words" in str(prepared[8])
        assert isinstance(prepared[9], InputError) and "unknown kind" in str(prepared[9])
        assert isinstance(prepared[10], ConfigError)
        assert isinstance(prepared[11], InputError) and "must be a str" in str(prepared[11])
        ok = [p for p in prepared if not isinstance(p, Exception)]
        got = batched.run_prepared(ok)
        want = []
        for kind, docs, *limit in [r for i, r in enumerate(requests) if i not in (8, 9, 10, 11)]:
            want.append(single.add_many(docs) if kind == "add" else single.check_and_add_many(docs, limit=limit[0])
                        if limit else single.check_and_add_many(docs))
        assert got == want and len(got) == 9
        assert got[7][0]["added"] is False and got[7][0]["exact"] == ["c2"]
        assert len(got[8][0]["id"]) == 16
        assert batched.ids() == single.ids()


_CHECK_AND_ADD_PROC = r"""
import json, random, sys
from neardup.store import SeenIndex
path, seed = sys.argv[1], int(sys.argv[2])
pages = json.load(sys.stdin)
order = list(range(len(pages)))
random.Random(seed).shuffle(order)
added = []
with SeenIndex(path) as index:
    for i in order:
        if index.check_and_add(f"p{seed}-{i}", pages[i])["added"]:
            added.append(i)
print(json.dumps(added))
"""


def test_processes_check_and_add_each_page_new_once(db):
    rng = random.Random(12)
    pages = [synthetic(rng, 50) for _ in range(150)]
    SeenIndex(db).close()
    procs = [subprocess.Popen([sys.executable, "-c", _CHECK_AND_ADD_PROC, db, str(s)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for s in range(4)]
    outs = [p.communicate(json.dumps(pages), timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    added = sorted(i for out, _ in outs for i in json.loads(out))
    assert added == list(range(len(pages)))


_QUERY_PROC = r"""
import sys, time, json
from neardup.store import SeenIndex
path, probe, total = sys.argv[1], sys.argv[2], int(sys.argv[3])
counts, errors, n = [], 0, 0
index = SeenIndex(path, create=False)
# Until the writer has finished and a few queries have seen the whole index: a count of
# events, not a number of seconds, so a slow or a fast machine gives the same test.
end = time.monotonic() + 600  # a hang guard only
while (not counts or counts[-1] < total or n < 5) and time.monotonic() < end:
    a = index.query(probe)
    counts.append(len(index))
    n += 1
print(json.dumps({"queries": n, "counts": counts[::10] + counts[-1:], "exact": len(a["exact"])}))
"""


def test_processes_query_while_one_adds(db):
    rng = random.Random(4)
    docs = [(f"p{i}", synthetic(rng, 80)) for i in range(2000)]
    probe = docs[0][1]
    with SeenIndex(db) as index:
        index.add_many(docs[:1])
    readers = [subprocess.Popen([sys.executable, "-c", _QUERY_PROC, db, probe, "2000"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for _ in range(3)]
    writer = subprocess.Popen([sys.executable, "-c", r"""
import sys, json
from neardup.store import SeenIndex
docs = json.load(sys.stdin)
with SeenIndex(sys.argv[1]) as index:
    for i in range(1, len(docs), 100):
        index.add_many(docs[i:i + 100])
""", db], stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    writer.communicate(json.dumps(docs), timeout=120)
    assert writer.returncode == 0, writer.stderr.read() if writer.stderr else ""
    for r in readers:
        out, err = r.communicate(timeout=600)
        assert r.returncode == 0, err
        report = json.loads(out)
        assert report["queries"] >= 5 and report["exact"] == 1 and report["counts"][-1] == 2000
        assert report["counts"] == sorted(report["counts"])  # each reader sees the index only grow
    with SeenIndex(db) as index:
        assert len(index) == 2000 and index.integrity_check() == "ok"


# -- command line -----------------------------------------------------------------------------

def _jsonl(path, records):
    with open(path, "w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r) + "\n")
    return str(path)


def test_cli_add_query_stats_remove(tmp_path, capsys):
    rng = random.Random(8)
    base = [synthetic(rng, 120) for _ in range(20)]
    corpus = _jsonl(tmp_path / "in.jsonl", [{"id": f"d{i}", "text": t} for i, t in enumerate(base)]
                    + [{"id": "bad"}])
    db = str(tmp_path / "x.db")
    assert main(["index", "add", "--db", db, corpus, "-k", "4", "--threshold", "0.7"]) == 0
    out = capsys.readouterr().out
    assert "added 20 documents" in out and "skipped 1 (missing_text 1)" in out and "holds 20" in out

    queries = _jsonl(tmp_path / "q.jsonl", [{"id": "q0", "text": base[0]},
                                            {"id": "q1", "text": mutate(rng, base[1], 0.02)},
                                            {"id": "q2", "text": synthetic(rng, 100)}])
    assert main(["index", "query", "--db", db, queries, "--json"]) == 1  # q0 was seen exactly
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [a["id"] for a in lines] == ["q0", "q1", "q2"]
    assert lines[0]["exact"] == ["d0"] and lines[1]["exact"] == [] and lines[1]["near"][0]["id"] == "d1"
    assert lines[2]["near"] == [] and lines[2]["exact"] == []
    fresh = _jsonl(tmp_path / "fresh.jsonl", [{"id": "f", "text": synthetic(rng, 50)}])
    assert main(["index", "query", "--db", db, fresh]) == 0
    assert capsys.readouterr().out.strip() == "f\tnew"

    assert main(["index", "stats", "--db", db, "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["documents"] == 20 and stats["config"]["shingle"]["k"] == 4
    assert main(["index", "stats", "--db", db]) == 0
    assert "documents  20" in capsys.readouterr().out

    # options must match the stored config; left out, the stored ones are used
    assert main(["index", "add", "--db", db, corpus, "-k", "5"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("neardup: error:") and "shingle.k stored 4, given 5" in err and len(err.splitlines()) == 1
    assert main(["index", "query", "--db", db, queries, "--threshold", "0.7", "--unit", "word"]) == 1
    capsys.readouterr()

    assert main(["index", "remove", "--db", db, "d0", "nope"]) == 1
    assert "removed 1 of 2" in capsys.readouterr().out
    assert main(["index", "remove", "--db", db, "d1"]) == 0
    assert main(["index", "stats", "--db", str(tmp_path / "none.db")]) == 2
    assert "no index" in capsys.readouterr().err


def test_cli_reads_text_files_and_html(tmp_path, capsys):
    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / "a.txt").write_text("plain text page about crawlers and indexes " * 5)
    (folder / "b.txt").write_text("another plain page about something else entirely " * 5)
    db = str(tmp_path / "t.db")
    assert main(["index", "add", "--db", db, str(folder)]) == 0
    assert "added 2 documents" in capsys.readouterr().out
    html = tmp_path / "p.html"
    html.write_text("<html><body><nav>menu</nav><article><p>" + "plain text page about crawlers and indexes " * 5
                    + "</p></article></body></html>")
    assert main(["index", "query", "--db", db, str(html), "--json"]) == 1
    (answer,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert answer["exact"] == [str(folder / "a.txt")]


def test_cli_verbose_commits(tmp_path, capsys):
    rng = random.Random(1)
    corpus = _jsonl(tmp_path / "in.jsonl", [{"id": f"d{i}", "text": synthetic(rng, 30)} for i in range(25)])
    db = str(tmp_path / "v.db")
    assert main(["index", "add", "--db", db, corpus, "--batch-size", "10", "-v"]) == 0
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if "committed" in line] == [
        "neardup: committed 10 documents (last id d9)", "neardup: committed 20 documents (last id d19)",
        "neardup: committed 25 documents (last id d24)"]


def test_odd_file_names(tmp_path, capsys):
    db = str(tmp_path / "crawl ?#%20 index.db")
    with SeenIndex(db, shingle=ShingleParams(k=4)) as index:
        index.add("a", "some words for the first document here")
    assert SeenIndex.stored_config(db)["shingle"]["k"] == 4
    assert main(["index", "stats", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["documents"] == 1


def test_an_index_made_with_the_former_defaults_opens_with_its_own(tmp_path):
    """Files made before the defaults became dedup's (mulshift64, 21 x 6) record their values
    and open with them, answering as before."""
    db = str(tmp_path / "old.db")
    text = "the crawler fetches each page and follows every link it finds there"
    with SeenIndex(db, minhash=MinHashParams(num_perm=128, seed=1, family="mulshift64"), bands=21, rows=6) as index:
        index.add("a", text)
    with SeenIndex(db) as index:
        assert (index.config.minhash.family, index.config.bands, index.config.rows) == ("mulshift64", 21, 6)
        assert [n["id"] for n in index.query(text)["near"]] == ["a"]
    with SeenIndex(db, threshold=0.8) as index:  # the recorded threshold, given again
        assert (index.config.bands, index.config.rows) == (21, 6)


def test_a_new_index_bands_and_hashes_as_dedup():
    from neardup.config import DedupConfig

    with tempfile.TemporaryDirectory() as d, SeenIndex(os.path.join(d, "seen.db")) as index:
        dedup = DedupConfig()
        assert index.config.minhash == dedup.minhash and index.config.shingle == dedup.shingle
        assert (index.config.bands, index.config.rows) == (dedup.banding().bands, dedup.banding().rows) == (18, 7)


def test_an_index_made_with_other_parameters_than_a_dedup_run_is_refused(tmp_path):
    from neardup.config import DedupConfig

    db = str(tmp_path / "seen.db")
    SeenIndex.for_dedup(db, DedupConfig(threshold=0.8)).close()
    with pytest.raises(IncompatibleSketchError) as err:
        SeenIndex.for_dedup(db, DedupConfig(threshold=0.7, minhash=MinHashParams(num_perm=128, seed=2,
                                                                                  family="mulshift32")))
    msg = str(err.value)
    assert "index 0.8, dedup run 0.7" in msg and "minhash.seed: index 1, dedup run 2" in msg
    assert "bands: index 18, dedup run 25" in msg


def test_profiles_store_what_they_say(tmp_path, texts):
    """lean: no signatures, near answers estimated from the shared bands; default: signatures
    as wide as the family's values (4 bytes for mulshift32), no MOD_m samples; full: samples."""
    rng = random.Random(3)
    docs = [(f"d{i}", t) for i, t in enumerate(texts[:30])] + [("copy", mutate(rng, texts[0], 0.01))]
    sizes = {}
    for profile in ("lean", "default", "full"):
        path = tmp_path / f"{profile}.db"
        with SeenIndex(path, profile=profile) as index:
            index.add_many(docs)
            assert index.config.profile == profile and index.stats()["config"]["signatures"]["stored"] == (
                profile != "lean")
            answer = index.query(texts[0], limit=None)
            assert answer["exact"] == ["d0"]
            near = {e["id"]: e["jaccard"] for e in answer["near"]}
            assert near["d0"] == 1.0 and "copy" in near
            assert bool(answer["contains"]) == (profile == "full")
            conn = index._conn()
            widths = {len(r[0]) for r in conn.execute("SELECT signature FROM docs WHERE signature IS NOT NULL")}
            # default: the low 16 bits of each value; full: the whole 32-bit value
            assert widths == {"lean": set(), "default": {256}, "full": {512}}[profile]
            assert (conn.execute("SELECT count(*) FROM samples").fetchone()[0] > 0) == (profile == "full")
            # lean leaves the postings of a replaced document (its number is never given again)
            index.add("d1", texts[39])
            assert index.query(texts[1])["near"] == []
        sizes[profile] = os.path.getsize(path)
    assert sizes["lean"] < sizes["default"] < sizes["full"]
    with pytest.raises(IncompatibleSketchError, match="signatures.stored stored False, given True"):
        SeenIndex(tmp_path / "lean.db", profile="default")
    with pytest.raises(ConfigError, match="profile"):
        SeenIndex(tmp_path / "x.db", profile="tiny")


def test_cli_profile_and_stats(tmp_path, capsys):
    rng = random.Random(9)
    corpus = _jsonl(tmp_path / "in.jsonl", [{"id": f"d{i}", "text": synthetic(rng, 120)} for i in range(10)])
    db = str(tmp_path / "lean.db")
    assert main(["index", "add", "--db", db, corpus, "--profile", "lean"]) == 0
    capsys.readouterr()
    assert main(["index", "stats", "--db", db]) == 0
    out = capsys.readouterr().out
    assert "signatures not stored (profile lean" in out and "(not stored: no containment answers)" in out
    # the recorded profile is checked like every other option
    assert main(["index", "add", "--db", db, corpus, "--profile", "full"]) == 2
    assert "signatures.stored stored False, given True" in capsys.readouterr().err
