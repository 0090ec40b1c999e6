"""Pages whose content is a list of links under the page's heading (a part's table of contents, a
directory's index), and the title said before a text without a heading: the site's name in it
(as its home link says it) is left out, so that a page and its copy under another site's template
read the same."""

from __future__ import annotations

import pytest

pytest.importorskip("selectolax")

from neardup.text.html import extract_text  # noqa: E402
from neardup.text.html_titles import page_title, title_parts  # noqa: E402

CHAPTERS = [f"Chapter {i}. How the parser handles case {i} of the input" for i in range(1, 25)]
TOC = "".join(f'<dt><a href="ch{i}.html">{t}</a></dt>' for i, t in enumerate(CHAPTERS))
PART = (f'<div class="part"><div class="titlepage"><h1>Part II. The Parser</h1></div>'
        f'<div class="toc"><p><b>Table of Contents</b></p><dl>{TOC}</dl></div></div>')
MENU = "".join(f'<li><a href="/p{i}">Other page number {i} of this manual</a></li>' for i in range(40))


def main(html: str) -> str:
    return extract_text(html, "main")


def original() -> str:
    return (f"<html><head><title>Part II. The Parser</title></head><body>"
            f'<div class="navheader"><a href="a.html">Prev</a> The Manual <a href="b.html">Next</a></div>'
            f'{PART}<div class="navfooter"><a href="index.html">Home</a></div></body></html>')


def copy() -> str:
    return (f"<html><head><title>Part II. The Parser - Library mirror</title></head><body>"
            f'<div class="strip"><a href="/">Library mirror</a> <a href="/about">About</a></div>'
            f'<div class="layout"><div class="left"><div>In this manual</div><ul>{MENU}</ul></div>'
            f'<div class="page">{PART}</div></div>'
            f'<div class="bottom"><p>This page is a copy kept by the library mirror.</p>'
            f'<a href="/terms">Terms</a></div></body></html>')


def test_a_table_of_contents_under_the_pages_heading_is_the_content():
    text = main(original())
    assert text.startswith("Part II. The Parser")
    for t in CHAPTERS:
        assert t in text
    assert "Prev" not in text


def test_the_same_table_of_contents_beside_a_menu_column_reads_the_same():
    text = main(copy())
    for t in CHAPTERS:
        assert t in text
    # the menu column beside it and the copy's strips are not the content
    assert "Other page number" not in text
    assert "copy kept" not in text
    assert text == main(original())


def test_a_block_of_links_without_the_pages_heading_is_still_a_menu():
    # the title names no heading of the page: the links are a menu, as before
    page = copy().replace("<title>Part II. The Parser - Library mirror</title>", "<title>Index</title>")
    assert "Chapter 3." not in main(page)


def test_title_parts_split_at_spaced_dashes_bars_and_colons():
    assert title_parts("GIO Testing: GIO Reference Manual") == (
        "gio testing: gio reference manual", "gio testing", "gio reference manual")
    assert title_parts("Story - Site | Section") == ("story - site | section", "story", "site", "section")
    # a hyphen inside a word and a colon without a space after it do not split
    assert title_parts("well-known std::vector") == ("well-known std::vector", "well-known std::vector")
    assert title_parts("") == ()


def test_page_title_leaves_out_the_part_the_home_link_says():
    html = b'<head><title>Global s8 - Library mirror</title></head><body><a href="/">Library mirror</a></body>'
    assert page_title("Global s8 - Library mirror", html) == "Global s8"
    absolute = b'<a class="logo"\n href="https://docs.example.org/"><span>Library mirror</span></a>'
    assert page_title("Library mirror | Global s8", absolute) == "Global s8"
    assert page_title("Global s8 - Library mirror", b"<a href=/>Library mirror</a>") == "Global s8"  # unquoted
    # no home link, a home link saying something else, or a title all of the site's name: as it is
    assert page_title("Global s8 - Library mirror", b"<p>text</p>") == "Global s8 - Library mirror"
    assert page_title("Global s8 - Library mirror", b'<a href="/">Home</a>') == "Global s8 - Library mirror"
    assert page_title("Library mirror", html) == "Library mirror"
    # a link to a page of the site is no home link
    assert page_title("Global s8 - Library mirror",
                      b'<a href="/lib">Library mirror</a>') == "Global s8 - Library mirror"


def test_a_short_page_without_heading_is_said_with_its_own_title_on_both_sites():
    body = "<p>Defined in header regex_primitives.hpp; a mark tag constant.</p>"
    a = main(f"<html><head><title>Global s8</title></head><body>{body}</body></html>")
    b = main('<html><head><title>Global s8 - Library mirror</title></head><body>'
             f'<div><a href="/">Library mirror</a></div>{body}</body></html>')
    assert a.startswith("Global s8\n")
    assert a == b
