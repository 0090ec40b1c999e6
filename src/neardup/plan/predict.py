"""The planner's prediction: the sample runs, scaled to the whole input by the model, and the
advice on memory and disk (see :mod:`neardup.plan`)."""

from __future__ import annotations

import math
import os
import shutil
import tempfile

from ..config import DedupConfig
from ..cpus import available_cpus
from ..errors import ConfigError, InputError
from ..params import IN_MEMORY_MB
from .engine import EngineRules
from .measure import MIB, machine_facts, measure
from .model import AnonymousModel, FileBackedModel, fit_line, scale_pairs
from .sample import DEFAULT_SAMPLE_RECORDS, Sample, sample_inputs

__all__ = ["plan"]

#: Fewest records a plan samples: below a few of the engine's 2 MB batches its memory is lumpy.
MIN_SAMPLE_RECORDS = 4_000
#: Records of the smallest run: what a run costs before its records count (the interpreter, the
#: modules, the kernel and its thread pool, a batch in flight) is its cost.
TINY_RECORDS = 1_000
#: Share of the available memory a plan may use before it advises a smaller --in-memory-mb.
MEMORY_HEADROOM = 0.8


def plan(paths: list[str], config: DedupConfig = DedupConfig(), *, engine: EngineRules, jobs: int | None = None,
         in_memory_mb: float | None = None, sample_records: int = DEFAULT_SAMPLE_RECORDS, write_kept: bool = True,
         startup_seconds: float = 0.0, machine: dict | None = None, runs: dict | None = None) -> dict:
    """Predict the ``neardup dedup`` run of ``paths`` with ``config`` by ``engine`` (its run and
    memory rules: :class:`~neardup.plan.engine.EngineRules`) (see :mod:`neardup.plan`).

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
        start, small, large, unheld, half_how, (f0, f1, f2) = _sample_runs(engine, sample, documents, config, jobs,
                                                                           budget_mb, write_kept)
    return _predict(engine, sample, config, machine, budget_mb, jobs, startup_seconds, start, small, large, unheld,
                    half_how, f0, f1, f2)


def _sample_runs(engine: EngineRules, sample: Sample, documents: float, config: DedupConfig, jobs: int, budget_mb: float, write_kept: bool):
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
        start = measure(engine, tiny, config, jobs=jobs, in_memory_mb=budget_mb * f0, write_kept=write_kept,
                        scratch=scratch)
        small = measure(engine, half, config, jobs=jobs, in_memory_mb=budget_mb * f1, write_kept=write_kept,
                         scratch=scratch)
        large = measure(engine, whole, config, jobs=jobs, in_memory_mb=budget_mb * f2, write_kept=write_kept,
                         scratch=scratch)
        unheld = measure(engine, half, config, jobs=jobs, in_memory_mb=0, write_kept=write_kept, scratch=scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    small["how"] = half_how
    for run, fraction in ((start, f0), (small, f1), (large, f2)):
        run["fraction"] = fraction  # (what a plan from these runs again needs: runs=)
    return start, small, large, unheld, half_how, (f0, f1, f2)


def _predict(engine: EngineRules, sample: Sample, config: DedupConfig, machine: dict, budget_mb: float, jobs: int, startup_seconds: float,
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
        fit = fit_line(n1, y["1"], n2, y["2"])
        other = fit_line(n0, y["0"], n2, y["2"])
        if fit[0] < y["0"]:
            fit, other = other, fit
        a, b = fit[0] + fit[1] * n, other[0] + other[1] * n
        return a, min(a, b), max(a, b), fit

    _, _, _, mem_fit = scaled("peak_bytes")
    # Anonymous memory by its parts rather than by a line: a sample's run is mostly the fixed
    # cost and its budget-bound parts, so a line through samples (1,300 bytes a record on
    # generated documents) said 7.5 GB where a 10M-record run took 1.6 GB.
    anon_model = AnonymousModel.of(engine, large, unheld, config)
    peak_anon = anon_model.at(n, budget_mb) / MIB
    # Resident memory is that plus file-backed pages: the libraries' (the smallest run's, less
    # its own mapped spill) and the spilled sketches' the engine has mapped, which it lets go in
    # bounded stretches (the engine's mapped_resident_bound). A line through the samples' peaks
    # (sketches spilled all along) said 25.8 GB where a 30M-record run peaked at 4.4 GB.
    file_model = FileBackedModel.of(engine, start, budget_mb * f0, anon_model.held_per_record)
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
    # of a smaller budget: the same parts, with the fixed cost of the half sample's run with
    # nothing held (a run that spills pays for the spill's buffers and for reading the
    # candidates' shingle ids again, which the whole sample's run, holding them, does not).
    held_per_record = anon_model.held_per_record
    spilling_model = anon_model.calibrated_on(unheld)
    floor_anon = spilling_model.at(n, 0) / MIB
    warnings, suggested, with_suggestion = [], None, None
    avail = machine["memory_available_mb"]
    if avail is not None and peak_anon > avail * MEMORY_HEADROOM:
        room = avail * MEMORY_HEADROOM - floor_anon
        if room >= 1:
            suggested = int(room)
            with_suggestion = spilling_model.at(n, suggested) / MIB
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
