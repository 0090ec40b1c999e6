"""Broder's sample sketches, which estimate containment as well as resemblance.

Both hash every shingle id once more with a seeded bijection (splitmix64 of ``id XOR
derive(seed, "sample", 0)``) and keep a sample of the hashed values:

- :class:`BottomS` (MIN_s) keeps the ``s`` smallest: a fixed-size sketch. For two documents,
  ``X = MIN_s(A ∪ B)`` is a uniform sample of the union whose membership in A and in B is known
  exactly, so ``|X ∩ A ∩ B| / |X|`` estimates resemblance and ``|X ∩ A ∩ B| / |X ∩ A|`` estimates
  the containment of A in B.
- :class:`ModM` (MOD_m) keeps every value divisible by ``m``: a sketch that grows with the
  document (about ``|A| / m`` values) and estimates containment well even when A is much smaller
  than B: ``|MOD_m(A) ∩ MOD_m(B)| / |MOD_m(A)|``.

Accuracy: each estimate is a proportion of the sample; its standard error is sqrt(p(1-p)/n)
for a sample of n (reported in :attr:`Estimate.samples`), with Wilson bounds.

Reference: Broder 1997, "On the resemblance and containment of documents", Theorems 1 and 2.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

import numpy as np

from ..errors import ConfigError, FormatError, IncompatibleSketchError
from ..hashing import check_hash_name, derive, splitmix64_array
from ..params import ShingleParams
from . import _format
from .estimate import Estimate
from .minhash import _as_ids



def mixed_ids(ids, seed: int) -> np.ndarray:
    """Shingle ids hashed once more for sampling: splitmix64 of ``id XOR derive(seed, "sample", 0)``
    (uint64). MIN_s keeps the smallest of these, MOD_m the multiples of m."""
    return splitmix64_array(np.asarray(ids, dtype=np.uint64), _sample_seed(seed))


@lru_cache(maxsize=64)
def _sample_seed(seed: int) -> int:
    return derive(seed, "sample", 0)

class _SampleSketch:
    kind = ""

    __slots__ = ("size", "seed", "hash", "values", "shingle_fingerprint")

    def __init__(self, size: int, *, seed: int = 1, hash: str = "xxh3", values=None, shingle_fingerprint: int = 0):
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConfigError(f"The size parameter of {type(self).__name__} must be an int >= 1. Got {size!r} instead.")
        self.size = size
        self.seed = seed
        self.hash = check_hash_name(hash)
        self.shingle_fingerprint = shingle_fingerprint
        self.values = np.empty(0, dtype=np.uint64) if values is None else np.unique(np.asarray(values, dtype=np.uint64))

    @classmethod
    def from_text(cls, text: str, size: int, shingle_params: ShingleParams = ShingleParams(), *, seed: int = 1):
        from ..shingle import shingle_ids

        sk = cls(size, seed=seed, hash=shingle_params.hash, shingle_fingerprint=shingle_params.fingerprint())
        sk.update_ids(shingle_ids(text, shingle_params))
        return sk

    def update(self, token) -> None:
        self.update_ids(_as_ids([token], self.hash))

    def update_batch(self, tokens: Iterable) -> None:
        self.update_ids(_as_ids(tokens, self.hash))

    def update_ids(self, ids) -> None:
        mixed = mixed_ids(ids, self.seed)
        self.values = self._select(np.union1d(self.values, self._select(np.unique(mixed))))

    def _select(self, sorted_values: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _check_compatible(self, other) -> None:
        if type(other) is not type(self):
            raise IncompatibleSketchError(f"cannot combine {type(self).__name__} with {type(other).__name__}")
        if (self.size, self.seed, self.hash) != (other.size, other.seed, other.hash):
            raise IncompatibleSketchError(
                f"cannot combine {type(self).__name__} sketches made with different parameters: size "
                f"{self.size} vs {other.size}, seed {self.seed} vs {other.seed}, hash {self.hash} vs {other.hash}")
        if self.shingle_fingerprint and other.shingle_fingerprint and self.shingle_fingerprint != other.shingle_fingerprint:
            raise IncompatibleSketchError(f"cannot combine {type(self).__name__} sketches of different shingling")

    def merge(self, other) -> None:
        self._check_compatible(other)
        self.values = self._select(np.union1d(self.values, other.values))

    @classmethod
    def union(cls, *sketches):
        if not sketches:
            raise ConfigError("union() needs at least one sketch")
        out = sketches[0].copy()
        for sk in sketches[1:]:
            out.merge(sk)
        return out

    def copy(self):
        return type(self)(self.size, seed=self.seed, hash=self.hash, values=self.values.copy(),
                          shingle_fingerprint=self.shingle_fingerprint)

    def is_empty(self) -> bool:
        return self.values.size == 0

    def __len__(self) -> int:
        return int(self.values.size)

    def __eq__(self, other) -> bool:
        return (type(other) is type(self) and (self.size, self.seed, self.hash) == (other.size, other.seed, other.hash)
                and np.array_equal(self.values, other.values))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self.size}, seed={self.seed}, values={self.values.size})"

    def to_bytes(self) -> bytes:
        return _format.encode(_format.Envelope(self.kind, self.hash, "none", self.seed, self.size,
                                               self.shingle_fingerprint, self.values))

    @classmethod
    def from_bytes(cls, buf: bytes):
        env = _format.decode(buf, cls.kind)
        if env.values.size > 1 and not np.all(env.values[1:] > env.values[:-1]):
            raise FormatError(f"corrupt {cls.__name__}: values are not strictly increasing")
        return cls(env.size, seed=env.seed, hash=env.hash, values=env.values, shingle_fingerprint=env.shingle_fingerprint)

    def __reduce__(self):
        return (type(self).from_bytes, (self.to_bytes(),))


class BottomS(_SampleSketch):
    """Broder's MIN_s sketch: the ``s`` smallest hashed shingles."""

    kind = "bottom_s"
    __slots__ = ()

    def _select(self, sorted_values: np.ndarray) -> np.ndarray:
        return sorted_values[: self.size]

    def _union_sample(self, other) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        self._check_compatible(other)
        x = np.union1d(self.values, other.values)[: self.size]
        in_a = np.isin(x, self.values, assume_unique=True)
        in_b = np.isin(x, other.values, assume_unique=True)
        return x, in_a, in_b

    def jaccard(self, other: "BottomS", confidence: float = 0.95) -> Estimate:
        """Estimated resemblance ``|X ∩ A ∩ B| / |X|`` with ``X = MIN_s(A ∪ B)``."""
        x, in_a, in_b = self._union_sample(other)
        if x.size == 0:
            return Estimate(1.0, 0.0, 1.0, 1.0, confidence, 0)
        return Estimate.from_proportion(int(np.count_nonzero(in_a & in_b)), int(x.size), confidence)

    def containment(self, other: "BottomS", confidence: float = 0.95) -> Estimate:
        """Estimated containment of this document in ``other``: ``|X ∩ A ∩ B| / |X ∩ A|``."""
        x, in_a, in_b = self._union_sample(other)
        n = int(np.count_nonzero(in_a))
        if n == 0:
            return Estimate(1.0 if x.size == 0 else 0.0, 0.0, 0.0, 1.0, confidence, 0)
        return Estimate.from_proportion(int(np.count_nonzero(in_a & in_b)), n, confidence)


class ModM(_SampleSketch):
    """Broder's MOD_m sketch: every hashed shingle divisible by ``m`` (about 1 in m)."""

    kind = "mod_m"
    __slots__ = ()

    def _select(self, sorted_values: np.ndarray) -> np.ndarray:
        return sorted_values[sorted_values % np.uint64(self.size) == 0]

    def jaccard(self, other: "ModM", confidence: float = 0.95) -> Estimate:
        """Estimated resemblance ``|MOD(A) ∩ MOD(B)| / |MOD(A) ∪ MOD(B)|``."""
        self._check_compatible(other)
        inter = np.intersect1d(self.values, other.values, assume_unique=True).size
        union = self.values.size + other.values.size - inter
        if union == 0:
            return Estimate(1.0, 0.0, 0.0, 1.0, confidence, 0)
        return Estimate.from_proportion(inter, union, confidence)

    def containment(self, other: "ModM", confidence: float = 0.95) -> Estimate:
        """Estimated containment of this document in ``other``: ``|MOD(A) ∩ MOD(B)| / |MOD(A)|``."""
        self._check_compatible(other)
        if self.values.size == 0:
            return Estimate(1.0 if other.values.size == 0 else 0.0, 0.0, 0.0, 1.0, confidence, 0)
        inter = np.intersect1d(self.values, other.values, assume_unique=True).size
        return Estimate.from_proportion(inter, int(self.values.size), confidence)
