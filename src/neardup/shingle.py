"""Shingles: k consecutive tokens, as strings or as 64-bit ids.

A shingle's id is the named 64-bit hash of its UTF-8 text, the tokens joined by a single space
(words), nothing (characters) or a newline (lines). A document with fewer than k tokens has one
shingle, all of its tokens, so that short documents are compared rather than silently dropped;
a document with no tokens has none.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from .hashing import hash64
from .params import ShingleParams
from .text.tokenize import tokenize

JOINERS = {"word": " ", "char": "", "line": "\n"}


def shingle_strings(tokens: list[str], k: int, unit: str = "word") -> list[str]:
    """The shingles of a token list, in document order, repeats included."""
    if not tokens:
        return []
    joiner = JOINERS[unit]
    if len(tokens) < k:
        return [joiner.join(tokens)]
    return [joiner.join(tokens[i : i + k]) for i in range(len(tokens) - k + 1)]


def shingles(text: str, params: ShingleParams = ShingleParams()) -> list[str]:
    """The shingles of ``text`` in document order, repeats included."""
    return shingle_strings(tokenize(text, params.unit, params.normalize), params.k, params.unit)


def shingle_set(text: str, params: ShingleParams = ShingleParams()) -> set[str]:
    """The distinct shingles of ``text`` (Broder's option B), as strings."""
    return set(shingles(text, params))


def _occurrence_labelled(strings: list[str]) -> list[str]:
    # Broder's option A: the n-th repeat of a shingle is a distinct element. The first occurrence
    # keeps its plain text so that the set is a subset of the multiset.
    seen: Counter[str] = Counter()
    out = []
    for s in strings:
        seen[s] += 1
        out.append(s if seen[s] == 1 else f"{s}\x00{seen[s]}")
    return out


def shingle_ids(text: str, params: ShingleParams = ShingleParams()) -> np.ndarray:
    """Sorted distinct 64-bit shingle ids of ``text`` (uint64).

    With ``params.multiset`` the repeats are labelled by occurrence number first (option A).
    The compiled kernel computes the same ids when it supports the parameters; the
    pure-Python path below is the definition it is tested against.
    """
    from . import _native

    if _native.supports(params):
        return _native.shingle_ids(text, params)
    strings = shingles(text, params)
    if params.multiset:
        strings = _occurrence_labelled(strings)
    ids = np.fromiter((hash64(s, params.hash) for s in strings), dtype=np.uint64, count=len(strings))
    return np.unique(ids)
