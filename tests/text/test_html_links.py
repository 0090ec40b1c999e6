"""A page's claims about its URL, read from its head (neardup.text.html_links)."""

from pathlib import Path

import pytest

from neardup.text.html_links import HEAD_LIMIT, page_claims

DATA = Path(__file__).resolve().parents[1] / "data" / "html"


@pytest.mark.parametrize("name, want", [
    ("debian/publican-0006.html", "https://debian-handbook.info/browse/cs-CZ/stable/sect.main-desktop-tools.html"),
    ("encodings/ja-JP.html", "https://debian-handbook.info/browse/ja-JP/stable/sect.creating-accounts.html"),
])
def test_real_pages(name, want):
    page = (DATA / name).read_bytes()
    assert page_claims(page) == {"canonical": want}
    assert page_claims(page.decode("utf-8")) == {"canonical": want}


def test_page_without_claims():
    assert page_claims((DATA / "debian" / "sphinx-0000.html").read_bytes()) == {}


def test_relative_claims_are_resolved_and_decoded():
    page = (b"<html><head><meta content='/news/item?id=7&amp;lang=en' property=og:url>"
            b"<LINK HREF=\"../doc/\" REL=\"Canonical\"></head><body>x</body></html>")
    assert page_claims(page, "https://www.debian.org/News/2024/x.html") == {
        "canonical": "https://www.debian.org/News/doc/",
        "og_url": "https://www.debian.org/news/item?id=7&lang=en",
    }
    # without the page's URL, a relative claim stays as written
    assert page_claims(page)["canonical"] == "../doc/"


def test_first_claim_and_only_the_head():
    page = ("<head><link rel='alternate' href='/fr/'><link rel=\"canonical\" href=\"https://a.example/1\">"
            "<link rel='canonical' href='https://a.example/2'><title>t</title></head>"
            "<body><meta property='og:url' content='https://a.example/3'></body>")
    assert page_claims(page) == {"canonical": "https://a.example/1"}
    # a page without </head> is read up to <body
    assert page_claims("<link rel=canonical href=/x><body><link rel=canonical href=/y>", "http://h/") == {
        "canonical": "http://h/x"}
    # nor past HEAD_LIMIT
    assert page_claims(" " * HEAD_LIMIT + "<link rel=canonical href=/x>") == {}


def test_a_greater_than_sign_in_a_quoted_attribute():
    page = '<head><meta name="description" content="a > b"><link rel="canonical" href="https://a.example/p"></head>'
    assert page_claims(page) == {"canonical": "https://a.example/p"}


def test_not_a_page():
    assert page_claims(None) == {}
    assert page_claims(b"") == {}
