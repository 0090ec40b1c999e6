"""The layout of a page without landmarks, read off its blocks: the columns and menus under
``<body>`` (blocks made of links, strips of links beside the content column), the cards of a
listing kept whole, and the element that holds a thread's posts. Used by the main-content rules of
:mod:`neardup.text.html`."""

from __future__ import annotations

from .html_scan import MARK_NAME
from .html_scan import stats as _stats
from .html_tree import BLOCK_DEPTH, get_ids, is_under

# A block under this many characters is short: a strip of a page, a menu item, a label (a boxed
# note of the content is longer, and prose).
SHORT_CHARS = 200
# Whether the passes go down the content column (to BLOCK_DEPTH) or stop at <body>'s children.
DEEP_DENSE_BLOCKS = True

# Beside the content column, a short block (under SHORT_CHARS) this dense in links is a strip of
# the page (a header line, a footer with its links).
STRIP_LINK_DENSITY = 0.2
# The last block under <body>, under this many characters and without a heading, is the page's
# footer when its name says so (see page_footer), and is no candidate for the content column.
ENDING_CHARS = 1000
_HEADINGS = "h1, h2, h3, h4, h5, h6"
# Under <body> (no main landmark), a top-level block this dense in links is navigation too.
BODY_LINK_DENSITY = 0.6
# ...unless its links are headlines (see headlines): 3 or more, of 35 characters on average.
HEADLINE_CHARS = 35
HEADLINE_LINKS = 3
# Below <body>, a level whose blocks have a heading among them (h1-h6, its text not a link) is
# a section of the content, not a layout of columns: a heading introduces the blocks after it
# (a short list of links under "Namespaces" is that section's content, not a strip of the page).
SECTION_HEADINGS = True
# ...but a short block made of links before its first heading is a strip of the page above the
# section (a breadcrumb, a line of "Next: ... Previous: ... Up: ..." links).
LEADING_STRIPS = True
# A block of links that holds a heading saying the page's title (or a part of it: "Part II. The
# Parser" in "Part II. The Parser - Library mirror") is the content, not a menu: a part's table of
# contents, a directory's index. A menu's headings name the menu ("In this manual"), never the page.
TITLED_LINKS = True
# Beside a short column (under SHORT_CHARS out of links) without a heading, a block that holds a
# heading (not a link) is the column: a page whose content is a heading and a line.
HEADED_COLUMN = True
# ...and a block of links whose text out of links is under this many characters (a menu's label,
# "In this manual") is not the column when a block beside it is no menu.
LABEL_CHARS = 50
# (a heading longer than this says no title)
TITLE_CHARS = 300


def drop_dense_blocks(body, title: tuple[str, ...] = ()):
    """Under <body>, drop the blocks that are mostly links (menus without names): the top-level
    blocks; then, level by level down to BLOCK_DEPTH, inside the block with the most text out of
    links when it is a layout container (a ``div``, ``section``, ``center`` or ``form``: a column),
    the blocks beside its own such column (a menu column beside the content column), and beside
    it the short blocks half made of links (a strip of links with a line of text). Inside the
    content (a paragraph holds the most text), a list of links stays: a table of contents; and
    the blocks of a level made mostly of one element repeated are cards, kept whole. The page's
    footer, <body>'s last block, goes first whatever its length (see :func:`page_footer`). A short
    column without a heading gives way to a larger block holding one, and a menu's label to a
    block that is no menu (HEADED_COLUMN, LABEL_CHARS); a level that stops the walk at its
    heading loses the lines of links before it (LEADING_STRIPS).

    ``title`` is the page's :func:`~neardup.text.html_titles.title_parts`: a block of links that
    holds a heading saying it stays (TITLED_LINKS), and is the column when it is the block with
    the most text out of links or when that block is short and says no title. Returns the content
    block found that way (see :func:`titled_list`), else None (the body is the content)."""
    ids = get_ids()
    blocks, containers = ids.body_blocks, ids.containers
    titled_block = TitledHeadings(body, title) if title and TITLED_LINKS else None
    parent, depth = body, 0
    while parent is not None and depth <= (BLOCK_DEPTH if DEEP_DENSE_BLOCKS else 0):
        # The element children, listed before any is removed (a removed node has no next sibling);
        # iter() skips the text nodes in C (the form feeds between blocks make one per block).
        items, headed, before_heading = [], False, 0
        for node in list(parent.iter()):
            if node.tag_id in blocks:
                chars, links = _stats(node.text_lexbor())
                if chars:
                    items.append((node, chars, links))
            elif node.tag_id in ids.headings and SECTION_HEADINGS and not headed:
                headed = out_of_links(node) > 0
                before_heading = len(items)
        if not items or depth and headed:
            if depth and headed and LEADING_STRIPS:
                # a line of links above the section's heading ("Next: ... Up: ...", a breadcrumb)
                for node, chars, links in items[:before_heading]:
                    if chars < SHORT_CHARS and links >= BODY_LINK_DENSITY * chars and (
                            node.text_lexbor().count("\x01") >= 2 and node.css_first(_HEADINGS) is None):
                        node.remove()
            break  # (a heading of its own among the blocks: a section of the content, see SECTION_HEADINGS)
        if depth and repeated(items):
            break  # cards of a listing (or posts of a thread): kept whole
        if not depth and ENDING_CHARS and len(items) > 1 and page_footer(*items[-1][:2]):
            # the page's footer, before it could be taken for the column of a short page
            items.pop()[0].remove()
        column, listing = max(items, key=own_text), None
        if titled_block is not None:
            if column[2] >= BODY_LINK_DENSITY * column[1]:
                listing = column[0] if titled_block(column[0]) else None
            elif column[1] < SHORT_CHARS and not titled_block(column[0]):
                # a strip (a line of navigation, a copyright) outweighs a page's list of links
                for item in items:
                    if item[2] >= BODY_LINK_DENSITY * item[1] and titled_block(item[0]):
                        column, listing = item, item[0]
                        break
        if HEADED_COLUMN and listing is None and column[1] - column[2] < LABEL_CHARS and (
                column[2] >= BODY_LINK_DENSITY * column[1]):
            # the label of a menu ("In this manual") outweighs a short content, a heading alone
            plain = [item for item in items if item[2] < BODY_LINK_DENSITY * item[1]]
            if plain:
                column = max(plain, key=own_text)
        outweighed = None  # the short column a block with a heading took the place of
        if HEADED_COLUMN and not depth and listing is None and column[1] - column[2] < SHORT_CHARS and (
                not holds_heading(column[0])):
            # A strip (a line of links, a notice) outweighs a short content, a chapter's heading
            # alone, by its text out of links: the larger block that holds a heading is the column,
            # and the short blocks without one beside it are strips of the page.
            for item in items:
                if item is not column and item[1] > column[1] and item[0].tag_id in containers and (
                        holds_heading(item[0])):
                    column, outweighed = item, column
                    break
        if column[0].tag_id not in containers:
            column = None  # (a layout of menu and content columns is dense in links as a whole)
        if depth and column is None:
            break  # inside the content: a list of links there is the content's (a table of contents)
        after = False  # past the column: what follows it in reading order
        for node, chars, links in items:
            if column is not None and node is column[0]:
                after = True
                continue
            # Headline links are a listing under <body> or where there is no column, and after the
            # column when they outweigh its own text; before it, they are a side column (a menu).
            as_listing = HEADLINE_CHARS and (not depth or column is None or after and links > column[1] - column[2])
            if links >= BODY_LINK_DENSITY * chars and not (as_listing and headlines(node, links)) and not (
                    titled_block is not None and titled_block(node)) or (
                    column is not None and chars < SHORT_CHARS and links >= STRIP_LINK_DENSITY * chars) or (
                    outweighed is not None and chars < SHORT_CHARS and not holds_heading(node)):
                node.remove()
        if listing is not None:
            return titled_list(listing, titled_block)
        if column is None:
            break
        parent = column[0]
        depth += 1


def page_footer(node, chars: int) -> bool:
    """Whether the last block under <body> is the page's footer: no text follows it, it is under
    ENDING_CHARS without a heading, and most of its text is in an element named like navigation
    (a copyright and licence notice called "copyright-footer"), whatever its length and links. A
    boxed note of the content is inside the content column; a last section has its heading."""
    if chars >= ENDING_CHARS or node.css_first(_HEADINGS) is not None:
        return False
    named = [node] if MARK_NAME in node.attributes else node.css(f"[{MARK_NAME}]")
    if not any(2 * _stats(n.text_lexbor())[0] >= chars for n in named):
        return False
    sib = node.next
    while sib is not None:  # (text straight under <body>, which is no block, may follow it)
        if _stats(sib.text_lexbor())[0]:
            return False
        sib = sib.next
    return True


def titled_list(node, titled_block: TitledHeadings):
    """The block of a page whose content holds its heading among links, from ``node``, a block
    made of links that holds the heading: down the blocks that hold the heading while they are
    made of links themselves (a layout's column of menus beside the content's goes), to the one
    whose first block holds the heading (the heading's own block, the list after it), or to a
    column of text after another column (the menus before the content's)."""
    blocks = get_ids().body_blocks
    while True:
        inner, first = None, True
        for child in node.iter():
            if child.tag_id in blocks:
                if titled_block(child):
                    inner = child
                    break
                first = first and not _stats(child.text_lexbor())[0]
        if inner is None or first:
            return node
        chars, links = _stats(inner.text_lexbor())
        if links < BODY_LINK_DENSITY * chars:
            return inner
        node = inner


class TitledHeadings:
    """Whether a block holds an h1-h3, not only a link, that says the page's title or one of its
    parts (``title`` as :func:`~neardup.text.html_titles.title_parts` gives it). The headings are
    read once, when first asked (most pages never are)."""

    def __init__(self, body, title: tuple[str, ...]):
        self.body, self.title, self.found = body, title, None

    def __call__(self, node) -> bool:
        if self.found is None:
            self.found = []
            for h in self.body.css("h1, h2, h3"):
                t = h.text_lexbor()
                if len(t) <= TITLE_CHARS and out_of_links(h):
                    if " ".join(t.replace("\x01", "").replace("\x02", "").split()).casefold() in self.title:
                        self.found.append(h)
        return any(is_under(h, node) for h in self.found)


def own_text(item) -> int:
    """An item's (node, chars, links) characters out of links."""
    return item[1] - item[2]


def holds_heading(node) -> bool:
    """Whether the node holds an h1-h6 with text out of links."""
    return any(out_of_links(h) for h in node.css(_HEADINGS))


def out_of_links(node) -> int:
    """The characters of the node's text outside links."""
    chars, links = _stats(node.text_lexbor())
    return chars - links


def headlines(node, links: int) -> bool:
    """Whether a block made of links is a list of headlines (a listing, whose links are its
    content) rather than a menu: HEADLINE_LINKS links or more, of HEADLINE_CHARS characters on
    average (a menu's items are a word or two)."""
    n = node.text_lexbor().count("\x01")
    return n >= HEADLINE_LINKS and links >= HEADLINE_CHARS * n


def repeated(items) -> bool:
    """Whether most of the blocks are one element, three or more times: the cards of a listing or
    a collection, the posts of a thread, the items of a grid."""
    counts = {}
    for node, _chars, _links in items:
        counts[node.tag_id] = counts.get(node.tag_id, 0) + 1
    top = max(counts.values())
    return top >= 3 and 2 * top >= len(items)


def common_ancestor(nodes, body):
    """The deepest element under ``body`` that holds all of ``nodes``, or None when only
    ``body`` does."""
    chain = []
    p = nodes[0].parent
    while p is not None and p.mem_id != body.mem_id:
        chain.append(p)
        p = p.parent
    ids = [c.mem_id for c in chain]
    best = 0
    for n in nodes[1:]:
        p = n.parent
        while p is not None and p.mem_id != body.mem_id and p.mem_id not in ids[best:]:
            p = p.parent
        if p is None or p.mem_id == body.mem_id:
            return None
        best = ids.index(p.mem_id)
    return chain[best]
