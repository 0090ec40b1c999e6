"""What the local engine does not honour, refused in one line naming the option: asked by the CLI
(``neardup dedup``, ``--engine local``) and by the engine's own entry point
(:meth:`neardup.engines.local.run.Deduplicator.run`), so that a library caller gets the same
answer."""

from __future__ import annotations

from ...config import DedupConfig
from ..common import RunOptions, raise_refusal

__all__ = ["refusal", "check_config"]


def refusal(config: DedupConfig, options: RunOptions) -> str | None:
    """The one line refusing the first option of a run (``options``, ``config``) the local engine
    does not honour, or None."""
    if options.spark_master is not None:
        return "--spark-master is not supported by the local engine: add --engine spark"
    if options.ray_address is not None:
        return "--ray-address is not supported by the local engine: add --engine ray"
    if options.resume:
        # a run with an index saves no stage: the saved sketch stage does not hold the signatures
        # and band keys the index takes, and a resumed --save-index/--update-index would write the
        # index twice
        for flag, given in (("--against", options.against), ("--save-index", options.save_index),
                            ("--update-index", options.update_index or None)):
            if given is not None:
                return (f"--resume is not supported with {flag}: a run with an index keeps no work folder (the "
                        "index must never be written twice); run the command again without --resume")
    return None


def check_config(config: DedupConfig, options: RunOptions) -> None:
    """Raise :class:`~neardup.errors.ConfigError` with the engine's refusal of a run, if any."""
    raise_refusal(config, lambda c: refusal(c, options))
