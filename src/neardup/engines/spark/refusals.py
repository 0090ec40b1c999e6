"""What the Spark engine does not honour, refused in one line naming the option and the engine:
asked by the CLI (``neardup dedup --engine spark``) and by the engine's own entry points, so that a
library caller gets the same answer."""

from __future__ import annotations

from ...config import DedupConfig
from ...io.read.sources import STDIN_NAMES
from ..common import RunOptions, raise_refusal, source_refusal

__all__ = ["LOCAL_ONLY", "config_refusal", "refusal", "frames_refusal", "check_config", "master_of"]

_ENGINE = "the Spark engine (--engine spark)"

#: Options of the local engine's run that the Spark engine has no use for, with where Spark
#: takes the same decision instead.
LOCAL_ONLY = {"output_shards": ("--output-shards", "the Spark engine writes one part file per partition"),
              "shard_size": ("--shard-size", "the Spark engine writes one part file per partition"),
              "work_dir": ("--work-dir", "Spark keeps its work in spark.local.dir")}


def config_refusal(config: DedupConfig) -> str | None:
    """The one line refusing the first choice of ``config`` the Spark engine does not make, or None."""
    why = source_refusal(config, _ENGINE)
    if why is not None:
        return why
    if config.method in ("simhash", "broder", "greedy"):
        return f"--method {config.method} is not supported by {_ENGINE}: it runs minhash or exact; use --engine local"
    # Spark reads JSONL and Parquet text fields with the local reader's rules, HTML included
    # (content="html": the same extraction on the executors).
    return None


def refusal(config: DedupConfig, options: RunOptions) -> str | None:
    """The one line refusing the first option of a run on files (``options``, ``config``) the Spark
    engine does not honour, or None."""
    if options.ray_address is not None:
        return f"--ray-address is not supported by {_ENGINE}: add --engine ray"
    if options.in_memory_mb is not None:
        return (f"--in-memory-mb is not supported by {_ENGINE}: Spark spills by its own memory settings "
                "(spark.executor.memory, spark.memory.fraction)")
    if options.jobs is not None and options.spark_master is not None:
        return (f"--jobs is not supported by {_ENGINE} with --spark-master: the master's executors set the "
                "parallelism (local[N] for N cores)")
    for name, (flag, instead) in LOCAL_ONLY.items():
        if getattr(options, name) is not None:
            return f"{flag} is not supported by {_ENGINE}: {instead}"
    if any(p in STDIN_NAMES for p in options.inputs):
        return "the Spark engine cannot read standard input: save it to a file, or use --engine local"
    why = options.local_only_refusal(_ENGINE)
    if why is not None:
        return why
    why = config_refusal(config)
    if why is not None:
        return why
    if options.resume:
        return f"--resume is not supported by {_ENGINE}: Spark retries failed tasks itself"
    if options.compression != "auto":
        return (f"--compression is not supported by {_ENGINE}: it writes its part files with Spark's codec "
                "(spark.sql.parquet.compression.codec)")
    if len(options.inputs) > 1:
        # the local engine gives each record of several inputs its source (clusters.jsonl's
        # source and duplicate_of_source); the Spark engine does not yet, so the two would differ
        return (f"several inputs ({len(options.inputs)}) are not supported by {_ENGINE}: records of several "
                "inputs carry a source it does not write yet; put the files in one folder and give the folder, "
                "or use --engine local")
    if config.format not in ("auto", "jsonl", "parquet"):
        return (f"--format {config.format} is not supported by {_ENGINE}: it reads JSONL and Parquet; use "
                "--engine local for WARC, HTML and text files")
    return None


def frames_refusal(config: DedupConfig, where: str) -> str | None:
    """The one line refusing what the engine does not do where every stage is a DataFrame operation
    (``where``: an output on a Hadoop file system), or None: URL identity runs on the driver, which
    has the records' values only for a local output or the DataFrame API (which collects them)."""
    if config.url_field is not None:
        return (f"--url-field is not supported by {_ENGINE} with {where}: URL identity runs on the driver, "
                "for a local --output or the DataFrame API; use a local output, or --engine local")
    return None


def check_config(config: DedupConfig, options: RunOptions | None = None, *, frames: str | None = None) -> None:
    """Raise :class:`~neardup.errors.ConfigError` with the engine's refusal of ``config``, of
    ``options`` for a run on files, and of :func:`frames_refusal` for a run whose stages are
    DataFrame operations (``frames``: where)."""
    def why_of(c: DedupConfig) -> str | None:
        why = config_refusal(c) if options is None else refusal(c, options)
        return why if why is not None or frames is None else frames_refusal(c, frames)

    raise_refusal(config, why_of)


def master_of(options: RunOptions) -> str | None:
    """The Spark master of a run: ``--spark-master``, or ``--jobs N`` honoured as ``local[N]``."""
    return f"local[{options.jobs}]" if options.jobs is not None else options.spark_master
