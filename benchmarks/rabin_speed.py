"""Rabin fingerprints against XXH3 as shingle ids, in the compiled kernel, on the same shingles.

    python benchmarks/rabin_speed.py [--corpus benchmarks/data/corpus.jsonl] [--k 10] [--repeat 5]

Each round sketches the same texts once per hash (one thread, the kernel's whole path: folding,
tokens, shingle ids, sort and distinct, MinHash with the default 128 mulshift32 permutations)
and once for the shingle ids alone, alternating the hashes so that both see the same load;
reports MB/s of input text (the median over the rounds) and the ratio, per second of wall time
and per second of the process's CPU time (on a loaded machine the second is the steadier). Without --corpus, the
/usr/share/doc/*/copyright files of this machine are the texts.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import statistics
import sys
import time

from neardup import _native
from neardup.params import MinHashParams, ShingleParams


def _texts(corpus: str | None, limit_mb: float) -> list[str]:
    out, size = [], 0
    if corpus:
        with open(corpus, encoding="utf-8") as fh:
            for line in fh:
                t = json.loads(line).get("text") or ""
                out.append(t)
                size += len(t.encode())
                if size > limit_mb * 1e6:
                    break
        return out
    for path in sorted(glob.glob("/usr/share/doc/*/copyright")):
        with open(path, "rb") as fh:
            out.append(fh.read().decode("utf-8", "replace"))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus")
    ap.add_argument("--limit-mb", type=float, default=64)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    if not _native.available():
        sys.exit("the compiled kernel is not built")
    texts = _texts(args.corpus, args.limit_mb)
    mb = sum(len(t.encode()) for t in texts) / 1e6
    rounds: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}  # per second of this process's CPU time: less moved by others' load
    for _ in range(args.repeat):
        for h in ("xxh3", "rabin40", "rabin64"):
            params = ShingleParams(k=args.k, hash=h)
            t0, c0 = time.perf_counter(), time.process_time()
            _native.signatures(texts, params, MinHashParams(family="mulshift32"), jobs=1, with_ids=True)
            rounds.setdefault(f"{h} signatures", []).append(mb / (time.perf_counter() - t0))
            cpu.setdefault(f"{h} signatures", []).append(mb / (time.process_time() - c0))
            t0, c0 = time.perf_counter(), time.process_time()
            for t in texts:
                _native.shingle_ids(t, params)
            rounds.setdefault(f"{h} shingle ids", []).append(mb / (time.perf_counter() - t0))
            cpu.setdefault(f"{h} shingle ids", []).append(mb / (time.process_time() - c0))
    med = {name: statistics.median(v) for name, v in rounds.items()}
    cmed = {name: statistics.median(v) for name, v in cpu.items()}
    result = {
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                    "python": platform.python_version(), "load_avg": os.getloadavg()},
        "corpus": args.corpus or "/usr/share/doc/*/copyright", "documents": len(texts), "mb": round(mb, 1),
        "k": args.k, "repeat": args.repeat,
        "mb_per_s_median": {n: round(v, 1) for n, v in med.items()},
        "rabin40_over_xxh3": {what: round(med[f"rabin40 {what}"] / med[f"xxh3 {what}"], 3)
                              for what in ("signatures", "shingle ids")},
        "rabin64_over_xxh3": {what: round(med[f"rabin64 {what}"] / med[f"xxh3 {what}"], 3)
                              for what in ("signatures", "shingle ids")},
        "cpu_mb_per_s_median": {n: round(v, 1) for n, v in cmed.items()},
        "cpu_rabin40_over_xxh3": {what: round(cmed[f"rabin40 {what}"] / cmed[f"xxh3 {what}"], 3)
                                  for what in ("signatures", "shingle ids")},
        "cpu_rabin64_over_xxh3": {what: round(cmed[f"rabin64 {what}"] / cmed[f"xxh3 {what}"], 3)
                                  for what in ("signatures", "shingle ids")},
        "load_avg_at_end": os.getloadavg(),
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
