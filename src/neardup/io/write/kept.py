"""The deduplicated corpus (:func:`write_kept`): the kept records in their input format, and JSON-lines
files of records (:class:`JsonlWriter`)."""

from __future__ import annotations

import gzip
import os
from typing import Callable

import numpy as np
import orjson

from ...errors import ConfigError, InputError, require
from ..documents import Document
from ..read import PARQUET_BATCH_ROWS, RecordReader, input_leaves, line_or_size, open_parquet, plan_inputs
from ..read.extract import extract_in_parallel
from ..read.jsonl import JSONL_BLOCK_BYTES, BrokenInput, has_line_scanner, jsonl_blocks, jsonl_line_ends, read_lines
from ..texts import SpilledTexts, document_line, extracts
from . import warc
from .shards import (JsonlShards, KeptLayout, ParquetShards, Places, ShardNames, extension_of, sniff_compression,
                     zstd_stream_writer)

__all__ = ["JsonlWriter", "write_kept", "KeptLayout"]

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
            self._raw = open(self.path, mode)
            self._fh = zstd_stream_writer(self._raw, closefd=True)
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
               layout: KeptLayout | None = None, run=None, **read_options) -> dict:
    """Write the records whose ordinal ``keep`` selects to ``out_dir``, in input order.

    - JSONL input: ``kept.jsonl``, the original lines byte for byte (a newline is added to a last
      line without one).
    - Parquet input (all of it, one schema): ``kept.parquet``, the original rows with the same
      schema and the input's compression. Parquet files of different schemas, or mixed with other
      formats, are written into ``kept.jsonl`` as one JSON object per row.
    - WARC (and ARC) input, all of it: ``kept.warc.gz`` (``kept.arc.gz``), the kept records'
      original bytes (:func:`neardup.io.write.warc.write_kept_warc`: a ``.warc.gz``'s gzip members
      byte for byte).
    - Text, HTML and WARC mixed with others: ``kept.jsonl`` with ``{"id", "source", "text"}`` per kept
      document. The text is copied from the texts the read pass kept in ``run``'s work folder
      (``read_documents(..., text_spill=run.path)``, :mod:`neardup.io.texts`) when it read
      these inputs to their end; else it is extracted again, so pass the same ``read_options``
      (``content``, ``html``, ``id_field``, ``text_field``, ``errors``, ``max_bytes``) as to
      :func:`~neardup.io.read_documents`; records not kept are not extracted, and ``jobs``
      extracts in worker processes.

    ``layout`` (:class:`~neardup.io.write.shards.KeptLayout`) shards and compresses the corpus (names in
    :mod:`neardup.io.write.shards`); by default one file, compressed as the inputs all are (``.gz``,
    ``.zst``) or not. ``run`` (a :class:`~neardup.io.write.runfolder.RunFolder`): shards are staged in
    the work folder, and a resumed run continues after the last completed JSONL shard
    (Parquet shards are written again from the first: their row groups follow Arrow's batches).

    ``keep`` is a predicate on ordinals or a boolean array indexed by ordinal (as long as the
    input). Each file is written under a temporary name and renamed when complete. Returns
    ``{"path", "files", "records", "format", "compression", "input_records"}``; raises InputError
    when the inputs no longer have the number of records the array was made for.
    """
    layout = layout or KeptLayout()
    plan = plan_inputs(paths, format)
    read_options.pop("keep_fields", None)
    reader = RecordReader(**read_options)
    keeper = _Keep(keep)
    os.makedirs(out_dir, exist_ok=True)
    places = Places(out_dir, run)
    manifest = places.manifest()
    if manifest.get("info"):
        return manifest["info"]  # written completely before the run was interrupted

    leaves = [(path, fmt) for path, fmt, why in input_leaves(plan) if why is None and fmt != "not_html"]
    leaf_formats = {fmt for _, fmt in leaves}
    schema = first = None
    if leaf_formats == {"parquet"}:
        schema, first = _parquet_schemas(plan)
    out_format = "parquet" if schema is not None else "warc" if leaf_formats == {"warc"} else "jsonl"
    if out_format == "warc":  # web archives in, the kept records out, byte for byte (one file, not sharded)
        return _write_warc_file(plan, keeper, places, manifest)
    if out_format == "parquet":
        compression = _compression(first) if layout.compression == "auto" else layout.compression
        if manifest["done"]:
            manifest = {"done": [], "kept_index": 0}  # Parquet shards: written again from the first
            places.record(manifest)
    else:
        compression = sniff_compression([p for p, _ in leaves]) if layout.compression == "auto" else layout.compression
    texts = SpilledTexts.open(run.path if run is not None else None, plan, reader.content) if out_format == "jsonl" else None
    if not (leaf_formats & {"html", "warc"} or (reader.content == "html" and "text" in leaf_formats)):
        reader.jobs = 1  # nothing to extract: no worker processes
    elif texts is not None and all(texts.covers(k) for k, (_p, fmt, why) in enumerate(input_leaves(plan))
                                   if why is None and extracts(fmt, reader.content)):
        reader.jobs = 1  # every text to extract was kept by the read pass
    total = int(keeper.arr.sum()) if keeper.arr is not None else None
    done = manifest["kept_index"]
    if done and keeper.arr is not None:  # the kept records of the completed shards are not read again
        cut = int(np.flatnonzero(keeper.arr)[done - 1]) + 1
        keeper = _Keep(np.concatenate((np.zeros(cut, dtype=bool), keeper.arr[cut:])))
    reader.want = keeper.fn
    names = ShardNames(layout, extension_of(out_format, compression))
    if out_format == "parquet":
        sink = ParquetShards(layout, names, places, total, schema, compression, _FLUSH_BYTES)
    else:
        sink = JsonlShards(layout, names, places, total, compression)
    sink.manifest = manifest
    try:
        if out_format == "parquet":
            n = _write_parquet(plan, keeper, sink)
        else:
            n = _write_jsonl(plan, keeper, reader, sink, texts)
        if keeper.arr is not None and n != len(keeper.arr):
            raise InputError(
                f"the inputs now hold {n} records but the keep array has {len(keeper.arr)}. "
                "Were the input files changed during the run?"
            )
        files = sink.finish()
    except OSError as exc:
        if exc.filename is None:  # a write to the open shard: name it
            exc.filename = sink.current_path
        sink.abort()
        raise
    except BaseException:
        sink.abort()
        raise
    finally:
        if texts is not None:
            texts.close()
    written = sum(entry["records"] for entry in sink.manifest["done"])
    info = {"path": os.path.join(out_dir, files[0]), "files": files, "records": written, "format": out_format,
            "compression": compression, "input_records": n}
    sink.manifest["info"] = info
    places.record(sink.manifest)
    return info


def _write_warc_file(plan, keeper: _Keep, places: Places, manifest: dict) -> dict:
    """The kept records of web archives, copied byte for byte into one ``kept.warc.gz`` (or
    ``kept.arc.gz``), written under its temporary name and committed like a shard."""
    name = warc.kept_name([p for p, f, why in input_leaves(plan) if why is None])
    partial = places.partial(name)
    n = written = 0
    try:
        with open(partial, "wb") as out:
            for path, fmt, why in input_leaves(plan):
                if why is not None:
                    n += 1
                else:
                    n, k = warc.write_kept_warc(path, keeper.fn, out, n)
                    written += k
        if keeper.arr is not None and n != len(keeper.arr):
            raise InputError(
                f"the inputs now hold {n} records but the keep array has {len(keeper.arr)}. "
                "Were the input files changed during the run?"
            )
        places.commit(name)
    except OSError as exc:
        if exc.filename is None:
            exc.filename = partial
        places.discard(name)
        raise
    except BaseException:
        places.discard(name)
        raise
    info = {"path": places.committed(name), "files": [name], "records": written, "format": "warc",
            "compression": "gzip", "input_records": n}
    manifest = dict(manifest, done=[{"name": name, "records": written}], info=info)
    places.record(manifest)
    return info


def _write_jsonl(plan, keeper: _Keep, reader: RecordReader, out: JsonlShards, texts: SpilledTexts | None) -> int:
    total = [0]

    def records():
        """Kept JSONL lines (bytes), Parquet rows (dicts) and Documents, in input order."""
        n = 0
        for k, (path, fmt, why) in enumerate(input_leaves(plan)):
            if why is not None or fmt == "not_html":
                n += 1
            elif texts is not None and texts.covers(k):  # the read pass's texts: not extracted again
                n = yield from texts.kept_lines(k, n, keeper.fn)
            elif fmt == "jsonl":
                # blocks written in place only when no item read before waits for extraction
                n = yield from _kept_lines(path, reader.max_bytes, keeper, n,
                                           out if reader.jobs == 1 else None)
            elif fmt == "parquet":
                n = yield from _kept_parquet_batches(path, keeper, n, rows=True)
            else:
                n = yield from reader.read_leaf(path, fmt, n)
        total[0] = n

    dumps = orjson.dumps
    for item in extract_in_parallel(reader, records()):
        t = type(item)
        if t is bytes:
            out.write_raw(item)
        elif t is dict:
            out.write_raw(dumps(item, default=_default, option=_DUMP_OPTIONS))
        elif t is Document:
            out.write_raw(document_line(item))
    return total[0]


def _kept_lines(path: str, max_bytes: int | None, keeper: _Keep, n: int, out=None):
    """The kept lines of one JSONL file (records n, n+1, ...), as the reader numbered them;
    returns the ordinal after its last record.

    With ``out`` (a :class:`~neardup.io.write.shards.JsonlShards`), the file is read in blocks of whole
    lines and each run of consecutive kept lines is written with one call, straight from the
    block: for a caller that has written everything yielded before. Otherwise (and after a
    stream breaks) the kept lines are yielded one by one, as bytes.
    """
    lineno = 0
    if out is not None and has_line_scanner():
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
                    unended = bool(ends.size) and buf[length - 1] != 0x0A  # the file's last line
                    for a, b in zip(edges[0::2].tolist(), edges[1::2].tolist()):  # kept lines a..b-1
                        if unended and b == ends.size:  # written with the newline it lacks
                            if b - 1 > a:
                                with block[int(starts[a]) : int(ends[b - 2])] as run:
                                    out.write_raw_lines(run, b - 1 - a)
                            out.write_raw(bytes(block[int(starts[b - 1]) : int(ends[b - 1])]))
                            continue
                        with block[int(starts[a]) : int(ends[b - 1])] as run:
                            out.write_raw_lines(run, b - a)
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


def _kept_parquet_batches(path, keeper: _Keep, n: int, *, rows: bool = False):
    """The kept rows of one Parquet file, as record batches (as dicts, one by one, with ``rows``),
    its first row being ordinal ``n``; returns (as the generator's value) the ordinal after the file. Rows the first pass could not
    read were skipped there, so a reading error here ends the file quietly; an error of whoever
    consumes the batches (the output) is raised there, never caught here."""
    pf, nrows = open_parquet(path)
    if pf is None:
        return n + 1
    pa = require("pyarrow", "io")
    row = 0
    try:
        for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, use_threads=False):
            mask = keeper.mask(n + row, batch.num_rows)
            row += batch.num_rows
            if mask.any():
                kept = batch if mask.all() else batch.filter(pa.array(mask))
                if rows:
                    yield from kept.to_pylist()
                else:
                    yield kept
    except InputError:
        raise
    except Exception:  # noqa: BLE001 - unreadable rows were skipped in the first pass
        pass
    return n + max(row, nrows)


def _write_parquet(plan, keeper: _Keep, out: ParquetShards) -> int:
    pa = require("pyarrow", "io")
    n = 0

    def kept_batches():
        nonlocal n
        for path, fmt, why in input_leaves(plan):
            if why is not None:
                n += 1
                continue
            n = yield from _kept_parquet_batches(path, keeper, n)

    for kept in kept_batches():  # written here, outside the reading generator (its errors are the output's)
        out.write_batch(pa.RecordBatch.from_arrays(kept.columns, schema=out.schema))
    return n


# --------------------------------------------------------------------------------------------
