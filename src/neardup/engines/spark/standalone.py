"""A Spark standalone cluster on loopback, started from the pyspark installation: one master and
N workers, each a JVM of its own (``spark-class org.apache.spark.deploy.master.Master`` and
``...deploy.worker.Worker``), as on a real cluster, only on one machine.

    with standalone_cluster(workers=2, cores=1) as cluster:
        spark = get_session(cluster.url, conf=cluster.session_conf())
        dedup_paths(["corpus.jsonl"], "out", spark=spark)

For tests and benchmarks: the same engine code over the network protocol, executors in other
processes than the driver, shuffles between workers. Only the processes started here are stopped.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field

from ...errors import NeardupError, require

__all__ = ["StandaloneCluster", "standalone_cluster"]

#: Polls of the master's status page before giving up (one every half second).
_POLLS = 480


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spark_home() -> str:
    require("pyspark", "spark")
    import pyspark

    return os.path.dirname(os.path.abspath(pyspark.__file__))


@dataclass
class StandaloneCluster:
    url: str
    ui_port: int
    workers: int
    cores: int
    memory: str
    folder: str
    processes: list = field(default_factory=list)

    def status(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as resp:
            return json.loads(resp.read())

    def session_conf(self) -> dict:
        """Settings for a driver on this cluster: one executor per worker, all their cores."""
        return {"spark.executor.cores": str(self.cores), "spark.executor.memory": self.memory,
                "spark.cores.max": str(self.cores * self.workers), "spark.driver.host": "127.0.0.1",
                "spark.driver.bindAddress": "127.0.0.1", "spark.ui.enabled": "false",
                "spark.sql.shuffle.partitions": str(2 * self.cores * self.workers),
                "spark.ui.showConsoleProgress": "false",
                "spark.sql.execution.arrow.pyspark.enabled": "true"}

    def stop(self, *, keep_logs: bool = False) -> None:
        """Stop the daemons and remove the cluster's folder (logs, work folders), unless
        ``keep_logs`` (a failed start names the folder in its error)."""
        for proc in reversed(self.processes):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)  # its own process group (start_new_session)
                except ProcessLookupError:
                    pass
        for proc in reversed(self.processes):
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if not keep_logs:
            shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> "StandaloneCluster":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def standalone_cluster(workers: int = 2, cores: int = 1, memory: str = "1g") -> StandaloneCluster:
    """Start a master and ``workers`` workers of ``cores`` cores on 127.0.0.1 and wait until every
    worker has registered; raises NeardupError (naming the log) if they do not."""
    home = _spark_home()
    folder = tempfile.mkdtemp(prefix="neardup-standalone-")
    port, ui = _free_port(), _free_port()
    env = dict(os.environ, SPARK_HOME=home, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               SPARK_LOG_DIR=folder,
               SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false")
    spark_class = os.path.join(home, "bin", "spark-class")
    cluster = StandaloneCluster(url=f"spark://127.0.0.1:{port}", ui_port=ui, workers=workers, cores=cores,
                                memory=memory, folder=folder)

    def start(name: str, args: list[str]) -> None:
        log = open(os.path.join(folder, f"{name}.log"), "wb")
        cluster.processes.append(subprocess.Popen([spark_class, *args], env=env, stdout=log, stderr=subprocess.STDOUT,
                                                  stdin=subprocess.DEVNULL, start_new_session=True))
        log.close()

    try:
        start("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                         "--webui-port", str(ui)])
        for k in range(workers):
            start(f"worker-{k}", ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", str(cores),
                                  "--memory", memory, "--webui-port", str(_free_port()),
                                  "--work-dir", os.path.join(folder, f"work-{k}"), cluster.url])
        for _ in range(_POLLS):
            dead = [p for p in cluster.processes if p.poll() is not None]
            if dead:
                raise NeardupError(f"a Spark daemon exited with status {dead[0].returncode}; see the logs in {folder}")
            try:
                if cluster.status().get("aliveworkers", 0) >= workers:
                    return cluster
            except (OSError, ValueError):
                # the master's page is not up yet, or not its JSON yet: for a moment after the
                # UI binds its port, /json/ answered with the UI's HTML page (a test's setup
                # failed on it once in a full run, 2026-12-04)
                pass
            time.sleep(0.5)
        raise NeardupError(f"the standalone cluster's {workers} workers did not register; see the logs in {folder}")
    except BaseException:
        cluster.stop(keep_logs=True)
        raise
