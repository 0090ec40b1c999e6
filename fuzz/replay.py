"""Run fuzz targets over saved inputs (a corpus, or the crash-* files libFuzzer wrote).

    python fuzz/replay.py TARGET PATH [PATH ...]     (files, or folders of files)

Exits 1 at the first input whose target raises, after printing it and the traceback.
"""

import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import targets  # noqa: E402


def files(paths):
    for p in paths:
        if os.path.isdir(p):
            for name in sorted(os.listdir(p)):
                yield os.path.join(p, name)
        else:
            yield p


def main() -> int:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    fn = targets.TARGETS[sys.argv[1]]
    n = 0
    for path in files(sys.argv[2:]):
        with open(path, "rb") as fh:
            data = fh.read()
        try:
            fn(data)
        except Exception:
            print(f"{path}: {data[:200]!r}", file=sys.stderr)
            traceback.print_exc()
            return 1
        n += 1
    print(f"{sys.argv[1]}: {n} inputs, no failure")
    return 0


if __name__ == "__main__":
    sys.exit(main())
