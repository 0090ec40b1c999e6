"""Helpers shared by the sub-commands: reading inputs, printing JSON, parameter options."""

from __future__ import annotations

import argparse
import json
import sys

from ..config import MAX_BYTES
from ..errors import ConfigError, InputError


def read_text(path: str, *, stdin_used: list[bool] | None = None) -> str:
    """The text of a file, or of standard input for ``-``; a missing or unreadable file and
    undecodable bytes are an InputError (exit status 3)."""
    if path == "-":
        if stdin_used is not None:
            if stdin_used[0]:
                raise ConfigError("standard input ('-') can be given only once")
            stdin_used[0] = True
        data = sys.stdin.buffer.read()
        name = "standard input"
    else:
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            raise InputError(f"no such file: {path} (check the path)") from None
        except OSError as exc:  # a folder, no permission, an I/O error: an input that cannot be read
            raise InputError(f"{path}: cannot read it: {exc.strerror or exc}") from None
        name = path
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{name} is not UTF-8 text (byte {exc.start}); convert it, e.g. with iconv") from None


def add_input_list_options(p: argparse.ArgumentParser) -> None:
    """``--files-from``: the inputs listed in a file (with the positional INPUTs, globs allowed)."""
    p.add_argument("--files-from", metavar="LIST", default=None,
                   help="read the inputs from LIST as well: one path, glob or URL per line (blank lines and "
                        "lines starting with # are ignored); '-' reads the list from standard input")


def expanded_inputs(args, name: str = "inputs") -> list[str]:
    """The command's inputs: globs expanded (quoted globs included), ``--files-from`` appended."""
    from ..io.read.sources import expand_inputs

    given = list(getattr(args, name) or [])
    files_from = getattr(args, "files_from", None)
    if not given and files_from is None:
        raise ConfigError("no input: give INPUT paths, globs or URLs, or --files-from LIST")
    return expand_inputs(given, files_from)


def add_record_options(io) -> None:
    """How ``dedup`` and ``changes`` read records: the format, the id and text fields, what the
    text holds, and the size limit."""
    from ..io.read import FORMATS  # the readers load only when a command's options are built

    io.add_argument("--format", choices=["auto", *FORMATS],
                    default="auto", help="how to read every input (default auto: each file by its content, its "
                                         "name as a hint)")
    io.add_argument("--id-field", default="id", help="JSONL/CSV/Parquet/Arrow field with the record id (default id)")
    io.add_argument("--text-field", default="text", help="JSONL/CSV/Parquet/Arrow field with the text (default text)")
    io.add_argument("--content", choices=["text", "html"], default="text",
                    help="what the JSONL/Parquet text field holds (default text)")
    io.add_argument("--html", choices=["main", "whole", "article"], default="main",
                    help="HTML to text: main content (default), the whole page, or article (trafilatura)")
    io.add_argument("--max-bytes", type=positive_int("--max-bytes"), default=MAX_BYTES,
                    help="skip records larger than this (default 64 MiB)")


def add_error_options(p: argparse.ArgumentParser) -> None:
    """``--on-error``, ``--strict`` and ``--max-skipped``: what a run does about what it could not read."""
    g = p.add_argument_group("errors and exit status")
    g.add_argument("--on-error", choices=["error", "skip"], default="error",
                   help="a file that cannot be opened or read to its end: stop with its path and exit status 3 "
                        "(error, the default), or skip it and count it in summary.json's skipped_files (skip)")
    g.add_argument("--strict", action="store_true",
                   help="exit with status 1 if any record or file was skipped (as --max-skipped 0), or a file of "
                        "a dataset folder was not read (a README.md among part files; _SUCCESS, .crc and the other "
                        "names Spark hides never count)")
    g.add_argument("--max-skipped", type=skipped_limit, default=None, metavar="N|FRACTION",
                   help="exit with status 1 if more records than this were skipped: a count (100) or a fraction "
                        "of the input records (0.01 or 1%%); default: no limit")


def skipped_limit(value: str) -> tuple[str, float]:
    """``--max-skipped``: ``("count", N)`` or ``("fraction", x)``."""
    v = value.strip()
    try:
        if v.endswith("%"):
            x = float(v[:-1]) / 100
            kind = "fraction"
        elif any(c in v for c in ".eE"):
            x = float(v)
            kind = "fraction"
        else:
            x = int(v)
            kind = "count"
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--max-skipped must be a count (100), a fraction (0.01) or a percentage (1%), got {value!r}") from None
    if x < 0 or (kind == "fraction" and x > 1):
        raise argparse.ArgumentTypeError(f"--max-skipped must be a count of 0 or more or a fraction in [0, 1], got {value!r}")
    return kind, x


def skipped_status(args, skipped: int, total: int, what: str = "records", ignored_files=()) -> int:
    """The exit status for ``skipped`` of ``total`` records: SKIPPED (with a line on standard
    error saying why) when ``--strict`` or ``--max-skipped`` is exceeded, else OK. Under
    ``--strict``, the files of dataset folders that were not read (``ignored_files``; not the
    dataset's metadata files, :func:`~neardup.io.read.sources.strict_counted`) are skipped files too."""
    from ..exitcodes import OK, SKIPPED
    from ..io.read.sources import strict_counted

    status = OK
    unread = strict_counted(ignored_files) if getattr(args, "strict", False) else []
    if unread:
        shown = ", ".join(f["path"] for f in unread[:3]) + (", ..." if len(unread) > 3 else "")
        print(f"neardup: {len(unread):,} file{'s' if len(unread) > 1 else ''} of a dataset folder not read "
              f"({shown}), --strict allows none; see ignored_files in summary.json", file=sys.stderr)
        status = SKIPPED
    limit = ("count", 0) if getattr(args, "strict", False) else getattr(args, "max_skipped", None)
    if limit is None or skipped == 0:
        return status
    kind, x = limit
    over = skipped > x if kind == "count" else skipped > x * total
    if not over:
        return status
    share = f" ({skipped / total:.2%} of {total:,})" if total else ""
    allowed = ("--strict allows none" if getattr(args, "strict", False)
               else f"over --max-skipped {x:g}" if kind == "count" else f"over --max-skipped {x:.2%}")
    print(f"neardup: {skipped:,} {what} skipped{share}, {allowed}; see skipped_by_reason and skipped_files in "
          "summary.json", file=sys.stderr)
    return SKIPPED


def print_json(obj) -> None:
    json.dump(obj, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")


def positive_int(name: str, *, minimum: int = 1):
    def parse(value: str) -> int:
        try:
            n = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a whole number, got {value!r}") from None
        if n < minimum:
            raise argparse.ArgumentTypeError(f"{name} must be at least {minimum}, got {n}")
        return n

    return parse


def unit_float(name: str, *, open_low: bool = True, open_high: bool = False):
    def parse(value: str) -> float:
        try:
            x = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {value!r}") from None
        if (x <= 0 if open_low else x < 0) or (x >= 1 if open_high else x > 1):
            lo = "(0" if open_low else "[0"
            hi = "1)" if open_high else "1]"
            raise argparse.ArgumentTypeError(f"{name} must be in {lo}, {hi}, got {x}")
        return x

    return parse


def add_shingle_options(p: argparse.ArgumentParser, *, k_default: int = 5) -> None:
    g = p.add_argument_group("shingling")
    g.add_argument("-k", type=positive_int("-k"), default=k_default,
                   help=f"tokens per shingle (default {k_default})")
    g.add_argument("--unit", choices=["word", "char", "line"], default="word", help="token unit (default word)")
    g.add_argument("--keep-punctuation", action="store_true", help="keep punctuation inside tokens")
    g.add_argument("--no-casefold", action="store_true", help="keep upper and lower case apart")
    g.add_argument("--no-nfkc", action="store_true", help="skip Unicode NFKC normalization")
    g.add_argument("--shingle-hash", choices=["xxh3", "rabin40", "rabin64", "md5", "sha1"], default="xxh3",
                   help="shingle ids: xxh3 (default), Rabin fingerprints of 40 or 64 bits (Broder 1997), md5, sha1")


def add_minhash_options(p: argparse.ArgumentParser, *, num_perm: int = 128, family: str = "affine61") -> None:
    g = p.add_argument_group("MinHash")
    g.add_argument("--num-perm", type=positive_int("--num-perm"), default=num_perm,
                   help=f"hash functions per sketch (default {num_perm})")
    g.add_argument("--seed", type=int, default=1, help="seed of the permutations (default 1)")
    from ..params import FAMILIES

    g.add_argument("--family", choices=FAMILIES, default=family,
                   help=f"permutation family (default {family})")


def shingle_params_from(args):
    from ..params import NormalizeParams, ShingleParams

    norm = NormalizeParams(nfkc=not args.no_nfkc, casefold=not args.no_casefold,
                           remove_punctuation=not args.keep_punctuation)
    return ShingleParams(k=args.k, unit=args.unit, normalize=norm, hash=getattr(args, "shingle_hash", "xxh3"))


def minhash_params_from(args):
    from ..params import MinHashParams

    if args.seed < 0:
        raise ConfigError(f"--seed must be 0 or more, got {args.seed}")
    return MinHashParams(num_perm=args.num_perm, seed=args.seed, family=args.family)


_URL_FIELD_HELP = ("JSONL/CSV/Parquet/Arrow field with the record's URL (default: the WARC target URI, else the "
                   "'url' field when present)")


def add_url_options(g, field_help: str = _URL_FIELD_HELP) -> None:
    """``--url-field`` and the URL rules' options (:class:`neardup.urls.UrlRules`)."""
    g.add_argument("--url-field", default=None, metavar="NAME", help=field_help)
    g.add_argument("--drop-params", default=None, metavar="A,B,...",
                   help="query parameters dropped from URLs (names, * as a wildcard; '' keeps them all); default: "
                        "utm_*, click ids (gclid, fbclid, msclkid, ...) and session ids (see docs/urls.md)")
    g.add_argument("--fold-www", action="store_true", help="www.example.com is example.com (off by default)")
    g.add_argument("--fold-trailing-slash", action="store_true",
                   help="/docs/ is /docs (off by default: some servers answer them differently)")


def url_rules_from(args):
    from ..urls import TRACKING_PARAMS, UrlRules

    params = TRACKING_PARAMS if args.drop_params is None else tuple(x.strip() for x in args.drop_params.split(",")
                                                                      if x.strip())
    return UrlRules(drop_params=params, fold_www=args.fold_www, fold_trailing_slash=args.fold_trailing_slash)
