"""The Spark session (:mod:`neardup.engines.spark.session`), under its public name."""

from ..engines.spark.session import DEFAULT_MASTER, get_session, local_defaults

__all__ = ["get_session", "DEFAULT_MASTER", "local_defaults"]
