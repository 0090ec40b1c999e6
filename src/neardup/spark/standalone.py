"""A Spark standalone cluster on this machine (:mod:`neardup.engines.spark.standalone`), under its public name."""

from ..engines.spark.standalone import StandaloneCluster, standalone_cluster

__all__ = ["StandaloneCluster", "standalone_cluster"]
