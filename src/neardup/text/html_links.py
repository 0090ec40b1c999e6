"""A page's claims about its own URL: ``<link rel="canonical">`` and ``<meta property="og:url">``.

A scan of the document's head, not a parse: both elements belong in ``<head>``, so the scan stops
at ``</head>`` or ``<body`` (or after :data:`HEAD_LIMIT` bytes, for a page without either) and
looks only at ``<link>`` and ``<meta>`` tags, with their attributes in any order and quoted either
way or not at all. It reads bytes (a page as it came, in any ASCII-compatible charset: the
attributes that matter are URLs) or a str. A relative claim is resolved against the page's URL;
character references in it (``&amp;``) are decoded. The first claim of each kind counts, as
search engines take it.
"""

from __future__ import annotations

import html as _html
import re
from urllib.parse import urljoin

__all__ = ["HEAD_LIMIT", "page_claims"]

#: Bytes of a page looked at when it has no ``</head>`` or ``<body>`` earlier.
HEAD_LIMIT = 256 * 1024

# the attribute run unrolled (plain characters, then quoted values each followed by plain ones):
# a '>' inside quotes does not end the tag, and the regex engine does not branch per character
_TAG = r"<(link|meta)\b([^>\"']*(?:(?:\"[^\"]*\"|'[^']*')[^>\"']*)*)>"
_ATTR = r"([a-zA-Z_:][-a-zA-Z0-9_:.]*)\s*(?:=\s*(\"[^\"]*\"|'[^']*'|[^\s\"'>]+))?"
_END = r"</head\s*>|<body[\s>]"
_PATTERNS = {kind: tuple(re.compile(p if kind is str else p.encode(), re.IGNORECASE) for p in (_TAG, _ATTR, _END))
             for kind in (str, bytes)}


def _text(value) -> str:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if value[:1] in ("'", '"'):
        value = value[1:-1]
    return _html.unescape(value).strip()


def _resolved(value: str, base: str | None) -> str | None:
    if not value:
        return None
    if base:
        try:
            return urljoin(base, value)
        except ValueError:  # a malformed base or claim (an unclosed IPv6 bracket)
            return value
    return value


def page_claims(page: str | bytes, url: str | None = None) -> dict:
    """``{"canonical": ..., "og_url": ...}``: the page's ``<link rel="canonical" href>`` and
    ``<meta property="og:url" content>`` (either key absent when the page has none), resolved
    against ``url``. Empty when ``page`` is neither str nor bytes."""
    kind = type(page)
    if kind is bytearray or kind is memoryview:
        page, kind = bytes(page), bytes
    if kind is not str and kind is not bytes:
        return {}
    tag, attr, end = _PATTERNS[kind]
    stop = end.search(page, 0, HEAD_LIMIT)
    head = page[: stop.start() if stop else HEAD_LIMIT]
    lowered = head.lower()
    marks = ("canonical", "og:url") if kind is str else (b"canonical", b"og:url")
    if marks[0] not in lowered and marks[1] not in lowered:
        return {}  # most pages: no attribute parsed at all
    found: dict = {}
    for m in tag.finditer(head):
        body = m.group(2).lower()
        if marks[0] not in body and marks[1] not in body:
            continue
        attrs = {}
        for a in attr.finditer(m.group(2)):
            name = a.group(1).lower()
            if isinstance(name, bytes):
                name = name.decode("ascii")
            if name not in attrs:
                attrs[name] = a.group(2) or kind()
        is_link = m.group(1).lower() in ("link", b"link")
        if is_link and "canonical" not in found and "href" in attrs:
            if "canonical" in _text(attrs.get("rel", "")).lower().split():
                claim = _resolved(_text(attrs["href"]), url)
                if claim:
                    found["canonical"] = claim
        elif not is_link and "og_url" not in found and "content" in attrs:
            prop = _text(attrs.get("property", "") or attrs.get("name", "")).lower()
            if prop == "og:url":
                claim = _resolved(_text(attrs["content"]), url)
                if claim:
                    found["og_url"] = claim
        if len(found) == 2:
            break
    return found
