"""The stages as plain functions over arrays (neardup.stages), each on a case small enough to check by hand."""

import math

import numpy as np
import pytest

from neardup.config import DedupConfig
from neardup.stages.candidates import (default_banding, estimate_filter, estimate_floor, resemblance_target,
                                       simhash_candidates)
from neardup.stages.exact import first_holders
from neardup.stages.survivors import choose_survivors, components, keep_value, kept_mask, outcomes
from neardup.stages.verify import verify_pairs


def test_the_containment_target_is_written_once():
    assert resemblance_target(0.8, "jaccard") == 0.8
    assert resemblance_target(0.8, "containment") == 0.4
    assert resemblance_target(0.06, "containment") == 0.05  # never below 0.05
    floor = estimate_floor(0.8, 128)
    assert floor == pytest.approx(0.8 - 4 * math.sqrt(0.8 * 0.2 / 128) - 1 / 128)
    band = default_banding(0.8, 128)
    assert (band.bands, band.rows) == (18, 7) == (DedupConfig().banding().bands, DedupConfig().banding().rows)
    assert DedupConfig(measure="containment").banding() == default_banding(0.8, 128, "containment")


def test_first_holders_carry_over_batches():
    seen = {}
    new, empty, copies = first_holders([0, 1, 2, 3], np.array([7, 0, 7, 9], dtype=np.uint64),
                                       np.array([3, 0, 3, 4]), seen)
    assert new.tolist() == [True, False, False, True] and empty == [1] and copies == [(2, 0)]
    new, empty, copies = first_holders([4, 5], np.array([9, 8], dtype=np.uint64), np.array([4, 2]), seen)
    assert new.tolist() == [False, True] and empty == [] and copies == [(4, 3)]
    assert seen == {7: 0, 9: 3, 8: 5}


def test_estimate_filter_keeps_pairs_at_or_above_the_floor():
    sig = np.array([[1, 2, 3, 4], [1, 2, 3, 5], [9, 9, 9, 9]], dtype=np.uint64)
    ci, cj = np.array([0, 0]), np.array([1, 2])
    a, b, est, dropped = estimate_filter(sig, ci, cj, 0.5)
    assert (a.tolist(), b.tolist(), est.tolist(), dropped) == ([0], [1], [0.75], 1)
    assert estimate_filter(sig, ci, cj, None)[3] == 0


def test_simhash_candidates_within_the_distance():
    values = np.array([0b1111, 0b1110, 0b0000 | (1 << 63), 0b1111], dtype=np.uint64)
    ci, cj, est = simhash_candidates(values, 1)
    assert list(zip(ci.tolist(), cj.tolist())) == [(0, 1), (0, 3), (1, 3)]
    assert est.tolist() == [1 - 1 / 64, 1.0, 1 - 1 / 64]


def test_verify_pairs_measures_exactly():
    # runs: {1,2,3,4}, {1,2,3,5}, {1,2}
    ids = np.array([1, 2, 3, 4, 1, 2, 3, 5, 1, 2], dtype=np.uint64)
    offsets = np.array([0, 4, 8, 10])
    counts = np.diff(offsets)
    ci, cj, est = np.array([0, 0]), np.array([1, 2]), np.array([0.7, 0.4])
    edges = verify_pairs(ids, offsets, counts, ci, cj, est, measure="jaccard", threshold=0.6)
    assert (edges.i.tolist(), edges.j.tolist(), edges.jaccard.tolist()) == ([0], [1], [0.6])
    contained = verify_pairs(ids, offsets, counts, ci, cj, est, measure="containment", threshold=0.9)
    assert (contained.i.tolist(), contained.j.tolist(), contained.score.tolist()) == ([0], [2], [1.0])
    assert len(verify_pairs(ids, offsets, counts, ci, cj, est, measure="jaccard", threshold=None)) == 2


@pytest.mark.parametrize("keep, survivor", [("first", 0), ("longest", 2), ("shortest", 1), ("field", 1)])
def test_survivors_by_policy_ties_to_the_earlier(keep, survivor):
    sk = np.array([0, 1, 2, 3])                     # ordinals of the sketched records
    comp = components(4, np.array([0, 1]), np.array([1, 2]))   # {0, 1, 2} and {3}
    assert comp.tolist() == [0, 0, 0, 3]
    lengths = np.array([10, 5, 20, 7])
    keyvals = np.array([1.0, 3.0, math.nan, 2.0])
    local = choose_survivors(comp, sk, keep, lengths, keyvals)
    assert local.tolist() == [survivor] * 3 + [3]
    assert kept_mask(4, sk, local).tolist() == [i in (survivor, 3) for i in range(4)]
    ties = choose_survivors(comp, sk, "longest", np.array([5, 5, 5, 5]), None)
    assert ties.tolist() == [0, 0, 0, 3]


def test_keep_value_is_a_number_or_nan():
    assert keep_value("2.5") == 2.5 and keep_value(3) == 3.0
    assert math.isnan(keep_value(None)) and math.isnan(keep_value("many"))


def test_outcomes_of_near_and_exact_duplicates():
    ids = ["a", "b", "c", "d", "e"]
    reason = ["", "", "exact", "", "skipped:empty"]  # c is an exact copy of b; e was skipped
    sk = np.array([0, 1, 3])
    local = np.array([0, 0, 2])                     # b is a near duplicate of a; d alone
    kept = kept_mask(5, sk, local)
    out, sizes, chained = outcomes(ids, reason, sk, local, kept, np.array([1]), np.array([0.75]), {2: 1},
                                   chain_below=0.8)
    assert out.reason == ["kept", "near", "near", "unique", "skipped:empty"]
    assert out.cluster == ["a", "a", "a", "d", None]
    assert out.duplicate_of == [None, "a", "a", None, None]
    assert out.similarity == [1.0, 0.75, 0.75, 1.0, None]
    assert out.kept.tolist() == [True, False, False, True, False]
    assert sizes == {"a": 3} and chained == ["b"]  # clusters of two or more only
    assert reason[2] == "exact"  # the caller's list is not changed


def test_outcomes_in_columns_equal_outcomes_of_lists():
    """The engine passes ids and reasons as columns (arrays), with two records sharing an id:
    the same outcome as from lists, and the shared id's clusters counted together."""
    from neardup.stages.columns import Ids, Labels

    ids = ["a", "b", "c", "d", "e", "d"]
    reason = ["", "", "exact", "", "skipped:empty", ""]
    sk = np.array([0, 1, 3, 5])
    local = np.array([0, 0, 2, 3])  # d (ordinal 3) and d (ordinal 5) are two singletons of one id
    kept = kept_mask(6, sk, local)
    args = (sk, local, kept, np.array([1]), np.array([0.123456789]), {2: 1})
    col_ids, col_reason = Ids(), Labels()
    col_ids.extend(ids)
    for r in reason:
        col_reason.append(r)
    a, sizes_a, chained_a = outcomes(ids, reason, *args, chain_below=0.8)
    b, sizes_b, chained_b = outcomes(col_ids, col_reason, *args, chain_below=0.8)
    for field in ("ids", "reason", "cluster", "duplicate_of", "similarity"):
        assert list(getattr(a, field)) == list(getattr(b, field)), field
    assert sizes_a == sizes_b == {"a": 3, "d": 2} and chained_a == chained_b == ["b"]
    assert list(b.reason) == ["kept", "near", "near", "kept", "skipped:empty", "kept"]
    assert list(b.similarity)[1] == round(0.123456789, 6)


@pytest.mark.parametrize("family", ["mulshift32", "mulshift64", "affine61"])
@pytest.mark.parametrize("kernel", [True, False])
def test_signatures_of_ids_are_the_sketch_signatures(family, kernel, monkeypatch):
    """The Spark engine stores shingle ids only and computes its candidates' signatures again
    from them: they must be the sketch's own values, with the kernel and with the Python
    definition, for every family (texts shorter than a shingle and repeated words included)."""
    import dataclasses

    from neardup import _native
    from neardup.stages.sketch import signatures_of_ids, sketch_texts

    config = DedupConfig()
    minhash = dataclasses.replace(config.minhash, family=family)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    texts = [" ".join(words[(i * 7 + j * 3) % len(words)] for j in range(5 + i % 23)) for i in range(60)]
    texts += ["short", "two words", "again again again again again again again"]
    sketch = sketch_texts(texts, config.shingle, minhash, jobs=1)
    if not kernel:
        monkeypatch.setattr(_native, "available", lambda: False)
    again = signatures_of_ids(sketch.ids, sketch.offsets, minhash)
    assert again.dtype == np.uint64 and again.shape == sketch.values.shape
    assert np.array_equal(again, sketch.values)
