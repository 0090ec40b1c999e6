"""Helpers shared by the sub-commands: reading inputs, printing JSON, parameter options."""

from __future__ import annotations

import argparse
import json
import sys

from ..config import DedupConfig, ReadOptions
from ..errors import ConfigError, InputError
from ..io.read.reader import ON_ERROR
from ..options import MINHASH_OPTIONS, READ_OPTIONS, SHINGLE_OPTIONS, URL_OPTIONS
from ..urls import DEFAULT_RULES, UrlRules


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


def add_options(container, options, defaults, *, given_only: bool = False, helps: dict | None = None) -> None:
    """Add the argparse options of ``options`` (:class:`neardup.options.Option` definitions) to
    ``container`` (a parser or a group of one), each showing its default from ``defaults`` (the
    configuration the command fills, or a dict of its parts).

    The options convert their values and nothing more: the configuration built from them checks
    them (one check, the Python API's), and :func:`option_error` names the option in its error.
    ``given_only``: an option left out is None (an index's recorded value applies), its help
    still showing the default of a new one. ``helps``: the help of an option, by field, where a
    command gives it another meaning."""
    flags = dict(container.get_default("option_flags") or {})
    for option in options:
        text = (helps or {}).get(option.field, option.help)
        if "{default}" in text:
            text = text.replace("{default}", shown_default(option.default_in(defaults)))
        if option.kind is bool:
            if given_only:
                container.add_argument(*option.flags, action="store_const", const=True, default=None, help=text)
            else:
                container.add_argument(*option.flags, action="store_true", help=text)
        else:
            metavar = option.metavar or ("{" + ",".join(option.choices) + "}" if option.choices else None)
            container.add_argument(*option.flags, type=_CONVERTERS[option.kind](option.flag), metavar=metavar,
                                   default=None if given_only else option.default_in(defaults), help=text)
        for parameter in (option.parameter, *option.also):
            flags[(option.owner, parameter)] = option.flag
    container.set_defaults(option_flags=flags)


def option_value(args, option):
    """The value of ``option``'s field that the parsed command line ``args`` gives: the option's
    own value, turned over for a switch that turns its field off (``--no-resident``)."""
    dest = next((f for f in option.flags if f.startswith("--")), option.flags[0]).lstrip("-").replace("-", "_")
    value = getattr(args, dest)
    return not value if option.negate and value is not None else value


def shown_default(value) -> str:
    """A default as a help shows it: a float as it is written (30, 0.8)."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def option_error(exc: Exception, args) -> str:
    """The message of ``exc``, naming the command-line option when a configuration refused the
    value of one (``--num-perm must be at least 1, got 0``)."""
    flag = (getattr(args, "option_flags", None) or {}).get((getattr(exc, "owner", None),
                                                            getattr(exc, "parameter", None)))
    if flag is None or getattr(exc, "requirement", None) is None:
        return str(exc)
    return f"{flag} must be {exc.requirement}, got {exc.value!r}"


def _whole_number(flag: str):
    def parse(value: str) -> int:
        try:
            return int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} must be a whole number, got {value!r}") from None

    return parse


def _number(flag: str):
    def parse(value: str) -> float:
        try:
            return float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} must be a number, got {value!r}") from None

    return parse


def _text(flag: str):
    return None  # argparse keeps the text as given


def _names(flag: str):
    def parse(value: str) -> tuple:
        return tuple(x.strip() for x in value.split(",") if x.strip())  # '' : none

    return parse


_CONVERTERS = {int: _whole_number, float: _number, str: _text, tuple: _names}


def add_record_options(io, *, fields=READ_OPTIONS) -> None:
    """How ``dedup``, ``changes`` and the index's commands read records: the format, the id and
    text fields, what the text holds, and the size limit (``fields``: those the command takes)."""
    add_options(io, [READ_OPTIONS[f] for f in fields], ReadOptions())


def read_options_from(args):
    """The :class:`neardup.config.ReadOptions` of the command line, checked (the defaults for
    the read options a command does not take)."""
    return ReadOptions(**{name: getattr(args, name) for name in READ_OPTIONS if hasattr(args, name)})


def add_error_options(p: argparse.ArgumentParser) -> None:
    """``--on-error``, ``--strict`` and ``--max-skipped``: what a run does about what it could not read."""
    g = p.add_argument_group("errors and exit status")
    g.add_argument("--on-error", choices=ON_ERROR, default="error",
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
    """A count of a command's own (threads, batch sizes, limits), not of a configuration."""
    def parse(value: str) -> int:
        n = _whole_number(name)(value)
        if n < minimum:
            raise argparse.ArgumentTypeError(f"{name} must be at least {minimum}, got {n}")
        return n

    return parse


def unit_float(name: str, *, open_low: bool = True, open_high: bool = False):
    """A fraction of a command's own, not of a configuration."""
    def parse(value: str) -> float:
        x = _number(name)(value)
        if (x <= 0 if open_low else x < 0) or (x >= 1 if open_high else x > 1):
            lo = "(0" if open_low else "[0"
            hi = "1)" if open_high else "1]"
            raise argparse.ArgumentTypeError(f"{name} must be in {lo}, {hi}, got {x}")
        return x

    return parse


def add_shingle_options(p: argparse.ArgumentParser, defaults, *, skip=()) -> None:
    """The shingle options (``-k``, ``--unit``, ...), their defaults those of ``defaults.shingle``."""
    add_options(p.add_argument_group("shingling"), [o for f, o in SHINGLE_OPTIONS.items() if f not in skip],
                defaults)


def add_minhash_options(p: argparse.ArgumentParser, defaults) -> None:
    """The MinHash options, their defaults those of ``defaults.minhash``."""
    add_options(p.add_argument_group("MinHash"), MINHASH_OPTIONS.values(), defaults)


def shingle_params_from(args):
    from ..params import NormalizeParams, ShingleParams

    norm = NormalizeParams(nfkc=not args.no_nfkc, casefold=not args.no_casefold,
                           remove_punctuation=not args.keep_punctuation)
    return ShingleParams(k=args.k, unit=args.unit, normalize=norm, hash=getattr(args, "shingle_hash", "xxh3"))


def minhash_params_from(args):
    from ..params import MinHashParams

    return MinHashParams(num_perm=args.num_perm, seed=args.seed, family=args.family)


def add_url_options(g, field_help: str | None = None) -> None:
    """``--url-field`` and the URL rules' options (:class:`neardup.urls.UrlRules`), ``field_help``
    the command's help of ``--url-field``. A rule's option left out is None: the rules' default,
    or those an index records."""
    add_options(g, URL_OPTIONS.values(), {"url_field": None, "url_rules": DEFAULT_RULES}, given_only=True,
                helps={"url_field": field_help} if field_help else None)


def check_url_field(args) -> None:
    """``--url-field`` of a command that reads URLs without a run's configuration (``changes``,
    ``index add`` and ``query``), checked as a run's (:attr:`neardup.config.DedupConfig.url_field`)."""
    if getattr(args, "url_field", None) is not None:
        DedupConfig(url_field=args.url_field)


def url_rules_given(args) -> bool:
    """Whether the command line gives a URL rule's option."""
    return any(getattr(args, name, None) is not None for name in _URL_RULES)


def url_rules_from(args):
    """The :class:`neardup.urls.UrlRules` of the command line (which checks them; its defaults for
    the options left out)."""
    return UrlRules(**{name: getattr(args, name) for name in _URL_RULES if getattr(args, name, None) is not None})


#: The URL rules' fields that an option sets (``url_rules.fold_www``: ``args.fold_www``).
_URL_RULES = tuple(o.parameter for o in URL_OPTIONS.values() if o.owner == "UrlRules")
