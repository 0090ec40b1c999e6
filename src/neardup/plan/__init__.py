"""Predict a dedup run from a sample of its input: documents, pairs, memory, spill disk and time.

    from neardup.cli.plan import local_engine
    from neardup.plan import plan
    p = plan(["crawl.jsonl"], DedupConfig(), engine=local_engine(), sample_records=100_000)
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
2. **Measure.** The engine (its run and memory rules passed in as
   :class:`~neardup.plan.engine.EngineRules`; the local engine's, the one ``neardup dedup`` runs,
   from :func:`neardup.cli.plan.local_engine`) runs on nested samples (the whole sample; every other piece of it, half the
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
   libraries' pages and the engine's bounded stretch of mapped spill, :class:`~neardup.plan.model.FileBackedModel`);
   spill and time by a line through the smallest and the whole sample's runs (time: per document, plus the verification per
   candidate pair; the line through the half and the whole sample's runs gives the range); pairs by
   ``pairs(f) ~ f**e``, ``f`` being the sampled fraction: copies next to each other in the input
   (both in the same sampled piece) are found in proportion to ``f``, copies spread over the
   corpus in proportion to ``f**2``; the ratio of the two runs' counts gives ``e`` (within
   [1, 2]), which is reported (:func:`~neardup.plan.model.scale_pairs`). Ranges come from the counts' Poisson error
   (two standard deviations) and, for spill and time, from the two lines.

The modules: :mod:`~neardup.plan.sample` (step 1), :mod:`~neardup.plan.measure` (step 2 and the
machine's facts), :mod:`~neardup.plan.model` (step 3), :mod:`~neardup.plan.predict` (the plan and
its advice) and :mod:`~neardup.plan.engine` (what the caller passes in of the engine).
"""

from .engine import EngineRules
from .measure import machine_facts, measure, measure_run, process_age_seconds
from .model import scale_pairs
from .predict import plan
from .sample import DEFAULT_SAMPLE_RECORDS, Sample, sample_inputs

__all__ = ["plan", "sample_inputs", "scale_pairs", "measure", "measure_run", "Sample", "machine_facts",
           "process_age_seconds", "DEFAULT_SAMPLE_RECORDS", "EngineRules"]
