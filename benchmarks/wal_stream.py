#!/usr/bin/env python3
"""The write-ahead log under an uninterrupted check-and-add stream: ``neardup serve`` on loopback,
N client threads posting generated pages without pause for a while; the WAL file's size sampled
at a fixed interval, and the latency percentiles of the requests.

Usage: python benchmarks/wal_stream.py [--minutes 5] [--clients 8] [--every 30] [--policy exact]
Writes benchmarks/results/wal-stream-<date>.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--every", type=float, default=30.0, help="seconds between WAL samples")
    ap.add_argument("--policy", choices=["exact", "near"], default="exact")
    ap.add_argument("--json", help="where to write the figures (default results/wal-stream-<date>.json)")
    ap.add_argument("--label", default="", help="what is measured (e.g. the commit), stored with the figures")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="neardup-wal-")
    db = os.path.join(work, "seen.db")
    port = free_port()
    log = open(os.path.join(work, "serve.log"), "wb")
    server = subprocess.Popen([sys.executable, "-m", "neardup", "serve", "--db", db, "--port", str(port)],
                              stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.1)
    else:
        raise SystemExit("the server did not start")
    stop = threading.Event()
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()

    def client(k: int) -> None:
        rng = random.Random(k)  # test data only
        vocab = [f"w{i}" for i in range(20000)]
        with httpx.Client(base_url=url, timeout=60) as c:
            n = 0
            while not stop.is_set():
                text = " ".join(rng.choice(vocab) for _ in range(rng.randint(100, 400)))
                t = time.perf_counter()
                r = c.post("/v1/check-and-add", params={"policy": args.policy}, json={"id": f"c{k}-{n}", "text": text})
                dt_ = time.perf_counter() - t
                with lock:
                    if r.status_code == 200:
                        latencies.append(dt_)
                    else:
                        errors[0] += 1
                n += 1

    threads = [threading.Thread(target=client, args=(k,)) for k in range(args.clients)]
    started_utc = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    start = time.monotonic()
    for t in threads:
        t.start()
    samples = []
    wal = db + "-wal"
    end = start + args.minutes * 60
    last_done = 0
    while time.monotonic() < end:
        time.sleep(min(args.every, max(0.0, end - time.monotonic())))
        with lock:
            done = len(latencies)
            window = sorted(latencies[last_done:done])
        last_done = done
        samples.append({"seconds": round(time.monotonic() - start, 1), "wal_bytes": os.path.getsize(wal)
                        if os.path.exists(wal) else 0, "requests": done, "load": round(os.getloadavg()[0], 2),
                        # the interval's own p99: does latency drift as the log grows?
                        "p99_ms": round(1000 * window[min(len(window) - 1, int(len(window) * 0.99))], 2)
                        if window else None})
        print(json.dumps(samples[-1]), flush=True)
    stop.set()
    for t in threads:
        t.join()
    server.terminate()
    server.wait(timeout=60)
    latencies.sort()

    def pct(p: float) -> float:
        return round(1000 * latencies[min(len(latencies) - 1, int(len(latencies) * p))], 2) if latencies else None

    with sqlite3.connect(db) as conn:
        docs = conn.execute("SELECT count(*) FROM docs").fetchone()[0]
    import neardup
    out = {"date": dt.date.today().isoformat(), "label": args.label, "neardup": neardup.__file__,
           "started_utc": started_utc, "minutes": args.minutes, "clients": args.clients,
           "policy": args.policy, "requests": len(latencies), "errors": errors[0], "documents": docs,
           "requests_per_s": round(len(latencies) / (args.minutes * 60), 1),
           "latency_ms": {"p50": pct(0.5), "p90": pct(0.9), "p99": pct(0.99), "max": pct(1.0)},
           "wal_samples": samples, "wal_max_bytes": max((s["wal_bytes"] for s in samples), default=0),
           "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                       "sqlite": sqlite3.sqlite_version, "load_at_end": os.getloadavg()}}
    dest = Path(args.json) if args.json else HERE / "results" / f"wal-stream-{out['date']}.json"
    dest.write_text(json.dumps(out, indent=2) + "\n")
    print(dest)


if __name__ == "__main__":
    main()
