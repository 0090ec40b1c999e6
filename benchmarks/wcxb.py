"""Main-content extraction on WCXB, the Web Content eXtraction Benchmark: news, shops, forums,
service pages, listings, collections and documentation of 1,613 real sites, side by side.

WCXB (CC-BY-4.0) is not shipped with neardup: unpack it and give its folder with ``--wcxb``
(it holds ``metadata.json``, ``evaluate.py`` and ``dev/``, ``test/`` with ``html/*.html.gz`` and
``ground-truth/*.json``). The score is WCXB's own: its ``evaluate.py`` is imported from that folder
and its ``load_ground_truth`` (page types included) and ``word_f1`` are used as they are, so the
figures are comparable with WCXB's published ones.

Every extractor gets the page's bytes and gives text (neardup decodes them itself; trafilatura
is given the bytes; resiliparse the str of its own ``bytes_to_str(detect_encoding)``, as its
documentation does). Reported per split and page type:

f1, precision, recall
    means over pages of WCXB's word-level figures;
boilerplate share
    for articles, the share of the extracted words that are not in the annotated main content
    (1 - word precision, pooled over the pages: words, not pages, are counted);
pages/s per core
    extraction alone, by the process's CPU time (what a core gives, also on a shared machine):
    the median of ``--rounds`` passes over the split's pages (3; trafilatura, at tens of pages a
    second, one), after a warm-up of 50, the extractors taking turns in each round; the ratio to
    resiliparse's is from the same run.

The test split is held out: run it only once a design is chosen (``--split test``).

Usage::

    flock /work/bench.lock python benchmarks/wcxb.py --wcxb /work/data/wcxb --split dev \\
        [--extractors neardup,neardup-whole,trafilatura,resiliparse] [--json results/wcxb.json] [--per-page out.jsonl]
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
import platform
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

TYPES = ("article", "documentation", "service", "forum", "collection", "listing", "product")


def _neardup(mode):
    from neardup.text.html import extract_text

    return lambda data: extract_text(data, mode)


def _trafilatura():
    import trafilatura

    def run(data):
        out = trafilatura.extract(data, include_comments=False, include_tables=True, output_format="txt",
                                  deduplicate=False, with_metadata=False)
        return out or ""

    return run


def _resiliparse():
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.encoding import bytes_to_str, detect_encoding
    from resiliparse.parse.html import HTMLTree

    return lambda data: extract_plain_text(HTMLTree.parse(bytes_to_str(data, detect_encoding(data))),
                                           main_content=True)


#: Extractors timed in the first round only (tens of pages a second: a round is minutes).
SLOW = frozenset({"trafilatura"})

EXTRACTORS = {
    "neardup": lambda: _neardup("main"),
    "neardup-whole": lambda: _neardup("whole"),
    "trafilatura": _trafilatura,
    "resiliparse": _resiliparse,
}


def load_evaluate(root: Path):
    spec = importlib.util.spec_from_file_location("wcxb_evaluate", root / "evaluate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def load_split(root: Path, split: str):
    """(ids, page bytes, ground truth by id) of one split."""
    ev = load_evaluate(root)
    gt = ev.load_ground_truth(split)
    ids = sorted(gt)
    pages = [gzip.decompress((root / split / "html" / f"{i}.html.gz").read_bytes()) for i in ids]
    return ids, pages, gt, ev


def _version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    pkg = name.split("-")[0]
    try:
        v = version(pkg)
    except PackageNotFoundError:
        return "?"
    if pkg == "neardup":
        from neardup.text.html import extractor_id

        return f"{v} ({extractor_id('main' if name == 'neardup' else 'whole')})"
    return v


def score(ids, texts, gt, ev) -> dict:
    per_type = defaultdict(list)
    extra = Counter()  # words extracted, words not in the truth (articles)
    for i, text in zip(ids, texts):
        ref = gt[i]["main_content"]
        p, r, f1 = ev.word_f1(text, ref)
        t = gt[i]["page_type"]
        per_type[t].append((p, r, f1))
        per_type["all"].append((p, r, f1))
        if t == "article":
            pred = Counter(ev.tokenize(text))
            truth = Counter(ev.tokenize(ref))
            extra["words"] += sum(pred.values())
            extra["outside"] += sum((pred - truth).values())
    out = {}
    for t, rows in per_type.items():
        n = len(rows)
        out[t] = {"pages": n, "f1": round(sum(r[2] for r in rows) / n, 4),
                  "precision": round(sum(r[0] for r in rows) / n, 4), "recall": round(sum(r[1] for r in rows) / n, 4)}
    if extra["words"]:
        out["article"]["boilerplate_share"] = round(extra["outside"] / extra["words"], 4)
    return out


def run(root: Path, split: str, names: list[str], per_page: str | None = None, rounds: int = 3) -> dict:
    ids, pages, gt, ev = load_split(root, split)
    extractors = {n: EXTRACTORS[n]() for n in names}
    load_before = os.getloadavg()
    texts, cpu_rates, wall_rates = {}, {n: [] for n in names}, {n: [] for n in names}
    for n, fn in extractors.items():
        for data in pages[:50]:
            fn(data)
    # The extractors take turns, round after round; a pass of one is one figure: the median
    # of the rounds is reported (one pass on a shared machine varies by a third).
    for r in range(rounds):
        for n, fn in extractors.items():
            if r and n in SLOW:
                continue  # one pass is enough to tell its order of magnitude
            cpu, wall = time.process_time(), time.perf_counter()
            out = [fn(data) for data in pages]
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            texts.setdefault(n, out)
            cpu_rates[n].append(len(pages) / cpu)
            wall_rates[n].append(len(pages) / wall)
    speed = {n: {"pages_per_s": round(statistics.median(cpu_rates[n]), 1),
                 "pages_per_s_wall": round(statistics.median(wall_rates[n]), 1),
                 "pages_per_s_rounds": [round(x, 1) for x in cpu_rates[n]]} for n in names}
    load_after = os.getloadavg()
    result = {
        "benchmark": "wcxb", "split": split, "pages": len(ids), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
                    "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in load_after]},
        "extractors": {},
    }
    for n in names:
        entry = {"version": _version(n), **speed[n], "scores": score(ids, texts[n], gt, ev)}
        if "resiliparse" in speed:
            entry["speed_ratio_to_resiliparse"] = round(speed[n]["pages_per_s"] / speed["resiliparse"]["pages_per_s"], 2)
        result["extractors"][n] = entry
    if per_page:
        with open(per_page, "w") as f:
            for k, i in enumerate(ids):
                row = {"id": i, "type": gt[i]["page_type"]}
                for n in names:
                    row[n] = round(ev.word_f1(texts[n][k], gt[i]["main_content"])[2], 4)
                f.write(json.dumps(row) + "\n")
    return result


def table(result: dict) -> str:
    head = "| extractor | all | " + " | ".join(TYPES) + " | article boilerplate | pages/s, 1 core |"
    lines = [head, "| --- " * (len(TYPES) + 4) + "|"]
    for n, e in result["extractors"].items():
        s = e["scores"]
        cells = [f"{s[t]['f1']:.3f}" if t in s else "" for t in ("all",) + TYPES]
        bp = s.get("article", {}).get("boilerplate_share")
        lines.append(f"| {n} | " + " | ".join(cells) + f" | {'' if bp is None else f'{bp:.1%}'} | {e['pages_per_s']:,.0f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wcxb", default=os.environ.get("WCXB", "/work/data/wcxb"))
    ap.add_argument("--split", default="dev", choices=("dev", "test"))
    ap.add_argument("--extractors", default="neardup,neardup-whole,trafilatura,resiliparse")
    ap.add_argument("--json", default=None)
    ap.add_argument("--per-page", default=None, help="per-page F1 of each extractor, as JSON lines")
    ap.add_argument("--rounds", type=int, default=3,
                    help="timed passes of each extractor, taking turns (the median is reported; trafilatura: one)")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    root = Path(args.wcxb)
    if not (root / "evaluate.py").exists():
        print(f"no WCXB at {root}", file=sys.stderr)
        return 2
    result = run(root, args.split, args.extractors.split(","), args.per_page, args.rounds)
    print(f"WCXB {args.split}, {result['pages']} pages; load {result['machine']['load_before']} -> "
          f"{result['machine']['load_after']}")
    print(table(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
