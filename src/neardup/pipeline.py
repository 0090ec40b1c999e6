"""Deduplicate a corpus on one machine: the stages of ``neardup dedup``.

    read ──> exact fingerprints ──> signatures + shingle ids ──> band keys ──> candidate pairs
         ──> estimate filter ──> exact verification ──> union-find ──> survivors ──> outputs

- Exact pass: a document whose normalized content was seen before is an exact duplicate of the
  first holder and is not sketched again.
- Sketches: MinHash signatures and the sorted distinct shingle ids of every other document, made
  by the compiled kernel over batches on all cores. Signatures and ids stay in memory up to a
  budget (``in_memory_mb``, 512 MB) and spill beyond it to files in a work folder (memory-mapped),
  so what stays in memory per document past the budget is its id, a few integers and its band
  keys (8 bytes a band).
- Candidates: documents sharing a band key (see :mod:`neardup.stages.candidates`).
- Verification (on by default): a candidate pair whose MinHash estimate is more than four
  standard errors below the threshold is dropped; every other one is measured exactly on the
  stored shingle ids, and only pairs at or above the threshold become edges.
- Clusters: union-find over verified edges; the survivor of each cluster is chosen by the keep
  policy, deterministically (ties go to the earlier record).

Every input record comes out exactly once in ``clusters.jsonl``: kept, an exact or near
duplicate of a named kept record, or skipped with a reason. ``summary.json`` counts add up.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import stat
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .cpus import available_cpus
from .errors import ConfigError
from .config import KEEP_POLICIES, MEASURES, METHODS, DedupConfig
from .params import IN_MEMORY_MB
from .engines.common import peak_memory_mb, run_summary, stage_table
from .stages import candidates as candidate_stage
from .stages import sketch as sketch_stage
from .stages.columns import Copies, Floats, Growable, Ids, Labels, Names, SourcedNames, repeated_names, take_values
from .stages.exact import FingerprintTable, first_holders
from .stages.survivors import (Outcome, choose_survivors, cluster_kinds, components, keep_value, kept_mask, outcomes,
                               similarity_to_survivors, split_sources)
from .stages.urls import claim_key, record_key, relabel, url_links
from .stages.verify import Edges, pair_similarities, score_of, verify_pairs

if TYPE_CHECKING:
    from .io.write.shards import KeptLayout

#: The kept corpus's file names (:mod:`neardup.io.write.shards`): an older run's that this one does not
#: write again are removed when it publishes.
_KEPT_NAME = re.compile(r"kept(-\d{5}(-of-\d{5})?)?\.(jsonl(\.gz|\.zst)?|parquet|warc\.gz|arc\.gz)")
#: An older run's results in the other --output-format, removed when this run publishes.
_RESULT_NAME = re.compile(r"(clusters|pairs)\.(jsonl|parquet)")

__all__ = ["Deduplicator", "DedupConfig", "Outcome", "METHODS", "MEASURES", "KEEP_POLICIES"]

class _Budget:
    """Bytes that the held pieces of a run may still keep in memory."""

    def __init__(self, nbytes: int):
        self.left = nbytes


class _Pieces:
    """An append-only sequence of uint64 arrays, read as their concatenation.

    Arrays are kept as they come while the run's memory budget lasts (no copy, and no file to
    write, read back and delete: on the benchmark corpus the ids alone are 124 MB). Beyond the
    budget they are appended to a file that is memory-mapped once writing is done, so memory
    stays bounded on corpora of any size. The kernel's ``intersections`` and ``agreements``
    read the pieces in place.
    """

    def __init__(self, path: str, budget: _Budget, dtype=np.uint64):
        self.path = path
        self.budget = budget
        #: uint64, or uint32 for signatures of a 32-bit hash family (half the memory and spill;
        #: every value of a sketched document fits, checked as it comes: see :meth:`append`)
        self.dtype = np.dtype(dtype)
        self.held: list[np.ndarray] = []
        self.fh = None
        self.count = 0
        self.digest = None  # XXH3 of the spill file, for the saved stage's record (io.write.runfolder)

    def append(self, arr: np.ndarray) -> None:
        if self.dtype == np.uint32 and arr.dtype != np.uint32:
            if arr.size and int(arr.max()) > 0xFFFFFFFF:  # never for a document with a shingle
                raise RuntimeError("internal error: a 32-bit family's signature value does not fit 32 bits")
        arr = np.ascontiguousarray(arr, dtype=self.dtype)
        if self.fh is None and arr.nbytes <= self.budget.left:
            self.budget.left -= arr.nbytes
            self.held.append(arr)
        else:
            from .io.write.outputs import naming

            with naming(self.path):
                if self.fh is None:
                    import xxhash

                    self.fh = open(self.path, "wb")
                    self.digest = xxhash.xxh3_64()
                view = memoryview(arr).cast("B")
                self.fh.write(view)
            self.digest.update(view)
            self.count += arr.size

    def finish(self, width: int = 0) -> list[np.ndarray]:
        """The pieces in order; with ``width``, as matrices of ``width`` columns."""
        pieces = list(self.held)
        if self.fh is not None:
            self.fh.close()
            if self.count:
                pieces.append(np.memmap(self.path, dtype=self.dtype, mode="r"))
        if width:
            pieces = [p.reshape(-1, width) for p in pieces]
        return pieces

    @property
    def spilled_bytes(self) -> int:
        return self.count * self.dtype.itemsize

    def release(self) -> None:
        """Drop what is held (nothing spilled yet) and give its bytes back to the budget."""
        assert self.fh is None, "release() of pieces that spilled"
        self.budget.left += sum(p.nbytes for p in self.held)
        self.held = []

    def close_file(self) -> None:
        """Close the spill file (before the stage's folder is saved)."""
        from .io.write.outputs import naming

        if self.fh is not None:
            with naming(self.path):
                self.fh.close()

    @classmethod
    def restored(cls, pieces: list[np.ndarray], spilled_bytes: int) -> "_Pieces":
        """Pieces read back from a saved stage (memory-mapped); ``finish`` gives them as they are."""
        obj = cls("", _Budget(0), pieces[0].dtype if pieces else np.uint64)
        obj.held = [p for p in pieces if p.size]
        obj.count = spilled_bytes // obj.dtype.itemsize
        return obj


def release_pages(arrays) -> None:
    """Drop the pages of memory-mapped arrays (the spill, a saved stage read back) from this
    process's resident memory. They are clean pages of files: the kernel keeps them in its page
    cache while it has room and reads them again if they are touched, but a pass over 20 GB of
    signatures would otherwise count 20 GB resident against the process."""
    import mmap

    for arr in arrays if isinstance(arrays, (list, tuple)) else [arrays]:
        mm = getattr(arr, "_mmap", None)
        if mm is None or not hasattr(mm, "madvise") or not hasattr(mmap, "MADV_DONTNEED"):
            continue
        try:
            mm.madvise(mmap.MADV_DONTNEED)
        except (OSError, ValueError):  # a closed map, or a platform that refuses: nothing lost
            pass


#: Bytes of memory-mapped spill a pass reads before it lets their pages go: the band keys'
#: sequential pass over the signatures, and each slice of pairs read at random (verification,
#: the estimate filter, the similarity to survivors). Released pages stay in the kernel's page
#: cache, so letting them go costs no reads; it bounds what the process holds resident at once
#: (a 30M-document run, releasing every 2 GB, peaked at 2 GB of file-backed pages).
MAPPED_PASS_BYTES = 256 << 20

#: The most a read of one byte of a memory-mapped file can make resident: the page cache holds
#: a file in folios of up to a PMD (2 MB with 4 kB pages), and a fault maps the whole folio. Seen
#: here (Linux 6.18): one byte read of a freshly written spill file made 2 MB resident, with
#: MADV_NOHUGEPAGE or MADV_RANDOM too; so a slice of pairs is sized by the 2 MB grains its rows
#: lie in, not by their bytes.
MAPPING_GRAIN = 2 << 20

#: Pairs measured at a time at most when the pieces they read are memory-mapped (fewer where
#: their rows lie in more grains than MAPPED_PASS_BYTES holds: see in_pair_slices).
PAIR_SLICE = 1 << 17


def mapped_resident_bound(row_bytes: float) -> int:
    """The most bytes of memory-mapped spill this engine holds resident at once, for rows (a
    document's signature or shingle ids) of ``row_bytes``: a pass's stretch
    (:data:`MAPPED_PASS_BYTES`, or one slice of band rows, or the two rows of one pair, whichever
    is larger) and the grains (:data:`MAPPING_GRAIN`) that its ends and the pair's rows straddle."""
    return int(max(MAPPED_PASS_BYTES, Deduplicator.BAND_ROWS * row_bytes, 2 * row_bytes) + 4 * MAPPING_GRAIN)


def _mapped(pieces) -> bool:
    return any(getattr(p, "_mmap", None) is not None for p in (pieces if isinstance(pieces, list) else [pieces]))


class _RowGrains:
    """Which grains (:data:`MAPPING_GRAIN`) of the memory-mapped pieces a row lies in: rows of
    matrices (signatures), or, with ``offsets``, runs of a flat array (shingle ids: row ``r`` is
    ``offsets[r]:offsets[r + 1]`` of the pieces laid end to end). Held pieces have no grains."""

    def __init__(self, pieces, offsets=None):
        pieces = pieces if isinstance(pieces, list) else [pieces]
        self.offsets = offsets
        units = [p.shape[0] for p in pieces]  # rows of a matrix, elements of a flat piece
        self.starts = np.concatenate(([0], np.cumsum(units))).astype(np.int64)
        self.unit_bytes = np.array([p.strides[0] for p in pieces], dtype=np.int64)
        mapped = np.array([getattr(p, "_mmap", None) is not None for p in pieces], dtype=bool)
        grains = np.where(mapped, (np.array(units, dtype=np.int64) * self.unit_bytes) // MAPPING_GRAIN + 1, 0)
        self.first_grain = np.concatenate(([0], np.cumsum(grains)[:-1])).astype(np.int64)
        self.mapped = mapped

    def _grain(self, unit: np.ndarray, last: bool) -> np.ndarray:
        k = np.searchsorted(self.starts, unit, side="right") - 1
        k = np.minimum(k, self.mapped.size - 1)
        byte = (unit - self.starts[k]) * self.unit_bytes[k] + (self.unit_bytes[k] - 1 if last else 0)
        return np.where(self.mapped[k], self.first_grain[k] + byte // MAPPING_GRAIN, -1)

    def of(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(first, last)`` grain of each row, -1 for a row in a held piece (or empty)."""
        rows = np.asarray(rows, dtype=np.int64)
        if self.offsets is None:
            return self._grain(rows, False), self._grain(rows, True)
        begin = np.asarray(self.offsets[rows], dtype=np.int64)
        end = np.asarray(self.offsets[rows + 1], dtype=np.int64) - 1
        empty = end < begin
        first, last = self._grain(begin, False), self._grain(np.maximum(end, begin), True)
        return np.where(empty, -1, first), np.where(empty, -1, last)


def in_pair_slices(pieces, ci: np.ndarray, cj: np.ndarray, measure, offsets=None):
    """``measure(lo, hi)`` over slices of the pairs ``(ci, cj)`` (rows of ``pieces``, see
    :class:`_RowGrains` for ``offsets``), and the list of its results in order. When ``pieces``
    are memory-mapped, each slice's rows lie in at most :data:`MAPPED_PASS_BYTES` of grains
    (a slice of one pair excepted), and its pages are let go before the next one: what a stage
    holds resident of the spill is bounded by :func:`mapped_resident_bound`, wherever the pairs'
    rows lie (copies next to each other share grains; copies spread over the corpus do not)."""
    if not _mapped(pieces) or not ci.size:
        return [measure(0, ci.size)]
    grains = _RowGrains(pieces, offsets)
    limit = max(1, MAPPED_PASS_BYTES // MAPPING_GRAIN)
    out = []
    for lo in range(0, ci.size, PAIR_SLICE):
        hi = min(ci.size, lo + PAIR_SLICE)
        (i0, i1), (j0, j1) = grains.of(ci[lo:hi]), grains.of(cj[lo:hi])
        # grains between a long row's first and last, counted apart (never shared, at worst)
        between = np.maximum(i1 - i0 - 1, 0) + np.maximum(j1 - j0 - 1, 0)
        for a, b in _slices_within(np.stack([i0, i1, j0, j1]), between, 0, hi - lo, limit):
            out.append(measure(lo + a, lo + b))
            release_pages(pieces)
    return out


def _slices_within(grains: np.ndarray, between: np.ndarray, lo: int, hi: int, limit: int):
    """Consecutive ``(lo, hi)`` slices of the pairs whose rows lie in at most ``limit`` grains
    (``grains``: 4 x pairs, -1 for none), each split in proportion to its count until it fits."""
    g = grains[:, lo:hi].ravel()
    count = np.unique(g[g >= 0]).size + int(between[lo:hi].sum())
    if count <= limit or hi - lo <= 1:
        yield lo, hi
        return
    step = max(1, -(-(hi - lo) // -(-count // limit)))
    for a in range(lo, hi, step):
        yield from _slices_within(grains, between, a, min(hi, a + step), limit)


@dataclass
class _Sketched:
    """What the read-and-sketch pass keeps of a run: per record (by ordinal) its id, the reason
    known so far, its length and keep value; per sketched record (in order) its ordinal, shingle
    count, shingle ids, signature, band keys or simhash; and the exact copies."""

    # by ordinal, as arrays (:mod:`neardup.stages.columns`): no Python object per record
    ids: Ids = field(default_factory=Ids)
    reason: Labels = field(default_factory=Labels)
    lengths: Growable = field(default_factory=lambda: Growable(np.int64))
    keyvals: Growable = field(default_factory=lambda: Growable(np.float64))
    #: exact copy's ordinal -> its first holder's: Copies (arrays), or a dict where keep="source"
    #: moves holders or the index reads it
    exact_of: dict[int, int] | Copies = field(default_factory=dict)
    sketched: Growable = field(default_factory=lambda: Growable(np.int64))
    n_shingles: list[np.ndarray] = field(default_factory=list)
    band_parts: list[np.ndarray] = field(default_factory=list)
    simhashes: list[np.ndarray] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)
    urls: dict[int, str] = field(default_factory=dict)  # ordinal -> the page's URL (web archives)
    #: URL identity (config.url_field): ordinal -> the record's canonical URL, and its page's
    #: canonical claim in canonical form (neardup.stages.urls), for the records that have one
    url_keys: dict[int, str] = field(default_factory=dict)
    claim_keys: dict[int, str] = field(default_factory=dict)
    id_pieces: _Pieces | None = None
    sig_pieces: _Pieces | None = None
    #: per record (by ordinal) its source, when the run has sources (several inputs, a source
    #: field, an index); None otherwise
    sources: list | None = None
    #: fingerprint -> ordinal of its first holder in the run (an index's holders are the
    #: Against's); a dict where keep="source" needs one, else a FingerprintTable (arrays)
    first_by_fp: dict | FingerprintTable = field(default_factory=dict)
    #: a run with an index: the content fingerprints of the sketched records, batch by batch
    fingerprint_parts: list[np.ndarray] = field(default_factory=list)
    #: kept for a run against an index (or saving one): the signature pieces and band keys
    signatures: list | None = None
    band_keys: np.ndarray | None = None
    #: keep="source": ordinal -> local index of the sketched records (built when first needed)
    local_of: dict | None = None
    #: the shingle ids went past the memory budget and were dropped: the candidates' are made
    #: again from a second read (Deduplicator._ids_again)
    ids_dropped: bool = False


def record_array_bytes(records: int, id_bytes: float) -> int:
    """The bytes of :class:`_Sketched`'s arrays after ``records`` records whose ids have
    ``id_bytes`` UTF-8 bytes on average, every record counted as sketched (the most there can be):
    id end offsets (int64), reason codes (uint8), lengths (int64), keep values (float64) and
    sketched ordinals (int64) in doubling arrays, the ids' bytes, shingle counts (int64). The
    part of a run's memory that grows with every record whatever the budget (the held sketches
    and the groupings are bounded by it), for :mod:`neardup.plan`."""
    slots = Growable.slots_for(records)
    return int(slots * (8 + 1 + 8 + 8 + 8) + records * (id_bytes + 8))


class Deduplicator:
    """The local engine: runs the stages (:mod:`neardup.stages`) over documents from
    :func:`neardup.io.read_documents`, in batches sketched on a thread pool, with shingle ids
    and signatures spilled to a work folder beyond the memory budget.

    >>> # Deduplicator(DedupConfig(threshold=0.8)).run(["corpus.jsonl"], "out/")
    """

    #: text a batch holds: two are in flight (one sketching while the next is read), and their
    #: buffers (texts, shingle ids, signatures, the kernel threads' work) cost about ten times
    #: their bytes of anonymous memory; 2 MB batches held 122 MB at peak where 8 MB held 197
    #: (80,000 records of 600 bytes, --in-memory-mb 16) at the same speed
    BATCH_BYTES = 2 << 20

    def __init__(self, config: DedupConfig = DedupConfig(), *, jobs: int | None = None, progress=None,
                 work_dir: str | None = None, in_memory_mb: float = IN_MEMORY_MB, against=None, save_index=None):
        """``against``: a :class:`neardup.store.incremental.Against` (deduplicate against an
        index: only the new records are removed); ``save_index``: a :class:`neardup.SeenIndex`
        that receives the run's sketched records (``--save-index``)."""
        self.config = config
        self.against = against
        self.save_index = save_index
        #: labels of the inputs when records carry a source (set by :meth:`run`)
        self.source_labels: list[str] | None = None
        self.current_source: str | None = None
        self.jobs = max(1, jobs or available_cpus())
        self.progress = progress
        self.work_dir = work_dir
        self.in_memory_mb = in_memory_mb
        self.seconds: dict[str, float] = {}
        #: a callable giving the input's records again, in the same order (set by :meth:`run` when
        #: the run can read its input twice): the first pass then keeps no shingle ids, and the
        #: second gives those of the documents in candidate pairs (see :meth:`_ids_again`)
        self._reread = None

    # ------------------------------------------------------------------------------------------
    def run(self, paths: list[str], output: str, *, write_kept: bool = True, on_error: str = "skip",
            resume: bool = False, layout: "KeptLayout | None" = None, output_format: str = "jsonl") -> dict:
        """Deduplicate ``paths`` (read as the configuration's read options say) into ``output`` (a
        folder or an fsspec URL); returns the summary. ``on_error="error"`` stops at the first file
        that cannot be read (:class:`~neardup.io.read.UnreadableInput`); ``"skip"`` counts it (one
        ``unreadable_file`` record, its path in the summary's ``skipped_files``).

        The run keeps its work folder (:mod:`neardup.io.write.runfolder`) until its outputs are published
        (:mod:`neardup.io.write.outputs`: ``summary.json`` last): a run of the same configuration on the
        same output continues after the last completed stage, with or without ``resume``. With
        ``resume`` and an output already complete for this configuration, its summary is returned.
        ``layout``: the kept corpus's shards and compression (:class:`neardup.io.write.shards.KeptLayout`);
        ``output_format``: ``clusters`` and ``pairs`` as ``jsonl`` (default) or ``parquet``.
        """
        from .io.write.outputs import open_target
        from .io.read import plan_inputs
        from .io.write.runfolder import RunFolder, run_identity
        from .io.write.shards import KeptLayout
        from .io.write import RESULT_FORMATS

        if output_format not in RESULT_FORMATS:
            raise ConfigError(f"--output-format must be one of {', '.join(RESULT_FORMATS)}, got {output_format!r}")
        layout = layout or KeptLayout()
        target = open_target(output)
        run = RunFolder.for_target(target, self.work_dir)
        given = list(getattr(paths, "paths", paths)) if not isinstance(paths, (str, os.PathLike)) else [paths]
        identity = run_identity(self.config, given, {"kept": write_kept, "output_format": output_format,
                                                         **layout.as_dict()})
        # the files are listed and their formats sniffed once, before anything is written (a missing
        # input is an InputError with nothing left behind); both passes read this plan
        plan = plan_inputs(paths, self.config.format)
        self._inputs_bytes = sum(f.get("size", 0) for f in identity["inputs"])
        if resume and not run.exists():
            done = target.summary()
            if done is not None and done.get("config_fingerprint") == identity["config_fingerprint"]:
                return done  # nothing left to do: the output is complete
            if done is not None:
                from .errors import ConfigError
                from .io.write.runfolder import differences

                diff = differences({"config": done.get("config", {})}, {"config": identity["config"]})
                raise ConfigError(f"--resume: {output} is complete, made with other options ({'; '.join(diff)}); "
                                  "drop --resume to run again over it")
        # A run that reads or writes an index saves no stage and keeps no work folder: the saved
        # sketch stage does not hold the signatures and band keys the index takes, and a resumed
        # --save-index/--update-index would write the index twice. (A run with record sources,
        # several inputs or --source-field, saves each record's source with the sketch stage.)
        self._unresumable = self.against is not None or self.save_index is not None
        if resume and self._unresumable:
            from .errors import ConfigError

            raise ConfigError("--resume is not supported for a run with an index (--against, --save-index, "
                              "--update-index): run the command again without --resume")
        if not run.exists():
            self._check_disk(given, run.path, write_kept)
        self._stage_name = "start"
        try:
            target.prepare()
            if run.begin(identity, output) and self._unresumable:
                run.remove()  # an earlier attempt's staged files: this run starts over
                run.begin(identity, output)
                run.resumed_from = None
            target.unpublish()
            summary = self._run_in(run, target, plan, write_kept, layout, on_error, output_format)
        except OSError as exc:
            failure = self._output_failure(exc, run, target)
            if self._unresumable:
                run.remove()
            raise failure from exc
        except MemoryError as exc:
            if self._unresumable:
                run.remove()
            raise self._memory_failure() from exc
        except BaseException:
            if self._unresumable:
                run.remove()
            raise
        run.remove()
        return summary

    def _run_in(self, run, target, paths, write_kept: bool, layout, on_error: str, output_format: str) -> dict:
        """The stages in the work folder ``run``, then the outputs published to ``target``."""
        from .io import read_documents
        from .io import write_kept as write_kept_records
        from .io.write import write_clusters, write_pairs
        from .io.write.outputs import naming
        from .io.read import InputPlan, InputReport, plan_inputs, read_encoded
        from .io.write.checkpoints import reached

        start = time.perf_counter()
        keep_fields = (self.config.keep_field,) if self.config.keep == "field" else ()
        read_options = dict(self.config.read_options(), jobs=self.jobs)
        if self.config.source_field is not None:
            keep_fields += (self.config.source_field,)
        url_reading = {}
        if self.config.url_field is not None:  # URL identity: each record's URL and its page's claims
            keep_fields += (self.config.url_field,)
            url_reading = {"claims": True}
        inputs = list(paths) if not isinstance(paths, (str, bytes, os.PathLike)) else [paths]
        # this run's inputs, not an earlier run's: one engine may run several times
        self.source_labels = [os.fsdecode(p) for p in inputs] if self.has_sources(inputs) else None
        labelled = self.source_labels is not None and self.config.source_field is None
        # the files are listed and their formats sniffed once; both passes read this plan (with
        # sources from the inputs, one plan per input, read in turn, and their union for the kept corpus)
        plans = [plan_inputs([p], self.config.format) for p in inputs] if labelled else None
        if plans is not None:
            paths = InputPlan()
            for plan in plans:
                paths.leaves += plan.leaves
                paths.ignored += plan.ignored
        else:
            paths = plan_inputs(paths, self.config.format)
        report = self._input_report = InputReport()  # saved with the sketch stage (_save_sketch)
        first_pass = dict(on_error=on_error, report=report)
        if write_kept and not labelled:  # the texts the kept corpus would extract again are kept
            first_pass["text_spill"] = run.path

        def read(plan, passing=first_pass):
            if sketch_stage.kernel_handles(self.config.shingle):
                # JSONL records come as UTF-8 straight from a compiled scanner: their text never
                # becomes a Python str. Texts holding a code point that NFKC may change, and that
                # the kernel does not map itself, are flagged.
                table = sketch_stage.flag_table(self.config.shingle.normalize)
                return read_encoded(plan, table=table, keep_fields=keep_fields, **read_options, **url_reading,
                                    **passing)
            return read_documents(plan, keep_fields=keep_fields, **read_options, **url_reading, **passing)

        # The shingle ids are most of the work folder (8 bytes a distinct shingle, 1.1 kB a document
        # of benchmarks/scale.py's corpus) and only the documents in candidate pairs (a tenth there)
        # are ever measured: a run that can read its input again keeps them in memory while they
        # fit its budget, and past it drops them, spills none and makes those documents' ids again
        # from a second read (MinHash runs without an index, on local files: not stdin or a pipe,
        # which can be read once). A corpus whose ids fit is read once, as before.
        self._reread = None
        if (self.config.method == "minhash" and not self._unresumable and self.config.keep != "source"
                and self.config.source_field is None and not labelled and _readable_twice(inputs)
                # (URL identity measures claimed pairs that need not be candidates: every id is kept)
                and self.config.url_field is None):
            self._reread = lambda: read(paths, dict(on_error=on_error, report=InputReport()))

        if labelled:
            docs = _labelled(self, [(label, read(plan)) for label, plan in zip(self.source_labels, plans)])
        else:
            docs = read(paths)

        # The kept corpus (mostly I/O, off the GIL) is written on its own thread as soon as the
        # survivors are known, beside the rest of the clustering and the writing of clusters
        # and pairs (mostly Python).
        kept_writing = []

        def write_kept_from(kept: np.ndarray) -> None:
            if write_kept:
                kept_writing.append(writer.submit(write_kept_records, paths, kept, run.staged, layout=layout,
                                                  run=run, **read_options))

        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="neardup-kept") as writer:
            # a run with an index saves no stage (it is never resumed: see run())
            outcome, pairs, stats = self._dedup(docs, run.path, kept_known=write_kept_from,
                                                run=None if self._unresumable else run)
            urls = stats.pop("urls", None)
            t = time.perf_counter()
            self._stage_name = "write"
            reached("write")
            clusters, pairs_name = f"clusters.{output_format}", f"pairs.{output_format}"
            if not run.is_staged(clusters):
                with naming(run.partial_file(clusters)):
                    write_clusters(run.partial, outcome, format=output_format, urls=urls)
                run.stage_file(clusters)
            reached("write-pairs")
            if not run.is_staged(pairs_name):
                with naming(run.partial_file(pairs_name)):
                    write_pairs(run.partial, pairs.lines(outcome.ids), format=output_format)
                run.stage_file(pairs_name)
            kept_info = kept_writing[0].result() if kept_writing else None
            self.seconds["write"] = time.perf_counter() - t
        names = [clusters, pairs_name]
        if kept_info is not None:
            names += kept_info["files"]
            kept_info = dict(kept_info, path=target.join(kept_info["files"][0]))
        t = time.perf_counter()
        self.seconds["summary"] = 0.0
        summary = self._summary(outcome, stats, kept_info)
        summary.update(report.as_dict())
        self.seconds["summary"] = time.perf_counter() - t
        self.seconds["total"] = time.perf_counter() - start
        summary["seconds"] = self.stage_seconds()
        summary["resumed_from"] = run.resumed_from
        self._stage_name = "publish"
        reached("publish")
        target.publish(run.staged, names, summary, obsolete=[n for n in target.listing()
                                                            if _KEPT_NAME.fullmatch(n) or _RESULT_NAME.fullmatch(n)])
        reached("published")
        return summary

    def _check_disk(self, paths, folder: str, write_kept: bool) -> None:
        """Refuse a run whose work folder (and kept corpus) would not fit on its disk, before it
        starts: :func:`neardup.engines.local.disk.work_disk_estimate` from a small sample of the input, against
        the free space where the work folder goes (OutputError, exit 4, one line). When a bound
        read from the files' first MB already fits (most runs), nothing is sampled: the check
        costs a run of the benchmark corpus about a millisecond, not the 0.9 s of sampling."""
        from .errors import OutputError
        from .io.write.outputs import free_bytes
        from .engines.local.disk import work_disk_bound, work_disk_estimate

        if not all(isinstance(p, (str, os.PathLike)) and "://" not in os.fsdecode(p) for p in paths):
            return
        if os.environ.get("NEARDUP_TEST_NO_DISK_CHECK"):  # the fault tests fill the disk mid-run
            return
        # only regular files and folders are sampled: stdin, a FIFO or /dev/fd/N can be read once
        # only, and the read itself must be the one to read it (os.stat does not open the file)
        for p in paths:
            try:
                mode = os.stat(p).st_mode
            except OSError:
                return
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                return
        where = os.path.abspath(folder)
        while not os.path.exists(where) and os.path.dirname(where) != where:
            where = os.path.dirname(where)
        free = free_bytes(where)
        names = [os.fsdecode(p) for p in paths]
        # the check is best effort: an input it cannot sample (truncated, unreadable, of another
        # format) gives no estimate, and the read itself then reports it with its own exit status
        try:
            bound = work_disk_bound(names, self.config)
            if free is None or (bound is not None and bound < free):  # room enough: no need to sample
                return
            estimate = work_disk_estimate(names, self.config)
        except Exception:  # noqa: BLE001 - see above
            return
        if estimate is None:  # an input the sample cannot read (web archives, stdin): no estimate
            return
        need = estimate["work_bytes"] + (estimate["kept_bytes"] if write_kept else 0)
        if need > free:
            raise OutputError(f"not enough disk for this run: about {need / 1e9:,.1f} GB needed in {where} "
                              f"({estimate['records']:,.0f} records x {estimate['bytes_per_record']:,.0f} bytes "
                              f"of work files{', and the kept corpus' if write_kept else ''}), "
                              f"{free / 1e9:,.1f} GB free; free some space or choose another output (-o, --work-dir)")

    def has_sources(self, paths) -> bool:
        """Whether records carry a source: several inputs, a source field, an index to read or write."""
        return (len(paths) > 1 or self.config.source_field is not None or self.against is not None
                or self.save_index is not None)

    def _output_failure(self, exc: OSError, run, target):
        """The one-line error of a write the machine refused (with the space the run needs), or
        ``exc`` itself when it is not one (an input's, or a bug)."""
        import errno

        from .io.write.outputs import folder_bytes, output_error

        name = os.path.abspath(exc.filename) if isinstance(getattr(exc, "filename", None), str) else ""
        ours = not name or name.startswith(os.path.abspath(run.path)) or (
            target.is_local and name.startswith(os.path.abspath(target.url)))
        if exc.errno in (errno.EACCES, errno.EPERM) and not ours:
            return exc  # an input that cannot be read: not an output's fault
        return output_error(exc, exc.filename or run.path, needed=self._space_needed(), used=folder_bytes(run.path))

    def _space_needed(self) -> int:
        """About what a run needs on its output's filesystem. Once the sketch stage is saved: its
        folder as measured, about 200 bytes a record for the later stages and clusters.jsonl, and
        the input's size again for the kept corpus. Before: four times the input's size (3.7
        times, measured, on benchmarks/scale.py's 2M documents; more for very short records,
        whose 128 signature values outweigh their text)."""
        sketch = getattr(self, "_sketch_bytes", None)
        inputs = getattr(self, "_inputs_bytes", 0)
        if sketch is None:
            return int(4 * inputs)
        return int(sketch + 200 * getattr(self, "_records", 0) + inputs)

    def _memory_failure(self):
        from .errors import RunMemoryError

        now = self.in_memory_mb
        advice = (f"rerun the same command with --in-memory-mb {max(0, int(now // 4))} (now {now:g}) to hold less "
                  "in memory and spill more to the work folder; it resumes after the last completed stage"
                  if now > 0 else "--in-memory-mb is already 0: give the process more memory, or split the input")
        return RunMemoryError(f"out of memory in the {self._stage_name} stage (peak {peak_memory_mb():,.0f} MB): "
                              f"{advice}")

    def dedup_records(self, records) -> tuple[Outcome, list[tuple], dict]:
        """``(outcome, pairs, summary)`` of records given in input order (Documents and Skipped
        with ordinals 0, 1, 2, ..., as :func:`neardup.io.read_documents` yields them): the same
        outcome, verified pairs (``(a, b, jaccard, estimate)``, as in ``pairs.jsonl``) and summary
        (without ``kept_output``) as :meth:`run` writes, without files."""
        start = time.perf_counter()
        work = tempfile.mkdtemp(prefix="neardup-", dir=self.work_dir)
        try:
            outcome, pairs, stats = self._dedup(records, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        pairs = list(pairs.rows(outcome.ids))
        t = time.perf_counter()
        summary = self._summary(outcome, stats, None)
        self.seconds["summary"] = time.perf_counter() - t
        self.seconds["total"] = time.perf_counter() - start
        summary["seconds"] = self.stage_seconds()
        summary.pop("kept_output")
        return outcome, pairs, summary

    def stage_seconds(self) -> dict:
        """Seconds per stage, the table both engines give in ``summary.json`` (:data:`STAGES`, then
        ``total``); the local read-and-sketch stage is its own minus the exact pass run inside it."""
        got = dict(self.seconds)
        got["read_and_sketch"] = got.get("read_and_sketch", 0.0) - got.get("exact_pass", 0.0)
        return stage_table(got)

    # ------------------------------------------------------------------------------------------
    def _dedup(self, docs, work: str, kept_known=None, run=None):
        """The outcome of every record, the verified pairs and the statistics; ``kept_known(kept)``
        is called with the final boolean mask of kept records (by ordinal) as soon as it is known.

        With ``run`` (a :class:`~neardup.io.write.runfolder.RunFolder`), each stage's result is saved in
        the work folder as it completes, and a stage saved by an earlier, interrupted run is read
        back instead of being run again (the ``_load_*``/``_save_*`` methods below)."""
        from .io.write.checkpoints import reached

        def stage(name: str):
            self._stage_name = name
            reached(name)
            return run is not None and run.done(name)

        t0 = time.perf_counter()
        if stage("sketch"):
            got = self._load_sketch(run)
        else:
            got = self._read_and_sketch(docs, run.stage_partial("sketch") if run else work)
            self.seconds["read_and_sketch"] = time.perf_counter() - t0
            if got.local_of is not None:  # keep="source" moved holders: copies point at the final one
                for o, first in got.exact_of.items():  # (before the stage is saved, which holds exact_of)
                    while first in got.exact_of:
                        first = got.exact_of[first]
                    got.exact_of[o] = first
            if run is not None:
                self._save_sketch(run, got)
                # what was read is let go before the saved stage is read back: both at once were
                # every per-record array twice (and the exact pass's table) at the stage's end
                got = None
                got = self._load_sketch(run)

        # the sketched ordinals and shingle counts as the stage holds them (views, not copies)
        sk = got.sketched.array()
        got.first_by_fp = None  # (the exact pass is done)
        counts = (got.n_shingles[0] if len(got.n_shingles) == 1 else np.concatenate(got.n_shingles)
                  if got.n_shingles else np.zeros(0, dtype=np.int64))
        got.n_shingles = [counts]
        stats_shingles = int(counts.sum())
        offsets = np.zeros(counts.size + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        shingle_ids = got.id_pieces.finish()
        self._records = len(got.ids)
        if run is not None:
            from .io.write.outputs import folder_bytes

            self._sketch_bytes = folder_bytes(os.path.join(run.path, "sketch"))
        stats: dict = {"candidate_pairs": 0, "estimate_filtered": 0, "verified_pairs": 0,
                       "n_shingles_total": stats_shingles}
        spilled_again = 0  # bytes of the second read's shingle ids spilled (when the first dropped them)

        t = time.perf_counter()
        if stage("candidates"):
            arrays, meta = run.load("candidates")
            ci, cj, est = arrays["ci"], arrays["cj"], arrays["est"]
            stats.update(meta["stats"])
            got.sig_pieces.finish()
            self.seconds["candidates"] = meta["seconds"]
        else:
            ci, cj, est = self._candidates(got, sk.size, stats, shingle_ids, offsets, work)
            self.seconds["candidates"] = time.perf_counter() - t
            if run is not None:
                run.save("candidates", {"ci": ci, "cj": cj, "est": est},
                         {"stats": stats, "seconds": self.seconds["candidates"]})

        t = time.perf_counter()
        cfg = self.config
        again = None  # the second read's pieces of shingle ids, when the first pass dropped them
        if got.ids_dropped and not (run is not None and run.done("verify") and run.done("cluster")):
            if run is not None and run.done("verify"):  # only the clusters' pairs are measured again
                arrays, _ = run.load("verify")
                need = np.union1d(arrays["i"], arrays["j"])
            else:
                need = np.union1d(ci, cj)
            shingle_ids = offsets = None  # the first read's (its ids were dropped): not held beside the second's
            shingle_ids, offsets, again = self._ids_again(sk, counts, need, work)  # timed with verify
            spilled_again = again.spilled_bytes
        if stage("verify"):
            arrays, meta = run.load("verify")
            edges = Edges(arrays["i"], arrays["j"], arrays["jaccard"], arrays["estimate"], arrays["score"])
            self.seconds["verify"] = meta["seconds"]
        else:
            if cfg.method == "exact":
                edges = Edges.empty()
            else:
                threshold = cfg.threshold if cfg.verify and cfg.method in ("minhash", "broder") else None
                parts = in_pair_slices(shingle_ids, ci, cj, lambda lo, hi: verify_pairs(
                    shingle_ids, offsets, counts, ci[lo:hi], cj[lo:hi], est[lo:hi], measure=cfg.measure,
                    threshold=threshold, jobs=self.jobs), offsets=offsets)
                edges = parts[0] if len(parts) == 1 else Edges(
                    *(np.concatenate([getattr(p, k) for p in parts]) for k in ("i", "j", "jaccard", "estimate", "score")))
            self.seconds["verify"] = time.perf_counter() - t
            if run is not None:
                run.save("verify", {"i": edges.i, "j": edges.j, "jaccard": edges.jaccard, "estimate": edges.estimate,
                                    "score": edges.score}, {"seconds": self.seconds["verify"]})
        stats["verified_pairs"] = len(edges)

        t = time.perf_counter()
        pairs = VerifiedPairs(edges, sk)
        write = None
        if self.against is not None:
            outcome, (all_edges, all_sk, names), sizes, kinds, chained, write = self.against.resolve(
                ids=got.ids, sources=got.sources, reason=got.reason,
                lengths=np.array(got.lengths, dtype=np.int64),
                keyvals=np.array(got.keyvals, dtype=np.float64) if cfg.keep == "field" else None,
                exact_of=dict(got.exact_of.items()), sk=sk,
                records=self._run_records(got, sk, counts, offsets, shingle_ids, names=self.against.update),
                keys=got.band_keys, edges=edges, config=self._survivor_config(), jobs=self.jobs)
            if kept_known is not None:
                kept_known(outcome.kept)
            pairs = VerifiedPairs(all_edges, all_sk, names)
            stats.update(self.against.stats)
            stats["kinds"] = kinds
            stats["chained"], stats["chained_examples"], stats["cluster_sizes"] = len(chained), chained[:20], sizes
        elif stage("cluster"):
            outcome = self._load_cluster(run, got, stats)
            if kept_known is not None:
                kept_known(outcome.kept)
        else:
            survivors = self._survivors(got, sk, shingle_ids, offsets, counts, edges, kept_known)
            if self.save_index is None:
                # the last stage that reads the shingle ids, their offsets and counts, and the
                # texts' lengths is done: they are let go before every record's outcome is made,
                # the largest arrays of the run (at 30M records about 40 bytes a record and the
                # second read's ids, up to the memory budget)
                shingle_ids = offsets = counts = again = None
                got.n_shingles, got.lengths = [], None
                got.id_pieces.held = []
            outcome = self._outcome(got, sk, survivors, stats)
            if self.save_index is not None:
                from .store.incremental import save_run

                stats["index_documents_saved"] = save_run(
                    self.save_index, self._run_records(got, sk, counts, offsets, shingle_ids), survivors[0])
            self.seconds["cluster"] = time.perf_counter() - t
            if run is not None:
                self._save_cluster(run, outcome, stats)
        if write is not None:  # --update-index: the new records, in one transaction
            stats["index_documents_added"] = self.against.index._run_write(write)
        if self.against is not None:
            self.seconds["cluster"] = time.perf_counter() - t
        stats["skipped"] = dict(sorted(got.skipped.items()))
        stats["spilled_bytes"] = (got.id_pieces.spilled_bytes + got.sig_pieces.spilled_bytes
                                  + stats.get("grouping_spilled_bytes", 0) + spilled_again)
        if "duplicate_ids" not in stats:  # a cluster stage saved by an earlier run
            stats["duplicate_ids"] = sum(g.size - 1 for g in repeated_names(_named(got)))
        stats["urls"] = got.urls
        return outcome, pairs, stats

    #: Text read again per call of the shingle kernel (a batch of the second read).
    AGAIN_BATCH_BYTES = 8 << 20

    def _ids_again(self, sk: np.ndarray, counts: np.ndarray, need: np.ndarray, work: str):
        """``(shingle_ids, offsets, pieces)``: the shingle ids of the sketched records at the local
        indices ``need`` (sorted), made again from a second read of the input (``self._reread``),
        as pieces held within the memory budget and spilled past it; ``offsets`` over every
        sketched record, the others' runs empty. Each document's count of ids is checked against
        the first pass's: the two reads must have seen the same records."""
        from .io import Skipped
        from .io.documents import EncodedDocuments
        from .stages.sketch import shingle_runs

        cfg = self.config
        if self._reread is None:
            raise RuntimeError("internal error: the shingle ids were dropped but the input cannot be read again")
        pieces = _Pieces(os.path.join(work, "shingles-again.u64"), _Budget(int(self.in_memory_mb * (1 << 20))))
        want = sk[need]  # ordinals, increasing (sk is in input order)
        texts: list[str] = []
        size = 0
        made = []  # the counts of the documents made again, in order

        def flush():
            nonlocal texts, size
            if texts:
                ids, offs = shingle_runs(texts, cfg.shingle, jobs=self.jobs)
                pieces.append(ids)
                made.append(np.diff(offs))
                texts, size = [], 0

        def take(text: str, nbytes: int):
            nonlocal size
            texts.append(text)
            size += nbytes
            if size >= self.AGAIN_BATCH_BYTES:
                flush()

        at = ordinal = 0
        records = self._reread()
        for rec in records:
            if at >= want.size:  # the last one needed: the rest is not read
                records.close()
                break
            if type(rec) is EncodedDocuments:
                k = len(rec)
                stop = int(np.searchsorted(want, ordinal + k))
                for i in (want[at:stop] - ordinal).tolist():
                    take(rec.text(i), int(rec.offsets[i + 1] - rec.offsets[i]))
                at, ordinal = stop, ordinal + k
            else:
                if not isinstance(rec, Skipped) and want[at] == ordinal:
                    take(rec.text, len(rec.text))
                    at += 1
                ordinal += 1
        flush()
        again = np.concatenate(made) if made else np.zeros(0, dtype=np.int64)
        if again.size != need.size or not np.array_equal(again, counts[need]):
            raise RuntimeError("internal error: the input read again does not give the records of the first read "
                               "(was it changed during the run?)")
        runs = np.zeros(counts.size, dtype=np.int64)
        runs[need] = counts[need]
        offsets = np.zeros(counts.size + 1, dtype=np.int64)
        np.cumsum(runs, out=offsets[1:])
        pieces.close_file()
        return pieces.finish(), offsets, pieces

    # the stages' results in the work folder --------------------------------------------------
    def _save_sketch(self, run, got: _Sketched) -> None:
        got.id_pieces.close_file()
        got.sig_pieces.close_file()
        arrays = {
            "shingles-0": got.id_pieces.held, "signatures-0": got.sig_pieces.held,  # -1: the spill files
            # views of the columns (np.array would copy every one while the whole record is held)
            "lengths": got.lengths.array(),
            "keyvals": got.keyvals.array(),
            "exact_of": (np.stack(got.exact_of.arrays(), axis=1) if isinstance(got.exact_of, Copies)
                         else np.array(sorted(got.exact_of.items()), dtype=np.int64).reshape(-1, 2)),
            "sketched": got.sketched.array(),
            "n_shingles": (np.concatenate(got.n_shingles) if got.n_shingles else np.zeros(0, dtype=np.int64)),
            "id_bytes": np.frombuffer(got.ids.data, dtype=np.uint8), "id_ends": got.ids.ends,
            "reason_codes": got.reason.codes.array(),
        }
        if got.band_parts:
            arrays["band_keys"] = np.concatenate(got.band_parts)
        if got.simhashes:
            arrays["simhashes"] = np.concatenate(got.simhashes)
        run.save("sketch", arrays, {
            "reason_labels": got.reason.labels, "skipped": dict(got.skipped),
            "urls": sorted(got.urls.items()),  # web archives' pages: clusters.jsonl's url key
            "url_keys": sorted(got.url_keys.items()), "claim_keys": sorted(got.claim_keys.items()),
            "sources": got.sources,  # each record's source (several inputs, --source-field), or None
            "spilled_bytes": [got.id_pieces.spilled_bytes, got.sig_pieces.spilled_bytes],
            "signature_dtype": got.sig_pieces.dtype.name,
            "ids_dropped": got.ids_dropped,
            "input_report": self._input_report.as_dict() if getattr(self, "_input_report", None) else None,
            "seconds": {k: self.seconds[k] for k in ("read_and_sketch", "sketch_wait_and_collect") if k in self.seconds},
        }, digests={os.path.basename(p.path): p.digest.hexdigest() for p in (got.id_pieces, got.sig_pieces)
                    if p.digest is not None})

    def _load_sketch(self, run) -> _Sketched:
        arrays, meta = run.load("sketch")
        got = _Sketched(ids=Ids(arrays.pop("id_bytes").data, arrays["id_ends"]),
                        reason=Labels(meta["reason_labels"], arrays["reason_codes"]),
                        lengths=Growable(np.int64, arrays["lengths"]), keyvals=Growable(np.float64, arrays["keyvals"]),
                        skipped=Counter(meta["skipped"]),
                        exact_of=(Copies(arrays["exact_of"][:, 0], arrays["exact_of"][:, 1])
                                  if self.config.keep != "source" else dict(arrays["exact_of"].tolist())),
                        sketched=Growable(np.int64, arrays["sketched"]), n_shingles=[arrays["n_shingles"]])
        got.urls = {int(o): url for o, url in meta.get("urls", [])}
        got.url_keys = {int(o): key for o, key in meta.get("url_keys", [])}
        got.claim_keys = {int(o): key for o, key in meta.get("claim_keys", [])}
        got.sources = meta.get("sources")
        got.band_parts = [arrays["band_keys"]] if "band_keys" in arrays else []
        got.simhashes = [arrays["simhashes"]] if "simhashes" in arrays else []
        ids_spilled, sig_spilled = meta["spilled_bytes"]
        got.ids_dropped = bool(meta.get("ids_dropped", False))
        report = getattr(self, "_input_report", None)
        if report is not None and meta.get("input_report"):  # what the first pass left out, as it saw it
            report.skipped_files[:] = meta["input_report"]["skipped_files"]
            report.ignored_files[:] = meta["input_report"]["ignored_files"]
        got.id_pieces = _Pieces.restored([arrays["shingles-0"], arrays.get("shingles-1", arrays["shingles-0"][:0])],
                                         ids_spilled)
        # the signatures' width as the run kept them (uint32 for a 32-bit family: see _read_and_sketch)
        width = np.dtype(meta.get("signature_dtype", "uint64"))
        sig_held, sig_spill = arrays["signatures-0"], arrays.get("signatures-1")
        got.sig_pieces = _Pieces.restored([sig_held if sig_held.size else sig_held.astype(width),
                                           sig_spill if sig_spill is not None else np.zeros(0, width)], sig_spilled)
        self.seconds.update(meta["seconds"])
        return got

    def _save_cluster(self, run, outcome: Outcome, stats: dict) -> None:
        arrays = {"kept": outcome.kept}
        meta = {"seconds": self.seconds["cluster"],
                "stats": {k: stats[k] for k in ("chained", "chained_examples", "kinds", "urls_identity")
                          if k in stats},
                # with sources a cluster is named (source, survivor id): JSON keeps the pair as a list
                "cluster_sizes": list(stats["cluster_sizes"].items())}
        if isinstance(outcome.cluster, Names):  # outcomes()'s arrays
            arrays.update(reason_codes=outcome.reason.codes.array(), cluster=outcome.cluster.ordinals,
                          duplicate_of=outcome.duplicate_of.ordinals, similarity=outcome.similarity.values)
            meta["reason_labels"] = outcome.reason.labels
        else:  # records with sources: split_sources gives the columns as lists
            meta.update(reason=list(outcome.reason), cluster=list(outcome.cluster),
                        duplicate_of=list(outcome.duplicate_of), similarity=list(outcome.similarity),
                        source=outcome.source, duplicate_of_source=outcome.duplicate_of_source)
        run.save("cluster", arrays, meta)

    def _load_cluster(self, run, got: _Sketched, stats: dict) -> Outcome:
        arrays, meta = run.load("cluster")
        stats.update(meta["stats"])
        stats["cluster_sizes"] = Counter({tuple(c) if isinstance(c, list) else c: size
                                          for c, size in meta["cluster_sizes"]})
        self.seconds["cluster"] = meta["seconds"]
        if "reason_labels" in meta:
            return Outcome(ids=got.ids, reason=Labels(meta["reason_labels"], arrays["reason_codes"]),
                           cluster=Names(arrays["cluster"], got.ids),
                           duplicate_of=Names(arrays["duplicate_of"], got.ids),
                           similarity=Floats(arrays["similarity"]), kept=arrays["kept"])
        return Outcome(ids=got.ids, reason=meta["reason"], cluster=meta["cluster"], duplicate_of=meta["duplicate_of"],
                       similarity=meta["similarity"], kept=arrays["kept"], source=meta.get("source"),
                       duplicate_of_source=meta.get("duplicate_of_source"))

    def _read_and_sketch(self, docs, work: str) -> _Sketched:
        """Read every record, sketch the batches on ``self.jobs`` threads, and run the exact pass.

        The kernel releases the GIL: a batch's chunks run as tasks of one pool while this thread
        reads and parses the next batch, whose chunks are queued before this one's are taken, so
        no thread waits for the last chunk of a batch. Results are taken in submission order, so
        the exact pass sees records in input order.
        """
        from .io import Skipped
        from .io.documents import EncodedDocuments

        cfg = self.config
        got = _Sketched()
        # shingle ids (for verification) and signatures (for estimates) in memory up to the budget
        budget = _Budget(int(self.in_memory_mb * (1 << 20)))
        # (named as the sketch stage's saved folder has them: -0 what was held, -1 the spill)
        # signatures of the 32-bit family (the default) are kept at their width, uint32: half the
        # memory and spill of uint64
        narrow = cfg.minhash.family == "mulshift32"
        got.sig_pieces = (_Pieces(os.path.join(work, "signatures-1.u32"), budget, np.uint32) if narrow
                          else _Pieces(os.path.join(work, "signatures-1.u64"), budget))
        got.id_pieces = _Pieces(os.path.join(work, "shingles-1.u64"), budget)
        band = cfg.banding() if cfg.method == "minhash" else None
        if cfg.keep != "source":
            got.first_by_fp = FingerprintTable()
            got.exact_of = Copies()
        first_by_fp = got.first_by_fp
        sources = got.sources = [] if self.source_labels is not None or cfg.source_field is not None else None
        url_field, url_rules = cfg.url_field, cfg.rules_of_urls()
        pending: list = []
        self.seconds["exact_pass"] = 0.0

        def collect():
            batch, parts, ords, nbytes = pending.pop(0)
            self._take_batch(got, batch.result(), parts, ords, first_by_fp, band, batch.too_large)
            if self.progress:
                self.progress.update(len(ords), nbytes)

        # a batch is a list of parts in input order: lists of texts (str), and EncodedDocuments
        parts: list = []
        ords: list[int] = []
        nbytes = 0
        with ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="neardup-sketch") as sketcher:
            def flush():
                nonlocal parts, ords, nbytes
                if parts:
                    if self.against is not None and band is not None:  # (the index may start reading its postings)
                        self.against.expect(len(ords))
                    batch = sketch_stage.submit_batch(sketcher, parts, cfg.shingle, cfg.minhash, jobs=self.jobs)
                    pending.append((batch, parts, ords, nbytes))
                    parts, ords, nbytes = [], [], 0
                while len(pending) > 1:  # at most one batch sketching while the next is read
                    collect()

            for rec in docs:
                if sources is not None:
                    if cfg.source_field is not None:
                        value = rec.meta.get(cfg.source_field) if hasattr(rec, "meta") else None
                        sources.append("" if value is None else str(value))
                    else:
                        label = self.current_source
                        sources.extend([label] * (len(rec) if type(rec) is EncodedDocuments else 1))
                if type(rec) is EncodedDocuments:
                    k = len(rec)
                    ords.extend(range(len(got.ids), len(got.ids) + k))
                    got.ids.extend(rec.ids)
                    got.reason.extend_with("", k)
                    got.lengths.extend(rec.lengths)
                    parts.append(rec)
                    nbytes += int(rec.offsets[-1] - rec.offsets[0])
                elif isinstance(rec, Skipped):
                    got.ids.append(rec.id)
                    got.reason.append(f"skipped:{rec.reason}")
                    got.lengths.append(0)
                    got.keyvals.append(math.nan)
                    got.skipped[rec.reason] += 1
                    continue
                else:
                    ords.append(len(got.ids))
                    if rec.meta and rec.meta.get("url"):
                        got.urls[len(got.ids)] = rec.meta["url"]
                    if url_field is not None:
                        key = record_key(rec.meta.get(url_field) or rec.meta.get("url"), url_rules)
                        if key is not None:
                            got.url_keys[len(got.ids)] = key
                        claim = claim_key(rec.meta, url_rules)
                        if claim is not None:
                            got.claim_keys[len(got.ids)] = claim
                    got.ids.append(rec.id)
                    text = rec.text
                    got.lengths.append(len(text))
                    if cfg.keep == "field":
                        got.keyvals.append(keep_value(rec.meta.get(cfg.keep_field)))
                    got.reason.append("")
                    if parts and type(parts[-1]) is list:
                        parts[-1].append(text)
                    else:
                        parts.append([text])
                    nbytes += len(text)
                if nbytes >= self.BATCH_BYTES:
                    flush()
            flush()
            while pending:
                collect()
        return got

    def _take_batch(self, got: _Sketched, sig, parts, ords, first_by_fp: dict, band, too_large=frozenset()) -> None:
        """Keep what the later stages need of a sketched batch: the exact pass first, then the
        shingle ids, signatures and band keys (or simhashes) of the first holders. ``too_large``:
        positions in the batch of texts the kernel could not take (sketched as empty)."""
        cfg = self.config
        t = time.perf_counter()
        indexed = (self.against.indexed_holders(sig.fingerprints, sig.n_shingles) if self.against is not None
                   else None)
        new, empty, copies = first_holders(ords, sig.fingerprints, sig.n_shingles, first_by_fp, indexed)
        oversized = {ords[k] for k in too_large}
        for o in empty:
            why = "too_large_nfkc" if o in oversized else "empty"
            got.reason[o] = f"skipped:{why}"
            got.skipped[why] += 1
        if isinstance(got.exact_of, Copies):
            got.exact_of.add(copies)
            if copies:
                got.reason[np.array([o for o, _ in copies], dtype=np.int64)] = "exact"
        else:
            for o, first in copies:
                got.exact_of[o] = first
                got.reason[o] = "exact"
        self.seconds["exact_pass"] += time.perf_counter() - t
        if new.any():
            got.sketched.extend(np.asarray(ords, dtype=np.int64)[new])
            if self.against is not None or self.save_index is not None:  # the index stores them
                got.fingerprint_parts.append(sig.fingerprints[new])
        if cfg.keep == "source" and copies:
            self._prefer_sources(got, copies, dict(zip(ords, sig.fingerprints.tolist())))
        if not new.any():
            return
        got.n_shingles.append(sig.n_shingles[new])
        if cfg.method != "exact" and not got.ids_dropped:
            for piece in _kept_ids(sig, new):
                if self._reread is not None and piece.nbytes > got.id_pieces.budget.left:
                    # past the budget the ids are not spilled: the candidates' are made again (_ids_again)
                    got.id_pieces.release()
                    got.ids_dropped = True
                    break
                got.id_pieces.append(piece)
        if cfg.method == "minhash":
            values = sig.values if new.all() else sig.values[new]
            got.sig_pieces.append(values)
            if self.against is not None or self.save_index is not None:  # the index needs every key
                got.band_parts.append(candidate_stage.band_keys(values, band.bands, band.rows))
            if self.against is not None:  # looked up in the index while the next batch is sketched
                self.against.look_up(got.band_parts[-1], first_local=len(got.sketched) - int(new.sum()))
        elif cfg.method == "simhash":
            from .stages.encode import batch_texts

            texts = [t for t, keep in zip(batch_texts(parts), new.tolist()) if keep]
            got.simhashes.append(sketch_stage.simhashes(texts, cfg.shingle.normalize))

    def _prefer_sources(self, got: _Sketched, copies, fp_of: dict) -> None:
        """``keep="source"``: an exact copy from a preferred source takes its first holder's place
        as the sketched record (the same content has the same sketch), and the holder becomes its
        copy. Copies of the old holder are pointed at the new one before clustering."""
        rank = {s: r for r, s in reversed(list(enumerate(self.config.keep_sources)))}
        if got.local_of is None:
            got.local_of = {}
        for o, first in copies:
            if first < 0 or rank.get(got.sources[o], len(rank)) >= rank.get(got.sources[first], len(rank)):
                continue  # an indexed holder, or not a better source
            if not got.local_of or got.sketched[got.local_of.get(first, 0)] != first:
                got.local_of.update((x, k) for k, x in enumerate(got.sketched))
            pos = got.local_of.pop(first)
            got.sketched[pos], got.local_of[o] = o, pos
            del got.exact_of[o]
            got.exact_of[first] = o
            got.reason[o], got.reason[first] = "", "exact"
            got.first_by_fp[fp_of[o]] = o

    #: The groupings (band keys, method broder's samples) spill past this budget at the least (``in_memory_mb`` 0
    #: spills the held ids; grouping by one record at a time would only be slow).
    GROUPING_MIN_MB = 4

    def _grouping_budget(self) -> int:
        """Bytes each grouping (band keys, samples) may hold before it spills."""
        return int(max(self.in_memory_mb, self.GROUPING_MIN_MB) * (1 << 20))

    def _sampled_candidates(self, shingle_ids, offsets, stats: dict, work: str):
        """Methods broder and greedy: candidate pairs from each document's sample of its ids."""
        cfg = self.config
        size = cfg.sample_mod if cfg.sample == "mod_m" else cfg.sample_size
        values, sample_offsets = candidate_stage.sample_ids(shingle_ids, offsets, cfg.sample, size)
        sample = {"kind": cfg.sample, **({"mod": cfg.sample_mod} if cfg.sample == "mod_m" else {"size": size})}
        if cfg.method == "greedy":
            ci, cj = candidate_stage.greedy_pairs(values, sample_offsets)
            stats["samples"] = {**sample, "values": int(values.size)}
            stats["candidate_pairs"] = int(ci.size)
            return ci, cj, np.full(ci.size, np.nan)
        ci, cj, est, bstats = candidate_stage.sampled_candidates(values, sample_offsets, cfg.threshold,
                                                                 measure=cfg.measure, cap=cfg.sample_cap,
                                                                 budget_bytes=self._grouping_budget(), folder=work)
        stats["grouping_spilled_bytes"] = sum(g["spilled_bytes"] for g in bstats["grouping"].values())
        stats["samples"] = {**sample, "cap": cfg.sample_cap, "values": int(values.size),
                            **{k: v for k, v in bstats.items() if k not in ("sample_pairs_kept",)}}
        stats["candidate_pairs"] = bstats["sample_pairs"]
        stats["estimate_filtered"] = bstats["sample_pairs"] - bstats["sample_pairs_kept"]
        return ci, cj, est

    #: Signature rows turned into band keys at a time (bounds the keys' temporary arrays).
    BAND_ROWS = 1 << 16

    def _band_candidates(self, signatures: list[np.ndarray], work: str):
        """Band-key candidates of the signature pieces (held, or memory-mapped from the spill),
        keys made a slice at a time and grouped within the budget
        (:class:`neardup.stages.candidates.BandKeys`: in memory while they fit, partitioned
        spill and external sort past it; the same pairs either way)."""
        band = self.config.banding()
        with candidate_stage.BandKeys(self._grouping_budget(), work) as keys:
            for piece in signatures:
                # a mapped piece's pages let go every MAPPED_PASS_BYTES read (see mapped_resident_bound)
                every = max(1, MAPPED_PASS_BYTES // max(1, self.BAND_ROWS * piece.strides[0]))
                for k, a in enumerate(range(0, piece.shape[0], self.BAND_ROWS)):
                    keys.add(candidate_stage.band_keys(piece[a:a + self.BAND_ROWS], band.bands, band.rows))
                    if k % every == every - 1:
                        release_pages(piece)
                release_pages(piece)
            return keys.candidates()

    def _candidates(self, got: _Sketched, n: int, stats: dict, shingle_ids, offsets, work: str):
        """Candidate pairs (local indices) with their estimates, after the estimate filter."""
        cfg = self.config
        if cfg.method in ("broder", "greedy") and n:
            got.sig_pieces.finish()
            return self._sampled_candidates(shingle_ids, offsets, stats, work)
        if cfg.method == "minhash" and n:
            signatures = got.sig_pieces.finish(cfg.minhash.num_perm)
            if self.against is not None or self.save_index is not None:
                keys = np.concatenate(got.band_parts)
                ci, cj, cstats = candidate_stage.band_candidates(keys)
                got.signatures, got.band_keys = signatures, keys
                del keys
            else:
                ci, cj, cstats = self._band_candidates(signatures, work)
            grouping = cstats.pop("grouping", None)
            if grouping is not None:  # the keys went past the budget: their partition files
                stats["band_grouping"] = grouping
                stats["grouping_spilled_bytes"] = sum(g["spilled_bytes"] for g in grouping.values())
            stats.update(cstats)
            stats["candidate_pairs"] = int(ci.size)
            floor = (candidate_stage.estimate_floor(cfg.threshold, cfg.minhash.num_perm, cfg.measure)
                     if cfg.verify else None)
            parts = in_pair_slices(signatures, ci, cj, lambda lo, hi: candidate_stage.estimate_filter(
                signatures, ci[lo:hi], cj[lo:hi], floor, jobs=self.jobs))
            if len(parts) == 1:
                ci, cj, est, stats["estimate_filtered"] = parts[0]
            else:
                ci, cj, est = (np.concatenate([p[k] for p in parts]) for k in range(3))
                stats["estimate_filtered"] = sum(p[3] for p in parts)
            return ci, cj, est
        got.sig_pieces.finish()
        if cfg.method == "simhash" and n:
            ci, cj, est = candidate_stage.simhash_candidates(np.concatenate(got.simhashes), cfg.max_distance)
            stats["candidate_pairs"] = int(ci.size)
            return ci, cj, est
        none = np.empty(0, dtype=np.int64)
        return none, none, np.empty(0)

    def _survivors(self, got: _Sketched, sk, shingle_ids, offsets, counts, edges: Edges, kept_known):
        """``(survivor_local, kept, members, member_sims)``: clusters over the sketched records,
        their survivors (``kept``, by ordinal, given to ``kept_known`` at once) and each other
        member's exact similarity to its survivor: the last step that reads the shingle ids."""
        cfg = self.config
        ei, ej = edges.i, edges.j
        self._url_links = links = None
        if cfg.url_field is not None:
            links = self._url_links = self._links(got, sk, shingle_ids, offsets, counts)
            ei, ej = np.concatenate((ei, links.i)), np.concatenate((ej, links.j))
        comp = components(sk.size, ei, ej)
        del ei, ej
        keyvals = np.array(got.keyvals, dtype=np.float64) if cfg.keep == "field" else None
        priority = None
        if cfg.keep == "source":  # the preferred sources first, then the first record
            rank = {s: r for r, s in reversed(list(enumerate(cfg.keep_sources)))}
            priority = np.array([rank.get(got.sources[o], len(rank)) for o in sk.tolist()], dtype=np.int64)
        if links is not None and links.priority is not None:  # a claimed record first, whatever the policy
            priority = links.priority if priority is None else links.priority * (int(priority.max()) + 1) + priority
        survivor_local = choose_survivors(comp, sk, "first" if cfg.keep == "source" else cfg.keep,
                                          got.lengths.array(), keyvals, priority=priority)
        del comp, keyvals, priority
        kept = kept_mask(len(got.ids), sk, survivor_local)
        if kept_known is not None:
            kept_known(kept)
        members, member_sims = similarity_to_survivors(shingle_ids, offsets, counts, survivor_local, cfg.measure,
                                                       jobs=self.jobs, in_slices=in_pair_slices)
        return survivor_local, kept, members, member_sims

    def _links(self, got: _Sketched, sk, shingle_ids, offsets, counts):
        """URL identity over the sketched records (:func:`neardup.stages.urls.url_links`): an
        exact copy's URL stands for its first holder, and a claim agrees with the content when
        the pair's similarity (the run's measure) is at the threshold."""
        cfg = self.config
        ords = sk.tolist()
        keys = [got.url_keys.get(o) for o in ords]
        claims = [got.claim_keys.get(o) for o in ords]
        aliases, alias_claims = [], []
        if got.url_keys or got.claim_keys:
            copies, holders = (got.exact_of.arrays() if isinstance(got.exact_of, Copies)
                               else (np.fromiter(got.exact_of.keys(), np.int64), np.fromiter(got.exact_of.values(), np.int64)))
            local = {o: k for k, o in enumerate(ords)}
            for o, h in zip(np.asarray(copies).tolist(), np.asarray(holders).tolist()):
                if h not in local:
                    continue
                key, claim = got.url_keys.get(o), got.claim_keys.get(o)
                if key is not None:
                    aliases.append((key, local[h]))
                if claim is not None:
                    alias_claims.append((claim, local[h]))

        def agree(a, b):
            if cfg.method == "exact":  # only exact copies count: the same shingles
                return pair_similarities(shingle_ids, offsets, counts, a, b, jobs=self.jobs)["jaccard"] >= 1.0
            return score_of(pair_similarities(shingle_ids, offsets, counts, a, b, jobs=self.jobs),
                            cfg.measure) >= cfg.threshold

        return url_links(keys, claims, agree, ids=take_values(got.ids, sk), aliases=aliases, alias_claims=alias_claims)

    def _outcome(self, got: _Sketched, sk, survivors, stats: dict) -> Outcome:
        """Every record's outcome from :meth:`_survivors`'s ``survivors``, and the clusters' figures."""
        cfg = self.config
        survivor_local, kept, members, member_sims = survivors
        # with sources, records are named (source, id): ids need only be unique within a source
        names = got.ids if got.sources is None else list(zip(got.sources, got.ids))
        repeated = repeated_names(names)  # found once: for the cluster sizes and duplicate_ids
        stats["duplicate_ids"] = sum(g.size - 1 for g in repeated)
        outcome, cluster_sizes, chained = outcomes(
            names, got.reason, sk, survivor_local, kept, members, member_sims,
            got.exact_of.arrays() if isinstance(got.exact_of, Copies) else got.exact_of,
            chain_below=cfg.threshold if cfg.method in ("minhash", "broder") else None, repeated=repeated)
        links = getattr(self, "_url_links", None)
        if links is not None:
            relabelled = relabel(outcome.reason, sk, survivor_local, links)
            stats["urls_identity"] = links.stats
            if relabelled.size and chained:  # joined by their URL or claim, not through chains of content
                by_url = set(take_values(names, relabelled))
                chained = [c for c in chained if c not in by_url]
        if got.sources is not None:
            stats["kinds"] = cluster_kinds(outcome, cluster_sizes)
            outcome, chained = split_sources(outcome), [i for _, i in chained]
        stats["chained"] = len(chained)
        stats["chained_examples"] = chained[:20]
        stats["cluster_sizes"] = cluster_sizes
        return outcome

    def _survivor_config(self):
        """The configuration the survivors are chosen with against an index (indexed documents
        come first whatever the policy; ``keep="source"`` is ``"first"`` among the new records)."""
        import dataclasses

        cfg = self.config
        return dataclasses.replace(cfg, keep="first", keep_sources=()) if cfg.keep == "source" else cfg

    def _run_records(self, got: _Sketched, sk: np.ndarray, counts, offsets, shingle_ids, *, names: bool = True):
        """The sketched records as the index stores them (:class:`neardup.store.incremental.RunRecords`);
        without their ids and sources unless ``names`` (only a write to the index needs them:
        decoding 100,000 ids took 0.02 s of a run against an index that it does not update)."""
        from .store.incremental import RunRecords

        ids = sources = None
        if names:
            ords = sk.tolist()
            ids = take_values(got.ids, np.asarray(ords, dtype=np.int64))
            every = got.sources or [""] * len(got.ids)
            sources = [every[o] for o in ords]
        # (keep="source" may have put a copy in its holder's place: the same content, the same fingerprint)
        fingerprints = (np.concatenate(got.fingerprint_parts) if got.fingerprint_parts
                        else np.zeros(0, dtype=np.uint64)).astype(np.uint64, copy=False)
        return RunRecords(ids=ids, sources=sources,
                          fingerprints=fingerprints,
                          lengths=np.array(got.lengths, dtype=np.int64)[sk], counts=counts, offsets=offsets,
                          shingle_ids=shingle_ids, signatures=got.signatures or [])

    # ------------------------------------------------------------------------------------------
    def _summary(self, outcome: Outcome, stats: dict, kept_info) -> dict:
        return run_summary(outcome, stats, self.config, kept_info=kept_info, jobs=self.jobs, seconds=self.seconds)


def _named(got: _Sketched):
    """The run's records' names for :func:`repeated_names`: the ids, or with sources the
    ``(source, id)`` pairs as two columns (a distinct source coded once, no tuple per record)."""
    if got.sources is None:
        return got.ids
    distinct = dict.fromkeys(got.sources)
    if len(distinct) >= 255:  # more than a Labels column codes
        return list(zip(got.sources, got.ids))
    labels = Labels()
    code = {s: labels.code(s) for s in distinct}
    labels.codes.extend(np.fromiter(map(code.__getitem__, got.sources), np.uint8, len(got.sources)))
    return SourcedNames(labels, got.ids)


@dataclass(frozen=True)
class VerifiedPairs:
    """The verified edges of a run (local indices) and the ordinal of each sketched record;
    ``names``: the ids by ordinal when they are not the run's own (against an index, where the
    indexed documents come first)."""

    edges: Edges
    sketched: np.ndarray
    names: list | None = None

    def rows(self, ids: list[str]):
        """``(a, b, jaccard, estimate)`` of every pair by record id, rounded to 6 places as
        ``pairs.jsonl`` gives them."""
        sk, e = self.sketched, self.edges
        ids = self.names if self.names is not None else ids
        # an id column decodes its ids a chunk at a time (one at a time costs ten times as much)
        for lo in range(0, len(e.i), _PAIR_ROWS_CHUNK):
            hi = lo + _PAIR_ROWS_CHUNK
            for a, b, j, est in zip(take_values(ids, sk[e.i[lo:hi]]), take_values(ids, sk[e.j[lo:hi]]),
                                    e.jaccard[lo:hi].tolist(),
                                    e.estimate[lo:hi].tolist()):
                yield a, b, round(j, 6), round(est, 6)

    def lines(self, ids):
        """:meth:`rows` for :func:`neardup.io.write.write_pairs`: iterated, the same tuples; and,
        when the ids are an :class:`Ids` column and the kernel is built, ``jsonl_chunks()`` giving
        ``pairs.jsonl``'s bytes a chunk at a time (:func:`neardup.io.write.result_lines.pair_chunks`)."""
        return _PairLines(self, ids)


class _PairLines:
    """The verified pairs as :func:`neardup.io.write.write_pairs` takes them (see :meth:`VerifiedPairs.lines`)."""

    def __init__(self, pairs: VerifiedPairs, ids):
        self.pairs, self.ids = pairs, ids
        from .io.write import result_lines

        names = pairs.names if pairs.names is not None else ids
        if isinstance(names, Ids) and result_lines.available_for_ids():
            self.jsonl_chunks = lambda: result_lines.pair_chunks(
                names, pairs.sketched[pairs.edges.i], pairs.sketched[pairs.edges.j], pairs.edges.jaccard,
                pairs.edges.estimate)

    def __iter__(self):
        return self.pairs.rows(self.ids)


#: Pairs whose ids :meth:`VerifiedPairs.rows` decodes at once.
_PAIR_ROWS_CHUNK = 65536


def _readable_twice(inputs) -> bool:
    """Whether every input is a local regular file or folder (stdin, a FIFO or /dev/fd/N can be
    read once; a URL is read again only by the kept corpus)."""
    for p in inputs:
        if not isinstance(p, (str, os.PathLike)) or "://" in os.fsdecode(p) or os.fsdecode(p) == "-":
            return False
        try:
            mode = os.stat(p).st_mode
        except OSError:
            return False
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            return False
    return bool(inputs)


def _labelled(engine: Deduplicator, inputs):
    """The records of each ``(label, records)`` in turn, with ``engine.current_source`` set to
    the label of the input being read."""
    for label, records in inputs:
        engine.current_source = label
        yield from records


def _kept_ids(sig, new: np.ndarray):
    """The shingle ids of the batch's documents where ``new`` is true, in order, as views of the
    kernel's arrays: one per run of consecutive such documents within an array. A copy through
    a mask would cost as much again in fresh memory as the ids themselves."""
    bounds = np.zeros(len(sig.id_parts) + 1, dtype=np.int64)
    np.cumsum([p.size for p in sig.id_parts], out=bounds[1:])
    edges = np.flatnonzero(np.diff(np.concatenate(([0], new.view(np.int8), [0]))))
    for a, b in zip(edges[0::2].tolist(), edges[1::2].tolist()):  # documents a..b-1
        lo, hi = int(sig.offsets[a]), int(sig.offsets[b])
        k = int(np.searchsorted(bounds, lo, side="right")) - 1
        while lo < hi:  # the run may span the arrays of several kernel chunks
            stop = min(hi, int(bounds[k + 1]))
            if stop > lo:
                yield sig.id_parts[k][lo - bounds[k] : stop - bounds[k]]
            lo, k = stop, k + 1
