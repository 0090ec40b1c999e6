"""The svg cut of the markup scan (scan(html, cut_navigation=True), used by "main" mode): an
<svg> element whose content provably stays inside it in the parser's tree is cut out before the
parse; the extracted texts must be those of the uncut markup, on tricky pages and real ones."""

from pathlib import Path

import pytest

from neardup.text import html as H
from neardup.text import html_scan

DATA = Path(__file__).parent.parent / "data" / "html"
BODY = "<p>" + "Real content of the page, long enough to be the main text of it. " * 4 + "</p>"

# (page, whether every svg is cut; None: no claim)
TRICKY = [
    ("<p>icon<svg viewBox='0 0 1 1'><path d='M0 0'/></svg>after</p>" + BODY, True),
    ("<SVG><G><TEXT>upper case</TEXT></G></SVG>" + BODY, True),
    ("<svg><svg><g></g></svg><text>nested</text></svg><p>after</p>" + BODY, True),
    ("<svg><g><text>left open</svg><p>after</p>" + BODY, True),  # </svg> closes what is open in it
    ("<svg><style>.a{fill:red}</style><title>Logo</title><use href=#x /></svg>" + BODY, True),
    ("<svg><a href=/>a link in the drawing</a></svg><a href=/x>a link</a>" + BODY, True),
    ("<svg><nav>a nav in the drawing</nav></svg>" + BODY, True),
    ("<table><tr><td>a<svg><g/></svg>b</td></tr></table>" + BODY, True),
    ("<svg/><nav><a href=/>a nav after a closed svg</a></nav>" + BODY, None),  # (nothing to cut)
    ("<svg class=menu hidden><g/></svg><p>marks inside are forgotten</p>" + BODY, True),
    ("<svg><input>not void in foreign content</input></svg>" + BODY, True),
    # the HTML5 tree construction takes these out of the svg: the svg stays as it is
    ("<svg><div>breaks out</div></svg>" + BODY, False),
    ("<svg><g><p>breaks out</g></svg>after" + BODY, False),
    ("<svg><g></p>an end tag that breaks out</g></svg>" + BODY, False),
    ("<svg><g></br>an end tag that breaks out</g></svg>" + BODY, False),
    ("<svg><font color=red>breaks out</font></svg>" + BODY, False),
    ("<svg><foreignObject><div>html in the drawing</div></foreignObject></svg>" + BODY, False),
    ("<div><svg><g></div>closes the div and the svg</g></svg>" + BODY, False),
    ("<svg><![CDATA[ </svg> <b>x</b> ]]></svg>" + BODY, False),
    ("<svg><script>if (a < b) {}</script></svg>" + BODY, False),
    ("<svg><style>a<b>c</b></style></svg>" + BODY, False),
    ("<svg><title>unclosed title</svg>" + BODY, False),
    ("<svg><feComponentTransfer><feFuncR/></feComponentTransfer></svg>" + BODY, False),
    ("<svg>never closed" + BODY, False),
    ("<math><svg><g/></svg></math>" + BODY, False),
    ("<template><svg><g/></svg></template>" + BODY, False),
    ("<select><svg><text>x</text></svg></select>" + BODY, None),
    ("<svg><div>out</div></svg><svg><g/></svg>" + BODY, None),  # the first kept, the second cut
    ("<nav><svg><g/></svg><a href=/>a nav with an icon</a></nav>" + BODY, None),
]


def _uncut(monkeypatch):
    real = H._scan
    monkeypatch.setattr(H, "_scan", lambda html, cut=False, page=False: real(html, False, page))


@pytest.mark.parametrize("page,cut", TRICKY)
def test_cut_gives_the_same_texts(page, cut, monkeypatch):
    got = {m: H.extract_text(page, m) for m in ("main", "whole")}
    got_bytes = H.extract_text(page.encode("utf-8"))
    marked = html_scan.scan(page, True)[0]
    fingerprint = html_scan.scan(page, True, True)[5]
    _uncut(monkeypatch)
    assert got == {m: H.extract_text(page, m) for m in ("main", "whole")}
    assert got_bytes == got["main"]
    if cut is not None:  # cut where it can be proven, and only there
        assert (b"<svg" not in marked.lower()) == cut, marked
    assert html_scan.scan(page, True) == html_scan.scan_python(page, True)
    assert html_scan.scan(page, True, True) == html_scan.scan_python(page, True, True)
    assert fingerprint == html_scan.scan(page, False, True)[5]  # the page's fingerprint does not see the cut


def test_cut_forgets_what_was_inside():
    marked, flags, title, *_ = html_scan.scan("<svg class=menu hidden><title>Logo</title></svg><p>text</p>", True)
    assert b"svg" not in marked and b"Logo" not in marked
    assert title == "Logo"  # read as without the cut
    assert not flags & (html_scan.FLAGS["SVG"] | html_scan.FLAGS["NAMED"] | html_scan.FLAGS["HIDDEN"])
    assert html_scan.scan("<svg><div>x</div></svg>", True)[1] & html_scan.FLAGS["SVG"]


def test_a_closed_svg_leaves_the_navigation_cut_on():
    marked = html_scan.scan("<svg/><nav><a href=/>n</a></nav><p>text</p>", True)[0]
    assert b"\x0c<nav></nav>" in marked


# Icons as sites write them: a sprite reference, a drawn logo with its title and styles, a
# gradient, an icon in a button and in a heading's link.
ICONS = [
    b'<svg class="icon icon-menu" aria-hidden="true" focusable="false"><use xlink:href="#icon-menu"></use></svg>',
    b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="24" height="24"><title>Logo</title>'
    b'<style>.st0{fill:#E31B23;}</style><path class="st0" d="M12 2L2 7l10 5 10-5-10-5z"/>'
    b'<g fill="none" stroke="currentColor"><circle cx="12" cy="12" r="3"></circle></g></svg>',
    b'<svg width="10" height="10"><defs><linearGradient id="g"><stop offset="0"/><stop offset="1"/>'
    b'</linearGradient></defs><rect width="10" height="10" fill="url(#g)"/><text x="0" y="9">7</text></svg>',
]
PLACES = [b"<a ", b"<button", b"<h2", b"<li", b"<p>", b"</nav>", b"<div"]


def test_cut_gives_the_same_texts_on_real_pages_with_icons(monkeypatch):
    pages = sorted(DATA.rglob("*.html"))
    assert pages, "the sample pages of tests/data/html are missing"
    raw = []
    for n, p in enumerate(pages):
        page = p.read_bytes()
        for k, place in enumerate(PLACES):  # an icon before the first few tags of each kind
            icon = ICONS[(n + k) % len(ICONS)]
            page = page.replace(place, icon + place, 3)
        raw.append(page)
    got = [H.extract_text(b) for b in raw]
    cut = sum(b"<svg" in b and b"<svg" not in html_scan.scan(b, True)[0] for b in raw)
    _uncut(monkeypatch)
    assert cut >= len(raw) // 2, "the icons should be cut out of most pages"
    assert got == [H.extract_text(b) for b in raw]
