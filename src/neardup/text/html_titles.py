"""The page's title and headings beside the main text: whether the content has a heading of its
own, the heading a page shows above its content, and whether the text opens with the title
already (the title then goes unsaid)."""

from __future__ import annotations

import re
from html import unescape

from .html_scan import lines
from .html_tree import is_under, text_len

__all__ = ["has_heading", "outer_heading", "home_link_says", "page_title", "title_parts", "titled", "with_title"]


def outer_heading(root, body, heads) -> str:
    for h in heads:
        if root.mem_id != body.mem_id and is_under(h, body) and not is_under(h, root):
            t = " ".join(lines(h.text_lexbor()).split())
            if 0 < len(t) <= 300:
                return t
    return ""


def has_heading(root, heads) -> bool:
    for h in heads:
        if is_under(h, root) and text_len(h):
            return True
    return False


# A separator of a title's parts ("Story - Site", "Site | Section | Story", "Manual: Page"): a
# dash or bar spaced on both sides ("well-known" is one word), a colon followed by a space.
_TITLE_SEPARATOR = re.compile(r"\s+(?:[|\-\u2013\u2014\u00b7\u2022:]{1,2})\s+|:\s+")


def title_parts(title: str) -> tuple[str, ...]:
    """The title and its parts (the page's name, its section's, the site's), case-folded; empty
    for no title."""
    t = title.casefold()
    return (t, *(p for p in _TITLE_SEPARATOR.split(t) if p)) if t else ()


# A link to the site's home page: its href "/", or a scheme and host alone.
_HOME_HREF = re.compile(rb"""\shref\s*=\s*["']?(?:/|https?://[^/"'\s>]+/?)(?:["'\s>]|$)""", re.I)
_TAG = re.compile(rb"<[^>]*>")
# How far before a part of the title its link may open (a logo's markup), and how many of the
# part's places in the page are looked at.
HOME_LINK_BYTES = 1000
HOME_LINK_TRIES = 20
# A part of the title longer than this is no site's name (not looked for).
SITE_NAME_CHARS = 60


def with_title(text: str, title: str, html: str | bytes | None = None) -> str:
    """``text`` with ``title`` said before it, unless its first lines carry it already; with the
    page's ``html``, the title without the site's name (:func:`page_title`)."""
    if not title or titled(text, title):
        return text
    if html is not None:
        title = page_title(title, html if isinstance(html, bytes) else html.encode("utf-8", "replace"))
        if titled(text, title):
            return text
    return f"{title}\n{text}"


def page_title(title: str, html: bytes) -> str:
    """The title without its parts that name the site, as a link to the site's home page says it
    ("Global s8 - Library mirror" beside <a href="/">Library mirror</a>): said before the text of a
    page without a heading, the site's name would set the page apart from its copy on another site
    or under another template, and tell nothing of the page. The title as it is when no part is
    the site's name or when every part is."""
    parts = [p for p in _TITLE_SEPARATOR.split(title) if p]
    if len(parts) < 2:
        return title
    kept = [p for p in parts if len(p) > SITE_NAME_CHARS or not home_link_says(html, p)]
    if not kept or len(kept) == len(parts):
        return title
    return " - ".join(kept)


def home_link_says(html: bytes, text: str) -> bool:
    """Whether a link to the site's home page says ``text`` and nothing else. Read where the page
    says ``text`` in the title's case (a few places), not link by link: most pages have no such
    link, and reading every link of a page costs more than its title is worth."""
    needle, want = text.encode("utf-8"), text.casefold()
    pos = html.find(needle)
    for _ in range(HOME_LINK_TRIES):
        if pos < 0:
            return False
        start = html.rfind(b"<a", max(0, pos - HOME_LINK_BYTES), pos)
        if start >= 0 and html[start + 2:start + 3] in (b" ", b"\n", b"\t", b"\r"):
            tag_end = html.find(b">", start, pos)
            end = html.find(b"</a", pos)
            if tag_end >= 0 and end >= 0 and html.find(b"</a", tag_end, pos) < 0 and _HOME_HREF.search(
                    html, start + 2, tag_end + 1):
                said = _TAG.sub(b" ", html[tag_end + 1:end]).decode("utf-8", "replace")
                if " ".join((unescape(said) if "&" in said else said).split()).casefold() == want:
                    return True
        pos = html.find(needle, pos + len(needle))
    return False


_WORD = re.compile(r"\w+")
# A dotted name, as of a file ("regex.h", "vector.tcc") or a host: a word, a dot, a short extension.
_DOTTED = re.compile(r"\w+(?:\.\w+)*\.[^\W\d_]\w{0,3}\b")


def titled(text: str, title: str) -> bool:
    """Whether the text's first lines carry the title: one holds the other, or they hold at
    least half of the title's words outside dotted names, or one line holds half of them in the
    title's order. A file name is said where the file is referred to ("Definition in file x.h"),
    not only in a heading: it counts in the line that says it as the title does ("dir/x.h File
    Reference" for "x.h File Reference"), not as words found anywhere."""
    t = title.casefold()
    head = [line.casefold() for line in text.split("\n", 3)[:3]]
    for line in head:
        if len(line) >= 2 and (line in t or t in line):
            return True
    words = _WORD.findall(t)
    if not words:
        return True
    unique = set(words)
    seen = set(_WORD.findall(_DOTTED.sub(" ", " ".join(head))))
    if 2 * len(unique & seen) >= len(unique):
        return True
    words = list(dict.fromkeys(words))  # a word the title repeats counts once
    return any(2 * in_order(words, _WORD.findall(line)) >= len(words) for line in head)


def in_order(words: list[str], seen: list[str]) -> int:
    """How many of ``words`` ``seen`` holds in their order (their longest common subsequence),
    computed on the words of ``seen`` that are in ``words`` (a line may be long)."""
    wanted = set(words)
    seen = [s for s in seen if s in wanted]
    prev = [0] * (len(seen) + 1)
    for w in words:
        cur = [0] * (len(seen) + 1)
        for j, s in enumerate(seen):
            cur[j + 1] = prev[j] + 1 if w == s else max(prev[j + 1], cur[j])
        prev = cur
    return prev[-1]
