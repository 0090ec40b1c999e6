"""splitmix64 (Steele, Lea and Flood 2014) on Python ints: the mixing step both the hash families
(:mod:`neardup.hashing`) and the Rabin polynomials (:mod:`neardup.rabin`) are built on, kept below
both so that neither has to import the other's module to get it."""

from __future__ import annotations

MASK64 = (1 << 64) - 1


def splitmix64(x: int) -> int:
    """One step of the splitmix64 finaliser, on Python ints."""
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)
