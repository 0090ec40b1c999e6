"""The kept records of web archives, written back as a web archive.

:func:`write_kept_warc` writes the kept input records to ``kept.warc.gz``, each record's bytes
as they are in the input: for a ``.warc.gz`` input every kept record's gzip member is copied
byte for byte; for an uncompressed or zstd input each kept record's bytes (decompressed) become
one gzip member. Where the records start is what the read pass
(:func:`neardup.io.read.warc.input_records`) saw, when it read the file to its end and the file is
unchanged since; else one pass over the WARC headers finds them (never the HTTP heads or
payloads). For ARC input the records are ARC records and the file is ``kept.arc.gz`` (the file's
``filedesc`` header record first, as the format requires).
"""

from __future__ import annotations

import gzip
import os
import tempfile
from typing import BinaryIO, Callable

from ...errors import require
from ..read.compression import GZIP_MAGIC, ZSTD_MAGIC, compression_of, decompress_zstd, open_decompressed
from ..read.warc import ArchiveError, archive_kind, record_starts, remembered_starts

__all__ = ["kept_name", "write_kept_warc"]

_COPY_CHUNK = 1 << 20


def kept_name(paths: list[str]) -> str:
    """``kept.arc.gz`` when every archive of ``paths`` is ARC, else ``kept.warc.gz``."""
    kinds = [_file_kind(p)[0] for p in paths]
    return "kept.arc.gz" if kinds and all(k == "arc" for k in kinds) else "kept.warc.gz"


def _file_kind(path: str) -> tuple[str | None, str]:
    with open(path, "rb") as fh:
        head = fh.read(4096)
    comp = {"gzip": "gzip", "zstd": "zstd"}.get(compression_of(head), "none")
    return archive_kind(head), comp


def _spans(path: str, keep_record: Callable[[bool], bool], merge: bool, magic: bytes | None
           ) -> list[tuple[int, int]] | None:
    """The byte ranges (in the file) of the records ``keep_record`` (of whether the record is an
    input record) selects, merged when adjacent and ``merge``; ``None`` when ``magic`` is given
    and some record does not start a gzip member (zstd frame) of its own: the offsets increase
    and each points at the compression's magic bytes. One pass over the archive."""
    size = os.path.getsize(path)
    spans: list[tuple[int, int]] = []
    prev: int | None = None
    prev_kept = False
    last = -1
    with open(path, "rb") as fh:
        try:
            for offset, counts in remembered_starts(path) or record_starts(path):
                if magic is not None:
                    if offset <= last:
                        return None
                    fh.seek(offset)
                    if fh.read(len(magic)) != magic:
                        return None
                    last = offset
                if prev is not None and prev_kept:
                    _add_span(spans, prev, offset, merge)
                prev, prev_kept = offset, keep_record(counts)
        except ArchiveError:
            return spans  # the last record read may be cut: it is not copied (the records before it decide)
    if prev is not None and prev_kept:
        _add_span(spans, prev, size, merge)
    return spans


def _add_span(spans: list, a: int, b: int, merge: bool) -> None:
    if merge and spans and spans[-1][1] == a:
        spans[-1] = (spans[-1][0], b)
    else:
        spans.append((a, b))


def write_kept_warc(path: str, keep: Callable[[int], bool], out: BinaryIO, first_ordinal: int = 0) -> tuple[int, int]:
    """Append to ``out`` the input records of the archive ``path`` whose ordinal ``keep``
    selects, in file order (gzip members, see the module docstring). The file's input records
    take the ordinals from ``first_ordinal`` on (the readers' numbering). Returns ``(next
    ordinal, records written)``. A file that cannot be read from some record on gives the
    records before it (the readers reported the rest). ``keep`` is a predicate: it may be asked
    about the same ordinals again (when the records turn out not to be gzip members of their
    own, they are read again from the decompressed archive)."""
    kind, comp = _file_kind(path)
    counter = {"n": first_ordinal, "written": 0, "first": True}

    def keep_record(counts: bool) -> bool:
        first, counter["first"] = counter["first"], False
        if kind == "arc" and first:
            return True  # the ARC file's header record
        if not counts:
            return False
        o = counter["n"]
        counter["n"] += 1
        if keep(o):
            counter["written"] += 1
            return True
        return False

    magic = None if comp == "none" else GZIP_MAGIC if comp == "gzip" else ZSTD_MAGIC
    spans = _spans(path, keep_record, comp == "gzip", magic)
    if spans is None:
        # one gzip member or zstd frame holds several records (``gzip pages.warc``): the records'
        # offsets are not places to copy from, so the records are read from the decompressed
        # archive and each kept one gzipped on its own, as for an uncompressed archive
        with tempfile.NamedTemporaryFile(prefix="neardup-", suffix=".warc") as plain:
            _decompress_into(path, comp, plain)
            plain.flush()
            return write_kept_warc(plain.name, keep, out, first_ordinal)
    with open(path, "rb") as src:
        for a, b in spans:
            src.seek(a)
            if comp == "gzip":
                _copy(src, out, b - a)  # gzip members, byte for byte
            else:
                data = src.read(b - a)
                if comp == "zstd":
                    data = decompress_zstd(data)
                out.write(gzip.compress(data, compresslevel=6, mtime=0))
    return counter["n"], counter["written"]


def _decompress_into(path: str, comp: str, out: BinaryIO) -> None:
    """The archive's bytes, decompressed, into ``out`` (a cut end gives what was read)."""
    cut: tuple = (EOFError, OSError, ValueError)
    if comp == "zstd":
        cut += (require("zstandard", "io").ZstdError,)
    with open_decompressed(path) as src:
        try:
            while chunk := src.read(_COPY_CHUNK):
                out.write(chunk)
        except cut:
            pass  # the readers reported the cut; the records before it are copied


def _copy(src, out, length: int) -> None:
    while length > 0:
        chunk = src.read(min(length, _COPY_CHUNK))
        if not chunk:
            break
        out.write(chunk)
        length -= len(chunk)
