"""Executor side: candidate pairs from the band keys, the estimate filter and exact verification,
similarities to survivors, and the original lines of the kept corpus (``mapInArrow`` functions,
module level so that they pickle by reference: neardup must be importable on the executors, as the
compiled kernel must)."""

from __future__ import annotations

import numpy as np

from ...params import MinHashParams
from ...stages.verify import score_of
from .columns import binary_offsets, binary_values, rounded, run_offsets, u64_runs


BLOB_SCHEMA = "part int, band binary, key binary, ordinal binary"


def band_blobs(batches, bands: int, targets: tuple):
    """(ordinal, band keys) -> ``(band, key, ordinal)`` triples, packed into one row per target
    partition: a bucket's members all go to the partition ``targets[key % len(targets)]``, and
    the shuffle moves a few large binary rows instead of a row per band key."""
    import pyarrow as pa

    nparts = len(targets)
    for rb in batches:
        if rb.num_rows == 0:
            continue
        ords = rb.column(0).to_numpy()
        keys = u64_runs(rb.column(1))
        band = np.tile(np.arange(bands, dtype=np.int8), ords.size)
        ordinal = np.repeat(ords, bands)
        part = (keys % np.uint64(nparts)).astype(np.int64)
        order = np.argsort(part, kind="stable")
        cuts = np.searchsorted(part[order], np.arange(nparts + 1))
        out_part, out_b, out_k, out_o = [], [], [], []
        for p in range(nparts):
            sel = order[cuts[p] : cuts[p + 1]]
            if sel.size:
                out_part.append(targets[p])
                out_b.append(band[sel].tobytes())
                out_k.append(keys[sel].tobytes())
                out_o.append(ordinal[sel].tobytes())
        yield pa.RecordBatch.from_arrays([pa.array(out_part, pa.int32()), pa.array(out_b, pa.binary()),
                                          pa.array(out_k, pa.binary()), pa.array(out_o, pa.binary())],
                                         names=["part", "band", "key", "ordinal"])


PAIR_SCHEMA = "part int, pairs binary, shared long, largest long, over long"


def bucket_pairs(batches, window: int, targets: tuple):
    """A partition's band triples (every bucket whole here) -> its distinct candidate pairs,
    packed ``a << 32 | b`` (a < b) into one row per target partition (by ``a``), and one row of
    bucket statistics (``part`` -1). Within a bucket (band, key), members in ordinal order, each
    with the next ``window - 1``: :func:`neardup.stages.candidates.band_candidates`'s definition,
    its statistics counted as the local engine counts them."""
    import pyarrow as pa

    pb, pk, po = [], [], []
    for rb in batches:
        for c, dst, dt in ((1, pb, np.int8), (2, pk, np.uint64), (3, po, np.int64)):
            if rb.num_rows:
                dst.append(np.frombuffer(binary_values(rb.column(c)), dtype=dt))
    shared = largest = over = 0
    nparts = len(targets)
    packed = np.empty(0, dtype=np.uint64)
    if pb:
        b, k, o = np.concatenate(pb), np.concatenate(pk), np.concatenate(po)
        del pb, pk, po
        # most triples are alone in their bucket, and a triple whose key no other triple has
        # certainly is: one sort by key finds the rest, which alone get the exact sort
        order = np.argsort(k)
        ks = k[order]
        shared_key = np.zeros(ks.size, dtype=bool)
        eq = ks[1:] == ks[:-1]
        shared_key[1:] |= eq
        shared_key[:-1] |= eq
        sel = order[shared_key]
        del order, ks, eq, shared_key
        b, k, o = b[sel], k[sel], o[sel]
        order = np.lexsort((o, k, b))
        b, k, o = b[order], k[order], o[order]
        del order
        n = o.size
        new = np.ones(n, dtype=bool)
        new[1:] = (b[1:] != b[:-1]) | (k[1:] != k[:-1])
        del b, k
        starts = np.flatnonzero(new)
        sizes = np.diff(np.append(starts, n))
        multi = sizes >= 2
        shared = int(multi.sum())
        largest = int(sizes[multi].max(initial=0))
        over = int(np.count_nonzero(sizes > window))
        keep = np.repeat(multi, sizes)
        gid = np.cumsum(new)[keep]
        o = o[keep]
        if o.size and int(o.max()) >= 2**32:
            raise RuntimeError("the Spark engine's candidate pairs hold ordinals below 2**32")
        pieces = []
        for d in range(1, window):
            if d >= o.size:
                break
            same = gid[d:] == gid[:-d]
            if not same.any():
                break  # no bucket is longer than d, so none is longer than d + 1
            pieces.append((o[:-d][same].astype(np.uint64) << np.uint64(32)) | o[d:][same].astype(np.uint64))
        if pieces:
            packed = np.unique(np.concatenate(pieces))
    parts = ((packed >> np.uint64(32)) % np.uint64(nparts)).astype(np.int64)
    order = np.argsort(parts, kind="stable")
    cuts = np.searchsorted(parts[order], np.arange(nparts + 1))
    out_part, out_pairs = [-1], [b""]
    for p in range(nparts):
        if cuts[p + 1] > cuts[p]:
            out_part.append(targets[p])
            out_pairs.append(packed[order[cuts[p] : cuts[p + 1]]].tobytes())
    zeros = [0] * (len(out_part) - 1)
    yield pa.RecordBatch.from_arrays([pa.array(out_part, pa.int32()), pa.array(out_pairs, pa.binary()),
                                      pa.array([shared] + zeros, pa.int64()), pa.array([largest] + zeros, pa.int64()),
                                      pa.array([over] + zeros, pa.int64())],
                                     names=["part", "pairs", "shared", "largest", "over"])


def distinct_pairs(batches):
    """A partition's packed pairs (each pair's copies all here) -> distinct ``(a, b)`` rows."""
    import pyarrow as pa

    got = [np.frombuffer(binary_values(rb.column(0)), dtype=np.uint64) for rb in batches if rb.num_rows]
    if not got:
        return
    packed = np.unique(np.concatenate(got))
    step = 1 << 20
    for s in range(0, packed.size, step):
        chunk = packed[s : s + step]
        yield pa.RecordBatch.from_arrays([pa.array((chunk >> np.uint64(32)).astype(np.int64)),
                                          pa.array((chunk & np.uint64(0xFFFFFFFF)).astype(np.int64))],
                                         names=["a", "b"])


def verify_groups(batches, pairs_of, minhash: MinHashParams, floor: float | None, measure: str):
    """The documents of a shuffle partition's group of candidate pairs, ``(part, ordinal, ids)``
    (``pairs_of.value[part]``: the group's pairs ``(a, b)``) -> every pair's ``(a, b, passed,
    score, jaccard_r, estimate_r)``: the local engine's estimate filter
    (:func:`neardup.stages.candidates.estimate_filter`, ``floor`` None: all pass) and exact
    verification (:func:`neardup.stages.verify.pair_similarities`) of the pairs that pass it,
    with the shingle ids read in place from the Arrow batches and the signatures computed from
    them (:func:`neardup.stages.sketch.signatures_of_ids`: the sketch's own values)."""
    import pyarrow as pa

    from ...stages.sketch import signatures_of_ids

    part_l, ord_l, sig_l, ids_l, count_l = [], [], [], [], []
    for rb in batches:
        if rb.num_rows:
            part_l.append(rb.column(0).to_numpy().astype(np.int64))
            ord_l.append(rb.column(1).to_numpy())
            ids_l.append(u64_runs(rb.column(2)))
            count_l.append(np.diff(binary_offsets(rb.column(2))) // 8)
            sig_l.append(signatures_of_ids(ids_l[-1], run_offsets(count_l[-1]), minhash))
    if not ord_l:
        return
    part, ords, counts = np.concatenate(part_l), np.concatenate(ord_l), np.concatenate(count_l)
    offsets = run_offsets(counts)
    keyed = (part << 32) | ords  # ordinals are below 2**32 (see bucket_pairs)
    order = np.argsort(keyed, kind="stable")
    keyed = keyed[order]
    groups = pairs_of.value

    def rows_of(g: int, o: np.ndarray) -> np.ndarray:
        want = (np.int64(g) << 32) | o
        at = np.searchsorted(keyed, want)
        if not np.array_equal(keyed[np.minimum(at, keyed.size - 1)], want):
            raise RuntimeError("internal error: a candidate pair's document is missing from its group")
        return order[at]

    for g in np.unique(part).tolist():
        ga, gb = groups[g]
        est, passed, jac, score = _measured_pairs(sig_l, ids_l, offsets, counts, rows_of(g, ga), rows_of(g, gb),
                                                     floor, measure)
        yield pa.RecordBatch.from_arrays([
            pa.array(ga), pa.array(gb), pa.array(passed), pa.array(score), rounded(jac), rounded(est),
        ], names=["a", "b", "passed", "score", "jaccard_r", "estimate_r"])


def _measured_pairs(signatures, ids, offsets, counts, ia: np.ndarray, ib: np.ndarray, floor: float | None,
                    measure: str):
    """``(estimate, passed, jaccard, score)`` of the pairs ``(ia[q], ib[q])``: the local engine's
    estimate filter (:func:`neardup.stages.candidates.estimate_filter`, ``floor`` None: all pass)
    and, for the pairs that pass it, exact verification
    (:func:`neardup.stages.verify.pair_similarities`); NaN for the others. ``signatures`` and
    ``ids`` are arrays or lists of arrays read in place as their concatenation."""
    from ...stages.candidates import estimate_filter
    from ...stages.verify import passing_similarities

    _, _, est, _ = estimate_filter(signatures, ia, ib, None)
    passed = np.ones(ia.size, dtype=bool) if floor is None else est >= floor
    jac, score = passing_similarities(ids, offsets, counts, ia, ib, passed, measure)
    return est, passed, jac, score


def estimate_and_verify(batches, minhash: MinHashParams, floor: float | None, measure: str):
    """(a, b, ids_a, ids_b) -> (a, b, estimate, passed, jaccard, score, jaccard_r, estimate_r):
    :func:`_measured_pairs` of each candidate pair, the signatures computed from the ids."""
    import pyarrow as pa

    from ...stages.sketch import signatures_of_ids

    for rb in batches:
        k = rb.num_rows
        if k == 0:
            continue
        ids = [u64_runs(rb.column(c)) for c in (2, 3)]
        side_counts = [np.diff(binary_offsets(rb.column(c))) // 8 for c in (2, 3)]
        sigs = [signatures_of_ids(i, run_offsets(c), minhash) for i, c in zip(ids, side_counts)]
        counts = np.concatenate(side_counts)
        offsets = run_offsets(counts)
        est, passed, jac, score = _measured_pairs(sigs, ids, offsets, counts, np.arange(k), np.arange(k, 2 * k),
                                                     floor, measure)
        yield pa.RecordBatch.from_arrays([
            rb.column(0), rb.column(1), pa.array(est), pa.array(passed), pa.array(jac), pa.array(score),
            rounded(jac), rounded(est),
        ], names=["a", "b", "estimate", "passed", "jaccard", "score", "jaccard_r", "estimate_r"])


def _overlap_sims(ids_a: list, ids_b: list) -> dict:
    """Exact similarities of pairs of sorted distinct shingle-id runs (bytes), as locally."""
    from ...stages.verify import pair_similarities, runs_of

    k = len(ids_a)
    ids, offsets, counts = runs_of(ids_a + ids_b)
    return pair_similarities(ids, offsets, counts, np.arange(k), np.arange(k, 2 * k))


def member_sims(batches, measure: str, threshold: float, chain: bool):
    """(ordinal, ids_lo, ids_hi) -> (ordinal, similarity to survivor rounded to 6 places, chained)."""
    import pyarrow as pa

    for rb in batches:
        if rb.num_rows == 0:
            continue
        sims = _survivor_sims(rb, measure)
        yield pa.RecordBatch.from_arrays([
            rb.column(0), rounded(sims), pa.array([chain and x < threshold for x in sims.tolist()], type=pa.bool_()),
        ], names=["ordinal", "sim", "chained"])


def _survivor_sims(rb, measure: str) -> np.ndarray:
    """The similarity to its survivor of each row ``(ordinal, ids_lo, ids_hi)``, unrounded, as the
    local :func:`~neardup.stages.survivors.similarity_to_survivors` gives it."""
    return np.asarray(score_of(_overlap_sims(rb.column(1).to_pylist(), rb.column(2).to_pylist()), measure),
                      dtype=np.float64)


def jsonl_lines(batches, ctx: dict):
    """(line, file, block) -> (ordinal, record): the original lines, for the kept corpus."""
    import pyarrow as pa

    bases = ctx["blocks"]
    seen: dict = {}
    for rb in batches:
        lines = rb.column(0).to_pylist()
        files = rb.column(1).to_pylist()
        blocks = rb.column(2).to_pylist()
        ords = []
        for f, blk in zip(files, blocks):
            key = (f, blk)
            k = seen.get(key, 0)
            seen[key] = k + 1
            ords.append(bases[key][0] + k)
        recs = [ln[:-1] if ln[-1:] == b"\r" else ln for ln in lines]
        yield pa.RecordBatch.from_arrays([pa.array(ords, type=pa.int64()),
                                          pa.array([r.decode("utf-8", "replace") for r in recs], type=pa.string())],
                                         names=["ordinal", "record"])


def pair_scores(batches, measure: str):
    """(q, ids_a, ids_b) -> (q, jaccard, score): the exact similarity of each pair of documents, as
    the local :func:`~neardup.stages.verify.pair_similarities` gives it, and its score by ``measure``."""
    import pyarrow as pa

    for rb in batches:
        if rb.num_rows:
            sims = _overlap_sims(rb.column(1).to_pylist(), rb.column(2).to_pylist())
            yield pa.RecordBatch.from_arrays([
                rb.column(0), pa.array(np.asarray(sims["jaccard"], dtype=np.float64)),
                pa.array(np.asarray(score_of(sims, measure), dtype=np.float64)),
            ], names=["q", "jaccard", "score"])


def scores_on_executors(spark, sketched, oa: np.ndarray, ob: np.ndarray, measure: str) -> np.ndarray:
    """Called on the driver: the exact similarity by ``measure`` of each pair of documents
    ``(oa[q], ob[q])`` (ordinals), in that order, measured on the executors on the shingle ids of
    ``sketched`` (ordinal, ids). Only the pairs' documents are read: a broadcast semi-join (one
    scan of the sketch table), joined to both ends of each pair."""
    import functools

    import pyarrow as pa
    from pyspark.sql import functions as F

    wanted = spark.createDataFrame(pa.table({"q": np.arange(oa.size, dtype=np.int64), "a": oa, "b": ob}))
    ends = spark.createDataFrame(pa.table({"ordinal": np.union1d(oa, ob)}))
    ids_of = sketched.select("ordinal", "ids").join(F.broadcast(ends), "ordinal", "left_semi")
    joined = (wanted.join(ids_of.withColumnRenamed("ordinal", "a").withColumnRenamed("ids", "ia"), "a")
              .join(ids_of.withColumnRenamed("ordinal", "b").withColumnRenamed("ids", "ib"), "b")
              .select("q", "ia", "ib"))
    got = joined.mapInArrow(functools.partial(pair_scores, measure=measure),
                            "q long, jaccard double, score double").toArrow().sort_by("q")
    if got.num_rows != oa.size:
        raise RuntimeError(f"internal error: {got.num_rows} similarities for {oa.size} pairs")
    return got.column("score").to_numpy(zero_copy_only=False)
