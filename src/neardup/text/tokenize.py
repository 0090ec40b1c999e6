"""Text to tokens: words, characters or lines.

A word token is a maximal run of letters, marks, digits and ``_`` (and of punctuation too when
punctuation is kept). A letter of a script written without spaces (Chinese, Japanese, Thai, ...)
is a token of its own. See :mod:`neardup.text.charclass` for the exact classes.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..params import NormalizeParams
from .normalize import DEFAULT, fold, normalize


@lru_cache(maxsize=2)
def _ascii_separators(remove_punctuation: bool) -> dict | None:
    """str.translate table sending every ASCII separator to a space, or None if unusable."""
    from .charclass import PUNCT, SOLO, WORD, class_table

    classes = [int(c) for c in class_table()[:128]]
    if SOLO in classes:
        return None
    kept = {WORD} if remove_punctuation else {WORD, PUNCT}
    return {i: " " for i, c in enumerate(classes) if c not in kept}


@lru_cache(maxsize=2)
def _token_classes(remove_punctuation: bool) -> np.ndarray:
    """Per code point: 1 for a character of a word run, 2 for a token on its own, 0 otherwise."""
    from .charclass import PUNCT, SOLO, WORD, class_table

    table = class_table()
    out = np.zeros(table.size, dtype=np.uint8)
    out[table == WORD] = 1
    if not remove_punctuation:
        out[table == PUNCT] = 1
    out[table == SOLO] = 2
    out.setflags(write=False)
    return out


def words_of_folded(folded: str, remove_punctuation: bool = True) -> list[str]:
    """The word tokens of text that is already folded (:func:`fold`), without regular expressions.

    A regular expression over a character class of 20,000 Unicode ranges runs at about 0.5 MB/s
    on non-ASCII text. Here ASCII text is split with ``str.translate`` and other text by looking
    every code point up in the shipped class table with numpy.
    """
    if folded.isascii():
        table = _ascii_separators(remove_punctuation)
        if table is not None:
            return folded.translate(table).split()
    cps = np.frombuffer(folded.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    cls = _token_classes(remove_punctuation)[cps]
    edges = np.diff((cls == 1).view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)
    solo = np.flatnonzero(cls == 2)
    if solo.size:
        starts = np.concatenate((starts, solo))
        ends = np.concatenate((ends, solo + 1))
        order = np.argsort(starts, kind="stable")
        starts, ends = starts[order], ends[order]
    return [folded[a:b] for a, b in zip(starts.tolist(), ends.tolist())]


def words(text: str, params: NormalizeParams = DEFAULT) -> list[str]:
    """The word tokens of ``text`` after folding."""
    return words_of_folded(fold(text, params), params.remove_punctuation)


def chars(text: str, params: NormalizeParams = DEFAULT) -> list[str]:
    """The characters of the normalized text (so runs of separators count as one space)."""
    return list(normalize(text, params))


def lines(text: str, params: NormalizeParams = DEFAULT) -> list[str]:
    """The non-empty lines of ``text``, each as its word tokens joined by single spaces."""
    out = []
    for line in fold(text, params).splitlines():
        toks = words_of_folded(line, params.remove_punctuation)
        if toks:
            out.append(" ".join(toks))
    return out


def tokenize(text: str, unit: str = "word", params: NormalizeParams = DEFAULT) -> list[str]:
    """Tokens of ``text`` by unit: ``"word"``, ``"char"`` or ``"line"``."""
    if unit == "word":
        return words(text, params)
    if unit == "char":
        return chars(text, params)
    if unit == "line":
        return lines(text, params)
    from ..errors import ConfigError

    raise ConfigError(f"unknown unit {unit!r}: use word, char or line")
