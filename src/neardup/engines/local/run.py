"""The local engine's run: ``neardup dedup`` on one machine, its work folder (kept until the
outputs are published, so that an interrupted run resumes after its last completed stage), the
disk it needs, and the outputs published with ``summary.json`` last.

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

The stages live beside this module, one concern each: :mod:`.sketching` (read and sketch),
:mod:`.pairs` (candidates and verification), :mod:`.clusters` (the cluster stage),
:mod:`.stages` (the sequence, saved and resumed), :mod:`.memory` (the budget and the spill) and
:mod:`.disk` (the disk check).
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import tempfile
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ...config import DEFAULT_RESULT_FORMAT, DedupConfig, check_result_format
from ...cpus import available_cpus
from ...errors import ConfigError, OutputError, RunMemoryError
from ...io.read import InputPlan, InputReport, plan_inputs, read_plan, record_reader
from ...io.write import KeptLayout, write_clusters, write_pairs
from ...io.write import write_kept as write_kept_records
from ...io.write import outputs
from ...io.write.checkpoints import reached
from ...io.write.runfolder import RunFolder, differences, run_identity
from ...params import IN_MEMORY_MB
from ...stages import sketch as sketch_stage
from ...stages.survivors import Outcome
from ..common import RunOptions, peak_memory_mb, run_summary, stage_table
from .clusters import Clustering
from .disk import work_disk_bound, work_disk_estimate
from .pairs import CandidatePairs
from .refusals import check_config
from .sketching import ReadAndSketch
from .stages import StageSequence

__all__ = ["Deduplicator", "RunInputs"]

#: The kept corpus's file names (:mod:`neardup.io.write.shards`): an older run's that this one does not
#: write again are removed when it publishes.
_KEPT_NAME = re.compile(r"kept(-\d{5}(-of-\d{5})?)?\.(jsonl(\.gz|\.zst)?|parquet|warc\.gz|arc\.gz)")
#: An older run's results in the other --output-format, removed when this run publishes.
_RESULT_NAME = re.compile(r"(clusters|pairs)\.(jsonl|parquet)")


class RunInputs(InputPlan):
    """The inputs of a run, their files listed and their formats sniffed once
    (:func:`~neardup.io.read.plan_inputs`), for every part of the run that reads them: the disk
    check's sample, the read pass, a second read and the kept corpus read the plan of them all,
    and a run whose records carry their input as their source reads each input's own plan
    (``parts``) in turn. ``neardup dedup`` makes it before its configuration (which depends on
    the files' formats) and hands it to :meth:`Deduplicator.run`."""

    def __init__(self, paths, format: str, *, parts: list[InputPlan] | None = None):
        paths = [paths] if isinstance(paths, (str, bytes, os.PathLike)) else list(paths)
        super().__init__([os.fsdecode(p) for p in paths])
        if parts is None:
            # each input planned on its own, as plan_inputs plans a list of them one after the
            # other: their union is the plan of them all (with none, the format is checked all the same)
            parts = [plan_inputs([p], format) for p in self.paths] or [plan_inputs([], format)]
        self.parts = parts
        for part in parts:
            self.leaves += part.leaves
            self.ignored += part.ignored

    @classmethod
    def of(cls, paths, format: str) -> "RunInputs":
        """``paths`` as a run's inputs, planned unless they are already."""
        if isinstance(paths, cls):
            return paths
        if isinstance(paths, InputPlan):
            # a plan made elsewhere: of one input, it is that input's part; of several, it does not
            # say which of its files came from which input, so the inputs are planned again
            return cls(paths.paths, format, parts=[paths] if len(paths) == 1 else None)
        return cls(paths, format)


class Deduplicator(StageSequence, ReadAndSketch, CandidatePairs, Clustering):
    """The local engine: runs the stages (:mod:`neardup.stages`) over documents from
    :func:`neardup.io.read_documents`, in batches sketched on a thread pool, with shingle ids
    and signatures spilled to a work folder beyond the memory budget.

    >>> # Deduplicator(DedupConfig(threshold=0.8)).run(["corpus.jsonl"], "out/")
    """

    def __init__(self, config: DedupConfig = DedupConfig(), *, jobs: int | None = None, progress=None,
                 work_dir: str | None = None, in_memory_mb: float = IN_MEMORY_MB, against=None, save_index=None):
        """``against``: a :class:`neardup.engines.against.Against` (deduplicate against an
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
            resume: bool = False, layout: KeptLayout | None = None, output_format: str = DEFAULT_RESULT_FORMAT) -> dict:
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
        given = list(getattr(paths, "paths", paths)) if not isinstance(paths, (str, os.PathLike)) else [paths]
        # the refusals of `neardup dedup`, in the same words, before anything is read or written
        check_config(self.config, self.run_options(given, on_error=on_error, resume=resume))
        check_result_format(output_format)
        layout = layout or KeptLayout()
        target = outputs.open_target(output)
        run = RunFolder.for_target(target, self.work_dir)
        identity = run_identity(self.config, given, {"kept": write_kept, "output_format": output_format,
                                                         **layout.as_dict()})
        # the files are listed and their formats sniffed once, before anything is written (a missing
        # input is an InputError with nothing left behind); the disk check, both passes and the kept
        # corpus read this plan
        plan = RunInputs.of(paths, self.config.format)
        self._inputs_bytes = sum(f.get("size", 0) for f in identity["inputs"])
        if resume and not run.exists():
            done = target.summary()
            if done is not None and done.get("config_fingerprint") == identity["config_fingerprint"]:
                return done  # nothing left to do: the output is complete
            if done is not None:
                diff = differences({"config": done.get("config", {})}, {"config": identity["config"]})
                raise ConfigError(f"--resume: {output} is complete, made with other options ({'; '.join(diff)}); "
                                  "drop --resume to run again over it")
        # A run that reads or writes an index saves no stage and keeps no work folder: the saved
        # sketch stage does not hold the signatures and band keys the index takes, and a resumed
        # --save-index/--update-index would write the index twice. (A run with record sources,
        # several inputs or --source-field, saves each record's source with the sketch stage.)
        # (--resume with an index is refused by check_config above.)
        self._unresumable = self.against is not None or self.save_index is not None
        if not run.exists():
            self._check_disk(plan, run.path, write_kept)
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
                _discard(run)
            raise failure from exc
        except MemoryError as exc:
            if self._unresumable:
                _discard(run)
            raise self._memory_failure() from exc
        except BaseException:
            if self._unresumable:
                _discard(run)
            raise
        try:
            run.remove()
        except OutputError as exc:
            raise OutputError(f"{output} is complete, but {exc}") from exc
        return summary

    def run_options(self, inputs, *, on_error: str, resume: bool) -> RunOptions:
        """The options of a run of this engine on ``inputs``, as :mod:`.refusals` judges them."""
        names = tuple(os.fsdecode(p) if isinstance(p, (str, bytes, os.PathLike)) else str(p) for p in inputs)
        return RunOptions(inputs=names, on_error=on_error, resume=resume,
                          against=self.against.label if self.against is not None else None,
                          save_index=self.save_index.path if self.save_index is not None else None,
                          update_index=self.against is not None and self.against.update, work_dir=self.work_dir)

    def _run_in(self, run, target, plan: RunInputs, write_kept: bool, layout, on_error: str,
                output_format: str) -> dict:
        """The stages over the inputs ``plan`` in the work folder ``run``, then the outputs published
        to ``target``."""
        start = time.perf_counter()
        read_options = dict(self.config.read_options(), jobs=self.jobs)  # the kept corpus reads again
        inputs = list(plan)
        # this run's inputs, not an earlier run's: one engine may run several times
        self.source_labels = [os.fsdecode(p) for p in inputs] if self.has_sources(inputs) else None
        # (with sources from the inputs, each input's plan is read in turn, and the plan of them
        # all by the kept corpus)
        labelled = self.source_labels is not None and self.config.source_field is None
        report = self._input_report = InputReport()  # saved with the sketch stage (_save_sketch)
        first_pass = dict(on_error=on_error, report=report)
        writes_index = self.save_index is not None or (self.against is not None and self.against.update)
        if writes_index and self.config.url_field is not None:
            # the index keeps each page's whole page's fingerprint beside its URL (from the same
            # read), so that 'neardup changes' against it tells template from unchanged
            first_pass["page_fingerprints"] = True
        if write_kept and not labelled:  # the texts the kept corpus would extract again are kept
            first_pass["text_spill"] = run.path

        def read(inputs, passing=first_pass):
            # the one reader of a run's records (io.read.record_reader): the read options, the
            # fields kept in each record's meta and, with URL identity, each page's claims
            reader = record_reader(self.config, jobs=self.jobs, **passing)
            inputs = plan_inputs(inputs, self.config.format)
            if sketch_stage.kernel_handles(self.config.shingle):
                # JSONL records come as UTF-8 straight from a compiled scanner: their text never
                # becomes a Python str. Texts holding a code point that NFKC may change, and that
                # the kernel does not map itself, are flagged.
                return read_plan(reader, inputs, sketch_stage.flag_table(self.config.shingle.normalize))
            return read_plan(reader, inputs)

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
            self._reread = lambda: read(plan, dict(on_error=on_error, report=InputReport()))

        if labelled:
            docs = _labelled(self, [(label, read(part)) for label, part in zip(self.source_labels, plan.parts)])
        else:
            docs = read(plan)

        # The kept corpus (mostly I/O, off the GIL) is written on its own thread as soon as the
        # survivors are known, beside the rest of the clustering and the writing of clusters
        # and pairs (mostly Python).
        kept_writing = []

        def write_kept_from(kept: np.ndarray) -> None:
            if write_kept:
                kept_writing.append(writer.submit(write_kept_records, plan, kept, run.staged, layout=layout,
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
                with outputs.naming(run.partial_file(clusters)):
                    write_clusters(run.partial, outcome, format=output_format, urls=urls)
                run.stage_file(clusters)
            reached("write-pairs")
            if not run.is_staged(pairs_name):
                with outputs.naming(run.partial_file(pairs_name)):
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

    def _check_disk(self, plan: RunInputs, folder: str, write_kept: bool) -> None:
        """Refuse a run whose work folder (and kept corpus) would not fit on its disk, before it
        starts: :func:`neardup.engines.local.disk.work_disk_estimate` from a small sample of the input, against
        the free space where the work folder goes (OutputError, exit 4, one line). When a bound
        read from the files' first MB already fits (most runs), nothing is sampled: the check
        costs a run of the benchmark corpus about a millisecond, not the 0.9 s of sampling."""
        if not all(isinstance(p, (str, os.PathLike)) and "://" not in os.fsdecode(p) for p in plan):
            return
        if os.environ.get("NEARDUP_TEST_NO_DISK_CHECK"):  # the fault tests fill the disk mid-run
            return
        # only regular files and folders are sampled: stdin, a FIFO or /dev/fd/N can be read once
        # only, and the read itself must be the one to read it (os.stat does not open the file)
        for p in plan:
            try:
                mode = os.stat(p).st_mode
            except OSError:
                return
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                return
        where = os.path.abspath(folder)
        while not os.path.exists(where) and os.path.dirname(where) != where:
            where = os.path.dirname(where)
        free = outputs.free_bytes(where)
        names = list(plan)
        # the check is best effort: an input it cannot sample (truncated, unreadable, of another
        # format) gives no estimate, and the read itself then reports it with its own exit status
        try:
            bound = work_disk_bound(names, self.config)
            if free is None or (bound is not None and bound < free):  # room enough: no need to sample
                return
            estimate = work_disk_estimate(plan, self.config)  # (its sample reads the run's plan)
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
        name = os.path.abspath(exc.filename) if isinstance(getattr(exc, "filename", None), str) else ""
        ours = not name or name.startswith(os.path.abspath(run.path)) or (
            target.is_local and name.startswith(os.path.abspath(target.url)))
        if exc.errno in (errno.EACCES, errno.EPERM) and not ours:
            return exc  # an input that cannot be read: not an output's fault
        return outputs.output_error(exc, exc.filename or run.path, needed=self._space_needed(),
                                    used=outputs.folder_bytes(run.path))

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

    def _summary(self, outcome: Outcome, stats: dict, kept_info) -> dict:
        return run_summary(outcome, stats, self.config, kept_info=kept_info, jobs=self.jobs, seconds=self.seconds)


def _discard(run: RunFolder) -> None:
    """Remove the work folder of a run that is failing and cannot be resumed; a folder that cannot
    be removed is warned about, not raised over the failure the run reports."""
    try:
        run.remove()
    except OutputError as exc:
        warnings.warn(str(exc), RuntimeWarning, stacklevel=2)


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
