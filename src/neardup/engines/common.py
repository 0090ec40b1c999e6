"""What every engine's run shares: the stages it times, the clusters it makes of its verified pairs
(components, survivors, outcomes), the pairs it writes, the ``summary.json`` it writes, the
process's peak memory, and the run options an engine honours or refuses. The local, Spark and Ray
engines call these, so that one input gives the same outcome and summary (aside from ``seconds``
and memory) from each of them."""

from __future__ import annotations

import os
import sys
from collections import Counter
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..config import DedupConfig
from ..errors import ConfigError
from ..io.write import result_lines
from ..stages.columns import Ids, Labels, repeated_names, take_values
from ..stages.survivors import Outcome, choose_survivors, cluster_kinds, components, kept_mask, outcomes
from ..stages.urls import UrlLinks, relabel
from ..stages.verify import Edges

__all__ = ["raise_refusal", "STAGES", "INDEX_STATS", "stage_table", "peak_memory_mb", "Clusters", "cluster_outcomes", "VerifiedPairs", "source_refusal",
           "run_summary", "reason_counts", "RunOptions", "input_names"]

#: The stages of a run, as both engines time them in ``summary.json``'s ``seconds`` (with ``total``).
STAGES = ("read_and_sketch", "exact_pass", "candidates", "verify", "cluster", "summary", "write")


def stage_table(seconds: dict) -> dict:
    """The timing table of ``summary.json``, the same in every engine: each of :data:`STAGES`
    (0 for a stage a run did not have), then ``total``, in seconds to the millisecond."""
    return {k: round(seconds.get(k, 0.0), 3) for k in (*STAGES, "total")}


#: The run's statistics about an index, in summary.json's ``index``.
INDEX_STATS = ("index_documents_saved", "index_documents_added", "against_candidate_pairs",
               "against_estimate_filtered", "against_verified_pairs", "indexed_documents_read",
               "against_urls_looked_up", "against_urls_found")


def peak_memory_mb() -> float:
    """Peak resident memory of this process so far, in MB (0.0 where the platform does not say).

    On Linux this is ``VmHWM`` from ``/proc/self/status``: ``ru_maxrss`` would count the memory the
    parent held when it forked this process (a dedup started from a 500 MB Python process reported
    500 MB for a 9 MB run)."""
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource  # POSIX only
    except ImportError:
        return 0.0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024


@dataclass(frozen=True)
class Clusters:
    """What :func:`cluster_outcomes` makes of a run's verified pairs: every record's ``outcome``,
    the ``sizes`` of the clusters of two or more by name, the ``chained`` members (joined to
    their survivor only through others), each sketched record's survivor (``survivor_local``,
    local indices) and the names that occur more than once (``repeated``)."""

    outcome: Outcome
    sizes: Counter
    chained: list
    survivor_local: np.ndarray
    repeated: list


def cluster_outcomes(names, reason, sk: np.ndarray, edges: tuple[np.ndarray, np.ndarray] | None, exact_of, *, keep: str,
                     lengths: np.ndarray, keyvals: np.ndarray | None = None, priority: np.ndarray | None = None,
                     member_similarity: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
                     chain_below: float | None, repeated: list | None = None,
                     kept_known: Callable[[np.ndarray], None] | None = None, links: UrlLinks | None = None,
                     comp: np.ndarray | None = None) -> Clusters:
    """The clusters of a run: components of the sketched records (local indices ``0..sk.size-1``,
    ordinals ``sk``) under ``edges`` ``(i, j)``, each one's survivor by the ``keep`` policy
    (:func:`~neardup.stages.survivors.choose_survivors`: ``lengths`` and ``keyvals`` by ordinal,
    ``priority`` by local index before the policy), and every record's outcome
    (:func:`~neardup.stages.survivors.outcomes`, records named ``names`` by ordinal, ``reason``
    the reasons known before clustering, ``exact_of`` the exact copies' first holders).

    ``member_similarity(survivor_local)`` gives ``(members, similarity)``: the local indices
    that are not their survivor and each one's similarity to it, measured as the engine can
    (on its held or spilled shingle ids, from its verified edges, on executors); the engine lets
    go of what only that measure reads once it returns. ``kept_known(kept)`` is called with the
    boolean mask of kept records (by ordinal) as soon as it is known (the local engine starts
    writing the kept corpus then). ``repeated``: :func:`~neardup.stages.columns.repeated_names`
    of ``names``, when the caller has it already.

    ``links``: URL identity (:func:`~neardup.stages.urls.url_links`): its edges join the
    components, a claimed record survives whatever the policy (before ``priority``), and the
    records it joined are relabelled ``url`` or ``canonical`` and left out of ``chained``.
    ``comp``: the components by local index when the engine found them itself (over its verified
    edges and the links' edges); ``edges`` are then None."""
    if links is not None and links.priority is not None:  # a claimed record first, whatever the policy
        priority = links.priority if priority is None else links.priority * (int(priority.max()) + 1) + priority
    if comp is None:
        i, j = edges
        if links is not None:
            i, j = np.concatenate((i, links.i)), np.concatenate((j, links.j))
        comp = components(sk.size, i, j)
    survivor_local = choose_survivors(comp, sk, keep, lengths, keyvals, priority=priority)
    del comp
    kept = kept_mask(len(names), sk, survivor_local)
    if kept_known is not None:
        kept_known(kept)
    members, similarity = member_similarity(survivor_local)
    if repeated is None:
        repeated = repeated_names(names)
    outcome, sizes, chained = outcomes(names, reason, sk, survivor_local, kept, members, similarity, exact_of,
                                       chain_below=chain_below, repeated=repeated)
    if links is not None:
        relabelled = relabel(outcome.reason, sk, survivor_local, links)
        if relabelled.size and chained:  # joined by their URL or claim, not through chains of content
            by_url = set(take_values(names, relabelled))
            chained = [c for c in chained if c not in by_url]
    return Clusters(outcome, sizes, chained, survivor_local, repeated)


@dataclass(frozen=True)
class VerifiedPairs:
    """The verified edges of a run (local indices) and the ordinal of each sketched record;
    ``names``: the ids by ordinal when they are not the run's own (against an index, where the
    indexed documents come first)."""

    edges: Edges
    sketched: np.ndarray
    names: list | None = None

    def rows(self, ids: list[str]):
        """``(a, b, jaccard, estimate)`` of every pair by record id, rounded to 6 places as
        ``pairs.jsonl`` gives them."""
        sk, e = self.sketched, self.edges
        ids = self.names if self.names is not None else ids
        # an id column decodes its ids a chunk at a time (one at a time costs ten times as much)
        for lo in range(0, len(e.i), _PAIR_ROWS_CHUNK):
            hi = lo + _PAIR_ROWS_CHUNK
            for a, b, j, est in zip(take_values(ids, sk[e.i[lo:hi]]), take_values(ids, sk[e.j[lo:hi]]),
                                    e.jaccard[lo:hi].tolist(),
                                    e.estimate[lo:hi].tolist()):
                yield a, b, round(j, 6), round(est, 6)

    def lines(self, ids):
        """:meth:`rows` for :func:`neardup.io.write.write_pairs`: iterated, the same tuples; and,
        when the ids are an :class:`Ids` column and the kernel is built, ``jsonl_chunks()`` giving
        ``pairs.jsonl``'s bytes a chunk at a time (:func:`neardup.io.write.result_lines.pair_chunks`)."""
        return _PairLines(self, ids)


class _PairLines:
    """The verified pairs as :func:`neardup.io.write.write_pairs` takes them (see :meth:`VerifiedPairs.lines`)."""

    def __init__(self, pairs: VerifiedPairs, ids):
        self.pairs, self.ids = pairs, ids
        names = pairs.names if pairs.names is not None else ids
        if isinstance(names, Ids) and result_lines.available_for_ids():
            self.jsonl_chunks = lambda: result_lines.pair_chunks(
                names, pairs.sketched[pairs.edges.i], pairs.sketched[pairs.edges.j], pairs.edges.jaccard,
                pairs.edges.estimate)

    def __iter__(self):
        return self.pairs.rows(self.ids)


#: Pairs whose ids :meth:`VerifiedPairs.rows` decodes at once.
_PAIR_ROWS_CHUNK = 65536


def run_summary(outcome: Outcome, stats: dict, config: DedupConfig, *, kept_info, jobs: int, seconds: dict) -> dict:
    """``summary.json`` of a run (both engines): the counts from every record's ``outcome``, and
    ``stats``, the figures of the stages (``cluster_sizes``, ``skipped``, ``candidate_pairs``,
    ``estimate_filtered``, ``verified_pairs``, ``chained``, ``chained_examples``, ``duplicate_ids``,
    ``n_shingles_total``, ``spilled_bytes``; optionally ``largest_bucket``, ``buckets_over_window``,
    ``samples``, ``kinds`` and the index's figures)."""
    reasons = reason_counts(outcome.reason)
    sizes = stats["cluster_sizes"]
    multi = {c: s for c, s in sizes.items() if s > 1}
    dist = Counter(multi.values())
    largest = sorted(multi.items(), key=lambda kv: (-kv[1], kv[0] if isinstance(kv[0], tuple) else ("", kv[0])))[:10]
    summary = {
        "input": len(outcome.ids),
        "kept": int(outcome.kept.sum()),
        "unique": reasons.get("unique", 0),
        "exact_duplicates": reasons.get("exact", 0),
        "near_duplicates": reasons.get("near", 0),
        # URL identity (--url-field): records under their survivor's URL, and followed canonical claims
        **({"url_duplicates": reasons.get("url", 0), "canonical_duplicates": reasons.get("canonical", 0)}
           if config.url_field is not None else {}),
        "skipped": sum(stats["skipped"].values()),
        "skipped_by_reason": stats["skipped"],
        "clusters": {
            "count": len(multi),
            "documents_in_clusters": sum(multi.values()),
            "size_distribution": {str(k): v for k, v in sorted(dist.items())},
            "largest": [{"survivor": c, "size": s} if not isinstance(c, tuple)
                        else {"survivor": c[1], "source": c[0], "size": s} for c, s in largest],
            # the 1997 experiment's table (clusters of identical, and of identical or similar, documents)
            "kinds": stats["kinds"] if "kinds" in stats else cluster_kinds(outcome, sizes),
        },
        "candidate_pairs": stats["candidate_pairs"],
        "estimate_filtered_pairs": stats["estimate_filtered"],
        "verified_pairs": stats["verified_pairs"],
        "chained_members": stats["chained"],
        "chained_examples": stats["chained_examples"],
        "largest_bucket": stats.get("largest_bucket", 0),
        "buckets_over_window": stats.get("buckets_over_window", 0),
        # method broder: the sample, the shared-sample pairs and what the cap left out
        **({"samples": stats["samples"]} if "samples" in stats else {}),
        # method minhash past the grouping budget: the band keys' partition files
        **({"band_grouping": stats["band_grouping"]} if "band_grouping" in stats else {}),
        "duplicate_ids": stats["duplicate_ids"],
        **({"canonical_claims": {k: v for k, v in stats["urls_identity"].items() if k != "url_groups"},
            "url_groups": stats["urls_identity"]["url_groups"]} if "urls_identity" in stats else {}),
        # against an index, or saving one: what was read from it and written to it
        **({"index": {k[len("index_"):] if k.startswith("index_") else k: stats[k] for k in INDEX_STATS
                      if k in stats}} if any(k in stats for k in INDEX_STATS) else {}),
        "shingles_total": stats["n_shingles_total"],
        "spilled_mb": round(stats["spilled_bytes"] / (1 << 20), 1),
        "kept_output": kept_info,
        "config": config.as_dict(),
        "config_fingerprint": config.fingerprint(),
        "jobs": jobs,
        "seconds": {k: round(v, 3) for k, v in seconds.items()},
        "peak_memory_mb": round(peak_memory_mb(), 1),
    }
    assert summary["kept"] + summary["exact_duplicates"] + summary["near_duplicates"] + summary["skipped"] \
        + summary.get("url_duplicates", 0) + summary.get("canonical_duplicates", 0) \
        == summary["input"], "internal error: counts do not add up"
    return summary


def reason_counts(reason) -> Counter:
    """How many records have each reason (every ``skipped:<why>`` counted as ``skipped``): from
    the codes of a :class:`Labels` column in one step (a Python string per record cost the
    5-million-document run 3 s), else one by one."""
    if isinstance(reason, Labels):
        counts = np.bincount(reason.codes.array(), minlength=len(reason.labels)).tolist()
        out: Counter = Counter()
        for label, c in zip(reason.labels, counts):
            if c:
                out["skipped" if label.startswith("skipped:") else label] += c
        return out
    return Counter(r if not r.startswith("skipped:") else "skipped" for r in reason)


@dataclass(frozen=True)
class RunOptions:
    """The options of a dedup run beyond its :class:`~neardup.config.DedupConfig` and output: what an
    engine is asked to honour, and refuses in one line when it cannot (each engine's
    ``refusal(config, options)``). The CLI fills it from its arguments; a library caller's entry
    point from its own."""

    inputs: tuple[str, ...] = ()
    jobs: int | None = None
    in_memory_mb: int | None = None
    spark_master: str | None = None
    ray_address: str | None = None
    on_error: str = "error"
    against: str | None = None
    save_index: str | None = None
    update_index: bool = False
    resume: bool = False
    compression: str = "auto"
    output_shards: int | None = None
    shard_size: str | None = None
    work_dir: str | None = None

    def local_only_refusal(self, engine: str) -> str | None:
        """The one line refusing the first option only the local engine honours (reading on past a
        file it cannot read, an index to check against or write), for a distributed ``engine``;
        or None. Spark and Ray refuse these alike, in this order."""
        if self.on_error != "error":
            return f"--on-error skip is not supported by {engine}: it stops at a file it cannot read; use --engine local"
        for flag, given in (("--against", self.against), ("--save-index", self.save_index),
                            ("--update-index", self.update_index or None)):
            if given is not None:
                return f"{flag} is not supported by {engine}: use the local engine"
        return None


def raise_refusal(config: DedupConfig, why_of: Callable[[DedupConfig], str | None]) -> None:
    """What every engine's ``check_config`` does: raise :class:`~neardup.errors.ConfigError` if
    ``config`` is no :class:`~neardup.config.DedupConfig`, or with the line ``why_of(config)``
    gives (the engine's refusal), if any."""
    if not isinstance(config, DedupConfig):
        raise ConfigError(f"config must be a neardup.DedupConfig, got {type(config).__name__}")
    why = why_of(config)
    if why is not None:
        raise ConfigError(why)


def source_refusal(config: DedupConfig, engine: str) -> str | None:
    """The one line refusing a choice of ``config`` about the records' sources (``--source-field``,
    ``--keep source:``), which only the local engine writes, for a distributed ``engine``; or None."""
    for flag, given in (("--source-field", config.source_field), ("--keep source:", config.keep == "source" or None)):
        if given is not None:
            return f"{flag} is not supported by {engine}: use the local engine"
    return None


def input_names(inputs) -> tuple[str, ...]:
    """The inputs of an engine's entry point (one path or several) as a tuple of names."""
    paths = [inputs] if isinstance(inputs, (str, bytes, os.PathLike)) else inputs
    return tuple(os.fsdecode(p) for p in paths)
