"""The whole visible text of a page without lexbor: on lxml, else on the standard library's
``html.parser`` (the same rules as lexbor's "whole" mode: dropped elements, block elements end
lines, cells separated by a space)."""

from __future__ import annotations

__all__ = ["finish_lines", "get_lxml", "whole_lxml", "whole_stdlib"]

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

_lxml_html = None  # the lxml.html module, False when lxml is missing


def get_lxml():
    global _lxml_html
    if _lxml_html is None:
        try:
            import lxml.html

            _lxml_html = lxml.html
        except ImportError:  # pragma: no cover - lxml ships with the io extra
            _lxml_html = False
    return _lxml_html


def finish_lines(chunks: list[str]) -> str:
    lines = []
    for line in "".join(chunks).split("\n"):
        line = " ".join(line.split())
        if line:
            lines.append(line)
    return "\n".join(lines)


def whole_lxml(lh, html: str) -> str | None:
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
    return finish_lines(chunks)


def whole_stdlib(html: str) -> str | None:
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
    return finish_lines(chunks)
