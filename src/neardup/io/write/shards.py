"""The kept corpus as shards: names, compression, and the writers that split records among them.

    kept.jsonl                          one file (the default), compressed like the input:
    kept.jsonl.gz / kept.jsonl.zst      kept.jsonl.gz for .jsonl.gz input, and so on
    kept.parquet                        Parquet in, Parquet out (the input's codec)
    kept-00000-of-00004.jsonl.zst       --output-shards 4 (--compression zstd)
    kept-00000-of-00013.parquet         --shard-size 256MB: a shard closes once it holds that many
                                        bytes of records (uncompressed JSONL lines, or Arrow's
                                        in-memory size for Parquet), so every shard but the last
                                        is at least that large and at most one record larger

With ``--output-shards N``, shard ``i`` holds the kept records ``i*K//N`` to ``(i+1)*K//N - 1``
(K kept records, in input order): shards differ in size by at most one record, and there are
always N files (an empty shard is an empty file, or a Parquet file with the schema and no rows).

Every shard is written under a temporary name and moved into place when complete; with a
:class:`~neardup.io.write.runfolder.RunFolder`, the completed shards are recorded (``kept.json``) so
that a resumed run starts at the first incomplete one. Compressed shards are deterministic
(gzip without a time stamp, zstd at level 3), so a resumed run's shards are byte-identical.
"""

from __future__ import annotations

import gzip
import os
import re
from dataclasses import dataclass

import numpy as np

from ...errors import ConfigError, require
from ..read.compression import compression_of
from ..read.sources import open_binary  # standard input and pipes: their one copy; URLs: fsspec
from .checkpoints import reached

__all__ = ["KeptLayout", "COMPRESSIONS", "parse_size", "sniff_compression", "extension_of"]

COMPRESSIONS = ("auto", "zstd", "gzip", "none")
_JSONL_SUFFIX = {"zstd": ".zst", "gzip": ".gz", "none": ""}


def parse_size(text: str) -> int:
    """Bytes in ``256MB``, ``1.5GiB``, ``64k``, ``1000`` (K/M/G/T are powers of 1024, as ``ls -h``)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*", str(text), re.IGNORECASE)
    if not m:
        raise ConfigError(f"--shard-size must be a size such as 256MB, 2GB or 100000, got {text!r}")
    value = float(m.group(1)) * 1024 ** " kmgt".index(m.group(2).lower() or " ")
    if value < 1:
        raise ConfigError(f"--shard-size must be at least 1 byte, got {text!r}")
    return int(value)


@dataclass(frozen=True)
class KeptLayout:
    """How the kept corpus is written: ``shards`` files, or shards of ``shard_bytes``, compressed
    with ``compression`` (``auto``: like the input)."""

    shards: int | None = None
    shard_bytes: int | None = None
    compression: str = "auto"

    def __post_init__(self):
        if self.shards is not None and self.shard_bytes is not None:
            raise ConfigError("--output-shards and --shard-size cannot be used together: choose one")
        if self.shards is not None and self.shards < 1:
            raise ConfigError(f"--output-shards must be at least 1, got {self.shards}")
        if self.compression not in COMPRESSIONS:
            raise ConfigError(f"--compression must be one of {', '.join(COMPRESSIONS)}, got {self.compression!r}")

    def as_dict(self) -> dict:
        return {"shards": self.shards, "shard_bytes": self.shard_bytes, "compression": self.compression}

    @classmethod
    def from_options(cls, options) -> "KeptLayout":
        """The layout that ``dedup``'s ``--output-shards``, ``--shard-size`` and ``--compression``
        name (``options`` is their parsed namespace); every engine's command line reads it here."""
        return cls(shards=options.output_shards,
                   shard_bytes=parse_size(options.shard_size) if options.shard_size is not None else None,
                   compression=options.compression)


def sniff_compression(paths) -> str:
    """``gzip``, ``zstd`` or ``none``: the compression all of ``paths`` share (by magic number),
    ``none`` when they differ or cannot be opened."""
    kinds = set()
    for path in paths:
        try:
            with open_binary(path, buffering=0) as fh:
                magic = fh.read(4)
        except (OSError, ImportError, ValueError):
            return "none"
        kinds.add({"gzip": "gzip", "zstd": "zstd"}.get(compression_of(magic), "none"))
    return kinds.pop() if len(kinds) == 1 else "none"


def extension_of(fmt: str, compression: str) -> str:
    return "parquet" if fmt == "parquet" else "jsonl" + _JSONL_SUFFIX[compression]


class ShardNames:
    """The file names of the shards, while they are written and once their number is known."""

    def __init__(self, layout: KeptLayout, ext: str):
        self.layout, self.ext = layout, ext

    @property
    def single(self) -> bool:
        return self.layout.shards is None and self.layout.shard_bytes is None

    def writing(self, i: int) -> str:
        if self.single:
            return f"kept.{self.ext}"
        if self.layout.shards is not None:
            return self.final(i, self.layout.shards)
        return f"kept-{i:05d}.{self.ext}"  # renamed by final() once the count is known

    def final(self, i: int, n: int) -> str:
        if self.single:
            return f"kept.{self.ext}"
        return f"kept-{i:05d}-of-{n:05d}.{self.ext}"


class Places:
    """Where shard files are written and committed: a run's work folder (``partial/`` then
    ``staged/``, recorded in ``kept.json``), or, without one, the output folder itself (a hidden
    temporary name, then renamed)."""

    def __init__(self, out_dir: str, run=None):
        self.out_dir, self.run = out_dir, run

    def partial(self, name: str) -> str:
        return self.run.partial_file(name) if self.run else os.path.join(self.out_dir, f".partial-{name}")

    def committed(self, name: str) -> str:
        return self.run.staged_file(name) if self.run else os.path.join(self.out_dir, name)

    def commit(self, name: str) -> None:
        if self.run:
            self.run.stage_file(name)
        else:
            os.replace(self.partial(name), self.committed(name))

    def discard(self, name: str) -> None:
        try:
            os.remove(self.partial(name))
        except OSError:
            pass

    def manifest(self):
        return (self.run.read_json("kept.json") if self.run else None) or {"done": [], "kept_index": 0}

    def record(self, manifest: dict) -> None:
        if self.run:
            self.run.write_json("kept.json", manifest)


class ShardedOutput:
    """Records in input order, split among shards (the rotation shared by both formats).

    ``total``: the number of kept records (needed for ``shards=N``). Subclasses open, write and
    close one shard's file; this class decides where each shard ends and records the completed
    ones. ``manifest["kept_index"]`` is the number of kept records in the completed shards.
    """

    def __init__(self, layout: KeptLayout, names: ShardNames, places: Places, total: int | None):
        self.layout, self.names, self.places, self.total = layout, names, places, total
        if layout.shards is not None and total is None:
            raise ConfigError("--output-shards needs the keep decisions as an array (the number of kept records)")
        self.manifest = places.manifest()
        self.i = len(self.manifest["done"])
        self.index = self.manifest["kept_index"]  # kept records before the current shard's end
        self.records = 0  # in the current shard
        self.nbytes = 0
        self.count = 0  # written by this process
        self.fh = None

    # the current shard's bounds
    def _end(self) -> int | None:
        n = self.layout.shards
        return None if n is None else (self.i + 1) * self.total // n

    def room(self) -> tuple[float, float]:
        """Records and bytes the current shard may still take before it closes."""
        end = self._end()
        recs = float("inf") if end is None else end - self.index
        size = float("inf") if self.layout.shard_bytes is None else self.layout.shard_bytes - self.nbytes
        return recs, size

    @property
    def current_path(self) -> str:
        """The file being written now (named by an error's message)."""
        return self.places.partial(self.names.writing(self.i))

    def _ensure_open(self):
        if self.fh is None:
            self.fh = self.open_shard(self.places.partial(self.names.writing(self.i)))

    def wrote(self, records: int, nbytes: int) -> None:
        self.index += records
        self.records += records
        self.nbytes += nbytes
        self.count += records
        self._rotate_if_full()

    def _rotate_if_full(self):
        recs, size = self.room()
        last = self.layout.shards is not None and self.i >= self.layout.shards - 1
        while not last and (recs <= 0 or size <= 0) and not self.names.single:
            self._close_shard()
            recs, size = self.room()
            last = self.layout.shards is not None and self.i >= self.layout.shards - 1

    def _close_shard(self):
        self._ensure_open()
        name = self.names.writing(self.i)
        self.close_file(self.fh)
        self.fh = None
        self.places.commit(name)
        self.manifest["done"].append({"name": name, "records": self.records, "bytes": self.nbytes})
        self.manifest["kept_index"] = self.index
        self.places.record(self.manifest)
        self.i += 1
        self.records = self.nbytes = 0
        reached(f"kept-shard-{self.i}")

    def finish(self) -> list[str]:
        """Close the last shard (and the empty ones N shards call for); the final file names."""
        if self.manifest.get("final"):
            return self.manifest["final"]
        if self.layout.shard_bytes is not None and self.i > 0 and self.records == 0:
            if self.fh is not None:  # an empty shard after the last full one: not kept
                self.close_file(self.fh)
                self.fh = None
                self.places.discard(self.names.writing(self.i))
        elif self.layout.shards is None and not (self.names.single and self.i > 0):
            self._close_shard()
        # (a run killed after its last shard was recorded, before "final" was: on resume every
        # shard is done, and none may be closed again, which would replace the one kept.jsonl by
        # an empty file or add an empty N+1th shard)
        if self.layout.shards is not None:
            while self.i < self.layout.shards:
                self._close_shard()
        done = self.manifest["done"]
        final = [self.names.final(k, len(done)) for k in range(len(done))]
        for entry, name in zip(done, final):
            if entry["name"] != name and os.path.exists(self.places.committed(entry["name"])):
                os.replace(self.places.committed(entry["name"]), self.places.committed(name))
        self.manifest["final"] = final
        self.places.record(self.manifest)
        return final

    def abort(self):
        if self.fh is not None:
            try:
                self.close_file(self.fh)
            except Exception:  # noqa: BLE001 - the first error is the one to report
                pass
            self.fh = None
            self.places.discard(self.names.writing(self.i))

    # to be provided by the format
    def open_shard(self, path: str):
        raise NotImplementedError

    def close_file(self, fh) -> None:
        raise NotImplementedError


class _GzipFile:
    """A gzip stream without the time stamp and file name gzip.open puts in its header, so that
    the same records give the same bytes on every run."""

    def __init__(self, path: str):
        self.raw = open(path, "wb")
        self.gz = gzip.GzipFile(filename="", mode="wb", fileobj=self.raw, compresslevel=6, mtime=0)
        self.write = self.gz.write

    def close(self):
        self.gz.close()
        self.raw.close()


def zstd_stream_writer(raw, *, closefd: bool):
    """A zstd stream (level 3) onto the binary file ``raw``, compressed on every core: the kept
    corpus is most of a run's output, and one core compressing it was the longest part of a
    large run's writing. zstd's multi-threaded mode gives the same bytes whatever the number of
    workers, so the outputs do not depend on the machine."""
    zstd = require("zstandard", "io")
    return zstd.ZstdCompressor(level=3, threads=-1).stream_writer(raw, closefd=closefd)


class _ZstdFile:
    def __init__(self, path: str):
        self.raw = open(path, "wb")
        self.zw = zstd_stream_writer(self.raw, closefd=False)
        self.write = self.zw.write

    def close(self):
        self.zw.close()
        self.raw.close()


class _PlainFile:
    def __init__(self, path: str):
        self.raw = open(path, "wb", buffering=1 << 20)
        self.write = self.raw.write

    def close(self):
        self.raw.close()


class JsonlShards(ShardedOutput):
    """JSONL lines into shards; the methods of :class:`~neardup.io.write.kept.JsonlWriter` that
    :func:`~neardup.io.write.kept.write_kept` uses."""

    def __init__(self, layout, names, places, total, compression: str):
        super().__init__(layout, names, places, total)
        self.compression = compression

    def open_shard(self, path):
        return {"gzip": _GzipFile, "zstd": _ZstdFile, "none": _PlainFile}[self.compression](path)

    def close_file(self, fh):
        fh.close()

    def write_raw(self, line: bytes) -> None:
        self.write_raw_lines(line if line[-1:] == b"\n" else line + b"\n", 1)

    def write_raw_lines(self, data, lines: int) -> None:
        """``lines`` whole lines, each ending in a newline, split where a shard closes."""
        while lines:
            self._rotate_if_full()  # past empty shards (more shards than records)
            self._ensure_open()
            recs, size = self.room()
            n = len(data)
            if lines <= recs and n < size:
                self.fh.write(data)
                self.wrote(lines, n)
                return
            ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 0x0A) + 1
            take = lines if lines <= recs else int(recs)
            if n >= size:  # the first line that reaches the size closes the shard
                take = min(take, int(np.searchsorted(ends, size, side="left")) + 1)
            cut = int(ends[take - 1])
            with memoryview(data) as whole:
                self.fh.write(whole[:cut])
                rest = bytes(whole[cut:])
            self.wrote(take, cut)
            data, lines = rest, lines - take


class ParquetShards(ShardedOutput):
    """Arrow record batches into Parquet shards of one schema and codec. Batches are gathered up
    to ``flush_bytes`` and written as one table (its row groups); a shard's end flushes, so each
    shard's row groups depend only on its own records."""

    def __init__(self, layout, names, places, total, schema, compression: str, flush_bytes: int):
        super().__init__(layout, names, places, total)
        self.schema, self.compression, self.flush_bytes = schema, compression, flush_bytes
        self.pending: list = []
        self.pending_bytes = 0

    def open_shard(self, path):
        pq = require("pyarrow.parquet", "io")
        return pq.ParquetWriter(path, self.schema, compression=self.compression)

    def _flush(self):
        if self.pending:
            pa = require("pyarrow", "io")
            self.fh.write_table(pa.Table.from_batches(self.pending, schema=self.schema))
            self.pending, self.pending_bytes = [], 0

    def close_file(self, fh):
        self._flush()
        fh.close()

    def write_batch(self, batch) -> None:
        while batch.num_rows:
            self._rotate_if_full()
            self._ensure_open()
            recs, size = self.room()
            take = batch.num_rows if batch.num_rows <= recs else int(recs)
            part = batch if take == batch.num_rows else batch.slice(0, take)
            if part.nbytes >= size and take > 1:  # the first rows that reach the size close the shard
                row_bytes = max(1, part.nbytes // take)
                take = max(1, min(take, -(-int(size) // row_bytes)))
                part = batch.slice(0, take)
            self.pending.append(part)
            self.pending_bytes += part.nbytes
            if self.pending_bytes >= self.flush_bytes:
                self._flush()
            self.wrote(take, part.nbytes)
            batch = batch.slice(take)
