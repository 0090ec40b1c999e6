"""The Spark engine's entry points: :func:`dedup` on a DataFrame, :func:`dedup_paths` on files."""

from __future__ import annotations

import functools
import json
import os
import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...config import DEFAULT_RESULT_FORMAT, DedupConfig, check_result_format
from ...errors import ConfigError, require
from ..common import RunOptions, input_names, peak_memory_mb, run_summary, stage_table
from .driver import Stages, dataframe_stages, dedup_on_driver, frames_summary, jvm_peak_mb, release, spark_info
from .read import input_files, read_paths
from .refusals import check_config
from .rows import keep_field_of
from .sketching import map_rows, need_kernel, sketch_schema
from .write import is_remote, write_local, write_remote, write_text

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession


@dataclass
class SparkDedupResult:
    """The result of :func:`dedup`.

    ``clusters``: one row per input record: ``id, cluster, kept, duplicate_of, similarity, reason``
    (the local ``clusters.jsonl``) and ``ordinal``; ``pairs``: every verified edge ``a, b, jaccard,
    estimate`` (ids) and ``a_ordinal, b_ordinal``; ``kept``: the input rows that survive (the
    deduplicated corpus); ``summary``: the counts of the local ``summary.json``. ``clusters`` and
    ``pairs`` are materialized (checkpointed): reading them runs no part of the pipeline again.
    Spark frees local checkpoints when the DataFrames are garbage-collected; :meth:`unpersist`
    also drops any cached copy.
    """

    clusters: "DataFrame"
    pairs: "DataFrame"
    kept: "DataFrame"
    summary: dict
    _held: list = field(default_factory=list, repr=False)

    def unpersist(self) -> None:
        release(self._held)
        self._held = []


    # Spark reads JSONL and Parquet text fields with the local reader's rules, HTML included
    # (content="html": the same extraction on the executors).

# --------------------------------------------------------------------------------------------- DataFrame API


def dedup(df: "DataFrame", *, id_col: str | None = "id", text_col: str = "text", order_col: str | None = None,
          config: DedupConfig = DedupConfig(), spark: "SparkSession | None" = None) -> SparkDedupResult:
    """Deduplicate the rows of a Spark DataFrame; returns DataFrames (see :class:`SparkDedupResult`).

    Each row is read like a Parquet row by the local reader: ``id_col`` (a string, or any value
    made a string as the local reader does; a row without one gets ``row:<ordinal>``; ``None`` for
    no id column), ``text_col`` (string, or binary decoded as UTF-8), and with
    ``config.keep == "field"`` the numeric column ``config.keep_field``; a text over
    ``config.max_bytes`` is skipped as ``too_large``.

    ``order_col``: the input order (ties in the window, exact duplicates and survivors follow it):
    a column with unique values (e.g. a line number); integers are the ordinals themselves, other
    types are ranked. Without it, rows are ordered by (id, hash of the text), so the result never
    depends on how ``df`` is partitioned; the input is then checkpointed once (a stable row id is
    needed to return the kept rows).

    With URL identity (``config.url_field``, a column of ``df``; rows without it have no URL), the
    stages after sketching run on the driver, as for a local output of :func:`dedup_paths`: it
    collects a few values of every row (ordinal, id, reason, length, fingerprint, shingle count,
    canonical URL and claim) and returns ``clusters`` and ``pairs`` made there, with the answers
    of the local engine reading the same rows (reasons ``url`` and ``canonical`` included), and
    the local ``summary.json``'s figures in ``summary``.
    """
    require("pyspark", "spark")
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    urls = config.url_field is not None
    # (URL identity runs on the driver: the DataFrame stages do not refuse it here)
    check_config(config, frames=None if urls else "the DataFrame API (neardup.spark.dedup)")
    spark = spark or df.sparkSession
    cols = set(df.columns)
    for name, what in ((text_col, "text_col"), (id_col, "id_col"), (order_col, "order_col")):
        if name is not None and name not in cols:
            raise ConfigError(f"{what} {name!r} is not a column of the DataFrame (columns: {df.columns})")
    kf = keep_field_of(config)
    if kf is not None and kf not in cols:
        raise ConfigError(f"keep_field {kf!r} is not a column of the DataFrame (columns: {df.columns})")

    st = Stages()
    dtypes = {f.name: f.dataType for f in df.schema.fields}
    integral = order_col is not None and isinstance(dtypes[order_col], (T.ByteType, T.ShortType, T.IntegerType, T.LongType))
    # the driver's stages number the records 0, 1, 2, ...: integer order values are ranked there
    # too, and given back as the ordinals of the results
    given_ordinals = integral and urls
    integral = integral and not urls
    held_input = []
    if order_col is None:
        base = st.checkpoint(df.withColumn("_loc", F.monotonically_increasing_id()))
        held_input.append(base)
        key = F.col("_loc")
    else:
        base = df
        key = F.col(order_col).cast("long") if integral else F.lit(0).cast("long")
    sel = [
        (F.col(id_col) if id_col else F.lit(None).cast("string")).alias("_id"),
        F.col(text_col).alias("_text"),
        (F.col(kf) if kf else F.lit(None).cast("double")).alias("_kf"),
        key.alias("_key"),
    ]
    uf = config.url_field
    if urls and uf in cols and uf != text_col:  # (the local reader keeps no text as a field)
        sel.append(F.col(f"`{uf}`").alias("_url"))
    extra_fields, extras = [], []
    if order_col is not None and not integral:
        sel.append(F.col(order_col).alias("_okey"))
        extra_fields.append(T.StructField("_okey", dtypes[order_col]))
        extras.append("_okey")
    if order_col is None:
        extra_fields.append(T.StructField("_h", T.BinaryType()))
    ctx = {"extras": tuple(extras), "text_hash": order_col is None, "need_kernel": need_kernel(config)}
    # the executors read each row with record_reader(config), as the local reader reads a Parquet
    # row; the reader names the DataFrame's columns (a skipped record's detail names its text column)
    reading = dataclasses.replace(config, id_field=id_col or config.id_field, text_field=text_col)
    sk = base.select(*sel).mapInArrow(functools.partial(map_rows, ctx=ctx, config=reading),
                                      sketch_schema(extra_fields))
    sk = st.checkpoint(sk)

    # ordinals
    if integral:
        if sk.where(F.col("_key").isNull()).limit(1).count():
            raise ConfigError(f"order_col {order_col!r} has null values; it must give every row a unique position")
        docs = sk.withColumnRenamed("_key", "ordinal")
    else:
        if order_col is not None:
            order = [F.col("_okey").asc_nulls_first()]
            rowkey = "_okey"
        else:
            order = [F.col("id").asc_nulls_first(), F.col("_h").asc_nulls_first(), F.col("_key")]
            rowkey = "_key"
        keyed = sk.orderBy(*order).select(rowkey)
        ranked = keyed.rdd.map(lambda r: r[0]).zipWithIndex()
        rschema = T.StructType([T.StructField(rowkey, sk.schema[rowkey].dataType), T.StructField("ordinal", T.LongType())])
        ranks = spark.createDataFrame(ranked, rschema)
        docs = sk.join(ranks, rowkey).drop("_h")
    if order_col is not None:
        col = "ordinal" if integral else "_okey"
        dup = docs.groupBy(col).count().where(F.col("count") > 1).limit(1).collect()
        if dup:
            raise ConfigError(f"order_col {order_col!r} is not unique: {dup[0][col]!r} is the value of "
                              f"{dup[0]['count']} rows")
    docs = docs.withColumn("id", F.coalesce(F.col("id"), F.concat(F.lit("row:"), F.col("ordinal").cast("string"))))
    docs = docs.select("ordinal", "id", "reason", "length", "keyval", "fp", "n", "ids", "bands",
                       *(("url_key", "claim_key", "page_url") if urls else ()),
                       *[c for c in ("_key", "_okey") if c in docs.columns and c != "ordinal"])
    docs = st.checkpoint(docs)
    st.lap("read_and_sketch")

    if urls:
        values = None
        if given_ordinals:  # rank -> the order column's value
            got = docs.select("ordinal", "_okey").toArrow().sort_by("ordinal")
            values = got.column("_okey").to_numpy(zero_copy_only=False).astype("int64")
        clusters, pairs, summary = _driver_frames(spark, docs.drop("_key", "_okey"), config, st, values)
        integral = given_ordinals  # the clusters' ordinals are the order column's values
    else:
        clusters, pairs, stats = dataframe_stages(spark, docs.drop("_key", "_okey"), config, st)
    kept_ord = clusters.where(F.col("kept")).select("ordinal")
    if order_col is None:
        link = docs.select("ordinal", F.col("_key").alias("_loc"))
        kept = base.join(link.join(kept_ord, "ordinal", "left_semi").select("_loc"), "_loc", "left_semi").drop("_loc")
    elif integral:
        kept = df.join(kept_ord.select(F.col("ordinal").alias("__ord")),
                       F.col(order_col).cast("long") == F.col("__ord"), "left_semi")
    else:
        link = docs.select("ordinal", "_okey").join(kept_ord, "ordinal", "left_semi").select(F.col("_okey").alias("__okey"))
        kept = df.join(link, F.col(order_col) == F.col("__okey"), "left_semi")
    if not urls:
        summary = frames_summary(spark, clusters, stats, config, st, None)
    keep_frames = {id(clusters), id(pairs)}
    release([d for d in st.held if id(d) not in keep_frames])
    return SparkDedupResult(clusters=clusters, pairs=pairs, kept=kept, summary=summary,
                            _held=[clusters, pairs] + held_input)


def _driver_frames(spark, docs, config: DedupConfig, st: Stages, values=None):
    """``(clusters, pairs, summary)`` of the DataFrame API made by the driver's stages
    (:func:`~neardup.engines.spark.driver.dedup_on_driver`); ``values``: the ordinals the results
    give each rank (None: the ranks themselves)."""
    import numpy as np
    import pyarrow as pa

    outcome, pair_rows, stats = dedup_on_driver(spark, docs, config, st)
    stats.pop("urls")  # (clusters.jsonl's url: no column of the DataFrame API's clusters)
    a, b = stats.pop("pair_ordinals")
    n = len(outcome.ids)
    ordinals = np.arange(n, dtype=np.int64) if values is None else values
    clusters = spark.createDataFrame(pa.table({
        "id": pa.array(outcome.ids, pa.string()), "cluster": pa.array(outcome.cluster, pa.string()),
        "kept": pa.array(np.asarray(outcome.kept, dtype=bool)),
        "duplicate_of": pa.array(outcome.duplicate_of, pa.string()),
        "similarity": pa.array(outcome.similarity, pa.float64()), "reason": pa.array(outcome.reason, pa.string()),
        "ordinal": pa.array(ordinals)}))
    pairs = spark.createDataFrame(pa.table({
        "a": pa.array([r[0] for r in pair_rows], pa.string()), "b": pa.array([r[1] for r in pair_rows], pa.string()),
        "jaccard": pa.array([r[2] for r in pair_rows], pa.float64()),
        "estimate": pa.array([r[3] for r in pair_rows], pa.float64()),
        "a_ordinal": pa.array(ordinals[a]), "b_ordinal": pa.array(ordinals[b])}))
    summary = run_summary(outcome, stats, config, kept_info=None, jobs=spark.sparkContext.defaultParallelism,
                          seconds={})
    summary = {"engine": "spark", **summary, "spark": spark_info(spark),
               "seconds": {k: round(v, 3) for k, v in st.seconds.items()}}
    st.lap("summary")
    return st.checkpoint(clusters), st.checkpoint(pairs), summary


def dedup_paths(inputs, output: str, config: DedupConfig = DedupConfig(), *, master: str | None = None,
                write_kept: bool = True, spark=None, conf: dict | None = None,
                output_format: str = DEFAULT_RESULT_FORMAT) -> dict:
    """``neardup dedup --engine spark``: deduplicate JSONL or Parquet files (local or any Hadoop
    path) into ``output``; returns the summary.

    A local ``output`` gets the local engine's files, written by its writers: ``clusters.jsonl``
    and ``pairs.jsonl`` (``.parquet`` with ``output_format="parquet"``), ``kept.jsonl`` or
    ``kept.parquet`` (the input's format, the original records byte for byte), ``summary.json``.
    An output on a Hadoop file system gets Parquet datasets written by the executors instead:
    ``clusters/``, ``pairs/`` and ``kept/`` (see below).

    Records and ordinals are exactly the local reader's (see :mod:`neardup.engines.spark`), so the
    clusters and pairs equal the local engine's. ``master``: the Spark master (default: the
    ``spark-submit`` environment's, else ``local[*]``); an active session is used as it is.
    There (and for inputs on a Hadoop file system) ``kept/`` holds, for JSONL input, ``ordinal``
    and ``record`` (the original line; read it back with
    ``spark.read.json(df.select("record").rdd.map(lambda r: r[0]))`` or ``from_json``), for
    Parquet input the original columns and ``ordinal``.
    """
    require("pyspark", "spark")
    from .session import _environment_provides_master, get_session

    output = os.fspath(output)
    check_config(config, RunOptions(inputs=input_names(inputs), spark_master=master),
                 frames="an output on a Hadoop file system" if is_remote(output) else None)
    check_result_format(output_format)
    st = Stages()
    if spark is None:
        if master is None and not _environment_provides_master():
            master = "local[*]"
        spark = get_session(master=master, app_name="neardup-dedup", conf=conf)
    st.lap("session")
    fmt, leaves = input_files(spark, inputs, config.format)
    if not is_remote(output):
        os.makedirs(output[5:] if output.startswith("file:") else output, exist_ok=True)

    sk, total, locate = read_paths(spark, fmt, leaves, config)
    docs = st.checkpoint(sk)
    st.lap("read_and_sketch")
    if is_remote(output):
        clusters, pairs, stats = dataframe_stages(spark, docs, config, st)
        summary = frames_summary(spark, clusters, stats, config, st, None)
        st.lap("summary")
        kept_info = write_remote(spark, output, clusters, pairs, locate, fmt, summary, write_kept)
        st.lap("write")
    else:
        outcome, pair_rows, stats = dedup_on_driver(spark, docs, config, st)
        urls = stats.pop("urls")
        stats.pop("pair_ordinals")
        kept_info = write_local(output[5:] if output.startswith("file:") else output, inputs, leaves, outcome,
                                 pair_rows, locate, config, write_kept, output_format, spark, urls=urls)
        st.lap("write")
        summary = run_summary(outcome, stats, config, kept_info=None, jobs=spark.sparkContext.defaultParallelism,
                              seconds={})
        summary = {"engine": "spark", **summary, "spark": spark_info(spark)}
        st.lap("summary")
    summary["kept_output"] = kept_info
    # the local engine's stage table; the session (the JVM's start) apart, as it is no stage of a run
    summary["seconds"] = stage_table({**st.seconds, "total": sum(v for k, v in st.seconds.items() if k != "session")})
    summary["spark"]["session_seconds"] = round(st.seconds.get("session", 0.0), 3)
    summary["peak_memory_mb"] = round(peak_memory_mb(), 1)
    jvm = jvm_peak_mb()
    if jvm is not None:
        summary["peak_memory_mb_jvm"] = jvm
    summary["inputs"] = {"format": fmt, "files": len(leaves)}
    if summary["input"] != total:
        raise RuntimeError(f"internal error: {summary['input']} records in clusters, {total} counted in the inputs")
    sep = "" if output.endswith("/") else "/"
    write_text(spark, f"{output}{sep}summary.json", json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    release(st.held)
    return summary
