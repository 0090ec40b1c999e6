#!/usr/bin/env python3
"""neardup plan against the run it predicts, on a generated corpus.

Generates ``--docs`` documents with benchmarks/scale.py's generator (planted near-copies next to
their originals), runs ``neardup plan --json`` on it, then the real ``neardup dedup`` (its resident
memory sampled as scale.py does), and prints predicted against measured for each figure: documents,
candidate pairs, verified pairs, peak memory, spill disk, wall time.

Usage: python benchmarks/plan_check.py [--docs 1000000 2000000] [--sample-records 100000] [--keep-data]
Writes benchmarks/results/plan-check-<docs>-<date>.json. Run it under ``flock /work/bench.lock``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from scale import generate, run_sampled  # noqa: E402


def machine() -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "")
    mem = next((int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal")), 0)
    return {"cpu": cpu, "nproc": os.cpu_count(), "memory_total_mb": round(mem / 1024), "python": platform.python_version(),
            "kernel": platform.release()}


def ratio(pred: float, meas: float) -> float | None:
    return round(pred / meas, 3) if meas else (1.0 if not pred else None)


def check(docs: int, sample_records: int, data: Path, extra: list[str]) -> dict:
    corpus = data / f"plan-check-{docs}.jsonl"
    t = time.perf_counter()
    planted = generate(corpus, docs, 0.05, 1)
    gen_s = time.perf_counter() - t
    print(f"generated {corpus} ({corpus.stat().st_size / 1e6:.0f} MB, {len(planted):,} planted pairs) in {gen_s:.0f} s",
          flush=True)
    plan_cmd = [sys.executable, "-m", "neardup", "plan", str(corpus), "--json", "--sample-records", str(sample_records),
                *extra]
    t = time.perf_counter()
    done = subprocess.run(plan_cmd, check=True, capture_output=True, text=True)
    plan_s = time.perf_counter() - t
    plan = json.loads(done.stdout)
    out = data / f"plan-check-out-{docs}"
    cmd = [sys.executable, "-m", "neardup", "dedup", str(corpus), "--output", str(out), "--quiet", *extra]
    load_before = os.getloadavg()
    t = time.perf_counter()
    memory = run_sampled(cmd, every=0.1)
    wall = time.perf_counter() - t
    summary = json.load(open(out / "summary.json"))
    measured = {"documents": summary["input"], "candidate_pairs": summary["candidate_pairs"],
                "verified_pairs": summary["verified_pairs"],
                # sampled from outside: summary.json's ru_maxrss counts this process's memory at the fork
                "peak_memory_mb": memory["peak_rss_mb"],
                "spill_bytes": int(summary["spilled_mb"] * (1 << 20)), "seconds": round(wall, 2)}
    figures = {}
    for key, value in measured.items():
        figures[key] = {"predicted": plan[key], "range": plan["ranges"].get(key), "measured": value,
                        "ratio": ratio(plan[key], value), "basis": plan["basis"][key]}
    corpus_mb = round(corpus.stat().st_size / 1e6, 1)
    shutil.rmtree(out, ignore_errors=True)
    corpus.unlink()
    return {"docs": docs, "corpus_mb": corpus_mb, "plan_command": " ".join(plan_cmd), "plan_wall_seconds": round(plan_s, 2),
            "dedup_command": " ".join(cmd), "figures": figures,
            "dedup_summary_peak_memory_mb": summary["peak_memory_mb"], "dedup_memory_sampled": memory,
            "dedup_stages": summary["seconds"], "plan_sample": plan["sample"], "plan_model": plan["model"],
            "plan_runs": plan["runs"], "plan_ranges": plan["ranges"],
            "plan_warnings": plan["warnings"], "plan_machine": plan["machine"], "load_average_before_dedup": load_before,
            "load_average_end": os.getloadavg()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, nargs="+", default=[1_000_000])
    ap.add_argument("--sample-records", type=int, default=100_000)
    ap.add_argument("--note", default="", help="what else ran on the machine")
    ap.add_argument("extra", nargs="*", help="options for both plan and dedup (after --)")
    args = ap.parse_args()
    data = HERE / "data"
    data.mkdir(exist_ok=True)
    from neardup import __version__

    runs = []
    for docs in args.docs:
        run = check(docs, args.sample_records, data, args.extra)
        runs.append(run)
        print(f"\n{docs:,} documents (plan took {run['plan_wall_seconds']:.1f} s)")
        print(f"  {'figure':<16} {'predicted':>14} {'measured':>14} {'ratio':>7}")
        for key, f in run["figures"].items():
            print(f"  {key:<16} {f['predicted']:>14,} {f['measured']:>14,} {f['ratio'] if f['ratio'] is not None else '-':>7}")
        sys.stdout.flush()
    commit = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    result = {"date": str(dt.datetime.now()), "neardup": __version__, "commit": commit, "machine": machine(),
              "note": args.note,
              "runs": runs}
    dest = HERE / "results" / f"plan-check-{'-'.join(map(str, args.docs))}-{dt.date.today()}.json"
    dest.parent.mkdir(exist_ok=True)
    dest.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
