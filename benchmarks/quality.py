#!/usr/bin/env python3
"""Quality of neardup dedup against the exact oracle on real corpora.

For each corpus: run ``neardup dedup`` (threshold 0.8, 128 permutations, defaults otherwise),
then ``neardup evaluate`` (prefix-filtered exact all-pairs resemblance >= 0.5 on the same
shingles), and record pair recall by true resemblance, edge precision and chained members.

Corpora:
  docs      benchmarks/data/corpus.jsonl from ../shared/bench/build_corpus.py (man pages, copyright
            files, HTML manuals as text: 23,702 documents, 128 MB)
  pgsql     the PostgreSQL HTML manual installed by Debian's postgresql-doc (a folder of HTML pages,
            main content extracted by neardup itself)
  changelogs  every /usr/share/doc/*/changelog.Debian.gz and changelog.gz on this machine, one
            document each (written to benchmarks/data/changelogs.jsonl): packages built from one
            source share their changelog, and versions of a library repeat each other

Usage: python benchmarks/quality.py [--corpora docs,changelogs,pgsql]
Writes benchmarks/results/quality-<date>.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import glob
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def changelogs() -> str:
    import gzip

    dest = HERE / "data" / "changelogs.jsonl"
    if not dest.exists():
        files = sorted(glob.glob("/usr/share/doc/*/changelog.Debian.gz") + glob.glob("/usr/share/doc/*/changelog.gz"))
        with open(dest, "w", encoding="utf-8") as fh:
            for path in files:
                try:
                    text = gzip.open(path).read().decode("utf-8", "replace")
                except OSError:
                    continue
                fh.write(json.dumps({"id": path, "text": text}, ensure_ascii=False) + "\n")
    return str(dest)


def corpora() -> dict[str, list[str]]:
    pg = sorted(glob.glob("/usr/share/doc/postgresql-doc-*/html"))
    return {"docs": [str(HERE / "data" / "corpus.jsonl")], "pgsql": pg[-1:] if pg else [],
            "changelogs": [changelogs()]}


def run(name: str, inputs: list[str]) -> dict:
    out = tempfile.mkdtemp(prefix=f"neardup-quality-{name}-")
    subprocess.run([sys.executable, "-m", "neardup", "dedup", *inputs, "--output", out, "--quiet"], check=True)
    ev = subprocess.run([sys.executable, "-m", "neardup", "evaluate", out, *inputs, "--json"], check=True,
                        capture_output=True, text=True)
    summary = json.load(open(os.path.join(out, "summary.json")))
    return {"corpus": name, "inputs": inputs, "evaluation": json.loads(ev.stdout),
            "summary": {k: summary[k] for k in ("input", "kept", "exact_duplicates", "near_duplicates", "skipped",
                                                 "candidate_pairs", "verified_pairs", "chained_members", "seconds",
                                                 "peak_memory_mb", "config")}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpora", default="docs,changelogs,pgsql")
    args = ap.parse_args()
    from neardup.evaluate import format_report

    available = corpora()
    results = []
    for name in args.corpora.split(","):
        inputs = available.get(name) or []
        if not inputs or not all(os.path.exists(p) for p in inputs):
            print(f"{name}: not installed (benchmarks/build_corpus.sh installs both), skipped")
            continue
        r = run(name, inputs)
        results.append(r)
        print(f"== {name}: {' '.join(inputs)}")
        print(format_report(r["evaluation"]))
    dest = HERE / "results" / f"quality-{dt.date.today()}.json"
    dest.write_text(json.dumps({"date": str(dt.datetime.now()), "results": results}, indent=2) + "\n")
    print(f"written {dest}")


if __name__ == "__main__":
    main()
