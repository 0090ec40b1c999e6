"""Tables computed from the running Python's Unicode database, shipped for one Unicode version.

A shipped table is used only when its Unicode version is the running Python's
(``unicodedata.unidata_version``); otherwise the caller computes the table itself. The file:
4 magic bytes, the version's length (1 byte) and ASCII text, the number of uint32 values
(little-endian uint32), then the values (little-endian uint32). ``scripts/gen_nfkc_table.py``
writes them.
"""

from __future__ import annotations

import struct
import unicodedata
from pathlib import Path

import numpy as np


def write(path: Path, magic: bytes, values) -> None:
    """Write ``values`` (uint32) for the running Python's Unicode version."""
    values = np.ascontiguousarray(values, dtype="<u4").ravel()
    version = unicodedata.unidata_version.encode()
    with open(path, "wb") as fh:
        fh.write(magic + struct.pack("<B", len(version)) + version + struct.pack("<I", values.size))
        fh.write(values.tobytes())


def read(path: Path, magic: bytes) -> np.ndarray | None:
    """The values (uint32) of the table at ``path`` when it is for the running Unicode version,
    else None (a missing or foreign file too)."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    if raw[:4] != magic:
        return None
    vlen = raw[4]
    if raw[5 : 5 + vlen].decode() != unicodedata.unidata_version:
        return None
    (count,) = struct.unpack_from("<I", raw, 5 + vlen)
    return np.frombuffer(raw, dtype="<u4", count=count, offset=9 + vlen).astype(np.uint32)
