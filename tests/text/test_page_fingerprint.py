"""The whole-page fingerprint (``neardup.text.html_pages.page_fingerprint``, the sixth item of the
markup scan): XXH3-64 of the page's visible text tokens. What changes it (the text of navigation,
footers, ads, the content) and what does not (markup, attributes, scripts, styles, comments, white
space, the charset), in the compiled scan and its Python twin alike."""

from __future__ import annotations

from pathlib import Path

import pytest
import xxhash

from neardup.text import html_scan
from neardup.text.html import extract_text
from neardup.text.html_pages import WITH_PAGE, extract_page, extract_with_page, page_fingerprint

DEBIAN = Path(__file__).resolve().parents[1] / "data" / "html" / "debian"

PAGE = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>The title</title><style>p{color:red}</style>"
        "<script>var x = 'not text';</script></head><body><nav><ul><li><a href='/'>Home</a></li>"
        "<li><a href='/news/'>News</a></li></ul></nav><main><h1>A heading</h1><p>First   para<b>graph</b>,\n"
        "with &amp; an entity.</p><!-- a comment --><template><p>inert</p></template>"
        "<noscript>Enable scripts</noscript><p hidden>hidden words</p><pre>a  b</pre>"
        "<xmp>shown <raw></xmp></main><footer>Footer text</footer></body></html>")
#: what the fingerprint covers of PAGE, by hand: tokens, one space between two
VISIBLE = (b"Home News A heading First paragraph, with &amp; an entity. hidden words a b shown <raw> Footer text")


def scans(page):
    """The fingerprint by the compiled scan and by its Python twin, with and without the cut of
    navigation, of the page as str and as its UTF-8."""
    out = set()
    for markup in (page, page.encode("utf-8")):
        for cut in (False, True):
            out.add(html_scan.scan(markup, cut, True)[5])
            out.add(html_scan.scan_python(markup, cut, True)[5])
    return out


def test_the_fingerprint_is_xxh3_of_the_visible_text_tokens():
    # (only when asked for: dedup's scans spend nothing on it)
    assert html_scan.scan(PAGE)[5] is None and html_scan.scan_python(PAGE, True)[5] is None
    assert scans(PAGE) == {xxhash.xxh3_64_intdigest(VISIBLE)}
    assert page_fingerprint(PAGE) == xxhash.xxh3_64_intdigest(VISIBLE)
    assert scans("") == scans(" \n\t ") == scans("<p> </p><!-- x -->") == {xxhash.xxh3_64_intdigest(b"")}


@pytest.mark.parametrize("edit", [
    ("<li><a href='/'>Home</a></li>", "<li class='active' id=home><a href='/index.html' rel=home>Home</a></li>"),
    ("<b>graph</b>", "<span>graph</span>"),  # one inline element for another
    ("var x = 'not text';", "var y = 'other';"),
    ("p{color:red}", "p{color:blue}"),
    ("<!-- a comment -->", "<!-- another comment --><?php echo 1 ?>"),
    ("First   para", "First\n\t para"),  # white space reflowed
    ("<title>The title</title>", "<title>Another title</title>"),
    ("<p>inert</p>", "<p>other inert text</p>"),  # a template's content
    ("Enable scripts", "Please enable scripts"),  # noscript
    ("<p hidden>", "<p>"),  # the attribute only
], ids=["attributes", "inline-tag", "script", "style", "comment", "white-space", "title", "template", "noscript",
        "hidden-attribute"])
def test_markup_scripts_and_styles_alone_leave_it(edit):
    old, new = edit
    assert PAGE.count(old) == 1
    assert scans(PAGE.replace(old, new)) == scans(PAGE)


@pytest.mark.parametrize("edit", [
    (">News<", ">Offers<"),  # the navigation's text
    ("Footer text", "Footer text, 2027"),
    ("</footer>", "</footer><div class=ad>Buy now</div>"),  # an ad's text
    ("an entity", "an edit"),  # the content
    ("hidden words", "other hidden words"),  # (hidden elements are not followed: no tree)
    ("First   para<b>", "First   para<p>"),  # a block boundary splits a word
    ("&amp;", "&"),  # entities are not decoded
    ("shown", "seen"),  # xmp is shown
], ids=["navigation", "footer", "ad", "content", "hidden-text", "block-boundary", "entity", "xmp"])
def test_visible_text_changes_it(edit):
    old, new = edit
    assert PAGE.count(old) == 1
    changed = scans(PAGE.replace(old, new))
    assert len(changed) == 1 and changed != scans(PAGE)


def test_the_charset_does_not_change_it():
    page = PAGE.replace("A heading", "Café crème")
    legacy = page.replace("charset='utf-8'", "charset='windows-1252'").encode("cp1252")
    assert page_fingerprint(legacy) == page_fingerprint(page) == page_fingerprint(page.encode("utf-8"))
    assert page_fingerprint(page) != page_fingerprint(PAGE)


@pytest.mark.parametrize("name", sorted(p.name for p in DEBIAN.glob("*.html"))[:12])
def test_one_read_gives_the_text_of_its_mode_and_the_fingerprint(name):
    raw = (DEBIAN / name).read_bytes()
    html = raw.decode("utf-8")
    for mode in ("main", "article") if name.startswith("sphinx") else ("main",):
        got = extract_with_page(html, mode)
        assert got.text == extract_text(html, mode)
        assert got.page_fingerprint == page_fingerprint(html) == page_fingerprint(raw)
        read = extract_page(mode + WITH_PAGE, raw, None, None, "replace")
        assert (read.text, read.page_fingerprint) == (got.text, got.page_fingerprint)
    assert scans(html) == {page_fingerprint(raw)}


@pytest.mark.parametrize("text", ["a  b", "a b  c d", " a b ", "a\nb c", "a b\tc", "a b c ", "a", "  ", "a  b c\n\n"])
def test_white_space_runs_of_every_shape(text):
    want = {xxhash.xxh3_64_intdigest(" ".join(text.split()).encode())}
    assert scans(f"<div>{text}</div>") == want
    assert scans(f"<div>x {text} y</div>") == {xxhash.xxh3_64_intdigest(" ".join(["x", *text.split(), "y"]).encode())}
