"""``neardup dedup --engine ray``: the options the Ray engine honours, and one line naming each
option it does not."""

from __future__ import annotations

from ...errors import ConfigError
from ...io.write.shards import KeptLayout

__all__ = ["run_ray", "refusal"]

_ENGINE = "the Ray engine (--engine ray)"


def refusal(args, config) -> str | None:
    """The one line refusing the first option of ``args`` the Ray engine does not honour, or None."""
    from ...io.read.sources import STDIN_NAMES

    if args.spark_master is not None:
        return f"--spark-master is not supported by {_ENGINE}: give a Ray cluster with --ray-address"
    if args.in_memory_mb is not None:
        return (f"--in-memory-mb is not supported by {_ENGINE}: the workers hold one shard at a time and keep "
                "the rest in the work folder (see docs/ray.md)")
    if args.jobs is not None and args.ray_address is not None:
        return f"--jobs is not supported by {_ENGINE} with --ray-address: the cluster's nodes set the parallelism"
    if any(p in STDIN_NAMES for p in args.inputs):
        return f"standard input is not supported by {_ENGINE}: save it to a file, or use --engine local"
    if args.on_error != "error":
        return f"--on-error skip is not supported by {_ENGINE}: it stops at a file it cannot read; use --engine local"
    for flag, given in (("--against", args.against), ("--save-index", args.save_index),
                        ("--update-index", args.update_index or None), ("--source-field", args.source_field),
                        ("--keep source:", config.keep == "source" or None),
                        ("--url-field", getattr(args, "url_field", None))):
        if given is not None:
            return f"{flag} is not supported by {_ENGINE}: use the local engine"
    if config.method not in ("minhash", "exact"):
        return f"--method {config.method} is not supported by {_ENGINE}: it runs minhash and exact; use --engine local"
    if args.format not in ("auto", "jsonl", "parquet"):
        return f"--format {args.format} is not supported by {_ENGINE}: it reads jsonl and parquet; use --engine local"
    if len(args.inputs) > 1:
        # the local engine gives each record of several inputs its source (clusters.jsonl's
        # source and duplicate_of_source), which this engine does not write
        return (f"several inputs ({len(args.inputs)}) are not supported by {_ENGINE}: records of several inputs "
                "carry a source it does not write; put the files in one folder and give the folder, or use "
                "--engine local")
    return None


def run_ray(args, config) -> dict:
    from . import dedup_paths

    why = refusal(args, config)
    if why is not None:
        raise ConfigError(why)
    return dedup_paths(args.inputs, args.output, config, address=args.ray_address, jobs=args.jobs,
                       write_kept=not args.no_kept, output_format=args.output_format, layout=KeptLayout.from_options(args),
                       work_dir=args.work_dir, resume=args.resume)
