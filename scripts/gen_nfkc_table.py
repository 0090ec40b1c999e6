"""Regenerate the Unicode tables shipped in src/neardup/text/ from this Python's Unicode database.

- ``nfkc_unsafe.bin``: the code points that can make a text not NFKC (neardup/text/nfkc.py);
- ``casefold.bin``: what ``str.casefold`` makes of each code point it changes (neardup/_native.py).

The tables save computing them at run time (about a second, and 0.07 s) on a Python with the
same Unicode version; on any other version neardup computes them itself.
"""
import sys
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from neardup._native import _CASEFOLD_FILE, write_casefold_table  # noqa: E402
from neardup.text.nfkc import _TABLE_FILE, write_table  # noqa: E402

if __name__ == "__main__":
    n = write_table()
    print(f"{n} unsafe code points, unicode {unicodedata.unidata_version} -> {_TABLE_FILE}")
    n = write_casefold_table()
    print(f"{n} case foldings, unicode {unicodedata.unidata_version} -> {_CASEFOLD_FILE}")
