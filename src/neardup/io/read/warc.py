"""Web archives: reading WARC and ARC files, and writing the kept records of a WARC back as a WARC.

Formats: WARC 1.0/1.1 (``.warc``, ``.warc.gz`` with a gzip member per record, as crawlers write
them, ``.warc.zst``), read with FastWARC (the Rust reader; warcio, measured beside it in
``benchmarks/html_speed.py``, is about three times slower on the same file); ARC (``.arc``,
``.arc.gz``, the format before WARC), read with warcio, which converts its records to WARC
responses (FastWARC does not read ARC). :func:`archive_kind` tells the formats apart by their
first bytes (after gzip or zstd), whatever the file's name.

:func:`read_warc_records` yields every record of a file as an :class:`ArchiveRecord` (type,
WARC-Record-ID, WARC-Target-URI, where it starts in the file, the HTTP status and Content-Type,
and the payload of the records that can be documents). :func:`input_records` turns them into the
input records of ``neardup dedup``:

- ``response`` records with HTTP status 200 and an HTML Content-Type (or none, and a body that
  starts like HTML): HTML pages, whose main content is extracted;
- ``conversion`` records (the text of a WET file, or any converted record with a ``text/*``
  Content-Type): plain text, taken as it is;
- other responses are Skipped (``http_status``, ``not_html``, ``too_large``, ``undecodable``);
  ``warcinfo``, ``request``, ``metadata``, ``revisit`` and ``resource`` records are no input
  records (they take no ordinal).

:func:`read_warc` makes them Documents and Skipped records (HTML extracted). Where the records
start, as the read pass saw them, is kept for the writer of the kept records
(:mod:`neardup.io.write.warc`, :func:`remembered_starts`), which otherwise finds them with
:func:`record_starts`.
"""

from __future__ import annotations

import os
import zlib
from array import array
from dataclasses import dataclass
from typing import BinaryIO, Iterator

from ...errors import require
from ...text.html import decode_html
from ..documents import Skipped
from .compression import ZSTD_MAGIC, head_decompressed
from .extract import PendingPage
from .rows import decode_text, finish_record, with_claims
from .sniff import looks_like_html
from .sources import failure_reason, open_binary

__all__ = ["ArchiveRecord", "ArchiveError", "archive_kind", "is_warc_magic", "read_warc_records", "input_records",
           "is_input_record", "record_starts", "remembered_starts", "read_input_records", "read_warc",
           "WARC_EXTENSIONS", "HTML_MIMES", "parse_content_type"]

#: File names read as web archives (compression is recognised from the bytes, not the name).
WARC_EXTENSIONS = (".warc", ".warc.gz", ".warc.zst", ".warc.zstd", ".arc", ".arc.gz")
HTML_MIMES = frozenset({"text/html", "application/xhtml+xml", "application/vnd.wap.xhtml+xml"})
_HTTP_HEAD = 1 << 16  # bytes of a response read for its status and headers alone
_SNIFF_MAX = 1 << 18  # a zstd block (at most 128 KiB) and its frame header


def archive_kind(head: bytes) -> str | None:
    """``"warc"``, ``"arc"`` or None for the first bytes of a file (a few hundred are enough;
    gzip and zstd are looked through)."""
    data = head_decompressed(bytes(head[:_SNIFF_MAX]))
    if data.startswith(b"WARC/"):
        return "warc"
    if data.startswith(b"filedesc://"):
        return "arc"
    return None


def is_warc_magic(head: bytes) -> bool:
    """Whether a file starting with ``head`` is a web archive :func:`read_warc_records` reads."""
    return archive_kind(head) is not None


def parse_content_type(value: str | None) -> tuple[str, str | None]:
    """``(media type lower-cased, charset or None)`` of a Content-Type header."""
    parts = (value or "").split(";")
    mime = parts[0].strip().lower()
    charset = None
    for part in parts[1:]:
        key, _, val = part.partition("=")
        if key.strip().lower() == "charset":
            charset = val.strip().strip("\"'") or None
    return mime, charset


@dataclass(frozen=True)
class ArchiveRecord:
    """One record of a WARC (or ARC) file.

    ``number`` counts all the records of the file from 1; ``offset`` is where the record starts
    in the file's bytes (a gzip member's first byte in a ``.warc.gz``). ``status``, ``mime`` and
    ``charset`` come from the HTTP response (``mime``, ``charset``: its Content-Type) of
    ``response`` records, and from the record's own Content-Type for the others. ``body`` is the
    HTTP payload of a response (transfer and content encodings undone) or the block of a
    ``conversion`` or ``resource`` record, at most ``max_bytes + 1`` bytes of it; None for other
    types, and for responses without HTTP headers.
    """

    number: int
    type: str
    record_id: str | None
    url: str | None
    offset: int
    status: int | None
    status_line: str | None
    mime: str | None
    charset: str | None
    body: bytes | None
    error: str | None = None  # why the payload could not be decoded (bad chunking, content encoding)


class ArchiveError(Exception):
    """The file cannot be read from record ``number`` on (``why`` says what went wrong)."""

    def __init__(self, number: int, why: str):
        super().__init__(why)
        self.number = number
        self.why = why


def _uri(value: str | None) -> str | None:
    if not value:
        return None
    value = value.strip().strip("<>")
    return value or None


def _open(source) -> tuple[BinaryIO, bool]:
    if isinstance(source, (str, os.PathLike)):
        return open(source, "rb"), True
    return source, False


def read_warc_records(source, *, max_bytes: int | None = None, bodies: bool = True) -> Iterator[ArchiveRecord]:
    """Every record of a WARC or ARC file (a path or a binary file object), in file order
    (``bodies=False``: without reading the payloads, ``body`` is None).

    Raises :class:`ArchiveError` (with the number of the record that could not be read) when the
    file is not a web archive or cannot be read on; the records before it have been yielded.
    """
    fh, mine = _open(source)
    try:
        start = fh.tell() if fh.seekable() else 0
        head = fh.read(4096)
        if archive_kind(head) is None and head[:4] == ZSTD_MAGIC:
            head += fh.read(_SNIFF_MAX - len(head))  # one zstd frame for the whole file: a block in
        if fh.seekable():
            fh.seek(start)
        else:  # a pipe: the bytes read to sniff go first
            fh = _Prefixed(head, fh)
        kind = archive_kind(head)
        if kind is None:
            raise ArchiveError(1, "not a WARC or ARC file (it does not start with 'WARC/' or 'filedesc://')")
        if kind == "arc":
            yield from _read_arc(fh, max_bytes, bodies)
        else:
            yield from _read_fastwarc(fh, max_bytes, bodies)
    finally:
        if mine:
            fh.close()


class _Prefixed:
    """A read-only stream: ``head``, then the rest of ``fh``."""

    def __init__(self, head: bytes, fh):
        self._head = head
        self._fh = fh
        self._pos = 0

    def read(self, n: int = -1) -> bytes:
        out = self._read(n)
        self._pos += len(out)
        return out

    def _read(self, n: int) -> bytes:
        if self._head:
            if n is None or n < 0:
                out, self._head = self._head + self._fh.read(), b""
                return out
            out, self._head = self._head[:n], self._head[n:]
            if len(out) < n:
                out += self._fh.read(n - len(out))
            return out
        return self._fh.read(n)

    def tell(self) -> int:
        return self._pos

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False


def _limit(reader, max_bytes: int | None) -> bytes:
    return reader.read() if max_bytes is None else reader.read(max_bytes + 1)


def _read_fastwarc(fh, max_bytes: int | None, bodies: bool) -> Iterator[ArchiveRecord]:
    fw = require("fastwarc.warc", "io")
    number = 0
    try:
        for rec in fw.ArchiveIterator(fh, parse_http=False, fsspec_args=False):
            number += 1
            rtype = str(rec.record_type)
            headers = rec.headers
            url = _uri(headers.get("WARC-Target-URI"))
            rid = _uri(headers.get("WARC-Record-ID"))
            status = status_line = body = error = None
            mime, charset = parse_content_type(headers.get("Content-Type"))
            is_http = rtype == "response" and mime.startswith("application/http")
            if rtype in ("response", "conversion", "resource") and (bodies or is_http):
                # The block is read whole and measured: FastWARC ends a cut-off gzip member or
                # file quietly, and a record shorter than its Content-Length is a broken file.
                # Without the bodies, the HTTP headers are all that is wanted.
                block = rec.reader.read() if bodies else rec.reader.read(_HTTP_HEAD)
                want = rec.content_length
                if bodies and want is not None and len(block) < want:
                    raise ArchiveError(number, f"record {number} is cut short ({len(block)} of its {want} bytes): "
                                               "the file is truncated")
                if is_http:
                    status, status_line, http = _parse_http(block)
                    mime, charset = parse_content_type(http.get("content-type"))
                    if status == 200 and bodies:
                        body, error = _http_body(http, block[http["\0body"]:], max_bytes)
                elif rtype != "response":
                    body = block if max_bytes is None else block[: max_bytes + 1]
            yield ArchiveRecord(number, rtype, rid, url, rec.stream_pos, status, status_line, mime or None,
                                charset, body, error)
    except ArchiveError:
        raise
    except Exception as exc:  # noqa: BLE001 - truncated gzip, bad header
        raise ArchiveError(number + 1, f"cannot read the WARC file after record {number}: {exc}") from exc


def _parse_http(block: bytes) -> tuple[int | None, str | None, dict]:
    """``(status, status line, headers)`` of an HTTP response block; the headers' names are
    lower-cased, and ``headers["\\0body"]`` is where the payload starts."""
    end = block.find(b"\r\n\r\n")
    sep = 4
    if end < 0:
        end, sep = block.find(b"\n\n"), 2
        if end < 0:
            end, sep = len(block), 0
    lines = block[:end].decode("latin-1").splitlines()
    headers: dict = {"\0body": end + sep}
    status_line = lines[0].strip() if lines else ""
    parts = status_line.split(None, 2)
    status = int(parts[1]) if len(parts) >= 2 and parts[1].isdigit() else None
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if colon:
            headers.setdefault(name.strip().lower(), value.strip())
    return status, status_line or None, headers


def _http_body(http: dict, data: bytes, max_bytes: int | None) -> tuple[bytes | None, str | None]:
    """The payload of an HTTP response, its transfer and content encodings undone (chunked, gzip,
    deflate, br), or ``(None, why)``."""
    try:
        te = (http.get("transfer-encoding") or "").lower()
        if "chunked" in te:
            data = _dechunk(data)
        ce = (http.get("content-encoding") or "").strip().lower()
        if ce in ("gzip", "x-gzip"):
            data = zlib.decompressobj(47).decompress(data)
        elif ce == "deflate":
            try:
                data = zlib.decompress(data)
            except zlib.error:
                data = zlib.decompress(data, -15)
        elif ce == "br":
            import brotli

            data = brotli.decompress(data)
    except Exception as exc:  # noqa: BLE001 - bad chunking or content encoding
        return None, f"cannot decode the HTTP body: {exc or type(exc).__name__}"
    if max_bytes is not None:
        data = data[: max_bytes + 1]
    return data, None


def _dechunk(data: bytes) -> bytes:
    out = []
    i = 0
    n = len(data)
    while i < n:
        eol = data.find(b"\r\n", i)
        if eol < 0:
            raise ValueError("a chunk size line without its end")
        size_field = data[i:eol].split(b";", 1)[0].strip()
        size = int(size_field, 16)
        if size == 0:
            break
        start = eol + 2
        if start + size > n:
            raise ValueError("a chunk longer than the body")
        out.append(data[start:start + size])
        i = start + size + 2
    return b"".join(out)


def _read_arc(fh, max_bytes: int | None, bodies: bool) -> Iterator[ArchiveRecord]:
    ArchiveIterator = require("warcio.archiveiterator", "io").ArchiveIterator
    number = 0
    try:
        it = ArchiveIterator(fh, arc2warc=True)
        for rec in it:
            number += 1
            rtype = rec.rec_type
            url = _uri(rec.rec_headers.get_header("WARC-Target-URI"))
            rid = _uri(rec.rec_headers.get_header("WARC-Record-ID"))
            status = status_line = body = None
            mime, charset = parse_content_type(rec.rec_headers.get_header("Content-Type"))
            if rtype == "response" and rec.http_headers is not None:
                http = rec.http_headers
                code = http.get_statuscode()
                status = int(code) if code and code.isdigit() else None
                status_line = http.statusline
                mime, charset = parse_content_type(http.get_header("Content-Type"))
                if bodies:
                    body = _limit(rec.content_stream(), max_bytes)
            # asked before the payload is read, warcio reads the payload away (uncompressed ARC)
            offset = it.get_record_offset()
            yield ArchiveRecord(number, rtype, rid, url, offset, status, status_line, mime or None, charset, body)
    except Exception as exc:  # noqa: BLE001 - truncated or corrupt archive
        raise ArchiveError(number + 1, f"cannot read the ARC file after record {number}: {exc}") from exc


def _oserror(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


# Where the records of an archive start and which are input records, as the read pass of
# input_records saw them, per file: write_kept_warc copies the kept records without reading the
# archive again (a pass of FastWARC, which must inflate every record to find the next) when the
# file is unchanged since (size, modification time, inode). Bounded: at most _SEEN_MAX_RECORDS
# records in all (9 bytes a record), the files read last; each entry is dropped when used.
_SEEN: dict[str, tuple[tuple, array, bytearray]] = {}
_SEEN_MAX_RECORDS = 1 << 22


def _file_key(path: str) -> tuple | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError, TypeError):  # not a local file (a URL): not remembered
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)


def _remember(path: str, key: tuple | None, starts: array, counts: bytearray) -> None:
    if key is None or len(starts) > _SEEN_MAX_RECORDS or _file_key(path) != key:
        return
    _SEEN.pop(path, None)
    held = sum(len(seen[1]) for seen in _SEEN.values())
    while _SEEN and held + len(starts) > _SEEN_MAX_RECORDS:  # the oldest go first
        held -= len(_SEEN.pop(next(iter(_SEEN)))[1])
    _SEEN[path] = (key, starts, counts)


def remembered_starts(path: str):
    """``(offset, input record?)`` of every record of ``path`` as the read pass saw them, or
    None when it did not read this file to its end or the file changed since."""
    seen = _SEEN.pop(path, None)
    if seen is None or _file_key(path) != seen[0]:
        return None
    return zip(seen[1], map(bool, seen[2]))


def input_records(path: str, max_bytes: int | None, source=None) -> Iterator[tuple[int, str, tuple]]:
    """The input records of a web archive, for the readers:

    ``(n, "doc", (id, url, body, charset, record_id))`` for an HTML response (status 200),
    ``(n, "text", (id, url, body, charset, record_id))`` for a conversion record (WET text),
    ``(n, "skip", (id, reason, detail))`` for another response, and ``(n, "error", (why,))``
    when the file cannot be read on (which ends it). ``n`` is the record's number in the file;
    ``id`` is its WARC-Target-URI, else ``<path>:<n>``. ``source``: an open binary file of
    ``path`` to read instead of opening it.
    """
    number = 0
    # the records' starts, for write_kept_warc (absolute offsets: the file is read from its start)
    key = _file_key(path) if source is None or (source.seekable() and source.tell() == 0) else None
    starts, counts = array("q"), bytearray()
    try:
        for rec in read_warc_records(path if source is None else source, max_bytes=max_bytes):
            number = rec.number
            kind = _input_kind(rec)
            if key is not None:
                starts.append(rec.offset)
                counts.append(kind is not None)
            if kind is None:
                continue
            ident = rec.url or f"{path}:{rec.number}"
            if kind == "skip_no_http":
                yield rec.number, "skip", (ident, "not_html",
                                           f"response record without HTTP headers (Content-Type {rec.mime or 'none'})")
                continue
            if rec.type == "response" and rec.status != 200:
                yield rec.number, "skip", (ident, "http_status", f"HTTP status {rec.status} ({rec.status_line})")
                continue
            if kind == "skip_mime":
                yield rec.number, "skip", (ident, "not_html", f"Content-Type {rec.mime}")
                continue
            if rec.error is not None or rec.body is None:
                yield rec.number, "skip", (ident, "undecodable", rec.error or "no payload")
                continue
            body = rec.body
            if max_bytes is not None and len(body) > max_bytes:
                what = "HTTP body" if rec.type == "response" else "record block"
                yield rec.number, "skip", (ident, "too_large", f"{what} over the {max_bytes} byte limit")
                continue
            if kind == "doc" and not rec.mime and not looks_like_html(body):
                yield rec.number, "skip", (ident, "not_html", "no Content-Type and the body does not look like HTML")
                continue
            yield rec.number, kind, (ident, rec.url, body, rec.charset, rec.record_id)
        _remember(path, key, starts, counts)
    except ArchiveError as exc:
        yield exc.number, "error", (exc.why,)
    except OSError as exc:
        yield number + 1, "error", (f"cannot open the file: {_oserror(exc)}",)


def _input_kind(rec: ArchiveRecord) -> str | None:
    """What a record is to the readers: None (no input record), "doc", "text", or a skip."""
    if rec.type == "response":
        if rec.status is None:
            return "skip_no_http"
        if rec.status == 200 and rec.mime and rec.mime not in HTML_MIMES:
            return "skip_mime"
        return "doc"
    if rec.type == "conversion":
        if rec.mime and not rec.mime.startswith("text/"):
            return None
        return "text"
    return None


def is_input_record(rec: ArchiveRecord) -> bool:
    """Whether a record takes an ordinal (a response or a text conversion record)."""
    return _input_kind(rec) is not None


def record_starts(path: str) -> Iterator[tuple[int, bool]]:
    """``(offset, input record?)`` of every record of the archive ``path``, in file order, read
    in one pass that parses the WARC headers only: whether a record takes an ordinal is a matter
    of its type (every ``response``) and, for a ``conversion``, of its own Content-Type
    (:func:`is_input_record`), never of its HTTP head or payload. A file that cannot be read on
    ends the records (:class:`ArchiveError`, as :func:`read_warc_records` raises it)."""
    with open(path, "rb") as fh:
        head = fh.read(4096)
    if archive_kind(head) != "warc":  # ARC: warcio's records
        for rec in read_warc_records(path, bodies=False):
            yield rec.offset, is_input_record(rec)
        return
    fw = require("fastwarc.warc", "io")
    number = 0
    with open(path, "rb") as fh:
        try:
            for rec in fw.ArchiveIterator(fh, parse_http=False, fsspec_args=False):
                number += 1
                rtype = str(rec.record_type)
                if rtype == "response":
                    counts = True
                elif rtype == "conversion":
                    mime, _charset = parse_content_type(rec.headers.get("Content-Type"))
                    counts = not mime or mime.startswith("text/")
                else:
                    counts = False
                yield rec.stream_pos, counts
        except Exception as exc:  # noqa: BLE001 - truncated gzip, bad header
            raise ArchiveError(number + 1, f"cannot read the WARC file after record {number}: {exc}") from exc


def read_input_records(path: str, max_bytes: int | None) -> Iterator[tuple[int, str, tuple]]:
    """The input records of a WARC or ARC file (a local path, ``-`` or a URL): :func:`input_records`."""
    try:
        fh = open_binary(path)
    except OSError as exc:
        yield 1, "error", (f"cannot open the file: {failure_reason(exc)}",)
        return
    with fh:
        yield from input_records(path, max_bytes, fh)


def read_warc(reader, path: str, n: int):
    """The Documents and Skipped records of the input records of a WARC or ARC file, numbered from ``n``;
    returns the next ordinal. An HTML body is decoded (its charset, else UTF-8) and extracted."""
    want = reader.want
    for recno, kind, payload in read_input_records(path, reader.max_bytes):
        src = f"{path}:{recno}"
        if want is not None and not want(n):
            n += 1
            continue
        if kind == "doc" or kind == "text":  # an HTML response, a WET conversion record
            ident, url, body, charset, record_id = payload
            meta = {"url": url} if url else {}
            if record_id:
                meta["record_id"] = record_id
            if kind == "doc" and reader.jobs > 1:  # decoded by the worker, with the extraction
                yield PendingPage(ident, n, src, with_claims(reader, meta, body, url), body, url, charset, reader.errors,
                                  f"the body is not valid {charset or 'UTF-8'}")
                n += 1
                continue
            if kind == "doc":
                text = decode_html(body, charset, errors=reader.errors)
            else:
                text = decode_text(body, reader.errors) if charset is None else decode_html(body, charset, errors=reader.errors)
            if text is None:
                yield Skipped(ident, n, src, "undecodable", f"the body is not valid {charset or 'UTF-8'}")
            else:
                yield finish_record(reader, ident, text, n, src, meta, is_html=kind == "doc", url=url)
        elif kind == "skip":
            ident, reason, detail = payload
            yield Skipped(ident, n, src, reason, detail)
        else:
            yield Skipped(src, n, src, "unreadable_file", payload[0])
        n += 1
    return n
