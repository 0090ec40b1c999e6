"""The Spark engine on a real standalone cluster: a master and two workers started from the pyspark
installation on loopback (separate JVMs, executors in their own processes, shuffles between
workers), giving the local engine's output files byte for byte."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import shutil

import orjson
import pytest

from neardup.config import DedupConfig
from neardup.engines.local.run import Deduplicator

from test_engine import JUNK, build_records, same_bytes

pytestmark = [pytest.mark.spark,
              pytest.mark.skipif(importlib.util.find_spec("pyspark") is None or shutil.which("java") is None,
                                 reason="needs pyspark and Java")]


@pytest.fixture(scope="module")
def cluster_session():
    from pyspark.sql import SparkSession

    from neardup.spark import get_session
    from neardup.spark.standalone import standalone_cluster

    active = SparkSession.getActiveSession()
    if active is not None:  # a session of an earlier module: this one must be the cluster's
        active.stop()
    with standalone_cluster(workers=2, cores=1, memory="1g") as cluster:
        spark = get_session(cluster.url, app_name="neardup-tests-cluster", conf=cluster.session_conf())
        try:
            yield cluster, spark
        finally:
            spark.stop()


def test_two_worker_cluster_gives_the_local_engines_files(cluster_session, tmp_path):
    from neardup.spark import dedup_paths

    cluster, spark = cluster_session
    assert cluster.status()["aliveworkers"] == 2
    rng = random.Random(7)
    lines = [orjson.dumps(r) for r in build_records(n=200)]
    for junk in JUNK:
        lines.insert(rng.randrange(len(lines)), junk)
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    config = DedupConfig()
    local = str(tmp_path / "local")
    local_summary = Deduplicator(config, jobs=2).run([str(path)], local)
    assert local_summary["near_duplicates"] and local_summary["exact_duplicates"] and local_summary["skipped"]

    out = str(tmp_path / "cluster")
    # the file in 4 splits, so that both executors read and sketch a part of it
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(os.path.getsize(path) // 4 + 1))
    summary = dedup_paths([str(path)], out, config, spark=spark)
    same_bytes(local, out, ["clusters.jsonl", "pairs.jsonl", "kept.jsonl"])
    assert summary["spark"]["master"] == cluster.url
    # two executors (one per worker) besides the driver took part
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size()
    assert executors == 3
    written = json.load(open(os.path.join(out, "summary.json")))
    for key in ("input", "kept", "exact_duplicates", "near_duplicates", "skipped_by_reason", "candidate_pairs",
                "verified_pairs", "clusters", "config_fingerprint"):
        assert written[key] == local_summary[key], key
