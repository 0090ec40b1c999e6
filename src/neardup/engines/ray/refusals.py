"""What the Ray engine does not honour, refused in one line naming the option and the engine:
asked by the CLI (``neardup dedup --engine ray``) and by the engine's own entry points, so that a
library caller gets the same answer."""

from __future__ import annotations

from ...config import DedupConfig
from ...io.read.sources import STDIN_NAMES
from ..common import RunOptions, raise_refusal, source_refusal

__all__ = ["config_refusal", "refusal", "check_config"]

_ENGINE = "the Ray engine (--engine ray)"


def config_refusal(config: DedupConfig) -> str | None:
    """The one line refusing the first choice of ``config`` the Ray engine does not make, or None."""
    why = source_refusal(config, _ENGINE)
    if why is not None:
        return why
    if config.method not in ("minhash", "exact"):
        return f"--method {config.method} is not supported by {_ENGINE}: it runs minhash and exact; use --engine local"
    return None


def refusal(config: DedupConfig, options: RunOptions) -> str | None:
    """The one line refusing the first option of a run (``options``, ``config``) the Ray engine does
    not honour, or None."""
    if options.spark_master is not None:
        return f"--spark-master is not supported by {_ENGINE}: give a Ray cluster with --ray-address"
    if options.in_memory_mb is not None:
        return (f"--in-memory-mb is not supported by {_ENGINE}: the workers hold one shard at a time and keep "
                "the rest in the work folder (see docs/ray.md)")
    if options.jobs is not None and options.ray_address is not None:
        return f"--jobs is not supported by {_ENGINE} with --ray-address: the cluster's nodes set the parallelism"
    if any(p in STDIN_NAMES for p in options.inputs):
        return f"standard input is not supported by {_ENGINE}: save it to a file, or use --engine local"
    why = options.local_only_refusal(_ENGINE)
    if why is not None:
        return why
    why = config_refusal(config)
    if why is not None:
        return why
    if config.format not in ("auto", "jsonl", "parquet"):
        return f"--format {config.format} is not supported by {_ENGINE}: it reads jsonl and parquet; use --engine local"
    if len(options.inputs) > 1:
        # the local engine gives each record of several inputs its source (clusters.jsonl's
        # source and duplicate_of_source), which this engine does not write
        return (f"several inputs ({len(options.inputs)}) are not supported by {_ENGINE}: records of several inputs "
                "carry a source it does not write; put the files in one folder and give the folder, or use "
                "--engine local")
    return None


def check_config(config: DedupConfig, options: RunOptions) -> None:
    """Raise :class:`~neardup.errors.ConfigError` with the engine's refusal of a run, if any."""
    raise_refusal(config, lambda c: refusal(c, options))
