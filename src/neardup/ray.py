"""neardup on Ray: ``neardup.ray.dedup(dataset, output)`` and ``neardup.ray.dedup_paths(inputs,
output)`` (see :mod:`neardup.engines.ray`). Needs ``pip install 'neardup[ray]'``."""

from .engines.ray import dedup, dedup_paths

__all__ = ["dedup", "dedup_paths"]
