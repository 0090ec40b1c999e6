"""neardup on Apache Spark (``pip install 'neardup[spark]'``).

Importing this package does not import pyspark; each function imports it when called and raises
:class:`neardup.errors.MissingDependencyError` naming the extra when it is missing.

- :func:`get_session` — a SparkSession with local settings suited to a small machine, or the
  active / ``spark-submit`` one.
- :func:`connected_components` — connected components of an edge DataFrame inside Spark
  (alternating large-star / small-star), component = minimum node id.
- :func:`dedup` — the ``neardup dedup`` pipeline on a DataFrame (DataFrames in and out);
  :func:`dedup_paths` — on JSONL/Parquet files into an output folder (``--engine spark``).
- :func:`standalone_cluster` — a Spark standalone master and workers on this machine.

The engine itself lives in :mod:`neardup.engines.spark`; this package is its public face, and
``neardup.spark.session``, ``neardup.spark.components`` and ``neardup.spark.standalone`` name the
same functions as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..config import DedupConfig
from ..errors import require

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["get_session", "connected_components", "dedup", "dedup_paths", "standalone_cluster", "require_pyspark"]


def require_pyspark():
    """Import pyspark or raise MissingDependencyError: pip install 'neardup[spark]'."""
    return require("pyspark", "spark")


def get_session(master: str | None = "local[2]", app_name: str = "neardup", conf=None, **kwargs: Any) -> "SparkSession":
    """See :func:`neardup.engines.spark.session.get_session`."""
    require_pyspark()
    from ..engines.spark.session import get_session as _get_session

    return _get_session(master=master, app_name=app_name, conf=conf, **kwargs)


def connected_components(edges_df: "DataFrame", src: str = "a", dst: str = "b", **kwargs: Any) -> "DataFrame":
    """See :func:`neardup.engines.spark.components.connected_components`."""
    require_pyspark()
    from ..engines.spark.components import connected_components as _cc

    return _cc(edges_df, src, dst, **kwargs)


def dedup(df: "DataFrame", **kwargs: Any):
    """See :func:`neardup.engines.spark.api.dedup`."""
    require_pyspark()
    from ..engines.spark.api import dedup as _dedup

    return _dedup(df, **kwargs)


def dedup_paths(inputs, output: str, config=None, **kwargs: Any) -> dict:
    """See :func:`neardup.engines.spark.api.dedup_paths`."""
    require_pyspark()
    from ..engines.spark.api import dedup_paths as _dedup_paths

    return _dedup_paths(inputs, output, DedupConfig() if config is None else config, **kwargs)


def standalone_cluster(workers: int = 2, cores: int = 1, memory: str = "1g"):
    """See :func:`neardup.engines.spark.standalone.standalone_cluster`."""
    require_pyspark()
    from ..engines.spark.standalone import standalone_cluster as _standalone_cluster

    return _standalone_cluster(workers=workers, cores=cores, memory=memory)
