"""The planner's sample: records spread over each input in proportion to its size, and the
estimate of the input's records from it (see :mod:`neardup.plan`, step 1)."""

from __future__ import annotations

import io
import math
import os
from dataclasses import dataclass, field

from ..config import DedupConfig
from ..errors import ConfigError, InputError, require
from ..io.read import input_leaves, open_parquet, plan_inputs
from ..io.read.compression import MAGIC_BYTES, compression_of, decompressor
from ..io.read.sources import STDIN_NAMES

__all__ = ["DEFAULT_SAMPLE_RECORDS", "InputSample", "Sample", "codec_of", "sample_inputs"]

#: Records sampled by default: about two seconds of the engine on two cores, and enough pairs
#: on corpora with a few per cent of copies for their count to be known within some per cent.
DEFAULT_SAMPLE_RECORDS = 100_000
#: Pieces an uncompressed file is sampled in: enough for spread, few enough that copies next to
#: each other are rarely cut apart at a piece's ends.
PIECES = 64
#: Smallest sampled piece, in bytes (the read at a random offset loses the part line before it).
MIN_PIECE_BYTES = 64 << 10


@dataclass
class InputSample:
    """What was read of one input: its pieces (JSONL: bytes of whole lines; Parquet: tables),
    the records of each, and the estimate of the input's records."""

    path: str
    format: str
    how: str  # "spread", "prefix" or "whole"
    codec: str | None  # "gzip", "zstd", "bz2", "xz" or None
    input_bytes: int
    pieces: list = field(default_factory=list)
    piece_records: list[int] = field(default_factory=list)
    piece_bytes: list[int] = field(default_factory=list)  # bytes of the input each piece stands for
    records_estimated: float = 0.0
    records_low: float = 0.0
    records_high: float = 0.0

    @property
    def records(self) -> int:
        return sum(self.piece_records)


@dataclass
class Sample:
    inputs: list[InputSample]

    @property
    def records(self) -> int:
        return sum(s.records for s in self.inputs)

    @property
    def documents(self) -> float:
        return sum(s.records_estimated for s in self.inputs)

    @property
    def input_bytes(self) -> int:
        return sum(s.input_bytes for s in self.inputs)

    def write(self, folder: str, *, every: int = 1, limit: int | None = None) -> tuple[list[str], int]:
        """Write the sample's pieces (every ``every``-th one, or the first ``limit`` records) as
        files of each input's format and compression; returns the paths and the records written."""
        os.makedirs(folder, exist_ok=True)
        paths, total = [], 0
        for k, s in enumerate(self.inputs):
            chosen, n = [], 0
            for j, (piece, count) in enumerate(zip(s.pieces, s.piece_records)):
                if j % every:
                    continue
                if limit is not None and total + n >= limit:
                    break
                chosen.append(piece)
                n += count
            if not chosen:
                continue
            base = os.path.basename(s.path)
            path = os.path.join(folder, f"{k:04d}-{base}")
            if s.format == "parquet":
                import pyarrow as pa
                import pyarrow.parquet as pq

                pq.write_table(pa.concat_tables(chosen), path)
            else:
                with _open_for_writing(path, s.codec) as fh:
                    for piece in chosen:
                        fh.write(piece)
            paths.append(path)
            total += n
        return paths, total


def codec_of(path: str) -> str | None:
    """The compression of the file at ``path`` by its magic number (None: not compressed)."""
    with open(path, "rb") as fh:
        return compression_of(fh.read(MAGIC_BYTES))


def _open_for_writing(path: str, codec: str | None):
    """A file written in ``codec``, so that the sample is read (and decompressed) as the input is."""
    if codec == "gzip":
        import gzip

        return gzip.open(path, "wb", compresslevel=6)
    if codec == "bz2":
        import bz2

        return bz2.open(path, "wb")
    if codec == "xz":
        import lzma

        return lzma.open(path, "wb")
    if codec == "zstd":
        zstd = require("zstandard", "io")
        return zstd.ZstdCompressor(level=3).stream_writer(open(path, "wb"), closefd=True)
    return open(path, "wb")


def _decompressing(raw, codec: str):
    """A stream of the decompressed lines of ``raw``; ``raw.tell()`` says how much it consumed."""
    stream = decompressor(raw, codec)
    return io.BufferedReader(stream, 1 << 20) if codec == "zstd" else stream


def _density_range(counts: list[int], nbytes: list[int], total_bytes: int) -> tuple[float, float, float]:
    """Records in ``total_bytes`` from pieces of ``counts`` records in ``nbytes`` bytes: the
    estimate and two standard errors either side (the pieces' spread of records per byte)."""
    n, b = sum(counts), sum(nbytes)
    if not b:
        return 0.0, 0.0, 0.0
    est = total_bytes * n / b
    if len(counts) < 2:
        return est, est * 0.5, est * 1.5
    dens = [c / x for c, x in zip(counts, nbytes) if x]
    mean = sum(dens) / len(dens)
    sd = math.sqrt(sum((d - mean) ** 2 for d in dens) / (len(dens) - 1))
    se = 2 * sd / math.sqrt(len(dens)) / mean if mean else 0.0
    return est, est * (1 - se), est * (1 + se)


def _sample_jsonl(path: str, size: int, target: int) -> InputSample:
    codec = codec_of(path)
    s = InputSample(path=path, format="jsonl", how="", codec=codec, input_bytes=size)
    if codec is not None:
        return _sample_stream_prefix(s, target)
    with open(path, "rb") as fh:
        head = fh.read(1 << 20)
        per_record = len(head) / max(1, head.count(b"\n")) if head else 1.0
        want = target * per_record
        if want >= size * 0.7:
            fh.seek(0)
            data = fh.read()
            s.how = "whole"
            s.pieces = [data]
            s.piece_records = [_lines(data)]
            s.piece_bytes = [size]
            s.records_estimated = s.records_low = s.records_high = float(s.records)
            return s
        s.how = "spread"
        # fewer pieces for a small share rather than pieces too small to hold their copies
        count = int(min(PIECES, max(1, want // MIN_PIECE_BYTES)))
        piece = int(want / count)
        stride = size / count
        for j in range(count):
            at = int(j * stride)
            fh.seek(at)
            if at:
                fh.readline()  # the part of a line before the next record boundary
            start = fh.tell()
            data = fh.read(piece)
            if data and not data.endswith(b"\n"):
                data += fh.readline()  # to the end of the last record
            if not data:
                continue
            if not data.endswith(b"\n"):
                data += b"\n"
            s.pieces.append(data)
            s.piece_records.append(_lines(data))
            s.piece_bytes.append(fh.tell() - start)
    s.records_estimated, s.records_low, s.records_high = _density_range(s.piece_records, s.piece_bytes, size)
    return s


def _lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _sample_stream_prefix(s: InputSample, target: int) -> InputSample:
    """The first ``target`` records of a compressed file, in 16 pieces; the file's records are
    estimated by the compressed bytes the sample consumed."""
    per_piece = max(1, math.ceil(target / 16))
    with open(s.path, "rb") as raw:
        stream = _decompressing(raw, s.codec)
        ended = False
        consumed = 0
        while len(s.pieces) < 16:
            lines = []
            for _ in range(per_piece):
                line = stream.readline()
                if not line:
                    ended = True
                    break
                lines.append(line if line.endswith(b"\n") else line + b"\n")
            if lines:
                s.pieces.append(b"".join(lines))
                s.piece_records.append(len(lines))
                now = s.input_bytes if ended else raw.tell()
                s.piece_bytes.append(max(1, now - consumed))
                consumed = now
            if ended:
                break
    if ended:
        s.how = "whole"
        s.records_estimated = s.records_low = s.records_high = float(s.records)
    else:
        # the decompressor reads ahead of what it gave: at most its buffer, small against the sample
        s.how = "prefix"
        s.records_estimated, s.records_low, s.records_high = _density_range(s.piece_records, s.piece_bytes,
                                                                            s.input_bytes)
    return s


def _sample_parquet(path: str, size: int, target: int) -> InputSample:
    pf, rows = open_parquet(path)
    if pf is None:
        raise InputError(f"{path}: {rows}")
    s = InputSample(path=path, format="parquet", how="", codec=None, input_bytes=size)
    s.records_estimated = s.records_low = s.records_high = float(rows)
    groups = pf.metadata.num_row_groups
    if rows <= target or groups == 0:
        s.how = "whole"
        chosen = list(range(groups))
    else:
        s.how = "spread"
        want = min(groups, PIECES)
        chosen = sorted({int(j * groups / want) for j in range(want)})
    left = target
    for g in chosen:
        table = pf.read_row_group(g)
        if s.how == "spread":
            # a slice from the middle of the group, of its share of the sample
            take = max(1, min(table.num_rows, math.ceil(target / len(chosen))))
            table = table.slice((table.num_rows - take) // 2, take)
        s.pieces.append(table)
        s.piece_records.append(table.num_rows)
        s.piece_bytes.append(0)
        left -= table.num_rows
    return s


def sample_inputs(paths: list[str], config: DedupConfig, records: int = DEFAULT_SAMPLE_RECORDS) -> Sample:
    """A sample of about ``records`` records spread over ``paths``, each input's share in
    proportion to its bytes. JSONL (plain, gzip, zstd) and Parquet files are sampled; other
    inputs are refused with the reason."""
    for path in paths:
        if path in STDIN_NAMES:
            raise ConfigError("neardup plan samples files, not standard input: save it to a file first")
        if "://" in path and not path.startswith("file://"):
            raise ConfigError(f"{path}: neardup plan samples local files; copy a part of it here and plan that")
    leaves = []
    for path, fmt, why in input_leaves(plan_inputs(paths, config.format)):
        if why is not None:
            raise InputError(f"{path}: {why}")
        if fmt not in ("jsonl", "parquet"):
            raise ConfigError(f"{path}: neardup plan samples JSONL and Parquet inputs; this one is read as {fmt} "
                              f"(run neardup dedup on a part of it instead)")
        leaves.append((path, fmt, os.path.getsize(path)))
    if not leaves:
        raise InputError("no input files to plan for (the folders are empty)")
    total = sum(size for _, _, size in leaves) or 1
    out = []
    for path, fmt, size in leaves:
        share = max(1, math.ceil(records * size / total))
        out.append(_sample_parquet(path, size, share) if fmt == "parquet" else _sample_jsonl(path, size, share))
    return Sample(out)
