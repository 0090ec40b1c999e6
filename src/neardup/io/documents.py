"""The two things a reader yields: a :class:`Document` to deduplicate, or a :class:`Skipped` record.

Every input record comes out of :func:`neardup.io.read_documents` exactly once, as one or the other,
with ``ordinal`` counting from 0 across all inputs (skipped records included), so that the counts in a
summary always add up to the input count and a second pass can pick records out by ordinal.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Document", "Skipped", "EncodedDocuments", "SKIP_REASONS"]

#: Every ``Skipped.reason`` a reader can give, with what it means.
SKIP_REASONS = {
    "bad_json": "a JSONL line that is not valid JSON (lone surrogate escapes included)",
    "not_an_object": "a JSONL line holding valid JSON that is not an object (a list, a number...)",
    "missing_text": "the record has no text field, or it is null (JSONL, Parquet)",
    "not_a_string": "the text field holds something else than a string (a number, a list...)",
    "undecodable": "bytes that are not valid UTF-8 (JSONL always; files and Parquet binary with errors='strict')",
    "binary": "a text or HTML file holding NUL bytes (an image, an archive, a UTF-32 file...)",
    "empty": "no text, or only white space (also a blank JSONL line, or an HTML page without visible text)",
    "not_html": "a WARC response that is not HTML, or a non-HTML file in a folder of HTML files",
    "http_status": "a WARC response whose HTTP status is not 200 (redirects, errors)",
    "extraction_failed": "HTML that the parser could not read at all",
    "too_large": "a record bigger than max_bytes (measured on the raw record; not loaded)",
    "too_large_nfkc": "a record that NFKC makes bigger than the kernel's limit (768 MiB of UTF-8)",
    "unreadable_file": "a file, folder or stream that cannot be opened or read to its end",
}


@dataclass(slots=True)
class Document:
    """One document to deduplicate.

    ``id``: from the id field, else ``source``; for a file of its own (text, HTML) its path; for
    WARC the target URI. ``text``: plain text (HTML already extracted). ``ordinal``: 0-based position
    in the whole input stream, skipped records included. ``source``: ``"<file>:<n>"`` (1-based line
    for JSONL, 0-based row for Parquet, 1-based record number for WARC) or ``"<file>"``.
    ``meta``: the ``keep_fields`` present (and not null) in the record; ``"url"`` for WARC. There is
    no length in it: use ``len(text)`` (computing UTF-8 byte lengths cost a third of the JSONL
    reader's time). ``page_fingerprint``: the whole-page fingerprint of an HTML record
    (:func:`neardup.text.html_pages.page_fingerprint`, unsigned), from the read that extracted its
    main content, when the reader was asked for it (``page_fingerprints``; None otherwise, and for
    plain text).
    """

    id: str
    text: str
    ordinal: int
    source: str
    meta: dict = field(default_factory=dict)
    page_fingerprint: int | None = None


@dataclass(slots=True)
class Skipped:
    """An input record that is not deduplicated; ``reason`` is a key of :data:`SKIP_REASONS`."""

    id: str
    ordinal: int
    source: str
    reason: str
    detail: str


@dataclass(slots=True, eq=False)
class EncodedDocuments:
    """Consecutive Documents of one JSONL file whose texts are already UTF-8 bytes (the JSONL
    fast path, :func:`neardup.io.read.read_encoded`): document i is ``Document(ids[i],
    data[offsets[i]:offsets[i+1]].decode(), start + i, source(i))``, with no ``meta``, its
    source being line ``first_line + i`` of ``path``.

    ``lengths[i]`` is the text's length in code points (``len(text)``); ``flagged[i]`` is True
    when the text holds a code point of the table the reader was given (NFKC may change it), and
    then ``flag_spans[i] = (lo, hi)``: bytes ``lo:hi`` of the text hold every such code point.
    """

    ids: list
    start: int
    path: str
    first_line: int
    data: bytearray
    offsets: object  # numpy int64, n + 1
    lengths: object  # numpy int64, n
    flagged: object  # numpy bool, n
    flag_spans: object  # numpy int64, (n, 2)

    def __len__(self) -> int:
        return len(self.ids)

    def text(self, i: int) -> str:
        return self.data[self.offsets[i] : self.offsets[i + 1]].decode("utf-8")

    def source(self, i: int) -> str:
        return f"{self.path}:{self.first_line + i}"

    def split(self, k: int) -> tuple["EncodedDocuments", "EncodedDocuments"]:
        """The first ``k`` records and the rest, as two EncodedDocuments over the same bytes."""
        head = EncodedDocuments(ids=self.ids[:k], start=self.start, path=self.path, first_line=self.first_line,
                                data=self.data, offsets=self.offsets[: k + 1], lengths=self.lengths[:k],
                                flagged=self.flagged[:k], flag_spans=self.flag_spans[:k])
        tail = EncodedDocuments(ids=self.ids[k:], start=self.start + k, path=self.path, first_line=self.first_line + k,
                                data=self.data, offsets=self.offsets[k:], lengths=self.lengths[k:],
                                flagged=self.flagged[k:], flag_spans=self.flag_spans[k:])
        return head, tail

    def documents(self):
        """The same records as Documents."""
        return [Document(self.ids[i], self.text(i), self.start + i, self.source(i)) for i in range(len(self.ids))]
