"""neardup on Ray (``pip install 'neardup[ray]'``): the local engine's stages run shard by shard
on Ray workers, with the local engine's output files byte for byte.

Importing this package does not import ray; each function imports it when called and raises
:class:`neardup.errors.MissingDependencyError` naming the extra when it is missing.

- :func:`dedup_paths` — JSONL/Parquet files into an output folder (``neardup dedup --engine ray``);
- :func:`dedup` — a ``ray.data.Dataset`` of records into an output folder.
"""

from __future__ import annotations

from typing import Any

from ...errors import require

__all__ = ["dedup", "dedup_paths"]


def dedup_paths(inputs, output: str, config=None, **kwargs: Any) -> dict:
    """See :func:`neardup.engines.ray.engine.dedup_paths`."""
    require("ray", "ray")
    from ...config import DedupConfig
    from .engine import dedup_paths as _dedup_paths

    return _dedup_paths(inputs, output, DedupConfig() if config is None else config, **kwargs)


def dedup(dataset, output: str, config=None, **kwargs: Any) -> dict:
    """See :func:`neardup.engines.ray.dataset.dedup`."""
    require("ray", "ray")
    from ...config import DedupConfig
    from .dataset import dedup as _dedup

    return _dedup(dataset, output, DedupConfig() if config is None else config, **kwargs)
