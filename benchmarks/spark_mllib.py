#!/usr/bin/env python3
"""Spark MLlib baseline for the side-by-side Spark benchmark (issue 6).

What Spark users reach for first: ``MinHashLSH`` + ``approxSimilarityJoin`` at Jaccard distance
0.2 (similarity >= 0.8), in local mode. Pipeline (all MLlib / Spark SQL, no Python UDF):

  read JSONL (id, text)  ->  RegexTokenizer(pattern="(?U)\\w+", gaps=False, toLowercase=True)
  ->  NGram(n=5)  (a document with fewer than 5 words becomes one shingle of all its words,
      as in benchmarks/peers.py)  ->  HashingTF(numFeatures=2^24, binary=True)
  ->  MinHashLSH(numHashTables=H, seed=42).fit  ->  transform  (= "signatures", persisted, counted)
  ->  approxSimilarityJoin(sig, sig, 0.2, distCol="jaccard_distance"), pairs with id_a < id_b,
      written to Parquet (= "join").

``(?U)`` makes Java's ``\\w`` Unicode-aware like Python's. MLlib's MinHashLSH has no banding:
each hash table is ONE min-hash, and two documents are candidates when any table agrees, so a
shingle shared by many documents (licence text, man-page boilerplate) puts them all in one bucket
and the join's candidate set grows quadratically; MLlib then computes the exact Jaccard distance
of the hashed shingle sets for every candidate (precision is exact up to HashingTF collisions).

Timed separately: signatures (read + tokenize + shingle + hash + MinHash, materialized) and the
join (with ``--join-timeout``, default 1200 s; on timeout the Spark jobs are cancelled and the
record says ``"join_status": "did not finish"``). Peak memory: the process tree (Python driver +
JVM + any Python workers) sampled every 0.25 s, and the JVM's own high-water mark (VmHWM); the
JVM takes heap up to ``--driver-memory`` before it collects, so the peak mostly follows that.
CPU seconds (process tree) are recorded next to wall times: on a shared machine they say more.

Usage:
  python benchmarks/spark_mllib.py [--corpus benchmarks/data/corpus.jsonl] [--limit N]
        [--num-hash-tables 5] [--threshold 0.2] [--ngram 5] [--num-features 16777216]
        [--join-timeout 1200] [--master local[2]] [--driver-memory 12g] [--partitions 8]
        [--out FILE] [--pairs-dir DIR]

  --limit N   the first N documents of the corpus (file order; 0 = all).
  --out       JSON record (default benchmarks/results/spark-mllib-<N|full>.json).
  --pairs-dir Parquet of the pairs found (default benchmarks/results/tmp/spark-mllib-pairs-<N|full>),
              for recall/precision against the exact oracle.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "src"))


class PeakMemory:
    """Samples the RSS of this process and all its descendants (the JVM and Python workers)."""

    def __init__(self, interval: float = 0.25):
        import psutil

        self._psutil = psutil
        self.interval = interval
        self.peak_tree = 0
        self.peak_jvm = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        psutil = self._psutil
        me = psutil.Process()
        total = 0
        jvm = 0
        for proc in [me] + me.children(recursive=True):
            try:
                rss = proc.memory_info().rss
                name = proc.name()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            total += rss
            if name == "java":
                jvm += rss
        self.peak_tree = max(self.peak_tree, total)
        self.peak_jvm = max(self.peak_jvm, jvm)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._sample()
            except Exception:
                pass
            self._stop.wait(self.interval)

    def start(self) -> "PeakMemory":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def tree_cpu_seconds() -> float:
    """User + system CPU seconds of this process and its live descendants (the JVM above all).

    Less sensitive than wall time to other work on a shared machine."""
    import psutil

    total = 0.0
    for proc in [psutil.Process()] + psutil.Process().children(recursive=True):
        try:
            t = proc.cpu_times()
            total += t.user + t.system
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total


def jvm_vmhwm_mb() -> float | None:
    """High-water RSS of the JVM child (from /proc/<pid>/status), in MB."""
    try:
        import psutil

        for proc in psutil.Process().children(recursive=True):
            if proc.name() == "java":
                with open(f"/proc/{proc.pid}/status") as fh:
                    for line in fh:
                        if line.startswith("VmHWM:"):
                            return int(line.split()[1]) / 1024
    except Exception:
        return None
    return None


def machine_facts() -> dict:
    cpu = None
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = None
    try:
        mem = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError):
        pass
    return {
        "cpu_model": cpu,
        "nproc": os.cpu_count(),
        "mem_total_gb": mem,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def versions() -> dict:
    out: dict = {}
    for mod in ("pyspark", "pandas", "pyarrow", "numpy", "psutil"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:
            out[mod] = None
    try:
        res = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
        out["java"] = (res.stderr or res.stdout).splitlines()[0].strip()
    except Exception:
        out["java"] = None
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=os.path.join(HERE, "data", "corpus.jsonl"))
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--num-hash-tables", type=int, default=5)
    ap.add_argument("--threshold", type=float, default=0.2, help="Jaccard distance (0.2 = similarity 0.8)")
    ap.add_argument("--ngram", type=int, default=5)
    ap.add_argument("--num-features", type=int, default=1 << 24)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--join-timeout", type=float, default=1200.0)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="12g")
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--out", default=None)
    ap.add_argument("--pairs-dir", default=None)
    args = ap.parse_args(argv)

    tag = str(args.limit) if args.limit else "full"
    out = args.out or os.path.join(HERE, "results", f"spark-mllib-{tag}.json")
    pairs_dir = args.pairs_dir or os.path.join(HERE, "results", "tmp", f"spark-mllib-pairs-{tag}")
    if not os.path.exists(args.corpus):
        print(f"corpus not found: {args.corpus} (run benchmarks/build_corpus.sh)", file=sys.stderr)
        return 2

    record: dict = {
        "system": "spark-mllib",
        "date": _dt.date.today().isoformat(),
        "command": " ".join([sys.executable] + sys.argv),
        "corpus": os.path.relpath(os.path.abspath(args.corpus), REPO),
        "limit": args.limit,
        "params": {
            "tokenizer": "RegexTokenizer((?U)\\w+, lowercase)",
            "ngram": args.ngram,
            "vectorizer": f"HashingTF(numFeatures={args.num_features}, binary=True)",
            "num_hash_tables": args.num_hash_tables,
            "distance_threshold": args.threshold,
            "seed": args.seed,
            "master": args.master,
            "driver_memory": args.driver_memory,
            "partitions": args.partitions,
            "join_timeout_s": args.join_timeout,
        },
        "machine": machine_facts(),
        "versions": versions(),
    }
    record["machine"]["loadavg_before"] = [round(x, 2) for x in os.getloadavg()]

    from neardup.spark.session import get_session
    from pyspark.ml.feature import HashingTF, MinHashLSH, NGram, RegexTokenizer
    from pyspark.sql import functions as F

    mem = PeakMemory().start()
    t0 = time.perf_counter()
    spark = get_session(
        master=args.master,
        app_name="neardup-bench-mllib",
        conf={
            "spark.driver.memory": args.driver_memory,
            "spark.sql.shuffle.partitions": str(args.partitions),
            "spark.default.parallelism": str(args.partitions),
        },
    )
    sc = spark.sparkContext
    record["seconds_session"] = round(time.perf_counter() - t0, 2)

    # Reading is untimed (as for the peers, which get the text in memory): the documents are read,
    # spread over the partitions and cached before the clock starts.
    raw = spark.read.schema("id string, src string, text string").json(args.corpus).select("id", "text")
    if args.limit:
        raw = raw.limit(args.limit)
    raw = raw.repartition(args.partitions).persist()
    stats = raw.agg(F.count("*").alias("n"), F.sum(F.octet_length("text")).alias("b")).first()
    record["docs"] = int(stats["n"])
    record["text_bytes"] = int(stats["b"] or 0)

    t_sig = time.perf_counter()
    c_sig = tree_cpu_seconds()
    tok = RegexTokenizer(inputCol="text", outputCol="words", pattern="(?U)\\w+", gaps=False, toLowercase=True)
    ngram = NGram(n=args.ngram, inputCol="words", outputCol="grams")
    words = ngram.transform(tok.transform(raw))
    shingled = words.where(F.size("words") > 0).withColumn(
        "shingles",
        F.when(F.size("words") < args.ngram, F.array(F.concat_ws(" ", "words"))).otherwise(F.col("grams")),
    )
    tf = HashingTF(inputCol="shingles", outputCol="features", numFeatures=args.num_features, binary=True)
    vecs = tf.transform(shingled).select("id", "features")
    lsh = MinHashLSH(inputCol="features", outputCol="hashes", numHashTables=args.num_hash_tables, seed=args.seed)
    model = lsh.fit(vecs)
    sig = model.transform(vecs).persist()
    n_sig = sig.count()
    record["seconds_signature"] = round(time.perf_counter() - t_sig, 2)
    record["cpu_seconds_signature"] = round(tree_cpu_seconds() - c_sig, 2)
    record["docs_signed"] = n_sig
    raw.unpersist()
    print(f"signatures: {n_sig} docs in {record['seconds_signature']} s", file=sys.stderr, flush=True)

    # Join, in a thread so that it can be cancelled at the timeout.
    shutil.rmtree(pairs_dir, ignore_errors=True)
    os.makedirs(os.path.dirname(pairs_dir), exist_ok=True)
    joined = model.approxSimilarityJoin(sig, sig, args.threshold, distCol="jaccard_distance")
    pairs = joined.where(F.col("datasetA.id") < F.col("datasetB.id")).select(
        F.col("datasetA.id").alias("id_a"), F.col("datasetB.id").alias("id_b"), "jaccard_distance"
    )
    outcome: dict = {}

    def run_join():
        try:
            sc.setJobGroup("mllib-join", "approxSimilarityJoin", interruptOnCancel=True)
            pairs.write.mode("overwrite").parquet(pairs_dir)
            outcome["ok"] = True
        except Exception as exc:  # cancelled or failed
            outcome["error"] = f"{type(exc).__name__}: {str(exc)[:500]}"

    t_join = time.perf_counter()
    c_join = tree_cpu_seconds()
    worker = threading.Thread(target=run_join, daemon=True)
    worker.start()
    worker.join(args.join_timeout)
    if worker.is_alive():
        sc.cancelJobGroup("mllib-join")
        worker.join(120)
        record["join_status"] = "did not finish"
        record["seconds_join"] = None
        record["seconds_join_waited"] = round(time.perf_counter() - t_join, 2)
        record["pairs"] = None
    elif outcome.get("ok"):
        record["join_status"] = "ok"
        record["seconds_join"] = round(time.perf_counter() - t_join, 2)
        found = spark.read.parquet(pairs_dir)
        record["pairs"] = found.count()
        record["docs_in_pairs"] = (
            found.select(F.col("id_a").alias("d")).union(found.select(F.col("id_b").alias("d"))).distinct().count()
        )
        record["pairs_dir"] = os.path.relpath(pairs_dir, REPO)
    else:
        record["join_status"] = "error"
        record["error"] = outcome.get("error")
        record["seconds_join"] = None
        record["pairs"] = None
    record["cpu_seconds_join"] = round(tree_cpu_seconds() - c_join, 2)
    print(f"join: {record['join_status']} {record.get('seconds_join')} s, pairs {record.get('pairs')}",
          file=sys.stderr, flush=True)

    mem.stop()
    record["jvm_vmhwm_mb"] = round(jvm_vmhwm_mb() or 0, 1) or None
    record["peak_rss_tree_mb"] = round(mem.peak_tree / 2**20, 1)
    record["peak_rss_jvm_mb"] = round(mem.peak_jvm / 2**20, 1)
    if record["seconds_join"] is not None:
        record["seconds_total"] = round(record["seconds_signature"] + record["seconds_join"], 2)
    record["machine"]["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]

    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as fh:
        json.dump(record, fh, indent=2, sort_keys=True)
        fh.write("\n")
    print(json.dumps(record, sort_keys=True))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
