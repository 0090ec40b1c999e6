"""Main-content extraction on trafilatura's evaluation pages: 990 news, blog, magazine,
government and company pages in German, English, French, Polish, Chinese and other languages,
each annotated with up to six passages the main text must hold ("with") and up to six it must
not ("without": menus, footers, bylines, share bars, comments), side by side.

The pages and their annotations are not shipped with neardup: they are in trafilatura's
repository (Apache-2.0), ``tests/eval``, ``tests/cache`` and ``tests/evaldata.json``; give its
``tests`` folder with ``--data``. The score is trafilatura's own: its ``tests/eval_common.py`` is
imported from that folder, and each page is read and counted by its ``read_corpus`` and
``count_item`` (a passage is found when it is a substring of the text, white space collapsed
in both), pooled over the pages by its ``ConfusionMatrix``: precision, recall, accuracy and F1
of passages, not of words. Trafilatura was developed on these pages: its figure is what a
tool tuned to them scores, and the set is development data for every other extractor.

Every extractor gets the page's bytes, as in ``benchmarks/wcxb.py`` (the same extractors and
settings); pages/s per core is the median of ``--rounds`` passes by the process's CPU time,
the extractors taking turns; trafilatura is timed in the first round only.

Usage::

    flock /work/bench.lock python benchmarks/trafilatura_eval.py --data <trafilatura>/tests \\
        [--extractors neardup,neardup-whole,trafilatura,resiliparse] [--json out.json] [--per-page out.jsonl]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from wcxb import EXTRACTORS, SLOW, _version  # noqa: E402  (the same extractors and settings)


def load_scoring(root: Path):
    """trafilatura's own scoring module, ``tests/eval_common.py``."""
    spec = importlib.util.spec_from_file_location("trafilatura_eval_common", root / "eval_common.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run(root: Path, names: list[str], per_page: str | None = None, rounds: int = 3) -> dict:
    ev = load_scoring(root)
    evaldata = ev.load_evaldata(str(root))
    ev.validate(evaldata)
    corpus = ev.read_corpus(str(root), evaldata)
    urls = sorted(corpus)
    pages = [corpus[u][1] for u in urls]
    extractors = {n: EXTRACTORS[n]() for n in names}
    load_before = os.getloadavg()
    texts, cpu_rates = {}, {n: [] for n in names}
    for fn in extractors.values():
        for data in pages[:50]:
            fn(data)
    for r in range(rounds):
        for n, fn in extractors.items():
            if r and n in SLOW:
                continue
            cpu = time.process_time()
            out = [fn(data) for data in pages]
            cpu = time.process_time() - cpu
            texts.setdefault(n, out)
            cpu_rates[n].append(len(pages) / cpu)
    load_after = os.getloadavg()
    result = {
        "benchmark": "trafilatura-eval", "pages": len(urls), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
                    "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in load_after]},
        "extractors": {},
    }
    rows = [{"file": corpus[u][0]} for u in urls]
    for n in names:
        matrix = ev.ConfusionMatrix()
        for k, u in enumerate(urls):
            counts = ev.count_item(evaldata[u], texts[n][k])
            matrix.add(counts)
            rows[k][n] = counts
        precision, recall, accuracy, f1 = matrix.scores()
        entry = {"version": _version(n), "precision": round(precision, 4), "recall": round(recall, 4),
                 "accuracy": round(accuracy, 4), "f1": round(f1, 4),
                 "counts": {"tp": matrix.tp, "fp": matrix.fp, "fn": matrix.fn, "tn": matrix.tn},
                 "pages_per_s": round(statistics.median(cpu_rates[n]), 1),
                 "pages_per_s_rounds": [round(x, 1) for x in cpu_rates[n]]}
        result["extractors"][n] = entry
    if "resiliparse" in names:
        base = result["extractors"]["resiliparse"]["pages_per_s"]
        for e in result["extractors"].values():
            e["speed_ratio_to_resiliparse"] = round(e["pages_per_s"] / base, 2)
    if per_page:
        with open(per_page, "w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
    return result


def table(result: dict) -> str:
    lines = ["| extractor | precision | recall | accuracy | F1 | pages/s, 1 core |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for n, e in result["extractors"].items():
        lines.append(f"| {n} | {e['precision']:.3f} | {e['recall']:.3f} | {e['accuracy']:.3f} | {e['f1']:.3f} | "
                     f"{e['pages_per_s']:,.0f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=os.environ.get("TRAFILATURA_EVAL", "/work/data/trafilatura-eval/tests"),
                    help="trafilatura's tests folder (evaldata.json, eval_common.py, eval/, cache/)")
    ap.add_argument("--extractors", default="neardup,neardup-whole,trafilatura,resiliparse")
    ap.add_argument("--json", default=None)
    ap.add_argument("--per-page", default=None,
                    help="per page, each extractor's (found, wrongly found, missed, rightly left out) passages, as JSON lines")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    names = args.extractors.split(",")
    unknown = [n for n in names if n not in EXTRACTORS]
    if unknown:
        ap.error(f"unknown extractor(s) {', '.join(unknown)}; known: {', '.join(EXTRACTORS)}")
    root = Path(args.data)
    if not (root / "evaldata.json").exists() or not (root / "eval_common.py").exists():
        print(f"no trafilatura evaluation data at {root} (need evaldata.json and eval_common.py)", file=sys.stderr)
        return 2
    result = run(root, names, args.per_page, args.rounds)
    print(f"trafilatura's evaluation pages, {result['pages']} pages; load {result['machine']['load_before']} -> "
          f"{result['machine']['load_after']}")
    print(table(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
