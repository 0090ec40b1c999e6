"""Keeping an index file mapped (neardup.store.resident): on a real file, through growth,
replacement, removal and truncation, and closed cleanly. No timing assertions: each test waits
(with a generous deadline) for the background thread to report the state it expects."""

from __future__ import annotations

import os
import sys
import time

import pytest

from neardup.store import SeenIndex
from neardup.store.resident import ResidentFile

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mmap/madvise through libc: Linux")


def wait_for(predicate, what: str, timeout: float = 300.0):  # a hang guard, not a speed test
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:g} s for {what}")
        time.sleep(0.02)


def mapped_rss_kib(path: str) -> int:
    """Resident KiB of this process's mappings of ``path``, from /proc/self/smaps."""
    total, current = 0, False
    target = os.path.realpath(path)
    with open("/proc/self/smaps") as fh:
        for line in fh:
            head = line.split(None, 5)
            if "-" in head[0] and len(head) >= 5 and ":" in head[3]:  # a mapping's first line
                current = len(head) == 6 and head[5].strip().removesuffix(" (deleted)") == target
            elif current and line.startswith("Rss:"):
                total += int(line.split()[1])
    return total


@pytest.fixture
def resident():
    made = []

    def make(path, **kw):
        r = ResidentFile(path, **kw)
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()


def supported(r: ResidentFile) -> None:
    wait_for(lambda: r.state != "starting", "the first round")
    if r.state.startswith("unsupported"):
        pytest.skip(r.state)


def test_maps_the_whole_file_and_follows_its_growth(tmp_path, resident):
    path = str(tmp_path / "data.bin")
    with open(path, "wb") as fh:
        fh.write(os.urandom(3 << 20))
    r = resident(path, interval=0.05)
    supported(r)
    wait_for(lambda: r.state == "resident" and r.mapped_bytes == 3 << 20, "3 MiB mapped")
    # the pages are in this process's page tables: the kernel counts them resident in the mapping
    assert mapped_rss_kib(path) >= 3 << 10
    with open(path, "ab") as fh:  # appended, as a checkpoint appends pages
        fh.write(os.urandom(5 << 20))
    wait_for(lambda: r.mapped_bytes == 8 << 20, "the grown file mapped")
    assert mapped_rss_kib(path) >= 8 << 10
    with open(path, "ab") as fh:  # past the room reserved at first (64 MiB): the mapping moves
        fh.truncate(70 << 20)
    wait_for(lambda: r.mapped_bytes == 70 << 20, "a file larger than the first mapping")
    assert r.info()["state"] == "resident" and r.info()["rounds"] >= 3
    r.close()
    assert r.state == "closed" and r.mapped_bytes == 0
    assert mapped_rss_kib(path) == 0
    r.close()  # idempotent


def test_replaced_removed_and_truncated_files(tmp_path, resident):
    path = str(tmp_path / "data.bin")
    with open(path, "wb") as fh:
        fh.write(os.urandom(2 << 20))
    r = resident(path, interval=0.05)
    supported(r)
    wait_for(lambda: r.mapped_bytes == 2 << 20, "2 MiB mapped")
    # replaced (a restore renames a new file over the old one): the new file is mapped
    new = str(tmp_path / "new.bin")
    with open(new, "wb") as fh:
        fh.write(os.urandom(1 << 20))
    os.replace(new, path)
    wait_for(lambda: r.mapped_bytes == 1 << 20 and r.state == "resident", "the new file mapped")
    # truncated under the mapping: no SIGBUS (the process never reads the mapping itself)
    os.truncate(path, 300_000)
    wait_for(lambda: r.mapped_bytes == 300_000, "the shorter file mapped")
    # removed: let go, and wait for a file to come back
    os.remove(path)
    wait_for(lambda: r.state == "waiting" and r.mapped_bytes == 0, "the removed file let go")
    assert mapped_rss_kib(path) == 0
    with open(path, "wb") as fh:
        fh.write(b"x" * 10_000)
    wait_for(lambda: r.state == "resident" and r.mapped_bytes == 10_000, "the file that came back")


def test_missing_file_waits(tmp_path, resident):
    r = resident(str(tmp_path / "nothing-yet.db"), interval=0.05)
    wait_for(lambda: r.state != "starting", "the first round")
    # nothing to map yet: the thread waits for the file (madvise is never tried, so "unsupported"
    # cannot be the answer on Linux, where libc is always there)
    assert r.state == "waiting" and r.mapped_bytes == 0
    r.close()
    assert r.state == "closed"


def test_index_kept_resident_while_it_grows(tmp_path):
    db = str(tmp_path / "seen.db")
    words = [f"w{i}" for i in range(5000)]
    with SeenIndex(db, resident=True) as index:
        index._resident.interval = 0.05
        assert index.stats()["resident"]["state"] in ("starting", "populating", "resident", "waiting")
        if index._resident.state.startswith("unsupported"):
            pytest.skip(index._resident.state)
        for start in range(0, 400, 100):
            index.add_many([(f"d{i}", " ".join(words[(i * 37 + j * 11) % 5000] for j in range(150)))
                            for i in range(start, start + 100)])
        index.checkpoint()
        size = os.path.getsize(db)
        wait_for(lambda: index.resident_info()["mapped_bytes"] == os.path.getsize(db), "the index file mapped")
        assert os.path.getsize(db) >= size > 0
        assert index.stats()["resident"]["state"] == "resident"
        assert index.query(" ".join(words[(5 * 37 + j * 11) % 5000] for j in range(150)))["exact"] == ["d5"]
        assert index.keep_resident()["state"] == "resident"  # idempotent
    assert index.resident_info() is None
    assert mapped_rss_kib(db) == 0


def test_not_resident_by_default(tmp_path):
    with SeenIndex(str(tmp_path / "seen.db")) as index:
        index.add("a", "some words to store in the index")
        assert index.resident_info() is None and index.stats()["resident"] is None
