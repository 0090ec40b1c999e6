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

HTML_MODES = ("main", "whole", "article")

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
    if _get_lexbor():
        return _fast(html, "whole")
    lh = _get_lxml()
    if lh:
        try:
            return _whole_lxml(lh, html)
        except RecursionError:  # pragma: no cover - iterwalk does not recurse
            return None
    return _whole_stdlib(html)


def _article(html: str, url: str | None) -> str | None:
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


# ------------------------------------------------------------------------------------------------
# Main content on lexbor (selectolax). The rules are generic HTML semantics and vocabulary; none
# names a site or a generator. The text is made from lexbor's own serialisation of the kept
# subtree, cut by regular expressions: both run in C, so the Python work per page is a few dozen
# calls whatever the page's size (a walk over the nodes in Python costs ~10x more).

_FAST_DROP = ("script", "style", "noscript", "template", "svg", "iframe", "object", "embed", "canvas",
              "math", "select", "button", "input", "textarea", "head")
_FAST_HIDDEN = '[hidden], [style*="display:none"], [style*="display: none"], [style*="visibility:hidden"]'
# Landmarks that are navigation by definition (HTML and ARIA): dropped wherever they are.
_NAV_SEMANTIC = ('nav, [role="navigation"], [role="banner"], [role="contentinfo"], [role="search"], '
                 '[role="menu"], [role="menubar"], [role="toolbar"], [role="tablist"], dialog')
# Landmarks that are often navigation but sometimes content (footnotes, boxed asides): dropped
# when their text is mostly links.
_NAV_MAYBE = 'aside, [role="complementary"]'
_MAIN = 'main, [role="main"]'
# Words of class and id names that mean "not the content". A name token matches when it is the
# word, or starts or ends with it ("navheader", "docnav", "sphinxsidebar"); "toc" must be the
# whole token ("toctree" lists a page's children, and is content).
# "header" is not among them: code headers and section headers are headings of the content.
_VOCAB_AFFIX = ("nav", "navigation", "menu", "sidebar", "breadcrumb", "breadcrumbs", "footer",
                "banner", "masthead", "topbar", "pager", "pagination", "related", "skiplink", "cookie",
                "share", "social", "copyright", "searchbox")
_VOCAB_EXACT = frozenset({"toc", "bar", "crumbs", "search", "top", "bottom", "foot", "skip", "hidden",
                          "sr-only", "visually-hidden"})
_SPLIT_NAME = re.compile(r"[^a-z0-9]+")
# Substring matches in C narrow the candidates to a few; the token rule is then checked in Python.
_NAMED = ", ".join(f'[{a}*="{w}"]' for w in ("nav", "menu", "sidebar", "breadcrumb", "footer", "header", "banner",
                                             "masthead", "topbar", "pager", "pagination", "related", "skip",
                                             "cookie", "share", "social", "copyright", "search", "toc", "bar",
                                             "crumbs", "top", "bottom", "foot", "hidden", "sr-only")
                   for a in ("class", "id"))
# A vocabulary match is dropped when its links make at least this share of its text, or when
# it is short: what navigation looks like (a boxed note called "sidebar" is long, and prose).
LINK_DENSITY = 0.3
SHORT_CHARS = 200
# Under <body> (no main landmark), a top-level block this dense in links is navigation too.
BODY_LINK_DENSITY = 0.6

_BLOCK_TAGS = ("address|article|aside|blockquote|body|br|caption|center|dd|details|dialog|dir|div|dl|dt|"
               "fieldset|figcaption|figure|footer|form|frameset|h[1-6]|header|hgroup|hr|html|legend|li|"
               "listing|main|menu|nav|ol|option|p|plaintext|pre|section|summary|table|tbody|tfoot|thead|"
               "tr|ul|xmp")
_RE_COMMENT = re.compile(r"<!--.*?-->", re.S)
_RE_PRE = re.compile(r"<(pre|textarea|listing|xmp|plaintext)\b[^>]*>.*?</\1>", re.S | re.I)
# lexbor escapes "<" and ">" inside attribute values, so in its output a tag never holds a ">".
_RE_BLOCK = re.compile(rf"</?(?:{_BLOCK_TAGS})\b[^>]*>", re.I)
_RE_CELL = re.compile(r"</?(?:td|th)\b[^>]*>", re.I)
_RE_TAG = re.compile(r"<[^>]*>")
_RE_SPACE = re.compile(r"[ \t\r\f\v\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000\x1c-\x1f\x85\u2028\u2029]+")
_PRE_NL = "\ue000"  # a private-use stand-in for the line breaks inside <pre> while lines are built

_lexbor = None


def _get_lexbor():
    global _lexbor
    if _lexbor is None:
        try:
            from selectolax.lexbor import LexborHTMLParser

            _lexbor = LexborHTMLParser
        except ImportError:
            _lexbor = False
    return _lexbor


def _unescape(s: str) -> str:
    # lexbor's serialisation escapes only these four in text.
    if "&" not in s:
        return s
    return s.replace("&lt;", "<").replace("&gt;", ">").replace("&nbsp;", "\u00a0").replace("&amp;", "&")


def _keep_pre(m: re.Match) -> str:
    return m.group(0).replace("\n", _PRE_NL)


def _serial_text(html: str) -> str:
    """Text of lexbor's serialisation: block tags break lines, cells are spaced, inline tags vanish."""
    html = _RE_COMMENT.sub("", html)
    if "<pre" in html or "<textarea" in html or "<listing" in html or "<xmp" in html:
        html = _RE_PRE.sub(_keep_pre, html)
    html = html.replace("\n", " ")
    html = _RE_BLOCK.sub("\n", html)
    html = _RE_CELL.sub(" ", html)
    text = _unescape(_RE_TAG.sub("", html)).replace(_PRE_NL, "\n")
    lines = []
    for line in text.split("\n"):
        line = _RE_SPACE.sub(" ", line).strip()
        if line:
            lines.append(line)
    return "\n".join(lines)


def _named_nav(value: str | None) -> bool:
    if not value:
        return False
    for tok in _SPLIT_NAME.split(value.lower()):
        if not tok:
            continue
        if tok in _VOCAB_EXACT:
            return True
        for w in _VOCAB_AFFIX:
            if tok.startswith(w) or tok.endswith(w):
                return True
    return False


def _link_density(node) -> float:
    total = len(node.text(deep=True, strip=True, separator=" "))
    if not total:
        return 1.0
    links = sum(len(a.text(deep=True, strip=True, separator=" ")) for a in node.css("a"))
    return links / total


def _attached(node, root) -> bool:
    """Whether ``node`` is still under ``root`` (removed subtrees keep their inside, not their parent)."""
    p = node.parent
    while p is not None:
        if p.mem_id == root.mem_id:
            return True
        p = p.parent
    return False


def _remove_all(root, selector: str, keep=None) -> None:
    # remove() detaches without freeing (lexbor frees the whole document at once), so the nodes
    # matched inside a removed subtree stay valid to look at; decompose() would free them.
    for node in root.css(selector):
        if node.tag in ("body", "html") or not _attached(node, root):
            continue
        if keep is None or not keep(node):
            node.remove()


def _drop_named(root) -> None:
    """Drop the elements whose class or id names navigation and that look like it."""
    for node in root.css(_NAMED):
        if not _attached(node, root):
            continue
        attrs = node.attributes
        if not (_named_nav(attrs.get("class")) or _named_nav(attrs.get("id"))):
            continue
        if node.tag in ("body", "html", "main"):
            continue
        n = len(node.text(deep=True, strip=True, separator=" "))
        if n < SHORT_CHARS or _link_density(node) >= LINK_DENSITY:
            node.remove()


def _drop_dense_blocks(body) -> None:
    """Under <body>, drop the top-level blocks that are mostly links (menus without names)."""
    node = body.child
    while node is not None:
        nxt = node.next
        if node.tag in ("table", "ul", "ol", "dl", "div", "p", "center", "form", "section", "span", "a"):
            if node.text(deep=True, strip=True) and _link_density(node) >= BODY_LINK_DENSITY:
                node.remove()
        node = nxt


def _fast(html: str | bytes, mode: str) -> str | None:
    """Main content (``mode="main"``) or the whole body's text on lexbor; None when unparsable."""
    parser = _get_lexbor()
    tree = parser(html)
    body = tree.body
    if body is None:
        return ""
    title = ""
    if mode == "main":
        t = tree.css_first("title")
        if t is not None:
            title = _RE_SPACE.sub(" ", t.text(deep=True)).strip()
    _remove_all(body, ", ".join(_FAST_DROP) + ", " + _FAST_HIDDEN)
    if mode == "whole":
        return _serial_text(body.html or "")
    _remove_all(body, _NAV_SEMANTIC, keep=lambda n: n.tag == "main")
    _remove_all(body, _NAV_MAYBE, keep=lambda n: _link_density(n) < LINK_DENSITY)
    root = None
    mains = [m for m in body.css(_MAIN) if m.text(deep=True, strip=True)]
    if mains:
        # The main landmark with the most text (a page may mark a small widget as main too).
        root = max(mains, key=lambda m: len(m.text(deep=True, strip=True)))
    else:
        articles = body.css("article")
        if len(articles) == 1:
            root = articles[0]
    if root is None:
        # No landmark: the body, without the header and footer elements that belong to the page
        # rather than to a section of it, and without top-level blocks made of links.
        root = body
        _remove_all(body, "header, footer", keep=lambda n: _in_section(n, body))
        _drop_dense_blocks(body)
    _drop_named(root)
    text = _serial_text(root.html or "")
    if not text:
        return ""
    # The page's title tells apart pages whose main text is short or shared (index pages, stubs),
    # unless the content has a heading of its own (<h1>), or opens with the title already: the
    # title is often the heading plus the site's name, which every page shares, and would make
    # true near-duplicates whose headings agree (a page and its copy elsewhere) look apart.
    if title and not _titled(text, title) and not _has_heading(root):
        text = f"{title}\n{text}"
    return text


_WORD = re.compile(r"\w+")


def _has_heading(root) -> bool:
    h = root.css_first("h1")
    return h is not None and bool(h.text(deep=True, strip=True))


def _titled(text: str, title: str) -> bool:
    """Whether the text's first lines carry the title: one holds the other, or they hold at
    least half of the title's words."""
    t = title.casefold()
    head = text.split("\n", 3)[:3]
    for line in head:
        line = line.casefold()
        if len(line) >= 2 and (line in t or t in line):
            return True
    words = set(_WORD.findall(t))
    if not words:
        return True
    seen = set(_WORD.findall(" ".join(head).casefold()))
    return 2 * len(words & seen) >= len(words)


def _in_section(node, stop) -> bool:
    p = node.parent
    while p is not None and p.mem_id != stop.mem_id:
        if p.tag in ("article", "section", "main", "aside", "nav"):
            return True
        p = p.parent
    return False


def _main(html: str, url: str | None) -> str | None:
    if not _get_lexbor():
        require("selectolax", "io")
    out = _fast(html, "main")
    if out:
        return out
    return _whole(html)


def _extract(html: str | bytes, mode: str = "main", *, url: str | None = None) -> str | None:
    """Like :func:`extract_text`, but ``None`` when the markup could not be parsed at all."""
    if mode not in HTML_MODES:
        raise ConfigError(f"The 'html' mode must be one of 'main', 'whole', 'article'. Got {mode!r} instead.")
    if isinstance(html, (bytes, bytearray, memoryview)):
        html = decode_html(bytes(html))
    if not html or html.isspace():
        return ""
    if "\x00" in html:
        html = html.replace("\x00", "")
    if mode == "main":
        return _main(html, url)
    if mode == "article":
        return _article(html, url)
    return _whole(html)


def extract_text(html: str | bytes, mode: str = "main", *, url: str | None = None) -> str:
    """The plain text of an HTML page (see the module docstring for the two modes).

    Bytes are decoded with :func:`decode_html`. Never raises for bad input (only for a bad ``mode``,
    or MissingDependencyError when ``mode="main"`` and trafilatura is not installed); returns ``""``
    when there is no text to be had.
    """
    return _extract(html, mode, url=url) or ""
