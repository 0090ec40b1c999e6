"""``--jobs`` defaults to the CPUs this process may use: its affinity mask and its cgroup's quota."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from conftest import D1, D2
from neardup.cpus import available_cpus, cgroup_cpu_quota

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="affinity and cgroups are Linux's")


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


def _mountinfo(point: Path, fstype: str, root: str = "/", options: str = "rw") -> str:
    return f"30 25 0:26 {root} {point} rw,nosuid - {fstype} {fstype} {options}\n"


def test_v2_quota_is_the_smallest_over_the_ancestors(tmp_path):
    cg = tmp_path / "cg"
    _tree(cg, {"cgroup.procs": "", "cpu.max": "max 100000\n",
               "kube/cgroup.procs": "", "kube/cpu.max": "250000 100000\n",        # 2.5 CPUs
               "kube/pod/cgroup.procs": "", "kube/pod/cpu.max": "max 100000\n"})   # no limit of its own
    (tmp_path / "cgroup").write_text("0::/kube/pod\n")
    (tmp_path / "mountinfo").write_text(_mountinfo(cg, "cgroup2"))
    assert cgroup_cpu_quota(str(tmp_path / "cgroup"), str(tmp_path / "mountinfo")) == 2.5


def test_v2_inside_a_container_whose_mount_root_is_its_own_cgroup(tmp_path):
    # the mount shows the hierarchy from /kube/pod down, and /proc/self/cgroup names the full path
    cg = tmp_path / "cg"
    _tree(cg, {"cgroup.procs": "", "cpu.max": "50000 100000\n"})
    (tmp_path / "cgroup").write_text("0::/kube/pod\n")
    (tmp_path / "mountinfo").write_text(_mountinfo(cg, "cgroup2", root="/kube/pod"))
    assert cgroup_cpu_quota(str(tmp_path / "cgroup"), str(tmp_path / "mountinfo")) == 0.5


def test_v1_quota_and_no_quota(tmp_path):
    cpu = tmp_path / "cpu"
    _tree(cpu, {"cgroup.procs": "", "cpu.cfs_quota_us": "-1\n", "cpu.cfs_period_us": "100000\n",
                "job/cgroup.procs": "", "job/cpu.cfs_quota_us": "150000\n", "job/cpu.cfs_period_us": "100000\n"})
    (tmp_path / "cgroup").write_text("5:memory:/x\n3:cpu,cpuacct:/job\n")
    (tmp_path / "mountinfo").write_text(_mountinfo(tmp_path / "memory", "cgroup", options="rw,memory")
                                        + _mountinfo(cpu, "cgroup", options="rw,cpu,cpuacct"))
    assert cgroup_cpu_quota(str(tmp_path / "cgroup"), str(tmp_path / "mountinfo")) == 1.5
    (tmp_path / "cgroup").write_text("3:cpu,cpuacct:/\n")
    assert cgroup_cpu_quota(str(tmp_path / "cgroup"), str(tmp_path / "mountinfo")) is None
    assert cgroup_cpu_quota(str(tmp_path / "missing"), str(tmp_path / "mountinfo")) is None


def _dedup_jobs(tmp_path: Path, prefix: str) -> int:
    """The ``jobs`` that ``neardup dedup`` without ``--jobs`` records, run after ``prefix``
    (Python that confines the process first)."""
    corpus = tmp_path / "in.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate([D1, D2])))
    out = tmp_path / f"out-{uuid.uuid4().hex[:8]}"
    code = (f"{prefix}\nimport sys\nfrom neardup.cli import main\n"
            f"sys.exit(main(['dedup', {str(corpus)!r}, '-o', {str(out)!r}, '--quiet']))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads((out / "summary.json").read_text())["jobs"]


@linux
def test_dedup_under_an_affinity_of_one_cpu_uses_one_worker(tmp_path):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("this machine gives the tests one CPU: nothing to confine")
    assert _dedup_jobs(tmp_path, "") == available_cpus() >= 2
    # what `taskset -c N neardup dedup ...` does
    one = min(os.sched_getaffinity(0))
    assert _dedup_jobs(tmp_path, f"import os; os.sched_setaffinity(0, {{{one}}})") == 1


def _writable_cpu_cgroup() -> tuple[Path, str] | None:
    """A fresh child cgroup with a CPU quota file, or None where this process may not make one."""
    name = f"neardup-test-{uuid.uuid4().hex[:8]}"
    for base, kind in ((Path("/sys/fs/cgroup/cpu"), "v1"), (Path("/sys/fs/cgroup"), "v2")):
        if kind == "v2" and not (base / "cgroup.controllers").exists():
            continue
        if kind == "v1" and not (base / "cpu.cfs_quota_us").exists():
            continue
        try:
            (base / name).mkdir()
        except OSError:
            continue
        return base / name, kind
    return None


@linux
def test_dedup_under_a_cgroup_quota_of_one_cpu_uses_one_worker(tmp_path):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("this machine gives the tests one CPU: nothing to confine")
    made = _writable_cpu_cgroup()
    if made is None:
        pytest.skip("cannot create a cgroup here (needs root and a writable cgroup file system)")
    group, kind = made
    try:
        if kind == "v1":
            (group / "cpu.cfs_period_us").write_text("100000")
            (group / "cpu.cfs_quota_us").write_text("100000")
        else:
            (group / "cpu.max").write_text("100000 100000")
        enter = f"open({str(group / 'cgroup.procs')!r}, 'w').write(str(__import__('os').getpid()))"
        assert _dedup_jobs(tmp_path, enter) == 1
    finally:
        try:
            group.rmdir()  # empty again once the child has exited
        except OSError:
            pass
