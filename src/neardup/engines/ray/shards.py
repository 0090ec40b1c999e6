"""The Ray engine's read and sketch stage: the inputs cut into shards, each read by the local
reader and sketched by the local sketch stage on a worker.

A shard is a byte range of an uncompressed JSONL file (cut after a ``\\n``) or a whole file (a
compressed JSONL file, a Parquet file). Records are the local reader's
(:class:`~neardup.io.read.RecordReader`): a range goes through its block reader
(:meth:`~neardup.io.read.RecordReader.jsonl_block_records`) or, when that does not apply,
line by line through :meth:`~neardup.io.read.RecordReader.jsonl_record`; a whole file through
:meth:`~neardup.io.read.RecordReader.read`. A record's id and source name its line in the
file, so a range needs the number of lines before it (counted first, range by range); its
ordinal is the number of records in the shards before it plus its index in its shard.

A sketched shard leaves in the work folder (:mod:`.work`): ``<s>.cols.arrow`` (every record's
id, reason, length, keep value, content fingerprint and shingle count, and with a URL field its
URL identity and its page's claim (:mod:`neardup.stages.urls`); written last, so its
presence means the shard is done), ``<s>.rows.npy`` (the rows with shingles),
``<s>.ids.npy``/``<s>.offs.npy`` (their sorted distinct shingle ids) and ``<s>.bands.npy`` (their
band keys, one row per band, for the band stage to read one band of every shard).
"""

from __future__ import annotations

import io
import json
import math
import os

import numpy as np

from ...config import DedupConfig
from ...errors import ConfigError
from .work import mapped, write_array, write_pieces

__all__ = ["plan_shards", "count_lines", "prepare_sketch", "sketch_shard", "shard_records", "FORMATS"]

#: The input formats the Ray engine reads (those whose kept corpus the local writer rebuilds from
#: the records' ordinals alone, and whose ids do not depend on the other inputs).
FORMATS = ("jsonl", "parquet")
#: Text given to the kernel per call inside a shard (the local engine's batch size).
SKETCH_BATCH_BYTES = 16 << 20


def plan_shards(inputs, config: DedupConfig, shard_bytes: int) -> list[dict]:
    """The shards of the inputs, in the local reader's order: ``{"path", "fmt", "start", "stop"}``
    (``start`` None for a whole file)."""
    from ...io.read import compression_of, plan_inputs

    plan = plan_inputs(inputs, config.format)
    shards: list[dict] = []
    for path, fmt, why in plan.leaves:
        if why is not None:
            from ...io.read import UnreadableInput

            raise UnreadableInput(f"{path}: {why}", path=path)
        if fmt not in FORMATS:
            raise ConfigError(f"{fmt} input ({path}) is not supported by the Ray engine (--engine ray): it reads "
                              f"{' and '.join(FORMATS)}; use --engine local")
        size = os.path.getsize(path) if os.path.isfile(path) else -1
        if fmt != "jsonl" or size <= shard_bytes:
            shards.append({"path": path, "fmt": fmt, "start": None, "stop": None})
            continue
        with open(path, "rb") as fh:
            if compression_of(fh.read(8)) is not None:
                shards.append({"path": path, "fmt": fmt, "start": None, "stop": None})
                continue
            cuts = [0]
            while cuts[-1] + shard_bytes < size:
                fh.seek(cuts[-1] + shard_bytes)
                fh.readline()  # to the end of the line the cut falls in
                if fh.tell() >= size:
                    break
                cuts.append(fh.tell())
        cuts.append(size)
        shards += [{"path": path, "fmt": fmt, "start": a, "stop": b} for a, b in zip(cuts[:-1], cuts[1:])]
    return shards


def _range(shard: dict) -> bytes:
    with open(shard["path"], "rb") as fh:
        fh.seek(shard["start"])
        return fh.read(shard["stop"] - shard["start"])


def count_lines(shard: dict) -> int:
    """The lines of a byte range, as the local reader counts them (a last line without ``\\n`` is one)."""
    data = _range(shard)
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def reader_of(config: DedupConfig):
    """The local reader with the run's options; a file it cannot read stops the run."""
    from ...io.read import record_reader

    return record_reader(config, on_error="error")


def shard_records(shard: dict, config: DedupConfig):
    """The records of a shard, as the local reader gives them (ordinals from 0 within the shard)."""
    from ...io.read import InputPlan, line_or_size
    from ...stages.sketch import flag_table, kernel_handles

    reader = reader_of(config)
    table = flag_table(config.shingle.normalize) if kernel_handles(config.shingle) else False
    path = shard["path"]
    if shard["start"] is None:
        plan = InputPlan([path])
        plan.leaves.append((path, shard["fmt"], None))
        yield from reader.read(plan, encoded_table=table)
        return
    block, line0 = _range(shard), shard["line0"]
    if table is not False and reader.scans_jsonl_blocks():
        yield from reader.jsonl_block_records(block, 0, path, line0, table)
        return
    for k, line in enumerate(io.BytesIO(block)):
        yield reader.jsonl_record(line_or_size(line, reader.max_bytes), k, f"{path}:{line0 + k + 1}")


def prepare_sketch(config: DedupConfig) -> None:
    """What :func:`sketch_shard` loads at its first call, loaded now: its modules and the
    kernel's tables for the run's options (built at first use). A worker that calls it when it
    starts pays for them while the other workers start, not in its first shard."""
    import pyarrow.feather  # noqa: F401  (the shard's columns are written with it)

    from ...stages.candidates import band_keys  # noqa: F401
    from ...stages.sketch import flag_table, kernel_handles, sketch_parts
    from ...stages.survivors import keep_value  # noqa: F401
    from ...stages.urls import claim_key  # noqa: F401

    reader_of(config)
    if kernel_handles(config.shingle):
        flag_table(config.shingle.normalize)
        sketch_parts([["a text to load the tables"]], config.shingle, config.minhash, with_ids=True)


def sketch_shard(shard: dict, config: DedupConfig, out: str) -> int:
    """Read and sketch one shard into the files named ``out`` + suffix; returns its records.

    As the local engine's read pass (:meth:`neardup.engines.local.sketching.ReadAndSketch._read_and_sketch`):
    texts batched as parts (:mod:`neardup.stages.encode`), sketched by
    :func:`~neardup.stages.sketch.sketch_parts`; ``skipped:<why>`` from the reader,
    ``skipped:empty`` (``too_large_nfkc``) for a text without shingles (too large for the
    kernel once normalized)."""
    import pyarrow as pa
    import pyarrow.feather as feather

    from ...io.documents import EncodedDocuments, Skipped
    from ...stages.candidates import band_keys
    from ...stages.sketch import sketch_parts
    from ...stages.survivors import keep_value
    from ...stages.urls import claim_key, record_key

    want_sig = config.method == "minhash"
    # URL identity measures claimed pairs on their shingle ids, whatever the method
    want_ids = config.method != "exact" or config.url_field is not None
    url_field, url_rules = config.url_field, config.rules_of_urls()
    urls: list = []
    claims: list = []
    # clusters.jsonl's url: a record's kept "url" field, as the local engine gives it (JSON here,
    # since a field may hold any value)
    page_urls: list | None = [] if "url" in reader_of(config).keep_fields else None
    band = config.banding() if want_sig else None
    ids: list = []
    reason: list = []
    length: list = []
    keyval: list = []
    fp = []
    rows_l, ids_l, counts_l, bands_l = [], [], [], []
    parts: list = []
    rows: list = []  # the records of the pending batch, in the parts' order
    size = 0

    def flush():
        nonlocal parts, rows, size
        if not rows:
            return
        s, too_large = sketch_parts(parts, config.shingle, config.minhash, with_ids=want_ids)
        counts = np.asarray(s.n_shingles, dtype=np.int64)
        r = np.asarray(rows, dtype=np.int64)
        fp.append((r, s.fingerprints.astype(np.uint64).view(np.int64), counts))
        ok = counts > 0
        for k in np.flatnonzero(~ok).tolist():
            reason[rows[k]] = "skipped:too_large_nfkc" if k in too_large else "skipped:empty"
        every = bool(ok.all())  # the usual batch: its arrays are taken as they are, not copied
        rows_l.append(r if every else r[ok])
        counts_l.append(counts if every else counts[ok])
        if want_ids:
            if every:  # the kernel's pieces, written one after the other (never joined in memory)
                ids_l.extend(s.id_parts)
            else:
                keep = np.repeat(ok, np.diff(np.asarray(s.offsets, dtype=np.int64)))
                ids_l.append(np.asarray(s.ids, dtype=np.uint64)[keep])
        if want_sig:
            bands_l.append(band_keys(s.values if every else np.ascontiguousarray(s.values[ok]), band.bands,
                                     band.rows))
        parts, rows, size = [], [], 0

    for rec in shard_records(shard, config):
        if type(rec) is EncodedDocuments:
            k = len(rec)
            rows.extend(range(len(ids), len(ids) + k))
            ids.extend(rec.ids)
            reason.extend([""] * k)
            length.extend(rec.lengths.tolist())
            keyval.extend([math.nan] * k)
            urls.extend([None] * k)
            claims.extend([None] * k)
            if page_urls is not None:
                page_urls.extend([None] * k)
            parts.append(rec)
            size += int(rec.offsets[-1] - rec.offsets[0])
        elif isinstance(rec, Skipped):
            ids.append(rec.id)
            reason.append(f"skipped:{rec.reason}")
            length.append(0)
            keyval.append(math.nan)
            urls.append(None)
            claims.append(None)
            if page_urls is not None:
                page_urls.append(None)
            continue
        else:
            rows.append(len(ids))
            ids.append(rec.id)
            reason.append("")
            length.append(len(rec.text))
            keyval.append(keep_value(rec.meta.get(config.keep_field)) if config.keep == "field" else math.nan)
            if page_urls is not None:
                page_urls.append(json.dumps(rec.meta["url"]) if rec.meta and rec.meta.get("url") else None)
            if url_field is not None:  # as the local engine's read pass
                urls.append(record_key(rec.meta.get(url_field) or rec.meta.get("url"), url_rules))
                claims.append(claim_key(rec.meta, url_rules))
            if parts and type(parts[-1]) is list:
                parts[-1].append(rec.text)
            else:
                parts.append([rec.text])
            size += len(rec.text)
        if size >= SKETCH_BATCH_BYTES:
            flush()
    flush()

    n = len(ids)
    fps = np.zeros(n, dtype=np.int64)
    cnt = np.zeros(n, dtype=np.int64)
    for r, f, c in fp:
        fps[r], cnt[r] = f, c
    rows_a = np.concatenate(rows_l) if rows_l else np.empty(0, np.int64)
    counts = np.concatenate(counts_l) if counts_l else np.empty(0, np.int64)
    offs = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=offs[1:])
    write_array(out + ".rows.npy", rows_a)
    if want_ids:
        write_pieces(out + ".ids.npy", ids_l, np.uint64)
        write_array(out + ".offs.npy", offs)
    if want_sig:
        keys = np.concatenate(bands_l) if bands_l else np.empty((0, band.bands), np.uint64)
        write_array(out + ".bands.npy", np.ascontiguousarray(keys.T))
    table = pa.table({"id": pa.array(ids, pa.string()), "reason": pa.array(reason, pa.string()),
                      "length": pa.array(length, pa.int64()), "keyval": pa.array(keyval, pa.float64()),
                      "fp": pa.array(fps), "n": pa.array(cnt),
                      **({"url": pa.array(urls, pa.string()), "claim": pa.array(claims, pa.string())}
                         if url_field is not None else {}),
                      **({"page_url": pa.array(page_urls, pa.string())} if page_urls is not None else {})})
    tmp = f"{out}.cols.arrow.part-{os.getpid()}"
    feather.write_feather(table, tmp, compression="uncompressed")
    os.replace(tmp, out + ".cols.arrow")  # last: the shard is done
    return n


class ShardIds:
    """The sorted distinct shingle ids of sketched records, by ordinal, read memory-mapped from
    the shards' files: only the runs asked for are paged in."""

    def __init__(self, prefix_of, bases: np.ndarray):
        self.prefix_of = prefix_of  # shard -> the path prefix of its files
        self.bases = bases  # the first ordinal of each shard, and the total at the end
        self._open: dict = {}

    def _shard(self, s: int):
        got = self._open.get(s)
        if got is None:
            p = self.prefix_of(s)
            got = self._open[s] = (mapped(p + ".rows.npy"), mapped(p + ".ids.npy"), mapped(p + ".offs.npy"))
        return got

    def runs(self, ordinals: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(ids, offsets, counts)`` of the records ``ordinals`` (each one sketched), in that order."""
        ordinals = np.asarray(ordinals, dtype=np.int64)
        shard = np.searchsorted(self.bases, ordinals, side="right") - 1
        counts = np.zeros(ordinals.size, dtype=np.int64)
        pieces: list = [None] * ordinals.size
        for s in np.unique(shard).tolist():
            at = np.flatnonzero(shard == s)
            rows, ids, offs = self._shard(s)
            local = np.searchsorted(rows, ordinals[at] - self.bases[s])
            if not np.array_equal(rows[np.minimum(local, rows.size - 1)], ordinals[at] - self.bases[s]):
                raise RuntimeError("internal error: a record without shingle ids was asked for its ids")
            lo, hi = offs[local], offs[local + 1]
            counts[at] = hi - lo
            for q, a, b in zip(at.tolist(), lo.tolist(), hi.tolist()):
                pieces[q] = ids[a:b]
        offsets = np.zeros(ordinals.size + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        flat = np.concatenate(pieces) if pieces else np.empty(0, np.uint64)
        return np.ascontiguousarray(flat, dtype=np.uint64), offsets, counts
