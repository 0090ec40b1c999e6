"""The per-record columns (stages/columns.py) and the exact pass's FingerprintTable against
the Python objects they replace."""

import numpy as np
import pytest

from neardup.stages.columns import Floats, Growable, Ids, Labels, Names, repeated_names
from neardup.stages.exact import FingerprintTable, first_holders


def test_ids_give_back_the_strings_they_were_given():
    strings = ["d0", "", "héllo wörld", "x" * 100, "\ud800lone", "d0", "日本語", "x" * 100, "last"]
    ids = Ids()
    ids.extend(strings[:4])
    for s in strings[4:]:
        ids.append(s)
    assert len(ids) == len(strings)
    assert list(ids) == strings and ids.tolist() == strings and ids == strings
    assert [ids[k] for k in range(len(strings))] == strings and ids[-1] == "last"
    assert ids[2:5] == strings[2:5]
    assert ids.take(np.array([8, 0, 3])) == ["last", "d0", "x" * 100]
    again = Ids(bytes(ids.data), ids.ends.copy())  # as a saved stage reads them back
    assert list(again) == strings


def test_repeated_names_finds_exactly_the_shared_ids():
    rng = np.random.default_rng(3)
    strings = [f"doc-{int(k)}" for k in rng.integers(0, 400, size=600)] + ["y" * 80, "y" * 80, "y" * 79]
    ids = Ids()
    ids.extend(strings)
    got = sorted(tuple(g.tolist()) for g in repeated_names(ids))
    want = sorted(tuple(g.tolist()) for g in repeated_names(strings))
    by_hand: dict = {}
    for o, s in enumerate(strings):
        by_hand.setdefault(s, []).append(o)
    assert got == want == sorted(tuple(v) for v in by_hand.values() if len(v) > 1)
    assert len(set(ids.hashes().tolist())) == len(set(strings))


def test_equal_ids_hash_alike_in_slices_of_other_widths(monkeypatch):
    """An id's hash does not depend on the longest id hashed in the same slice: the same id in a
    slice of short ids and in a slice holding a 60-byte one is found repeated."""
    import neardup.stages.columns as columns

    monkeypatch.setattr(columns, "_HASH_ROWS", 4)
    strings = ["a1", "b2", "c3", "d4", "a1", "x" * 60, "e5", "f6", "b2"]
    ids = Ids()
    ids.extend(strings)
    h = ids.hashes().tolist()
    assert h[0] == h[4] and h[1] == h[8]
    assert [g.tolist() for g in repeated_names(ids)] == [[0, 4], [1, 8]]


def test_labels_names_floats_growable():
    labels = Labels()
    labels.extend_with("", 3)
    labels.append("skipped:empty")
    labels[1] = "exact"
    labels[np.array([0, 2])] = "near"
    assert list(labels) == ["near", "exact", "near", "skipped:empty"]
    assert labels.mask("near").tolist() == [True, False, True, False]
    copy = labels.copy()
    copy[0] = "kept"
    assert labels[0] == "near" and copy[0] == "kept"
    ids = Ids()
    ids.extend(["a", "b", "c"])
    assert list(Names(np.array([2, -1, 0, 0]), ids)) == ["c", None, "a", "a"]
    assert list(Names(np.array([-1, 1]), ["p", "q"])) == [None, "q"]
    assert list(Floats(np.array([1.0, np.nan, 0.25]))) == [1.0, None, 0.25]
    g = Growable(np.int64)
    for k in range(3000):
        g.append(k)
    g.extend(np.arange(5))
    assert len(g) == 3005 and g[2999] == 2999 and np.asarray(g)[-1] == 4


@pytest.mark.parametrize("grow_slice", [FingerprintTable.GROW_SLICE, 64])
def test_fingerprint_table_gives_the_first_holders_of_a_dict(grow_slice, monkeypatch):
    monkeypatch.setattr(FingerprintTable, "GROW_SLICE", grow_slice)  # 64: each growth placed in many slices
    rng = np.random.default_rng(7)
    as_dict, table = {}, FingerprintTable(capacity=16)  # small: grows many times
    start = 0
    for _ in range(40):
        m = int(rng.integers(1, 4000))
        # many repeats across and within batches, fingerprint 0 among them
        fps = rng.integers(0, 6000, size=m).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        ns = rng.integers(0, 4, size=m)
        ords = list(range(start, start + m))
        start += m
        a, b = first_holders(ords, fps, ns, as_dict), first_holders(ords, fps, ns, table)
        assert a[0].tolist() == b[0].tolist() and a[1] == b[1] and a[2] == b[2]
    assert len(table) == len(as_dict) and dict(table.items()) == as_dict
    assert table.count <= FingerprintTable.LOAD * table.keys.size
