"""Predict a dedup run from a sample of its input: documents, pairs, memory, spill disk and time.

    from neardup.plan import plan
    p = plan(["crawl.jsonl"], DedupConfig(), sample_records=100_000)
    p["documents"], p["candidate_pairs"], p["peak_memory_mb"], p["spill_bytes"], p["seconds"]

How (nothing here is a per-document constant: every cost is measured on this machine, with the
engine as it is installed, so the prediction follows the engine when it changes):

1. **Sample.** Records spread over each input, in proportion to its size: an uncompressed JSONL
   file is read at evenly spaced offsets (each read resynchronised to the next line), a
   compressed one (gzip, zstd, bzip2, xz) as a prefix of its stream (it cannot be entered in the middle;
   the rest is assumed to look like its beginning), a Parquet file as evenly spaced row slices.
   The total record count is estimated from bytes: the sample's records per byte, times the
   file's bytes (for a compressed file, per compressed byte consumed), exact for Parquet (its
   footer) and for a file read whole.
2. **Measure.** The local engine (:class:`neardup.pipeline.Deduplicator`, the one ``neardup
   dedup`` runs) runs on nested samples (the whole sample; every other piece of it, half the
   size and spread the same way; and its first thousand records, for what a run costs before
   its records count), each with the same configuration and with
   ``in_memory_mb`` scaled by its fraction of the corpus, so that the share of the sketches that
   spills is the full run's. Each run is a new process (``python -m neardup.plan``, as ``neardup
   dedup`` is one): its peak resident memory (high-water mark), peak anonymous memory
   (sampled), its work folder's largest size on disk (the spill), its seconds and its candidate
   and verified pairs are recorded. A third run of the half sample with nothing held in memory
   (``in_memory_mb=0``) gives the bytes each record would hold, for the advice on
   ``--in-memory-mb``.
3. **Scale.** Documents and bytes linearly; memory by its parts (anonymous: a fixed cost, the
   per-record arrays, the sketches held within the budget, the grouping; resident: that plus the
   libraries' pages and the engine's bounded stretch of mapped spill, :class:`_FileBackedModel`);
   spill and time by a line through the smallest and the whole sample's runs (time: per document, plus the verification per
   candidate pair; the line through the half and the whole sample's runs gives the range); pairs by
   ``pairs(f) ~ f**e``, ``f`` being the sampled fraction: copies next to each other in the input
   (both in the same sampled piece) are found in proportion to ``f``, copies spread over the
   corpus in proportion to ``f**2``; the ratio of the two runs' counts gives ``e`` (within
   [1, 2]), which is reported (:func:`scale_pairs`). Ranges come from the counts' Poisson error
   (two standard deviations) and, for spill and time, from the two lines.
"""

from __future__ import annotations

import io
import math
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field

from .config import DedupConfig
from .errors import ConfigError, InputError, require
from .params import IN_MEMORY_MB

__all__ = ["plan", "sample_inputs", "scale_pairs", "measure", "measure_run", "Sample", "machine_facts", "process_age_seconds",
           "DEFAULT_SAMPLE_RECORDS"]

#: Records sampled by default: about two seconds of the engine on two cores, and enough pairs
#: on corpora with a few per cent of copies for their count to be known within some per cent.
DEFAULT_SAMPLE_RECORDS = 100_000
#: Pieces an uncompressed file is sampled in: enough for spread, few enough that copies next to
#: each other are rarely cut apart at a piece's ends.
PIECES = 64
#: Smallest sampled piece, in bytes (the read at a random offset loses the part line before it).
MIN_PIECE_BYTES = 64 << 10
#: Fewest records a plan samples: below a few of the engine's 2 MB batches its memory is lumpy.
MIN_SAMPLE_RECORDS = 4_000
#: Records of the smallest run: what a run costs before its records count (the interpreter, the
#: modules, the kernel and its thread pool, a batch in flight) is its cost.
TINY_RECORDS = 1_000
#: Share of the available memory a plan may use before it advises a smaller --in-memory-mb.
MEMORY_HEADROOM = 0.8
MIB = 1 << 20



# --------------------------------------------------------------------------- the sample


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


def _codec_of(path: str) -> str | None:
    from .io.readers import compression_of

    with open(path, "rb") as fh:
        return compression_of(fh.read(6))


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
    """A stream of the decompressed bytes of ``raw``; ``raw.tell()`` says how much it consumed."""
    if codec == "gzip":
        import gzip

        return gzip.GzipFile(fileobj=raw, mode="rb")
    if codec == "bz2":
        import bz2

        return bz2.BZ2File(raw, "rb")
    if codec == "xz":
        import lzma

        return lzma.LZMAFile(raw, "rb")
    zstd = require("zstandard", "io")
    return io.BufferedReader(zstd.ZstdDecompressor(max_window_size=2**31).stream_reader(raw, read_across_frames=True),
                             1 << 20)


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
    codec = _codec_of(path)
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
    from .io.readers import open_parquet

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
    from .io.readers import input_leaves, plan_inputs
    from .io.sources import STDIN_NAMES

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


# --------------------------------------------------------------------------- measuring a run


def _status_kb(*keys: str) -> dict[str, int]:
    """Fields of ``/proc/self/status`` in kB (0 where the platform has none)."""
    out = dict.fromkeys(keys, 0)
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key in out:
                    out[key] = int(value.split()[0])
    except OSError:
        pass
    return out


def _disk_bytes(top: str) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(top):
        for name in files:
            try:
                st = os.stat(os.path.join(dirpath, name))
            except OSError:
                continue  # removed while we looked
            total += max(st.st_size, getattr(st, "st_blocks", 0) * 512)
    return total


class _Watch:
    """While a run lasts, every few milliseconds: the largest size of its work folder, the
    largest anonymous resident memory (the process's own; no high-water mark exists for it),
    and, where the high-water mark cannot be reset, the largest resident size."""

    def __init__(self, folder: str):
        self.folder = folder
        self.peak_disk = 0
        self.peak_rss_kb = 0
        self.peak_anon_kb = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="neardup-plan-watch", daemon=True)

    def _loop(self) -> None:
        while True:
            self.peak_disk = max(self.peak_disk, _disk_bytes(self.folder))
            status = _status_kb("VmRSS", "RssAnon")
            self.peak_rss_kb = max(self.peak_rss_kb, status["VmRSS"])
            self.peak_anon_kb = max(self.peak_anon_kb, status["RssAnon"])
            if self.stop.wait(0.02):
                break

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def measure_run(paths: list[str], config: DedupConfig, *, jobs, in_memory_mb: float, write_kept: bool,
                scratch: str) -> dict:
    """Run the engine on ``paths`` in this process and say what it cost: its seconds, pairs, the
    process's peak resident memory (its high-water mark: meant for a process that does nothing
    else, as the one :func:`measure` starts), its peak anonymous memory (sampled every 20 ms),
    the largest size of its work folder on disk (the spill) and of its outputs."""
    import importlib

    from .pipeline import Deduplicator

    importlib.import_module("neardup.cli")  # what a neardup dedup process has loaded besides the engine

    out = tempfile.mkdtemp(prefix="out-", dir=scratch)
    work = tempfile.mkdtemp(prefix="work-", dir=scratch)
    try:
        before = _status_kb("VmRSS", "RssAnon")
        start = time.perf_counter()
        with _Watch(work) as watch:
            summary = Deduplicator(config, jobs=jobs, in_memory_mb=in_memory_mb, work_dir=work).run(
                paths, out, write_kept=write_kept)
        seconds = time.perf_counter() - start
        peak_kb = max(_status_kb("VmHWM")["VmHWM"], watch.peak_rss_kb)
        spill = max(watch.peak_disk, int(summary.get("spilled_mb", 0) * MIB))
        output_bytes = _disk_bytes(out)
        id_bytes = _mean_id_bytes(os.path.join(out, "clusters.jsonl"))
    finally:
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    stages = summary.get("seconds", {})
    return {"records": summary["input"], "seconds": seconds, "stages": stages,
            "verify_seconds": float(stages.get("verify", 0.0)),
            "candidate_pairs": summary["candidate_pairs"], "verified_pairs": summary["verified_pairs"],
            "exact_duplicates": summary["exact_duplicates"], "near_duplicates": summary["near_duplicates"],
            "peak_bytes": peak_kb * 1024,
            # sampled, it can miss the peak by a little; it cannot exceed the resident peak
            "peak_anonymous_bytes": min(peak_kb, watch.peak_anon_kb) * 1024,
            "before_run_bytes": before["VmRSS"] * 1024, "before_run_anonymous_bytes": before["RssAnon"] * 1024,
            "spill_bytes": spill, "output_bytes": output_bytes, "in_memory_mb": in_memory_mb,
            "id_bytes_per_record": id_bytes}


def _mean_id_bytes(clusters_path: str) -> float | None:
    """Mean UTF-8 bytes of the record ids in a run's ``clusters.jsonl`` (None without one)."""
    import json

    total = lines = 0
    try:
        with open(clusters_path, "rb") as fh:
            for line in fh:
                ident = json.loads(line).get("id")
                total += len(str(ident).encode("utf-8", "surrogatepass")) if ident is not None else 0
                lines += 1
    except OSError:
        return None
    return total / lines if lines else None


def measure(paths: list[str], config: DedupConfig, *, jobs, in_memory_mb: float, write_kept: bool,
            scratch: str) -> dict:
    """:func:`measure_run` in a new process (``python -m neardup.plan``), so that its memory is a
    ``neardup dedup`` process's: measured in a process that has run the engine before (this
    one, on another sample), the growth of a run came out about a third above a new process's on
    the same records (the allocator's state), and a new process's peak includes its start."""
    import pickle
    import subprocess
    import sys

    job = {"paths": paths, "config": config, "jobs": jobs, "in_memory_mb": in_memory_mb, "write_kept": write_kept,
           "scratch": scratch}
    done = subprocess.run([sys.executable, "-m", "neardup.plan"], input=pickle.dumps(job), capture_output=True,
                          env=dict(os.environ, TMPDIR=scratch))
    if done.returncode:
        last = (done.stderr.decode("utf-8", "replace").strip().splitlines() or ["(no message)"])[-1]
        raise InputError(f"the sample run failed: {last}")
    import json

    return json.loads(done.stdout)


# --------------------------------------------------------------------------- scaling


def _fit(n1: float, y1: float, n2: float, y2: float) -> tuple[float, float]:
    """``(intercept, slope)`` of the line through the two runs, both 0 or more (where noise made
    the larger run cheaper, no trend to trust: proportion to the larger run)."""
    if n2 > n1 and y2 >= y1:
        slope = (y2 - y1) / (n2 - n1)
        intercept = y1 - slope * n1
        if intercept >= 0:
            return intercept, slope
    return 0.0, (y2 / n2 if n2 else 0.0)


def _exponent(f1: float, p1: float, f2: float, p2: float) -> float:
    """The exponent ``e`` of ``pairs(f) ~ f**e`` through the two runs, kept within [1, 2]."""
    if p2 <= 0 or f2 <= f1:
        return 1.0
    if p1 <= 0:
        return 2.0
    return min(2.0, max(1.0, math.log(p2 / p1) / math.log(f2 / f1)))


def scale_pairs(f1: float, p1: int, f2: float, p2: int) -> dict:
    """Pairs of the whole corpus from ``p1`` and ``p2`` found in nested samples of fractions
    ``f1 < f2`` of it.

    Copies next to each other in the input (both in one sampled piece) are found in proportion
    to ``f``; copies spread over the corpus in proportion to ``f**2``. The exponent ``e`` of
    ``pairs(f) ~ f**e`` is read from the two counts (``log(p2/p1) / log(f2/f1)``, kept within
    [1, 2]) and the larger count scaled by ``(1/f2)**e``. A mix of both kinds scales between the
    two; the single exponent then under-predicts somewhat (it fits the mix at ``f2``), which the
    range covers when the counts are small. Returns ``predicted``, ``low`` and ``high`` (the
    counts' Poisson error, two standard deviations, carried through the exponent; a count of 0
    stands for up to 3, the "rule of three"), ``exponent`` and ``exponent_sd``.
    """
    if f2 >= 1.0:
        return {"predicted": float(p2), "low": float(p2), "high": float(p2), "exponent": None, "exponent_sd": None}
    e = _exponent(f1, p1, f2, p2)
    sd = (math.sqrt(1 / p1 + 1 / p2) / math.log(f2 / f1)) if p1 > 0 and p2 > 0 and f2 > f1 else 0.5
    up = 1 / f2
    low = max(0.0, p2 - 2 * math.sqrt(p2)) * up ** max(1.0, e - 2 * sd)
    high = (p2 + 2 * math.sqrt(p2) + (3 if p2 == 0 else 0)) * up ** min(2.0, e + 2 * sd if p2 else 2.0)
    predicted = p2 * up**e
    return {"predicted": predicted, "low": min(low, predicted), "high": max(high, predicted), "exponent": e,
            "exponent_sd": sd}


# --------------------------------------------------------------------------- the machine


def machine_facts(folder: str | None = None) -> dict:
    """Available memory (``MemAvailable``) and the free disk of the spill folder (``$TMPDIR``)."""
    from .cpus import available_cpus

    tmp = folder or tempfile.gettempdir()
    avail = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
    except OSError:
        pass
    if avail is None:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            avail = None
    return {"memory_available_mb": round(avail / MIB, 1) if avail else None, "tmpdir": tmp,
            "tmpdir_free_bytes": shutil.disk_usage(tmp).free, "cpus": available_cpus()}


def process_age_seconds() -> float | None:
    """Seconds since this process started (its interpreter start and imports, when asked early)."""
    try:
        with open("/proc/self/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        start_ticks = int(fields[19])
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


# --------------------------------------------------------------------------- the plan


def plan(paths: list[str], config: DedupConfig = DedupConfig(), *, jobs: int | None = None,
         in_memory_mb: float | None = None, sample_records: int = DEFAULT_SAMPLE_RECORDS, write_kept: bool = True,
         startup_seconds: float = 0.0, machine: dict | None = None, runs: dict | None = None) -> dict:
    """Predict the ``neardup dedup`` run of ``paths`` with ``config`` (see the module).

    Returns one dict: ``documents``, ``input_bytes``, ``candidate_pairs``, ``verified_pairs``,
    ``peak_memory_mb``, ``spill_bytes``, ``output_bytes``, ``seconds`` (predictions), ``ranges``
    (low and high of each), ``basis`` (how each was found), ``model`` (the pair model fitted),
    ``sample`` (what was read and run), ``runs`` (what the sample runs measured), ``machine``,
    ``warnings`` (spill over the free disk, memory over the available memory, with the
    ``--in-memory-mb`` to use: also in ``suggested_in_memory_mb``) and ``assumptions``.
    ``startup_seconds``: the interpreter start and imports of a ``neardup dedup`` process, added
    to the predicted time (the command line measures its own). ``machine``: the facts of
    :func:`machine_facts` to plan for (default: this machine's, now), for a machine with less
    memory or disk than this one. ``runs``: the ``runs`` of an earlier plan of the same inputs
    and options, to plan again (for another ``machine``) from those measurements instead of
    running the sample again: the same predictions, only the advice differs.
    """
    from .cpus import available_cpus

    if sample_records < MIN_SAMPLE_RECORDS:
        raise ConfigError(f"--sample-records must be at least {MIN_SAMPLE_RECORDS}, got {sample_records}")
    budget_mb = IN_MEMORY_MB if in_memory_mb is None else in_memory_mb
    jobs = max(1, jobs or available_cpus())
    # before the sample takes its own room in $TMPDIR
    machine = dict(machine_facts(), **(machine or {}))
    sample = sample_inputs(paths, config, sample_records)
    documents = sample.documents
    n_sample = sample.records
    if not n_sample or documents <= 0:
        raise InputError("the inputs hold no records")
    if runs is not None:
        start, small, large, unheld = (runs[k] for k in ("smallest", "half", "whole", "nothing_held"))
        half_how = small.get("how", "the half sample of the earlier plan")
        f0, f1, f2 = (run.get("fraction", min(1.0, run["records"] / documents)) for run in (start, small, large))
    else:
        start, small, large, unheld, half_how, (f0, f1, f2) = _sample_runs(sample, documents, config, jobs,
                                                                           budget_mb, write_kept)
    return _predict(sample, config, machine, budget_mb, jobs, startup_seconds, start, small, large, unheld,
                    half_how, f0, f1, f2)


def _sample_runs(sample, documents: int, config: DedupConfig, jobs: int, budget_mb: float, write_kept: bool):
    """The engine run on the sample's smallest part, half, whole, and half with nothing held:
    ``(smallest, half, whole, nothing_held, how the half was taken, (f0, f1, f2))``, each run's
    records as a fraction of the input's."""
    scratch = tempfile.mkdtemp(prefix="neardup-plan-")
    try:
        whole, n2 = sample.write(os.path.join(scratch, "sample"))
        half, n1 = sample.write(os.path.join(scratch, "half"), every=2)
        if n1 >= n2 or n1 == 0:  # one piece: its first records instead of every other piece
            half, n1 = sample.write(os.path.join(scratch, "half"), limit=max(1, n2 // 2))
            half_how = "the first half of the sample"
        else:
            half_how = "every other sampled piece"
        tiny, n0 = sample.write(os.path.join(scratch, "tiny"), limit=min(TINY_RECORDS, max(1, n2 // 10)))
        f0, f1, f2 = min(1.0, n0 / documents), min(1.0, n1 / documents), min(1.0, n2 / documents)
        start = measure(tiny, config, jobs=jobs, in_memory_mb=budget_mb * f0, write_kept=write_kept,
                        scratch=scratch)
        small = measure(half, config, jobs=jobs, in_memory_mb=budget_mb * f1, write_kept=write_kept,
                         scratch=scratch)
        large = measure(whole, config, jobs=jobs, in_memory_mb=budget_mb * f2, write_kept=write_kept,
                         scratch=scratch)
        unheld = measure(half, config, jobs=jobs, in_memory_mb=0, write_kept=write_kept, scratch=scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    small["how"] = half_how
    for run, fraction in ((start, f0), (small, f1), (large, f2)):
        run["fraction"] = fraction  # (what a plan from these runs again needs: runs=)
    return start, small, large, unheld, half_how, (f0, f1, f2)


def _predict(sample, config: DedupConfig, machine: dict, budget_mb: float, jobs: int, startup_seconds: float,
             start: dict, small: dict, large: dict, unheld: dict, half_how: str, f0: float, f1: float,
             f2: float) -> dict:
    """:func:`plan`'s predictions and advice from its sample runs."""
    documents = sample.documents
    n_sample = sample.records
    n0, n1, n2 = start["records"], small["records"], large["records"]
    n = documents

    def scaled(key: str, less: str | None = None) -> tuple[float, float, float, tuple[float, float]]:
        """``key`` of the full run, its range and the fit used: the line through the half and the
        whole sample's runs, unless it starts below what the smallest run cost (a sample of a few
        of the engine's batches is lumpy: two are in flight at once), then the line through the
        smallest and the whole sample's runs; the range spans both lines."""
        y = {name: run[key] - (run[less] if less else 0) for name, run in (("0", start), ("1", small), ("2", large))}
        fit = _fit(n1, y["1"], n2, y["2"])
        other = _fit(n0, y["0"], n2, y["2"])
        if fit[0] < y["0"]:
            fit, other = other, fit
        a, b = fit[0] + fit[1] * n, other[0] + other[1] * n
        return a, min(a, b), max(a, b), fit

    _, _, _, mem_fit = scaled("peak_bytes")
    # Anonymous memory by its parts rather than by a line: a sample's run is mostly the fixed
    # cost and its budget-bound parts, so a line through samples (1,300 bytes a record on
    # generated documents) said 7.5 GB where a 10M-record run took 1.6 GB.
    anon_model = _AnonymousModel.of(large, unheld, config)
    peak_anon = anon_model.at(n, budget_mb) / MIB
    # Resident memory is that plus file-backed pages: the libraries' (the smallest run's, less
    # its own mapped spill) and the spilled sketches' the engine has mapped, which it lets go in
    # bounded stretches (pipeline.mapped_resident_bound). A line through the samples' peaks
    # (sketches spilled all along) said 25.8 GB where a 30M-record run peaked at 4.4 GB.
    file_model = _FileBackedModel.of(start, budget_mb * f0, anon_model.held_per_record)
    peak_lo = peak_anon + file_model.fixed / MIB
    peak = peak_hi = peak_anon + file_model.at(n, budget_mb) / MIB
    whole_input = {s.how for s in sample.inputs} == {"whole"} and n2 >= n
    if whole_input:  # the whole sample's run was the run
        peak = peak_lo = peak_hi = large["peak_bytes"] / MIB
        peak_anon = large["peak_anonymous_bytes"] / MIB
    spill, spill_lo, spill_hi, _ = scaled("spill_bytes")
    output, _, _, _ = scaled("output_bytes")
    cand = scale_pairs(f1, small["candidate_pairs"], f2, large["candidate_pairs"])
    ver = scale_pairs(f1, small["verified_pairs"], f2, large["verified_pairs"])
    # time: per document (everything but verification), plus verification per candidate pair
    t_docs, t_docs_lo, t_docs_hi, _ = scaled("seconds", less="verify_seconds")
    per_pair = large["verify_seconds"] / large["candidate_pairs"] if large["candidate_pairs"] else 0.0
    seconds = startup_seconds + t_docs + per_pair * cand["predicted"]
    seconds_lo = startup_seconds + t_docs_lo + per_pair * cand["low"]
    seconds_hi = startup_seconds + t_docs_hi + per_pair * cand["high"]

    # The advice on --in-memory-mb is about anonymous memory: the budget holds sketches there,
    # and what spills comes back as file-backed pages the kernel may drop under pressure.
    # What each record holds (all of it spills when nothing is held), and the anonymous memory
    # that stays whatever the budget: the half sample's run with nothing held, its intercept
    # (the process's start and fixed costs) the line's.
    # For a smaller budget, the run with nothing held says what stays (a run that spills pays
    # for the spill's buffers and for reading the candidates' shingle ids again, which the
    # parts above leave out): the line's intercept plus that run's memory per record.
    _, _, _, anon_fit = scaled("peak_anonymous_bytes")
    held_per_record = anon_model.held_per_record
    unheld_anon = max(0.0, unheld["peak_anonymous_bytes"] - anon_fit[0]) / max(1, unheld["records"])
    floor_anon = (anon_fit[0] + unheld_anon * n) / MIB
    warnings, suggested, with_suggestion = [], None, None
    avail = machine["memory_available_mb"]
    if avail is not None and peak_anon > avail * MEMORY_HEADROOM:
        room = avail * MEMORY_HEADROOM - floor_anon
        if room >= 1:
            suggested = int(room)
            with_suggestion = floor_anon + min(suggested, held_per_record * n / MIB)
            warnings.append(f"predicted peak memory {peak_anon:,.0f} MB anonymous ({peak:,.0f} MB resident) is over "
                            f"{MEMORY_HEADROOM:.0%} of the {avail:,.0f} MB available: use --in-memory-mb {suggested} "
                            f"(anonymous then about {with_suggestion:,.0f} MB, "
                            f"the rest spilled to {machine['tmpdir']})")
        else:
            suggested, with_suggestion = 0, floor_anon
            warnings.append(f"predicted peak memory {peak_anon:,.0f} MB anonymous is over the {avail:,.0f} MB "
                            f"available, and even --in-memory-mb 0 needs about {floor_anon:,.0f} MB: split the input")
    elif avail is not None and peak > avail:
        warnings.append(f"predicted peak resident memory {peak:,.0f} MB is over the {avail:,.0f} MB available, but "
                        f"{peak - peak_anon:,.0f} MB of it are file-backed pages (input and spill) the kernel can "
                        f"drop: the run fits, slower if pages are read again")
    spill_with_suggestion = spill
    if suggested is not None:
        spill_with_suggestion = max(spill, held_per_record * n - suggested * MIB)
    free = machine["tmpdir_free_bytes"]
    if spill_with_suggestion > free:
        need = spill_with_suggestion - free
        warnings.append(f"predicted spill {spill_with_suggestion / 1e9:,.2f} GB is over the {free / 1e9:,.2f} GB free "
                        f"in {machine['tmpdir']}: set TMPDIR to a disk with more room"
                        + (f", or raise --in-memory-mb by {math.ceil(need / MIB)} if memory allows"
                           if suggested is None else ""))

    how = {s.how for s in sample.inputs}
    assumptions = [
        "documents and input bytes scale with the input's bytes from the sample's records per byte"
        + ("; compressed inputs were sampled as a prefix of their stream (the rest assumed alike)"
           if "prefix" in how else ""),
        f"the engine ran on {n0:,}, {n1:,} and {n2:,} records (the first ones, {half_how}, and the whole sample), "
        f"with --in-memory-mb scaled to each one's share of the corpus ({budget_mb * f1:.2f} and {budget_mb * f2:.2f} "
        f"MB for {budget_mb} MB), on {jobs} threads",
        "spill and time (less verification): a line through the half and the whole sample's runs, each in "
        "a new process as neardup dedup runs (through the smallest and the whole sample's where the first starts "
        "below what the smallest cost: the interpreter, the engine and a batch in flight); ranges span both lines",
        "peak resident memory: the peak anonymous memory plus file-backed pages, the libraries' (the smallest "
        "run's) and as much of the spilled sketches as the engine maps at once (a bounded stretch); an upper "
        "bound, since the two peaks need not come at once; the range's low end has no spilled pages resident",
        "anonymous memory by its parts: the whole sample's run less its parts (a fixed cost), plus the "
        "per-record arrays (the engine's columns, ids as long as the sample's), the sketches held within "
        "--in-memory-mb (bytes a record from the run with nothing held), and the larger of the exact pass's "
        "fingerprint table (at its last growth) and the band-key grouping within its budget",
        "pairs(f) ~ f^e, e from the two runs' counts kept within [1, 2] (f: the sampled fraction; 1 for copies "
        "next to each other in the input, 2 for copies spread over it); verification time per candidate pair",
        "ranges: two standard deviations of the pair counts (Poisson) and of the pieces' records per byte; "
        "for memory, spill and time the line against proportion to the larger run",
        "the machine as loaded now: time is for its present load",
    ]
    r = lambda x: int(round(x))  # noqa: E731
    return {
        "documents": r(n),
        "input_bytes": sample.input_bytes,
        "candidate_pairs": r(cand["predicted"]),
        "verified_pairs": r(ver["predicted"]),
        "peak_memory_mb": round(peak, 1),
        "peak_anonymous_mb": round(peak_anon, 1),
        "spill_bytes": r(spill),
        "output_bytes": r(output),
        "seconds": round(seconds, 2),
        "ranges": {
            "documents": [r(sum(s.records_low for s in sample.inputs)), r(sum(s.records_high for s in sample.inputs))],
            "candidate_pairs": [r(cand["low"]), r(cand["high"])],
            "verified_pairs": [r(ver["low"]), r(ver["high"])],
            "peak_memory_mb": [round(peak_lo, 1), round(peak_hi, 1)],
            "spill_bytes": [r(spill_lo), r(spill_hi)],
            "seconds": [round(seconds_lo, 2), round(seconds_hi, 2)],
        },
        "basis": ({key: "measured: the sample is the whole input" for key in
                   ("documents", "candidate_pairs", "verified_pairs", "peak_memory_mb", "peak_anonymous_mb",
                    "spill_bytes", "seconds")} | {"input_bytes": "file sizes"}) if whole_input else {
            "documents": _documents_basis(sample),
            "input_bytes": "file sizes",
            "candidate_pairs": _pair_basis(cand),
            "verified_pairs": _pair_basis(ver),
            "peak_anonymous_mb": anon_model.describe(n, budget_mb),
            "peak_memory_mb": file_model.describe(n, budget_mb),
            "spill_bytes": (f"{spill / n if n else 0:,.0f} bytes/record past the {budget_mb} MB budget"
                            if spill else f"none: the sketches fit in --in-memory-mb {budget_mb} "
                                          f"(held {held_per_record:,.0f} bytes/record, so about "
                                          f"{budget_mb * MIB / held_per_record if held_per_record else 0:,.0f} records fit)"),
            "seconds": f"{startup_seconds:.2f} s start + {t_docs / n * 1e6 if n else 0:.1f} us/record + "
                       f"{per_pair * 1e6:.1f} us/candidate pair, at today's load",
        },
        "model": {"candidate_pairs": cand, "verified_pairs": ver, "held_bytes_per_record": round(held_per_record, 1),
                  "sample_is_whole_input": whole_input,
                  "anonymous_floor_mb": round(floor_anon, 1),
                  "memory_mb_at_0": round(mem_fit[0] / MIB, 1), "memory_bytes_per_record": round(mem_fit[1], 1),
                  "anonymous_fixed_mb": round(anon_model.fixed / MIB, 1),
                  "anonymous_array_bytes_per_record": round(anon_model.array_bytes_per_record(n), 1),
                  "startup_seconds": startup_seconds},
        "sample": {"records": n_sample, "fraction": round(f2, 6), "half_records": n1,
                   "inputs": [{"path": s.path, "format": s.format, "how": s.how, "codec": s.codec,
                               "input_bytes": s.input_bytes, "records": s.records, "pieces": len(s.pieces),
                               "records_estimated": r(s.records_estimated)} for s in sample.inputs]},
        "runs": {"smallest": start, "half": small, "whole": large, "nothing_held": unheld},
        "machine": machine,
        "in_memory_mb": budget_mb,
        "jobs": jobs,
        "suggested_in_memory_mb": suggested,
        "anonymous_mb_with_suggestion": round(with_suggestion, 1) if with_suggestion is not None else None,
        "warnings": warnings,
        "assumptions": assumptions,
        "config_fingerprint": config.fingerprint(),
    }


@dataclass
class _AnonymousModel:
    """A run's peak anonymous memory by its parts, calibrated on the sample's whole run:

    ``fixed`` (the interpreter, the engine, batches in flight: the run's peak less its parts)
    + the per-record arrays (:func:`neardup.pipeline.record_array_bytes`) + the sketches held
    within the budget (``held_per_record`` each, from the run with nothing held: all of it
    spilled) + the larger of the exact pass's fingerprint table at its last growth
    (:meth:`~neardup.stages.exact.FingerprintTable.peak_bytes_for`, let go before the
    candidates) and the band keys grouped within the grouping's budget (minhash)."""

    fixed: float
    held_per_record: float
    id_bytes: float
    bands: int

    @classmethod
    def of(cls, large: dict, unheld: dict, config: DedupConfig) -> "_AnonymousModel":
        held = unheld["spill_bytes"] / unheld["records"] if unheld["records"] else 0.0
        id_bytes = large.get("id_bytes_per_record")
        model = cls(0.0, held, 16.0 if id_bytes is None else float(id_bytes),
                    config.banding().bands if config.method == "minhash" else 0)
        model.fixed = max(0.0, large["peak_anonymous_bytes"] - model.parts(large["records"], large["in_memory_mb"]))
        return model

    def parts(self, n: int, budget_mb: float) -> float:
        from .pipeline import Deduplicator, record_array_bytes
        from .stages.exact import FingerprintTable
        from .stages.grouping import BYTES_PER_RECORD

        budget = budget_mb * MIB
        grouping_budget = max(budget_mb, Deduplicator.GROUPING_MIN_MB) * MIB
        grouping = min(grouping_budget, BYTES_PER_RECORD * self.bands * n)
        return (record_array_bytes(n, self.id_bytes) + min(budget, self.held_per_record * n)
                + max(FingerprintTable.peak_bytes_for(n), grouping))

    def at(self, n: int, budget_mb: float) -> float:
        return self.fixed + self.parts(n, budget_mb)

    def array_bytes_per_record(self, n: int) -> float:
        from .pipeline import record_array_bytes

        return record_array_bytes(n, self.id_bytes) / n if n else 0.0

    def describe(self, n: int, budget_mb: float) -> str:
        return (f"by parts: {self.fixed / MIB:.0f} MB fixed (the whole sample's run less its parts) + "
                f"{self.array_bytes_per_record(n):,.0f} bytes/record of arrays + {self.held_per_record:,.0f} "
                f"bytes/record of sketches within {budget_mb} MB + the larger of the fingerprint table and the "
                f"band-key grouping; the rest of the resident memory is file-backed pages")


@dataclass
class _FileBackedModel:
    """A run's file-backed resident pages at their most: ``fixed`` (the interpreter's and the
    libraries' mapped code, from the smallest sample run less its own mapped spill) + the
    sketches spilled past the budget (``held_per_record`` each, as in :class:`_AnonymousModel`),
    of which the engine holds at most :func:`neardup.pipeline.mapped_resident_bound` resident
    (rows of ``held_per_record`` bytes: a signature and shingle ids)."""

    fixed: float
    held_per_record: float

    @classmethod
    def of(cls, smallest: dict, budget_mb: float, held_per_record: float) -> "_FileBackedModel":
        model = cls(0.0, held_per_record)
        file_backed = max(0.0, smallest["peak_bytes"] - smallest["peak_anonymous_bytes"])
        model.fixed = max(0.0, file_backed - model.mapped(smallest["records"], budget_mb))
        return model

    def bound(self) -> int:
        from .pipeline import mapped_resident_bound

        return mapped_resident_bound(self.held_per_record)

    def mapped(self, n: int, budget_mb: float) -> float:
        return min(max(0.0, self.held_per_record * n - budget_mb * MIB), self.bound())

    def at(self, n: int, budget_mb: float) -> float:
        return self.fixed + self.mapped(n, budget_mb)

    def describe(self, n: int, budget_mb: float) -> str:
        return (f"the peak anonymous memory + {self.fixed / MIB:.0f} MB of libraries + the spilled sketches "
                f"mapped at once ({self.mapped(n, budget_mb) / MIB:,.0f} MB: what spills past {budget_mb} MB, "
                f"at most {self.bound() / MIB:,.0f} MB, the engine's stretch); an upper bound")


def _documents_basis(sample: Sample) -> str:
    kinds = []
    for s in sample.inputs:
        kind = ("counted (read whole)" if s.how == "whole" else "counted (Parquet footer)" if s.format == "parquet"
                else "sampled records per compressed byte x bytes" if s.how == "prefix"
                else "sampled records per byte x input bytes")
        if kind not in kinds:
            kinds.append(kind)
    return "; ".join(kinds)


def _pair_basis(p: dict) -> str:
    if p["exponent"] is None:
        return "counted (the sample is the whole input)"
    if p["predicted"] == 0:
        return "none found in the sample (range: up to 3 there)"
    e = p["exponent"]
    kind = "copies next to each other" if e < 1.25 else "copies spread over the input" if e > 1.75 else "a mix"
    return f"sample's pairs x (1/f)^{e:.2f} (+-{p['exponent_sd']:.2f}; {kind}: 1 local, 2 spread)"


def _main() -> None:
    """``python -m neardup.plan``: one :func:`measure_run` of the job pickled on standard input
    (written by :func:`measure`, in this same program), its result as JSON on standard output."""
    import json
    import pickle
    import sys

    job = pickle.load(sys.stdin.buffer)
    result = measure_run(job.pop("paths"), job.pop("config"), **job)
    sys.stdout.write(json.dumps(result))


if __name__ == "__main__":
    _main()


# --------------------------------------------------------------------------- the run's own check

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


def ids_kept_fraction(config: DedupConfig) -> float:
    """The share of documents whose shingle ids the work folder holds: :data:`CANDIDATE_SHARE`
    for a MinHash run (the check runs for local files only, which the run reads twice), every
    document for the other methods (their first pass keeps them all), none for exact."""
    if config.method == "exact":
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
    per_byte = 4 if config.method != "exact" else 0  # an exact run keeps no shingle ids
    for path in paths:
        # a folder (a dataset) or a special file is not bounded here: isfile first, before it is opened
        if not os.path.isfile(path) or path.endswith((".parquet", ".pq")) or _codec_of(path) is not None:
            return None
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            head = fh.read(1 << 20)
        records = size * max(1, head.count(b"\n")) / max(1, len(head))
        total += int(per_byte * size + records * (8 * perm + PER_RECORD_BYTES) + size)
    return total


def work_disk_estimate(paths: list[str], config: DedupConfig) -> dict | None:
    """A quick estimate of what a run writes to its work folder, from a small sample of the input
    (JSONL or Parquet files; None for other inputs): every record's shingle ids and signature
    (the saved sketch stage holds them all, held or spilled), its band keys past the budget and
    its rows in the saved stages; the kept corpus is counted at the input's size. What
    :func:`plan` predicts with measured runs, without them, so that ``neardup dedup`` can refuse
    a run that cannot fit before it starts."""
    import orjson

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
    from .stages.sketch import shingle_runs

    _, offsets = shingle_runs(texts, config.shingle)
    shingles = float(offsets[-1]) / len(texts)
    perm = config.minhash.num_perm if config.method == "minhash" else 0
    per_record = (8 * shingles * ids_kept_fraction(config) + signature_value_bytes(config) * perm
                  + PER_RECORD_BYTES)
    input_bytes = sample.input_bytes
    return {"records": records, "shingles_per_record": shingles, "bytes_per_record": per_record,
            "work_bytes": int(records * per_record), "kept_bytes": int(input_bytes),
            "total_bytes": int(records * per_record + input_bytes)}
