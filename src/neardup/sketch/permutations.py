"""Permutation families for k-mins MinHash, derived from one seed.

Coefficients for permutation ``i`` come from :func:`neardup.hashing.derive` with labels
``"perm-a"`` and ``"perm-b"``:

- ``affine61``: ``a = 1 + derive(seed, "perm-a", i) mod (p - 1)``, ``b = derive(seed, "perm-b", i) mod p``,
  ``h(x) = (a * (x mod p) + b) mod p`` with ``p = 2**61 - 1``;
- ``mulshift64``: ``a = derive(seed, "perm-a", i) | 1``, ``b = derive(seed, "perm-b", i)``,
  ``h(x) = (a * x + b) mod 2**64``.

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
        ids = [int(x) % self.prime for x in np.asarray(ids, dtype=np.uint64).tolist()]
        out = np.empty((len(self.a), len(ids)), dtype=np.uint64)
        for i, (a, b) in enumerate(zip(self.a, self.b)):
            out[i] = [(a * x + b) % self.prime for x in ids]
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


def family_for(name: str, num_perm: int, seed: int):
    """The permutation family named ``name`` with ``num_perm`` members derived from ``seed``."""
    ra = [derive(seed, "perm-a", i) for i in range(num_perm)]
    rb = [derive(seed, "perm-b", i) for i in range(num_perm)]
    if name == "affine61":
        return AffineModPrime(tuple(1 + x % (MERSENNE61 - 1) for x in ra), tuple(x % MERSENNE61 for x in rb))
    if name == "mulshift64":
        return MultiplyShift64(tuple(x | 1 for x in ra), tuple(rb))
    from ..errors import ConfigError

    raise ConfigError(f"unknown permutation family {name!r}: use affine61 or mulshift64")
