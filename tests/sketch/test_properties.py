"""Laws that must hold for any input (hypothesis)."""

import pickle

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup import BottomS, MinHash, MinHashParams, ModM, SimHash, UnionFind, containment, jaccard
from neardup.errors import FormatError, IncompatibleSketchError
from neardup.params import FAMILIES

id_sets = st.sets(st.integers(min_value=0, max_value=2**64 - 1), max_size=200)
small_sets = st.sets(st.integers(min_value=0, max_value=60), max_size=40)


@given(small_sets, small_sets)
def test_jaccard_symmetric_bounded_and_below_containment(a, b):
    j = jaccard(a, b)
    assert j == jaccard(b, a)
    assert 0.0 <= j <= 1.0
    assert containment(a, b) >= j - 1e-12
    assert containment(b, a) >= j - 1e-12
    if a == b:
        assert j == 1.0


@given(small_sets, small_sets)
def test_array_and_set_measures_agree(a, b):
    aa, bb = np.array(sorted(a), dtype=np.uint64), np.array(sorted(b), dtype=np.uint64)
    assert jaccard(aa, bb) == jaccard(a, b)
    assert containment(aa, bb) == containment(a, b)


P = MinHashParams(num_perm=32, seed=3)


def mh(ids, params=P):
    m = MinHash(params)
    m.update_ids(np.array(sorted(ids), dtype=np.uint64))
    return m


@settings(max_examples=60)
@given(id_sets, id_sets)
def test_minhash_union_law_and_merge(xs, ys):
    assert MinHash.union(mh(xs), mh(ys)) == mh(xs | ys)
    m = mh(xs)
    m.merge(mh(xs))
    assert m == mh(xs)  # idempotent
    assert MinHash.union(mh(xs), mh(ys)) == MinHash.union(mh(ys), mh(xs))  # commutative


@settings(max_examples=60)
@given(id_sets, st.sampled_from(FAMILIES))
def test_minhash_round_trips(xs, family):
    m = mh(xs, MinHashParams(num_perm=16, seed=9, family=family))
    assert MinHash.from_bytes(m.to_bytes()) == m
    assert pickle.loads(pickle.dumps(m)) == m
    if xs:
        assert m.jaccard(m).value == 1.0


@settings(max_examples=60)
@given(id_sets, id_sets, st.integers(1, 50))
def test_sample_sketch_union_law_and_round_trip(xs, ys, size):
    for cls in (BottomS, ModM):
        a, b, ab = cls(size), cls(size), cls(size)
        a.update_ids(np.array(sorted(xs), dtype=np.uint64))
        b.update_ids(np.array(sorted(ys), dtype=np.uint64))
        ab.update_ids(np.array(sorted(xs | ys), dtype=np.uint64))
        assert cls.union(a, b) == ab
        assert cls.from_bytes(a.to_bytes()) == a
        assert pickle.loads(pickle.dumps(b)) == b
        est = a.containment(b)
        assert 0.0 <= est.lower <= est.upper <= 1.0


@given(st.integers(0, 2**64 - 1))
def test_simhash_round_trip(v):
    s = SimHash(v, hash="md5")
    assert SimHash.from_bytes(s.to_bytes()) == s


@settings(max_examples=40)
@given(id_sets)
def test_truncated_or_corrupt_buffers_raise(xs):
    blob = mh(xs).to_bytes()
    for cut in range(0, len(blob) - 1, 7):
        try:
            MinHash.from_bytes(blob[:cut])
        except FormatError:
            pass
        else:
            raise AssertionError(f"cut at {cut} was accepted")
    flipped = bytearray(blob)
    flipped[len(blob) // 2] ^= 0xFF
    try:
        MinHash.from_bytes(bytes(flipped))
    except FormatError:
        pass
    else:
        raise AssertionError("corrupt buffer was accepted")


def test_incompatible_sketches_raise():
    a = mh({1, 2, 3})
    b = mh({1, 2, 3}, MinHashParams(num_perm=32, seed=4))
    for op in (a.merge, a.jaccard):
        try:
            op(b)
        except IncompatibleSketchError as exc:
            assert "seed 3 vs 4" in str(exc)
        else:
            raise AssertionError("different seeds were combined")
    try:
        BottomS(10, seed=1).jaccard(BottomS(11, seed=1))
    except IncompatibleSketchError:
        pass
    else:
        raise AssertionError


def naive_components(n, edges):
    adj = {i: set() for i in range(n)}
    for a, b in edges:
        adj[a].add(b)
        adj[b].add(a)
    label = [-1] * n
    for start in range(n):
        if label[start] >= 0:
            continue
        stack, comp = [start], []
        label[start] = start
        while stack:
            x = stack.pop()
            comp.append(x)
            for y in adj[x]:
                if label[y] < 0:
                    label[y] = start
                    stack.append(y)
        low = min(comp)
        for x in comp:
            label[x] = low
    return label


@given(st.integers(1, 60).flatmap(lambda n: st.tuples(st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=80))))
def test_union_find_matches_naive_components(case):
    n, edges = case
    uf = UnionFind(n)
    for a, b in edges:
        uf.union(a, b)
    assert uf.components().tolist() == naive_components(n, edges)


@given(st.integers(1, 60).flatmap(lambda n: st.tuples(st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=80))))
def test_array_components_match_naive_components(case):
    # the local engine's components over arrays (no Python object per node) name each component
    # by its smallest member, as union-find does
    from neardup.stages.survivors import array_components, components

    n, edges = case
    i = np.array([a for a, _ in edges], dtype=np.int64)
    j = np.array([b for _, b in edges], dtype=np.int64)
    assert array_components(n, i, j).tolist() == naive_components(n, edges)
    assert components(n, i, j).tolist() == naive_components(n, edges)


def test_array_components_on_a_long_chain_and_a_star():
    # the worst shapes for label propagation: a path given in reverse, and a star on its last node
    from neardup.stages.survivors import array_components

    n = 100_000
    a = np.arange(n - 1, 0, -1, dtype=np.int64)
    assert (array_components(n, a, a - 1) == 0).all()
    star = array_components(n, np.full(n - 1, n - 1, np.int64), np.arange(n - 1, dtype=np.int64))
    assert (star == 0).all()
