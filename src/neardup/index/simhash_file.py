"""The simhash index's file: one file, memory-mapped on open, nothing rebuilt or re-sorted.

Layout: ``MAGIC`` (8 bytes), then little-endian u32 format version, header length, header CRC-32
and a reserved word, then a JSON header with the configuration (format version, ``max_distance``,
blocks, block sizes, table permutations) and the offset, dtype, length and CRC-32 of each array,
then the arrays, 64-byte aligned: fingerprints and tombstones by row, ids, and the tables (sorted
permuted fingerprints, their rows, directories).

This module knows the format and its checks; :class:`neardup.index.simhash.SimhashIndex` decides
what goes in (its ``save``) and rebuilds itself from a :class:`SavedIndex` (its ``open``).
"""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import FormatError
from .simhash_layout import BITS, TableLayout, dir_bits, layout_for

__all__ = ["SimhashIndexFormatError", "SavedIndex", "write_index_file", "read_index_file",
           "FORMAT_VERSION", "MAGIC", "MAX_ROWS"]

FORMAT_NAME = "neardup-simhash-index"
FORMAT_VERSION = 1
MAGIC = b"NDSIMHX\x00"
HEADER_FIXED = 24  # magic (8) + version u32 + header length u32 + header crc32 u32 + reserved u32
ALIGN = 64
MAX_ROWS = 2**31 - 1  # rows are int32 in the tables


class SimhashIndexFormatError(FormatError):
    """A saved simhash index is truncated, corrupt, of another format or of another configuration."""


@dataclass
class SavedIndex:
    """The arrays and settings read from an index file (memory maps when opened with ``mmap``)."""

    layout: TableLayout
    fingerprints: np.ndarray  # uint64 by row
    dead: np.ndarray  # bool by row: removed
    id_kind: str | None  # "int", "str" or None (no rows)
    ids_int: np.ndarray | None  # int64 by row
    ids_offsets: np.ndarray | None  # int64, rows + 1, into ids_blob
    ids_blob: np.ndarray | None  # uint8: the UTF-8 of the str ids
    keys: np.ndarray  # (tables, table_size) uint64: permuted fingerprints, sorted by prefix
    rows: np.ndarray  # (tables, table_size) int32
    dirs: np.ndarray  # (tables, 2**dir_bits + 1) int32
    dir_bits: int
    table_size: int
    buffer_size: int | None
    merge_factor: int | None


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def write_index_file(path, layout: TableLayout, arrays: dict[str, np.ndarray], fields: dict) -> None:
    """Write ``arrays`` (name -> 1-d array) and ``fields`` (JSON values) with ``layout``'s
    configuration to ``path``, via a temporary file renamed into place."""
    arrays = {name: np.ascontiguousarray(arr) for name, arr in arrays.items()}
    meta = {name: {"dtype": arr.dtype.str, "length": int(arr.shape[0]),
                   "crc32": zlib.crc32(memoryview(arr).cast("B"))} for name, arr in arrays.items()}
    header = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, **layout.config(), **fields}
    offset_guess = 4096  # offsets depend on the header's length: iterate until they fit
    while True:
        off = offset_guess
        for name, arr in arrays.items():
            meta[name]["offset"] = off
            off = _aligned(off + arr.nbytes)
        header["arrays"] = meta
        header["file_size"] = off
        hb = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
        need = _aligned(HEADER_FIXED + len(hb))
        if need <= offset_guess:
            break
        offset_guess = need
    path = Path(path)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(MAGIC)
            f.write(np.array([FORMAT_VERSION, len(hb), zlib.crc32(hb), 0], dtype="<u4").tobytes())
            f.write(hb)
            pos = HEADER_FIXED + len(hb)
            for name, arr in arrays.items():
                o = meta[name]["offset"]
                f.write(b"\0" * (o - pos))
                f.write(memoryview(arr).cast("B"))
                pos = o + arr.nbytes
            f.write(b"\0" * (header["file_size"] - pos))
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def read_index_file(path, *, max_distance: int | None = None, verify: bool = False,
                    mmap: bool = True) -> SavedIndex:
    """Read and check an index file; see :meth:`neardup.index.simhash.SimhashIndex.open`."""
    path = Path(path)
    size = path.stat().st_size
    name = str(path)

    def bad(msg: str) -> SimhashIndexFormatError:
        return SimhashIndexFormatError(f"{name}: {msg}")

    with open(path, "rb") as f:
        fixed = f.read(HEADER_FIXED)
        if len(fixed) < HEADER_FIXED or fixed[:8] != MAGIC:
            raise bad("not a neardup simhash index (bad magic number or truncated)")
        version, hlen, hcrc, _ = np.frombuffer(fixed[8:], dtype="<u4").tolist()
        if version != FORMAT_VERSION:
            raise bad(f"format version {version}; this neardup reads version {FORMAT_VERSION}")
        if HEADER_FIXED + hlen > size:
            raise bad("truncated header")
        hb = f.read(hlen)
    if zlib.crc32(hb) != hcrc:
        raise bad("header checksum mismatch (corrupt file)")
    try:
        header = json.loads(hb.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise bad(f"unreadable header ({exc})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME \
            or header.get("format_version") != FORMAT_VERSION:
        raise bad("header is not a neardup simhash index header of this version")
    if header.get("file_size") != size:
        raise bad(f"file is {size} bytes, the header says {header.get('file_size')} (truncated or extended)")
    try:
        k, b = header["max_distance"], header["blocks"]
        if not (isinstance(k, int) and isinstance(b, int)):
            raise TypeError("max_distance and blocks must be ints")
        lay = layout_for(k, b)
    except (KeyError, TypeError, ValueError) as exc:
        raise bad(f"bad configuration ({exc})") from None
    cfg = lay.config()
    for key in ("block_sizes", "tables", "permutations"):
        if header.get(key) != cfg[key]:
            raise bad(f"recorded {key} differ from the layout for max_distance={k}, blocks={b}")
    if max_distance is not None and max_distance != k:
        raise bad(f"the index was built with max_distance={k}, not {max_distance}")
    n, m, db = header.get("n_rows"), header.get("table_size"), header.get("dir_bits")
    id_kind = header.get("id_kind")
    arrays_meta = header.get("arrays")
    T = lay.n_tables
    if not (isinstance(n, int) and isinstance(m, int) and 0 <= m <= n <= MAX_ROWS
            and isinstance(arrays_meta, dict) and id_kind in (None, "int", "str")
            and db == (dir_bits(m, min(lay.prefix_bits)) if m else 0)):
        raise bad("inconsistent header")

    raw = np.memmap(path, dtype=np.uint8, mode="r") if mmap else np.fromfile(path, dtype=np.uint8)

    def arr(key: str, dtype: str, length: int | None):
        am = arrays_meta.get(key)
        if not isinstance(am, dict):
            raise bad(f"array {key} missing")
        if am.get("dtype") != np.dtype(dtype).str:
            raise bad(f"array {key} has dtype {am.get('dtype')}, expected {np.dtype(dtype).str}")
        ln, off = am.get("length"), am.get("offset")
        if not (isinstance(ln, int) and isinstance(off, int)) or ln < 0 or (length is not None and ln != length):
            raise bad(f"array {key} has length {ln}, expected {length}")
        nbytes = ln * np.dtype(dtype).itemsize
        if off < HEADER_FIXED + hlen or off % ALIGN or off + nbytes > size:
            raise bad(f"array {key} lies outside the file")
        a = raw[off:off + nbytes].view(dtype)
        if verify and zlib.crc32(memoryview(np.ascontiguousarray(a)).cast("B")) != am.get("crc32"):
            raise bad(f"array {key} checksum mismatch (corrupt file)")
        return a

    fps = arr("fingerprints", "<u8", n)
    tomb = arr("tombstones", "u1", (n + 7) // 8)
    dead = np.unpackbits(tomb, count=n, bitorder="little").astype(np.bool_) if n else np.zeros(0, np.bool_)
    ids_int = ids_offsets = ids_blob = None
    if id_kind == "int":
        ids_int = arr("ids_int", "<i8", n)
    elif id_kind == "str":
        ids_offsets = arr("ids_offsets", "<i8", n + 1)
        ids_blob = arr("ids_blob", "u1", None)
        if ids_offsets[0] != 0 or ids_offsets[-1] != len(ids_blob):
            raise bad("string id offsets do not match the id data")
    elif n:
        raise bad("rows without ids")
    n_dead = int(dead.sum())
    if m != n - n_dead:
        raise bad(f"the tables hold {m} entries for {n - n_dead} live rows")
    keys = arr("keys", "<u8", T * m).reshape(T, m)
    rows = arr("rows", "<i4", T * m).reshape(T, m)
    dirs = arr("dirs", "<i4", T * ((1 << db) + 1)).reshape(T, (1 << db) + 1)
    if m and (np.any(dirs[:, 0] != 0) or np.any(dirs[:, -1] != m)):
        raise bad("a table directory does not span its table (corrupt file)")
    if verify and m:
        live_rows = np.flatnonzero(~dead)
        for t in range(T):
            r = rows[t]
            if not np.array_equal(np.sort(r), live_rows):
                raise bad(f"table {t}: its rows are not the live rows")
            if not np.array_equal(keys[t], lay.permute(t, fps[r])):
                raise bad(f"table {t}: permuted fingerprints do not match")
            p_bits = lay.prefix_bits[t]
            pre = keys[t] if p_bits == BITS else keys[t] >> np.uint64(BITS - p_bits)
            if np.any(pre[1:] < pre[:-1]):
                raise bad(f"table {t}: not sorted")
            if db:
                cnt = np.bincount((keys[t] >> np.uint64(BITS - db)).astype(np.intp), minlength=1 << db)
                if not np.array_equal(np.diff(dirs[t].astype(np.int64)), cnt):
                    raise bad(f"table {t}: directory does not match")
    return SavedIndex(layout=lay, fingerprints=fps, dead=dead, id_kind=id_kind, ids_int=ids_int,
                      ids_offsets=ids_offsets, ids_blob=ids_blob, keys=keys, rows=rows, dirs=dirs,
                      dir_bits=db, table_size=m, buffer_size=header.get("buffer_size"),
                      merge_factor=header.get("merge_factor"))
