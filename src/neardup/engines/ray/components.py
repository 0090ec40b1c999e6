"""Connected components of the verified edges by alternating large-star and small-star
(Kiveris et al., "Connected Components in MapReduce and Beyond", SoCC 2014), over partitions of
the edges held in the work folder, each step's partitions computed by separate tasks.

Nodes are ordinals (below 2**32). Every edge is held by the partition ``u % P`` of the node it
is keyed by. Each step writes, per partition, one file with the edges it emits already cut into
the ``P`` partitions of the next step, so a step's task ``p`` reads part ``p`` of every file of
the step before (a shuffle through shared storage, which a killed run finds again: every finished
file is a finished partition of that step).

- large-star: for each node ``u`` and its neighbours ``N(u)`` (edges held both ways),
  ``m = min(N(u) + [u])``; emit ``(v, m)`` for every neighbour ``v > u``;
- small-star: for each node ``u`` and its smaller neighbours, ``m = min(N(u) + [u])``; emit
  ``(v, m)`` for every ``v`` in ``N(u) + [u]`` but ``m``.

A round is a large-star and a small-star; rounds stop when a large-star reads the same edge set
as the round before (checked by size and an order-free checksum). The graph is then a star around
the smallest member of each component, so every node's label, ``min(N(u) + [u])`` in that last
large-star, is its component's smallest member: :func:`neardup.stages.survivors.components`'
naming, which the survivors stage relies on.
"""

from __future__ import annotations

import os

import numpy as np

from .work import read_arrays, write_arrays

__all__ = ["write_input", "large_star", "small_star", "labels_of", "run_components"]

_M32 = np.uint64(0xFFFFFFFF)
MAX_ROUNDS = 64


def _split(u: np.ndarray, v: np.ndarray, parts: int) -> dict:
    """``u``/``v`` cut into the next step's partitions (by ``u % parts``)."""
    dest = (u % parts).astype(np.int64)
    order = np.argsort(dest, kind="stable")
    cuts = np.searchsorted(dest[order], np.arange(parts + 1))
    out = {}
    for q in range(parts):
        sel = order[cuts[q]:cuts[q + 1]]
        out[f"u{q}"], out[f"v{q}"] = u[sel], v[sel]
    return out


def _both_ways(u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.concatenate((u, v)), np.concatenate((v, u))


def write_input(folder: str, a: np.ndarray, b: np.ndarray, parts: int) -> None:
    """The first large-star's input: every edge, both ways."""
    u, v = _both_ways(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))
    write_arrays(os.path.join(folder, "input.npz"), **_split(u, v, parts))


def _read_part(paths: list[str], p: int) -> tuple[np.ndarray, np.ndarray]:
    us, vs = [], []
    for path in paths:
        with np.load(path, allow_pickle=False) as got:
            us.append(got[f"u{p}"])
            vs.append(got[f"v{p}"])
    u = np.concatenate(us) if us else np.empty(0, np.int64)
    v = np.concatenate(vs) if vs else np.empty(0, np.int64)
    # one copy of each edge, sorted by (u, v)
    packed = np.unique((u.astype(np.uint64) << np.uint64(32)) | v.astype(np.uint64))
    return (packed >> np.uint64(32)).astype(np.int64), (packed & _M32).astype(np.int64)


def _checksum(u: np.ndarray, v: np.ndarray) -> int:
    """An order-free checksum of an edge set (splitmix64 of each packed edge, summed mod 2**64)."""
    with np.errstate(over="ignore"):
        z = ((u.astype(np.uint64) << np.uint64(32)) | v.astype(np.uint64)) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
        return int(np.add.reduce(z, dtype=np.uint64)) if z.size else 0


def _min_of_groups(u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For edges sorted by u: ``(starts, nodes, m)``: each node's first edge, the node, and
    ``min(N(u) + [u])``."""
    starts = np.flatnonzero(np.concatenate(([True], u[1:] != u[:-1]))) if u.size else np.empty(0, np.int64)
    nodes = u[starts]
    m = np.minimum(np.minimum.reduceat(v, starts), nodes) if u.size else np.empty(0, np.int64)
    return starts, nodes, m


def large_star(inputs: list[str], p: int, parts: int, out: str) -> dict:
    u, v = _read_part(inputs, p)
    starts, nodes, m = _min_of_groups(u, v)
    mm = np.repeat(m, np.diff(np.append(starts, u.size)))
    up = v > u
    # (v, m) keyed by v for the small-star (v > u >= m: v is the larger end)
    got = _split(v[up], mm[up], parts)
    stats = {"edges": int(u.size), "checksum": _checksum(u, v)}
    write_arrays(out, labels_u=nodes, labels_m=m, stats=np.array([stats["edges"], stats["checksum"]], dtype=np.uint64),
                 **got)
    return stats


def small_star(inputs: list[str], p: int, parts: int, out: str) -> dict:
    u, v = _read_part(inputs, p)  # v < u for every edge here
    starts, nodes, m = _min_of_groups(u, v)
    mm = np.repeat(m, np.diff(np.append(starts, u.size)))
    # (v, m) for every neighbour v, and (u, m) for the node itself, but m
    vs = np.concatenate((v, nodes))
    ms = np.concatenate((mm, m))
    keep = vs != ms
    eu, ev = _both_ways(vs[keep], ms[keep])  # the next large-star holds edges both ways
    write_arrays(out, **_split(eu, ev, parts))
    return {"edges": int(keep.sum())}


def labels_of(paths: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(nodes, label)`` of every node with an edge, from the last large-star's files."""
    us, ms = [], []
    for path in paths:
        with np.load(path, allow_pickle=False) as got:
            us.append(got["labels_u"])
            ms.append(got["labels_m"])
    return np.concatenate(us), np.concatenate(ms)


def _stats(path: str) -> tuple[int, int]:
    s = read_arrays(path)["stats"]
    return int(s[0]), int(s[1])


def run_components(folder: str, a: np.ndarray, b: np.ndarray, parts: int, run_tasks) -> tuple[np.ndarray, np.ndarray, dict]:
    """``(nodes, label)`` of the graph of edges ``(a, b)`` (labels: each component's smallest
    node) and ``{"rounds", "tasks_run", "tasks_done_before"}``. ``run_tasks(fn, calls)`` runs
    ``fn(*call)`` for each call, wherever the engine runs its tasks, and returns the results.
    Steps whose files exist in ``folder`` (a killed run's) are not run again."""
    if not os.path.exists(os.path.join(folder, "input.npz")):
        write_input(folder, a, b, parts)
    ran = before = 0
    prev = [os.path.join(folder, "input.npz")]
    last: tuple | None = None
    for r in range(MAX_ROUNDS):
        for step, fn in (("L", large_star), ("S", small_star)):
            outs = [os.path.join(folder, f"{r:03d}{step}-{p:03d}.npz") for p in range(parts)]
            todo = [p for p in range(parts) if not os.path.exists(outs[p])]
            before += parts - len(todo)
            ran += len(todo)
            run_tasks(fn, [(prev, p, parts, outs[p]) for p in todo])
            if step == "L":
                stats = [_stats(o) for o in outs]
                now = (sum(e for e, _ in stats), sum(c for _, c in stats) % (1 << 64))
                if now == last:  # the same edges as the round before: a fixed point
                    nodes, label = labels_of(outs)
                    return nodes, label, {"rounds": r + 1, "tasks_run": ran, "tasks_done_before": before}
                last = now
                lstar = outs
            prev = outs
        del lstar
    raise RuntimeError(f"internal error: connected components did not settle in {MAX_ROUNDS} rounds")
