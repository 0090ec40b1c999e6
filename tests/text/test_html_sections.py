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


def _stub(chapter: str, label: str = "In this manual") -> str:
    """A chapter page whose content is its heading alone, in a layout with a column of long titles
    under a label, between a strip of links above and a notice with links below, none named."""
    titles = "".join(f"<li><a href=/p{i}>Next: Chapter {i + 1}, Previous: Chapter {i - 1}, Up: Reading streams</a></li>"
                     for i in range(30))
    return (f"<html><head><title>{chapter} (Stream manual) - Mirror</title></head><body>"
            "<div class=upper><a href=/>Mirror</a> <a href=/about>About</a> <span>Browse the manuals</span></div>"
            f"<div class=layout><div class=left><div class=label>{label}</div><ul>{titles}</ul></div>"
            f"<div class=body><div class=chapter><h2>{chapter}</h2></div></div></div>"
            "<div class=lower><p>This page is a copy kept by the mirror; the original remains with its authors.</p>"
            "<a href=/terms>Terms</a> <a href=/privacy>Privacy</a></div></body></html>")


def test_a_chapter_whose_content_is_its_heading_is_not_the_notice_or_the_menu():
    text = main(_stub("13 Error Handling"))
    assert "13 Error Handling" in text
    assert "copy kept by the mirror" not in text and "Chapter 7" not in text
    # two such chapters share none of the frame: they are not near-duplicates of each other
    other = main(_stub("14 Installation"))
    assert "14 Installation" in other and set(text.split("\n")) & set(other.split("\n")) == set()


def test_a_menu_label_does_not_make_its_column_the_content():
    # the label has about as much text out of links as the chapter's heading (either may win)
    text = main(_stub("9 Optimization", label="In this manual:"))
    assert "9 Optimization" in text and "Chapter 7" not in text


def test_a_short_content_after_its_heading_block_stays_the_column():
    # the page's heading in a block of its own, then a short content with links: the content
    html = ("<html><body><div id=header><h1>Git API Documents</h1></div><div id=content>"
            "<p>Git has grown a set of internal API over time. This collection documents them.</p><ul>"
            + "".join(f"<li><a href=/api{i}>API number {i}</a></li>" for i in range(5))
            + "</ul></div></body></html>")
    text = main(html)
    assert "Git API Documents" in text and "This collection documents them." in text and "API number 3" in text


def test_a_line_of_links_above_a_sections_heading_is_the_pages():
    nav = ("<div class=header><p>Next: <a href=/n>Installation</a>, Previous: <a href=/p>Differential Equations</a> "
           "[<a href=/c>Contents</a>][<a href=/i>Index</a>]</p></div>")
    html = f"<html><body><div class=chapter>{nav}<hr><h2>13 Error Handling</h2><p>{PROSE}</p></div></body></html>"
    text = main(html)
    assert "13 Error Handling" in text and "Sentence 11" in text and "Installation" not in text
    # a single link above the heading is the content's own ("Go to the source code of this file.")
    one = "<div class=intro><p><a href=/src>Go to the source code of this file.</a></p></div>"
    html = f"<html><body><div class=chapter>{one}<h2>Reference</h2><p>{PROSE}</p></div></body></html>"
    assert "Go to the source code" in main(html)
