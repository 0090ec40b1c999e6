"""The local engine's disk check: what a run writes to its work folder, estimated before it
starts from the first MB of each input (a bound) or a small sample of it (an estimate), so that a
run that cannot fit is refused at once rather than stopped by a full disk."""

from __future__ import annotations

import os

import orjson

from ...config import DedupConfig
from ...errors import ConfigError, InputError
from ...plan.sample import codec_of, sample_inputs
from ...stages.sketch import shingle_runs

__all__ = ["CANDIDATE_SHARE", "CHECK_SAMPLE_RECORDS", "PER_RECORD_BYTES", "ids_kept_fraction",
           "signature_value_bytes", "work_disk_bound", "work_disk_estimate"]

#: Records a run samples to estimate its work folder before it starts (a few MB read, a few ms
#: of sketching: the check costs a run of the benchmark corpus no measurable time).
CHECK_SAMPLE_RECORDS = 2_000
#: Bytes a record adds to the work folder besides its shingle ids and signature: its band keys
#: in the grouping's partition files past the budget (key and row, 16 bytes a band), the saved
#: stages' per-record arrays, and clusters.jsonl (measured on benchmarks/scale.py's corpora:
#: about 400 bytes a record at 18 bands).
PER_RECORD_BYTES = 400


#: The share of a MinHash run's documents whose shingle ids its work folder may hold: those in
#: candidate pairs, made again by a second read of the input (local files; about a tenth on
#: benchmarks/scale.py's corpora with 5 % planted copies). A corpus whose candidate pairs cover more
#: may need more disk than the check counts; the run then stops with the disk full, resumable.
CANDIDATE_SHARE = 0.25


def keeps_shingle_ids(config: DedupConfig) -> bool:
    """Whether a run keeps its documents' shingle ids: an exact run needs none, unless URL
    identity joins different records, whose similarity to their survivor ``clusters.jsonl``
    gives (as the Spark and Ray engines measure it)."""
    return config.method != "exact" or config.url_field is not None


def ids_kept_fraction(config: DedupConfig) -> float:
    """The share of documents whose shingle ids the work folder holds: :data:`CANDIDATE_SHARE`
    for a MinHash run (the check runs for local files only, which the run reads twice), every
    document for the other methods (their first pass keeps them all), none for exact."""
    if not keeps_shingle_ids(config):
        return 0.0
    return CANDIDATE_SHARE if config.method == "minhash" and config.keep != "source" and config.source_field is None else 1.0


def signature_value_bytes(config: DedupConfig) -> int:
    """Bytes a signature value takes in the work folder: 4 for the 32-bit family (the default;
    the local engine keeps its values as uint32), else 8. (A run with an index keeps uint64
    values: :func:`work_disk_bound` counts 8 for every family, as the bound it is.)"""
    return 4 if config.minhash.family == "mulshift32" else 8


def work_disk_bound(paths: list[str], config: DedupConfig) -> int | None:
    """An upper bound of what :func:`work_disk_estimate` can give, read from the first MB of each
    uncompressed JSONL file (its lines give the records): a shingle id per two input bytes at
    most (a word and its separator), each record's signature and :data:`PER_RECORD_BYTES`, and
    the kept corpus. None where it cannot be bounded so cheaply (compressed or other inputs)."""
    total = 0
    perm = config.minhash.num_perm if config.method == "minhash" else 0
    per_byte = 4 if keeps_shingle_ids(config) else 0
    for path in paths:
        # a folder (a dataset) or a special file is not bounded here: isfile first, before it is opened
        if not os.path.isfile(path) or path.endswith((".parquet", ".pq")) or codec_of(path) is not None:
            return None
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            head = fh.read(1 << 20)
        records = size * max(1, head.count(b"\n")) / max(1, len(head))
        total += int(per_byte * size + records * (8 * perm + PER_RECORD_BYTES) + size)
    return total


def work_disk_estimate(paths, config: DedupConfig) -> dict | None:
    """A quick estimate of what a run writes to its work folder, from a small sample of the input
    (JSONL or Parquet files; None for other inputs): every record's shingle ids and signature
    (the saved sketch stage holds them all, held or spilled), its band keys past the budget and
    its rows in the saved stages; the kept corpus is counted at the input's size. What
    :func:`neardup.plan.plan` predicts with measured runs, without them, so that ``neardup dedup`` can refuse
    a run that cannot fit before it starts."""
    try:
        sample = sample_inputs(paths, config, records=CHECK_SAMPLE_RECORDS)
    except (ConfigError, InputError, OSError, ValueError):
        return None
    texts = []
    for s in sample.inputs:
        for piece in s.pieces:
            if s.format == "parquet":
                if config.text_field in piece.column_names:
                    texts += [t for t in piece.column(config.text_field).to_pylist() if isinstance(t, str)]
                continue
            for line in piece.splitlines():
                try:
                    rec = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                text = rec.get(config.text_field) if isinstance(rec, dict) else None
                if isinstance(text, str):
                    texts.append(text)
    records = sample.documents
    if not texts or not records:
        return None
    _, offsets = shingle_runs(texts, config.shingle)
    shingles = float(offsets[-1]) / len(texts)
    perm = config.minhash.num_perm if config.method == "minhash" else 0
    per_record = (8 * shingles * ids_kept_fraction(config) + signature_value_bytes(config) * perm
                  + PER_RECORD_BYTES)
    input_bytes = sample.input_bytes
    return {"records": records, "shingles_per_record": shingles, "bytes_per_record": per_record,
            "work_bytes": int(records * per_record), "kept_bytes": int(input_bytes),
            "total_bytes": int(records * per_record + input_bytes)}
