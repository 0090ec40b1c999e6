"""Rabin fingerprints (neardup.rabin) against an independent polynomial reduction, rolling against
from-scratch, the polynomials' irreducibility, and collisions on real shingles against n^2 / 2^l."""

from __future__ import annotations

from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import D1, D2, real_texts
from neardup.hashing import hash64
from neardup.params import NormalizeParams, ShingleParams
from neardup.rabin import POLYNOMIALS, find_polynomial, fingerprint, rolling_shingle_fingerprints
from neardup.shingle import JOINERS, shingle_ids, shingles
from neardup.text.tokenize import tokenize


# -- an independent GF(2)[x] arithmetic: long division on the whole string as one integer ----------

def _reduce(a: int, p: int) -> int:
    deg = p.bit_length() - 1
    for bit in range(a.bit_length() - 1, deg - 1, -1):
        if a >> bit & 1:
            a ^= p << (bit - deg)
    return a


def _oracle(data: bytes, degree: int, premultiply_bits: int = 64) -> int:
    """data(x) * x^premultiply_bits mod P, the string read as one big-endian integer."""
    return _reduce(int.from_bytes(data, "big") << premultiply_bits, POLYNOMIALS[degree]) if data else 0


def _clmul(a: int, b: int) -> int:
    r = 0
    while b:
        if b & 1:
            r ^= a
        a, b = a << 1, b >> 1
    return r


def _irreducible_by_distinct_degrees(p: int) -> bool:
    """No factor of degree d <= n/2: gcd(x^(2^d) - x, p) = 1 for every d (Gauss: x^(2^d) - x is
    the product of all irreducibles of degree dividing d). Slower than Rabin's test, and another one."""
    n = p.bit_length() - 1
    power = 0b10
    for _ in range(n // 2):
        power = _reduce(_clmul(power, power), p)
        a, b = p, power ^ 0b10
        while b:
            a, b = b, _reduce(a, b)
        if a != 1:
            return False
    return True


@pytest.mark.parametrize("degree", sorted(POLYNOMIALS))
def test_the_polynomials_are_irreducible_and_as_documented(degree):
    p = POLYNOMIALS[degree]
    assert p.bit_length() - 1 == degree
    assert _irreducible_by_distinct_degrees(p)
    assert find_polynomial(degree) == p
    # and the check tells a reducible polynomial of the same degree apart: the square of one of
    # half the degree
    q = find_polynomial(degree // 2)
    assert not _irreducible_by_distinct_degrees(_clmul(q, q))


def test_known_values():
    # computed by the independent long division above, pinned so that a change shows
    cases = {b"a": (0x65DEF40099, 0x2211EDD57765A14C), b"a rose is a rose": (0xB768B7D779, 0x64802F1F099A532F),
             b"the crawler fetches each page": (0xD4FC8974B, 0xE5287987C215250E)}
    for data, (f40, f64) in cases.items():
        assert fingerprint(data, 40) == _oracle(data, 40) == f40
        assert fingerprint(data, 64) == _oracle(data, 64) == f64
        assert fingerprint(data, 40, premultiply_bits=0) == _oracle(data, 40, 0)
    assert fingerprint(b"", 40) == 0
    assert hash64("a rose is a rose", "rabin40") == 0xB768B7D779 << 24  # in the id's high bits
    assert hash64("a rose is a rose", "rabin64") == 0x64802F1F099A532F


@settings(max_examples=300, deadline=None)
@given(tokens=st.lists(st.binary(min_size=1, max_size=12), max_size=30), k=st.integers(1, 7),
       joiner=st.sampled_from([b" ", b"", b"\n"]), degree=st.sampled_from(sorted(POLYNOMIALS)),
       pre=st.sampled_from([0, 8, 64]))
def test_rolling_equals_fingerprinting_each_shingle_from_scratch(tokens, k, joiner, degree, pre):
    rolled = rolling_shingle_fingerprints(tokens, k, joiner, degree, pre)
    if not tokens:
        assert rolled == []
        return
    windows = [tokens] if len(tokens) < k else [tokens[i:i + k] for i in range(len(tokens) - k + 1)]
    assert rolled == [_oracle(joiner.join(w), degree, pre) for w in windows]


@pytest.mark.parametrize("unit", ["word", "char", "line"])
def test_shingle_ids_of_text_are_the_rolling_fingerprints(unit):
    params = ShingleParams(k=3, unit=unit, hash="rabin40", normalize=NormalizeParams())
    for text in (D1, D2, real_texts(limit=3)[0][1]):
        tokens = [t.encode() for t in tokenize(text, unit, params.normalize)]
        rolled = [f << 24 for f in rolling_shingle_fingerprints(tokens, 3, JOINERS[unit].encode(), 40)]
        assert sorted(set(rolled)) == shingle_ids(text, params).tolist()
        assert set(rolled) == {hash64(s, "rabin40") for s in shingles(text, params)}


def test_collisions_on_real_shingles_follow_n_squared_over_2_to_the_l():
    # Real 10-word shingles (the experiment's size). At l = 40 the expected number of colliding
    # pairs, C(n, 2) / 2^40, is far below one; truncated to a 20-bit polynomial the same strings
    # must collide about as often as random values would (about 430 pairs, standard deviation
    # about 21), which checks that the bound is what the fingerprints do on text, not only what
    # they promise.
    strings = set()
    for _, text in real_texts(limit=400, min_bytes=200):
        strings.update(shingles(text, ShingleParams(k=10)))
    data = sorted(s.encode() for s in strings)[:30_000]
    n = len(data)
    assert n == 30_000
    pairs = n * (n - 1) / 2
    f40 = [fingerprint(d, 40) for d in data]
    assert len(f40) - len(set(f40)) <= max(1, round(3 * pairs / 2 ** 40))
    p20 = find_polynomial(20)
    table = [_reduce(t << 20, p20) for t in range(256)]  # byte-at-a-time, as the oracle above
    mask = (1 << 20) - 1
    buckets: dict[int, int] = {}
    for d in data:
        f = 0
        for byte in d:
            f = (((f << 8) & mask) | byte) ^ table[f >> 12]
        buckets[f] = buckets.get(f, 0) + 1
    colliding = sum(c * (c - 1) // 2 for c in buckets.values())
    expected = pairs / 2 ** 20
    assert 0.8 * expected <= colliding <= 1.2 * expected, (colliding, expected, n)


def test_fingerprint_pairs_share_structure_only_where_the_strings_do():
    # a sanity check of the permutation: one changed byte changes the fingerprint, and the
    # premultiplied ids of strings that differ in their last byte differ in many bits
    a, b = b"the crawler fetches each page", b"the crawler fetches each pagf"
    assert fingerprint(a, 40, 0) ^ fingerprint(b, 40, 0) == 0b11  # e ^ f: linear before the power
    assert bin(fingerprint(a, 40) ^ fingerprint(b, 40)).count("1") > 8  # spread after it
    assert len({fingerprint(bytes([c]), 40) for c in range(1, 256)}) == 255
    assert all(fingerprint(x, 40) != fingerprint(y, 40) for x, y in combinations([b"a", b"b", b"ab", b"ba", b"aa"], 2))


# -- the compiled kernel computes the same ids, in one pass, on both code paths -----------------------

@pytest.mark.parametrize("portable", [False, True], ids=["pclmul", "portable"])
@pytest.mark.parametrize("hash_name", ["rabin40", "rabin64"])
def test_kernel_rabin_ids_equal_the_definition(hash_name, portable):
    from neardup import _native

    if not _native.available():
        pytest.skip("neardup._kernel is not built")
    from neardup import _kernel

    prev = _kernel.set_simd(not portable)
    try:
        texts = [D1, D2, "", "   ", "a", "x " * 3] + [t[:20000] for _, t in real_texts(limit=12)]
        for unit in ("word", "char", "line"):
            for k in (1, 2, 5, 10):
                params = ShingleParams(k=k, unit=unit, hash=hash_name)
                for text in texts:
                    want = sorted({hash64(s, hash_name) for s in shingles(text, params)})
                    assert _native.shingle_ids(text, params).tolist() == want, (unit, k, text[:40])
        # and through the batch path that dedup uses, signatures and ids together
        params = ShingleParams(k=5, hash=hash_name)
        sig = _native.signatures(texts, params, with_ids=True)
        for d, text in enumerate(texts):
            assert sig.doc_ids(d).tolist() == sorted({hash64(s, hash_name) for s in shingles(text, params)})
    finally:
        _kernel.set_simd(prev)


def test_kernel_refuses_an_unknown_hash():
    from neardup import _native

    if not _native.available():
        pytest.skip("neardup._kernel is not built")
    from neardup import _kernel

    with pytest.raises(ValueError, match="hash must be"):
        _kernel.shingle_ids(b"a b c", _native._table(), 0, 2, False, None, 7)


@pytest.mark.parametrize("portable", [False, True], ids=["pclmul", "portable"])
@pytest.mark.parametrize("hash_name", ["rabin40", "rabin64"])
def test_kernel_rabin_ids_of_long_units_and_shingles_past_the_power_table(hash_name, portable):
    # The kernel keeps x^(8L) for L < 4096 and squares its way to longer shingles; units longer
    # than its eight-byte steps, documents short and long enough for one chain or four, and a
    # last unit ending at the buffer's edge all give the independent reduction's ids.
    from neardup import _native

    if not _native.available():
        pytest.skip("neardup._kernel is not built")
    from neardup import _kernel

    line = " ".join(f"w{i:03d}" * (1 + i % 9) for i in range(300))  # one line of ~7 KB
    texts = [
        "\n".join(f"{line} {j}" for j in range(6)),  # line shingles of 2 x 7 KB: past 4 KiB
        "x" * 9000,  # one unit of 9,000 bytes (word unit): many eight-byte steps
        " ".join("abcdefghijklmnopq"[: 1 + i % 17] for i in range(500)),  # units of 1..17 bytes
    ]
    prev = _kernel.set_simd(not portable)
    try:
        for unit, k in (("line", 2), ("word", 1), ("word", 10), ("char", 5)):
            params = ShingleParams(k=k, unit=unit, hash=hash_name)
            for text in texts:
                want = sorted({_oracle(s.encode(), int(hash_name[5:])) << (64 - int(hash_name[5:]))
                               for s in shingles(text, params)})
                assert _native.shingle_ids(text, params).tolist() == want, (unit, k, text[:20])
    finally:
        _kernel.set_simd(prev)
