"""ExactIndex: the crawler's "content seen?" set in memory (fingerprints of :mod:`neardup.exact.fingerprint`)."""

from __future__ import annotations

from ..exact.fingerprint import fingerprint
from ..params import NormalizeParams

__all__ = ["ExactIndex"]


class ExactIndex:
    """In-memory "content seen?" set: fingerprint -> the first id that had it."""

    def __init__(self, params: NormalizeParams = NormalizeParams()):
        self.params = params
        self._first: dict[int, object] = {}

    def check_and_add(self, doc_id, text: str):
        """The id of an earlier document with the same content, or None (and remember this one).

        A text without tokens has no content (fingerprint None): it matches nothing and is not kept.
        """
        fp = fingerprint(text, self.params)
        if fp is None:
            return None
        earlier = self._first.get(fp)
        if earlier is None:
            self._first[fp] = doc_id
        return earlier

    def __len__(self) -> int:
        return len(self._first)
