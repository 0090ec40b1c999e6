"""Writing results: the deduplicated corpus (:func:`write_kept`), JSON-lines files (:class:`JsonlWriter`),
and a run's clusters and pairs (:func:`write_clusters`, :func:`write_pairs`: every engine writes through them)."""

from __future__ import annotations

import gzip
import os
from typing import Callable

import numpy as np
import orjson

from ..errors import ConfigError, InputError, require
from .documents import Document
from . import warc
from .readers import (JSONL_BLOCK_BYTES, PARQUET_BATCH_ROWS, BrokenInput, RecordReader, extract_in_parallel,
                      has_line_scanner, input_leaves, jsonl_blocks, jsonl_line_ends, line_or_size, open_parquet,
                      plan_inputs, read_lines)

__all__ = ["JsonlWriter", "write_kept", "RESULT_FORMATS", "write_clusters", "write_pairs"]

_DUMP_OPTIONS = orjson.OPT_APPEND_NEWLINE | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
_FLUSH_BYTES = 64 << 20


def _default(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return bytes(obj).decode("utf-8", "replace")
    if isinstance(obj, (set, frozenset, tuple)):
        return sorted(obj) if isinstance(obj, (set, frozenset)) else list(obj)
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    return str(obj)


class JsonlWriter:
    """Writes one JSON object per line with orjson, through a large buffer.

    ``path`` ending in ``.gz`` or ``.zst`` is compressed. Numpy scalars and arrays, bytes (as UTF-8),
    sets (sorted) and paths are converted; anything else unknown becomes its ``str``.
    Use as a context manager; ``count`` is the number of lines written.

        with JsonlWriter(out / "pairs.jsonl") as w:
            w.write({"a": "x", "b": "y", "jaccard": 0.91, "estimate": 0.9})
    """

    def __init__(self, path, *, append: bool = False, buffer_size: int = 1 << 20):
        self.path = os.fspath(path)
        mode = "ab" if append else "wb"
        if self.path.endswith(".gz"):
            self._fh = gzip.open(self.path, mode, compresslevel=6)
        elif self.path.endswith((".zst", ".zstd")):
            zstd = require("zstandard", "io")
            self._raw = open(self.path, mode)
            self._fh = zstd.ZstdCompressor(level=3).stream_writer(self._raw, closefd=True)
        else:
            self._fh = open(self.path, mode, buffering=buffer_size)
        self._write = self._fh.write
        self.count = 0

    def write(self, obj) -> None:
        self._write(orjson.dumps(obj, default=_default, option=_DUMP_OPTIONS))
        self.count += 1

    def write_many(self, objs) -> None:
        dumps, write = orjson.dumps, self._write
        for obj in objs:
            write(dumps(obj, default=_default, option=_DUMP_OPTIONS))
            self.count += 1

    def write_raw(self, line: bytes) -> None:
        """Write a line that is already JSON (a newline is added if missing)."""
        self._write(line if line[-1:] == b"\n" else line + b"\n")
        self.count += 1

    def write_raw_lines(self, data, lines: int) -> None:
        """Write ``lines`` whole lines that are already JSON, each ending in a newline."""
        self._write(data)
        self.count += lines

    def flush(self) -> None:
        self._fh.flush()

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> "JsonlWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Keep:
    """``keep`` as both a per-ordinal predicate and a slice of a boolean mask."""

    def __init__(self, keep):
        if callable(keep) and not isinstance(keep, np.ndarray):
            self.fn, self.arr = keep, None
        else:
            arr = np.asarray(keep)
            if arr.ndim != 1:
                raise ConfigError(f"The 'keep' parameter must be a callable or a 1-d boolean array. Got shape {arr.shape}.")
            self.arr = arr.astype(bool, copy=False)
            self.fn = self._from_array

    def _too_short(self, ordinal: int):
        return InputError(
            f"the inputs now hold more records than the first pass saw ({len(self.arr)}): record {ordinal} has "
            "no keep decision. Were the input files changed during the run?"
        )

    def _from_array(self, ordinal: int) -> bool:
        if ordinal >= len(self.arr):
            raise self._too_short(ordinal)
        return bool(self.arr[ordinal])

    def mask(self, start: int, count: int) -> np.ndarray:
        if self.arr is not None:
            if start + count > len(self.arr):
                raise self._too_short(len(self.arr))
            return self.arr[start:start + count]
        fn = self.fn
        return np.fromiter((bool(fn(o)) for o in range(start, start + count)), dtype=bool, count=count)


def _parquet_schemas(plan):
    """The Arrow schema shared by every readable Parquet input, or None if they differ."""
    schema = None
    for path, fmt, why in input_leaves(plan):
        if why is not None or fmt != "parquet":
            continue
        pf, _ = open_parquet(path)
        if pf is None:
            continue
        if schema is None:
            schema, first = pf.schema_arrow, pf
        elif not pf.schema_arrow.equals(schema, check_metadata=False):
            return None, None
    return (schema, first) if schema is not None else (None, None)


def _compression(pf) -> str:
    try:
        if pf.metadata.num_row_groups:
            name = pf.metadata.row_group(0).column(0).compression.lower()
            return "none" if name == "uncompressed" else name
    except Exception:  # noqa: BLE001 - unknown codec name: use the default
        pass
    return "snappy"


def write_kept(paths, keep: Callable[[int], bool] | np.ndarray, out_dir: str, *, format: str = "auto",
               **read_options) -> dict:
    """Write the records whose ordinal ``keep`` selects to ``out_dir``, in input order.

    - JSONL input: ``kept.jsonl``, the original lines byte for byte (a newline is added to a last
      line without one).
    - Parquet input (all of it, one schema): ``kept.parquet``, the original rows with the same
      schema and the input's compression. Parquet files of different schemas, or mixed with other
      formats, are written into ``kept.jsonl`` as one JSON object per row.
    - WARC (and ARC) input, all of it: ``kept.warc.gz`` (``kept.arc.gz``), the kept records'
      original bytes (:func:`neardup.io.warc.write_kept_warc`: a ``.warc.gz``'s gzip members
      byte for byte).
    - Text, HTML and WARC mixed with others: ``kept.jsonl`` with ``{"id", "source", "text"}`` per kept
      document. The text is extracted again, so pass the same ``read_options`` (``content``,
      ``html``, ``id_field``, ``text_field``, ``errors``, ``max_bytes``) as to
      :func:`~neardup.io.read_documents`; records not kept are not extracted, and ``jobs``
      extracts in worker processes.

    ``keep`` is a predicate on ordinals or a boolean array indexed by ordinal (as long as the
    input). The file is written under a temporary name and renamed when complete. Returns
    ``{"path", "records", "format", "input_records"}``; raises InputError when the inputs no longer
    have the number of records the array was made for.
    """
    plan = plan_inputs(paths, format)
    read_options.pop("keep_fields", None)
    reader = RecordReader(**read_options)
    keeper = _Keep(keep)
    reader.want = keeper.fn
    os.makedirs(out_dir, exist_ok=True)

    leaf_formats = {fmt for _, fmt, why in input_leaves(plan) if why is None and fmt != "not_html"}
    schema = first = None
    if leaf_formats == {"parquet"}:
        schema, first = _parquet_schemas(plan)
    out_format = "parquet" if schema is not None else "warc" if leaf_formats == {"warc"} else "jsonl"
    if not (leaf_formats & {"html", "warc"} or (reader.content == "html" and "text" in leaf_formats)):
        reader.jobs = 1  # nothing to extract: no worker processes
    if out_format == "warc":  # web archives in, the kept records out, byte for byte
        path = os.path.join(out_dir, warc.kept_name([p for p, f, why in input_leaves(plan) if why is None]))
    else:
        path = os.path.join(out_dir, f"kept.{out_format}")
    tmp = path + ".tmp"
    written = 0
    try:
        if out_format == "parquet":
            n, written = _write_parquet(plan, keeper, tmp, schema, _compression(first))
        elif out_format == "warc":
            n, written = _write_warc(plan, keeper, tmp)
        else:
            n, written = _write_jsonl(plan, keeper, reader, tmp)
        if keeper.arr is not None and n != len(keeper.arr):
            raise InputError(
                f"the inputs now hold {n} records but the keep array has {len(keeper.arr)}. "
                "Were the input files changed during the run?"
            )
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return {"path": path, "records": written, "format": out_format, "input_records": n}


def _write_warc(plan, keeper: _Keep, tmp: str) -> tuple[int, int]:
    n = written = 0
    with open(tmp, "wb") as out:
        for path, fmt, why in input_leaves(plan):
            if why is not None:
                n += 1
            else:
                n, k = warc.write_kept_warc(path, keeper.fn, out, n)
                written += k
    return n, written


def _write_jsonl(plan, keeper: _Keep, reader: RecordReader, tmp: str) -> tuple[int, int]:
    total = [0]

    def records():
        """Kept JSONL lines (bytes), Parquet rows (dicts) and Documents, in input order."""
        n = 0
        for path, fmt, why in input_leaves(plan):
            if why is not None or fmt == "not_html":
                n += 1
            elif fmt == "jsonl":
                # blocks written in place only when no item read before waits for extraction
                n = yield from _kept_lines(path, reader.max_bytes, keeper, n,
                                           out.write_raw_lines if reader.jobs == 1 else None)
            elif fmt == "parquet":
                pf, nrows = open_parquet(path)
                if pf is None:
                    n += 1
                    continue
                row = 0
                try:
                    for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, use_threads=False):
                        mask = keeper.mask(n + row, batch.num_rows)
                        row += batch.num_rows
                        if mask.any():
                            import pyarrow as pa

                            yield from batch.filter(pa.array(mask)).to_pylist()
                except InputError:
                    raise
                except Exception:  # noqa: BLE001 - unreadable rows were skipped in the first pass
                    pass
                n += max(row, nrows)
            else:
                n = yield from reader.read_leaf(path, fmt, n)
        total[0] = n

    with JsonlWriter(tmp) as out:
        for item in extract_in_parallel(reader, records()):
            t = type(item)
            if t is bytes:
                out.write_raw(item)
            elif t is dict:
                out.write(item)
            elif t is Document:
                out.write({"id": item.id, "source": item.source, "text": item.text})
        written = out.count
    return total[0], written


def _kept_lines(path: str, max_bytes: int | None, keeper: _Keep, n: int, write_lines=None):
    """The kept lines of one JSONL file (records n, n+1, ...), as the reader numbered them;
    returns the ordinal after its last record.

    With ``write_lines`` (``JsonlWriter.write_raw_lines``), the file is read in blocks of whole
    lines and each run of consecutive kept lines is written with one call, straight from the
    block: for a caller that has written everything yielded before. Otherwise (and after a
    stream breaks) the kept lines are yielded one by one, as bytes.
    """
    lineno = 0
    if write_lines is not None and has_line_scanner():
        try:
            for item in jsonl_blocks(path, max_bytes, JSONL_BLOCK_BYTES):
                if type(item) is int:  # a line over max_bytes: never kept
                    lineno, n = lineno + 1, n + 1
                    continue
                buf, length = item
                with memoryview(buf) as whole, whole[:length] as block:
                    ends = jsonl_line_ends(block)
                    starts = np.concatenate(([0], ends[:-1]))
                    keep = keeper.mask(n, ends.size).copy()
                    if max_bytes is not None:  # lines over the limit are records never kept
                        for i in np.flatnonzero(keep & (ends - starts > max_bytes)).tolist():
                            keep[i] = type(line_or_size(bytes(block[starts[i] : ends[i]]), max_bytes)) is bytes
                    edges = np.flatnonzero(np.diff(np.concatenate(([0], keep.view(np.int8), [0]))))
                    for a, b in zip(edges[0::2].tolist(), edges[1::2].tolist()):  # kept lines a..b-1
                        with block[int(starts[a]) : int(ends[b - 1])] as run:
                            write_lines(run, b - a)
                    if ends.size and buf[length - 1] != 0x0A and keep[-1]:
                        write_lines(b"\n", 0)  # the file's last line, which has no newline
                lineno, n = lineno + int(ends.size), n + int(ends.size)
            return n
        except BrokenInput:
            pass  # the rest, from the first line not yet given, line by line as the reader did
    fn = keeper.fn
    for k, line in read_lines(path, max_bytes):
        if k > lineno:
            if type(line) is bytes and fn(n):
                yield line
            n += 1
    return n


def _write_parquet(plan, keeper: _Keep, tmp: str, schema, compression: str) -> tuple[int, int]:
    pa = require("pyarrow", "io")
    pq = require("pyarrow.parquet", "io")
    n = written = 0
    pending: list = []
    pending_bytes = 0
    with pq.ParquetWriter(tmp, schema, compression=compression) as writer:

        def flush():
            nonlocal pending, pending_bytes
            if pending:
                writer.write_table(pa.Table.from_batches(pending))
                pending, pending_bytes = [], 0

        for path, fmt, why in input_leaves(plan):
            pf, nrows = (None, None) if why is not None else open_parquet(path)
            if pf is None:
                n += 1
                continue
            row = 0
            try:
                for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, use_threads=False):
                    mask = keeper.mask(n + row, batch.num_rows)
                    row += batch.num_rows
                    if not mask.any():
                        continue
                    kept = batch if mask.all() else batch.filter(pa.array(mask))
                    kept = pa.RecordBatch.from_arrays(kept.columns, schema=schema)
                    pending.append(kept)
                    pending_bytes += kept.nbytes
                    written += kept.num_rows
                    if pending_bytes >= _FLUSH_BYTES:
                        flush()
            except InputError:
                raise
            except Exception:  # noqa: BLE001 - unreadable rows were skipped in the first pass
                pass
            n += max(row, nrows)
        flush()
    return n, written


# --------------------------------------------------------------------------------------------
# The run's results, clusters and pairs, in the same files and bytes for every engine (the local
# engine and Spark call these): JSON lines or Parquet, as ``--output-format`` says.

#: The formats of ``clusters.*`` and ``pairs.*``.
RESULT_FORMATS = ("jsonl", "parquet")
_RESULT_BATCH_ROWS = 4096


def _result_format(format: str) -> str:
    if format not in RESULT_FORMATS:
        raise ConfigError(f"The output format must be one of {', '.join(RESULT_FORMATS)}. Got {format!r} instead.")
    return format


def _cluster_rows(outcome, urls: dict):
    """The rows of ``clusters.*`` as dicts, in input order: with ``source`` and
    ``duplicate_of_source`` when the records carry sources, and ``url`` for web pages."""
    sources = getattr(outcome, "source", None)
    for o, (doc_id, cluster, kept, dup, sim, reason) in enumerate(zip(
            outcome.ids, outcome.cluster, np.asarray(outcome.kept).tolist(), outcome.duplicate_of, outcome.similarity,
            outcome.reason)):
        if sources is None:
            row = {"id": doc_id, "cluster": cluster, "kept": kept, "duplicate_of": dup, "similarity": sim,
                   "reason": reason}
        else:  # records with sources: each line names its own and its survivor's
            row = {"id": doc_id, "source": sources[o], "cluster": cluster, "kept": kept, "duplicate_of": dup,
                   "duplicate_of_source": outcome.duplicate_of_source[o], "similarity": sim, "reason": reason}
        if o in urls:  # web pages: where the page was (WARC-Target-URI, a JSONL "url")
            row["url"] = urls[o]
        yield row


def write_clusters(out_dir: str, outcome, *, format: str = "jsonl", urls: dict | None = None) -> str:
    """Write ``clusters.jsonl`` (or ``clusters.parquet``) into ``out_dir``: one row per input record, in
    input order, ``id, cluster, kept, duplicate_of, similarity, reason`` (with ``source`` and
    ``duplicate_of_source`` when the records carry sources; ``url`` by ordinal from ``urls``).
    ``outcome`` has those as attributes, sequences indexed by ordinal
    (:class:`neardup.stages.survivors.Outcome`). Returns the path."""
    path = os.path.join(out_dir, f"clusters.{_result_format(format)}")
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


def write_pairs(out_dir: str, rows, *, format: str = "jsonl") -> str:
    """Write ``pairs.jsonl`` (or ``pairs.parquet``) into ``out_dir``: the verified pairs ``(a, b, jaccard,
    estimate)`` (ids, and similarities rounded to 6 places) in the order given. Returns the path."""
    path = os.path.join(out_dir, f"pairs.{_result_format(format)}")
    if format == "parquet":
        pa = require("pyarrow", "io")
        pq = require("pyarrow.parquet", "io")
        rows = list(rows)
        a, b, j, e = (list(col) for col in zip(*rows)) if rows else ([], [], [], [])
        pq.write_table(pa.table({"a": pa.array(a, pa.string()), "b": pa.array(b, pa.string()),
                                 "jaccard": pa.array(j, pa.float64()), "estimate": pa.array(e, pa.float64())}), path)
        return path
    dumps = orjson.dumps
    with open(path, "wb") as fh:
        for a, b, j, e in rows:
            fh.write(dumps({"a": a, "b": b, "jaccard": j, "estimate": e}))
            fh.write(b"\n")
    return path
