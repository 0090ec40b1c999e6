#!/usr/bin/env python3
"""What "URL seen?" costs an index: bytes per document with and without the canonical URL
(schema 7, ``index add --url-field url``), for bulk writes (``index add``: URL runs) and small
writes (``check_and_add`` one document at a time: the ``docs_url`` index), in profiles default
and lean; and the time of ``index add`` both ways.

Usage:
    python benchmarks/index_urls.py [--docs 200000] [--small 20000] [--ids-are-urls] [--out FILE]

The documents are ``scale.py``'s generated ones (seed 1, 5 % planted copies), each with a crawl's
URL (``https://site{n % 1000}.example.org/news/2026/{m}/story-{n}.html``, as ``url_ids.py``'s
``shared`` style), not their ids (``d123``: the index then keeps the canonical URL's text too), or,
with ``--ids-are-urls``, their ids (then only the hash). ``--small 0``: no small writes. Bytes
come from the files (``dbstat``: the ``docs`` table, ``docs_url``, the
URL runs' blocks), so they do not depend on the machine's load; times do (run it under
``flock /work/bench.lock``, and read them with the load it records).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from scale import generate  # noqa: E402


def with_urls(src: Path, dst: Path, ids_are_urls: bool) -> int:
    n = 0
    with open(src, "rb") as fh, open(dst, "wb") as out:
        for line in fh:
            record = orjson.loads(line)
            record["url"] = f"https://site{n % 1000}.example.org/news/2026/{n % 12 + 1:02d}/story-{n}.html"
            if ids_are_urls:
                record["id"] = record["url"]
            out.write(orjson.dumps(record) + b"\n")
            n += 1
    return n


def parts(db: str) -> dict:
    conn = sqlite3.connect(db)
    pages = dict(conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"))
    blocks = dict(conn.execute("SELECT kind, sum(length(data)) FROM posting_blocks GROUP BY kind"))
    run_pages = pages.get("posting_blocks", 0) + pages.get("posting_runs", 0)
    out = {"file": os.path.getsize(db), "docs_table": pages.get("docs", 0), "docs_url_index": pages.get("docs_url", 0),
           # the run tables' pages shared out by each kind's block bytes (kind 4: URL runs)
           "url_runs": round(run_pages * blocks.get(4, 0) / max(1, sum(blocks.values())))}
    conn.close()
    return out


def index_add(corpus: Path, db: str, profile: str, url: bool) -> float:
    cmd = [sys.executable, "-m", "neardup", "index", "add", "--db", db, str(corpus), "--profile", profile]
    if url:
        cmd += ["--url-field", "url"]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t0


def small_writes(corpus: Path, db: str, profile: str, n: int, url: bool) -> float:
    from neardup.store import SeenIndex

    t0 = time.perf_counter()
    with SeenIndex(db, profile=profile) as index, open(corpus, "rb") as fh:
        for k, line in enumerate(fh):
            if k == n:
                break
            record = orjson.loads(line)
            index.check_and_add(record["id"], record["text"], url=record["url"] if url else None)
    return time.perf_counter() - t0


def per_doc(a: dict, b: dict, n: int) -> dict:
    return {k: round((b[k] - a[k]) / n, 1) for k in a}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=200_000)
    ap.add_argument("--small", type=int, default=20_000)
    ap.add_argument("--ids-are-urls", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    load = os.getloadavg()
    result: dict = {"docs": args.docs, "small_writes": args.small, "ids_are_urls": args.ids_are_urls}
    with tempfile.TemporaryDirectory(prefix="neardup-index-urls-") as tmp:
        plain = Path(tmp) / "plain.jsonl"
        generate(plain, args.docs, 0.05, 1)
        corpus = Path(tmp) / "urls.jsonl"
        n = with_urls(plain, corpus, args.ids_are_urls)
        result["docs"] = n
        for profile in ("default", "lean"):
            row: dict = {}
            sizes, times = {}, {}
            for url in (False, True):
                db = os.path.join(tmp, f"{profile}-{url}.db")
                times[url] = index_add(corpus, db, profile, url)
                sizes[url] = parts(db)
            row["bulk"] = {"bytes_per_document_without": round(sizes[False]["file"] / n, 1),
                           "bytes_per_document_with": round(sizes[True]["file"] / n, 1),
                           "added_bytes_per_document": per_doc(sizes[False], sizes[True], n),
                           "index_add_seconds": {"without": round(times[False], 2), "with": round(times[True], 2)}}
            result[profile] = row
            if not args.small:
                continue
            sizes, times = {}, {}
            for url in (False, True):
                db = os.path.join(tmp, f"small-{profile}-{url}.db")
                times[url] = small_writes(corpus, db, profile, args.small, url)
                sizes[url] = parts(db)
            row["small"] = {"bytes_per_document_without": round(sizes[False]["file"] / args.small, 1),
                            "bytes_per_document_with": round(sizes[True]["file"] / args.small, 1),
                            "added_bytes_per_document": per_doc(sizes[False], sizes[True], args.small),
                            "check_and_add_seconds": {"without": round(times[False], 2),
                                                      "with": round(times[True], 2)}}
    result["load_at_start"], result["load_at_end"] = load, os.getloadavg()
    print(json.dumps(result, indent=2))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=2)
            fh.write("\n")


if __name__ == "__main__":
    main()
