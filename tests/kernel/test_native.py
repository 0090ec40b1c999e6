"""The compiled kernel (neardup._kernel via neardup._native) against the pure-Python definitions.

Every result must be identical: shingle ids against ``shingles()`` + ``hash64`` (never through
``shingle.shingle_ids``, which itself dispatches to the kernel), MinHash values against
``min`` over ids of ``family_for(...).apply(ids)``. Each comparison runs with the AVX2 code
and with the portable scalar code.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import D1, D2, D3, D4, real_texts
from neardup import _native
from neardup.hashing import hash64
from neardup.params import MinHashParams, NormalizeParams, ShingleParams
from neardup.shingle import shingles
from neardup.sketch.permutations import family_for
from neardup.params import FAMILIES
from neardup.text.normalize import fold
from neardup.text.tokenize import tokenize

if os.environ.get("NEARDUP_REQUIRE_NATIVE") == "1":
    assert _native.available(), "neardup._kernel is not built"
pytestmark = pytest.mark.skipif(not _native.available(), reason="neardup._kernel is not built")

if _native.available():
    from neardup import _kernel

UNITS = ("word", "char", "line")
SEED_DOCS = (D1, D2, D3, D4)
MAX64 = np.uint64(0xFFFFFFFFFFFFFFFF)

# Text that exercises every branch of the tokenizer: ASCII, accented Latin (composed and with
# combining marks, NFKC changes), CJK / kana / Thai (one token per character), punctuation and
# symbols, every kind of white space and line break, controls, surrogates, astral code points.
TRICKY = (
    "Ünïcödé Straße ǅemal ﬁne ＡＢＣ café cafe\u0301 Ⅻ ½ x²\r\n"
    "中文字符串，日本語のテキスト。カタカナ ｶﾀｶﾅ ไทยภาษา ລາວ ᠮᠣᠩ\x85"
    "dots... em—dash «quotes» (paren) [brackets] {braces} #hash @at $5.00 100% a_b a-b\u2028"
    "tab\there\x0bvt\x0cff\x1cfs\x1dgs\x1ers\x1fus\u2029para\u00a0nbsp\u3000ideo\u200bzw\r"
    "emoji 😀👍🏽 math 𝐀𝐁 ∑∫ ₿ € ¥ \x00nul \x7f del \ud800lone \udfffsurrogates \U0010ffff end"
)

CHARS = st.one_of(
    st.sampled_from(list("abcXYZ019_ ")),
    st.sampled_from(list("éÉàßÅøœÆıİſﬁǅ") + ["e\u0301", "A\u030a"]),
    st.sampled_from(list("中文字日本語のカタナｶﾀ한국어ไทยภาษาລາວ")),
    st.sampled_from(list(".,;:!?-—–'\"«»()[]{}#@$%&*/\\|~^`+=<>…·•€¥₿∑½²")),
    st.sampled_from(["\n", "\r", "\r\n", "\t", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f",
                     "\x85", "\u2028", "\u2029", "\u00a0", "\u3000", "\u200b", "  ", "\x00"]),
    st.characters(blacklist_categories=("Cs",)),
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),  # lone surrogates
)
TEXTS = st.lists(CHARS, max_size=60).map("".join)


def params_of(unit: str, k: int, remove_punctuation: bool = True, **norm) -> ShingleParams:
    return ShingleParams(k=k, unit=unit, normalize=NormalizeParams(remove_punctuation=remove_punctuation, **norm))


def reference_ids(text: str, params: ShingleParams) -> np.ndarray:
    """The pure-Python definition: hash64 of every shingle string, sorted and distinct."""
    strings = shingles(text, params)
    ids = np.fromiter((hash64(s, "xxh3") for s in strings), dtype=np.uint64, count=len(strings))
    return np.unique(ids)


def reference_signature(ids: np.ndarray, family: str, num_perm: int, seed: int) -> np.ndarray:
    if ids.size == 0:
        return np.full(num_perm, MAX64, dtype=np.uint64)
    return family_for(family, num_perm, seed).apply(ids).min(axis=1)


@pytest.fixture(params=["avx2", "scalar"])
def simd(request):
    """Run the test with the AVX2 code (when the CPU has it) and with the scalar code."""
    if request.param == "avx2":
        prev = _kernel.set_simd(True)
        if _kernel.simd() != "avx2":
            _kernel.set_simd(prev)
            pytest.skip("no AVX2 on this CPU")
    else:
        prev = _kernel.set_simd(False)
    yield request.param
    _kernel.set_simd(prev)


def _copyrights(limit: int = 40) -> list[str]:
    return [t for _, t in real_texts(limit=limit, min_bytes=500)]


# --- availability and API -------------------------------------------------------------------


def test_available_and_supports():
    assert _native.available()
    assert _native.supports(ShingleParams())
    for unit in UNITS:
        assert _native.supports(params_of(unit, 3, remove_punctuation=False, nfkc=False, casefold=False))
    assert not _native.supports(ShingleParams(hash="md5"))
    assert not _native.supports(ShingleParams(multiset=True))
    no_collapse = NormalizeParams(collapse_whitespace=False)
    assert not _native.supports(ShingleParams(unit="char", normalize=no_collapse))
    assert _native.supports(ShingleParams(unit="word", normalize=no_collapse))  # words never collapse
    with pytest.raises(ValueError):
        _native.shingle_ids("x", ShingleParams(hash="sha1"))


def test_header_xxh3_matches_python_xxhash():
    import xxhash

    for data in [b"", b"a", b"hello world" * 3, bytes(range(256)) * 3, "Ünï 中".encode()]:
        assert _kernel.xxh3_64(data) == xxhash.xxh3_64_intdigest(data)


# --- tokens and shingle ids -----------------------------------------------------------------


@pytest.mark.parametrize("remove_punctuation", [True, False])
@pytest.mark.parametrize("unit", UNITS)
def test_units_equal_tokenizer(simd, unit, remove_punctuation):
    params = params_of(unit, 1, remove_punctuation)
    code, keep = _native._UNITS[unit], not remove_punctuation
    for text in list(SEED_DOCS) + [TRICKY, TRICKY * 3, TRICKY.upper() * 2, ""] + _copyrights(10):
        want = [t.encode("utf-8", "surrogatepass") for t in tokenize(text, unit, params.normalize)]
        # text folded in Python, no folding in the kernel
        raw = fold(text, params.normalize).encode("utf-8", "surrogatepass")
        assert _kernel.units(raw, _native._table(), code, keep) == want
        # the real path: NFKC in Python, case folding in the kernel
        table, fold_table = _native._kernel_tables(params.normalize)
        assert _kernel.units(_native._encode(text, params.normalize), table, code, keep, fold_table) == want


def test_casefold_table_is_complete():
    want = [(cp, chr(cp).casefold()) for cp in range(0x110000) if chr(cp).casefold() != chr(cp)]
    assert _native._casefold_changes() == want
    table, quads, _ = _native._kernel_maps(False, True)
    assert quads[:, 0].tolist() == [cp for cp, _ in want]
    assert ((table & 0x7F) == _native._table()).all()
    assert ((table & 0x80) != 0).sum() == len(want)


@pytest.mark.parametrize("unit", UNITS)
def test_case_folding_expansions(simd, unit):
    # casefold can make up to 3 code points (and 3 times the bytes) of one: the kernel's buffers
    # grow for text made of such letters (ΐ: 2 bytes -> 6), wherever they are in the document.
    texts = ["ΐ" * 5000, "ΐ " * 3000, "ΰ" * 40 + "a" * 300, ("xΐ.ΰ,ﬃ ß" * 999) + "ẞ" * 70,
             "a" * 5000 + "ΐ" * 3000, "ǰ̌" * 50 + "ŉ" * 50, TRICKY.upper()]
    for k in (1, 3):
        params = params_of(unit, k)
        for text in texts:
            assert np.array_equal(_native.shingle_ids(text, params), reference_ids(text, params))
        sig = _native.signatures(texts + [""], params, MinHashParams(num_perm=4), with_ids=True)
        for i, text in enumerate(texts):
            assert np.array_equal(sig.doc_ids(i), reference_ids(text, params))


def test_fold_table_is_checked():
    table, quads, _ = _native._kernel_maps(False, True)
    with pytest.raises(ValueError):
        _kernel.units(b"x", table, 0, False, quads[::-1].copy())
    with pytest.raises(ValueError):
        _kernel.units(b"x", table, 0, False, b"123")
    bad = quads.copy()
    bad[5, 1] = 0x110000  # folds outside Unicode
    with pytest.raises(ValueError):
        _kernel.units(b"x", table, 0, False, bad)
    bad = quads.copy()
    bad[0, 1:] = [ord("a"), ord("b"), 0]  # ASCII folding to two code points
    with pytest.raises(ValueError):
        _kernel.units(b"x", table, 0, False, bad)


NFKC_PIECES = ["e\u0301", "\u0301", "\u0327\u0301", "A\u030a", "\u1100\u1161\u11a8", "\u11a8", "\uac00\u11a8",
               "ﬁ", "Ⅻ", "½", "ｶﾞ", "\u3099", "ド", "\u00a0", "\n", "\n\u0301", "\r\n", "\u2028", "x", "abc def",
               "\u0344", "\u0f73", "\U0001d15e", "\ud800"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(st.sampled_from(NFKC_PIECES), max_size=400), pad=st.integers(0, 2100))
def test_line_by_line_nfkc_equals_nfkc(pieces, pad):
    import unicodedata

    from neardup.text.nfkc import nfkc, nfkc_by_lines

    text = "a" * pad + "".join(pieces)
    assert nfkc(text) == unicodedata.normalize("NFKC", text)
    assert nfkc_by_lines(text) == unicodedata.normalize("NFKC", text)
    params = params_of("word", 2)
    assert np.array_equal(_native.shingle_ids(text, params), reference_ids(text, params))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=st.lists(st.tuples(st.lists(st.sampled_from(NFKC_PIECES), max_size=60), st.integers(0, 3000),
                               st.integers(0, 3)), max_size=12),
       start=st.integers(0, 3), nfkc_on=st.booleans())
def test_batch_encoding_equals_python(docs, start, nfkc_on):
    """The kernel's batch encoder (UTF-8 off the GIL, NFKC only where a flagged code point is)
    gives exactly the bytes of NFKC-then-encode, for Latin-1, BMP, astral and surrogate texts."""
    import unicodedata

    texts = [("a" * pad + "\n" * lines).join(pieces) if lines else "b" * pad + "".join(pieces)
             for pieces, pad, lines in docs]
    start = min(start, len(texts))
    norm = NormalizeParams(nfkc=nfkc_on)
    data, offsets = _native._encode_range(texts, start, len(texts), norm)
    expected = [(unicodedata.normalize("NFKC", t) if nfkc_on else t).encode("utf-8", "surrogatepass")
                for t in texts[start:]]
    assert offsets.size == len(expected) + 1
    # what the kernel reads (it maps the context-free code points itself) is the NFKC'd text
    table, fold = _native._kernel_tables(norm)
    for i, want in enumerate(expected):
        got = data[offsets[i] : offsets[i + 1]]
        assert _kernel.units(got, table, 0, False, fold) == _kernel.units(want, table, 0, False, fold)


def test_context_free_code_points_normalize_alone():
    """NFKC of a text made of safe and context-free code points is each one's own NFKC: for
    every context-free code point, between neighbours of each kind (letters that compose, marks'
    bases, digits, space, line breaks, precomposed letters, Hangul, and other context-free code
    points, including those whose NFKC ends in a combining mark)."""
    import unicodedata

    from neardup.text.nfkc import context_free, unsafe_table

    table, mapped = unsafe_table(), context_free()
    assert len(mapped) > 4000 and all(table[cp] for cp in mapped)
    for cp in (0x00B4, 0x2026, 0x00A0, 0xFF0C, 0x00BD, 0xFB01, 0x2122, 0x3000):
        assert cp in mapped, hex(cp)
    for cp in (0x0301, 0x1161, 0x11A8, 0x3099, 0x0344):  # marks, jamo, a decomposing mark
        assert cp not in mapped, hex(cp)
    neighbours = ["", "a", "A", "e", "s", " ", "1", ".", "\n", "é", "\u1100", "\uac00", "\u00b4", "\u2026", "\ufb01",
                  "\u1e9b", "\u00a8"]
    assert all(not table[ord(c)] or ord(c) in mapped for n in neighbours for c in n)
    for cp, want in mapped.items():
        assert want == unicodedata.normalize("NFKC", chr(cp))
        for before in neighbours:
            for after in neighbours:
                text = before + chr(cp) + after
                assert unicodedata.normalize("NFKC", text) == "".join(
                    mapped.get(ord(c), c) for c in text), (hex(cp), before, after)


@pytest.mark.parametrize("unit", UNITS)
@pytest.mark.parametrize("casefold", [True, False])
def test_kernel_maps_context_free_code_points(simd, unit, casefold):
    """Texts holding only context-free unsafe code points are not flagged, and the kernel's
    shingles of their raw UTF-8 are those of the NFKC'd text."""
    from neardup.text.nfkc import context_free

    mapped = sorted(context_free())
    rng = np.random.default_rng(17)  # test data only
    safe = list("abc XYZ 123 .,;\n") + ["é", "ß", "中", "\U0001F600"]
    params = params_of(unit, 2, casefold=casefold)
    flags = _native.flag_table(params.normalize)
    table, fold = _native._kernel_tables(params.normalize)
    texts = []
    for start in range(0, len(mapped), 97):
        chosen = [chr(cp) for cp in mapped[start : start + 97]] + [safe[i] for i in rng.integers(0, len(safe), 120)]
        texts.append("".join(rng.permutation(np.array(chosen, dtype=object)).tolist()))
    n_fit = 0
    for text in texts:
        raw = text.encode("utf-8")
        unflagged = not any(flags[ord(c)] for c in text)
        n_fit += unflagged
        if unflagged:
            sig = _native.signatures_encoded([(raw, np.array([0, len(raw)]))], params, MinHashParams(num_perm=4),
                                             with_ids=True)
            assert np.array_equal(sig.doc_ids(0), reference_ids(text, params))
    assert n_fit >= len(texts) // 2  # most texts: a few context-free code points do not fit an entry


def test_nfkc_table():
    """ASCII is never flagged (the encoder skips it), the shipped table is the running Python's,
    and the flags in a batch are exactly the texts holding a flagged code point, with its span."""
    from neardup._kernel import utf8_join
    from neardup.text import nfkc

    table = nfkc.unsafe_table()
    assert not table[:128].any()
    shipped = nfkc._shipped()
    if shipped is not None:
        assert shipped.tolist() == nfkc.unsafe_code_points()
    for cp in (0x0301, 0xFB01, 0x1161, 0x11A8, 0xFF76, 0x3099, 0x00BD):  # mark, ligature, jamo, ...
        assert table[cp], hex(cp)
    for cp in (ord("é"), ord("’"), 0x4E2D, 0xAC00, 0x1F600):  # precomposed, quotes, Han, Hangul, emoji
        assert not table[cp], hex(cp)
    texts = ["plain", "café ’quoted’", "x\ufb01y\u0301z", "\U0001F600 \ufb01"]
    _, _, flagged = utf8_join(texts, 0, len(texts), table)
    assert flagged == [(2, 1, 3), (3, 2, 2)]
    with pytest.raises(TypeError, match="item 1"):
        utf8_join(["a", b"b"], 0, 2, None)


@pytest.mark.parametrize("k", range(1, 8))
@pytest.mark.parametrize("unit", UNITS)
def test_seed_sentences(simd, unit, k):
    for remove_punctuation in (True, False):
        params = params_of(unit, k, remove_punctuation)
        for text in SEED_DOCS + (TRICKY, " \n ", ""):
            assert np.array_equal(_native.shingle_ids(text, params), reference_ids(text, params))


@pytest.mark.parametrize("remove_punctuation", [True, False])
@pytest.mark.parametrize("unit", UNITS)
def test_real_files(simd, unit, remove_punctuation):
    if unit == "char" and simd == "scalar":
        pytest.skip("characters have no AVX2 code path")
    texts = [t[:30000] for t in _copyrights(16)]
    assert len(texts) == 16  # tests/data/texts ships 420
    for k in (1, 2, 3, 5, 7):
        params = params_of(unit, k, remove_punctuation)
        for text in texts:
            assert np.array_equal(_native.shingle_ids(text, params), reference_ids(text, params))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXTS, unit=st.sampled_from(UNITS), k=st.integers(1, 7), remove_punctuation=st.booleans(),
       use_simd=st.booleans())
def test_hypothesis_shingle_ids(text, unit, k, remove_punctuation, use_simd):
    params = params_of(unit, k, remove_punctuation)
    prev = _kernel.set_simd(use_simd)
    try:
        got = _native.shingle_ids(text, params)
    finally:
        _kernel.set_simd(prev)
    assert np.array_equal(got, reference_ids(text, params))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXTS, unit=st.sampled_from(("word", "line")), k=st.integers(1, 7),
       remove_punctuation=st.booleans(), reps=st.integers(2, 6))
def test_hypothesis_long_ascii_runs(text, unit, k, remove_punctuation, reps):
    # The AVX2 splitter works on 32-byte ASCII blocks: mix long ASCII stretches (tokens crossing
    # block edges, line breaks anywhere) with the generated text.
    filler = "lorem ipsum_dolor sit-amet,\nconsectetur adipiscing\r\nelit " * reps
    doc = filler + text + filler[: 17 * reps] + text + "x" * (29 * reps)
    params = params_of(unit, k, remove_punctuation)
    assert np.array_equal(_native.shingle_ids(doc, params), reference_ids(doc, params))


def test_folding_switched_off():
    # The kernel sees fold(text): NFKC and case folding are honoured on the Python side.
    for nfkc in (True, False):
        for casefold in (True, False):
            for unit in UNITS:
                params = params_of(unit, 2, True, nfkc=nfkc, casefold=casefold)
                for text in (TRICKY, "ＡＢＣ Abc ABC ﬁ fi"):
                    assert np.array_equal(_native.shingle_ids(text, params), reference_ids(text, params))


def test_malformed_utf8_is_deterministic():
    # str.encode never produces these; each malformed byte counts as a separator.
    table = _native._table()
    raw = b"ab\xffcd \xc3 ef\xe4\xb8 gh \xf0\x9f\x98 ij\xc0\xafkl \xed\xa0\x80mn \xf4\x90\x80\x80op"
    words = _kernel.units(raw, table, 0, False)
    assert words == [b"ab", b"cd", b"ef", b"gh", b"ij", b"kl", b"mn", b"op"]
    ids = np.frombuffer(_kernel.shingle_ids(raw, table, 0, 2, False), dtype=np.uint64)
    assert ids.size == len(words) - 1


# --- MinHash signatures ---------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_signatures_equal_reference(simd, family):
    texts = list(SEED_DOCS) + ["", "   ", "...", "one", "two words", TRICKY] + [t[:8000] for t in _copyrights(6)]
    for unit, k in (("word", 5), ("word", 1), ("char", 4), ("line", 2)):
        sp = params_of(unit, k)
        for num_perm, seed in ((128, 1), (1, 7), (5, 42), (67, 2**64 - 1)):
            mp = MinHashParams(num_perm=num_perm, seed=seed, family=family)
            sig = _native.signatures(texts, sp, mp, with_ids=True)
            assert sig.values.shape == (len(texts), num_perm) and sig.values.dtype == np.uint64
            assert sig.offsets[0] == 0 and sig.offsets[-1] == sig.ids.size
            for i, text in enumerate(texts):
                ids = reference_ids(text, sp)
                assert np.array_equal(sig.doc_ids(i), ids)
                assert sig.n_shingles[i] == ids.size
                assert np.array_equal(sig.values[i], reference_signature(ids, family, num_perm, seed)), (i, unit, k)


@pytest.mark.parametrize("family", FAMILIES)
def test_short_and_empty_documents(simd, family):
    mp = MinHashParams(num_perm=16, family=family)
    texts = ["", " \t\r\n\x85\u2028 ", "!!! ???", "a", "a b", "a b c", "中", "中文", "a\nb"]
    for unit in UNITS:
        for k in (1, 3, 7):
            sp = params_of(unit, k)
            sig = _native.signatures(texts, sp, mp, with_ids=True)
            for i, text in enumerate(texts):
                ids = reference_ids(text, sp)
                assert sig.n_shingles[i] == ids.size
                if ids.size == 0:
                    assert (sig.values[i] == MAX64).all()
                    assert sig.doc_ids(i).size == 0
                assert np.array_equal(sig.values[i], reference_signature(ids, family, 16, 1))


P61 = (1 << 61) - 1
EDGE_IDS = [0, 1, 2, 7, 8, 2**32 - 1, 2**32, 2**32 + 1, P61 - 1, P61, P61 + 1, 2 * P61, 2 * P61 + 1,
            2**61, 2**62 - 1, 2**62, 3 * P61 + 2, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 9, 2**64 - 8,
            2**64 - 2, 2**64 - 1]


@pytest.mark.parametrize("family", FAMILIES)
def test_minhash_arithmetic_on_edge_ids(simd, family):
    # Ids that stress the modular arithmetic (reduction mod p, carries, the 2**63 bias), one per
    # run, in runs of every length (the AVX2 code takes ids four at a time), plus random ids.
    rng = np.random.default_rng(5)
    rand = rng.integers(0, 2**64, size=300, dtype=np.uint64)
    ids = np.concatenate([np.array(EDGE_IDS, dtype=np.uint64), rand])
    offsets = list(range(len(EDGE_IDS) + 1))  # each edge id alone, then runs of 0..8 ids
    while offsets[-1] < ids.size:
        offsets.append(min(ids.size, offsets[-1] + int(rng.integers(0, 9))))
    offsets = np.array(offsets, dtype=np.int64)
    for num_perm, seed in ((1, 0), (3, 3), (4, 2**63), (130, 11)):
        mp = MinHashParams(num_perm=num_perm, seed=seed, family=family)
        fam = family_for(family, num_perm, seed)
        got = _native.minhash_ids(ids, offsets, mp)
        full = fam.apply(ids)
        for i in range(len(offsets) - 1):
            lo, hi = offsets[i], offsets[i + 1]
            want = full[:, lo:hi].min(axis=1) if hi > lo else np.full(num_perm, MAX64, dtype=np.uint64)
            assert np.array_equal(got[i], want), (i, ids[lo:hi])


def test_python_reference_of_affine61_is_exact():
    # the vectorised reference in permutations.py against plain integers
    fam = family_for("affine61", 9, 4)
    ids = np.array(EDGE_IDS, dtype=np.uint64)
    want = [[(a * (x % P61) + b) % P61 for x in EDGE_IDS] for a, b in zip(fam.a, fam.b)]
    assert fam.apply(ids).tolist() == want


def test_python_reference_of_mulshift32_is_its_definition():
    # h(x) = (a * (x >> 32) + b) mod 2**32, a = (derive(seed, "perm-a", i) mod 2**32) | 1,
    # b = derive(seed, "perm-b", i) >> 32: plain integers against the vectorised reference
    from neardup.hashing import derive

    fam = family_for("mulshift32", 9, 4)
    assert fam.a == tuple((derive(4, "perm-a", i) & 0xFFFFFFFF) | 1 for i in range(9))
    assert fam.b == tuple(derive(4, "perm-b", i) >> 32 for i in range(9))
    want = [[(a * (x >> 32) + b) % 2**32 for x in EDGE_IDS] for a, b in zip(fam.a, fam.b)]
    assert fam.apply(np.array(EDGE_IDS, dtype=np.uint64)).tolist() == want


def test_kernel_refuses_mulshift32_coefficients_of_64_bits():
    ids, offsets = np.arange(4, dtype=np.uint64), np.array([0, 4], dtype=np.int64)
    a = np.array([2**32 + 1], dtype=np.uint64)
    with pytest.raises(ValueError, match="below 2\\*\\*32"):
        _kernel.minhash(ids, offsets, a, np.zeros(1, dtype=np.uint64), _kernel.FAMILY_MULSHIFT32)


@pytest.mark.parametrize("family", FAMILIES)
def test_threads_equal_one_thread(family):
    texts = _copyrights(60) + list(SEED_DOCS) + ["", TRICKY] * 5
    sp, mp = ShingleParams(), MinHashParams(family=family)
    one = _native.signatures(texts, sp, mp, jobs=1, with_ids=True)
    prev = _native._CHUNK_BYTES
    _native._CHUNK_BYTES = 1 << 14  # many small chunks
    try:
        two = _native.signatures(texts, sp, mp, jobs=2, with_ids=True)
        three = _native.signatures(texts, sp, mp, jobs=3, with_ids=False)
    finally:
        _native._CHUNK_BYTES = prev
    for other in (two, three):
        assert np.array_equal(one.values, other.values)
        assert np.array_equal(one.n_shingles, other.n_shingles)
        assert np.array_equal(one.offsets, other.offsets)
    assert np.array_equal(one.ids, two.ids)
    assert three.ids is None


def test_signature_shapes_and_without_ids():
    mp = MinHashParams(num_perm=8)
    empty = _native.signatures([], ShingleParams(), mp, jobs=2)
    assert empty.values.shape == (0, 8) and empty.offsets.tolist() == [0] and empty.ids is None
    sig = _native.signatures([D1, "", D3], ShingleParams(k=2), mp)
    assert sig.ids is None
    assert sig.n_shingles.tolist() == [reference_ids(t, ShingleParams(k=2)).size for t in (D1, "", D3)]
    assert sig.offsets.tolist() == [0, *np.cumsum(sig.n_shingles).tolist()]
    with pytest.raises(ValueError):
        sig.doc_ids(0)
    # the arrays are writable, independent numpy arrays
    sig.values[0, 0] = 0
    # a generator is accepted too; one str or a non-str document is not
    gen = _native.signatures((t for t in [D1, D2]), ShingleParams(), mp)
    assert gen.values.shape == (2, 8)
    with pytest.raises(TypeError):
        _native.signatures(D1, ShingleParams(), mp)
    with pytest.raises(TypeError):
        _native.signatures([D1, b"bytes"], ShingleParams(), mp)


def test_kernel_argument_checks():
    table = _native._table()
    a, b = _native._coefficients("affine61", 4, 1)
    off = np.array([0, 3], dtype=np.int64)
    with pytest.raises(ValueError):
        _kernel.signatures(b"abc", off, table[:100], 0, 5, False, a, b, 0, False)
    with pytest.raises(ValueError):
        _kernel.signatures(b"abc", np.array([0, 9], dtype=np.int64), table, 0, 5, False, a, b, 0, False)
    with pytest.raises(ValueError):
        _kernel.signatures(b"abc", off, table, 3, 5, False, a, b, 0, False)
    with pytest.raises(ValueError):
        _kernel.signatures(b"abc", off, table, 0, 0, False, a, b, 0, False)
    big = np.full(4, (1 << 61) - 1, dtype=np.uint64)
    with pytest.raises(ValueError):
        _kernel.signatures(b"abc", off, table, 0, 5, False, big, b, 0, False)


def test_large_document_and_many_repeats(simd):
    # one long document with heavy repetition (dedup before MinHash, sort with equal buckets)
    text = (" ".join(f"w{i % 97}" for i in range(20000)) + "\n") * 3 + TRICKY
    for unit in UNITS:
        sp = params_of(unit, 3)
        ids = reference_ids(text, sp)
        assert np.array_equal(_native.shingle_ids(text, sp), ids)
        for family in FAMILIES:
            mp = MinHashParams(num_perm=20, family=family)
            sig = _native.signatures([text], sp, mp, with_ids=True)
            assert sig.n_shingles[0] == ids.size
            assert np.array_equal(sig.values[0], reference_signature(ids, family, 20, 1))


def test_big_documents(simd):
    # more than 8192 distinct ids: dedup and sort split the ids by their top bits first
    big = "\n".join(t for _, t in real_texts(limit=80, min_bytes=500))[:400_000]
    assert len(big) > 100_000
    for unit, k in (("word", 5), ("char", 3), ("line", 1)):
        sp = params_of(unit, k)
        ids = reference_ids(big, sp)
        assert np.array_equal(_native.shingle_ids(big, sp), ids)
        for family in FAMILIES:
            mp = MinHashParams(num_perm=8, family=family)
            for with_ids in (True, False):
                sig = _native.signatures([big, D1, big[:50_000]], sp, mp, with_ids=with_ids)
                assert sig.n_shingles[0] == ids.size
                assert np.array_equal(sig.values[0], reference_signature(ids, family, 8, 1))
                if with_ids:
                    assert np.array_equal(sig.doc_ids(0), ids)
                    assert np.array_equal(sig.doc_ids(2), reference_ids(big[:50_000], sp))


def test_already_folded_texts_with_folding_off():
    # How the store calls it: fold once in Python, then shingle with nfkc/casefold off.
    sp = ShingleParams()
    unfolded = dataclasses.replace(sp, normalize=dataclasses.replace(sp.normalize, nfkc=False, casefold=False))
    texts = [TRICKY, D1.upper()] + _copyrights(5)
    mp = MinHashParams(num_perm=16, family="mulshift64")
    a = _native.signatures(texts, sp, mp, with_ids=True)
    b = _native.signatures([fold(t) for t in texts], unfolded, mp, with_ids=True)
    assert np.array_equal(a.values, b.values) and np.array_equal(a.ids, b.ids)


# --- content fingerprints and intersections (hooks used by the dedup pipeline) --------------


@pytest.mark.parametrize("remove_punctuation", [True, False])
def test_fingerprints_equal_python(simd, remove_punctuation):
    from neardup.exact.fingerprint import fingerprint

    norm = NormalizeParams(remove_punctuation=remove_punctuation)
    # contents of every length around BLAKE2b's 128-byte blocks
    texts = list(SEED_DOCS) + ["", "  ", "...", TRICKY, TRICKY.upper(), "ΐ" * 100] + _copyrights(10)
    texts += ["a" * n for n in (1, 127, 128, 129, 255, 256, 257, 1000)] + ["ab " * n for n in range(40, 90)]
    want = np.array([fingerprint(t, norm) or 0 for t in texts], dtype=np.uint64)
    assert np.array_equal(_native.fingerprints(texts, norm), want)
    assert np.array_equal(_native.fingerprints(texts, norm, jobs=2), want)
    for unit in UNITS:
        sp = ShingleParams(unit=unit, k=3, normalize=norm)
        sig = _native.signatures(texts, sp, MinHashParams(num_perm=2), with_fingerprints=True)
        assert np.array_equal(sig.fingerprints, want)
    assert _native.signatures(texts[:2], ShingleParams()).fingerprints is None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(TEXTS, max_size=6), remove_punctuation=st.booleans())
def test_hypothesis_fingerprints(texts, remove_punctuation):
    from neardup.exact.fingerprint import fingerprint

    norm = NormalizeParams(remove_punctuation=remove_punctuation)
    want = np.array([fingerprint(t, norm) or 0 for t in texts], dtype=np.uint64)
    assert np.array_equal(_native.fingerprints(texts, norm), want)


def test_intersections_equal_numpy(simd):
    rng = np.random.default_rng(3)
    universe = rng.integers(0, 2**64, size=5000, dtype=np.uint64)
    runs = [np.unique(rng.choice(universe, size=int(s))) for s in
            [0, 1, 2, 5, 40, 100, 3000, 4000, 1, 0, 64, 65, 2000]]
    ids = np.concatenate(runs)
    offsets = np.zeros(len(runs) + 1, dtype=np.int64)
    np.cumsum([r.size for r in runs], out=offsets[1:])
    i, j = np.meshgrid(np.arange(len(runs)), np.arange(len(runs)))
    i, j = i.ravel(), j.ravel()
    got = _native.intersections(ids, offsets, i, j)
    want = [np.intersect1d(runs[a], runs[b], assume_unique=True).size for a, b in zip(i, j)]
    assert got.dtype == np.int64 and got.tolist() == want
    assert _native.intersections(ids, offsets, [], []).size == 0
    with pytest.raises(ValueError):
        _native.intersections(ids, offsets, [0], [len(runs)])
    # many small runs from small universes: every alignment of matches within blocks of four
    for universe_size in (8, 40, 400):
        small = [np.unique(rng.integers(0, universe_size, size=int(s)).astype(np.uint64))
                 for s in rng.integers(0, 60, size=120)]
        flat = np.concatenate(small)
        offs = np.concatenate(([0], np.cumsum([r.size for r in small])))
        a, b = rng.integers(0, len(small), 3000), rng.integers(0, len(small), 3000)
        expected = [np.intersect1d(small[x], small[y], assume_unique=True).size for x, y in zip(a, b)]
        assert _native.intersections(flat, offs, a, b).tolist() == expected
    # the same ids as pieces of whole runs (an empty piece among them), read in place
    cut = [0, 3, 3, 7, len(runs)]
    pieces = [ids[offsets[a] : offsets[b]] for a, b in zip(cut, cut[1:])]
    assert pieces[1].size == 0
    assert _native.intersections(pieces, offsets, i, j).tolist() == want
    # a piece boundary inside a run is refused, not read past
    inside = int(offsets[6]) + 1000
    with pytest.raises(ValueError, match="crosses"):
        _native.intersections([ids[:inside], ids[inside:]], offsets, np.array([6]), np.array([0]))


def _observations_while_inside(call, calls: int = 20) -> int:
    """How many times the main thread runs while a worker thread is inside ``call()``.

    The switch interval is set far beyond the test's length, so the interpreter never takes the
    GIL away from a thread that holds it: the main thread can run while the worker is between
    ``inside = True`` and ``inside = False`` only if ``call`` released the GIL itself. With the
    GIL held the count is 0 however fast or loaded the machine; released, it is positive. The
    main thread sleeps a little after every observation (releasing the GIL), so the worker gets
    it back as soon as the call returns. It counts, it never times.
    """
    import sys
    import threading
    import time

    state = {"inside": False, "seen": 0}

    def work():
        for _ in range(calls):
            state["inside"] = True
            call()
            state["inside"] = False
            if state["seen"] >= 1000:
                break

    old = sys.getswitchinterval()
    sys.setswitchinterval(120.0)  # also bounds a hang: the GIL changes hands after 120 s at most
    try:
        worker = threading.Thread(target=work)
        worker.start()
        while worker.is_alive():
            if state["inside"]:
                state["seen"] += 1
            time.sleep(0.0002)
        worker.join()
    finally:
        sys.setswitchinterval(old)
    return state["seen"]


def test_kernel_releases_the_gil():
    # While one thread is inside the kernel, the main thread keeps running Python code.
    text = (" ".join(t for _, t in real_texts(limit=40, min_bytes=500)) + "\n") * 4
    raw = text.encode()
    while len(raw) < 1_000_000:
        raw += raw
    offsets = np.array([0, len(raw) // 2, len(raw)], dtype=np.int64)
    a, b = _native._coefficients("affine61", 256, 1)
    table = _native._table()
    assert _observations_while_inside(
        lambda: _kernel.signatures(raw, offsets, table, 0, 5, False, a, b, 0, False)) > 0


def test_gil_observation_sees_a_call_that_holds_the_gil():
    # The control: pure Python holds the GIL for the whole call, so nothing is observed inside it
    # (the count above is not something any call would give).
    assert _observations_while_inside(lambda: sum(range(200_000)), calls=5) == 0


def test_agreements_equal_numpy():
    """The kernel's in-place comparison of signature rows equals numpy's gather-and-compare."""
    from neardup.cluster.candidates import estimate_similarity

    rng = np.random.default_rng(5)  # test data only
    values = rng.integers(0, 3, size=(500, 64), dtype=np.uint64)
    i, j = rng.integers(0, 500, 4000), rng.integers(0, 500, 4000)
    expected = (values[i] == values[j]).sum(axis=1)
    assert _native.agreements(values, i, j).tolist() == expected.tolist()
    assert np.array_equal(estimate_similarity(values, i, j), expected / 64)
    assert _native.agreements(values, i[:0], j[:0]).size == 0
    with pytest.raises(ValueError):
        _native.agreements(values, np.array([500]), np.array([0]))
    # rows given as pieces, read in place
    pieces = [values[:120], values[120:120], values[120:499], values[499:]]
    assert _native.agreements(pieces, i, j).tolist() == expected.tolist()
    assert np.array_equal(estimate_similarity(pieces, i, j), expected / 64)
    with pytest.raises(ValueError):
        _native.agreements(pieces, np.array([500]), np.array([0]))


def test_band_keys_equal_their_numpy_definition():
    from neardup.lsh.banding import _band_keys_numpy, band_keys

    rng = np.random.default_rng(11)
    for n, m, bands, rows in ((0, 8, 2, 4), (1, 1, 1, 1), (37, 128, 18, 7), (5, 130, 13, 10), (9, 64, 4, 16)):
        values = rng.integers(0, 2**64, size=(n, m), dtype=np.uint64)
        values[:2] = MAX64  # documents without shingles
        got = band_keys(values, bands, rows)
        assert got.shape == (n, bands) and np.array_equal(got, _band_keys_numpy(values, bands, rows))
    with pytest.raises(ValueError, match="bands \\* rows <= m"):
        _kernel.band_keys(np.zeros((2, 8), dtype=np.uint64), 8, 3, 3)


def test_signatures_of_encoded_segments_equal_signatures_of_texts():
    texts = _copyrights(50) + list(SEED_DOCS) + ["", TRICKY, "x"] * 3
    sp, mp = ShingleParams(), MinHashParams(family="mulshift32")
    want = _native.signatures(texts, sp, mp, jobs=2, with_ids=True, with_fingerprints=True)
    # the texts cut into segments of every size, some of one text and some empty
    encoded = [_native.encode_for_kernel(t, sp.normalize) for t in texts]
    rng = np.random.default_rng(3)
    segments, i = [], 0
    while i < len(texts):
        j = min(len(texts), i + int(rng.integers(0, 9)))
        pad = int(rng.integers(0, 5))  # texts need not start the buffer
        data = b"#" * pad + b"".join(encoded[i:j])
        offsets = pad + np.concatenate(([0], np.cumsum([len(e) for e in encoded[i:j]]))).astype(np.int64)
        segments.append((data, offsets))
        i = j
    for jobs in (1, 2, 3):
        got = _native.signatures_encoded(segments, sp, mp, jobs=jobs, with_ids=True, with_fingerprints=True)
        assert np.array_equal(got.values, want.values) and np.array_equal(got.ids, want.ids)
        assert np.array_equal(got.n_shingles, want.n_shingles) and np.array_equal(got.fingerprints, want.fingerprints)
    assert _native.signatures_encoded([], sp, mp, jobs=2).values.shape == (0, 128)
    with pytest.raises(ValueError, match="within the data"):
        _native.signatures_encoded([(b"abc", np.array([0, 5], dtype=np.int64))], sp, mp)


def test_shipped_casefold_table_is_this_pythons():
    shipped = _native._shipped_casefold()
    if shipped is None:  # another Unicode version: computed at run time instead
        pytest.skip("the shipped casefold table is for another Unicode version")
    assert np.array_equal(shipped, _native.casefold_quads())


def test_band_pairs_equal_their_numpy_definition():
    # buckets found by hashing in C against the sort of each band in numpy: same pairs, same stats
    from neardup.cluster import candidates

    rng = np.random.default_rng(2)
    cases = ((1000, 18, 300, 64), (5000, 4, 50, 8), (50, 3, 2, 64), (1, 2, 5, 64), (20000, 18, 2**63, 64),
             (3000, 5, 3, 4), (200, 1, 1, 2))
    for n, bands, distinct, window in cases:
        keys = rng.integers(0, distinct, size=(n, bands), dtype=np.uint64)
        got = candidates.candidate_pairs(keys, window=window)
        packed, stats = candidates._packed_pairs(keys, window)
        allp = np.unique(np.concatenate(packed)) if packed else np.empty(0, dtype=np.int64)
        assert np.array_equal(got[0], allp >> 32) and np.array_equal(got[1], allp & 0xFFFFFFFF), (n, bands)
        assert got[2] == dict(zip(("buckets_shared", "largest_bucket", "buckets_over_window"), stats))
    with pytest.raises(ValueError, match="window >= 2"):
        _kernel.band_pairs(np.zeros((4, 2), dtype=np.uint64), 2, 1)


def test_pair_functions_on_threads_equal_one_thread():
    rng = np.random.default_rng(0)
    runs = [np.unique(rng.integers(0, 1000, size=int(rng.integers(0, 200))).astype(np.uint64)) for _ in range(500)]
    ids = np.concatenate(runs)
    offsets = np.concatenate(([0], np.cumsum([r.size for r in runs]))).astype(np.int64)
    i, j = rng.integers(0, 500, size=20000), rng.integers(0, 500, size=20000)
    values = rng.integers(0, 3, size=(500, 16), dtype=np.uint64)
    for jobs in (2, 3):
        assert np.array_equal(_native.intersections(ids, offsets, i, j, jobs=jobs), _native.intersections(ids, offsets, i, j))
        assert np.array_equal(_native.agreements(values, i, j, jobs=jobs), _native.agreements(values, i, j))
