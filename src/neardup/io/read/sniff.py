"""The format of an input file, from its first bytes, its name as a hint (:func:`sniff_format`)."""

from __future__ import annotations

import os

from .compression import COMPRESSED_EXTENSIONS, Decompressed, open_decompressed
from .sources import failure_reason

__all__ = ["FORMATS", "DATA_FORMATS", "SNIFF_BYTES", "kind_of", "sniff_format", "looks_like_html", "probe_file"]

FORMATS = ("jsonl", "parquet", "arrow", "csv", "tsv", "warc", "html", "text")
#: The formats of a file of records (a shard of a dataset), as opposed to a file that is one document.
DATA_FORMATS = ("jsonl", "parquet", "arrow", "csv", "tsv", "warc")
#: Bytes read from the start of a file to tell its format.
SNIFF_BYTES = 4096

_JSONL_EXT = (".jsonl", ".json", ".ndjson")
_ARROW_EXT = (".arrow", ".feather", ".ipc", ".arrows")
_WARC_EXT = (".warc", ".arc", ".wet", ".warc.wet", ".warc.wat")
_HTML_EXT = (".html", ".htm", ".xhtml")


def kind_of(name: str) -> str | None:
    """The format a file name announces, or None (a hint only: :func:`sniff_format` decides)."""
    n = name.lower()
    base = n
    for ext in COMPRESSED_EXTENSIONS:
        if n.endswith(ext):
            base = n[: -len(ext)]
            break
    if base.endswith(_JSONL_EXT):
        return "jsonl"
    if base.endswith(".csv"):
        return "csv"
    if base.endswith(".tsv"):
        return "tsv"
    if n.endswith((".parquet", ".pq")):
        return "parquet"
    if n.endswith(_ARROW_EXT):
        return "arrow"
    if base.endswith(_WARC_EXT) and n.endswith((".gz", ".zst", ".zstd", *_WARC_EXT)):
        return "warc"
    if n.endswith(_HTML_EXT):
        return "html"
    return None


def sniff_format(path: str, head: bytes, compressed: bool, tail: bytes = b"") -> str:
    """The format of a file from its first (decompressed) bytes, its name as a hint.

    Magic numbers win over the name: Parquet (``PAR1`` at both ends), Arrow IPC (``ARROW1``, or a
    stream's continuation marker), WARC (``WARC/``) and ARC (``filedesc://``, read by the WARC
    reader). Then the name (``.jsonl``, ``.csv``, ``.tsv``, ``.parquet``, ``.html``...: a
    ``.parquet`` file without the magic is then reported as a broken Parquet file); then the
    content: a JSON object (``{``) is JSONL, a page that starts like HTML is HTML, anything else
    is text."""
    if not compressed:
        if head[:4] == b"PAR1" and (not tail or tail[-4:] == b"PAR1"):
            return "parquet"
        if head[:6] == b"ARROW1" or head[:4] == b"\xff\xff\xff\xff":
            return "arrow"
    if head[:5] == b"WARC/" or head[:11] == b"filedesc://":
        return "warc"
    hint = kind_of(path)
    if hint is not None:  # a .parquet file without its magic is a broken Parquet file, not a text
        return hint
    body = head[3:] if head[:3] == b"\xef\xbb\xbf" else head
    body = body.lstrip()
    if body[:1] == b"{" and b"\x00" not in head:
        return "jsonl"
    if looks_like_html(body):
        return "html"
    return "text"


def looks_like_html(body: bytes) -> bool:
    """Whether bytes start like an HTML page (a doctype, ``<html>``, ``<head>`` or ``<body>``)."""
    head = body[:1024].lstrip().lower()
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:].lstrip()
    return head.startswith((b"<!doctype html", b"<html", b"<head", b"<body")) or b"<html" in head


def probe_file(path: str) -> tuple[str | None, str]:
    """``(why it cannot be read, or None; its format)`` of one file, from its first bytes."""
    try:
        with open_decompressed(path, buffering=0) as fh:  # unbuffered: a read buffer would read a MiB ahead
            compressed = isinstance(fh, Decompressed)
            try:  # straight from the decompressor, for the same reason
                head = (fh.raw if compressed else fh).read(SNIFF_BYTES)
            except Exception:  # noqa: BLE001 - corrupt from the start: the reader reports where
                head = b""
            tail = b""
            if not compressed and head[:4] == b"PAR1":
                try:
                    fh.seek(-4, os.SEEK_END)
                    tail = fh.read(4)
                except (OSError, ValueError):
                    tail = b""
    except Exception as exc:  # noqa: BLE001 - cannot open, or a corrupt compressed stream
        return f"cannot open the file: {failure_reason(exc)}", kind_of(path) or "text"
    return None, sniff_format(path, head, compressed, tail)
