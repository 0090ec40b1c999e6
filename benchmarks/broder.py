"""Broder et al.'s 1997 clustering experiment re-run, beside MinHash on the same corpus.

    python benchmarks/broder.py CORPUS.jsonl [MORE.jsonl ...] [--out benchmarks/results/broder.json]

The seed's parameters: 10-word shingles, 40-bit Rabin fingerprints, 1 in 25 kept (MOD_25),
resemblance threshold 0.5. Runs, one after the other on the same inputs:

1. ``neardup dedup --method broder`` with those parameters (every pair verified exactly);
2. ``neardup dedup --method minhash`` with the same shingles and threshold;
3. ``neardup evaluate`` of both against the exact all-pairs oracle (floor 0.5);
4. greedy clustering (one pass, first shared sample) on the same MOD_25 samples, against the
   union-find clusters of run 1.

Prints and writes the experiment's table for both methods (clusters, documents in clusters,
clusters of identical documents and theirs, clusters of identical or similar ones and theirs),
the wall times, recall and precision, the agreement of the two methods (records in the same
cluster in both, verified pairs in common), and the cost of the sample cap in recall.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np


def _run(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr[-3000:]}")
    return time.perf_counter() - t0


def _clusters(out: str) -> list[dict]:
    with open(os.path.join(out, "clusters.jsonl"), encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _pairs(out: str) -> set[tuple[str, str]]:
    with open(os.path.join(out, "pairs.jsonl"), encoding="utf-8") as fh:
        return {tuple(sorted((p["a"], p["b"]))) for p in map(json.loads, fh)}


def _greedy_against_union_find(inputs: list[str], uf_out: str) -> dict:
    """Greedy clusters on the run's MOD_25 samples of the first holders, against its union-find."""
    from neardup.cluster.broder import greedy_clusters, mod_m_sample
    from neardup.config import default_minhash
    from neardup.io import Document, read_documents
    from neardup.params import ShingleParams
    from neardup.stages.sketch import sketch_texts  # the stage every engine sketches with

    rows = _clusters(uf_out)
    firsts = [n for n, r in enumerate(rows) if r["reason"] in ("kept", "unique", "near")]
    texts = {}
    for rec in read_documents(inputs):
        if isinstance(rec, Document):
            texts[rec.ordinal] = rec.text
    params = ShingleParams(k=10, hash="rabin40")
    sig = sketch_texts([texts[o] for o in firsts], params, default_minhash(), jobs=os.cpu_count() or 1,
                       with_fingerprints=False)
    counts = np.asarray(sig.n_shingles, dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(counts)))
    values, soff = mod_m_sample(sig.ids, offsets, 25)
    greedy = greedy_clusters(values, soff)
    uf = [rows[o]["cluster"] for o in firsts]
    # pairs of records put together by one and not by the other
    def together(labels):
        groups: dict = {}
        for n, c in enumerate(labels):
            groups.setdefault(c, []).append(n)
        return {(a, b) for g in groups.values() if len(g) > 1 for i, a in enumerate(g) for b in g[i + 1:]}
    g_pairs, u_pairs = together(greedy.tolist()), together(uf)
    return {"records": len(firsts), "greedy_clusters_of_2_or_more": sum(1 for c in set(greedy.tolist())
                                                                       if (greedy == c).sum() > 1),
            "union_find_clusters_of_2_or_more": sum(1 for c, n in _counts(uf).items() if n > 1),
            "pairs_together_greedy": len(g_pairs), "pairs_together_union_find": len(u_pairs),
            "pairs_in_both": len(g_pairs & u_pairs)}


def _counts(labels) -> dict:
    out: dict = {}
    for c in labels:
        out[c] = out.get(c, 0) + 1
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--out", default=None)
    ap.add_argument("--cap", type=int, default=1000)
    args = ap.parse_args()
    neardup = [sys.executable, "-m", "neardup"]
    common = ["-k", "10", "--shingle-hash", "rabin40", "--threshold", "0.5", "-q"]
    work = tempfile.mkdtemp(prefix="neardup-broder-")
    runs = {}
    for name, extra in (("broder", ["--method", "broder", "--sample-mod", "25", "--sample-cap", str(args.cap)]),
                        ("broder_uncapped", ["--method", "broder", "--sample-mod", "25", "--sample-cap", "1000000000"]),
                        ("minhash", ["--method", "minhash"])):
        out = os.path.join(work, name)
        seconds = _run(neardup + ["dedup", *args.inputs, "-o", out, *common, *extra, "--no-kept"])
        summary = json.load(open(os.path.join(out, "summary.json")))
        ev = subprocess.run(neardup + ["evaluate", out, *args.inputs, "--floor", "0.5", "--json"], capture_output=True,
                            text=True, check=True)
        runs[name] = {"seconds": round(seconds, 2), "input": summary["input"], "table": summary["clusters"]["kinds"],
                      "candidate_pairs": summary["candidate_pairs"], "verified_pairs": summary["verified_pairs"],
                      "samples": summary.get("samples"), "evaluate": json.loads(ev.stdout), "out": out}
    a, b = _clusters(runs["broder"]["out"]), _clusters(runs["minhash"]["out"])
    agree = sum(x["cluster"] == y["cluster"] for x, y in zip(a, b))
    pa, pb = _pairs(runs["broder"]["out"]), _pairs(runs["minhash"]["out"])
    result = {
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                    "python": platform.python_version(), "load_avg_at_end": None},
        "inputs": args.inputs, "documents": runs["broder"]["input"],
        "bytes": sum(os.path.getsize(p) for p in args.inputs),
        "parameters": {"k": 10, "shingle_hash": "rabin40", "sample_mod": 25, "threshold": 0.5, "cap": args.cap},
        "runs": {k: {kk: vv for kk, vv in v.items() if kk != "out"} for k, v in runs.items()},
        "agreement": {"records_same_cluster": agree, "records": len(a), "pairs_broder": len(pa),
                      "pairs_minhash": len(pb), "pairs_in_both": len(pa & pb)},
        "greedy_vs_union_find": _greedy_against_union_find(args.inputs, runs["broder"]["out"]),
    }
    result["machine"]["load_avg_at_end"] = os.getloadavg()
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
