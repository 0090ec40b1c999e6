"""Permutation families for k-mins MinHash, derived from one seed.

Coefficients for permutation ``i`` come from :func:`neardup.hashing.derive` with labels
``"perm-a"`` and ``"perm-b"``:

- ``affine61``: ``a = 1 + derive(seed, "perm-a", i) mod (p - 1)``, ``b = derive(seed, "perm-b", i) mod p``,
  ``h(x) = (a * (x mod p) + b) mod p`` with ``p = 2**61 - 1``;
- ``mulshift64``: ``a = derive(seed, "perm-a", i) | 1``, ``b = derive(seed, "perm-b", i)``,
  ``h(x) = (a * x + b) mod 2**64``;
- ``mulshift32``: ``a = (derive(seed, "perm-a", i) mod 2**32) | 1``, ``b = derive(seed, "perm-b", i) >> 32``,
  ``h(x) = (a * (x >> 32) + b) mod 2**32``: the high half of the 64-bit shingle id (a uniform
  hash), permuted by a 32-bit multiply-add. Eight of them fit one AVX2 register where four
  64-bit products are emulated, so the compiled kernel runs it about four times faster;
  values are below ``2**32`` (two different shingles of the same pair of documents share a
  32-bit value with probability about ``|A| |B| / 2**32``, a negligible bias for documents
  under a million shingles).

A user-supplied family (:class:`AffineModPrime` with any prime, as in the seed's by-hand table
with ``(a*x + b) mod 17`` over shingle numbers) is allowed through the same interface.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..hashing import derive

MERSENNE61 = (1 << 61) - 1
MASK64 = (1 << 64) - 1


@dataclass(frozen=True)
class AffineModPrime:
    """``h_i(x) = (a_i * x + b_i) mod prime`` for each i; ids are reduced mod prime first."""

    a: tuple[int, ...]
    b: tuple[int, ...]
    prime: int = MERSENNE61
    name: str = "affine61"

    def __len__(self) -> int:
        return len(self.a)

    def apply(self, ids) -> np.ndarray:
        """Permuted values, shape (num_perm, len(ids)), uint64."""
        ids = np.asarray(ids, dtype=np.uint64)
        if self.prime == MERSENNE61:
            a = np.array(self.a, dtype=np.uint64)[:, None]
            b = np.array(self.b, dtype=np.uint64)[:, None]
            return _addmod61(_mulmod61(a, _mod61(ids)[None, :]), b)
        if self.prime < (1 << 32):
            a = np.array(self.a, dtype=np.uint64)[:, None] % np.uint64(self.prime)
            b = np.array(self.b, dtype=np.uint64)[:, None] % np.uint64(self.prime)
            x = (ids % np.uint64(self.prime))[None, :]
            return (a * x + b) % np.uint64(self.prime)
        xs = [int(x) % self.prime for x in ids.tolist()]
        out = np.empty((len(self.a), len(xs)), dtype=np.uint64)
        for i, (a, b) in enumerate(zip(self.a, self.b)):
            out[i] = [(a * x + b) % self.prime for x in xs]
        return out


@dataclass(frozen=True)
class MultiplyShift64:
    """``h_i(x) = (a_i * x + b_i) mod 2**64`` with odd ``a_i``: a bijection of 64-bit ids."""

    a: tuple[int, ...]
    b: tuple[int, ...]
    name: str = "mulshift64"

    def __len__(self) -> int:
        return len(self.a)

    def apply(self, ids) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.uint64)
        a = np.array(self.a, dtype=np.uint64)[:, None]
        b = np.array(self.b, dtype=np.uint64)[:, None]
        with np.errstate(over="ignore"):
            return a * ids[None, :] + b  # numpy wraps modulo 2**64


@dataclass(frozen=True)
class MultiplyShift32:
    """``h_i(x) = (a_i * (x >> 32) + b_i) mod 2**32`` with odd 32-bit ``a_i``; values as uint64."""

    a: tuple[int, ...]
    b: tuple[int, ...]
    name: str = "mulshift32"

    def __len__(self) -> int:
        return len(self.a)

    def apply(self, ids) -> np.ndarray:
        high = np.asarray(ids, dtype=np.uint64) >> np.uint64(32)
        a = np.array(self.a, dtype=np.uint64)[:, None]
        b = np.array(self.b, dtype=np.uint64)[:, None]
        return (a * high[None, :] + b) & _M32  # a * high + b < 2**64: no wrap-around


_P = np.uint64(MERSENNE61)
_M32 = np.uint64(0xFFFFFFFF)
_M29 = np.uint64((1 << 29) - 1)


def _fold61(s: np.ndarray) -> np.ndarray:
    return (s & _P) + (s >> np.uint64(61))


def _mod61(x: np.ndarray) -> np.ndarray:
    """x mod (2**61 - 1) for any uint64 x, using 2**61 = 1 (mod p)."""
    s = _fold61(_fold61(x))
    return np.where(s >= _P, s - _P, s)


def _mulmod61(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """(a * x) mod (2**61 - 1) for a, x < p, with 32-bit limbs so nothing overflows uint64."""
    a_hi, a_lo = a >> np.uint64(32), a & _M32
    x_hi, x_lo = x >> np.uint64(32), x & _M32
    lo = a_lo * x_lo                      # < 2**64
    mid = a_hi * x_lo + a_lo * x_hi       # < 2**62
    hi = a_hi * x_hi                      # < 2**58; hi * 2**64 = 8 * hi (mod p)
    # mid * 2**32 = (mid >> 29) * 2**61 + (mid & (2**29 - 1)) * 2**32 = (mid >> 29) + ... (mod p)
    s = (hi << np.uint64(3)) + (mid >> np.uint64(29)) + ((mid & _M29) << np.uint64(32)) + _fold61(lo)
    return _mod61(s)


def _addmod61(x: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _mod61(x + b)


def family_for(name: str, num_perm: int, seed: int):
    """The permutation family named ``name`` with ``num_perm`` members derived from ``seed``."""
    ra = [derive(seed, "perm-a", i) for i in range(num_perm)]
    rb = [derive(seed, "perm-b", i) for i in range(num_perm)]
    if name == "affine61":
        return AffineModPrime(tuple(1 + x % (MERSENNE61 - 1) for x in ra), tuple(x % MERSENNE61 for x in rb))
    if name == "mulshift64":
        return MultiplyShift64(tuple(x | 1 for x in ra), tuple(rb))
    if name == "mulshift32":
        return MultiplyShift32(tuple((x & 0xFFFFFFFF) | 1 for x in ra), tuple(x >> 32 for x in rb))
    from ..errors import ConfigError

    raise ConfigError(f"unknown permutation family {name!r}: use affine61, mulshift64 or mulshift32")
