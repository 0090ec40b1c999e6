"""The Ray engine's band shuffle against Ray Data's generic groupby, on one generated corpus.

    flock /work/bench.lock python benchmarks/ray_groupby.py [--docs 200000] [--no-generic] [--note TEXT]

The corpus (benchmarks/scale.py's generator, planted duplicates 5 %, seed 1) is read and
sketched once, in this process, into the Ray engine's shard files (not timed). Then, on a local
Ray runtime of 2 CPUs, the candidate pairs of every band are found three ways, each timed from
the shard files to the set of distinct pairs on the driver:

- ``sorted_runs``: the engine's band stage (a task per band reading that band of every shard,
  the local candidate stage, a sorted run of pairs per band, merged on the driver);
- ``groupby_band_key``: Ray Data's ``groupby(["band", "key"]).map_groups`` over one row per
  (band, record), the generic way: a group per bucket, the pairs of each bucket (``--no-generic``
  leaves it out: 400 s at 20,000 documents on this machine);
- ``groupby_band``: Ray Data's ``groupby("band").map_groups`` with the local candidate stage
  per band (Ray Data's shuffle in place of the engine's).

The pairs must be the same set (buckets over the candidate stage's window aside: the generic
groupby pairs every member of a bucket; their number is stated). Results:
``benchmarks/results/ray-groupby-<date>.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--docs", type=int, default=200_000)
    p.add_argument("--no-generic", action="store_true", help="leave out groupby(['band', 'key'])")
    p.add_argument("--note", default="")
    args = p.parse_args(argv)
    import logging

    import ray
    import ray.data
    from scale import generate

    from neardup.config import DedupConfig
    from neardup.engines.ray.engine import band_task
    from neardup.engines.ray.shards import count_lines, plan_shards, sketch_shard
    from neardup.engines.ray.work import mapped
    from neardup.stages.candidates import BUCKET_WINDOW, band_candidates

    config = DedupConfig()
    bands = config.banding().bands
    result = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                          "shared": "2 cores shared with other work running at the same time (not an idle machine)"},
              "note": args.note, "docs": args.docs, "bands": bands,
              "versions": {"ray": ray.__version__, "numpy": np.__version__, "python": platform.python_version()}}
    with tempfile.TemporaryDirectory(prefix="ray-groupby-") as tmp:
        corpus = os.path.join(tmp, "corpus.jsonl")
        generate(Path(corpus), args.docs, 0.05, 1)
        shards = plan_shards([corpus], config, 64 << 20)
        line0 = 0
        prefixes = []
        for s, shard in enumerate(shards):
            shard["line0"] = line0
            line0 += count_lines(shard) if shard["start"] is not None else 0
            prefixes.append(os.path.join(tmp, f"{s:05d}"))
            sketch_shard(shard, config, prefixes[-1])
        rows = [np.asarray(mapped(p + ".rows.npy"), dtype=np.int64) for p in prefixes]
        import pyarrow.feather as feather

        counts = [feather.read_table(p + ".cols.arrow").num_rows for p in prefixes]
        bases = np.zeros(len(prefixes) + 1, dtype=np.int64)
        np.cumsum(counts, out=bases[1:])
        ords = np.concatenate([bases[s] + r for s, r in enumerate(rows)])
        sk_path = os.path.join(tmp, "sketched.npy")
        np.save(sk_path, ords)  # every sketched record (exact copies included: the same for all three)
        result["sketched"] = int(ords.size)
        result["rows_grouped"] = int(ords.size * bands)

        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
                 logging_level=logging.WARNING)
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        ctx.print_on_execution_start = False
        try:
            task = ray.remote(num_cpus=1)(band_task)
            ray.get([ray.remote(num_cpus=1)(lambda: 0).remote() for _ in range(2)])  # workers started
            timings = {}

            t = time.perf_counter()
            outs = [os.path.join(tmp, f"band-{b:03d}.npz") for b in range(bands)]
            ray.get([task.remote(prefixes, bases.tolist(), sk_path, b, 0, 1, BUCKET_WINDOW, o)
                     for b, o in enumerate(outs)])
            runs = [np.load(o)["pairs"] for o in outs]
            sorted_runs = np.unique(np.concatenate(runs))
            timings["sorted_runs"] = time.perf_counter() - t

            keys = np.concatenate([np.asarray(mapped(p + ".bands.npy")) for p in prefixes], axis=1)  # bands x n
            table = {"band": np.repeat(np.arange(bands, dtype=np.int32), ords.size),
                     "key": keys.reshape(-1).view(np.int64), "ord": np.tile(ords, bands)}

            def bucket_pairs(group: dict) -> dict:
                o = np.sort(group["ord"])
                i, j = np.triu_indices(o.size, 1)
                return {"pair": (o[i].astype(np.uint64) << np.uint64(32)) | o[j].astype(np.uint64)}

            generic = None
            if not args.no_generic:
                t = time.perf_counter()
                ds = ray.data.from_arrow(_arrow(table, 16))
                got = ds.groupby(["band", "key"]).map_groups(bucket_pairs, batch_format="numpy")
                generic = np.unique(np.concatenate([b["pair"] for b in got.iter_batches(batch_format="numpy",
                                                                                            batch_size=None)]
                                                   or [np.empty(0, np.uint64)]).astype(np.uint64))
                timings["groupby_band_key"] = time.perf_counter() - t

            t = time.perf_counter()
            ds = ray.data.from_arrow(_arrow(table, 16))

            def band_pairs(group: dict) -> dict:
                order = np.argsort(group["ord"], kind="stable")
                k, o = group["key"][order].view(np.uint64), group["ord"][order]
                ci, cj, _ = band_candidates(k.reshape(-1, 1), window=BUCKET_WINDOW)
                return {"pair": (o[ci].astype(np.uint64) << np.uint64(32)) | o[cj].astype(np.uint64)}

            got = ds.groupby("band").map_groups(band_pairs, batch_format="numpy")
            per_band = np.unique(np.concatenate([b["pair"] for b in got.iter_batches(batch_format="numpy",
                                                                                         batch_size=None)]
                                                or [np.empty(0, np.uint64)]).astype(np.uint64))
            timings["groupby_band"] = time.perf_counter() - t
        finally:
            ray.shutdown()
        result["seconds"] = {k: round(v, 2) for k, v in timings.items()}
        result["pairs"] = {"sorted_runs": int(sorted_runs.size), "groupby_band": int(per_band.size)}
        result["same_pairs"] = {"groupby_band": bool(np.array_equal(sorted_runs, per_band))}
        if generic is not None:
            result["pairs"]["groupby_band_key"] = int(generic.size)
            result["same_pairs"].update(
                groupby_band_key=bool(np.array_equal(sorted_runs, generic)),
                groupby_band_key_extra_pairs=int(np.setdiff1d(generic, sorted_runs).size),
                groupby_band_key_missing_pairs=int(np.setdiff1d(sorted_runs, generic).size))
    out = HERE / "results" / f"ray-groupby-{args.docs}-{datetime.date.today().isoformat()}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


def _arrow(table: dict, blocks: int) -> list:
    """The rows as ``blocks`` Arrow tables (Ray Data's input blocks)."""
    import pyarrow as pa

    n = table["band"].size
    cuts = np.linspace(0, n, blocks + 1).astype(np.int64)
    return [pa.table({k: v[a:b] for k, v in table.items()}) for a, b in zip(cuts[:-1], cuts[1:])]


if __name__ == "__main__":
    sys.exit(main())
