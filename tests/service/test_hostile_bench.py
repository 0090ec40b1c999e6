"""The hostile-load benchmark's clients (benchmarks/hostile_service.py) against a real server:
each hostile kind is counted with the answer it must get, and the honest client checks its
answers. Checks the harness's bookkeeping, not its figures."""

from __future__ import annotations

import importlib.util
import queue
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from test_app import Server  # noqa: E402

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "hostile_service.py"
pytestmark = pytest.mark.service


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("hostile_service", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def server(tmp_path_factory, bench):
    folder = tmp_path_factory.mktemp("hostile")
    (folder / "token").write_text(bench.TOKEN + "\n")
    srv = Server(str(folder / "seen.db"), token_file=str(folder / "token"),
                 extra=("--max-body-bytes", str(4 << 20), "--max-batch", "20", "--header-timeout", "0.5",
                        "--body-timeout", "0.5"))
    yield srv
    srv.stop()
    assert "Traceback" not in srv.output(), srv.output()


def test_percentiles(bench):
    p = bench.percentiles([i / 1000 for i in range(1, 101)])
    assert p == {"n": 100, "p50_ms": 51.0, "p90_ms": 91.0, "p99_ms": 100.0, "max_ms": 100.0}
    assert bench.percentiles([]) == {"n": 0}


@pytest.mark.parametrize("kind,expected", [
    ("chunked", {"413"}), ("nfkc", {"413"}), ("batch-max", {"200"}), ("batch-over", {"422"}),
    ("flood", {"200"}), ("slowloris", {"closed during headers", "408"}),
])
def test_each_hostile_kind_gets_its_answer(bench, server, kind, expected):
    out = queue.Queue()
    args = SimpleNamespace(max_body_bytes=4 << 20, max_batch=20, slow_connections=1, hostile_nice=0)
    bench.hostile_client(kind, server.port, time.time() + 0.5, args, out)
    tag, got_kind, result = out.get(timeout=5)
    assert (tag, got_kind) == ("hostile", kind)
    seen = {k for k, n in result["statuses"].items() if n}
    assert seen == expected, result


def test_honest_client_checks_its_answers(bench, server):
    out = queue.Queue()
    bench.honest_client(server.port, 0, "test", time.time() + 1.0, out, at_least=10)
    _, _, result = out.get(timeout=5)
    assert len(result["latencies"]) >= 10 and result["n_wrong"] == 0 and result["lost"] == 0, result
