"""k-mins MinHash (Broder 1997): the minimum of each of ``num_perm`` permutations.

Accuracy: two sketches agree in each position with probability J, independently, so the
fraction of agreeing positions is unbiased with standard error sqrt(J(1-J)/num_perm); bounds are
Wilson intervals at the requested confidence.

References: Broder 1997; Manning, Raghavan and Schütze 2008, §19.6.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..errors import ConfigError, IncompatibleSketchError
from ..hashing import check_hash_name, hash64
from ..params import MinHashParams, ShingleParams
from . import _format
from .estimate import Estimate
from .permutations import AffineModPrime, MultiplyShift32, MultiplyShift64, family_for

EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)
_CHUNK = 4096


def _as_ids(tokens, hash_name: str) -> np.ndarray:
    if isinstance(tokens, np.ndarray):
        return tokens.astype(np.uint64, copy=False)
    ids = []
    for t in tokens:
        ids.append(int(t) if isinstance(t, (int, np.integer)) else hash64(t, hash_name))
    return np.array(ids, dtype=np.uint64)


class MinHash:
    """A k-mins MinHash sketch.

    Tokens may be ``str``/``bytes`` (hashed with the named 64-bit hash) or integer ids (used as
    they are, e.g. shingle ids from :func:`neardup.shingle.shingle_ids`, or the shingle numbers
    of the seed's by-hand example). ``family`` replaces the seeded permutations with a
    user-supplied one (such sketches cannot be serialized).

    >>> a = MinHash.from_text("the crawler fetches each page and follows its links to new pages")
    >>> b = MinHash.from_text("the crawler fetches every page and follows its links to other pages")
    >>> round(a.jaccard(b).value, 2) < 0.7
    True
    """

    __slots__ = ("params", "hash", "family", "hashvalues", "shingle_fingerprint")

    def __init__(self, params: MinHashParams = MinHashParams(), *, hash: str = "xxh3", family=None,
                 hashvalues=None, shingle_fingerprint: int = 0):
        self.params = params
        self.hash = check_hash_name(hash)
        self.family = family if family is not None else family_for(params.family, params.num_perm, params.seed)
        if len(self.family) != params.num_perm and family is None:
            raise AssertionError("family size mismatch")
        self.shingle_fingerprint = shingle_fingerprint
        if hashvalues is None:
            self.hashvalues = np.full(len(self.family), EMPTY, dtype=np.uint64)
        else:
            self.hashvalues = np.array(hashvalues, dtype=np.uint64)
            if self.hashvalues.shape != (len(self.family),):
                raise ConfigError(f"hashvalues must have {len(self.family)} values, got {self.hashvalues.shape}")

    @classmethod
    def from_text(cls, text: str, shingle_params: ShingleParams = ShingleParams(),
                  params: MinHashParams = MinHashParams()) -> "MinHash":
        """The sketch of a document's shingle set."""
        from ..shingle import shingle_ids

        sk = cls(params, hash=shingle_params.hash, shingle_fingerprint=shingle_params.fingerprint())
        sk.update_ids(shingle_ids(text, shingle_params))
        return sk

    # -- updating ---------------------------------------------------------------------------
    def update(self, token) -> None:
        """Add one token (str, bytes or int id)."""
        self.update_ids(_as_ids([token], self.hash))

    def update_batch(self, tokens: Iterable) -> None:
        """Add many tokens at once (an iterable of str/bytes/int, or a uint64 array of ids)."""
        self.update_ids(_as_ids(tokens, self.hash))

    def update_ids(self, ids: np.ndarray) -> None:
        """Add 64-bit ids (already hashed shingles)."""
        ids = np.asarray(ids, dtype=np.uint64)
        for start in range(0, ids.size, _CHUNK):
            permuted = self.family.apply(ids[start : start + _CHUNK])
            np.minimum(self.hashvalues, permuted.min(axis=1), out=self.hashvalues)

    # -- combining --------------------------------------------------------------------------
    def _check_compatible(self, other: "MinHash") -> None:
        if not isinstance(other, MinHash):
            raise IncompatibleSketchError(f"cannot combine MinHash with {type(other).__name__}")
        mine = (self.params, self.hash, self.family)
        theirs = (other.params, other.hash, other.family)
        if mine != theirs:
            raise IncompatibleSketchError(
                "cannot combine MinHash sketches made with different parameters: "
                f"num_perm {self.params.num_perm} vs {other.params.num_perm}, seed {self.params.seed} vs "
                f"{other.params.seed}, family {self.family.name} vs {other.family.name}, hash {self.hash} vs {other.hash}"
            )
        if self.shingle_fingerprint and other.shingle_fingerprint and self.shingle_fingerprint != other.shingle_fingerprint:
            raise IncompatibleSketchError(
                f"cannot combine MinHash sketches of different shingling (shingle params fingerprint "
                f"{self.shingle_fingerprint:#018x} vs {other.shingle_fingerprint:#018x})")

    def merge(self, other: "MinHash") -> None:
        """Make this the sketch of the union of both sets (in place)."""
        self._check_compatible(other)
        np.minimum(self.hashvalues, other.hashvalues, out=self.hashvalues)

    @classmethod
    def union(cls, *sketches: "MinHash") -> "MinHash":
        """A new sketch of the union of the sketches' sets."""
        if not sketches:
            raise ConfigError("union() needs at least one sketch")
        out = sketches[0].copy()
        for sk in sketches[1:]:
            out.merge(sk)
        return out

    def copy(self) -> "MinHash":
        return MinHash(self.params, hash=self.hash, family=self.family, hashvalues=self.hashvalues.copy(),
                       shingle_fingerprint=self.shingle_fingerprint)

    # -- estimating -------------------------------------------------------------------------
    def jaccard(self, other: "MinHash", confidence: float = 0.95) -> Estimate:
        """Estimated resemblance: the fraction of positions where both minimums agree."""
        self._check_compatible(other)
        both_empty = (self.hashvalues == EMPTY) & (other.hashvalues == EMPTY)
        if both_empty.all():
            return Estimate(1.0, 0.0, 1.0, 1.0, confidence, len(self))
        agree = int(np.count_nonzero((self.hashvalues == other.hashvalues) & ~both_empty))
        return Estimate.from_proportion(agree, len(self), confidence)

    def is_empty(self) -> bool:
        return bool((self.hashvalues == EMPTY).all())

    def __len__(self) -> int:
        return len(self.family)

    def __eq__(self, other) -> bool:
        return (isinstance(other, MinHash) and self.params == other.params and self.hash == other.hash
                and self.family == other.family and np.array_equal(self.hashvalues, other.hashvalues))

    def __repr__(self) -> str:
        return f"MinHash(num_perm={len(self)}, seed={self.params.seed}, family={self.family.name!r}, hash={self.hash!r})"

    # -- bytes ------------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        if not isinstance(self.family, (AffineModPrime, MultiplyShift64, MultiplyShift32)) or self.family != family_for(
                self.params.family, self.params.num_perm, self.params.seed):
            raise ConfigError("only sketches with a named, seeded permutation family can be serialized")
        return _format.encode(_format.Envelope("kmins", self.hash, self.params.family, self.params.seed,
                                               self.params.num_perm, self.shingle_fingerprint, self.hashvalues))

    @classmethod
    def from_bytes(cls, buf: bytes) -> "MinHash":
        env = _format.decode(buf, "kmins")
        if env.values.size != env.size:
            from ..errors import FormatError

            raise FormatError(f"corrupt MinHash: {env.values.size} values for num_perm {env.size}")
        params = MinHashParams(num_perm=env.size, seed=env.seed, family=env.family)
        return cls(params, hash=env.hash, hashvalues=env.values, shingle_fingerprint=env.shingle_fingerprint)

    def __reduce__(self):
        return (MinHash.from_bytes, (self.to_bytes(),))
