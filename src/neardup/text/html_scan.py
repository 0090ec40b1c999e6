"""The markup scan of the main-content extraction: ``neardup._htmlscan`` when it is built, else
the same functions in Python (same answers, byte for byte; tests/test_html_scan.py compares them).

See ``src/neardup/native/_htmlscan.c`` for what :func:`scan`, :func:`lines`, :func:`stats` and
:func:`is_utf8` do (the sixth item of :func:`scan`'s answer is the whole-page fingerprint, defined
there; None unless ``page_fingerprint`` is asked for). The Python versions below follow the C
code step by step, so that a machine without a compiler extracts the same texts (slower), and so
that the C code has an oracle to be fuzzed against.
"""

from __future__ import annotations

import re

import xxhash

from .html_scan_cuts import MAX_TAG, NavigationRegion, SvgCut, svg_raw_ok

try:
    from .. import _htmlscan
except ImportError:  # not built
    _htmlscan = None

__all__ = ["scan", "lines", "stats", "is_utf8", "FLAGS", "ASIDE_WORDS", "compiled", "TextWithFingerprint",
           "PAGE_FINGERPRINT_VERSION"]

#: The definition of the whole-page fingerprint (the sixth item of :func:`scan`), recorded by an
#: index that stores them (``IndexConfig.page_fingerprints``). 2: XXH3-64 of the visible text
#: tokens the markup scan reads (native/_htmlscan.c). Before (an index that records none): the
#: fingerprint of the text "whole" mode extracts, under the index's normalization.
PAGE_FINGERPRINT_VERSION = 2

MARK = "\x0c"
LINK_OPEN = "\x01"
LINK_CLOSE = "\x02"
#: The attributes the scan adds to start tags (see _htmlscan.c).
MARK_NAME = "data-neardup-name"
MARK_HIDDEN = "data-neardup-hidden"
MARK_ROLE = "data-neardup-role"
MARK_SECONDARY = "data-neardup-secondary"
MARK_CONSENT = "data-neardup-consent"

_TAG_FLAGS = {"main": 1 << 0, "article": 1 << 1, "header": 1 << 2, "footer": 1 << 3, "h1": 1 << 4,
              "aside": 1 << 5, "nav": 1 << 6, "dialog": 1 << 7, "noscript": 1 << 8, "template": 1 << 9,
              "svg": 1 << 10, "object": 1 << 11, "embed": 1 << 12, "canvas": 1 << 13, "math": 1 << 14,
              "select": 1 << 15, "button": 1 << 16, "figcaption": 1 << 17,
              "form": 1 << 18, "rt": 1 << 19, "rp": 1 << 19}
#: Bit of each flag of scan(): elements (upper-cased tag names) and attributes.
FLAGS = {name.upper(): bit for name, bit in _TAG_FLAGS.items()}
FLAGS.update({"HIDDEN": 1 << 20, "STYLE_HIDDEN": 1 << 21, "ROLE_NAV": 1 << 22, "ROLE_MAIN": 1 << 23,
              "ROLE_COMPLEMENTARY": 1 << 24, "NAMED": 1 << 25, "OWN_MARKS": 1 << 26,
              "SECONDARY": 1 << 27, "PRODUCT_DATA": 1 << 28, "JSON_LD": 1 << 29, "ASIDE_HEADING": 1 << 30})

#: The words that open a heading of what a page recommends beside its content ("Related posts",
#: "Customers also viewed"): ASIDE_HEADING when the text of an h2-h6 opens with one (the C scan's
#: list, compared by a test).
ASIDE_WORDS = (
    "related", "you may also like", "you might also like", "you may like", "you might like", "recommended",
    "also viewed", "also bought", "also purchased", "also like", "similar items", "similar products",
    "similar posts", "similar articles", "similar stories", "similar threads", "similar topics",
    "similar questions", "more from", "more like this", "more to explore", "more to consider",
    "customers also", "people also", "frequently bought", "popular", "trending", "most read", "most popular",
    "read next", "up next", "don't miss", "more stories", "more articles", "more topics", "more posts",
    "more threads", "more videos", "more news", "other topics", "other posts", "other threads",
    "other articles", "other stories", "other products", "recently viewed", "sponsored", "suggested topics",
    "suggested posts", "suggested threads", "suggested articles", "suggested products",
    # German, French, Spanish, Italian, Portuguese, Dutch, Polish
    "mehr zum thema", "das könnte sie auch interessieren", "das könnte dich auch interessieren",
    "weitere artikel", "weitere beiträge", "weitere nachrichten", "ähnliche artikel", "ähnliche beiträge",
    "verwandte artikel", "verwandte beiträge", "empfohlene artikel", "empfohlene beiträge", "meistgelesen",
    "meist gelesen", "beliebte beiträge", "auch interessant", "zum weiterlesen", "sur le même sujet",
    "articles similaires", "articles liés", "les plus lus", "vous aimerez aussi", "vous aimerez peut-être",
    "noticias relacionadas", "artículos relacionados", "notas relacionadas", "temas relacionados",
    "te puede interesar", "le puede interesar", "también te puede interesar", "lo más leído", "más noticias",
    "articoli correlati", "potrebbe interessarti", "i più letti", "notícias relacionadas", "mais lidas",
    "gerelateerde artikelen", "meest gelezen", "podobne artykuły", "najczęściej czytane",
)
_ASIDE_WORDS = tuple(w.encode() for w in ASIDE_WORDS)
_ASIDE_LONGEST = max(map(len, _ASIDE_WORDS))
_HEADINGS = frozenset({"h2", "h3", "h4", "h5", "h6"})
_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


# A capital letter of Latin-1 in UTF-8 (U+00C0..U+00DE but U+00D7): its lower case is 0x20 on.
_LATIN_CAPITAL = re.compile(rb"\xc3([\x80-\x96\x98-\x9e])")


def _latin_lower(m: re.Match) -> bytes:
    return b"\xc3" + bytes((m.group(1)[0] + 0x20,))


def _opens_aside(text: bytes) -> int:
    """1 when ``text`` opens, after HTML white space, with one of ASIDE_WORDS (ASCII letters and
    Latin-1 capitals in any case) ending it or followed by a byte other than an ASCII letter,
    digit or '_' and other than a byte of a multi-byte character; 0 when not; -1 when it is all
    white space."""
    text = text.lstrip(_SPACE)
    if not text:
        return -1
    low = _LATIN_CAPITAL.sub(_latin_lower, _lower(text[:_ASIDE_LONGEST]))
    for w in _ASIDE_WORDS:
        if low.startswith(w) and (len(text) == len(w) or (text[len(w)] not in _WORD_BYTES and text[len(w)] < 0x80)):
            return 1
    return 0


_BLOCK = frozenset(
    """address article aside blockquote body br caption center dd details dialog dir div dl dt fieldset
    figcaption figure footer form frameset h1 h2 h3 h4 h5 h6 header hgroup hr html legend li listing main
    menu nav ol option p plaintext pre section summary table tbody tfoot thead tr ul xmp""".split())
_CELL = frozenset({"td", "th"})
_CUT = frozenset({"script", "style", "textarea", "iframe"})  # cut out with their content
_RAW = frozenset({"noembed", "noframes", "plaintext", "title", "xmp"})  # raw text kept as it is
_KNOWN = _BLOCK | _CELL | _CUT | _RAW | set(_TAG_FLAGS) | {"a"}

_AFFIX = (b"nav", b"navigation", b"menu", b"sidebar", b"breadcrumb", b"breadcrumbs", b"footer", b"banner",
          b"masthead", b"topbar", b"pager", b"pagination", b"related", b"skiplink", b"cookie", b"share", b"social",
          b"copyright", b"searchbox", b"facet", b"facets", b"filter", b"filters", b"refinement", b"refinements")
_EXACT = (b"toc", b"bar", b"crumbs", b"search", b"top", b"bottom", b"foot", b"skip", b"hidden", b"sr-only",
          b"visually-hidden")
# What sits beside the content (see SECONDARY_AFFIX in _htmlscan.c): marked when no navigation
# word matches.
_SECONDARY_AFFIX = (b"comment", b"comments", b"newsletter", b"subscribe", b"subscription", b"signup", b"promo",
                    b"advert", b"advertisement", b"sponsor", b"sponsored", b"recommended", b"recommendations",
                    b"trending", b"popular", b"widget", b"respond", b"reviews", b"consent", b"gdpr", b"byline",
                    b"authorbox")
_SECONDARY_EXACT = (b"ad", b"ads", b"bio", b"bios")
# A box asking to accept cookies (see CONSENT_AFFIX in _htmlscan.c), said by a class.
_CONSENT_AFFIX = (b"cookie", b"cookies", b"consent", b"gdpr")
# Elements whose classes say the state of the whole page ("cookies-not-set"), not of a box in it.
_PAGE_STATE = frozenset((b"body", b"html", b"main", b"article"))
_UTILITY = frozenset((b"overflow", b"margin", b"padding", b"border", b"rounded", b"text", b"align", b"scroll", b"inset"))
_NAV_ROLES = frozenset({b"navigation", b"banner", b"contentinfo", b"search", b"menu", b"menubar", b"toolbar",
                        b"tablist"})
_SPACE = b" \t\n\x0c\r"
_RE_HTML_SPACE = re.compile(rb"[ \t\n\x0c\r]+")  # HTML's white space (not bytes.split()'s, which has \x0b)
_ALNUM = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789")
_ALPHA = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


class TextWithFingerprint:
    """The text of a page in its mode (None: unparsable, "": none) and its whole-page fingerprint
    (the sixth item of :func:`scan`), from one read of the page."""

    __slots__ = ("text", "page_fingerprint")

    def __init__(self, text: str | None, page_fingerprint: int):
        self.text, self.page_fingerprint = text, page_fingerprint

    def __reduce__(self):  # (sent back from the HTML worker processes)
        return TextWithFingerprint, (self.text, self.page_fingerprint)


def compiled() -> bool:
    """Whether the compiled scan is in use."""
    return _htmlscan is not None


def _lower(b: bytes) -> bytes:
    return b.lower()  # bytes.lower() is ASCII-only, as the C code


def _exact_place(s: bytes, i: int, e: int) -> bool:
    """exact_place() of _htmlscan.c: the exact navigation word s[i:e] opens the name (not
    followed by a number) or ends it after a token that is no layout property."""
    n = len(s)
    if s[i:e] == b"top":
        return i == 0 and e == n  # "top" names a region only whole: "top-doc" is a place in the content
    if i == 0:
        return e == n or (e + 1 < n and 97 <= s[e + 1] <= 122)
    if e != n or s[i:e] == b"hidden":
        return False
    a = i - 1
    while a > 0 and s[a - 1] in _ALNUM:
        a -= 1
    return s[a:i - 1] not in _UTILITY


def _names_in(s: bytes, affix, exact, placed: bool) -> bool:
    n = len(s)
    for i in range(n):
        start = i == 0 or s[i - 1] not in _ALNUM
        for w in affix:
            if s.startswith(w, i) and (start or i + len(w) == n or s[i + len(w)] not in _ALNUM):
                return True
        if start:
            for w in exact:
                e = i + len(w)
                if s.startswith(w, i) and (e == n or s[e] not in _ALNUM) and (not placed or _exact_place(s, i, e)):
                    return True
    return False


_CONSENT_WORD = 4


def _names_navigation(s: bytes) -> int:
    """1: the name has a navigation word; else 2: a secondary word; else 0; plus _CONSENT_WORD when
    it has a consent word too."""
    consent = _CONSENT_WORD if _names_in(s, _CONSENT_AFFIX, (), False) else 0
    if _names_in(s, _AFFIX, _EXACT, True):
        return 1 | consent
    return (2 if _names_in(s, _SECONDARY_AFFIX, _SECONDARY_EXACT, False) else 0) | consent


# A run of HTML white space that holds a line feed (copy_text in _htmlscan.c).
_LINE_RUN = re.compile(rb"[ \t\r\x0c]*\n[ \t\n\r\x0c]*")


def _one_line(m: re.Match) -> bytes:
    return b"\n" if len(m.group()) > 1 else m.group()


def _copy_text(out: bytearray, s: bytes, a: int, b: int) -> None:
    """(copy_text in _htmlscan.c: a run of white space with a line feed made one line feed, the
    page's own form feeds and marks made spaces)"""
    out += _LINE_RUN.sub(_one_line, s[a:b]).replace(b"\x0c", b" ").replace(b"\x01", b" ").replace(b"\x02", b" ")


def _find_end_tag(s: bytes, n: int, start: int, name: bytes) -> int:
    low = s.lower()  # ASCII only; same length
    i = start
    needle = b"</" + name
    while True:
        i = low.find(needle, i)
        if i < 0 or i + len(needle) > n:
            return n
        j = i + len(needle)
        if j == n or s[j] in _SPACE or s[j] in b"/>":
            return i
        i += 1


_MAX_KEPT = 4
# start tags whose attributes change how the page is parsed: they keep all of theirs
_ATTRIBUTES_MATTER = frozenset({b"input", b"font", b"annotation-xml", b"template"})


class _Tag:
    __slots__ = ("name", "name_end", "end", "bits", "closed", "self_closing", "kept")

    def __init__(self, name, name_end, end, bits, closed, self_closing, kept):
        self.name, self.name_end, self.end, self.bits = name, name_end, end, bits
        self.closed, self.self_closing, self.kept = closed, self_closing, kept


def _read_tag(s: bytes, n: int, i: int, is_end: bool, found: dict) -> _Tag:
    """The tag at s[i] == '<': its lower-cased name, where the name and the tag end, its marks,
    whether '>' ended it (and "/>"), and the spans of the attributes that stay (None: all)."""
    j = i + 1 + is_end
    start = j
    while j < n and s[j] not in _SPACE and s[j] not in b"/>":
        j += 1
    name = _lower(s[start:j])
    name_end = j
    bits = 0
    kept: list | None = []
    while j < n:
        slash = False
        while j < n and (s[j] in _SPACE or s[j] == 0x2F):
            slash = s[j] == 0x2F
            j += 1
        if j >= n:
            break
        if s[j] == 0x3E:
            return _Tag(name, name_end, j + 1, bits, True, slash, kept)
        an = j
        j += 1
        while j < n and s[j] not in _SPACE and s[j] not in b"/>=":
            j += 1
        attr = _lower(s[an:j])
        k = j
        while k < n and s[k] in _SPACE:
            k += 1
        value = None
        if k < n and s[k] == 0x3D:
            k += 1
            while k < n and s[k] in _SPACE:
                k += 1
            if k < n and s[k] in b"\"'":
                q = s[k]
                e = s.find(bytes([q]), k + 1)
                ve = e if e >= 0 else n
                value = s[k + 1:ve]
                j = ve + 1 if ve < n else n
            else:
                v = k
                while k < n and s[k] not in _SPACE and s[k] != 0x3E:
                    k += 1
                value = s[v:k]
                j = k
        if is_end or len(attr) > 24:
            continue
        if attr == b"class" and value is not None:
            for tok in _RE_HTML_SPACE.split(value):
                kind = _names_navigation(_lower(tok[:256])) if tok else 0
                if kind & _CONSENT_WORD and name not in _PAGE_STATE:  # a consent box
                    found["classes"].append(tok)
                    bits |= 1 | 16
                    continue
                kind &= ~_CONSENT_WORD
                if kind == 1:
                    found["classes"].append(tok)
                    bits |= 1
                elif kind == 2:
                    bits |= 8
        elif attr == b"id" and value:
            kind = _names_navigation(_lower(value[:256])) & ~_CONSENT_WORD
            if kind == 1:
                found["ids"].append(value)
                bits |= 1
            elif kind == 2:
                bits |= 8
        elif attr == b"hidden":
            found["flags"] |= FLAGS["HIDDEN"]
            bits |= 2
        elif attr == b"style" and value is not None:
            if b"display:none" in value or b"display: none" in value or b"visibility:hidden" in value:
                found["flags"] |= FLAGS["STYLE_HIDDEN"]
                bits |= 2
        elif attr == b"role" and value is not None:
            if kept is not None and len(kept) < _MAX_KEPT:
                kept.append((an, j))
            else:
                kept = None
            if value in _NAV_ROLES:
                found["flags"] |= FLAGS["ROLE_NAV"]
                bits |= 4
            if value == b"main":
                found["flags"] |= FLAGS["ROLE_MAIN"]
            if value == b"complementary":
                found["flags"] |= FLAGS["ROLE_COMPLEMENTARY"]
        elif len(attr) > 13 and attr.startswith(b"data-neardup-"):
            found["flags"] |= FLAGS["OWN_MARKS"]
    return _Tag(name, name_end, n, bits, False, False, kept)


def _put_start_tag(out: bytearray, s: bytes, at: int, t: _Tag, strip: bool, found: dict) -> None:
    out += s[at:t.name_end]
    if t.bits & 1:
        out += b" " + MARK_NAME.encode()
        found["flags"] |= FLAGS["NAMED"]
    if t.bits & 2:
        out += b" " + MARK_HIDDEN.encode()
    if t.bits & 4:
        out += b" " + MARK_ROLE.encode()
    if t.bits & 16:
        out += b" " + MARK_CONSENT.encode()
    if t.bits & 9 == 8:
        out += b" " + MARK_SECONDARY.encode()
        found["flags"] |= FLAGS["SECONDARY"]
    if not strip or t.kept is None or (len(t.name) <= MAX_TAG and t.name in _ATTRIBUTES_MATTER):
        out += s[t.name_end:t.end]
        return
    for a, b in t.kept:
        out += b" " + s[a:b]
    if t.closed:
        out += b"/>" if t.self_closing else b">"


def _unique(values: list[bytes]) -> list[str]:
    seen, out = set(), []
    for v in values:
        if v not in seen:
            seen.add(v)
            out.append(v.decode("utf-8", "replace"))
    return out


def scan_python(html: str | bytes, cut_navigation: bool = False, page_fingerprint: bool = False):
    s = html if isinstance(html, bytes) else html.encode("utf-8")
    result = _scan(s, True, cut_navigation, page_fingerprint)
    if result[1] & FLAGS["OWN_MARKS"]:  # the page's own attributes are queried: all of them stay
        result = _scan(s, False, cut_navigation, page_fingerprint)
    return result


class _Visible:
    """The page's visible text (``visible`` in _htmlscan.c): its tokens, one space between two."""

    __slots__ = ("text", "apart", "templates", "noscript")

    def __init__(self):
        self.text = bytearray()
        self.apart, self.templates, self.noscript = False, 0, False

    def add(self, chunk: bytes) -> None:
        if self.templates or self.noscript:
            return
        for k, token in enumerate(_RE_HTML_SPACE.split(chunk)):
            if k:
                self.apart = True
            if token:
                if self.apart and self.text:
                    self.text += b" "
                self.apart = False
                self.text += token

    def tag(self, tag: str, is_end: bool) -> None:
        if tag in _BLOCK or tag in _CELL:
            self.apart = True
        if tag == "template":
            if not is_end:
                self.templates += 1
            elif self.templates:
                self.templates -= 1
        elif tag == "noscript":
            self.noscript = not is_end


def _scan(s: bytes, strip: bool, cut: bool = False, page: bool = False):
    n = len(s)
    out = bytearray()
    found = {"flags": 0, "classes": [], "ids": []}
    title = None
    region = NavigationRegion()
    svg = SvgCut()
    visible = _Visible() if page else None
    in_noscript = False
    heading_open = False  # after an h2-h6 start tag, before its first text
    i = 0
    while i < n:
        at = s.find(b"<", i)
        if at < 0:
            at = n
        _copy_text(out, s, i, at)
        if visible is not None:
            visible.add(s[i:at])
        if heading_open and at > i:
            r = _opens_aside(s[i:at])
            if r >= 0:
                if r:
                    found["flags"] |= FLAGS["ASIDE_HEADING"]
                heading_open = False
        if at >= n:
            break
        i = at
        c1 = s[at + 1] if at + 1 < n else 0
        if c1 in _ALPHA or (c1 == 0x2F and at + 2 < n and s[at + 2] in _ALPHA):
            is_end = c1 == 0x2F
            flags_before = found["flags"]  # (an svg cut forgets its start tag's attributes too)
            t = _read_tag(s, n, at, is_end, found)
            name, end = t.name, t.end
            known = len(name) <= MAX_TAG and name.decode("latin-1") in _KNOWN
            tag = name.decode("latin-1") if known else None
            if tag in _CUT and not is_end:
                e = _find_end_tag(s, n, end, name)
                closed = e < n
                if not closed and in_noscript:
                    # never closed inside <noscript>: a browser running scripts reads a noscript's
                    # content as text up to </noscript>, where the element ends too
                    e = _find_end_tag(s, n, end, b"noscript")
                if tag == "script" and b"ld+json" in s[at:end].lower():
                    found["flags"] |= FLAGS["JSON_LD"]
                    if b"ld+json" in s[at:end] and b'"Product"' in s[end:e]:
                        found["flags"] |= FLAGS["PRODUCT_DATA"]
                if svg.pending and not svg_raw_ok(tag, s, n, end, e):
                    svg.give_up(region)
                if closed:
                    e = _read_tag(s, n, e, True, found).end
                i = e
                continue
            if tag == "noscript":
                in_noscript = not is_end
            if tag in _HEADINGS and not found["flags"] & FLAGS["ASIDE_HEADING"]:
                heading_open = not is_end
            if tag is not None and visible is not None:
                visible.tag(tag, is_end)
            if cut:
                svg_start = tag == "svg" and not is_end and t.closed and not t.self_closing
                waits = started = False  # a tag of an svg inside a candidate: the candidate waits
                if svg.pending and svg.in_region:
                    r = svg.inside(t, is_end)
                    if r == 1:  # its end tag: the svg goes, the candidate goes on
                        del out[svg.out_at:]
                        found["flags"] = svg.flags_at
                        svg.pending = False
                        i = end
                        continue
                    if r == 0:
                        waits = True
                    else:
                        svg.give_up(region)
                if not waits and region.active:
                    if svg_start:
                        svg.pending = svg.in_region = waits = started = True
                    else:
                        r = region.inside(name, is_end, t.self_closing)
                        if r == 1:  # its end tag: the element goes, an empty one stays
                            del out[region.out_at:]
                            found["flags"] = region.flags_at | region.root_flag
                            out += b"\x0c<" + name + b"></" + name + b">"
                            region.active = False
                            i = end
                            continue
                        if r < 0:
                            region.give_up()
                if not waits:
                    if not region.active:
                        region.outside(name, tag, is_end, len(out), found["flags"], t.self_closing, _TAG_FLAGS.get(tag, 0))
                    if svg.pending:
                        r = svg.inside(t, is_end)
                        if r == 1:  # its end tag: the element goes
                            del out[svg.out_at:]
                            found["flags"] = svg.flags_at
                            svg.pending = False
                            i = end
                            continue
                        if r < 0:
                            svg.pending = False
                    elif svg_start and region.foreign == 1:
                        svg.pending = started = True
                        svg.in_region = False
                if started:
                    svg.out_at, svg.flags_at, svg.names = len(out), flags_before, [b"svg"]
            if tag is not None:
                if not is_end:
                    found["flags"] |= _TAG_FLAGS.get(tag, 0)
                if tag in _BLOCK:
                    out += b"\x0c"
                elif tag in _CELL:
                    out += b" "
                if is_end and tag == "a":
                    out += LINK_CLOSE.encode()
            if not is_end:  # the marks go right after the name
                _put_start_tag(out, s, at, t, strip, found)
            else:
                out += s[at:end]
            i = end
            if tag is not None and not is_end:
                if tag == "a":
                    out += LINK_OPEN.encode()
                elif tag in _RAW:
                    e = n if tag == "plaintext" else _find_end_tag(s, n, i, name)
                    if tag == "title" and title is None:
                        title = s[i:e].decode("utf-8", "replace")
                    if tag in ("xmp", "plaintext") and visible is not None:  # shown
                        visible.add(s[i:e])
                    if svg.pending and not svg_raw_ok(tag, s, n, i, e):
                        svg.give_up(region)
                    out += s[i:e]
                    i = e
            continue
        if c1 in (0x21, 0x3F):
            if svg.pending and c1 == 0x21 and at + 2 < n and s[at + 2] == 0x5B:
                svg.give_up(region)  # a CDATA section: text in foreign content
            if c1 == 0x21 and s.startswith(b"--", at + 2) and at + 3 < n:
                k = at + 4
                if k < n and s[k] == 0x3E:
                    e = k + 1
                elif k + 1 < n and s[k] == 0x2D and s[k + 1] == 0x3E:
                    e = k + 2
                else:
                    e = n
                    while k + 2 < n:
                        if s[k] == 0x2D and s[k + 1] == 0x2D:
                            if s[k + 2] == 0x3E:
                                e = k + 3
                                break
                            if k + 3 < n and s[k + 2] == 0x21 and s[k + 3] == 0x3E:
                                e = k + 4
                                break
                        k += 1
                i = e
                continue
            gt = s.find(b">", at)
            e = gt + 1 if gt >= 0 else n
            if c1 == 0x21:
                out += s[at:e]
            i = e
            continue
        out += b"<"
        if visible is not None:
            visible.add(b"<")
        i = at + 1
    return (bytes(out), found["flags"], title, _unique(found["classes"]), _unique(found["ids"]),
            xxhash.xxh3_64_intdigest(bytes(visible.text)) if visible is not None else None)


_BREAKS = frozenset({MARK})
_LINK_MARKS = frozenset({LINK_OPEN, LINK_CLOSE})


def lines_python(text: str) -> str:
    out = []
    pending = 0
    for ch in text:
        if ch in _BREAKS:
            pending = 2
        elif ch in _LINK_MARKS:
            continue
        elif ch.isspace():
            pending = max(pending, 1)
        else:
            if out and pending:
                out.append("\n" if pending == 2 else " ")
            pending = 0
            out.append(ch)
    return "".join(out)


def stats_python(text: str) -> tuple[int, int]:
    chars = links = 0
    pending = in_link = any_ = False
    for ch in text:
        if ch == LINK_OPEN:
            in_link = True
        elif ch == LINK_CLOSE:
            in_link = False
        elif ch in _BREAKS or ch.isspace():
            pending = True
        else:
            add = 1 + (any_ and pending)
            chars += add
            if in_link:
                links += add
            pending = False
            any_ = True
    return chars, links


def is_utf8_python(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


if _htmlscan is not None:
    scan = _htmlscan.scan
    lines = _htmlscan.lines
    stats = _htmlscan.stats
    is_utf8 = _htmlscan.is_utf8
else:  # pragma: no cover - the compiled module is built wherever there is a compiler
    scan = scan_python
    lines = lines_python
    stats = stats_python
    is_utf8 = is_utf8_python
