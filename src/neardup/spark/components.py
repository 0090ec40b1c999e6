"""Connected components inside Spark (:mod:`neardup.engines.spark.components`), under its public name."""

from ..engines.spark.components import ComponentsDidNotConverge, connected_components

__all__ = ["connected_components", "ComponentsDidNotConverge"]
