"""clusters.jsonl and pairs.jsonl assembled from arrays (neardup.io.write.result_lines) are the bytes the
per-record writer makes: ids that JSON must escape, similarities orjson writes in exponent form,
missing references and similarities, every reason; and the kernel's gather checks its segments."""

from __future__ import annotations

import numpy as np
import pytest

from neardup.engines.common import VerifiedPairs
from neardup.io.write import result_lines
from neardup.io.write import write_clusters, write_pairs
from neardup.stages.columns import Floats, Ids, Labels, Names
from neardup.stages.survivors import Outcome
from neardup.stages.verify import Edges

pytestmark = pytest.mark.skipif(not result_lines.available_for_ids(), reason="the compiled kernel is not built")

ODD_IDS = ["plain", 'a"quote', "back\\slash", "tab\tnew\nline", "\x00nul", "\x7fdel", "caf\u00e9", "\u2028sep",
           "\ud55c\uad6d\uc5b4", "emoji \U0001f600", "", "slash/ok", "\u00ed\u00a0", "d123456789012345678901234567890"]
ODD_FLOATS = [0.9, 1.0, 0.0, 1e-05, 2.5e-07, 0.1 + 0.2, 1 / 3, 0.99999999, 0.0001, float("nan")]


def _outcomes(n: int, seed: int):
    """The same outcome twice: as the local engine's arrays, and as plain lists (the dict writer)."""
    rng = np.random.default_rng(seed)  # test data only
    names = [ODD_IDS[k % len(ODD_IDS)] + str(k // len(ODD_IDS)) if k % 3 else ODD_IDS[k % len(ODD_IDS)]
             for k in range(n)]
    ids = Ids()
    ids.extend(names)
    cluster = rng.integers(-1, n, n)
    dup = np.where(rng.random(n) < 0.5, -1, rng.integers(0, n, n))
    sim = np.array(ODD_FLOATS)[rng.integers(0, len(ODD_FLOATS), n)]
    reasons = Labels()
    for k in range(n):
        reasons.append(["unique", "kept", "near", "exact", 'skipped:odd"one', "skipped:empty"][k % 6])
    kept = rng.random(n) < 0.5
    arrays = Outcome(ids=ids, reason=reasons, cluster=Names(cluster, ids), duplicate_of=Names(dup, ids),
                     similarity=Floats(sim), kept=kept)
    lists = Outcome(ids=names, reason=reasons.tolist(), cluster=[names[c] if c >= 0 else None for c in cluster],
                    duplicate_of=[names[c] if c >= 0 else None for c in dup],
                    similarity=[None if v != v else float(v) for v in sim], kept=kept)
    return arrays, lists


@pytest.mark.parametrize("n", [0, 1, 37, 1000])
def test_clusters_from_arrays_are_the_dict_writers_bytes(tmp_path, n, monkeypatch):
    arrays, lists = _outcomes(n, seed=n)
    assert result_lines.available(arrays) and not result_lines.available(lists)
    monkeypatch.setattr(result_lines, "CHUNK", 7)  # several chunks, one cut mid-way
    monkeypatch.setattr(result_lines, "_SCAN_BYTES", 5)  # the ids' escapes looked for in slices, cut mid-id
    fast = b"".join(result_lines.cluster_chunks(arrays, chunk=7))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    write_clusters(str(tmp_path / "a"), arrays)
    write_clusters(str(tmp_path / "b"), lists)
    slow = (tmp_path / "b" / "clusters.jsonl").read_bytes()
    assert fast == slow
    assert (tmp_path / "a" / "clusters.jsonl").read_bytes() == slow
    assert slow.count(b"\n") == n


def test_pairs_from_arrays_are_the_row_writers_bytes(tmp_path):
    arrays, _ = _outcomes(500, seed=3)
    rng = np.random.default_rng(4)  # test data only
    m = 300
    sk = rng.permutation(500)[:400].astype(np.int64)
    jac = np.array(ODD_FLOATS[:-1] + [0.8123456789, 0.5555555])[rng.integers(0, len(ODD_FLOATS) + 1, m)]
    est = np.concatenate((np.full(5, np.nan), rng.random(m - 5)))
    edges = Edges(rng.integers(0, 400, m), rng.integers(0, 400, m), jac, est, jac)
    pairs = VerifiedPairs(edges, sk)
    lines = pairs.lines(arrays.ids)
    assert hasattr(lines, "jsonl_chunks")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    write_pairs(str(tmp_path / "a"), lines)
    write_pairs(str(tmp_path / "b"), pairs.rows(arrays.ids))  # a generator: the row writer
    fast, slow = ((tmp_path / d / "pairs.jsonl").read_bytes() for d in "ab")
    assert fast == slow and slow.count(b"\n") == m
    chunked = b"".join(result_lines.pair_chunks(arrays.ids, sk[edges.i], sk[edges.j], jac, est, chunk=11))
    assert chunked == slow


def test_a_lone_surrogate_id_fails_as_the_dict_writer_does(tmp_path):
    ids = Ids()
    ids.extend(["ok", "bad\udc80"])
    outcome = Outcome(ids=ids, reason=Labels(["", "unique"], np.array([1, 1], np.uint8)),
                      cluster=Names(np.array([-1, -1]), ids), duplicate_of=Names(np.array([-1, -1]), ids),
                      similarity=Floats(np.full(2, np.nan)), kept=np.ones(2, bool))
    import orjson

    with pytest.raises(orjson.JSONEncodeError):
        b"".join(result_lines.cluster_chunks(outcome))


def test_gather_checks_every_segment():
    from neardup import _kernel

    bufs = [b"abc", bytearray(b"XYZ"), memoryview(b"12")]
    seg = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731
    assert _kernel.gather(bufs, seg(0, 3, 6, 1), seg(2, 3, 2, 0)) == b"abXYZ12"
    assert _kernel.gather(bufs, seg(), seg()) == b""
    for starts, lengths in [((2,), (2,)), ((-1,), (1,)), ((0,), (-1,)), ((7,), (2,)), ((8,), (1,)), ((0, 0), (1,))]:
        with pytest.raises(ValueError):
            _kernel.gather(bufs, seg(*starts), seg(*lengths))
    with pytest.raises(ValueError):
        _kernel.gather(bufs, np.zeros(3, np.int32), np.zeros(3, np.int32)[:2])
    with pytest.raises(ValueError):
        _kernel.gather([b"x"] * 17, seg(0), seg(1))
