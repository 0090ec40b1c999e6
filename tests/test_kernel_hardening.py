"""The kernel against hostile callers: other threads changing its arguments while it runs with
the GIL released, sizes whose byte counts overflow, and CPUs with AVX2 but not BMI2.

Each check runs in a child process: the failure these tests guard against is a crash (SEGV,
SIGFPE, SIGILL, or an ASan report), which must fail the test rather than end the test run.
The races are set up so that the other thread writes while the kernel is reading (it waits
for the GIL, which the kernel releases), not timed: every run of a child makes the same
writes, and the checks are on what the kernel returns.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from neardup import _native

pytestmark = pytest.mark.skipif(not _native.available(), reason="neardup._kernel is not built")

#: A hang guard for each child, not a speed limit.
HANG_GUARD_S = 300


def run_child(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=HANG_GUARD_S, env={**os.environ, **(env or {})})


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
