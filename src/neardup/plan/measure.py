"""The planner's measurements: the engine run on a sample in a new process, its peak memory,
spill and seconds (see :mod:`neardup.plan`, step 2), and the facts of the machine it runs on."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from ..config import DedupConfig
from ..cpus import available_cpus
from ..errors import InputError
from .engine import EngineRules

__all__ = ["MIB", "machine_facts", "measure", "measure_run", "process_age_seconds", "status_kb"]

MIB = 1 << 20


def status_kb(*keys: str) -> dict[str, int]:
    """Fields of ``/proc/self/status`` in kB (0 where the platform has none)."""
    out = dict.fromkeys(keys, 0)
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key in out:
                    out[key] = int(value.split()[0])
    except OSError:
        pass
    return out


def _disk_bytes(top: str) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(top):
        for name in files:
            try:
                st = os.stat(os.path.join(dirpath, name))
            except OSError:
                continue  # removed while we looked
            total += max(st.st_size, getattr(st, "st_blocks", 0) * 512)
    return total


class _Watch:
    """While a run lasts, every few milliseconds: the largest size of its work folder, the
    largest anonymous resident memory (the process's own; no high-water mark exists for it),
    and, where the high-water mark cannot be reset, the largest resident size."""

    def __init__(self, folder: str):
        self.folder = folder
        self.peak_disk = 0
        self.peak_rss_kb = 0
        self.peak_anon_kb = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="neardup-plan-watch", daemon=True)

    def _loop(self) -> None:
        while True:
            self.peak_disk = max(self.peak_disk, _disk_bytes(self.folder))
            status = status_kb("VmRSS", "RssAnon")
            self.peak_rss_kb = max(self.peak_rss_kb, status["VmRSS"])
            self.peak_anon_kb = max(self.peak_anon_kb, status["RssAnon"])
            if self.stop.wait(0.02):
                break

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def measure_run(engine: EngineRules, paths: list[str], config: DedupConfig, *, jobs, in_memory_mb: float,
                write_kept: bool, scratch: str) -> dict:
    """Run ``engine`` on ``paths`` in this process and say what it cost: its seconds, pairs, the
    process's peak resident memory (its high-water mark: meant for a process that does nothing
    else, as the one :func:`measure` starts), its peak anonymous memory (sampled every 20 ms),
    the largest size of its work folder on disk (the spill) and of its outputs."""
    out = tempfile.mkdtemp(prefix="out-", dir=scratch)
    work = tempfile.mkdtemp(prefix="work-", dir=scratch)
    try:
        before = status_kb("VmRSS", "RssAnon")
        start = time.perf_counter()
        with _Watch(work) as watch:
            summary = engine.run(paths, out, config, jobs=jobs, in_memory_mb=in_memory_mb, work_dir=work,
                                 write_kept=write_kept)
        seconds = time.perf_counter() - start
        peak_kb = max(status_kb("VmHWM")["VmHWM"], watch.peak_rss_kb)
        spill = max(watch.peak_disk, int(summary.get("spilled_mb", 0) * MIB))
        output_bytes = _disk_bytes(out)
        id_bytes = _mean_id_bytes(os.path.join(out, "clusters.jsonl"))
    finally:
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    stages = summary.get("seconds", {})
    return {"records": summary["input"], "seconds": seconds, "stages": stages,
            "verify_seconds": float(stages.get("verify", 0.0)),
            "candidate_pairs": summary["candidate_pairs"], "verified_pairs": summary["verified_pairs"],
            "exact_duplicates": summary["exact_duplicates"], "near_duplicates": summary["near_duplicates"],
            "peak_bytes": peak_kb * 1024,
            # sampled, it can miss the peak by a little; it cannot exceed the resident peak
            "peak_anonymous_bytes": min(peak_kb, watch.peak_anon_kb) * 1024,
            "before_run_bytes": before["VmRSS"] * 1024, "before_run_anonymous_bytes": before["RssAnon"] * 1024,
            "spill_bytes": spill, "output_bytes": output_bytes, "in_memory_mb": in_memory_mb,
            "id_bytes_per_record": id_bytes}


def _mean_id_bytes(clusters_path: str) -> float | None:
    """Mean UTF-8 bytes of the record ids in a run's ``clusters.jsonl`` (None without one)."""
    total = lines = 0
    try:
        with open(clusters_path, "rb") as fh:
            for line in fh:
                ident = json.loads(line).get("id")
                total += len(str(ident).encode("utf-8", "surrogatepass")) if ident is not None else 0
                lines += 1
    except OSError:
        return None
    return total / lines if lines else None


def measure(engine: EngineRules, paths: list[str], config: DedupConfig, *, jobs, in_memory_mb: float,
            write_kept: bool, scratch: str) -> dict:
    """:func:`measure_run` in a new process (``python -m neardup.plan``), so that its memory is a
    ``neardup dedup`` process's: measured in a process that has run the engine before (this
    one, on another sample), the growth of a run came out about a third above a new process's on
    the same records (the allocator's state), and a new process's peak includes its start."""
    job = {"engine": engine, "paths": paths, "config": config, "jobs": jobs, "in_memory_mb": in_memory_mb, "write_kept": write_kept,
           "scratch": scratch}
    done = subprocess.run([sys.executable, "-m", "neardup.plan"], input=pickle.dumps(job), capture_output=True,
                          env=dict(os.environ, TMPDIR=scratch))
    if done.returncode:
        last = (done.stderr.decode("utf-8", "replace").strip().splitlines() or ["(no message)"])[-1]
        raise InputError(f"the sample run failed: {last}")
    return json.loads(done.stdout)


# --------------------------------------------------------------------------- scaling

def machine_facts(folder: str | None = None) -> dict:
    """Available memory (``MemAvailable``) and the free disk of the spill folder (``$TMPDIR``)."""
    tmp = folder or tempfile.gettempdir()
    avail = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
    except OSError:
        pass
    if avail is None:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            avail = None
    return {"memory_available_mb": round(avail / MIB, 1) if avail else None, "tmpdir": tmp,
            "tmpdir_free_bytes": shutil.disk_usage(tmp).free, "cpus": available_cpus()}


def process_age_seconds() -> float | None:
    """Seconds since this process started (its interpreter start and imports, when asked early)."""
    try:
        with open("/proc/self/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        start_ticks = int(fields[19])
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None
