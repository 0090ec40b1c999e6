"""Sketch a batch: texts to MinHash signatures, shingle ids, content fingerprints, simhashes.

This is the one place that decides whether the compiled kernel (:mod:`neardup._native`) or the
pure-Python definition computes a batch: every engine (local, index, Spark), the report and
:mod:`neardup.evaluate` sketch through these functions, so a kernel speed-up or fix lands in
all of them at once and they agree value for value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .. import _native
from .._native import Signatures
from ..params import MinHashParams, NormalizeParams, ShingleParams
from .encode import batch_texts, encode_batch

__all__ = ["Signatures", "DocumentSketches", "kernel_handles", "flag_table", "sketch_texts", "submit_batch", "sketch_parts",
           "SubmittedBatch", "without_too_large",
           "sketch_folded", "sketch_documents", "sketch_document_parts", "mod_m_samples", "shingle_runs", "simhashes", "signature_matrix",
           "python_signatures"]


def kernel_handles(shingle: ShingleParams) -> bool:
    """True when the compiled kernel is built and computes shingles with these parameters."""
    return _native.supports(shingle)


def flag_table(norm: NormalizeParams) -> np.ndarray | None:
    """The code points a reader must flag for NFKC before the kernel reads a text (see
    :func:`neardup._native.flag_table`); None when the kernel does not run or without NFKC."""
    return _native.flag_table(norm) if _native.available() else None


def python_signatures(texts: Sequence[str], shingle: ShingleParams, minhash: MinHashParams,
                      *, with_fingerprints: bool = True) -> Signatures:
    """The definition the kernel's batches are tested against, one text at a time in Python
    (used for the shingle options the kernel does not handle)."""
    from ..exact.fingerprint import fingerprint
    from ..shingle import shingle_ids
    from ..sketch.minhash import MinHash

    values = np.empty((len(texts), minhash.num_perm), dtype=np.uint64)
    pieces, counts = [], []
    for i, text in enumerate(texts):
        ids = shingle_ids(text, shingle)
        mh = MinHash(minhash, hash=shingle.hash)
        mh.update_ids(ids)
        values[i] = mh.hashvalues
        pieces.append(ids)
        counts.append(ids.size)
    counts = np.array(counts, dtype=np.int64)
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    ids = np.concatenate(pieces) if pieces else np.empty(0, dtype=np.uint64)
    fps = None
    if with_fingerprints:
        fps = np.array([fingerprint(t, shingle.normalize) or 0 for t in texts], dtype=np.uint64)
    return Signatures(values=values, n_shingles=counts, offsets=offsets, id_parts=(ids,), fingerprints=fps)


def signatures_of_ids(ids: np.ndarray, offsets: np.ndarray, minhash: MinHashParams) -> np.ndarray:
    """The MinHash signatures (n, num_perm) of runs of shingle ids, run i being
    ``ids[offsets[i]:offsets[i+1]]``: the values :func:`sketch_texts` gives the texts those ids
    came from (a signature is a function of the distinct shingle ids alone). For an engine that
    keeps only the ids of most documents and needs the signatures of a few again (the Spark
    engine, for its candidate pairs). The kernel when it is built, else the Python definition."""
    from ..sketch.minhash import MinHash

    offsets = np.asarray(offsets, dtype=np.int64)
    if _native.available():
        return _native.minhash_ids(ids, offsets, minhash)
    values = np.empty((offsets.size - 1, minhash.num_perm), dtype=np.uint64)
    for i in range(offsets.size - 1):
        mh = MinHash(minhash)
        mh.update_ids(ids[offsets[i]:offsets[i + 1]])
        values[i] = mh.hashvalues
    return values


def sketch_texts(texts: Sequence[str], shingle: ShingleParams, minhash: MinHashParams, *, jobs: int = 1,
                 with_fingerprints: bool = True) -> Signatures:
    """Signatures, shingle ids and (by default) content fingerprints of a list of texts.

    ``jobs`` threads split the batch when the kernel runs; the values never depend on it.
    """
    if kernel_handles(shingle):
        return _native.signatures(texts, shingle, minhash, jobs=jobs, with_ids=True,
                                  with_fingerprints=with_fingerprints)
    return python_signatures(list(texts), shingle, minhash, with_fingerprints=with_fingerprints)


def submit_batch(pool, parts: list, shingle: ShingleParams, minhash: MinHashParams, *, jobs: int):
    """Start sketching a batch (parts as in :mod:`.encode`) on ``pool``; returns an object whose
    ``result()`` is what :func:`sketch_texts` returns for the batch's texts.

    With the kernel the batch is encoded here, on the caller's thread, and cut into chunks that
    are queued on the pool as they are: a caller that submits its next batch before taking this
    one's result keeps every thread busy across batches.
    """
    if kernel_handles(shingle):
        segments, too_large = without_too_large(encode_batch(parts, shingle.normalize))
        return SubmittedBatch(_native.submit_signatures_encoded(pool, segments, shingle, minhash, jobs=jobs,
                                                                with_ids=True, with_fingerprints=True), too_large)
    return SubmittedBatch(pool.submit(python_signatures, batch_texts(parts), shingle, minhash), frozenset())


def sketch_parts(parts: list, shingle: ShingleParams, minhash: MinHashParams, *, with_ids: bool):
    """A batch (parts as in :mod:`.encode`) sketched by the kernel on this thread, as
    :func:`submit_batch` does on a pool: ``(signatures, too_large)``, fingerprints included,
    shingle ids only ``with_ids``. For callers that run one batch per task (the Spark executors)."""
    segments, too_large = without_too_large(encode_batch(parts, shingle.normalize))
    return _native.signatures_encoded(segments, shingle, minhash, jobs=1, with_ids=with_ids,
                                      with_fingerprints=True), too_large


class SubmittedBatch:
    """A batch being sketched: ``result()`` waits for its signatures; ``too_large`` holds the
    positions of texts the kernel cannot take (:func:`without_too_large`), sketched as empty."""

    __slots__ = ("_pending", "too_large")

    def __init__(self, pending, too_large: frozenset):
        self._pending = pending
        self.too_large = too_large

    def result(self):
        return self._pending.result()


def without_too_large(segments: list[tuple]) -> tuple[list[tuple], frozenset]:
    """``segments`` with each text over the kernel's limit (NFKC can make a record under
    ``max_bytes`` grow past it) replaced by an empty one, and the positions of those texts in
    the batch: the kernel refuses a whole call for one such text, and the record is skipped
    with its reason (``too_large_nfkc``) instead."""
    limit = _native.max_doc_bytes()
    out: list[tuple] = []
    dropped: list[int] = []
    base = 0
    for data, offsets in segments:
        offsets = np.asarray(offsets, dtype=np.int64)
        first = 0
        for i in np.flatnonzero(np.diff(offsets) > limit).tolist():
            if i > first:
                out.append((data, offsets[first : i + 1]))
            out.append((b"", np.zeros(2, dtype=np.int64)))
            dropped.append(base + i)
            first = i + 1
        if first == 0:
            out.append((data, offsets))
        elif first < offsets.size - 1:
            out.append((data, offsets[first:]))
        base += offsets.size - 1
    return out, frozenset(dropped)


def sketch_folded(texts: Sequence[str], folded: Sequence[str], shingle: ShingleParams, minhash: MinHashParams,
                  *, jobs: int = 1) -> Signatures:
    """:func:`sketch_texts` (without fingerprints) of ``texts`` whose folding
    (:func:`neardup.text.normalize.fold`, NFKC and case folding) the caller made already, as
    ``folded``: the kernel reads the folded texts and folds nothing again, so that NFKC, the
    slow part of folding, runs once per text. A single text goes to the kernel directly (the
    batch wrapper's chunking costs more than the sketch of one page)."""
    if not kernel_handles(shingle):
        return python_signatures(list(texts), shingle, minhash, with_fingerprints=False)
    unfolded = dataclasses.replace(shingle, normalize=dataclasses.replace(shingle.normalize, nfkc=False,
                                                                          casefold=False))
    if len(folded) == 1:
        return _native.signatures_of_utf8(folded[0].encode("utf-8", "surrogatepass"), unfolded, minhash)
    return _native.signatures(folded, unfolded, minhash, jobs=jobs, with_ids=True)


@dataclass(frozen=True)
class DocumentSketches:
    """Everything the index stores of a batch of texts: the signatures with shingle ids, and per
    text its content fingerprint and simhash (None without words) and its MOD_m sample."""

    signatures: Signatures
    fingerprints: list
    simhashes: list
    samples: list


def mod_m_samples(ids: np.ndarray, offsets: np.ndarray, seed: int, m: int) -> list[np.ndarray]:
    """Broder's MOD_m sample of every run of shingle ids (run r is ``ids[offsets[r]:offsets[r+1]]``),
    as :class:`neardup.ModM` with ``seed`` takes it: the mixed ids
    (:func:`neardup.sketch.samples.mixed_ids`) divisible by ``m``, sorted."""
    from ..sketch.samples import mixed_ids

    mixed = mixed_ids(ids, seed)
    chosen = mixed % np.uint64(m) == 0
    cum = np.zeros(ids.size + 1, dtype=np.int64)
    np.cumsum(chosen, out=cum[1:])
    sampled = mixed[chosen]
    bounds = cum[offsets]
    return [np.sort(sampled[bounds[i] : bounds[i + 1]]) for i in range(offsets.size - 1)]


def sketch_documents(texts: Sequence[str], shingle: ShingleParams, minhash: MinHashParams, *, mod_m: int,
                     jobs: int = 1, with_samples: bool = True, with_ids: bool = True) -> DocumentSketches:
    """Signatures, content fingerprints, simhashes (of word counts, hashed with ``shingle.hash``)
    and MOD_m samples (seeded with ``minhash.seed``; empty arrays unless ``with_samples``) of a
    batch. The signatures hold the shingle ids when ``with_ids`` or ``with_samples`` (without
    them the kernel skips sorting each text's ids).

    With the kernel and the xxh3 hash (the defaults), one kernel call per chunk folds, splits and
    hashes each text once for all four (:func:`neardup._native.signatures` with fingerprints and
    simhashes); otherwise each text is folded once in Python, its words split in Python.
    """
    if kernel_handles(shingle) and shingle.hash == "xxh3":
        sig = _native.signatures(texts, shingle, minhash, jobs=jobs, with_ids=with_ids or with_samples,
                                 with_fingerprints=True, with_simhashes=True)
        return _document_sketches(sig, minhash, mod_m=mod_m, with_samples=with_samples)
    else:
        from ..exact.fingerprint import fingerprint_of_content
        from ..sketch.simhash import simhashes_of_words
        from ..text.normalize import fold
        from ..text.tokenize import words_of_folded

        norm = shingle.normalize
        folded = [fold(t, norm) for t in texts]
        sig = sketch_folded(texts, folded, shingle, minhash, jobs=jobs)
        tokens = [words_of_folded(f, norm.remove_punctuation) for f in folded]
        fingerprints = [fingerprint_of_content(" ".join(words).encode("utf-8", "surrogatepass")) if words else None
                        for words in tokens]
        simhash_values = simhashes_of_words(tokens, shingle.hash)
    return _with_samples(sig, fingerprints, simhash_values, minhash, mod_m=mod_m, with_samples=with_samples)


def sketch_document_parts(parts: list, shingle: ShingleParams, minhash: MinHashParams, *, mod_m: int, jobs: int = 1,
                          with_samples: bool = True, with_ids: bool = True) -> DocumentSketches:
    """:func:`sketch_documents` of a batch given as parts (:mod:`.encode`: lists of texts and
    EncodedDocuments, whose UTF-8 the kernel reads in place, as ``neardup dedup``'s sketch stage
    does). A text over the kernel's limit (:func:`without_too_large`) is sketched as empty, as in
    that stage."""
    if not (kernel_handles(shingle) and shingle.hash == "xxh3"):
        return sketch_documents(batch_texts(parts), shingle, minhash, mod_m=mod_m, jobs=jobs,
                                with_samples=with_samples, with_ids=with_ids)
    segments, _ = without_too_large(encode_batch(parts, shingle.normalize))
    sig = _native.signatures_encoded(segments, shingle, minhash, jobs=jobs, with_ids=with_ids or with_samples,
                                     with_fingerprints=True, with_simhashes=True)
    return _document_sketches(sig, minhash, mod_m=mod_m, with_samples=with_samples)


def _document_sketches(sig: Signatures, minhash: MinHashParams, *, mod_m: int, with_samples: bool) -> DocumentSketches:
    """The kernel's signatures with fingerprints and simhashes as :class:`DocumentSketches`
    (None for a text without words)."""
    has_words = (sig.words > 0).tolist()
    fingerprints = [int(f) if w else None for f, w in zip(sig.fingerprints.tolist(), has_words)]
    simhash_values = [int(h) if w else None for h, w in zip(sig.simhashes.tolist(), has_words)]
    return _with_samples(sig, fingerprints, simhash_values, minhash, mod_m=mod_m, with_samples=with_samples)


def _with_samples(sig: Signatures, fingerprints: list, simhash_values: list, minhash: MinHashParams, *, mod_m: int,
                  with_samples: bool) -> DocumentSketches:
    if with_samples:
        samples = mod_m_samples(sig.ids, sig.offsets, minhash.seed, mod_m)
    else:
        empty = np.empty(0, dtype=np.uint64)
        samples = [empty] * (sig.offsets.size - 1)
    return DocumentSketches(signatures=sig, fingerprints=fingerprints, simhashes=simhash_values, samples=samples)


def shingle_runs(texts: Sequence[str], shingle: ShingleParams, *, jobs: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Concatenated sorted distinct shingle ids of every text, and the offsets of each one's run."""
    if kernel_handles(shingle):
        sig = _native.signatures(list(texts), shingle, MinHashParams(num_perm=1), jobs=jobs, with_ids=True)
        return np.asarray(sig.ids), sig.offsets
    from ..shingle import shingle_ids

    pieces = [shingle_ids(t, shingle) for t in texts]
    offsets = np.zeros(len(pieces) + 1, dtype=np.int64)
    np.cumsum([p.size for p in pieces], out=offsets[1:])
    return (np.concatenate(pieces) if pieces else np.empty(0, dtype=np.uint64)), offsets


def simhashes(texts: Sequence[str], normalize: NormalizeParams, hash: str = "xxh3") -> np.ndarray:
    """64-bit simhashes of the texts' word counts (uint64; 0 for a text without words), as
    :meth:`neardup.SimHash.from_text` gives them one by one."""
    from ..sketch.simhash import simhashes_of_words
    from ..text.normalize import fold
    from ..text.tokenize import words_of_folded

    tokens = [words_of_folded(fold(t, normalize), normalize.remove_punctuation) for t in texts]
    return np.array([v or 0 for v in simhashes_of_words(tokens, hash)], dtype=np.uint64)


def signature_matrix(texts: Sequence[str], config=None, *, jobs: int = 1) -> np.ndarray:
    """The (len(texts), num_perm) uint64 MinHash signature matrix of ``texts``, as ``neardup
    dedup`` computes it with ``config`` (a :class:`neardup.DedupConfig`; the default one when
    None), for users who build their own index. Band keys: :func:`neardup.band_keys`."""
    if isinstance(texts, str):
        raise TypeError("signature_matrix takes a sequence of texts, not one str")
    if config is None:
        from ..config import DedupConfig

        config = DedupConfig()
    return sketch_texts(list(texts), config.shingle, config.minhash, jobs=jobs, with_fingerprints=False).values
