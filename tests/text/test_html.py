"""HTML to text: main content vs whole page, robustness to garbage, charset decoding."""

import os
import random

import pytest

from neardup.errors import ConfigError
from neardup.text import html as H
from neardup.text import html_fallback
from neardup.text.html import decode_html, extract_text

pytest.importorskip("trafilatura")
pytest.importorskip("lxml")

PAGE = os.path.join(os.path.dirname(__file__), "..", "data", "html", "article_with_nav.html")
ARTICLE = "The river rose more than four metres overnight"
NAV = ["Politics", "Real Estate", "Newsletters", "Privacy policy", "Cookie settings", "Most read", "cookies"]


@pytest.fixture(scope="module")
def page():
    with open(PAGE, "rb") as fh:
        return fh.read()


def test_main_keeps_article_and_drops_navigation(page):
    main = extract_text(page, "main")
    assert ARTICLE in main
    assert "crop could be saved" in main
    for word in NAV:
        assert word not in main, word
    assert "tracking-token" not in main


def test_whole_keeps_navigation_but_no_script_style_noscript(page):
    whole = extract_text(page, "whole")
    assert ARTICLE in whole
    for word in NAV:
        assert word in whole, word
    assert "tracking-token" not in whole  # <script>
    assert "font-family" not in whole     # <style>
    assert "enable JavaScript" not in whole  # <noscript>
    assert "Example Gazette</title>" not in whole and "- Example Gazette" not in whole  # <head>
    assert len(extract_text(page, "main")) < len(whole)


def test_main_is_default_and_str_equals_bytes(page):
    assert extract_text(page) == extract_text(page, "main") == extract_text(page.decode("utf-8"), "main")


def test_deterministic(page):
    for mode in ("main", "whole"):
        assert len({extract_text(page, mode) for _ in range(3)}) == 1


def test_whole_structure():
    html = ("<html><head><title>T</title></head><body><p>one <b>tw</b>o\n three</p><div>four<br>five</div>"
            "<table><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr></table>"
            "<template>tpl</template><p hidden>secret</p><svg><text>icon</text></svg><!-- comment -->six</body></html>")
    assert extract_text(html, "whole") == "one two three\nfour\nfive\na b\nc\nsix"


def test_stdlib_fallback_agrees_with_lxml(page):
    html = page.decode("utf-8")
    assert html_fallback.whole_stdlib(html) == H._whole(html)


def test_main_falls_back_to_whole_when_nothing_is_main():
    html = "<html><body><nav><a href='/a'>Alpha</a> <a href='/b'>Beta</a></nav></body></html>"
    assert extract_text(html, "main") == extract_text(html, "whole") == "Alpha Beta"


GARBAGE = [
    b"",
    "",
    "   \n\t ",
    b"\x00\x01\x02\xff\xfe\x00garbage\x00",
    bytes(random.Random(7).randrange(256) for _ in range(5000)),
    "<<<<>>>><</>",
    "<html><body><div><p><span>unclosed",
    "</p></div></body></html>",
    "<?xml version='1.0' encoding='utf-8'?><html><body>declared</body></html>",
    "\ud800 lone surrogate <p>x</p>",
    "<p>" + "<div>" * 20000 + "deep" + "</div>" * 20000,
    "<div a=" + "x" * 100000,
    "<script>never closed " * 100,
    "plain text without any tags",
    "<![CDATA[ cdata ]]><!DOCTYPE x [<!ENTITY e 'boom'>]>&e;&#0;&#xD800;&#1114112;",
]


@pytest.mark.parametrize("mode", ["main", "whole"])
@pytest.mark.parametrize("garbage", GARBAGE, ids=range(len(GARBAGE)))
def test_garbage_never_raises(garbage, mode):
    out = extract_text(garbage, mode)
    assert isinstance(out, str)
    assert "\x00" not in out
    # extract_text is _extract with "" for markup that cannot be parsed at all
    assert out == (H._extract(garbage, mode) or "")


def test_empty_input_is_empty():
    for mode in ("main", "whole"):
        assert extract_text("", mode) == ""
        assert extract_text(b"  ", mode) == ""
        assert extract_text("<html><head><title>only a title</title></head><body> </body></html>", mode) == ""
        assert extract_text("<script>var a = 1;</script>", mode) == ""


def test_plain_text_survives():
    assert extract_text("plain text without any tags", "whole") == "plain text without any tags"
    assert extract_text("plain text without any tags", "main") == "plain text without any tags"


def test_bad_mode():
    with pytest.raises(ConfigError):
        extract_text("<p>x</p>", "everything")


def test_decode_html_charsets():
    latin = "<html><head><meta charset='iso-8859-1'></head><body>caf\xe9 \u20ac</body></html>".encode("cp1252")
    assert "café €" in decode_html(latin)  # iso-8859-1 is read as windows-1252
    assert "café" in decode_html("<p>café</p>".encode("utf-8"))
    assert decode_html("\ufeff<p>bom</p>".encode("utf-8")) == "<p>bom</p>"
    assert "bom16" in decode_html("<p>bom16</p>".encode("utf-16"))
    # the HTTP charset wins over the meta tag
    koi = "<meta charset=utf-8><p>привет</p>".encode("koi8-r")
    assert "привет" in decode_html(koi, "koi8-r")
    # an unknown charset falls back to UTF-8
    assert decode_html(b"<meta charset=no-such-thing><p>ok</p>") == "<meta charset=no-such-thing><p>ok</p>"
    # invalid bytes for the declared charset: replaced, or None when strict
    assert decode_html(b"<meta charset=utf-8><p>\xff</p>") == "<meta charset=utf-8><p>\ufffd</p>"
    assert decode_html(b"<meta charset=utf-8><p>\xff</p>", errors="strict") is None
    # undeclared and not UTF-8, too few bytes to detect anything: windows-1252, as browsers read it
    assert decode_html(b"<p>\xff</p>") == "<p>\xff</p>"


def test_extraction_of_latin1_bytes():
    page = "<html><head><meta http-equiv='Content-Type' content='text/html; charset=ISO-8859-1'></head>" \
           "<body><p>Le caf\xe9 est ouvert.</p></body></html>"
    assert extract_text(page.encode("latin-1"), "whole") == "Le café est ouvert."
