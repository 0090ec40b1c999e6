"""The encoding of an HTML page, and its text: :func:`decode_html` turns bytes into text (a
byte-order mark, else the charset given by the caller, the HTTP header, else a ``<meta charset>``
or ``http-equiv`` in the first 4 KB, else an ``<?xml encoding?>``, else UTF-8 when the bytes are
UTF-8, else charset-normalizer's detection; ``iso-8859-1``, ``latin-1`` and ``us-ascii`` are read
as ``windows-1252``, as browsers do), and :func:`utf8_page` tells when the bytes need no decoding."""

from __future__ import annotations

import codecs
import functools
import re

from .html_scan import is_utf8

__all__ = ["decode_html", "declared_charset", "detect_charset", "utf8_page", "DETECT_MIN_BYTES"]

_META_CHARSET = re.compile(rb"""<meta[^>]{0,512}?charset\s*=\s*["']?\s*([A-Za-z0-9_:.\-]{1,40})""", re.I)
_WINDOWS_1252 = frozenset({"iso8859-1", "ascii", "cp1252"})
_XML_ENCODING = re.compile(rb"""\s*<\?xml[^>]{0,200}?encoding\s*=\s*["']([A-Za-z0-9_:.\-]{1,40})["']""")
_RE_MARKUP_BYTES = re.compile(rb"<[^>]*>|&#?[A-Za-z0-9]+;")
_RE_HIGH_BYTE = re.compile(rb"[\x80-\xff]")
#: Fewer non-ASCII bytes than this in an undeclared, non-UTF-8 page: windows-1252, not detection.
DETECT_MIN_BYTES = 32

@functools.lru_cache(maxsize=256)  # pages repeat a handful of names; lookup() costs a few us
def _codec(name: str | None) -> str | None:
    """The Python codec for a declared charset, or None when unknown or useless."""
    if not name:
        return None
    try:
        codec = codecs.lookup(name.strip().strip("\"'")).name
    except (LookupError, ValueError):
        return None
    if codec in _WINDOWS_1252:
        return "cp1252"
    if codec.startswith(("utf-16", "utf-32")):
        return None  # a meta tag readable as ASCII cannot be right about UTF-16
    return codec


def declared_charset(data: bytes, charset: str | None = None) -> tuple[str | None, str]:
    """``(codec, where)``: the encoding a page declares, and how (``"bom"``, ``"http"``,
    ``"meta"``, ``"xml"``), or ``(None, "none")``. A byte-order mark wins over the HTTP header,
    which wins over the markup, as in browsers (WHATWG encoding sniffing)."""
    if data[:3] == codecs.BOM_UTF8:
        return "utf-8-sig", "bom"
    if data[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        return "utf-16", "bom"
    codec = _codec(charset)
    if codec is not None:
        return codec, "http"
    m = _META_CHARSET.search(data, 0, 4096)  # <meta charset> and <meta http-equiv content="...; charset=">
    codec = _codec(m.group(1).decode("ascii")) if m else None
    if codec is not None:
        return codec, "meta"
    m = _XML_ENCODING.match(data)
    codec = _codec(m.group(1).decode("ascii")) if m else None
    if codec is not None:
        return codec, "xml"
    return None, "none"


def detect_charset(data: bytes) -> str:
    """The encoding of a page that declares none: UTF-8 when the bytes are UTF-8 (what an
    undeclared modern page almost always is, and what detectors confuse most with short
    Latin-1 text), else charset-normalizer's guess, else windows-1252 (the browsers' default,
    also for pages with fewer than :data:`DETECT_MIN_BYTES` non-ASCII bytes)."""
    try:
        data.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError:
        pass
    # A few stray bytes say too little for a detector (it names an exotic code page for one
    # byte): read them as browsers do.
    if sum(1 for _ in _RE_HIGH_BYTE.finditer(data[:65536])) < DETECT_MIN_BYTES:
        return "cp1252"
    try:
        from charset_normalizer import from_bytes
    except ImportError:
        return "cp1252"
    # The markup is ASCII and tells the detector nothing: it judges the text only. Deterministic
    # for given bytes and charset-normalizer version (both recorded by extractor_id).
    text = _RE_MARKUP_BYTES.sub(b" ", data)
    best = from_bytes(text or data).best()
    codec = _codec(best.encoding) if best is not None else None
    return codec or "cp1252"


def decode_html(data: bytes, charset: str | None = None, *, errors: str = "replace") -> str | None:
    """Decode an HTML page; ``None`` when ``errors="strict"`` and the bytes do not decode.

    The encoding is the first of: a byte-order mark; ``charset`` (the HTTP ``Content-Type``
    parameter, as a WARC record gives it); ``<meta charset>`` or ``<meta http-equiv>`` in the first
    4 KB; an ``<?xml encoding?>`` declaration; else :func:`detect_charset`.
    """
    codec, _where = declared_charset(data, charset)
    if codec is None:
        codec = detect_charset(data)
    try:
        return data.decode(codec)
    except UnicodeDecodeError:
        if errors == "strict":
            return None
        return data.decode(codec, "replace")


# A page that starts (after ASCII white space) with a printable ASCII character: not blank, so
# it needs no decoding to tell (str.isspace) that it has something to extract.
_STARTS_VISIBLE = re.compile(rb"[ \t\n\r\x0b\x0c]*[\x21-\x7e]")


def utf8_page(data: bytes, charset: str | None = None, *, text: bool = False) -> bytes | None:
    """The page's bytes as the extraction reads them, when they need no decoding: the page is
    UTF-8 (declared by ``charset``, the markup, a byte-order mark, or undeclared and valid), valid
    UTF-8 and not blank. Its text (:func:`extract_utf8`) is then that of
    ``decode_html(data, charset)``, without the decoding to a str and the encoding back that the
    markup scan would do. ``None`` otherwise (a page in another encoding, invalid bytes, only
    white space): decode it with :func:`decode_html`. ``text=True``: ``data`` is the UTF-8 of a
    str (decoded already: no declaration applies), valid and not blank.

    >>> utf8_page("<p>déjà</p>".encode()), utf8_page(b"<p>d\\xe9j\\xe0</p>")
    (b'<p>d\\xc3\\xa9j\\xc3\\xa0</p>', None)
    """
    if not text:
        codec, _where = declared_charset(data, charset)
        if codec == "utf-8-sig":  # a byte-order mark, or the codec named in the markup
            if data[:3] == codecs.BOM_UTF8:
                data = data[3:]
        elif codec is not None and codec != "utf-8":
            return None
        # undeclared: detect_charset() says UTF-8 exactly when the bytes are valid UTF-8
    if not _STARTS_VISIBLE.match(data) or not is_utf8(data):
        return None
    return data
