"""Unicode NFKC as the batch path needs it: skipped for the (many) texts it cannot change.

The Unicode quick check says a text is already in NFKC when every code point is "safe": its
NFKC is itself (NFKC_Quick_Check = Yes), it has canonical combining class 0 (so no reordering),
and it cannot compose with the code point before it (not the second half of a canonical
composition, not a Hangul medial vowel or final consonant). The compiled kernel checks that
table while it encodes a batch, off the GIL, and maps the :func:`context_free` code points itself;
only texts with another unsafe code point come back to :func:`nfkc`.

The table depends on the running Python's Unicode database (``unicodedata`` is what defines
:func:`neardup.text.normalize.fold`), so ``nfkc_unsafe.bin`` (written by
``scripts/gen_nfkc_table.py``) is used only when its Unicode version is the running one;
otherwise the table is computed (about a second, once per process).
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache
from pathlib import Path

import numpy as np

from . import unicode_tables

_TABLE_FILE = Path(__file__).with_name("nfkc_unsafe.bin")
_MAGIC = b"NDNQ"

#: Hangul jamo that compose with the syllable or jamo before them (Unicode 3.12, algorithmic).
_HANGUL_V = range(0x1161, 0x1176)
_HANGUL_T = range(0x11A8, 0x11C3)


def unsafe_code_points() -> list[int]:
    """Sorted code points that can make a text not NFKC, from the running Python's database."""
    unsafe = set(_HANGUL_V) | set(_HANGUL_T)
    for cp in range(0x110000):
        ch = chr(cp)
        if unicodedata.combining(ch) or unicodedata.normalize("NFKC", ch) != ch:
            unsafe.add(cp)
        decomposition = unicodedata.decomposition(ch)
        if decomposition and not decomposition.startswith("<"):
            parts = decomposition.split()
            if len(parts) == 2:  # a canonical pair: its second half may compose with a predecessor
                unsafe.add(int(parts[1], 16))
    return sorted(unsafe)


def write_table(path: Path = _TABLE_FILE) -> int:
    """Write the table for the running Python's Unicode version; returns its size in code points."""
    cps = unsafe_code_points()
    unicode_tables.write(path, _MAGIC, cps)
    return len(cps)


def _shipped() -> np.ndarray | None:
    return unicode_tables.read(_TABLE_FILE, _MAGIC)


@lru_cache(maxsize=1)
def unsafe_table() -> np.ndarray:
    """uint8 array of length 0x110000: 1 where a code point can make a text not NFKC."""
    cps = _shipped()
    if cps is None:
        cps = np.asarray(unsafe_code_points(), dtype=np.uint32)
    table = np.zeros(0x110000, dtype=np.uint8)
    table[cps.astype(np.int64)] = 1
    table.setflags(write=False)
    return table


@lru_cache(maxsize=1)
def context_free() -> dict[int, str]:
    """The unsafe code points whose NFKC does not depend on their neighbours, with their NFKC.

    Such a code point is a starter whose NFKC begins with a safe code point. In a text whose
    other code points are safe or in this map, NFKC replaces each of these by its own NFKC and
    leaves the rest: what one becomes begins with a safe starter, which composes with nothing
    before it and stops any reordering there, and what follows it begins with one too. So the
    kernel applies this map as it applies case folding, and only texts holding other unsafe code
    points need :func:`nfkc` first. On real text these are most of the unsafe ones met: U+00B4
    ACUTE ACCENT, U+2026 HORIZONTAL ELLIPSIS, fullwidth punctuation, superscripts.
    ``tests/test_native.py`` checks every entry between neighbours of each kind.
    """
    table = unsafe_table()
    starters = [cp for cp in np.flatnonzero(table).tolist() if not unicodedata.combining(chr(cp))]
    # one call for all: NUL is a starter that composes with nothing, so NFKC stops at each
    normalized = unicodedata.normalize("NFKC", "\0".join(map(chr, starters))).split("\0")
    return {cp: mapped for cp, mapped in zip(starters, normalized)
            if mapped != chr(cp) and not table[ord(mapped[0])]}


def nfkc(text: str) -> str:
    """``unicodedata.normalize("NFKC", text)``, faster on mostly-normalized text: the text
    itself when it is ASCII or passes the quick check, else :func:`nfkc_by_lines`."""
    if text.isascii() or unicodedata.is_normalized("NFKC", text):
        return text
    return nfkc_by_lines(text)


def nfkc_by_lines(text: str) -> str:
    """``unicodedata.normalize("NFKC", text)``, line by line.

    A newline is a starter that composes with nothing, so NFKC never acts across it and the
    lines can be normalized one by one: only non-ASCII lines need it, and on a long text with a
    few such lines this is several times faster than normalizing the whole text at once.
    """
    if len(text) < 2048:
        return unicodedata.normalize("NFKC", text)
    return "\n".join([ln if ln.isascii() else unicodedata.normalize("NFKC", ln) for ln in text.split("\n")])


def nfkc_utf8(data: bytes) -> bytes | None:
    """NFKC of UTF-8 text (valid, as a reader produced it), as UTF-8; None when it is NFKC already.

    Line by line, as :func:`nfkc_by_lines`, and without decoding the ASCII lines: only lines
    with other characters are decoded, checked, and normalized when they are not NFKC.
    """
    lines = data.split(b"\n")
    changed = False
    for k, line in enumerate(lines):
        if line.isascii():
            continue
        text = line.decode("utf-8", "surrogatepass")
        if unicodedata.is_normalized("NFKC", text):
            continue
        lines[k] = unicodedata.normalize("NFKC", text).encode("utf-8", "surrogatepass")
        changed = True
    return b"\n".join(lines) if changed else None

