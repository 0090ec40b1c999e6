"""Regenerate src/neardup/text/charclass.bin from this Python's Unicode database.

The table is shipped rather than computed at import so that tokens (and hence every shingle id,
signature and fingerprint) do not change when a user's Python has another Unicode version, and
so that import stays fast (computing it takes about a second). Run only with a format-version bump.
"""
import struct
import sys
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from neardup.text.charclass import SEP, WORD, SOLO, PUNCT, SOLO_RANGES  # noqa: E402


def classify(cp: int) -> int:
    ch = chr(cp)
    major = unicodedata.category(ch)[0]
    if ch == "_":
        return WORD
    if major in "LMN":
        if any(lo <= cp <= hi for lo, hi in SOLO_RANGES):
            return SOLO
        return WORD
    if major in "PS":
        return PUNCT
    return SEP


def main() -> None:
    runs = []
    prev = None
    for cp in range(0x110000):
        c = classify(cp)
        if c != prev:
            runs.append((cp, c))
            prev = c
    out = Path(__file__).resolve().parents[1] / "src/neardup/text/charclass.bin"
    version = unicodedata.unidata_version.encode()
    with open(out, "wb") as fh:
        fh.write(b"NDCC" + struct.pack("<B", len(version)) + version + struct.pack("<I", len(runs)))
        for cp, c in runs:
            fh.write(struct.pack("<IB", cp, c))
    print(f"{len(runs)} runs, unicode {unicodedata.unidata_version} -> {out}")


if __name__ == "__main__":
    main()
