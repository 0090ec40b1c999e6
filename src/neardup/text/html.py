"""HTML to plain text, for deduplication.

:func:`extract_text` has three modes:

``"main"`` (the default)
    The main content of the page, found on the lexbor HTML5 parser (selectolax) by generic rules
    (the ``main``/``article`` landmarks, ARIA navigation roles, link density, the class and id
    vocabulary of navigation; see ``docs/html.md``), so that navigation menus, footers and cookie
    banners shared by every page of a site do not make unrelated pages look alike. The page's
    ``<title>`` comes first unless the content has a heading of its own. When nothing is left
    (a page that is all navigation) the whole visible text is used instead, so a page with
    visible text never comes back empty.
``"whole"``
    All the visible text of ``<body>``: ``script``, ``style``, ``noscript``, ``template``,
    ``svg``, ``iframe``, ``object``, ``embed``, ``canvas``, comments and hidden elements are
    dropped; block elements end lines, table cells are separated by a space, inline elements do
    not separate words; runs of white space inside a line become one space. Parsed with lexbor,
    else lxml, else the standard library's ``html.parser``.
``"article"``
    trafilatura's article extraction (comments dropped, tables kept, recall favoured), or the
    whole text when trafilatura finds nothing.

:func:`extractor_id` names the extraction a mode runs (rules version, parser and detector
versions), for the config fingerprint. All modes are deterministic (same input and library
versions, same output) and never raise for bad markup: garbage comes back as ``""`` (or as
whatever text the parser could recover). The readers use :func:`_extract`, which tells a parser
failure (``None``) from a page without text (``""``).

:func:`decode_html` (of :mod:`neardup.text.html_charset`) turns bytes into text: a byte-order mark, else the charset given by the caller
(the HTTP header), else a ``<meta charset>``/``http-equiv`` in the first 4 KB, else an
``<?xml encoding?>``, else UTF-8 when the bytes are UTF-8, else charset-normalizer's detection.
``iso-8859-1``, ``latin-1`` and ``us-ascii`` are read as ``windows-1252``, as browsers do.
"""

from __future__ import annotations

import functools
import re

from html import unescape as _unescape

from ..errors import ConfigError, require
from . import html_blocks
from .html_charset import decode_html, declared_charset, detect_charset, utf8_page
from .html_fallback import finish_lines, get_lxml, whole_lxml, whole_stdlib
from .html_jsonld import from_description, json_ld_body
from .html_layout import BODY_LINK_DENSITY, SHORT_CHARS, common_ancestor, drop_dense_blocks, out_of_links
from .html_rules import (FORM_FIELDS, REPEATED_LINE_CHARS, TAIL_START, Holder, drop_forms, drop_headed_asides,
                         drop_secondary, once, without_byline, without_line_furniture, without_link_inserts,
                         without_tail, without_tail_titles)
from .html_scan import FLAGS as _FLAGS
from .html_scan import MARK_CONSENT as _MARK_CONSENT
from .html_scan import MARK_HIDDEN as _MARK_HIDDEN
from .html_scan import MARK_NAME as _MARK_NAME
from .html_scan import MARK_ROLE as _MARK_ROLE
from .html_scan import MARK_SECONDARY as _MARK_SECONDARY
from .html_scan import TextWithFingerprint
from .html_scan import lines as _lines
from .html_scan import scan as _scan
from .html_scan import stats as _stats
from .html_titles import has_heading, outer_heading, title_parts, with_title
from .html_tree import get_ids, get_lexbor, in_section, is_under, link_density

__all__ = ["extract_text", "extract_utf8", "decode_html", "declared_charset", "detect_charset", "extractor_id",
           "utf8_page", "HTML_MODES", "RULES_VERSION"]

HTML_MODES = ("main", "whole", "article")
#: The version of the main-content rules below; bumped whenever a rule changes an output (what
#: each version changed: docs/html.md, "What each rules version changed").
RULES_VERSION = 16

_trafilatura = None


def _whole(html: str) -> str | None:
    if get_lexbor():
        return _fast(html, "whole")
    lh = get_lxml()
    if lh:
        try:
            return whole_lxml(lh, html)
        except RecursionError:  # pragma: no cover - iterwalk does not recurse
            return None
    return whole_stdlib(html)


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
        return finish_lines([out])
    return _whole(html)


# ------------------------------------------------------------------------------------------------
# Main content on lexbor (selectolax). The rules are generic HTML semantics and vocabulary; none
# names a site or a generator.
#
# Speed: every CSS query walks the whole tree in C, and every Python call per node costs more
# than lexbor's parse of the page, so the work is done in few queries and no walk in Python. One
# pass of neardup._htmlscan over the markup (text/html_scan.py) does the rest before the parse:
# - block boundaries are marked by a form feed in front of every block tag (a form feed is HTML
#   white space, so the parser keeps it where it stands, tables included), and a space in front of
#   every cell; the text is then lexbor's own text() of the kept subtree, cut at the form feeds,
#   so inline elements never separate words;
# - link text is marked (\x01 after <a ...>, \x02 before </a>), so a subtree's link density is
#   read off its text in one C call;
# - the start tags whose class or id names navigation, that are hidden, or that have a navigation
#   role get an attribute (data-neardup-name, -hidden, -role), so each rule is one cheap query;
# - scripts, styles, text areas, iframes and comments are cut out (they are dropped anyway);
# - the class and id names of the navigation vocabulary, the elements the page has and the
#   attributes that hide or give roles are collected, and only what the page has is queried.
#
# A subtree's text is lexbor's own text_content (node.text_lexbor(): the text nodes in document
# order, as node.text() gives them, but concatenated in C where text() runs a Python-level
# callback per node); element names are compared by tag id.

# Dropped wherever they are, when the page has them (script, style, textarea and iframe are cut
# out by the scan already).
# (rt and rp: a ruby's annotations, the reading of its characters shown above them, and the
# parentheses around it for browsers without ruby: not words of the text.)
_DROP_FLAGS = ("noscript", "template", "svg", "object", "embed", "canvas", "math", "select", "button", "rt", "rp")
_STYLE_HIDDEN = '[style*="display:none"], [style*="display: none"], [style*="visibility:hidden"]'
# Landmarks that are navigation by definition (HTML and ARIA): dropped wherever they are.
_NAV_FLAGS = ("nav", "dialog")
_NAV_ROLES = ('[role="navigation"], [role="banner"], [role="contentinfo"], [role="search"], '
              '[role="menu"], [role="menubar"], [role="toolbar"], [role="tablist"]')
# Landmarks that are often navigation but sometimes content (footnotes, boxed asides), aside and
# role=complementary, are among the landmarks below; they are dropped when mostly links.
_LANDMARK_FLAGS = ("main", "article", "header", "footer", "h1", "aside")
# The words of class and id names that mean "not the content" are in src/neardup/_htmlscan.c
# (and html_scan.py): a name token matches when it is one of nav, navigation, menu, sidebar,
# breadcrumb(s), footer, banner, masthead, topbar, pager, pagination, related, skiplink, cookie,
# share, social, copyright, searchbox, facet(s), filter(s), refinement(s) (the faceted navigation
# of a listing), or starts or ends with one ("navlinks", "topnav"), or is
# exactly one of toc, bar, crumbs, search, top, bottom, foot, skip, hidden, sr-only,
# visually-hidden where it opens the name ("top-bar", not "top-0") or ends it after a token that is
# no layout property ("side-bar", not "overflow-hidden" or "md:hidden"): in utility class names
# ("margin-bottom-small") these words say how an element is drawn. "header" is not among them: code headers and section headers are headings of
# the content.
#
# A vocabulary match is dropped when its links make at least this share of its text, or when
# it is short (under SHORT_CHARS): what navigation looks like (a boxed note called "sidebar" is
# long, and prose).
LINK_DENSITY = 0.3
# A main text shorter than this, on a page with <noscript>, is compared with the text of the
# page as shown without scripts.
NOSCRIPT_CHARS = 500
# ...and taken when it is twice as long and has this many more characters (a "please enable
# JavaScript" line is no content).
NOSCRIPT_GAIN_CHARS = 200
OUTER_HEADING = True
# Whether the block classifier runs after the rules.
USE_CLASSIFIER = False
# A main text shorter than this is compared with the article body (or description) of the
# page's JSON-LD data, which a page whose scripts write the content often carries.
JSON_LD_CHARS = 1000
# A product's description in the page's JSON-LD this long or longer marks where its text starts.
PRODUCT_DESCRIPTION_CHARS = 200
# A link (<a>) holding this many characters is a card (a teaser wrapped in a link, its paragraph
# included), never a menu item, whatever its class names say (the words of the navigation
# vocabulary are also those of how a link is drawn: a "bar", a "pill").
CARD_LINK_CHARS = 200
# A block named like navigation that holds this share of the root's text, under BODY_LINK_DENSITY
# links (not a menu), is a wrapper named after its layout ("has-sidebar"): it stays.
NAMED_WRAPPER_SHARE = 0.7

# A main landmark (or, since rules 10, a lone article) with less than this share of the body's
# text is a widget, not the content.
SMALL_MAIN = 0.1
# ...unless the body's passes drop it and keep under this many times its text out of links (a
# frame around a stub, not a page around a widget).
SMALL_MAIN_OUTWEIGHED = 3
# The element holding several articles is the root when it holds this share of the body's text.
ARTICLES_SHARE = 0.5
# ...looked at only when shorter than this (the body's text is one more walk of the tree); the
# same bound for a small main or lone article.
SMALL_MAIN_CHARS = 1500
# A main landmark holding one article whose text is at least this share of the main's is the
# frame of the article (its related stories, comments and sign-up boxes beside it): the article
# is the content.
ARTICLE_IN_MAIN = 0.5
# The footer elements inside a root that is a main landmark or an article are dropped.
ROOT_FOOTERS = True
# ...and so are the aside elements (role=complementary) with links, under this many characters.
ASIDE_CHARS = 1000
# The captions of figures (figcaption) are dropped.
DROP_CAPTIONS = True
# When the rules leave nothing, the main landmark's text rather than the whole page's (False:
# the whole page).
LANDMARK_FALLBACK = True
# A main landmark holding a grid of cards (MAIN_CARDS articles or more) and under this share of
# the body's text out of links is the listing part of the page; its description (a category's
# text, a blog's introduction) stands outside it: the body is the root.
MAIN_OUTWEIGHED = 0.5
MAIN_CARDS = 3


def _card_grid_outweighed(main, own: int, articles, body) -> bool:
    """Whether ``main`` (``own``: its characters out of links) holds MAIN_CARDS articles or
    more and under MAIN_OUTWEIGHED of the body's text out of links."""
    cards = 0
    for a in articles:
        cards += is_under(a, main)
        if cards >= MAIN_CARDS:
            break
    else:
        return False
    chars, links = _stats(body.text_lexbor())
    return own < MAIN_OUTWEIGHED * (chars - links)


def _css_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _named_selector(flags: int, classes: list[str], ids: list[str]) -> str:
    """A selector for the elements whose class or id names navigation, or "" when none does:
    the scan's mark, or (when the page has attributes like the marks) the names themselves."""
    if not flags & _FLAGS["OWN_MARKS"]:
        return f"[{_MARK_NAME}]" if flags & _FLAGS["NAMED"] else ""
    parts = {f"[class~={_css_string(c)}]" for c in classes}
    parts.update(f"[id={_css_string(i)}]" for i in ids)
    return ", ".join(sorted(parts))


def _present(flags: int, names) -> list[str]:
    return [n for n in names if flags & _FLAGS[n.upper()]]


@functools.lru_cache(maxsize=4096)  # a function of the flags: pages of a site share them
def _drop_selector(flags: int, navigation: bool) -> str:
    """What is dropped unconditionally, as far as the page has it ("" when nothing)."""
    parts = _present(flags, _DROP_FLAGS + (_NAV_FLAGS if navigation else ()))
    own = flags & _FLAGS["OWN_MARKS"]
    if flags & (_FLAGS["HIDDEN"] | _FLAGS["STYLE_HIDDEN"]):
        parts.append("[hidden], " + _STYLE_HIDDEN if own else f"[{_MARK_HIDDEN}]")
    if navigation and flags & _FLAGS["ROLE_NAV"]:
        parts.append(_NAV_ROLES if own else f"[{_MARK_ROLE}]")
    return ", ".join(parts)


@functools.lru_cache(maxsize=4096)
def _landmark_selector(flags: int) -> str:
    parts = _present(flags, _LANDMARK_FLAGS)
    if flags & _FLAGS["ROLE_MAIN"]:
        parts.append('[role="main"]')
    if flags & _FLAGS["ROLE_COMPLEMENTARY"]:
        parts.append('[role="complementary"]')
    return ", ".join(parts)


def _remove_all(root, selector: str, keep=None) -> None:
    """Remove the elements ``selector`` matches, except those ``keep`` keeps: it is asked only
    for the elements named in its ``tags`` (most matches are links and spans: no call)."""
    # remove() detaches without freeing (lexbor frees the whole document at once), so a node
    # matched inside an already removed subtree is still valid, and removing it again is
    # harmless; decompose() would free it under the caller's feet.
    tags = keep.tags if keep is not None else ()
    for node in root.css(selector):
        if node.tag_id not in tags or not keep(node):
            node.remove()


def _scanned(html: str | bytes, cut_navigation: bool = False, page: bool = False):
    """The scan of the markup; ``cut_navigation`` for "main" mode only, which drops every
    ``nav`` and ``dialog`` element: the scan replaces those it can prove self-contained by empty
    ones, so lexbor does not parse them (the same texts; "whole" mode keeps them); ``page``: with
    the whole-page fingerprint (its sixth item; None without)."""
    if isinstance(html, (bytearray, memoryview)):
        html = bytes(html)
    try:
        return _scan(html, cut_navigation, page)
    except UnicodeEncodeError:  # lone surrogates in a str: as lexbor would see them, replaced
        return _scan(html.encode("utf-8", "replace"), cut_navigation, page)


def _fast(html: str | bytes, mode: str, scanned=None, noscript: bool = False, small_main: bool = False) -> str | None:
    """Main content (``mode="main"``) or the whole body's text on lexbor. ``html`` is a str, or
    UTF-8 bytes; ``scanned`` its :func:`_scanned` when the caller has it already; ``noscript``:
    the page as a browser without scripts shows it (``noscript`` elements kept); ``small_main``:
    a small main landmark is the root all the same."""
    marked, flags, raw_title, classes, ids, _page = scanned or _scanned(html)
    if noscript:
        flags &= ~_FLAGS["NOSCRIPT"]
    tree = get_lexbor()(marked)
    body = tree.body
    if body is None:
        return ""
    if mode == "whole":
        drop = _drop_selector(flags, navigation=False)
        if drop:
            _remove_all(body, drop)
        return _lines(body.text_lexbor())
    title = ""
    if raw_title:
        title = " ".join((_unescape(raw_title) if "&" in raw_title else raw_title).split())
    # One query for everything dropped unconditionally (each query walks the whole tree), none
    # when the page has none of it.
    tag = get_ids()
    main_id = tag.main
    drop = _drop_selector(flags, navigation=True)
    if drop:
        # most of the page's text goes only when as dense in links as a menu: a grid of products
        _remove_all(body, drop, keep=Holder(body, main_id, SHORT_CHARS, BODY_LINK_DENSITY))
    mains, articles, page_parts, asides, heads = [], [], [], [], []
    landmarks = _landmark_selector(flags)
    for node in body.css(landmarks) if landmarks else ():
        tid = node.tag_id
        if tid == tag.h1:
            heads.append(node)
        elif tid == main_id or node.attributes.get("role") == "main":
            mains.append(node)
        elif tid == tag.article:
            articles.append(node)
        elif tid in tag.page_parts:
            page_parts.append(node)
        else:
            asides.append(node)
    for node in asides:
        if link_density(node) >= LINK_DENSITY:
            node.remove()
    root = small = listed = None
    root_text = None  # the root's text while nothing in it is removed (one walk less)
    sized = []
    for m in mains:
        t = m.text_lexbor()
        chars, links = _stats(t)
        if chars:
            sized.append((chars, links, t, m))
    if sized:
        # The main landmark with the most text (a page may mark a small widget as main too).
        chars, links, root_text, root = max(sized, key=lambda x: x[0])
        if chars < SMALL_MAIN_CHARS and chars < SMALL_MAIN * _stats(body.text_lexbor())[0]:
            if not small_main:
                small, small_own, root, root_text = root, chars - links, None, None
        elif MAIN_OUTWEIGHED and not small_main and _card_grid_outweighed(root, chars - links, articles, body):
            root, root_text = None, None
        elif ARTICLE_IN_MAIN and articles:
            inner = []
            for a in articles:
                if is_under(a, root):
                    inner.append(a)
                    if len(inner) > 1:
                        break  # cards or posts: the main stays the root
            if len(inner) == 1 and _stats(inner[0].text_lexbor())[0] >= ARTICLE_IN_MAIN * chars:
                root, root_text = inner[0], None
    if root is None and len(articles) == 1:
        root = articles[0]
        if small is None:
            root_text = root.text_lexbor()
            # (a text's characters are at most its length: most articles are told by it)
            if len(root_text) < SMALL_MAIN_CHARS and _stats(root_text)[0] < SMALL_MAIN * _stats(body.text_lexbor())[0]:
                root = root_text = None  # a teaser or a widget marked as an article, not the page's content
    if root is None and len(articles) > 1 and _MARK_SECONDARY not in articles[0].attributes:
        # Posts of a thread (or cards) without a main landmark: the element that holds them all,
        # when it holds most of the page's text, rather than the body with its header's menus.
        # Articles named as comments are the readers' thread under a story, not the content.
        root = common_ancestor(articles, body)
        if root is not None and _stats(root.text_lexbor())[0] < ARTICLES_SHARE * _stats(body.text_lexbor())[0]:
            root = None
    if root is None:
        # No landmark: the body, without the header and footer elements that belong to the page
        # rather than to a section of it, and without top-level blocks made of links.
        root = body
        for node in page_parts:
            if not in_section(node, body):
                node.remove()
        found = drop_dense_blocks(body, title_parts(title))
        if found is not None:
            # The block that holds the page's heading among blocks of links is the content; when
            # it is made of links itself, the content is a list of links (a table of contents, an
            # index), kept whole: the rules for named links below do not apply to it.
            root, root_text = found, None
            if link_density(found) >= BODY_LINK_DENSITY:
                listed = found
        if small is not None and not is_under(small, body) and (
                out_of_links(body) < SMALL_MAIN_OUTWEIGHED * small_own):
            # The body's passes dropped the small main with the block around it and kept little
            # more text of their own: what they kept is the frame (a second site's template
            # around a stub), and the main is the content. A removed subtree is emptied, so the
            # page is read again with the main as the root.
            return _fast(html, mode, scanned, noscript, small_main=True)
    if ASIDE_CHARS and root is not body:
        # Inside the content, a short aside (or role=complementary) with links is beside it all
        # the same: a box of related links, a sign-up box, a forum's user card beside a post (a
        # footnote without links stays).
        for node in asides:
            if node.mem_id != root.mem_id and is_under(node, root):
                c, l = _stats(node.text_lexbor())
                if c < ASIDE_CHARS and l:
                    node.remove()
                    root_text = None
    if ROOT_FOOTERS and root is not body:
        # The footers inside the content (an article's tags, sharing links, author line, notes
        # on its licence or its corrections, a post's signature): about the content, not of it.
        for node in page_parts:
            if node.tag_id == tag.footer and node.mem_id != root.mem_id and is_under(node, root):
                node.remove()
                root_text = None
    if DROP_CAPTIONS and flags & _FLAGS["FIGCAPTION"]:
        # A figure's caption (and its credit) is the picture's, not the text's.
        for node in root.css("figcaption"):
            node.remove()
            root_text = None
    named = _named_selector(flags, classes, ids) if listed is None else ""
    if named:
        root_chars = None
        for node in root.css(named):
            if node.tag_id in tag.roots or node.tag_id in tag.headings:
                continue  # a heading's id is its title made a name ("...-related-data"), not a role
            chars, links = _stats(node.text_lexbor())
            if node.tag_id == tag.link and chars >= CARD_LINK_CHARS > 0:
                continue  # a link around a whole teaser is a card, whatever its class says
            if chars < SHORT_CHARS or links >= LINK_DENSITY * chars:
                if NAMED_WRAPPER_SHARE and chars >= SHORT_CHARS and links < BODY_LINK_DENSITY * chars:
                    # a wrapper named after its layout ("has-sidebar") around most of the content
                    if root_chars is None:
                        root_chars = _stats(root_text if root_text is not None else root.text_lexbor())[0]
                    if chars > NAMED_WRAPPER_SHARE * root_chars:
                        continue
                node.remove()
                root_text = None
            elif _MARK_CONSENT in node.attributes:
                node.remove()  # a box asking to accept cookies, however long its text
                root_text = None
    if flags & _FLAGS["SECONDARY"] and not flags & _FLAGS["OWN_MARKS"]:
        if drop_secondary(root):
            root_text = None
    if FORM_FIELDS and flags & _FLAGS["FORM"] and drop_forms(root):
        root_text = None
    if USE_CLASSIFIER and html_blocks.classify_blocks(root):
        root_text = None
    text, cut = _root_lines(root_text if root_text is not None else root.text_lexbor())
    if flags & _FLAGS["ASIDE_HEADING"] and text and drop_headed_asides(root):
        text, cut = _root_lines(root.text_lexbor())
    if not text:
        return ""
    if REPEATED_LINE_CHARS:
        text = once(text)
    if TAIL_START < 1:
        text = without_tail(text, cut)
    text = without_line_furniture(without_byline(text))
    # The page's title tells apart pages whose main text is short or shared (index pages, stubs),
    # unless the content has a heading of its own (<h1>), or opens with the title already: the
    # title is often the heading plus the site's name, which every page shares, and would make
    # true near-duplicates whose headings agree (a page and its copy elsewhere) look apart.
    if has_heading(root, heads):
        return text
    # A heading the page shows above its content (the content's <h1> outside the main landmark
    # or article) names the page better than the title, which carries the site's name.
    heading = outer_heading(root, body, heads) if OUTER_HEADING else ""
    if heading:
        return with_title(text, heading)
    return with_title(text, title, html)


def _main(html: str | bytes, url: str | None, with_page: bool = False):
    """The main content (None: unparsable); with ``with_page``, as :class:`TextWithFingerprint` with the
    whole-page fingerprint the same scan computed."""
    if not get_lexbor():
        require("selectolax", "io")
    scanned = _scanned(html, cut_navigation=True, page=with_page)
    text = _main_text(html, url, scanned)
    return TextWithFingerprint(text, scanned[5]) if with_page else text


def _root_lines(raw: str) -> tuple[str, int]:
    """The root's text (``raw``, with the scan's marks) as lines, without its link inserts and the
    titles of other pages that end it; and the characters of lines those titles took."""
    kept = without_tail_titles(raw)
    if len(kept) == len(raw):
        return _lines(without_link_inserts(raw)), 0
    return _lines(without_link_inserts(kept)), len(_lines(raw[len(kept):])) + 1


def _main_text(html: str | bytes, url: str | None, scanned) -> str | None:
    out = _fast(html, "main", scanned)
    if scanned[1] & _FLAGS["NOSCRIPT"] and len(out or "") < NOSCRIPT_CHARS:
        # A page whose scripts write the content shows little; its <noscript> may hold the
        # content as it is served to readers without scripts (and to crawlers).
        alt = _fast(html, "main", scanned, noscript=True)
        if alt and len(alt) > 2 * len(out or "") and len(alt) - len(out or "") >= NOSCRIPT_GAIN_CHARS:
            out = alt
    if len(out or "") < JSON_LD_CHARS and scanned[1] & _FLAGS["JSON_LD"]:
        data = html if isinstance(html, bytes) else html.encode("utf-8", "replace")
        body = json_ld_body(data, _markup_text)
        if body and len(body) > 2 * len(out or ""):
            out = with_title(body, " ".join(_unescape(scanned[2] or "").split()), data)
    if out and PRODUCT_DESCRIPTION_CHARS:
        # A product page's text starts with the product's description, which its schema.org
        # data gives: what comes between the page's first line (the product's name) and it is
        # the buy box (prices, sizes, stock, delivery), the same on every product of the shop.
        if scanned[1] & _FLAGS["PRODUCT_DATA"]:
            data = html if isinstance(html, bytes) else html.encode("utf-8", "replace")
            desc = json_ld_body(data, _markup_text, product=True)
            if len(desc) >= PRODUCT_DESCRIPTION_CHARS:
                out = from_description(out, desc)
    if out:
        return out
    if LANDMARK_FALLBACK and scanned[1] & (_FLAGS["MAIN"] | _FLAGS["ARTICLE"] | _FLAGS["ROLE_MAIN"]):
        # The rules took everything from the page (a main landmark made of links, all teaser
        # cards): the landmark's text as it stands says the content better than the whole page
        # with its menus and banners.
        out = _landmark_text(scanned)
        if out:
            return out
    if not scanned[1] & (_FLAGS["NAV"] | _FLAGS["DIALOG"]):
        return _fast(html, "whole", scanned)  # no navigation was cut: the same markup
    return _fast(html, "whole")  # scanned again, navigation kept


def _landmark_text(scanned) -> str:
    """The text of the page's main landmark (``main``, role=main or ``article``) with the most
    text, without what the main mode drops unconditionally (navigation, hidden elements,
    controls); "" when none has text."""
    marked, flags = scanned[0], scanned[1]
    body = get_lexbor()(marked).body
    if body is None:
        return ""
    drop = _drop_selector(flags, True)
    if drop:
        _remove_all(body, drop)
    best, best_chars = "", 0
    for node in body.css('main, [role="main"], article'):
        text = node.text_lexbor()
        chars = _stats(text)[0]
        if chars > best_chars:
            best, best_chars = text, chars
    return _lines(best) if best_chars else ""


def _markup_text(markup: str) -> str:
    return _fast(markup, "whole") or ""


def _dist_version(name: str) -> str:
    found = _dist_info_version(name)
    if found is not None:
        return found
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "missing"


def _dist_info_version(name: str) -> str | None:
    """``importlib.metadata.version(name)`` read from the ``.dist-info`` folder it would take,
    without importing ``importlib.metadata`` (with the lookups, ~40 ms of every command that
    names its extractor); None (ask importlib.metadata) unless the first folder of ``sys.path``
    that holds the distribution holds exactly one ``.dist-info`` of it and no ``.egg-info``."""
    import os
    import sys

    want = re.sub(r"[-_.]+", "_", name).lower()
    for entry in sys.path:
        try:
            children = os.listdir(entry or ".")
        except OSError:
            continue
        hits = [c for c in children if c.lower().endswith((".dist-info", ".egg-info"))
                and re.sub(r"[-_.]+", "_", c.lower().rpartition(".")[0].partition("-")[0]) == want]
        if not hits:
            continue
        if len(hits) != 1 or not hits[0].lower().endswith(".dist-info"):
            return None
        try:
            with open(os.path.join(entry or ".", hits[0], "METADATA"), encoding="utf-8") as fh:
                for line in fh:
                    if line.startswith("Version:"):
                        return line[len("Version:"):].strip()
                    if not line.strip():  # the end of the headers
                        break
        except OSError:
            pass
        return None
    return None


@functools.lru_cache(maxsize=None)
def extractor_id(mode: str = "main") -> str:
    """Names the extraction that ``mode`` runs here, with the versions that decide its output
    (recorded in the dedup config's fingerprint: another extractor gives other texts).

    >>> extractor_id("main")  # doctest: +SKIP
    'neardup-main/1 selectolax/1.0.2'
    """
    if mode not in HTML_MODES:
        raise ConfigError(f"The 'html' mode must be one of 'main', 'whole', 'article'. Got {mode!r} instead.")
    # charset-normalizer decides the text of pages that declare no encoding.
    detector = f" charset-normalizer/{_dist_version('charset-normalizer')}"
    if mode == "article":
        return f"trafilatura/{_dist_version('trafilatura')} neardup-whole/{RULES_VERSION} " + _whole_parser() + detector
    return f"neardup-{mode}/{RULES_VERSION} " + _whole_parser() + detector


def _whole_parser() -> str:
    if get_lexbor():
        return f"selectolax/{_dist_version('selectolax')}"
    if get_lxml():
        return f"lxml/{_dist_version('lxml')}"
    return "html.parser"


def _with_page(text: str | None, html: str | bytes, with_page: bool):
    return TextWithFingerprint(text, _scanned(html, page=True)[5]) if with_page else text


def _extract(html: str | bytes, mode: str = "main", *, url: str | None = None, with_page: bool = False):
    """Like :func:`extract_text`, but ``None`` when the markup could not be parsed at all; with
    ``with_page``, as :class:`TextWithFingerprint` with the page's whole-page fingerprint."""
    if mode not in HTML_MODES:
        raise ConfigError(f"The 'html' mode must be one of 'main', 'whole', 'article'. Got {mode!r} instead.")
    if isinstance(html, (bytes, bytearray, memoryview)):
        data = bytes(html)
        page = utf8_page(data) if mode != "article" and get_lexbor() else None
        if page is not None:
            return extract_utf8(page, mode, url=url, with_page=with_page)
        html = decode_html(data)
    if not html or html.isspace():
        return _with_page("", html or "", with_page)
    if "\x00" in html:
        html = html.replace("\x00", "")
    if mode == "main":
        return _main(html, url, with_page)
    if mode == "article":
        return _with_page(_article(html, url), html, with_page)
    return _with_page(_whole(html), html, with_page)


def extract_utf8(page: bytes, mode: str = "main", *, url: str | None = None, with_page: bool = False):
    """The text of a page :func:`utf8_page` returned, as :func:`extract_text` gives it for the
    decoded page (``None``: the markup could not be parsed), read from the bytes. Modes "main"
    and "whole" (on lexbor); "article" decodes the page for trafilatura. ``with_page``: as
    :func:`_extract`."""
    if mode not in ("main", "whole") or not get_lexbor():
        return _extract(page.decode("utf-8"), mode, url=url, with_page=with_page)
    if b"\x00" in page:
        page = page.replace(b"\x00", b"")
    if mode == "main":
        return _main(page, url, with_page)
    return _with_page(_fast(page, "whole"), page, with_page)


def extract_text(html: str | bytes, mode: str = "main", *, url: str | None = None) -> str:
    """The plain text of an HTML page (see the module docstring for the two modes).

    Bytes are decoded with :func:`decode_html`. Never raises for bad input (only for a bad ``mode``,
    or MissingDependencyError when ``mode="main"`` and trafilatura is not installed); returns ``""``
    when there is no text to be had.
    """
    return _extract(html, mode, url=url) or ""
