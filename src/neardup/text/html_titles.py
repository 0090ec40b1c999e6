"""The page's title and headings beside the main text: whether the content has a heading of its
own, the heading a page shows above its content, and whether the text opens with the title
already (the title then goes unsaid)."""

from __future__ import annotations

import re

from .html_scan import lines
from .html_tree import is_under, text_len

__all__ = ["has_heading", "outer_heading", "titled"]


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
