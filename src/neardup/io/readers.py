"""Streaming readers: every input record comes out once, as a Document or as a Skipped record.

Inputs are local paths, ``-`` (standard input, read once), or fsspec URLs, all opened through
:mod:`neardup.io.sources`. With ``format="auto"`` each file's format is found by its content
(:func:`sniff_format`: compression by magic number, gzip, zstd, bzip2 or xz; then Parquet, Arrow
IPC, WARC and ARC magic; then the name; then a JSON object or an HTML page), the name being only
a hint. Formats:

``jsonl``
    ``.jsonl``, ``.json``, ``.ndjson``, optionally ``.gz`` / ``.zst`` (the compression is recognised
    from the file's first bytes, whatever its name). One JSON object per line, read line by line and
    parsed with orjson; lines are UTF-8 strictly (:func:`read_encoded`, which ``neardup dedup``
    uses, gives the same records, ordinary lines scanned in blocks by ``neardup._jsonl``). Every
    line is a record, a blank line included
    (it is Skipped as ``empty``), so ``source`` is ``<file>:<line>`` with 1-based line numbers.
    With ``max_bytes`` a longer line is read in bounded chunks and thrown away (``too_large``).
``parquet``
    ``.parquet`` / ``.pq``, read with ``ParquetFile.iter_batches`` over the id, text and
    ``keep_fields`` columns only. ``source`` is ``<file>:<row>`` with 0-based rows. A ``binary``
    text column is decoded as UTF-8 (``errors`` applies). If the file cannot be read from some row
    on, each remaining row is Skipped as ``unreadable_file``, so a file always yields as many
    records as its footer says it has.
``csv`` / ``tsv``
    ``.csv`` / ``.tsv`` (optionally compressed): a header row, then one record per row, with
    ``id_field`` and ``text_field`` naming columns; ``source`` is ``<file>:<row>``, rows counted
    from 1 after the header.
``arrow``
    An Arrow IPC file (``.arrow``, Feather v2) or stream (``.arrows``), read batch by batch like
    Parquet; ``source`` is ``<file>:<row>`` with 0-based rows.
``warc``
    ``.warc`` / ``.warc.gz`` / ``.warc.zst`` (and ARC, by its ``filedesc://`` magic), read by
    :mod:`neardup.io.warc` (FastWARC; ARC with warcio). **Input records are ``response`` records
    and ``conversion`` records** (WET text, taken as plain text); ``warcinfo``, ``request``,
    ``metadata``, ``revisit`` and ``resource`` records are not documents and take no ordinal.
    Of the responses, those with an HTTP status other than 200
    are Skipped as ``http_status``, those whose Content-Type is not ``text/html`` or
    ``application/xhtml+xml`` (or, with no Content-Type, whose body does not start like HTML) as
    ``not_html``; the rest are decoded (HTTP charset, else ``<meta charset>``, else UTF-8) and go
    through :func:`neardup.text.html.extract_text`. ``id`` is the WARC-Target-URI (also in
    ``meta["url"]``; the WARC-Record-ID is ``meta["record_id"]``); ``source`` is ``<file>:<n>``, n the 1-based number of the record among all the
    records of the file.
``html``
    A ``.html`` / ``.htm`` / ``.xhtml`` file, or a folder holding at least one. Each file is a
    document (``id`` = ``source`` = its path), decoded like a WARC body and extracted. In a folder
    recognised as HTML by ``format="auto"``, the other files are Skipped as ``not_html``; with
    ``format="html"`` every file is read as HTML.
``text``
    Any other file, or a folder of them: each file is one document. UTF-8 (a UTF-8 or UTF-16 byte
    order mark is honoured); a file holding NUL bytes is Skipped as ``binary``; invalid UTF-8 is
    replaced (``errors="replace"``, the default) or Skipped as ``undecodable`` (``errors="strict"``).

Folders are walked in sorted order (:func:`neardup.io.sources.walk`) without the names Spark
leaves out (``_SUCCESS``, ``_*``, ``.*``, ``*.crc``: :func:`neardup.io.sources.is_hidden_name`);
symlinked folders are not followed. With ``format="auto"``, a folder holding data files (JSONL,
CSV, TSV, Parquet, Arrow, WARC) is a dataset: those are read, each in its format, and its other
files are ignored (``InputReport.ignored_files``); else a folder holding an HTML file is ``html``;
else ``text``. A file that is not a regular file (a broken link, a pipe) or a folder that cannot
be listed is one ``unreadable_file`` record. Paths that do not exist raise :class:`InputError`
when :func:`read_documents` is called.

A file that cannot be opened or read to its end is, with ``on_error="skip"`` (the library's
default), one ``unreadable_file`` record (the records before the break are kept) and an entry of
``report.skipped_files``; with ``on_error="error"`` (the command's default) it raises
:class:`UnreadableInput` naming it. Bad records are always Skipped, never raised.

``content="html"`` runs JSONL, Parquet and text-file texts through HTML extraction as well. The
reasons a record is Skipped are the keys of :data:`neardup.io.documents.SKIP_REASONS`.
"""

from __future__ import annotations

import gzip
import io
import os
from typing import Iterator

import orjson

from ..errors import ConfigError, InputError, require
from ..text.html import HTML_MODES, _extract, decode_html
# the workers' functions live beside the extraction, so that a worker process imports only that
from ..text.html_pages import FROM_STR as _FROM_STR
from ..text.html_pages import extract_many as _extract_many
from ..text.html_pages import extract_page as _extract_page
from .documents import Document, EncodedDocuments, Skipped
from .texts import TextSpill, needed as _texts_needed
from .sources import exists, is_folder, local_path, missing, open_binary, size_of, walk
from .warc import input_records as warc_input_records
from .warc import looks_like_html as _looks_like_html

try:
    from .. import _jsonl
except ImportError:  # not built: every line goes through orjson
    _jsonl = None

__all__ = ["FORMATS", "detect_format", "read_documents", "read_encoded", "iter_raw_records"]

FORMATS = ("jsonl", "parquet", "arrow", "csv", "tsv", "warc", "html", "text")
CONTENTS = ("text", "html")
ERRORS = ("replace", "strict")
#: What to do with a file that cannot be read: raise UnreadableInput naming it, or skip it (one
#: ``unreadable_file`` record, and its path in the InputReport).
ON_ERROR = ("error", "skip")

_JSONL_EXT = (".jsonl", ".json", ".ndjson")
_COMPRESSED_EXT = (".gz", ".zst", ".zstd", ".bz2", ".xz")
_ARROW_EXT = (".arrow", ".feather", ".ipc", ".arrows")
_WARC_EXT = (".warc", ".arc", ".wet", ".warc.wet", ".warc.wat")
_BZ2_MAGIC = b"BZh"
_XZ_MAGIC = b"\xfd7zXZ\x00"
_SNIFF_BYTES = 4096
_HTML_EXT = (".html", ".htm", ".xhtml")
_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
PARQUET_BATCH_ROWS = 1024
_MAX_KEYS_SHOWN = 12
#: Bytes read at a time by the JSONL fast path (tests make it small).
JSONL_BLOCK_BYTES = 4 << 20


def has_line_scanner() -> bool:
    """True when the compiled JSONL scanner is built (:func:`jsonl_line_ends`, :func:`read_encoded`)."""
    return _jsonl is not None


def jsonl_line_ends(block) -> "np.ndarray | None":
    """The offsets just past each ``\\n`` of a block of JSONL bytes (int64), from the compiled
    scanner; None when it is not built (then read the lines with :func:`read_lines`)."""
    if _jsonl is None:
        return None
    import numpy as np

    return np.frombuffer(_jsonl.line_ends(block), dtype=np.int64)


# --------------------------------------------------------------------------- formats and walking


def kind_of(name: str) -> str | None:
    """The format a file name announces, or None (a hint only: :func:`sniff_format` decides)."""
    n = name.lower()
    base = n
    for ext in _COMPRESSED_EXT:
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


def compression_of(magic: bytes) -> str | None:
    """``"gzip"``, ``"zstd"``, ``"bz2"``, ``"xz"`` or None, from a stream's first bytes."""
    if magic[:2] == _GZIP_MAGIC:
        return "gzip"
    if magic[:4] == _ZSTD_MAGIC:
        return "zstd"
    if magic[:3] == _BZ2_MAGIC and magic[3:4].isdigit():
        return "bz2"
    if magic[:6] == _XZ_MAGIC:
        return "xz"
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
    if _looks_like_html(body):
        return "html"
    return "text"


def _probe(path: str) -> tuple[str | None, str]:
    """``(why it cannot be read, or None; its format)`` of one file, from its first bytes."""
    try:
        with _open_stream(path) as fh:
            compressed = isinstance(fh, _Decompressed)
            try:  # straight from the decompressor: the buffer would read a MiB ahead
                head = (fh.raw if compressed else fh).read(_SNIFF_BYTES)
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
        return f"cannot open the file: {_oserror(exc)}", kind_of(path) or "text"
    return None, sniff_format(path, head, compressed, tail)


#: The formats of a file of records (a shard of a dataset), as opposed to a file that is one document.
DATA_FORMATS = ("jsonl", "parquet", "arrow", "csv", "tsv", "warc")


class InputPlan:
    """The files to read, checked and classified once (:func:`plan_inputs`).

    ``leaves``: ``(path, format, why)`` in reading order, ``why`` not None for a file that
    cannot be read (one ``unreadable_file`` record). ``ignored``: ``{"path", "reason"}`` of the
    files left out of a folder of data files (a README.md beside Parquet shards). ``paths``: the
    inputs as given, which iterating the plan yields, so that a plan stands where a list of paths
    is expected."""

    def __init__(self, paths=()):
        self.paths: list[str] = list(paths)
        self.leaves: list[tuple[str, str, str | None]] = []
        self.ignored: list[dict] = []

    def __iter__(self):
        return iter(self.paths)

    def __len__(self) -> int:
        return len(self.paths)

    def formats(self) -> set[str]:
        return {fmt for _, fmt, why in self.leaves if why is None}


def _plan_folder(plan: InputPlan, top: str, format: str) -> None:
    """A folder's files: with a format given, all of them in it; with ``auto``, each by its own
    content. A folder holding data files (:data:`DATA_FORMATS`) is a dataset: those are read and
    its other files are ignored (listed in ``plan.ignored``); else a folder holding an HTML file is
    a folder of pages (the other files are Skipped as ``not_html``); else every file is a text."""
    found = []
    for leaf, err in walk(top):
        if err is not None:
            found.append((leaf, "text", err))
        elif format != "auto":
            found.append((leaf, format, None))
        else:
            why, fmt = _probe(leaf)
            found.append((leaf, fmt, why))
    if format != "auto":
        plan.leaves.extend(found)
        return
    kinds = {fmt for _, fmt, why in found if why is None}
    if kinds & set(DATA_FORMATS):
        for leaf, fmt, why in found:
            if why is not None or fmt in DATA_FORMATS:
                plan.leaves.append((leaf, fmt, why))
            else:
                plan.ignored.append({"path": leaf, "reason": f"a {fmt} file in a folder of data files ({top})"})
    elif "html" in kinds:
        plan.leaves.extend((leaf, fmt if fmt == "html" or why is not None else "not_html", why)
                           for leaf, fmt, why in found)
    else:
        plan.leaves.extend((leaf, "text", why) for leaf, fmt, why in found)


def detect_format(path: str) -> str:
    """The format ``format="auto"`` reads a file or folder as: one of :data:`FORMATS` (for a
    folder: its data files' format if they are of one kind, ``"html"`` or ``"text"``)."""
    path = os.fspath(path)
    if not exists(path):
        raise InputError(f"{path}: {missing(path)}")
    if is_folder(path):
        plan = InputPlan()
        _plan_folder(plan, path, "auto")
        kinds = plan.formats() - {"not_html"}
        return kinds.pop() if len(kinds) == 1 else ("text" if not kinds else "mixed")
    return _probe(path)[1]


def plan_inputs(paths, format: str) -> InputPlan:
    """Check the inputs up front (a missing one is an InputError) and list every file to read."""
    if isinstance(paths, InputPlan):
        return paths
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    if format != "auto" and format not in FORMATS:
        raise ConfigError(f"The 'format' parameter must be one of 'auto', {', '.join(map(repr, FORMATS))}. Got {format!r} instead.")
    paths = [os.fsdecode(p) for p in paths]
    for p in paths:
        if not exists(p):
            hint = (" (a quoted glob? it matches nothing)" if any(c in p for c in "*?[") else "")
            raise InputError(f"{p}: {missing(p)}{hint}")
    plan = InputPlan(paths)
    for p in paths:
        if is_folder(p):
            _plan_folder(plan, p, format)
        elif format != "auto":
            plan.leaves.append((p, format, None))
        else:
            why, fmt = _probe(p)
            plan.leaves.append((p, fmt, why))
    return plan


def input_leaves(plan) -> Iterator[tuple[str, str, str | None]]:
    """Every file to read: ``(path, format, None)``; ``(path, format, why)`` for one unreadable
    record; format ``"not_html"`` for a non-HTML file in a folder of HTML files."""
    return iter(plan_inputs(plan, "auto").leaves)


# --------------------------------------------------------------------------- low-level record streams


class _Decompressed(io.BufferedReader):
    """A buffered decompressing stream that closes the raw file under it as well."""

    def __init__(self, stream, raw, compression: str):
        super().__init__(stream, 1 << 20)
        self._raw = raw
        self.compression = compression

    def close(self):
        try:
            super().close()
        finally:
            self._raw.close()


def _open_stream(path: str):
    """A buffered binary stream of the file's bytes (a local path, ``-`` or a URL), decompressed
    by magic number whatever its name (gzip, zstd, bzip2, xz). The file is opened once."""
    raw = open_binary(path)
    try:
        magic = raw.read(6)
        raw.seek(0)
        kind = compression_of(magic)
        if kind is None:
            return raw
        if kind == "gzip":
            return _Decompressed(gzip.GzipFile(fileobj=raw, mode="rb"), raw, kind)
        if kind == "bz2":
            import bz2

            return _Decompressed(bz2.BZ2File(raw, "rb"), raw, kind)
        if kind == "xz":
            import lzma

            return _Decompressed(lzma.LZMAFile(raw, "rb"), raw, kind)
        zstd = require("zstandard", "io")
        reader = zstd.ZstdDecompressor(max_window_size=2**31).stream_reader(raw, read_across_frames=True, closefd=False)
        return _Decompressed(reader, raw, kind)
    except BaseException:
        raw.close()
        raise


def _oserror(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def read_lines(path: str, max_bytes: int | None) -> Iterator[tuple[int, bytes | int | str]]:
    """``(line number, line bytes)`` for each line; an ``int`` (its size) instead of the bytes for a
    line over ``max_bytes``, which is never held whole; a ``str`` (why) when the stream breaks,
    which ends the file."""
    try:
        fh = _open_stream(path)
    except OSError as exc:
        yield 1, f"cannot open the file: {_oserror(exc)}"
        return
    lineno = 0
    with fh:
        try:
            if max_bytes is None:
                for line in fh:
                    lineno += 1
                    yield lineno, line
            else:
                limit = max_bytes + 2  # room for "\r\n"
                readline = fh.readline
                while True:
                    line = readline(limit)
                    if not line:
                        break
                    lineno += 1
                    size = len(line)
                    if size > max_bytes:
                        if line[-1:] == b"\n":
                            size -= 2 if line[-2:] == b"\r\n" else 1
                        else:
                            while True:  # drain the rest of the line in bounded chunks
                                chunk = readline(1 << 20)
                                size += len(chunk)
                                if not chunk or chunk[-1:] == b"\n":
                                    if chunk[-1:] == b"\n":
                                        size -= 1
                                    break
                        if size > max_bytes:
                            yield lineno, size
                            continue
                    yield lineno, line
        except Exception as exc:  # noqa: BLE001 - truncated gzip, corrupt zstd frame, I/O error
            yield lineno + 1, f"cannot read the file after line {lineno}: {_oserror(exc)}"


class BrokenInput(Exception):
    """The block reader met a stream it cannot open or read to its end."""


def jsonl_blocks(path: str, max_bytes: int | None, size: int):
    """Blocks of whole lines, as ``(buffer, length)``: ``buffer[:length]`` holds about ``size``
    bytes of whole lines (the file's last line may lack its newline). The buffer is reused: it
    is valid until the next block is asked for. In place of a line over ``max_bytes`` (read in
    bounded chunks and thrown away), its size as :func:`read_lines` gives it (int). Raises
    :class:`BrokenInput` when the stream cannot be opened or read further; the lines of the blocks
    already given are whole."""
    try:
        fh = _open_stream(path)
    except OSError as exc:
        raise BrokenInput() from exc
    buf = bytearray(2 * size)  # one reused buffer: no fresh memory (page faults) per block
    have = 0  # bytes of an unfinished line at the front of buf
    with fh:
        try:
            while True:
                if len(buf) - have < size:  # a line longer than a block
                    buf.extend(bytes(len(buf)))
                with memoryview(buf) as view:
                    got = fh.readinto(view[have : have + size])
                if not got:
                    if have:
                        yield buf, have
                    return
                end = have + got
                cut = buf.rfind(b"\n", have, end) + 1
                if cut:
                    yield buf, cut
                    buf[: end - cut] = buf[cut:end]  # the unfinished line to the front
                    have = end - cut
                else:
                    have = end
                if max_bytes is not None and have > max_bytes + 1:
                    # over the limit whatever its ending: count the rest of the line, keep none of it
                    # (the size as read_lines counts a line it drains: without its "\n")
                    total = have
                    while True:
                        more = fh.readline(1 << 20)
                        total += len(more)
                        if not more or more[-1:] == b"\n":
                            break
                    have = 0
                    yield total - (more[-1:] == b"\n")
        except Exception as exc:  # noqa: BLE001 - truncated gzip, corrupt zstd frame, I/O error
            raise BrokenInput() from exc


def line_or_size(line: bytes, max_bytes: int | None) -> bytes | int:
    """A whole line as :func:`read_lines` gives it: its bytes, or its size when over ``max_bytes``
    (without "\r\n" or "\n" when the line fits in its ``readline(max_bytes + 2)``, else without
    "\n" only)."""
    if max_bytes is None or len(line) <= max_bytes:
        return line
    size = len(line)
    if size <= max_bytes + 2 and line[-1:] == b"\n":
        size -= 2 if line[-2:] == b"\r\n" else 1
    elif line[-1:] == b"\n":
        size -= 1
    return size if size > max_bytes else line


def _cp_offsets(utf8: bytes | bytearray, offsets) -> list[int]:
    """Byte offsets into UTF-8 text as code point offsets (for slicing its decoded str)."""
    if len(utf8) == 0 or utf8.isascii():
        return offsets.tolist()
    import numpy as np

    starts = np.frombuffer(bytes(utf8), dtype=np.uint8)
    is_start = (starts & 0xC0) != 0x80
    cum = np.concatenate(([0], np.cumsum(is_start)))
    return cum[offsets].tolist()


def _warc(path: str, max_bytes: int | None) -> Iterator[tuple[int, str, tuple]]:
    """The input records of a WARC or ARC file: :func:`neardup.io.warc.input_records`."""
    try:
        fh = open_binary(path)
    except OSError as exc:
        yield 1, "error", (f"cannot open the file: {_oserror(exc)}",)
        return
    with fh:
        yield from warc_input_records(path, max_bytes, fh)


def open_parquet(path: str):
    """``(ParquetFile, number of rows)``, or ``(None, why)``."""
    pq = require("pyarrow.parquet", "io")
    try:
        local = local_path(path)  # a local file is memory-mapped by pyarrow; a URL read through fsspec
        pf = pq.ParquetFile(local if local is not None else open_binary(path))
        return pf, pf.metadata.num_rows
    except Exception as exc:  # noqa: BLE001 - not a parquet file, truncated footer, I/O error
        return None, f"cannot open the Parquet file: {_oserror(exc)}"


def _has_nul(data: bytes) -> bool:
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return False  # UTF-16 with a byte order mark
    return b"\x00" in data


# --------------------------------------------------------------------------- records to documents


def id_string(value, fallback: str) -> str:
    if value is None or value == "":
        return fallback
    t = type(value)
    if t is str:
        return value
    if t is int:
        return str(value)
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return str(value)


def utf8_length(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def describe_value(value) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )


class RecordReader:
    """Options and per-format readers. Each ``_read_*`` generator yields Documents and Skipped
    records numbered from ``n`` and returns the next ordinal."""

    def __init__(self, *, id_field="id", text_field="text", content="text", html="main", keep_fields=(),
                 max_bytes=None, errors="replace", jobs=1, want=None, on_error="skip", report=None, text_spill=None,
                 claims=False):
        for name, value in (("id_field", id_field), ("text_field", text_field)):
            if not isinstance(value, str) or not value:
                raise ConfigError(f"The '{name}' parameter must be a non-empty str. Got {value!r} instead.")
        if content not in CONTENTS:
            raise ConfigError(f"The 'content' parameter must be one of 'text', 'html'. Got {content!r} instead.")
        if html not in HTML_MODES:
            raise ConfigError(f"The 'html' parameter must be one of 'main', 'whole'. Got {html!r} instead.")
        if errors not in ERRORS:
            raise ConfigError(f"The 'errors' parameter must be one of 'replace', 'strict'. Got {errors!r} instead.")
        if max_bytes is not None and (isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1):
            raise ConfigError(f"The 'max_bytes' parameter must be None or a positive int. Got {max_bytes!r} instead.")
        if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
            raise ConfigError(f"The 'jobs' parameter must be a positive int. Got {jobs!r} instead.")
        if isinstance(keep_fields, str):
            keep_fields = (keep_fields,)
        self.id_field = id_field
        self.text_field = text_field
        self.content = content
        self.html = html
        self.keep_fields = tuple(keep_fields)
        self.max_bytes = max_bytes
        self.errors = errors
        self.jobs = jobs
        self.want = want  # write_kept: an ordinal predicate; records not wanted are counted, not read
        if on_error not in ON_ERROR:
            raise ConfigError(f"The 'on_error' parameter must be one of 'error', 'skip'. Got {on_error!r} instead.")
        self.on_error = on_error
        self.report = report  # an InputReport: the files skipped (on_error="skip") and ignored
        # a run's work folder: the read pass keeps there the texts that write_kept would extract
        # again (neardup.io.texts); self.spill is its TextSpill while the plan is read
        self.text_spill = text_spill
        self.spill = None
        # a page's canonical link and og:url into its meta (neardup.text.html_links), for URL identity
        self.claims = claims

    def claimed(self, meta: dict, page, url) -> dict:
        """``meta`` with the page's claims about its URL (``canonical``, ``og_url``) when asked for."""
        if self.claims:
            from ..text.html_links import page_claims

            meta.update(page_claims(page, url))
        return meta

    # -- shared ------------------------------------------------------------------------------

    def finish_record(self, ident, text, n, src, meta, *, is_html, url=None):
        """Extract HTML if needed (or defer it to the worker processes) and reject empty text."""
        if is_html and text and not text.isspace():
            meta = self.claimed(meta, text, url)
            if self.jobs > 1:
                return _Pending(ident, n, src, meta, text, url)
            return _extracted(ident, n, src, meta, _extract(text, self.html, url=url))
        if not text or text.isspace():
            return Skipped(ident, n, src, "empty", "the text is empty" if not text else "the text is only white space")
        return Document(ident, text, n, src, meta)

    def _no_text(self, obj: dict, ident, n, src):
        tf = self.text_field
        if tf not in obj:
            keys = list(obj)
            shown = ", ".join(map(str, keys[:_MAX_KEYS_SHOWN])) + (", ..." if len(keys) > _MAX_KEYS_SHOWN else "")
            return Skipped(ident, n, src, "missing_text",
                           f"record has no '{tf}' field; keys: {shown or '(none)'} — use --text-field")
        value = obj[tf]
        if value is None:
            return Skipped(ident, n, src, "missing_text", f"'{tf}' is null")
        return Skipped(ident, n, src, "not_a_string", f"'{tf}' is {describe_value(value)}, not a string")

    # -- JSONL -------------------------------------------------------------------------------

    def _read_jsonl(self, path: str, n: int):
        want = self.want
        for lineno, line in read_lines(path, self.max_bytes):
            if want is None or want(n):
                yield self.jsonl_record(line, n, f"{path}:{lineno}")
            n += 1
        return n

    def jsonl_record(self, line: bytes | int | str, n: int, src: str):
        """The record of one line from :func:`read_lines` (its bytes, its size when too large, or why
        the file cannot be read further)."""
        if type(line) is not bytes:
            if type(line) is int:
                return Skipped(src, n, src, "too_large", f"line of {line} bytes is over the {self.max_bytes} byte limit")
            return Skipped(src, n, src, "unreadable_file", line)
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            return self._bad_line(line, exc, n, src)
        if type(obj) is not dict:
            return Skipped(src, n, src, "not_an_object", f"the line holds {describe_value(obj)}, not a JSON object")
        ident = obj.get(self.id_field)
        if type(ident) is not str or not ident:
            ident = id_string(ident, src)
        text = obj.get(self.text_field)
        if type(text) is not str:
            return self._no_text(obj, ident, n, src)
        meta = {}
        for f in self.keep_fields:
            v = obj.get(f)
            if v is not None:
                meta[f] = v
        if self.content == "html":
            url = obj.get("url")
            return self.finish_record(ident, text, n, src, meta, is_html=True, url=url if type(url) is str else None)
        if not text or text.isspace():
            return Skipped(ident, n, src, "empty", "the text is empty" if not text else "the text is only white space")
        return Document(ident, text, n, src, meta)

    def scans_jsonl_blocks(self) -> bool:
        """True when :meth:`_read_jsonl_encoded` (and :meth:`jsonl_block_records`) give the same records as :meth:`_read_jsonl`."""
        return (_jsonl is not None and self.content == "text" and not self.keep_fields and self.want is None
                and self.id_field != self.text_field)

    def _read_jsonl_encoded(self, path: str, n: int, table):
        """The records of :meth:`_read_jsonl`, with runs of ordinary records as EncodedDocuments.

        Blocks of whole lines are scanned by ``neardup._jsonl`` off the GIL; the lines it does
        not take (errors, anything unusual) go through :meth:`jsonl_record`, line by line. If
        the stream breaks, the rest of the file is read again by :func:`read_lines`, from the first
        line not yet given: the records are then exactly those of :meth:`_read_jsonl`.
        """
        max_bytes = self.max_bytes
        lineno = 0
        try:
            for item in jsonl_blocks(path, max_bytes, JSONL_BLOCK_BYTES):
                if type(item) is int:  # a line over max_bytes
                    lineno += 1
                    yield self.jsonl_record(item, n, f"{path}:{lineno}")
                    n += 1
                    continue
                buf, length = item
                with memoryview(buf) as whole, whole[:length] as block:
                    count = yield from self.jsonl_block_records(block, n, path, lineno, table)
                lineno += count
                n += count
        except BrokenInput:
            for k, line in read_lines(path, max_bytes):
                if k > lineno:
                    yield self.jsonl_record(line, n, f"{path}:{k}")
                    n += 1
        return n

    def jsonl_block_records(self, block, n: int, path: str, lineno: int, table):
        """The records of a block of whole lines (bytes or a memoryview; the last line may lack its
        ``\\n``), which are lines ``lineno + 1, ...`` of ``path`` with ordinals ``n, ...``: runs of
        ordinary records as EncodedDocuments (scanned by ``neardup._jsonl``), the other lines through
        :meth:`jsonl_record`. Returns the number of lines. Everything is copied out of ``block``
        before the first record is given, so the caller may reuse its buffer as soon as the
        generator is started (the local reader's blocks and the Spark engine's Arrow batches)."""
        import numpy as np

        idf, tf = self.id_field.encode("utf-8"), self.text_field.encode("utf-8")
        max_bytes = self.max_bytes
        max_line = -1 if max_bytes is None else max_bytes
        kinds, ends, text, toffs, ids, ioffs, lengths, spans = _jsonl.scan(block, idf, tf, table, max_line)
        slow = np.flatnonzero(np.frombuffer(kinds, dtype=np.uint8) & _jsonl.FALLBACK).tolist()
        ends = np.frombuffer(ends, dtype=np.int64)
        # the lines that fall back, copied out before the buffer is reused
        fallback = {b: bytes(block[int(ends[b - 1]) if b else 0 : int(ends[b])]) for b in slow}
        kinds = np.frombuffer(kinds, dtype=np.uint8)
        toffs = np.frombuffer(toffs, dtype=np.int64)
        lengths = np.frombuffer(lengths, dtype=np.int64)
        spans = np.frombuffer(spans, dtype=np.int64).reshape(-1, 2)
        id_cps = _cp_offsets(ids, np.frombuffer(ioffs, dtype=np.int64))
        id_text = ids.decode("utf-8")
        for a, b in zip([0, *(k + 1 for k in slow)], [*slow, kinds.size]):
            if b > a:  # lines a..b-1: ordinary records; without an id, the source is the id
                no_id = (kinds[a:b] & _jsonl.NO_ID).astype(bool).tolist()
                idents = [f"{path}:{lineno + i + 1}" if missing else id_text[id_cps[i] : id_cps[i + 1]]
                          for i, missing in zip(range(a, b), no_id)]
                yield EncodedDocuments(ids=idents, start=n + a, path=path, first_line=lineno + a + 1,
                                       data=text, offsets=toffs[a : b + 1], lengths=lengths[a:b],
                                       flagged=(kinds[a:b] & _jsonl.FLAGGED).astype(bool),
                                       flag_spans=spans[a:b])
            if b < kinds.size:  # line b falls back
                yield self.jsonl_record(line_or_size(fallback[b], max_bytes), n + b, f"{path}:{lineno + b + 1}")
        return int(kinds.size)

    @staticmethod
    def _bad_line(line: bytes, exc, n, src):
        if not line.strip():
            return Skipped(src, n, src, "empty", "blank line")
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as uexc:
            return Skipped(src, n, src, "undecodable", f"invalid UTF-8 at byte {uexc.start} of the line")
        msg = str(exc)
        return Skipped(src, n, src, "bad_json", f"invalid JSON: {msg}")

    # -- Parquet -----------------------------------------------------------------------------

    def _read_parquet(self, path: str, n: int):
        start = n
        pf, nrows = open_parquet(path)
        if pf is None:
            yield Skipped(path, n, path, "unreadable_file", nrows)
            return n + 1
        names = pf.schema_arrow.names
        tf, idf = self.text_field, self.id_field
        if tf not in names:
            shown = ", ".join(names[:_MAX_KEYS_SHOWN]) + (", ..." if len(names) > _MAX_KEYS_SHOWN else "")
            detail = f"file has no '{tf}' column; columns: {shown or '(none)'} — use --text-field"
            for row in range(nrows):
                src = f"{path}:{row}"
                yield Skipped(src, start + row, src, "missing_text", detail)
            return start + nrows
        extra = [f for f in dict.fromkeys(self.keep_fields) if f in names and f not in (tf, idf)]
        columns = [tf] + ([idf] if idf in names and idf != tf else []) + extra
        row = 0
        try:
            for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=columns, use_threads=False):
                yield from self._parquet_batch(path, batch, row, start, idf in names, extra)
                row += batch.num_rows
        except Exception as exc:  # noqa: BLE001 - corrupt page or row group
            detail = f"cannot read rows {row} and on: {_oserror(exc)}"
            for r in range(row, nrows):
                src = f"{path}:{r}"
                yield Skipped(src, start + r, src, "unreadable_file", detail)
            row = max(row, nrows)
        return start + max(row, nrows)

    def records_of_batch(self, batch, source: str, start: int = 0):
        """The records of an Arrow RecordBatch of rows, as the Parquet reader makes them
        from a file's rows: row r is record ``start + r`` with source ``<source>:<r>``, its id from
        the id column (``<source>:<r>`` without one), its text from the text column, the
        ``keep_fields`` columns in its meta. Without a text column every row is ``missing_text``."""
        import pyarrow as pa

        names = batch.schema.names
        tf, idf = self.text_field, self.id_field
        if tf not in names:
            shown = ", ".join(names[:_MAX_KEYS_SHOWN]) + (", ..." if len(names) > _MAX_KEYS_SHOWN else "")
            for row in range(batch.num_rows):
                src = f"{source}:{row}"
                yield Skipped(src, start + row, src, "missing_text",
                              f"no '{tf}' column; columns: {shown or '(none)'} — use text_field")
            return
        extra = [f for f in dict.fromkeys(self.keep_fields) if f in names and f not in (tf, idf)]
        columns = [tf] + ([idf] if idf in names and idf != tf else []) + extra
        picked = pa.RecordBatch.from_arrays([batch.column(c) for c in columns], names=columns)
        yield from self._parquet_batch(source, picked, 0, start, idf in names, extra)

    def _parquet_batch(self, path, batch, row0, start, has_id, extra):
        import pyarrow as pa
        import pyarrow.compute as pc

        want = self.want
        max_bytes = self.max_bytes
        tcol = batch.column(0)
        too_big = None
        if max_bytes is not None:
            try:
                lengths = pc.binary_length(tcol)
                big = pc.fill_null(pc.greater(lengths, max_bytes), False)
                if pc.any(big).as_py():
                    too_big = {i: size for i, (b, size) in enumerate(zip(big.to_pylist(), lengths.to_pylist())) if b}
                    tcol = pc.if_else(big, pa.scalar(None, tcol.type), tcol)
            except (pa.ArrowNotImplementedError, pa.ArrowInvalid, TypeError):
                too_big = None  # not a string or binary column: the per-value checks report it
        texts = tcol.to_pylist()
        ids = batch.column(1).to_pylist() if has_id else None
        extras = [(f, batch.column(f).to_pylist()) for f in extra]
        keep_id = has_id and self.id_field in self.keep_fields
        for i, text in enumerate(texts):
            row = row0 + i
            n = start + row
            if want is not None and not want(n):
                continue
            meta = {}
            for f, values in extras:
                if values[i] is not None:
                    meta[f] = values[i]
            if keep_id and ids[i] is not None:
                meta[self.id_field] = ids[i]
            yield self.value_record(ids[i] if ids is not None else None, text, n, f"{path}:{row}", meta,
                                    oversize=too_big.get(i) if too_big is not None else None,
                                    measure_text=too_big is None)

    def value_record(self, ident, text, n: int, src: str, meta: dict, *, oversize: int | None = None,
                     measure_value: bool = False, measure_text: bool = False):
        """The record of one row's values (a Parquet or Arrow row here, a DataFrame or Parquet row
        on Spark's executors): the id made a string (``src`` without one), then ``too_large`` when
        the text is over ``max_bytes``, a null text ``missing_text``, binary decoded as UTF-8
        (``errors``: else ``undecodable``), other types ``not_a_string``, and the rest as
        :meth:`finish_record` makes it.

        The size over the limit is measured once, by whoever can: ``oversize``, the byte size
        the caller measured column-wise (and found over the limit); ``measure_value``, the value's
        bytes measured here (a string's UTF-8, a binary's length: what the column-wise measure
        gives); ``measure_text``, the decoded text measured, where the column-wise measure could
        not run or found no row of the batch over the limit."""
        if type(ident) is not str or not ident:
            ident = id_string(ident, src)
        tf, max_bytes = self.text_field, self.max_bytes
        if max_bytes is not None and measure_value:
            t = type(text)
            size = utf8_length(text) if t is str else len(text) if t is bytes else 0
            oversize = size if size > max_bytes else None
        if oversize is not None:
            return Skipped(ident, n, src, "too_large", f"'{tf}' of {oversize} bytes is over the {max_bytes} byte limit")
        if type(text) is not str:
            if text is None:
                return Skipped(ident, n, src, "missing_text", f"'{tf}' is null")
            if type(text) is not bytes:
                return Skipped(ident, n, src, "not_a_string", f"'{tf}' is {describe_value(text)}, not a string")
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError as exc:
                if self.errors == "strict":
                    return Skipped(ident, n, src, "undecodable", f"'{tf}' is not UTF-8 (byte {exc.start})")
                text = text.decode("utf-8", "replace")
        if max_bytes is not None and measure_text and utf8_length(text) > max_bytes:
            return Skipped(ident, n, src, "too_large", f"'{tf}' is over the {max_bytes} byte limit")
        return self.finish_record(ident, text, n, src, meta, is_html=self.content == "html")

    # -- WARC --------------------------------------------------------------------------------

    def _read_warc(self, path: str, n: int):
        want = self.want
        for recno, kind, payload in _warc(path, self.max_bytes):
            src = f"{path}:{recno}"
            if want is not None and not want(n):
                n += 1
                continue
            if kind == "doc" or kind == "text":  # an HTML response, a WET conversion record
                ident, url, body, charset, record_id = payload
                meta = {"url": url} if url else {}
                if record_id:
                    meta["record_id"] = record_id
                if kind == "doc" and self.jobs > 1:  # decoded by the worker, with the extraction
                    yield _Pending(ident, n, src, self.claimed(meta, body, url), body, url, charset, self.errors,
                                   f"the body is not valid {charset or 'UTF-8'}")
                    n += 1
                    continue
                if kind == "doc":
                    text = decode_html(body, charset, errors=self.errors)
                else:
                    text = _decode_text(body, self.errors) if charset is None else decode_html(body, charset, errors=self.errors)
                if text is None:
                    yield Skipped(ident, n, src, "undecodable", f"the body is not valid {charset or 'UTF-8'}")
                else:
                    yield self.finish_record(ident, text, n, src, meta, is_html=kind == "doc", url=url)
            elif kind == "skip":
                ident, reason, detail = payload
                yield Skipped(ident, n, src, reason, detail)
            else:
                yield Skipped(src, n, src, "unreadable_file", payload[0])
            n += 1
        return n

    # -- one file, one document --------------------------------------------------------------

    def _read_file(self, path: str, fmt: str, n: int):
        if self.want is not None and not self.want(n):
            return n + 1
        yield self._file_record(path, fmt, n)
        return n + 1

    def _file_record(self, path: str, fmt: str, n: int):
        if fmt == "not_html":
            return Skipped(path, n, path, "not_html", "not an .html, .htm or .xhtml file, in a folder of HTML files")
        try:
            if self.max_bytes is not None:
                size = size_of(path)
                if size > self.max_bytes:
                    return Skipped(path, n, path, "too_large", f"file of {size} bytes is over the {self.max_bytes} byte limit")
            with _open_stream(path) as fh:  # a compressed text or page (.txt.gz) is decompressed
                data = fh.read() if self.max_bytes is None else fh.read(self.max_bytes + 1)
        except Exception as exc:  # noqa: BLE001 - I/O error, corrupt compressed stream
            return Skipped(path, n, path, "unreadable_file", f"cannot read the file: {_oserror(exc)}")
        if self.max_bytes is not None and len(data) > self.max_bytes:
            return Skipped(path, n, path, "too_large", f"file is over the {self.max_bytes} byte limit")
        if _has_nul(data):
            return Skipped(path, n, path, "binary", f"NUL byte at offset {data.index(0)}: not a text file")
        if fmt == "html":
            if self.jobs > 1:  # decoded by the worker, with the extraction
                return _Pending(path, n, path, self.claimed({}, data, None), data, None, None, self.errors,
                                "the file is not valid in its declared charset or UTF-8")
            text = decode_html(data, errors=self.errors)
            if text is None:
                return Skipped(path, n, path, "undecodable", "the file is not valid in its declared charset or UTF-8")
            return self.finish_record(path, text, n, path, {}, is_html=True)
        text = _decode_text(data, self.errors)
        if text is None:
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as exc:
                where = exc.start
            return Skipped(path, n, path, "undecodable", f"invalid UTF-8 at byte {where}")
        return self.finish_record(path, text, n, path, {}, is_html=self.content == "html")

    # -- everything --------------------------------------------------------------------------

    def read_leaf(self, path: str, fmt: str, n: int):
        if fmt == "jsonl":
            return (yield from self._read_jsonl(path, n))
        if fmt == "parquet":
            return (yield from self._read_parquet(path, n))
        if fmt == "arrow":
            return (yield from self._read_arrow(path, n))
        if fmt in ("csv", "tsv"):
            return (yield from self._read_csv(path, fmt, n))
        if fmt == "warc":
            return (yield from self._read_warc(path, n))
        return (yield from self._read_file(path, fmt, n))

    def file_failed(self, path: str, why: str) -> None:
        """A file that cannot be read (or read to its end): raise, or note it and go on."""
        if self.on_error == "error":
            raise UnreadableInput(f"{path}: {why} (add --on-error skip to go on without it)", path=path)
        if self.report is not None:
            self.report.skipped_files.append({"path": path, "reason": why})

    def _checked(self, path: str, records):
        """The records of one file; the first ``unreadable_file`` among them goes to :meth:`file_failed`."""
        failed = False
        while True:
            try:
                rec = next(records)
            except StopIteration as stop:
                return stop.value
            if not failed and type(rec) is Skipped and rec.reason == "unreadable_file":
                failed = True
                self.file_failed(path, rec.detail)
            yield rec

    def read(self, plan, encoded_table=False) -> Iterator[Document | Skipped | EncodedDocuments]:
        """Every record of the plan. With ``encoded_table`` (None or a flag table, see
        :func:`read_encoded`), JSONL files yield their ordinary records as EncodedDocuments."""
        n = 0
        fast = encoded_table is not False and self.scans_jsonl_blocks()
        plan = plan_inputs(plan, "auto")
        if self.report is not None:
            self.report.ignored_files.extend(plan.ignored)
        spill = self.spill
        for path, fmt, why in plan.leaves:
            if spill is not None:
                spill.leaf_started(fmt if why is None else "unreadable", n)
            if why is not None:
                self.file_failed(path, why)
                if self.want is None or self.want(n):
                    yield Skipped(path, n, path, "unreadable_file", why)
                n += 1
            elif fast and fmt == "jsonl":
                n = yield from self._checked(path, self._read_jsonl_encoded(path, n, encoded_table))
            else:
                n = yield from self._checked(path, self.read_leaf(path, fmt, n))
            if spill is not None:
                spill.leaf_ended(n)
        return n

    # -- Arrow IPC ---------------------------------------------------------------------------

    def _read_arrow(self, path: str, n: int):
        start = n
        batches, why = open_arrow(path)
        if batches is None:
            yield Skipped(path, n, path, "unreadable_file", why)
            return n + 1
        row = 0
        tf, idf = self.text_field, self.id_field
        try:
            for batch in batches:
                names = batch.schema.names
                if tf not in names:
                    shown = ", ".join(names[:_MAX_KEYS_SHOWN]) + (", ..." if len(names) > _MAX_KEYS_SHOWN else "")
                    for r in range(row, row + batch.num_rows):
                        src = f"{path}:{r}"
                        if self.want is None or self.want(start + r):
                            yield Skipped(src, start + r, src, "missing_text",
                                          f"file has no '{tf}' column; columns: {shown or '(none)'} — use --text-field")
                    row += batch.num_rows
                    continue
                extra = [f for f in dict.fromkeys(self.keep_fields) if f in names and f not in (tf, idf)]
                columns = [tf] + ([idf] if idf in names and idf != tf else []) + extra
                import pyarrow as pa

                picked = pa.RecordBatch.from_arrays([batch.column(c) for c in columns], names=columns)
                yield from self._parquet_batch(path, picked, row, start, idf in names, extra)
                row += batch.num_rows
        except Exception as exc:  # noqa: BLE001 - a truncated or corrupt IPC file
            src = f"{path}:{row}"
            yield Skipped(src, start + row, src, "unreadable_file", f"cannot read rows {row} and on: {_oserror(exc)}")
            row += 1
        return start + row

    # -- CSV / TSV ---------------------------------------------------------------------------

    def _read_csv(self, path: str, fmt: str, n: int):
        """One record per row after the header row; ``source`` is ``<file>:<row>``, rows counted
        from 1 after the header (a quoted field may span lines)."""
        row = 0
        try:
            for row, fields in csv_rows(path, fmt, self.errors):
                src = f"{path}:{row}"
                if self.want is not None and not self.want(n):
                    n += 1
                    continue
                yield self._row_record(fields, n, src)
                n += 1
        except Exception as exc:  # noqa: BLE001 - I/O error, corrupt compressed stream, bad UTF-8, bad quoting
            src = f"{path}:{row + 1}"
            yield Skipped(src, n, src, "unreadable_file", f"cannot read the file after row {row}: {_oserror(exc)}")
            n += 1
        return n

    def _row_record(self, fields: dict, n: int, src: str):
        ident = fields.get(self.id_field)
        if not ident:
            ident = src
        text = fields.get(self.text_field)
        if text is None:
            return self._no_text(fields, ident, n, src)
        if self.max_bytes is not None and utf8_length(text) > self.max_bytes:
            return Skipped(ident, n, src, "too_large", f"'{self.text_field}' is over the {self.max_bytes} byte limit")
        meta = {f: fields[f] for f in self.keep_fields if fields.get(f) is not None}
        return self.finish_record(ident, text, n, src, meta, is_html=self.content == "html")


class UnreadableInput(InputError):
    """An input file that cannot be opened or read to its end (``on_error="error"``)."""

    def __init__(self, message: str, *, path: str):
        super().__init__(message)
        self.path = path


class InputReport:
    """What a reading left out, for ``summary.json``: ``skipped_files`` (``{"path", "reason"}`` of
    each file that could not be read, with ``on_error="skip"``) and ``ignored_files`` (files of a
    folder of data files that are not data, like a README.md)."""

    def __init__(self):
        self.skipped_files: list[dict] = []
        self.ignored_files: list[dict] = []

    def as_dict(self) -> dict:
        return {"skipped_files": list(self.skipped_files), "ignored_files": list(self.ignored_files)}


def csv_rows(path: str, fmt: str, errors: str = "replace"):
    """``(row number from 1, {column: value})`` for each row of a CSV or TSV file after its header."""
    import csv

    csv.field_size_limit(2**31 - 1)  # a long text is one field; max_bytes bounds it per record
    with _open_stream(path) as raw, io.TextIOWrapper(raw, encoding="utf-8-sig", errors=errors, newline="") as fh:
        reader = csv.DictReader(fh, delimiter="," if fmt == "csv" else "\t")
        for row, fields in enumerate(reader, 1):
            yield row, fields


def open_arrow(path: str):
    """``(iterator of the RecordBatches of an Arrow IPC file or stream, None)``, or ``(None, why)``."""
    pa = require("pyarrow", "io")
    ipc = require("pyarrow.ipc", "io")
    local = local_path(path)
    try:
        source = pa.memory_map(local) if local is not None else pa.PythonFile(open_binary(path), mode="r")
    except Exception as exc:  # noqa: BLE001
        return None, f"cannot open the file: {_oserror(exc)}"
    try:
        f = ipc.open_file(source)
        return (f.get_batch(i) for i in range(f.num_record_batches)), None
    except Exception:  # noqa: BLE001 - not the file format: the stream format (.arrows)?
        pass
    try:
        source.seek(0)
        return iter(ipc.open_stream(source)), None
    except Exception as exc:  # noqa: BLE001
        return None, f"cannot open the Arrow IPC file: {_oserror(exc)}"


# --------------------------------------------------------------------------- HTML extraction in parallel


class _Pending:
    """A document whose HTML is still to be extracted (``jobs > 1``): ``html`` is a str, or the
    page's bytes, decoded by the worker too (with ``charset``, ``errors``; ``undecodable`` is
    the Skipped's detail when they do not decode), which spares the reading process the
    decoding and the pickling of a str."""

    __slots__ = ("ident", "n", "src", "meta", "html", "url", "charset", "errors", "undecodable")

    def __init__(self, ident, n, src, meta, html, url, charset=None, errors="replace", undecodable=""):
        self.ident, self.n, self.src, self.meta, self.html, self.url = ident, n, src, meta, html, url
        self.charset, self.errors, self.undecodable = charset, errors, undecodable

    def job(self, pickled: bool = False):
        """What the worker gets. A str goes to a worker process as its UTF-8 (a bytes object is
        pickled at the speed of a copy, a str at the speed of a codec), decoded back there to
        the same str (lone surrogates included)."""
        if pickled and type(self.html) is str:
            return (self.html.encode("utf-8", "surrogatepass"), self.url, _FROM_STR, self.errors)
        return (self.html, self.url, self.charset, self.errors)

    def outcome(self, result):
        """The Document or Skipped for what the worker returned (:func:`_extract_page`)."""
        if type(result) is tuple:
            reason, detail = result
            return Skipped(self.ident, self.n, self.src, reason, detail or self.undecodable)
        return _extracted(self.ident, self.n, self.src, self.meta, result)


def _extracted(ident, n, src, meta, text: str | None):
    if text is None:
        return Skipped(ident, n, src, "extraction_failed", "the HTML could not be parsed")
    if not text:
        return Skipped(ident, n, src, "empty", "no visible text in the HTML")
    return Document(ident, text, n, src, meta)


_CHUNK_PAGES = 8
#: Where ``jobs > 1`` extracts HTML: "processes" (scale with the cores; a second to start) or
#: "threads" (lexbor's parse and the markup scan release the GIL, the CSS queries do not).
EXTRACT_WORKERS = os.environ.get("NEARDUP_EXTRACT_WORKERS", "processes")
_CHUNK_BYTES = 8 << 20
_CHUNK_ITEMS = 4096


class _Done:
    """The texts of a chunk extracted in the reading process (as a future that is done)."""

    __slots__ = ("texts",)

    def __init__(self, texts):
        self.texts = texts

    def result(self):
        return self.texts


#: While the worker processes start, the reading process extracts chunks itself, up to this many
#: chunks ahead of the first one the workers will return.
_WARMUP_CHUNKS = 64


def _parallel(items, mode: str, jobs: int):
    """``items`` in the same order, with every :class:`_Pending` replaced by its Document or Skipped;
    the extraction runs in ``jobs`` worker processes, a bounded window of chunks ahead. Until the
    first of them has returned a chunk (they start through a forkserver), the chunks beyond the
    ones queued for them are extracted here, so no core waits for the start."""
    import multiprocessing
    from collections import deque
    from concurrent.futures import ProcessPoolExecutor

    window: deque = deque()

    def resolve(buf, pend, fut):
        if pend:
            try:
                texts = fut.result()
            except Exception:  # noqa: BLE001 - a worker died (BrokenProcessPool): extract here
                texts = _extract_many(mode, [p.job(pickled) for p in pend])
            results = iter(texts)
        for item in buf:
            if type(item) is _Pending:
                yield item.outcome(next(results))
            else:
                yield item

    pickled = EXTRACT_WORKERS != "threads"  # the pages go to other processes
    if not pickled:
        from concurrent.futures import ThreadPoolExecutor

        pool_cm = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="neardup-extract")
    else:
        ctx = multiprocessing.get_context("forkserver")  # no fork of a process that may run threads
        # imported once, not per worker: a worker then imports nothing to unpickle its calls
        ctx.set_forkserver_preload(["neardup.text.html_pages", "selectolax.lexbor"])
        pool_cm = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx)
    with pool_cm as pool:
        buf: list = []
        pend: list = []
        size = 0
        warm = not pickled  # threads run at once; processes once one has returned a chunk
        queued: list = []  # the chunks given to the processes before they were warm
        for item in items:
            buf.append(item)
            if type(item) is _Pending:
                pend.append(item)
                size += len(item.html)
            if len(pend) >= _CHUNK_PAGES or size >= _CHUNK_BYTES or len(buf) >= _CHUNK_ITEMS:
                # the pages stay until their texts are back (a bounded window), to be extracted
                # here if a worker dies
                if not pend:
                    fut = None
                elif warm or len(queued) <= jobs:
                    fut = pool.submit(_extract_many, mode, [p.job(pickled) for p in pend])
                    if not warm:
                        queued.append(fut)
                else:  # the processes are starting, with work queued: this chunk is done here
                    fut = _Done(_extract_many(mode, [p.job() for p in pend]))
                window.append((buf, pend, fut))
                buf, pend, size = [], [], 0
                if not warm:
                    warm = any(f.done() for f in queued)
                while len(window) > (2 * jobs if warm else _WARMUP_CHUNKS):
                    yield from resolve(*window.popleft())
        if buf:
            fut = pool.submit(_extract_many, mode, [p.job(pickled) for p in pend]) if pend else None
            window.append((buf, pend, fut))
        while window:
            yield from resolve(*window.popleft())


def extract_in_parallel(reader: "RecordReader", items):
    if reader.jobs > 1:
        return _parallel(items, reader.html, reader.jobs)
    return items


def _decode_text(data: bytes, errors: str) -> str | None:
    if data[:3] == b"\xef\xbb\xbf":
        data = data[3:]
    elif data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return data.decode("utf-16", "replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        if errors == "strict":
            return None
        return data.decode("utf-8", "replace")


# --------------------------------------------------------------------------- public API


def read_documents(paths: list[str], *, format: str = "auto", id_field: str = "id", text_field: str = "text",
                   content: str = "text", html: str = "main", keep_fields: tuple[str, ...] = (),
                   max_bytes: int | None = None, errors: str = "replace", jobs: int = 1, on_error: str = "skip",
                   report: "InputReport | None" = None, text_spill: str | None = None,
                   claims: bool = False, want=None) -> Iterator[Document | Skipped]:
    """Every record of ``paths`` (files or folders, in the order given), as a Document or a Skipped.

    Options and paths are checked when this is called (ConfigError, InputError); reading is lazy
    and never raises for bad data, nor for a file that cannot be read unless ``on_error="error"``
    (then :class:`UnreadableInput`); ``report`` (an :class:`InputReport`) collects the files
    skipped and the files of dataset folders ignored. ``ordinal`` runs from 0 across all the paths, skipped records
    included. ``keep_fields`` (JSONL, Parquet) are copied into ``meta`` when present and not null.
    ``max_bytes`` bounds one record's raw size (a JSONL line, a file, a WARC HTTP body, a Parquet
    text value). ``errors`` is what to do with invalid UTF-8 in files and Parquet binary columns
    (JSONL lines are always strict). ``jobs > 1`` extracts HTML (WARC, HTML files, ``content="html"``)
    in that many worker processes, a bounded window ahead, same order and same output; plain text
    is never sent to them. ``text_spill`` (a run's work folder): the texts that the kept corpus
    would extract again are kept there for :func:`~neardup.io.write_kept` (:mod:`neardup.io.texts`).
    ``claims``: a web page's ``<link rel="canonical">`` and ``og:url``, resolved against its URL,
    go into its meta as ``canonical`` and ``og_url`` (:func:`neardup.text.html_links.page_claims`).
    ``want``: a predicate of ordinals; the records it refuses are counted (ordinals stay those of
    the whole input) but neither yielded nor, for HTML, extracted.
    See the module docstring for each format.
    """
    reader = RecordReader(id_field=id_field, text_field=text_field, content=content, html=html,
                          keep_fields=keep_fields, max_bytes=max_bytes, errors=errors, jobs=jobs, on_error=on_error,
                          report=report, text_spill=text_spill, claims=claims, want=want)
    return _read(reader, plan_inputs(paths, format))


def read_encoded(paths: list[str], *, table=None, format: str = "auto",
                 **options) -> Iterator[Document | Skipped | EncodedDocuments]:
    """The records of :func:`read_documents` (same options), with runs of ordinary JSONL records
    as :class:`~neardup.io.documents.EncodedDocuments`: their text as UTF-8 bytes, never a str.

    ``neardup dedup`` reads this way: a compiled scanner takes the ids and texts out of the
    JSONL lines off the GIL, and the kernel reads the bytes. ``table`` (a uint8 array of 0x110000
    entries, or None) marks code points to flag (``EncodedDocuments.flagged``). Lines the scanner
    does not take, and every other format, come out as :func:`read_documents` gives them; with
    ``content="html"``, ``keep_fields``, or without the compiled scanner, everything does.
    """
    return _read(RecordReader(**options), plan_inputs(paths, format), table)


def _read(reader: RecordReader, plan, encoded_table=False):
    """``reader.read(plan, encoded_table)``, HTML extracted in worker processes when the reader
    has ``jobs > 1`` and the plan has HTML to extract (plain text is never sent to them)."""
    if reader.jobs > 1 and (reader.content == "html" or plan.formats() & {"html", "warc"}):
        items = _parallel(reader.read(plan, encoded_table), reader.html, reader.jobs)
    else:
        reader.jobs = 1
        items = reader.read(plan, encoded_table)
    if reader.text_spill is not None and _texts_needed(plan, reader.content):
        return _spilling(reader, plan, items)
    return items


def _spilling(reader: RecordReader, plan, items):
    """``items``, with the documents the kept corpus would extract again written to the run's
    work folder as they pass (complete once the input has ended)."""
    spill = reader.spill = TextSpill(reader.text_spill, plan, reader.content)
    try:
        for item in items:
            if type(item) is Document:
                spill.add(item)
            yield item
    except BaseException:
        spill.discard()
        raise
    spill.commit()


def iter_raw_records(paths, *, format: str = "auto", max_bytes: int | None = None) -> Iterator[tuple[int, object]]:
    """The original records, by the same ordinals as :func:`read_documents`, for a second pass.

    Yields ``(ordinal, record)`` with record: the line's bytes as read (line ending included) for
    JSONL; a dict of the row's columns for Parquet; ``{"id", "url", "body", "charset"}`` for a
    WARC HTML response or WET conversion record (``body`` is the decoded HTTP payload or the
    record's block; also ``record_id`` and ``is_html``); the file's path (``str``) for text
    and HTML files. Records that can never be documents (unreadable files, non-HTML WARC
    responses, JSONL lines over ``max_bytes``) take their ordinal but are not yielded.
    """
    plan = plan_inputs(paths, format)
    return _raw(plan, max_bytes)


def _raw(plan, max_bytes):
    n = 0
    for path, fmt, why in input_leaves(plan):
        if why is not None or fmt == "not_html":
            n += 1
        elif fmt == "jsonl":
            for _, line in read_lines(path, max_bytes):
                if type(line) is bytes:
                    yield n, line
                n += 1
        elif fmt == "parquet":
            pf, nrows = open_parquet(path)
            if pf is None:
                n += 1
                continue
            row = 0
            try:
                for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, use_threads=False):
                    for rec in batch.to_pylist():
                        yield n + row, rec
                        row += 1
            except Exception:  # noqa: BLE001 - the first pass reported these rows
                pass
            n += max(row, nrows)
        elif fmt in ("csv", "tsv"):
            try:
                for _, fields in csv_rows(path, fmt):
                    yield n, fields
                    n += 1
            except Exception:  # noqa: BLE001 - the first pass reported the rest as one record
                n += 1
        elif fmt == "arrow":
            batches, _ = open_arrow(path)
            if batches is None:
                n += 1
                continue
            try:
                for batch in batches:
                    for rec in batch.to_pylist():
                        yield n, rec
                        n += 1
            except Exception:  # noqa: BLE001 - the first pass reported the rest as one record
                n += 1
        elif fmt == "warc":
            for _, kind, payload in _warc(path, max_bytes):
                if kind == "doc" or kind == "text":
                    ident, url, body, charset, record_id = payload
                    yield n, {"id": ident, "url": url, "body": body, "charset": charset, "record_id": record_id,
                              "is_html": kind == "doc"}
                n += 1
        else:
            yield n, path
            n += 1
