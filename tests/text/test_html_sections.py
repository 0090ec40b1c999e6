"""The layout rules that keep a reference page's own parts: the title check against a file name
the text refers to, a heading's short list of links inside the content, and a column of long
titles before the content inside a layout wrapper (a menu, not a listing)."""

from __future__ import annotations

import pytest

pytest.importorskip("selectolax")

from neardup.text.html import extract_text  # noqa: E402
from neardup.text.html_titles import titled  # noqa: E402

PROSE = " ".join(f"Sentence {i} says how the parser reads a stream of tokens and builds a tree." for i in range(12))


def main(html: str) -> str:
    return extract_text(html, "main")


def test_a_file_name_referred_to_does_not_carry_the_title():
    title = "mylib: stream_reader.h File Reference"
    text = "Details\nThis header is internal.\nDefined in file stream_reader.h."
    assert not titled(text, title)
    # the same words outside a dotted name are a heading that says the title
    assert titled("Details\nReference for file stream_reader\nmore", title)
    # and a line the title holds carries it as before
    assert titled("stream_reader.h File Reference\nDetails", title)
    # a heading that says the file name with its folder says it as the title does, in order
    assert titled("io/stream_reader.h File Reference\nDetails", title)
    assert not titled("Reference: File io/stream_reader.h\nDetails", title)
    # a word the title repeats counts once: "types ... types" in a line is not "Types from Types"
    assert not titled("Types of every kind are other types.\nMore", "Making Types from Types")


def test_the_title_goes_first_when_only_a_file_name_matches():
    def page(name):
        return (f"<html><head><title>mylib: {name} File Reference</title></head><body>"
                "<div><p>Internal header, included by other headers; do not use it directly.</p>"
                f"<p>Defined in file {name}.</p></div></body></html>")

    a, b = main(page("stream_reader.h")), main(page("token_buffer.tcc"))
    assert a.startswith("mylib: stream_reader.h File Reference\n")
    assert b.startswith("mylib: token_buffer.tcc File Reference\n")


def _wrapped(section: str) -> str:
    # <body> > wrapper > (content column, and a section of the content beside its description)
    return (f"<html><body><div class=wrap><div class=inner>{section}"
            f"<div class=desc><p>{PROSE}</p></div></div></div></body></html>")


def test_a_heading_makes_its_short_list_of_links_a_section_of_the_content():
    members = "<ul><li><a href=/a>reader::open</a>, <a href=/b>reader::close</a></li></ul>"
    text = main(_wrapped(f"<h3>Members</h3>{members}"))
    assert "reader::open" in text and "Sentence 11" in text
    # the same list without the heading beside the column is a strip of links, dropped
    assert "reader::open" not in main(_wrapped(f"<div class=x>Members</div>{members}"))


def test_a_heading_only_made_of_a_link_is_no_section():
    members = "<ul><li><a href=/a>reader::open</a>, <a href=/b>reader::close</a></li></ul>"
    assert "reader::open" not in main(_wrapped(f"<h3><a href=/m>Members</a></h3>{members}"))


def _columns(before: bool, content: str) -> str:
    titles = "".join(f"<li><a href=/p{i}>Chapter {i}: reading streams of tokens into trees, part {i}</a></li>"
                     for i in range(30))
    menu = f"<div class=col><ul>{titles}</ul></div>"
    body = f"<div class=body>{content}</div>"
    inner = menu + body if before else body + menu
    return f"<html><body><div class=strip><a href=/>Home</a></div><div class=layout>{inner}</div></body></html>"


def test_a_column_of_long_titles_before_the_content_is_a_menu():
    text = main(_columns(True, "<p>Streams: the chapters on reading streams.</p>"))
    assert "Streams: the chapters" in text and "Chapter 7" not in text


def test_long_titles_after_a_short_content_column_are_its_listing():
    text = main(_columns(False, "<p>Streams: the chapters on reading streams.</p>"))
    assert "Streams: the chapters" in text and "Chapter 7" in text
    # ...but not beside a content column with more text of its own than they have
    text = main(_columns(False, f"<p>{PROSE} {PROSE} {PROSE}</p>"))
    assert "Sentence 11" in text and "Chapter 7" not in text


NOTICE = ("Copyright 2001-2009 the authors of this manual. Distributed under the licence of the project; see the "
          "file of the licence that comes with the sources, or the copy of it kept on the project's pages. "
          "Permission is granted to copy and distribute verbatim copies of this manual, changes being noted.")


def test_a_long_block_named_like_a_footer_that_ends_the_page_is_dropped():
    assert len(NOTICE) > 200  # longer than a strip: only its place at the end tells it apart
    html = (f"<html><body><div><h1>Streams</h1><p>{PROSE}</p></div>"
            f"<div class=legal-copyright>{NOTICE}</div></body></html>")
    text = main(html)
    assert "Sentence 11" in text and "Permission is granted" not in text


def test_a_long_named_block_with_content_after_it_or_a_heading_stays():
    boxed = f"<div class=sidebar>{NOTICE}</div>"
    html = f"<html><body><div><h1>Streams</h1><p>{PROSE}</p>{boxed}<p>The last word on streams.</p></div></body></html>"
    assert "Permission is granted" in main(html)
    headed = f"<div class=sidebar><h2>Licence</h2><p>{NOTICE}</p></div>"
    html = f"<html><body><div><h1>Streams</h1><p>{PROSE}</p>{headed}</div></body></html>"
    assert "Permission is granted" in main(html)


def test_the_footer_of_a_short_page_is_not_taken_for_its_column():
    # the notice has more text than the page's content: it would be the column
    html = (f"<html><body><div><h1>Close</h1><p>A constant that closes a stream.</p></div>"
            f"<table><tr><td><div class=site-copyright>{NOTICE}</div></td></tr></table></body></html>")
    text = main(html)
    assert "A constant that closes a stream." in text and "Permission is granted" not in text
