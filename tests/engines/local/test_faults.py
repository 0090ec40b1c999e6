"""Faults while ``neardup dedup`` writes: a full disk (a small tmpfs that fills at several points),
a file-size limit (RLIMIT_FSIZE, no root needed), a read-only output (a read-only bind mount as
root, a folder without write permission otherwise), the memory limit. Every time: exit status 4
(OUTPUT_ERROR), one line naming the path (and the space needed), no summary.json, the input
untouched; and the same command resumes once the fault is gone."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from dedup_runs import dedup, file_sha, folder_digest, write_corpus

OUTPUT_ERROR = 4


def _root_mounts_or_skip(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs or a read-only bind mount needs root (the RLIMIT_FSIZE and "
                    "permission tests cover the same paths without it)")
    probe = tmp_path / "probe"
    probe.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"root, but mount is refused here (a container without CAP_SYS_ADMIN?): {res.stderr.strip()}")
    subprocess.run(["umount", str(probe)], check=True)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("corpus") / "in.jsonl", docs=2500)


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "out"
    dedup(corpus, "-o", out, "--output-shards", 3, check=True)
    return out


def _assert_clean_failure(res, out, corpus, sha, *words):
    """The run failed with one line on stderr, neardup's error, holding ``words``."""
    assert res.returncode == OUTPUT_ERROR, (res.returncode, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("neardup: error: "), lines
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert "Traceback" not in res.stderr
    assert not os.path.exists(os.path.join(out, "summary.json"))  # nothing looks complete
    assert file_sha(corpus) == sha  # the input untouched
    return lines[0]


def test_full_disk_at_several_points_then_resume(corpus, reference, tmp_path):
    _root_mounts_or_skip(tmp_path)
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2M", "tmpfs", str(mnt)], check=True)
    sha = file_sha(corpus)
    where = []
    try:
        # the run needs more than 2 MB; a filler leaves less and less room, so the disk fills
        # while the run writes its work folder, its stages and its outputs
        for k, free_kb in enumerate((0, 4, 160, 600, 1100, 1600)):
            out = mnt / f"out{k}"
            filler = mnt / "filler"
            filler.unlink(missing_ok=True)
            shutil.rmtree(mnt / f"out{k - 1}", ignore_errors=True)
            st = os.statvfs(mnt)
            with open(filler, "wb") as fh:
                fh.write(b"\0" * max(0, st.f_bavail * st.f_frsize - free_kb * 1024))
            # the check before the run refuses it up front (exit 4, one line, nothing written) ...
            res = dedup(corpus, "-o", out, "--output-shards", 3)
            _assert_clean_failure(res, out, corpus, sha, "not enough disk for this run", str(mnt), "GB free")
            # ... and a disk that fills while the run writes (the check skipped, as when another
            # writer fills it) fails as cleanly, wherever it fills
            res = dedup(corpus, "-o", out, "--output-shards", 3, env={"NEARDUP_TEST_NO_DISK_CHECK": "1"})
            line = _assert_clean_failure(res, out, corpus, sha, "no space left on the device writing",
                                         str(mnt), "the run needs about", "MB there and had")
            where.append(line.split(" writing ", 1)[1].split(" (", 1)[0])
        # the failures came at different places: the work folder's files, the stages, the outputs
        assert len(set(where)) >= 4, where
        # with the room back (a larger tmpfs), the same command resumes, to the same outputs
        subprocess.run(["mount", "-o", "remount,size=64M", str(mnt)], check=True)
        (mnt / "filler").unlink()
        res = dedup(corpus, "-o", out, "--output-shards", 3)
        assert res.returncode == 0, res.stderr
        assert folder_digest(out) == folder_digest(reference)
    finally:
        subprocess.run(["umount", "-l", str(mnt)])


def _fsize_limit(limit):
    def setup():
        import resource
        import signal

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return setup


@pytest.mark.parametrize("limit", [200, 300_000, 900_000])
def test_file_size_limit_without_root(corpus, reference, tmp_path, limit):
    sha = file_sha(corpus)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "neardup", "dedup", corpus, "-o", str(out), "--output-shards", "3", "--quiet"]
    res = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=_fsize_limit(limit))
    _assert_clean_failure(res, out, corpus, sha, "file too large writing", str(out), "ulimit -f")
    res = subprocess.run(cmd, capture_output=True, text=True)  # the limit lifted: resumes
    assert res.returncode == 0, res.stderr
    assert folder_digest(out) == folder_digest(reference)


def test_read_only_filesystem(corpus, tmp_path):
    _root_mounts_or_skip(tmp_path)
    ro = tmp_path / "ro"
    (ro / "existing").mkdir(parents=True)
    subprocess.run(["mount", "--bind", str(ro), str(ro)], check=True)
    sha = file_sha(corpus)
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(ro)], check=True)
        for out in (ro / "new", ro / "existing"):  # a folder to create, and one to write into
            res = dedup(corpus, "-o", out)
            _assert_clean_failure(res, out, corpus, sha, "read-only filesystem: cannot write", str(out))
    finally:
        subprocess.run(["umount", "-l", str(ro)])


def test_folder_without_write_permission(corpus, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes through permission bits; as root, test_read_only_filesystem covers this")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        res = dedup(corpus, "-o", locked / "out")
        _assert_clean_failure(res, locked / "out", corpus, file_sha(corpus), "permission denied: cannot write")
    finally:
        locked.chmod(0o755)


@pytest.mark.parametrize("stage", ["sketch", "candidates", "cluster", "write"])
def test_memory_limit_names_the_in_memory_mb_to_use(corpus, reference, tmp_path, stage):
    sha = file_sha(corpus)
    out = tmp_path / "out"
    res = dedup(corpus, "-o", out, "--output-shards", 3, env={"NEARDUP_TEST_FAULT": f"memory@{stage}"})
    line = _assert_clean_failure(res, out, corpus, sha, f"out of memory in the {stage} stage",
                                 "--in-memory-mb 128 (now 512)")
    assert "resumes after the last completed stage" in line
    # the advice followed: the run resumes with less held in memory
    res = dedup(corpus, "-o", out, "--output-shards", 3, "--in-memory-mb", 128)
    assert res.returncode == 0, res.stderr
    assert folder_digest(out) == folder_digest(reference)


@pytest.mark.parametrize("room_mb", [48, 96])
def test_real_memory_limit(corpus, tmp_path, room_mb):
    # RLIMIT_AS: the process's address space capped a little above what it has when it starts,
    # so that the run's own allocations fail. With 48 MB of room they fail while the reader scans
    # blocks and the kernel sketches batches, on two threads: there CPython 3.11's bytearray flaw
    # (native/new_bytearray.h) printed its SystemError in every run before it was worked around
    out = tmp_path / "out"
    probe = subprocess.run([sys.executable, "-c", "import neardup.engines.local.run, numpy, resource; "
                            "print(open('/proc/self/statm').read().split()[0])"], capture_output=True, text=True)
    pages = int(probe.stdout.split()[0])
    limit = pages * os.sysconf("SC_PAGE_SIZE") + (room_mb << 20)
    big = write_corpus(tmp_path / "big.jsonl", docs=60000, seed=9)

    def cap():
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    res = subprocess.run([sys.executable, "-m", "neardup", "dedup", big, "-o", str(out), "--jobs", "1", "--quiet",
                          "--in-memory-mb", "4096"], capture_output=True, text=True, preexec_fn=cap)
    if res.returncode == 0:
        pytest.fail("the run fitted in the capped address space; raise the corpus or lower the cap")
    # nothing but neardup's one line: no "SystemError: deallocated bytearray object has exported
    # buffers" from a bytearray that could not be allocated (native/new_bytearray.h)
    line = _assert_clean_failure(res, out, big, file_sha(big), "out of memory in the", "--in-memory-mb 1024 (now 4096)")
    summary_absent = not (out / "summary.json").exists()
    assert summary_absent and json.loads((out / ".neardup-work" / "run.json").read_text())["config_fingerprint"]
    assert line
