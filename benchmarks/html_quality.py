"""Main-content extraction quality and speed on the labelled HTML set, three extractors side by side.

Reads the set that ``benchmarks/build_html_set.py`` writes (``benchmarks/data/html_set``). Every
extractor gets the same decoded page (:func:`neardup.text.html.decode_html`); its texts go
through the same dedup (neardup's ``Deduplicator``, MinHash, threshold 0.8, verified) and are
scored against the truth of the set, per generator and overall:

recall
    of the pairs whose true main contents have J >= 0.85, the share that end in one cluster;
edge precision
    of the edges the dedup reports (verified pairs), the share whose true main J >= 0.75;
trap rate
    of the *boilerplate traps*, pairs whose whole pages have J >= 0.8 but whose main contents
    have J < 0.5, the share that end in one cluster;
page agreement
    the mean, over pages, of the 5-shingle Jaccard between the extracted text and the true main
    text (how close the extraction is to the generator's own markup, pair or no pair).

Speed is extraction alone, on one core (one process, pages in set order, the decoded strings
prepared before the clock starts), as pages/s: the median of three passes, the extractors taking
turns within each round, by the process's CPU time (``pages_per_s``: what a core gives, also on
a shared machine) and by elapsed time (``pages_per_s_wall``). Run it under
``flock /work/bench.lock``; the load average before and after is recorded with the figures.

Usage::

    python benchmarks/html_quality.py [--set benchmarks/data/html_set] [--extractors neardup,trafilatura,resiliparse]
        [--json results/html_quality.json] [--no-speed] [--rounds 3] [--overall-only] [--two-templates]

``--two-templates`` also measures one site under two templates: the pages together with copies of
their true main content put into a second template made by :func:`retemplate` (recall counts a
page and its copy, J_main = 1, as a pair to find; a trap is a pair of copies whose whole pages
are near-duplicates, found by a dedup of the copies' whole texts at 0.8, with J_main < 0.5).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).parent


def _neardup(mode):
    from neardup.text.html import extract_text

    return lambda html: extract_text(html, mode)


def _trafilatura():
    import trafilatura

    def run(html):
        out = trafilatura.extract(html, include_comments=False, include_tables=True, output_format="txt",
                                  deduplicate=False, with_metadata=False)
        return out or ""

    return run


def _resiliparse():
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    return lambda html: extract_plain_text(HTMLTree.parse(html), main_content=True)


EXTRACTORS = {
    "neardup": lambda: _neardup("main"),
    "neardup-whole": lambda: _neardup("whole"),
    "neardup-article": lambda: _neardup("article"),
    "trafilatura": _trafilatura,
    "resiliparse": _resiliparse,
}


def _version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    pkg = {"neardup": "neardup", "trafilatura": "trafilatura", "resiliparse": "resiliparse"}[name.split("-")[0]]
    try:
        v = version(pkg)
    except PackageNotFoundError:
        return "?"
    if pkg == "neardup":
        try:
            from neardup.text.html import extractor_id

            return f"{v} ({extractor_id(name.split('-', 1)[1] if '-' in name else 'main')})"
        except ImportError:
            return v
    return v


def load_set(root: Path):
    labels = [json.loads(line) for line in open(root / "labels.jsonl")]
    pairs = {}
    with open(root / "pairs.tsv") as f:
        next(f)
        for line in f:
            a, b, jm, jw = line.rstrip("\n").split("\t")
            pairs[(a, b) if a < b else (b, a)] = (float(jm), float(jw))
    return labels, pairs


def page_path(root: Path, rec: dict) -> Path:
    if "file" in rec:  # the checked-in sample keeps its pages flat
        return root / rec["file"]
    return root / "pages" / f"{rec['id']}.html"


def dedup(ids: list[str], texts: list[str], threshold: float = 0.8):
    """(edges, cluster of each id) from neardup's dedup of ``texts``."""
    import orjson

    from neardup import DedupConfig, Deduplicator

    with tempfile.TemporaryDirectory(prefix="html-quality-") as tmp:
        src = os.path.join(tmp, "in.jsonl")
        with open(src, "wb") as f:
            for i, t in zip(ids, texts):
                f.write(orjson.dumps({"id": i, "text": t}) + b"\n")
        out = os.path.join(tmp, "out")
        Deduplicator(DedupConfig(threshold=threshold), jobs=1).run([src], out, write_kept=False)
        edges = []
        with open(os.path.join(out, "pairs.jsonl"), "rb") as f:
            for line in f:
                r = orjson.loads(line)
                edges.append((r["a"], r["b"]))
        cluster = {}
        with open(os.path.join(out, "clusters.jsonl"), "rb") as f:
            for line in f:
                r = orjson.loads(line)
                cluster[r["id"]] = r["cluster"] or r["id"]
    return edges, cluster


def truth_shingles(labels, root: Path) -> list:
    """The 5-shingle ids of each page's true main text (computed once for all the extractors)."""
    sys.path.insert(0, str(HERE))
    from build_html_set import truth_views

    from neardup.params import ShingleParams
    from neardup.shingle import shingle_ids

    sp5 = ShingleParams(k=5)
    return [shingle_ids(truth_views(page_path(root, rec).read_bytes(), rec["truth_select"], rec["truth_drop"])[0], sp5)
            for rec in labels]


def agreement(labels, truths: list, texts: list[str]) -> dict[str, float]:
    """Mean page agreement per group (see the module docstring)."""
    from neardup.exact.similarity import jaccard_sorted
    from neardup.params import ShingleParams
    from neardup.shingle import shingle_ids

    sp5 = ShingleParams(k=5)
    sums: dict[str, list[float]] = defaultdict(list)
    for rec, truth, text in zip(labels, truths, texts):
        j = jaccard_sorted(truth, shingle_ids(text, sp5))[0]
        for g in ("overall", "held-out" if rec["held_out"] else "developed", rec["generator"]):
            sums[g].append(j)
    return {g: round(sum(v) / len(v), 4) for g, v in sums.items()}


def score(labels, pairs, edges, cluster):
    """Counts per group: generator names, 'overall', 'developed' and 'held-out'."""
    gen = {r["id"]: r["generator"] for r in labels}
    held = {r["id"]: r["held_out"] for r in labels}
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))

    def groups(a, b):
        out = ["overall"]
        if gen[a] == gen[b]:
            out.append(gen[a])
        if held[a] and held[b]:
            out.append("held-out")
        elif not held[a] and not held[b]:
            out.append("developed")
        return out

    for (a, b), (jm, jw) in pairs.items():
        merged = cluster.get(a) is not None and cluster.get(a) == cluster.get(b)
        for g in groups(a, b):
            if jm >= 0.85:
                counts[g]["pos"] += 1
                counts[g]["pos_found"] += merged
            if jw >= 0.8 and jm < 0.5:
                counts[g]["traps"] += 1
                counts[g]["traps_merged"] += merged
    for a, b in edges:
        key = (a, b) if a < b else (b, a)
        jm = pairs.get(key, (0.0, 0.0))[0]  # pairs absent from pairs.tsv are below 0.3 on both views
        for g in groups(a, b):
            counts[g]["edges"] += 1
            counts[g]["edges_true"] += jm >= 0.75
    return counts


def rates(c) -> dict:
    def div(x, y):
        return round(x / y, 4) if y else None

    return {"recall": div(c["pos_found"], c["pos"]), "pos": c["pos"],
            "edge_precision": div(c["edges_true"], c["edges"]), "edges": c["edges"],
            "trap_rate": div(c["traps_merged"], c["traps"]), "traps": c["traps"]}


# ------------------------------------------------------------------------------------------------
# One site under two templates: every page's true main markup (the generator's own main
# elements, furniture dropped) is put into a second template, made here, with a header strip, a
# left column listing the titles of 40 other pages of the same generator as links, and a footer;
# its class names are none of the navigation vocabulary, so the extraction cannot lean on names.
# The set is then the pages and their copies: a page and its copy have the same main content
# (J_main = 1), a copy and another page the J_main of the two originals.

_TEMPLATE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title} - Library mirror</title></head>
<body><div class="upper-strip"><a href="/">Library mirror</a> <a href="/about">About</a> <a href="/new">What is new</a>
<a href="/help">Help</a> <a href="/contact">Contact</a> <span>Browse the mirrored manuals of this site by section</span></div>
<div class="layout"><div class="left-col"><div class="col-title">In this manual</div><ul>{links}</ul></div>
<div class="page-body">{main}</div></div>
<div class="lower-strip"><p>This page is a copy kept by the library mirror; the original remains with its authors.</p>
<a href="/terms">Terms</a> <a href="/privacy">Privacy</a> <a href="/mirror">Mirror status</a></div></body></html>"""


def retemplate(data: bytes, select: str, drop: str, titles: list[str]) -> bytes:
    """The page's true main markup in the second template."""
    import html as html_mod

    import lxml.html
    from lxml.cssselect import CSSSelector

    root = lxml.html.document_fromstring(data)
    mains = CSSSelector(select)(root)
    mains = [m for m in mains if not any(a in mains for a in m.iterancestors())]
    for d in (CSSSelector(drop)(root) if drop else []):
        if d.getparent() is not None:
            d.drop_tree()
    def markup(m):  # a <body> as the main element: its content (a second <body> would be ignored)
        if m.tag in ("body", "html"):
            return html_mod.escape(m.text or "") + "".join(lxml.html.tostring(c, encoding="unicode") for c in m)
        return lxml.html.tostring(m, encoding="unicode")

    main = "".join(markup(m) for m in mains)
    t = root.find(".//title")
    title = (t.text_content() if t is not None else "").strip()
    links = "".join(f'<li><a href="/p{k}">{html_mod.escape(x)}</a></li>' for k, x in enumerate(titles))
    return _TEMPLATE.format(title=html_mod.escape(title), links=links, main=main).encode("utf-8")


def two_templates(labels, pairs, root: Path, fn, threshold: float = 0.8) -> dict:
    """Recall, edge precision and trap rate of the dedup of ``fn``'s texts on the pages and
    their copies under the second template (see above)."""
    from neardup.text.html import decode_html, extract_text

    by_gen = defaultdict(list)
    for r in labels:
        by_gen[r["generator"]].append(r)
    titles = {}
    for gen, recs in by_gen.items():
        names = []
        for r in recs[:40]:
            t = extract_text(page_path(root, r).read_bytes(), "whole").split("\n", 1)[0]
            names.append(t[:80])
        titles[gen] = names
    ids, texts, copy_texts = [], [], {}
    for r in labels:
        data = page_path(root, r).read_bytes()
        ids.append(r["id"])
        texts.append(fn(decode_html(data)))
        copy = retemplate(data, r["truth_select"], r["truth_drop"], titles[r["generator"]])
        copy_texts[r["id"] + "~copy"] = fn(decode_html(copy))
    all_ids = ids + list(copy_texts)
    edges, cluster = dedup(all_ids, texts + list(copy_texts.values()), threshold)
    # the whole texts of the copies: which pairs of copies are near-duplicates as whole pages
    whole_edges, _ = dedup(list(copy_texts), [extract_text(retemplate(page_path(root, r).read_bytes(), r["truth_select"],
                                                                      r["truth_drop"], titles[r["generator"]]), "whole")
                                              for r in labels], threshold)

    def jm(a, b):
        a0, b0 = a.removesuffix("~copy"), b.removesuffix("~copy")
        if a0 == b0:
            return 1.0
        key = (a0, b0) if a0 < b0 else (b0, a0)
        return pairs.get(key, (0.0, 0.0))[0]

    pos = [(i, i + "~copy") for i in ids]
    for (a, b), (m, _w) in pairs.items():
        if m >= 0.85:
            pos += [(a, b), (a + "~copy", b), (a, b + "~copy"), (a + "~copy", b + "~copy")]
    found = sum(1 for a, b in pos if cluster.get(a) is not None and cluster.get(a) == cluster.get(b))
    true_edges = sum(1 for a, b in edges if jm(a, b) >= 0.75)
    same_main = sum(1 for a, b in pos[:len(ids)] if cluster.get(a) is not None and cluster.get(a) == cluster.get(b))
    traps = [(a, b) for a, b in whole_edges if jm(a, b) < 0.5]
    merged = sum(1 for a, b in traps if cluster.get(a) is not None and cluster.get(a) == cluster.get(b))

    def div(x, y):
        return round(x / y, 4) if y else None

    return {"pages": len(all_ids), "recall": div(found, len(pos)), "pos": len(pos),
            "page_and_copy_recall": div(same_main, len(ids)),
            "edge_precision": div(true_edges, len(edges)), "edges": len(edges),
            "trap_rate": div(merged, len(traps)), "traps": len(traps)}


def speeds(fns: dict, htmls: list[str], rounds: int = 3) -> dict[str, dict[str, float]]:
    """Pages/s of each extractor on one core, the median of ``rounds`` passes over ``htmls``,
    the extractors alternating within each round so that a change in the machine's load falls
    on all of them alike: ``wall`` (elapsed time) and ``cpu`` (this process's CPU time, what one
    core gives when the machine is shared: the figure per core)."""
    wall: dict[str, list[float]] = {name: [] for name in fns}
    cpu: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            for h in htmls:
                fn(h)
            wall[name].append(len(htmls) / (time.perf_counter() - start))
            cpu[name].append(len(htmls) / max(time.process_time() - start_cpu, 1e-9))
    med = lambda v: round(sorted(v)[len(v) // 2], 1)  # noqa: E731
    return {name: {"wall": med(wall[name]), "cpu": med(cpu[name])} for name in fns}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", default=str(HERE / "data" / "html_set"))
    ap.add_argument("--extractors", default="neardup,trafilatura,resiliparse")
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--no-speed", action="store_true")
    ap.add_argument("--rounds", type=int, default=3,
                    help="timed passes per extractor (0: time the quality pass itself, one pass)")
    ap.add_argument("--overall-only", action="store_true", help="print the overall rows only, not each generator's")
    ap.add_argument("--two-templates", action="store_true",
                    help="also dedup the pages together with copies of their main content under a second template")
    args = ap.parse_args(argv)

    from neardup.text.html import decode_html

    root = Path(args.set)
    labels, pairs = load_set(root)
    ids = [r["id"] for r in labels]
    htmls = [decode_html(page_path(root, r).read_bytes()) for r in labels]
    gens = sorted({r["generator"] for r in labels})
    held = sorted({r["generator"] for r in labels if r["held_out"]})
    result = {"set": str(root), "pages": len(labels), "bytes": sum(r["bytes"] for r in labels),
              "python": platform.python_version(), "machine": platform.machine(), "extractors": {}}
    fns = {name: EXTRACTORS[name]() for name in args.extractors.split(",")}
    truths = truth_shingles(labels, root)
    first_pass = {}
    for name, fn in fns.items():
        start, start_cpu = time.perf_counter(), time.process_time()
        texts = [fn(h) for h in htmls]
        first_pass[name] = {"wall": round(len(htmls) / (time.perf_counter() - start), 1),
                            "cpu": round(len(htmls) / max(time.process_time() - start_cpu, 1e-9), 1)}
        edges, cluster = dedup(ids, texts)
        counts = score(labels, pairs, edges, cluster)
        res = {"version": _version(name), "groups": {g: rates(counts[g]) for g in
                                                   ["overall", "developed", "held-out", *gens]}}
        for g, v in agreement(labels, truths, texts).items():
            res["groups"][g]["agreement"] = v
        if args.two_templates:
            res["two_templates"] = two_templates(labels, pairs, root, fn)
        result["extractors"][name] = res
    if not args.no_speed:
        result["load_before"] = os.getloadavg()
        measured = speeds(fns, htmls, args.rounds) if args.rounds > 0 else first_pass
        result["speed_rounds"] = args.rounds if args.rounds > 0 else "the quality pass"
        for name, v in measured.items():
            result["extractors"][name]["pages_per_s"] = v["cpu"]
            result["extractors"][name]["pages_per_s_wall"] = v["wall"]
        result["load_after"] = os.getloadavg()

    print(f"{len(labels)} pages ({result['bytes'] / 1e6:.1f} MB), {len(gens)} generators, "
          f"held out: {', '.join(held)}")
    rows = ["overall", "developed", "held-out"] + ([] if args.overall_only else gens)
    print("| group | extractor | recall (J_main>=0.85) | edge precision (J_main>=0.75) | trap rate | page agreement | pages/s per core (CPU time) |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for g in rows:
        for name, res in result["extractors"].items():
            r = res["groups"][g]

            def fmt(v, n):
                return "-" if v is None else f"{v:.3f} ({n})"

            sp = res.get("pages_per_s")
            trap = "-" if r["trap_rate"] is None else f"{100 * r['trap_rate']:.1f} % ({r['traps']})"
            print(f"| {g} | {name} | {fmt(r['recall'], r['pos'])} | {fmt(r['edge_precision'], r['edges'])} | "
                  f"{trap} | {r.get('agreement', '-')} | "
                  f"{'' if sp is None or g != 'overall' else f'{sp:,.0f}'} |")
    if args.two_templates:
        print("\nOne site under two templates (the pages and copies of their main content in a second template):")
        print("| extractor | recall (J_main>=0.85) | page and its copy found | edge precision | trap rate |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for name, res in result["extractors"].items():
            t = res["two_templates"]
            trap = "-" if t["trap_rate"] is None else f"{100 * t['trap_rate']:.1f} % ({t['traps']})"
            print(f"| {name} | {t['recall']:.3f} ({t['pos']}) | {t['page_and_copy_recall']:.3f} | "
                  f"{t['edge_precision']:.3f} ({t['edges']}) | {trap} |")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
