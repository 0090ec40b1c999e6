"""The Ray engine against the local and Spark engines, in one run, on one machine.

    flock /work/bench.lock python benchmarks/ray_engine.py [--docs 500000,2000000] [--corpus PATH]

For each corpus (``--corpus`` files, and generated corpora of ``--docs`` documents from
benchmarks/scale.py's generator, planted duplicates 5 %, seed 1): ``neardup dedup`` with
``--engine local``, ``--engine spark`` and ``--engine ray`` (each ``--jobs 2``, in a fresh process),
then the SHA-256 of ``clusters.jsonl``, ``pairs.jsonl`` and ``kept.jsonl`` of each (they must be
equal), the wall time, the peak resident memory of the largest process (the child's and its
waited-for descendants' ``ru_maxrss``: the driver, or the JVM; Ray's workers are the raylet's
children and are not in it, so Ray's figure is a lower bound) and the per-stage seconds and
shard counts of Ray's ``summary.json``, and the machine's load averages before and after each run.
Results: ``benchmarks/results/engines-<date>.json``.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

ENGINES = ("local", "spark", "ray")
FILES = ("clusters.jsonl", "pairs.jsonl", "kept.jsonl")


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def run_engine(engine: str, corpus: str, out: str) -> dict:
    cmd = [sys.executable, "-m", "neardup", "dedup", corpus, "-o", out, "-q", "--engine", engine, "--jobs", "2"]
    t = time.perf_counter()
    # a fresh wrapper process per engine, so that ru_maxrss of its children is this engine's alone
    code = ("import resource, subprocess, sys, json; r = subprocess.run(sys.argv[1:]); "
            "print(json.dumps({'rc': r.returncode, 'maxrss_mb': "
            "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))")
    got = subprocess.run([sys.executable, "-c", code, *cmd], capture_output=True, text=True)
    wall = time.perf_counter() - t
    info = json.loads(got.stdout.strip().splitlines()[-1])
    if info["rc"] != 0:
        raise RuntimeError(f"{engine} failed: {got.stderr[-2000:]}")
    summary = json.load(open(os.path.join(out, "summary.json")))
    rec = {"wall_seconds": round(wall, 2), "peak_rss_mb_largest_process": round(info["maxrss_mb"], 1),
           "summary_peak_memory_mb": summary.get("peak_memory_mb"), "seconds": summary["seconds"],
           "sha256": {name: sha256(os.path.join(out, name)) for name in FILES}}
    if engine == "ray":
        rec["ray"] = summary["ray"]
    return rec


def one_corpus(corpus: str, label: str, tmp: str, engines=ENGINES) -> dict:
    record = {"corpus": label, "corpus_bytes": os.path.getsize(corpus),
              "records": sum(1 for _ in open(corpus, "rb"))}
    for engine in engines:
        before = os.getloadavg()
        record[engine] = run_engine(engine, corpus, os.path.join(tmp, f"{Path(corpus).stem}-{engine}"))
        # the machine's load (1, 5 and 15 minute averages) before and after: other work shares it
        record[engine]["load_before_after"] = [[round(x, 2) for x in before], [round(x, 2) for x in os.getloadavg()]]
        print(label, engine, record[engine]["wall_seconds"], "s", file=sys.stderr, flush=True)
    record["identical"] = all(record[e]["sha256"] == record[engines[0]]["sha256"] for e in engines)
    if "local" in engines:
        record["ratio_to_local"] = {e: round(record[e]["wall_seconds"] / record["local"]["wall_seconds"], 2)
                                    for e in engines}
    return record


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--docs", default="500000", help="generated corpus sizes, comma-separated (0: none)")
    p.add_argument("--corpus", action="append", default=[], help="a JSONL corpus to run as it is")
    p.add_argument("--note", default="", help="what else ran on the machine")
    p.add_argument("--engines", default=",".join(ENGINES), help="the engines to run, comma-separated")
    p.add_argument("--out", default=None, help="the results file (default results/engines-<date>.json)")
    args = p.parse_args(argv)
    engines = tuple(e for e in args.engines.split(",") if e)
    if not set(engines) <= set(ENGINES):
        p.error(f"--engines: one of {', '.join(ENGINES)}")
    from scale import generate

    import neardup

    versions = {"neardup": neardup.__version__, "python": platform.python_version()}
    for mod in ("ray", "pyspark", "numpy", "pyarrow"):
        try:
            versions[mod] = __import__(mod).__version__
        except ImportError:
            versions[mod] = None
    result = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                          "shared": "2 cores shared with other work running at the same time (not an idle machine)"},
              "note": args.note, "versions": versions, "runs": []}
    with tempfile.TemporaryDirectory(prefix="ray-bench-") as tmp:
        for corpus in args.corpus:
            result["runs"].append(one_corpus(corpus, corpus, tmp, engines))
        for n in [int(x) for x in args.docs.split(",") if int(x)]:
            corpus = os.path.join(tmp, f"generated-{n}.jsonl")
            generate(Path(corpus), n, 0.05, 1)
            result["runs"].append(one_corpus(corpus, f"benchmarks/scale.py generate(docs={n}, planted=0.05, seed=1)",
                                             tmp, engines))
            os.remove(corpus)
    out = Path(args.out) if args.out else HERE / "results" / f"engines-{datetime.date.today().isoformat()}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
