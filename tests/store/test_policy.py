"""check-and-add's policy (exact or near, both atomic) and the bounded write-ahead log, on real
SQLite files, threads, and a real ``neardup serve`` process on loopback."""

from __future__ import annotations

import os
import random
import threading

import pytest

from neardup import ConfigError
from neardup.store import SeenIndex

VOCAB = [f"w{i}" for i in range(5000)]


def page(rng: random.Random, n: int = 200) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(n))


def near_copy(rng: random.Random, text: str, changes: int = 2) -> str:
    words = text.split()
    for _ in range(changes):
        words[rng.randrange(len(words))] = rng.choice(VOCAB)
    return " ".join(words)


def test_near_policy_refuses_a_near_copy_that_exact_adds(tmp_path):
    rng = random.Random(1)
    text = page(rng)
    copy = near_copy(rng, text)
    with SeenIndex(tmp_path / "seen.db") as index:
        assert index.check_and_add("a", text, policy="near")["added"]
        answer = index.check_and_add("b", copy, policy="near")
        assert answer["added"] is False and [e["id"] for e in answer["near"]] == ["a"] and answer["exact"] == []
        assert "b" not in index
        assert index.check_and_add("b", copy)["added"]  # exact policy: not an exact copy
        assert index.check_and_add("c", page(rng), policy="near")["added"]
        with pytest.raises(ConfigError, match="policy"):
            index.check_and_add("d", text, policy="fuzzy")


def test_near_policy_is_atomic_across_threads(tmp_path):
    rng = random.Random(2)
    pairs = [(page(rng), None) for _ in range(30)]
    pairs = [(t, near_copy(rng, t)) for t, _ in pairs]
    with SeenIndex(tmp_path / "seen.db") as index:
        for k, (a, b) in enumerate(pairs):
            barrier = threading.Barrier(2)
            results = {}

            def post(name, text):
                barrier.wait()
                results[name] = index.check_and_add(f"{k}-{name}", text, policy="near")["added"]

            threads = [threading.Thread(target=post, args=(n, t)) for n, t in (("x", a), ("y", b))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert sorted(results.values()) == [False, True], k
        assert len(index) == len(pairs)


def test_near_policy_is_atomic_through_the_service(tmp_path):
    httpx = pytest.importorskip("httpx")
    pytest.importorskip("fastapi")
    # the service tests' server (a real `python -m neardup serve` process), loaded by path
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "service_test_app", os.path.join(os.path.dirname(__file__), "..", "service", "test_app.py"))
    service_tests = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(service_tests)
    Server = service_tests.Server

    rng = random.Random(3)
    pairs = [(t, near_copy(rng, t)) for t in (page(rng) for _ in range(24))]
    srv = Server(str(tmp_path / "seen.db"), extra=("--workers", "2"))
    try:
        with httpx.Client(base_url=srv.url, timeout=60) as client:
            for k, (a, b) in enumerate(pairs):
                barrier = threading.Barrier(2)
                results = {}

                def post(name, text):
                    barrier.wait()
                    r = client.post("/v1/check-and-add", params={"policy": "near"},
                                    json={"id": f"{k}-{name}", "text": text})
                    assert r.status_code == 200, r.text
                    results[name] = r.json()["added"]

                threads = [threading.Thread(target=post, args=(n, t)) for n, t in (("x", a), ("y", b))]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                assert sorted(results.values()) == [False, True], k
            bad = client.post("/v1/check-and-add", params={"policy": "fuzzy"}, json={"text": "x y z"})
            assert bad.status_code == 422
    finally:
        assert srv.stop() == 0
    with SeenIndex(tmp_path / "seen.db", create=False) as index:
        assert len(index) == len(pairs)


def test_wal_is_cut_back_under_uninterrupted_writes_and_reads(tmp_path):
    rng = random.Random(4)
    path = tmp_path / "seen.db"
    index = SeenIndex(path)
    index.CHECKPOINT_SECONDS = 0.02
    index.WAL_LIMIT_BYTES = 1 << 20
    stop = threading.Event()
    queries = [0]

    def reader():  # a reader in a transaction at almost every moment
        with SeenIndex(path, create=False) as other:
            while not stop.is_set():
                other.query(page(rng, 50))
                queries[0] += 1

    thread = threading.Thread(target=reader)
    thread.start()
    wal = str(path) + "-wal"
    try:
        largest = 0
        for batch in range(40):
            index.add_many([(f"{batch}-{i}", page(rng)) for i in range(100)])
            largest = max(largest, os.path.getsize(wal))
        assert largest > index.WAL_LIMIT_BYTES  # the stream did outgrow the limit between checkpoints
        for _ in range(500):  # the checkpoints catch up with the reader still reading
            if index.truncations and os.path.getsize(wal) <= index.WAL_LIMIT_BYTES:
                break
            index.add_many([(f"tail-{rng.random()}", page(rng))])
            stop.wait(0.02)
        else:
            pytest.fail(f"the WAL stayed at {os.path.getsize(wal):,} bytes ({index.truncations} truncations)")
        assert queries[0] > 0 and index.stats()["wal_truncations"] >= 1
    finally:
        stop.set()
        thread.join()
        index.close()
