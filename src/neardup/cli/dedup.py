"""``neardup dedup``: deduplicate a corpus into an output folder."""

from __future__ import annotations

import json
import sys

from ..config import DedupConfig, ResultOptions, keep_fields
from ..options import DEDUP_OPTIONS, RESULT_OPTIONS, SOURCE_OPTIONS
from ..params import IN_MEMORY_MB
from ._common import (add_error_options, add_input_list_options, add_minhash_options, add_options, add_record_options,
                      add_shingle_options, add_url_options, expanded_inputs, minhash_params_from, positive_int,
                      shingle_params_from, skipped_status, url_rules_from)


def register(sub) -> None:
    p = sub.add_parser(
        "dedup", help="find exact and near duplicates in a corpus and write the deduplicated corpus",
        description="Deduplicate INPUT files, folders, globs or URLs (JSONL, CSV/TSV, Parquet, Arrow, WARC, text or "
                    "HTML files, compressed with gzip, zstd, bzip2 or xz; '-' for standard input) into --output "
                    "DIR: clusters.jsonl (one line per input record), pairs.jsonl (verified edges), kept.jsonl or "
                    "kept.parquet (the deduplicated corpus; sharded and compressed as asked) and summary.json, "
                    "written last. An interrupted run resumes when run again. Exit status: 0 done, 1 done with "
                    "more skips than --max-skipped (or any, with --strict), 2 usage, 3 an input that cannot be "
                    "read, 4 an output that cannot be written.")
    p.add_argument("inputs", nargs="*", metavar="INPUT",
                   help="a file, a folder (a dataset: Spark/Hive output, shards), a glob ('crawl/*.jsonl.gz', "
                        "'data/**/*.parquet'), '-' or /dev/stdin, or a URL (s3://, gs://, hf://, https://, file://)")
    p.add_argument("--output", "-o", required=True, metavar="DIR",
                   help="output folder (created if missing) or fsspec URL (s3://bucket/dedup/, gs://..., with "
                        "pip install 'neardup[s3]' and the like); summary.json is written last, once everything "
                        "else is in place")
    add_dedup_options(p)
    resume = p.add_argument_group("resume")
    resume.add_argument("--resume", action="store_true",
                        help="continue an interrupted run on the same output (the same command again does too); "
                             "refused when the options or inputs differ from the interrupted run's, and for runs "
                             "with an index (--against, --save-index, --update-index)")
    resume.add_argument("--work-dir", default=None, metavar="DIR",
                        help="where the work folder of a URL output lives (default $TMPDIR); a local output keeps "
                             "it in OUTPUT/.neardup-work")
    p.set_defaults(handler=dedup_command)


def add_dedup_options(p) -> None:
    """The options of a dedup run (all but its inputs, --output, --resume and --work-dir): ``neardup
    plan`` takes the same ones, so that what it predicts is the run these options make."""
    add_options(p, DEDUP_OPTIONS.values(), DedupConfig())
    inc = p.add_argument_group("sources and index")
    add_options(inc, SOURCE_OPTIONS.values(), DedupConfig())
    inc.add_argument("--save-index", default=None, metavar="DB",
                     help="write the run's sketched records into the index DB (created if missing), from the "
                          "sketches the run made, for later runs --against it; with --url-field, each record's "
                          "canonical URL too (and of HTML its whole page's fingerprint), for 'neardup changes DB NEW' "
                          "and 'index query --url-field'")
    inc.add_argument("--against", default=None, metavar="INDEX",
                     help="deduplicate the inputs against the documents of INDEX: only the new records are "
                          "removed, a duplicate of an indexed document names it; with --url-field, a new record "
                          "under a URL the index holds, or claiming one its content agrees with, is a duplicate "
                          "of that page (INDEX saved with --url-field)")
    inc.add_argument("--update-index", action="store_true",
                     help="with --against: add the new sketched records to the index in the same run, in one "
                          "transaction")
    urls = p.add_argument_group("URL identity")
    add_url_options(urls, field_help=(
        "turn URL identity on, with the record's URL in field NAME (a WARC record's target URI whatever NAME; "
        "'url' for most crawls): records with the same canonical URL are one page, the survivor chosen by "
        "--keep (reason url), and a page whose <link rel=canonical> or og:url names another record whose "
        "content agrees is its duplicate, that record surviving (reason canonical); see docs/urls.md"))
    io = p.add_argument_group("input")
    add_input_list_options(io)
    add_record_options(io)
    add_error_options(p)
    add_shingle_options(p, DedupConfig())
    add_minhash_options(p, DedupConfig())
    run = p.add_argument_group("run")
    run.add_argument("--engine", choices=["local", "spark", "ray"], default="local")
    run.add_argument("--spark-master", default=None, help="Spark master URL (default local[*])")
    run.add_argument("--ray-address", default=None, metavar="ADDRESS",
                     help="--engine ray: an existing Ray cluster (host:port or ray://host:port; default a local "
                          "Ray runtime of --jobs CPUs)")
    run.add_argument("--jobs", "-j", type=positive_int("--jobs"), default=None, help="threads (default: the CPUs this process may use, from its affinity and cgroup quota)")
    run.add_argument("--no-kept", action="store_true", help="do not write the kept corpus")
    add_options(run, RESULT_OPTIONS.values(), ResultOptions())
    run.add_argument("--in-memory-mb", type=positive_int("--in-memory-mb", minimum=0), default=None, metavar="MB",
                     help="shingle ids and signatures held in memory up to this many MB; the rest spill to the "
                          f"run's work folder, memory-mapped (default {IN_MEMORY_MB})")
    run.add_argument("--quiet", "-q", action="store_true", help="no progress or summary on standard error")
    out = p.add_argument_group("output")
    out.add_argument("--output-shards", type=positive_int("--output-shards"), default=None, metavar="N",
                     help="write the kept corpus as N shards, kept-00000-of-0000N.jsonl[.gz|.zst] (or .parquet)")
    out.add_argument("--shard-size", default=None, metavar="SIZE",
                     help="write the kept corpus in shards of about SIZE each (256MB, 1GB; uncompressed records)")
    out.add_argument("--compression", choices=["auto", "zstd", "gzip", "none"], default="auto",
                     help="the kept corpus's compression: auto (default) is the input's (.jsonl.gz in, .jsonl.gz "
                          "out); Parquet keeps its codec unless one is named")


def config_from(args, *, extraction: bool = True):
    """The run's :class:`~neardup.config.DedupConfig`, which checks every option that fills it;
    ``extraction=False`` leaves out the HTML extraction, which needs the inputs' formats. The
    results' options (:class:`~neardup.config.ResultOptions`) are checked too."""
    ResultOptions(output_format=args.output_format)
    return DedupConfig(shingle=shingle_params_from(args), minhash=minhash_params_from(args), method=args.method,
                       threshold=args.threshold, measure=args.measure, bands=args.bands, rows=args.rows,
                       max_distance=args.max_distance, **keep_fields(args.keep), verify=not args.no_verify,
                       format=args.format, id_field=args.id_field, text_field=args.text_field, content=args.content,
                       html=args.html, max_bytes=args.max_bytes,
                       extraction=extraction_of(args) if extraction else None,
                       sample_mod=args.sample_mod, sample_cap=args.sample_cap, sample=args.sample,
                       sample_size=args.sample_size, source_field=getattr(args, "source_field", None),
                       url_field=getattr(args, "url_field", None),
                       url_rules=url_rules_from(args) if getattr(args, "url_field", None) else None)


def extraction_of(args) -> str | None:
    """The HTML extraction the run will use, or None when no input is read as HTML."""
    from ..io import detect_format
    from ..text.html import extractor_id

    if getattr(args, "content", "text") == "html":
        return extractor_id(args.html)
    plan = getattr(args, "plan", None)
    if plan is not None:  # the local engine's inputs, listed and sniffed once
        return extractor_id(args.html) if plan.formats() & {"html", "warc"} else None
    fmt = getattr(args, "format", "auto")
    kinds = set()
    for path in getattr(args, "inputs", ()):
        try:
            kinds.add(detect_format(path) if fmt == "auto" else fmt)
        except Exception:  # noqa: BLE001 - a bad path is reported by the reader, with its reason
            pass
    return extractor_id(args.html) if kinds & {"html", "warc"} else None


def run_options_of(args):
    """The run's options beyond its config and output (:class:`neardup.engines.common.RunOptions`),
    which each engine honours or refuses (its ``refusals.refusal``)."""
    from ..engines.common import RunOptions

    return RunOptions(inputs=tuple(args.inputs), jobs=args.jobs, in_memory_mb=args.in_memory_mb,
                      spark_master=args.spark_master, ray_address=args.ray_address, on_error=args.on_error,
                      against=args.against, save_index=args.save_index, update_index=args.update_index,
                      resume=args.resume, compression=args.compression, output_shards=args.output_shards,
                      shard_size=args.shard_size, work_dir=args.work_dir)


def dedup_command(args) -> int:
    from ..progress import Progress

    args.inputs = expanded_inputs(args)
    config_from(args, extraction=False)  # every option checked before an input is read
    if args.engine == "local":
        from ..engines.local.run import RunInputs

        # every file listed and its format sniffed once, for the config and the whole run
        args.plan = RunInputs(args.inputs, args.format)
    config = config_from(args)
    if args.engine == "ray":
        from ..engines.ray import dedup_paths as ray_dedup_paths
        from ..engines.ray.refusals import check_config as ray_check
        from ..io.write.shards import KeptLayout

        ray_check(config, run_options_of(args))
        summary = ray_dedup_paths(args.inputs, args.output, config, address=args.ray_address, jobs=args.jobs,
                                  write_kept=not args.no_kept, output_format=args.output_format,
                                  layout=KeptLayout.from_options(args), work_dir=args.work_dir, resume=args.resume)
    elif args.engine == "spark":
        from ..engines.spark.api import dedup_paths
        from ..engines.spark.refusals import check_config as spark_check, master_of

        options = run_options_of(args)
        spark_check(config, options)
        summary = dedup_paths(args.inputs, args.output, config, master=master_of(options), write_kept=not args.no_kept,
                              output_format=args.output_format)
    else:
        from ..engines.local.refusals import check_config as local_check
        from ..engines.local.run import Deduplicator
        from ..io.write.shards import KeptLayout

        # before an index is opened (--save-index creates its file)
        local_check(config, run_options_of(args))
        against, save_index = open_indexes(args, config)
        progress = Progress("dedup", enabled=None if not args.quiet else False)
        import gc

        # what the imports made (some 100,000 functions, classes and constants) is never garbage:
        # frozen, the collector's full passes no longer walk it (one such pass, which a run with an
        # index's Python objects set off, cost 12-19 ms at half the benchmark corpus)
        gc.freeze()
        try:
            in_memory_mb = IN_MEMORY_MB if args.in_memory_mb is None else args.in_memory_mb
            summary = Deduplicator(config, jobs=args.jobs, progress=progress, in_memory_mb=in_memory_mb,
                                   work_dir=args.work_dir, against=against, save_index=save_index).run(
                args.plan, args.output, write_kept=not args.no_kept, on_error=args.on_error, resume=args.resume,
                layout=KeptLayout.from_options(args), output_format=args.output_format)
        finally:
            progress.close()
            for index in (against.index if against is not None else None, save_index):
                if index is not None:
                    index.close()
        from .. import cli

        cli.nothing_left_to_close = True  # outputs written and closed, work folder removed
    if not args.quiet:
        print(describe(summary), file=sys.stderr)
    return skipped_status(args, summary["skipped"], summary["input"], ignored_files=summary.get("ignored_files") or ())


def open_indexes(args, config):
    """``(Against or None, SeenIndex or None)`` for ``--against``/``--update-index`` and ``--save-index``."""
    from ..errors import ConfigError

    if args.update_index and args.against is None:
        raise ConfigError("--update-index needs --against INDEX (the index to add the new records to)")
    if args.save_index is not None and args.against is not None:
        raise ConfigError("--save-index writes a new index from a plain run; against an index, add the new records "
                          "with --update-index")
    if args.against is None and args.save_index is None:
        return None, None
    from ..store.sqlite import SeenIndex

    if args.save_index is not None:
        # shingle ids stored: a later run --against the index verifies its pairs exactly, as a joint run does
        return None, SeenIndex.for_dedup(args.save_index, config, store_shingles=config.verify)
    from ..engines.against import Against

    index = SeenIndex.for_dedup(args.against, config, create=False)
    try:
        return Against(index, args.against, update=args.update_index, urls=config.url_field is not None), None
    except BaseException:
        index.close()
        raise


def describe(s: dict) -> str:
    c = s["clusters"]
    lines = [
        f"{s['input']:,} records: {s['kept']:,} kept ({s['unique']:,} unique), {s['exact_duplicates']:,} exact "
        f"and {s['near_duplicates']:,} near duplicates, {s['skipped']:,} skipped"
        + (f" {json.dumps(s['skipped_by_reason'])}" if s["skipped"] else ""),
        f"{c['count']:,} clusters of 2 or more ({c['documents_in_clusters']:,} documents); largest: "
        + ", ".join(f"{x['survivor']} ({x['size']})" for x in c["largest"][:3]),
        f"{s['candidate_pairs']:,} candidate pairs, {s['verified_pairs']:,} verified; "
        f"{s['seconds']['total']:.2f} s, peak memory {s['peak_memory_mb']:.0f} MB",
    ]
    for key, what in (("skipped_files", "files could not be read and were skipped"),
                      ("ignored_files", "files are not data, in a folder of data files, and were not read")):
        files = s.get(key) or []
        if files:
            shown = ", ".join(f["path"] for f in files[:3]) + (", ..." if len(files) > 3 else "")
            lines.append(f"{len(files):,} {what}: {shown} (summary.json {key})")
    if s.get("chained_members"):
        lines.append(f"{s['chained_members']:,} members are joined to their survivor only through others "
                     f"(chained, below the threshold to the survivor itself)")
    return "\n".join(lines)
