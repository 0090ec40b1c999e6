"""What the index stores of a text, computed in one kernel pass, against the definitions.

:func:`neardup.stages.sketch.sketch_documents` takes the fingerprints and simhashes from the
kernel's split of the words (with the default xxh3 hash) instead of tokenizing in Python; the
values must be those of :func:`neardup.fingerprint` and :meth:`neardup.SimHash.from_text` one
text at a time, and skipping the shingle ids or the samples must change nothing else. The
vectorized simhash-block postings must be :func:`block_bucket`'s, posting by posting.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import D1, D2, D3, D4
from neardup import _native
from neardup.exact.fingerprint import fingerprint
from neardup.params import MinHashParams, NormalizeParams, ShingleParams
from neardup.sketch.simhash import SimHash
from neardup.stages.sketch import mod_m_samples, sketch_documents, sketch_texts
from neardup.store.schema import DOC_BITS, block_bucket, block_postings, simhash_blocks
from neardup.text.tokenize import words

TEXTS = [D1, D2, D3, D4, "", "...", "Ünïcödé ﬁne ＡＢＣ Straße", "x\udc80y z", "a " * 300, "The End. the end!"]


@pytest.mark.parametrize("norm", [NormalizeParams(), NormalizeParams(remove_punctuation=False)])
def test_sketch_documents_equal_the_definitions(norm):
    shingle = ShingleParams(normalize=norm)
    minhash = MinHashParams()
    sk = sketch_documents(TEXTS, shingle, minhash, mod_m=4, jobs=2)
    assert sk.fingerprints == [fingerprint(t, norm) for t in TEXTS]
    assert sk.simhashes == [SimHash.from_text(t, hash="xxh3", normalize=norm).value if words(t, norm) else None
                            for t in TEXTS]
    want = sketch_texts(TEXTS, shingle, minhash)
    assert np.array_equal(sk.signatures.values, want.values)
    assert np.array_equal(sk.signatures.ids, want.ids)
    for got, expected in zip(sk.samples, mod_m_samples(want.ids, want.offsets, minhash.seed, 4)):
        assert np.array_equal(got, expected)


def test_sketch_documents_without_ids_or_samples_changes_nothing_else():
    shingle, minhash = ShingleParams(), MinHashParams()
    full = sketch_documents(TEXTS, shingle, minhash, mod_m=8)
    lean = sketch_documents(TEXTS, shingle, minhash, mod_m=8, with_samples=False, with_ids=False)
    if _native.supports(shingle):
        assert lean.signatures.ids is None  # the kernel skipped sorting and returning them
    assert all(s.size == 0 for s in lean.samples)
    assert np.array_equal(lean.signatures.values, full.signatures.values)
    assert np.array_equal(lean.signatures.n_shingles, full.signatures.n_shingles)
    assert (lean.fingerprints, lean.simhashes) == (full.fingerprints, full.simhashes)


@pytest.mark.parametrize("max_distance", [0, 1, 2, 3, 5, 7, 31])
def test_block_postings_equal_block_bucket(max_distance):
    rng = np.random.default_rng(max_distance)  # test data only
    widths = simhash_blocks(max_distance)
    values = rng.integers(0, 1 << 63, size=40, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, size=40,
                                                                                              dtype=np.uint64)
    nums = rng.integers(1, (1 << DOC_BITS) - 1, size=40)
    got = block_postings(values, nums, widths)
    for row, (value, num) in enumerate(zip(values.tolist(), nums.tolist())):
        want, pos = [], 0
        for i, width in enumerate(widths):
            key = (value >> (64 - pos - width)) & ((1 << width) - 1)
            pos += width
            want.append(block_bucket(i, key, width) << DOC_BITS | num)
        assert got[row].tolist() == want
