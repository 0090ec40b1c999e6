"""The run's results, clusters and pairs, in the same files and bytes for every engine (the local
engine, Spark and Ray call these): JSON lines or Parquet, as ``--output-format`` says."""

from __future__ import annotations

import itertools
import os

import numpy as np
import orjson

from ...errors import require
from . import result_lines

__all__ = ["RESULT_FORMATS", "DEFAULT_RESULT_FORMAT", "write_clusters", "write_pairs"]


#: The formats of ``clusters.*`` and ``pairs.*`` (checked by :class:`neardup.config.ResultOptions`,
#: before any work starts).
RESULT_FORMATS = ("jsonl", "parquet")
#: The format of ``clusters.*`` and ``pairs.*`` when none is given: the default of
#: :class:`neardup.config.ResultOptions` and of every engine's ``output_format``.
DEFAULT_RESULT_FORMAT = RESULT_FORMATS[0]
_RESULT_BATCH_ROWS = 4096


def _file_name(kind: str, format: str) -> str:
    if format not in RESULT_FORMATS:  # (the engines refuse it first: a caller's mistake)
        raise ValueError(f"no {kind} file of format {format!r}")
    return f"{kind}.{format}"


def _cluster_rows(outcome, urls: dict):
    """The rows of ``clusters.*`` as dicts, in input order: with ``source`` and
    ``duplicate_of_source`` when the records carry sources, and ``url`` for web pages."""
    sources = getattr(outcome, "source", None)
    # (the source columns iterated beside the others: a column read by ordinal decodes one value a call)
    none = itertools.repeat(None)
    for o, (doc_id, cluster, kept, dup, sim, reason, source, dup_source) in enumerate(zip(
            outcome.ids, outcome.cluster, np.asarray(outcome.kept).tolist(), outcome.duplicate_of, outcome.similarity,
            outcome.reason, none if sources is None else sources,
            none if sources is None else outcome.duplicate_of_source)):
        if sources is None:
            row = {"id": doc_id, "cluster": cluster, "kept": kept, "duplicate_of": dup, "similarity": sim,
                   "reason": reason}
        else:  # records with sources: each line names its own and its survivor's
            row = {"id": doc_id, "source": source, "cluster": cluster, "kept": kept, "duplicate_of": dup,
                   "duplicate_of_source": dup_source, "similarity": sim, "reason": reason}
        if o in urls:  # web pages: where the page was (WARC-Target-URI, a JSONL "url")
            row["url"] = urls[o]
        yield row


def write_clusters(out_dir: str, outcome, *, format: str = DEFAULT_RESULT_FORMAT, urls: dict | None = None) -> str:
    """Write ``clusters.jsonl`` (or ``clusters.parquet``) into ``out_dir``: one row per input record, in
    input order, ``id, cluster, kept, duplicate_of, similarity, reason`` (with ``source`` and
    ``duplicate_of_source`` when the records carry sources; ``url`` by ordinal from ``urls``).
    ``outcome`` has those as attributes, sequences indexed by ordinal
    (:class:`neardup.stages.survivors.Outcome`). Returns the path."""
    path = os.path.join(out_dir, _file_name("clusters", format))
    urls = urls or {}
    if format == "parquet":
        pa = require("pyarrow", "io")
        pq = require("pyarrow.parquet", "io")
        rows = list(_cluster_rows(outcome, urls))
        types = {"kept": pa.bool_(), "similarity": pa.float64()}
        names = list(rows[0]) if rows else ["id", "cluster", "kept", "duplicate_of", "similarity", "reason"]
        names += [k for k in ("url",) if urls and k not in names]
        schema = pa.schema([(k, types.get(k, pa.string())) for k in names])
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
        return path
    if result_lines.available(outcome, urls):  # the local engine's arrays: the same bytes, assembled in C
        with open(path, "wb") as fh:
            for data in result_lines.cluster_chunks(outcome):
                fh.write(data)
        return path
    dumps = orjson.dumps
    with open(path, "wb") as fh:
        buf = []
        for row in _cluster_rows(outcome, urls):
            buf.append(dumps(row))
            if len(buf) >= _RESULT_BATCH_ROWS:
                fh.write(b"\n".join(buf) + b"\n")
                buf = []
        if buf:
            fh.write(b"\n".join(buf) + b"\n")
    return path


def write_pairs(out_dir: str, rows, *, format: str = DEFAULT_RESULT_FORMAT) -> str:
    """Write ``pairs.jsonl`` (or ``pairs.parquet``) into ``out_dir``: the verified pairs ``(a, b, jaccard,
    estimate)`` (ids, and similarities rounded to 6 places) in the order given. ``rows`` may also
    be an object whose iteration gives those tuples and whose ``jsonl_chunks()`` gives the same
    lines as bytes (:meth:`neardup.engines.common.VerifiedPairs.lines`). Returns the path."""
    path = os.path.join(out_dir, _file_name("pairs", format))
    if format == "parquet":
        pa = require("pyarrow", "io")
        pq = require("pyarrow.parquet", "io")
        rows = list(rows)
        a, b, j, e = (list(col) for col in zip(*rows)) if rows else ([], [], [], [])
        pq.write_table(pa.table({"a": pa.array(a, pa.string()), "b": pa.array(b, pa.string()),
                                 "jaccard": pa.array(j, pa.float64()), "estimate": pa.array(e, pa.float64())}), path)
        return path
    chunks = getattr(rows, "jsonl_chunks", None)
    if chunks is not None:  # pairs given as arrays (VerifiedPairs.lines): the same bytes, assembled in C
        with open(path, "wb") as fh:
            for data in chunks():
                fh.write(data)
        return path
    dumps = orjson.dumps
    with open(path, "wb") as fh:
        for a, b, j, e in rows:
            fh.write(dumps({"a": a, "b": b, "jaccard": j, "estimate": e}))
            fh.write(b"\n")
    return path
