"""The kernel against hostile callers: other threads changing its arguments while it runs with
the GIL released, sizes whose byte counts overflow, and CPUs with AVX2 but not BMI2.

Each check runs in a child process: the failure these tests guard against is a crash (SEGV,
SIGFPE, SIGILL, or an ASan report), which must fail the test rather than end the test run.
The races are set up so that the other thread writes while the kernel is reading (it waits
for the GIL, which the kernel releases), not timed: every run of a child makes the same
writes, and the checks are on what the kernel returns.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import textwrap
import unicodedata

import pytest

from neardup import _native

pytestmark = pytest.mark.skipif(not _native.available(), reason="neardup._kernel is not built")

#: A hang guard for each child, not a speed limit.
HANG_GUARD_S = 300


def run_child(code: str, env: dict | None = None, timeout: float = HANG_GUARD_S) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def expect_ok(proc: subprocess.CompletedProcess, last_line: str) -> None:
    detail = f"exit {proc.returncode}\nstdout: {proc.stdout[-2000:]}\nstderr: {proc.stderr[-4000:]}"
    assert proc.returncode == 0, detail
    assert proc.stdout.strip().splitlines()[-1:] == [last_line], detail


# --- utf8_join keeps the texts it encodes alive ------------------------------------------

def test_utf8_join_survives_items_replaced_while_it_encodes():
    # Large strs (mmapped, so that freeing one unmaps it: MALLOC_MMAP_THRESHOLD_ fixes glibc's
    # threshold) in a list whose items another thread replaces, from the end, while the kernel
    # encodes from the start. Before the fix the kernel read the freed strs: SEGV, or segments
    # of the new content torn into the old. Each segment must be one whole str, old or new.
    code = """
        import threading
        from neardup._kernel import utf8_join

        L, N = 1 << 20, 48
        old, new = "\\u0100" * L, "\\u0101" * L
        enc = {old.encode(): "old", new.encode(): "new"}
        replaced = 0
        for rnd in range(6):
            texts = [("\\u0100" * L)[:] for _ in range(N)]  # distinct objects, held by the list only
            go, stop = threading.Event(), threading.Event()

            def replace():
                global replaced
                go.wait()
                while not stop.is_set():
                    for i in reversed(range(N)):
                        texts[i] = "\\u0101" * L
                        replaced += 1
                        if stop.is_set():
                            break

            t = threading.Thread(target=replace)
            t.start()
            go.set()
            data, offsets, _ = utf8_join(texts, 0, N)
            stop.set()
            t.join()
            seg = 2 * L  # U+0100 and U+0101 are two bytes in UTF-8
            assert len(data) == N * seg, len(data)
            for i in range(N):
                assert data[i * seg:(i + 1) * seg] in enc, f"round {rnd}: text {i} torn"
        assert replaced > 0
        print("ok")
    """
    expect_ok(run_child(code, {"MALLOC_MMAP_THRESHOLD_": "65536"}), "ok")


# --- intersections and agreements read only what they validated --------------------------

_PAIRS_RACE = """
    import threading
    import numpy as np
    from neardup import _kernel

    rng = np.random.default_rng(19)
    n, per, npairs = 2000, 8, 1_500_000
    # runs share values, so that the counts are not all 0
    ids = np.concatenate([np.sort(rng.choice(64, size=per, replace=False)).astype(np.uint64) for _ in range(n)])
    offsets = np.arange(0, n * per + 1, per, dtype=np.int64)
    values = rng.integers(0, 4, size=(n, 16), dtype=np.uint64)
    late = np.arange(npairs - 1, npairs // 2, -997)  # written last to first: the kernel reads them last
    BAD = 1 << 40

    def expected(kind, i, j):
        if kind == "intersections":
            return np.array([np.intersect1d(ids[offsets[a]:offsets[a + 1]], ids[offsets[b]:offsets[b + 1]]).size
                             for a, b in zip(i.tolist(), j.tolist())], dtype=np.int64)
        return (values[i] == values[j]).sum(axis=1).astype(np.int64)

    def call(kind, i, j):
        if kind == "intersections":
            return _kernel.intersections(ids, offsets, i, j)
        return _kernel.agreements(values, 16, i, j)

    refused = 0
    for kind in ("intersections", "agreements"):
        for rnd in range(3):
            i = rng.integers(0, n, size=npairs, dtype=np.int64)
            j = rng.integers(0, n, size=npairs, dtype=np.int64)
            want = expected(kind, i[late], j[late])
            go = threading.Event()

            def spoil():
                go.wait()
                for q in late.tolist():
                    i[q] = BAD

            t = threading.Thread(target=spoil)
            t.start()
            go.set()
            try:
                out = np.frombuffer(call(kind, i, j), dtype=np.int64)
            except ValueError:
                refused += 1  # the writer was first: the copy the kernel checked had BAD in it
            else:
                assert np.array_equal(out[late], want), f"{kind} round {rnd}"
            t.join()
    print("ok")
"""


def test_intersections_and_agreements_survive_pairs_rewritten_while_they_run():
    # Before the fix the kernel validated i and j, released the GIL and read them again:
    # the BAD row index written meanwhile was used (SEGV reading offsets[BAD], or a NULL row).
    expect_ok(run_child(_PAIRS_RACE), "ok")


def test_agreements_and_intersections_refuse_pieces_not_in_whole_rows():
    import numpy as np

    from neardup import _kernel

    v = np.arange(12, dtype=np.uint64)
    i = np.array([0, 1], dtype=np.int64)
    with pytest.raises(ValueError):
        _kernel.agreements([v[:5], v[5:]], 4, i, i)
    with pytest.raises(ValueError):
        _kernel.intersections([v[:5], v[5:]], np.array([0, 4, 8], dtype=np.int64), i, i)
    with pytest.raises(ValueError):
        _kernel.intersections(v, np.zeros(0, dtype=np.int64), i, i)
    with pytest.raises(ValueError):
        _kernel.intersections(v, np.array([0, 4], dtype=np.int64), i, i[:1])
    with pytest.raises(ValueError):
        _kernel.agreements(v, 4, i.astype(np.int32), i.astype(np.int32))


# --- band_keys and band_pairs check sizes without overflowing ----------------------------

def test_band_functions_refuse_sizes_whose_byte_counts_overflow():
    # 8 * m and 8 * bands wrapped to 0 (SIGFPE in % 0); bands * rows wrapped below m (reads
    # past the row). Each call must raise ValueError.
    code = """
        import numpy as np
        from neardup import _kernel
        keys = np.zeros(8, dtype=np.uint64)
        calls = [
            lambda: _kernel.band_keys(keys, 1 << 61, 1, 1),
            lambda: _kernel.band_keys(keys, 1 << 62, 2, 2),
            lambda: _kernel.band_keys(keys, (1 << 63) - 1, 1, 1),
            lambda: _kernel.band_keys(keys, 8, 1 << 32, 1 << 32),
            lambda: _kernel.band_keys(keys, 8, 2, (1 << 62) + 1),
            lambda: _kernel.band_pairs(keys, 1 << 61, 2),
            lambda: _kernel.band_pairs(keys, 1 << 62, 2),
            lambda: _kernel.band_pairs(keys, (1 << 63) - 1, 2),
        ]
        for k, c in enumerate(calls):
            try:
                c()
            except ValueError:
                print("ValueError", k, flush=True)
            else:
                raise SystemExit(f"call {k} returned")
        print("ok")
    """
    expect_ok(run_child(code), "ok")


def test_band_functions_still_take_empty_and_exact_inputs():
    import numpy as np

    from neardup import _kernel

    empty = np.zeros(0, dtype=np.uint64)
    assert len(_kernel.band_keys(empty, 8, 2, 4)) == 0
    assert len(_kernel.band_pairs(empty, 20, 2)[0]) == 0
    keys = np.arange(24, dtype=np.uint64)
    assert len(_kernel.band_keys(keys, 8, 2, 4)) == 3 * 2 * 8
    assert len(_kernel.band_keys(keys, 24, 24, 1)) == 24 * 8
    with pytest.raises(ValueError):
        _kernel.band_keys(keys, 5, 1, 5)  # 24 values are not rows of 5
    with pytest.raises(ValueError):
        _kernel.band_pairs(keys, 5, 2)


# --- the AVX2 code runs only where every instruction it uses is there ---------------------

def _cpuinfo_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


@pytest.mark.skipif(not _cpuinfo_flags(), reason="no /proc/cpuinfo flags to compare with")
def test_cpu_features_agree_with_the_kernel_of_this_machine():
    from neardup import _kernel

    flags = _cpuinfo_flags()
    got = _kernel.cpu_features()
    # the Linux kernel lists avx2 only when it saves the YMM state (os_avx)
    assert got == {"avx2": "avx2" in flags, "bmi1": "bmi1" in flags, "bmi2": "bmi2" in flags,
                   "popcnt": "popcnt" in flags, "os_avx": "avx" in flags}
    prev = _kernel.set_simd(True)
    try:
        assert (_kernel.simd() == "avx2") == all(got.values())
    finally:
        _kernel.set_simd(prev)


QEMU = shutil.which("qemu-x86_64")
_needs_qemu = pytest.mark.skipif(
    QEMU is None and os.environ.get("NEARDUP_REQUIRE_QEMU") != "1",
    reason="qemu-x86_64 (Debian: qemu-user) is not installed; NEARDUP_REQUIRE_QEMU=1 makes this a failure")

# The emulated process imports the kernel alone, not numpy: numpy's own wheels need more than
# some of these CPUs (numpy 2.4's SIGILLs at import under qemu's Nehalem), and what is under test
# is the kernel's choice of code path. Its inputs (the text's bytes, the class and fold tables)
# are made here and handed over as bytes; its shingle ids come back as hex.
_DISPATCH = """
    import json, pickle, sys
    from neardup import _kernel

    with open(sys.argv[1], "rb") as f:
        calls = pickle.load(f)
    # (getattr: so that the builds before cpu_features() existed run this too)
    out = {"simd": _kernel.simd(), "features": getattr(_kernel, "cpu_features", dict)()}
    for unit, args in calls.items():
        out[unit] = bytes(_kernel.shingle_ids(*args)).hex()
    print(json.dumps(out, sort_keys=True))
"""


def _dispatch_calls():
    """Per unit: the arguments of ``_kernel.shingle_ids`` (bytes and ints only) and the ids it
    must give, computed here in Python (:func:`neardup.shingle.shingles`, xxh3)."""
    import numpy as np

    from neardup import _native
    from neardup.hashing import hash64
    from neardup.params import ShingleParams
    from neardup.shingle import shingles

    # ASCII runs of 64 bytes and more: the AVX2 splitter's path, when it is chosen
    text = "Hello World, this is the splitter's ASCII path; and some caf\u00e9 " * 8
    calls, want = {}, {}
    for unit in ("word", "line", "char"):
        sp = ShingleParams(k=3, unit=unit)
        norm = sp.normalize
        table, fold = _native._kernel_tables(norm)
        calls[unit] = (_native._encode(text, norm), table.tobytes(), _native._UNITS[unit], sp.k,
                       not norm.remove_punctuation, None if fold is None else fold.tobytes(), _native._HASHES[sp.hash])
        want[unit] = np.unique(np.fromiter((hash64(s, "xxh3") for s in shingles(text, sp)), dtype=np.uint64))
    return calls, want


@_needs_qemu
@pytest.mark.skipif(platform.machine() != "x86_64", reason="the dispatch under test is x86-64's")
@pytest.mark.parametrize("cpu, simd", [
    ("Haswell", "avx2"),                # everything the AVX2 code uses
    ("Haswell,-bmi1,-bmi2", "scalar"),  # AVX2 without BMI: SIGILL in split_words_avx2 before the fix
    # AVX2 and BMI1 without BMI2: qemu 7.2 traps BMI2 instructions only when BMI1 is off, so
    # this one shows the choice (simd) rather than a SIGILL; real CPUs trap
    ("Haswell,-bmi2", "scalar"),
    ("Nehalem", "scalar"),              # no AVX at all
])
def test_dispatch_under_emulated_cpus(cpu, simd, tmp_path):
    import pickle

    import numpy as np

    calls, want = _dispatch_calls()
    payload = tmp_path / "calls.pickle"
    payload.write_bytes(pickle.dumps(calls))
    proc = subprocess.run([QEMU, "-cpu", cpu, sys.executable, "-c", textwrap.dedent(_DISPATCH), str(payload)],
                          capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr[-3000:]}"
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["simd"] == simd, got
    for unit, ids in want.items():
        assert np.array_equal(np.frombuffer(bytes.fromhex(got[unit]), dtype=np.uint64), ids), unit


# --- one record over the kernel's limit is skipped, not the run lost ----------------------

def test_dedup_skips_a_record_whose_nfkc_outgrows_the_kernel_limit(tmp_path):
    # U+FDFA is 3 bytes that NFKC makes 33: the record is small as read (under --max-bytes)
    # and over the kernel's limit once normalized. The limit is lowered so that the record
    # can be small; before the fix the kernel's ValueError for its batch ended the run.
    import orjson

    from neardup import _kernel
    from neardup.config import DedupConfig
    from neardup.engines.local.run import Deduplicator

    words = " ".join(f"word{i}" for i in range(300))
    records = [{"id": "a", "text": words}, {"id": "big", "text": "\ufdfa " * 400},
               {"id": "b", "text": words + " more"}, {"id": "c", "text": "another text entirely, short"}]
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    assert len(records[1]["text"].encode()) < 4096 < len(unicodedata.normalize("NFKC", records[1]["text"]).encode())
    prev = _kernel.set_max_doc_bytes(4096)
    try:
        summary = Deduplicator(DedupConfig(), jobs=1).run([str(path)], str(tmp_path / "out"))
    finally:
        _kernel.set_max_doc_bytes(prev)
    rows = {r["id"]: r for r in map(orjson.loads, (tmp_path / "out" / "clusters.jsonl").read_bytes().splitlines())}
    assert rows["big"]["reason"] == "skipped:too_large_nfkc"
    assert summary["skipped_by_reason"] == {"too_large_nfkc": 1}
    assert summary["kept"] + summary["exact_duplicates"] + summary["near_duplicates"] + summary["skipped"] == 4
    assert rows["a"]["cluster"] == rows["b"]["cluster"]  # the rest of the batch was deduplicated


def test_band_pairs_of_no_rows_returns_at_once_whatever_bands():
    # Found by the kernel_args fuzzer: with no keys every bands passes the size check, and the
    # loop over bands ran 2**62 times (a call that never returned). The timeout is a hang guard.
    code = """
        import numpy as np
        from neardup import _kernel
        empty = np.zeros(0, dtype=np.uint64)
        for bands in (1, 1 << 40, 1 << 62, (1 << 63) - 1):
            pairs, shared, largest, capped = _kernel.band_pairs(empty, bands, 2)
            assert (len(pairs), shared, largest, capped) == (0, 0, 0, 0)
        print("ok")
    """
    try:
        proc = run_child(code, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("band_pairs of no rows did not return (hang guard: 120 s)")
    expect_ok(proc, "ok")


# --- a result bytearray that cannot be allocated fails as a MemoryError alone --------------

def test_results_that_cannot_be_allocated_raise_memory_error_and_nothing_else(tmp_path):
    # CPython 3.11's PyByteArray_FromStringAndSize frees its new object, when it cannot allocate
    # the bytes, before it has set the export count: bytearray_dealloc then read what the memory
    # held and, when not 0, printed "SystemError: deallocated bytearray object has exported
    # buffers" (a run out of memory printed it from its reading and sketching threads). Each
    # allocation of each call is failed in turn (_testcapi.set_nomemory) until the call gets
    # through 32 times in a row. Every object comes from glibc's malloc, without its per-thread
    # cache and with new memory filled with 0x5a bytes (the perturb tunable), so that an export
    # count left unset is never 0; what the interpreter prints goes to sys.excepthook (PyErr_Print).
    # The JSONL block reader is failed the same way (a bytearray slice of its own met the flaw).
    pytest.importorskip("_testcapi", reason="the interpreter's test module (allocation failures) is not installed")
    lines = tmp_path / "lines.jsonl"
    lines.write_bytes(b"".join(b'{"id": "%d", "text": "%s"}\n' % (i, b"w" * (i % 37)) for i in range(40)))
    code = """
        import json, sys
        import _testcapi
        import numpy as np
        from neardup import _jsonl, _kernel, _native
        from neardup.io.read.jsonl import BrokenInput, jsonl_blocks
        printed, current = [], [None]
        sys.excepthook = lambda kind, value, tb: printed.append(f"{current[0]}: {kind.__name__}: {value}")
        block = b'{"id": "a", "text": "one two three four"}\\n{"id": 7, "text": "five six"}\\n'
        texts = np.frombuffer(b"one two three four five six seven", dtype=np.uint8).tobytes()
        offsets = np.array([0, 14, 33], dtype=np.int64)
        ids, coeffs = np.arange(6, dtype=np.uint64).tobytes(), np.array([3, 5], dtype=np.uint64).tobytes()
        calls = {
            "line_ends": lambda: _jsonl.line_ends(block),
            "scan": lambda: _jsonl.scan(block, b"id", b"text", None, -1),
            "scan_pages": lambda: _jsonl.scan(block, b"id", b"text", None, -1, b"url"),
            "minhash": lambda: _kernel.minhash(ids, np.array([0, 3, 6], dtype=np.int64).tobytes(), coeffs, coeffs, 1),
            "signatures": lambda: _native.signatures_encoded([(texts, offsets)], with_ids=True, with_fingerprints=True),
            "blocks": lambda: [memoryview(item[0])[: item[1]].tobytes() if type(item) is tuple else item
                               for item in jsonl_blocks(LINES, None, 100)],
        }
        failed = {}
        for name, call in calls.items():
            call()  # the caches (permutations, tables) filled first
            failed[name], current[0] = 0, name
            nth = through = 0
            while through < 32:  # (a failure the code recovers from is a call that gets through)
                _testcapi.set_nomemory(nth, nth + 1)
                try:
                    call()
                    through += 1
                except (MemoryError, BrokenInput, RuntimeError):  # (io: "can't allocate read lock")
                    failed[name] += 1
                    through = 0
                finally:
                    _testcapi.remove_mem_hooks()
                nth += 1
        print(json.dumps({"failed": failed, "printed": printed}))
    """.replace("LINES", repr(str(lines)))
    proc = run_child(code, env={"PYTHONMALLOC": "malloc",
                                "GLIBC_TUNABLES": "glibc.malloc.tcache_count=0:glibc.malloc.perturb=165"})
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr[-3000:]}"
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["printed"] == [], got
    # every call allocates its results (one allocation failed at a time, each a MemoryError)
    assert all(n >= 2 for n in got["failed"].values()), got
