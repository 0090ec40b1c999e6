#!/usr/bin/env python3
"""Peer side of the `neardup dedup` speed benchmark: datasketch, rensa, gaoya, text-dedup.

Each peer is given the corpus text already in memory (loading is not timed, as their users would
hold it) and runs: signatures -> LSH index -> candidate pairs -> connected components (a tiny
union-find in this file, the same for every peer except text-dedup, which uses its own).

Same settings everywhere (the defaults):
  * shingling: lowercase, regex ``\\w+`` words, word 5-shingles joined by one space; a document
    with fewer than 5 words is one shingle of all its words;
  * 128 permutations, Jaccard threshold 0.8, seed 42;
  * LSH banding: datasketch's optimal (b, r) for (threshold, num_perm) = (9, 13) for 0.8/128, given
    explicitly to datasketch, gaoya and text-dedup; rensa requires b*r == num_perm, so it gets the
    divisor pair with the smallest weighted FP+FN (same criterion), (8, 16) for 0.8/128.
    ``--bands B --rows R`` overrides it for every peer.

How each peer is driven (its documented fastest path that yields clusters):
  datasketch  MinHash(num_perm, seed).update_batch(utf-8 shingles) per document (Python loop,
              sha1 32-bit), MinHashLSH(params=(b, r)) insertion session, lsh.query per document.
  rensa       shingles built in Python, RMinHash.from_token_sets in batches (Rust, rayon),
              RMinHashLSH.insert_many + query_all.
  gaoya       its own Rust tokenizer: MinHashStringIndex(analyzer='word', lowercase=True,
              ngram_range=(5, 5), hash_size=32, num_bands=b, band_size=r); par_bulk_insert_docs
              then par_bulk_query (rayon, all --jobs threads). Its word tokenizer splits on ASCII
              whitespace and ASCII punctuation (so '_' splits and non-ASCII punctuation stays in
              words: differs from ``\\w+`` only on such text). Its query keeps only candidates
              whose *estimated* Jaccard reaches the threshold, and it hashes the text a second
              time in the query (there is no API to query by stored signature).
  textdedup   text-dedup's MinHash path as a library: text_dedup.minhash.embed_func run by
              datasets.Dataset.map(num_proc=--jobs) over an in-memory Dataset (built untimed),
              then its own band hash tables and UnionFind exactly as in text_dedup.minhash.main
              (default sha1 / 64-bit config). To get the same shingles, each text is first
              normalised to its ``\\w+`` words joined by single spaces (inside the timed map),
              and min_length=0 so short documents keep one shingle. No output files are written.
No peer verifies candidates against the exact Jaccard; only gaoya filters by the estimate.
For datasketch and rensa the record also holds, computed after the timed part, how many
candidate pairs reach the threshold by estimated Jaccard and how many documents that would
remove (``estimate_verified``).

Usage:
  python benchmarks/peers.py [--corpus benchmarks/data/corpus.jsonl]
                             [--peers datasketch,rensa,gaoya,textdedup] [--limit N]
                             [--json-out FILE] [--timeout 900] [--jobs N] [--python PY]
                             [--k 5] [--num-perm 128] [--threshold 0.8] [--seed 42]
                             [--bands B --rows R] [--quiet]

  --json-out  JSON lines, appended, one record per peer (default
              benchmarks/results/peers-<YYYY-MM-DD>.jsonl); every record of one invocation shares
              a ``run_id``.
  --python    interpreter for the per-peer subprocesses (default: $NEARDUP_PEERS_PYTHON, else
              benchmarks/.venv/bin/python if it exists, else this interpreter). text-dedup pins
              urllib3<=2.0 and pulls datasets/pyspark, so the peers live in that venv:
              ``python3 -m venv benchmarks/.venv &&
                benchmarks/.venv/bin/pip install -r benchmarks/requirements-peers.txt``
  --jobs      threads/processes a peer may use where it parallelises natively (gaoya and rensa:
              RAYON_NUM_THREADS; text-dedup: num_proc). datasketch is a Python loop (1 core).
  Exit status 0 even if a peer fails or times out; its record then has status "error"/"timeout".

Each peer runs in a fresh subprocess (``--worker NAME``), so peak RSS is per peer: ``peak_rss_mb``
is the worker's own ru_maxrss (it includes the preloaded corpus, see ``rss_after_load_mb``),
``children_peak_rss_mb`` the largest child process the peer started (text-dedup's map workers,
forked from the worker, so their RSS includes pages shared with it), else null.

Record fields: run_id, date, peer, package, version, status (ok|error|timeout; error: stderr
tail), docs, text_bytes, params (k, num_perm, threshold, seed, bands, rows, jobs),
seconds_signature, seconds_lsh_clusters, seconds_total (wall, timed part only), cpu_seconds
(user+sys of the timed part, worker and finished children: less sensitive to a busy machine),
mb_per_s, peak_rss_mb, rss_after_load_mb, children_peak_rss_mb, candidate_pairs, clusters
(size>1), docs_in_clusters, docs_removed (sum of size-1), largest_cluster, estimate_verified,
notes, machine (cpu_model, nproc, mem_total_gb, python, platform, loadavg_before/after), versions
(all peers and numpy/scipy/datasets/xxhash in the peer interpreter), wall_seconds_subprocess,
python_executable, corpus.

Library use: ``run_peer(name, docs, params) -> dict`` runs one peer in-process on a list of texts
(``params`` as in DEFAULT_PARAMS; returns the timing and cluster fields above).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from functools import lru_cache

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CORPUS = os.path.join(HERE, "data", "corpus.jsonl")
PEERS = ("datasketch", "rensa", "gaoya", "textdedup")
PACKAGES = {"datasketch": "datasketch", "rensa": "rensa", "gaoya": "gaoya", "textdedup": "text-dedup"}
DEFAULT_PARAMS = {"k": 5, "num_perm": 128, "threshold": 0.8, "seed": 42, "bands": None,
                  "rows": None, "jobs": os.cpu_count() or 1, "batch": 1000}
WORD = re.compile(r"\w+")


# ----------------------------------------------------------------------------- shared pieces
def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def shingles(text: str, k: int) -> set[str]:
    """Lowercase ``\\w+`` word k-shingles joined by one space; < k words: one shingle of all."""
    w = WORD.findall(text.lower())
    if len(w) < k:
        return {" ".join(w)}
    return {" ".join(w[i:i + k]) for i in range(len(w) - k + 1)}


def _integrate(f, a, b, n=2000):
    h = (b - a) / n
    return h * sum(f(a + (i + 0.5) * h) for i in range(n))


def _weighted_error(threshold, b, r, fp_w=0.5, fn_w=0.5):
    fp = _integrate(lambda s: 1 - (1 - s ** r) ** b, 0.0, threshold)
    fn = _integrate(lambda s: 1 - (1 - (1 - s ** r) ** b), threshold, 1.0)
    return fp_w * fp + fn_w * fn


@lru_cache(maxsize=None)
def optimal_param(threshold: float, num_perm: int, exact: bool = False) -> tuple[int, int]:
    """datasketch's criterion (min 0.5*FP area + 0.5*FN area) over b*r <= num_perm
    (``exact``: b*r == num_perm)."""
    best, best_err = None, float("inf")
    for b in range(1, num_perm + 1):
        rs = [num_perm // b] if exact and num_perm % b == 0 else ([] if exact else
                                                                  range(1, num_perm // b + 1))
        for r in rs:
            err = _weighted_error(threshold, b, r)
            if err < best_err:
                best, best_err = (b, r), err
    return best


class UnionFind:
    def __init__(self, n: int):
        self.parent = list(range(n))
        self.size = [1] * n

    def find(self, x: int) -> int:
        p = self.parent
        while p[x] != x:
            p[x] = p[p[x]]
            x = p[x]
        return x

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        if self.size[ra] < self.size[rb]:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.size[ra] += self.size[rb]

    def roots(self) -> list[int]:
        return [self.find(i) for i in range(len(self.parent))]


def _cpu_seconds() -> float:
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        ru = resource.getrusage(who)
        total += ru.ru_utime + ru.ru_stime
    return total


def cluster_stats(roots) -> dict:
    sizes = [s for s in Counter(roots).values() if s > 1]
    return {"clusters": len(sizes), "docs_in_clusters": sum(sizes),
            "docs_removed": sum(s - 1 for s in sizes), "largest_cluster": max(sizes, default=1)}


def _banding(params: dict, exact: bool) -> tuple[int, int]:
    if params.get("bands") and params.get("rows"):
        return int(params["bands"]), int(params["rows"])
    return optimal_param(params["threshold"], params["num_perm"], exact=exact)


def _estimate_verified(n, pairs, jaccard, threshold) -> dict:
    """Untimed extra: keep candidate pairs whose estimated Jaccard >= threshold."""
    uf = UnionFind(n)
    kept = 0
    for i, j in pairs:
        if jaccard(i, j) >= threshold:
            kept += 1
            uf.union(i, j)
    st = cluster_stats(uf.roots())
    return {"pairs": kept, "docs_removed": st["docs_removed"], "clusters": st["clusters"]}


# ----------------------------------------------------------------------------- the peers
def _run_datasketch(docs, params):
    from datasketch import MinHash, MinHashLSH
    k, P, T, seed = params["k"], params["num_perm"], params["threshold"], params["seed"]
    b, r = _banding(params, exact=False)
    t0 = time.perf_counter()
    mhs = []
    for text in docs:
        m = MinHash(num_perm=P, seed=seed)
        m.update_batch([s.encode("utf-8") for s in shingles(text, k)])
        mhs.append(m)
    t1 = time.perf_counter()
    lsh = MinHashLSH(threshold=T, num_perm=P, params=(b, r))
    with lsh.insertion_session() as session:
        for i, m in enumerate(mhs):
            session.insert(i, m, check_duplication=False)
    uf = UnionFind(len(docs))
    pairs = []
    for i, m in enumerate(mhs):
        for j in lsh.query(m):
            if j > i:
                pairs.append((i, j))
                uf.union(i, j)
    roots = uf.roots()
    t2 = time.perf_counter()
    out = {"seconds_signature": t1 - t0, "seconds_lsh_clusters": t2 - t1, "bands": b, "rows": r,
           "candidate_pairs": len(pairs), **cluster_stats(roots),
           "notes": "Python loop, sha1 32-bit hashes, MinHashLSH query per document; 1 core"}
    out["_verify"] = (pairs, lambda i, j: mhs[i].jaccard(mhs[j]))
    return out


def _run_rensa(docs, params):
    from rensa import RMinHash, RMinHashLSH
    k, P, T, seed, batch = (params["k"], params["num_perm"], params["threshold"], params["seed"],
                            params["batch"])
    b, r = _banding(params, exact=True)
    if b * r != P:
        raise ValueError(f"rensa needs bands*rows == num_perm, got {b}x{r} != {P}")
    t0 = time.perf_counter()
    mhs = []
    for s in range(0, len(docs), batch):
        mhs.extend(RMinHash.from_token_sets([shingles(t, k) for t in docs[s:s + batch]], P, seed))
    t1 = time.perf_counter()
    lsh = RMinHashLSH(threshold=T, num_perm=P, num_bands=b)
    lsh.insert_many(mhs)
    cands = lsh.query_all(mhs)
    uf = UnionFind(len(docs))
    pairs = []
    for i, c in enumerate(cands):
        for j in c:
            if j > i:
                pairs.append((i, j))
                uf.union(i, j)
    roots = uf.roots()
    t2 = time.perf_counter()
    out = {"seconds_signature": t1 - t0, "seconds_lsh_clusters": t2 - t1, "bands": b, "rows": r,
           "candidate_pairs": len(pairs), **cluster_stats(roots),
           "notes": f"shingles built in Python, RMinHash.from_token_sets batches of {batch}, "
                    "RMinHashLSH.insert_many+query_all; rensa needs bands*rows == num_perm"}
    out["_verify"] = (pairs, lambda i, j: mhs[i].jaccard(mhs[j]))
    return out


def _run_gaoya(docs, params):
    from gaoya.minhash import MinHashStringIndex
    k, T = params["k"], params["threshold"]
    b, r = _banding(params, exact=False)
    t0 = time.perf_counter()
    index = MinHashStringIndex(hash_size=32, jaccard_threshold=T, num_bands=b, band_size=r,
                               analyzer="word", lowercase=True, ngram_range=(k, k))
    ids = list(range(len(docs)))
    index.par_bulk_insert_docs(ids, docs)
    t1 = time.perf_counter()
    results = index.par_bulk_query(docs)
    uf = UnionFind(len(docs))
    npairs = 0
    for i, c in enumerate(results):
        for j in c:
            if j > i:
                npairs += 1
                uf.union(i, j)
    roots = uf.roots()
    t2 = time.perf_counter()
    return {"seconds_signature": t1 - t0, "seconds_lsh_clusters": t2 - t1, "bands": b, "rows": r,
            "candidate_pairs": npairs, **cluster_stats(roots),
            "notes": "own Rust tokenizer (ASCII whitespace+punctuation split), hash_size=32; "
                     "signature phase = par_bulk_insert_docs (signatures + index insert); "
                     "par_bulk_query re-hashes every text and keeps estimated J >= threshold "
                     f"(candidate_pairs counts those); {b * r} hashes"}


def _td_embed(content, idx, **kw):
    # Same shingles as everyone else: text-dedup splits on \W (one token per non-word char);
    # feeding it the \w+ words joined by single spaces makes its split yield exactly those words.
    from text_dedup.minhash import embed_func
    return embed_func(" ".join(WORD.findall(content.lower())), idx, **kw)


def _run_textdedup(docs, params):
    import datasets
    import numpy as np
    from text_dedup.minhash import SIGNATURE_COLUMN, embed_func  # noqa: F401 (sets fork)
    from text_dedup.utils import INDEX_COLUMN, UnionFind as TDUnionFind, sha1_hash
    from collections import defaultdict
    datasets.disable_progress_bars()
    k, P, seed, jobs = params["k"], params["num_perm"], params["seed"], params["jobs"]
    b, r = _banding(params, exact=False)
    # text-dedup's default 64-bit config and sha1 hash, as in text_dedup.minhash.main
    dtype, max_hash, prime = np.uint64, np.uint32((1 << 32) - 1), np.uint64((1 << 61) - 1)
    rng = np.random.RandomState(seed)
    perms = (rng.randint(1, prime, size=(P,), dtype=dtype),
             rng.randint(0, prime, size=(P,), dtype=dtype))

    def hash_func(byte_data):
        return sha1_hash(byte_data, d=32)

    ranges = [(i * r, (i + 1) * r) for i in range(b)]
    ds = datasets.Dataset.from_dict({"text": docs, INDEX_COLUMN: list(range(len(docs)))})
    batch_size = 10_000  # text-dedup's default --batch_size
    t0 = time.perf_counter()
    embedded = ds.map(
        function=_td_embed,
        fn_kwargs={"num_perm": P, "hashranges": ranges, "ngram_size": k, "min_length": 0,
                   "permutations": perms, "hash_func": hash_func, "dtype": dtype,
                   "max_hash": max_hash, "modulo_prime": prime},
        input_columns=["text", INDEX_COLUMN],
        remove_columns=["text"],
        num_proc=jobs if jobs > 1 else None,
        with_indices=False,
    )
    t1 = time.perf_counter()
    tables = [defaultdict(set) for _ in range(b)]
    nshards = int(np.ceil(len(embedded) / batch_size))
    for s in range(nshards):
        shard = embedded.shard(num_shards=nshards, index=s, contiguous=True,
                               writer_batch_size=batch_size)
        for key, Hs in zip(shard[INDEX_COLUMN], shard[SIGNATURE_COLUMN]):
            for i, H in enumerate(Hs):
                tables[i][H].add(key)
    uf = TDUnionFind()
    edges = set()
    for table in tables:
        for cluster in table.values():
            if len(cluster) <= 1:
                continue
            idx = min(cluster)
            for x in cluster:
                if x != idx:
                    edges.add((idx, x))
                uf.union(x, idx)
    roots = [uf.find(i) for i in range(len(docs))]
    t2 = time.perf_counter()
    return {"seconds_signature": t1 - t0, "seconds_lsh_clusters": t2 - t1, "bands": b, "rows": r,
            "candidate_pairs": len(edges), **cluster_stats(roots),
            "notes": f"text_dedup.minhash.embed_func via datasets.map(num_proc={jobs}) on an "
                     "in-memory Dataset, sha1 + 64-bit config, own band tables and UnionFind; "
                     "candidate_pairs = distinct star edges (bucket member -> bucket min); "
                     "text pre-normalised to \\w+ words inside the timed map"}


RUNNERS = {"datasketch": _run_datasketch, "rensa": _run_rensa, "gaoya": _run_gaoya,
           "textdedup": _run_textdedup}


def run_peer(name: str, docs: list[str], params: dict | None = None) -> dict:
    """Run one peer in-process on ``docs`` (list of texts). Returns timings and cluster counts."""
    p = dict(DEFAULT_PARAMS)
    p.update({k: v for k, v in (params or {}).items() if v is not None})
    if name not in RUNNERS:
        raise ValueError(f"unknown peer {name!r}; one of {', '.join(PEERS)}")
    if p.get("jobs"):
        os.environ.setdefault("RAYON_NUM_THREADS", str(p["jobs"]))
    cpu0 = _cpu_seconds()
    out = RUNNERS[name](docs, p)
    # CPU time (user+sys of this process and its finished children) of the timed part:
    # less sensitive than wall time to other load on a shared machine
    out["cpu_seconds"] = _cpu_seconds() - cpu0
    verify = out.pop("_verify", None)
    if verify is not None:  # untimed extra
        out["estimate_verified"] = _estimate_verified(len(docs), verify[0], verify[1],
                                                      p["threshold"])
    out["seconds_total"] = out["seconds_signature"] + out["seconds_lsh_clusters"]
    out["params"] = {key: p[key] for key in ("k", "num_perm", "threshold", "seed", "jobs")}
    out["params"].update(bands=out.pop("bands"), rows=out.pop("rows"))
    return out


# ----------------------------------------------------------------------------- facts, loading
def load_corpus(path: str, limit: int | None = None) -> tuple[list[str], list[str]]:
    ids, texts = [], []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if limit is not None and len(texts) >= limit:
                break
            rec = json.loads(line)
            ids.append(rec.get("id"))
            texts.append(rec.get("text") or "")
    return ids, texts


def _versions() -> dict:
    from importlib import metadata
    out = {}
    for pkg in ("datasketch", "rensa", "gaoya", "text-dedup", "datasets", "numpy", "scipy",
                "xxhash"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def machine_facts() -> dict:
    cpu = None
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    mem = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return {"cpu_model": cpu, "nproc": os.cpu_count(), "mem_total_gb": mem,
            "python": platform.python_version(), "platform": platform.platform()}


def _rss_now_mb() -> float | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None


def _worker(args) -> int:
    ids, texts = load_corpus(args.corpus, args.limit)
    rec = {"docs": len(texts), "text_bytes": sum(len(t.encode("utf-8")) for t in texts),
           "rss_after_load_mb": _rss_now_mb(), "machine": machine_facts(), "versions": _versions()}
    params = {"k": args.k, "num_perm": args.num_perm, "threshold": args.threshold,
              "seed": args.seed, "bands": args.bands, "rows": args.rows, "jobs": args.jobs}
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    rec.update(run_peer(args.worker, texts, params))
    rec["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # only children the peer itself started (platform.platform() forks `file` earlier)
    rec["children_peak_rss_mb"] = children / 1024 if children > children_before else None
    with open(args.result_file, "w") as fh:
        json.dump(rec, fh)
    return 0


# ----------------------------------------------------------------------------- driver
def default_python() -> str:
    env = os.environ.get("NEARDUP_PEERS_PYTHON")
    if env:
        return env
    venv = os.path.join(HERE, ".venv", "bin", "python")
    return venv if os.path.exists(venv) else sys.executable


def _loadavg():
    try:
        return [float(x) for x in open("/proc/loadavg").read().split()[:3]]
    except OSError:
        return None


def interpreter_facts(python: str) -> dict:
    """Package versions and Python version as seen by the peer interpreter (for failed runs)."""
    code = ("import json, platform, sys; sys.path.insert(0, %r); import peers; "
            "print(json.dumps({'versions': peers._versions(), "
            "'python': platform.python_version()}))" % HERE)
    try:
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
        return json.loads(out.stdout)
    except Exception as exc:  # noqa: BLE001 - facts only
        return {"versions": {}, "python": None, "error": repr(exc)}


def run_one_subprocess(name: str, args, python: str) -> dict:
    with tempfile.NamedTemporaryFile("r", suffix=".json", delete=False) as tf:
        result_file = tf.name
    cmd = [python, os.path.abspath(__file__), "--worker", name, "--corpus", args.corpus,
           "--result-file", result_file, "--k", str(args.k), "--num-perm", str(args.num_perm),
           "--threshold", str(args.threshold), "--seed", str(args.seed), "--jobs", str(args.jobs)]
    if args.limit is not None:
        cmd += ["--limit", str(args.limit)]
    if args.bands and args.rows:
        cmd += ["--bands", str(args.bands), "--rows", str(args.rows)]
    env = dict(os.environ, RAYON_NUM_THREADS=str(args.jobs), PYTHONUNBUFFERED="1",
               HF_DATASETS_DISABLE_PROGRESS_BARS="1", TOKENIZERS_PARALLELISM="false")
    rec = {"peer": name, "package": PACKAGES[name], "python_executable": python,
           "command": " ".join(cmd[:4])}
    load_before = _loadavg()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=args.timeout)
        status = "ok" if proc.returncode == 0 else "error"
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the worker and its own children only
        out, err = proc.communicate()
        status = "timeout"
    rec["wall_seconds_subprocess"] = time.perf_counter() - t0
    rec["machine_load"] = {"loadavg_before": load_before, "loadavg_after": _loadavg()}
    rec["status"] = status
    try:
        if status == "ok":
            with open(result_file) as fh:
                rec.update(json.load(fh))
    finally:
        os.unlink(result_file)
    if status != "ok":
        rec["error"] = (err or "")[-3000:]
        if status == "timeout":
            rec["error"] = f"killed after {args.timeout} s. " + rec["error"]
    if not rec.get("versions"):
        facts = interpreter_facts(python)
        rec["versions"] = facts.get("versions")
        rec["machine"] = dict(machine_facts(), python=facts.get("python"))
    rec["version"] = (rec.get("versions") or {}).get(PACKAGES[name])
    if rec.get("seconds_total") and rec.get("text_bytes"):
        rec["mb_per_s"] = rec["text_bytes"] / 1e6 / rec["seconds_total"]
    return rec


def print_table(recs, file=sys.stdout) -> None:
    head = ("peer", "version", "docs", "sig s", "lsh+clu s", "total s", "cpu s", "peak RSS MB",
            "child RSS MB", "in clusters", "removed")
    rows = []
    for r in recs:
        if r.get("status") != "ok":
            rows.append((r["peer"], str(r.get("version") or "-"), "-", "-", "-", r["status"],
                         "-", "-", "-", "-", "-"))
            continue
        rows.append((r["peer"], str(r["version"]), str(r["docs"]),
                     f"{r['seconds_signature']:.1f}", f"{r['seconds_lsh_clusters']:.1f}",
                     f"{r['seconds_total']:.1f}", f"{r['cpu_seconds']:.1f}",
                     f"{r['peak_rss_mb']:.0f}",
                     f"{r['children_peak_rss_mb']:.0f}" if r.get("children_peak_rss_mb") else "-",
                     str(r["docs_in_clusters"]), str(r["docs_removed"])))
    widths = [max(len(h), *(len(x[i]) for x in rows)) if rows else len(h)
              for i, h in enumerate(head)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
    print(line(head), file=file)
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|", file=file)
    for x in rows:
        print(line(x), file=file)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=DEFAULT_CORPUS)
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--json-out", default=None)
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--python", default=None)
    ap.add_argument("--k", type=int, default=DEFAULT_PARAMS["k"])
    ap.add_argument("--num-perm", type=int, default=DEFAULT_PARAMS["num_perm"])
    ap.add_argument("--threshold", type=float, default=DEFAULT_PARAMS["threshold"])
    ap.add_argument("--seed", type=int, default=DEFAULT_PARAMS["seed"])
    ap.add_argument("--bands", type=int, default=None)
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--result-file", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return _worker(args)

    peers = [p.strip().replace("-", "").replace("_", "")
             for p in args.peers.split(",") if p.strip()]
    bad = [p for p in peers if p not in PEERS]
    if bad:
        ap.error(f"unknown peer(s) {bad}; choose from {','.join(PEERS)}")
    if not os.path.exists(args.corpus):
        ap.error(f"corpus not found: {args.corpus} (run benchmarks/build_corpus.sh)")
    args.corpus = os.path.abspath(args.corpus)
    today = _dt.date.today().isoformat()
    out_path = args.json_out or os.path.join(HERE, "results", f"peers-{today}.jsonl")
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    python = args.python or default_python()
    run_id = _dt.datetime.now().strftime("%Y%m%dT%H%M%S")
    recs = []
    for name in peers:
        if not args.quiet:
            print(f"[peers] {name} ...", file=sys.stderr, flush=True)
        rec = {"run_id": run_id, "date": today}
        rec.update(run_one_subprocess(name, args, python))
        rec["machine"].update(rec.pop("machine_load"))
        rec["corpus"] = args.corpus
        recs.append(rec)
        with open(out_path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec, sort_keys=True) + "\n")
        if not args.quiet:
            msg = (f"{rec['seconds_total']:.1f} s, removed {rec['docs_removed']}"
                   if rec["status"] == "ok" else f"{rec['status']}: {rec.get('error', '')[-300:]}")
            print(f"[peers] {name}: {msg}", file=sys.stderr, flush=True)
    if not args.quiet:
        print_table(recs)
        print(f"records appended to {out_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
