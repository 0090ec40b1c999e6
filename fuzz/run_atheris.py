"""Coverage-guided fuzzing of one target of fuzz/targets.py with atheris (libFuzzer).

    python fuzz/run_atheris.py TARGET [libFuzzer options] [CORPUS_DIR ...]

TARGET is jsonl, kernel, hamming or kernel_args. With the extensions of fuzz/build_sanitized.sh
(built with -fsanitize=fuzzer-no-link), libFuzzer sees the coverage of the C code; with an
ordinary build it sees none unless --py-coverage instruments neardup's Python code. Unless
given, the corpus folders are the working corpus fuzz/corpus/TARGET (where new inputs go) and
the seeds fuzz/seeds/TARGET, and for jsonl the dictionary fuzz/jsonl.dict is added. A mismatch
with the oracle is an uncaught AssertionError: libFuzzer stops and writes the input to
crash-<sha1> (replay it with fuzz/replay.py).
"""

import os
import sys

import atheris

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    name = sys.argv.pop(1)
    if "--py-coverage" in sys.argv:
        # an ordinary build gives libFuzzer no coverage of the C code: guide it by neardup's
        # Python instead (slower; the sanitized build's C counters need none of it)
        sys.argv.remove("--py-coverage")
        with atheris.instrument_imports(include=["neardup"]):
            import neardup._native  # noqa: F401
            import neardup.io.read  # noqa: F401
            import neardup.index.simhash  # noqa: F401
            import targets
    else:
        import targets
    fn = targets.TARGETS[name]
    # warm the caches (tables, layouts) before libFuzzer counts coverage
    fn(b"")
    args = list(sys.argv)
    if name == "jsonl" and not any(a.startswith("-dict=") for a in args):
        args.append(f"-dict={os.path.join(HERE, 'jsonl.dict')}")
    if not any(not a.startswith("-") for a in args[1:]):
        # libFuzzer adds what it finds to the first folder: the working corpus (not in git),
        # read after the seeds, which stay as committed
        work = os.path.join(HERE, "corpus", name)
        os.makedirs(work, exist_ok=True)
        args += [work, os.path.join(HERE, "seeds", name)]
    atheris.Setup(args, fn)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
