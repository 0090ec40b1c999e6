"""The two cuts of the markup scan (scan(html, cut_navigation=True), used by "main" mode;
neardup.text.html_scan_cuts): a <nav> or <dialog> the scan can prove self-contained is replaced by
an empty one, and an <svg> whose content provably stays inside it in the parser's tree is cut out,
before the parse. The extracted texts must be those of the uncut markup, on tricky pages and real
ones."""

from pathlib import Path

import pytest

from neardup.text import html as H
from neardup.text import html_scan

DATA = Path(__file__).parent.parent / "data" / "html"
BODY = "<p>" + "Real content of the page, long enough to be the main text of it. " * 4 + "</p>"


def _uncut(monkeypatch):
    real = H._scan
    monkeypatch.setattr(H, "_scan", lambda html, cut=False, page=False: real(html, False, page))


# (page, whether the nav is cut; None: no claim)
NAV_PAGES = [
    ("<p>before</p><nav><ul><li><a href=/>home</a></li></ul></nav>" + BODY, True),
    ("<nav><nav><a href=/>inner</a></nav><a href=/>outer</a></nav>" + BODY, True),
    ("<main>" + BODY + "<nav><a href=/>in main</a></nav><p>after nav in main</p></main>", True),
    ("<NAV CLASS=Top><UL><LI><A HREF=/>Upper</A></UL></NAV>" + BODY, True),
    ("<nav/><p>a self-closing nav is an open one: the rest is in it</p>" + BODY, False),
    ("<nav><ul><li>unclosed items<li>second</ul><p>open p</nav>" + BODY, True),
    ("<nav><script>document.write('</nav>')</script><a>x</a></nav>" + BODY, True),
    ("<nav><!-- </nav> --><a>x</a></nav>" + BODY, True),
    ("<nav><a title='</nav>'>x</a></nav>" + BODY, True),
    ("<nav><dialog>d</dialog><a>x</a></nav><dialog open>modal</dialog>" + BODY, True),
    ("<p>p closed by nav<nav>n</nav>continued text</p>" + BODY, True),
    ("<nav>unclosed nav, the rest of the page in it" + BODY, False),
    ("<nav><b class=menu>bold left open</nav>after the nav, bold" + BODY, False),
    ("<div><nav>x</div>after the div, outside the nav</nav>" + BODY, False),
    ("<h2><nav>x</h2>after the heading</nav>" + BODY, False),
    ("<table><tr><td><nav>in a cell</td><td>next cell</td></tr></table>" + BODY, False),
    ("<nav><table><tr><td>x</nav>still in the cell</td></tr></table>" + BODY, False),
    ("<svg><nav><p>breaks out</nav>after</svg>" + BODY, False),
    # (a script in the svg keeps the svg itself from being cut: see SVG_PAGES below)
    ("<svg><nav>svg nav</nav><script>s</script></svg><p>after svg</p>" + BODY, False),
    ("<template><nav>t</nav></template>" + BODY, False),
    ("<nav><template>t</template></nav>" + BODY, False),
    ("<a href=/><nav>nav in a link</nav>after</a>" + BODY, False),
    ("<nav><select><option>o</nav>in the select</select>" + BODY, False),
    ("<nav><form><input></form></nav><form><p>second form</p></form>" + BODY, True),
    ("<nav><body hidden>x</nav>" + BODY, False),
    ("<nav><title>T in nav</title></nav>" + BODY, True),
    ("<nav>a</nav><nav><b>b</nav>c" + BODY, None),  # the first cut, the second not
    ("<nav data-neardup-name>own marks</nav><div class=sidebar>s</div>" + BODY, True),
    ("<nav><a href=/>only navigation</a></nav>", True),  # main is empty: whole keeps the nav
    # buttons (menu toggles) and icons inside the nav
    ("<nav><button class=toggle>Menu</button><ul><li><a href=/>home</a></ul></nav>" + BODY, True),
    ("<nav><button>open<p>p in a button</button><a>x</a></nav>" + BODY, True),
    ("<nav><button>outer<button>inner closes the outer</button></button></nav>" + BODY, False),
    ("<button><nav>a nav in a button</nav><button>closes it</button>after</button>" + BODY, False),
    ("<nav><button>left open</nav>after the nav, in the button" + BODY, False),
    ("<nav><a href=/><svg viewBox='0 0 1 1'><path d='M0 0'/></svg>home</a></nav>" + BODY, True),
    ("<nav><svg><g><text>t</text></g></svg><svg/><a>x</a></nav>" + BODY, True),
    ("<nav><svg><div>breaks out of the svg</div></svg><a>x</a></nav>" + BODY, False),
    ("<nav><svg><style>a<b></style></svg></nav><p>after</p>" + BODY, False),
    ("<nav><svg><g></nav>the nav's end tag inside the svg</g></svg>" + BODY, False),
    ("<nav><svg><![CDATA[</svg>]]></svg></nav>" + BODY, False),
    # a search form inside the nav
    ("<nav><form action=/s><input name=q><button>Go</button></form><a href=/>home</a></nav>" + BODY, True),
    ("<form><nav><form>ignored: a form is open</form><a>x</a></nav></form>after" + BODY, False),
    ("<nav><form><div>left open</form></div><a>x</a></nav>" + BODY, False),
    ("<nav><form>a<form>b</form></form></nav>" + BODY, False),
    ("<nav><form>never closed</nav><p>after the nav, in the form" + BODY, False),
    ("<form>closed</form><nav><form>c</form></nav>" + BODY, True),
]


def test_only_navigation_falls_back_to_the_whole_text_with_the_nav():
    assert H.extract_text("<nav><a href=/>only navigation</a></nav>") == "only navigation"


def test_navigation_cut_forgets_what_was_inside():
    page = "<nav class=menu><h1 hidden>x</h1><main>m</main></nav><p>text</p>"
    marked, flags, *_ = html_scan.scan(page, True)
    assert b"main" not in marked and b"h1" not in marked
    assert flags & html_scan.FLAGS["NAV"]
    assert not flags & (html_scan.FLAGS["MAIN"] | html_scan.FLAGS["H1"] | html_scan.FLAGS["HIDDEN"]
                        | html_scan.FLAGS["NAMED"])


def test_navigation_cut_gives_the_same_texts_on_real_pages(monkeypatch):
    pages = sorted(DATA.rglob("*.html"))
    assert pages, "the sample pages of tests/data/html are missing"
    raw = [p.read_bytes() for p in pages]
    got = [H.extract_text(b) for b in raw]
    cut = sum(len(html_scan.scan(b, True)[0]) < len(html_scan.scan(b)[0]) for b in raw)
    _uncut(monkeypatch)
    assert cut, "no sample page had a nav the scan could cut"
    assert got == [H.extract_text(b) for b in raw]


# (page, whether every svg is cut; None: no claim)
SVG_PAGES = [
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


def _nav_cut(page: str, marked: bytes) -> bool:
    return len(marked) < len(html_scan.scan(page)[0])


def _svg_cut(page: str, marked: bytes) -> bool:
    return b"<svg" not in marked.lower()


@pytest.mark.parametrize("page,cut,was_cut", [(p, c, _nav_cut) for p, c in NAV_PAGES]
                         + [(p, c, _svg_cut) for p, c in SVG_PAGES])
def test_cut_gives_the_same_texts(page, cut, was_cut, monkeypatch):
    got = {m: H.extract_text(page, m) for m in ("main", "whole")}
    got_bytes = H.extract_text(page.encode("utf-8"))
    marked = html_scan.scan(page, True)[0]
    fingerprint = html_scan.scan(page, True, True)[5]
    _uncut(monkeypatch)
    assert got == {m: H.extract_text(page, m) for m in ("main", "whole")}
    assert got_bytes == got["main"]
    if cut is not None:  # cut where it can be proven, and only there
        assert was_cut(page, marked) == cut, marked
    assert html_scan.scan(page, True) == html_scan.scan_python(page, True)
    assert html_scan.scan(page, True, True) == html_scan.scan_python(page, True, True)
    assert fingerprint == html_scan.scan(page, False, True)[5]  # the page's fingerprint does not see the cut


def test_svg_cut_forgets_what_was_inside():
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


def test_svg_cut_gives_the_same_texts_on_real_pages_with_icons(monkeypatch):
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
