"""Records to UTF-8 batches: the bytes the sketch stage reads.

A batch is a list of parts in input order: lists of texts (``str``) and
:class:`neardup.io.documents.EncodedDocuments` (JSONL texts that never became a ``str``).
"""

from __future__ import annotations

import numpy as np

from ..params import NormalizeParams


def batch_texts(parts: list) -> list[str]:
    """The texts of a batch's parts, as str."""
    out: list[str] = []
    for part in parts:
        out.extend(part if type(part) is list else (part.text(i) for i in range(len(part))))
    return out


def encode_batch(parts: list, norm: NormalizeParams) -> list[tuple]:
    """A batch's texts as the kernel reads them: ``(data, offsets)`` segments for
    :func:`neardup._native.signatures_encoded`.

    EncodedDocuments are UTF-8 already and are read in place; only the lines of flagged texts (a
    code point that NFKC may change) that hold such code points are decoded and normalized, and a
    text NFKC changes becomes a segment of its own.
    """
    from .. import _native
    from ..text.nfkc import nfkc_utf8

    segments: list[tuple] = []
    for part in parts:
        if type(part) is list:
            segments.append(_native.encode_texts(part, norm))
            continue
        data, offsets = part.data, part.offsets
        view = memoryview(data)
        first = 0  # the texts from first on are not in segments yet
        for i in (np.flatnonzero(part.flagged).tolist() if norm.nfkc else ()):
            start, stop = int(offsets[i]), int(offsets[i + 1])
            lo, hi = (start + int(x) for x in part.flag_spans[i])
            # NFKC never acts across a newline: the lines holding the flagged code points suffice
            lo = max(start, data.rfind(b"\n", start, lo) + 1)
            hi = data.find(b"\n", hi, stop)
            hi = stop if hi < 0 else hi
            fixed = nfkc_utf8(view[lo:hi].tobytes())
            if fixed is None:
                continue  # NFKC already
            if i > first:
                segments.append((data, offsets[first : i + 1]))
            text = b"".join((view[start:lo], fixed, view[hi:stop]))
            segments.append((text, np.array([0, len(text)], dtype=np.int64)))
            first = i + 1
        if first < offsets.size - 1:
            segments.append((data, offsets[first:]))
    return segments
