#!/usr/bin/env python3
"""The index at scale: ``index add`` against ``dedup`` on the same generated input, the bytes per
document by component, query p50/p99, against datasketch's MinHashLSH on Redis, in one run; and
the issue's half split (``dedup A --save-index``, then ``dedup B --against``, against ``dedup B``).

Usage:
    python benchmarks/index_scale.py --docs N --generate-only benchmarks/data/generated-N.jsonl
    python benchmarks/index_scale.py --docs N [--input benchmarks/data/generated-N.jsonl]
                                     [--profiles default lean] [--redis [--redis-docs N]] [--deadline S]
                                     [--today-src DIR [--today-deadline S]]
    python benchmarks/index_scale.py --half-split [--corpus benchmarks/data/corpus.jsonl] [--repeat N] [--output PATH]

``--docs N``: N documents from ``benchmarks/scale.py``'s generator (about 600 bytes each, 5 %
planted near-copies). For each profile: ``neardup index add`` (wall seconds, documents/s and the
peak resident memory of the process, its ``VmHWM``), the index file's
bytes per document by component (``benchmarks/index_layout.py``'s ``dbstat`` split) and the
latency of 1,000 single-document queries of stored texts; ``neardup dedup --no-kept`` of the same
file in the same run gives the documents/s ratio. ``--redis``: a ``redis-server`` started on a
loopback port, the same documents' MinHash signatures (neardup's, 18 bands of 7 rows, as the
index bands them) inserted into datasketch's ``MinHashLSH`` with Redis storage, and Redis's
``used_memory`` per document (``--redis-docs N``: of the first N documents). ``--today-src DIR``:
the same ``index add`` in the layout of the day issue 17 was filed (a checkout of main at
``4e332f4``, schema 2, its extensions built in place; DIR is its ``src``), as profile ``today``,
``--today-deadline S`` to stop it (it adds about 1,600 documents a second). ``--half-split --repeat N``: N rounds of its four commands, the
medians and every round; then ``dedup A B`` together once (not timed), and B's clusters.jsonl
lines and pairs compared with the last ``--against`` run's, record for record (``joint_equality``).
Writes ``benchmarks/results/index-scale-<N>-<date>.json`` (or
``index-half-split-<date>.json``; ``--output`` another name). Run it under ``flock /work/bench.lock``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from index_layout import QUERY_SCRIPT, components, remove_db  # noqa: E402
from scale import generate  # noqa: E402


REDIS_SCRIPT = r"""
import json, sys, time
import numpy as np
import redis
from datasketch import LeanMinHash, MinHashLSH
from neardup.config import DedupConfig
from neardup.stages.sketch import sketch_texts
corpus, port, bands, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
limit = int(sys.argv[5]) if len(sys.argv) > 5 else None  # the first documents only
client = redis.Redis(host="127.0.0.1", port=port)
client.flushall()
before = client.info("memory")["used_memory"]
cfg = DedupConfig()
lsh = MinHashLSH(num_perm=cfg.minhash.num_perm, params=(bands, rows),
                 storage_config={"type": "redis", "basename": b"nd", "redis": {"host": "127.0.0.1", "port": port}})
n = 0
sketch_s = insert_s = 0.0
batch = []

def flush(batch):
    global sketch_s, insert_s
    t = time.perf_counter()
    sig = sketch_texts([b[1] for b in batch], cfg.shingle, cfg.minhash, jobs=2, with_fingerprints=False).values
    sketch_s += time.perf_counter() - t
    t = time.perf_counter()
    with lsh.insertion_session(buffer_size=50000) as session:
        for (doc_id, _), values in zip(batch, sig):
            # neardup's mulshift32 values are 32-bit: datasketch's 32-bit scheme stores them as such
            session.insert(doc_id, LeanMinHash(seed=cfg.minhash.seed, hashvalues=values.astype(np.uint32),
                                               scheme="affine32"))
    insert_s += time.perf_counter() - t

with open(corpus, "rb") as fh:
    for line in fh:
        if limit is not None and n + len(batch) >= limit:
            break
        rec = json.loads(line)
        batch.append((rec["id"], rec["text"]))
        if len(batch) >= 20000:
            flush(batch)
            n += len(batch)
            batch = []
if batch:
    flush(batch)
    n += len(batch)
after = client.info("memory")["used_memory"]
print(json.dumps({"documents": n, "used_memory_bytes": after - before,
                  "bytes_per_document": round((after - before) / n, 1), "bands": bands, "rows": rows,
                  "sketch_seconds": round(sketch_s, 2), "insert_seconds": round(insert_s, 2),
                  "insert_docs_per_s": round(n / insert_s)}))
"""


def run_measured(cmd: list[str], env: dict | None = None, every: float = 0.05, deadline: float | None = None,
                 log: str | None = None) -> dict:
    """Run ``cmd``; its wall seconds, CPU seconds and peak resident memory: ``VmHWM`` of the
    process (every thread included), read from /proc every ``every`` seconds (it only grows, so
    the last reading misses at most the last ``every`` seconds). Not ``wait4``'s ``ru_maxrss``:
    Linux carries into it the resident size of this process at the fork, before the exec.
    Past ``deadline`` seconds the process is killed and ``killed_after_s`` says so; ``log``: a
    file for its standard error."""
    t = time.perf_counter()
    err = open(log, "wb") if log else None
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)
    hwm = 0
    killed = None
    # the process is waited for on a thread, so that its end is timed when it comes (waited for
    # between two readings, it was timed up to `every` seconds late: 50 ms of a 0.5 s run)
    ended: dict = {}

    def reap() -> None:
        _, ended["status"], ended["usage"] = os.wait4(proc.pid, 0)
        ended["at"] = time.perf_counter()

    waiter = threading.Thread(target=reap, daemon=True)
    waiter.start()
    while waiter.is_alive():
        try:
            with open(f"/proc/{proc.pid}/status") as fh:
                for line in fh:
                    if line.startswith("VmHWM:"):
                        hwm = max(hwm, int(line.split()[1]))
        except OSError:
            pass
        if deadline is not None and killed is None and time.perf_counter() - t > deadline:
            killed = round(time.perf_counter() - t, 1)
            proc.kill()
        waiter.join(every)
    status, usage = ended["status"], ended["usage"]
    seconds = ended["at"] - t
    if err:
        err.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode and killed is None:
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    out = {"seconds": round(seconds, 2), "peak_rss_mb": round(hwm / 1024, 1),
           "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2)}
    if killed is not None:
        out["killed_after_s"] = killed
    return out


def neardup(*args: str) -> list[str]:
    return [sys.executable, "-m", "neardup", *args]


def dedup_run(corpus: str, work: str, n: int) -> dict:
    out = os.path.join(work, "dedup-out")
    shutil.rmtree(out, ignore_errors=True)
    try:
        m = run_measured(neardup("dedup", corpus, "-o", out, "--no-kept", "-q"))
    except subprocess.CalledProcessError as exc:
        # (at 10M dedup's work folder needs about 25 GB: it refuses with exit 4 when the disk has
        # less; the index runs are measured all the same, without a ratio)
        return {"failed": f"exit status {exc.returncode}", "docs_per_s": None}
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return {**m, "docs_per_s": round(n / m["seconds"])}


def index_add(corpus: str, work: str, n: int, profile: str, deadline: float | None,
              today_src: str | None = None) -> dict:
    """``neardup index add`` of ``corpus`` with ``profile`` into ``<work>/<profile>.db`` (made
    anew); or, with ``today_src``, in the layout of the checkout whose ``src`` that is (the index
    of the day issue 17 was filed, schema 2: no profiles, its own defaults), run with that folder
    first on ``PYTHONPATH``. Its wall and CPU seconds and peak resident memory; the file stays
    for :func:`index_report`."""
    db = os.path.join(work, f"{profile}.db")
    remove_db(db)
    log = os.path.join(work, f"{profile}.log")
    env = None
    if today_src:
        env = {**os.environ, "PYTHONPATH": os.path.abspath(today_src)}
        cmd = neardup("index", "add", "--db", db, "-v", corpus)
    else:
        cmd = neardup("index", "add", "--db", db, "--profile", profile, "-v", corpus)
    m = run_measured(cmd, env=env, deadline=deadline, log=log)
    if "killed_after_s" in m:
        # the documents committed before the deadline (index add -v logs every commit)
        lines = [x for x in Path(log).read_text().splitlines() if x.startswith("neardup: committed ")]
        done = int(lines[-1].split()[2]) if lines else 0
        return {**m, "documents_committed": done, "docs_per_s": round(done / m["killed_after_s"]) if done else 0}
    return {**m, "docs_per_s": round(n / m["seconds"])}


def index_report(corpus: str, work: str, n: int, profile: str, queries: int, today_src: str | None,
                 killed: bool) -> dict:
    """The bytes per document of the file :func:`index_add` left (of what was committed, when it
    was stopped: SQLite recovers the file from its WAL) and, when it ran to the end, the latency
    of ``queries`` single-document queries; the file is removed."""
    db = os.path.join(work, f"{profile}.db")
    env = {**os.environ, "PYTHONPATH": os.path.abspath(today_src)} if today_src else None
    try:
        if not os.path.exists(db):
            return {}
        with sqlite3.connect(db) as conn:  # (a run stopped before its first commit has no documents)
            if not conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'docs'").fetchone()[0] or \
                    not conn.execute("SELECT count(*) FROM docs").fetchone()[0]:
                return {}
        parts = components(db)
        if killed:
            return parts
        q = subprocess.run([sys.executable, "-c", QUERY_SCRIPT, db, corpus, str(queries), str(n)],
                           capture_output=True, text=True, check=True, env=env)
        return {**parts, "query": json.loads(q.stdout)}
    finally:
        remove_db(db)


def median_of(rounds: list[dict]) -> dict:
    """Each figure's median over the rounds (the rounds themselves under ``rounds``)."""
    if len(rounds) == 1:
        return dict(rounds[0])
    keys = [k for k, v in rounds[0].items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    out = {k: round(statistics.median(r[k] for r in rounds if k in r), 3) for k in keys}
    return {**out, "rounds": rounds}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_run(corpus: str, work: str, limit: int | None = None) -> dict:
    server = shutil.which("redis-server")
    if server is None:
        return {"skipped": "redis-server is not installed (apt-get install -y redis-server)"}
    from neardup.config import DedupConfig

    band = DedupConfig().banding()
    port = free_port()
    proc = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", work], stdout=subprocess.DEVNULL)
    try:
        for _ in range(100):  # bounded wait for the server to listen
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-c", REDIS_SCRIPT, corpus, str(port), str(band.bands), str(band.rows),
                            *([str(limit)] if limit else [])], capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(f"the MinHashLSH run failed: {r.stderr.strip()[-2000:]}")
        out = {**json.loads(r.stdout), "seconds": round(time.perf_counter() - t, 2)}
        version = subprocess.run([server, "--version"], capture_output=True, text=True).stdout.strip()
        import datasketch

        out["versions"] = {"redis_server": version, "datasketch": datasketch.__version__}
        return out
    finally:
        proc.terminate()
        proc.wait()


def read_jsonl(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def joint_equality(a: str, b: str, against_out: str, work: str) -> dict:
    """What the goal asks of ``--against``: B's records have the same outcomes (clusters.jsonl
    lines) and pairs as in ``dedup A B`` together. Compared record for record, not timed."""
    joint = os.path.join(work, "joint")
    shutil.rmtree(joint, ignore_errors=True)
    subprocess.run(neardup("dedup", a, b, "-o", joint, "--no-kept", "-q"), check=True)
    mine = read_jsonl(os.path.join(against_out, "clusters.jsonl"))
    joint_b = [r for r in read_jsonl(os.path.join(joint, "clusters.jsonl")) if r.get("source") == b]
    b_ids = {r["id"] for r in mine}
    # (ids are unique across the halves of the benchmark corpus: file paths; generated ids too)
    joint_pairs = sorted(json.dumps(p, sort_keys=True) for p in read_jsonl(os.path.join(joint, "pairs.jsonl"))
                         if p["a"] in b_ids or p["b"] in b_ids)
    my_pairs = sorted(json.dumps(p, sort_keys=True) for p in read_jsonl(os.path.join(against_out, "pairs.jsonl")))
    differing = sum(1 for x, y in zip(mine, joint_b) if x != y) + abs(len(mine) - len(joint_b))
    reasons: dict = {}
    for r in mine:
        key = f'{r["reason"]} of {"A" if r.get("duplicate_of_source") == a else "B"}' if r.get("duplicate_of") \
            is not None else r["reason"]
        reasons[key] = reasons.get(key, 0) + 1
    shutil.rmtree(joint, ignore_errors=True)
    return {"records_compared": len(mine), "records_differing": differing, "pairs": len(my_pairs),
            "pairs_equal": my_pairs == joint_pairs, "outcomes": reasons,
            "equal": differing == 0 and my_pairs == joint_pairs}


def half_split(corpus: str, work: str, repeat: int = 1, compile_each_run: bool = False) -> dict:
    """The corpus cut in two halves in input order: A with --save-index, then B --against it,
    against B alone (and A alone, the save's cost). With ``repeat`` > 1 the four commands run
    that many rounds in turn: each command's figures are the medians, its ``runs`` every round's,
    and the ratios are of the medians.

    The commands run as an installed neardup does, with its modules' bytecode cached: one round
    first, not counted, writes the caches (and reads the halves into the page cache), and the
    commands run without PYTHONDONTWRITEBYTECODE. With that variable set every command compiled
    the modules it imports, and a run against an index imports the store's (0.08-0.1 s of
    compiling that a user's run does not pay). ``compile_each_run``: every command compiles
    every module it imports (PYTHONDONTWRITEBYTECODE set, and an empty folder as the cache), and
    the first round counts."""
    lines = Path(corpus).read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    a, b = os.path.join(work, "half-a.jsonl"), os.path.join(work, "half-b.jsonl")
    Path(a).write_bytes(b"".join(lines[:half]))
    Path(b).write_bytes(b"".join(lines[half:]))
    del lines
    db = os.path.join(work, "half-a.db")
    runs: dict = {}
    if compile_each_run:  # (no cache to read either: an empty folder for one, and none written)
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": os.path.join(work, "no-pycache")}
    else:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for round_ in range(repeat + (0 if compile_each_run else 1)):
        counted = compile_each_run or round_ > 0
        if os.path.exists(db):  # (--save-index writes a new index)
            remove_db(db)
        for name, cmd in (("dedup A alone", neardup("dedup", a, "-o", os.path.join(work, "oa0"), "--no-kept", "-q")),
                          ("dedup A --save-index", neardup("dedup", a, "-o", os.path.join(work, "oa"), "--no-kept",
                                                           "-q", "--save-index", db)),
                          ("dedup B alone", neardup("dedup", b, "-o", os.path.join(work, "ob0"), "--no-kept", "-q")),
                          ("dedup B --against", neardup("dedup", b, "-o", os.path.join(work, "ob"), "--no-kept", "-q",
                                                        "--against", db))):
            for folder in ("oa0", "oa", "ob0", "ob"):
                shutil.rmtree(os.path.join(work, folder), ignore_errors=True)
            measured = run_measured(cmd, env=env)
            if counted:
                runs.setdefault(name, []).append(measured)
            print(name, "" if counted else "(warm-up)", json.dumps(measured), flush=True)
    out = {}
    for name, got in runs.items():
        out[name] = got[0] if repeat == 1 else {**{k: statistics.median(r[k] for r in got) for k in got[0]},
                                                "runs": got}
    out["index_bytes"] = os.path.getsize(db)
    out["joint_equality"] = joint_equality(a, b, os.path.join(work, "ob"), work)
    out["against_over_alone"] = round(out["dedup B --against"]["seconds"] / out["dedup B alone"]["seconds"], 3)
    out["save_over_alone"] = round(out["dedup A --save-index"]["seconds"] / out["dedup A alone"]["seconds"], 3)
    out["records"] = {"A": half, "B": sum(1 for _ in open(b, "rb"))}
    return out


def machine() -> dict:
    import neardup as nd

    commit = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    return {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version, "neardup": nd.__version__, "commit": commit,
            "load_before": [round(x, 2) for x in os.getloadavg()]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, help="generated documents (scale.py's generator)")
    ap.add_argument("--input", help="a file scale.py's generator made already for --docs (else it is generated "
                                    "into a temporary folder): generate once, outside the lock, with --generate-only")
    ap.add_argument("--generate-only", metavar="PATH", help="write the --docs generated documents to PATH and stop")
    ap.add_argument("--profiles", nargs="*", default=["default", "lean"])
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--redis", action="store_true", help="also datasketch's MinHashLSH on Redis")
    ap.add_argument("--redis-docs", type=int, default=None, metavar="N",
                    help="--redis: insert only the input's first N documents (datasketch inserts about 550 a "
                         "second: 1M take half an hour)")
    ap.add_argument("--today-src", metavar="DIR",
                    help="also index add in the layout of another checkout's src folder (the day the issue was "
                         "filed: main at 4e332f4, schema 2, with its extensions built in place), as profile 'today'")
    ap.add_argument("--today-deadline", type=float, default=None, metavar="S",
                    help="--deadline for the --today-src run alone")
    ap.add_argument("--half-split", action="store_true", help="the corpus split in two halves instead")
    ap.add_argument("--compile-each-run", action="store_true",
                    help="--half-split: no warm-up round, and every command compiles the modules it imports (no "
                         "bytecode cache read or written); the default runs them with cached bytecode, as installed")
    ap.add_argument("--repeat", type=int, default=1,
                    help="rounds of the commands in turn, medians (--half-split: its four commands; --docs: dedup "
                         "and each profile's index add; sizes and queries from the last round)")
    ap.add_argument("--corpus", default=str(HERE / "data" / "corpus.jsonl"))
    ap.add_argument("--note", default="", help="what else ran on the machine meanwhile")
    ap.add_argument("--output", metavar="PATH", help="the results file (default: benchmarks/results/"
                                                     "index-scale-<N>-<profiles>-<date>.json)")
    ap.add_argument("--deadline", type=float, default=None, metavar="S",
                    help="kill an index add still running after S seconds and report the rate of what it committed")
    args = ap.parse_args()
    if not args.half_split and not args.docs:
        ap.error("give --docs N or --half-split")
    if args.generate_only:
        generate(Path(args.generate_only), args.docs, 0.05, 1)
        return
    work = tempfile.mkdtemp(prefix="neardup-index-scale-")
    date = dt.date.today().isoformat()
    try:
        out = {"date": date, "machine": machine(), "note": args.note}
        if args.half_split:
            out["corpus"] = {"path": os.path.relpath(args.corpus, HERE.parent), "bytes": os.path.getsize(args.corpus),
                             "documents": sum(1 for _ in open(args.corpus, "rb"))}
            out["environment"] = {k: os.environ[k] for k in ("PYTHONDONTWRITEBYTECODE",) if k in os.environ}
            out["bytecode"] = ("compiled by every command (no cache read or written)" if args.compile_each_run else
                               "cached (a warm-up round first; PYTHONDONTWRITEBYTECODE not passed on)")
            out["half_split"] = half_split(args.corpus, work, args.repeat, args.compile_each_run)
            dest = Path(args.output) if args.output else HERE / "results" / f"index-half-split-{date}.json"
        else:
            path = args.input or os.path.join(work, f"generated-{args.docs}.jsonl")
            if not args.input:
                generate(Path(path), args.docs, 0.05, 1)
            n = sum(1 for _ in open(path, "rb"))
            out["input"] = {"generator": "benchmarks/scale.py", "documents": n, "bytes": os.path.getsize(path)}
            runs_to_make = [(p, None, args.deadline) for p in args.profiles]
            if args.today_src:
                runs_to_make.append(("today", args.today_src, args.today_deadline or args.deadline))
                commit = (Path(args.today_src) / "COMMIT")
                out["today_commit"] = commit.read_text().strip() if commit.exists() else None
            # rounds in turn (dedup, then each profile), so that a slow minute of the machine
            # falls on all of them; each figure is the median of its rounds
            dedups: list = []
            adds: dict = {p: [] for p, _, _ in runs_to_make}
            for r in range(args.repeat):
                dedups.append(dedup_run(path, work, n))
                print(f"round {r + 1} dedup", json.dumps(dedups[-1]), flush=True)
                for profile, today_src, deadline in runs_to_make:
                    adds[profile].append(index_add(path, work, n, profile, deadline, today_src))
                    print(f"round {r + 1} {profile}", json.dumps(adds[profile][-1]), flush=True)
            out["dedup"] = median_of(dedups)
            out["index"] = []
            for profile, today_src, _ in runs_to_make:
                r = {"profile": profile, **median_of(adds[profile]),
                     **index_report(path, work, n, profile, args.queries, today_src,
                                    killed=any("killed_after_s" in x for x in adds[profile]))}
                if out["dedup"].get("docs_per_s"):
                    r["docs_per_s_over_dedup"] = round(r["docs_per_s"] / out["dedup"]["docs_per_s"], 3)
                out["index"].append(r)
                print(profile, json.dumps({k: v for k, v in r.items() if k != "rounds"}), flush=True)
            if args.redis:
                out["redis_minhashlsh"] = redis_run(path, work, args.redis_docs)
                print("redis", json.dumps(out["redis_minhashlsh"]), flush=True)
            suffix = "-".join(args.profiles) + ("-today" if args.today_src else "") + ("-redis" if args.redis else "")
            dest = Path(args.output) if args.output else HERE / "results" / f"index-scale-{args.docs}-{suffix}-{date}.json"
        out["machine"]["load_after"] = [round(x, 2) for x in os.getloadavg()]
        dest.write_text(json.dumps(out, indent=2) + "\n")
        print(dest)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
