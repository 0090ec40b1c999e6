"""The ``neardup dedup`` pipeline on Ray: the local engine's stages, run shard by shard on Ray
workers, with the local engine's files as the result.

    plan ──> read + sketch (Ray Data: map_batches over the shards, an actor pool holding the
             compiled kernel; the local reader and sketch stage)
         ──> exact pass (driver: content fingerprints, the local stage)
         ──> bands (a task per band, or per band and key range: that band's keys of every shard,
             the local candidate stage; the distinct pairs of each written as a sorted run)
         ──> verify (a task per shard: the pairs whose first document is in that shard, beside
             the shard's shingle ids; estimate filter and exact similarity, the local stages)
         ──> components (large-star / small-star, a task per partition and step)
         ──> survivors, outcomes (driver, the local stages) ──> the local writers

The driver holds a few values per record (id, reason, length, keep value), as the local and
Spark engines do to write ``clusters.jsonl``; the texts, shingle ids, signatures and band keys
stay in the work folder (:mod:`.work`), written and read by the workers. Every shard of every
stage is a file there, so a run killed in any stage, started again with the same command, runs
only the shards whose file is missing; ``summary.json``'s ``ray.stages`` says how many each
stage ran and found done.

Ordinals are the local reader's (see :mod:`.shards`), and every stage is the local one on the
same values, so the outputs are the local engine's byte for byte (``tests/engines/test_ray.py``,
``tests/test_engines_agree.py``).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections import Counter

import numpy as np

from ...config import DEFAULT_RESULT_FORMAT, DedupConfig, check_result_format
from ...errors import ConfigError, require
from ..common import RunOptions, input_names
from . import components as cc
from .refusals import check_config
from .shards import ShardIds, count_lines, plan_shards, prepare_sketch, sketch_shard
from .work import WorkFolder, read_arrays, read_json, write_array, write_arrays, write_json

__all__ = ["dedup_paths", "SHARD_BYTES"]

#: Bytes of uncompressed JSONL per read-and-sketch shard (NEARDUP_RAY_SHARD_MB overrides it).
SHARD_BYTES = 64 << 20
#: Ranges cut smaller than the shard size to balance the CPUs are at least this large.
BALANCE_MIN_BYTES = 4 << 20
#: Band keys (16 bytes with their ordinal) a band task holds at most: past it a band is split by key.
BAND_TASK_BYTES = 256 << 20
WORK_NAME = ".neardup-ray-work"


def _shard_bytes() -> int:
    mb = os.environ.get("NEARDUP_RAY_SHARD_MB")
    return int(float(mb) * (1 << 20)) if mb else SHARD_BYTES


# ---------------------------------------------------------------------------------------------
# Worker-side functions (module level: Ray pickles them by reference; neardup must be importable
# on every node, with its compiled kernel)
# ---------------------------------------------------------------------------------------------


def _require_kernel(config: DedupConfig) -> None:
    from ...stages.sketch import kernel_handles

    if not kernel_handles(config.shingle):
        raise RuntimeError("neardup's compiled kernel (neardup._kernel) does not import on this Ray worker: "
                           "install neardup with its extension on every node (see docs/ray.md)")


class SketchShards:
    """A Ray Data actor: the compiled kernel loaded once, then shards read and sketched
    (:func:`~.shards.sketch_shard`) into the work folder."""

    def __init__(self, shards: list, config: DedupConfig, folder: str, need_kernel: bool):
        if need_kernel:
            _require_kernel(config)
        prepare_sketch(config)
        self.shards, self.config, self.folder = shards, config, folder

    def __call__(self, batch: dict) -> dict:
        got = [sketch_shard(self.shards[s], self.config, os.path.join(self.folder, f"{s:05d}"))
               for s in batch["shard"].tolist()]
        return {"shard": batch["shard"], "records": np.asarray(got, dtype=np.int64)}


def band_task(prefixes: list[str], bases: list[int], sk_path: str, band: int, split: int, parts: int,
               window: int, out: str) -> None:
    """The candidate pairs of one band (and key range ``key % parts == split``): every shard's
    keys of that band, the exact copies left out, in ordinal order, grouped by the local
    candidate stage; the distinct pairs ``a << 32 | b`` (ordinals) as a sorted run."""
    from ...stages.candidates import band_candidates
    from .work import mapped

    sk = np.load(sk_path)
    keys_l, ords_l = [], []
    for s, prefix in enumerate(prefixes):
        if not os.path.exists(prefix + ".bands.npy"):
            continue
        rows = mapped(prefix + ".rows.npy")
        if not rows.size:
            continue
        ords = bases[s] + np.asarray(rows, dtype=np.int64)
        keep = np.isin(ords, sk, assume_unique=True)
        keys = np.asarray(mapped(prefix + ".bands.npy")[band])[keep]
        ords = ords[keep]
        if parts > 1:
            mine = (keys % np.uint64(parts)) == np.uint64(split)
            keys, ords = keys[mine], ords[mine]
        keys_l.append(keys)
        ords_l.append(ords)
    keys = np.concatenate(keys_l) if keys_l else np.empty(0, np.uint64)
    ords = np.concatenate(ords_l) if ords_l else np.empty(0, np.int64)
    ci, cj, stats = band_candidates(keys.reshape(-1, 1), window=window)
    packed = np.unique((ords[ci].astype(np.uint64) << np.uint64(32)) | ords[cj].astype(np.uint64))
    write_arrays(out, pairs=packed, stats=np.array([stats["buckets_shared"], stats["largest_bucket"],
                                                    stats["buckets_over_window"]], dtype=np.int64))


def _measure_task(prefixes: list[str], bases: list[int], a: np.ndarray, b: np.ndarray, minhash, floor,
                  measure: str, estimate: bool, out: str) -> None:
    """Pairs of ordinals measured on their shingle ids read from the shards' files: the local
    estimate filter (``estimate``; ``floor`` None: every pair passes) and exact similarity
    (:func:`~neardup.stages.verify.passing_similarities`) of the pairs that pass. Writes
    ``a, b, estimate, passed, jaccard, score``."""
    from ...stages.candidates import estimate_filter
    from ...stages.sketch import signatures_of_ids
    from ...stages.verify import passing_similarities

    docs = np.unique(np.concatenate((a, b)))
    ids, offsets, counts = ShardIds(lambda s: prefixes[s], np.asarray(bases, dtype=np.int64)).runs(docs)
    ia, ib = np.searchsorted(docs, a), np.searchsorted(docs, b)
    est = np.full(a.size, np.nan)
    passed = np.ones(a.size, dtype=bool)
    if estimate:
        # a signature is a function of the distinct shingle ids: the sketch's own values again
        sigs = signatures_of_ids(ids, offsets, minhash)
        _, _, est, _ = estimate_filter(sigs, ia, ib, None)
        if floor is not None:
            passed = est >= floor
    jac, score = passing_similarities(ids, offsets, counts, ia, ib, passed, measure)
    write_arrays(out, a=a, b=b, estimate=est, passed=passed, jaccard=jac, score=score)


# ---------------------------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------------------------


class _Runtime:
    """The Ray runtime of a run: started here (a local one, or connected to ``address``) and
    stopped at the end, or the caller's, left as it is."""

    def __init__(self, address: str | None, jobs: int | None):
        import ray

        self.ray = ray
        self.owned = not ray.is_initialized()
        import logging

        import ray.data

        # Ray Data's progress lines are not this command's (its own progress and summary are)
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        ctx.print_on_execution_start = False
        logging.getLogger("ray.data").setLevel(logging.ERROR)
        if self.owned:
            if address is not None:
                # the workers must import this neardup: the driver's module path goes with them
                env = {"env_vars": {k: os.environ[k] for k in ("PYTHONPATH", "NEARDUP_REQUIRE_NATIVE")
                                    if k in os.environ}}
                ray.init(address=address, log_to_driver=False, runtime_env=env, logging_level=logging.WARNING)
            else:
                from ...cpus import available_cpus

                # address "local": a runtime of its own, never a cluster this machine happens to run.
                # Its workers inherit the driver's environment (module path included), and no
                # runtime_env: Ray starts workers ahead of time only for the default one, so a job
                # with env_vars waited for a new worker process at every stage (5 s measured)
                ray.init(address="local", num_cpus=jobs or available_cpus(), include_dashboard=False, log_to_driver=False,
                         logging_level=logging.WARNING)
        self.cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self.remote = {}

    def run(self, fn, calls: list) -> list:
        """``fn(*call)`` for every call, as Ray tasks of one CPU each; their results in order."""
        if not calls:
            return []
        task = self.remote.get(fn)
        if task is None:
            task = self.remote[fn] = self.ray.remote(num_cpus=1, max_retries=2)(fn)
        return self.ray.get([task.remote(*call) for call in calls])

    def info(self) -> dict:
        nodes = [n for n in self.ray.nodes() if n.get("Alive")]
        return {"version": self.ray.__version__, "nodes": len(nodes), "cpus": self.cpus}

    def close(self) -> None:
        if self.owned:
            self.ray.shutdown()


class _Stages:
    """Seconds per stage, and per stage the shards (tasks) run and found done."""

    def __init__(self):
        self.seconds: dict = {}
        self.shards: dict = {}
        self._t = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self._t
        self._t = now

    def count(self, name: str, ran: int, before: int) -> None:
        self.shards[name] = {"run": ran, "done_before": before}


def _identity(shards_inputs, config: DedupConfig, shard_bytes: int) -> dict:
    """What a work folder must match to be resumed: the options, and every input file's path,
    size and modification time."""
    from ...io.read import plan_inputs

    plan = plan_inputs(shards_inputs, config.format)
    files = []
    for path, fmt, _ in plan.leaves:
        st = os.stat(path)
        files.append([os.path.abspath(path), fmt, st.st_size, st.st_mtime_ns])
    return {"config": config.fingerprint(), "files": files, "shard_bytes": shard_bytes}


def _plan(rt: _Runtime, work: WorkFolder, inputs, config: DedupConfig, shard_bytes: int, st: _Stages) -> list[dict]:
    """The shards, with each JSONL range's first line number (its lines counted by a task each)."""
    path = os.path.join(work.path, "plan.json")
    if os.path.exists(path):
        st.count("plan", 0, 1)
        return read_json(path)
    shards = plan_shards(inputs, config, shard_bytes)
    ranged = [s for s in shards if s["start"] is not None]
    # ranges of one size, as many as a whole number of waves over the runtime's CPUs (4 of 48 MB
    # on 2 CPUs, not 64, 64 and 64, whose last would run alone), when they can be cut that small:
    # the CPUs share the sketching to its end
    waves = math.ceil(len(ranged) / rt.cpus)
    size = sum(s["stop"] - s["start"] for s in ranged)
    if ranged and size // (waves * rt.cpus) >= min(shard_bytes, BALANCE_MIN_BYTES):
        shards = plan_shards(inputs, config, math.ceil(size / (waves * rt.cpus)))
        ranged = [s for s in shards if s["start"] is not None]
    counts = rt.run(count_lines, [(s,) for s in ranged])
    seen: dict = {}
    for s, c in zip(ranged, counts):
        s["line0"] = seen.get(s["path"], 0)
        seen[s["path"]] = s["line0"] + c
    write_json(path, shards)
    st.count("plan", 1, 0)
    return shards


def _sketch(rt: _Runtime, work: WorkFolder, shards: list, config: DedupConfig, st: _Stages) -> None:
    """Ray Data over the shards not yet sketched: ``map_batches`` with an actor pool."""
    import ray

    folder = work.stage("sketch")
    todo = [s for s in range(len(shards)) if not os.path.exists(os.path.join(folder, f"{s:05d}.cols.arrow"))]
    st.count("read_and_sketch", len(todo), len(shards) - len(todo))
    if not todo:
        return
    from ...stages.sketch import kernel_handles

    ds = ray.data.from_items([{"shard": s} for s in todo], override_num_blocks=len(todo))
    got = ds.map_batches(SketchShards, fn_constructor_args=(shards, config, folder, kernel_handles(config.shingle)),
                         batch_size=1, batch_format="numpy", num_cpus=1,
                         # every actor from the start: a pool that grows from one started its
                         # second actor after the first had sketched a shard (3 s later, measured)
                         compute=ray.data.ActorPoolStrategy(size=max(1, min(rt.cpus, len(todo)))))
    done = sum(int(r["records"]) for r in got.iter_rows())
    if done < 0:  # pragma: no cover - iterating runs the pipeline
        raise RuntimeError("internal error")


def _columns(work: WorkFolder, nshards: int):
    """Every record's small columns, in ordinal order, and each shard's first ordinal."""
    import pyarrow as pa
    import pyarrow.feather as feather

    tables = [feather.read_table(work.file("sketch", f"{s:05d}.cols.arrow")) for s in range(nshards)]
    counts = [t.num_rows for t in tables]
    bases = np.zeros(nshards + 1, dtype=np.int64)
    np.cumsum(counts, out=bases[1:])
    table = pa.concat_tables(tables) if tables else None
    return table, bases


def _edges_from(work: WorkFolder, stage: str, groups: list[int]):
    got = [read_arrays(work.file(stage, f"{g:05d}.npz")) for g in groups]
    if not got:
        z = np.empty(0, np.int64)
        return z, z, np.empty(0), np.empty(0), np.empty(0, bool), np.empty(0)
    cat = {k: np.concatenate([g[k] for g in got]) for k in got[0]}
    order = np.lexsort((cat["b"], cat["a"]))
    return tuple(cat[k][order] for k in ("a", "b", "estimate", "jaccard", "passed", "score"))


def _run_measure(rt, work: WorkFolder, stage: str, prefixes, bases, a, b, config, floor, estimate, st) -> list[int]:
    """Pairs cut by the shard of their first document (co-partitioned with its shingle ids), a
    task per shard whose file is missing; returns the groups."""
    folder = work.stage(stage)
    shard_of = np.searchsorted(bases, a, side="right") - 1
    order = np.argsort(shard_of, kind="stable")
    cuts = np.searchsorted(shard_of[order], np.arange(len(prefixes) + 1))
    groups = [g for g in range(len(prefixes)) if cuts[g + 1] > cuts[g]]
    calls = []
    for g in groups:
        out = os.path.join(folder, f"{g:05d}.npz")
        if not os.path.exists(out):
            sel = order[cuts[g]:cuts[g + 1]]
            calls.append((prefixes, bases.tolist(), a[sel], b[sel], config.minhash, floor, config.measure, estimate,
                          out))
    st.count(stage, len(calls), len(groups) - len(calls))
    rt.run(_measure_task, calls)
    return groups


def _url_links(rt, work: WorkFolder, prefixes, bases, sk: np.ndarray, exact_of: dict, ids: list, urls: list,
               claims: list, config: DedupConfig, st: _Stages):
    """URL identity over the sketched records (:func:`neardup.stages.urls.url_links`), as the
    local engine finds it: an exact copy's URL stands for its first holder, and a claim agrees
    with the content when the pair's similarity (the run's measure) is at the threshold (never with
    ``--method exact``), measured by a task per shard (stage ``urls``)."""
    from ...stages.urls import copy_aliases, no_agreement, url_links

    ords = sk.tolist()
    copies = np.fromiter(exact_of.keys(), np.int64, len(exact_of))
    holders = np.fromiter(exact_of.values(), np.int64, len(exact_of))
    aliases, alias_claims = copy_aliases(copies, holders, urls.__getitem__, claims.__getitem__,
                                         {o: k for k, o in enumerate(ords)})

    def measured(a, b):
        oa, ob = sk[a], sk[b]
        groups = _run_measure(rt, work, "urls", prefixes, bases, oa, ob, config, None, False, st)
        ga, gb, _, jac, _, score = _edges_from(work, "urls", groups)
        at = np.searchsorted((ga.astype(np.uint64) << np.uint64(32)) | gb.astype(np.uint64),
                             (oa.astype(np.uint64) << np.uint64(32)) | ob.astype(np.uint64))
        return score[at] >= config.threshold

    agree = no_agreement if config.method == "exact" else measured
    return url_links([urls[o] for o in ords], [claims[o] for o in ords], agree, ids=[ids[o] for o in ords],
                     aliases=aliases, alias_claims=alias_claims)


def _dedup(rt: _Runtime, work: WorkFolder, inputs, config: DedupConfig, shard_bytes: int, st: _Stages):
    import pyarrow.compute as pc

    from ..common import VerifiedPairs, cluster_outcomes
    from ...stages.candidates import BUCKET_WINDOW, estimate_floor
    from ...stages.exact import first_holders
    from ...stages.survivors import scores_of_edges
    from ...stages.verify import Edges

    shards = _plan(rt, work, inputs, config, shard_bytes, st)
    _sketch(rt, work, shards, config, st)
    st.lap("read_and_sketch")
    prefixes = [work.file("sketch", f"{s:05d}") for s in range(len(shards))]

    stats: dict = {"candidate_pairs": 0, "estimate_filtered": 0, "verified_pairs": 0, "largest_bucket": 0,
                   "buckets_over_window": 0, "buckets_shared": 0, "spilled_bytes": 0}
    # -- exact pass: the local stage over (ordinal, fingerprint, shingle count)
    recs, bases = _columns(work, len(shards))
    n_all = int(bases[-1])
    ids = recs.column("id").to_pylist()
    reason = recs.column("reason").to_pylist()
    valid = np.flatnonzero(pc.equal(recs.column("reason"), "").to_numpy(zero_copy_only=False))
    lengths = recs.column("length").to_numpy()
    keyvals = recs.column("keyval").to_numpy() if config.keep == "field" else None
    fps, ns = recs.column("fp").to_numpy(), recs.column("n").to_numpy()
    urls = recs.column("url").to_pylist() if config.url_field is not None else None
    claims = recs.column("claim").to_pylist() if config.url_field is not None else None
    # clusters.jsonl's url (a kept "url" field), by ordinal
    page_urls = ({o: json.loads(u) for o, u in enumerate(recs.column("page_url").to_pylist()) if u is not None}
                 if "page_url" in recs.column_names else {})
    del recs
    new, _, copies = first_holders(valid.tolist(), fps[valid], ns[valid], {})
    sk = valid[new]
    exact_of = dict(copies)
    for o in exact_of:
        reason[o] = "exact"
    stats["n_shingles_total"] = int(ns[sk].sum())
    del fps, ns
    st.lap("exact_pass")

    a = b = np.empty(0, dtype=np.int64)
    jac = est = score = np.empty(0)
    if config.method == "minhash" and sk.size:
        band = config.banding()
        sk_path = work.file("", "sketched.npy")
        if not os.path.exists(sk_path):
            write_array(sk_path, sk)
        split = max(1, math.ceil(sk.size * 16 / BAND_TASK_BYTES))
        folder = work.stage("bands")
        keys = [(bd, k) for bd in range(band.bands) for k in range(split)]
        outs = [os.path.join(folder, f"{bd:03d}-{k:03d}.npz") for bd, k in keys]
        calls = [(prefixes, bases.tolist(), sk_path, bd, k, split, BUCKET_WINDOW, out)
                 for (bd, k), out in zip(keys, outs) if not os.path.exists(out)]
        st.count("bands", len(calls), len(keys) - len(calls))
        rt.run(band_task, calls)
        runs, shared, largest, over = [], 0, 0, 0
        for out in outs:
            got = read_arrays(out)
            runs.append(got["pairs"])
            s = got["stats"].tolist()
            shared, largest, over = shared + s[0], max(largest, s[1]), over + s[2]
        stats.update(buckets_shared=shared, largest_bucket=largest, buckets_over_window=over)
        # the sorted runs merged: every pair once
        packed = np.unique(np.concatenate(runs)) if runs else np.empty(0, np.uint64)
        del runs
        stats["candidate_pairs"] = int(packed.size)
        st.lap("candidates")
        if packed.size:
            ca = (packed >> np.uint64(32)).astype(np.int64)
            cb = (packed & np.uint64(0xFFFFFFFF)).astype(np.int64)
            del packed
            floor = estimate_floor(config.threshold, config.minhash.num_perm, config.measure) if config.verify else None
            groups = _run_measure(rt, work, "verify", prefixes, bases, ca, cb, config, floor, True, st)
            a, b, est, jac, passed, score = _edges_from(work, "verify", groups)
            keep = passed.copy()
            if config.verify:
                stats["estimate_filtered"] = int((~passed).sum())
                keep &= score >= float(config.threshold)
            a, b, est, jac, score = a[keep], b[keep], est[keep], jac[keep], score[keep]
        stats["verified_pairs"] = int(a.size)
        st.lap("verify")
    else:
        st.lap("candidates")

    # -- URL identity's edges beside the verified ones, connected components over both, then the
    # local survivors stage
    links = None
    ea, eb = a, b
    if config.url_field is not None:
        links = _url_links(rt, work, prefixes, bases, sk, exact_of, ids, urls, claims, config, st)
        ea, eb = np.concatenate((a, sk[links.i])), np.concatenate((b, sk[links.j]))
        del urls, claims
    comp = np.arange(sk.size, dtype=np.int64)
    if ea.size:
        nodes, label, cstats = cc.run_components(work.stage("components"), ea, eb, max(2, rt.cpus), rt.run)
        comp[np.searchsorted(sk, nodes)] = np.searchsorted(sk, label)
        st.count("components", cstats["tasks_run"], cstats["tasks_done_before"])
        st.shards["components"]["rounds"] = cstats["rounds"]
    st.lap("cluster")

    def member_similarity(survivor_local):
        members = np.flatnonzero(survivor_local != np.arange(sk.size))
        member_sims = np.full(members.size, np.nan)
        if not members.size:
            return members, member_sims
        mo, so = sk[members], sk[survivor_local[members]]
        lo, hi = np.minimum(mo, so), np.maximum(mo, so)
        # a member joined to its survivor by a verified edge has the edge's score; only the
        # others are measured, by a task per shard (stage ``members``)
        direct, at = scores_of_edges(a, b, score, lo, hi)
        member_sims[direct] = score[at[direct]]
        rest = np.flatnonzero(~direct)
        if rest.size:
            groups = _run_measure(rt, work, "members", prefixes, bases, lo[rest], hi[rest], config, None, False, st)
            ga, gb, _, _, _, gscore = _edges_from(work, "members", groups)
            want = (lo[rest].astype(np.uint64) << np.uint64(32)) | hi[rest].astype(np.uint64)
            member_sims[rest] = gscore[np.searchsorted((ga.astype(np.uint64) << np.uint64(32)) | gb.astype(np.uint64),
                                                       want)]
        return members, member_sims

    # (the components are the ones found above, over the verified and the URL edges)
    made = cluster_outcomes(ids, reason, sk, None, exact_of, keep=config.keep, lengths=lengths, keyvals=keyvals,
                            member_similarity=member_similarity,
                            chain_below=config.threshold if config.method == "minhash" else None, links=links,
                            comp=comp)
    outcome, cluster_sizes, chained = made.outcome, made.sizes, made.chained
    if links is not None:
        stats["urls_identity"] = links.stats
    skipped = Counter(r[len("skipped:"):] for r in outcome.reason if r.startswith("skipped:"))
    stats["urls"] = page_urls
    stats.update(cluster_sizes=cluster_sizes, chained=len(chained), chained_examples=chained[:20],
                 skipped=dict(sorted(skipped.items())), duplicate_ids=n_all - len(set(ids)))
    ia, ib = np.searchsorted(sk, a), np.searchsorted(sk, b)
    pairs = VerifiedPairs(Edges(ia, ib, jac, est, score), sk)
    st.lap("cluster")
    return outcome, pairs, ids, stats


def dedup_paths(inputs, output: str, config: DedupConfig = DedupConfig(), *, address: str | None = None,
                jobs: int | None = None, write_kept: bool = True, output_format: str = DEFAULT_RESULT_FORMAT,
                layout=None, work_dir: str | None = None, resume: bool = False) -> dict:
    """``neardup dedup --engine ray``: deduplicate JSONL or Parquet files into the folder
    ``output`` with the local engine's files (``clusters.jsonl``, ``pairs.jsonl``, the kept corpus,
    ``summary.json`` with ``"engine": "ray"``); returns the summary.

    ``address``: an existing Ray cluster (``ray://...`` or ``host:port``; default: the caller's
    runtime if ``ray.init`` ran, else a local runtime of ``jobs`` CPUs). The work folder
    (``work_dir`` or ``output``, in ``.neardup-ray-work``) must be on storage every node sees;
    it is removed once the outputs are written. A run killed before that, started again with the
    same arguments, keeps every finished shard (``resume=True`` refuses to start over when the
    folder belongs to other inputs or options)."""
    require("ray", "ray")
    from ...io import write_kept as write_kept_records
    from ...io.write import write_clusters, write_pairs
    from ..common import peak_memory_mb, run_summary, stage_table

    paths = list(input_names(inputs))
    check_config(config, RunOptions(inputs=tuple(paths), jobs=jobs, ray_address=address, work_dir=work_dir,
                                    resume=resume))
    check_result_format(output_format)
    output = os.fspath(output)
    if "://" in output:
        raise ConfigError("an output URL is not supported by the Ray engine (--engine ray): give a folder on "
                          "storage the driver can write")
    shard_bytes = _shard_bytes()
    identity = _identity(paths, config, shard_bytes)
    os.makedirs(output, exist_ok=True)
    if work_dir is not None:
        key = hashlib.sha256(os.path.abspath(output).encode()).hexdigest()[:16]
        work = WorkFolder(os.path.join(work_dir, f"{WORK_NAME}-{key}"))
    else:
        work = WorkFolder(os.path.join(output, WORK_NAME))
    resumed = work.start(identity, resume=resume)
    st = _Stages()
    rt = _Runtime(address, jobs)
    try:
        st.lap("runtime")
        outcome, pairs, ids, stats = _dedup(rt, work, paths, config, shard_bytes, st)
        write_clusters(output, outcome, format=output_format, urls=stats.pop("urls"))
        write_pairs(output, pairs.lines(ids), format=output_format)
        kept_info = None
        if write_kept:
            from ...cpus import available_cpus

            kept_info = write_kept_records(paths, outcome.kept, output, jobs=available_cpus(), layout=layout,
                                           **config.read_options())
        st.lap("write")
        summary = run_summary(outcome, stats, config, kept_info=kept_info, jobs=rt.cpus, seconds={})
        st.lap("summary")
        summary = {"engine": "ray", **summary}
        # the local engine's stage table; the runtime's start apart, as it is no stage of a run
        summary["seconds"] = stage_table({**st.seconds, "total": sum(v for k, v in st.seconds.items() if k != "runtime")})
        summary["peak_memory_mb"] = round(peak_memory_mb(), 1)
        summary["ray"] = {**rt.info(), "runtime_seconds": round(st.seconds.get("runtime", 0.0), 3),
                          "resumed": resumed, "stages": st.shards}
    finally:
        rt.close()
    tmp = os.path.join(output, "summary.json.part")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    work.remove()
    os.replace(tmp, os.path.join(output, "summary.json"))
    return summary
