"""The public in-memory indexes: MinHashLSH (band tables) and ExactIndex (content seen?)."""

import random

import numpy as np
import pytest

from neardup import (Banding, ExactIndex, IncompatibleSketchError, MinHash, MinHashLSH, MinHashParams, NormalizeParams,
                     ShingleParams, band_keys, fingerprint)
from neardup.stages.candidates import band_candidates

from conftest import real_texts

P = MinHashParams(num_perm=128, seed=1, family="mulshift32")
S = ShingleParams()


def sketch(text, params=P):
    return MinHash.from_text(text, S, params)


@pytest.fixture(scope="module")
def corpus():
    """Distinct real texts and edited copies of some, so that some pairs share bands and most do not."""
    rng = random.Random(3)
    seen, texts = set(), []
    for _, text in real_texts(limit=80, min_bytes=1500):
        if fingerprint(text) not in seen:
            seen.add(fingerprint(text))
            texts.append(text)
    for text in texts[:15]:
        words = text.split()
        for _ in range(max(1, len(words) // 25)):
            words[rng.randrange(len(words))] = f"edit{rng.randrange(10**6)}"
        texts.append(" ".join(words))
    return texts


def test_lsh_query_is_every_key_sharing_a_band_in_insertion_order(corpus):
    lsh = MinHashLSH(banding=Banding(bands=16, rows=8, num_perm=128), num_perm=128)
    sketches = [sketch(t) for t in corpus]
    order = list(range(len(corpus)))
    random.Random(1).shuffle(order)
    for i in order:
        lsh.add(f"k{i}", sketches[i])
    keys = band_keys(np.stack([s.hashvalues for s in sketches]), 16, 8)
    ci, cj, _ = band_candidates(keys)
    pairs = set(zip(ci.tolist(), cj.tolist()))
    for i, s in enumerate(sketches):
        expected = [f"k{j}" for j in order if j == i or (min(i, j), max(i, j)) in pairs]
        assert lsh.query(s) == expected
    assert len(pairs) >= 10  # the edited copies share bands with their originals


def test_lsh_add_remove_contains_len():
    lsh = MinHashLSH(threshold=0.8, num_perm=128)
    a = sketch("the crawler fetches each page and follows its links to new pages")
    lsh.add("a", a)
    lsh.add("b", sketch("a completely different text about rivers, boats and the sea at night"))
    assert len(lsh) == 2 and "a" in lsh and "c" not in lsh
    assert lsh.query(a) == ["a"]
    with pytest.raises(ValueError, match="already in the index"):
        lsh.add("a", a)
    lsh.remove("a")
    assert lsh.query(a) == [] and len(lsh) == 1 and "a" not in lsh
    with pytest.raises(KeyError):
        lsh.remove("a")


def test_lsh_refuses_sketches_it_cannot_compare():
    lsh = MinHashLSH(threshold=0.8, num_perm=128)
    lsh.add("a", sketch("one two three four five six seven"))
    with pytest.raises(IncompatibleSketchError, match="64 values"):
        lsh.query(MinHash.from_text("one two three", S, MinHashParams(num_perm=64, family="mulshift32")))
    with pytest.raises(IncompatibleSketchError, match="seed=2"):
        lsh.add("b", sketch("one two three four five six seven", MinHashParams(num_perm=128, seed=2,
                                                                               family="mulshift32")))
    with pytest.raises(IncompatibleSketchError, match="need 140 values"):
        MinHashLSH(num_perm=128, bands=20, rows=7)


def test_exact_index_first_holder_by_normalized_content():
    index = ExactIndex()
    assert index.check_and_add("a", "The crawler fetches each page.") is None
    assert index.check_and_add("b", "the CRAWLER   fetches each page") == "a"  # case, punctuation, space
    assert index.check_and_add("c", "the crawler fetches every page") is None
    assert index.check_and_add("d", "The crawler fetches each page!") == "a"  # the first holder, always
    assert len(index) == 2


def test_exact_index_follows_its_normalization():
    keep_case = ExactIndex(NormalizeParams(casefold=False))
    assert keep_case.check_and_add("a", "Page one") is None
    assert keep_case.check_and_add("b", "page one") is None
    assert keep_case.check_and_add("c", "Page  one.") == "a"
    assert len(keep_case) == 2


def test_exact_index_texts_without_tokens_match_nothing():
    index = ExactIndex()
    assert index.check_and_add("blank", "   ") is None
    assert index.check_and_add("punct", "!!! ... ???") is None  # no word either: no content
    assert len(index) == 0
