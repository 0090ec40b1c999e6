"""``neardup plan``: predict a dedup run from a sample of its input (see :mod:`neardup.plan`)."""

from __future__ import annotations

import sys

from ._common import positive_int, print_json


def register(sub) -> None:
    from ..plan import DEFAULT_SAMPLE_RECORDS
    from .dedup import add_dedup_options

    p = sub.add_parser(
        "plan", help="predict a dedup run: documents, pairs, memory, spill disk and time on this machine",
        description="Sample INPUT (JSONL, plain or compressed with gzip, zstd, bzip2 or xz, and Parquet) and run the local engine on the sample with the "
                    "options given (the options of neardup dedup) to predict the full run: documents, input "
                    "bytes, candidate and verified pairs, peak resident memory, spill disk in $TMPDIR and wall "
                    "time on this machine, with the basis and a range for each. Says when the spill exceeds the "
                    "free disk of $TMPDIR or the memory the machine's available memory, with the --in-memory-mb "
                    "to use. Exit status as neardup dedup's: 2 usage, 3 an input that cannot be read.")
    p.add_argument("inputs", nargs="*", metavar="INPUT",
                   help="a file, a folder or a glob, as neardup dedup takes them (local files: they are sampled)")
    p.add_argument("--json", action="store_true", help="print the plan as one JSON object")
    p.add_argument("--sample-records", type=positive_int("--sample-records", minimum=4000),
                   default=DEFAULT_SAMPLE_RECORDS, metavar="N",
                   help=f"records to sample (default {DEFAULT_SAMPLE_RECORDS:,}); more is slower and surer")
    add_dedup_options(p)
    p.set_defaults(handler=plan_command)


def plan_command(args) -> int:
    from ..errors import ConfigError
    from ..plan import plan, process_age_seconds
    from .dedup import config_from

    # the interpreter's start and the imports so far: what a neardup dedup process spends before it reads
    startup = process_age_seconds() or 0.0
    if args.engine != "local":
        raise ConfigError("neardup plan predicts the local engine; drop --engine spark")
    if args.spark_master is not None:
        raise ConfigError("--spark-master is not supported by the local engine: neardup plan predicts the local engine")
    from ._common import expanded_inputs

    args.inputs = expanded_inputs(args)
    config = config_from(args)
    result = plan(args.inputs, config, engine=local_engine(), jobs=args.jobs, in_memory_mb=args.in_memory_mb,
                  sample_records=args.sample_records, write_kept=not args.no_kept, startup_seconds=startup)
    if args.json:
        print_json(result)
    else:
        print(describe(result))
    for line in result["warnings"]:
        print(f"neardup: warning: {line}", file=sys.stderr)
    return 0


def run_local_engine(paths: list[str], output: str, config, *, jobs, in_memory_mb: float, work_dir: str,
                     write_kept: bool) -> dict:
    """One run of the local engine, as ``neardup dedup`` runs it: its summary. (The sample runs
    of a plan unpickle this function by name, so a sample run's process has loaded what a
    ``neardup dedup`` process has: this command-line package, then the engine.)"""
    from ..engines.local.run import Deduplicator

    return Deduplicator(config, jobs=jobs, in_memory_mb=in_memory_mb, work_dir=work_dir).run(
        paths, output, write_kept=write_kept)


def local_engine():
    """The local engine's run and memory rules, for :func:`neardup.plan.plan`."""
    from ..engines.local.disk import signature_value_bytes
    from ..engines.local.memory import BAND_ROWS, mapped_resident_bound
    from ..engines.local.run import Deduplicator
    from ..engines.local.sketching import record_array_bytes
    from ..plan import EngineRules

    return EngineRules(run=run_local_engine, record_array_bytes=record_array_bytes,
                       grouping_min_mb=Deduplicator.GROUPING_MIN_MB, mapped_resident_bound=mapped_resident_bound,
                       band_rows=BAND_ROWS, signature_value_bytes=signature_value_bytes)


def _size(nbytes: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:,.1f} {unit}"
    return f"{nbytes:,.0f} B"


def describe(p: dict) -> str:
    """The plan as a short table: each figure, its range and its basis."""
    rg = p["ranges"]
    rows = [
        ("documents", f"{p['documents']:,}", f"{rg['documents'][0]:,} - {rg['documents'][1]:,}"),
        ("input bytes", _size(p["input_bytes"]), ""),
        ("candidate pairs", f"{p['candidate_pairs']:,}", f"{rg['candidate_pairs'][0]:,} - {rg['candidate_pairs'][1]:,}"),
        ("verified pairs", f"{p['verified_pairs']:,}", f"{rg['verified_pairs'][0]:,} - {rg['verified_pairs'][1]:,}"),
        ("peak memory", f"{p['peak_memory_mb']:,.0f} MB",
         f"{rg['peak_memory_mb'][0]:,.0f} - {rg['peak_memory_mb'][1]:,.0f} MB"),
        ("anonymous part", f"{p['peak_anonymous_mb']:,.0f} MB", ""),
        ("spill disk", _size(p["spill_bytes"]), f"{_size(rg['spill_bytes'][0])} - {_size(rg['spill_bytes'][1])}"),
        ("wall time", f"{p['seconds']:,.1f} s", f"{rg['seconds'][0]:,.1f} - {rg['seconds'][1]:,.1f} s"),
    ]
    keys = ["documents", "input_bytes", "candidate_pairs", "verified_pairs", "peak_memory_mb", "peak_anonymous_mb",
            "spill_bytes", "seconds"]
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    w2 = max(len(r[2]) for r in rows)
    s = p["sample"]
    m = p["machine"]
    lines = [f"plan from a sample of {s['records']:,} records ({s['fraction']:.2%} of the estimate; "
             + ", ".join(f"{i['path']}: {i['how']}" for i in s["inputs"][:3])
             + (", ..." if len(s["inputs"]) > 3 else "") + ")"]
    for (name, value, band), key in zip(rows, keys):
        lines.append(f"  {name:<{w0}}  {value:>{w1}}  {band:<{w2}}  {p['basis'][key]}")
    lines.append(f"machine: {m['cpus']} CPUs, {m['memory_available_mb'] or 0:,.0f} MB available, "
                 f"{_size(m['tmpdir_free_bytes'])} free in {m['tmpdir']}; --in-memory-mb {p['in_memory_mb']}, "
                 f"{p['jobs']} threads")
    if p["suggested_in_memory_mb"] is not None:
        lines.append(f"use --in-memory-mb {p['suggested_in_memory_mb']}")
    return "\n".join(lines)


__all__ = ["register", "plan_command", "describe"]
