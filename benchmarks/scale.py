#!/usr/bin/env python3
"""neardup dedup at scale: a generated corpus with planted near-duplicates.

Documents are random word sequences over a Zipf-distributed vocabulary of 50,000 words (so that
common words repeat as in real text), 40 to 240 words long. A fraction of them get a planted
near-copy: the same text with about one word in a hundred replaced. After the run, every planted
pair's exact 5-shingle resemblance is computed and recall is reported for the pairs at or above
the threshold.

Usage: python benchmarks/scale.py [--docs 2000000] [--planted 0.05] [--seed 1] [--keep-data]
Writes benchmarks/results/scale-<docs>-<date>.json with the machine's facts.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson

HERE = Path(__file__).resolve().parent


def generate(path: Path, docs: int, planted: float, seed: int) -> list[tuple[str, str]]:
    rng = np.random.default_rng(seed)  # test data only
    vocab_size = 50_000
    vocab = [f"w{i:x}" for i in range(vocab_size)]
    weights = 1.0 / np.arange(1, vocab_size + 1) ** 1.05
    weights /= weights.sum()
    pairs = []
    n_orig = int(docs / (1 + planted))
    with open(path, "wb") as fh:
        written = 0
        chunk = 20_000
        while written < n_orig:
            m = min(chunk, n_orig - written)
            lengths = rng.integers(40, 241, size=m)
            words = rng.choice(vocab_size, size=int(lengths.sum()), p=weights)
            plant = rng.random(m) < planted
            pos = 0
            out = []
            for k in range(m):
                w = words[pos : pos + lengths[k]]
                pos += lengths[k]
                doc_id = f"d{written + k}"
                text = " ".join(vocab[x] for x in w.tolist())
                out.append(orjson.dumps({"id": doc_id, "text": text}))
                if plant[k] and written + k + len(pairs) < docs:
                    edited = w.copy()
                    n_edits = max(1, int(round(len(w) / 100)))
                    at = rng.choice(len(w), size=n_edits, replace=False)
                    edited[at] = rng.integers(0, vocab_size, size=n_edits)
                    copy_id = f"{doc_id}-copy"
                    out.append(orjson.dumps({"id": copy_id, "text": " ".join(vocab[x] for x in edited.tolist())}))
                    pairs.append((doc_id, copy_id))
            fh.write(b"\n".join(out) + b"\n")
            written += m
    return pairs


def _status_kb(pid: int) -> dict[str, int]:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
                    out[key] = int(value.split()[0])
    except OSError:
        pass
    return out


def run_sampled(cmd: list[str], every: float = 0.2) -> dict:
    """Run ``cmd``, sampling its resident memory split into anonymous memory (the process's own
    state) and file-backed pages (the memory-mapped spill files, which the kernel can drop and
    re-read at will); returns the peaks in MB."""
    proc = subprocess.Popen(cmd)
    peak = {"VmRSS": 0, "RssAnon": 0, "RssFile": 0}
    at_peak_total = {}
    while proc.poll() is None:
        st = _status_kb(proc.pid)
        for key in peak:
            peak[key] = max(peak[key], st.get(key, 0))
        if st.get("VmRSS", 0) >= peak["VmRSS"]:
            at_peak_total = st
        time.sleep(every)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    mb = lambda kb: round(kb / 1024, 1)  # noqa: E731
    return {"peak_rss_mb": mb(peak["VmRSS"]), "peak_anonymous_mb": mb(peak["RssAnon"]),
            "peak_file_backed_mb": mb(peak["RssFile"]),
            "at_peak_rss": {"anonymous_mb": mb(at_peak_total.get("RssAnon", 0)),
                            "file_backed_mb": mb(at_peak_total.get("RssFile", 0))},
            "sampled_every_s": every}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=2_000_000)
    ap.add_argument("--planted", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep-data", action="store_true")
    args = ap.parse_args()
    data = HERE / "data"
    data.mkdir(exist_ok=True)
    corpus = data / f"synthetic-{args.docs}.jsonl"
    t = time.perf_counter()
    pairs = generate(corpus, args.docs, args.planted, args.seed)
    gen_s = time.perf_counter() - t
    size_mb = corpus.stat().st_size / 1e6
    print(f"generated {corpus} ({size_mb:.0f} MB, {len(pairs):,} planted pairs) in {gen_s:.0f} s", flush=True)
    out = data / f"scale-out-{args.docs}"
    cmd = [sys.executable, "-m", "neardup", "dedup", str(corpus), "--output", str(out), "--quiet"]
    t = time.perf_counter()
    memory = run_sampled(cmd)
    wall = time.perf_counter() - t
    summary = json.load(open(out / "summary.json"))
    cluster = {}
    with open(out / "clusters.jsonl", "rb") as fh:
        for line in fh:
            r = orjson.loads(line)
            cluster[r["id"]] = r["cluster"]
    # exact resemblance of each planted pair
    from neardup import ShingleParams, jaccard, shingle_ids

    wanted = {x for p in pairs for x in p}
    texts = {}
    with open(corpus, "rb") as fh:
        for line in fh:
            r = orjson.loads(line)
            if r["id"] in wanted:
                texts[r["id"]] = r["text"]
    sp = ShingleParams(k=5)
    sims = np.array([jaccard(shingle_ids(texts[a], sp), shingle_ids(texts[b], sp)) for a, b in pairs])
    found = np.array([cluster[a] == cluster[b] for a, b in pairs])
    at = sims >= summary["config"]["threshold"]
    result = {
        "date": str(dt.datetime.now()), "docs": summary["input"], "corpus_mb": size_mb, "command": " ".join(cmd),
        "wall_seconds": wall, "peak_memory_mb": summary["peak_memory_mb"], "memory": memory,
        "load_average_end": os.getloadavg(), "stages": summary["seconds"],
        "planted_pairs": len(pairs), "planted_at_or_above_threshold": int(at.sum()),
        "recall_planted_at_or_above_threshold": float(found[at].mean()) if at.any() else None,
        "recall_planted_all": float(found.mean()), "planted_jaccard_median": float(np.median(sims)),
        "kept": summary["kept"], "near_duplicates": summary["near_duplicates"],
        "exact_duplicates": summary["exact_duplicates"], "candidate_pairs": summary["candidate_pairs"],
        "verified_pairs": summary["verified_pairs"], "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), ""),
        "nproc": os.cpu_count(),
    }
    print(json.dumps(result, indent=2))
    dest = HERE / "results" / f"scale-{args.docs}-{dt.date.today()}.json"
    dest.parent.mkdir(exist_ok=True)
    dest.write_text(json.dumps(result, indent=2) + "\n")
    if not args.keep_data:
        corpus.unlink()
        import shutil

        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
