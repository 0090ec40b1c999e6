"""CI-sized runs of the fuzz targets of fuzz/targets.py (the long campaign: fuzz/README.md).

- every committed seed through every target;
- hypothesis drives each target with structured inputs (JSON lines, texts, fingerprints);
- each target catches a planted wrong answer (so that a target cannot pass vacuously);
- a short atheris (libFuzzer) run of each target, when atheris is installed;
- with clang and atheris: the sanitized build (fuzz/build_sanitized.sh) replays the seeds and
  fuzzes each target briefly under ASan and UBSan.

Input counts only, no timing: the runs are a few hundred inputs each.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup import _native

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FUZZ = os.path.join(ROOT, "fuzz")
sys.path.insert(0, FUZZ)

import targets  # noqa: E402

pytestmark = pytest.mark.skipif(not _native.available(), reason="neardup._kernel is not built")

NAMES = sorted(targets.TARGETS)
HANG_GUARD_S = 600
HAVE_ATHERIS = importlib.util.find_spec("atheris") is not None
_needs_atheris = pytest.mark.skipif(
    not HAVE_ATHERIS and os.environ.get("NEARDUP_REQUIRE_ATHERIS") != "1",
    reason="atheris is not installed (pip install atheris); NEARDUP_REQUIRE_ATHERIS=1 makes this a failure")
def _clang_sanitizers() -> bool:
    """Whether clang is here with its ASan run-time library (Debian's libclang-rt-dev; clang
    alone compiles but cannot link -fsanitize=address)."""
    if shutil.which("clang") is None:
        return False
    found = subprocess.run(["clang", "-print-file-name=libclang_rt.asan-x86_64.a"], capture_output=True,
                           text=True).stdout.strip()
    return os.path.isabs(found) and os.path.exists(found)


_needs_clang = pytest.mark.skipif(
    (not HAVE_ATHERIS or not _clang_sanitizers()) and os.environ.get("NEARDUP_REQUIRE_SANITIZERS") != "1",
    reason="clang with its sanitizer run-time (Debian: clang libclang-rt-dev) and atheris are needed for the "
           "sanitized build; NEARDUP_REQUIRE_SANITIZERS=1 makes this a failure")

FAST = settings(max_examples=120, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def seeds(name: str) -> list[bytes]:
    d = os.path.join(FUZZ, "seeds", name)
    return [open(os.path.join(d, f), "rb").read() for f in sorted(os.listdir(d))]


@pytest.mark.parametrize("name", NAMES)
def test_every_seed_passes(name):
    items = seeds(name)
    assert len(items) >= 8
    for data in items:
        targets.TARGETS[name](data)


# --- hypothesis ----------------------------------------------------------------------------

JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                         st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
JSON_VALUES = st.recursive(JSON_SCALARS, lambda kids: st.lists(kids, max_size=3)
                           | st.dictionaries(st.text(max_size=4), kids, max_size=3), max_leaves=6)
TEXTS = st.text(st.one_of(st.sampled_from(list("ab Z9_.,'\"\\\n\t\r\x00é߷ﬁ½Ⅻ\u3000\u00a0日本ǅſİ")),
                          st.characters()), max_size=40)


@st.composite
def jsonl_blocks(draw):
    lines = []
    for _ in range(draw(st.integers(1, 5))):
        rec = {}
        if draw(st.booleans()):
            rec["id"] = draw(st.one_of(st.text(max_size=6), st.integers(-10**20, 10**20), st.none(), JSON_VALUES))
        if draw(st.integers(0, 9)):
            rec["text"] = draw(st.one_of(TEXTS, JSON_VALUES))
        if draw(st.booleans()):  # a page's URL (the target asks for it with most fields)
            rec["url"] = draw(st.one_of(TEXTS, JSON_VALUES))
        for key in draw(st.lists(st.text(max_size=4), max_size=2)):
            rec[key] = draw(JSON_VALUES)
        # json, not orjson: integers past 64 bits, lone surrogates (escaped, or as invalid UTF-8)
        line = json.dumps(rec, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
        if draw(st.integers(0, 3)) == 0:  # one byte changed: broken JSON, escapes, UTF-8
            b = bytearray(line)
            b[draw(st.integers(0, len(b) - 1))] = draw(st.integers(0, 255))
            line = bytes(b)
        lines.append(line)
    head = bytes([draw(st.integers(0, 255)) for _ in range(3)])
    return head + b"\n".join(lines) + draw(st.sampled_from([b"", b"\n", b"\r\n"]))


@FAST
@given(jsonl_blocks())
def test_hypothesis_jsonl(data):
    targets.jsonl(data)


@FAST
@given(st.binary(min_size=8, max_size=8), TEXTS)
def test_hypothesis_kernel(head, text):
    targets.kernel(head + text.encode("utf-8", "surrogatepass"))


@FAST
@given(st.binary(max_size=400))
def test_hypothesis_hamming(data):
    targets.hamming(data)


@FAST
@given(st.binary(max_size=400))
def test_hypothesis_kernel_args(data):
    targets.kernel_args(data)


@FAST
@given(st.binary(max_size=600))
def test_hypothesis_htmlscan(data):
    targets.htmlscan(data)


@FAST
@given(st.sampled_from([0, 1, 2]), st.lists(st.sampled_from(
    ["<", ">", "</", "<a href=x>", "</a>", "<p>", "<div class='nav menu'>", "<script>", "</script>", "<!--", "-->",
     "<title>", "</title>", "<br>", " ", "text", "é", "\u4e2d", "&amp;", "'", '"', "=", "hidden", "role=main"]),
    max_size=60))
def test_hypothesis_htmlscan_markup(mode, parts):
    targets.htmlscan(bytes([mode]) + "".join(parts).encode("utf-8"))


@FAST
@given(st.sampled_from([0, 1, 2]), st.binary(max_size=900))
def test_hypothesis_postings(mode, data):
    targets.postings(bytes([mode]) + data)


# --- each target notices a wrong answer ------------------------------------------------------

@pytest.mark.parametrize("wrong", ["encode", "decode"])
def test_postings_target_catches_a_wrong_block(monkeypatch, wrong):
    from neardup import _kernel

    real_encode, real_decode = _kernel.encode_posting_blocks, _kernel.decode_posting_blocks

    def lying_encode(keys):
        blocks = real_encode(keys)
        return [(first + 1, data) for first, data in blocks]

    def lying_decode(blocks):
        keys, block_of = real_decode(blocks)
        keys = bytearray(keys)
        if len(keys) > 8:
            keys[8] ^= 1
        return keys, block_of

    if wrong == "encode":
        monkeypatch.setattr(_kernel, "encode_posting_blocks", lying_encode)
    else:
        monkeypatch.setattr(_kernel, "decode_posting_blocks", lying_decode)
    with pytest.raises(AssertionError):
        for data in seeds("postings"):
            targets.postings(data)


def test_htmlscan_target_catches_a_wrong_scan(monkeypatch):
    from neardup.text import html_scan

    real = html_scan.scan_python

    def lying(html, *args):
        marked, *rest = real(html, *args)
        return (marked.replace(b"Text", b"Test"), *rest)

    monkeypatch.setattr(html_scan, "scan_python", lying)
    with pytest.raises(AssertionError):
        for data in seeds("htmlscan"):
            targets.htmlscan(data)


@pytest.mark.parametrize("wrong", ["cut", "comment"])
def test_htmlscan_target_catches_a_wrong_page_fingerprint(wrong):
    import xxhash

    from neardup import _htmlscan

    class Lying:
        @staticmethod
        def scan(markup, cut=False, page=False):
            out = list(_htmlscan.scan(markup, cut, page))
            if wrong == "cut":  # a fingerprint of the marked output, which the cut rewrites
                out[5] = xxhash.xxh3_64_intdigest(out[0])
            else:  # a fingerprint of the markup, comments and scripts included
                out[5] = xxhash.xxh3_64_intdigest(markup if isinstance(markup, bytes) else markup.encode("utf-8"))
            return tuple(out)

    with pytest.raises(AssertionError):
        targets.page_fingerprint_invariants(Lying, b"<nav><a href=/>Home</a></nav><main><p>Text</p></main>")


def test_jsonl_target_catches_a_wrong_text(monkeypatch):
    from neardup.io.read import jsonl as readers

    real = readers._jsonl

    class Lying:
        def __getattr__(self, name):
            return getattr(real, name)

        @staticmethod
        def scan(*args):
            out = list(real.scan(*args))
            out[2] = bytes(out[2]).replace(b"plain", b"plane")
            return tuple(out)

    monkeypatch.setattr(readers, "_jsonl", Lying())
    with pytest.raises(AssertionError):
        targets.jsonl(bytes([0, 0, 0]) + b'{"id": "a", "text": "plain ascii text"}\n')


def test_kernel_target_catches_a_wrong_signature(monkeypatch):
    from neardup import _kernel

    real = _kernel.signatures_segments

    def lying(*args):
        values, *rest = real(*args)
        values = bytearray(values)
        values[0] ^= 1
        return (values, *rest)

    monkeypatch.setattr(_kernel, "signatures_segments", lying)
    with pytest.raises(AssertionError):
        targets.kernel(seeds("kernel")[0])


def test_hamming_target_catches_a_missed_neighbour(monkeypatch):
    from neardup.index import SimhashIndex

    real = SimhashIndex.query
    monkeypatch.setattr(SimhashIndex, "query", lambda self, fp: real(self, fp)[1:])
    with pytest.raises(AssertionError):
        for data in seeds("hamming"):
            targets.hamming(data)


def test_kernel_args_target_lets_a_crash_through(monkeypatch):
    # only the exceptions of argument checking are expected; anything else escapes
    from neardup import _kernel

    def broken(*args):
        raise RuntimeError("not an argument check")

    monkeypatch.setattr(_kernel, "band_keys", broken)
    with pytest.raises(RuntimeError):
        targets.kernel_args(bytes([2, 0]) + bytes(40))


# --- atheris, and the sanitized build --------------------------------------------------------

def _libfuzzer_ok(proc, runs: int) -> None:
    detail = f"exit {proc.returncode}\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0, detail
    # libFuzzer may count one run more than -runs asks for (it says "Done 101 runs" now and then)
    done = re.search(r"Done (\d+) runs", proc.stderr)
    assert done and int(done.group(1)) >= runs, detail


@_needs_atheris
@pytest.mark.parametrize("name", NAMES)
def test_atheris_short_run(name, tmp_path):
    runs = 300
    # a corpus folder of the test's own first, so that nothing is added to fuzz/corpus
    proc = subprocess.run([sys.executable, os.path.join(FUZZ, "run_atheris.py"), name, f"-runs={runs}", "-seed=1",
                           "-max_len=1024", str(tmp_path), os.path.join(FUZZ, "seeds", name)],
                          capture_output=True, text=True, timeout=HANG_GUARD_S)
    _libfuzzer_ok(proc, runs)


@pytest.fixture(scope="module")
def sanitized(tmp_path_factory):
    out = tmp_path_factory.mktemp("sanitized")
    env = {**os.environ, "NEARDUP_SAN_DIR": str(out), "PYTHON": sys.executable}
    proc = subprocess.run(["bash", os.path.join(FUZZ, "build_sanitized.sh"), "build"], capture_output=True,
                          text=True, timeout=HANG_GUARD_S, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return env


@_needs_clang
@pytest.mark.parametrize("name", NAMES)
def test_sanitized_seeds_and_short_run(name, sanitized, tmp_path):
    script = os.path.join(FUZZ, "build_sanitized.sh")
    proc = subprocess.run(["bash", script, "replay", name, os.path.join(FUZZ, "seeds", name)],
                          capture_output=True, text=True, timeout=HANG_GUARD_S, env=sanitized)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "no failure" in proc.stdout
    runs = 100
    proc = subprocess.run(["bash", script, "fuzz", name, f"-runs={runs}", "-seed=1", "-max_len=1024",
                           str(tmp_path), os.path.join(FUZZ, "seeds", name)],
                          capture_output=True, text=True, timeout=HANG_GUARD_S, env=sanitized)
    _libfuzzer_ok(proc, runs)
    # the sanitized extensions were the ones loaded: only they carry coverage counters
    assert re.search(r"INFO: Loaded [1-9][0-9]* modules? +\(\d+ inline 8-bit counters\)", proc.stderr), \
        proc.stderr[-2000:]
