"""Differential fuzz targets for neardup's C extensions, one function of bytes per target.

Each target turns its input into a call of a compiled function and checks the answer against
an oracle; a mismatch raises AssertionError, a memory error is caught by the sanitizers of a
sanitized build (fuzz/build_sanitized.sh). The same functions are driven by atheris
(coverage-guided, fuzz/run_atheris.py), by hypothesis (tests/kernel/test_fuzz.py) and by the replay
of a corpus, so a finding of one reproduces with the others.

=============  ==========================================  =====================================
target         compiled code                               oracle
=============  ==========================================  =====================================
jsonl          neardup._jsonl.scan                         orjson, record for record (the
                                                           reader's rules: id_str, isspace)
kernel         neardup._kernel units / signatures /        the pure-Python tokenizer, shingles,
               fingerprints, simhashes, AVX2 and scalar    XXH3 ids, permutations, BLAKE2b, SimHash;
                                                           AVX2 against scalar on raw bytes
hamming        neardup._hamming.Prober (SimhashIndex)      brute force over the live rows
kernel_args    every function of neardup._kernel, with     a Python exception or an answer,
               hostile offsets, pairs, pieces and sizes    never a crash
htmlscan       neardup._htmlscan scan / lines / stats /    their Python twins in
               is_utf8 (the markup pre-scan of web pages)  neardup.text.html_scan
postings       neardup._kernel encode_posting_blocks /     neardup.store.runs' numpy coder;
               decode_posting_blocks (the index's runs)    raw blocks: numpy, or ValueError
=============  ==========================================  =====================================

The input is read by :class:`Input`, a deterministic byte reader (no randomness of its own):
the same bytes always make the same calls.
"""

from __future__ import annotations

import struct

import numpy as np

#: the targets by name, filled by @target
TARGETS: dict = {}


def target(fn):
    TARGETS[fn.__name__] = fn
    return fn


class Input:
    """Reads choices from the front of the fuzzer's bytes; past the end everything is 0."""

    def __init__(self, data: bytes):
        self.data = bytes(data)
        self.pos = 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            return 0
        self.pos += 1
        return self.data[self.pos - 1]

    def int(self, lo: int, hi: int) -> int:
        """An int in [lo, hi] from up to 8 bytes."""
        span = hi - lo + 1
        nbytes = max(1, min(8, (span.bit_length() + 7) // 8))
        v = 0
        for _ in range(nbytes):
            v = (v << 8) | self.byte()
        return lo + v % span

    def flag(self) -> bool:
        return bool(self.byte() & 1)

    def take(self, n: int) -> bytes:
        out = self.data[self.pos : self.pos + n]
        self.pos += len(out)
        return out

    def rest(self) -> bytes:
        return self.take(len(self.data))

    def u64s(self, n: int) -> np.ndarray:
        raw = self.take(8 * n)
        raw += b"\0" * (8 * n - len(raw))
        return np.frombuffer(raw, dtype="<u8").astype(np.uint64)


# --- JSONL scanner against orjson --------------------------------------------------------

#: (id field, text field, URL field or None): the URL field is taken as the HTML reader takes it
_FIELDS = [(b"id", b"text", b"url"), (b"id", b"text", None), (b"id", b"text", b"url"), (b"url", b"body", None),
           (b"t", b"id", b"url"), (b"", b"x", b"id")]


@target
def jsonl(data: bytes) -> None:
    """Every line the scanner takes is the record orjson and the reader's rules make of it."""
    import orjson

    from neardup.io.read import id_string
    from neardup.io.read import jsonl as jsonl_reader
    from neardup.text.nfkc import unsafe_table

    inp = Input(data)
    sel = inp.byte()
    idf, tf, uf = _FIELDS[sel % len(_FIELDS)]
    choice = inp.byte()
    max_line = -1 if choice < 192 else choice % 64
    table = unsafe_table() if inp.flag() else None
    block = inp.rest()
    jl = jsonl_reader._jsonl  # the scanner the reader uses (a test swaps it for a lying one)
    # the texts into a caller's buffer (the HTML reader's), filled with junk and longer than needed
    out = bytearray(b"\xaa" * (len(block) + sel % 7)) if sel >= 128 else None
    scanned = jl.scan(block, idf, tf, table, max_line, uf, out)
    kinds, ends, text, toffs, ids, ioffs, lengths, spans, urls, uoffs = scanned
    if out is not None:
        assert text is out and len(out) == len(block) + sel % 7
    kinds = bytes(kinds)
    ends = np.frombuffer(ends, dtype=np.int64).tolist()
    toffs = np.frombuffer(toffs, dtype=np.int64).tolist()
    ioffs = np.frombuffer(ioffs, dtype=np.int64).tolist()
    uoffs = np.frombuffer(uoffs, dtype=np.int64).tolist()
    lengths = np.frombuffer(lengths, dtype=np.int64).tolist()
    spans = np.frombuffer(spans, dtype=np.int64).tolist()

    # lines as readline() gives them
    want_ends, at = [], 0
    while at < len(block):
        nl = block.find(b"\n", at)
        at = len(block) if nl < 0 else nl + 1
        want_ends.append(at)
    assert ends == want_ends, (ends, want_ends)
    n = len(ends)
    assert len(kinds) == n and len(lengths) == n and len(spans) == 2 * n
    assert len(toffs) == n + 1 and len(ioffs) == n + 1 and len(uoffs) == n + 1
    if uf is None:
        assert len(urls) == 0 and all(kind & jl.NO_URL or kind & jl.FALLBACK for kind in kinds)
    id_field, text_field = idf.decode(), tf.decode()
    start = 0
    for i in range(n):
        line = block[start : ends[i]]
        start = ends[i]
        kind = kinds[i]
        if kind & jl.FALLBACK:
            assert kind == jl.FALLBACK, kind  # the only flag then
            assert toffs[i] == toffs[i + 1] and ioffs[i] == ioffs[i + 1] and uoffs[i] == uoffs[i + 1]
            continue
        body = line[:-1] if line.endswith(b"\n") else line
        if max_line >= 0:  # measured as the reader measures it: without "\r\n"
            size = len(body) - (line.endswith(b"\r\n"))
            assert size <= max_line, (size, max_line)
        obj = orjson.loads(body)  # the scanner took it: orjson must too
        assert type(obj) is dict, body
        t = obj.get(text_field)
        assert type(t) is str and t and not t.isspace(), body
        got_text = text[toffs[i] : toffs[i + 1]]
        assert got_text == t.encode("utf-8"), (body, got_text)
        assert lengths[i] == len(t)
        ident = obj.get(id_field)
        no_id = ident is None or ident == ""
        assert bool(kind & jl.NO_ID) == no_id, (body, kind)
        got_id = ids[ioffs[i] : ioffs[i + 1]].decode("utf-8")
        if not no_id:
            assert got_id == id_string(ident, "?"), (body, got_id)
        url = obj.get(uf.decode()) if uf is not None else None
        assert bool(kind & jl.NO_URL) == (type(url) is not str), (body, kind)
        got_url = urls[uoffs[i] : uoffs[i + 1]]
        assert got_url == (url.encode("utf-8") if type(url) is str else b""), (body, got_url)
        if table is not None:
            flagged = [k for k, c in enumerate(t) if table[ord(c)]]
            assert bool(kind & jl.FLAGGED) == bool(flagged), body
            if flagged:
                lo, hi = spans[2 * i], spans[2 * i + 1]
                first = len(t[: flagged[0]].encode("utf-8"))
                last = len(t[: flagged[-1] + 1].encode("utf-8"))
                assert lo <= first and last <= hi <= len(got_text), (body, lo, hi, first, last)
        else:
            assert not kind & jl.FLAGGED


# --- kernel against the pure-Python definitions, AVX2 against scalar ----------------------

def _with_simd(kernel, on: bool, fn):
    prev = kernel.set_simd(on)
    try:
        return fn()
    finally:
        kernel.set_simd(prev)


@target
def kernel(data: bytes) -> None:
    """Shingle ids, MinHash, fingerprints and word simhashes of the kernel equal the pure-Python ones."""
    from neardup import _kernel, _native
    from neardup.exact.fingerprint import fingerprint
    from neardup.hashing import hash64
    from neardup.params import FAMILIES, MinHashParams, NormalizeParams, ShingleParams
    from neardup.shingle import shingles
    from neardup.sketch.permutations import family_for
    from neardup.sketch.simhash import SimHash
    from neardup.text.tokenize import words

    inp = Input(data)
    unit = ("word", "char", "line")[inp.byte() % 3]
    k = inp.int(1, 5)
    f = inp.byte()
    norm = NormalizeParams(nfkc=bool(f & 1), casefold=bool(f & 2), remove_punctuation=bool(f & 4))
    # the shingle hash from the flags' next bits, so that the seeds keep their layout
    sp = ShingleParams(k=k, unit=unit, normalize=norm, hash=("xxh3", "rabin40", "rabin64")[(f >> 3) % 3])
    if not _native.supports(sp):
        return
    family = FAMILIES[inp.byte() % len(FAMILIES)]
    mp = MinHashParams(num_perm=inp.int(1, 9), seed=inp.int(0, 1 << 16), family=family)
    cut = inp.int(0, 255)
    raw = inp.rest()
    # lone surrogates (surrogateescape) included: the kernel reads their surrogatepass UTF-8
    text = raw.decode("utf-8", "surrogateescape")
    texts = [text, text[: cut % (len(text) + 1)]]

    def reference(t: str) -> np.ndarray:
        strings = shingles(t, sp)
        return np.unique(np.fromiter((hash64(s, sp.hash) for s in strings), dtype=np.uint64, count=len(strings)))

    want_ids = [reference(t) for t in texts]
    perm = family_for(family, mp.num_perm, mp.seed)
    max64 = np.uint64(0xFFFFFFFFFFFFFFFF)
    want_sig = np.stack([perm.apply(ids).min(axis=1) if ids.size else np.full(mp.num_perm, max64, dtype=np.uint64)
                         for ids in want_ids])
    want_fps = np.array([fingerprint(t, norm) or 0 for t in texts], dtype=np.uint64)
    want_words = [words(t, norm) for t in texts]
    want_sh = [(SimHash.from_text(t, hash="xxh3", normalize=norm).value if w else 0, len(w))
               for t, w in zip(texts, want_words)]
    # One kernel call per code path (the per-call set-up dominates under the sanitizers): the
    # texts as the kernel reads them (NFKC'd by _native), then the raw bytes, malformed UTF-8
    # included, which have no Python definition: there AVX2 and scalar must agree.
    data, offsets = _native.encode_texts(texts, norm)
    args = _native._signature_args(sp, mp, True, True, True)
    raw_off = np.array([0, cut % (len(raw) + 1), len(raw)], dtype=np.int64)
    segments = [(data, offsets), (raw, raw_off)]
    out = {}
    for on in (True, False):
        values, counts, ids, fps, shs = _with_simd(_kernel, on, lambda: _kernel.signatures_segments(segments, *args))
        shs = np.frombuffer(shs, dtype=np.uint64).reshape(4, 2)
        values = np.frombuffer(values, dtype=np.uint64).reshape(4, mp.num_perm)
        counts = np.frombuffer(counts, dtype=np.int64)
        ids = np.frombuffer(ids, dtype=np.uint64)
        fps = np.frombuffer(fps, dtype=np.uint64)
        assert np.array_equal(values[:2], want_sig), (texts, on)
        assert counts[0] == want_ids[0].size and counts[1] == want_ids[1].size, (texts, on)
        assert np.array_equal(ids[: counts[0]], want_ids[0]), (text, on)
        assert np.array_equal(ids[counts[0] : counts[0] + counts[1]], want_ids[1]), (texts[1], on)
        assert np.array_equal(fps[:2], want_fps), (texts, on)
        assert [tuple(r) for r in shs[:2].tolist()] == want_sh, (texts, on)
        out[on] = (values[2:].tobytes(), counts[2:].tobytes(), ids[counts[0] + counts[1] :].tobytes(),
                   fps[2:].tobytes(), shs[2:].tobytes())
    assert out[True] == out[False], raw


# --- Hamming probe against brute force ----------------------------------------------------

@target
def hamming(data: bytes) -> None:
    """SimhashIndex.query (the compiled probe) equals brute force over the live fingerprints."""
    from neardup.index import SimhashIndex

    inp = Input(data)
    k = inp.int(0, 7)
    # few blocks beyond k: C(B, k) tables, and a layout costs their square (cached by layout_for)
    blocks = None if inp.flag() or k == 0 else inp.int(k + 1, k + 2)
    buffer_size = inp.int(1, 8)
    nbase = inp.int(1, 4)
    bases = inp.u64s(nbase).tolist()
    fps = []
    n = inp.int(0, 48)
    for _ in range(n):
        fp = bases[inp.byte() % nbase]
        for _ in range(inp.byte() % 10):  # a few bits away from a base, some within k
            fp ^= 1 << (inp.byte() % 64)
        fps.append(fp)
    index = SimhashIndex(k, expected_size=n, blocks=blocks, buffer_size=buffer_size)
    live = [True] * n
    at = 0
    while at < n:  # in several adds, so that sorted segments and the unsorted tail both hold rows
        step = inp.int(1, max(1, n - at))
        index.add(list(range(at, at + step)), np.array(fps[at : at + step], dtype=np.uint64))
        at += step
    for _ in range(inp.int(0, 3)):
        r = inp.byte() % max(1, n)
        if n and live[r]:
            index.remove(r)
            live[r] = False
    if inp.flag():
        index.compact()
    queries = [bases[inp.byte() % nbase] ^ (1 << (inp.byte() % 64)) for _ in range(inp.int(1, 4))]
    queries += fps[:2]

    def brute(q):
        found = [((q ^ fp).bit_count(), row) for row, fp in enumerate(fps) if live[row] and (q ^ fp).bit_count() <= k]
        return [(row, d) for d, row in sorted(found)]

    want = [brute(q) for q in queries]
    got = [index.query(q) for q in queries]
    assert got == want, (k, blocks, fps, queries, got, want)
    assert index.query_many(np.array(queries, dtype=np.uint64)) == want


# --- the kernel's argument checks: hostile arguments give an exception, never a crash ----

def _i64(inp: Input, n: int, mode: int, limit: int) -> np.ndarray:
    """n int64 values: in range, near the edges, or anything."""
    raw = inp.u64s(n).view(np.int64)
    if mode == 0:
        return raw % max(1, limit)
    if mode == 1:
        return np.array([(-1, 0, limit - 1, limit, limit + 1, 1 << 62, -(1 << 63))[int(v) % 7] for v in raw],
                        dtype=np.int64)
    return raw.copy()


def _pieces(inp: Input, values: np.ndarray):
    if inp.flag():
        return values
    cuts = sorted({inp.int(0, values.size) for _ in range(inp.int(0, 3))})
    return [values[a:b] for a, b in zip([0, *cuts], [*cuts, values.size])]


_BIG = (0, 1, 2, 7, 8, 9, 1 << 31, 1 << 32, (1 << 61) - 1, 1 << 61, 1 << 62, (1 << 63) - 1, -1, -(1 << 63))


def _size(inp: Input, small: int) -> int:
    c = inp.byte()
    return c % (small + 1) if c < 160 else _BIG[c % len(_BIG)]


@target
def kernel_args(data: bytes) -> None:
    """Hostile offsets, pairs, piece lists, tables and sizes: an exception or an answer."""
    from neardup import _kernel, _native

    inp = Input(data)
    which = inp.byte() % 12
    mode = inp.byte() % 3
    n = inp.int(0, 12)
    vals = np.sort(inp.u64s(inp.int(0, 40)) % np.uint64(50))
    try:
        if which == 0:  # intersections
            off = _i64(inp, n + 1, mode, vals.size + 1)
            if mode == 0:
                off.sort()
            np_ = inp.int(0, 6)
            _kernel.intersections(_pieces(inp, vals), off, _i64(inp, np_, mode, n), _i64(inp, np_, mode, n))
        elif which == 1:  # agreements
            m = _size(inp, 5)
            np_ = inp.int(0, 6)
            _kernel.agreements(_pieces(inp, vals), m, _i64(inp, np_, mode, n), _i64(inp, np_ + (mode == 2), mode, n))
        elif which == 2:  # band_keys
            _kernel.band_keys(vals, _size(inp, 10), _size(inp, 4), _size(inp, 4))
        elif which == 3:  # band_pairs
            _kernel.band_pairs(vals, _size(inp, 6), _size(inp, 4))
        elif which == 4:  # minhash
            off = _i64(inp, n + 1, mode, vals.size + 1)
            if mode == 0:
                off.sort()
            m = inp.int(0, 5)
            a, b = inp.u64s(m), inp.u64s(m + (mode == 2))
            _kernel.minhash(vals, off, a, b, _size(inp, 3))
        elif which in (5, 6):  # signatures, signatures_segments
            data_ = inp.take(inp.int(0, 200))
            off = _i64(inp, n + 1, mode, len(data_) + 1)
            if mode == 0:
                off.sort()
            table = _native._table() if inp.byte() < 200 else np.zeros(inp.int(0, 300), dtype=np.uint8)
            fold = None
            if inp.flag():
                fold = inp.u64s(inp.int(0, 8)).view(np.uint32).copy()
                if inp.flag():
                    fold = np.sort(fold.reshape(-1, 4) % np.uint32(0x110000), axis=0).reshape(-1)
            m = inp.int(0, 5)
            a, b = inp.u64s(m) >> np.uint64(inp.int(0, 64)), inp.u64s(m) >> np.uint64(inp.int(0, 64))
            rest = (table, _size(inp, 3), _size(inp, 6), inp.flag(), a, b, _size(inp, 3), inp.flag(), fold,
                    inp.flag(), 0, inp.flag())  # ..., with_fingerprints, hash xxh3, with_simhashes
            if which == 5:
                _kernel.signatures(data_, off, *rest)
            else:
                _kernel.signatures_segments([(data_, off), (data_[:5], off[:2])], *rest)
        elif which == 7:  # fingerprints
            data_ = inp.take(inp.int(0, 200))
            off = _i64(inp, n + 1, mode, len(data_) + 1)
            if mode == 0:
                off.sort()
            _kernel.fingerprints(data_, off, _native._table(), inp.flag())
        elif which == 8:  # utf8_join
            texts = [inp.take(inp.int(0, 12)).decode("utf-8", "surrogateescape") for _ in range(n)]
            if mode == 2 and texts:
                texts[inp.byte() % len(texts)] = inp.byte()  # not a str
            table = None if inp.flag() else np.zeros(inp.int(0, 2) * 0x88000, dtype=np.uint8)
            _kernel.utf8_join(texts, _size(inp, n), _size(inp, n), table)
        elif which == 9:  # units, shingle_ids
            data_ = inp.take(inp.int(0, 200))
            _kernel.units(data_, _native._table(), _size(inp, 3), inp.flag())
            _kernel.shingle_ids(data_, _native._table(), _size(inp, 3), _size(inp, 6), inp.flag())
        elif which == 10:  # set_max_doc_bytes and a document over the limit
            prev = _kernel.max_doc_bytes()
            try:
                _kernel.set_max_doc_bytes(_size(inp, 64))
                _kernel.shingle_ids(inp.take(100), _native._table(), 0, 3, False)
            finally:
                _kernel.set_max_doc_bytes(prev)
        else:  # the Hamming probe's constructor with hostile arrays
            _hostile_prober(inp, vals, mode)
    except (ValueError, TypeError, IndexError, OverflowError, MemoryError, struct.error, BufferError):
        pass


def _hostile_prober(inp: Input, vals: np.ndarray, mode: int) -> None:
    from neardup import _hamming

    k = _size(inp, 8)
    nt = inp.int(0, 3)
    moves = [[tuple(int(x) for x in _i64(inp, 3, mode, 70)) for _ in range(inp.int(0, 3))] for _ in range(nt)]
    segs = []
    for _ in range(inp.int(0, 2)):
        size = inp.int(0, 8)
        keys = np.sort(inp.u64s(size))
        rows = _i64(inp, size, mode, vals.size + 1).astype(np.int32)
        dirs = _i64(inp, inp.int(0, 9), mode, size + 1).astype(np.int32)
        segs.append((keys, rows, dirs, _size(inp, 8), _size(inp, 8), _size(inp, 20)))
    dead = np.zeros(vals.size + (mode == 2), dtype=bool) if inp.flag() else None
    ids = np.arange(vals.size, dtype=np.int64) if inp.flag() else None
    lo, hi = _size(inp, vals.size), _size(inp, vals.size)
    p = _hamming.Prober(k, moves, segs, vals, lo, hi, dead, ids)
    q = int(inp.u64s(1)[0])
    p.query(q)
    p.query_many(np.array([q, q ^ 1], dtype=np.uint64), inp.flag())


# --- the markup scan of web pages against its Python twin ---------------------------------


@target
def htmlscan(data: bytes) -> None:
    """The compiled scan of raw markup (bytes or str), its UTF-8 check, its line breaking and its
    link statistics equal the Python versions in neardup.text.html_scan, for any bytes a crawler
    may fetch (and for str of every width, lone surrogates included)."""
    from neardup import _htmlscan
    from neardup.text import html_scan

    inp = Input(data)
    mode = inp.byte() % 4
    raw = inp.rest()
    if mode == 0:
        assert _htmlscan.is_utf8(raw) == html_scan.is_utf8_python(raw)
        assert _htmlscan.scan(raw) == html_scan.scan_python(raw)
        assert _htmlscan.scan(raw, True) == html_scan.scan_python(raw, True)
        assert _htmlscan.scan(raw, True, True) == html_scan.scan_python(raw, True, True)
        page_fingerprint_invariants(_htmlscan, raw)
        return
    if mode == 3:  # any UTF-16 code units: 2- and 4-byte str, lone surrogates
        text = raw[: len(raw) // 2 * 2].decode("utf-16-le", "surrogatepass")
    else:
        text = raw.decode("utf-8", "replace")
    if mode == 1:
        assert _htmlscan.scan(text) == html_scan.scan_python(text)
        assert _htmlscan.scan(text, True) == html_scan.scan_python(text, True)
        assert _htmlscan.scan(text, False, True) == html_scan.scan_python(text, False, True)
        if not any("\ud800" <= c <= "\udfff" for c in text):  # (lone surrogates have no UTF-8)
            # a str is scanned as its UTF-8: the same fingerprint (charset-independent)
            assert _htmlscan.scan(text, False, True)[5] == _htmlscan.scan(text.encode("utf-8"), False, True)[5]
        page_fingerprint_invariants(_htmlscan, text)
        # what the scan marks is what lines() and stats() read next
        text = _htmlscan.scan(text)[0].decode("utf-8", "replace")
    assert _htmlscan.lines(text) == html_scan.lines_python(text)
    assert _htmlscan.stats(text) == html_scan.stats_python(text)


def page_fingerprint_invariants(scanner, markup) -> None:
    """The whole-page fingerprint (the sixth item of the scan, beside the twins' agreement above):
    a 64-bit int, the same whether or not navigation is cut (the cut rewrites the marked output,
    never what the fingerprint reads), and unchanged by a comment and a script put before the
    markup (neither is visible text, and both are closed before the markup starts)."""
    fp = scanner.scan(markup, False, True)[5]
    assert type(fp) is int and 0 <= fp < 1 << 64
    assert scanner.scan(markup, True, True)[5] == fp
    extra = "<!-- x --><script>var y = 1;</script>"
    prefixed = (extra.encode() + markup) if isinstance(markup, bytes) else extra + markup
    assert scanner.scan(prefixed, False, True)[5] == fp
    # the scan's other answers do not depend on it
    assert scanner.scan(markup, True, True)[:5] == scanner.scan(markup, True)[:5]


# --- the posting runs' block coder against numpy's ---------------------------------------


@target
def postings(data: bytes) -> None:
    """kernel/postings.c against neardup.store.runs' numpy coder: keys of any kind (sorted
    narrow deltas, wide ones, any order) code to numpy's bytes and decode back exactly; blocks
    made of raw bytes (what a damaged or hostile index file holds) decode as numpy decodes each
    alone, or are refused with ValueError when they cannot be blocks, never a crash."""
    from neardup import _kernel
    from neardup.store import runs

    inp = Input(data)
    mode = inp.byte() % 3
    if mode < 2:
        n = inp.int(0, 600)
        bits = 1 + inp.byte() % 64
        raw = inp.u64s(n).view(np.int64)
        if mode == 0:  # sorted, deltas of up to `bits` bits (wrapping past 2**63 as int64 does)
            keys = np.cumsum(raw.view(np.uint64) >> np.uint64(64 - bits)).view(np.int64)
        else:
            keys = raw
        blocks = _kernel.encode_posting_blocks(keys)
        assert blocks == runs.encode_blocks_numpy(keys)
        got, block_of = (np.frombuffer(x, dtype=np.int64) for x in _kernel.decode_posting_blocks(blocks))
        assert np.array_equal(got, keys)
        assert np.array_equal(block_of, np.arange(keys.size) // runs.BLOCK)
        return
    blocks = []
    for _ in range(inp.int(0, 6)):
        first = int(inp.u64s(1)[0]) - (1 << 63)
        blocks.append((first, inp.take(inp.int(0, 40))))
    if inp.flag():
        blocks.append((0, inp.rest()))
    well_formed = all(len(d) >= 2 and 1 <= d[0] <= 64 for _, d in blocks)
    try:
        got, block_of = (np.frombuffer(x, dtype=np.int64) for x in _kernel.decode_posting_blocks(blocks))
    except ValueError:
        assert not well_formed
        return
    assert well_formed
    # the format read bit by bit with Python's integers (a body shorter than its n deltas need
    # reads zeros past its end)
    want = [_block_keys(first, d) for first, d in blocks]
    assert got.tolist() == [k for keys in want for k in keys]
    assert block_of.tolist() == [b for b, keys in enumerate(want) for _ in keys]


def _block_keys(first: int, data: bytes) -> list[int]:
    w, n = data[0], data[1]
    body = int.from_bytes(data[2:], "little")
    key = first % (1 << 64)
    keys = [key]
    for t in range(n):
        key = (key + ((body >> (t * w)) & ((1 << w) - 1))) % (1 << 64)
        keys.append(key)
    return [k - (1 << 64) if k >= 1 << 63 else k for k in keys]
