"""One versioned, little-endian binary envelope for every sketch.

======  ====  ============================================================
offset  size  field
======  ====  ============================================================
0       4     magic ``b"NDUP"``
4       1     format version (1)
5       1     kind: 1 k-mins MinHash, 2 bottom-s, 3 mod-m, 4 simhash
6       1     hash family of the shingles/features: 0 xxh3, 1 md5, 2 sha1
7       1     permutation family: 0 none, 1 affine61, 2 mulshift64, 3 mulshift32
8       8     seed (uint64)
16      4     size: num_perm (k-mins), s (bottom-s), m (mod-m), bits (simhash)
20      8     shingle-params fingerprint (0 when unknown)
28      4     n, the number of payload values
32      8*n   payload: uint64 values
32+8n   4     CRC-32 of every byte before it
======  ====  ============================================================

``decode`` checks each field and raises :class:`~neardup.errors.FormatError` naming what is
wrong, for truncated buffers, foreign data, unknown versions and bad checksums.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

import numpy as np

from ..errors import FormatError

MAGIC = b"NDUP"
VERSION = 1
KINDS = {1: "kmins", 2: "bottom_s", 3: "mod_m", 4: "simhash"}
KIND_IDS = {v: k for k, v in KINDS.items()}
HASH_IDS = {"xxh3": 0, "md5": 1, "sha1": 2}
FAMILY_IDS = {"none": 0, "affine61": 1, "mulshift64": 2, "mulshift32": 3}
_HEADER = struct.Struct("<4sBBBBQIQI")


@dataclass(frozen=True)
class Envelope:
    kind: str
    hash: str
    family: str
    seed: int
    size: int
    shingle_fingerprint: int
    values: np.ndarray


def encode(env: Envelope) -> bytes:
    values = np.ascontiguousarray(env.values, dtype="<u8")
    header = _HEADER.pack(MAGIC, VERSION, KIND_IDS[env.kind], HASH_IDS[env.hash], FAMILY_IDS[env.family],
                          env.seed, env.size, env.shingle_fingerprint, values.size)
    body = header + values.tobytes()
    return body + struct.pack("<I", zlib.crc32(body))


def decode(buf: bytes, expected_kind: str | None = None) -> Envelope:
    buf = bytes(buf)
    if len(buf) < 4 or buf[:4] != MAGIC:
        raise FormatError("not a neardup sketch: the buffer does not start with b'NDUP'")
    if len(buf) < _HEADER.size + 4:
        raise FormatError(f"truncated sketch: {len(buf)} bytes, the header alone needs {_HEADER.size + 4}")
    magic, version, kind, hash_id, family_id, seed, size, shingle_fp, n = _HEADER.unpack_from(buf)
    if version != VERSION:
        raise FormatError(f"sketch format version {version} is not supported (this neardup reads version {VERSION})")
    expected_len = _HEADER.size + 8 * n + 4
    if len(buf) != expected_len:
        raise FormatError(f"truncated or padded sketch: {len(buf)} bytes, expected {expected_len} for {n} values")
    (crc,) = struct.unpack_from("<I", buf, expected_len - 4)
    if zlib.crc32(buf[: expected_len - 4]) != crc:
        raise FormatError("corrupt sketch: CRC-32 mismatch")
    try:
        kind_name = KINDS[kind]
        hash_name = {v: k for k, v in HASH_IDS.items()}[hash_id]
        family = {v: k for k, v in FAMILY_IDS.items()}[family_id]
    except KeyError as exc:
        raise FormatError(f"corrupt sketch: unknown code {exc.args[0]} in header") from None
    if expected_kind is not None and kind_name != expected_kind:
        raise FormatError(f"expected a {expected_kind} sketch, got a {kind_name} sketch")
    values = np.frombuffer(buf, dtype="<u8", count=n, offset=_HEADER.size).astype(np.uint64)
    return Envelope(kind_name, hash_name, family, seed, size, shingle_fp, values)
