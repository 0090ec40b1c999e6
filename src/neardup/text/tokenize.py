"""Text to tokens: words, characters or lines.

A word token is a maximal run of letters, marks, digits and ``_`` (and of punctuation too when
punctuation is kept). A letter of a script written without spaces (Chinese, Japanese, Thai, ...)
is a token of its own. See :mod:`neardup.text.charclass` for the exact classes.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..params import NormalizeParams
from .charclass import PUNCT, SOLO, WORD, regex_sources
from .normalize import DEFAULT, fold, normalize


# ASCII text needs only these small classes (the same classes as the table's first 128 entries),
# which the regex engine matches far faster than the full Unicode ranges.
_ASCII_WORDS = re.compile(r"[0-9A-Za-z_]+")
_ASCII_NONSPACE = re.compile(r"[!-~]+")


@lru_cache(maxsize=None)
def _word_re(remove_punctuation: bool) -> re.Pattern:
    src = regex_sources()
    body = src[WORD] + ("" if remove_punctuation else src[PUNCT])
    return re.compile(f"[{body}]+|[{src[SOLO]}]")


def _words_of_folded(text: str, remove_punctuation: bool) -> list[str]:
    if text.isascii():
        return (_ASCII_WORDS if remove_punctuation else _ASCII_NONSPACE).findall(text)
    return _word_re(remove_punctuation).findall(text)


def words(text: str, params: NormalizeParams = DEFAULT) -> list[str]:
    """The word tokens of ``text`` after folding."""
    return _words_of_folded(fold(text, params), params.remove_punctuation)


def chars(text: str, params: NormalizeParams = DEFAULT) -> list[str]:
    """The characters of the normalized text (so runs of separators count as one space)."""
    return list(normalize(text, params))


def lines(text: str, params: NormalizeParams = DEFAULT) -> list[str]:
    """The non-empty lines of ``text``, each as its word tokens joined by single spaces."""
    out = []
    for line in fold(text, params).splitlines():
        toks = _words_of_folded(line, params.remove_punctuation)
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
