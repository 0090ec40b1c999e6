"""Broder et al.'s 1997 clustering experiment re-run, beside MinHash on the same corpus.

    python benchmarks/broder.py CORPUS.jsonl [MORE.jsonl ...] [--out benchmarks/results/broder.json]

The seed's parameters: 10-word shingles, 40-bit Rabin fingerprints, 1 in 25 kept (MOD_25),
resemblance threshold 0.5. Runs, one after the other on the same inputs:

1. ``neardup dedup --method broder`` with those parameters (every pair verified exactly);
2. ``neardup dedup --method minhash`` with the same shingles and threshold;
3. ``neardup evaluate`` of both against the exact all-pairs oracle (floor 0.5);
4. greedy clustering (one pass, first shared sample) on the same MOD_25 samples, against the
   union-find clusters of run 1, and against itself on three shuffled orders of the same records
   (its order dependence);
5. the broder run again with MIN_100 samples, and with its grouping spilled to partition files
   (``--in-memory-mb 0``: the grouping's 4 MB floor), whose outputs must equal run 1's.

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
    uf = np.unique(np.array([rows[o]["cluster"] for o in firsts], dtype=object).astype(str), return_inverse=True)[1]
    # the same samples in other orders of the input (seeded), mapped back to the records
    orders = {}
    rng = np.random.default_rng(1997)
    n = len(firsts)
    sizes = np.diff(soff)
    for run in range(3):
        perm = rng.permutation(n)
        per_doc = np.split(values, soff[1:-1])
        vals = np.concatenate([per_doc[d] for d in perm]) if n else values
        off = np.concatenate(([0], np.cumsum(sizes[perm])))
        lab = np.empty(n, np.int64)
        lab[perm] = perm[greedy_clusters(vals, off)]  # cluster named by its founder's record
        orders[f"shuffle_{run}"] = lab
    def together(labels) -> int:  # pairs of records in one cluster
        c = np.bincount(np.unique(labels, return_inverse=True)[1])
        return int((c * (c - 1) // 2).sum())
    def both(x, y) -> int:  # pairs in one cluster under both labellings
        _, inv = np.unique(np.stack([np.unique(x, return_inverse=True)[1], np.unique(y, return_inverse=True)[1]]),
                           axis=1, return_inverse=True)
        c = np.bincount(inv.ravel())
        return int((c * (c - 1) // 2).sum())
    def clusters2(labels) -> int:
        return int((np.bincount(np.unique(labels, return_inverse=True)[1]) > 1).sum())
    def largest(labels) -> int:
        return int(np.bincount(np.unique(labels, return_inverse=True)[1]).max(initial=0))
    out = {"records": n, "greedy_clusters_of_2_or_more": clusters2(greedy),
           "union_find_clusters_of_2_or_more": clusters2(uf), "largest_cluster_greedy": largest(greedy),
           "largest_cluster_union_find": largest(uf),
           "pairs_together_greedy": together(greedy), "pairs_together_union_find": together(uf),
           "pairs_in_both": both(greedy, uf),
           # order dependence: the input order's greedy clusters against three shuffled orders'
           "order_dependence": {name: {"clusters_of_2_or_more": clusters2(lab), "largest_cluster": largest(lab),
                                       "pairs_together": together(lab), "pairs_in_both_with_input_order": both(lab, greedy),
                                       "pairs_in_both_with_union_find": both(lab, uf)}
                                for name, lab in orders.items()}}
    return out


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
                        ("broder_min_s", ["--method", "broder", "--sample", "min_s", "--sample-size", "100",
                                          "--sample-cap", str(args.cap)]),
                        # the grouping through partition files (its 4 MB floor), the same outputs
                        ("broder_spilled", ["--method", "broder", "--sample-mod", "25", "--sample-cap", str(args.cap),
                                            "--in-memory-mb", "0"]),
                        ("broder_uncapped", ["--method", "broder", "--sample-mod", "25", "--sample-cap", "1000000000"]),
                        ("minhash", ["--method", "minhash"])):
        out = os.path.join(work, name)
        seconds = _run(neardup + ["dedup", *args.inputs, "-o", out, *common, *extra, "--no-kept"])
        summary = json.load(open(os.path.join(out, "summary.json")))
        ev = subprocess.run(neardup + ["evaluate", out, *args.inputs, "--floor", "0.5", "--json"], capture_output=True,
                            text=True, check=True)
        runs[name] = {"seconds": round(seconds, 2), "input": summary["input"], "table": summary["clusters"]["kinds"],
                      "candidate_pairs": summary["candidate_pairs"], "verified_pairs": summary["verified_pairs"],
                      "samples": summary.get("samples"), "evaluate": json.loads(ev.stdout), "out": out,
                      "peak_memory_mb": summary.get("peak_memory_mb"), "stage_seconds": summary.get("seconds")}
    spilled_same = _clusters(runs["broder"]["out"]) == _clusters(runs["broder_spilled"]["out"]) and \
        _pairs(runs["broder"]["out"]) == _pairs(runs["broder_spilled"]["out"])
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
        "spilled_grouping_same_outputs": spilled_same,
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
