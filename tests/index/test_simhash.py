"""SimhashIndex (Manku permuted tables): every answer equals brute force; persistence; online use."""

import json
import math
import struct
import zlib
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import neardup.index.simhash as hmod
from neardup.errors import ConfigError, FormatError
from neardup.index import SimhashIndex, SimhashIndexFormatError, format_plan, plan_layout
from neardup.index.simhash import brute_force_pairs
from neardup.index.simhash_file import MAGIC
from neardup.index.simhash_layout import layout_for

U64 = 2**64 - 1

#: the compiled probe (neardup._hamming) and the numpy path; both must give the same answers
PATHS = ["native", "numpy"]
NATIVE = hmod._hamming


@contextmanager
def probe_path(path):
    """Queries made inside use the compiled probe ("native") or the numpy path ("numpy")."""
    if path == "native" and NATIVE is None:
        pytest.skip("neardup._hamming is not built")
    saved = hmod._hamming
    hmod._hamming = NATIVE if path == "native" else None
    try:
        yield
    finally:
        hmod._hamming = saved


def uses(idx, path):
    """The index answers through the expected path."""
    idx.query(0)
    assert (idx._prober is not None) == (path == "native")


# ----------------------------------------------------------------------------- references


def bf_query(fps, q, k, live=None):
    fps = np.asarray(fps, dtype=np.uint64)
    dist = np.bitwise_count(fps ^ np.uint64(q))
    rows = np.flatnonzero(dist <= k)
    if live is not None:
        rows = rows[live[rows]]
    return sorted(((int(r), int(dist[r])) for r in rows), key=lambda rd: (rd[1], rd[0]))


def bf_pairs(fps, k, live=None):
    out = []
    for i, j, d in brute_force_pairs(fps, k):
        if live is None or (live[i] and live[j]):
            out.append((i, j, d))
    return sorted(out)


def flip(v, bits):
    for b in bits:
        v ^= 1 << int(b)
    return v


def planted(rng, n, k, frac=0.3):
    """Random fingerprints plus planted neighbours at distances 0..k+1 and exact duplicates."""
    fps = rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False)
    for _ in range(int(n * frac)):
        src, dst = rng.integers(0, n, 2)
        d = int(rng.integers(0, k + 2))
        fps[dst] = flip(int(fps[src]), rng.choice(64, d, replace=False))
    return fps


def check_all(idx, fps, k, queries, live=None):
    """query, query_many and pairs of ``idx`` (ids = row numbers) against brute force."""
    many = idx.query_many(queries)
    assert len(many) == len(queries)
    for q, got in zip(queries, many):
        exp = bf_query(fps, int(q), k, live)
        assert got == exp
        assert idx.query(int(q)) == exp
    got_pairs = list(idx.pairs())
    assert len(got_pairs) == len(set(got_pairs)), "a pair was reported twice"
    assert all(a < b for a, b, _ in got_pairs), "id_a must be inserted before id_b"
    assert sorted(got_pairs) == bf_pairs(fps, k, live)


def layouts(k):
    return [1] if k == 0 else [k + 1, k + 2]


# ----------------------------------------------------------------------------- brute-force equality


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("k", range(8))
def test_equals_brute_force_random_with_planted_neighbours(k, path):
    with probe_path(path):
        _equals_brute_force_random_with_planted_neighbours(k, path)


def _equals_brute_force_random_with_planted_neighbours(k, path):
    rng = np.random.default_rng(100 + k)
    n = 1500
    fps = planted(rng, n, k)
    queries = np.concatenate([fps[:150], fps[150:300] ^ np.uint64(1 << 7), rng.integers(0, 2**64, 50, dtype=np.uint64)])
    for blocks in layouts(k):
        # small buffer: several segments and a non-empty unsorted buffer at once
        idx = SimhashIndex(k, blocks=blocks, buffer_size=256, merge_factor=2)
        for a in range(0, n, 230):
            idx.add(list(range(a, min(n, a + 230))), fps[a:a + 230])
        assert len(idx._segments) >= 1 and idx._fps.n > idx._tail_start
        assert len(idx) == n
        check_all(idx, fps, k, queries)
        uses(idx, path)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("k", range(8))
def test_exactly_k_found_and_k_plus_one_not(k, path):
    with probe_path(path):
        _exactly_k_found_and_k_plus_one_not(k)


def _exactly_k_found_and_k_plus_one_not(k):
    rng = np.random.default_rng(7 + k)
    base = rng.integers(0, 2**64, 200, dtype=np.uint64)
    idx = SimhashIndex.from_fingerprints(base, max_distance=k, buffer_size=64)
    for i in range(0, 200, 5):
        b = int(base[i])
        # bits in one block, and bits spread over all blocks: both ends of the pigeonhole
        for bits in (list(range(k)), list(range(0, 64, 64 // max(k, 1)))[:k], rng.choice(64, k, replace=False)):
            q = flip(b, bits)
            res = dict(idx.query(q))
            assert res.get(i) == k
        q = flip(b, rng.choice(64, k + 1, replace=False))
        assert i not in dict(idx.query(q))
        assert dict(idx.query(b))[i] == 0


fp_st = st.integers(min_value=0, max_value=U64)


@st.composite
def fingerprint_sets(draw):
    k = draw(st.integers(0, 7))
    base = draw(st.lists(fp_st, min_size=1, max_size=40))
    extra = draw(st.lists(st.tuples(st.integers(0, 10**6), st.lists(st.integers(0, 63), max_size=k + 1)),
                          max_size=40))
    fps = list(base)
    for src, bits in extra:  # planted neighbours, possibly with repeated bits (smaller distance)
        fps.append(flip(fps[src % len(fps)], bits))
    blocks = draw(st.sampled_from(layouts(k)))
    batch = draw(st.integers(1, 30))
    return k, blocks, batch, fps


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fingerprint_sets(), st.lists(fp_st, max_size=5))
def test_property_every_answer_equals_brute_force(path, case, extra_queries):
    k, blocks, batch, fps = case
    with probe_path(path):
        idx = SimhashIndex(k, blocks=blocks, buffer_size=8, merge_factor=2)
        for a in range(0, len(fps), batch):
            idx.add(list(range(a, min(len(fps), a + batch))), fps[a:a + batch])
        arr = np.array(fps, dtype=np.uint64)
        check_all(idx, arr, k, list(fps[:20]) + extra_queries)


def test_real_fingerprints_equal_brute_force(seed_docs):
    from conftest import real_texts

    from neardup import SimHash

    texts = [t[:3000] for _, t in real_texts(limit=16)] + list(seed_docs.values())
    rng = np.random.default_rng(5)
    fps = []
    for t in texts:
        words = t.split()
        fps.append(SimHash.from_text(t).value)
        for _ in range(3):  # near copies: a few words dropped or replaced
            w = list(words)
            for _ in range(int(rng.integers(1, 6))):
                if len(w) > 1:
                    w[int(rng.integers(0, len(w)))] = "edited"
            fps.append(SimHash.from_text(" ".join(w)).value)
    fps = np.array(fps, dtype=np.uint64)
    for k in (3, 6):
        idx = SimhashIndex.from_fingerprints(fps, max_distance=k, buffer_size=32)
        check_all(idx, fps, k, fps[::3])
    # the planted near copies are found at k = 3 for most documents
    assert sum(1 for _ in idx.pairs()) > len(texts)


@pytest.mark.parametrize("path", PATHS)
def test_identical_and_low_entropy_fingerprints(path):
    with probe_path(path):
        _identical_and_low_entropy_fingerprints()


def _identical_and_low_entropy_fingerprints():
    """Long runs of equal prefix (many identical fingerprints, fingerprints with zero top bits)."""
    rng = np.random.default_rng(3)
    same = np.full(250, 0x0123456789ABCDEF, dtype=np.uint64)
    small = rng.integers(0, 2**12, 600, dtype=np.uint64)  # top 52 bits all zero
    rand = rng.integers(0, 2**64, 500, dtype=np.uint64)
    fps = np.concatenate([same, small, rand])
    rng.shuffle(fps)
    idx = SimhashIndex.from_fingerprints(fps, max_distance=3, buffer_size=100)
    got = list(idx.pairs())
    exp = bf_pairs(fps, 3)
    assert sorted(got) == exp
    assert sum(1 for _, _, d in got if d == 0) >= math.comb(250, 2)
    res = idx.query(0x0123456789ABCDEF)
    assert len([1 for _, d in res if d == 0]) == 250
    check_all(idx, fps, 3, fps[:30])


def test_pairs_chunked_for_a_huge_run(monkeypatch):
    import neardup.index.simhash as h

    monkeypatch.setattr(h, "_CHUNK", 64)  # force the chunked paths
    fps = np.concatenate([np.zeros(150, np.uint64), np.array([1, 3, 7, 15], np.uint64)])
    idx = SimhashIndex.from_fingerprints(fps, max_distance=2, buffer_size=16)
    chunks = list(idx.pair_chunks())
    assert max(len(c[0]) for c in chunks) <= 64
    assert sorted(idx.pairs()) == bf_pairs(fps, 2)
    assert idx.query_many(fps[:3]) == [bf_query(fps, int(q), 2) for q in fps[:3]]


# ----------------------------------------------------------------------------- online use


@pytest.mark.parametrize("path", PATHS)
def test_remove_and_online_add(path):
    with probe_path(path):
        _remove_and_online_add()


def _remove_and_online_add():
    rng = np.random.default_rng(11)
    fps = planted(rng, 1200, 3)
    idx = SimhashIndex(3, expected_size=1200, buffer_size=128)
    for i in range(0, 1200, 100):
        idx.add([f"d{j}" for j in range(i, i + 100)], fps[i:i + 100])
    for j in range(50):  # one at a time
        idx.add(f"x{j}", int(fps[j]))
    ids = [f"d{j}" for j in range(1200)] + [f"x{j}" for j in range(50)]
    allf = np.concatenate([fps, fps[:50]])
    live = np.ones(len(ids), dtype=bool)
    for r in list(range(0, 1250, 7)):
        idx.remove(ids[r])
        live[r] = False
    assert len(idx) == int(live.sum())
    with pytest.raises(KeyError):
        idx.remove("d0")
    with pytest.raises(KeyError):
        idx.remove("nope")
    assert "d1" in idx and "d0" not in idx
    for q in allf[:80]:
        exp = [(ids[r], d) for r, d in bf_query(allf, int(q), 3, live)]
        assert idx.query(int(q)) == exp
        assert idx.query_many([int(q)])[0] == exp
    exp_pairs = sorted((ids[a], ids[b], d) for a, b, d in bf_pairs(allf, 3, live))
    assert sorted(idx.pairs()) == exp_pairs
    # removed rows are gone from the tables after compaction
    assert idx._segments[0].size == int(live.sum())


def test_duplicate_ids_are_all_removed():
    idx = SimhashIndex(2, buffer_size=4)
    idx.add([1, 2, 1], [10, 11, 12])
    idx.remove(1)
    assert len(idx) == 1
    assert idx.query(10) == [(2, 1)]


# ----------------------------------------------------------------------------- persistence


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("id_kind", ["int", "str"])
def test_save_open_round_trip(tmp_path, id_kind, path):
    with probe_path(path):
        _save_open_round_trip(tmp_path, id_kind, path)


def _save_open_round_trip(tmp_path, id_kind, path):
    rng = np.random.default_rng(21)
    fps = planted(rng, 3000, 3)
    ids = list(range(1000, 4000)) if id_kind == "int" else [f"doc/é{i}" for i in range(3000)]
    idx = SimhashIndex(3, expected_size=3000, buffer_size=512)
    idx.add(ids, fps)
    idx.remove(ids[5])
    p = tmp_path / "i.sxi"
    idx.save(p)
    back = SimhashIndex.open(p, max_distance=3, verify=True)
    assert not back._segments[0].keys.flags.writeable  # memory-mapped, not rebuilt
    assert back.config == idx.config
    assert back.config["format_version"] == 1 and back.config["blocks"] == idx.blocks
    assert len(back) == len(idx) == 2999
    qs = fps[:100] ^ np.uint64(3)
    assert back.query_many(qs) == idx.query_many(qs)
    for q in qs[:20]:
        assert back.query(int(q)) == idx.query(int(q))
    uses(back, path)
    assert sorted(back.pairs()) == sorted(idx.pairs())
    # online use after open: adds (buffered and bulk), removals, save again
    new = fps[:10] ^ np.uint64(1 << 40)
    nid = [90000 + i for i in range(10)] if id_kind == "int" else [f"new{i}" for i in range(10)]
    for i, f in zip(nid, new):
        back.add(i, int(f))
    back.add([99999] if id_kind == "int" else ["bulk"], [int(fps[7])])
    back.remove(ids[6])
    res = dict(back.query(int(new[3])))
    assert res[nid[3]] == 0 and res[ids[3]] == 1
    assert ids[6] not in dict(back.query(int(fps[6])))
    p2 = tmp_path / "j.sxi"
    back.save(p2)
    again = SimhashIndex.open(p2, verify=True)
    assert len(again) == len(back) == 2999 + 11 - 1
    assert again.query_many(qs) == back.query_many(qs)
    assert dict(again.query(int(new[3])))[nid[3]] == 0


def test_save_is_deterministic_and_empty_index_round_trips(tmp_path):
    rng = np.random.default_rng(1)
    fps = rng.integers(0, 2**64, 5000, dtype=np.uint64)
    a, b = tmp_path / "a", tmp_path / "b"
    SimhashIndex.from_fingerprints(fps, max_distance=4).save(a)
    SimhashIndex.from_fingerprints(fps, max_distance=4).save(b)
    assert a.read_bytes() == b.read_bytes()
    e = tmp_path / "e"
    SimhashIndex(2).save(e)
    back = SimhashIndex.open(e, verify=True)
    assert len(back) == 0 and back.query(5) == [] and list(back.pairs()) == []
    back.add(["a", "b"], [5, 4])
    assert back.query(5) == [("a", 0), ("b", 1)]
    back.remove("a")
    back.remove("b")
    back.save(e)  # every row removed
    again = SimhashIndex.open(e, verify=True)
    assert len(again) == 0 and again.query(5) == [] and list(again.pairs()) == []


def _saved(tmp_path):
    p = tmp_path / "x.sxi"
    fps = np.random.default_rng(2).integers(0, 2**64, 2000, dtype=np.uint64)
    SimhashIndex.from_fingerprints(fps, max_distance=3).save(p)
    return p


def _rewrite_header(p, edit):
    raw = bytearray(p.read_bytes())
    hlen = struct.unpack("<I", raw[12:16])[0]
    header = json.loads(raw[24:24 + hlen])
    edit(header)
    hb = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    assert len(hb) <= hlen
    hb = hb + b" " * (hlen - len(hb))
    raw[24:24 + hlen] = hb
    raw[16:20] = struct.pack("<I", zlib.crc32(hb))
    p.write_bytes(bytes(raw))


def test_open_rejects_truncated_corrupt_and_foreign_files(tmp_path):
    p = _saved(tmp_path)
    good = p.read_bytes()
    assert good[:8] == MAGIC
    SimhashIndex.open(p, verify=True)

    def expect(data, match, **kw):
        q = tmp_path / "bad.sxi"
        q.write_bytes(data)
        with pytest.raises(SimhashIndexFormatError, match=match):
            SimhashIndex.open(q, **kw)

    expect(good[: len(good) // 2], "truncated")
    expect(good[:30], "truncated")
    expect(good[:5], "bad magic")
    expect(b"PK\x03\x04" + good[4:], "bad magic")
    expect(good[:8] + struct.pack("<I", 99) + good[12:], "version 99")
    corrupt_header = bytearray(good)
    corrupt_header[40] ^= 0x20
    expect(bytes(corrupt_header), "checksum")
    corrupt_data = bytearray(good)
    corrupt_data[-100] ^= 0xFF
    expect(bytes(corrupt_data), "checksum", verify=True)
    expect(good, "max_distance=3, not 2", max_distance=2)
    assert issubclass(SimhashIndexFormatError, ValueError) and issubclass(SimhashIndexFormatError, FormatError)


def test_open_checks_the_recorded_configuration(tmp_path):
    p = _saved(tmp_path)

    def perm(h):
        h["permutations"][1] = list(reversed(h["permutations"][1]))

    _rewrite_header(p, perm)
    with pytest.raises(SimhashIndexFormatError, match="permutations differ"):
        SimhashIndex.open(p)
    p = _saved(tmp_path)
    _rewrite_header(p, lambda h: h.update(max_distance=2))
    with pytest.raises(SimhashIndexFormatError, match="differ"):
        SimhashIndex.open(p)
    p = _saved(tmp_path)
    _rewrite_header(p, lambda h: h.update(blocks=3))
    with pytest.raises(SimhashIndexFormatError, match="bad configuration"):
        SimhashIndex.open(p)


# ----------------------------------------------------------------------------- layout and inputs


@pytest.mark.parametrize("k", range(8))
def test_plan_layout(k):
    for n in (0, 1000, 1_000_000, 8_000_000):
        plan = plan_layout(n, k)
        assert plan["chosen"] in plan["candidates"]
        for c in plan["candidates"]:
            assert c["blocks"] > k or (k == 0 and c["blocks"] == 1)
            assert c["tables"] == math.comb(c["blocks"], k)
            lay = layout_for(k, c["blocks"])
            assert c["prefix_bits"] == min(lay.prefix_bits)
            assert c["expected_probes"] == pytest.approx(sum(n / 2**p for p in lay.prefix_bits))
            assert c["memory_bytes"] > 12 * n * c["tables"]
        text = format_plan(plan)
        assert "chosen" in text and f"{n:,}" in text
    idx = SimhashIndex(k, expected_size=1_000_000)
    assert idx.blocks == plan_layout(1_000_000, k)["blocks"]


def test_plan_prefers_fewer_tables_under_a_memory_budget():
    big = plan_layout(8_000_000, 3)
    small = plan_layout(8_000_000, 3, memory_budget=600 * 2**20)
    assert small["chosen"]["memory_bytes"] <= 600 * 2**20
    assert small["chosen"]["tables"] <= big["chosen"]["tables"]


def test_layout_tables_cover_every_pattern_of_k_differing_blocks():
    for k in range(1, 8):
        lay = layout_for(k, k + 2)
        for diff in range(1 << lay.blocks):
            if bin(diff).count("1") <= k:  # some table's prefix avoids every differing block
                assert any(all(not (diff >> b) & 1 for b in s) for s in lay.tables)


@pytest.mark.parametrize("path", PATHS)
def test_inputs_and_errors(path):
    with probe_path(path):
        _inputs_and_errors()


def _inputs_and_errors():
    idx = SimhashIndex(3, buffer_size=4)
    idx.add(np.array([-1, 2], dtype=np.int64), np.array([-1, 5], dtype=np.int64))  # two's complement
    assert idx.query(U64) == [(-1, 0)]
    assert idx.query(-1) == [(-1, 0)]
    assert idx.query(np.uint64(5)) == [(2, 0)]
    with pytest.raises(TypeError):
        idx.add(["a"], [1])  # int ids already
    with pytest.raises(ValueError):
        idx.add([1, 2], [1])
    with pytest.raises(ValueError):
        idx.query(2**64)
    with pytest.raises(TypeError):
        idx.query(1.5)
    for bad in (-1, 8, 2.0, True):
        with pytest.raises(ConfigError):
            SimhashIndex(bad)
    with pytest.raises(ConfigError):
        SimhashIndex(3, blocks=3)
    assert SimhashIndex(3).query(1) == [] and SimhashIndex(3).query_many([1, 2]) == [[], []]
    assert len(SimhashIndex(3)) == 0


# ----------------------------------------------------------------------------- compiled probe


def _answers(idx, qs):
    one = [idx.query(int(q)) for q in qs]
    many = idx.query_many(qs)
    arrays = idx.query_arrays(qs)
    rows = idx.query_arrays(qs, ids=False)
    return one, many, arrays, rows


@pytest.mark.parametrize("id_kind", ["int", "str"])
def test_native_and_numpy_paths_give_identical_answers(id_kind, monkeypatch):
    """Same ids, distances, order and array dtypes from both paths, on an index with several
    segments, a buffer, removed rows and runs of identical fingerprints; large batches threaded."""
    if NATIVE is None:
        pytest.skip("neardup._hamming is not built")
    monkeypatch.setattr(hmod, "_PARALLEL_QUERIES", 16)  # exercise the threaded query_many
    rng = np.random.default_rng(99)
    fps = np.concatenate([planted(rng, 3000, 3), np.full(40, 77, np.uint64), np.full(5, U64, np.uint64)])
    ids = list(range(len(fps))) if id_kind == "int" else [f"id{i}" for i in range(len(fps))]
    idx = SimhashIndex(3, blocks=5, buffer_size=500, merge_factor=1)
    for a in range(0, len(fps), 250):
        idx.add(ids[a:a + 250], fps[a:a + 250])
    for r in range(0, len(fps), 11):
        idx.remove(ids[r])
    assert len(idx._segments) >= 2 and idx._fps.n > idx._tail_start
    qs = np.concatenate([fps[::7], fps[:200] ^ np.uint64(0b1011), np.array([0, 77, U64], np.uint64)])
    native = _answers(idx, qs)
    assert idx._prober is not None
    with probe_path("numpy"):
        idx._prober = idx._pquery = None
        numpy_ = _answers(idx, qs)
        assert idx._prober is None
    assert native[0] == numpy_[0] and native[1] == numpy_[1] and native[0] == native[1]
    for a, b in zip(native[2] + native[3], numpy_[2] + numpy_[3]):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    live = np.ones(len(fps), bool)
    live[::11] = False
    for q, got in zip(qs[:50], native[0]):
        assert got == [(ids[r], d) for r, d in bf_query(fps, int(q), 3, live)]


def test_native_probe_is_rebuilt_after_every_change():
    if NATIVE is None:
        pytest.skip("neardup._hamming is not built")
    idx = SimhashIndex(2, buffer_size=4)
    idx.add([1, 2, 3, 4, 5], [10, 11, 12, 13, 1 << 40])  # one segment
    assert idx.query(10) == [(1, 0), (2, 1), (3, 2)]
    p = idx._prober
    idx.add(6, 10)  # buffered
    assert idx._prober is None and idx.query(10) == [(1, 0), (6, 0), (2, 1), (3, 2)]
    assert idx._prober is not p
    idx.remove(2)
    assert idx.query(10) == [(1, 0), (6, 0), (3, 2)]
    idx.compact()
    assert idx.query(10) == [(1, 0), (6, 0), (3, 2)]
    assert idx.query(-1) == [] and idx.query(np.uint64(1 << 40)) == [(5, 0)]
    with pytest.raises(ValueError):
        idx.query(2**64)
    with pytest.raises(TypeError):
        idx.query(True)


def test_native_probe_rejects_bad_arrays():
    """Out-of-range rows or directory entries (a corrupt file) raise, never read out of bounds."""
    if NATIVE is None:
        pytest.skip("neardup._hamming is not built")
    fps = np.random.default_rng(4).integers(0, 2**64, 5000, dtype=np.uint64)
    idx = SimhashIndex.from_fingerprints(fps, max_distance=3)
    seg = idx._segments[0]
    lay = idx._layout
    q = int(fps[0])

    def prober(rows=None, dirs=None):
        return NATIVE.Prober(3, lay.moves, [(seg.keys_flat, seg.rows_flat if rows is None else rows,
                                             seg.dirs_flat if dirs is None else dirs, seg.size, seg.stride,
                                             seg.dbits)], idx._fps.view, len(fps), len(fps))

    assert prober().query(q) == [(0, 0)]
    bad_rows = seg.rows_flat.copy()
    bad_rows[:] = len(fps) + 5
    with pytest.raises(ValueError, match="out of range"):
        prober(rows=bad_rows).query(q)
    bad_dirs = seg.dirs_flat.copy()
    bad_dirs[1:] = seg.size + 100
    with pytest.raises(ValueError, match="out of range"):
        prober(dirs=bad_dirs).query_many(fps[:3], True)
    with pytest.raises(ValueError, match="do not match"):
        NATIVE.Prober(3, lay.moves, [(seg.keys_flat[:-1], seg.rows_flat, seg.dirs_flat, seg.size, seg.stride,
                                      seg.dbits)], idx._fps.view, 0, 0)
    with pytest.raises(TypeError):
        NATIVE.Prober(3, lay.moves, [], idx._fps.view.astype(np.int32), 0, 0)
