"""Executor side: parsed records -> the sketch table's rows (exact fingerprints, shingle ids, band keys),
with the local engine's sketch stage and, for JSONL, its block reader and kernel fast path."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from ...config import DedupConfig
from ...io.read import record_reader
from .columns import binary_column, joined_lines
from .rows import Recs, parse_jsonl, parse_rows


#: Text handed to the kernel per call inside a task (the local engine's batch size).
_SKETCH_BATCH_CHARS = 16 << 20


def sketch_schema(extra_fields=()):
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
        # URL identity (--url-field): the record's canonical URL and its page's canonical claim
        T.StructField("url_key", T.StringType()),
        T.StructField("claim_key", T.StringType()),
        T.StructField("page_url", T.StringType()),
    ]
    return T.StructType(fields + list(extra_fields))


def _band_keys_of(values: np.ndarray, band) -> np.ndarray:
    """The local engine's band keys (:func:`neardup.stages.candidates.band_keys`) of a signature matrix."""
    from ...stages.candidates import band_keys

    return band_keys(values, band.bands, band.rows)


def _require_kernel(config: DedupConfig) -> None:
    """On an executor: the compiled kernel must run there when it runs on the driver."""
    from ...stages.sketch import kernel_handles

    if not kernel_handles(config.shingle):
        raise RuntimeError(
            "neardup's compiled kernel (neardup._kernel) does not import on this Spark executor, while the "
            "driver has it: install neardup[spark] on the executors or ship a virtualenv archive "
            "(spark.archives); a wheel in --py-files cannot carry a compiled extension (see docs/spark.md)")


def _sketch_recs(recs: Iterator[Recs], config: DedupConfig, need_kernel: bool = False):
    """Parsed records -> one Arrow batch of sketch rows per input batch.

    Documents go through the sketch stage, as in the local engine (kernel signatures with
    shingle ids, and content fingerprints), in chunks of about 16 M characters, one thread (a
    Spark task is one core). Reasons as the local engine gives them: ``skipped:<why>`` from the
    reader, ``skipped:empty`` for a document without shingles, ``""`` for the others (the exact
    pass comes later).
    """
    import pyarrow as pa

    from ...stages.sketch import sketch_texts

    if need_kernel:
        _require_kernel(config)
    want_sig = config.method == "minhash"
    want_ids = config.method != "exact" or config.url_field is not None  # claims are checked on the ids
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
            pa.array(rb.url_keys or [None] * n_rows, type=pa.string()),
            pa.array(rb.claim_keys or [None] * n_rows, type=pa.string()),
            pa.array(rb.page_urls or [None] * n_rows, type=pa.string()),
        ]
        names = ["_key", "id", "reason", "length", "keyval", "fp", "n", "ids", "bands", "url_key", "claim_key",
                 "page_url"]
        for name, arr in rb.extras.items():
            arrays.append(arr)
            names.append(name)
        yield pa.RecordBatch.from_arrays(arrays, names=names)


def _sketch_jsonl_encoded(batches, ctx: dict, config: DedupConfig):
    """(line binary, file, block) -> sketch rows, the local engine's JSONL fast path on executors.

    Each run of lines of one file split is joined into a block of whole lines and read by the
    local reader's block reader (:meth:`~neardup.io.read.RecordReader.jsonl_block_records`:
    ``neardup._jsonl`` scans it; unusual lines go through the line-by-line reader), and the
    batch's texts go to the kernel as UTF-8, never as Python strings
    (:func:`~neardup.stages.sketch.sketch_parts`),
    as :meth:`neardup.engines.local.sketching.ReadAndSketch._read_and_sketch` does: so the records, reasons,
    signatures, shingle ids and fingerprints are the local engine's. Rows as :func:`_sketch_recs`.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from ...io.documents import EncodedDocuments, Skipped
    from ...stages.sketch import flag_table, sketch_parts

    reader = record_reader(config)
    _require_kernel(config)
    if not reader.scans_jsonl_blocks():
        raise RuntimeError("neardup's compiled JSONL scanner (neardup._jsonl) does not import on this Spark executor, "
                           "while the driver has it: install neardup[spark] on the executors (see docs/spark.md)")
    norm = config.shingle.normalize
    table = flag_table(norm)
    bases, paths = ctx["blocks"], ctx["paths"]
    want_sig = config.method == "minhash"
    want_ids = config.method != "exact" or config.url_field is not None  # claims are checked on the ids
    band = config.banding() if want_sig else None
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
            for rec in reader.jsonl_block_records(joined_lines(lines, a, b), base_ord + k0, paths[f],
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
            binary_column(valid & want_ids, id_bytes, ids_data),
            binary_column(valid & want_sig, np.full(n_rows, 8 * (band.bands if band else 0)), band_data),
            pa.nulls(n_rows, pa.string()),
            pa.nulls(n_rows, pa.string()),
            pa.nulls(n_rows, pa.string()),
        ], names=["_key", "id", "reason", "length", "keyval", "fp", "n", "ids", "bands", "url_key", "claim_key",
                  "page_url"])


def map_jsonl(batches, ctx, config):
    if ctx.get("encoded"):
        return _sketch_jsonl_encoded(batches, ctx, config)
    return _sketch_recs(parse_jsonl(batches, ctx, config), config, ctx.get("need_kernel", False))


def map_rows(batches, ctx, config):
    return _sketch_recs(parse_rows(batches, ctx, config), config, ctx.get("need_kernel", False))


def need_kernel(config: DedupConfig) -> bool:
    """True when the driver sketches these parameters with the compiled kernel: the executors must too."""
    from ...stages.sketch import kernel_handles

    return kernel_handles(config.shingle)
