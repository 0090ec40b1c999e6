"""Helpers shared by the sub-commands: reading inputs, printing JSON, parameter options."""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import ConfigError, InputError


def read_text(path: str, *, stdin_used: list[bool] | None = None) -> str:
    """The text of a file, or of standard input for ``-``; undecodable bytes are an InputError."""
    if path == "-":
        if stdin_used is not None:
            if stdin_used[0]:
                raise ConfigError("standard input ('-') can be given only once")
            stdin_used[0] = True
        data = sys.stdin.buffer.read()
        name = "standard input"
    else:
        with open(path, "rb") as fh:
            data = fh.read()
        name = path
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{name} is not UTF-8 text (byte {exc.start}); convert it, e.g. with iconv") from None


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
