"""A Ray run killed in each stage, then the same command: the same bytes, and the work redone.

    nice -n 10 python benchmarks/ray_resume.py [--docs 200000] [--shard-mb 8] [--note TEXT]

On a corpus from benchmarks/scale.py's generator (planted duplicates 5 %, seed 1):
``neardup dedup --engine ray --jobs 2`` once without interruption (SHA-256 of ``clusters.jsonl``,
``pairs.jsonl``, ``kept.jsonl``, and the shard count of each stage). Then, for each stage, in a
fresh output folder: the same command in a process group of its own; its work folder is watched
(the marks tests/engines/test_ray.py uses) until that stage has finished at least one shard but
not all of them (about half, when it has several); the group (the CLI and the Ray runtime it
started) gets SIGKILL; the same command runs again to its end. Recorded per stage: the finished
shards at the kill, the resumed run's files against the uninterrupted run's (hashes), its
``summary.json`` ``ray.stages`` (shards run and found done, per stage), and its wall time beside
the uninterrupted run's (and the stage seconds of ``summary.json``, Ray's start apart: the first
run of the benchmark also pays a cold start). ``NEARDUP_RAY_SHARD_MB`` (``--shard-mb``) is the
same for every run: it cuts the corpus into several read-and-sketch shards, so that a kill can
fall between two of them.
Results: ``benchmarks/results/ray-resume-<date>.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ray_engine import FILES, sha256  # noqa: E402  (the hashes of the engines benchmark)

#: (stage in summary.json, folder in the work folder, mark of a finished shard's file):
#: the marks of tests/engines/test_ray.py's KILL_POINTS
KILL_POINTS = (("read_and_sketch", "sketch", ".cols.arrow"), ("bands", "bands", ".npz"),
               ("verify", "verify", ".npz"), ("components", "components", "S-"))
WORK_NAME = ".neardup-ray-work"


def finished(work: str, folder: str, mark: str) -> int:
    path = os.path.join(work, folder)
    if not os.path.isdir(path):
        return 0
    return sum(1 for name in os.listdir(path) if mark in name and ".part-" not in name)


def command(corpus: str, out: str) -> list[str]:
    return [sys.executable, "-m", "neardup", "dedup", corpus, "-o", out, "-q", "--engine", "ray", "--jobs", "2"]


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def run_to_end(corpus: str, out: str, env: dict) -> dict:
    before = load()
    t = time.perf_counter()
    done = subprocess.run(command(corpus, out), env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if done.returncode != 0:
        raise RuntimeError(f"the run in {out} failed: {done.stderr[-2000:]}")
    summary = json.load(open(os.path.join(out, "summary.json")))
    return {"wall_seconds": round(wall, 2), "ray_runtime_seconds": summary["ray"].get("runtime_seconds"),
            "seconds": summary["seconds"], "resumed": summary["ray"]["resumed"], "stages": summary["ray"]["stages"],
            "sha256": {name: sha256(os.path.join(out, name)) for name in FILES},
            "load_before_after": [before, load()]}


def kill_in(stage: str, folder: str, mark: str, total: int, corpus: str, out: str, env: dict) -> dict:
    """Start the command, SIGKILL its process group once ``stage`` has finished some of its
    ``total`` shards (half of them, at least one), and say how many were finished then."""
    work = os.path.join(out, WORK_NAME)
    # components writes files per step of its rounds, not one per shard: its first file will do
    target = 1 if stage == "components" else max(1, total // 2)
    t = time.perf_counter()
    proc = subprocess.Popen(command(corpus, out), env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # waits on the run itself, not on a clock: it either finishes the shards or ends
    while finished(work, folder, mark) < target and proc.poll() is None:
        time.sleep(0.01)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=120)
    return {"finished_at_kill": finished(work, folder, mark), "shards_in_stage": total,
            "seconds_to_kill": round(time.perf_counter() - t, 2),
            "ended_before_kill": os.path.exists(os.path.join(out, "summary.json"))}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--docs", type=int, default=200_000, help="documents in the generated corpus")
    p.add_argument("--shard-mb", default="8", help="NEARDUP_RAY_SHARD_MB for every run")
    p.add_argument("--note", default="", help="what else ran on the machine")
    p.add_argument("--out", default=None, help="the results file (default results/ray-resume-<date>.json)")
    args = p.parse_args(argv)
    from scale import generate

    import neardup

    env = dict(os.environ, NEARDUP_RAY_SHARD_MB=args.shard_mb)
    result = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                          "shared": "2 cores shared with other work running at the same time (not an idle machine)"},
              "note": args.note, "versions": {"neardup": neardup.__version__, "python": platform.python_version(),
                                              "ray": __import__("ray").__version__},
              "corpus": f"benchmarks/scale.py generate(docs={args.docs}, planted=0.05, seed=1)",
              "NEARDUP_RAY_SHARD_MB": args.shard_mb, "command": "neardup dedup CORPUS -o OUT -q --engine ray --jobs 2",
              "kills": {}}
    with tempfile.TemporaryDirectory(prefix="ray-resume-") as tmp:
        corpus = os.path.join(tmp, "corpus.jsonl")
        generate(Path(corpus), args.docs, 0.05, 1)
        result["corpus_bytes"] = os.path.getsize(corpus)
        whole = run_to_end(corpus, os.path.join(tmp, "whole"), env)
        result["uninterrupted"] = whole
        print("uninterrupted", whole["wall_seconds"], "s", file=sys.stderr, flush=True)
        for stage, folder, mark in KILL_POINTS:
            out = os.path.join(tmp, f"killed-in-{stage}")
            total = whole["stages"][stage]["run"]
            rec = kill_in(stage, folder, mark, total, corpus, out, env)
            rec["resumed_run"] = again = run_to_end(corpus, out, env)
            rec["identical"] = again["sha256"] == whole["sha256"]
            # what the resumed run says: the kill fell inside the stage when it found some of the
            # stage's shards done and ran the others (a fast stage may have ended before the kill)
            shards = again["stages"][stage]
            rec["killed_inside_stage"] = shards["done_before"] > 0 and shards["run"] > 0
            rec["wall_ratio_to_uninterrupted"] = round(again["wall_seconds"] / whole["wall_seconds"], 2)
            result["kills"][stage] = rec
            print(stage, rec["finished_at_kill"], "/", total, "inside", rec["killed_inside_stage"],
                  "identical", rec["identical"],
                  again["wall_seconds"], "s", file=sys.stderr, flush=True)
            shutil.rmtree(out, ignore_errors=True)
    out = Path(args.out) if args.out else HERE / "results" / f"ray-resume-{datetime.date.today().isoformat()}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
