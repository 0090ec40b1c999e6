"""A SparkSession with settings that suit neardup, locally or under ``spark-submit``.

``get_session()`` returns the active session when there is one (a notebook, a test fixture, a
``spark-submit`` job that already built it) and otherwise builds one. Only when it builds a
*local* session does it apply the local settings below; on a cluster the cluster's configuration
(``spark-defaults.conf``, ``--conf``) wins and only ``conf`` passed here is added.

Local settings (sized for a small machine such as 2 cores / 24 GiB; override any with ``conf``):

==========================================  =================================================
``spark.driver.memory``                     a quarter of physical memory, 1-16 GiB (6g on 24 GiB)
``spark.sql.shuffle.partitions``            8 (the default 200 is far too many for local mode)
``spark.default.parallelism``               8
``spark.driver.extraJavaOptions``           ``-XX:TieredStopAtLevel=1 -XX:+UseParallelGC``: the quick
                                            compiler only and the throughput collector. The JVM's
                                            work here is moving bytes (text, Arrow batches, shuffles),
                                            and in a short local run the optimizing compiler's own
                                            CPU time costs more than it saves: measured on 500k
                                            documents in local[2], 40 s of CPU for the whole run
                                            instead of 45 s (100k: 17 s instead of 26 s)
``spark.ui.enabled``                        false (no web server, no port)
``spark.ui.showConsoleProgress``            false
``spark.sql.execution.arrow.pyspark.enabled``  true (``toPandas``/``createDataFrame``; ``mapInPandas``
                                            always uses Arrow)
scratch (``SPARK_LOCAL_DIRS``)              ``<tmp>/neardup-spark-XXXX/local`` unless ``spark.local.dir``
                                            is passed in ``conf`` or the variable is already set
checkpoint directory                        ``<tmp>/neardup-spark-XXXX/checkpoints``
``spark.cleaner.referenceTracking.cleanCheckpoints``  true (old iterations' checkpoints are deleted)
``spark.driver.host`` / ``bindAddress``     127.0.0.1 (local mode needs no network)
``spark.sql.session.timeZone``              UTC
log level                                   WARN
==========================================  =================================================

The temporary folder is removed at interpreter exit (after the session built here is stopped).
No setting here makes Spark download anything (no ``spark.jars.packages``).
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from typing import Any, Mapping

from ...errors import require

__all__ = ["get_session", "DEFAULT_MASTER", "local_defaults"]

DEFAULT_MASTER = "local[2]"

#: The local driver JVM's options (see the table above); ``conf`` replaces them.
LOCAL_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseParallelGC"

_tmp_root: str | None = None


def _physical_memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _driver_memory() -> str:
    total = _physical_memory_bytes()
    if not total:
        return "4g"
    gib = total / 2**30
    return f"{int(max(1, min(16, gib // 4)))}g"


def _temp_root() -> str:
    global _tmp_root
    if _tmp_root is None or not os.path.isdir(_tmp_root):
        _tmp_root = tempfile.mkdtemp(prefix="neardup-spark-")
        os.makedirs(os.path.join(_tmp_root, "local"), exist_ok=True)
        os.makedirs(os.path.join(_tmp_root, "checkpoints"), exist_ok=True)
    return _tmp_root


def local_defaults() -> dict[str, str]:
    """The configuration ``get_session`` applies to a local session it builds."""
    root = _temp_root()
    return {
        "spark.driver.memory": _driver_memory(),
        "spark.sql.shuffle.partitions": "8",
        "spark.default.parallelism": "8",
        "spark.driver.extraJavaOptions": LOCAL_JAVA_OPTIONS,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.warehouse.dir": os.path.join(root, "warehouse"),
        "spark.cleaner.referenceTracking.cleanCheckpoints": "true",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.sql.session.timeZone": "UTC",
    }


def _environment_provides_master() -> bool:
    """True under spark-submit / a Spark installation, where the master comes from there."""
    if os.environ.get("PYSPARK_GATEWAY_PORT"):  # driver launched by spark-submit's JVM
        return True
    if os.environ.get("SPARK_HOME"):
        return True
    return "--master" in os.environ.get("PYSPARK_SUBMIT_ARGS", "")


def _set_checkpoint_dir(spark, path: str | None) -> None:
    sc = spark.sparkContext
    try:
        current = sc.getCheckpointDir()
    except Exception:  # pragma: no cover - older/remote APIs
        current = None
    if current:
        return
    if path is None:
        master = sc.master or ""
        if not master.startswith("local"):
            # On a cluster the directory must be on shared storage (HDFS, S3, ...): leave it to
            # the caller; connected_components falls back to localCheckpoint.
            return
        path = os.path.join(_temp_root(), "checkpoints")
    sc.setCheckpointDir(path)


def _cleanup(spark_ref: list) -> None:
    for spark in spark_ref:
        try:
            spark.stop()
        except Exception:
            pass
    if _tmp_root:
        shutil.rmtree(_tmp_root, ignore_errors=True)


def get_session(
    master: str | None = DEFAULT_MASTER,
    app_name: str = "neardup",
    conf: Mapping[str, Any] | None = None,
    *,
    checkpoint_dir: str | None = None,
    log_level: str = "WARN",
):
    """Return the active SparkSession, or build one.

    master: where to run. ``"local[2]"`` by default; ignored (the environment's master is used)
        when running under ``spark-submit`` or with ``SPARK_HOME`` set, unless a non-default
        master is passed explicitly. ``None`` means "whatever the environment says".
    conf: extra Spark settings; they override the local defaults. On an existing session only
        runtime-modifiable SQL settings can take effect.
    checkpoint_dir: where reliable checkpoints go (needed on a cluster: a shared path such as
        ``hdfs:///tmp/neardup-ckpt``). Locally a temporary folder is used.
    """
    require("pyspark", "spark")
    from pyspark.sql import SparkSession

    conf = {str(k): str(v) for k, v in (conf or {}).items()}

    active = SparkSession.getActiveSession()
    if active is not None:
        for key, value in conf.items():
            try:
                active.conf.set(key, value)
            except Exception:
                pass  # static settings cannot change on a running session
        _set_checkpoint_dir(active, checkpoint_dir)
        return active

    # Workers must run the same interpreter (and so see the same packages) as the driver.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

    env_master = _environment_provides_master()
    if master is None or (env_master and master == DEFAULT_MASTER):
        chosen = None
    else:
        chosen = master

    builder = SparkSession.builder.appName(app_name)
    is_local = chosen is not None and chosen.startswith("local")
    if chosen is not None:
        builder = builder.master(chosen)
    settings: dict[str, str] = {}
    if is_local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        settings.update(local_defaults())
        if "spark.local.dir" not in conf:
            # The environment variable (read by the JVM at start) rather than spark.local.dir,
            # which makes Spark log a warning about cluster managers on every start.
            os.environ.setdefault("SPARK_LOCAL_DIRS", os.path.join(_temp_root(), "local"))
    settings.update(conf)
    for key, value in settings.items():
        builder = builder.config(key, value)

    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    _set_checkpoint_dir(spark, checkpoint_dir)
    if is_local:
        atexit.register(_cleanup, [spark])
    return spark
