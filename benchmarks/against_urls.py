"""What URL identity costs a run against an index: ``neardup dedup NEW --against INDEX`` with and
without ``--url-field url``, beside ``dedup NEW`` with and without it, on benchmarks/changes.py's
generated crawls (OLD: ``--pages`` pages; NEW: OLD's planted mix, 86% of it under OLD's URLs).

    flock /work/bench.lock python benchmarks/against_urls.py --pages 100000 [--jobs 2] [--turns 2] [--out FILE]

INDEX is OLD saved by ``dedup OLD --url-field url --save-index INDEX``. The four runs of NEW go in
turn, ``--turns`` times (alternated, so that a change of the machine's load falls on all of them),
and the look-up itself is timed alone: NEW's canonical URLs, hashed, found in the index by
:meth:`neardup.SeenIndex.url_numbers` (one batch), as the run does.
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

import orjson

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from changes import busiest, generate  # noqa: E402 - the generated crawls of benchmarks/changes.py

from neardup.config import DedupConfig  # noqa: E402
from neardup.store import SeenIndex  # noqa: E402
from neardup.store.schema import url_hash_of  # noqa: E402
from neardup.urls import url_key  # noqa: E402


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr[-3000:]}")
    return time.perf_counter() - t0


def lookup_seconds(db: str, new: str) -> dict:
    """NEW's canonical URLs looked up in the index as the run does, timed apart from the rest."""
    with open(new, "rb") as fh:
        urls = [orjson.loads(line)["url"] for line in fh]
    config = DedupConfig(content="html", text_field="html", url_field="url")
    t0 = time.perf_counter()
    keys = sorted({url_key(u, config.rules_of_urls()) for u in urls})
    canonical_s = time.perf_counter() - t0
    hashes = [url_hash_of(k) for k in keys]
    with SeenIndex(db, create=False) as index:
        with index._read() as conn:
            t0 = time.perf_counter()
            found = index.url_numbers(conn, hashes)
            lookup_s = time.perf_counter() - t0
    return {"urls": len(keys), "found": len(found), "canonical_form_seconds": round(canonical_s, 3),
            "lookup_seconds": round(lookup_s, 3), "lookup_us_per_url": round(1e6 * lookup_s / max(1, len(keys)), 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=100000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--turns", type=int, default=2)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    load = os.getloadavg()
    others = busiest()
    neardup = [sys.executable, "-m", "neardup", "dedup"]
    read = ["--content", "html", "--text-field", "html", "--jobs", str(args.jobs), "--no-kept", "--quiet"]
    with tempfile.TemporaryDirectory(prefix="neardup-against-urls-") as tmp:
        crawl = generate(tmp, args.pages)
        db = os.path.join(tmp, "old.db")
        save_s = timed([*neardup, crawl["old"], "-o", os.path.join(tmp, "saved"), "--url-field", "url",
                        "--save-index", db, *read])
        runs = {"dedup": [], "dedup --url-field": [], "against": ["--against", db],
                "against --url-field": ["--against", db]}
        seconds: dict = {name: [] for name in runs}
        summaries: dict = {}
        for turn in range(args.turns):
            for name, extra in runs.items():
                out = os.path.join(tmp, f"{name.replace(' ', '')}-{turn}")
                urls = ["--url-field", "url"] if "--url-field" in name else []
                seconds[name].append(round(timed([*neardup, crawl["new"], "-o", out, *extra, *urls, *read]), 2))
                with open(os.path.join(out, "summary.json"), encoding="utf-8") as fh:
                    summaries[name] = json.load(fh)
        lookup = lookup_seconds(db, crawl["new"])
        figures = {name: {k: s.get(k) for k in ("input", "kept", "exact_duplicates", "near_duplicates",
                                                "url_duplicates", "canonical_duplicates", "index")}
                   | {"stage_seconds": s["seconds"]} for name, s in summaries.items()}
    result = {"pages_old": args.pages, "jobs": args.jobs, "turns": args.turns, "save_index_seconds": round(save_s, 2),
              "seconds": seconds, "best_seconds": {k: min(v) for k, v in seconds.items()},
              "url_lookup": lookup, "runs": figures,
              "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load_at_start": load,
                          "load_at_end": os.getloadavg(), "busiest_at_start": others, "busiest_at_end": busiest()}}
    print(json.dumps(result, indent=2))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=2)
            fh.write("\n")


if __name__ == "__main__":
    main()
