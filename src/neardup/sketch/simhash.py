"""Simhash (Charikar 2002) as computed for web pages by Manku, Jain and Das Sarma (2007, §2).

Each feature (a word by default, weight = its count) is hashed to 64 bits with the named hash;
for each bit position the feature's weight is added to a running total when the bit is 1 and
subtracted when it is 0; bit i of the fingerprint is 1 when total i is positive. Bit 1 is the
most significant bit, so the hex form reads in the order of the seed's table.

Accuracy: for feature vectors at angle θ, each bit differs with probability about θ/π, so the
Hamming distance d estimates θ ≈ π d / 64 and the cosine similarity cos(π d / 64).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping

import numpy as np

from ..hashing import check_hash_name, hash64
from ..params import NormalizeParams
from . import _format

BITS = 64
_SHIFTS = np.arange(BITS - 1, -1, -1, dtype=np.uint64)  # bit 1 (MSB) first


def simhash_of_features(features: Mapping[str, float] | Iterable[tuple[str, float]], hash: str = "xxh3") -> int:
    """The 64-bit simhash of weighted features."""
    items = list(features.items()) if isinstance(features, Mapping) else list(features)
    if not items:
        return 0
    hashes = np.array([hash64(f, hash) for f, _ in items], dtype=np.uint64)
    weights = np.array([w for _, w in items], dtype=np.float64)
    bits = ((hashes[:, None] >> _SHIFTS[None, :]) & np.uint64(1)).astype(np.int8)
    totals = weights @ (2 * bits.astype(np.float64) - 1)
    value = 0
    for positive in totals > 0:
        value = (value << 1) | int(positive)
    return value


class _WordHashes(dict):
    """word -> 64-bit feature hash, remembered: word frequencies are Zipfian, so most words of a
    document were hashed before, and a dict lookup costs a tenth of a hash call from Python."""

    MAX_WORDS = 1 << 20

    def __init__(self, hash_name: str):
        super().__init__()
        if hash_name == "xxh3":
            import xxhash

            h = xxhash.xxh3_64_intdigest
            self._hash = lambda w: h(w.encode("utf-8", "surrogatepass"))
        else:
            self._hash = lambda w: hash64(w, hash_name)

    def __missing__(self, word: str) -> int:
        if len(self) >= self.MAX_WORDS:
            self.clear()
        value = self[word] = self._hash(word)
        return value


_word_hashes: dict[str, _WordHashes] = {}


def simhashes_of_words(token_lists: list[list[str]], hash_name: str = "xxh3") -> list[int | None]:
    """:func:`simhash_of_features` of word counts, for many documents at once.

    None for a document without words. Totals are sums of integer counts, exact in any order,
    so the batched arithmetic gives the same bits as the one-document function.
    """
    cache = _word_hashes.get(hash_name)
    if cache is None:
        cache = _word_hashes[hash_name] = _WordHashes(hash_name)
    out: list[int | None] = [None] * len(token_lists)
    if len(token_lists) == 1:
        if token_lists[0]:
            # One document (a query, a check-and-add): a matrix-vector product of the weights and
            # the (features, 64) bit matrix, a handful of numpy calls.
            counts = Counter(token_lists[0])
            hv = np.fromiter(map(cache.__getitem__, counts), dtype=np.uint64, count=len(counts))
            wv = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))
            bits = np.unpackbits(hv.astype(">u8").view(np.uint8)).reshape(-1, 64)  # bit 1 = MSB
            out[0] = int(np.packbits(2 * (wv @ bits) > wv.sum()).view(">u8")[0])
        return out
    hashes: list[int] = []
    weights: list[int] = []
    starts: list[int] = []
    which: list[int] = []
    for i, tokens in enumerate(token_lists):
        if not tokens:
            continue
        counts = Counter(tokens)
        starts.append(len(hashes))
        which.append(i)
        hashes.extend([cache[w] for w in counts])
        weights.extend(counts.values())
    if not which:
        return out
    hv = np.array(hashes, dtype=np.uint64)
    wv = np.array(weights, dtype=np.int32)
    st = np.array(starts + [len(hashes)], dtype=np.int64)
    # Documents in groups of about 32k features: the (features, 64) bit matrix stays small.
    doc = 0
    while doc < len(which):
        end = doc + 1
        while end < len(which) and st[end + 1] - st[doc] <= 32768:
            end += 1
        lo, hi = st[doc], st[end]
        bits = np.unpackbits(hv[lo:hi].astype(">u8").view(np.uint8).reshape(-1, 8), axis=1)  # bit 1 = MSB
        # total = sum of w * (2 * bit - 1) = 2 * (sum of w over set bits) - sum of w
        set_weight = np.add.reduceat(bits * wv[lo:hi, None], st[doc:end] - lo, axis=0, dtype=np.int64)
        all_weight = np.add.reduceat(wv[lo:hi].astype(np.int64), st[doc:end] - lo)
        packed = np.packbits(2 * set_weight > all_weight[:, None], axis=1).view(">u8").ravel()
        for j, value in enumerate(packed.tolist()):
            out[which[doc + j]] = int(value)
        doc = end
    return out



def bit_totals(features: Mapping[str, float], hash: str = "xxh3") -> np.ndarray:
    """The 64 running totals (bit 1 first), to show the computation as the seed's table does."""
    hashes = np.array([hash64(f, hash) for f in features], dtype=np.uint64)
    weights = np.array(list(features.values()), dtype=np.float64)
    bits = ((hashes[:, None] >> _SHIFTS[None, :]) & np.uint64(1)).astype(np.float64)
    return weights @ (2 * bits - 1)


def hamming(a: int, b: int) -> int:
    """Number of differing bits of two 64-bit fingerprints."""
    return (int(a) ^ int(b)).bit_count()


class SimHash:
    """A 64-bit simhash fingerprint with the hash family that made it.

    >>> d1 = SimHash.from_text("the crawler fetches each page and follows its links to new pages", hash="md5")
    >>> d1.hex()
    '93264c674404019d'
    """

    __slots__ = ("value", "hash")

    def __init__(self, value: int = 0, *, hash: str = "xxh3"):
        self.value = int(value) & ((1 << BITS) - 1)
        self.hash = check_hash_name(hash)

    @classmethod
    def from_features(cls, features, *, hash: str = "xxh3") -> "SimHash":
        return cls(simhash_of_features(features, hash), hash=hash)

    @classmethod
    def from_text(cls, text: str, *, hash: str = "xxh3", normalize: NormalizeParams = NormalizeParams()) -> "SimHash":
        """Simhash of the document's words, each weighted by its count."""
        from ..text.tokenize import words

        return cls.from_features(Counter(words(text, normalize)), hash=hash)

    def distance(self, other: "SimHash") -> int:
        if not isinstance(other, SimHash) or other.hash != self.hash:
            from ..errors import IncompatibleSketchError

            raise IncompatibleSketchError(f"cannot compare simhashes made with different feature hashes "
                                          f"({self.hash} vs {getattr(other, 'hash', type(other).__name__)})")
        return hamming(self.value, other.value)

    def cosine_estimate(self, other: "SimHash") -> float:
        """Cosine similarity implied by the Hamming distance: cos(π d / 64)."""
        return math.cos(math.pi * self.distance(other) / BITS)

    def hex(self) -> str:
        return f"{self.value:016x}"

    def __int__(self) -> int:
        return self.value

    def __eq__(self, other) -> bool:
        return isinstance(other, SimHash) and (self.value, self.hash) == (other.value, other.hash)

    def __hash__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return f"SimHash({self.hex()}, hash={self.hash!r})"

    def to_bytes(self) -> bytes:
        return _format.encode(_format.Envelope("simhash", self.hash, "none", 0, BITS, 0,
                                               np.array([self.value], dtype=np.uint64)))

    @classmethod
    def from_bytes(cls, buf: bytes) -> "SimHash":
        env = _format.decode(buf, "simhash")
        if env.size != BITS or env.values.size != 1:
            from ..errors import FormatError

            raise FormatError(f"corrupt simhash: {env.values.size} values of {env.size} bits")
        return cls(int(env.values[0]), hash=env.hash)

    def __reduce__(self):
        return (SimHash.from_bytes, (self.to_bytes(),))
