"""Quality of a dedup run against an exact oracle.

The oracle finds every pair of documents whose exact shingle-set resemblance is at least a floor
(0.5 by default), without comparing all pairs: the all-pairs algorithm with prefix filtering
(Bayardo, Ma and Srikant 2007). Shingles are ranked from rarest to most common; two sets with
resemblance >= t must share one of the first ``|x| - ceil(t |x|) + 1`` ranks of each, so only
documents sharing a prefix rank are candidates, and every candidate is measured exactly.

:func:`evaluate_run` compares a ``neardup dedup`` output folder with the oracle: pair recall
by band of true resemblance (a pair is found when both documents end in the same cluster),
precision of the reported edges (their true resemblance, which verification makes exact), and
how far cluster members are from their survivor.
"""

from __future__ import annotations

import json
import os

import numpy as np

from .stages.sketch import shingle_runs
from .stages.verify import pair_similarities

__all__ = ["BINS", "shingle_runs", "all_pairs", "evaluate_run"]

BINS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0)


def all_pairs(ids: np.ndarray, offsets: np.ndarray, floor: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair (i < j) with exact resemblance >= ``floor``, with that resemblance."""
    n = offsets.size - 1
    sizes = np.diff(offsets)
    if n < 2 or ids.size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0)
    uniq, inverse, freq = np.unique(ids, return_inverse=True, return_counts=True)
    # rank 0 = rarest shingle (ties by id), so prefixes hold the most selective shingles
    order = np.lexsort((uniq, freq))
    rank_of = np.empty(uniq.size, dtype=np.int64)
    rank_of[order] = np.arange(uniq.size)
    ranks = rank_of[inverse]
    doc_of = np.repeat(np.arange(n, dtype=np.int64), sizes)
    # sort each document's ranks ascending, then keep its prefix
    o = np.lexsort((ranks, doc_of))
    ranks, doc_of = ranks[o], doc_of[o]
    pos = np.arange(ranks.size, dtype=np.int64) - offsets[doc_of]
    prefix_len = sizes - np.ceil(floor * sizes - 1e-9).astype(np.int64) + 1
    in_prefix = pos < prefix_len[doc_of]
    pr, pd = ranks[in_prefix], doc_of[in_prefix]          # grouped by document
    by_rank = np.lexsort((pd, pr))
    posting_docs = pd[by_rank]                              # grouped by rank, documents ascending
    indptr = np.searchsorted(pr[by_rank], np.arange(uniq.size + 1))
    doc_ptr = np.searchsorted(pd, np.arange(n + 1))
    # Probe each document's prefix against the postings of earlier documents (y < x), so every
    # candidate pair is produced by its later member only and memory holds one document's
    # candidates at a time.
    found_i, found_j, found_s = [], [], []
    for x in range(1, n):
        r = pr[doc_ptr[x] : doc_ptr[x + 1]]
        if r.size == 0:
            continue
        starts, ends = indptr[r], indptr[r + 1]
        lens = ends - starts
        total = int(lens.sum())
        if total == 0:
            continue
        first = np.repeat(starts - np.concatenate(([0], np.cumsum(lens)[:-1])), lens)
        ys = posting_docs[first + np.arange(total)]
        ys = np.unique(ys[ys < x])
        # size filter: |small| >= floor * |large| is necessary for resemblance >= floor
        ys = ys[np.minimum(sizes[ys], sizes[x]) >= floor * np.maximum(sizes[ys], sizes[x]) - 1e-9]
        if ys.size == 0:
            continue
        xs = np.full(ys.size, x, dtype=np.int64)
        jac = pair_similarities(ids, offsets, sizes, ys, xs)["jaccard"]
        keep = jac >= floor - 1e-12
        found_i.append(ys[keep])
        found_j.append(xs[keep])
        found_s.append(jac[keep])
    if not found_i:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0)
    ci, cj, jac = np.concatenate(found_i), np.concatenate(found_j), np.concatenate(found_s)
    order = np.lexsort((cj, ci))
    return ci[order], cj[order], jac[order]


def _bin_label(lo: float, hi: float) -> str:
    return f"[{lo:g}, {hi:g})" if hi < 1.0 else f"[{lo:g}, 1]"


def evaluate_run(output_dir: str, inputs: list[str], *, floor: float = 0.5, jobs: int = 1, **read_options) -> dict:
    """Recall and precision of the dedup output in ``output_dir`` on ``inputs`` against the oracle."""
    from .io import Document, read_documents
    from .params import NormalizeParams, ShingleParams

    summary = json.load(open(os.path.join(output_dir, "summary.json"), encoding="utf-8"))
    cfg = summary["config"]
    sp = cfg["shingle"]
    shingle_params = ShingleParams(k=sp["k"], unit=sp["unit"], hash=sp["hash"], multiset=sp["multiset"],
                                   normalize=NormalizeParams(**sp["normalize"]))
    threshold = cfg["threshold"]
    texts, ordinals = [], []
    for rec in read_documents(inputs, **read_options):
        if isinstance(rec, Document):
            texts.append(rec.text)
            ordinals.append(rec.ordinal)
    ids, offsets = shingle_runs(texts, shingle_params, jobs=jobs)
    sizes = np.diff(offsets)
    nonempty = sizes > 0
    oi, oj, oj_sim = all_pairs(ids, offsets, floor)
    keep = nonempty[oi] & nonempty[oj]
    oi, oj, oj_sim = oi[keep], oj[keep], oj_sim[keep]

    clusters = []
    with open(os.path.join(output_dir, "clusters.jsonl"), "rb") as fh:
        import orjson

        for line in fh:
            clusters.append(orjson.loads(line))
    cluster_of = [clusters[o]["cluster"] for o in ordinals]
    found = np.array([cluster_of[a] is not None and cluster_of[a] == cluster_of[b]
                      for a, b in zip(oi.tolist(), oj.tolist())], dtype=bool)
    recall = {}
    for lo, hi in zip(BINS[:-1], BINS[1:]):
        sel = (oj_sim >= lo) & ((oj_sim < hi) if hi < 1.0 else (oj_sim <= 1.0))
        total = int(sel.sum())
        recall[_bin_label(lo, hi)] = {"pairs": total, "found": int(found[sel].sum()),
                                      "recall": (float(found[sel].mean()) if total else None)}
    above = oj_sim >= 0.85
    # precision of reported edges: their exact resemblance on the evaluator's own shingles
    local = {}
    for k, o in enumerate(ordinals):
        local.setdefault(clusters[o]["id"], k)
    ea, eb, reported = [], [], 0
    with open(os.path.join(output_dir, "pairs.jsonl"), "rb") as fh:
        import orjson

        for line in fh:
            e = orjson.loads(line)
            reported += 1
            ea.append(local[e["a"]])
            eb.append(local[e["b"]])
    ea, eb = np.array(ea, dtype=np.int64), np.array(eb, dtype=np.int64)
    if ea.size:
        edge_sim = pair_similarities(ids, offsets, sizes, np.minimum(ea, eb), np.maximum(ea, eb))["jaccard"]
    else:
        edge_sim = np.empty(0)
    measure = cfg.get("measure", "jaccard")
    below = int((edge_sim < threshold - 1e-9).sum()) if measure == "jaccard" else None
    # cluster members against their survivor
    members = [(k, clusters[o]) for k, o in enumerate(ordinals) if clusters[o]["duplicate_of"] is not None]
    sims = [c["similarity"] for _, c in members if c["similarity"] is not None]
    return {
        "documents": len(ordinals),
        "oracle_floor": floor,
        "oracle_pairs": int(oi.size),
        "recall_by_true_jaccard": recall,
        "recall_at_0.85_or_more": (float(found[above].mean()) if above.any() else None),
        "recall_at_threshold_or_more": (float(found[oj_sim >= threshold].mean()) if (oj_sim >= threshold).any() else None),
        "reported_edges": reported,
        "edges_below_threshold": below,
        "edge_precision": (1 - below / reported) if (reported and below is not None) else None,
        "edge_min_true_jaccard": (float(edge_sim.min()) if edge_sim.size else None),
        "cluster_members": len(members),
        "members_below_threshold_to_survivor": int(sum(1 for s in sims if s < threshold - 1e-9)),
        "chained_members_reported": summary.get("chained_members"),
        "threshold": threshold,
        "config_fingerprint": summary.get("config_fingerprint"),
    }


def format_report(r: dict) -> str:
    lines = [f"{r['documents']:,} documents; oracle: {r['oracle_pairs']:,} pairs with exact resemblance >= "
             f"{r['oracle_floor']:g}", "true J         pairs    found   recall"]
    for label, row in r["recall_by_true_jaccard"].items():
        rec = "-" if row["recall"] is None else f"{row['recall']:.4f}"
        lines.append(f"{label:<12} {row['pairs']:>7} {row['found']:>8}   {rec}")
    lines.append(f"recall for true J >= 0.85: {r['recall_at_0.85_or_more']}")
    lines.append(f"reported edges: {r['reported_edges']:,}; below the threshold: {r['edges_below_threshold']}; "
                 f"lowest true J of an edge: {r['edge_min_true_jaccard']}")
    lines.append(f"cluster members: {r['cluster_members']:,}; below the threshold to their survivor: "
                 f"{r['members_below_threshold_to_survivor']} (reported as chained: {r['chained_members_reported']})")
    return "\n".join(lines)
