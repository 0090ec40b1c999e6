#!/usr/bin/env python3
"""kill -9 at random moments of a ``neardup dedup`` run, then the same command again: are the
outputs byte-identical to an uninterrupted run's, and how much time does resuming save?

1. The corpus: benchmarks/scale.py's generator (Zipf words, 5% planted near-copies), N documents.
2. An uninterrupted run (the reference), traced (``NEARDUP_TEST_TRACE``: the moment each stage,
   kept shard and the publishing begin), gives each stage's window of wall-clock time.
3. Each trial starts a fresh run, SIGKILLs it at a moment drawn (seeded, uniform) inside one
   stage's length, counted from the moment this run reaches that stage (its own trace: the shared
   machine's load varies), taking the stages in turn so that every stage gets kills; reads from
   the work folder the stage it had reached, then runs the same command again (it resumes) and compares every output
   file with the reference byte for byte (summary.json without its timings, peak memory and
   ``resumed_from``).
4. Saved time: the reference's wall time minus the resumed run's (what the kill did not lose).

Usage: flock /work/bench.lock python benchmarks/resume.py [--docs 2000000] [--kills 20] [--seed 7]
Writes benchmarks/results/resume-<docs>-<date>.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

VOLATILE = ("seconds", "peak_memory_mb", "resumed_from")
#: the windows the kills are spread over, each from its trace point to the next one's
STAGES = ("sketch", "candidates", "verify", "cluster", "write", "publish")


def digest(out: Path) -> dict[str, str]:
    """sha256 of every published file; summary.json without what differs from run to run."""
    got = {}
    for path in sorted(out.iterdir()):
        if path.is_dir():
            continue
        data = path.read_bytes()
        if path.name == "summary.json":  # the output folder's own name (in kept_output.path) aside
            s = json.loads(data.replace(str(out).encode(), b"OUT"))
            data = json.dumps({k: v for k, v in s.items() if k not in VOLATILE}, sort_keys=True).encode()
        got[path.name] = hashlib.sha256(data).hexdigest()
    return got


def stage_reached(out: Path) -> str:
    """The stage a killed run was in, from what its work folder holds."""
    work = out / ".neardup-work"
    if (out / "summary.json").exists():
        return "published"
    if not (work / "run.json").exists():
        return "start"
    for stage in ("sketch", "candidates", "verify", "cluster"):
        if not (work / stage / "meta.json").exists():
            return stage
    kept = work / "kept.json"
    shards = len(json.loads(kept.read_text())["done"]) if kept.exists() else 0
    return f"write (kept shards done: {shards})"


def windows(trace: Path, t0: float) -> dict[str, tuple[float, float]]:
    points = []
    for line in trace.read_text().splitlines():
        name, t = line.rsplit(" ", 1)
        points.append((name, float(t) - t0))
    first = {}
    for name, t in points:
        first.setdefault(name, t)
    end = first.get("published", points[-1][1])
    order = [s for s in STAGES if s in first]
    out = {}
    for a, b in zip(order, order[1:] + ["published"]):
        out[a] = (first[a], first.get(b, end))
    return out


def completed_lengths(trace: Path) -> dict[str, float]:
    """The lengths of the stages a (killed) run finished: each traced stage followed by another point."""
    if not trace.exists():
        return {}
    points = []
    for line in trace.read_text().splitlines():
        name, t = line.rsplit(" ", 1)
        points.append((name, float(t)))
    first: dict[str, float] = {}
    for name, t in points:
        first.setdefault(name, t)
    # the stage points and the publishing only, as windows() takes them (kept-shard points fall inside)
    seen = sorted(((n, t) for n, t in first.items() if n in STAGES or n == "published"), key=lambda item: item[1])
    return {name: b - a for (name, a), (_, b) in zip(seen, seen[1:]) if name in STAGES}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=2_000_000)
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--shards", type=int, default=8, help="--output-shards of the runs")
    ap.add_argument("--data", default=str(HERE / "data"))
    ap.add_argument("--keep-data", action="store_true")
    ap.add_argument("--before-src", default=None, metavar="DIR",
                    help="also time one plain run (no shards) by the code in DIR (a src/ folder with its built "
                         "extensions), beside the same run by this branch: the cost of saving the stages")
    args = ap.parse_args()
    from scale import generate

    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    corpus = data / f"synthetic-{args.docs}.jsonl"
    if not corpus.exists():
        t = time.perf_counter()
        generate(corpus, args.docs, 0.05, 1)
        print(f"generated {corpus} in {time.perf_counter() - t:.0f} s", flush=True)
    input_sha = hashlib.sha256(corpus.read_bytes()).hexdigest()

    def command(out: Path) -> list[str]:
        return [sys.executable, "-m", "neardup", "dedup", str(corpus), "-o", str(out), "--output-shards",
                str(args.shards), "--quiet"]

    ref = data / "resume-reference"
    shutil.rmtree(ref, ignore_errors=True)
    trace = data / "resume-trace.txt"
    trace.unlink(missing_ok=True)
    t0 = time.time()
    subprocess.run(command(ref), check=True, env=dict(os.environ, NEARDUP_TEST_TRACE=str(trace)))
    ref_wall = time.time() - t0
    want = digest(ref)
    win = windows(trace, t0)
    print(f"reference: {ref_wall:.1f} s; windows {json.dumps({k: [round(a, 2), round(b, 2)] for k, (a, b) in win.items()})}",
          flush=True)

    before = None
    if args.before_src:  # the same run by the code before the work folder (no stages saved, no resume)
        other = data / "resume-before"
        shutil.rmtree(other, ignore_errors=True)
        cmd = [sys.executable, "-m", "neardup", "dedup", str(corpus), "-o", str(other), "--quiet"]
        t = time.time()
        subprocess.run(cmd, check=True, env=dict(os.environ, PYTHONPATH=args.before_src))
        mine = data / "resume-after-single"
        shutil.rmtree(mine, ignore_errors=True)
        t1 = time.time()
        subprocess.run([sys.executable, "-m", "neardup", "dedup", str(corpus), "-o", str(mine), "--quiet"], check=True)
        before = {"src": args.before_src, "wall_s": round(t1 - t, 3), "this_branch_wall_s": round(time.time() - t1, 3),
                  "same_clusters_and_pairs": all((other / n).read_bytes() == (mine / n).read_bytes()
                                                 for n in ("clusters.jsonl", "pairs.jsonl", "kept.jsonl"))}
        print(f"before: {before}", flush=True)
        shutil.rmtree(other, ignore_errors=True)
        shutil.rmtree(mine, ignore_errors=True)

    rng = np.random.default_rng(args.seed)
    order = list(win)
    trials = []
    out = data / "resume-trial"
    # each stage's length, from the reference first, then from the latest run that got through it:
    # the shared machine's load changes from run to run, and a kill aimed by a slow reference's
    # length would overshoot a short stage and land in a later one
    length = {stage: b - a for stage, (a, b) in win.items()}
    for k in range(args.kills):
        stage = order[k % len(order)]
        aimed_length = length[stage]
        into = float(rng.uniform(0, 1)) * aimed_length  # seconds into the stage
        shutil.rmtree(out, ignore_errors=True)
        trial_trace = data / "resume-trial-trace.txt"
        trial_trace.unlink(missing_ok=True)
        t = time.time()
        proc = subprocess.Popen(command(out), env=dict(os.environ, NEARDUP_TEST_TRACE=str(trial_trace)))
        # the machine is shared and its load varies: the kill is placed from the moment this run
        # reaches the stage (its own trace), not from the reference's clock
        began = None
        for _ in range(200_000):  # polls every 2 ms; a run that ends first is recorded as such
            if proc.poll() is not None:
                break
            if trial_trace.exists() and any(line.split(" ", 1)[0] == stage
                                            for line in trial_trace.read_text().splitlines()):
                began = time.time()
                break
            time.sleep(0.002)
        if began is not None:
            time.sleep(max(0.0, into - (time.time() - began)))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        length.update(completed_lengths(trial_trace))
        killed_after = time.time() - t
        at = killed_after
        reached = stage_reached(out)
        t = time.time()
        resumed = subprocess.run(command(out), capture_output=True, text=True)
        resume_wall = time.time() - t
        got = digest(out) if resumed.returncode == 0 else {}
        s = json.loads((out / "summary.json").read_text()) if resumed.returncode == 0 else {}
        trial = {"aimed_stage": stage, "seconds_into_stage": round(into, 3),
                 "stage_length_aimed_by_s": round(aimed_length, 3), "killed_after_s": round(killed_after, 3),
                 "exit_status_of_killed": proc.returncode, "stage_reached": reached,
                 "resumed_from": s.get("resumed_from"), "resume_exit_status": resumed.returncode,
                 "resume_stderr": resumed.stderr[-500:], "resume_wall_s": round(resume_wall, 3),
                 "saved_s": round(ref_wall - resume_wall, 3), "identical": got == want,
                 "work_folder_removed": not (out / ".neardup-work").exists()}
        if got != want:
            trial["differing"] = sorted(n for n in set(got) | set(want) if got.get(n) != want.get(n))
        trials.append(trial)
        print(json.dumps(trial), flush=True)

    assert hashlib.sha256(corpus.read_bytes()).hexdigest() == input_sha, "the input changed"
    by_stage: dict[str, list] = {}
    for tr in trials:
        by_stage.setdefault(tr["aimed_stage"], []).append(tr["saved_s"])
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    from neardup._version import __version__

    result = {
        "date": str(dt.datetime.now()), "neardup": __version__, "python": sys.version.split()[0],
        "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), ""),
        "nproc": os.cpu_count(), "load_average_end": load,
        "docs": args.docs, "corpus_mb": round(corpus.stat().st_size / 1e6, 1), "seed": args.seed,
        "command": " ".join(command(Path("OUT"))),
        "reference_wall_s": round(ref_wall, 3), "before_work_folder": before, "windows_s": {k: [round(a, 3), round(b, 3)] for k, (a, b) in win.items()},
        "kills": len(trials), "identical": sum(t["identical"] for t in trials),
        "all_identical": all(t["identical"] for t in trials),
        "input_unchanged": True,
        "mean_saved_s": round(float(np.mean([t["saved_s"] for t in trials])), 3),
        "mean_saved_s_by_aimed_stage": {k: round(float(np.mean(v)), 3) for k, v in by_stage.items()},
        "trials": trials,
    }
    dest = HERE / "results" / f"resume-{args.docs}-{dt.date.today()}.json"
    dest.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{result['identical']}/{result['kills']} identical; mean saved {result['mean_saved_s']} s -> {dest}")
    if not args.keep_data:
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(ref, ignore_errors=True)


if __name__ == "__main__":
    main()
