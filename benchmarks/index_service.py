#!/usr/bin/env python3
"""Persistent index and HTTP service: neardup's SeenIndex (SQLite) against datasketch MinHashLSH on Redis.

Both systems get the same documents, in the same order, interleaved chunk by chunk so that a
busy, shared machine slows both alike:

* **add**: documents into a store that grows to ``--docs`` (default 1,000,000). neardup:
  ``SeenIndex.add_many`` in transactions of ``--batch`` documents with a ``--cache-mb`` page
  cache (25,000 and 1024 MB: the defaults of ``neardup index add``), one sketching thread,
  durable when ``COMMIT`` returns (WAL, ``synchronous=NORMAL``: survives the process dying),
  and a WAL checkpoint after each chunk, inside neardup's time.
  datasketch: ``MinHash(num_perm=128).update_batch`` over word 5-shingles (``\\w+`` words,
  lowercased, as in ``peers.py``) and ``MinHashLSH(threshold=0.8, num_perm=128)`` with Redis
  storage, inserted through ``insertion_session`` (pipelined). Redis runs with ``--save ''
  --appendonly no``: nothing reaches the disk, which favours datasketch.
* **query**: ``--queries`` single-document queries, one at a time, each system in turn: planted
  near-copies of stored documents (2% of words replaced), halves of stored documents, and
  unseen documents. Latency is end to end from the text: sketching included for both. neardup
  answers exact copies, near-copies with estimated Jaccard, containment both ways and simhash
  neighbours; datasketch returns LSH candidate keys only. Recall of the planted near-copies is
  recorded for both. neardup's index is opened with ``resident=True`` from the start, as
  ``neardup serve`` opens it (the whole file mapped, its pages kept faulted in by a background
  thread; ``--no-resident`` measures without, as before 2026-11-30 13:00).
* **service**: ``--clients`` client processes on loopback for ``--service-seconds`` each
  workload, closed loop, fresh documents. neardup: ``POST /v1/check`` and ``POST
  /v1/check-and-add`` against ``neardup serve --workers N`` (``--server-workers``), each client
  on one keep-alive connection of the standard library's ``http.client`` (httpx, used before,
  spent 2.2 ms of CPU per request in the client, the standard client 0.3-0.7 ms; the clients
  share the machine's cores with the server, so a heavy client slows the server it measures).
  datasketch has no server: each client process sketches (MinHash in Python, its users' way)
  and calls Redis itself (``query``; ``query`` then ``insert``), the usual way to share one
  datasketch index between workers; its sketching is part of its cost, as the server's is part
  of neardup's. Requests per second and latency percentiles, and the CPU seconds of the
  clients and of the server (neardup's process tree, or redis-server).

Time box: ``--add-budget`` seconds of adding per system. A system that runs out stops growing;
queries are then measured at the size both reached and again for neardup at its final size, and
the time to reach ``--docs`` is extrapolated from the last chunk's rate and labelled
``extrapolated``. Machine facts, versions and load averages go with the figures into
``benchmarks/results/index-<date>.json``.

Documents: synthetic pages of 100-400 words, half drawn with the word frequencies of the real
corpus (``benchmarks/data/corpus.jsonl``, else /usr/share/doc copyright files), half from one of
20,000 topics (see :class:`Corpus`), 1.5 KB on average; 10% are near-copies of an earlier page
(2% of words replaced: Jaccard of 5-shingles about 0.82), 2% exact copies in upper case, 3%
contiguous halves of an earlier page.

Usage::

    python benchmarks/index_service.py                          # 1M documents, ~53 min on 2 cores
    python benchmarks/index_service.py --docs 100000 --add-budget 600
    python benchmarks/index_service.py --quick                  # 20k documents, a few minutes
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

REDIS_PORT = 6390
BASENAME = b"ndbench"
_WORD = re.compile(r"\w+")


# ----------------------------------------------------------------------------- documents

def vocabulary(n_docs: int = 800, size: int = 30000) -> tuple[list[str], np.ndarray]:
    """The most frequent alphabetic words of real text, with a cumulative distribution."""
    from neardup.text.tokenize import words_of_folded
    from neardup.text.normalize import fold

    counts: collections.Counter = collections.Counter()
    corpus = HERE / "data" / "corpus.jsonl"
    if corpus.exists():
        with open(corpus, encoding="utf-8") as fh:
            for i, line in enumerate(fh):
                if i >= n_docs:
                    break
                counts.update(w for w in words_of_folded(fold(json.loads(line)["text"])) if w.isalpha())
    else:
        import glob

        for path in sorted(glob.glob("/usr/share/doc/*/copyright"))[:n_docs]:
            with open(path, encoding="utf-8", errors="replace") as fh:
                counts.update(w for w in words_of_folded(fold(fh.read())) if w.isalpha())
    words, freq = zip(*counts.most_common(size))
    p = np.array(freq, dtype=np.float64)
    return list(words), np.cumsum(p / p.sum())


class Corpus:
    """Synthetic pages with real word frequencies and planted copies, made chunk by chunk.

    Half of a page's words follow the corpus frequencies (function words and all); the other
    half come from one of 20,000 topics of 100 words (Zipf within the topic). Without topics,
    every page's word counts point the same way and their simhashes crowd together (mean
    Hamming distance 10 bits instead of the 25 of the real corpus, 1% of pairs within 3 bits);
    with them, pairs are 29 bits apart on average and 4 in a million within 3 bits.
    """

    TOPICS, TOPIC_WORDS, TOPIC_SHARE = 20_000, 100, 0.5

    def __init__(self, vocab: list[str], cdf: np.ndarray, seed: int = 1):
        self.vocab = np.array(vocab, dtype=object)
        self.cdf = cdf
        self.seed = seed
        self.tokens: list[np.ndarray] = []  # every page's word ids (uint16), to copy from
        self.kinds: collections.Counter = collections.Counter()
        rng = np.random.default_rng([seed, 0xC0FFEE])
        self.topics = rng.integers(min(200, len(vocab) - 1), len(vocab),
                                   size=(self.TOPICS, self.TOPIC_WORDS)).astype(np.uint16)

    def _draw(self, rng, n: int) -> np.ndarray:
        toks = np.searchsorted(self.cdf, rng.random(n)).astype(np.uint16)
        topical = rng.random(n) < self.TOPIC_SHARE
        rank = np.minimum(rng.zipf(1.3, int(topical.sum())) - 1, self.TOPIC_WORDS - 1)
        toks[topical] = self.topics[int(rng.integers(0, self.TOPICS)), rank]
        return toks

    def text(self, toks: np.ndarray) -> str:
        return " ".join(self.vocab[toks].tolist())

    def near_copy(self, rng, toks: np.ndarray, rate: float = 0.02) -> np.ndarray:
        out = toks.copy()
        m = rng.random(out.size) < rate
        out[m] = self._draw(rng, int(m.sum()))
        return out

    def half(self, rng, toks: np.ndarray) -> np.ndarray:
        a = int(rng.integers(0, max(1, toks.size // 2)))
        return toks[a:a + int(toks.size * rng.uniform(0.4, 0.5))]

    def chunk(self, n: int) -> list[str]:
        start = len(self.tokens)
        rng = np.random.default_rng([self.seed, start])
        lengths = rng.integers(100, 400, size=n)
        kinds = rng.random(n)
        out = []
        for k in range(n):
            toks, kind, upper = self._draw(rng, int(lengths[k])), "new", False
            if start + k > 1000 and kinds[k] < 0.15:
                src = self.tokens[int(rng.integers(0, len(self.tokens)))]
                if kinds[k] < 0.10:
                    toks, kind = self.near_copy(rng, src), "near"
                elif kinds[k] < 0.12:
                    toks, kind, upper = src, "exact", True
                else:
                    toks, kind = self.half(rng, src), "half"
            self.kinds[kind] += 1
            self.tokens.append(toks)
            text = self.text(toks)
            out.append(text.upper() if upper else text)
        return out

    def queries(self, n: int, seed: int = 99) -> list[tuple[str, str, int | None]]:
        """(kind, text, source index) of n queries: near copies, halves, unseen pages."""
        rng = np.random.default_rng([self.seed, seed])
        out = []
        for i in range(n):
            r = rng.random()
            if r < 0.4:
                j = int(rng.integers(0, len(self.tokens)))
                out.append(("near", self.text(self.near_copy(rng, self.tokens[j])), j))
            elif r < 0.6:
                j = int(rng.integers(0, len(self.tokens)))
                out.append(("half", self.text(self.half(rng, self.tokens[j])), j))
            else:
                out.append(("new", self.text(self._draw(rng, int(rng.integers(100, 400)))), None))
        return out


# ----------------------------------------------------------------------------- datasketch

def ds_minhash(text: str):
    from datasketch import MinHash

    words = _WORD.findall(text.lower())
    shingles = [" ".join(words[i:i + 5]).encode() for i in range(max(1, len(words) - 4))]
    m = MinHash(num_perm=128)
    m.update_batch(shingles)
    return m


def ds_lsh():
    from datasketch import MinHashLSH

    return MinHashLSH(threshold=0.8, num_perm=128, storage_config={
        "type": "redis", "basename": BASENAME, "redis": {"host": "127.0.0.1", "port": REDIS_PORT}})


class Redis:
    """redis-server on loopback, without persistence, for the length of the run."""

    def __init__(self, folder: Path):
        exe = shutil.which("redis-server")
        if exe is None:
            print("installing redis-server from Debian packages", file=sys.stderr)
            sudo = [] if os.geteuid() == 0 else ["sudo"]
            subprocess.run(sudo + ["apt-get", "install", "-y", "-qq", "redis-server"], check=True,
                           env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
            exe = shutil.which("redis-server")
        self.version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip()
        self.proc = subprocess.Popen([exe, "--port", str(REDIS_PORT), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--dir", str(folder), "--protected-mode", "yes"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import redis

        self.client = redis.Redis(host="127.0.0.1", port=REDIS_PORT)
        for _ in range(100):
            try:
                self.client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.1)
        self.client.flushall()

    def memory(self) -> int:
        return int(self.client.info("memory")["used_memory"])

    def cpu_seconds(self) -> float:
        return process_cpu(self.proc.pid)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# ----------------------------------------------------------------------------- measuring

def percentiles(lat: list[float]) -> dict:
    if not lat:
        return {}
    a = np.sort(np.array(lat)) * 1e3
    return {"n": int(a.size), "mean_ms": float(a.mean()), "p50_ms": float(np.percentile(a, 50)),
            "p90_ms": float(np.percentile(a, 90)), "p99_ms": float(np.percentile(a, 99)),
            "max_ms": float(a.max())}


def measure_queries(index, lsh, queries, ids: list[str], ds_size: int | None, redis_pid: int | None = None) -> dict:
    """Each query on neardup, then (when lsh is given) on datasketch; latency and recall."""
    nd_lat, ds_lat = [], []
    nd_cpu = ds_cpu = 0.0
    redis_cpu0 = redis_pid and process_cpu(redis_pid)
    found = {"neardup": collections.Counter(), "datasketch": collections.Counter()}
    totals: collections.Counter = collections.Counter()
    for kind, text, src in queries:
        t, c = time.perf_counter(), time.process_time()
        answer = index.query(text)
        nd_lat.append(time.perf_counter() - t)
        nd_cpu += time.process_time() - c
        if src is not None:
            totals[kind] += 1
            target = ids[src]
            near = {e["id"] for e in answer["near"]}
            inside = {e["id"] for e in answer["contained_in"]}
            if (kind == "near" and target in near) or (kind == "half" and target in inside):
                found["neardup"][kind] += 1
        if lsh is not None:
            t, c = time.perf_counter(), time.process_time()
            keys = lsh.query(ds_minhash(text))
            ds_lat.append(time.perf_counter() - t)
            ds_cpu += time.process_time() - c
            if src is not None and src < (ds_size or 0) and ids[src] in {k.decode() if isinstance(k, bytes) else k
                                                                          for k in keys}:
                found["datasketch"][kind] += 1
    out = {"neardup": {"latency": percentiles(nd_lat), "cpu_ms_per_query": nd_cpu / len(queries) * 1e3,
                       "recall": {k: found["neardup"][k] / totals[k] for k in totals if totals[k]}}}
    if lsh is not None:
        redis_cpu = process_cpu(redis_pid) - redis_cpu0 if redis_pid else 0.0
        out["datasketch"] = {"latency": percentiles(ds_lat),
                             "cpu_ms_per_query": (ds_cpu + redis_cpu) / len(queries) * 1e3,
                             "recall": {k: found["datasketch"][k] / totals[k] for k in totals if totals[k]}}
    out["recall_means"] = ("near: the source page is in 'near' (neardup, estimated Jaccard >= 0.8) or among "
                           "the LSH candidates (datasketch); half: the source page is in 'contained_in' (neardup; "
                           "datasketch has no containment, its figure is LSH candidates)")
    return out


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a process, from /proc."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process and all its descendants (the workers of ``neardup serve``)."""
    children: dict[int, list[int]] = collections.defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
                children[ppid].append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            total += process_cpu(p)
        except OSError:
            pass
        todo += children.get(p, [])
    return total


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def client_main(args) -> None:
    """One closed-loop client process (``--client``): requests until the deadline, latencies out."""
    with open(args.docs_file, encoding="utf-8") as fh:
        docs = [json.loads(line) for line in fh]
    lat, errors = [], 0
    i = 0
    # A check stores nothing, so a client that has sent all its documents starts over with the
    # same cost per request (else a fast system would run out before the time is up, and its
    # requests per second, counted over the whole time, would come out too low).
    cycle = args.op != "check-and-add"

    def wait_for_go() -> float:
        # Ready when everything is imported and connected; the parent starts every client's clock at once.
        Path(args.docs_file + ".ready").touch()
        go = Path(args.start_at)
        while not go.exists():
            time.sleep(0.01)
        start = float(go.read_text())
        while time.time() < start:
            time.sleep(0.001)
        return start + args.seconds

    if args.client == "neardup":
        # The standard library's HTTP client on one keep-alive connection: about a third of httpx's
        # CPU per request (0.7 ms against 2.2 ms), and the clients share the server's two cores.
        import http.client
        from urllib.parse import urlsplit

        path = "/v1/check-and-add" if args.op == "check-and-add" else "/v1/check"
        where = urlsplit(args.url)
        c = http.client.HTTPConnection(where.hostname, where.port, timeout=60)
        headers = {"Content-Type": "application/json"}
        c.request("GET", "/healthz")
        c.getresponse().read()

        def send(d) -> bool:
            c.request("POST", path, body=json.dumps({"id": d["id"], "text": d["text"]}).encode(), headers=headers)
            r = c.getresponse()
            r.read()
            return r.status != 200
    else:
        lsh = ds_lsh()
        ds_minhash("warm up")

        def send(d) -> bool:
            m = ds_minhash(d["text"])
            keys = lsh.query(m)
            if args.op == "check-and-add" and d["id"] not in keys:
                lsh.insert(d["id"], m, check_duplication=False)
            return False

    end = wait_for_go()
    cpu0 = time.process_time()
    while time.time() < end and (i < len(docs) or cycle):
        d = docs[i % len(docs)]
        i += 1
        t = time.perf_counter()
        errors += send(d)
        lat.append(time.perf_counter() - t)
    if args.client == "neardup":
        c.close()
    with open(args.out, "w") as fh:
        json.dump({"latencies": lat, "errors": errors, "exhausted": i >= len(docs) and not cycle,
                   "documents_sent": i, "distinct_documents": min(i, len(docs)),
                   "cpu_seconds": time.process_time() - cpu0}, fh)


def run_clients(system: str, op: str, n_clients: int, seconds: float, docs: list[tuple[str, str]], folder: Path,
                url: str | None = None, server_pid: int | None = None) -> dict:
    per = len(docs) // n_clients
    procs, outs, ready = [], [], []
    go = folder / f"{system}-{op}.go"
    for c in range(n_clients):
        f = folder / f"{system}-{op}-{c}.jsonl"
        with open(f, "w", encoding="utf-8") as fh:
            for doc_id, text in docs[c * per:(c + 1) * per]:
                fh.write(json.dumps({"id": doc_id, "text": text}) + "\n")
        out = folder / f"{system}-{op}-{c}.out.json"
        outs.append(out)
        ready.append(Path(str(f) + ".ready"))
        cmd = [sys.executable, __file__, "--client", system, "--op", op, "--docs-file", str(f), "--out", str(out),
               "--seconds", str(seconds), "--start-at", str(go)]
        if url:
            cmd += ["--url", url]
        procs.append(subprocess.Popen(cmd))
    while not all(r.exists() for r in ready):
        if any(p.poll() is not None for p in procs):
            raise RuntimeError(f"a {system} client exited before starting")
        time.sleep(0.05)
    server_cpu0 = tree_cpu(server_pid) if server_pid else 0.0
    tmp = go.with_suffix(".tmp")
    tmp.write_text(str(time.time() + 0.5))
    os.replace(tmp, go)  # atomically: a client never reads a half-written start time
    for p in procs:
        p.wait(timeout=seconds + 300)
    server_cpu = tree_cpu(server_pid) - server_cpu0 if server_pid else None
    lat, errors, exhausted, client_cpu = [], 0, False, 0.0
    sent = distinct = 0
    for out in outs:
        with open(out) as fh:
            r = json.load(fh)
        sent += r.get("documents_sent", 0)
        distinct += r.get("distinct_documents", 0)
        lat += r["latencies"]
        errors += r["errors"]
        exhausted |= r["exhausted"]
        client_cpu += r["cpu_seconds"]
    out = {"clients": n_clients, "seconds": seconds, "requests": len(lat),
           "requests_per_s": len(lat) / seconds, "errors": errors, "ran_out_of_documents": exhausted,
           "latency": percentiles(lat), "client_cpu_seconds": client_cpu, "distinct_documents": distinct,
           "documents_per_client": per}
    if server_cpu is not None:
        out["server_cpu_seconds"] = server_cpu
    return out


def start_server(db: str, port: int, workers: int, resident: bool = True) -> subprocess.Popen:
    import httpx

    proc = subprocess.Popen([sys.executable, "-m", "neardup", "serve", "--db", db, "--port", str(port),
                             "--workers", str(workers), "--log-level", "warning"]
                            + ([] if resident else ["--no-resident"]))
    for _ in range(600):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("neardup serve did not start")


# ----------------------------------------------------------------------------- facts

def machine() -> dict:
    facts = {"platform": platform.platform(), "python": platform.python_version(), "cores": os.cpu_count(),
             "load_average": list(os.getloadavg())}
    try:
        with open("/proc/cpuinfo") as fh:
            facts["cpu"] = next(line.split(":", 1)[1].strip() for line in fh if line.startswith("model name"))
        with open("/proc/meminfo") as fh:
            facts["memory_gib"] = round(int(fh.readline().split()[1]) / 2**20, 1)
    except (OSError, StopIteration):
        pass
    return facts


def versions(redis_version: str) -> dict:
    import sqlite3
    from importlib.metadata import PackageNotFoundError, version

    out = {"sqlite": sqlite3.sqlite_version, "redis_server": redis_version}
    for pkg in ("neardup", "numpy", "datasketch", "redis", "fastapi", "uvicorn", "uvloop", "httptools", "httpx",
                "xxhash"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    try:
        out["neardup_commit"] = subprocess.run(["git", "-C", str(HERE.parent), "rev-parse", "--short", "HEAD"],
                                               capture_output=True, text=True).stdout.strip()
        # Files changed since that commit (a shared working tree: others' work in progress).
        out["neardup_uncommitted"] = subprocess.run(
            ["git", "-C", str(HERE.parent), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True).stdout.split("\n")[:-1]
    except OSError:
        pass
    return out


# ----------------------------------------------------------------------------- main

def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--docs", type=int, default=1_000_000, help="target store size (default 1,000,000)")
    p.add_argument("--chunk", type=int, default=25_000, help="documents per interleaved chunk")
    p.add_argument("--batch", type=int, default=25_000,
                   help="neardup documents per transaction (default 25,000: neardup index add --batch-size)")
    p.add_argument("--cache-mb", type=int, default=1024, help="neardup's SQLite page cache (default 1024)")
    p.add_argument("--queries", type=int, default=2000)
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--service-seconds", type=float, default=30.0)
    p.add_argument("--server-workers", default="1,2",
                   help="neardup serve --workers, a comma-separated list: each is measured (default 1,2)")
    p.add_argument("--add-budget", type=float, default=3600.0, help="seconds of adding per system")
    p.add_argument("--workdir", default="/tmp/neardup-index-bench")
    p.add_argument("--out", default=None, help="results file (default benchmarks/results/index-<date>.json)")
    p.add_argument("--no-datasketch", action="store_true")
    p.add_argument("--no-resident", action="store_true",
                   help="neither the benchmark's index nor the server keeps the file mapped (the old behaviour)")
    p.add_argument("--keep", action="store_true", help="keep the index file afterwards")
    p.add_argument("--quick", action="store_true", help="20k documents, 300 queries, 10 s per service run")
    # client mode (internal)
    p.add_argument("--client", choices=["neardup", "datasketch"], help=argparse.SUPPRESS)
    p.add_argument("--op", default="check", help=argparse.SUPPRESS)
    p.add_argument("--docs-file", help=argparse.SUPPRESS)
    p.add_argument("--seconds", type=float, default=10.0, help=argparse.SUPPRESS)
    p.add_argument("--start-at", default="", help=argparse.SUPPRESS)
    p.add_argument("--url", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.client:
        return client_main(args)
    if args.quick:
        args.docs, args.chunk, args.queries, args.service_seconds = 20_000, 5_000, 300, 10.0

    folder = Path(args.workdir)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    db = str(folder / "index.db")
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    out_path = Path(args.out) if args.out else HERE / "results" / f"index-{date}.json"
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    internal = ("client", "op", "docs_file", "seconds", "start_at", "url")
    results: dict = {"benchmark": "index_service", "started": started, "machine": machine(),
                     "params": {k: v for k, v in vars(args).items() if k not in internal}}

    def save() -> None:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        with open(out_path, "w") as fh:
            json.dump(results, fh, indent=2)

    # SIGTERM (a time limit, a shell's kill) unwinds like Ctrl-C, so Redis and the server stop too.
    def interrupt(*_):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    redis_server = None if args.no_datasketch else Redis(folder)
    try:
        _run(args, folder, db, results, save, redis_server)
    finally:
        if redis_server:
            redis_server.stop()
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"results: {out_path}", file=sys.stderr)


def _run(args, folder: Path, db: str, results: dict, save, redis_server) -> None:
    from neardup.store import SeenIndex

    results["versions"] = versions(redis_server.version if redis_server else "")
    t = time.perf_counter()
    vocab, cdf = vocabulary()
    corpus = Corpus(vocab, cdf)
    print(f"vocabulary: {len(vocab)} words in {time.perf_counter() - t:.1f} s", file=sys.stderr)

    # Kept resident (the file mapped, its pages faulted in by a background thread) as ``neardup
    # serve`` keeps it: the queries below are measured on an index opened for serving.
    index = SeenIndex(db, jobs=1, cache_mb=args.cache_mb, resident=not args.no_resident)
    cfg = index.config
    lsh = None if args.no_datasketch else ds_lsh()
    results["systems"] = {
        "neardup": {"store": "SQLite file, WAL, synchronous=NORMAL (durable when COMMIT returns)",
                    "banding": [cfg.bands, cfg.rows], "num_perm": cfg.minhash.num_perm,
                    "answers": "exact, near (estimated Jaccard), contains, contained_in, simhash",
                    "transaction": args.batch, "sketch_threads": 1, "cache_mb": args.cache_mb,
                    "resident": not args.no_resident},
        "datasketch": None if lsh is None else {
            "store": "Redis on loopback, --save '' --appendonly no (in memory only)",
            "banding": [lsh.b, lsh.r], "num_perm": 128, "answers": "LSH candidate keys",
            "insertion": "insertion_session(buffer_size=1000)"},
    }
    ids: list[str] = []
    chunks = []
    spent = {"neardup": 0.0, "datasketch": 0.0}
    ds_size = 0
    queries_done_at = None
    results["add"] = {"chunks": chunks}
    while len(ids) < args.docs and spent["neardup"] < args.add_budget:
        n = min(args.chunk, args.docs - len(ids))
        texts = corpus.chunk(n)
        new_ids = [f"d{i}" for i in range(len(ids), len(ids) + n)]
        ids += new_ids
        row = {"docs": len(ids), "load_average": os.getloadavg()[0]}
        t, c = time.perf_counter(), time.process_time()
        for s in range(0, n, args.batch):
            index.add_many(list(zip(new_ids[s:s + args.batch], texts[s:s + args.batch])))
        # The WAL copy into the file is part of adding: done here, inside neardup's time (the
        # index's background thread would otherwise do it while datasketch is being timed).
        index.checkpoint()
        el = time.perf_counter() - t
        spent["neardup"] += el
        row["neardup_docs_per_s"] = n / el
        row["neardup_cpu_seconds"] = time.process_time() - c
        row["neardup_cpu_share"] = row["neardup_cpu_seconds"] / el
        wal = db + "-wal"
        row["neardup_bytes"] = os.path.getsize(db) + (os.path.getsize(wal) if os.path.exists(wal) else 0)
        if lsh is not None and ds_size == len(ids) - n and spent["datasketch"] < args.add_budget:
            t, c, rc = time.perf_counter(), time.process_time(), redis_server.cpu_seconds()
            sketches = [ds_minhash(x) for x in texts]
            t_sketch = time.perf_counter() - t
            with lsh.insertion_session(buffer_size=1000) as session:
                for key, m in zip(new_ids, sketches):
                    session.insert(key, m, check_duplication=False)
            el = time.perf_counter() - t
            spent["datasketch"] += el
            ds_size = len(ids)
            row["datasketch_docs_per_s"] = n / el
            row["datasketch_sketch_share"] = t_sketch / el
            row["datasketch_cpu_seconds"] = time.process_time() - c
            row["redis_cpu_seconds"] = redis_server.cpu_seconds() - rc
            row["datasketch_cpu_share"] = row["datasketch_cpu_seconds"] / el
            row["redis_used_memory"] = redis_server.memory()
        chunks.append(row)
        ds = f", datasketch {row['datasketch_docs_per_s']:.0f}/s" if "datasketch_docs_per_s" in row else ""
        print(f"{len(ids):>9,} docs: neardup {row['neardup_docs_per_s']:.0f}/s{ds} (load {row['load_average']:.1f})",
              file=sys.stderr, flush=True)
        save()
        if lsh is not None and queries_done_at is None and ds_size < len(ids):
            # datasketch stopped growing: compare queries at the size both reached
            queries_done_at = ds_size
            results["query_at_equal_size"] = {"docs": ds_size, **measure_queries(
                index, lsh, _queries_below(corpus, args.queries, ds_size), ids, ds_size, redis_server.proc.pid)}
            save()
    results["add"]["summary"] = _add_summary(chunks, args.docs, spent, len(ids), ds_size)
    results["corpus"] = {"kinds": dict(corpus.kinds),
                         "mean_words": float(np.mean([t.size for t in corpus.tokens]))}
    save()

    if lsh is not None and queries_done_at is None:
        results["query_at_equal_size"] = {"docs": ds_size, **measure_queries(
            index, lsh, corpus.queries(args.queries), ids, ds_size, redis_server.proc.pid)}
    elif lsh is None or len(ids) > (queries_done_at or 0):
        results["query_neardup_final"] = {"docs": len(ids), **measure_queries(
            index, None, corpus.queries(args.queries), ids, None)}
    stats = index.stats()
    results["neardup_store"] = {"documents": stats["documents"], "database_bytes": stats["database_bytes"],
                                "wal_bytes": stats["wal_bytes"], "resident": stats.get("resident")}
    index.close()
    if redis_server:
        results["redis_used_memory"] = redis_server.memory()
    save()

    # service: fresh documents, neardup over HTTP, datasketch clients on Redis. neardup runs
    # with each worker count of --server-workers (its own server each time, on the same file);
    # the first count's figures are also stored under the plain keys (neardup_check, ...).
    fresh = corpus.chunk(args.clients * 4000)
    docs = [(f"s{i}", x) for i, x in enumerate(fresh)]
    half = len(docs) // 2
    workers_list = [int(w) for w in str(args.server_workers).split(",")]
    service: dict = {"clients": args.clients, "seconds": args.service_seconds, "docs_in_store": len(ids),
                     "neardup_server_workers": workers_list,
                     "neardup_client": "http.client, one keep-alive connection per client process"}
    for n_workers in workers_list:
        port = free_port()
        server = start_server(db, port, n_workers, resident=not args.no_resident)
        url = f"http://127.0.0.1:{port}"
        try:
            if n_workers != workers_list[0]:  # new documents, or check-and-add would find exact copies
                more = corpus.chunk(args.clients * 4000)
                mine = [(f"w{n_workers}-{i}", x) for i, x in enumerate(more)]
            else:
                mine = docs
            for op, key, part in (("check", "check", mine[:half]), ("check-and-add", "check_and_add", mine[half:])):
                r = run_clients("neardup", op, args.clients, args.service_seconds, part, folder, url, server.pid)
                r["server_workers"] = n_workers
                service[f"neardup_{key}_workers_{n_workers}"] = r
                if n_workers == workers_list[0]:
                    service[f"neardup_{key}"] = r
                print(f"service neardup {op} ({n_workers} workers): {r['requests_per_s']:.0f} req/s, "
                      f"p99 {r['latency']['p99_ms']:.1f} ms (load {os.getloadavg()[0]:.1f})", file=sys.stderr)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)
    if lsh is not None:
        for op, key, part in (("check", "datasketch_query", docs[:half]),
                              ("check-and-add", "datasketch_query_insert", docs[half:])):
            service[key] = run_clients("datasketch", op, args.clients, args.service_seconds, part, folder,
                                       server_pid=redis_server.proc.pid)
            print(f"{key}: {service[key]['requests_per_s']:.0f} req/s, p99 {service[key]['latency']['p99_ms']:.1f} ms "
                  f"(load {os.getloadavg()[0]:.1f})", file=sys.stderr)
    if lsh is not None:
        service["datasketch_docs_in_store"] = ds_size
    results["service"] = service
    results["machine"]["load_average_end"] = list(os.getloadavg())
    results["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    save()


def _queries_below(corpus: Corpus, n: int, size: int):
    """Queries whose source pages are among the first ``size`` (the ones both systems hold)."""
    out = []
    for kind, text, src in corpus.queries(n * 3):
        if src is None or src < size:
            out.append((kind, text, src))
        if len(out) == n:
            break
    return out


def _add_summary(chunks: list[dict], target: int, spent: dict, nd_size: int, ds_size: int) -> dict:
    out = {"neardup": {"docs": nd_size, "seconds": spent["neardup"],
                       "docs_per_s": nd_size / spent["neardup"] if spent["neardup"] else None,
                       "last_chunk_docs_per_s": chunks[-1]["neardup_docs_per_s"] if chunks else None,
                       "bytes_on_disk": chunks[-1]["neardup_bytes"] if chunks else None}}
    ds_rows = [c for c in chunks if "datasketch_docs_per_s" in c]
    if ds_rows:
        out["datasketch"] = {"docs": ds_size, "seconds": spent["datasketch"],
                             "docs_per_s": ds_size / spent["datasketch"],
                             "last_chunk_docs_per_s": ds_rows[-1]["datasketch_docs_per_s"],
                             "redis_used_memory": ds_rows[-1]["redis_used_memory"]}
        same = chunks[:len(ds_rows)]
        sizes = [0] + [c["docs"] for c in same]
        nd_time = sum((c["docs"] - p) / c["neardup_docs_per_s"] for c, p in zip(same, sizes))
        ds_time = sum((c["docs"] - p) / c["datasketch_docs_per_s"] for c, p in zip(same, sizes))
        nd_cpu = sum(c["neardup_cpu_seconds"] for c in same)
        ds_cpu = sum(c["datasketch_cpu_seconds"] + c["redis_cpu_seconds"] for c in same)
        out["same_documents"] = {"docs": ds_size, "neardup_docs_per_s": ds_size / nd_time,
                                 "datasketch_docs_per_s": ds_size / ds_time, "ratio": ds_time / nd_time,
                                 "neardup_docs_per_cpu_s": ds_size / nd_cpu,
                                 "datasketch_docs_per_cpu_s": ds_size / ds_cpu,
                                 "cpu_note": "CPU seconds: neardup's process (its threads included); datasketch's "
                                             "process plus redis-server's"}
    for name, size in (("neardup", nd_size), ("datasketch", ds_size if ds_rows else None)):
        if size is not None and size < target and name in out:
            rate = out[name]["last_chunk_docs_per_s"]
            out[name]["extrapolated_seconds_to_target"] = out[name]["seconds"] + (target - size) / rate
            out[name]["extrapolation"] = (f"extrapolated: reached {size:,} of {target:,} documents in the time "
                                          f"budget; the rest estimated at the last chunk's rate")
    return out


if __name__ == "__main__":
    main()
