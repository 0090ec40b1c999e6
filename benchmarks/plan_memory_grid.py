#!/usr/bin/env python
"""The planner's memory model against real runs: peak anonymous memory of ``neardup dedup`` on
prefixes of benchmarks/scale.py's generated corpus (80,000 records, 5% planted copies, seed 1)
at several --in-memory-mb, sampled every 20 ms from outside (scale.run_sampled). One JSON line
a run: records, budget (MB), peak anonymous and resident MB, spill MB, candidate pairs.

    python benchmarks/plan_memory_grid.py [REPEATS]
"""

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import generate, run_sampled  # noqa: E402


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    base = Path(tempfile.mkdtemp(prefix="plan-grid-"))
    corpus = base / "corpus.jsonl"
    generate(corpus, 80_000, 0.05, 1)
    lines = corpus.read_bytes().splitlines(keepends=True)
    for _ in range(repeats):
        for n in (8000, 16000, 40000, 80000):
            path = base / f"c{n}.jsonl"
            if not path.exists():
                path.write_bytes(b"".join(lines[:n]))
            for budget in (0, 4, 16, 512):
                out = base / f"o{n}-{budget}"
                m = run_sampled([sys.executable, "-m", "neardup", "dedup", str(path), "-o", str(out), "--quiet",
                                 "--jobs", "2", "--in-memory-mb", str(budget)], every=0.02)
                s = json.loads((out / "summary.json").read_text())
                print(json.dumps({"n": n, "budget": budget, "anon": m["peak_anonymous_mb"], "rss": m["peak_rss_mb"],
                                  "spilled": s["spilled_mb"], "cand": s["candidate_pairs"]}), flush=True)


if __name__ == "__main__":
    main()
