"""Exact-duplicate fingerprints: the crawler's "content seen?" test.

The fingerprint is 64 bits of BLAKE2b over the document's normalized content: its word tokens
(see :mod:`neardup.text.tokenize`) joined by single spaces, encoded as UTF-8. Copies that differ
only in case, Unicode form, punctuation or white space have the same content. Two pages with
different fingerprints certainly differ; two with the same one are identical with overwhelming
probability. A document without tokens has no content and fingerprint None.
"""

from __future__ import annotations

import hashlib

from ..params import NormalizeParams
from ..text.tokenize import words


def content_bytes(text: str, params: NormalizeParams = NormalizeParams()) -> bytes:
    """The normalized content that is fingerprinted."""
    return " ".join(words(text, params)).encode("utf-8", "surrogatepass")


def fingerprint_of_content(content: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(content, digest_size=8).digest(), "big")


def fingerprint(text: str, params: NormalizeParams = NormalizeParams()) -> int | None:
    """The 64-bit content fingerprint of ``text``, or None when it has no tokens."""
    content = content_bytes(text, params)
    return fingerprint_of_content(content) if content else None


def fingerprint_hex(text: str, params: NormalizeParams = NormalizeParams()) -> str | None:
    fp = fingerprint(text, params)
    return None if fp is None else f"{fp:016x}"
