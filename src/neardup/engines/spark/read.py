"""The inputs of :func:`~neardup.engines.spark.api.dedup_paths`: the files listed as the local reader lists
them (local folders or Hadoop paths), read by Spark, their records given the local reader's ordinals."""

from __future__ import annotations

import functools
import os

from ...config import DedupConfig
from ...errors import ConfigError, InputError
from ...io.read import record_reader
from ..common import input_names
from .executors import jsonl_lines
from .rows import keep_field_of
from .sketching import map_jsonl, map_rows, need_kernel, sketch_schema


def has_scheme(path: str) -> bool:
    head, sep, _ = path.partition("://")
    return bool(sep) and head.isalnum() or path.startswith("file:")


_GLOB = str.maketrans({c: "\\" + c for c in "*?[]{}\\"})


def _local_uri(path: str) -> str:
    """A file URI for Spark, with Hadoop glob characters escaped."""
    return "file://" + os.path.abspath(path).translate(_GLOB)


def _file_key(uri: str) -> str:
    """Spark's ``_metadata.file_path`` (URL-encoded) and our own URIs in one comparable form."""
    from urllib.parse import unquote

    if uri.startswith("file:"):
        rest = uri[5:]
        if rest.startswith("//"):
            rest = rest[2:]
            rest = rest[rest.find("/"):] if "/" in rest else "/"
        return "file:" + os.path.normpath(unquote(rest))
    return unquote(uri)


def _hadoop_leaves(spark, path: str) -> list[str]:
    """Files under a Hadoop path (hdfs://, s3a://, ..., globs allowed), walked like the local reader
    walks folders: glob matches and folder entries in sorted order, the names the local reader leaves
    out left out (:func:`neardup.io.read.sources.is_hidden_name`, Spark's own rule)."""
    from ...io.read.sources import is_hidden_name

    jvm = spark.sparkContext._jvm
    hp = jvm.org.apache.hadoop.fs.Path(path)
    fs = hp.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    matches = fs.globStatus(hp)
    if not matches:
        raise InputError(f"{path}: no such file or folder")
    out = []

    def walk(st):
        if not st.isDirectory():
            out.append(st.getPath().toString())
            return
        for c in sorted(fs.listStatus(st.getPath()), key=lambda s: s.getPath().getName()):
            if not is_hidden_name(c.getPath().getName()):
                walk(c)

    for st in sorted(matches, key=lambda s: s.getPath().toString()):
        walk(st)
    return out


def input_files(spark, inputs, format: str) -> tuple[str, list[tuple[str, str, str | None]]]:
    """``(format, [(spark uri, path as the local reader names it, why unreadable or None)])``."""
    from ...io.read import input_leaves as local_leaves, kind_of, plan_inputs

    leaves = []
    fmts = set()
    for p in input_names(inputs):
        if not has_scheme(p) and os.path.exists(p):
            for leaf, fmt, why in local_leaves(plan_inputs([p], format)):
                if why is None:
                    fmts.add(fmt)
                leaves.append((_local_uri(leaf), leaf, why))
        else:
            for leaf in _hadoop_leaves(spark, p):
                fmts.add(format if format != "auto" else (kind_of(leaf) or "text"))
                leaves.append((leaf, leaf, None))
    seen_leaves = set()
    for uri, leaf, why in leaves:
        if why is None:
            k = _file_key(uri.replace("\\", ""))
            if k in seen_leaves:
                raise ConfigError(f"{leaf} is among the inputs twice; the Spark engine reads each file once")
            seen_leaves.add(k)
    if len(fmts) > 1 or (fmts and next(iter(fmts)) not in ("jsonl", "parquet")):
        raise ConfigError(f"the Spark engine reads JSONL or Parquet inputs (one kind per run); these are "
                          f"{', '.join(sorted(map(str, fmts)))}. Use --format or --engine local")
    fmt = next(iter(fmts)) if fmts else (format if format != "auto" else "jsonl")
    if fmt == "jsonl":
        for uri, leaf, why in leaves:
            low = leaf.lower()
            if low.endswith((".zst", ".zstd")):
                raise ConfigError(f"{leaf}: zstd-compressed JSONL needs Hadoop's native zstd codec; recompress it "
                                  "as .gz (or use --engine local)")
            if why is None and not has_scheme(leaf):
                try:
                    with open(leaf, "rb") as fh:
                        gz = fh.read(2) == b"\x1f\x8b"
                except OSError:
                    continue
                if gz != low.endswith(".gz"):
                    raise ConfigError(f"{leaf}: Hadoop picks the codec by file name, and this file "
                                      f"{'is' if gz else 'is not'} gzip data {'without' if gz else 'with'} a .gz "
                                      "name; rename it (or use --engine local)")
    return fmt, leaves


def _jsonl_frame(spark, uris: list[str], *, as_binary: bool = True, with_line: bool = True):
    """(line, file, block) of every line. ``as_binary=False`` leaves the line a string column: the
    same bytes (the text source does not check UTF-8), for a reader of the Arrow buffers that
    never decodes them (:func:`joined_lines`), without the JVM's copy of every line.
    ``with_line=False``: (file, block) only, for counting the lines of each split (half the
    time of counting with the lines: no line is copied out of the reader)."""
    from pyspark.sql import functions as F

    line = F.col("value").cast("binary") if as_binary else F.col("value")
    where = [F.col("_metadata.file_path").alias("file"), F.col("_metadata.file_block_start").alias("block")]
    return spark.read.option("lineSep", "\n").text(uris).select(*([line.alias("line")] if with_line else []), *where)


def _uri_map(seen_uris, leaves) -> dict[str, tuple[int, str]]:
    """Spark's file URIs -> (leaf number, local name)."""
    by_key = {}
    for no, (uri, leaf, _) in enumerate(leaves):
        by_key.setdefault(_file_key(uri.replace("\\", "")), (no, leaf))
    out = {}
    for u in seen_uris:
        k = _file_key(u)
        if k not in by_key:
            raise InputError(f"Spark read a file that is not among the inputs: {u}")
        out[u] = by_key[k]
    return out


def read_paths(spark, fmt: str, leaves, config: DedupConfig):
    """The sketch table of the inputs, keyed by the local reader's ordinals, plus what the kept
    corpus needs to find the records again. The executors read the records with
    ``record_reader(config)``, the local engine's reader of the same configuration."""
    from pyspark.sql import functions as F

    id_field, text_field = config.id_field, config.text_field
    kf = keep_field_of(config)
    readable = [(u, leaf) for u, leaf, why in leaves if why is None]
    uris = [u for u, _ in readable]
    # where the records are (blocks, paths, files, added below) and how the executors sketch them;
    # how a record is read is the config's
    ctx = {"need_kernel": need_kernel(config)}
    counts: dict = {}
    if fmt == "jsonl":
        frame = _jsonl_frame(spark, uris) if uris else None
        rows = (_jsonl_frame(spark, uris, with_line=False).groupBy("file", "block").count().collect()
                if frame is not None else [])
        fmap = _uri_map({r["file"] for r in rows}, leaves)
        for r in rows:
            counts[(fmap[r["file"]][0], r["block"])] = (r["file"], int(r["count"]))
    else:
        frame = spark.read.option("mergeSchema", "true").parquet(*uris) if uris else None
        rows = (frame.select(F.col("_metadata.file_path").alias("file")).groupBy("file").count().collect()
                if frame is not None else [])
        fmap = _uri_map({r["file"] for r in rows}, leaves)
        for r in rows:
            counts[(fmap[r["file"]][0], 0)] = (r["file"], int(r["count"]))
    # ordinals: leaves in order; an unreadable leaf is one record, as in the local reader
    blocks: dict = {}
    files: dict = {}
    synthetic = []
    n = 0
    by_leaf: dict = {}
    for (no, blk), (uri, c) in counts.items():
        by_leaf.setdefault(no, []).append((blk, uri, c))
    for no, (uri, leaf, why) in enumerate(leaves):
        if why is not None:
            synthetic.append((n, leaf, "skipped:unreadable_file"))
            n += 1
            continue
        line = 0
        for blk, suri, c in sorted(by_leaf.get(no, [])):
            blocks[(suri, blk)] = (n, line)
            files.setdefault(suri, (n, leaf))
            n += c
            line += c
    total = n
    paths = {u: leaf for u, (no, leaf) in fmap.items()}
    if frame is None:
        sk = spark.createDataFrame([], sketch_schema())
    elif fmt == "jsonl":
        # the local engine's JSONL fast path when the driver has it (so the executors must too)
        encoded = ctx["need_kernel"] and record_reader(config).scans_jsonl_blocks()
        ctx.update(blocks=blocks, paths=paths, encoded=encoded)
        lines = _jsonl_frame(spark, uris, as_binary=False) if encoded else frame
        sk = lines.mapInArrow(functools.partial(map_jsonl, ctx=ctx, config=config), sketch_schema())
    else:
        names = set(frame.columns)
        sel = [
            (F.col(f"`{id_field}`") if id_field in names else F.lit(None).cast("string")).alias("_id"),
            (F.col(f"`{text_field}`") if text_field in names else F.lit(None).cast("string")).alias("_text"),
            (F.col(f"`{kf}`") if kf and kf in names and kf != text_field else F.lit(None).cast("double")).alias("_kf"),
            F.col("_metadata.file_path").alias("file"),
            F.col("_metadata.row_index").alias("row"),
        ]
        uf = config.url_field
        if uf is not None and uf in names and uf != text_field:  # the local reader keeps no text as a field
            sel.append(F.col(f"`{uf}`").alias("_url"))
        ctx.update(files={u: (files[u][0], paths[u]) for u in files})
        sk = frame.select(*sel).mapInArrow(functools.partial(map_rows, ctx=ctx, config=config), sketch_schema())
    if synthetic:
        extra = spark.createDataFrame(
            [(o, leaf, why, 0, None, None, None, None, None, None, None, None) for o, leaf, why in synthetic],
            sketch_schema())
        sk = sk.unionByName(extra)
    locate = {"format": fmt, "frame": frame, "blocks": blocks, "files": files}
    return sk.withColumnRenamed("_key", "ordinal"), total, locate


def kept_frame(spark, locate: dict, kept_ord):
    """The original records whose ordinal is kept: JSONL lines as ``record`` strings, Parquet rows as they are."""
    from pyspark.sql import functions as F

    frame = locate["frame"]
    if frame is None:
        return None
    if locate["format"] == "jsonl":
        lines = frame.mapInArrow(functools.partial(jsonl_lines, ctx={"blocks": locate["blocks"]}),
                                 "ordinal long, record string")
        return lines.join(kept_ord, "ordinal", "left_semi").sortWithinPartitions("ordinal")
    base = spark.createDataFrame([(u, b) for u, (b, _) in locate["files"].items()], "__file string, __base long")
    rows = frame.select("*", F.col("_metadata.file_path").alias("__file"), F.col("_metadata.row_index").alias("__row"))
    rows = rows.join(F.broadcast(base), "__file")
    rows = rows.withColumn("ordinal", F.col("__base") + F.col("__row")).drop("__file", "__base", "__row")
    return rows.join(kept_ord, "ordinal", "left_semi").sortWithinPartitions("ordinal")
