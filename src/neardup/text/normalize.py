"""Text normalization that users switch piece by piece (see :class:`NormalizeParams`)."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from ..params import NormalizeParams
from .charclass import PUNCT, SOLO, WORD, regex_sources

DEFAULT = NormalizeParams()


def fold(text: str, params: NormalizeParams = DEFAULT) -> str:
    """Unicode NFKC and case folding, the steps that change characters rather than boundaries."""
    if params.nfkc and not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    if params.casefold:
        text = text.casefold()
    return text


@lru_cache(maxsize=None)
def _separator_re(remove_punctuation: bool) -> re.Pattern:
    src = regex_sources()
    kept = src[WORD] + src[SOLO] + ("" if remove_punctuation else src[PUNCT])
    return re.compile(f"[^{kept}]+")


def normalize(text: str, params: NormalizeParams = DEFAULT) -> str:
    """The normalized text: folded, punctuation removed, white space collapsed (as configured).

    With ``remove_punctuation`` and ``collapse_whitespace`` on, this is the text's tokens joined
    by single spaces; it is what exact fingerprints and character shingles are computed on.
    """
    text = fold(text, params)
    if params.collapse_whitespace:
        return _separator_re(params.remove_punctuation).sub(" ", text).strip()
    if params.remove_punctuation:
        return re.sub(f"[{regex_sources()[PUNCT]}]", " ", text)
    return text
