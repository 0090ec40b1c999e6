"""Exact-duplicate fingerprints: the crawler's "content seen?" test.

The fingerprint is 64 bits of BLAKE2b over the normalized text, so copies that differ only in
case, punctuation or white space are the same content. Two pages with different fingerprints
certainly differ; two with the same one are identical with overwhelming probability.
"""

from __future__ import annotations

from ..hashing import content_fingerprint
from ..params import NormalizeParams
from ..text.normalize import normalize


def fingerprint(text: str, params: NormalizeParams = NormalizeParams()) -> int:
    """The 64-bit content fingerprint of ``text`` after normalization."""
    return content_fingerprint(normalize(text, params))


def fingerprint_hex(text: str, params: NormalizeParams = NormalizeParams()) -> str:
    return f"{fingerprint(text, params):016x}"


class ExactIndex:
    """In-memory "content seen?" set: fingerprint -> the first id that had it."""

    def __init__(self, params: NormalizeParams = NormalizeParams()):
        self.params = params
        self._first: dict[int, object] = {}

    def check_and_add(self, doc_id, text: str):
        """The id of an earlier document with the same content, or None (and remember this one)."""
        fp = fingerprint(text, self.params)
        earlier = self._first.get(fp)
        if earlier is None:
            self._first[fp] = doc_id
        return earlier

    def __len__(self) -> int:
        return len(self._first)
