"""Compressed inputs: the magic numbers that tell gzip, zstd, bzip2 and xz apart, and their
decompressors. Every reader of input bytes (the record readers, the WARC reader and writer, the
kept corpus's compression, the planner's sample) asks this module, so that a compression is
recognised by the same bytes everywhere, whatever the file's name."""

from __future__ import annotations

import gzip
import io
import os
import zlib

from ...errors import require
from .sources import open_binary

__all__ = ["GZIP_MAGIC", "ZSTD_MAGIC", "BZ2_MAGIC", "XZ_MAGIC", "COMPRESSED_EXTENSIONS", "MAGIC_BYTES",
           "compression_of", "decompressor", "open_decompressed", "read_whole", "Decompressed", "head_decompressed",
           "decompress_zstd"]

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
BZ2_MAGIC = b"BZh"
XZ_MAGIC = b"\xfd7zXZ\x00"
#: Bytes enough to tell every compression apart (:func:`compression_of`).
MAGIC_BYTES = 6
#: File name endings of compressed files (a hint only: the bytes decide).
COMPRESSED_EXTENSIONS = (".gz", ".zst", ".zstd", ".bz2", ".xz")
#: zstd frames may use windows up to 2 GiB (``zstd --long=31``).
_ZSTD_MAX_WINDOW = 2**31


def compression_of(magic: bytes) -> str | None:
    """``"gzip"``, ``"zstd"``, ``"bz2"``, ``"xz"`` or None, from a stream's first bytes."""
    if magic[:2] == GZIP_MAGIC:
        return "gzip"
    if magic[:4] == ZSTD_MAGIC:
        return "zstd"
    if magic[:3] == BZ2_MAGIC and magic[3:4].isdigit():
        return "bz2"
    if magic[:6] == XZ_MAGIC:
        return "xz"
    return None


def decompressor(raw, kind: str):
    """A stream of the decompressed bytes of the binary file ``raw`` compressed as ``kind`` (a
    value of :func:`compression_of`); closing it leaves ``raw`` open, and ``raw.tell()`` says how
    much of the compressed bytes it has consumed. The zstd stream has no ``readline``: wrap it in
    an ``io.BufferedReader`` to read lines."""
    if kind == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if kind == "bz2":
        import bz2

        return bz2.BZ2File(raw, "rb")
    if kind == "xz":
        import lzma

        return lzma.LZMAFile(raw, "rb")
    if kind == "zstd":
        zstd = require("zstandard", "io")
        return zstd.ZstdDecompressor(max_window_size=_ZSTD_MAX_WINDOW).stream_reader(raw, read_across_frames=True,
                                                                                       closefd=False)
    raise ValueError(f"unknown compression {kind!r}")


class Decompressed(io.BufferedReader):
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


def open_decompressed(path: str, buffering: int = 1 << 20):
    """A buffered binary stream of the file's bytes (a local path, ``-`` or a URL), decompressed
    by magic number whatever its name (gzip, zstd, bzip2, xz): a :class:`Decompressed` stream, or
    the raw file when it is not compressed. The file is opened once. ``buffering=0`` opens a
    local file without a read buffer (for a few bytes of it, or all of it: :func:`read_whole`)."""
    raw = open_binary(path, buffering)
    try:
        magic = raw.read(MAGIC_BYTES)
        raw.seek(0)
        kind = compression_of(magic)
        if kind is None:
            return raw
        return Decompressed(decompressor(raw, kind), raw, kind)
    except BaseException:
        raw.close()
        raise


def read_whole(fh, max_bytes: int | None) -> bytes:
    """The bytes of a stream from :func:`open_decompressed`: all of them, or at most the first
    ``max_bytes + 1`` when there are more (the caller tells a file over ``max_bytes`` by its
    length). A plain file opened with ``buffering=0`` is read into one object of its size: read
    through a buffer, each of a folder's many small pages would take a MiB of fresh memory, which
    the kernel maps in page by page (two thirds of the time to read a folder of small pages)."""
    if type(fh) is io.FileIO and (max_bytes is None or os.fstat(fh.fileno()).st_size <= max_bytes):
        return fh.readall()
    return fh.read() if max_bytes is None else fh.read(max_bytes + 1)


def head_decompressed(head: bytes, size: int = 256) -> bytes:
    """The first ``size`` bytes of ``head`` (a file's first bytes) once decompressed (gzip, zstd),
    ``head`` itself when it is not compressed that way, ``b""`` when its compressed bytes are
    broken or foreign."""
    if head[:2] == GZIP_MAGIC:
        try:
            return zlib.decompressobj(31).decompress(head, size)
        except zlib.error:
            return b""
    if head[:4] == ZSTD_MAGIC:
        try:
            import zstandard

            return zstandard.ZstdDecompressor().decompressobj().decompress(head)[:size]
        except Exception:  # noqa: BLE001 - a truncated or foreign frame
            return b""
    return head


def decompress_zstd(data: bytes) -> bytes:
    """The bytes of one or more whole zstd frames, decompressed."""
    zstandard = require("zstandard", "io")
    return zstandard.ZstdDecompressor().decompressobj(read_across_frames=True).decompress(data)
