"""Rabin fingerprints (Rabin 1981; Broder 1993), the shingle ids of Broder's 1997 experiment.

A byte string ``A = a_1 ... a_n`` is read as a polynomial over GF(2), the first byte's high bit
the highest coefficient: ``A(x) = sum of bit_j * x^j``. Its fingerprint under an irreducible
polynomial ``P`` of degree ``l`` is ``A(x) mod P(x)``, an ``l``-bit value. Two different strings
of at most ``m`` bits collide with probability at most ``m / 2^l`` over the choice of ``P``, so
``n`` strings are all distinct with probability at least ``1 - n^2 m / 2^(l+1)``; with ``l = 40``
and the shingles of a few million documents, collisions are rare (the seed's ``n^2 / 2^l``).

The polynomials are fixed, so that ids stored in an index stay valid: for each degree ``l``,
``P = x^l + r`` with ``r`` the first odd value from ``splitmix64(l) mod 2^l`` upwards that makes
``P`` irreducible (Rabin's test, :func:`is_irreducible`). Both are also checked irreducible by an
independent implementation in the tests.

**The permutation.** Fingerprints of similar strings are related linearly, which matters when
ids are sampled (``MOD_m``: keep ids divisible by ``m``) or compared (``MIN_s``). The seed's remedy
costs nothing: multiply the polynomial by a suitable power of ``x`` first, which is appending
null bytes to the string. Since ``P`` is irreducible, multiplying by ``x^s`` modulo ``P`` is a
bijection of the nonzero residues, so it permutes the fingerprints. neardup's ``rabin40`` and
``rabin64`` shingle ids are ``A(x) * x^64 mod P`` (eight null bytes appended, :data:`PREMULTIPLY_BITS`).

**As 64-bit ids** (:func:`shingle_id`) a fingerprint of ``l < 64`` bits is stored in the high
bits, ``f << (64 - l)``: everything downstream reads ids from the top (the kernel's radix sort,
the ``mulshift32`` permutations, which use the high 32 bits), and a 40-bit value in the low bits
would give them 8 bits of it. Divisibility by an odd ``m`` (the ``MOD_m`` sample) is unchanged by
the shift, since ``2^(64-l)`` is prime to ``m``.

**Rolling.** The fingerprints of all ``k``-token shingles of a document are computed in one pass
over its tokens (:func:`rolling_shingle_fingerprints`): with ``S_i = t_i j R`` (``j`` the joiner,
``R`` the rest of the window), ``f(R) = f(S_i) - f(t_i j) * x^(8|R|)`` and
``f(S_(i+1)) = f(R) * x^(8|j t|) + f(j t)``, so each token's bytes are read twice, not ``k`` times:
O(n) for the whole document, not O(kn). This module is the definition; the compiled kernel
computes the same values.
"""

from __future__ import annotations

from functools import lru_cache

from .splitmix import splitmix64

#: Irreducible polynomials over GF(2), bit ``i`` the coefficient of ``x^i`` (see the module).
POLYNOMIALS = {40: 0x10B0CA19113, 64: 0x1D6967248FBE68CED}
#: The "suitable power" every shingle id is premultiplied by: x^64, eight null bytes appended.
PREMULTIPLY_BITS = 64
DEGREES = tuple(POLYNOMIALS)


def _check_degree(degree: int) -> int:
    if degree not in POLYNOMIALS:
        from .errors import ConfigError

        raise ConfigError(f"no Rabin polynomial of degree {degree}: use one of {', '.join(map(str, DEGREES))}")
    return POLYNOMIALS[degree]


# -- arithmetic in GF(2)[x] on Python ints ----------------------------------------------------------

def poly_mod(a: int, p: int) -> int:
    """``a(x) mod p(x)`` over GF(2)."""
    dp = p.bit_length() - 1
    while a.bit_length() - 1 >= dp:
        a ^= p << (a.bit_length() - 1 - dp)
    return a


def poly_mulmod(a: int, b: int, p: int) -> int:
    """``a(x) * b(x) mod p(x)`` over GF(2) (carry-less product, then reduction)."""
    product = 0
    while b:
        if b & 1:
            product ^= a
        b >>= 1
        a <<= 1
    return poly_mod(product, p)


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, poly_mod(a, b)
    return a


def _x_to_2_to_the(k: int, p: int) -> int:
    """``x^(2^k) mod p``, by squaring ``k`` times."""
    r = 0b10
    for _ in range(k):
        r = poly_mulmod(r, r, p)
    return r


def _prime_factors(n: int) -> list[int]:
    out, d = [], 2
    while d * d <= n:
        if n % d == 0:
            out.append(d)
            while n % d == 0:
                n //= d
        d += 1
    return out + ([n] if n > 1 else [])


def is_irreducible(p: int) -> bool:
    """Rabin's test: ``p`` of degree ``n`` is irreducible over GF(2) iff ``x^(2^n) = x mod p`` and
    ``gcd(x^(2^(n/q)) - x, p) = 1`` for every prime ``q`` dividing ``n``."""
    n = p.bit_length() - 1
    if n < 1:
        return False
    if _x_to_2_to_the(n, p) != poly_mod(0b10, p):
        return False
    return all(_gcd(p, _x_to_2_to_the(n // q, p) ^ 0b10) == 1 for q in _prime_factors(n))


def find_polynomial(degree: int) -> int:
    """The documented choice of :data:`POLYNOMIALS` (for the tests and for other degrees)."""
    r = (splitmix64(degree) & ((1 << degree) - 1)) | 1
    while not is_irreducible((1 << degree) | r):
        r += 2
    return (1 << degree) | r


# -- fingerprints ---------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _byte_table(degree: int) -> tuple[int, ...]:
    """``T[t] = t(x) * x^degree mod P`` for every byte ``t``: what the 8 bits shifted out of the
    top of a fingerprint contribute back, so that appending a byte is one shift and one lookup."""
    p = POLYNOMIALS[degree]
    return tuple(poly_mod(t << degree, p) for t in range(256))


def extend(f: int, data: bytes, degree: int) -> int:
    """The fingerprint of ``A || data`` from ``f``, the fingerprint of ``A`` (one byte at a time)."""
    table = _byte_table(degree)
    shift, mask = degree - 8, (1 << degree) - 1
    for byte in data:
        f = (((f << 8) & mask) | byte) ^ table[f >> shift]
    return f


def fingerprint(data: bytes, degree: int = 40, premultiply_bits: int = PREMULTIPLY_BITS) -> int:
    """``data(x) * x^premultiply_bits mod P``: the Rabin fingerprint of ``data`` from scratch."""
    p = _check_degree(degree)
    f = extend(0, data, degree)
    return poly_mulmod(f, x_power(premultiply_bits, degree), p) if premultiply_bits else f


@lru_cache(maxsize=4096)
def x_power(bits: int, degree: int) -> int:
    """``x^bits mod P`` (square and multiply)."""
    p = POLYNOMIALS[degree]
    result, base, e = 1, 0b10, bits
    while e:
        if e & 1:
            result = poly_mulmod(result, base, p)
        base = poly_mulmod(base, base, p)
        e >>= 1
    return result


def shingle_id(f: int, degree: int) -> int:
    """A fingerprint of ``degree`` bits as a 64-bit shingle id: in the high bits (module)."""
    return f << (64 - degree)


def rolling_shingle_fingerprints(tokens: list[bytes], k: int, joiner: bytes = b" ", degree: int = 40,
                                 premultiply_bits: int = PREMULTIPLY_BITS) -> list[int]:
    """The fingerprints of ``joiner.join(tokens[i:i+k])`` for every window, in one pass (module
    docstring); fewer than ``k`` tokens give one shingle of them all, as :mod:`neardup.shingle`."""
    p = _check_degree(degree)
    if not tokens:
        return []
    if len(tokens) <= k:
        return [fingerprint(joiner.join(tokens), degree, premultiply_bits)]
    if k == 1:  # a window of one token has no joiner to drop
        return [fingerprint(t, degree, premultiply_bits) for t in tokens]
    post = x_power(premultiply_bits, degree) if premultiply_bits else 1
    window = joiner.join(tokens[:k])
    f = extend(0, window, degree)
    rest_bytes = len(window)  # bytes in the window
    out = [poly_mulmod(f, post, p)]
    for i in range(k, len(tokens)):
        lead = tokens[i - k] + joiner
        rest_bytes -= len(lead)
        # drop the leading token and its joiner: its contribution is f(lead) * x^(8 |R|)
        f ^= poly_mulmod(extend(0, lead, degree), x_power(8 * rest_bytes, degree), p)
        added = joiner + tokens[i]
        f = extend(f, added, degree)
        rest_bytes += len(added)
        out.append(poly_mulmod(f, post, p))
    return out
