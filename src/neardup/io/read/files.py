"""Files that are one document each: text files and HTML pages (``id`` = ``source`` = the path)."""

from __future__ import annotations

from ...text.html import decode_html
from ..documents import Skipped
from .compression import open_decompressed, read_whole
from .extract import PendingPage
from .rows import decode_text, finish_record, has_nul, with_claims
from .sources import failure_reason, size_of

__all__ = ["read_file", "file_record"]


def read_file(reader, path: str, fmt: str, n: int):
    """The one record of a file that is one document (``fmt`` ``text``, ``html`` or ``not_html``), ordinal ``n``."""
    if reader.want is not None and not reader.want(n):
        return n + 1
    yield file_record(reader, path, fmt, n)
    return n + 1


def file_record(reader, path: str, fmt: str, n: int):
    """The Document or Skipped of one text file or HTML page (``id`` and ``source``: its path)."""
    if fmt == "not_html":
        return Skipped(path, n, path, "not_html", "not an .html, .htm or .xhtml file, in a folder of HTML files")
    try:
        if reader.max_bytes is not None:
            size = size_of(path)
            if size > reader.max_bytes:
                return Skipped(path, n, path, "too_large", f"file of {size} bytes is over the {reader.max_bytes} byte limit")
        with open_decompressed(path, buffering=0) as fh:  # a compressed text or page (.txt.gz) is decompressed
            data = read_whole(fh, reader.max_bytes)
    except Exception as exc:  # noqa: BLE001 - I/O error, corrupt compressed stream
        return Skipped(path, n, path, "unreadable_file", f"cannot read the file: {failure_reason(exc)}")
    if reader.max_bytes is not None and len(data) > reader.max_bytes:
        return Skipped(path, n, path, "too_large", f"file is over the {reader.max_bytes} byte limit")
    if has_nul(data):
        return Skipped(path, n, path, "binary", f"NUL byte at offset {data.index(0)}: not a text file")
    if fmt == "html":
        if reader.jobs > 1:  # decoded by the worker, with the extraction
            return PendingPage(path, n, path, with_claims(reader, {}, data, None), data, None, None, reader.errors,
                               "the file is not valid in its declared charset or UTF-8")
        text = decode_html(data, errors=reader.errors)
        if text is None:
            return Skipped(path, n, path, "undecodable", "the file is not valid in its declared charset or UTF-8")
        return finish_record(reader, path, text, n, path, {}, is_html=True)
    text = decode_text(data, reader.errors)
    if text is None:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            where = exc.start
        return Skipped(path, n, path, "undecodable", f"invalid UTF-8 at byte {where}")
    return finish_record(reader, path, text, n, path, {}, is_html=reader.content == "html")

