"""The kernel's word simhashes (``signatures(..., with_simhashes=True)``) against the definition.

The definition is :meth:`neardup.SimHash.from_text` with the xxh3 feature hash: the words'
64-bit hashes weighted by their counts, summed bit by bit in floating point, one text at a time
(never through :func:`neardup.stages.sketch.sketch_documents`, which itself calls the kernel).
Each comparison runs with the AVX2 code and with the portable scalar code, for every unit (the
simhash is always of the words; other units split the words again) and normalization.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import D1, D2, D3, D4, real_texts
from neardup import _native
from neardup.exact.fingerprint import fingerprint
from neardup.params import MinHashParams, NormalizeParams, ShingleParams
from neardup.sketch.simhash import SimHash
from neardup.text.tokenize import words

pytestmark = pytest.mark.skipif(not _native.available(), reason="neardup._kernel is not built")

if _native.available():
    from neardup import _kernel

TRICKY = ("Ünïcödé Straße ǅemal ﬁne ＡＢＣ café cafe\u0301 Ⅻ ½ x²\r\n中文字符串，日本語のテキスト。 dots... "
          "em—dash «quotes» a_b a-b\u2028tab\there\u00a0nbsp emoji 😀👍🏽 \x00nul \ud800lone \udfffsurrogates end")
# a text past 255 tokens, so that the byte-lane counters are emptied mid-text (and one word
# repeated 600 times: one count far above the rest)
LONG = " ".join(f"w{i % 97}" for i in range(1000)) + " same" * 600
TEXTS = [D1, D2, D3, D4, TRICKY, LONG, "", "   ", "!!! ...", "one", "two words", "A a A a", "x\udc80y z"]


def reference(text: str, norm: NormalizeParams) -> tuple[int, int]:
    tokens = words(text, norm)
    return (SimHash.from_text(text, hash="xxh3", normalize=norm).value if tokens else 0), len(tokens)


@pytest.mark.parametrize("simd", [True, False])
@pytest.mark.parametrize("unit", ["word", "char", "line"])
@pytest.mark.parametrize("norm", [NormalizeParams(), NormalizeParams(remove_punctuation=False),
                                  NormalizeParams(casefold=False, nfkc=False)])
def test_kernel_simhashes_equal_the_definition(simd, unit, norm):
    texts = TEXTS + [t for _, t in real_texts(limit=12, min_bytes=500)]
    params = ShingleParams(k=3, unit=unit, normalize=norm)
    prev = _kernel.set_simd(simd)
    try:
        sig = _native.signatures(texts, params, MinHashParams(num_perm=4), jobs=2, with_fingerprints=True,
                                 with_simhashes=True)
    finally:
        _kernel.set_simd(prev)
    want = [reference(t, norm) for t in texts]
    assert sig.simhashes.tolist() == [w[0] for w in want]
    assert sig.words.tolist() == [w[1] for w in want]
    assert sig.fingerprints.tolist() == [fingerprint(t, norm) or 0 for t in texts]


def test_without_simhashes_the_kernel_returns_four_parts():
    data, offsets = _native.encode_texts(["a b c"], NormalizeParams())
    args = _native._signature_args(ShingleParams(), MinHashParams(num_perm=2), False, False)
    assert len(_kernel.signatures(data, offsets, *args[:-1])) == 4  # the argument left out
    assert len(_kernel.signatures(data, offsets, *args)) == 4  # with_simhashes=False
    parts = _kernel.signatures(data, offsets, *args[:-1], True)
    assert len(parts) == 5 and len(parts[4]) == 16  # (simhash, words) of the one text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text(alphabet=st.sampled_from(list("ab cAB.,é\u0301ﬁ中\n\t-_")), max_size=80), min_size=1,
                max_size=6))
def test_kernel_simhashes_of_generated_texts(texts):
    norm = NormalizeParams()
    sig = _native.signatures(texts, ShingleParams(), MinHashParams(num_perm=2), with_simhashes=True)
    assert list(zip(sig.simhashes.tolist(), sig.words.tolist())) == [reference(t, norm) for t in texts]
