"""The ``neardup dedup`` pipeline on Apache Spark: same input semantics, same stages, same result.

    read ──> parse + exact fingerprints + signatures + shingle ids + band keys
             (one mapInArrow pass: the local reader's JSONL block scanner, the compiled kernel)
         ──> exact pass (lowest ordinal per fingerprint)
         ──> candidate pairs: (band, key, ordinal) triples packed per partition, one shuffle;
             per bucket, each member with the next 63 in ordinal order (numpy, per partition)
         ──> estimate filter + exact verification (each group of pairs meets its documents'
             signatures and shingle ids in one task)
         ──> connected components ──> survivors by the keep policy ──> similarity to survivor

Every pass over the documents is a ``mapInArrow`` over Arrow batches: signatures, shingle ids
and band keys are binary columns read in place as numpy arrays; no stage makes a Python object
per document, band key or pair (ids and reasons aside, which the outputs hold).

With a local output (:func:`dedup_paths`, ``neardup dedup --engine spark``) the driver writes
the local engine's files with its writers, one line per record, so it holds a few values per
record anyway (:func:`_dedup_on_driver`): it collects the small columns once and runs the exact
pass, connected components (union-find over arrays), survivors and outcomes with the local
stages, while signatures and shingle ids stay on the executors; the candidate pairs and the
verified edges come back packed. With the DataFrame API (:func:`dedup`) and outputs on a Hadoop
file system, every stage is a DataFrame operation (:func:`_verified_edges`,
:func:`_cluster_frames`); nothing about the corpus, its signatures or its edges is collected to
the driver (only counts, the per-file/per-split line counts that give ordinals, and the
summary's small aggregates). The Python code that runs on executors is the local engine's
own stages (:mod:`neardup.stages`): :func:`~neardup.stages.sketch.sketch_texts` and the encoded
batches of :mod:`neardup.stages.encode` (the compiled kernel + content fingerprints),
:func:`~neardup.stages.candidates.band_keys`, :func:`~neardup.stages.candidates.estimate_filter`,
:func:`~neardup.stages.verify.pair_similarities` and :func:`~neardup.stages.verify.score_of`, so
the shingles, hashes, signatures, estimates and exact similarities are bit-for-bit the local
ones, and so are the clusters, survivors, reasons and pairs (see ``tests/spark/test_engine.py``).

**Ordinals.** The local engine orders records by their position in the input (``ordinal``): the
window of 64 in a bucket, the record an exact duplicate points to, and the survivor's tie-break
all use it. :func:`dedup_paths` gives every record exactly the local ordinal: files in the local
reader's order (folders walked sorted), and for JSONL, lines counted per file split
(``_metadata.file_block_start``) in a first JVM-only pass, so a line's ordinal is the number of
lines in earlier files and earlier splits plus its index in its split; Parquet rows use
``_metadata.row_index`` (Spark >= 3.5). :func:`dedup` on a DataFrame orders by ``order_col``
(unique; e.g. a line number) or, without it, by (id, hash of the text), which does not depend on
how the DataFrame is partitioned.

**JSONL lines** are read with the DataFrame text source, ``lineSep="\\n"``, as raw bytes (the value
cast to binary): ``SparkContext.textFile`` would also split at a lone ``\\r`` and replace invalid
UTF-8 with U+FFFD, both unlike the local reader. The lines of each file split in a batch are
joined back into a block of whole lines and read by the local reader's block reader
(:meth:`~neardup.io.read.RecordReader.jsonl_block_records`, see :func:`_sketch_jsonl_encoded`);
when that fast path does not apply (HTML content, a keep field, no compiled scanner) each line is
parsed with the local reader's own rules and helpers (see :func:`_jsonl_record`). Compression comes from the Hadoop codecs, by
file name (``.gz``; ``.bz2`` would work but the local reader does not read it); ``.zst`` needs
Hadoop's native zstd and is refused up front.
"""

from __future__ import annotations

import functools
import json
import math
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator

import numpy as np

from ..config import DedupConfig
from ..errors import ConfigError, InputError, require
from ..params import MinHashParams
from ..engines.common import peak_memory_mb, run_summary, stage_table
from ..stages.candidates import estimate_floor
from ..stages.survivors import keep_value, kinds_table
from ..stages.verify import score_of

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["SparkDedupResult", "dedup", "dedup_paths"]

#: Text handed to the kernel per call inside a task (the local engine's batch size).
_SKETCH_BATCH_CHARS = 16 << 20
_MISSING = object()


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
        _release(self._held)
        self._held = []


# =============================================================================================
# Executor-side functions (module level, so that they pickle by reference: neardup must be
# importable on the executors, as the compiled kernel must).
# =============================================================================================


class _Recs:
    """Parsed records of one batch: what the local reader yields, column-wise."""

    __slots__ = ("keys", "ids", "texts", "skips", "keyvals", "extras")

    def __init__(self):
        self.keys: list[int] = []
        self.ids: list[str | None] = []
        self.texts: list[str | None] = []
        self.skips: list[str | None] = []
        self.keyvals: list[float] = []
        self.extras: dict = {}

    def add(self, key: int, rec, keep_field: str | None) -> None:
        from ..io.documents import Skipped

        self.keys.append(key)
        self.ids.append(rec.id)
        if isinstance(rec, Skipped):
            self.texts.append(None)
            self.skips.append(rec.reason)
            self.keyvals.append(math.nan)
        else:
            self.texts.append(rec.text)
            self.skips.append(None)
            self.keyvals.append(keep_value(rec.meta.get(keep_field)) if keep_field else math.nan)

    def __len__(self) -> int:
        return len(self.keys)


def _local_reader(ctx: dict):
    from ..io.read import RecordReader

    keep = (ctx["keep_field"],) if ctx.get("keep_field") else ()
    # content="html": the executors extract the text with the local reader's extraction
    # (neardup.text.html), so both engines see the same text of a page.
    return RecordReader(id_field=ctx.get("id_field") or "id", text_field=ctx["text_field"], keep_fields=keep,
                   max_bytes=ctx["max_bytes"], content=ctx.get("content", "text"), html=ctx.get("html", "main"))


def _jsonl_record(reader, line: bytes, n: int, src: str):
    """One JSONL line (without its ``\\n``, as Spark splits them) as the local reader makes it:
    ``RecordReader.jsonl_record``, with the size of a line over ``max_bytes`` counted as the local
    reader counts it (HTML extracted when the reader's ``content`` is ``html``)."""
    from ..io.read import line_or_size

    if reader.max_bytes is not None and len(line) > reader.max_bytes:
        line = line_or_size(line + b"\n", reader.max_bytes)
    return reader.jsonl_record(line, n, src)


def _row_record(reader, ident, text, keyval, n: int, src: str | None):
    """One Parquet row (or DataFrame row) as the local Parquet reader makes it.

    Mirrors ``RecordReader._parquet_batch`` value by value: id (``id_string`` with ``<file>:<row>`` as
    the fallback; None here for a DataFrame, filled in later), ``too_large`` on the raw size,
    null text, binary decoded as UTF-8 (``errors``), other types ``not_a_string``, blank text
    ``empty``. (A ``RecordReader._parquet_value(ident, text, n, src, meta)`` method would let both share it.)
    """
    from ..io.documents import Skipped
    from ..io.read import describe_value, id_string, utf8_length

    if type(ident) is not str or not ident:
        ident = id_string(ident, src)
    tf, max_bytes = reader.text_field, reader.max_bytes
    if max_bytes is not None:
        t = type(text)
        size = utf8_length(text) if t is str else len(text) if t is bytes else 0
        if size > max_bytes:
            return Skipped(ident, n, src, "too_large", f"'{tf}' of {size} bytes is over the {max_bytes} byte limit")
    if type(text) is not str:
        if text is None:
            return Skipped(ident, n, src, "missing_text", f"'{tf}' is null")
        if type(text) is bytes:
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError as exc:
                if reader.errors == "strict":
                    return Skipped(ident, n, src, "undecodable", f"'{tf}' is not UTF-8 (byte {exc.start})")
                text = text.decode("utf-8", "replace")
        else:
            return Skipped(ident, n, src, "not_a_string", f"'{tf}' is {describe_value(text)}, not a string")
    meta = {}
    if keyval is not None and reader.keep_fields:
        meta[reader.keep_fields[0]] = keyval
    return reader.finish_record(ident, text, n, src, meta, is_html=reader.content == "html")


def _parse_jsonl(batches, ctx: dict) -> Iterator[_Recs]:
    """(line binary, file, block) rows, in file order within each split -> parsed records."""
    reader = _local_reader(ctx)
    bases = ctx["blocks"]          # (spark file uri, block start) -> (first ordinal, first line - 1)
    paths = ctx["paths"]           # spark file uri -> the path the local reader names
    kf = ctx.get("keep_field")
    seen: dict = {}
    for rb in batches:
        lines = rb.column(0).to_pylist()
        files = rb.column(1).to_pylist()
        blocks = rb.column(2).to_pylist()
        out = _Recs()
        for line, f, blk in zip(lines, files, blocks):
            key = (f, blk)
            k = seen.get(key, 0)
            seen[key] = k + 1
            base_ord, base_line = bases[key]
            n = base_ord + k
            out.add(n, _jsonl_record(reader, line, n, f"{paths[f]}:{base_line + k + 1}"), kf)
        yield out


def _parse_rows(batches, ctx: dict) -> Iterator[_Recs]:
    """Parquet rows ``(_id, _text, _kf, file, row)`` or DataFrame rows ``(_id, _text, _kf, _key, extras...)``."""
    import pyarrow as pa

    reader = _local_reader(ctx)
    kf = ctx.get("keep_field")
    files = ctx.get("files")  # parquet: spark uri -> (first ordinal, local path)
    extra_names = ctx.get("extras", ())
    for rb in batches:
        ids = rb.column(0).to_pylist()
        texts = rb.column(1).to_pylist()
        kvs = rb.column(2).to_pylist()
        out = _Recs()
        if files is not None:
            fcol = rb.column(3).to_pylist()
            rows = rb.column(4).to_pylist()
            for ident, text, kv, f, row in zip(ids, texts, kvs, fcol, rows):
                base, path = files[f]
                n = base + row
                out.add(n, _row_record(reader, ident, text, kv, n, f"{path}:{row}"), kf)
        else:
            keys = rb.column(3).to_pylist()
            for ident, text, kv, key in zip(ids, texts, kvs, keys):
                out.add(key, _row_record(reader, ident, text, kv, key, None), kf)
            for name in extra_names:
                out.extras[name] = rb.column(name)
            if ctx.get("text_hash"):
                import xxhash

                h = [None if t is None else xxhash.xxh3_128_digest(t if type(t) is bytes else str(t).encode("utf-8", "surrogatepass"))
                     for t in texts]
                out.extras["_h"] = pa.array(h, type=pa.binary())
        yield out


def _sketch_schema(extra_fields=()):
    from pyspark.sql import types as T

    fields = [
        T.StructField("_key", T.LongType()),
        T.StructField("id", T.StringType()),
        T.StructField("reason", T.StringType()),
        T.StructField("length", T.LongType()),
        T.StructField("keyval", T.DoubleType()),
        T.StructField("fp", T.LongType()),
        T.StructField("n", T.LongType()),
        # the sorted distinct shingle ids (uint64 each): verification reads them, and the
        # signatures of the candidate pairs' documents are computed again from them
        # (:func:`neardup.stages.sketch.signatures_of_ids`) rather than stored for every
        # document: the table is the largest thing a run materializes, and a signature
        # (8 bytes a permutation) was almost half of it
        T.StructField("ids", T.BinaryType()),
        # the band keys (uint64 each, minhash), computed with the signatures: the candidate
        # stage reads them, 8 bytes a band
        T.StructField("bands", T.BinaryType()),
    ]
    return T.StructType(fields + list(extra_fields))


def _band_keys_of(values: np.ndarray, band) -> np.ndarray:
    """The local engine's band keys (:func:`neardup.stages.candidates.band_keys`) of a signature matrix."""
    from ..stages.candidates import band_keys

    return band_keys(values, band.bands, band.rows)


def _require_kernel(config: DedupConfig) -> None:
    """On an executor: the compiled kernel must run there when it runs on the driver."""
    from ..stages.sketch import kernel_handles

    if not kernel_handles(config.shingle):
        raise RuntimeError(
            "neardup's compiled kernel (neardup._kernel) does not import on this Spark executor, while the "
            "driver has it: install neardup[spark] on the executors or ship a virtualenv archive "
            "(spark.archives); a wheel in --py-files cannot carry a compiled extension (see docs/spark.md)")


def _sketch_recs(recs: Iterator[_Recs], config: DedupConfig, need_kernel: bool = False):
    """Parsed records -> one Arrow batch of sketch rows per input batch.

    Documents go through the sketch stage, as in the local engine (kernel signatures with
    shingle ids, and content fingerprints), in chunks of about 16 M characters, one thread (a
    Spark task is one core). Reasons as the local engine gives them: ``skipped:<why>`` from the
    reader, ``skipped:empty`` for a document without shingles, ``""`` for the others (the exact
    pass comes later).
    """
    import pyarrow as pa

    from ..stages.sketch import sketch_texts

    if need_kernel:
        _require_kernel(config)
    want_sig = config.method == "minhash"
    want_ids = config.method != "exact"
    band = config.banding() if want_sig else None
    for rb in recs:
        n_rows = len(rb)
        reason: list = [None] * n_rows
        length = [0] * n_rows
        fp: list = [None] * n_rows
        ns: list = [None] * n_rows
        ids: list = [None] * n_rows
        bands: list = [None] * n_rows
        docs = []
        for i, (text, skip) in enumerate(zip(rb.texts, rb.skips)):
            if skip is not None:
                reason[i] = f"skipped:{skip}"
            else:
                docs.append(i)
                length[i] = len(text)
        start = 0
        while start < len(docs):
            stop, size = start, 0
            while stop < len(docs) and (stop == start or size < _SKETCH_BATCH_CHARS):
                size += length[docs[stop]]
                stop += 1
            chunk = docs[start:stop]
            start = stop
            s = sketch_texts([rb.texts[i] for i in chunk], config.shingle, config.minhash, jobs=1)
            fps = s.fingerprints
            counts = s.n_shingles.tolist()
            fps_i = fps.astype(np.uint64).view(np.int64).tolist()
            offs = s.offsets.tolist()
            keys = _band_keys_of(s.values, band) if want_sig else None
            for k, i in enumerate(chunk):
                c = counts[k]
                ns[i] = c
                if c == 0:
                    reason[i] = "skipped:empty"
                    continue
                reason[i] = ""
                fp[i] = fps_i[k]
                if want_sig:
                    bands[i] = keys[k].tobytes()
                if want_ids:
                    ids[i] = s.ids[offs[k]:offs[k + 1]].tobytes()
        arrays = [
            pa.array(rb.keys, type=pa.int64()),
            pa.array(rb.ids, type=pa.string()),
            pa.array(reason, type=pa.string()),
            pa.array(length, type=pa.int64()),
            pa.array(rb.keyvals, type=pa.float64()),
            pa.array(fp, type=pa.int64()),
            pa.array(ns, type=pa.int64()),
            pa.array(ids, type=pa.binary()),
            pa.array(bands, type=pa.binary()),
        ]
        names = ["_key", "id", "reason", "length", "keyval", "fp", "n", "ids", "bands"]
        for name, arr in rb.extras.items():
            arrays.append(arr)
            names.append(name)
        yield pa.RecordBatch.from_arrays(arrays, names=names)


def _joined_lines(lines, a: int, b: int) -> bytes:
    """Rows ``a:b`` of a binary Arrow column of lines (without their ``\\n``, as Spark splits them)
    as one block of whole lines, each ended by ``\\n``: the bytes of the file the local reader scans."""
    sub = lines.slice(a, b - a)
    offs = _binary_offsets(sub)
    data = np.frombuffer(_binary_values(sub), dtype=np.uint8)
    return np.insert(data, offs[1:] - offs[0], np.uint8(10)).tobytes()


def _large_types():
    import pyarrow as pa

    return (pa.large_binary(), pa.large_string())


def _binary_column(valid: np.ndarray, nbytes: np.ndarray, data: bytes):
    """A binary Arrow column of ``valid.size`` rows: row r (when ``valid[r]``) holds the next
    ``nbytes[r]`` bytes of ``data`` (the runs of the valid rows, in row order); the others are null."""
    import pyarrow as pa

    n = valid.size
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.where(valid, nbytes, 0), out=offsets[1:])
    if offsets[-1] != len(data):
        raise RuntimeError("internal error: binary column runs do not add up")
    if offsets[-1] >= 2**31:
        raise RuntimeError("a batch of sketches is over 2 GiB: lower spark.sql.execution.arrow.maxRecordsPerBatch")
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little").tobytes())
    return pa.Array.from_buffers(pa.binary(), n, [bitmap, pa.py_buffer(offsets.astype(np.int32).tobytes()),
                                                 pa.py_buffer(data)], null_count=int(n - valid.sum()))


def _sketch_jsonl_encoded(batches, ctx: dict, config: DedupConfig):
    """(line binary, file, block) -> sketch rows, the local engine's JSONL fast path on executors.

    Each run of lines of one file split is joined into a block of whole lines and read by the
    local reader's block reader (:meth:`~neardup.io.read.RecordReader.jsonl_block_records`:
    ``neardup._jsonl`` scans it; unusual lines go through the line-by-line reader), and the
    batch's texts go to the kernel as UTF-8, never as Python strings
    (:func:`~neardup.stages.sketch.sketch_parts`),
    as :meth:`neardup.pipeline.Deduplicator._read_and_sketch` does: so the records, reasons,
    signatures, shingle ids and fingerprints are the local engine's. Rows as :func:`_sketch_recs`.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..io.documents import EncodedDocuments, Skipped
    from ..stages.sketch import flag_table, sketch_parts

    reader = _local_reader(ctx)
    _require_kernel(config)
    if not reader.scans_jsonl_blocks():
        raise RuntimeError("neardup's compiled JSONL scanner (neardup._jsonl) does not import on this Spark executor, "
                           "while the driver has it: install neardup[spark] on the executors (see docs/spark.md)")
    norm = config.shingle.normalize
    table = flag_table(norm)
    bases, paths = ctx["blocks"], ctx["paths"]
    want_sig = config.method == "minhash"
    want_ids = config.method != "exact"
    band = config.banding() if want_sig else None
    m = config.minhash.num_perm
    seen: dict = {}
    for rb in batches:
        if rb.num_rows == 0:
            continue
        lines = rb.column(0)
        fdict = pc.dictionary_encode(rb.column(1))
        fcodes = fdict.indices.to_numpy(zero_copy_only=False)
        fnames = fdict.dictionary.to_pylist()
        blocks = rb.column(2).to_numpy(zero_copy_only=False)
        cuts = np.flatnonzero((fcodes[1:] != fcodes[:-1]) | (blocks[1:] != blocks[:-1])) + 1
        ords: list = []
        ids: list = []
        reason: list = []
        length: list = []
        parts: list = []
        sk_rows: list = []  # the rows whose texts go to the kernel, in the parts' order
        for a, b in zip([0, *cuts.tolist()], [*cuts.tolist(), rb.num_rows]):
            f, blk = fnames[int(fcodes[a])], int(blocks[a])
            key = (f, blk)
            k0 = seen.get(key, 0)
            seen[key] = k0 + (b - a)
            base_ord, base_line = bases[key]
            for rec in reader.jsonl_block_records(_joined_lines(lines, a, b), base_ord + k0, paths[f],
                                                  base_line + k0, table):
                if type(rec) is EncodedDocuments:
                    k = len(rec)
                    sk_rows.extend(range(len(ords), len(ords) + k))
                    ords.extend(range(rec.start, rec.start + k))
                    ids.extend(rec.ids)
                    reason.extend([""] * k)
                    length.extend(rec.lengths.tolist())
                    parts.append(rec)
                elif isinstance(rec, Skipped):
                    ords.append(rec.ordinal)
                    ids.append(rec.id)
                    reason.append(f"skipped:{rec.reason}")
                    length.append(0)
                else:
                    sk_rows.append(len(ords))
                    ords.append(rec.ordinal)
                    ids.append(rec.id)
                    reason.append("")
                    length.append(len(rec.text))
                    if parts and type(parts[-1]) is list:
                        parts[-1].append(rec.text)
                    else:
                        parts.append([rec.text])
        n_rows = len(ords)
        valid = np.zeros(n_rows, dtype=bool)
        fp = np.zeros(n_rows, dtype=np.int64)
        ns = np.zeros(n_rows, dtype=np.int64)
        has_n = np.zeros(n_rows, dtype=bool)
        ids_data, band_data, id_bytes = b"", b"", np.zeros(n_rows, dtype=np.int64)
        if sk_rows:
            rows = np.array(sk_rows, dtype=np.int64)
            s, too_large = sketch_parts(parts, config.shingle, config.minhash, with_ids=want_ids)
            counts = np.asarray(s.n_shingles, dtype=np.int64)
            has_n[rows] = True
            ns[rows] = counts
            ok = counts > 0
            valid[rows[ok]] = True
            fp[rows] = s.fingerprints.astype(np.uint64).view(np.int64)
            for k in np.flatnonzero(~ok).tolist():
                reason[int(rows[k])] = "skipped:too_large_nfkc" if k in too_large else "skipped:empty"
            if want_sig:
                band_data = _band_keys_of(np.ascontiguousarray(s.values[ok]), band).tobytes()
            if want_ids:
                ids_data = np.asarray(s.ids, dtype=np.uint64).tobytes()
                id_bytes[rows] = counts * 8
        yield pa.RecordBatch.from_arrays([
            pa.array(ords, type=pa.int64()),
            pa.array(ids, type=pa.string()),
            pa.array(reason, type=pa.string()),
            pa.array(length, type=pa.int64()),
            pa.array(np.full(n_rows, np.nan)),
            pa.array(fp, mask=~valid),
            pa.array(ns, mask=~has_n),
            _binary_column(valid & want_ids, id_bytes, ids_data),
            _binary_column(valid & want_sig, np.full(n_rows, 8 * (band.bands if band else 0)), band_data),
        ], names=["_key", "id", "reason", "length", "keyval", "fp", "n", "ids", "bands"])


def _map_jsonl(batches, ctx, config):
    if ctx.get("encoded"):
        return _sketch_jsonl_encoded(batches, ctx, config)
    return _sketch_recs(_parse_jsonl(batches, ctx), config, ctx.get("need_kernel", False))


def _map_rows(batches, ctx, config):
    return _sketch_recs(_parse_rows(batches, ctx), config, ctx.get("need_kernel", False))


def _need_kernel(config: DedupConfig) -> bool:
    """True when the driver sketches these parameters with the compiled kernel: the executors must too."""
    from ..stages.sketch import kernel_handles

    return kernel_handles(config.shingle)


def _binary_offsets(col) -> np.ndarray:
    """The ``len(col) + 1`` value offsets of a binary Arrow column (int64)."""
    offs_buf = col.buffers()[1]
    width = np.int64 if col.type in _large_types() else np.int32
    return np.frombuffer(offs_buf, dtype=width)[col.offset : col.offset + len(col) + 1].astype(np.int64)


def _binary_values(col) -> memoryview:
    """The value bytes of a binary Arrow column without nulls, as one buffer (no copy)."""
    offs = _binary_offsets(col)
    return memoryview(col.buffers()[2])[int(offs[0]) : int(offs[-1])]


def _u64_runs(col) -> np.ndarray:
    return np.frombuffer(_binary_values(col), dtype=np.uint64)


_BLOB_SCHEMA = "part int, band binary, key binary, ordinal binary"


def _band_blobs(batches, bands: int, targets: tuple):
    """(ordinal, band keys) -> ``(band, key, ordinal)`` triples, packed into one row per target
    partition: a bucket's members all go to the partition ``targets[key % len(targets)]``, and
    the shuffle moves a few large binary rows instead of a row per band key."""
    import pyarrow as pa

    nparts = len(targets)
    for rb in batches:
        if rb.num_rows == 0:
            continue
        ords = rb.column(0).to_numpy()
        keys = _u64_runs(rb.column(1))
        band = np.tile(np.arange(bands, dtype=np.int8), ords.size)
        ordinal = np.repeat(ords, bands)
        part = (keys % np.uint64(nparts)).astype(np.int64)
        order = np.argsort(part, kind="stable")
        cuts = np.searchsorted(part[order], np.arange(nparts + 1))
        out_part, out_b, out_k, out_o = [], [], [], []
        for p in range(nparts):
            sel = order[cuts[p] : cuts[p + 1]]
            if sel.size:
                out_part.append(targets[p])
                out_b.append(band[sel].tobytes())
                out_k.append(keys[sel].tobytes())
                out_o.append(ordinal[sel].tobytes())
        yield pa.RecordBatch.from_arrays([pa.array(out_part, pa.int32()), pa.array(out_b, pa.binary()),
                                          pa.array(out_k, pa.binary()), pa.array(out_o, pa.binary())],
                                         names=["part", "band", "key", "ordinal"])


_PAIR_SCHEMA = "part int, pairs binary, shared long, largest long, over long"


def _bucket_pairs(batches, window: int, targets: tuple):
    """A partition's band triples (every bucket whole here) -> its distinct candidate pairs,
    packed ``a << 32 | b`` (a < b) into one row per target partition (by ``a``), and one row of
    bucket statistics (``part`` -1). Within a bucket (band, key), members in ordinal order, each
    with the next ``window - 1``: :func:`neardup.stages.candidates.band_candidates`'s definition,
    its statistics counted as the local engine counts them."""
    import pyarrow as pa

    pb, pk, po = [], [], []
    for rb in batches:
        for c, dst, dt in ((1, pb, np.int8), (2, pk, np.uint64), (3, po, np.int64)):
            if rb.num_rows:
                dst.append(np.frombuffer(_binary_values(rb.column(c)), dtype=dt))
    shared = largest = over = 0
    nparts = len(targets)
    packed = np.empty(0, dtype=np.uint64)
    if pb:
        b, k, o = np.concatenate(pb), np.concatenate(pk), np.concatenate(po)
        del pb, pk, po
        # most triples are alone in their bucket, and a triple whose key no other triple has
        # certainly is: one sort by key finds the rest, which alone get the exact sort
        order = np.argsort(k)
        ks = k[order]
        shared_key = np.zeros(ks.size, dtype=bool)
        eq = ks[1:] == ks[:-1]
        shared_key[1:] |= eq
        shared_key[:-1] |= eq
        sel = order[shared_key]
        del order, ks, eq, shared_key
        b, k, o = b[sel], k[sel], o[sel]
        order = np.lexsort((o, k, b))
        b, k, o = b[order], k[order], o[order]
        del order
        n = o.size
        new = np.ones(n, dtype=bool)
        new[1:] = (b[1:] != b[:-1]) | (k[1:] != k[:-1])
        del b, k
        starts = np.flatnonzero(new)
        sizes = np.diff(np.append(starts, n))
        multi = sizes >= 2
        shared = int(multi.sum())
        largest = int(sizes[multi].max(initial=0))
        over = int(np.count_nonzero(sizes > window))
        keep = np.repeat(multi, sizes)
        gid = np.cumsum(new)[keep]
        o = o[keep]
        if o.size and int(o.max()) >= 2**32:
            raise RuntimeError("the Spark engine's candidate pairs hold ordinals below 2**32")
        pieces = []
        for d in range(1, window):
            if d >= o.size:
                break
            same = gid[d:] == gid[:-d]
            if not same.any():
                break  # no bucket is longer than d, so none is longer than d + 1
            pieces.append((o[:-d][same].astype(np.uint64) << np.uint64(32)) | o[d:][same].astype(np.uint64))
        if pieces:
            packed = np.unique(np.concatenate(pieces))
    parts = ((packed >> np.uint64(32)) % np.uint64(nparts)).astype(np.int64)
    order = np.argsort(parts, kind="stable")
    cuts = np.searchsorted(parts[order], np.arange(nparts + 1))
    out_part, out_pairs = [-1], [b""]
    for p in range(nparts):
        if cuts[p + 1] > cuts[p]:
            out_part.append(targets[p])
            out_pairs.append(packed[order[cuts[p] : cuts[p + 1]]].tobytes())
    zeros = [0] * (len(out_part) - 1)
    yield pa.RecordBatch.from_arrays([pa.array(out_part, pa.int32()), pa.array(out_pairs, pa.binary()),
                                      pa.array([shared] + zeros, pa.int64()), pa.array([largest] + zeros, pa.int64()),
                                      pa.array([over] + zeros, pa.int64())],
                                     names=["part", "pairs", "shared", "largest", "over"])


def _distinct_pairs(batches):
    """A partition's packed pairs (each pair's copies all here) -> distinct ``(a, b)`` rows."""
    import pyarrow as pa

    got = [np.frombuffer(_binary_values(rb.column(0)), dtype=np.uint64) for rb in batches if rb.num_rows]
    if not got:
        return
    packed = np.unique(np.concatenate(got))
    step = 1 << 20
    for s in range(0, packed.size, step):
        chunk = packed[s : s + step]
        yield pa.RecordBatch.from_arrays([pa.array((chunk >> np.uint64(32)).astype(np.int64)),
                                          pa.array((chunk & np.uint64(0xFFFFFFFF)).astype(np.int64))],
                                         names=["a", "b"])


def _verify_groups(batches, pairs_of, minhash: MinHashParams, floor: float | None, measure: str):
    """The documents of a shuffle partition's group of candidate pairs, ``(part, ordinal, ids)``
    (``pairs_of.value[part]``: the group's pairs ``(a, b)``) -> every pair's ``(a, b, passed,
    score, jaccard_r, estimate_r)``: the local engine's estimate filter
    (:func:`neardup.stages.candidates.estimate_filter`, ``floor`` None: all pass) and exact
    verification (:func:`neardup.stages.verify.pair_similarities`) of the pairs that pass it,
    with the shingle ids read in place from the Arrow batches and the signatures computed from
    them (:func:`neardup.stages.sketch.signatures_of_ids`: the sketch's own values)."""
    import pyarrow as pa

    from ..stages.sketch import signatures_of_ids

    part_l, ord_l, sig_l, ids_l, count_l = [], [], [], [], []
    for rb in batches:
        if rb.num_rows:
            part_l.append(rb.column(0).to_numpy().astype(np.int64))
            ord_l.append(rb.column(1).to_numpy())
            ids_l.append(_u64_runs(rb.column(2)))
            count_l.append(np.diff(_binary_offsets(rb.column(2))) // 8)
            sig_l.append(signatures_of_ids(ids_l[-1], _run_offsets(count_l[-1]), minhash))
    if not ord_l:
        return
    part, ords, counts = np.concatenate(part_l), np.concatenate(ord_l), np.concatenate(count_l)
    offsets = _run_offsets(counts)
    keyed = (part << 32) | ords  # ordinals are below 2**32 (see _bucket_pairs)
    order = np.argsort(keyed, kind="stable")
    keyed = keyed[order]
    groups = pairs_of.value

    def rows_of(g: int, o: np.ndarray) -> np.ndarray:
        want = (np.int64(g) << 32) | o
        at = np.searchsorted(keyed, want)
        if not np.array_equal(keyed[np.minimum(at, keyed.size - 1)], want):
            raise RuntimeError("internal error: a candidate pair's document is missing from its group")
        return order[at]

    for g in np.unique(part).tolist():
        ga, gb = groups[g]
        est, passed, jac, score = _measured_pairs(sig_l, ids_l, offsets, counts, rows_of(g, ga), rows_of(g, gb),
                                                     floor, measure)
        yield pa.RecordBatch.from_arrays([
            pa.array(ga), pa.array(gb), pa.array(passed), pa.array(score), _rounded(jac), _rounded(est),
        ], names=["a", "b", "passed", "score", "jaccard_r", "estimate_r"])


def _run_offsets(counts: np.ndarray) -> np.ndarray:
    """The ``counts.size + 1`` offsets of runs of ``counts`` values laid end to end."""
    offsets = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return offsets


def _measured_pairs(signatures, ids, offsets, counts, ia: np.ndarray, ib: np.ndarray, floor: float | None,
                    measure: str):
    """``(estimate, passed, jaccard, score)`` of the pairs ``(ia[q], ib[q])``: the local engine's
    estimate filter (:func:`neardup.stages.candidates.estimate_filter`, ``floor`` None: all pass)
    and, for the pairs that pass it, exact verification
    (:func:`neardup.stages.verify.pair_similarities`); NaN for the others. ``signatures`` and
    ``ids`` are arrays or lists of arrays read in place as their concatenation."""
    from ..stages.candidates import estimate_filter
    from ..stages.verify import passing_similarities

    _, _, est, _ = estimate_filter(signatures, ia, ib, None)
    passed = np.ones(ia.size, dtype=bool) if floor is None else est >= floor
    jac, score = passing_similarities(ids, offsets, counts, ia, ib, passed, measure)
    return est, passed, jac, score


def _rounded(values: np.ndarray):
    """An Arrow float column of ``values`` rounded to 6 places as the local writers round them
    (Python's ``round``, not numpy's)."""
    import pyarrow as pa

    return pa.array([round(x, 6) for x in values.tolist()], type=pa.float64())


def _partition_targets(spark, nparts: int) -> tuple:
    """For each of ``nparts`` shuffle partitions an int that ``repartition(nparts, col)`` sends
    there (Spark's Murmur3 hash, seed 42, modulo ``nparts``), so that the packed rows of
    :func:`_band_blobs` spread over all partitions, one target each."""
    from pyspark.sql import functions as F

    rows = (spark.range(64 * nparts).select(F.col("id").cast("int").alias("v"))
            .select("v", F.pmod(F.hash("v"), F.lit(nparts)).alias("p")).collect())
    first: dict = {}
    for r in rows:
        first.setdefault(int(r["p"]), int(r["v"]))
    return tuple(first.get(p, p) for p in range(nparts))


def _estimate_and_verify(batches, minhash: MinHashParams, floor: float | None, measure: str):
    """(a, b, ids_a, ids_b) -> (a, b, estimate, passed, jaccard, score, jaccard_r, estimate_r):
    :func:`_measured_pairs` of each candidate pair, the signatures computed from the ids."""
    import pyarrow as pa

    from ..stages.sketch import signatures_of_ids

    for rb in batches:
        k = rb.num_rows
        if k == 0:
            continue
        ids = [_u64_runs(rb.column(c)) for c in (2, 3)]
        side_counts = [np.diff(_binary_offsets(rb.column(c))) // 8 for c in (2, 3)]
        sigs = [signatures_of_ids(i, _run_offsets(c), minhash) for i, c in zip(ids, side_counts)]
        counts = np.concatenate(side_counts)
        offsets = _run_offsets(counts)
        est, passed, jac, score = _measured_pairs(sigs, ids, offsets, counts, np.arange(k), np.arange(k, 2 * k),
                                                     floor, measure)
        yield pa.RecordBatch.from_arrays([
            rb.column(0), rb.column(1), pa.array(est), pa.array(passed), pa.array(jac), pa.array(score),
            _rounded(jac), _rounded(est),
        ], names=["a", "b", "estimate", "passed", "jaccard", "score", "jaccard_r", "estimate_r"])


def _overlap_sims(ids_a: list, ids_b: list) -> dict:
    """Exact similarities of pairs of sorted distinct shingle-id runs (bytes), as locally."""
    from ..stages.verify import pair_similarities, runs_of

    k = len(ids_a)
    ids, offsets, counts = runs_of(ids_a + ids_b)
    return pair_similarities(ids, offsets, counts, np.arange(k), np.arange(k, 2 * k))


def _member_sims(batches, measure: str, threshold: float, chain: bool):
    """(ordinal, ids_lo, ids_hi) -> (ordinal, similarity to survivor rounded to 6 places, chained)."""
    import pyarrow as pa

    for rb in batches:
        if rb.num_rows == 0:
            continue
        sims = _survivor_sims(rb, measure)
        yield pa.RecordBatch.from_arrays([
            rb.column(0), _rounded(sims), pa.array([chain and x < threshold for x in sims.tolist()], type=pa.bool_()),
        ], names=["ordinal", "sim", "chained"])


def _survivor_sims(rb, measure: str) -> np.ndarray:
    """The similarity to its survivor of each row ``(ordinal, ids_lo, ids_hi)``, unrounded, as the
    local :func:`~neardup.stages.survivors.similarity_to_survivors` gives it."""
    return np.asarray(score_of(_overlap_sims(rb.column(1).to_pylist(), rb.column(2).to_pylist()), measure),
                      dtype=np.float64)


def _jsonl_lines(batches, ctx: dict):
    """(line, file, block) -> (ordinal, record): the original lines, for the kept corpus."""
    import pyarrow as pa

    bases = ctx["blocks"]
    seen: dict = {}
    for rb in batches:
        lines = rb.column(0).to_pylist()
        files = rb.column(1).to_pylist()
        blocks = rb.column(2).to_pylist()
        ords = []
        for f, blk in zip(files, blocks):
            key = (f, blk)
            k = seen.get(key, 0)
            seen[key] = k + 1
            ords.append(bases[key][0] + k)
        recs = [ln[:-1] if ln[-1:] == b"\r" else ln for ln in lines]
        yield pa.RecordBatch.from_arrays([pa.array(ords, type=pa.int64()),
                                          pa.array([r.decode("utf-8", "replace") for r in recs], type=pa.string())],
                                         names=["ordinal", "record"])


# =============================================================================================
# Driver side
# =============================================================================================


def _release(frames) -> None:
    for frame in frames:
        try:
            frame.unpersist()
        except Exception:  # pragma: no cover - best effort
            pass


class _Stages:
    """Materialized intermediate DataFrames and seconds per stage.

    Every stage's result is checkpointed (its lineage cut): the sketch table reliably when a
    checkpoint directory is set, the much smaller intermediates locally. Besides computing each stage once,
    this keeps the plans shallow. Persisting alone is not enough: each cached relation prints
    the plan of the cached relations it reads, and the shared subtrees of this pipeline make
    that string grow exponentially (the driver ran out of heap in ``explainString``).
    """

    def __init__(self):
        self.held: list = []
        self.seconds: dict[str, float] = {}
        self._t = time.perf_counter()

    def keep(self, df, *, count: bool = True):
        """An intermediate result (small next to the sketch table): a local checkpoint, materialized
        by its own count (one job)."""
        df = df.localCheckpoint(eager=not count)
        self.held.append(df)
        return (df, df.count()) if count else df

    def checkpoint(self, df):
        """Materialized with its lineage cut: a reliable checkpoint on a cluster whose SparkContext
        has a checkpoint directory (shared storage), else a local one (memory and disk of the
        executors; in local mode a reliable one would protect nothing)."""
        sc = df.sparkSession.sparkContext
        if sc.getCheckpointDir() and not (sc.master or "").startswith("local"):
            from pyspark import StorageLevel

            p = df.persist(StorageLevel.MEMORY_AND_DISK)
            out = p.checkpoint(eager=True)
            p.unpersist()
            return out
        return df.localCheckpoint(eager=True)

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self._t
        self._t = now


def _partitions(spark) -> int:
    return int(spark.conf.get("spark.sql.shuffle.partitions", "8"))


#: What one task of the packed passes (:func:`_bucket_pairs`, :func:`_verify_groups`) holds at
#: most, about: past it their shuffles get more partitions than ``spark.sql.shuffle.partitions``.
_TASK_BYTES = 64 << 20


def _partitions_for(spark, nbytes: float) -> int:
    """Shuffle partitions for a packed pass over ``nbytes``: the session's, or more so that a
    task holds about :data:`_TASK_BYTES` (its arrays are sorted in memory)."""
    return max(_partitions(spark), int(math.ceil(nbytes / _TASK_BYTES)))


def _core(spark, docs, config: DedupConfig, st: _Stages):
    """Everything after sketching. ``docs``: (ordinal, id, reason, length, keyval, fp, n, ids, bands),
    one row per input record, materialized. Returns (clusters, pairs, stats)."""
    sketched, exact, edges, stats = _verified_edges(spark, docs, config, st)
    return _cluster_frames(spark, docs, sketched, exact, edges, stats, config, st)


def _verified_edges(spark, docs, config: DedupConfig, st: _Stages):
    """The exact pass, candidates and verification as DataFrames (the DataFrame API and outputs
    on a Hadoop file system; :func:`_dedup_on_driver` for local outputs): ``(sketched, exact,
    edges, stats)``, the first holders' (ordinal, length, keyval, n, ids, bands), the exact copies'
    (ordinal, rep), and the verified edges (a, b, estimate, jaccard, score, jaccard_r,
    estimate_r), by ordinals."""
    from pyspark.sql import functions as F

    from ..stages.candidates import BUCKET_WINDOW

    stats: dict = {"candidate_pairs": 0, "estimate_filtered": 0, "verified_pairs": 0, "largest_bucket": 0,
                   "buckets_over_window": 0, "buckets_shared": 0}
    parts = _partitions(spark)

    # -- exact pass: all but the lowest ordinal of each fingerprint are exact duplicates
    columns = ("ordinal", "length", "keyval", "n", "ids", "bands")
    valid = docs.where(F.col("reason") == "").select("ordinal", "fp")
    rep = valid.groupBy("fp").agg(F.min("ordinal").alias("rep"))
    with_rep = valid.join(rep, "fp").select("ordinal", "rep")
    exact = st.keep(with_rep.where(F.col("ordinal") != F.col("rep")), count=False)
    firsts = with_rep.where(F.col("ordinal") == F.col("rep")).select("ordinal")
    sketched, n_sketched = st.keep(docs.join(firsts, "ordinal", "left_semi").select(*columns))
    stats["n_shingles_total"] = int(sketched.agg(F.sum("n")).first()[0] or 0)
    st.lap("exact_pass")

    empty_edges = spark.createDataFrame([], "a long, b long, estimate double, jaccard double, score double, "
                                            "jaccard_r double, estimate_r double")
    if config.method == "minhash" and n_sketched:
        band = config.banding()
        m = config.minhash.num_perm
        parts = _partitions_for(spark, n_sketched * band.bands * 17.0)  # a triple: int8, uint64, int64
        targets = _partition_targets(spark, parts)
        # shuffle 1: every bucket's (band, key, ordinal) triples to one partition, packed
        blobs = sketched.select("ordinal", "bands").mapInArrow(
            functools.partial(_band_blobs, bands=band.bands, targets=targets), _BLOB_SCHEMA)
        raw = st.keep(blobs.repartition(parts, "part").mapInArrow(
            functools.partial(_bucket_pairs, window=BUCKET_WINDOW, targets=targets), _PAIR_SCHEMA), count=False)
        got = raw.where(F.col("part") < 0).agg(F.sum("shared"), F.max("largest"), F.sum("over")).first()
        stats.update(buckets_shared=int(got[0] or 0), largest_bucket=int(got[1] or 0),
                     buckets_over_window=int(got[2] or 0))
        # shuffle 2: a pair found in several bands, once
        cand, stats["candidate_pairs"] = st.keep(raw.where(F.col("part") >= 0).repartition(parts, "part")
                                                 .select("pairs").mapInArrow(_distinct_pairs, "a long, b long"))
        st.lap("candidates")

        # the shingle ids of the documents in a pair (a broadcast semi-join: one scan of the
        # sketch table), joined to both ends of each pair
        members = cand.select(F.col("a").alias("ordinal")).union(cand.select(F.col("b").alias("ordinal"))).distinct()
        data = sketched.select("ordinal", "ids").join(F.broadcast(members), "ordinal", "left_semi")
        side_a = data.select(F.col("ordinal").alias("a"), F.col("ids").alias("ia"))
        side_b = data.select(F.col("ordinal").alias("b"), F.col("ids").alias("ib"))
        joined = cand.join(side_a, "a").join(side_b, "b").select("a", "b", "ia", "ib")
        floor = estimate_floor(config.threshold, m, config.measure) if config.verify else None
        checked = st.keep(joined.mapInArrow(
            functools.partial(_estimate_and_verify, minhash=config.minhash, floor=floor, measure=config.measure),
            "a long, b long, estimate double, passed boolean, jaccard double, score double, jaccard_r double, "
            "estimate_r double"), count=False)
        passed = checked.where(F.col("passed"))
        if config.verify:
            stats["estimate_filtered"] = int(checked.where(~F.col("passed")).count())
            passed = passed.where(F.col("score") >= F.lit(float(config.threshold)))
        edges, stats["verified_pairs"] = st.keep(passed.select("a", "b", "estimate", "jaccard", "score", "jaccard_r",
                                                               "estimate_r"))
        st.lap("verify")
    else:
        edges = empty_edges
        st.lap("candidates")
    return sketched, exact, edges, stats


def _raw_member_sims(batches, measure: str):
    """(ordinal, ids_lo, ids_hi) -> (ordinal, :func:`_survivor_sims`)."""
    import pyarrow as pa

    for rb in batches:
        if rb.num_rows:
            yield pa.RecordBatch.from_arrays([rb.column(0), pa.array(_survivor_sims(rb, measure), type=pa.float64())],
                                             names=["ordinal", "sim"])


def _float_column(table, name: str) -> np.ndarray:
    return table.column(name).to_numpy(zero_copy_only=False).astype(np.float64)  # nulls become NaN


def _int_column(table, name: str) -> np.ndarray:
    import pyarrow.compute as pc

    return pc.fill_null(table.column(name), 0).to_numpy(zero_copy_only=False).astype(np.int64)


def _dedup_on_driver(spark, docs, config: DedupConfig, st: _Stages):
    """The stages after sketching for a local output, whose files the driver writes and so holds
    a few values per record anyway: ``(outcome, pair rows, stats)`` as the local engine has them.

    The driver collects once the small columns of every record (ordinal, id, reason, length,
    keep value, fingerprint, shingle count) and runs the local stages on them: the exact pass
    (:func:`~neardup.stages.exact.first_holders`), connected components, survivors and outcomes
    (:mod:`neardup.stages.survivors`, union-find over arrays). Signatures and shingle ids never
    leave the executors, which compute the band keys, the candidate pairs (one shuffle of packed
    band triples, :func:`_bucket_pairs`), their estimates and exact similarities
    (:func:`_verify_groups`: one shuffle of the pairs' documents) and the similarity of the
    members that no verified edge joins to their survivor. The candidate pairs and verified
    edges come back packed (16 bytes a pair)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from collections import Counter

    from pyspark.sql import functions as F

    from ..stages.candidates import BUCKET_WINDOW
    from ..stages.exact import first_holders
    from ..stages.survivors import choose_survivors, components, kept_mask, outcomes

    stats: dict = {"candidate_pairs": 0, "estimate_filtered": 0, "verified_pairs": 0, "largest_bucket": 0,
                   "buckets_over_window": 0, "buckets_shared": 0}

    # -- exact pass: the local stage over (ordinal, fingerprint, shingle count)
    recs = docs.select("ordinal", "id", "reason", "length", "keyval", "fp", "n").toArrow().sort_by("ordinal")
    n_all = recs.num_rows
    if n_all and not np.array_equal(recs.column("ordinal").to_numpy(), np.arange(n_all)):
        raise RuntimeError("internal error: the records' ordinals are not 0, 1, 2, ...")
    ids = recs.column("id").to_pylist()
    valid = np.flatnonzero(pc.equal(recs.column("reason"), "").to_numpy(zero_copy_only=False))
    reason = recs.column("reason").to_pylist()
    lengths = _int_column(recs, "length")
    keyvals = _float_column(recs, "keyval") if config.keep == "field" else None
    fps, ns = _int_column(recs, "fp"), _int_column(recs, "n")
    del recs
    new, _, copies = first_holders(valid.tolist(), fps[valid], ns[valid], {})
    sk = valid[new]  # the first holders' ordinals, sorted
    exact_of = dict(copies)
    for o in exact_of:
        reason[o] = "exact"
    stats["n_shingles_total"] = int(ns[sk].sum())
    del fps, ns
    # the sketch table's first holders: the exact copies (usually few) left out by a broadcast anti-join
    copies_df = spark.createDataFrame(pa.table({"ordinal": pa.array(list(exact_of), pa.int64())}))
    sketched = (docs.where(F.col("reason") == "").join(F.broadcast(copies_df), "ordinal", "left_anti")
                .select("ordinal", "ids", "bands"))
    st.lap("exact_pass")

    a = b = np.empty(0, dtype=np.int64)
    score = jac_r = est_r = np.empty(0)
    if config.method == "minhash" and sk.size:
        band = config.banding()
        m = config.minhash.num_perm
        parts = _partitions_for(spark, sk.size * band.bands * 17.0)  # a triple: int8, uint64, int64
        targets = _partition_targets(spark, parts)
        blobs = sketched.select("ordinal", "bands").mapInArrow(
            functools.partial(_band_blobs, bands=band.bands, targets=targets), _BLOB_SCHEMA)
        raw = (blobs.repartition(parts, "part")
               .mapInArrow(functools.partial(_bucket_pairs, window=BUCKET_WINDOW, targets=targets), _PAIR_SCHEMA)
               .toArrow())
        st_rows = pc.less(raw.column("part"), 0)
        stats.update(buckets_shared=int(pc.sum(raw.filter(st_rows).column("shared")).as_py() or 0),
                     largest_bucket=int(pc.max(raw.filter(st_rows).column("largest")).as_py() or 0),
                     buckets_over_window=int(pc.sum(raw.filter(st_rows).column("over")).as_py() or 0))
        packed = [np.frombuffer(x, dtype=np.uint64) for x in raw.column("pairs").to_pylist() if x]
        packed = np.unique(np.concatenate(packed)) if packed else np.empty(0, dtype=np.uint64)
        del raw
        stats["candidate_pairs"] = int(packed.size)
        st.lap("candidates")

        if packed.size:
            ca = (packed >> np.uint64(32)).astype(np.int64)
            cb = (packed & np.uint64(0xFFFFFFFF)).astype(np.int64)
            del packed
            # each pair to a group (one per shuffle partition), each document to every group
            # that holds one of its pairs; a group's documents meet in one task
            # a document in a task: its shingle ids and the signature computed from them
            doc_bytes = 8.0 * m + 8.0 * stats["n_shingles_total"] / sk.size
            parts = _partitions_for(spark, 2 * ca.size * doc_bytes)  # at most two documents a pair
            targets = _partition_targets(spark, parts)
            group = ca % parts
            req = np.unique(np.concatenate([ca * parts + group, cb * parts + group]))
            req_df = spark.createDataFrame(pa.table({"ordinal": req // parts,
                                                     "part": np.asarray(targets, dtype=np.int32)[req % parts]}))
            # the pairs of each group, split once (stable: each group's pairs keep their order)
            order = np.argsort(group, kind="stable")
            cuts = np.searchsorted(group[order], np.arange(parts + 1))
            pairs_of = spark.sparkContext.broadcast(
                {targets[g]: (ca[order[cuts[g]:cuts[g + 1]]], cb[order[cuts[g]:cuts[g + 1]]])
                 for g in range(parts) if cuts[g + 1] > cuts[g]})
            floor = estimate_floor(config.threshold, m, config.measure) if config.verify else None
            try:
                got = (sketched.join(F.broadcast(req_df), "ordinal").repartition(parts, "part")
                       .select("part", "ordinal", "ids")
                       .mapInArrow(functools.partial(_verify_groups, pairs_of=pairs_of, minhash=config.minhash,
                                                     floor=floor,
                                                     measure=config.measure),
                                   "a long, b long, passed boolean, score double, jaccard_r double, estimate_r double")
                       .toArrow())
            finally:
                pairs_of.unpersist()
            if got.num_rows != ca.size:
                raise RuntimeError(f"internal error: {got.num_rows} pairs verified of {ca.size} candidates")
            passed = got.column("passed").to_numpy(zero_copy_only=False)
            score_all = got.column("score").to_numpy(zero_copy_only=False)
            keep = passed.copy()
            if config.verify:
                stats["estimate_filtered"] = int((~passed).sum())
                keep &= score_all >= float(config.threshold)
            et = got.filter(pa.array(keep)).sort_by([("a", "ascending"), ("b", "ascending")])
            a = et.column("a").to_numpy(zero_copy_only=False)
            b = et.column("b").to_numpy(zero_copy_only=False)
            score = et.column("score").to_numpy(zero_copy_only=False)
            jac_r = et.column("jaccard_r").to_pylist()
            est_r = et.column("estimate_r").to_pylist()
        stats["verified_pairs"] = int(a.size)
        st.lap("verify")
    else:
        st.lap("candidates")

    # -- clusters, survivors, outcomes: the local stages
    comp = components(sk.size, np.searchsorted(sk, a), np.searchsorted(sk, b))
    survivor_local = choose_survivors(comp, sk, config.keep, lengths, keyvals)
    kept = kept_mask(n_all, sk, survivor_local)
    members = np.flatnonzero(survivor_local != np.arange(sk.size))
    member_sims = np.full(members.size, np.nan)
    if members.size:
        mo, so = sk[members], sk[survivor_local[members]]
        lo, hi = np.minimum(mo, so), np.maximum(mo, so)
        # a member joined to its survivor by a verified edge: its similarity is the edge's score
        # (the same measure of the same two id runs); only the others are measured on the executors
        edge_keys = (a.astype(np.uint64) << np.uint64(32)) | b.astype(np.uint64)  # sorted: edges are by (a, b)
        want = (lo.astype(np.uint64) << np.uint64(32)) | hi.astype(np.uint64)
        at = np.minimum(np.searchsorted(edge_keys, want), max(edge_keys.size - 1, 0))
        direct = (edge_keys[at] == want) if edge_keys.size else np.zeros(members.size, dtype=bool)
        member_sims[direct] = score[at[direct]]
        rest = np.flatnonzero(~direct)
        if rest.size:
            wanted = spark.createDataFrame(pa.table({"ordinal": mo[rest], "lo": lo[rest], "hi": hi[rest]}))
            # the shingle ids of those members and their survivors only (a broadcast semi-join:
            # one scan of the sketch table), joined to both ends of each (member, survivor) pair
            ends = spark.createDataFrame(pa.table({"ordinal": np.union1d(mo[rest], so[rest])}))
            ids_of = sketched.select("ordinal", "ids").join(F.broadcast(ends), "ordinal", "left_semi")
            joined = (wanted.join(ids_of.withColumnRenamed("ordinal", "lo").withColumnRenamed("ids", "ilo"), "lo")
                      .join(ids_of.withColumnRenamed("ordinal", "hi").withColumnRenamed("ids", "ihi"), "hi")
                      .select("ordinal", "ilo", "ihi"))
            got = joined.mapInArrow(functools.partial(_raw_member_sims, measure=config.measure),
                                    "ordinal long, sim double").toArrow().sort_by("ordinal")
            if got.num_rows != rest.size:
                raise RuntimeError(f"internal error: {got.num_rows} similarities for {rest.size} cluster members")
            member_sims[rest] = got.column("sim").to_numpy(zero_copy_only=False)  # mo[rest] is sorted, as sk is
    outcome, cluster_sizes, chained = outcomes(
        ids, reason, sk, survivor_local, kept, members, member_sims, exact_of,
        chain_below=config.threshold if config.method == "minhash" else None)
    skipped = Counter(r[len("skipped:"):] for r in outcome.reason if r.startswith("skipped:"))
    stats.update(cluster_sizes=cluster_sizes, chained=len(chained), chained_examples=chained[:20],
                 skipped=dict(sorted(skipped.items())), duplicate_ids=n_all - len(set(ids)), spilled_bytes=0)
    pair_rows = list(zip([ids[x] for x in a.tolist()], [ids[x] for x in b.tolist()], jac_r, est_r))
    st.lap("cluster")
    return outcome, pair_rows, stats


def _cluster_frames(spark, docs, sketched, exact, edges, stats: dict, config: DedupConfig, st: _Stages):
    """Clusters computed on the cluster (connected components in Spark): ``(clusters, pairs, stats)``
    as DataFrames, for the DataFrame API and outputs on a Hadoop file system."""
    from pyspark.sql import functions as F

    from .components import connected_components

    # -- clusters: connected components over verified edges; survivor by the keep policy
    if stats["verified_pairs"]:
        cc = connected_components(edges.select("a", "b"), "a", "b")
        members = sketched.select("ordinal", "length", "keyval").join(
            cc.withColumnRenamed("node", "ordinal"), "ordinal")
        if config.keep == "first":
            primary = F.lit(0.0)
        elif config.keep == "longest":
            primary = -F.col("length").cast("double")
        elif config.keep == "shortest":
            primary = F.col("length").cast("double")
        else:
            v = F.col("keyval")
            primary = F.when(v.isNull() | F.isnan(v), F.lit(float("inf"))).otherwise(-v)
        if config.keep != "first":
            primary = F.when(primary == 0, F.lit(0.0)).otherwise(primary)  # -0.0 ties with 0.0, as in numpy
        surv = (members.groupBy("component")
                .agg(F.min(F.struct(primary.alias("p"), F.col("ordinal").alias("o"))).alias("m"))
                .select("component", F.col("m.o").alias("survivor")))
        memb = st.keep(members.join(surv, "component").select("ordinal", "survivor"), count=False)
        ids = sketched.select("ordinal", "ids")
        pairs_ms = (memb.where(F.col("ordinal") != F.col("survivor"))
                    .select("ordinal", F.least("ordinal", "survivor").alias("lo"),
                            F.greatest("ordinal", "survivor").alias("hi")))
        msj = (pairs_ms.join(ids.withColumnRenamed("ordinal", "lo").withColumnRenamed("ids", "ilo"), "lo")
               .join(ids.withColumnRenamed("ordinal", "hi").withColumnRenamed("ids", "ihi"), "hi")
               .select("ordinal", "ilo", "ihi"))
        sims = st.keep(msj.mapInArrow(
            functools.partial(_member_sims, measure=config.measure, threshold=float(config.threshold),
                              chain=config.method == "minhash"),
            "ordinal long, sim double, chained boolean"), count=False)
        _release([cc])
    else:
        memb = spark.createDataFrame([], "ordinal long, survivor long")
        sims = spark.createDataFrame([], "ordinal long, sim double, chained boolean")

    assign_sk = (sketched.select("ordinal").join(memb, "ordinal", "left").join(sims, "ordinal", "left")
                 .select("ordinal", F.coalesce("survivor", "ordinal").alias("survivor"), "sim", "chained"))
    assign_sk = st.keep(assign_sk, count=False)
    near_sk = F.col("survivor") != F.col("ordinal")
    a_sk = assign_sk.select("ordinal", "survivor",
                            F.when(near_sk, F.col("sim")).otherwise(F.lit(1.0)).alias("similarity"),
                            F.when(near_sk, F.lit("near")).alias("why"))
    rep_side = assign_sk.select(F.col("ordinal").alias("rep"), F.col("survivor").alias("rsurv"), F.col("sim").alias("rsim"))
    same = F.col("rsurv") == F.col("rep")
    a_ex = exact.join(rep_side, "rep").select(
        "ordinal", F.col("rsurv").alias("survivor"),
        F.when(same, F.lit(1.0)).otherwise(F.col("rsim")).alias("similarity"),
        F.when(same, F.lit("exact")).otherwise(F.lit("near")).alias("why"))
    assign = a_sk.unionByName(a_ex)
    names = docs.select(F.col("ordinal").alias("survivor"), F.col("id").alias("cluster"))
    out = (docs.select("ordinal", "id", "reason").join(assign, "ordinal", "left")
           .join(names, "survivor", "left"))
    out = st.keep(out, count=False)
    sizes = out.where(F.col("cluster").isNotNull()).groupBy("cluster").agg(F.count("*").alias("size"))
    kept = F.coalesce(F.col("survivor") == F.col("ordinal"), F.lit(False))
    clusters = out.join(sizes, "cluster", "left").select(
        "id", "cluster", kept.alias("kept"),
        F.when(~kept & F.col("survivor").isNotNull(), F.col("cluster")).alias("duplicate_of"),
        "similarity",
        F.when(kept, F.when(F.col("size") > 1, F.lit("kept")).otherwise(F.lit("unique")))
        .otherwise(F.coalesce(F.col("why"), F.col("reason"))).alias("reason"),
        "ordinal",
    )
    clusters = st.keep(clusters, count=False)
    chained = assign_sk.where(F.coalesce(F.col("chained"), F.lit(False)) & near_sk)
    stats["chained"] = chained.count()
    stats["chained_examples"] = [] if not stats["chained"] else [
        r["id"] for r in chained.join(docs.select("ordinal", "id"), "ordinal").orderBy("ordinal").limit(20).collect()]
    idn = docs.select("ordinal", "id")
    pairs = (edges.join(idn.select(F.col("ordinal").alias("a"), F.col("id").alias("a_id")), "a")
             .join(idn.select(F.col("ordinal").alias("b"), F.col("id").alias("b_id")), "b")
             .select(F.col("a_id").alias("a"), F.col("b_id").alias("b"), F.col("jaccard_r").alias("jaccard"),
                     F.col("estimate_r").alias("estimate"), F.col("a").alias("a_ordinal"), F.col("b").alias("b_ordinal")))
    pairs = st.keep(pairs, count=False)
    st.lap("cluster")
    return clusters, pairs, stats


def _summary(spark, clusters, stats: dict, config: DedupConfig, st: _Stages, kept_info) -> dict:
    from pyspark.sql import functions as F

    reasons: dict[str, int] = {}
    skipped: dict[str, int] = {}
    for r in clusters.groupBy("reason").count().collect():
        if r["reason"].startswith("skipped:"):
            skipped[r["reason"][len("skipped:"):]] = int(r["count"])
            reasons["skipped"] = reasons.get("skipped", 0) + int(r["count"])
        else:
            reasons[r["reason"]] = int(r["count"])
    distinct_ids = clusters.select("id").distinct().count()
    sizes = clusters.where(F.col("cluster").isNotNull()).groupBy("cluster").count().where(F.col("count") > 1)
    dist = {int(r["count"]): int(r["n"]) for r in sizes.groupBy("count").agg(F.count("*").alias("n")).collect()}
    largest = sizes.orderBy(F.col("count").desc(), F.col("cluster").asc()).limit(10).collect()
    # the 1997 experiment's table: clusters with a near member are "identical or similar"
    near = clusters.where(F.col("reason") == "near").select("cluster").distinct().withColumn("has_near", F.lit(True))
    kinds = {bool(r["has_near"]): (int(r["n"]), int(r["docs"])) for r in
             sizes.join(near, "cluster", "left").groupBy(F.coalesce(F.col("has_near"), F.lit(False)).alias("has_near"))
             .agg(F.count("*").alias("n"), F.sum("count").alias("docs")).collect()}
    n_input = sum(reasons.values())
    summary = {
        "engine": "spark",
        "input": n_input,
        "kept": reasons.get("kept", 0) + reasons.get("unique", 0),
        "unique": reasons.get("unique", 0),
        "exact_duplicates": reasons.get("exact", 0),
        "near_duplicates": reasons.get("near", 0),
        "skipped": reasons.get("skipped", 0),
        "skipped_by_reason": dict(sorted(skipped.items())),
        "clusters": {
            "count": sum(dist.values()),
            "documents_in_clusters": sum(k * v for k, v in dist.items()),
            "size_distribution": {str(k): v for k, v in sorted(dist.items())},
            "largest": [{"survivor": r["cluster"], "size": int(r["count"])} for r in largest],
            "kinds": kinds_table(*kinds.get(False, (0, 0)), *kinds.get(True, (0, 0))),
        },
        "candidate_pairs": int(stats["candidate_pairs"]),
        "estimate_filtered_pairs": int(stats["estimate_filtered"]),
        "verified_pairs": int(stats["verified_pairs"]),
        "chained_members": int(stats["chained"]),
        "chained_examples": stats["chained_examples"],
        "largest_bucket": int(stats["largest_bucket"]),
        "buckets_over_window": int(stats["buckets_over_window"]),
        "duplicate_ids": n_input - distinct_ids,
        "shingles_total": int(stats["n_shingles_total"]),
        "kept_output": kept_info,
        "config": config.as_dict(),
        "config_fingerprint": config.fingerprint(),
        "jobs": spark.sparkContext.defaultParallelism,
        "spark": _spark_info(spark),
        "seconds": {k: round(v, 3) for k, v in st.seconds.items()},
        "peak_memory_mb": round(peak_memory_mb(), 1),
    }
    jvm = _jvm_peak_mb()
    if jvm is not None:
        summary["peak_memory_mb_jvm"] = jvm
    assert summary["kept"] + summary["exact_duplicates"] + summary["near_duplicates"] + summary["skipped"] \
        == summary["input"], "internal error: counts do not add up"
    return summary


def _spark_info(spark) -> dict:
    return {"version": spark.version, "master": spark.sparkContext.master,
            "default_parallelism": spark.sparkContext.defaultParallelism, "shuffle_partitions": _partitions(spark)}


def _jvm_peak_mb() -> float | None:
    """High-water resident memory of a local Spark JVM started by this process (None elsewhere)."""
    try:
        import psutil

        for proc in psutil.Process().children(recursive=True):
            if proc.name() == "java":
                with open(f"/proc/{proc.pid}/status") as fh:
                    for line in fh:
                        if line.startswith("VmHWM:"):
                            return round(int(line.split()[1]) / 1024, 1)
    except Exception:  # noqa: BLE001 - psutil missing, not Linux, no permission
        return None
    return None


def _check_config(config: DedupConfig) -> None:
    if not isinstance(config, DedupConfig):
        raise ConfigError(f"config must be a neardup.DedupConfig, got {type(config).__name__}")
    if config.method in ("simhash", "broder", "greedy"):
        raise ConfigError(f"--method {config.method} is not supported by the Spark engine (--engine spark): it runs "
                          "minhash or exact; use --engine local")
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
    """
    require("pyspark", "spark")
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    _check_config(config)
    spark = spark or df.sparkSession
    cols = set(df.columns)
    for name, what in ((text_col, "text_col"), (id_col, "id_col"), (order_col, "order_col")):
        if name is not None and name not in cols:
            raise ConfigError(f"{what} {name!r} is not a column of the DataFrame (columns: {df.columns})")
    kf = config.keep_field if config.keep == "field" else None
    if kf is not None and kf not in cols:
        raise ConfigError(f"keep_field {kf!r} is not a column of the DataFrame (columns: {df.columns})")

    st = _Stages()
    dtypes = {f.name: f.dataType for f in df.schema.fields}
    integral = order_col is not None and isinstance(dtypes[order_col], (T.ByteType, T.ShortType, T.IntegerType, T.LongType))
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
    extra_fields, extras = [], []
    if order_col is not None and not integral:
        sel.append(F.col(order_col).alias("_okey"))
        extra_fields.append(T.StructField("_okey", dtypes[order_col]))
        extras.append("_okey")
    if order_col is None:
        extra_fields.append(T.StructField("_h", T.BinaryType()))
    ctx = {"id_field": "id", "text_field": text_col, "keep_field": kf, "max_bytes": config.max_bytes,
           "content": config.content, "html": config.html, "extras": tuple(extras), "text_hash": order_col is None,
           "need_kernel": _need_kernel(config)}
    sk = base.select(*sel).mapInArrow(functools.partial(_map_rows, ctx=ctx, config=config),
                                      _sketch_schema(extra_fields))
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
                       *[c for c in ("_key", "_okey") if c in docs.columns and c != "ordinal"])
    docs = st.checkpoint(docs)
    st.lap("read_and_sketch")

    clusters, pairs, stats = _core(spark, docs.drop("_key", "_okey"), config, st)
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
    summary = _summary(spark, clusters, stats, config, st, None)
    keep_frames = {id(clusters), id(pairs)}
    _release([d for d in st.held if id(d) not in keep_frames])
    return SparkDedupResult(clusters=clusters, pairs=pairs, kept=kept, summary=summary,
                            _held=[clusters, pairs] + held_input)


# --------------------------------------------------------------------------------------------- files


def _has_scheme(path: str) -> bool:
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
    from ..io.read.sources import is_hidden_name

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


def _leaves(spark, inputs, format: str) -> tuple[str, list[tuple[str, str, str | None]]]:
    """``(format, [(spark uri, path as the local reader names it, why unreadable or None)])``."""
    from ..io.read import input_leaves as local_leaves, kind_of, plan_inputs

    if isinstance(inputs, (str, bytes, os.PathLike)):
        inputs = [inputs]
    inputs = [os.fsdecode(p) for p in inputs]
    if format not in ("auto", "jsonl", "parquet"):
        raise ConfigError(f"--format {format} is not supported by the Spark engine (--engine spark): it reads JSONL "
                          "and Parquet; use --engine local for WARC, HTML and text files")
    leaves = []
    fmts = set()
    for p in inputs:
        if not _has_scheme(p) and os.path.exists(p):
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
            if why is None and not _has_scheme(leaf):
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
    never decodes them (:func:`_joined_lines`), without the JVM's copy of every line.
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


def _read_paths(spark, fmt: str, leaves, config: DedupConfig, id_field: str, text_field: str, max_bytes):
    """The sketch table of the inputs, keyed by the local reader's ordinals, plus what the kept
    corpus needs to find the records again."""
    from pyspark.sql import functions as F

    kf = config.keep_field if config.keep == "field" else None
    readable = [(u, leaf) for u, leaf, why in leaves if why is None]
    uris = [u for u, _ in readable]
    ctx = {"id_field": id_field, "text_field": text_field, "keep_field": kf, "max_bytes": max_bytes,
           "content": config.content, "html": config.html, "need_kernel": _need_kernel(config)}
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
        sk = spark.createDataFrame([], _sketch_schema())
    elif fmt == "jsonl":
        # the local engine's JSONL fast path when the driver has it (so the executors must too)
        encoded = ctx["need_kernel"] and _local_reader(ctx).scans_jsonl_blocks()
        ctx.update(blocks=blocks, paths=paths, encoded=encoded)
        lines = _jsonl_frame(spark, uris, as_binary=False) if encoded else frame
        sk = lines.mapInArrow(functools.partial(_map_jsonl, ctx=ctx, config=config), _sketch_schema())
    else:
        names = set(frame.columns)
        sel = [
            (F.col(f"`{id_field}`") if id_field in names else F.lit(None).cast("string")).alias("_id"),
            (F.col(f"`{text_field}`") if text_field in names else F.lit(None).cast("string")).alias("_text"),
            (F.col(f"`{kf}`") if kf and kf in names and kf != text_field else F.lit(None).cast("double")).alias("_kf"),
            F.col("_metadata.file_path").alias("file"),
            F.col("_metadata.row_index").alias("row"),
        ]
        ctx.update(files={u: (files[u][0], paths[u]) for u in files})
        sk = frame.select(*sel).mapInArrow(functools.partial(_map_rows, ctx=ctx, config=config), _sketch_schema())
    if synthetic:
        extra = spark.createDataFrame(
            [(o, leaf, why, 0, None, None, None, None, None) for o, leaf, why in synthetic], _sketch_schema())
        sk = sk.unionByName(extra)
    locate = {"format": fmt, "frame": frame, "blocks": blocks, "files": files}
    return sk.withColumnRenamed("_key", "ordinal"), total, locate


def _kept_frame(spark, locate: dict, kept_ord):
    """The original records whose ordinal is kept: JSONL lines as ``record`` strings, Parquet rows as they are."""
    from pyspark.sql import functions as F

    frame = locate["frame"]
    if frame is None:
        return None
    if locate["format"] == "jsonl":
        lines = frame.mapInArrow(functools.partial(_jsonl_lines, ctx={"blocks": locate["blocks"]}),
                                 "ordinal long, record string")
        return lines.join(kept_ord, "ordinal", "left_semi").sortWithinPartitions("ordinal")
    base = spark.createDataFrame([(u, b) for u, (b, _) in locate["files"].items()], "__file string, __base long")
    rows = frame.select("*", F.col("_metadata.file_path").alias("__file"), F.col("_metadata.row_index").alias("__row"))
    rows = rows.join(F.broadcast(base), "__file")
    rows = rows.withColumn("ordinal", F.col("__base") + F.col("__row")).drop("__file", "__base", "__row")
    return rows.join(kept_ord, "ordinal", "left_semi").sortWithinPartitions("ordinal")


def _is_remote(path: str) -> bool:
    return _has_scheme(path) and not path.startswith("file:")


def _write_text(spark, path: str, text: str) -> None:
    if not _is_remote(path):
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


def _write_local(out_dir: str, inputs, leaves, outcome, pair_rows, locate, config: DedupConfig, write_kept: bool,
                 output_format: str, spark):
    """The local engine's files, written by its own writers (:mod:`neardup.io.write`): the same
    names, schemas and bytes. Returns the kept corpus's description (None without one)."""
    from ..cpus import available_cpus
    from ..io import write_kept as write_kept_records
    from ..io.write import write_clusters, write_pairs

    write_clusters(out_dir, outcome, format=output_format)
    write_pairs(out_dir, pair_rows, format=output_format)
    if not write_kept:
        return None
    if all(not _has_scheme(leaf) for _, leaf, _ in leaves):
        # local inputs: the local writer reads them again with the keep mask, as the local engine does
        paths = [inputs] if isinstance(inputs, (str, bytes, os.PathLike)) else inputs
        return write_kept_records([os.fsdecode(p) for p in paths], outcome.kept, out_dir, jobs=available_cpus(),
                                  **config.read_options())
    # inputs on a Hadoop file system, which this process cannot open: the kept rows, written by Spark
    import pyarrow as pa

    kept_ord = spark.createDataFrame(pa.table({"ordinal": np.flatnonzero(outcome.kept)}))
    kept = _kept_frame(spark, locate, kept_ord)
    if kept is None:
        return None
    path = os.path.join(out_dir, "kept")
    kept.write.mode("overwrite").parquet(path)
    return {"path": path, "format": "parquet", "records": int(outcome.kept.sum()),
            "columns": "ordinal, record" if locate["format"] == "jsonl" else "the input columns, ordinal"}


def _write_remote(spark, output: str, clusters, pairs, locate, fmt: str, summary: dict, write_kept: bool):
    """An output on a Hadoop file system (hdfs://, s3a://, ...): the same tables as Parquet datasets
    written by the executors (``clusters/``, ``pairs/``, ``kept/``). Returns the kept corpus's description."""
    from pyspark.sql import functions as F

    sep = "" if output.endswith("/") else "/"
    clusters.orderBy("ordinal").write.mode("overwrite").parquet(f"{output}{sep}clusters")
    pairs.orderBy("a_ordinal", "b_ordinal").write.mode("overwrite").parquet(f"{output}{sep}pairs")
    if not write_kept:
        return None
    kept = _kept_frame(spark, locate, clusters.where(F.col("kept")).select("ordinal"))
    if kept is None:
        return None
    kept.write.mode("overwrite").parquet(f"{output}{sep}kept")
    return {"path": f"{output}{sep}kept", "format": "parquet", "records": summary["kept"],
            "columns": "ordinal, record" if fmt == "jsonl" else "the input columns, ordinal"}


def dedup_paths(inputs, output: str, config: DedupConfig = DedupConfig(), *, master: str | None = None,
                write_kept: bool = True, spark=None, conf: dict | None = None, output_format: str = "jsonl") -> dict:
    """``neardup dedup --engine spark``: deduplicate JSONL or Parquet files (local or any Hadoop
    path) into ``output``; returns the summary.

    A local ``output`` gets the local engine's files, written by its writers: ``clusters.jsonl``
    and ``pairs.jsonl`` (``.parquet`` with ``output_format="parquet"``), ``kept.jsonl`` or
    ``kept.parquet`` (the input's format, the original records byte for byte), ``summary.json``.
    An output on a Hadoop file system gets Parquet datasets written by the executors instead:
    ``clusters/``, ``pairs/`` and ``kept/`` (see below).

    Records and ordinals are exactly the local reader's (see the module docstring), so the
    clusters and pairs equal the local engine's. ``master``: the Spark master (default: the
    ``spark-submit`` environment's, else ``local[*]``); an active session is used as it is.
    There (and for inputs on a Hadoop file system) ``kept/`` holds, for JSONL input, ``ordinal``
    and ``record`` (the original line; read it back with
    ``spark.read.json(df.select("record").rdd.map(lambda r: r[0]))`` or ``from_json``), for
    Parquet input the original columns and ``ordinal``.
    """
    require("pyspark", "spark")
    from ..io.write import RESULT_FORMATS
    from .session import _environment_provides_master, get_session

    _check_config(config)
    if output_format not in RESULT_FORMATS:
        raise ConfigError(f"--output-format must be one of {', '.join(RESULT_FORMATS)}, got {output_format!r}")
    st = _Stages()
    if spark is None:
        if master is None and not _environment_provides_master():
            master = "local[*]"
        spark = get_session(master=master, app_name="neardup-dedup", conf=conf)
    st.lap("session")
    fmt, leaves = _leaves(spark, inputs, config.format)
    output = os.fspath(output)
    if not _is_remote(output):
        os.makedirs(output[5:] if output.startswith("file:") else output, exist_ok=True)

    sk, total, locate = _read_paths(spark, fmt, leaves, config, config.id_field, config.text_field, config.max_bytes)
    docs = st.checkpoint(sk)
    st.lap("read_and_sketch")
    if _is_remote(output):
        clusters, pairs, stats = _core(spark, docs, config, st)
        summary = _summary(spark, clusters, stats, config, st, None)
        st.lap("summary")
        kept_info = _write_remote(spark, output, clusters, pairs, locate, fmt, summary, write_kept)
        st.lap("write")
    else:
        outcome, pair_rows, stats = _dedup_on_driver(spark, docs, config, st)
        kept_info = _write_local(output[5:] if output.startswith("file:") else output, inputs, leaves, outcome,
                                 pair_rows, locate, config, write_kept, output_format, spark)
        st.lap("write")
        summary = run_summary(outcome, stats, config, kept_info=None, jobs=spark.sparkContext.defaultParallelism,
                              seconds={})
        summary = {"engine": "spark", **summary, "spark": _spark_info(spark)}
        st.lap("summary")
    summary["kept_output"] = kept_info
    # the local engine's stage table; the session (the JVM's start) apart, as it is no stage of a run
    summary["seconds"] = stage_table({**st.seconds, "total": sum(v for k, v in st.seconds.items() if k != "session")})
    summary["spark"]["session_seconds"] = round(st.seconds.get("session", 0.0), 3)
    summary["peak_memory_mb"] = round(peak_memory_mb(), 1)
    jvm = _jvm_peak_mb()
    if jvm is not None:
        summary["peak_memory_mb_jvm"] = jvm
    summary["inputs"] = {"format": fmt, "files": len(leaves)}
    if summary["input"] != total:
        raise RuntimeError(f"internal error: {summary['input']} records in clusters, {total} counted in the inputs")
    sep = "" if output.endswith("/") else "/"
    _write_text(spark, f"{output}{sep}summary.json", json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    _release(st.held)
    return summary
