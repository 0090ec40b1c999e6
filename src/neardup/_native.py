"""Bridge to the compiled kernel ``neardup._kernel``; pure Python falls back where it is missing.

The kernel computes, over batches of documents and with the GIL released, exactly what the
library's pure-Python functions compute one document at a time:

- :func:`shingle_ids` equals :func:`neardup.shingle.shingle_ids` (hash ``xxh3``, option B);
- :func:`signatures` equals, per document, ``min`` over its shingle ids of
  ``family_for(...).apply(ids)``, with all ``2**64 - 1`` for a document without tokens.

:func:`neardup.text.normalize.fold` is split in two: NFKC stays in Python (``unicodedata``,
skipped for text that is ASCII or already normalized, line by line otherwise), and case
folding runs in the kernel from a table of the running Python's ``str.casefold`` (a
per-code-point mapping). The kernel receives UTF-8 and the character-class table, and does
the rest: case folding, tokens, shingles, XXH3-64, distinct ids, MinHash.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np

from .params import MinHashParams, NormalizeParams, ShingleParams
from .text import unicode_tables
from .text.nfkc import context_free, nfkc, nfkc_by_lines, unsafe_table

try:
    from . import _kernel
except ImportError:  # not built (no compiler at install time): the pure-Python paths are used
    import warnings

    _kernel = None
    warnings.warn(
        "neardup._kernel is not built: tokenizing, shingling and MinHash run in pure Python, tens of "
        "times slower. Reinstall neardup with a C compiler and the Python headers (Debian: gcc "
        "python3-dev) for the compiled speed.",
        RuntimeWarning,
        stacklevel=2,
    )

_UNITS = {"word": 0, "char": 1, "line": 2}
_FAMILIES = {"affine61": 0, "mulshift64": 1, "mulshift32": 2}
#: Shingle hashes the kernel computes (its HASH_* constants).
_HASHES = {"xxh3": 0, "rabin40": 1, "rabin64": 2}
#: Text per kernel call when a batch is split (bounds the joined buffer; several per thread
#: so that threads finish together).
_CHUNK_BYTES = 4 << 20


def available() -> bool:
    """True when the compiled kernel imports."""
    return _kernel is not None


def supports(params: ShingleParams) -> bool:
    """True when the kernel is available and computes shingles with these parameters.

    It handles the hashes ``xxh3``, ``rabin40`` and ``rabin64`` with distinct shingles (no multiset), any unit and k, with or
    without punctuation, NFKC and case folding. The character unit needs collapsed white space
    (the default); words and lines never depend on that setting.
    """
    if _kernel is None or params.hash not in _HASHES or params.multiset:
        return False
    return params.unit != "char" or params.normalize.collapse_whitespace


def _check(params: ShingleParams) -> None:
    if not supports(params):
        from .errors import ConfigError

        if _kernel is None:
            raise ConfigError("the compiled kernel neardup._kernel is not built: reinstall neardup with a C compiler "
                              "and the Python headers (Debian: gcc python3-dev)")
        raise ConfigError(
            f"the compiled kernel does not handle {params!r}: it needs hash xxh3, rabin40 or rabin64, multiset=False "
            "and, for characters, collapse_whitespace=True"
        )


def max_doc_bytes() -> int:
    """The largest text (UTF-8 bytes, after NFKC) the kernel takes in one call (asked each time:
    a test lowers it with ``_kernel.set_max_doc_bytes``)."""
    return _kernel.max_doc_bytes()


@lru_cache(maxsize=1)
def _table() -> np.ndarray:
    from .text.charclass import class_table

    return np.ascontiguousarray(class_table(), dtype=np.uint8)


def _casefold_changes() -> list[tuple[int, str]]:
    """Every code point that ``str.casefold`` changes, with its folding (from the running Python).

    ``casefold`` maps each code point on its own (no context), so the string's folding is the
    concatenation of these. Ranges that do not change are skipped whole (bisection).
    """
    out: list[tuple[int, str]] = []
    for first, last in ((0, 0xD800), (0xE000, 0x110000)):  # surrogates fold to themselves
        text = np.arange(first, last, dtype="<u4").tobytes().decode("utf-32-le")
        stack = [(0, last - first)]
        while stack:
            lo, hi = stack.pop()
            part = text[lo:hi]
            if part.casefold() == part:
                continue
            if hi - lo <= 64:
                for cp in range(first + lo, first + hi):
                    folded = chr(cp).casefold()
                    if folded != chr(cp):
                        out.append((cp, folded))
            else:
                mid = (lo + hi) // 2
                stack += [(mid, hi), (lo, mid)]
    out.sort()
    return out


def casefold_quads() -> np.ndarray:
    """:func:`_casefold_changes` as sorted uint32 quadruples (cp, f1, f2, f3), 0-padded."""
    changes = _casefold_changes()
    quads = np.zeros((len(changes), 4), dtype=np.uint32)
    for row, (cp, folded) in enumerate(changes):
        if not 1 <= len(folded) <= 3:  # never happens with Unicode 14/15
            raise RuntimeError(f"casefold of U+{cp:04X} has {len(folded)} code points")
        quads[row, 0] = cp
        quads[row, 1 : 1 + len(folded)] = [ord(c) for c in folded]
    return quads


#: :func:`casefold_quads` for one Unicode version (``scripts/gen_nfkc_table.py``): computing it
#: costs about 0.07 s at every start, on the path of the first batch.
_CASEFOLD_FILE = Path(__file__).with_name("text") / "casefold.bin"
_CASEFOLD_MAGIC = b"NDCF"


def write_casefold_table(path: Path = _CASEFOLD_FILE) -> int:
    """Write :func:`casefold_quads` for the running Python's Unicode version; returns its rows."""
    quads = casefold_quads()
    unicode_tables.write(path, _CASEFOLD_MAGIC, quads)
    return len(quads)


def _shipped_casefold() -> np.ndarray | None:
    """The shipped quadruples when they are for the running Unicode version, else None."""
    values = unicode_tables.read(_CASEFOLD_FILE, _CASEFOLD_MAGIC)
    return None if values is None else values.reshape(-1, 4)


@lru_cache(maxsize=4)
def _kernel_maps(nfkc: bool, casefold: bool) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """(class table, fold table or None, flag table or None) for these normalization steps.

    The kernel replaces each code point of the fold table (marked with FOLD_FLAG in the class
    table) by its entry, up to three code points, as sorted uint32 quadruples (cp, f1, f2, f3):
    with ``casefold``, the code points case folding changes, by their folding; with ``nfkc``,
    also the context-free ones (:func:`neardup.text.nfkc.context_free`), by their NFKC, case
    folded when ``casefold`` (normalize is NFKC, then case folding). The flag table marks the
    code points that still need :func:`neardup.text.nfkc.nfkc` before the kernel reads a text:
    the unsafe ones it does not map.
    """
    parts = []
    if casefold:
        quads = _shipped_casefold()
        parts.append(quads if quads is not None else casefold_quads())
    flags = None
    if nfkc:
        mapped = _fold_entries(context_free(), casefold)
        flags = unsafe_table().copy()
        flags[mapped[:, 0]] = 0
        if parts:  # NFKC first: a mapped code point's entry replaces its case folding
            is_mapped = np.zeros(flags.size, dtype=bool)
            is_mapped[mapped[:, 0]] = True
            parts[0] = parts[0][~is_mapped[parts[0][:, 0]]]
        parts.append(mapped)
        flags.setflags(write=False)
    if not parts:
        return _table(), None, flags
    fold = np.concatenate(parts)
    fold = fold[np.argsort(fold[:, 0], kind="stable")]
    table = _table().copy()
    table[fold[:, 0]] |= _FOLD_FLAG
    table.setflags(write=False)
    fold.setflags(write=False)
    return table, fold, flags


def _fold_entries(mapping: dict[int, str], casefold: bool) -> np.ndarray:
    """uint32 quadruples (cp, f1, f2, f3) of the code points of ``mapping`` replaced by their
    value (case folded when ``casefold``), for those whose entry the kernel's buffers hold: at
    most 3 code points, at most 5 output bytes per byte of the code point (a separator before
    each code point included) and 2 units per byte, as ``classes_init`` in
    ``kernel/tokenize.c`` checks."""
    cps = np.fromiter(mapping.keys(), dtype=np.int64, count=len(mapping))
    targets = list(mapping.values())
    if casefold:  # case folding maps code points one by one, and NUL to itself
        targets = "\0".join(targets).casefold().split("\0")
    lengths = np.fromiter(map(len, targets), dtype=np.int64, count=len(targets))
    codes = np.frombuffer("".join(targets).encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.int64)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))

    def utf8_len(cp):
        return 1 + (cp >= 0x80) + (cp >= 0x800) + (cp >= 0x10000)

    out_bytes = np.add.reduceat(utf8_len(codes) + 1, starts) if codes.size else np.zeros(0, dtype=np.int64)
    size = utf8_len(cps)
    fits = (lengths >= 1) & (lengths <= 3) & (out_bytes <= 5 * size) & (lengths <= 2 * size)
    quads = np.zeros((int(fits.sum()), 4), dtype=np.uint32)
    quads[:, 0] = cps[fits]
    for j in range(3):
        has = lengths[fits] > j
        quads[has, 1 + j] = codes[starts[fits][has] + j]
    return quads


_FOLD_FLAG = 0x80


def _kernel_tables(norm: NormalizeParams) -> tuple[np.ndarray, np.ndarray | None]:
    """(class table, fold table or None) for the kernel (see :func:`_kernel_maps`)."""
    return _kernel_maps(norm.nfkc, norm.casefold)[:2]


def flag_table(norm: NormalizeParams) -> np.ndarray | None:
    """uint8 per code point: 1 where a text must go through NFKC before the kernel reads it
    with ``norm`` (the unsafe code points it does not map itself); None without NFKC."""
    return _kernel_maps(norm.nfkc, norm.casefold)[2]


@lru_cache(maxsize=32)
def _coefficients(family: str, num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    from .sketch.permutations import family_for

    fam = family_for(family, num_perm, seed)
    a = np.array(fam.a, dtype=np.uint64)
    b = np.array(fam.b, dtype=np.uint64)
    a.setflags(write=False)
    b.setflags(write=False)
    return a, b


def _encode(text: str, norm: NormalizeParams) -> bytes:
    """The bytes the kernel reads: UTF-8 of the text after NFKC (when on). The kernel does the
    case folding, so that ``fold(text, norm)`` is what it tokenizes."""
    if not isinstance(text, str):
        raise TypeError(f"a document's text must be a str, got {type(text).__name__}")
    if norm.nfkc:
        text = nfkc(text)
    return text.encode("utf-8", "surrogatepass")


def shingle_ids(text: str, params: ShingleParams = ShingleParams()) -> np.ndarray:
    """Sorted distinct 64-bit shingle ids of ``text`` (uint64), as :func:`neardup.shingle.shingle_ids`."""
    _check(params)
    norm = params.normalize
    table, fold = _kernel_tables(norm)
    raw = _kernel.shingle_ids(_encode(text, norm), table, _UNITS[params.unit], params.k,
                              not norm.remove_punctuation, fold, _HASHES[params.hash])
    return np.frombuffer(raw, dtype=np.uint64)


def minhash_ids(ids: np.ndarray, offsets: np.ndarray, minhash_params: MinHashParams = MinHashParams()) -> np.ndarray:
    """MinHash values (n, num_perm) of runs of shingle ids, run i being ``ids[offsets[i]:offsets[i+1]]``.

    Equals ``family_for(...).apply(run).min(axis=1)`` per run (all ``2**64 - 1`` for an empty
    run); repeats in a run are allowed. The GIL is released.
    """
    if _kernel is None:
        from .errors import ConfigError

        raise ConfigError("the compiled kernel neardup._kernel is not built")
    m = minhash_params.num_perm
    a, b = _coefficients(minhash_params.family, m, minhash_params.seed)
    ids = np.ascontiguousarray(ids, dtype=np.uint64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    raw = _kernel.minhash(ids, offsets, a, b, _FAMILIES[minhash_params.family])
    return np.frombuffer(raw, dtype=np.uint64).reshape(len(offsets) - 1, m)


@dataclass(frozen=True, eq=False)
class Signatures:
    """MinHash signatures of a batch of documents.

    - ``values``: (n, num_perm) uint64; a document without tokens has all ``2**64 - 1``;
    - ``n_shingles``: (n,) int64, distinct shingles per document;
    - ``offsets``: (n + 1,) int64, ``cumsum`` of ``n_shingles`` from 0;
    - ``ids``: the sorted distinct shingle ids of every document, concatenated (uint64;
      document i's are ``ids[offsets[i]:offsets[i+1]]``), or None unless asked for;
    - ``id_parts``: the same ids as the kernel returned them, one array per chunk of documents
      (their concatenation is ``ids``, built on first use: a consumer that streams the ids, as
      ``neardup dedup`` spilling them to disk, saves a copy of them all);
    - ``fingerprints``: (n,) uint64 content fingerprints (0 for a document without tokens), or
      None unless asked for;
    - ``simhashes``: (n,) uint64 simhashes of the word tokens with the xxh3 feature hash (0 for a
      document without tokens; :func:`neardup.sketch.simhash.simhashes_of_words`), and
      ``words``: (n,) int64 word tokens per document, or both None unless asked for.
    """

    values: np.ndarray
    n_shingles: np.ndarray
    offsets: np.ndarray
    id_parts: tuple[np.ndarray, ...] | None = None
    fingerprints: np.ndarray | None = None
    simhashes: np.ndarray | None = None
    words: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.values)

    @cached_property
    def ids(self) -> np.ndarray | None:
        if self.id_parts is None:
            return None
        return np.concatenate(self.id_parts) if len(self.id_parts) != 1 else self.id_parts[0]

    def doc_ids(self, i: int) -> np.ndarray:
        """The sorted distinct shingle ids of document ``i`` (needs ``with_ids=True``)."""
        if self.ids is None:
            raise ValueError("shingle ids were not kept: call signatures(..., with_ids=True)")
        return self.ids[self.offsets[i] : self.offsets[i + 1]]


def _as_sequence(texts) -> Sequence[str]:
    if isinstance(texts, str):
        raise TypeError("expected a sequence of texts, got one str")
    return texts if isinstance(texts, Sequence) else list(texts)


def _chunks(texts: Sequence[str], target: int) -> list[tuple[int, int]]:
    """Contiguous [start, stop) ranges of about ``target`` characters each (one document at least)."""
    out, start, size = [], 0, 0
    for i, t in enumerate(texts):
        size += len(t) + 16
        if size >= target:
            out.append((start, i + 1))
            start, size = i + 1, 0
    if start < len(texts) or not out:
        out.append((start, len(texts)))
    return out


def _encode_range(texts: Sequence[str], start: int, stop: int, norm: NormalizeParams) -> tuple[bytes, np.ndarray]:
    """``texts[start:stop]`` as the kernel reads them, joined: (UTF-8 bytes, int64 offsets).

    The kernel encodes and flags, off the GIL, the texts holding a code point that NFKC may
    change and that the kernel does not map itself (:func:`flag_table`); only those are
    normalized here (most texts need nothing) and spliced back in.
    """
    data, raw_offsets, flagged = _kernel.utf8_join(texts, start, stop, flag_table(norm))
    offsets = np.frombuffer(raw_offsets, dtype=np.int64)
    changed = {}
    for i, first, last in flagged:
        text = texts[start + i]
        # NFKC acts line by line, and lines without a flagged code point are already NFKC.
        lo, hi = text.rfind("\n", 0, first) + 1, text.find("\n", last)
        hi = len(text) if hi < 0 else hi
        middle = text[lo:hi]
        normalized_middle = nfkc_by_lines(middle)
        if normalized_middle != middle:
            normalized = text[:lo] + normalized_middle + text[hi:]
            changed[i] = normalized.encode("utf-8", "surrogatepass")
    if not changed:
        return data, offsets
    view, pieces, prev = memoryview(data), [], 0
    for i, encoded in changed.items():  # ascending
        pieces += [view[offsets[prev] : offsets[i]], encoded]
        prev = i + 1
    pieces.append(view[offsets[prev] :])
    lengths = np.diff(offsets)
    for i, encoded in changed.items():
        lengths[i] = len(encoded)
    new_offsets = np.zeros(len(offsets), dtype=np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    return b"".join(pieces), new_offsets


def _map_chunks(texts: Sequence[str], norm: NormalizeParams, jobs: int, call):
    """``(ranges, [call(data, offsets) per range])``: the batch cut into contiguous chunks, each
    encoded and joined (:func:`_encode_range`) on its worker thread (``jobs > 1``) or in turn."""

    def run(start: int, stop: int):
        data, offsets = _encode_range(texts, start, stop, norm)
        return call(data, offsets)

    jobs = max(1, int(jobs))
    total = sum(len(t) for t in texts)
    target = _CHUNK_BYTES if jobs == 1 else max(1 << 16, min(_CHUNK_BYTES, total // (4 * jobs) + 1))
    ranges = _chunks(texts, target)
    if jobs == 1 or len(ranges) == 1:
        return ranges, [run(s, e) for s, e in ranges]
    with ThreadPoolExecutor(max_workers=min(jobs, len(ranges)), thread_name_prefix="neardup-kernel") as pool:
        return ranges, list(pool.map(lambda r: run(*r), ranges))


def signatures(
    texts: Sequence[str],
    shingle_params: ShingleParams = ShingleParams(),
    minhash_params: MinHashParams = MinHashParams(),
    *,
    jobs: int = 1,
    with_ids: bool = False,
    with_fingerprints: bool = False,
    with_simhashes: bool = False,
) -> Signatures:
    """MinHash signatures (and optionally the shingle ids, content fingerprints) of a batch.

    ``jobs > 1`` splits the batch into chunks run on that many threads; the kernel releases the
    GIL, and each chunk's NFKC and encoding happens on its worker thread too. The result does
    not depend on ``jobs``. ``with_fingerprints`` adds :func:`fingerprints` of the texts (with
    ``shingle_params.normalize``) at little extra cost; ``with_simhashes`` the word simhashes
    (xxh3 features) and word counts, from the same split of the words.
    """
    _check(shingle_params)
    texts = _as_sequence(texts)
    args = _signature_args(shingle_params, minhash_params, with_ids, with_fingerprints, with_simhashes)
    norm = shingle_params.normalize
    ranges, parts = _map_chunks(texts, norm, jobs, lambda data, offsets: _kernel.signatures(data, offsets, *args))
    return _assemble(len(texts), minhash_params.num_perm, ranges, parts, with_ids, with_fingerprints)


def signatures_of_utf8(data: bytes, shingle_params: ShingleParams = ShingleParams(),
                       minhash_params: MinHashParams = MinHashParams()) -> Signatures:
    """:func:`signatures` (with shingle ids) of one text given as the bytes the kernel reads
    (:func:`encode_for_kernel`), in one kernel call on this thread: for one document the batch
    path's chunking and joining cost more than the sketch itself."""
    _check(shingle_params)
    args = _signature_args(shingle_params, minhash_params, True, False)
    part = _kernel.signatures(data, np.array([0, len(data)], dtype=np.int64), *args)
    return _assemble(1, minhash_params.num_perm, [(0, 1)], [part], True, False)


def signatures_encoded(
    segments: Sequence[tuple],
    shingle_params: ShingleParams = ShingleParams(),
    minhash_params: MinHashParams = MinHashParams(),
    *,
    jobs: int = 1,
    with_ids: bool = False,
    with_fingerprints: bool = False,
    with_simhashes: bool = False,
) -> Signatures:
    """:func:`signatures` of texts given as the bytes the kernel reads, in place: ``segments``
    is a list of ``(data, offsets)`` pairs, and the texts are ``data[offsets[i]:offsets[i+1]]``
    of each in turn, each the UTF-8 (``surrogatepass``) of a text after NFKC when
    ``shingle_params.normalize`` asks for NFKC (:func:`encode_for_kernel`, :func:`encode_texts`)."""
    jobs = max(1, int(jobs))
    if jobs == 1:
        return submit_signatures_encoded(None, segments, shingle_params, minhash_params, jobs=1, with_ids=with_ids,
                                         with_fingerprints=with_fingerprints, with_simhashes=with_simhashes).result()
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="neardup-kernel") as pool:
        return submit_signatures_encoded(pool, segments, shingle_params, minhash_params, jobs=jobs,
                                         with_ids=with_ids, with_fingerprints=with_fingerprints,
                                         with_simhashes=with_simhashes).result()


class PendingSignatures:
    """The signatures of a batch, its chunks done or submitted to a thread pool."""

    def __init__(self, n: int, m: int, ranges, parts, futures, with_ids: bool, with_fingerprints: bool):
        self._args = (n, m, ranges, with_ids, with_fingerprints)
        self._parts, self._futures = parts, futures

    def result(self) -> Signatures:
        n, m, ranges, with_ids, with_fingerprints = self._args
        parts = self._parts if self._futures is None else [f.result() for f in self._futures]
        return _assemble(n, m, ranges, parts, with_ids, with_fingerprints)


def submit_signatures_encoded(pool, segments: Sequence[tuple], shingle_params: ShingleParams = ShingleParams(),
                              minhash_params: MinHashParams = MinHashParams(), *, jobs: int = 1,
                              with_ids: bool = False, with_fingerprints: bool = False,
                              with_simhashes: bool = False) -> PendingSignatures:
    """:func:`signatures_encoded`, its chunks (about a quarter of the batch over ``jobs``) run as
    tasks of ``pool`` (or here, without one). A caller that submits its next batch before
    taking this one's result keeps every thread busy across batches: no thread waits for the
    last chunk of a batch while another one is ready."""
    _check(shingle_params)
    args = _signature_args(shingle_params, minhash_params, with_ids, with_fingerprints, with_simhashes)
    segments = [(data, np.ascontiguousarray(offsets, dtype=np.int64)) for data, offsets in segments]
    n = sum(offsets.size - 1 for _, offsets in segments)
    jobs = max(1, int(jobs))
    total = sum(int(offsets[-1] - offsets[0]) for _, offsets in segments)
    target = _CHUNK_BYTES if jobs == 1 else max(1 << 16, min(_CHUNK_BYTES, total // (4 * jobs) + 1))
    # chunks of about target bytes, each a list of (data, offsets) runs of whole texts
    chunks: list[list[tuple]] = [[]]
    ranges: list[tuple[int, int]] = []
    size = start = doc = 0
    for data, offsets in segments:
        a = 0
        while a < offsets.size - 1:
            # the texts of this segment that fill the current chunk up to target (one at least)
            b = int(np.searchsorted(offsets, offsets[a] + (target - size), side="left"))
            b = min(max(b, a + 1), offsets.size - 1)
            chunks[-1].append((data, offsets[a : b + 1]))
            size += int(offsets[b] - offsets[a])
            doc += b - a
            a = b
            if size >= target:
                ranges.append((start, doc))
                chunks.append([])
                size, start = 0, doc
    if chunks[-1] or not ranges:
        ranges.append((start, doc))
    else:
        chunks.pop()
    run = _kernel.signatures_segments
    m = minhash_params.num_perm
    if pool is None:
        return PendingSignatures(n, m, ranges, [run(c, *args) for c in chunks], None, with_ids, with_fingerprints)
    futures = [pool.submit(run, c, *args) for c in chunks]
    return PendingSignatures(n, m, ranges, None, futures, with_ids, with_fingerprints)


def encode_for_kernel(text: str, norm: NormalizeParams) -> bytes:
    """The bytes :func:`signatures_encoded` expects for ``text``."""
    return _encode(text, norm)


def encode_texts(texts: Sequence[str], norm: NormalizeParams) -> tuple[bytes, np.ndarray]:
    """The bytes :func:`signatures_encoded` expects for ``texts``, joined: (bytes, int64 offsets)."""
    texts = _as_sequence(texts)
    if not texts:
        return b"", np.zeros(1, dtype=np.int64)
    return _encode_range(texts, 0, len(texts), norm)


def _signature_args(shingle_params: ShingleParams, minhash_params: MinHashParams, with_ids: bool,
                    with_fingerprints: bool, with_simhashes: bool = False) -> tuple:
    a, b = _coefficients(minhash_params.family, minhash_params.num_perm, minhash_params.seed)
    norm = shingle_params.normalize
    table, fold = _kernel_tables(norm)
    return (
        table, _UNITS[shingle_params.unit], shingle_params.k, not norm.remove_punctuation,
        a, b, _FAMILIES[minhash_params.family], bool(with_ids), fold, bool(with_fingerprints),
        _HASHES[shingle_params.hash], bool(with_simhashes),
    )


def _assemble(n: int, m: int, ranges, parts, with_ids: bool, with_fingerprints: bool) -> Signatures:
    """One Signatures from the kernel's results over contiguous ranges of the batch."""
    values = np.empty((n, m), dtype=np.uint64)
    n_shingles = np.empty(n, dtype=np.int64)
    fps = np.empty(n, dtype=np.uint64) if with_fingerprints else None
    # the parts have a fifth element, the (simhash, words) pairs, when asked for (all or none)
    with_simhashes = bool(parts) and len(parts[0]) == 5
    simhashes = np.empty(n, dtype=np.uint64) if with_simhashes else None
    words = np.empty(n, dtype=np.int64) if with_simhashes else None
    for (s, e), part in zip(ranges, parts):
        vals, counts, _, fp = part[:4]
        values[s:e] = np.frombuffer(vals, dtype=np.uint64).reshape(e - s, m)
        n_shingles[s:e] = np.frombuffer(counts, dtype=np.int64)
        if fps is not None:
            fps[s:e] = np.frombuffer(fp, dtype=np.uint64)
        if with_simhashes:
            pairs = np.frombuffer(part[4], dtype=np.uint64).reshape(e - s, 2)
            simhashes[s:e] = pairs[:, 0]
            words[s:e] = pairs[:, 1].view(np.int64)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(n_shingles, out=offsets[1:])
    id_parts = tuple(np.frombuffer(p[2], dtype=np.uint64) for p in parts) if with_ids else None
    return Signatures(values=values, n_shingles=n_shingles, offsets=offsets, id_parts=id_parts, fingerprints=fps,
                      simhashes=simhashes, words=words)


def fingerprints(texts: Sequence[str], normalize: NormalizeParams = NormalizeParams(), *, jobs: int = 1) -> np.ndarray:
    """Content fingerprints of a batch (uint64), as :func:`neardup.exact.fingerprint.fingerprint`
    with 0 for a text without tokens (where that returns None)."""
    if _kernel is None:
        from .errors import ConfigError

        raise ConfigError("the compiled kernel neardup._kernel is not built")
    texts = _as_sequence(texts)
    table, fold = _kernel_tables(normalize)
    keep = not normalize.remove_punctuation
    ranges, parts = _map_chunks(
        texts, normalize, jobs, lambda data, offsets: _kernel.fingerprints(data, offsets, table, keep, fold)
    )
    out = np.empty(len(texts), dtype=np.uint64)
    for (s, e), fp in zip(ranges, parts):
        out[s:e] = np.frombuffer(fp, dtype=np.uint64)
    return out


def _over_pairs(call, i: np.ndarray, j: np.ndarray, jobs: int) -> np.ndarray:
    """``call(i, j)`` (a kernel function of pairs that releases the GIL, returning int64 bytes)
    on ``jobs`` threads over contiguous slices of the pairs, concatenated."""
    i = np.ascontiguousarray(i, dtype=np.int64).ravel()
    j = np.ascontiguousarray(j, dtype=np.int64).ravel()
    jobs = max(1, min(int(jobs), i.size // 4096))  # a thread for less is not worth starting
    if jobs == 1:
        return np.frombuffer(call(i, j), dtype=np.int64)
    cuts = np.linspace(0, i.size, jobs + 1).astype(np.int64)
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="neardup-kernel") as pool:
        parts = list(pool.map(lambda k: call(i[cuts[k] : cuts[k + 1]], j[cuts[k] : cuts[k + 1]]), range(jobs)))
    return np.frombuffer(b"".join(parts), dtype=np.int64)


def intersections(ids, offsets: np.ndarray, i: np.ndarray, j: np.ndarray, *, jobs: int = 1) -> np.ndarray:
    """``|A ∩ B|`` (int64) for each pair ``(i[q], j[q])`` of sorted distinct id runs, run ``r``
    being ``ids[offsets[r]:offsets[r+1]]``, as :func:`neardup.cluster.candidates.exact_overlaps`.
    ``ids`` may be a list of uint64 arrays read in place as their concatenation."""
    if _kernel is None:
        from .errors import ConfigError

        raise ConfigError("the compiled kernel neardup._kernel is not built")
    ids = _pieces(ids)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    return _over_pairs(lambda a, b: _kernel.intersections(ids, offsets, a, b), i, j, jobs)


def agreements(values, i: np.ndarray, j: np.ndarray, *, jobs: int = 1) -> np.ndarray:
    """Equal positions (int64) of rows ``i[q]`` and ``j[q]`` of the (n, m) uint64 (or uint32) signature matrix,
    as ``(values[i] == values[j]).sum(axis=1)`` without gathering the rows. ``values`` may be a
    list of (n_k, m) matrices read in place as their concatenation."""
    if _kernel is None:
        from .errors import ConfigError

        raise ConfigError("the compiled kernel neardup._kernel is not built")
    pieces = _pieces(values, narrow=True)
    m = pieces[0].shape[1] if pieces else 1
    if any(p.ndim != 2 or p.shape[1] != m for p in pieces):
        raise ValueError("signature pieces must be matrices of equal width")
    return _over_pairs(lambda a, b: _kernel.agreements(pieces, m, a, b), i, j, jobs)


def _pieces(values, *, narrow: bool = False) -> list[np.ndarray]:
    """One contiguous uint64 array, or a list of them, as a list (no copy when already so). With
    ``narrow``, pieces that are all uint32 stay uint32 (signatures of a 32-bit family)."""
    parts = values if isinstance(values, (list, tuple)) else [values]
    dtype = np.uint32 if narrow and parts and all(np.asarray(p).dtype == np.uint32 for p in parts) else np.uint64
    return [np.ascontiguousarray(p, dtype=dtype) for p in parts]


# -- the kernel's other entry points -------------------------------------------------------------
# This module is the one importer of the compiled kernel: the modules with a numpy path of their
# own ask available() (or the function's own check) and call these.


def band_keys(signatures: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """The kernel's :func:`neardup.lsh.banding.band_keys` of C-contiguous uint64 ``signatures``
    (n, at least ``bands * rows``): an (n, bands) uint64 array."""
    raw = _kernel.band_keys(signatures, signatures.shape[1], bands, rows)
    return np.frombuffer(raw, dtype=np.uint64).reshape(signatures.shape[0], bands)


def band_pairs(keys: np.ndarray, window: int) -> tuple[bytes, int, int, int]:
    """The kernel's candidate pairs of C-contiguous uint64 band ``keys`` (n, bands): the pairs
    packed as int64 ``i << 32 | j`` (bytes), the buckets shared, the largest one, and the
    buckets over ``window`` (see :func:`neardup.cluster.candidates.candidate_pairs`)."""
    return _kernel.band_pairs(keys, keys.shape[1], window)


def encode_posting_blocks(keys: np.ndarray) -> list[tuple[int, bytes]]:
    """The kernel's coder of sorted distinct int64 run keys (:func:`neardup.store.runs.encode_blocks`)."""
    return _kernel.encode_posting_blocks(keys)


def decode_posting_blocks(blocks: list[tuple[int, bytes]]) -> tuple[bytes, bytes]:
    """The kernel's decoder of posting blocks (:func:`neardup.store.runs.decode_many`); ValueError
    for a block that cannot be one."""
    return _kernel.decode_posting_blocks(blocks)


def gather_function():
    """The kernel's ``gather`` (the result lines' writer, :mod:`neardup.io.write.result_lines`), or None
    when the kernel is not built (or is a build without it)."""
    return getattr(_kernel, "gather", None)
