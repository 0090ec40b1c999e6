#!/usr/bin/env python3
"""neardup's Spark engine against Spark MLlib's MinHashLSH, side by side (issue 6).

On the same documents, in local mode with the same master, driver memory and shuffle partitions:

* **neardup**: ``neardup.spark.dedup_paths`` (the ``neardup dedup --engine spark`` command) from the
  JSONL file on disk to all its outputs (clusters/, pairs/, kept/, summary.json): reading,
  parsing, signatures and shingle ids (compiled kernel in ``mapInArrow``), exact pass, band keys,
  windowed candidate pairs, estimate filter, exact verification, connected components, survivors.
  Defaults: 5-word shingles, 128 permutations, threshold 0.8.
* **MLlib**: ``benchmarks/spark_mllib.py`` (RegexTokenizer + NGram(5) + HashingTF(2^24) +
  MinHashLSH(5 tables) + ``approxSimilarityJoin`` at Jaccard distance 0.2), its text read and
  cached before its clock starts, its join time-boxed (``--mllib-timeout``, default 1200 s: on
  timeout its Spark jobs are cancelled and the record says so).

Each system runs in its own process (its own JVM), one after the other; peak memory is the RSS of
that process tree (driver, JVM, Python workers) sampled every 0.25 s. Session start-up is not
counted for either.

Quality against the exact oracle (``neardup.evaluate.all_pairs`` on ``neardup.evaluate.shingle_runs``,
neardup's shingling): every pair with true Jaccard >= 0.8.

* neardup: a true pair is found when both documents end in the same cluster (exact duplicates are
  not sketched twice, so they have no edge: the cluster is what the run reports); precision is
  the share of its verified edges whose true Jaccard is >= 0.8.
* MLlib: a true pair is found when the join reports it (and, for comparison, when both documents
  are in the same connected component of its pairs); precision is the share of its pairs whose
  true Jaccard is >= 0.8. (MLlib measures its distance on its own hashed shingle sets, so a few
  of its pairs can sit just below 0.8 on neardup's shingles.)

Usage:
  python benchmarks/spark_engine.py [--limits 2000,5000,0] [--corpus benchmarks/data/corpus.jsonl]
      [--mllib-timeout 1200] [--no-mllib] [--master local[2]] [--driver-memory 12g] [--partitions 8]

``--limits``: document counts to run (the first N lines of the corpus; 0 = all). One results file
per count: ``benchmarks/results/spark-engine-<N|full>.json``.

**Against the local engine** (issue 18): ``--vs-local 500000,2000000`` generates each count of
documents with ``benchmarks/scale.py``'s generator (planted near-copies, 5 %), then runs, each in
its own process, ``neardup dedup`` (local engine, ``--jobs 2``), ``neardup dedup --engine spark``
in ``--master`` (``local[2]``), and with ``--standalone`` the Spark engine on a standalone
cluster of two one-core workers started on loopback; compares the three output folders' files
byte for byte, and records every run's stage table (``summary.json``'s ``seconds``: the same keys
for both engines; the session, the JVM's start, apart), wall time, the ratio to the local engine,
peak memory of the process tree and of each executor (sampled from /proc every 0.25 s: each task
running JVM with its Python workers, per core; and Spark's own executor metrics from the status
API), and the load of the machine. Writes ``benchmarks/results/spark-vs-local-<N><--tag>.json``.
``--no-local2`` runs only the local engine and the cluster (to keep each command short).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "src"))
sys.path.insert(0, HERE)

from spark_mllib import PeakMemory, jvm_vmhwm_mb, machine_facts, versions  # noqa: E402

THRESHOLD = 0.8


# --------------------------------------------------------------------------------------------- child: neardup


def run_neardup(args) -> int:
    """In a fresh process: dedup_paths on ``args.corpus`` into ``args.output``; record to ``args.json``."""
    from neardup import DedupConfig
    from neardup.spark import dedup_paths
    from neardup.spark.session import get_session

    mem = PeakMemory().start()
    t0 = time.perf_counter()
    spark = get_session(master=args.master, app_name="neardup-bench-spark-engine",
                        conf={"spark.driver.memory": args.driver_memory,
                              "spark.sql.shuffle.partitions": str(args.partitions),
                              "spark.default.parallelism": str(args.partitions)})
    spark.range(1).count()  # the JVM and its first job are start-up, as for MLlib
    t_session = time.perf_counter() - t0
    t1 = time.perf_counter()
    summary = dedup_paths([args.corpus], args.output, DedupConfig(threshold=THRESHOLD), spark=spark)
    wall = time.perf_counter() - t1
    mem.stop()
    record = {
        "seconds_session": round(t_session, 2),
        "seconds_total": round(wall, 2),
        "seconds_by_stage": summary["seconds"],
        "peak_rss_tree_mb": round(mem.peak_tree / 2**20, 1),
        "peak_rss_jvm_mb": round(mem.peak_jvm / 2**20, 1),
        "jvm_vmhwm_mb": round(jvm_vmhwm_mb() or 0, 1) or None,
        "summary": {k: summary[k] for k in ("input", "kept", "exact_duplicates", "near_duplicates", "skipped",
                                             "candidate_pairs", "estimate_filtered_pairs", "verified_pairs",
                                             "largest_bucket", "buckets_over_window", "clusters", "config")},
    }
    with open(args.json, "w") as fh:
        json.dump(record, fh, indent=2)
    spark.stop()
    return 0


# --------------------------------------------------------------------------------------------- parent


def subset(corpus: str, n: int, path: str) -> str:
    if not n:
        return corpus
    with open(corpus, "rb") as src, open(path, "wb") as dst:
        for k, line in enumerate(src):
            if k >= n:
                break
            dst.write(line)
    return path


def load_docs(path: str):
    import orjson

    ids, texts = [], []
    with open(path, "rb") as fh:
        for line in fh:
            o = orjson.loads(line)
            ids.append(o["id"])
            texts.append(o["text"])
    return ids, texts


def oracle(texts, jobs: int = 2):
    from neardup.evaluate import all_pairs, shingle_runs
    from neardup.params import ShingleParams

    t = time.perf_counter()
    ids, offsets = shingle_runs(texts, ShingleParams(k=5), jobs=jobs)
    i, j, jac = all_pairs(ids, offsets, THRESHOLD)
    return {(int(a), int(b)): float(s) for a, b, s in zip(i.tolist(), j.tolist(), jac.tolist())}, \
        round(time.perf_counter() - t, 1), (ids, offsets)


def true_jaccard(runs, pairs):
    from neardup.cluster.candidates import exact_overlaps, similarities

    ids, offsets = runs
    if not pairs:
        return []
    a = __import__("numpy").array([p[0] for p in pairs])
    b = __import__("numpy").array([p[1] for p in pairs])
    sizes = __import__("numpy").diff(offsets)
    return similarities(sizes, exact_overlaps(ids, offsets, a, b), a, b)["jaccard"].tolist()


BANDS = ((0.8, 0.85), (0.85, 0.9), (0.9, 0.95), (0.95, 1.0001))


def recall_by_band(truth: dict, found) -> dict:
    out = {}
    for lo, hi in BANDS:
        keys = [p for p, s in truth.items() if lo <= s < hi]
        hit = sum(1 for p in keys if found(p))
        out[f"{lo:.2f}-{min(hi, 1.0):.2f}"] = {"pairs": len(keys), "found": hit,
                                               "recall": round(hit / len(keys), 4) if keys else None}
    hit = sum(1 for p in truth if found(p))
    out["all >= 0.80"] = {"pairs": len(truth), "found": hit, "recall": round(hit / len(truth), 4) if truth else None}
    return out


def components(n, pairs):
    from neardup.cluster.unionfind import UnionFind

    uf = UnionFind(n)
    for a, b in pairs:
        uf.union(a, b)
    return uf.components()


def evaluate_neardup(out_dir: str, index: dict, truth: dict, runs) -> dict:
    import orjson

    with open(os.path.join(out_dir, "clusters.jsonl"), "rb") as fh:
        clusters = [orjson.loads(line) for line in fh]
    cluster_of = {index[r["id"]]: r["cluster"] for r in clusters if r["cluster"] is not None}
    with open(os.path.join(out_dir, "pairs.jsonl"), "rb") as fh:
        edges = [orjson.loads(line) for line in fh]
    pairs = [tuple(sorted((index[e["a"]], index[e["b"]]))) for e in edges]
    true_j = true_jaccard(runs, pairs)
    good = sum(1 for s in true_j if s >= THRESHOLD - 1e-12)

    def found(p):
        c = cluster_of.get(p[0])
        return c is not None and c == cluster_of.get(p[1])

    return {
        "recall_same_cluster": recall_by_band(truth, found),
        "edges": len(pairs),
        "precision_edges": round(good / len(pairs), 6) if pairs else None,
        "edges_below_threshold": len(pairs) - good,
        "docs_removed": sum(1 for r in clusters if not r["kept"] and not r["reason"].startswith("skipped")),
    }


def evaluate_mllib(pairs_dir: str, index: dict, truth: dict, runs, n: int) -> dict:
    import pyarrow.parquet as pq

    rows = pq.read_table(pairs_dir).to_pylist()
    pairs = sorted({tuple(sorted((index[r["id_a"]], index[r["id_b"]]))) for r in rows})
    pset = set(pairs)
    true_j = true_jaccard(runs, pairs)
    good = sum(1 for s in true_j if s >= THRESHOLD - 1e-12)
    comp = components(n, pairs)
    in_pairs = {x for p in pairs for x in p}
    return {
        "recall_reported_pair": recall_by_band(truth, lambda p: p in pset),
        "recall_same_component": recall_by_band(truth, lambda p: comp[p[0]] == comp[p[1]]),
        "pairs": len(pairs),
        "precision_pairs": round(good / len(pairs), 6) if pairs else None,
        "pairs_below_threshold": len(pairs) - good,
        "pairs_below_0.75": sum(1 for s in true_j if s < 0.75),
        "docs_removed_if_components": len(in_pairs) - len({comp[x] for x in in_pairs}),
    }


def peak(x):
    return x.get("peak_rss_tree_mb")


# --------------------------------------------------------------------------------------------- vs the local engine


_TICK = os.sysconf("SC_CLK_TCK")


def _proc_table() -> dict:
    """Every process: pid -> (parent pid, command line)."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{d}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        out[int(d)] = (ppid, cmd)
    return out


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def role_of(cmd: str) -> str:
    """What a process of a Spark run is, from its command line."""
    if "CoarseGrainedExecutorBackend" in cmd:
        return "executor_jvm"
    if "deploy.worker.Worker" in cmd or "deploy.master.Master" in cmd:
        return "cluster_daemon_jvm"
    if "java" in cmd.split(" ", 1)[0]:
        return "driver_jvm"  # local mode: the driver's JVM, which runs the executor's tasks too
    if "pyspark.daemon" in cmd or "pyspark/daemon" in cmd or "pyspark.worker" in cmd:
        return "python_worker"
    return "other"


class TreeMemory:
    """Measured, not estimated: the resident memory of this process's tree, sampled every
    ``interval`` s from /proc (no psutil): each process's peak, the peak of the sum, and per
    JVM that runs tasks (the local-mode driver JVM, each standalone executor JVM) the peak of
    that JVM plus its Python workers together, i.e. one executor's footprint."""

    def __init__(self, interval: float = 0.25):
        import threading

        self.interval = interval
        self.peak_tree_kb = 0
        self.peak_kb: dict = {}  # pid -> (role, peak RSS)
        self.peak_executor_kb: dict = {}  # jvm pid -> (role, peak of the jvm + its python workers)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        table = _proc_table()
        kids: dict = {}
        for pid, (ppid, _) in table.items():
            kids.setdefault(ppid, []).append(pid)
        tree, todo = [os.getpid()], [os.getpid()]
        while todo:
            for c in kids.get(todo.pop(), []):
                tree.append(c)
                todo.append(c)
        rss = {pid: _rss_kb(pid) for pid in tree}
        self.peak_tree_kb = max(self.peak_tree_kb, sum(rss.values()))
        for pid in tree:
            role = role_of(table.get(pid, (0, ""))[1]) if pid != os.getpid() else "driver_python"
            old = self.peak_kb.get(pid, (role, 0))[1]
            self.peak_kb[pid] = (role, max(old, rss[pid]))
            if role in ("executor_jvm", "driver_jvm"):
                sub, stack = rss[pid], [pid]
                while stack:
                    for c in kids.get(stack.pop(), []):
                        sub += rss.get(c, 0)
                        stack.append(c)
                self.peak_executor_kb[pid] = (role, max(self.peak_executor_kb.get(pid, (role, 0))[1], sub))

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._sample()
            except Exception:  # noqa: BLE001 - a process gone between two reads
                pass
            self._stop.wait(self.interval)

    def start(self) -> "TreeMemory":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def report(self, cores_per_executor: int) -> dict:
        mb = lambda kb: round(kb / 1024, 1)  # noqa: E731
        by_role: dict = {}
        for role, kb in self.peak_kb.values():
            r = by_role.setdefault(role, {"processes": 0, "peak_rss_mb_max": 0.0})
            r["processes"] += 1
            r["peak_rss_mb_max"] = max(r["peak_rss_mb_max"], mb(kb))
        # the JVMs that run tasks: a standalone cluster's executors, else (local mode) the driver's
        # JVM with its Python workers (launcher JVMs of a few MB left out)
        roles = {role for role, _ in self.peak_executor_kb.values()}
        want = "executor_jvm" if "executor_jvm" in roles else "driver_jvm"
        execs = sorted(mb(kb) for role, kb in self.peak_executor_kb.values() if role == want and kb > 100 * 1024)
        return {"sampled_every_s": self.interval, "peak_rss_tree_mb": mb(self.peak_tree_kb), "by_role": by_role,
                "executor_peak_rss_mb": execs, "cores_per_executor": cores_per_executor,
                "executor_peak_rss_per_core_mb": round(max(execs) / cores_per_executor, 1) if execs else None}



def run_spark_child(args) -> int:
    """In a fresh process: ``dedup_paths`` on ``args.corpus`` in ``args.master`` (or a standalone
    cluster started here with ``--standalone``), the session timed apart; record to ``args.json``."""
    from neardup import DedupConfig
    from neardup.spark import dedup_paths
    from neardup.spark.session import get_session

    cluster = None
    mem = TreeMemory().start()
    t0 = time.perf_counter()
    conf = {"spark.driver.memory": args.driver_memory, "spark.sql.shuffle.partitions": str(args.partitions),
            "spark.default.parallelism": str(args.partitions),
            # the status API, for each executor's measured peak memory (JVM heap, Python workers' RSS)
            "spark.ui.enabled": "true", "spark.ui.port": "0", "spark.executor.processTreeMetrics.enabled": "true"}
    if args.standalone:
        from neardup.spark.standalone import standalone_cluster

        cluster = standalone_cluster(workers=2, cores=1, memory=args.executor_memory)
        conf = {**cluster.session_conf(), **conf}
        master = cluster.url
    else:
        master = args.master
    cores = 1 if args.standalone else int(master[len("local["):-1]) if master.startswith("local[") else None
    try:
        spark = get_session(master=master, app_name="neardup-bench-vs-local", conf=conf)
        spark.range(1).count()
        t_session = time.perf_counter() - t0
        t1 = time.perf_counter()
        summary = dedup_paths([args.corpus], args.output, DedupConfig(), spark=spark)
        wall = time.perf_counter() - t1
        mem.stop()
        executors = executor_peaks(spark)
        java_options = spark.sparkContext.getConf().get("spark.driver.extraJavaOptions", "")
        spark.stop()
    finally:
        if cluster is not None:
            cluster.stop()
    memory = mem.report(cores or 1)
    with open(args.json, "w") as fh:
        json.dump({"master": master, "driver_java_options": java_options,
                   "seconds_session": round(t_session, 2), "seconds_wall": round(wall, 2),
                   "seconds": summary["seconds"], "peak_rss_tree_mb": memory["peak_rss_tree_mb"],
                   "memory": memory, "executors": executors,
                   "summary": {k: summary[k] for k in ("input", "kept", "exact_duplicates", "near_duplicates",
                                                        "candidate_pairs", "verified_pairs")}}, fh, indent=2)
    return 0


def executor_peaks(spark) -> list:
    """Each executor's peak JVM heap and its cores, as Spark's own metrics measured them (REST API
    of the driver's status store: ``peakMemoryMetrics``), so memory per executor core is measured."""
    out = []
    try:
        import urllib.request

        sc = spark.sparkContext

        ui = sc.uiWebUrl
        if ui:
            with urllib.request.urlopen(f"{ui}/api/v1/applications/{sc.applicationId}/allexecutors", timeout=120) as r:
                for ex in json.loads(r.read()):
                    peak = ex.get("peakMemoryMetrics") or {}
                    out.append({"id": ex["id"], "cores": ex.get("totalCores"),
                                "peak_jvm_heap_mb": round(peak.get("JVMHeapMemory", 0) / 2**20, 1),
                                "peak_python_rss_mb": round(peak.get("ProcessTreePythonRSSMemory", 0) / 2**20, 1),
                                "peak_jvm_rss_mb": round(peak.get("ProcessTreeJVMRSSMemory", 0) / 2**20, 1)})
    except Exception as exc:  # noqa: BLE001 - a figure missing, not a failed run
        out.append({"error": str(exc)})
    return out


def run_local_child(corpus: str, out_dir: str) -> dict:
    cmd = [sys.executable, "-m", "neardup", "dedup", corpus, "-o", out_dir, "--jobs", "2", "-q"]
    mem = TreeMemory().start()  # this process's tree: the local engine's process
    t = time.perf_counter()
    proc = subprocess.Popen(cmd)
    proc.wait()
    wall = time.perf_counter() - t
    mem.stop()
    if proc.returncode:
        raise SystemExit(f"local engine failed: {proc.returncode}")
    summary = json.load(open(os.path.join(out_dir, "summary.json")))
    return {"seconds_wall": round(wall, 2), "seconds": summary["seconds"], "peak_rss_tree_mb":
            mem.report(2)["peak_rss_tree_mb"], "summary": {k: summary[k] for k in (
                "input", "kept", "exact_duplicates", "near_duplicates", "candidate_pairs", "verified_pairs")}}


def same_files(a: str, b: str) -> dict:
    import hashlib

    out = {}
    for name in ("clusters.jsonl", "pairs.jsonl", "kept.jsonl"):
        digests = []
        for folder in (a, b):
            h = hashlib.sha256()
            with open(os.path.join(folder, name), "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
            digests.append(h.hexdigest())
        out[name] = {"identical": digests[0] == digests[1], "sha256": digests[0]}
    return out


def vs_local(args) -> int:
    from scale import generate
    from pathlib import Path

    tmp = os.path.join(HERE, "results", "tmp")
    os.makedirs(tmp, exist_ok=True)
    for n in [int(x) for x in args.vs_local.split(",") if x.strip()]:
        corpus = os.path.join(tmp, f"generated-{n}.jsonl")
        if not os.path.exists(corpus):
            generate(Path(corpus), n, 0.05, 1)
        record = {"benchmark": "spark-engine-vs-local-engine", "date": _dt.date.today().isoformat(),
                  "command": " ".join(["python", os.path.relpath(os.path.abspath(__file__), REPO)] + sys.argv[1:]),
                  "corpus": f"benchmarks/scale.py generate(docs={n}, planted=0.05, seed=1)",
                  "corpus_bytes": os.path.getsize(corpus), "machine": machine_facts(), "versions": versions(),
                  "note": args.note}
        record["machine"]["loadavg_before"] = [round(x, 2) for x in os.getloadavg()]
        local_out = os.path.join(tmp, f"vs-local-{n}-local")
        shutil.rmtree(local_out, ignore_errors=True)
        print(f"[{n}] local engine ...", file=sys.stderr, flush=True)
        record["local"] = run_local_child(corpus, local_out)
        runs = ([] if args.no_local2 else [("spark_local2", False)]) + \
            ([("spark_standalone_2x1", True)] if args.standalone else [])
        for name, standalone in runs:
            out = os.path.join(tmp, f"vs-local-{n}-{name}")
            js = out + ".json"
            shutil.rmtree(out, ignore_errors=True)
            print(f"[{n}] {name} ...", file=sys.stderr, flush=True)
            cmd = [sys.executable, os.path.abspath(__file__), "--spark-child", "--corpus", corpus, "--output", out,
                   "--json", js, "--master", args.master, "--driver-memory", args.driver_memory,
                   "--partitions", str(args.partitions), "--executor-memory", args.executor_memory]
            subprocess.run(cmd + (["--standalone"] if standalone else []), check=True)
            r = json.load(open(js))
            r["outputs_vs_local"] = same_files(local_out, out)
            r["ratio_wall_to_local"] = round(r["seconds_wall"] / record["local"]["seconds_wall"], 2)
            r["ratio_by_stage"] = {k: (round(v / record["local"]["seconds"][k], 2)
                                       if record["local"]["seconds"].get(k) else None)
                                   for k, v in r["seconds"].items()}
            record[name] = r
            print(f"[{n}] {name}: {r['seconds_wall']} s (+ session {r['seconds_session']} s), "
                  f"{r['ratio_wall_to_local']}x local; identical: "
                  f"{all(v['identical'] for v in r['outputs_vs_local'].values())}", file=sys.stderr, flush=True)
        record["machine"]["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
        path = os.path.join(HERE, "results", f"spark-vs-local-{n}{args.tag}.json")
        with open(path, "w") as fh:
            json.dump(record, fh, indent=2, sort_keys=True)
            fh.write("\n")
        print(f"[{n}] wrote {os.path.relpath(path, REPO)}", file=sys.stderr, flush=True)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=os.path.join(HERE, "data", "corpus.jsonl"))
    ap.add_argument("--limits", default="2000,5000,0")
    ap.add_argument("--mllib-timeout", type=float, default=1200.0)
    ap.add_argument("--no-mllib", action="store_true")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="12g")
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--vs-local", default=None, metavar="N,N", help="generated document counts: the Spark engine "
                    "against the local engine (see above)")
    ap.add_argument("--standalone", action="store_true", help="with --vs-local: also a two-worker standalone cluster")
    ap.add_argument("--executor-memory", default="2g", help="standalone executors' memory (default 2g)")
    ap.add_argument("--no-local2", action="store_true", help="with --vs-local --standalone: the local engine and "
                    "the cluster only (a run of its own, to stay short)")
    ap.add_argument("--tag", default="", help="appended to the results file's name")
    ap.add_argument("--note", default="", help="recorded as is: what else ran on the machine")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--spark-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--output", help=argparse.SUPPRESS)
    ap.add_argument("--json", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return run_neardup(args)
    if args.spark_child:
        return run_spark_child(args)
    if args.vs_local:
        return vs_local(args)

    tmp = os.path.join(HERE, "results", "tmp")
    os.makedirs(tmp, exist_ok=True)
    for n in [int(x) for x in args.limits.split(",") if x.strip()]:
        tag = str(n) if n else "full"
        corpus = subset(args.corpus, n, os.path.join(tmp, f"spark-engine-corpus-{tag}.jsonl"))
        record: dict = {
            "benchmark": "spark-engine-vs-mllib",
            "date": _dt.date.today().isoformat(),
            "command": " ".join(["python", os.path.relpath(os.path.abspath(__file__), REPO)] + sys.argv[1:]),
            "corpus": os.path.relpath(os.path.abspath(args.corpus), REPO),
            "documents_limit": n,
            "master": args.master,
            "driver_memory": args.driver_memory,
            "partitions": args.partitions,
            "machine": machine_facts(),
            "versions": versions(),
        }
        record["machine"]["loadavg_before"] = [round(x, 2) for x in os.getloadavg()]

        # neardup
        out_dir = os.path.join(tmp, f"spark-engine-out-{tag}")
        shutil.rmtree(out_dir, ignore_errors=True)
        nd_json = os.path.join(tmp, f"spark-engine-neardup-{tag}.json")
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--corpus", corpus, "--output", out_dir,
               "--json", nd_json, "--master", args.master, "--driver-memory", args.driver_memory,
               "--partitions", str(args.partitions)]
        print(f"[{tag}] neardup spark engine ...", file=sys.stderr, flush=True)
        subprocess.run(cmd, check=True)
        record["neardup"] = json.load(open(nd_json))
        print(f"[{tag}] neardup: {record['neardup']['seconds_total']} s", file=sys.stderr, flush=True)

        # MLlib
        ml_pairs = os.path.join(tmp, f"spark-mllib-pairs-{tag}")
        ml_json = os.path.join(tmp, f"spark-engine-mllib-{tag}.json")
        if not args.no_mllib:
            cmd = [sys.executable, os.path.join(HERE, "spark_mllib.py"), "--corpus", corpus, "--out", ml_json,
                   "--pairs-dir", ml_pairs, "--join-timeout", str(args.mllib_timeout), "--master", args.master,
                   "--driver-memory", args.driver_memory, "--partitions", str(args.partitions)]
            print(f"[{tag}] MLlib MinHashLSH (join time-boxed at {args.mllib_timeout:.0f} s) ...", file=sys.stderr,
                  flush=True)
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            record["mllib"] = json.load(open(ml_json))
            print(f"[{tag}] MLlib: join {record['mllib'].get('join_status')}", file=sys.stderr, flush=True)
        record["machine"]["loadavg_after_runs"] = [round(x, 2) for x in os.getloadavg()]

        # exact oracle and quality
        ids, texts = load_docs(corpus)
        index = {d: k for k, d in enumerate(ids)}
        truth, t_oracle, runs = oracle(texts)
        del texts
        record["oracle"] = {"pairs_at_or_above_0.8": len(truth), "seconds": t_oracle, "documents": len(ids),
                            "shingling": "neardup defaults: NFKC + casefold, word tokens, 5-shingles, xxh3"}
        record["neardup"]["quality"] = evaluate_neardup(out_dir, index, truth, runs)
        ml = record.get("mllib")
        if ml and ml.get("join_status") == "ok":
            ml["quality"] = evaluate_mllib(ml_pairs, index, truth, runs, len(ids))
            ml_total = ml["seconds_signature"] + ml["seconds_join"]
            record["speedup_vs_mllib"] = round(ml_total / record["neardup"]["seconds_total"], 2)
        elif ml:
            waited = ml["seconds_signature"] + (ml.get("seconds_join_waited") or 0)
            record["speedup_vs_mllib"] = None
            record["speedup_vs_mllib_at_least"] = round(waited / record["neardup"]["seconds_total"], 2)
        if ml and peak(ml) and peak(record["neardup"]):
            record["peak_memory_ratio_mllib_over_neardup"] = round(peak(ml) / peak(record["neardup"]), 2)
        out = os.path.join(HERE, "results", f"spark-engine-{tag}.json")
        with open(out, "w") as fh:
            json.dump(record, fh, indent=2, sort_keys=True)
            fh.write("\n")
        print(f"[{tag}] wrote {os.path.relpath(out, REPO)}", file=sys.stderr, flush=True)
        print(summary_line(tag, record))
    return 0


def summary_line(tag: str, r: dict) -> str:
    nd = r["neardup"]
    q = nd["quality"]["recall_same_cluster"]["all >= 0.80"]
    s = (f"{tag}: neardup {nd['seconds_total']} s, peak {nd['peak_rss_tree_mb']} MB, recall {q['recall']} "
         f"({q['found']}/{q['pairs']}), precision {nd['quality']['precision_edges']}")
    ml = r.get("mllib")
    if ml:
        if ml.get("join_status") == "ok":
            mq = ml["quality"]["recall_reported_pair"]["all >= 0.80"]
            s += (f" | MLlib {ml['seconds_signature']} + {ml['seconds_join']} s, peak {ml.get('peak_rss_tree_mb')} MB, "
                  f"recall {mq['recall']}, precision {ml['quality']['precision_pairs']} | {r['speedup_vs_mllib']}x")
        else:
            s += (f" | MLlib signatures {ml['seconds_signature']} s, join {ml.get('join_status')} after "
                  f"{ml.get('seconds_join_waited')} s | >= {r.get('speedup_vs_mllib_at_least')}x")
    return s


if __name__ == "__main__":
    sys.exit(main())
