#!/usr/bin/env python3
"""neardup dedup against its peers, side by side in one run, on the same corpus and shingling.

neardup runs as the user would run it: the whole command, from the file on disk to every output
(clusters.jsonl, pairs.jsonl, kept.jsonl, summary.json). The peers (benchmarks/peers.py) get the
text already in memory, as their users would. Same shingling everywhere: lowercase, ``\\w+``
words, word 5-shingles, 128 permutations, threshold 0.8. neardup then verifies every candidate
exactly, which the peers do not.

Usage:
  python benchmarks/speed.py [--corpus benchmarks/data/corpus.jsonl] [--peers gaoya,rensa,datasketch,textdedup]
                             [--repeat 3] [--out benchmarks/results/speed-<date>.json]
  python benchmarks/speed.py --peers gaoya --rounds 5     # alternating, for a shared machine

Prints a table of seconds, peak memory and ratios (peer time / neardup time), and writes all of it
with the machine's facts and package versions as JSON. With ``--rounds R`` the whole comparison
(``--repeat`` neardup runs, then each peer once) is done R times in a row, and each round's
ratios are reported, and their median: on a machine shared with other work, adjacent runs see
about the same load.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def machine() -> dict:
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import numpy

    import neardup

    return {"cpu": cpu, "nproc": os.cpu_count(), "python": platform.python_version(), "numpy": numpy.__version__,
            "neardup": neardup.__version__, "load_average_at_start": os.getloadavg()}


def _user_env() -> dict:
    """The environment as a user's shell has it: this sandbox sets PYTHONDONTWRITEBYTECODE, which
    would make every run recompile neardup's modules (an installed package has its bytecode)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_neardup(corpus: str, extra: list[str]) -> dict:
    out = tempfile.mkdtemp(prefix="neardup-bench-")
    cmd = [sys.executable, "-m", "neardup", "dedup", corpus, "--output", out, "--quiet", *extra]
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    before, cpu_before = usage.ru_maxrss, usage.ru_utime + usage.ru_stime
    t = time.perf_counter()
    subprocess.run(cmd, check=True, env=_user_env())
    seconds = time.perf_counter() - t
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime - cpu_before  # depends much less on the load than wall time
    summary = json.load(open(os.path.join(out, "summary.json")))
    return {"seconds": seconds, "cpu_seconds": cpu, "peak_memory_mb": summary["peak_memory_mb"],
            "stages": summary["seconds"],
            "kept": summary["kept"], "exact": summary["exact_duplicates"], "near": summary["near_duplicates"],
            "candidate_pairs": summary["candidate_pairs"], "verified_pairs": summary["verified_pairs"],
            "config": summary["config"], "output": out, "command": " ".join(cmd), "children_maxrss_before": before}


def signature_rate(corpus: str, repeat: int) -> dict:
    """MB/s of MinHash signatures (with shingle ids, as dedup computes them) from raw text in
    memory on every core: the library call that dedup's sketch stage makes, default config."""
    import orjson

    from neardup import _native
    from neardup import DedupConfig

    cfg = DedupConfig()
    with open(corpus, "rb") as fh:
        texts = [orjson.loads(line)["text"] for line in fh]
    mb = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts) / 1e6
    jobs = os.cpu_count() or 1
    out = {"text_mb": mb, "jobs": jobs, "config": f"k={cfg.shingle.k} {cfg.shingle.unit}s, {cfg.minhash.num_perm} "
           f"{cfg.minhash.family} permutations, shingle ids and fingerprints kept"}
    for label, n_jobs in (("one_thread", 1), ("all_cores", jobs)):
        times, cpu = [], []
        for _ in range(repeat):
            t, c = time.perf_counter(), time.process_time()
            _native.signatures(texts, cfg.shingle, cfg.minhash, jobs=n_jobs, with_ids=True, with_fingerprints=True)
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        best = min(range(repeat), key=times.__getitem__)
        out[label] = {"seconds": times, "mb_per_s": mb / times[best], "cpu_seconds": cpu[best],
                      "load_average": os.getloadavg()}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=str(HERE / "data" / "corpus.jsonl"))
    ap.add_argument("--peers", default="gaoya,rensa,datasketch,textdedup")
    ap.add_argument("--repeat", type=int, default=3, help="neardup runs (the median is reported)")
    ap.add_argument("--neardup-args", default="", help="extra arguments for neardup dedup")
    ap.add_argument("--rounds", type=int, default=1, help="repeat the comparison, alternating (median ratio)")
    ap.add_argument("--signatures-only", action="store_true", help="only measure the signature rate, print JSON")
    ap.add_argument("--out", default=str(HERE / "results" / f"speed-{dt.date.today()}.json"))
    args = ap.parse_args()
    if not os.path.exists(args.corpus):
        sys.exit(f"{args.corpus} is missing: run bash benchmarks/build_corpus.sh first")
    size_mb = os.path.getsize(args.corpus) / 1e6
    facts = machine()
    if args.signatures_only:
        print(json.dumps(signature_rate(args.corpus, args.repeat)))
        return
    # In a child process: a child's peak RSS (ru_maxrss, in neardup's summary) starts from its
    # parent's at fork, so this process must not hold the corpus when it starts neardup.
    sig = json.loads(subprocess.run([sys.executable, __file__, "--corpus", args.corpus, "--repeat", str(args.repeat),
                                     "--signatures-only"], check=True, capture_output=True, text=True).stdout)
    print(f"signatures from raw text: {sig['all_cores']['mb_per_s']:.0f} MB/s on {sig['jobs']} cores "
          f"({sig['one_thread']['mb_per_s']:.0f} MB/s on one), {sig['text_mb']:.1f} MB of text", flush=True)
    rounds = []
    for r in range(max(1, args.rounds)):
        runs = [run_neardup(args.corpus, args.neardup_args.split()) for _ in range(args.repeat)]
        runs.sort(key=lambda run: run["seconds"])
        nd = runs[len(runs) // 2]
        print(f"{'round ' + str(r + 1) + ': ' if args.rounds > 1 else ''}neardup dedup: "
              f"{[round(run['seconds'], 2) for run in runs]} s (median {nd['seconds']:.2f} s), "
              f"peak {nd['peak_memory_mb']:.0f} MB, stages {nd['stages']}, load {os.getloadavg()[0]:.2f}", flush=True)
        peers = []
        if args.peers:
            peer_out = tempfile.mktemp(suffix=".jsonl")
            subprocess.run([sys.executable, str(HERE / "peers.py"), "--corpus", args.corpus, "--peers", args.peers,
                            "--json-out", peer_out, "--quiet"], check=False)
            if os.path.exists(peer_out):
                peers = [json.loads(line) for line in open(peer_out)]
        for p in peers:
            if p.get("seconds_total"):
                p["ratio"] = p["seconds_total"] / nd["seconds"]
                print(f"  {p.get('peer')}: {p['seconds_total']:.2f} s, {p['ratio']:.2f}x", flush=True)
        rounds.append({"neardup_runs": runs, "neardup_median_s": nd["seconds"], "peers": peers,
                       "load_average": os.getloadavg()})
    if len(rounds) > 1:
        # the round whose ratio to the first peer is the median stands for the run
        def first_ratio(rd):
            return rd["peers"][0].get("ratio", 0.0) if rd["peers"] else 0.0

        by_ratio = sorted(rounds, key=first_ratio)
        ratios = [round(first_ratio(rd), 2) for rd in rounds]
        print(f"\nratios to {rounds[0]['peers'][0].get('peer') if rounds[0]['peers'] else '-'} by round: {ratios}; "
              f"median {statistics.median(ratios):.2f}x", flush=True)
        chosen = by_ratio[len(by_ratio) // 2]
    else:
        chosen = rounds[0]
    runs, nd, peers = chosen["neardup_runs"], chosen["neardup_runs"][len(chosen["neardup_runs"]) // 2], chosen["peers"]
    rows = [("neardup (whole command, verified)", nd["seconds"], nd["cpu_seconds"], nd["peak_memory_mb"], 1.0)]
    for p in peers:
        secs = p.get("seconds_total")
        status = p.get("status", "ok")
        rows.append((f"{p.get('peer')} {p.get('version', '')} ({status})", secs, p.get("cpu_seconds"),
                     p.get("peak_rss_mb"), (secs / nd["seconds"]) if secs else None))
    print(f"\ncorpus {args.corpus}: {size_mb:.1f} MB; machine {facts['cpu']} x{facts['nproc']}")
    print(f"{'tool':<44} {'seconds':>9} {'cpu s':>9} {'peak MB':>9} {'peer/neardup':>13}")
    for name, secs, cpu, mem, ratio in rows:
        s = f"{secs:9.2f}" if secs else f"{'-':>9}"
        c = f"{cpu:9.2f}" if cpu else f"{'-':>9}"
        m = f"{mem:9.0f}" if mem else f"{'-':>9}"
        r = f"{ratio:12.1f}x" if ratio else f"{'-':>13}"
        print(f"{name:<44} {s} {c} {m} {r}")
    result = {"date": str(dt.datetime.now()), "machine": facts, "corpus": args.corpus, "corpus_mb": size_mb,
              "signatures": sig, "neardup_runs": runs, "neardup_median_s": nd["seconds"], "mb_per_s": size_mb / nd["seconds"],
              "peers": peers, "rounds": rounds if len(rounds) > 1 else None}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=2, default=str)
    print(f"\nwritten {args.out}")


if __name__ == "__main__":
    main()
