"""Frozen, validated configuration objects, each with a stable fingerprint.

A fingerprint is a 64-bit hash of the canonical JSON of the parameters plus the format version;
it is recorded with every sketch, store and output folder so that artefacts made with different
settings are never combined silently.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

import xxhash

from ._validate import check_choice, check_int
from .hashing import HASH_NAMES

FORMAT_VERSION = 1
#: Bumped whenever tokenization or normalization changes the tokens of some text.
TOKENIZER_VERSION = 1

UNITS = ("word", "char", "line")
FAMILIES = ("affine61", "mulshift64", "mulshift32")
#: ``neardup dedup`` holds shingle ids and signatures in memory up to this many MB, then spills.
IN_MEMORY_MB = 512


def _canonical(obj) -> dict:
    return json.loads(json.dumps(dataclasses.asdict(obj), sort_keys=True))


def config_fingerprint(choices: dict) -> int:
    """The fingerprint of a configuration given as a JSON-ready dict: XXH3-64 of its JSON with the
    keys sorted (``json.dumps`` defaults otherwise). The one definition behind every configuration
    fingerprint (the dedup run's, the index's, the shingle and MinHash parameters'); saved indexes
    and run folders hold these values, so this must never change."""
    return xxhash.xxh3_64_intdigest(json.dumps(choices, sort_keys=True).encode())


def _fingerprint(kind: str, obj) -> int:
    return config_fingerprint({"kind": kind, "format": FORMAT_VERSION, "params": _canonical(obj)})


@dataclass(frozen=True, kw_only=True, slots=True)
class NormalizeParams:
    """How text is normalized before tokenization. Every step is on by default."""

    nfkc: bool = True
    casefold: bool = True
    remove_punctuation: bool = True
    collapse_whitespace: bool = True

    def as_dict(self) -> dict:
        return _canonical(self)


@dataclass(frozen=True, kw_only=True, slots=True)
class ShingleParams:
    """Which shingles a document is made of: k consecutive tokens of the given unit.

    ``multiset=True`` labels repeated shingles with their occurrence number (Broder's option A);
    the default is the set of distinct shingles (option B).
    """

    k: int = 5
    unit: str = "word"
    hash: str = "xxh3"
    multiset: bool = False
    normalize: NormalizeParams = field(default_factory=NormalizeParams)

    def __post_init__(self) -> None:
        check_int("k", self.k, 1, 1000, owner="ShingleParams", hint=" Shingles need at least one token.")
        check_choice("unit", self.unit, UNITS, owner="ShingleParams")
        check_choice("hash", self.hash, HASH_NAMES, owner="ShingleParams")

    def as_dict(self) -> dict:
        return {**_canonical(self), "tokenizer_version": TOKENIZER_VERSION}

    def fingerprint(self) -> int:
        return _fingerprint("shingle", self)


@dataclass(frozen=True, kw_only=True, slots=True)
class MinHashParams:
    """A k-mins MinHash: ``num_perm`` permutations drawn from ``family`` with ``seed``.

    Families (both derived from the seed by :func:`neardup.hashing.derive`):

    - ``affine61``: ``h(x) = (a*x + b) mod (2**61 - 1)``, the classic family of the seed and of
      Broder; exact but about three times slower than
    - ``mulshift64``: ``h(x) = (a*x + b) mod 2**64`` with odd ``a``, a bijection of 64-bit shingle
      ids (which are already uniform hashes), as fast as a multiply-add;
    - ``mulshift32``: ``h(x) = (a*(x >> 32) + b) mod 2**32`` with odd ``a``: the same on the high
      half of the id, with 32-bit values; about four times faster again in the compiled kernel
      (eight lanes per AVX2 register), and what ``neardup dedup`` uses by default.
    """

    num_perm: int = 128
    seed: int = 1
    family: str = "affine61"

    def __post_init__(self) -> None:
        check_int("num_perm", self.num_perm, 1, 1 << 16, owner="MinHashParams")
        check_int("seed", self.seed, 0, (1 << 64) - 1, owner="MinHashParams")
        check_choice("family", self.family, FAMILIES, owner="MinHashParams")

    def as_dict(self) -> dict:
        return _canonical(self)

    def fingerprint(self) -> int:
        return _fingerprint("minhash", self)
