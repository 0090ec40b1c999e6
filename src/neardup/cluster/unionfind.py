"""Union-find (disjoint sets) with path halving and union by size.

The representative reported by :meth:`UnionFind.components` is the smallest element of each set,
so the clustering does not depend on the order in which edges arrive.
"""

from __future__ import annotations

import numpy as np


class UnionFind:
    """Disjoint sets over the integers ``0 .. n-1``."""

    def __init__(self, n: int):
        self.parent = list(range(n))
        self.size = [1] * n

    def __len__(self) -> int:
        return len(self.parent)

    def find(self, x: int) -> int:
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]  # path halving
            x = parent[x]
        return x

    def union(self, a: int, b: int) -> int:
        """Join the sets of ``a`` and ``b``; returns the new root."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return ra
        if self.size[ra] < self.size[rb]:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.size[ra] += self.size[rb]
        return ra

    def connected(self, a: int, b: int) -> bool:
        return self.find(a) == self.find(b)

    def components(self) -> np.ndarray:
        """For every element, the smallest element of its set (int64 array)."""
        n = len(self.parent)
        roots = np.fromiter((self.find(i) for i in range(n)), dtype=np.int64, count=n)
        smallest = np.full(n, n, dtype=np.int64)
        np.minimum.at(smallest, roots, np.arange(n, dtype=np.int64))
        return smallest[roots]
