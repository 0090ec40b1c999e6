"""The out-of-core grouping stage (neardup.stages.grouping) gives what grouping in memory gives,
with a budget so small that it spills into many partitions (and, for the grouper itself, splits
them again). The stages that use it get a budget that spills a few times, not hundreds: each
spill writes a file per partition, and a budget of a few hundred records made these tests
take minutes without reaching another path of the code."""

from __future__ import annotations

import os

import numpy as np
import pytest

from neardup.cluster.broder import mod_m_sample, sampled_candidates as in_memory_candidates
from neardup.stages.candidates import sampled_candidates
from neardup.stages.grouping import KeyGrouper, stable_sorted


def _grouped(grouper: KeyGrouper) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for keys, vals in grouper.groups():
        assert np.all(keys[1:] >= keys[:-1])  # sorted inside a chunk
        for k in np.unique(keys).tolist():
            assert k not in out, "a key's records came in two chunks"
            out[k] = vals[keys == k].tolist()
    return out


@pytest.mark.parametrize("distinct", [1, 7, 1_000, 2**63])
def test_stable_sorted_is_a_stable_argsort(distinct):
    # values in no particular order: a run of equal keys must keep them as they came
    rng = np.random.default_rng(distinct % 1000)
    keys = rng.integers(0, distinct, 50_000, dtype=np.uint64)
    vals = rng.permutation(keys.size).astype(np.int64)
    order = np.argsort(keys, kind="stable")
    got_keys, got_vals = stable_sorted(keys, vals)
    assert np.array_equal(got_keys, keys[order]) and np.array_equal(got_vals, vals[order])
    empty = stable_sorted(keys[:0], vals[:0])
    assert empty[0].size == empty[1].size == 0


@pytest.mark.parametrize("fanout", [4, 256])
def test_spilled_grouping_equals_the_in_memory_one(tmp_path, fanout):
    rng = np.random.default_rng(7)
    # uniform keys, a few heavy keys (one held by 3,000 records, more than the budget) and keys
    # that differ only in their low bits (the partitions use the mixed key's high bits)
    keys = np.concatenate([rng.integers(0, 2**63, 20_000, dtype=np.uint64),
                           np.full(3_000, 12345, np.uint64),
                           np.arange(5_000, dtype=np.uint64) % 50,
                           rng.integers(0, 2**63, 2_000, dtype=np.uint64)])
    keys = keys[rng.permutation(keys.size)]
    vals = np.arange(keys.size, dtype=np.int64)
    small = KeyGrouper(48 * 1_000, str(tmp_path), fanout=fanout)  # 1,000 records at a time
    whole = KeyGrouper(None)
    for a in range(0, keys.size, 777):
        small.add(keys[a:a + 777], vals[a:a + 777])
        whole.add(keys[a:a + 777], vals[a:a + 777])
    got, want = _grouped(small), _grouped(whole)
    assert got == want  # the same groups, each key's values in the order they were added
    st = small.stats()
    assert st["records"] == keys.size and st["spilled_bytes"] >= keys.size * 16
    assert st["partitions_read"] > 10 and st["depth"] >= 1  # split again below the first level
    assert whole.stats()["spilled_bytes"] == 0
    small.close()
    assert os.listdir(tmp_path) == []  # its files are gone


def test_out_of_core_sampled_candidates_equal_the_in_memory_ones(tmp_path):
    # documents made of overlapping runs of ids, so that many pairs share samples, some of them
    # (boilerplate) shared by more documents than the cap
    rng = np.random.default_rng(3)
    base = rng.integers(0, 2**64 - 1, 40_000, dtype=np.uint64)
    boiler = rng.integers(0, 2**64 - 1, 30, dtype=np.uint64)
    docs = []
    for d in range(1_500):
        start = int(rng.integers(0, 39_000))
        ids = base[start:start + int(rng.integers(50, 900))]
        if d % 3 == 0:
            ids = np.concatenate([ids, boiler])
        docs.append(np.unique(ids))
    offsets = np.concatenate(([0], np.cumsum([d.size for d in docs]))).astype(np.int64)
    ids = np.concatenate(docs)
    values, sample_offsets = mod_m_sample(ids, offsets, 5)
    want = in_memory_candidates(values, sample_offsets, 0.5, cap=300)
    for budget in (None, 48 * 20_000):  # in memory through the stage, then spilled to every partition
        i, j, est, stats = sampled_candidates(values, sample_offsets, 0.5, cap=300, budget_bytes=budget,
                                              folder=str(tmp_path))
        assert np.array_equal(i, want[0]) and np.array_equal(j, want[1]) and np.array_equal(est, want[2])
        assert {k: stats[k] for k in want[3]} == want[3]
        assert want[3]["capped_samples"] > 0 and i.size > 1_000
        spilled = stats["grouping"]["samples"]["spilled_bytes"] + stats["grouping"]["pairs"]["spilled_bytes"]
        assert (spilled > 0) == (budget is not None)
        if budget is not None:  # both groupings spilled, and every partition was read back
            for grouping in ("samples", "pairs"):
                assert stats["grouping"][grouping]["spilled_bytes"] > 0, grouping
                assert stats["grouping"][grouping]["partitions_read"] > 50, grouping
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("window", [3, 64])
def test_band_keys_past_the_budget_give_the_in_memory_candidates(tmp_path, window):
    # band keys with buckets of every size (some past the window), added in batches; a budget of
    # 20,000 keys (a third of them) sends them through the grouping, against the kernel's hashing
    from neardup.stages.candidates import BandKeys

    rng = np.random.default_rng(5)
    n, bands = 6_000, 9
    keys = rng.integers(0, 400, (n, bands)).astype(np.uint64) * np.uint64(0x100000001B3)
    keys[: n // 2, 0] = rng.integers(0, 2**63, n // 2, dtype=np.uint64)  # mostly singletons in band 0
    keys[:, 1] = keys[:, 2]  # the same values in two bands: separate buckets all the same
    keys[:100, 3] = 7  # one bucket of 100 rows
    whole, small = BandKeys(None, window=window), BandKeys(16 * 20_000, str(tmp_path), window=window)
    for a in range(0, n, 500):
        whole.add(keys[a:a + 500])
        small.add(keys[a:a + 500])
    assert small.spilled and not whole.spilled
    wi, wj, ws = whole.candidates()
    si, sj, ss = small.candidates()
    assert wi.size > 10_000 and np.array_equal(wi, si) and np.array_equal(wj, sj)
    assert {k: v for k, v in ws.items() if k != "grouping"} == {k: v for k, v in ss.items() if k != "grouping"}
    for grouping in ("bands", "pairs"):  # both groupings spilled, and their partitions were read back
        assert ss["grouping"][grouping]["spilled_bytes"] > 0 and ss["grouping"][grouping]["partitions_read"] > 1
    assert ws["buckets_over_window"] > 0
    small.close()
    assert os.listdir(tmp_path) == []

