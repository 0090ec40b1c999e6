"""``neardup report SITE --output DIR``: how much a site repeats itself, as report.json and report.html."""

from __future__ import annotations

import sys

from ..config import InputOptions, ReportConfig
from ..options import READ_OPTIONS, REPORT_OPTIONS
from ..cpus import available_cpus
from ._common import add_minhash_options, add_options, add_shingle_options, positive_int, shingle_params_from


def register(sub) -> None:
    p = sub.add_parser(
        "report", help="measure a site: duplicates, sampled-pair Jaccard, clusters, boilerplate, figures",
        description="Measure how much the pages of a site repeat each other, on whole pages and on their main "
                    "content: exact-duplicate groups, exact Jaccard of sampled pairs, the most similar pairs with "
                    "MinHash estimates and simhash distances, near-duplicate clusters, boilerplate share, and the "
                    "seed's figures. Writes DIR/report.json, DIR/report.html (self-contained) and DIR/figures/.")
    p.add_argument("site", metavar="SITE", nargs="?",
                   help="a folder of HTML pages, a WARC file, or a JSONL file with an \"html\" or \"text\" field")
    p.add_argument("--output", "-o", required=True, metavar="DIR", help="folder for the report (created)")
    io = p.add_argument_group("input (as for dedup)")
    # the text field and what it holds: None, from the first record (InputOptions)
    add_options(io, [READ_OPTIONS[f] for f in ("format", "id_field", "text_field", "content", "max_bytes")],
                InputOptions(), helps={
                    "text_field": "JSONL/Parquet field with the page (default: html when the first record has one, "
                                  "else text)",
                    "content": "what the text field holds (default: html for the html field, else text)"})
    io.add_argument("--jobs", "-j", type=positive_int("--jobs"), default=None,
                    help="processes extracting text (default: the CPUs this process may use, from its affinity and cgroup quota)")
    # (ReportConfig's defaults: mulshift64, as the affine mod 2^61-1 family costs about 40 s per
    # million shingles in numpy)
    add_shingle_options(p, ReportConfig())
    add_minhash_options(p, ReportConfig())
    g = p.add_argument_group("report")
    add_options(g, REPORT_OPTIONS.values(), ReportConfig())
    g.add_argument("--seed-examples", action="store_true",
                   help="also reproduce the seed's worked tables and two figures from its example sentences "
                        "(SITE may then be left out)")
    p.set_defaults(handler=report_command)


def report_command(args) -> int:
    from ..errors import ConfigError
    from ..report import build_report

    if args.site is None and not args.seed_examples:
        raise ConfigError("give a SITE (folder, WARC or JSONL), or --seed-examples")
    cfg = ReportConfig(shingle=shingle_params_from(args), num_perm=args.num_perm, seed=args.seed, family=args.family,
                       sample=args.sample, threshold=args.threshold, boilerplate_fraction=args.boilerplate_fraction,
                       top=args.top, runs=args.runs)
    inputs = InputOptions(format=args.format, id_field=args.id_field, text_field=args.text_field,
                          content=args.content, max_bytes=args.max_bytes)
    jobs = args.jobs or available_cpus()
    doc = build_report(args.site, args.output, cfg, inputs=inputs, jobs=jobs, with_seed_examples=args.seed_examples,
                       log=lambda msg: print(f"neardup report: {msg}", file=sys.stderr))
    if "pages" in doc:
        w, m = doc["whole_page"], doc["main_content"]
        print(f"pages {doc['pages']}, exact-duplicate groups {len(doc['exact_duplicate_groups'])}, "
              f"sampled pairs {doc['sampled_pairs']} of {doc['total_pairs']}")
        print(f"whole page:   mean {w['mean']:.3f}  median {w['median']:.3f}  max {w['max']:.3f}  "
              f">=0.5 {w['above']['0.5']}  >=0.8 {w['above']['0.8']}  >=0.9 {w['above']['0.9']}")
        print(f"main content: mean {m['mean']:.3f}  median {m['median']:.3f}  max {m['max']:.3f}  "
              f">=0.5 {m['above']['0.5']}  >=0.8 {m['above']['0.8']}  >=0.9 {m['above']['0.9']}")
        if doc["top_pairs"]:
            t = doc["top_pairs"][0]
            est = "-" if t["minhash_estimate"] is None else f"{t['minhash_estimate']:.3f}"
            print(f"most similar: {t['a']} ~ {t['b']}: J main {t['jaccard_main']:.3f}, whole "
                  f"{t['jaccard_whole']:.3f}, MinHash {est} (expected error {t['expected_error']:.3f})")
        print(f"clusters at {args.threshold:g}: {len(doc['clusters'])} (main content), "
              f"{len(doc['whole_page_clusters'])} (whole page); boilerplate share mean "
              f"{doc['boilerplate_share']['mean']:.3f}")
    print(f"report: {args.output}/report.html")
    return 0
