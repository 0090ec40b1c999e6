"""The two cuts of the markup scan, in Python (``cut_region`` and ``svg_cut`` in
``src/neardup/native/_htmlscan.c``; :mod:`neardup.text.html_scan` drives them tag by tag).

The navigation cut drops a ``<nav>`` or ``<dialog>`` region from the scan's output once its end
tag is proven to close it (no tag inside could have broken out of it); the svg cut drops an
``<svg>`` whose content provably stays inside it. Each gives up, keeping the bytes, on anything
whose effect on the HTML parser's tree it cannot prove from the tags alone.
"""

from __future__ import annotations

__all__ = ["MAX_TAG", "NavigationRegion", "SvgCut", "svg_raw_ok"]

#: The longest tag name the scan looks up in its tables (a longer one is none of theirs).
MAX_TAG = 16


# The navigation cut (cut_navigation; see cut_region in _htmlscan.c): tags that give up a
# candidate, void elements, elements whose end tags are implied, and where none starts.
_CUT_GIVE_UP = frozenset(b"""table caption colgroup col tbody thead tfoot tr td th template svg math applet object
    marquee select body html head frameset frame plaintext""".split())
_CUT_VOID = frozenset(b"area base basefont bgsound br embed hr img image input keygen link meta param source track wbr".split())
_CUT_IMPLIED = frozenset(b"li p dd dt option optgroup rb rp rt rtc".split())
_CUT_FOREIGN = frozenset({b"svg", b"math", b"template"})
_CUT_DEPTH = 64


class NavigationRegion:
    __slots__ = ("active", "out_at", "flags_at", "root_flag", "names", "in_a", "in_button", "in_form", "foreign")

    def __init__(self):
        self.active, self.in_a, self.in_button, self.in_form, self.foreign = False, False, False, False, 0
        self.out_at = self.flags_at = self.root_flag = 0
        self.names: list[bytes] = []

    def outside(self, name: bytes, tag: str | None, is_end: bool, out_len: int, flags: int,
                self_closing: bool, tag_flag: int) -> None:
        if name == b"a":
            self.in_a = not is_end
            return
        if name == b"button":  # (a button start tag closes an open button: one at most)
            self.in_button = not is_end
            return
        if name == b"form":  # (in a template an end tag leaves the parser's form pointer)
            if not is_end:
                self.in_form = True
            elif not self.foreign:
                self.in_form = False
            return
        if name in _CUT_FOREIGN:
            if not is_end and not (self_closing and name != b"template"):  # "<svg/>" is closed
                self.foreign += 1
            elif self.foreign > 0:
                self.foreign -= 1
            return
        if is_end or tag not in ("nav", "dialog") or self.in_a or self.in_button or self.foreign:
            return
        self.active = True
        self.out_at, self.flags_at, self.root_flag = out_len, flags, tag_flag
        self.names = [name]

    def inside(self, name: bytes, is_end: bool, self_closing: bool = False) -> int:
        """0 go on, 1 the candidate's end tag, -1 give up."""
        if not is_end and self_closing and name in (b"svg", b"math"):
            return 0  # closed (a template's "/>" is not)
        if len(name) > MAX_TAG or name in _CUT_GIVE_UP:
            return -1
        if not is_end:
            if name in _CUT_VOID:
                return 0
            if len(self.names) == _CUT_DEPTH:
                return -1
            if name in (b"button", b"form"):
                # a button inside a button closes the outer one; a form inside a form is ignored
                if name == b"form" and self.in_form:
                    return -1
                if name in self.names[1:]:
                    return -1
            self.names.append(name)
            return 0
        k = len(self.names) - 1
        while k >= 0 and self.names[k] != name:
            k -= 1
        if k < 0:
            return -1
        if any(x not in _CUT_IMPLIED for x in self.names[k + 1:]):
            return -1
        del self.names[k:]
        return 1 if k == 0 else 0

    def give_up(self) -> None:
        """The candidate is kept; an <a>, a <button> or a <form> opened inside it is still open."""
        self.active = False
        inner = self.names[1:]
        if b"a" in inner:
            self.in_a = True
        if b"button" in inner:
            self.in_button = True
        if b"form" in inner:
            self.in_form = True


# The svg cut (see svg_cut in _htmlscan.c): the start tags that leave foreign content.
_BREAKOUT = frozenset(b"""b big blockquote body br center code dd div dl dt em embed font h1 h2 h3 h4 h5 h6 head hr i
    img li listing menu meta nobr ol p pre ruby s small span strike strong sub sup table tt u ul var""".split())


class SvgCut:
    __slots__ = ("pending", "out_at", "flags_at", "names", "in_region")

    def __init__(self):
        self.pending = self.in_region = False
        self.out_at = self.flags_at = 0
        self.names: list[bytes] = []

    def inside(self, t, is_end: bool) -> int:
        """0 go on, 1 the svg's end tag, -1 give up."""
        name = t.name
        if not is_end:
            if name in _BREAKOUT:
                return -1
            if t.self_closing:
                return 0
            if len(name) > MAX_TAG or len(self.names) == _CUT_DEPTH:
                return -1
            self.names.append(name)
            return 0
        if name in (b"p", b"br"):
            return -1
        k = len(self.names) - 1
        while k >= 0 and self.names[k] != name:
            k -= 1
        if k < 0:
            return -1
        del self.names[k:]
        return 1 if k == 0 else 0

    def give_up(self, region: NavigationRegion) -> None:
        """The svg is kept, and so is the navigation candidate around it, which needed its proof."""
        self.pending = False
        if self.in_region:
            region.give_up()
            region.foreign = sum(x in _CUT_FOREIGN for x in self.names)


def svg_raw_ok(tag: str, s: bytes, n: int, a: int, b: int) -> bool:
    """Whether the raw text s[a:b] of a ``tag`` inside an svg, closed before the end n, is text
    in foreign content too (no script-like element, no ``<`` the parser would read as markup)."""
    if b >= n or tag in ("script", "textarea", "iframe"):
        return False
    return b"<" not in s[a:b]
