"""`neardup dedup` of a JSONL of HTML under two source trees, alternating: CPU of all processes and wall.

Written for the hand-off of JSONL pages to the extraction (benchmarks/results/html-handoff-2026-12-07.md):
the same command is run with ``PYTHONPATH`` set to each tree in turn (``--tree NAME=SRC``, each with its
compiled extensions built in place), round after round, and the outputs' JSONL files must be byte-identical
across all runs. ``--write`` first builds the input from WCXB's pages and ``.html`` files under folders
(as ``html_speed.py`` selects them), each record with an ``id``, a ``url`` and the page in ``html``.

    python benchmarks/html_handoff_ab.py pages.jsonl --write --wcxb /work/data/wcxb --pages /usr/share/doc \
        --max-pages 10000 --tree base=/tmp/base/src --tree branch=src --rounds 3

Run it under ``flock /work/bench.lock``: the timings are only worth something on a quiet machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from html_speed import adopt_descendants, folder_pages, median, reap_orphans, wcxb_pages  # noqa: E402


def write_jsonl(path: str, pages: list[tuple[str, bytes]]) -> None:
    import orjson

    with open(path, "wb") as fh:
        for ident, data in pages:
            rec = {"id": ident, "url": f"https://docs.example/{ident}", "html": data.decode("utf-8", "replace")}
            fh.write(orjson.dumps(rec) + b"\n")


def run(src: str, path: str, out: str, jobs: int) -> dict:
    """One ``neardup dedup`` with the package of ``src``: wall, CPU of every process, the outputs' digests."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "neardup", "dedup", path, "-o", out, "--jobs", str(jobs), "--quiet",
           "--content", "html", "--text-field", "html"]
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env={**os.environ, "PYTHONPATH": src, "NEARDUP_REQUIRE_NATIVE": "1"})
    wall = time.perf_counter() - start
    reap_orphans()  # the forkserver and its workers, counted in RUSAGE_CHILDREN (adopt_descendants)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    digests = {name: hashlib.sha256(Path(out, name).read_bytes()).hexdigest()
               for name in sorted(os.listdir(out)) if name.endswith(".jsonl")}
    summary = json.loads(Path(out, "summary.json").read_text())
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "load1": round(load, 2),
            "read_and_sketch_s": summary.get("seconds", {}).get("read_and_sketch"), "kept": summary["kept"],
            "digests": digests}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input", help="the JSONL of HTML (written first with --write)")
    ap.add_argument("--write", action="store_true", help="build the input from --wcxb and --pages")
    ap.add_argument("--wcxb", help="WCXB's folder: all its pages (dev and test)")
    ap.add_argument("--pages", action="append", default=[], help="a folder of .html files (repeatable)")
    ap.add_argument("--min-bytes", type=int, default=1024)
    ap.add_argument("--max-pages", type=int, default=None)
    ap.add_argument("--tree", action="append", required=True, help="NAME=SRC: a source tree to run (repeatable)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    if args.write:
        pages = (wcxb_pages(Path(args.wcxb)) if args.wcxb else []) + (
            folder_pages(args.pages, args.min_bytes, args.max_pages) if args.pages else [])
        write_jsonl(args.input, pages)
        print(f"wrote {len(pages)} pages, {os.path.getsize(args.input)} bytes, to {args.input}", flush=True)
    trees = dict(t.split("=", 1) for t in args.tree)
    adopt_descendants()
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory(prefix="html-handoff-") as tmp:
        for r in range(args.rounds):
            for name, src in trees.items():
                got = run(src, args.input, os.path.join(tmp, "out"), args.jobs)
                runs[name].append(got)
                print(json.dumps({"round": r + 1, "tree": name, **{k: v for k, v in got.items() if k != "digests"}}),
                      flush=True)
    digests = {json.dumps(g["digests"], sort_keys=True) for rs in runs.values() for g in rs}
    for name, rs in runs.items():
        print(f"{name}: median CPU {median([g['cpu_s'] for g in rs]):.2f} s, median wall "
              f"{median([g['wall_s'] for g in rs]):.2f} s")
    print("outputs byte-identical across all runs:", len(digests) == 1)
    return 0 if len(digests) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
