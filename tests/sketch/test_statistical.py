"""Estimators against theory, over many fixed seeds (deterministic: a fixed master seed)."""

import math

import numpy as np
import pytest

from neardup import BottomS, MinHash, MinHashParams, ModM, ShingleParams, containment, jaccard, shingle_ids
from neardup.hashing import derive
from neardup.params import FAMILIES

from conftest import real_texts

MASTER = 20261130


def sets_with_jaccard(j, n, seed):
    """Two sets of random 64-bit ids with |A ∩ B| / |A ∪ B| = j exactly (union of n)."""
    rng = np.random.default_rng(seed)  # generates test data only; never part of a hash
    ids = np.unique(rng.integers(0, 2**63, size=n + 64, dtype=np.uint64))[:n]
    rng.shuffle(ids)
    shared = int(round(j * n))
    rest = n - shared
    a = np.concatenate([ids[:shared], ids[shared : shared + rest // 2]])
    b = np.concatenate([ids[:shared], ids[shared + rest // 2 :]])
    return np.sort(a), np.sort(b)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("j", [0.2, 0.5, 0.8])
def test_kmins_unbiased_with_theoretical_spread(family, j):
    m = 128
    trials = 100
    a, b = sets_with_jaccard(j, 1000, MASTER)
    j = jaccard(a, b)
    errors, inside = [], 0
    for t in range(trials):
        p = MinHashParams(num_perm=m, seed=derive(MASTER, "trial", t) % 2**32, family=family)
        ma, mb = MinHash(p), MinHash(p)
        ma.update_ids(a)
        mb.update_ids(b)
        est = ma.jaccard(mb)
        errors.append(est.value - j)
        inside += est.lower <= j <= est.upper
    sigma = math.sqrt(j * (1 - j) / m)
    errors = np.array(errors)
    # mean of 100 trials has standard error sigma/10: 4 of those is a generous, theory-based bound
    assert abs(errors.mean()) < 4 * sigma / math.sqrt(trials)
    # the spread matches sqrt(J(1-J)/m) within 25 %
    assert 0.75 * sigma < errors.std() < 1.25 * sigma
    # 95 % intervals cover the truth in about 95 % of trials
    assert inside >= 88
    assert np.mean(np.abs(errors) <= 2 * sigma) >= 0.9


def test_bottom_s_resemblance_within_theory():
    s = 256
    for j in (0.3, 0.7):
        a, b = sets_with_jaccard(j, 3000, MASTER + 1)
        j = jaccard(a, b)
        errs = []
        for t in range(60):
            x, y = BottomS(s, seed=t + 1), BottomS(s, seed=t + 1)
            x.update_ids(a)
            y.update_ids(b)
            errs.append(x.jaccard(y).value - j)
        sigma = math.sqrt(j * (1 - j) / s)
        assert abs(np.mean(errs)) < 4 * sigma / math.sqrt(60)
        assert np.std(errs) < 1.25 * sigma


def test_containment_estimates_on_real_text():
    """Bottom-s and mod-m containment of a document's first part in the whole, on real text."""
    params = ShingleParams(k=5)
    checked = 0
    for path, text in real_texts(limit=40, min_bytes=6000):
        whole = shingle_ids(text, params)
        part = shingle_ids(text[: len(text) // 3], params)
        if part.size < 200:
            continue
        truth = containment(part, whole)
        for t in range(3):
            for cls, size in ((BottomS, 256), (ModM, 4)):
                a, b = cls(size, seed=t + 1), cls(size, seed=t + 1)
                a.update_ids(part)
                b.update_ids(whole)
                est = a.containment(b)
                n = est.samples
                assert n > 0
                # containment is near 1 here; allow 4 binomial sigmas at the estimate plus a small floor
                tol = 4 * math.sqrt(max(truth * (1 - truth), 0.01) / n)
                assert abs(est.value - truth) <= tol, (path, cls.__name__, est, truth)
                assert abs(b.containment(a).value - containment(whole, part)) <= 4 * math.sqrt(0.25 / max(b.containment(a).samples, 1)) + 0.05
        checked += 1
    assert checked >= 5
