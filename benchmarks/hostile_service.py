#!/usr/bin/env python3
"""Hostile load on ``neardup serve`` (issue 19): do honest crawlers keep their latency while
others try to stall or exhaust the server?

On loopback, against one ``python -m neardup serve`` (its defaults but ``--max-body-bytes``,
and shorter header and body deadlines so that the run is short):

* **honest**: ``--honest`` client processes (default 8), closed loop, each on one keep-alive
  connection of the standard library's ``http.client``, ``POST /v1/check-and-add`` of synthetic
  pages: a fresh page under a fresh id (must answer ``added: true``, no exact copy), and every
  10th request a page this client sent before, under a new id (must answer ``added: false``
  with the first id among the exact copies). Every answer is checked; a request that fails,
  times out or gets another status is "lost".
* **phase alone**: the honest clients for ``--seconds``; **phase attack**: the same again with
  the hostile clients below running. Reported: the honest clients' p50/p99 in each phase and
  the ratio of the p99s (goal: at most 3).
* **hostile clients** (one process each, closed loop), with the status each must get:
  ``chunked``: a chunked body past ``--max-body-bytes``, sent until the server answers (413;
  the bytes sent before the answer are recorded); ``nfkc``: ``{"text": U+FDFA x 400,000}``,
  a 2.4 MB body (JSON escapes) whose text NFKC makes 7.2 M code points (413); ``batch-max``: ``/v1/check`` batches of
  exactly ``--max-batch`` pages (allowed: 200, they load the server); ``batch-over``:
  ``--max-batch`` + 1 documents (422, refused before validation); ``slowloris``:
  ``--slow-connections`` connections sending one header byte a second (closed by the server:
  counted as refused when the connection is closed before the headers end) and as many that
  send their body one byte a second (408); ``flood``: two processes storing copies of one page
  under new ids (``/v1/add``, 200) and checking it (``/v1/check``, 200, at most
  ``CANDIDATES_PER_BUCKET`` candidates per bucket are loaded however many copies exist).
* **memory**: the peak resident set (VmHWM) of the server process and of its writer process,
  read from /proc at the end, and the peak of their sum sampled every 0.2 s.

Writes ``benchmarks/results/hostile-service-<date>.json`` with machine facts and load averages.
Run it alone on the machine: ``flock /work/bench.lock python benchmarks/hostile_service.py``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import platform
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "hostile-bench-token"
WORDS = [f"w{i}" for i in range(30000)]


def page(rng: random.Random, n: int = 250) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentiles(lat: list[float]) -> dict:
    if not lat:
        return {"n": 0}
    s = sorted(lat)
    pick = lambda q: s[min(len(s) - 1, int(q * len(s)))]  # noqa: E731
    return {"n": len(s), "p50_ms": round(pick(0.50) * 1e3, 2), "p90_ms": round(pick(0.90) * 1e3, 2),
            "p99_ms": round(pick(0.99) * 1e3, 2), "max_ms": round(s[-1] * 1e3, 2)}


# -- clients -------------------------------------------------------------------------------------

def rounds(until: float, at_least: int = 1):
    """The rounds of a client's loop: ``at_least`` of them, then more while the clock is before
    ``until``. A client on a loaded machine may take longer to make its first body than its whole
    window: it still sends, so that what it is answered is measured."""
    n = 0
    while n < at_least or time.time() < until:
        n += 1
        yield n


def honest_client(port: int, cid: int, phase: str, until: float, out, at_least: int = 1) -> None:
    rng = random.Random(1000 * cid + (phase == "attack"))
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    sent: list[tuple[str, str]] = []
    lat, wrong, lost = [], [], 0
    for n in rounds(until, at_least):
        repeat = bool(sent) and n % 10 == 0
        if repeat:
            first_id, text = rng.choice(sent)
        else:
            text = f"{phase} client {cid} page {n} " + page(rng)
        doc_id = f"{phase}-{cid}-{n}"
        body = json.dumps({"id": doc_id, "text": text})
        t0 = time.perf_counter()
        try:
            conn.request("POST", "/v1/check-and-add", body=body, headers=headers)
            r = conn.getresponse()
            data = r.read()
        except (OSError, http.client.HTTPException):
            lost += 1
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            continue
        lat.append(time.perf_counter() - t0)
        if r.status != 200:
            lost += 1
            wrong.append(f"status {r.status}: {data[:200]!r}")
            continue
        answer = json.loads(data)
        if repeat:
            if answer["added"] is not False or first_id not in answer["exact"]:
                wrong.append(f"repeat {doc_id}: {answer['added']} {answer['exact'][:3]}")
        else:
            if answer["added"] is not True or answer["exact"]:
                wrong.append(f"new {doc_id}: {answer['added']} {answer['exact'][:3]}")
            sent.append((doc_id, text))
    conn.close()
    out.put(("honest", cid, {"latencies": lat, "wrong": wrong[:20], "n_wrong": len(wrong), "lost": lost}))


def _post(port: int, path: str, body: bytes, timeout: float = 60):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json",
                                                       "Authorization": f"Bearer {TOKEN}"})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def hostile_client(kind: str, port: int, until: float, args, out) -> None:
    # The hostile clients share this machine's cores with the server, which real attackers on
    # other machines would not: at the lowest CPU priority, their own work (making and sending
    # bodies) takes what the server leaves; what they cost the server is what is measured.
    if args.hostile_nice:
        os.nice(args.hostile_nice)
    statuses: dict[str, int] = {}
    extra: dict = {}

    def count(status) -> None:
        statuses[str(status)] = statuses.get(str(status), 0) + 1

    rng = random.Random(zlib.crc32(kind.encode()))  # the same bodies in every run
    if kind == "chunked":
        chunk = b"x" * 65536
        frame = b"%x\r\n%s\r\n" % (len(chunk), chunk)
        sent_max = 0
        for _ in rounds(until):
            sent = 0
            with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
                s.sendall((f"POST /v1/add HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
                           "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n").encode())
                s.setblocking(False)
                data = b""
                # Send until the server answers or closes; at most 4x the limit (a server that
                # reads everything would take it all).
                pending = memoryview(frame)
                while sent < 4 * args.max_body_bytes:
                    try:
                        data += s.recv(65536)
                        break
                    except BlockingIOError:
                        pass
                    except OSError:
                        break
                    try:
                        n = s.send(pending)  # may be partial: the chunk framing must stay whole
                        sent += n
                        pending = pending[n:] if n < len(pending) else memoryview(frame)
                    except BlockingIOError:
                        time.sleep(0.001)
                    except OSError:
                        break
                s.setblocking(True)
                s.settimeout(30)
                try:
                    while b"\r\n" not in data:
                        more = s.recv(65536)
                        if not more:
                            break
                        data += more
                except OSError:
                    pass
            sent_max = max(sent_max, sent)
            count(data.split(b" ")[1].decode() if data.startswith(b"HTTP/1.1 ") else "no answer")
        # Bytes that left this process: the kernel's loopback buffers hold several MB of them
        # that the server never read.
        extra["most_bytes_sent_before_the_answer"] = sent_max
    elif kind == "nfkc":
        body = json.dumps({"text": "\ufdfa" * 400_000}).encode()
        for _ in rounds(until):
            count(_post(port, "/v1/check-and-add", body)[0])
    elif kind == "batch-max":
        body = json.dumps({"documents": [{"text": page(rng, 100)} for _ in range(args.max_batch)]}).encode()
        extra["body_bytes"] = len(body)
        for _ in rounds(until):
            count(_post(port, "/v1/check", body)[0])
    elif kind == "batch-over":
        body = json.dumps({"documents": [{"text": page(rng, 100)} for _ in range(args.max_batch + 1)]}).encode()
        for _ in rounds(until):
            count(_post(port, "/v1/check", body)[0])
    elif kind == "flood":
        text = "the one page everybody sends " + page(random.Random(7))
        for n in rounds(until):
            path = "/v1/add" if n % 2 else "/v1/check"
            count(_post(port, path, json.dumps({"id": f"flood-{os.getpid()}-{n}", "text": text}).encode())[0])
    elif kind == "slowloris":
        closed_in_headers, answered_408, other = 0, 0, 0
        lock = threading.Lock()

        def slow(body_phase: bool) -> None:
            nonlocal closed_in_headers, answered_408, other
            for _ in rounds(until):
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
                        if body_phase:
                            s.sendall((f"POST /v1/check HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
                                       "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n").encode())
                        else:
                            s.sendall(b"POST /v1/check HTTP/1.1\r\nHost: x\r\n")
                        s.settimeout(1.0)
                        data = b""
                        while time.time() < until + 30:
                            try:
                                s.sendall(b"a" if body_phase else b"X")
                            except OSError:
                                break
                            try:
                                more = s.recv(4096)
                                if not more:
                                    break
                                data += more
                            except TimeoutError:
                                continue
                            except OSError:
                                break
                        with lock:
                            if data.startswith(b"HTTP/1.1 408"):
                                answered_408 += 1
                            elif not data and not body_phase:
                                closed_in_headers += 1
                            else:
                                other += 1
                except OSError:
                    with lock:
                        other += 1

        threads = [threading.Thread(target=slow, args=(i % 2 == 1,)) for i in range(2 * args.slow_connections)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        statuses = {"closed during headers": closed_in_headers, "408": answered_408, "other": other}
    out.put(("hostile", kind, {"statuses": statuses, **extra}))


# -- the server ------------------------------------------------------------------------------------

def tree_pids(pid: int) -> list[int]:
    out = [pid]
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                for child in fh.read().split():
                    out += tree_pids(int(child))
    except OSError:
        pass
    return out


def status_kb(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def run_phase(phase: str, port: int, args, hostile: bool) -> dict:
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    until = time.time() + args.seconds
    procs = [ctx.Process(target=honest_client, args=(port, c, phase, until, out)) for c in range(args.honest)]
    kinds = ["chunked", "nfkc", "batch-max", "batch-over", "slowloris", "flood", "flood"] if hostile else []
    if args.only:
        kinds = [k for k in kinds if k in args.only.split(",")]
    procs += [ctx.Process(target=hostile_client, args=(k, port, until, args, out)) for k in kinds]
    for p in procs:
        p.start()
    results = [out.get(timeout=args.seconds + 300) for _ in procs]
    for p in procs:
        p.join()
    honest = [r[2] for r in results if r[0] == "honest"]
    lat = [x for h in honest for x in h["latencies"]]
    hostile_out: dict = {}
    for r in results:
        if r[0] == "hostile":
            entry = hostile_out.setdefault(r[1], {"statuses": {}})
            for k, v in r[2]["statuses"].items():
                entry["statuses"][k] = entry["statuses"].get(k, 0) + v
            entry.update({k: v for k, v in r[2].items() if k != "statuses"})
    return {"honest": {**percentiles(lat), "requests_per_s": round(len(lat) / args.seconds, 1),
                       "wrong": sum(h["n_wrong"] for h in honest), "lost": sum(h["lost"] for h in honest),
                       "examples_wrong": [w for h in honest for w in h["wrong"]][:10]},
            "hostile": hostile_out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=20000, help="documents in the index before the run")
    ap.add_argument("--honest", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=30.0, help="length of each phase")
    ap.add_argument("--max-body-bytes", type=int, default=4 << 20)
    ap.add_argument("--max-batch", type=int, default=1000)
    ap.add_argument("--slow-connections", type=int, default=50)
    ap.add_argument("--header-timeout", type=float, default=5.0)
    ap.add_argument("--body-timeout", type=float, default=10.0)
    ap.add_argument("--hostile-nice", type=int, default=19, help="nice value of the hostile client processes")
    ap.add_argument("--only", default=None, help="comma-separated hostile kinds to run (default: all)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    sys.path.insert(0, str(ROOT / "src"))
    from neardup.store import SeenIndex

    folder = Path(tempfile.mkdtemp(prefix="hostile-"))
    db = str(folder / "seen.db")
    rng = random.Random(1)
    with SeenIndex(db, cache_mb=256) as index:
        for start in range(0, args.docs, 5000):
            index.add_many([(f"pre-{i}", page(rng)) for i in range(start, min(args.docs, start + 5000))])
    (folder / "token").write_text(TOKEN + "\n")
    port = free_port()
    cmd = [sys.executable, "-m", "neardup", "serve", "--db", db, "--port", str(port), "--token-file",
           str(folder / "token"), "--max-body-bytes", str(args.max_body_bytes), "--max-batch", str(args.max_batch),
           "--header-timeout", str(args.header_timeout), "--body-timeout", str(args.body_timeout),
           "--log-level", "warning"]
    log = open(folder / "server.log", "w+b")
    server = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(600):
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                c.request("GET", "/readyz")
                if c.getresponse().status == 200:
                    break
            except OSError:
                time.sleep(0.1)
        peak = {"sum_kb": 0}
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                peak["sum_kb"] = max(peak["sum_kb"], sum(status_kb(p, "VmRSS") for p in tree_pids(server.pid)))
                time.sleep(0.2)

        threading.Thread(target=sample, daemon=True).start()
        # A short warm-up (the writer and batch processes start, pages are cached), not measured.
        seconds, args.seconds = args.seconds, 3.0
        run_phase("warmup", port, args, hostile=False)
        args.seconds = seconds
        load = {"before": os.getloadavg()}
        alone = run_phase("alone", port, args, hostile=False)
        load["after_alone"] = os.getloadavg()
        attack = run_phase("attack", port, args, hostile=True)
        load["after_attack"] = os.getloadavg()
        stop.set()
        pids = tree_pids(server.pid)
        memory = {"server_vmhwm_mb": round(status_kb(server.pid, "VmHWM") / 1024, 1),
                  "children_vmhwm_mb": [round(status_kb(p, "VmHWM") / 1024, 1) for p in pids[1:]],
                  "peak_sum_rss_mb_sampled": round(peak["sum_kb"] / 1024, 1)}
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.request("GET", "/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        metrics = c.getresponse().read().decode()
    finally:
        server.terminate()
        server.wait(60)
    log.seek(0)
    server_log = log.read().decode(errors="replace")
    log.close()
    db_bytes = os.path.getsize(db)
    import shutil

    shutil.rmtree(folder, ignore_errors=True)
    p99_alone, p99_attack = alone["honest"].get("p99_ms"), attack["honest"].get("p99_ms")
    result = {
        "benchmark": "hostile_service", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "args": vars(args), "command": cmd[1:],
        "commit": subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                                 text=True).stdout.strip(),
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cores": os.cpu_count()},
        "load_average": load,
        "alone": alone, "attack": attack,
        "p99_ratio": round(p99_attack / p99_alone, 2) if p99_alone and p99_attack else None,
        "memory": memory, "index_bytes_at_the_end": db_bytes,
        "server_errors_by_kind": {line.split('"')[1]: float(line.split()[-1]) for line in metrics.splitlines()
                                  if line.startswith("neardup_errors_total{")},
        "server_tracebacks": server_log.count("Traceback"),
    }
    default = ROOT / "benchmarks" / "results" / f"hostile-service-{time.strftime('%Y-%m-%d')}.json"
    out = Path(args.out) if args.out else default
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in ("p99_ratio", "memory", "server_errors_by_kind")}, indent=1))
    print("alone:", alone["honest"])
    print("attack:", attack["honest"])
    for kind, v in attack["hostile"].items():
        print(f"  {kind}: {v}")
    print(f"written: {out}")


if __name__ == "__main__":
    main()
