"""Driver side: the stages after sketching, on the driver for a local output (:func:`dedup_on_driver`),
as DataFrame operations for the DataFrame API and outputs on a Hadoop file system
(:func:`dataframe_stages`), and the summary of the latter."""

from __future__ import annotations

import functools
import math
import time

import numpy as np

from ...config import DedupConfig
from ..common import cluster_outcomes, peak_memory_mb
from ...stages.candidates import estimate_floor
from ...stages.survivors import kinds_table, scores_of_edges
from .urls import spark_url_links
from .executors import (BLOB_SCHEMA, PAIR_SCHEMA, band_blobs, bucket_pairs, distinct_pairs, estimate_and_verify,
                        member_sims, scores_on_executors, verify_groups)

def release(frames) -> None:
    for frame in frames:
        try:
            frame.unpersist()
        except Exception:  # pragma: no cover - best effort
            pass


class Stages:
    """Materialized intermediate DataFrames and seconds per stage.

    Every stage's result is checkpointed (its lineage cut): the sketch table reliably when a
    checkpoint directory is set, the much smaller intermediates locally. Besides computing each stage once,
    this keeps the plans shallow. Persisting alone is not enough: each cached relation prints
    the plan of the cached relations it reads, and the shared subtrees of this pipeline make
    that string grow exponentially (the driver ran out of heap in ``explainString``).
    """

    def __init__(self):
        self.held: list = []
        self.seconds: dict[str, float] = {}
        self._t = time.perf_counter()

    def keep(self, df, *, count: bool = True):
        """An intermediate result (small next to the sketch table): a local checkpoint, materialized
        by its own count (one job)."""
        df = df.localCheckpoint(eager=not count)
        self.held.append(df)
        return (df, df.count()) if count else df

    def checkpoint(self, df):
        """Materialized with its lineage cut: a reliable checkpoint on a cluster whose SparkContext
        has a checkpoint directory (shared storage), else a local one (memory and disk of the
        executors; in local mode a reliable one would protect nothing)."""
        sc = df.sparkSession.sparkContext
        if sc.getCheckpointDir() and not (sc.master or "").startswith("local"):
            from pyspark import StorageLevel

            p = df.persist(StorageLevel.MEMORY_AND_DISK)
            out = p.checkpoint(eager=True)
            p.unpersist()
            return out
        return df.localCheckpoint(eager=True)

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self._t
        self._t = now


def _partitions(spark) -> int:
    return int(spark.conf.get("spark.sql.shuffle.partitions", "8"))


#: What one task of the packed passes (:func:`bucket_pairs`, :func:`verify_groups`) holds at
#: most, about: past it their shuffles get more partitions than ``spark.sql.shuffle.partitions``.
TASK_BYTES = 64 << 20


def partitions_for(spark, nbytes: float) -> int:
    """Shuffle partitions for a packed pass over ``nbytes``: the session's, or more so that a
    task holds about :data:`TASK_BYTES` (its arrays are sorted in memory)."""
    return max(_partitions(spark), int(math.ceil(nbytes / TASK_BYTES)))


def partition_targets(spark, nparts: int) -> tuple:
    """For each of ``nparts`` shuffle partitions an int that ``repartition(nparts, col)`` sends
    there (Spark's Murmur3 hash, seed 42, modulo ``nparts``), so that the packed rows of
    :func:`band_blobs` spread over all partitions, one target each."""
    from pyspark.sql import functions as F

    rows = (spark.range(64 * nparts).select(F.col("id").cast("int").alias("v"))
            .select("v", F.pmod(F.hash("v"), F.lit(nparts)).alias("p")).collect())
    first: dict = {}
    for r in rows:
        first.setdefault(int(r["p"]), int(r["v"]))
    return tuple(first.get(p, p) for p in range(nparts))


def dataframe_stages(spark, docs, config: DedupConfig, st: Stages):
    """Everything after sketching. ``docs``: (ordinal, id, reason, length, keyval, fp, n, ids, bands),
    one row per input record, materialized. Returns (clusters, pairs, stats)."""
    sketched, exact, edges, stats = _verified_edges(spark, docs, config, st)
    return _cluster_frames(spark, docs, sketched, exact, edges, stats, config, st)


def _verified_edges(spark, docs, config: DedupConfig, st: Stages):
    """The exact pass, candidates and verification as DataFrames (the DataFrame API and outputs
    on a Hadoop file system; :func:`dedup_on_driver` for local outputs): ``(sketched, exact,
    edges, stats)``, the first holders' (ordinal, length, keyval, n, ids, bands), the exact copies'
    (ordinal, rep), and the verified edges (a, b, estimate, jaccard, score, jaccard_r,
    estimate_r), by ordinals."""
    from pyspark.sql import functions as F

    from ...stages.candidates import BUCKET_WINDOW

    stats: dict = {"candidate_pairs": 0, "estimate_filtered": 0, "verified_pairs": 0, "largest_bucket": 0,
                   "buckets_over_window": 0, "buckets_shared": 0}
    parts = _partitions(spark)

    # -- exact pass: all but the lowest ordinal of each fingerprint are exact duplicates
    columns = ("ordinal", "length", "keyval", "n", "ids", "bands")
    valid = docs.where(F.col("reason") == "").select("ordinal", "fp")
    rep = valid.groupBy("fp").agg(F.min("ordinal").alias("rep"))
    with_rep = valid.join(rep, "fp").select("ordinal", "rep")
    exact = st.keep(with_rep.where(F.col("ordinal") != F.col("rep")), count=False)
    firsts = with_rep.where(F.col("ordinal") == F.col("rep")).select("ordinal")
    sketched, n_sketched = st.keep(docs.join(firsts, "ordinal", "left_semi").select(*columns))
    stats["n_shingles_total"] = int(sketched.agg(F.sum("n")).first()[0] or 0)
    st.lap("exact_pass")

    empty_edges = spark.createDataFrame([], "a long, b long, estimate double, jaccard double, score double, "
                                            "jaccard_r double, estimate_r double")
    if config.method == "minhash" and n_sketched:
        band = config.banding()
        m = config.minhash.num_perm
        parts = partitions_for(spark, n_sketched * band.bands * 17.0)  # a triple: int8, uint64, int64
        targets = partition_targets(spark, parts)
        # shuffle 1: every bucket's (band, key, ordinal) triples to one partition, packed
        blobs = sketched.select("ordinal", "bands").mapInArrow(
            functools.partial(band_blobs, bands=band.bands, targets=targets), BLOB_SCHEMA)
        raw = st.keep(blobs.repartition(parts, "part").mapInArrow(
            functools.partial(bucket_pairs, window=BUCKET_WINDOW, targets=targets), PAIR_SCHEMA), count=False)
        got = raw.where(F.col("part") < 0).agg(F.sum("shared"), F.max("largest"), F.sum("over")).first()
        stats.update(buckets_shared=int(got[0] or 0), largest_bucket=int(got[1] or 0),
                     buckets_over_window=int(got[2] or 0))
        # shuffle 2: a pair found in several bands, once
        cand, stats["candidate_pairs"] = st.keep(raw.where(F.col("part") >= 0).repartition(parts, "part")
                                                 .select("pairs").mapInArrow(distinct_pairs, "a long, b long"))
        st.lap("candidates")

        # the shingle ids of the documents in a pair (a broadcast semi-join: one scan of the
        # sketch table), joined to both ends of each pair
        members = cand.select(F.col("a").alias("ordinal")).union(cand.select(F.col("b").alias("ordinal"))).distinct()
        data = sketched.select("ordinal", "ids").join(F.broadcast(members), "ordinal", "left_semi")
        side_a = data.select(F.col("ordinal").alias("a"), F.col("ids").alias("ia"))
        side_b = data.select(F.col("ordinal").alias("b"), F.col("ids").alias("ib"))
        joined = cand.join(side_a, "a").join(side_b, "b").select("a", "b", "ia", "ib")
        floor = estimate_floor(config.threshold, m, config.measure) if config.verify else None
        checked = st.keep(joined.mapInArrow(
            functools.partial(estimate_and_verify, minhash=config.minhash, floor=floor, measure=config.measure),
            "a long, b long, estimate double, passed boolean, jaccard double, score double, jaccard_r double, "
            "estimate_r double"), count=False)
        passed = checked.where(F.col("passed"))
        if config.verify:
            stats["estimate_filtered"] = int(checked.where(~F.col("passed")).count())
            passed = passed.where(F.col("score") >= F.lit(float(config.threshold)))
        edges, stats["verified_pairs"] = st.keep(passed.select("a", "b", "estimate", "jaccard", "score", "jaccard_r",
                                                               "estimate_r"))
        st.lap("verify")
    else:
        edges = empty_edges
        st.lap("candidates")
    return sketched, exact, edges, stats


def _float_column(table, name: str) -> np.ndarray:
    return table.column(name).to_numpy(zero_copy_only=False).astype(np.float64)  # nulls become NaN


def _int_column(table, name: str) -> np.ndarray:
    import pyarrow.compute as pc

    return pc.fill_null(table.column(name), 0).to_numpy(zero_copy_only=False).astype(np.int64)


def dedup_on_driver(spark, docs, config: DedupConfig, st: Stages):
    """The stages after sketching for a local output, whose files the driver writes and so holds
    a few values per record anyway: ``(outcome, pair rows, stats)`` as the local engine has them.

    The driver collects once the small columns of every record (ordinal, id, reason, length,
    keep value, fingerprint, shingle count) and runs the local stages on them: the exact pass
    (:func:`~neardup.stages.exact.first_holders`), connected components, survivors and outcomes
    (:mod:`neardup.stages.survivors`, union-find over arrays). Signatures and shingle ids never
    leave the executors, which compute the band keys, the candidate pairs (one shuffle of packed
    band triples, :func:`bucket_pairs`), their estimates and exact similarities
    (:func:`verify_groups`: one shuffle of the pairs' documents) and the similarity of the
    members that no verified edge joins to their survivor. The candidate pairs and verified
    edges come back packed (16 bytes a pair)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from collections import Counter

    from pyspark.sql import functions as F

    from ...stages.candidates import BUCKET_WINDOW
    from ...stages.exact import first_holders

    stats: dict = {"candidate_pairs": 0, "estimate_filtered": 0, "verified_pairs": 0, "largest_bucket": 0,
                   "buckets_over_window": 0, "buckets_shared": 0}

    # -- exact pass: the local stage over (ordinal, fingerprint, shingle count)
    url_columns = ("url_key", "claim_key", "page_url") if config.url_field is not None else ()
    recs = (docs.select("ordinal", "id", "reason", "length", "keyval", "fp", "n", *url_columns).toArrow()
            .sort_by("ordinal"))
    n_all = recs.num_rows
    if n_all and not np.array_equal(recs.column("ordinal").to_numpy(), np.arange(n_all)):
        raise RuntimeError("internal error: the records' ordinals are not 0, 1, 2, ...")
    ids = recs.column("id").to_pylist()
    valid = np.flatnonzero(pc.equal(recs.column("reason"), "").to_numpy(zero_copy_only=False))
    reason = recs.column("reason").to_pylist()
    lengths = _int_column(recs, "length")
    keyvals = _float_column(recs, "keyval") if config.keep == "field" else None
    fps, ns = _int_column(recs, "fp"), _int_column(recs, "n")
    # URL identity: each record's canonical URL and its page's claim, by ordinal, as the local engine keeps them
    url_keys, claim_keys, page_urls = {}, {}, {}
    if url_columns:
        url_keys, claim_keys, page_urls = ({o: v for o, v in enumerate(recs.column(name).to_pylist()) if v is not None}
                                           for name in url_columns)
    del recs
    new, _, copies = first_holders(valid.tolist(), fps[valid], ns[valid], {})
    sk = valid[new]  # the first holders' ordinals, sorted
    exact_of = dict(copies)
    for o in exact_of:
        reason[o] = "exact"
    stats["n_shingles_total"] = int(ns[sk].sum())
    del fps, ns
    # the sketch table's first holders: the exact copies (usually few) left out by a broadcast anti-join
    copies_df = spark.createDataFrame(pa.table({"ordinal": pa.array(list(exact_of), pa.int64())}))
    sketched = (docs.where(F.col("reason") == "").join(F.broadcast(copies_df), "ordinal", "left_anti")
                .select("ordinal", "ids", "bands"))
    st.lap("exact_pass")

    a = b = np.empty(0, dtype=np.int64)
    score = jac_r = est_r = np.empty(0)
    if config.method == "minhash" and sk.size:
        band = config.banding()
        m = config.minhash.num_perm
        parts = partitions_for(spark, sk.size * band.bands * 17.0)  # a triple: int8, uint64, int64
        targets = partition_targets(spark, parts)
        blobs = sketched.select("ordinal", "bands").mapInArrow(
            functools.partial(band_blobs, bands=band.bands, targets=targets), BLOB_SCHEMA)
        raw = (blobs.repartition(parts, "part")
               .mapInArrow(functools.partial(bucket_pairs, window=BUCKET_WINDOW, targets=targets), PAIR_SCHEMA)
               .toArrow())
        st_rows = pc.less(raw.column("part"), 0)
        stats.update(buckets_shared=int(pc.sum(raw.filter(st_rows).column("shared")).as_py() or 0),
                     largest_bucket=int(pc.max(raw.filter(st_rows).column("largest")).as_py() or 0),
                     buckets_over_window=int(pc.sum(raw.filter(st_rows).column("over")).as_py() or 0))
        packed = [np.frombuffer(x, dtype=np.uint64) for x in raw.column("pairs").to_pylist() if x]
        packed = np.unique(np.concatenate(packed)) if packed else np.empty(0, dtype=np.uint64)
        del raw
        stats["candidate_pairs"] = int(packed.size)
        st.lap("candidates")

        if packed.size:
            ca = (packed >> np.uint64(32)).astype(np.int64)
            cb = (packed & np.uint64(0xFFFFFFFF)).astype(np.int64)
            del packed
            # each pair to a group (one per shuffle partition), each document to every group
            # that holds one of its pairs; a group's documents meet in one task
            # a document in a task: its shingle ids and the signature computed from them
            doc_bytes = 8.0 * m + 8.0 * stats["n_shingles_total"] / sk.size
            parts = partitions_for(spark, 2 * ca.size * doc_bytes)  # at most two documents a pair
            targets = partition_targets(spark, parts)
            group = ca % parts
            req = np.unique(np.concatenate([ca * parts + group, cb * parts + group]))
            req_df = spark.createDataFrame(pa.table({"ordinal": req // parts,
                                                     "part": np.asarray(targets, dtype=np.int32)[req % parts]}))
            # the pairs of each group, split once (stable: each group's pairs keep their order)
            order = np.argsort(group, kind="stable")
            cuts = np.searchsorted(group[order], np.arange(parts + 1))
            pairs_of = spark.sparkContext.broadcast(
                {targets[g]: (ca[order[cuts[g]:cuts[g + 1]]], cb[order[cuts[g]:cuts[g + 1]]])
                 for g in range(parts) if cuts[g + 1] > cuts[g]})
            floor = estimate_floor(config.threshold, m, config.measure) if config.verify else None
            try:
                got = (sketched.join(F.broadcast(req_df), "ordinal").repartition(parts, "part")
                       .select("part", "ordinal", "ids")
                       .mapInArrow(functools.partial(verify_groups, pairs_of=pairs_of, minhash=config.minhash,
                                                     floor=floor,
                                                     measure=config.measure),
                                   "a long, b long, passed boolean, score double, jaccard_r double, estimate_r double")
                       .toArrow())
            finally:
                pairs_of.unpersist()
            if got.num_rows != ca.size:
                raise RuntimeError(f"internal error: {got.num_rows} pairs verified of {ca.size} candidates")
            passed = got.column("passed").to_numpy(zero_copy_only=False)
            score_all = got.column("score").to_numpy(zero_copy_only=False)
            keep = passed.copy()
            if config.verify:
                stats["estimate_filtered"] = int((~passed).sum())
                keep &= score_all >= float(config.threshold)
            et = got.filter(pa.array(keep)).sort_by([("a", "ascending"), ("b", "ascending")])
            a = et.column("a").to_numpy(zero_copy_only=False)
            b = et.column("b").to_numpy(zero_copy_only=False)
            score = et.column("score").to_numpy(zero_copy_only=False)
            jac_r = et.column("jaccard_r").to_pylist()
            est_r = et.column("estimate_r").to_pylist()
        stats["verified_pairs"] = int(a.size)
        st.lap("verify")
    else:
        st.lap("candidates")

    # -- clusters, survivors, outcomes: the local stages
    links = None
    if config.url_field is not None:  # records joined by their URL or a followed canonical claim too
        links = spark_url_links(spark, sketched, sk, url_keys, claim_keys, exact_of, ids, config)
        stats["urls_identity"] = links.stats

    def member_similarity(survivor_local):
        members = np.flatnonzero(survivor_local != np.arange(sk.size))
        member_sims = np.full(members.size, np.nan)
        if not members.size:
            return members, member_sims
        mo, so = sk[members], sk[survivor_local[members]]
        lo, hi = np.minimum(mo, so), np.maximum(mo, so)
        # a member joined to its survivor by a verified edge has the edge's score; only the
        # others are measured on the executors
        direct, at = scores_of_edges(a, b, score, lo, hi)
        member_sims[direct] = score[at[direct]]
        rest = np.flatnonzero(~direct)
        if rest.size:
            member_sims[rest] = scores_on_executors(spark, sketched, lo[rest], hi[rest], config.measure)
        return members, member_sims

    made = cluster_outcomes(ids, reason, sk, (np.searchsorted(sk, a), np.searchsorted(sk, b)), exact_of,
                            keep=config.keep, lengths=lengths, keyvals=keyvals, member_similarity=member_similarity,
                            chain_below=config.threshold if config.method == "minhash" else None, links=links)
    outcome, cluster_sizes, chained = made.outcome, made.sizes, made.chained
    skipped = Counter(r[len("skipped:"):] for r in outcome.reason if r.startswith("skipped:"))
    stats.update(cluster_sizes=cluster_sizes, chained=len(chained), chained_examples=chained[:20],
                 skipped=dict(sorted(skipped.items())), duplicate_ids=n_all - len(set(ids)), spilled_bytes=0,
                 urls=page_urls,  # clusters.jsonl's url, by ordinal
                 pair_ordinals=(a, b))  # the verified pairs' ordinals, as pair_rows has them
    pair_rows = list(zip([ids[x] for x in a.tolist()], [ids[x] for x in b.tolist()], jac_r, est_r))
    st.lap("cluster")
    return outcome, pair_rows, stats


def _cluster_frames(spark, docs, sketched, exact, edges, stats: dict, config: DedupConfig, st: Stages):
    """Clusters computed on the cluster (connected components in Spark): ``(clusters, pairs, stats)``
    as DataFrames, for the DataFrame API and outputs on a Hadoop file system."""
    from pyspark.sql import functions as F

    from .components import connected_components

    # -- clusters: connected components over verified edges; survivor by the keep policy
    if stats["verified_pairs"]:
        cc = connected_components(edges.select("a", "b"), "a", "b")
        members = sketched.select("ordinal", "length", "keyval").join(
            cc.withColumnRenamed("node", "ordinal"), "ordinal")
        if config.keep == "first":
            primary = F.lit(0.0)
        elif config.keep == "longest":
            primary = -F.col("length").cast("double")
        elif config.keep == "shortest":
            primary = F.col("length").cast("double")
        else:
            v = F.col("keyval")
            primary = F.when(v.isNull() | F.isnan(v), F.lit(float("inf"))).otherwise(-v)
        if config.keep != "first":
            primary = F.when(primary == 0, F.lit(0.0)).otherwise(primary)  # -0.0 ties with 0.0, as in numpy
        surv = (members.groupBy("component")
                .agg(F.min(F.struct(primary.alias("p"), F.col("ordinal").alias("o"))).alias("m"))
                .select("component", F.col("m.o").alias("survivor")))
        memb = st.keep(members.join(surv, "component").select("ordinal", "survivor"), count=False)
        ids = sketched.select("ordinal", "ids")
        pairs_ms = (memb.where(F.col("ordinal") != F.col("survivor"))
                    .select("ordinal", F.least("ordinal", "survivor").alias("lo"),
                            F.greatest("ordinal", "survivor").alias("hi")))
        msj = (pairs_ms.join(ids.withColumnRenamed("ordinal", "lo").withColumnRenamed("ids", "ilo"), "lo")
               .join(ids.withColumnRenamed("ordinal", "hi").withColumnRenamed("ids", "ihi"), "hi")
               .select("ordinal", "ilo", "ihi"))
        sims = st.keep(msj.mapInArrow(
            functools.partial(member_sims, measure=config.measure, threshold=float(config.threshold),
                              chain=config.method == "minhash"),
            "ordinal long, sim double, chained boolean"), count=False)
        release([cc])
    else:
        memb = spark.createDataFrame([], "ordinal long, survivor long")
        sims = spark.createDataFrame([], "ordinal long, sim double, chained boolean")

    assign_sk = (sketched.select("ordinal").join(memb, "ordinal", "left").join(sims, "ordinal", "left")
                 .select("ordinal", F.coalesce("survivor", "ordinal").alias("survivor"), "sim", "chained"))
    assign_sk = st.keep(assign_sk, count=False)
    near_sk = F.col("survivor") != F.col("ordinal")
    a_sk = assign_sk.select("ordinal", "survivor",
                            F.when(near_sk, F.col("sim")).otherwise(F.lit(1.0)).alias("similarity"),
                            F.when(near_sk, F.lit("near")).alias("why"))
    rep_side = assign_sk.select(F.col("ordinal").alias("rep"), F.col("survivor").alias("rsurv"), F.col("sim").alias("rsim"))
    same = F.col("rsurv") == F.col("rep")
    a_ex = exact.join(rep_side, "rep").select(
        "ordinal", F.col("rsurv").alias("survivor"),
        F.when(same, F.lit(1.0)).otherwise(F.col("rsim")).alias("similarity"),
        F.when(same, F.lit("exact")).otherwise(F.lit("near")).alias("why"))
    assign = a_sk.unionByName(a_ex)
    names = docs.select(F.col("ordinal").alias("survivor"), F.col("id").alias("cluster"))
    out = (docs.select("ordinal", "id", "reason").join(assign, "ordinal", "left")
           .join(names, "survivor", "left"))
    out = st.keep(out, count=False)
    sizes = out.where(F.col("cluster").isNotNull()).groupBy("cluster").agg(F.count("*").alias("size"))
    kept = F.coalesce(F.col("survivor") == F.col("ordinal"), F.lit(False))
    clusters = out.join(sizes, "cluster", "left").select(
        "id", "cluster", kept.alias("kept"),
        F.when(~kept & F.col("survivor").isNotNull(), F.col("cluster")).alias("duplicate_of"),
        "similarity",
        F.when(kept, F.when(F.col("size") > 1, F.lit("kept")).otherwise(F.lit("unique")))
        .otherwise(F.coalesce(F.col("why"), F.col("reason"))).alias("reason"),
        "ordinal",
    )
    clusters = st.keep(clusters, count=False)
    chained = assign_sk.where(F.coalesce(F.col("chained"), F.lit(False)) & near_sk)
    stats["chained"] = chained.count()
    stats["chained_examples"] = [] if not stats["chained"] else [
        r["id"] for r in chained.join(docs.select("ordinal", "id"), "ordinal").orderBy("ordinal").limit(20).collect()]
    idn = docs.select("ordinal", "id")
    pairs = (edges.join(idn.select(F.col("ordinal").alias("a"), F.col("id").alias("a_id")), "a")
             .join(idn.select(F.col("ordinal").alias("b"), F.col("id").alias("b_id")), "b")
             .select(F.col("a_id").alias("a"), F.col("b_id").alias("b"), F.col("jaccard_r").alias("jaccard"),
                     F.col("estimate_r").alias("estimate"), F.col("a").alias("a_ordinal"), F.col("b").alias("b_ordinal")))
    pairs = st.keep(pairs, count=False)
    st.lap("cluster")
    return clusters, pairs, stats


def frames_summary(spark, clusters, stats: dict, config: DedupConfig, st: Stages, kept_info) -> dict:
    from pyspark.sql import functions as F

    reasons: dict[str, int] = {}
    skipped: dict[str, int] = {}
    for r in clusters.groupBy("reason").count().collect():
        if r["reason"].startswith("skipped:"):
            skipped[r["reason"][len("skipped:"):]] = int(r["count"])
            reasons["skipped"] = reasons.get("skipped", 0) + int(r["count"])
        else:
            reasons[r["reason"]] = int(r["count"])
    distinct_ids = clusters.select("id").distinct().count()
    sizes = clusters.where(F.col("cluster").isNotNull()).groupBy("cluster").count().where(F.col("count") > 1)
    dist = {int(r["count"]): int(r["n"]) for r in sizes.groupBy("count").agg(F.count("*").alias("n")).collect()}
    largest = sizes.orderBy(F.col("count").desc(), F.col("cluster").asc()).limit(10).collect()
    # the 1997 experiment's table: clusters with a near member are "identical or similar"
    near = clusters.where(F.col("reason") == "near").select("cluster").distinct().withColumn("has_near", F.lit(True))
    kinds = {bool(r["has_near"]): (int(r["n"]), int(r["docs"])) for r in
             sizes.join(near, "cluster", "left").groupBy(F.coalesce(F.col("has_near"), F.lit(False)).alias("has_near"))
             .agg(F.count("*").alias("n"), F.sum("count").alias("docs")).collect()}
    n_input = sum(reasons.values())
    summary = {
        "engine": "spark",
        "input": n_input,
        "kept": reasons.get("kept", 0) + reasons.get("unique", 0),
        "unique": reasons.get("unique", 0),
        "exact_duplicates": reasons.get("exact", 0),
        "near_duplicates": reasons.get("near", 0),
        "skipped": reasons.get("skipped", 0),
        "skipped_by_reason": dict(sorted(skipped.items())),
        "clusters": {
            "count": sum(dist.values()),
            "documents_in_clusters": sum(k * v for k, v in dist.items()),
            "size_distribution": {str(k): v for k, v in sorted(dist.items())},
            "largest": [{"survivor": r["cluster"], "size": int(r["count"])} for r in largest],
            "kinds": kinds_table(*kinds.get(False, (0, 0)), *kinds.get(True, (0, 0))),
        },
        "candidate_pairs": int(stats["candidate_pairs"]),
        "estimate_filtered_pairs": int(stats["estimate_filtered"]),
        "verified_pairs": int(stats["verified_pairs"]),
        "chained_members": int(stats["chained"]),
        "chained_examples": stats["chained_examples"],
        "largest_bucket": int(stats["largest_bucket"]),
        "buckets_over_window": int(stats["buckets_over_window"]),
        "duplicate_ids": n_input - distinct_ids,
        "shingles_total": int(stats["n_shingles_total"]),
        "kept_output": kept_info,
        "config": config.as_dict(),
        "config_fingerprint": config.fingerprint(),
        "jobs": spark.sparkContext.defaultParallelism,
        "spark": spark_info(spark),
        "seconds": {k: round(v, 3) for k, v in st.seconds.items()},
        "peak_memory_mb": round(peak_memory_mb(), 1),
    }
    jvm = jvm_peak_mb()
    if jvm is not None:
        summary["peak_memory_mb_jvm"] = jvm
    assert summary["kept"] + summary["exact_duplicates"] + summary["near_duplicates"] + summary["skipped"] \
        == summary["input"], "internal error: counts do not add up"
    return summary


def spark_info(spark) -> dict:
    return {"version": spark.version, "master": spark.sparkContext.master,
            "default_parallelism": spark.sparkContext.defaultParallelism, "shuffle_partitions": _partitions(spark)}


def jvm_peak_mb() -> float | None:
    """High-water resident memory of a local Spark JVM started by this process (None elsewhere)."""
    try:
        import psutil

        for proc in psutil.Process().children(recursive=True):
            if proc.name() == "java":
                with open(f"/proc/{proc.pid}/status") as fh:
                    for line in fh:
                        if line.startswith("VmHWM:"):
                            return round(int(line.split()[1]) / 1024, 1)
    except Exception:  # noqa: BLE001 - psutil missing, not Linux, no permission
        return None
    return None
