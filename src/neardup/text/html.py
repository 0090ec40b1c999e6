"""HTML to plain text, for deduplication.

:func:`extract_text` has two modes:

``"main"`` (the default)
    The main content of the page, found by trafilatura (comments dropped, tables kept, recall
    favoured), so that navigation menus, footers and cookie banners shared by every page of a site
    do not make unrelated pages look alike. When trafilatura finds nothing (a page that is all
    navigation, a fragment, a page over trafilatura's 20 MB limit) the whole visible text is used
    instead, so a page with visible text never comes back empty.
``"whole"``
    All the visible text: ``<head>``, ``script``, ``style``, ``noscript``, ``template``, ``svg``,
    ``iframe``, ``object``, ``embed``, ``canvas``, comments and elements with the ``hidden``
    attribute are dropped; block elements (paragraphs, headings, list items, table rows, ``<br>``)
    become line breaks; runs of white space inside a line become one space. Parsed with lxml, or
    with the standard library's ``html.parser`` when lxml is not installed.

Both are deterministic (same input and library versions, same output) and never raise for bad
markup: garbage comes back as ``""`` (or as whatever text the parser could recover). The readers use
:func:`_extract`, which tells a parser failure (``None``) from a page without text (``""``).

:func:`decode_html` turns bytes into text: a byte-order mark, else the charset given by the caller
(the HTTP header), else a ``<meta charset>`` in the first 4 KB, else UTF-8. ``iso-8859-1``,
``latin-1`` and ``us-ascii`` are read as ``windows-1252``, as browsers do.
"""

from __future__ import annotations

import codecs
import re

from ..errors import ConfigError, require

__all__ = ["extract_text", "decode_html", "HTML_MODES"]

HTML_MODES = ("main", "whole")

_DROP = frozenset(
    {"head", "script", "style", "noscript", "template", "svg", "iframe", "object", "embed", "canvas", "title"}
)
_BLOCK = frozenset(
    """address article aside blockquote body br caption center dd details dialog dir div dl dt fieldset
    figcaption figure footer form frameset h1 h2 h3 h4 h5 h6 header hgroup hr html legend li listing main
    menu nav ol option p plaintext pre section summary table tbody tfoot thead tr ul xmp""".split()
)
# Inside a line, every kind of line break is white space; line breaks come from block elements.
_FLATTEN = {ord(c): " " for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"}

_META_CHARSET = re.compile(rb"""<meta[^>]{0,512}?charset\s*=\s*["']?\s*([A-Za-z0-9_:.\-]{1,40})""", re.I)
_WINDOWS_1252 = frozenset({"iso8859-1", "ascii", "cp1252"})

_trafilatura = None
_lxml_html = None  # the lxml.html module, False when lxml is missing


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


def decode_html(data: bytes, charset: str | None = None, *, errors: str = "replace") -> str | None:
    """Decode an HTML page; ``None`` when ``errors="strict"`` and the bytes do not decode."""
    if data[:3] == codecs.BOM_UTF8:
        codec, data = "utf-8", data[3:]
    elif data[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        codec = "utf-16"
    else:
        codec = _codec(charset)
        if codec is None:
            m = _META_CHARSET.search(data, 0, 4096)
            codec = _codec(m.group(1).decode("ascii")) if m else None
        if codec is None:
            codec = "utf-8"
    try:
        return data.decode(codec)
    except UnicodeDecodeError:
        if errors == "strict":
            return None
        return data.decode(codec, "replace")


def _get_lxml():
    global _lxml_html
    if _lxml_html is None:
        try:
            import lxml.html

            _lxml_html = lxml.html
        except ImportError:  # pragma: no cover - lxml ships with the io extra
            _lxml_html = False
    return _lxml_html


def _finish(chunks: list[str]) -> str:
    lines = []
    for line in "".join(chunks).split("\n"):
        line = " ".join(line.split())
        if line:
            lines.append(line)
    return "\n".join(lines)


def _whole_lxml(lh, html: str) -> str | None:
    from lxml import etree

    data = html.encode("utf-8", "replace")
    if not data.strip():
        return ""
    parser = lh.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True, recover=True, huge_tree=True)
    try:
        root = etree.fromstring(data, parser)
    except (etree.LxmlError, ValueError):
        return None
    if root is None:
        return ""
    chunks: list[str] = []
    pre = 0
    skipping = None  # the element whose subtree is being dropped
    walker = etree.iterwalk(root, events=("start", "end"))
    for event, el in walker:
        tag = el.tag
        if not isinstance(tag, str):  # comment, processing instruction, entity: only its tail is text
            if event == "end" and skipping is None and el.tail:
                chunks.append(el.tail if pre else el.tail.translate(_FLATTEN))
            continue
        tag = tag.lower()
        if event == "start":
            if tag in _DROP or el.get("hidden") is not None:
                skipping = el
                walker.skip_subtree()
                continue
            if tag in _BLOCK:
                chunks.append("\n")
            if tag == "pre" or tag == "textarea":
                pre += 1
            if el.text:
                chunks.append(el.text if pre else el.text.translate(_FLATTEN))
        else:
            if skipping is el:
                skipping = None
            else:
                if tag == "pre" or tag == "textarea":
                    pre -= 1
                if tag in _BLOCK:
                    chunks.append("\n")
                elif tag in ("td", "th"):
                    chunks.append(" ")
            if el.tail:
                chunks.append(el.tail if pre else el.tail.translate(_FLATTEN))
    return _finish(chunks)


def _whole_stdlib(html: str) -> str | None:
    from html.parser import HTMLParser

    chunks: list[str] = []
    state = {"skip": [], "pre": 0}
    void = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    class _P(HTMLParser):
        def handle_starttag(self, tag, attrs):
            if state["skip"]:
                if tag == state["skip"][-1] and tag not in void:
                    state["skip"].append(tag)
                return
            if (tag in _DROP or any(k == "hidden" for k, _ in attrs)) and tag not in void:
                state["skip"].append(tag)
                return
            if tag in _BLOCK:
                chunks.append("\n")
            if tag in ("pre", "textarea"):
                state["pre"] += 1

        def handle_startendtag(self, tag, attrs):
            if not state["skip"] and tag in _BLOCK:
                chunks.append("\n")

        def handle_endtag(self, tag):
            if state["skip"]:
                if tag == state["skip"][-1]:
                    state["skip"].pop()
                return
            if tag in ("pre", "textarea") and state["pre"]:
                state["pre"] -= 1
            if tag in _BLOCK:
                chunks.append("\n")
            elif tag in ("td", "th"):
                chunks.append(" ")

        def handle_data(self, data):
            if not state["skip"]:
                chunks.append(data if state["pre"] else data.translate(_FLATTEN))

    try:
        p = _P(convert_charrefs=True)
        p.feed(html)
        p.close()
    except Exception:  # noqa: BLE001 - garbage in, nothing out
        return None
    return _finish(chunks)


def _whole(html: str) -> str | None:
    lh = _get_lxml()
    if lh:
        try:
            return _whole_lxml(lh, html)
        except RecursionError:  # pragma: no cover - iterwalk does not recurse
            return None
    return _whole_stdlib(html)


def _main(html: str, url: str | None) -> str | None:
    global _trafilatura
    if _trafilatura is None:
        _trafilatura = require("trafilatura", "io")
    try:
        out = _trafilatura.extract(
            html,
            url=url,
            include_comments=False,
            include_tables=True,
            favor_recall=True,
            output_format="txt",
            deduplicate=False,
            with_metadata=False,
        )
    except Exception:  # noqa: BLE001 - trafilatura on garbage; fall back to the whole text
        out = None
    if out and not out.isspace():
        return _finish([out])
    return _whole(html)


def _extract(html: str | bytes, mode: str = "main", *, url: str | None = None) -> str | None:
    """Like :func:`extract_text`, but ``None`` when the markup could not be parsed at all."""
    if mode not in HTML_MODES:
        raise ConfigError(f"The 'html' mode must be one of 'main', 'whole'. Got {mode!r} instead.")
    if isinstance(html, (bytes, bytearray, memoryview)):
        html = decode_html(bytes(html))
    if not html or html.isspace():
        return ""
    if "\x00" in html:
        html = html.replace("\x00", "")
    return _main(html, url) if mode == "main" else _whole(html)


def extract_text(html: str | bytes, mode: str = "main", *, url: str | None = None) -> str:
    """The plain text of an HTML page (see the module docstring for the two modes).

    Bytes are decoded with :func:`decode_html`. Never raises for bad input (only for a bad ``mode``,
    or MissingDependencyError when ``mode="main"`` and trafilatura is not installed); returns ``""``
    when there is no text to be had.
    """
    return _extract(html, mode, url=url) or ""
