"""The extensions on CPUs where numpy cannot run (numpy's wheels need SSE4.2 and POPCNT), for
fuzz/qemu_dispatch.sh: the calls are made from bytes and memoryviews only.

    python fuzz/qemu_bytes_probe.py make FILE    on the host (numpy): the arguments and answers
    python fuzz/qemu_bytes_probe.py check FILE   under qemu (no numpy): the same calls, compared

The arguments are the seeds of the kernel, jsonl and hamming targets turned into kernel calls
(tables, coefficients, offsets as bytes); the host's answers are the oracle, since the host ran
them through the differential targets. Prints the dispatch and the number of calls compared.
"""

import hashlib
import os
import pickle
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _digest(result) -> str:
    h = hashlib.sha256()

    def feed(x):
        if isinstance(x, (bytes, bytearray, memoryview)):
            h.update(b"b" + bytes(x))
        elif isinstance(x, (list, tuple)):
            h.update(b"[%d" % len(x))
            for y in x:
                feed(y)
        else:
            h.update(repr(x).encode())

    feed(result)
    return h.hexdigest()


def _calls_kernel(kernel, spec):
    """kernel.name(*args), a ("q" or "Q", bytes) argument given as a typed memoryview."""
    name, args = spec
    typed = [memoryview(a[1]).cast(a[0]) if isinstance(a, tuple) else a for a in args]
    return getattr(kernel, name)(*typed)


def make(path: str) -> None:
    sys.path.insert(0, HERE)
    import numpy as np

    from neardup import _kernel, _native
    from neardup.io.read import jsonl as jsonl_reader
    from neardup.params import FAMILIES, MinHashParams, NormalizeParams, ShingleParams
    from neardup.text.nfkc import unsafe_table

    calls = []
    texts = []
    for f in sorted(os.listdir(os.path.join(HERE, "seeds", "kernel"))):
        texts.append(open(os.path.join(HERE, "seeds", "kernel", f), "rb").read()[8:])
    for unit in ("word", "char", "line"):
        for family in FAMILIES:
            norm = NormalizeParams(remove_punctuation=family != "mulshift32")
            sp, mp = ShingleParams(k=3, unit=unit, normalize=norm), MinHashParams(num_perm=8, family=family)
            data, offsets = _native.encode_texts([t.decode("utf-8", "surrogateescape") for t in texts], norm)
            table, u, k, keep, a, b, fam, with_ids, fold, fps = _native._signature_args(sp, mp, True, True)
            fold_b = None if fold is None else fold.tobytes()
            calls.append(("_kernel", ("signatures", [bytes(data), offsets.tobytes(), table.tobytes(), u, k, keep,
                                                     a.tobytes(), b.tobytes(), fam, True, fold_b, True])))
            calls.append(("_kernel", ("units", [texts[0], table.tobytes(), u, keep, fold_b])))
    vals = np.sort(np.random.default_rng(19).integers(0, 64, size=40).astype(np.uint64))
    off = np.array([0, 10, 20, 30, 40], dtype=np.int64)
    pi, pj = np.array([0, 1, 2, 3, 0], dtype=np.int64), np.array([1, 2, 3, 0, 0], dtype=np.int64)
    calls.append(("_kernel", ("intersections", [("Q", vals.tobytes()), ("q", off.tobytes()), ("q", pi.tobytes()),
                                                ("q", pj.tobytes())])))
    calls.append(("_kernel", ("agreements", [("Q", vals.tobytes()), 10, ("q", pi.tobytes()), ("q", pj.tobytes())])))
    calls.append(("_kernel", ("band_keys", [("Q", vals.tobytes()), 8, 2, 4])))
    calls.append(("_kernel", ("xxh3_64", [b"".join(texts)])))
    unsafe = unsafe_table().tobytes()
    for f in sorted(os.listdir(os.path.join(HERE, "seeds", "jsonl"))):
        block = open(os.path.join(HERE, "seeds", "jsonl", f), "rb").read()[3:]
        calls.append(("_jsonl", ("scan", [block, b"id", b"text", unsafe, -1])))
    rng = random.Random(19)
    fps = [rng.getrandbits(64) for _ in range(300)]
    fps += [fps[i] ^ (1 << rng.randrange(64)) for i in range(100)]
    queries = fps[:40] + [rng.getrandbits(64) for _ in range(10)]
    hamming = (fps, queries)
    answers = {"calls": [], "hamming": None}
    for mod, spec in calls:
        answers["calls"].append(_digest(_calls_kernel(_kernel if mod == "_kernel" else jsonl_reader._jsonl, spec)))
    answers["hamming"] = _digest(_hamming_answers(*hamming))
    with open(path, "wb") as fh:
        pickle.dump({"calls": calls, "hamming": hamming, "answers": answers}, fh)
    print(f"make: {len(calls)} calls and {len(queries)} Hamming queries")


def _hamming_answers(fps, queries):
    """Prober over no tables: every row in the brute-force tail (the popcount code)."""
    from array import array

    from neardup import _hamming

    buf = array("Q", fps)
    out = []
    for k in (0, 1, 3, 7):
        p = _hamming.Prober(k, [], [], memoryview(buf), 0, len(fps), None, None)
        got = [p.query(q) for q in queries]
        want = [sorted(((q ^ fp).bit_count(), row) for row, fp in enumerate(fps) if (q ^ fp).bit_count() <= k)
                for q in queries]
        assert [[(r, d) for d, r in w] for w in want] == got, k
        out.append(got)
    return out


def check(path: str) -> int:
    from neardup import _hamming, _jsonl, _kernel  # noqa: F401  (no numpy: nothing else imported)

    assert "numpy" not in sys.modules
    with open(path, "rb") as fh:
        spec = pickle.load(fh)
    bad = 0
    for (mod, call), want in zip(spec["calls"], spec["answers"]["calls"]):
        got = _digest(_calls_kernel(_kernel if mod == "_kernel" else _jsonl, call))
        if got != want:
            bad += 1
            print(f"MISMATCH {mod}.{call[0]}")
    if _digest(_hamming_answers(*spec["hamming"])) != spec["answers"]["hamming"]:
        bad += 1
        print("MISMATCH _hamming.Prober")
    print(f"check: simd={_kernel.simd()} features={_kernel.cpu_features()} "
          f"{len(spec['calls']) + 1} calls compared, {bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("make", "check"):
        sys.exit(__doc__)
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        sys.exit(check(sys.argv[2]))
