"""The block classifier, measured beside the rules and not chosen (``USE_CLASSIFIER`` in
:mod:`neardup.text.html`): the content root's blocks (its children, and the children of a child
that holds most of its parent's text, a wrapper, down to BLOCK_DEPTH) are scored by a logistic
model of their text and link density, size, position, element, marks and repetition among their
siblings (blocks.json, trained on public data by benchmarks/train_blocks.py); a block scored below
the model's threshold is dropped. numpy only; the same scores on every machine (float64, fixed
order of operations)."""

from __future__ import annotations

import math

from . import html_scan
from .html_scan import MARK_NAME, MARK_SECONDARY, stats
from .html_tree import BLOCK_DEPTH, get_ids, get_lexbor

__all__ = ["BLOCK_FEATURES", "WRAPPER_SHARE", "block_model", "blocks", "classify_blocks"]

WRAPPER_SHARE = 0.6
_BLOCK_TAGS = ("div", "section", "article", "aside", "header", "footer", "ul", "ol", "p", "table", "form", "h2",
               "h3", "li", "span", "a")
BLOCK_FEATURES = ("bias", "log_chars", "link_density", "share", "position", "depth", "named", "secondary",
                  "punctuation", "log_lines", "log_line_chars", "digits", "same_tag_siblings", "log_siblings",
                  "link_only", "root_link_density", "log_blocks") + tuple(f"tag_{t}" for t in _BLOCK_TAGS) + ("tag_other",)
_model = None


def block_model():
    """(weights, threshold) of the shipped block classifier, read once from the package."""
    global _model
    if _model is None:
        import json
        from importlib.resources import files

        import numpy as np

        spec = json.loads(files("neardup.text").joinpath("blocks.json").read_text(encoding="utf-8"))
        if tuple(spec["features"]) != BLOCK_FEATURES:
            raise RuntimeError("neardup/text/blocks.json was trained on other features; retrain it")
        _model = (np.asarray(spec["weights"], dtype=np.float64), float(spec["threshold"]))
    return _model


def _tag_ids():
    ids = get_ids()
    if not hasattr(ids, "block_tags"):
        tree = get_lexbor()("".join(f"<{n}></{n}>" for n in _BLOCK_TAGS))
        found = {n.tag: n.tag_id for n in tree.root.traverse() if n.tag in _BLOCK_TAGS}
        ids.block_tags = {found[n]: k for k, n in enumerate(_BLOCK_TAGS) if n in found}
    return ids.block_tags


_PUNCT = ".,;:!?"


def blocks(root):
    """(nodes, feature rows) of the root's blocks, in document order."""
    total, root_links = stats(root.text_lexbor())
    if not total:
        return [], []
    tags = _tag_ids()
    nodes, rows = [], []
    before = 0
    stack = [(root, total, 0)]
    pending = []  # (node, chars, links, text, depth, parent_children)
    while stack:
        parent, parent_chars, depth = stack.pop()
        children = list(parent.iter())
        counts = {}
        for c in children:
            counts[c.tag_id] = counts.get(c.tag_id, 0) + 1
        items = []
        for c in children:
            t = c.text_lexbor()
            chars, links = stats(t)
            if chars:
                items.append((c, chars, links, t))
        wrapper = None
        if depth < BLOCK_DEPTH:
            for it in items:
                if it[1] >= WRAPPER_SHARE * parent_chars and it[0].child is not None:
                    wrapper = it
        for it in items:
            if it is wrapper:
                pending.append(("wrap", it, depth))
            else:
                pending.append(("block", it, depth, counts.get(it[0].tag_id, 0), len(children)))
        if wrapper is not None:
            stack.append((wrapper[0], wrapper[1], depth + 1))
    # document order: a wrapper's blocks stand where the wrapper stands
    for entry in pending:
        if entry[0] != "block":
            continue
        _kind, (node, chars, links, text), depth, same, n_children = entry
        lines = html_scan.lines(text)
        n_lines = lines.count("\n") + 1
        attrs = node.attributes
        row = [1.0, math.log1p(chars), links / chars, chars / total, 0.0, depth / BLOCK_DEPTH,
               float(MARK_NAME in attrs), float(MARK_SECONDARY in attrs),
               min(sum(lines.count(p) for p in _PUNCT) * 10.0 / chars, 3.0), math.log1p(n_lines),
               math.log1p(chars / n_lines), sum(map(lines.count, "0123456789")) / chars,
               same / max(n_children, 1), math.log1p(n_children), float(links >= chars * 0.95),
               root_links / total, 0.0]
        onehot = [0.0] * (len(_BLOCK_TAGS) + 1)
        onehot[tags.get(node.tag_id, len(_BLOCK_TAGS))] = 1.0
        nodes.append(node)
        rows.append(row + onehot)
    # position: the characters before the block in the root, as a share
    order = sorted(range(len(nodes)), key=lambda k: _doc_index(nodes[k]))
    for k in order:
        rows[k][16] = math.log1p(len(nodes))
        rows[k][4] = before / total
        before += stats(nodes[k].text_lexbor())[0]
    return nodes, rows


def _doc_index(node):
    return node.mem_id  # lexbor allocates nodes in document order while it parses


def classify_blocks(root) -> bool:
    """Drop the root's blocks the model scores below its threshold; whether any was dropped."""
    nodes, rows = blocks(root)
    if not nodes:
        return False
    import numpy as np

    weights, threshold = block_model()
    scores = np.asarray(rows, dtype=np.float64) @ weights
    dropped = False
    for node, z in zip(nodes, scores):
        if z < threshold:
            node.remove()
            dropped = True
    return dropped
