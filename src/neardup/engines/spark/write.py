"""The outputs of :func:`~neardup.engines.spark.api.dedup_paths`: a local folder by the local writers, a
Hadoop path by the executors."""

from __future__ import annotations

import os

import numpy as np

from ...config import DedupConfig
from ..common import input_names
from .read import has_scheme, kept_frame


def is_remote(path: str) -> bool:
    return has_scheme(path) and not path.startswith("file:")


def write_text(spark, path: str, text: str) -> None:
    if not is_remote(path):
        local = path[5:] if path.startswith("file:") else path
        with open(local, "w", encoding="utf-8") as fh:
            fh.write(text)
        return
    jvm = spark.sparkContext._jvm
    hp = jvm.org.apache.hadoop.fs.Path(path)
    fs = hp.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    out = fs.create(hp, True)
    try:
        out.write(bytearray(text.encode("utf-8")))
    finally:
        out.close()


def write_local(out_dir: str, inputs, leaves, outcome, pair_rows, locate, config: DedupConfig, write_kept: bool,
                 output_format: str, spark, urls: dict | None = None):
    """The local engine's files, written by its own writers (:mod:`neardup.io.write`): the same
    names, schemas and bytes (``urls``: clusters.jsonl's ``url`` by ordinal). Returns the kept
    corpus's description (None without one)."""
    from ...cpus import available_cpus
    from ...io import write_kept as write_kept_records
    from ...io.write import write_clusters, write_pairs

    write_clusters(out_dir, outcome, format=output_format, urls=urls)
    write_pairs(out_dir, pair_rows, format=output_format)
    if not write_kept:
        return None
    if all(not has_scheme(leaf) for _, leaf, _ in leaves):
        # local inputs: the local writer reads them again with the keep mask, as the local engine does
        return write_kept_records(list(input_names(inputs)), outcome.kept, out_dir, jobs=available_cpus(),
                                  **config.read_options())
    # inputs on a Hadoop file system, which this process cannot open: the kept rows, written by Spark
    import pyarrow as pa

    kept_ord = spark.createDataFrame(pa.table({"ordinal": np.flatnonzero(outcome.kept)}))
    kept = kept_frame(spark, locate, kept_ord)
    if kept is None:
        return None
    path = os.path.join(out_dir, "kept")
    kept.write.mode("overwrite").parquet(path)
    return {"path": path, "format": "parquet", "records": int(outcome.kept.sum()),
            "columns": "ordinal, record" if locate["format"] == "jsonl" else "the input columns, ordinal"}


def write_remote(spark, output: str, clusters, pairs, locate, fmt: str, summary: dict, write_kept: bool):
    """An output on a Hadoop file system (hdfs://, s3a://, ...): the same tables as Parquet datasets
    written by the executors (``clusters/``, ``pairs/``, ``kept/``). Returns the kept corpus's description."""
    from pyspark.sql import functions as F

    sep = "" if output.endswith("/") else "/"
    clusters.orderBy("ordinal").write.mode("overwrite").parquet(f"{output}{sep}clusters")
    pairs.orderBy("a_ordinal", "b_ordinal").write.mode("overwrite").parquet(f"{output}{sep}pairs")
    if not write_kept:
        return None
    kept = kept_frame(spark, locate, clusters.where(F.col("kept")).select("ordinal"))
    if kept is None:
        return None
    kept.write.mode("overwrite").parquet(f"{output}{sep}kept")
    return {"path": f"{output}{sep}kept", "format": "parquet", "records": summary["kept"],
            "columns": "ordinal, record" if fmt == "jsonl" else "the input columns, ordinal"}
