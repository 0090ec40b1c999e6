"""``neardup evaluate``: recall and precision of a dedup run against the exact oracle."""

from __future__ import annotations

from ..cpus import available_cpus
from ._common import (add_input_list_options, add_record_options, expanded_inputs, positive_int, print_json,
                      read_options_from, unit_float)


def register(sub) -> None:
    p = sub.add_parser("evaluate", help="measure a dedup output against exact all-pairs resemblance",
                       description="Compute every pair with exact resemblance >= --floor (prefix-filtered "
                                   "all-pairs, no quadratic loop) on the same INPUT and shingling as the run "
                                   "in OUTPUT_DIR, and report pair recall by true resemblance, the precision of "
                                   "the reported edges and how far cluster members are from their survivor.")
    p.add_argument("output_dir", metavar="OUTPUT_DIR", help="the --output folder of a neardup dedup run")
    p.add_argument("inputs", nargs="*", metavar="INPUT", help="the inputs of that run (paths, globs, URLs)")
    add_input_list_options(p)
    p.add_argument("--floor", type=unit_float("--floor"), default=0.5, help="lowest resemblance of oracle pairs")
    add_record_options(p, fields=("format", "id_field", "text_field"))
    p.add_argument("--jobs", "-j", type=positive_int("--jobs"), default=None)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=evaluate_command)


def evaluate_command(args) -> int:
    from ..evaluate import evaluate_run, format_report

    read_options_from(args)  # checked before anything is read
    r = evaluate_run(args.output_dir, expanded_inputs(args), floor=args.floor, jobs=args.jobs or available_cpus(),
                     format=args.format, id_field=args.id_field, text_field=args.text_field)
    if args.json:
        print_json(r)
    else:
        print(format_report(r))
    return 0
