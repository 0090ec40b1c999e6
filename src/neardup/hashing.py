"""The one place where text becomes bytes and bytes become 64-bit integers.

Hash families are named, never passed as callables, so that the name can be recorded with every
artefact and a mismatch detected:

- ``xxh3``: XXH3-64 of the UTF-8 bytes, seed 0 (the default: fast and well mixed);
- ``md5``, ``sha1``: the first 8 bytes of the digest read big-endian, to reproduce the papers
  (the seed's simhash example uses MD5);
- ``rabin40``, ``rabin64``: Rabin fingerprints of that degree, premultiplied by ``x^64``, in the
  high bits of the 64-bit id (:mod:`neardup.rabin`), the shingle ids of Broder's 1997 experiment.

Seeds for permutations are derived from one integer with :func:`derive`, a fixed procedure built
on splitmix64, never from a random-number stream whose output may change between numpy versions.
Python's ``hash()`` is never used: it changes with ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import xxhash

from .rabin import fingerprint, shingle_id
from .splitmix import MASK64, splitmix64

__all__ = ["HASH_NAMES", "MASK64", "encode", "check_hash_name", "hash64", "splitmix64", "derive", "splitmix64_array"]

HASH_NAMES = ("xxh3", "rabin40", "rabin64", "md5", "sha1")


def encode(token: str | bytes) -> bytes:
    """UTF-8 bytes of a str; bytes pass through unchanged."""
    if isinstance(token, str):
        return token.encode("utf-8", "surrogatepass")
    if isinstance(token, (bytes, bytearray, memoryview)):
        return bytes(token)
    raise TypeError(f"expected str or bytes, got {type(token).__name__}")


def check_hash_name(name: str) -> str:
    if name not in HASH_NAMES:
        from .errors import ConfigError

        raise ConfigError(f"unknown hash {name!r}: use one of {', '.join(HASH_NAMES)}")
    return name


def hash64(data: str | bytes, name: str = "xxh3") -> int:
    """The 64-bit hash of ``data`` under the named family, as an int in [0, 2**64)."""
    raw = encode(data)
    if name == "xxh3":
        return xxhash.xxh3_64_intdigest(raw)
    if name in ("md5", "sha1"):
        import hashlib  # only for these: it loads OpenSSL, a cost on every start otherwise

        return int.from_bytes(hashlib.new(name, raw).digest()[:8], "big")
    if name in ("rabin40", "rabin64"):
        degree = int(name[5:])
        return shingle_id(fingerprint(raw, degree), degree)
    check_hash_name(name)
    raise AssertionError("unreachable")


def derive(seed: int, label: str, index: int) -> int:
    """A 64-bit value derived from ``(seed, label, index)``; stable across versions and machines.

    ``derive(s, l, i) = splitmix64(splitmix64(s XOR xxh3(l)) + i)``. Different labels give
    independent streams (the ``a`` and ``b`` of permutation ``i`` use labels ``"perm-a"`` and
    ``"perm-b"``).
    """
    base = splitmix64((seed & MASK64) ^ xxhash.xxh3_64_intdigest(label.encode()))
    return splitmix64((base + index) & MASK64)


def splitmix64_array(x, seed: int = 0):
    """splitmix64 of ``x XOR seed`` on a uint64 numpy array: a seeded bijection of 64-bit ids."""
    import numpy as np

    with np.errstate(over="ignore"):
        z = np.asarray(x, dtype=np.uint64) ^ np.uint64(seed & MASK64)
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))
