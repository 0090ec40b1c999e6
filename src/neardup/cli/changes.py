"""``neardup changes``: what changed between two crawls, per canonical URL."""

from __future__ import annotations

import dataclasses
import sys
import time

from ..config import DedupConfig
from ..io.read.reader import ON_ERROR
from ..options import DEDUP_OPTIONS
from ._common import (add_minhash_options, add_options, add_record_options, add_shingle_options, add_url_options,
                      check_url_field, minhash_params_from, positive_int, shingle_params_from, url_rules_from,
                      url_rules_given)


def register(sub) -> None:
    p = sub.add_parser(
        "changes", help="compare two crawls: which pages are new, gone, unchanged, changed only in their template, "
                        "changed (by how much) or moved",
        description="Compare crawl OLD with crawl NEW (each a file, folder or glob that 'neardup dedup' reads; "
                    "several with --old/--new) per canonical URL, on the pages' main content, and write into "
                    "--output DIR: changes.jsonl (one line per URL: url, status new|gone|unchanged|template|changed|"
                    "moved, similarity, old_id, new_id), summary.json (counts, the most-changed pages) and "
                    "changes.html (the largest changes as word diffs).")
    p.add_argument("old", metavar="OLD", help="the earlier crawl, or an index of it made by 'neardup index add "
                                              "--url-field' (then compared without reading its records again; "
                                              "see docs/changes.md for what can be told from an index)")
    p.add_argument("new", metavar="NEW", help="the later crawl")
    p.add_argument("--output", "-o", required=True, metavar="DIR", help="output folder (created if missing)")
    add_options(p, [DEDUP_OPTIONS["threshold"], DEDUP_OPTIONS["measure"]], DedupConfig(), helps={
        "threshold": "the similarity at which a gone page's content found under a new URL counts as moved "
                     "(default {default})",
        "measure": "what --threshold applies to: resemblance (default) or containment either way round"})
    p.add_argument("--top", type=positive_int("--top"), default=20,
                   help="the most-changed pages listed in summary.json and shown in changes.html (default 20)")
    urls = p.add_argument_group("URLs")
    add_url_options(urls)
    io = p.add_argument_group("input")
    add_record_options(io)
    io.add_argument("--on-error", choices=ON_ERROR, default="error",
                    help="a file that cannot be read: stop (default) or skip it")
    add_shingle_options(p, DedupConfig())
    add_minhash_options(p, DedupConfig())
    run = p.add_argument_group("run")
    run.add_argument("--jobs", "-j", type=positive_int("--jobs"), default=None,
                     help="threads and extraction processes (default: the CPUs this process may use)")
    run.add_argument("--quiet", "-q", action="store_true", help="no summary on standard error")
    p.set_defaults(handler=changes_command)


def changes_command(args) -> int:
    from ..cpus import available_cpus
    from ..engines.changes import detect_changes
    from ..io.read.sources import expand_inputs
    from ..text.html import extractor_id

    config = DedupConfig(shingle=shingle_params_from(args), minhash=minhash_params_from(args),
                         threshold=args.threshold, measure=args.measure, format=args.format, id_field=args.id_field,
                         text_field=args.text_field, content=args.content, html=args.html, max_bytes=args.max_bytes)
    config = dataclasses.replace(config, extraction=extractor_id(config.html))
    check_url_field(args)
    old, new = expand_inputs([args.old], None), expand_inputs([args.new], None)
    from ..io.write.outputs import is_url

    if is_url(args.output):
        from ..errors import ConfigError

        raise ConfigError(f"--output {args.output}: neardup changes writes to a local folder only (yet); copy the "
                          "folder afterwards")
    for path in new:
        if _is_index(path):
            from ..errors import ConfigError

            raise ConfigError(f"{path} is a neardup index: NEW must be a crawl's records (OLD may be an index)")
    index = len(old) == 1 and _is_index(old[0])
    if any(_is_index(path) for path in old) and not index:
        from ..errors import ConfigError

        raise ConfigError("OLD is one index or a crawl's records, not both")
    started = time.perf_counter()
    jobs = args.jobs or available_cpus()
    if index:
        from ..engines.changes_index import detect_changes_since_index

        # (the URL rules are the index's own: rules given must equal them)
        summary = detect_changes_since_index(old[0], new, args.output, config, url_field=args.url_field, jobs=jobs,
                                             top=args.top, on_error=args.on_error,
                                             rules=url_rules_from(args) if url_rules_given(args) else None)
    else:
        summary = detect_changes(old, new, args.output, config, url_field=args.url_field, rules=url_rules_from(args),
                                 jobs=jobs, top=args.top, on_error=args.on_error)
    from .. import cli

    cli.nothing_left_to_close = True  # outputs written and closed, work folder removed
    if not args.quiet:
        c = summary["counts"]
        print(f"{summary['urls']:,} URLs: " + ", ".join(f"{c[s]:,} {s}" for s in c)
              + f"; {time.perf_counter() - started:.2f} s", file=sys.stderr)
    return 0


def _is_index(path: str) -> bool:
    """Whether ``path`` is a SQLite file (a ``neardup index``), by its magic."""
    import os

    try:
        if not os.path.isfile(path):
            return False
        with open(path, "rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False
