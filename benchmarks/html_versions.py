"""Dedup of one manual in two released versions: recall, edge precision and trap rate across templates.

The same manual shipped twice, by two releases of its package, is the real case of "one site under
two templates" (a site and its older mirror): most pages keep their main content, while the
generator's version, the navigation and the furniture around it move. The manual here is
libstdc++'s (a DocBook manual and a Doxygen API reference), from ``libstdc++-11-doc`` and
``libstdc++-12-doc``. The two packages conflict, so the older one is unpacked, not installed::

    apt-get download libstdc++-11-doc && dpkg-deb -x libstdc++-11-doc_*.deb /tmp/v11
    python benchmarks/html_versions.py --old /tmp/v11/usr/share/doc/gcc-11-base/libstdc++ \\
        --new /usr/share/doc/libstdc++-12-doc/libstdc++ [--per-generator 1000] [--json out.json]

Pages: every DocBook page found in both versions, and a deterministic sample of the Doxygen pages
found in both (ranked by a hash of the path). The truth is each generator's own main-content
markup (the selectors of ``benchmarks/build_html_set.py``, never shown to the extractors), and the
scores are those of ``benchmarks/html_quality.py`` (recall at J_main >= 0.85, edge precision at
J_main >= 0.75, traps: whole J >= 0.8 and main J < 0.5), overall, per generator and over the pairs
that cross the two versions.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from build_html_set import GENERATORS, all_pairs, truth_views  # noqa: E402
from html_quality import EXTRACTORS, _version, dedup, rates, score  # noqa: E402

#: folder of the manual -> generator of build_html_set.py whose truth selectors apply
PARTS = {"manual": "docbook", "user": "doxygen"}


def common_pages(old: Path, new: Path, part: str, limit: int | None) -> list[str]:
    names = sorted(set(os.listdir(old / part)) & set(os.listdir(new / part)))
    names = [n for n in names if n.endswith(".html")]
    if limit is not None and len(names) > limit:
        ranked = sorted(names, key=lambda n: hashlib.sha1(f"neardup-html-versions-1:{part}/{n}".encode()).hexdigest())
        names = sorted(ranked[:limit])
    return [f"{part}/{n}" for n in names]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old", required=True, help="the older release's libstdc++ documentation folder")
    ap.add_argument("--new", required=True, help="the newer release's libstdc++ documentation folder")
    ap.add_argument("--per-generator", type=int, default=1000, help="Doxygen pages sampled (DocBook: all)")
    ap.add_argument("--extractors", default="neardup,neardup-whole,trafilatura,resiliparse")
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args(argv)

    import numpy as np

    from neardup.params import ShingleParams
    from neardup.shingle import shingle_ids
    from neardup.text.html import decode_html

    roots = {"old": Path(args.old), "new": Path(args.new)}
    labels, raw = [], []
    for part, gen in PARTS.items():
        limit = None if gen == "docbook" else args.per_generator
        for rel in common_pages(roots["old"], roots["new"], part, limit):
            for tag, root in roots.items():
                raw.append((root / rel).read_bytes())
                labels.append({"id": f"{tag}/{rel}", "generator": gen, "held_out": False,
                               "truth_select": GENERATORS[gen][2], "truth_drop": GENERATORS[gen][3]})
    sp5 = ShingleParams(k=5)
    mains, wholes = [], []
    for rec, data in zip(labels, raw):
        m, w, _ = truth_views(data, rec["truth_select"], rec["truth_drop"])
        mains.append(np.asarray(shingle_ids(m, sp5)))
        wholes.append(np.asarray(shingle_ids(w, sp5)))
    jm, jw = all_pairs(mains), all_pairs(wholes)
    ids = [r["id"] for r in labels]
    pairs = {}
    for i in range(len(ids)):
        for j in range(i + 1, len(ids)):
            if jm[i, j] >= 0.3 or jw[i, j] >= 0.3:
                a, b = sorted((ids[i], ids[j]))
                pairs[(a, b)] = (float(jm[i, j]), float(jw[i, j]))
    cross = {k: v for k, v in pairs.items() if k[0].split("/")[0] != k[1].split("/")[0]}
    same_path = sum(1 for (a, b) in cross if a.split("/", 1)[1] == b.split("/", 1)[1])
    result = {"old": str(roots["old"]), "new": str(roots["new"]), "pages": len(ids),
              "pages_per_generator": {g: sum(r["generator"] == g for r in labels) for g in PARTS.values()},
              "loadavg_before": os.getloadavg(), "extractors": {}}
    htmls = [decode_html(d) for d in raw]
    for name in args.extractors.split(","):
        fn = EXTRACTORS[name]()
        texts = [fn(h) for h in htmls]
        edges, cluster = dedup(ids, texts)
        counts = score(labels, pairs, edges, cluster)
        cross_edges = [(a, b) for a, b in edges if a.split("/")[0] != b.split("/")[0]]
        res = {"version": _version(name),
               "groups": {g: rates(counts[g]) for g in ["overall", *PARTS.values()]},
               "across_versions": rates(score(labels, cross, cross_edges, cluster)["overall"])}
        result["extractors"][name] = res
    result["loadavg_after"] = os.getloadavg()
    result["pairs_across_versions_same_path"] = same_path

    print(f"{len(ids)} pages ({result['pages_per_generator']}), two releases")
    print("| group | extractor | recall (J_main>=0.85) | edge precision (J_main>=0.75) | trap rate |")
    print("| --- | --- | ---: | ---: | ---: |")
    for g in ["overall", "across_versions", *PARTS.values()]:
        for name, res in result["extractors"].items():
            r = res["across_versions"] if g == "across_versions" else res["groups"][g]

            def fmt(v, n):
                return "-" if v is None else f"{v:.3f} ({n})"

            trap = "-" if r["trap_rate"] is None else f"{100 * r['trap_rate']:.1f} % ({r['traps']})"
            print(f"| {g} | {name} | {fmt(r['recall'], r['pos'])} | {fmt(r['edge_precision'], r['edges'])} | {trap} |")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
