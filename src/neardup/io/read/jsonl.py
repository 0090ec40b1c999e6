"""JSONL inputs: one JSON object per line, read line by line (:func:`read_jsonl`), or in blocks
of whole lines scanned by the compiled ``neardup._jsonl`` off the GIL (:func:`read_jsonl_encoded`,
which gives the same records: a text's UTF-8 for the kernel, a page's UTF-8 for the extraction)."""

from __future__ import annotations

from typing import Iterator

from ..documents import EncodedDocuments
from .compression import open_decompressed
from .rows import PAGE_URL_FIELD, jsonl_record, line_or_size, utf8_page_record
from .sources import failure_reason

try:
    from ... import _jsonl
except ImportError:  # not built: every line goes through orjson
    _jsonl = None

__all__ = ["JSONL_BLOCK_BYTES", "has_line_scanner", "jsonl_line_ends", "read_lines", "BrokenInput", "jsonl_blocks",
           "read_jsonl", "scans_jsonl_blocks", "scans_jsonl_pages", "read_jsonl_encoded", "jsonl_block_records"]

#: Bytes read at a time by the JSONL fast path (tests make it small).
JSONL_BLOCK_BYTES = 4 << 20


def has_line_scanner() -> bool:
    """True when the compiled JSONL scanner is built (:func:`jsonl_line_ends`, :func:`neardup.io.read.read_encoded`)."""
    return _jsonl is not None


def jsonl_line_ends(block) -> "np.ndarray | None":
    """The offsets just past each ``\\n`` of a block of JSONL bytes (int64), from the compiled
    scanner; None when it is not built (then read the lines with :func:`read_lines`)."""
    if _jsonl is None:
        return None
    import numpy as np

    return np.frombuffer(_jsonl.line_ends(block), dtype=np.int64)


def read_lines(path: str, max_bytes: int | None) -> Iterator[tuple[int, bytes | int | str]]:
    """``(line number, line bytes)`` for each line; an ``int`` (its size) instead of the bytes for a
    line over ``max_bytes``, which is never held whole; a ``str`` (why) when the stream breaks,
    which ends the file."""
    try:
        fh = open_decompressed(path)
    except OSError as exc:
        yield 1, f"cannot open the file: {failure_reason(exc)}"
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
            yield lineno + 1, f"cannot read the file after line {lineno}: {failure_reason(exc)}"


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
        fh = open_decompressed(path)
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
                    # the unfinished line to the front, copied out as bytes: a bytearray slice
                    # that cannot be allocated may print a spurious "deallocated bytearray object
                    # has exported buffers" (native/new_bytearray.h says why)
                    with memoryview(buf) as view:
                        rest = view[cut:end].tobytes()
                    buf[: end - cut] = rest
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


def _code_point_offsets(utf8: bytes | bytearray, offsets) -> list[int]:
    """Byte offsets into UTF-8 text as code point offsets (for slicing its decoded str)."""
    if len(utf8) == 0 or utf8.isascii():
        return offsets.tolist()
    import numpy as np

    starts = np.frombuffer(bytes(utf8), dtype=np.uint8)
    is_start = (starts & 0xC0) != 0x80
    cum = np.concatenate(([0], np.cumsum(is_start)))
    return cum[offsets].tolist()


def read_jsonl(reader, path: str, n: int):
    """The records of a JSONL file, line by line, numbered from ``n``; returns the next ordinal."""
    want = reader.want
    for lineno, line in read_lines(path, reader.max_bytes):
        if want is None or want(n):
            yield jsonl_record(reader, line, n, f"{path}:{lineno}")
        n += 1
    return n


def scans_jsonl_blocks(reader) -> bool:
    """True when :func:`read_jsonl_encoded` (and :func:`jsonl_block_records`) give the same records as :func:`read_jsonl`."""
    return (_jsonl is not None and reader.content == "text" and not reader.keep_fields and reader.want is None
            and reader.id_field != reader.text_field)


def scans_jsonl_pages(reader) -> bool:
    """True when :func:`read_jsonl_encoded` gives the records of :func:`read_jsonl` for JSONL of HTML,
    the ordinary pages handed to the extraction as the UTF-8 the scanner copies out of the line
    (the page's claims need the str's parse, kept fields the whole object: those read line by line)."""
    return (_jsonl is not None and reader.content == "html" and not reader.keep_fields and reader.want is None
            and not reader.claims and len({reader.id_field, reader.text_field, PAGE_URL_FIELD}) == 3)


def read_jsonl_encoded(reader, path: str, n: int, table):
    """The records of :func:`read_jsonl`, with runs of ordinary records as EncodedDocuments (for
    HTML, :func:`scans_jsonl_pages`: each ordinary page's record from its UTF-8).

    Blocks of whole lines are scanned by ``neardup._jsonl`` off the GIL; the lines it does
    not take (errors, anything unusual) go through :func:`~neardup.io.read.rows.jsonl_record`, line by line. If
    the stream breaks, the rest of the file is read again by :func:`read_lines`, from the first
    line not yet given: the records are then exactly those of :func:`read_jsonl`.
    """
    max_bytes = reader.max_bytes
    lineno = 0
    # pages are copied out of the scanner's texts block by block: one buffer serves every block
    scratch = bytearray() if reader.content == "html" else None
    try:
        for item in jsonl_blocks(path, max_bytes, JSONL_BLOCK_BYTES):
            if type(item) is int:  # a line over max_bytes
                lineno += 1
                yield jsonl_record(reader, item, n, f"{path}:{lineno}")
                n += 1
                continue
            buf, length = item
            with memoryview(buf) as whole, whole[:length] as block:
                count = yield from jsonl_block_records(reader, block, n, path, lineno, table, scratch)
            lineno += count
            n += count
    except BrokenInput:
        for k, line in read_lines(path, max_bytes):
            if k > lineno:
                yield jsonl_record(reader, line, n, f"{path}:{k}")
                n += 1
    return n


def jsonl_block_records(reader, block, n: int, path: str, lineno: int, table, scratch: bytearray | None = None):
    """The records of a block of whole lines (bytes or a memoryview; the last line may lack its
    ``\\n``), which are lines ``lineno + 1, ...`` of ``path`` with ordinals ``n, ...``: runs of
    ordinary records as EncodedDocuments (scanned by ``neardup._jsonl``; for a reader of HTML, the
    records of :func:`~neardup.io.read.rows.utf8_page_record` instead, ``table`` unused), the other
    lines through :func:`~neardup.io.read.rows.jsonl_record`. Returns the number of lines.
    Everything is copied out of ``block`` before the first record is given, so the caller may
    reuse its buffer as soon as the generator is started (the local reader's blocks and the Spark
    engine's Arrow batches). ``scratch``: for a reader of HTML, a bytearray the scanner writes the
    pages into (grown to the block's size), which the next block reuses once this one's records
    are all given (a fresh buffer of a block's size per block costs its page faults)."""
    import numpy as np

    idf, tf = reader.id_field.encode("utf-8"), reader.text_field.encode("utf-8")
    max_bytes = reader.max_bytes
    max_line = -1 if max_bytes is None else max_bytes
    pages = reader.content == "html"
    if pages and scratch is not None and len(scratch) < len(block):
        scratch.extend(bytes(len(block) - len(scratch)))
    scanned = _jsonl.scan(block, idf, tf, None if pages else table, max_line,
                          PAGE_URL_FIELD.encode("utf-8") if pages else None, scratch if pages else None)
    kinds, ends, text, toffs, ids, ioffs, lengths, spans, urls, uoffs = scanned
    slow = np.flatnonzero(np.frombuffer(kinds, dtype=np.uint8) & _jsonl.FALLBACK).tolist()
    ends = np.frombuffer(ends, dtype=np.int64)
    # the lines that fall back, copied out before the buffer is reused
    fallback = {b: bytes(block[int(ends[b - 1]) if b else 0 : int(ends[b])]) for b in slow}
    kinds = np.frombuffer(kinds, dtype=np.uint8)
    toffs = np.frombuffer(toffs, dtype=np.int64)
    lengths = np.frombuffer(lengths, dtype=np.int64)
    spans = np.frombuffer(spans, dtype=np.int64).reshape(-1, 2)
    id_cps = _code_point_offsets(ids, np.frombuffer(ioffs, dtype=np.int64))
    id_text = ids.decode("utf-8")
    if pages:  # each page's URL, None for a line without one
        url_cps = _code_point_offsets(urls, np.frombuffer(uoffs, dtype=np.int64))
        url_text = urls.decode("utf-8")
        page_urls = [None if missing else url_text[url_cps[i] : url_cps[i + 1]]
                     for i, missing in enumerate((kinds & _jsonl.NO_URL).astype(bool).tolist())]
    for a, b in zip([0, *(k + 1 for k in slow)], [*slow, kinds.size]):
        if b > a:  # lines a..b-1: ordinary records; without an id, the source is the id
            no_id = (kinds[a:b] & _jsonl.NO_ID).astype(bool).tolist()
            idents = [f"{path}:{lineno + i + 1}" if missing else id_text[id_cps[i] : id_cps[i + 1]]
                      for i, missing in zip(range(a, b), no_id)]
            if pages:
                yield from _page_records(reader, idents, page_urls[a:b], text, toffs[a : b + 1], n + a, path,
                                         lineno + a)
            else:
                yield EncodedDocuments(ids=idents, start=n + a, path=path, first_line=lineno + a + 1,
                                       data=text, offsets=toffs[a : b + 1], lengths=lengths[a:b],
                                       flagged=(kinds[a:b] & _jsonl.FLAGGED).astype(bool),
                                       flag_spans=spans[a:b])
        if b < kinds.size:  # line b falls back
            yield jsonl_record(reader, line_or_size(fallback[b], max_bytes), n + b, f"{path}:{lineno + b + 1}")
    return int(kinds.size)


def _page_records(reader, idents, urls, text, toffs, n: int, path: str, lineno: int):
    """The records of a run of ordinary lines of HTML records, lines ``lineno + 1, ...`` with
    ordinals ``n, ...``: each page copied out of the scanner's ``text`` (``toffs``: where each
    starts, and the end of the last) as the bytes a worker process is sent."""
    starts = toffs.tolist()
    with memoryview(text) as pages:
        for k, (ident, url) in enumerate(zip(idents, urls)):
            page = bytes(pages[starts[k] : starts[k + 1]])
            yield utf8_page_record(reader, ident, page, n + k, f"{path}:{lineno + k + 1}", url)
