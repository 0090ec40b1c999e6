"""lexbor (selectolax) for the main-content rules: the parser, the ids of the element names the
rules compare, and the measures of a node's text they share."""

from __future__ import annotations

import functools

from .html_scan import stats

__all__ = ["BLOCK_DEPTH", "BODY_BLOCKS", "TagIds", "get_ids", "get_lexbor", "in_section", "is_under", "link_density", "text_len"]

# How many levels of blocks under the content root the rules and the block classifier look into.
BLOCK_DEPTH = 4
BODY_BLOCKS = frozenset({"table", "ul", "ol", "dl", "div", "p", "center", "form", "section", "span", "a"})

_lexbor = None


def get_lexbor():
    """A function of the markup that gives its lexbor tree, or False when selectolax is missing.

    The tree is built without lexbor's mutation events (WO_EVENTS): they run a callback over every
    inserted node, for what only a browser needs (style sheets, and the copy of a select's chosen
    option into its <selectedcontent>, inside a select, which every mode drops); 5 % of the parse's
    instructions on the labelled set, the same texts."""
    global _lexbor
    if _lexbor is None:
        try:
            from selectolax.lexbor import LexborHTMLParser
        except ImportError:
            _lexbor = False
        else:
            _lexbor = LexborHTMLParser
            try:
                from selectolax.lexbor import LexborDocumentOptions

                quiet = functools.partial(LexborHTMLParser, options=int(LexborDocumentOptions.WO_EVENTS))
                quiet("<p>")
                _lexbor = quiet
            except (ImportError, TypeError):  # pragma: no cover - a selectolax without the option
                pass
    return _lexbor


class TagIds:
    """lexbor's ids of the element names the rules compare: ``node.tag_id`` is an int read off
    the node, where ``node.tag`` makes a str each time (a few times slower, per node)."""

    def __init__(self):
        names = ("html", "body", "main", "article", "section", "aside", "nav", "header", "footer", "h1", "h2", "h3",
                 "h4", "h5", "h6", "ul", "ol", "table") + tuple(
            sorted(BODY_BLOCKS))
        tree = get_lexbor()("".join(f"<{n}></{n}>" for n in names if n not in ("html", "body")))
        ids = {n.tag: n.tag_id for n in tree.root.traverse() if n.tag in names}
        missing = set(names) - set(ids)
        if missing:  # pragma: no cover - every HTML parser makes these elements
            raise RuntimeError(f"lexbor made no {sorted(missing)} elements")
        self.main = ids["main"]
        self.h1 = ids["h1"]
        self.headings = frozenset(ids[f"h{level}"] for level in range(1, 7))
        self.article = ids["article"]
        self.footer = ids["footer"]
        self.link = ids["a"]
        self.page_parts = frozenset((ids["header"], ids["footer"]))
        self.sections = frozenset(ids[n] for n in ("article", "section", "main", "aside", "nav"))
        self.roots = frozenset(ids[n] for n in ("body", "html", "main"))
        self.body_blocks = frozenset(ids[n] for n in BODY_BLOCKS)
        # the elements a layout is made of (a paragraph or a list holding most of the text is not one)
        self.containers = frozenset(ids[n] for n in ("div", "section", "center", "form"))
        self.secondary_blocks = frozenset(ids[n] for n in ("div", "section", "aside", "article", "ul", "ol", "form",
                                                            "table", "footer"))


_ids = None


def get_ids() -> TagIds:
    global _ids
    if _ids is None:
        _ids = TagIds()
    return _ids


def text_len(node) -> int:
    return stats(node.text_lexbor())[0]


def link_density(node) -> float:
    """The share of ``node``'s text inside links (1.0 when it has no text)."""
    chars, links = stats(node.text_lexbor())
    return links / chars if chars else 1.0


def is_under(node, ancestor) -> bool:
    want = ancestor.mem_id
    p = node.parent
    while p is not None:
        if p.mem_id == want:
            return True
        p = p.parent
    return False


def in_section(node, stop) -> bool:
    sections = get_ids().sections
    p = node.parent
    while p is not None and p.mem_id != stop.mem_id:
        if p.tag_id in sections:
            return True
        p = p.parent
    return False
