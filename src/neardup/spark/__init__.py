"""neardup on Apache Spark (``pip install 'neardup[spark]'``).

Importing this package does not import pyspark; each function imports it when called and raises
:class:`neardup.errors.MissingDependencyError` naming the extra when it is missing.

- :func:`get_session` — a SparkSession with local settings suited to a small machine, or the
  active / ``spark-submit`` one.
- :func:`connected_components` — connected components of an edge DataFrame inside Spark
  (alternating large-star / small-star), component = minimum node id.
- :func:`dedup` — the ``neardup dedup`` pipeline on a DataFrame (DataFrames in and out);
  :func:`dedup_paths` — on JSONL/Parquet files into an output folder (``--engine spark``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import require

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["get_session", "connected_components", "dedup", "dedup_paths", "require_pyspark"]


def require_pyspark():
    """Import pyspark or raise MissingDependencyError: pip install 'neardup[spark]'."""
    return require("pyspark", "spark")


def get_session(master: str | None = "local[2]", app_name: str = "neardup", conf=None, **kwargs: Any) -> "SparkSession":
    """See :func:`neardup.spark.session.get_session`."""
    require_pyspark()
    from .session import get_session as _get_session

    return _get_session(master=master, app_name=app_name, conf=conf, **kwargs)


def connected_components(edges_df: "DataFrame", src: str = "a", dst: str = "b", **kwargs: Any) -> "DataFrame":
    """See :func:`neardup.spark.components.connected_components`."""
    require_pyspark()
    from .components import connected_components as _cc

    return _cc(edges_df, src, dst, **kwargs)


def dedup(df: "DataFrame", **kwargs: Any):
    """See :func:`neardup.spark.engine.dedup`."""
    require_pyspark()
    from .engine import dedup as _dedup

    return _dedup(df, **kwargs)


def dedup_paths(inputs, output: str, config=None, **kwargs: Any) -> dict:
    """See :func:`neardup.spark.engine.dedup_paths`."""
    require_pyspark()
    from .engine import dedup_paths as _dedup_paths

    if config is None:
        from ..config import DedupConfig

        config = DedupConfig()
    return _dedup_paths(inputs, output, config, **kwargs)
