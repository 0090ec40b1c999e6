"""Regenerate src/neardup/text/nfkc_unsafe.bin from this Python's Unicode database.

The table saves computing it at run time (about a second) on a Python with the same Unicode
version; on any other version neardup computes it itself (see neardup/text/nfkc.py).
"""
import sys
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from neardup.text.nfkc import _TABLE_FILE, write_table  # noqa: E402

if __name__ == "__main__":
    n = write_table()
    print(f"{n} unsafe code points, unicode {unicodedata.unidata_version} -> {_TABLE_FILE}")
