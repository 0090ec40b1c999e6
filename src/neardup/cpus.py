"""How many CPUs this process may use: the default of every ``--jobs``.

``os.cpu_count()`` counts the machine's CPUs, not this process's: under ``taskset``, Slurm or a
Kubernetes CPU limit it can be many times too large, and a thread pool of that size only adds
contention. Two limits apply, and the smaller wins:

- the CPU affinity mask (``sched_getaffinity``: taskset, cpusets, Slurm's binding);
- the CPU bandwidth quota of the process's cgroup and of every ancestor (cgroup v2 ``cpu.max``,
  v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``: Docker's ``--cpus``, Kubernetes limits),
  rounded up, since a quota of 1.5 CPUs still lets two threads run.
"""

from __future__ import annotations

import math
import os

_CGROUP_ROOT = "/sys/fs/cgroup"


def available_cpus() -> int:
    """CPUs this process may use, at least 1 (affinity and cgroup quota; see the module)."""
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS and others: no affinity call
        count = os.cpu_count() or 1
    quota = cgroup_cpu_quota()
    if quota is not None:
        count = min(count, math.ceil(quota))
    return max(1, count)


def cgroup_cpu_quota(proc_cgroup: str = "/proc/self/cgroup", mountinfo: str = "/proc/self/mountinfo") -> float | None:
    """The smallest CPU quota (in CPUs) over this process's cgroup and its ancestors, or None."""
    try:
        with open(proc_cgroup, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
        with open(mountinfo, encoding="utf-8") as fh:
            mounts = fh.read().splitlines()
    except OSError:  # not Linux, or /proc not mounted
        return None
    limits = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":  # cgroup v2: "0::/path"
            folder = _mounted_folder(mounts, "cgroup2", None, path)
            if folder:
                limits += _walk_up(folder, _v2_quota)
        elif "cpu" in controllers.split(","):  # cgroup v1: "4:cpu,cpuacct:/path"
            folder = _mounted_folder(mounts, "cgroup", "cpu", path)
            if folder:
                limits += _walk_up(folder, _v1_quota)
    return min(limits) if limits else None


def _mounted_folder(mounts: list[str], fstype: str, option: str | None, path: str) -> str | None:
    """Where the cgroup ``path`` is in the file system, from /proc/self/mountinfo.

    A mount's root (field 4) is the part of the hierarchy it shows: in a container it is often
    the container's own cgroup, and ``path`` is then given relative to the host's root."""
    for line in mounts:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] != fstype:
            continue
        if option is not None and option not in tail[2].split(","):
            continue
        root, point = fields[3], fields[4]
        rel = path
        if root != "/" and (path == root or path.startswith(root + "/")):
            rel = path[len(root):]
        folder = os.path.join(point, rel.lstrip("/"))
        if os.path.isdir(folder):
            return folder
    return None


def _walk_up(folder: str, read) -> list[float]:
    """The quotas found from ``folder`` up to its hierarchy's mount point."""
    out = []
    while True:
        quota = read(folder)
        if quota is not None:
            out.append(quota)
        parent = os.path.dirname(folder)
        if parent == folder or not os.path.exists(os.path.join(parent, "cgroup.procs")):
            return out
        folder = parent


def _v2_quota(folder: str) -> float | None:
    try:
        with open(os.path.join(folder, "cpu.max"), encoding="ascii") as fh:
            quota, period = fh.read().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max" or int(period) <= 0:
        return None
    return int(quota) / int(period)


def _v1_quota(folder: str) -> float | None:
    try:
        with open(os.path.join(folder, "cpu.cfs_quota_us"), encoding="ascii") as fh:
            quota = int(fh.read())
        with open(os.path.join(folder, "cpu.cfs_period_us"), encoding="ascii") as fh:
            period = int(fh.read())
    except (OSError, ValueError):
        return None
    if quota <= 0 or period <= 0:  # -1: no quota
        return None
    return quota / period
