"""The text a page's JSON-LD (schema.org) data carries: the body of an article whose scripts
write the page, the description of a product."""

from __future__ import annotations

import json
import re
from html import unescape

__all__ = ["from_description", "json_ld_body"]

_RE_JSON_LD = re.compile(rb"""<script[^>]{0,200}?application/ld\+json[^>]{0,200}>(.*?)</script""", re.S | re.I)
_TYPE = b"application/ld+json"
_SCRIPT_OPEN = re.compile(rb"<script\b[^<>]*\Z", re.I)


def _json_ld_texts(data: bytes):
    """The contents of the page's JSON-LD scripts. A case-blind expression over the whole page
    costs a third of a millisecond (no fast search for its literal start): the type's name is
    looked for as authors write it (lower case), and the expression read where it is not found."""
    at = data.find(_TYPE)
    if at < 0:
        yield from (m.group(1) for m in _RE_JSON_LD.finditer(data))
        return
    while at >= 0:
        tag = data.rfind(b"<", max(0, at - 200), at)
        close = data.find(b">", at, at + 200 + len(_TYPE))
        if tag >= 0 and close >= 0 and _SCRIPT_OPEN.match(data, tag, at):
            end = data.find(b"</script", close)
            if end < 0:
                end = data.lower().find(b"</script", close)  # (an upper-case closing tag: rare)
            if end < 0:
                return
            yield data[close + 1:end]
            at = data.find(_TYPE, end)
        else:
            at = data.find(_TYPE, at + len(_TYPE))


_BODY_KEYS = ("articleBody", "text", "description")


# Objects whose text is not the page's own: one reader's review, comment or answer (the longest
# "description" of a shop's page is often a review), the site's menu.
_OTHERS = frozenset(("Review", "Comment", "Answer", "SiteNavigationElement"))


def _types(v: dict) -> frozenset:
    """The schema.org types an object names ("@type": a name or a list of them)."""
    t = v.get("@type")
    if isinstance(t, str):
        return frozenset((t,))
    return frozenset(x for x in t if isinstance(x, str)) if isinstance(t, list) else frozenset()


def json_ld_body(data: bytes, markup_text, product: bool = False) -> str:
    """The longest article body, text or description in the page's JSON-LD data (``product``:
    the longest description of a Product), as lines; "" when none. ``markup_text`` turns a
    value that holds markup into text."""
    best = ""
    for script in _json_ld_texts(data):
        try:
            value = json.loads(script.decode("utf-8", "replace"))
        except ValueError:
            continue
        stack = [value]
        while stack:
            v = stack.pop()
            if isinstance(v, list):
                stack.extend(v)
            elif isinstance(v, dict):
                types = _types(v)
                if not _OTHERS.isdisjoint(types):
                    continue  # a reader's review or answer, a menu: not the page's text
                wanted = not product or "Product" in types
                for k, x in v.items():
                    if isinstance(x, str):
                        if wanted and (k == "description" if product else k in _BODY_KEYS) and len(x) > len(best):
                            best = x
                    elif isinstance(x, (dict, list)):
                        stack.append(x)
    if not best:
        return ""
    if "<" in best:  # some put markup in it
        best = markup_text(best)
    elif "&" in best:
        best = unescape(best)
    return "\n".join(" ".join(line.split()) for line in best.splitlines() if line.strip())


def from_description(text: str, description: str) -> str:
    """The text's first line (the product's name), then the text from the line where the
    description starts; the text as it is when the description is not in it, or starts it."""
    head = description.split("\n", 1)[0][:60]
    k = text.find(head)
    if k <= 0:
        return text
    k = text.rfind("\n", 0, k) + 1
    if not k:
        return text
    return text.split("\n", 1)[0] + "\n" + text[k:]
