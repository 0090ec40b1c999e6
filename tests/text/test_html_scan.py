"""The compiled markup scan (neardup._htmlscan) against its Python twin (text/html_scan.py):
same answers on real pages, hand-made corner cases and random bytes."""

import random
from pathlib import Path

import pytest

from neardup.text import html_scan

_htmlscan = pytest.importorskip("neardup._htmlscan")

DATA = Path(__file__).parent.parent / "data" / "html"

CASES = [
    "",
    "plain text, no markup at all",
    "<p>a<b>b</b>c</p><div>d</div>",
    "<P CLASS='TopNav'>x</P><DIV ID=\"Side-Bar\">y</DIV>",
    "<a href=x>link</a> text <a>another<a>nested</a>",
    "<script>var s = '<p class=nav>';</script><style>p{}</style><textarea><b>t</b></textarea>after",
    "<SCRIPT>x</Script >y<iframe src=a>z</iframe>w",
    "<script>never closed <p>",
    "<!-- c --><!--> <!---> <!-- a -- b --!> x <!-- unterminated",
    "<?xml version='1.0'?><!DOCTYPE html><html><title>T &amp; U</title></html>",
    "<title>first</title><title>second</title>",
    "<xmp><p>raw</p></xmp><plaintext><p>rest of the page",
    "<div hidden>h</div><div style='display:none'>s</div><div style='DISPLAY:NONE'>k</div>",
    "<nav role=navigation></nav><div role=main></div><aside role=complementary></aside><div role=Main>",
    "<div class='a nav b' class='second'>dup</div><span id=''>e</span><i class>n</i>",
    "<div data-neardup-name>own</div>",
    "tab\there\x0cform feed\x01one\x02two\u3000ideographic\xa0nbsp",
    "<td>a<th>b</td></tr><table><tr><td>c",
    "<a href='unterminated>text",
    "<div class=\"" + "x" * 400 + "nav\">long name</div>",
    "< p>not a tag</ p> <3 <> </> <//x> <1>",
    "<main><h1>H</h1><article><header>h</header><footer>f</footer></article></main>",
    "<svg><title>icon</title><a>x</a></svg><math>m</math><select><option>o</select><button>b</button>",
    "\u00e9\u4e2d\U0001f600 <p class=\u00e9nav>unicode</p>",
    "<div class='margin-bottom-small overflow-hidden top-0 md:hidden'>u</div><p class='top-bar x-toc'>n</p>"
    "<i class='border-top sticky-top ad-slot header-ad page-top'>w</i><b id=a-search-b>z</b>",
    "<script type='application/ld+json'>{\"@type\": \"Product\"}</script><script>\"Product\"</script>",
    "<script type=application/ld+json>{\"@type\": \"Product\"",
    "<noscript><iframe src=t height=0 /></noscript><p>the page</p><noscript><script>x</noscript>y",
    "<noscript><iframe src=t /><p>never closed",
    "<iframe src=t />not in a noscript <p>swallowed</p>",
    "<h2>Related posts</h2><H3 class=x>\n <a href=y>You may ALSO like</a></H3><h2>Relatedness</h2>",
    "<h2> </h2><p>Related</p><h4>related\u00e9</h4><h5>up next_</h5><h6>Sponsored",
    "<script type='Application/LD+JSON'>{}</script><script>ld+json</script>",
]


def _pages():
    return sorted(DATA.rglob("*.html"))[:40]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("cut", [False, True])
def test_scan_matches_python(case, cut):
    assert _htmlscan.scan(case, cut) == html_scan.scan_python(case, cut)
    assert _htmlscan.scan(case.encode("utf-8"), cut) == html_scan.scan_python(case.encode("utf-8"), cut)


def test_aside_heading_and_json_ld_flags():
    assert _htmlscan.ASIDE_WORDS == html_scan.ASIDE_WORDS
    aside, json_ld = html_scan.FLAGS["ASIDE_HEADING"], html_scan.FLAGS["JSON_LD"]
    for scan in (_htmlscan.scan, html_scan.scan_python):
        def flags(page):
            return scan(page, True)[1]
        assert flags("<h2><a href=x>\n Customers also viewed</a></h2>") & aside
        assert flags("<h3>More from the author</h3>") & aside
        # the words open the heading's own text, as whole words
        assert not flags("<h2>Relatedness</h2>") & aside
        assert not flags("<h2>Our story</h2><p>Related</p>") & aside
        assert not flags("<p>Related</p><h1>Related</h1>") & aside
        # the web's other main languages, a capital of Latin-1 folded as an ASCII one is
        assert flags("<h2>Ähnliche Artikel</h2>") & aside and flags("<h2>ÄHNLICHE ARTIKEL</h2>") & aside
        assert flags("<h3>Noticias relacionadas</h3>") & aside
        assert not flags("<h2>Ähnlichkeit</h2>") & aside
        assert flags("<script type='application/LD+json'>{}</script>") & json_ld
        assert not flags("<script>var t = 'json';</script><p>ld+json</p>") & json_ld


def test_element_never_closed_in_a_noscript_ends_with_the_noscript():
    # A browser running scripts reads a noscript's content as text up to </noscript>: an
    # "<iframe ... />" there (iframe is no void element) does not swallow the rest of the page.
    page = "<noscript><iframe src=https://tags.example/ns height=0 /></noscript><main><p>The page's text.</p></main>"
    for scan in (_htmlscan.scan, html_scan.scan_python):
        marked = scan(page, False)[0]
        assert b"The page's text." in marked and b"<iframe" not in marked
        # outside a noscript, the element runs to the end of the page, as a parser reads it
        assert b"The page's text." not in scan(page.replace("noscript", "div"), False)[0]
    from neardup.text.html import extract_text

    assert extract_text(page) == "The page's text."


def test_scan_matches_python_on_real_pages():
    pages = _pages()
    assert pages, "the sample pages of tests/data/html are missing"
    for p in pages:
        data = p.read_bytes()
        assert _htmlscan.scan(data) == html_scan.scan_python(data), p
        assert _htmlscan.scan(data, True) == html_scan.scan_python(data, True), p


def test_scan_on_random_bytes():
    rng = random.Random(15)
    alphabet = b"<>/!-?='\" \t\nabcdiptvnasrlmAPNV\x0c\x01\x02\xee\x80\x81&;"
    words = [b"<a ", b"<p>", b"</a>", b"<script>", b"</script>", b"<!--", b"-->", b"class=", b"id=", b"nav",
             b"<title>", b"</title>", b"hidden", b"role=menu", b"style='display:none'", b"<td>", b"<plaintext>",
             b"<nav>", b"</nav>", b"<NAV class=x>", b"<dialog>", b"</dialog>", b"<li>", b"</li>", b"<ul>", b"</ul>",
             b"<svg>", b"</svg>", b"<table>", b"<b>", b"</b>", b"</div>", b"<div>"]
    for _ in range(3000):
        parts = []
        for _ in range(rng.randrange(1, 30)):
            parts.append(rng.choice(words) if rng.random() < 0.4 else bytes(rng.choice(alphabet)
                                                                             for _ in range(rng.randrange(1, 6))))
        data = b"".join(parts)
        assert _htmlscan.scan(data) == html_scan.scan_python(data), data
        assert _htmlscan.scan(data, True) == html_scan.scan_python(data, True), data


@pytest.mark.parametrize("text", ["", " ", "\x0c", "a", " a  b \x0c\x0c c\x01d\x02 e ", "x\u2028y\u3000z\x85w\xa0v",
                                  "\x01\x02", "a\x0c \x01 \x0c b", "\U0001f600 \u00e9\t\n\r\x0b\x1c\x1f end"])
def test_lines_and_stats_match_python(text):
    assert _htmlscan.lines(text) == html_scan.lines_python(text)
    assert _htmlscan.stats(text) == html_scan.stats_python(text)


def test_lines_and_stats_on_random_text():
    rng = random.Random(7)
    chars = "ab\u00e9\u4e2d \t\n\x0c\x01\x02\u2000\u200a\u200b\u3000\xa0\x85\x1c\U0001f600"
    for _ in range(3000):
        t = "".join(rng.choice(chars) for _ in range(rng.randrange(0, 40)))
        assert _htmlscan.lines(t) == html_scan.lines_python(t), repr(t)
        assert _htmlscan.stats(t) == html_scan.stats_python(t), repr(t)


def test_lines_and_stats_on_runs_of_words():
    # runs of printable ASCII with single spaces are copied and counted a word (8 bytes) at a
    # time: the bytes at the edges of the range (0x1f, space, '!', '~', 0x7f), double spaces
    # and a space at the end of a word, at every alignment and in every width of str
    rng = random.Random(11)
    pieces = ["word", "a", "!~", " ", " ", "  ", "\x1f", "\x7f", "\x80", "\x0c", "\x01", "\x02", "\t", "\u0120",
              "\u2000", "\u4e2d", "\U0001f600", "\x00", "xyzzy!"]
    for _ in range(3000):
        t = "".join(rng.choice(pieces[:6]) if rng.random() < 0.85 else rng.choice(pieces)
                    for _ in range(rng.randrange(0, 60)))
        for u in (t, t + "\u4e2d", "\U0001f600" + t, t[1:]):
            assert _htmlscan.lines(u) == html_scan.lines_python(u), repr(u)
            assert _htmlscan.stats(u) == html_scan.stats_python(u), repr(u)


def test_lines_and_stats_read_every_width_of_str():
    # a str is stored 1, 2 or 4 bytes a character (PEP 393); lines() and stats() read each in
    # place, and lines() returns the narrowest str that holds its result (else it would not
    # compare equal to the same text made otherwise)
    for t in ["a\u3000b", "\u3000x\x0cy\u2028", "\U0001f600\x0c\U0001f600 a", "\xe9 a\x85b", "\ud800 a \udfff"]:
        out = _htmlscan.lines(t)
        assert out == html_scan.lines_python(t) and hash(out) == hash(html_scan.lines_python(t))
        assert _htmlscan.stats(t) == html_scan.stats_python(t)
    assert _htmlscan.lines("\u3000a\u2000b").isascii()
    assert _htmlscan.lines("\U0001f600 \xe9\x0c") == "\U0001f600 \xe9"


@pytest.mark.parametrize("data", [b"", b"plain ascii " * 5, "é中😀".encode(), b"\xc3", b"\xc3\x28", b"\xc0\x80", b"\xc1\xbf",
                                  b"\xe0\x80\x80", b"\xe0\xa0\x80", b"\xed\xa0\x80", b"\xed\x9f\xbf", b"\xef\xbf\xbf",
                                  b"\xf0\x8f\xbf\xbf", b"\xf0\x90\x80\x80", b"\xf4\x8f\xbf\xbf", b"\xf4\x90\x80\x80",
                                  b"\xf5\x80\x80\x80", b"\xff", b"\x80", b"abcdefg\xe2\x82", b"abcdefgh\xe2\x82\xac",
                                  "\ud800".encode("utf-8", "surrogatepass")])
def test_is_utf8_is_the_strict_decoder(data):
    assert _htmlscan.is_utf8(data) == html_scan.is_utf8_python(data)


def test_is_utf8_on_random_bytes():
    rng = random.Random(8)
    alphabet = [b"a", b"\x7f", b"\xc2\xa0", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"\x80", b"\xbf", b"\xc0", b"\xe0",
                b"\xed", b"\xf0", b"\xf4", b"\xf8", b"\xa0", b"\x9f", b"\x90", b"\x8f"]
    for _ in range(5000):
        data = b"".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 24)))
        assert _htmlscan.is_utf8(data) == html_scan.is_utf8_python(data), data


def test_scan_marks():
    marked, flags, title, classes, ids, _page = _htmlscan.scan(
        "<html><head><title>T</title><script>x</script></head><body><div class='topnav menu x' id=side-bar>"
        "<a href=/>home</a></div><p hidden>h</p><nav role=navigation></nav><main>m</main></body></html>")
    assert title == "T" and classes == ["topnav", "menu"] and ids == ["side-bar"]
    assert b"<script" not in marked and b"\x01home\x02" in marked
    # the attributes the extraction does not read are cut (role stays)
    assert b"<div data-neardup-name>" in marked and b"<p data-neardup-hidden>" in marked
    assert b"<nav data-neardup-role role=navigation>" in marked and b"\x0c<main>" in marked
    assert b"<a>\x01home" in marked
    f = html_scan.FLAGS
    for name in ("NAV", "MAIN", "HIDDEN", "ROLE_NAV", "NAMED"):
        assert flags & f[name], name
    assert not flags & f["ARTICLE"] and not flags & f["OWN_MARKS"]


@pytest.mark.parametrize("name,kind", [
    ("side-bar", 1), ("top-bar", 1), ("toc", 1), ("page-toc", 1), ("sr-only", 1), ("hidden", 1), ("hidden-xs", 1),
    # layout utility classes say how an element is drawn, not what it holds
    ("margin-bottom-small", 0), ("overflow-hidden", 0), ("top-0", 0), ("border-top", 0), ("md:hidden", 0),
    ("a-search-b", 0), ("header-ad", 2), ("ad-slot", 2),
    # "top" names a region only as the whole name: a documentation block "top-doc" is content
    ("top", 1), ("top-doc", 0), ("page-top", 0), ("top-nav", 1),
])
def test_exact_words_name_only_in_their_places(name, kind):
    page = f"<div class='{name}'>x</div>"
    marked = _htmlscan.scan(page)[0]
    assert marked == html_scan.scan_python(page)[0]
    assert (b"data-neardup-name" in marked, b"data-neardup-secondary" in marked) == (kind == 1, kind == 2)


@pytest.mark.parametrize("page,want", [
    ("<p class=x id=y lang=en>t</p>", b"\x0c<p>t\x0c</p>"),
    ("<br/><img src=a.png /><svg><path d='M0'/></svg>", b"\x0c<br/><img/><svg><path/></svg>"),
    ("<br / >", b"\x0c<br>"),
    ("<a href=/x/>y</a>", b"<a>\x01y\x02</a>"),  # the slash is the value's: not self-closing
    ("<div ROLE = 'main' class=c role=x>m</div>", b"\x0c<div ROLE = 'main' role=x>m\x0c</div>"),
    ("<table><input type=hidden name=q><font color=red size=2>f</font></table>",
     b"\x0c<table><input type=hidden name=q><font color=red size=2>f</font>\x0c</table>"),
    ("<math><annotation-xml encoding='text/html'><p>x</p></annotation-xml></math>",
     b"<math><annotation-xml encoding='text/html'>\x0c<p>x\x0c</p></annotation-xml></math>"),
    ("<div class='unterminated", b"\x0c<div"),  # dropped by the parser either way
    ("<p class=a data-neardup-name>own</p>", b"\x0c<p class=a data-neardup-name>own\x0c</p>"),
])
def test_scan_keeps_only_the_attributes_read(page, want):
    assert _htmlscan.scan(page)[0] == want
    assert html_scan.scan_python(page)[0] == want


def test_cutting_attributes_keeps_the_text_and_the_tree():
    # lexbor's tree of the marked page has the same text, element for element, as that of the
    # page with all its attributes (the scan of a page that has marks of its own keeps them all)
    lexbor = pytest.importorskip("selectolax.lexbor")
    for p in _pages():
        data = p.read_bytes()
        marked = _htmlscan.scan(data)[0]
        full = _htmlscan.scan(data.replace(b"<body", b"<body data-neardup-x", 1))[0]
        assert len(marked) < len(full)
        a, b = lexbor.LexborHTMLParser(marked), lexbor.LexborHTMLParser(full)
        assert a.body.text(deep=True) == b.body.text(deep=True), p
        assert [n.tag for n in a.body.traverse()] == [n.tag for n in b.body.traverse()], p


def test_product_data_flag_only_from_json_ld():
    f = html_scan.FLAGS["PRODUCT_DATA"]
    ld = "<script type='application/ld+json'>{\"@type\": \"Product\", \"description\": \"d\"}</script><p>x</p>"
    assert _htmlscan.scan(ld)[1] & f and html_scan.scan_python(ld)[1] & f
    other = "<script>var t = \"Product\";</script><p>\"Product\"</p>"
    assert not _htmlscan.scan(other)[1] & f and not html_scan.scan_python(other)[1] & f


def test_flags_agree_with_python_names():
    for name, bit in html_scan.FLAGS.items():
        assert getattr(_htmlscan, name) == bit


def test_extraction_same_without_the_compiled_scan(monkeypatch):
    """A machine without a compiler extracts the same texts (the Python twin)."""
    from neardup.text import html as H
    from neardup.text import html_layout

    pages = [p.read_bytes() for p in _pages()[:15]]
    fast = [H.extract_text(p) for p in pages]
    monkeypatch.setattr(H, "_scan", html_scan.scan_python)
    monkeypatch.setattr(H, "_lines", html_scan.lines_python)
    monkeypatch.setattr(H, "_stats", html_scan.stats_python)
    monkeypatch.setattr(html_layout, "_stats", html_scan.stats_python)
    assert [H.extract_text(p) for p in pages] == fast


def test_white_space_runs_with_a_line_feed_are_one_line_feed_in_the_marked_page():
    # a page's indentation: a line feed and the next line's spaces, one line feed for lexbor to
    # parse; a run without a line feed, a single line feed and raw text stay as they are
    page = "<div>\n    <p>One  two\nthree \r\n\t four</p>\n\n  </div><xmp>\n   kept</xmp>"
    for scan in (_htmlscan.scan, html_scan.scan_python):
        marked = scan(page, False)[0]
        assert b"One  two\nthree\nfour" in marked
        assert b"\n   kept" in marked and b"    " not in marked.replace(b"\n   kept", b"")
    from neardup.text.html import extract_text
    assert extract_text(page, "whole") == extract_text(page.replace("\n    ", " ").replace("\n\n  ", " "), "whole")
