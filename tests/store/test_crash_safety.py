"""Crash safety: SIGKILL in the middle of a large ``neardup index add`` and of a stream of
``/v1/add`` calls; afterwards the index opens, passes ``PRAGMA integrity_check``, and holds every
add that was acknowledged (a commit line from the CLI, a 200 from the service)."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from cloud_servers import free_port

from neardup.store import SeenIndex, runs


def _corpus(path, n: int, seed: int = 0) -> list[str]:
    import numpy as np

    rng = np.random.default_rng(seed)
    vocab = [f"t{i}" for i in range(20000)]
    tokens = rng.integers(0, len(vocab), size=n * 200)
    lengths = rng.integers(40, 200, size=n)
    ids = []
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            doc_id = f"doc-{i:06d}"
            ids.append(doc_id)
            text = " ".join(vocab[t] for t in tokens[i * 200:i * 200 + lengths[i]])
            fh.write(json.dumps({"id": doc_id, "text": text}) + "\n")
    return ids


def _check_file(db: str) -> None:
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        conn.close()


def _stored_ids(db: str) -> set[str]:
    with SeenIndex(db, create=False) as index:
        assert index.integrity_check() == "ok"
        ids = set(index.ids())
        assert len(index) == len(ids)  # the document counter committed with the documents
        conn = index._conn()
        # no half-written document: every one has its band, sample and simhash postings (rows,
        # or posting runs for batches of runs.ROWS_BELOW documents and more: index add's)
        banded = conn.execute("SELECT count(*) FROM docs WHERE n_shingles > 0").fetchone()[0]
        assert conn.execute("SELECT count(*) FROM bands").fetchone()[0] + \
            runs.all_postings(conn, runs.KIND_BANDS).size == banded * index.config.bands
        assert conn.execute("SELECT coalesce(sum(n_sample), 0) FROM docs").fetchone()[0] == \
            conn.execute("SELECT count(*) FROM samples").fetchone()[0]
        blocks = len(index._blocks)
        assert conn.execute("SELECT count(*) FROM simhash_blocks").fetchone()[0] + \
            runs.all_postings(conn, runs.KIND_SIMHASH).size == \
            blocks * conn.execute("SELECT count(*) FROM docs WHERE simhash IS NOT NULL").fetchone()[0]
    return ids


@pytest.mark.parametrize("kill_after", [3])
def test_sigkill_during_index_add(tmp_path, kill_after):
    corpus = tmp_path / "in.jsonl"
    ids = _corpus(corpus, 30_000, seed=kill_after)
    db = str(tmp_path / "crash.db")
    proc = subprocess.Popen([sys.executable, "-m", "neardup", "index", "add", "--db", db, str(corpus),
                             "--batch-size", "1000", "--jobs", "1", "-v"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    acknowledged = 0
    commits = 0
    for line in proc.stderr:
        m = re.match(r"neardup: committed (\d+) documents", line)
        if m:
            acknowledged = int(m.group(1))
            commits += 1
            if commits == kill_after:
                # let the next transaction get under way, then kill it mid-flight
                time.sleep(random.Random(kill_after).uniform(0.05, 0.4))
                proc.send_signal(signal.SIGKILL)
                break
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the add finished before it could be killed; make the corpus larger"
    assert os.path.exists(db + "-wal")  # the process died without checkpointing
    _check_file(db)
    stored = _stored_ids(db)
    assert set(ids[:acknowledged]) <= stored
    # batches commit whole: what is stored is a prefix of the input in whole batches
    assert len(stored) % 1000 == 0 and stored == set(ids[:len(stored)])
    # the index keeps working: the rest goes in
    rest = tmp_path / "rest.jsonl"
    with open(corpus) as src, open(rest, "w") as dst:
        for i, line in enumerate(src):
            if len(stored) <= i < len(stored) + 1000:
                dst.write(line)
    r = subprocess.run([sys.executable, "-m", "neardup", "index", "add", "--db", db, str(rest)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert _stored_ids(db) == set(ids[:len(stored) + 1000])




def _start_server(db: str, port: int) -> subprocess.Popen:
    httpx = pytest.importorskip("httpx")
    proc = subprocess.Popen([sys.executable, "-m", "neardup", "serve", "--db", db, "--port", str(port),
                             "--log-level", "warning"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(proc.stderr.read().decode(errors="replace"))
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("server did not start")


def _children(pid: int) -> list[int]:
    """The child processes of ``pid`` (Linux /proc)."""
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                out += [int(c) for c in fh.read().split()]
        except OSError:
            pass
    return out


def _alive(pid: int) -> bool:
    """False once ``pid`` has exited (a zombie, reparented to init, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.service
def test_sigkill_during_a_stream_of_service_adds(tmp_path):
    httpx = pytest.importorskip("httpx")
    pytest.importorskip("fastapi")
    db = str(tmp_path / "svc.db")
    port = free_port()
    proc = _start_server(db, port)
    acknowledged: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def client(worker: int) -> None:
        rng = random.Random(worker)
        n = 0
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
            while not stop.is_set():
                batch = rng.random() < 0.3
                docs = [{"id": f"w{worker}-{n + j}", "text": " ".join(f"t{rng.randrange(20000)}" for _ in range(80))}
                        for j in range(8 if batch else 1)]
                n += len(docs)
                try:
                    r = c.post("/v1/add", json={"documents": docs} if batch else docs[0])
                except httpx.TransportError:
                    return  # the server died with this request in flight: not acknowledged
                if r.status_code == 200:
                    with lock:
                        acknowledged.extend(d["id"] for d in docs)

    threads = [threading.Thread(target=client, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    # The kill comes once 600 adds are acknowledged, however long that takes; the bound on the
    # number of polls only turns a hang into a failure.
    for _ in range(12_000):
        if len(acknowledged) >= 600 or proc.poll() is not None:
            break
        time.sleep(0.05)
    if len(acknowledged) < 600:
        pytest.fail("the service stopped acknowledging adds (hung or exited)")
    # The server's writer and batch processes outlive it: each commits the groups already in
    # its pipe, then sees the pipe closed and exits. The file is read once they are gone, so
    # that what is checked below is final.
    children = _children(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    for _ in range(2_400):  # a bound on polls, only against a hang
        if not any(_alive(c) for c in children):
            break
        time.sleep(0.05)
    else:
        pytest.fail("a child process of the killed server never exited")
    assert proc.returncode == -signal.SIGKILL
    assert len(acknowledged) >= 600
    _check_file(db)
    stored = _stored_ids(db)
    missing = set(acknowledged) - stored
    assert not missing, f"{len(missing)} acknowledged adds lost, e.g. {sorted(missing)[:5]}"
    # and the service comes back on the same file
    proc = _start_server(db, port)
    try:
        r = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10)
        assert r.json()["documents"] == len(stored)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
