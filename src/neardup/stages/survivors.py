"""Clusters, their survivors, and what became of every record.

Indices: an *ordinal* is a record's position in the input (every record, skipped ones
included); a *local* index is a position among the sketched records (``sk[local]`` is its
ordinal). Clusters are the connected components of the verified edges over sketched records;
exact copies join the cluster of their first holder.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from .columns import take_values
from .grouping import sorted_unique
from .verify import pair_similarities, score_of

__all__ = ["KEEP_POLICIES", "Outcome", "cluster_kinds", "kinds_table", "keep_value", "components", "array_components",
           "choose_survivors", "kept_mask", "similarity_to_survivors", "outcomes", "split_sources"]

KEEP_POLICIES = ("first", "longest", "shortest")


@dataclass
class Outcome:
    """What became of every input record, in input order (lists indexed by ordinal).

    ``reason`` is ``unique`` (kept, alone), ``kept`` (kept, the survivor of a cluster),
    ``exact`` or ``near`` (a duplicate of ``duplicate_of``), or ``skipped:<why>``.
    """

    ids: list[str]
    reason: list[str]
    cluster: list[str | None]
    duplicate_of: list[str | None]
    similarity: list[float | None]
    kept: np.ndarray
    #: when the records carry sources: each record's, and its survivor's (None without a survivor)
    source: list[str] | None = None
    duplicate_of_source: list[str | None] | None = None


def keep_value(value) -> float:
    """A record's value for ``keep='field'``: its field as a number, NaN when it is not one (a
    record without a number never survives one that has one)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def components(n: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """The component of each of ``n`` nodes under the edges ``(i[q], j[q])``, named by its
    smallest member (deterministic: union-find by size, then relabelled)."""
    return array_components(n, i, j)


def array_components(n: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """:func:`components` over arrays, no Python object per node (the 30M-document runs): every
    edge hooks the larger of its endpoints' labels onto the smaller (a scatter-min), then labels
    jump to their labels' labels until they stop moving; repeated until no edge joins two labels.
    Labels only fall and are always members of their component, and the smallest member keeps
    its own, so what remains is each component's smallest member (as union-find names them,
    tests/test_properties.py). A few rounds of whole-array passes, O(log n) of them in practice."""
    # labels in 32 bits when every node's fits: the labels and each round's jump are the cluster
    # stage's largest arrays while the second read's shingle ids are still held
    label = np.arange(n, dtype=np.int32 if n < 2 ** 31 else np.int64)
    i = np.asarray(i, dtype=np.int64)
    j = np.asarray(j, dtype=np.int64)
    while i.size:
        li, lj = label[i], label[j]
        cross = li != lj
        if not cross.any():
            break
        # the edges that still join two labels are all that the next rounds need
        i, j, li, lj = i[cross], j[cross], li[cross], lj[cross]
        low = np.minimum(li, lj)
        np.minimum.at(label, np.maximum(li, lj), low)
        while True:
            jumped = label[label]
            if np.array_equal(jumped, label):
                break
            label = jumped
    return label


def choose_survivors(comp: np.ndarray, sk: np.ndarray, keep: str, lengths: np.ndarray,
                     keyvals: np.ndarray | None = None, *, priority: np.ndarray | None = None) -> np.ndarray:
    """The local index of each sketched record's survivor: per component, the first record by
    the keep policy, ties to the earlier record. ``lengths`` and ``keyvals`` (for ``'field'``:
    the largest value survives, NaN last) are indexed by ordinal. ``priority`` (by local index,
    optional) comes before the policy: the lowest value survives (a preferred source, an indexed
    document that must stay)."""
    n = sk.size
    if keep == "first" and priority is None and _increasing(sk):
        # components are named by their smallest member, which is then also the first in input
        # order: the labels are the survivors (no sort, and none of its full-size temporaries)
        return comp
    if keep == "first":
        primary = np.zeros(n)
    elif keep == "longest":
        primary = -lengths[sk].astype(np.float64)
    elif keep == "shortest":
        primary = lengths[sk].astype(np.float64)
    else:
        vals = keyvals[sk]
        primary = np.where(np.isnan(vals), np.inf, -vals)
    if priority is None:
        order = np.lexsort((sk, primary, comp))  # by component, then policy, then input order
    else:
        order = np.lexsort((sk, primary, priority, comp))
    survivor_local = np.empty(n, dtype=np.int64)
    if n:
        comp_sorted = comp[order]
        firsts = np.concatenate(([True], comp_sorted[1:] != comp_sorted[:-1]))
        survivor_of_comp = np.empty(n, dtype=np.int64)  # components are named by their smallest member
        survivor_of_comp[comp_sorted[firsts]] = order[firsts]
        survivor_local = survivor_of_comp[comp]
    return survivor_local


def kept_mask(n_all: int, sk: np.ndarray, survivor_local: np.ndarray) -> np.ndarray:
    """Boolean mask (by ordinal) of the kept records: the survivors."""
    survivor_of = sk[survivor_local]
    kept = np.zeros(n_all, dtype=bool)
    kept[sk[survivor_of == sk]] = True
    return kept


def similarity_to_survivors(ids, offsets, counts, survivor_local: np.ndarray, measure: str, *,
                            jobs: int = 1, in_slices=None) -> tuple[np.ndarray, np.ndarray]:
    """``(members, similarity)``: the local indices that are not their cluster's survivor, and
    each one's exact similarity to its survivor (the measure's score). ``in_slices(pieces, a, b,
    measure, offsets=)``: how the engine splits the pairs (:func:`neardup.engines.local.memory.in_pair_slices`)."""
    members = np.flatnonzero(survivor_local != np.arange(survivor_local.size))
    if not members.size:
        return members, np.empty(0)
    a = np.minimum(members, survivor_local[members])
    b = np.maximum(members, survivor_local[members])
    if in_slices is None:
        return members, score_of(pair_similarities(ids, offsets, counts, a, b, jobs=jobs), measure)
    parts = in_slices(ids, a, b, lambda lo, hi: score_of(pair_similarities(ids, offsets, counts, a[lo:hi], b[lo:hi],
                                                                           jobs=jobs), measure), offsets=offsets)
    return members, np.concatenate(parts)


def scores_of_edges(a: np.ndarray, b: np.ndarray, score: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    """``(found, at)`` for the pairs ``(lo, hi)`` (ordinals, ``lo < hi``) among the verified edges
    ``(a, b)`` (ordinals, sorted by ``(a, b)``, scored ``score``): ``found`` where a pair is an
    edge, whose score is ``score[at[found]]``. A cluster member joined to its survivor by an edge
    needs no second measure: it is the same measure of the same two id runs."""
    edge_keys = (a.astype(np.uint64) << np.uint64(32)) | b.astype(np.uint64)
    want = (lo.astype(np.uint64) << np.uint64(32)) | hi.astype(np.uint64)
    at = np.minimum(np.searchsorted(edge_keys, want), max(edge_keys.size - 1, 0))
    found = (edge_keys[at] == want) if edge_keys.size else np.zeros(want.size, dtype=bool)
    return found, at


def outcomes(ids, reason, sk: np.ndarray, survivor_local: np.ndarray, kept: np.ndarray,
             members: np.ndarray, member_similarity: np.ndarray, exact_of, *,
             chain_below: float | None = None, repeated: list[np.ndarray] | None = None
             ) -> tuple[Outcome, Counter, list[str]]:
    """Every record's outcome, the size of every cluster of two or more records by its id, and
    the members chained to their survivor below ``chain_below`` (joined only through other members).

    ``ids``: a sequence by ordinal (a list, or an :class:`~neardup.stages.columns.Ids` column);
    ``reason`` holds the reasons known before clustering (``skipped:...``, ``exact``, ``""``), a
    sequence or a :class:`~neardup.stages.columns.Labels` column; ``exact_of`` maps an exact
    copy's ordinal to its first holder's (a dict, or a pair of arrays ``(copies, holders)``).
    The outcome's columns are arrays read as sequences (:mod:`neardup.stages.columns`): no
    Python object per record. ``repeated``: :func:`~neardup.stages.columns.repeated_names` of
    ``ids``, when the caller has it already.
    """
    from .columns import Floats, Labels, Names, repeated_names

    n_all = len(ids)
    reason = reason.copy() if isinstance(reason, Labels) else _labels(reason)
    # ordinals in 32 bits when every one fits: the two columns that hold them are the largest
    # arrays of this stage (4 bytes a record each instead of 8)
    otype = np.int32 if n_all < 2 ** 31 else np.int64
    survivor_of = sk[survivor_local]
    is_survivor = survivor_of == sk
    survivors = sk[is_survivor]
    del is_survivor
    cluster = np.full(n_all, -1, dtype=otype)
    cluster[sk] = survivor_of
    m_ord, m_surv = sk[members], survivor_of[members]
    if isinstance(exact_of, dict):
        e_ord = np.fromiter(exact_of.keys(), np.int64, len(exact_of))
        e_first = np.fromiter(exact_of.values(), np.int64, len(exact_of))
    else:
        e_ord, e_first = (np.asarray(a, dtype=np.int64) for a in exact_of)
    e_surv = survivor_of[_local_indices(sk, e_first, n_all)]
    del survivor_of
    cluster[e_ord] = e_surv
    duplicate_of = np.full(n_all, -1, dtype=otype)
    duplicate_of[m_ord] = m_surv
    duplicate_of[e_ord] = e_surv
    similarity = np.full(n_all, np.nan)
    similarity[survivors] = 1.0
    # Python's round (correctly rounded), as clusters.jsonl always had it
    similarity[m_ord] = [round(float(x), 6) for x in np.asarray(member_similarity).tolist()]
    reason[m_ord] = "near"
    chained = []
    if chain_below is not None and members.size:
        low = m_ord[np.asarray(member_similarity) < chain_below]
        chained = take_values(ids, low)
    # a copy of a survivor has similarity 1.0; of a near duplicate, that one's to its survivor
    similarity[e_ord] = similarity[e_first]
    reason[e_ord[e_surv != e_first]] = "near"
    # Cluster sizes by cluster id (records of equal ids share a count, as their lines share the
    # id); a survivor is "kept" when its cluster has other members, "unique" otherwise. Only the
    # survivors with members have a size above 1: they are counted from the members and copies
    # (a few arrays as long as those), not by a count per record.
    s_ord, s_count = np.unique(np.concatenate((m_surv, e_surv)), return_counts=True)
    s_size = s_count + 1  # the survivor itself
    groups = repeated_names(ids) if repeated is None else repeated
    if groups:
        g_ord = np.concatenate(groups)
        own = _sizes_at(g_ord, s_ord, s_size, sk, survivor_local, n_all)
        g_size = np.repeat(np.add.reduceat(own, np.cumsum([0] + [g.size for g in groups[:-1]])),
                           [g.size for g in groups])
        alone = ~np.isin(s_ord, g_ord)
        ords = np.concatenate((s_ord[alone], g_ord))
        sizes = np.concatenate((s_size[alone], g_size))
        order = np.argsort(ords, kind="stable")
        ords, sizes = ords[order], sizes[order]
        big = sizes > 1
        multi, multi_size = ords[big], sizes[big]
        multi_survivors = multi[_sizes_at(multi, s_ord, s_size, sk, survivor_local, n_all) > 0]
    else:
        multi, multi_size, multi_survivors = s_ord, s_size, s_ord
    cluster_sizes: Counter = Counter()
    for name, size in zip(take_values(ids, multi), multi_size.tolist()):
        cluster_sizes[name] = size
    reason[survivors] = "unique"
    reason[multi_survivors] = "kept"
    outcome = Outcome(ids=ids, reason=reason, cluster=Names(cluster, ids), duplicate_of=Names(duplicate_of, ids),
                      similarity=Floats(similarity), kept=kept)
    return outcome, cluster_sizes, chained


def _increasing(sk: np.ndarray) -> bool:
    """Whether the sketched records' ordinals are in increasing order (they are, but for
    ``keep="source"``, which moves a holder's place to a later copy)."""
    return bool(sk.size < 2 or (sk[1:] > sk[:-1]).all())


def _local_indices(sk: np.ndarray, ordinals: np.ndarray, n_all: int) -> np.ndarray:
    """The local index of each of ``ordinals`` (all sketched): :func:`_locate`'s."""
    if not ordinals.size:
        return np.zeros(0, dtype=np.int64)
    return _locate(sk, ordinals, n_all)[0]


def _locate(sk: np.ndarray, ordinals: np.ndarray, n_all: int) -> tuple[np.ndarray, np.ndarray]:
    """``(local index, sketched)`` of each of ``ordinals`` in ``sk`` (non-empty): found by bisection
    when ``sk`` is increasing, else through a table by ordinal (8 bytes a record); the index of
    an ordinal that is not sketched is some valid index, and ``sketched`` False."""
    if _increasing(sk):
        loc = np.minimum(np.searchsorted(sk, ordinals), sk.size - 1)
        return loc, sk[loc] == ordinals
    local_of = np.full(n_all, -1, dtype=np.int64)
    local_of[sk] = np.arange(sk.size)
    loc = local_of[ordinals]
    return np.maximum(loc, 0), loc >= 0


def _sizes_at(ordinals: np.ndarray, s_ord: np.ndarray, s_size: np.ndarray, sk: np.ndarray,
              survivor_local: np.ndarray, n_all: int) -> np.ndarray:
    """The size of the cluster each of ``ordinals`` survives (its members and itself), 0 for a
    record that is no survivor: ``s_size`` for the survivors ``s_ord`` (sorted) with members, 1
    for the other survivors."""
    out = np.zeros(ordinals.size, dtype=np.int64)
    if not ordinals.size:
        return out
    if s_ord.size:
        pos = np.minimum(np.searchsorted(s_ord, ordinals), s_ord.size - 1)
        hit = s_ord[pos] == ordinals
        out[hit] = s_size[pos[hit]]
    else:
        hit = np.zeros(ordinals.size, dtype=bool)
    if sk.size:
        loc, sketched = _locate(sk, ordinals, n_all)
        alone = ~hit & sketched & (survivor_local[loc] == loc)
        out[alone] = 1
    return out


def _labels(values):
    """A :class:`~neardup.stages.columns.Labels` column of a sequence of strings."""
    from .columns import Labels

    out = Labels()
    codes = [out.code(v) for v in values]
    out.codes.extend(np.array(codes, dtype=np.uint8))
    return out


def split_sources(outcome: Outcome) -> Outcome:
    """The outcome of records named ``(source, id)`` (ids unique only within a source, as
    :func:`outcomes` was given them) with plain ids and the sources in their own columns."""
    def part(names, k):
        return [None if x is None else x[k] for x in names]

    return Outcome(ids=part(outcome.ids, 1), reason=outcome.reason, cluster=part(outcome.cluster, 1),
                   duplicate_of=part(outcome.duplicate_of, 1), similarity=outcome.similarity, kept=outcome.kept,
                   source=part(outcome.ids, 0), duplicate_of_source=part(outcome.duplicate_of, 0))


def cluster_kinds(outcome: Outcome, sizes: dict) -> dict:
    """The table of Broder et al.'s 1997 experiment for a run: clusters of two or more records,
    and the documents they hold, split into clusters of identical documents (every member an
    exact copy of its survivor) and clusters of identical or similar ones (at least one near)."""
    from .columns import Labels, Names

    if isinstance(outcome.cluster, Names) and isinstance(outcome.reason, Labels):  # arrays: no str per record
        ords = sorted_unique(outcome.cluster.ordinals[outcome.reason.mask("near")])
        with_near = set(outcome.cluster.names.take(ords[ords >= 0])) if hasattr(outcome.cluster.names, "take") \
            else {outcome.cluster.names[o] for o in ords[ords >= 0].tolist()}
    else:
        with_near = {c for c, r in zip(outcome.cluster, outcome.reason) if r == "near"}
    multi = {c: s for c, s in sizes.items() if s > 1}
    identical = [s for c, s in multi.items() if c not in with_near]
    similar = [s for c, s in multi.items() if c in with_near]
    return kinds_table(len(identical), sum(identical), len(similar), sum(similar))


def kinds_table(identical_clusters: int, identical_documents: int, similar_clusters: int,
                similar_documents: int) -> dict:
    """The shape of :func:`cluster_kinds`'s table, from its four counts (the Spark engine
    aggregates them on the cluster)."""
    return {"clusters": identical_clusters + similar_clusters,
            "documents_in_clusters": identical_documents + similar_documents,
            "identical": {"clusters": identical_clusters, "documents": identical_documents},
            "identical_or_similar": {"clusters": similar_clusters, "documents": similar_documents}}
