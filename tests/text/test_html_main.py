"""Main-content extraction on lexbor: the generic rules, the labelled Debian sample, encodings."""

import csv
import json
import os
import re

import pytest

from neardup.exact.similarity import jaccard_sorted
from neardup.params import ShingleParams
from neardup.shingle import shingle_ids
from neardup.text import html as H
from neardup.text.html import decode_html, declared_charset, detect_charset, extract_text, extractor_id

pytest.importorskip("selectolax")

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "html")
DEBIAN = os.path.join(DATA, "debian")
ENCODINGS = os.path.join(DATA, "encodings")
K5 = ShingleParams(k=5)


def main(html: str) -> str:
    return extract_text(html, "main")


# ---------------------------------------------------------------------------------- text shape
def test_blocks_separate_words_inline_elements_do_not():
    html = ("<html><body><main><p>one</p><p>two</p><div>un<b>like</b>ly<div>three</div>four</div>"
            "<ul><li>a<li>b</ul><p>x<br>y</p></main></body></html>")
    assert main(html) == "one\ntwo\nunlikely\nthree\nfour\na\nb\nx\ny"


def test_cells_are_spaced_rows_are_lines():
    html = "<body><main><table><tr><td>a</td><td>b</td></tr><tr><th>c</th></tr></table></main></body>"
    assert main(html) == "a b\nc"


def test_upper_case_markup_is_read_like_lower_case():
    assert main("<BODY><MAIN><P>one</P><P>two</P></MAIN></BODY>") == "one\ntwo"


def test_scripts_styles_templates_hidden_dropped():
    html = ("<body><main><p>kept</p><script>var s = 'script';</script><style>p{color:red}</style>"
            "<template><p>template</p></template><p hidden>attr-hidden</p>"
            "<div style='display: none'>css-hidden</div><noscript>noscript</noscript>"
            "<svg><text>icon</text></svg><!-- comment --></main></body>")
    assert main(html) == "kept"


def test_form_feed_in_the_page_is_white_space_not_a_block():
    assert main("<body><main><p>a\x0cb</p></main></body>") == "a b"


# ---------------------------------------------------------------------------------- landmarks
PROSE = " ".join(f"sentence {i} of the article about rivers and their floods." for i in range(30))
LINKS = " ".join(f"<a href='/p{i}'>Chapter {i}</a>" for i in range(40))


def test_main_landmark_wins_and_navigation_roles_go():
    html = (f"<body><div role='banner'>Site banner</div><nav>{LINKS}</nav>"
            f"<div role='navigation'>{LINKS}</div><main><h1>Rivers</h1><p>{PROSE}</p>"
            f"<nav>{LINKS}</nav></main><div role='contentinfo'>Footer text</div></body>")
    text = main(html)
    assert text.startswith("Rivers\nsentence 0")
    assert "Chapter" not in text and "banner" not in text and "Footer" not in text


def test_without_landmarks_dense_link_blocks_and_page_header_footer_go():
    html = (f"<body><header><a href='/'>Home</a> Site name</header><table><tr><td>{LINKS}</td></tr></table>"
            f"<div><h1>Rivers</h1><p>{PROSE}</p></div><footer>Copyright notice</footer></body>")
    text = main(html)
    assert text.startswith("Rivers\n") and "Chapter" not in text
    assert "Site name" not in text and "Copyright" not in text


def test_navigation_vocabulary_drops_link_lists_but_keeps_prose_boxes():
    html = (f"<body><div class='page-sidebar'>{LINKS}</div><div id='topnav'><a href='/'>Home</a></div>"
            f"<div><h1>Rivers</h1><p>{PROSE}</p><div class='sidebar'><p>{PROSE.replace('rivers', 'lakes')}</p></div>"
            f"<div class='toctree-wrapper'>{LINKS}</div></div></body>")
    text = main(html)
    assert "Home" not in text
    assert text.count("sentence 0 of") == 2  # the boxed note named "sidebar" is prose: kept
    # "toctree" is not the word "toc": a list of the page's children is content; the first
    # 40 links are gone with page-sidebar, these stay.
    assert text.count("Chapter 1 ") == 1


def test_page_with_attributes_like_the_marks_gets_the_same_rules():
    # data-neardup-* of the page's own: the scan keeps every attribute and the rules query the
    # class and id names themselves (no marks), with the same answers
    plain = (f"<body><div class='page-sidebar'>{LINKS}</div><div id='topnav'><a href='/'>Home</a></div>"
             f"<div><h1>Rivers</h1><p hidden>Hidden</p><p>{PROSE}</p></div></body>")
    own = plain.replace("<body>", "<body data-neardup-name='x'>")
    assert H._scanned(own)[1] & H._FLAGS["OWN_MARKS"]
    assert main(own) == main(plain)
    assert "Home" not in main(own) and "Hidden" not in main(own) and "sentence 0 of" in main(own)


def test_aside_kept_when_prose_dropped_when_links():
    html = (f"<body><main><h1>T</h1><p>{PROSE}</p><aside class='footnote'>A footnote in prose, long enough "
            f"to be read.</aside><aside>{LINKS}</aside></main></body>")
    text = main(html)
    assert "A footnote in prose" in text and "Chapter" not in text


def test_footer_and_linked_short_aside_inside_the_content_dropped():
    html = (f"<body><main><article><h1>T</h1><p>{PROSE}</p><aside>See also <a href='/x'>another story "
            f"here</a></aside><aside>A note without links.</aside><footer>Tags: <a href='/t'>alpha</a>"
            f"</footer></article></main><footer>Site footer line</footer></body>")
    text = main(html)
    assert "A note without links." in text and PROSE in text
    assert "another story" not in text and "Tags" not in text and "Site footer" not in text


def test_figure_captions_dropped():
    html = (f"<body><article><p>{PROSE}</p><figure><img src='a.png'><figcaption>A river in flood. Photo: "
            "Someone</figcaption></figure></article></body>")
    text = main(html)
    assert PROSE in text and "Photo" not in text


def test_product_reviews_and_consent_boxes_are_secondary():
    rest = " ".join([PROSE] * 40)
    html = (f"<body><main><h1>Lamp</h1><div class='description'><p>{rest}</p></div>"
            "<div class='product-reviews'><p>Great lamp, five stars.</p></div>"
            "<div id='consent-box'><p>We and our partners store data.</p></div>"
            "<div class='author-bio'><p>Jo writes about lamps.</p></div>"
            "<div class='biology'><p>Cells of the lamp.</p></div></main></body>")
    text = main(html)
    assert "Lamp" in text and "five stars" not in text and "partners" not in text
    assert "writes about" not in text and "Cells of the lamp." in text  # bio: a whole token only


def test_title_joins_text_without_heading_only():
    no_heading = "<html><head><title>Stub page - Site</title></head><body><main><p>Moved.</p></main></body></html>"
    assert main(no_heading) == "Stub page - Site\nMoved."
    heading = ("<html><head><title>Stub page - Site</title></head>"
               "<body><main><h1>Another</h1><p>Moved.</p></main></body></html>")
    assert main(heading) == "Another\nMoved."
    opening = "<html><head><title>Moved</title></head><body><main><p>Moved.</p></main></body></html>"
    assert main(opening) == "Moved."


def test_nothing_main_falls_back_to_whole():
    html = "<html><body><nav><a href='/a'>Alpha</a> <a href='/b'>Beta</a></nav></body></html>"
    assert main(html) == extract_text(html, "whole") == "Alpha Beta"


def test_no_rule_names_a_generator():
    with open(H.__file__, encoding="utf-8") as fh:
        source = fh.read().lower()
    for name in ("sphinx", "mdbook", "rustdoc", "doxygen", "javadoc", "publican", "docbook", "boost",
                 "gtk", "asciidoc", "texinfo", "pod2html", "pandoc", "trafilatura_", "spirit", "wikipedia",
                 "wordpress", "mediawiki", "navheader", "docnav"):
        assert name not in source, name


def test_extractor_id_names_parser_and_rules():
    ident = extractor_id("main")
    assert ident.startswith(f"neardup-main/{H.RULES_VERSION} selectolax/")
    assert extractor_id("article").startswith("trafilatura/")
    assert extractor_id("whole") != ident


def test_extraction_is_part_of_the_config_fingerprint():
    from neardup.config import DedupConfig

    plain = DedupConfig()
    assert "extraction" not in plain.as_dict()  # text runs keep their fingerprint
    a = DedupConfig(extraction=extractor_id("main"))
    b = DedupConfig(extraction=extractor_id("article"))
    assert len({plain.fingerprint(), a.fingerprint(), b.fingerprint()}) == 3


def test_cli_records_the_extraction_for_html_inputs(tmp_path):
    from neardup.cli.dedup import extraction_of

    page = tmp_path / "a.html"
    page.write_text("<html><body><p>x</p></body></html>")
    text = tmp_path / "a.jsonl"
    text.write_text('{"id": "a", "text": "x"}\n')

    class Args:
        content, format, html = "text", "auto", "main"

    args = Args()
    args.inputs = [str(tmp_path / "a.html")]
    assert extraction_of(args) == extractor_id("main")
    args.inputs = [str(text)]
    assert extraction_of(args) is None
    args.content, args.html = "html", "whole"
    assert extraction_of(args) == extractor_id("whole")


# ---------------------------------------------------------------------------------- labelled sample
def _sample():
    with open(os.path.join(DEBIAN, "labels.jsonl")) as fh:
        labels = {r["id"]: r for r in map(json.loads, fh)}
    with open(os.path.join(DEBIAN, "pairs.tsv")) as fh:
        pairs = [(r["a"], r["b"], float(r["j_main"]), float(r["j_whole"])) for r in csv.DictReader(fh, delimiter="\t")]
    return labels, pairs


@pytest.fixture(scope="module")
def sample_ids():
    labels, pairs = _sample()
    ids = {}
    for pid, rec in labels.items():
        with open(os.path.join(DEBIAN, rec["file"]), "rb") as fh:
            ids[pid] = shingle_ids(extract_text(fh.read(), "main"), K5)
    return ids, pairs


def test_sample_holds_both_kinds_of_pair():
    labels, pairs = _sample()
    assert len({r["generator"] for r in labels.values()}) >= 8
    assert sum(jm >= 0.85 for _, _, jm, _ in pairs) >= 5
    assert sum(jw >= 0.8 and jm < 0.5 for _, _, jm, jw in pairs) >= 5


def test_sample_near_duplicates_stay_near_duplicates(sample_ids):
    ids, pairs = sample_ids
    for a, b, jm, _ in pairs:
        if jm >= 0.85:
            assert jaccard_sorted(ids[a], ids[b])[0] >= 0.8, (a, b)


def test_sample_boilerplate_traps_fall_apart(sample_ids):
    ids, pairs = sample_ids
    for a, b, jm, jw in pairs:
        if jw >= 0.8 and jm < 0.5:
            assert jaccard_sorted(ids[a], ids[b])[0] < 0.8, (a, b)


def test_sample_no_false_edges(sample_ids):
    ids, pairs = sample_ids
    truth = {(a, b): jm for a, b, jm, _ in pairs}
    keys = sorted(ids)
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            if jaccard_sorted(ids[a], ids[b])[0] >= 0.8:
                assert truth.get((a, b), truth.get((b, a), 0.0)) >= 0.75, (a, b)


def test_sample_deterministic_and_str_equals_bytes():
    labels, _ = _sample()
    for rec in list(labels.values())[::5]:
        with open(os.path.join(DEBIAN, rec["file"]), "rb") as fh:
            data = fh.read()
        outs = {extract_text(data, "main") for _ in range(2)} | {extract_text(decode_html(data), "main")}
        assert len(outs) == 1


@pytest.mark.parametrize("page", [
    "<p>caf\u00e9 \u4e2d\u6587 \U0001f600</p>", "\n\t <main><p>x</p></main>", "<p>a\x00b</p>", "\x00<p>nul first</p>",
    "   ", "", "\u3000\u2028 ", "\x1c<p>after a separator</p>", "<title>T &amp; U</title><main>m</main>",
    "<meta charset='utf-8'><p>declared</p>", "<meta charset='utf-8-sig'><p>declared sig</p>",
    "<nav><a href=/>only links</a></nav>"])
@pytest.mark.parametrize("mode", ["main", "whole"])
def test_bytes_read_as_they_are_give_the_texts_of_the_decoded_str(page, mode):
    """A UTF-8 page is read as its bytes (utf8_page), not decoded: the same text as the str."""
    data = page.encode("utf-8")
    assert extract_text(data, mode) == extract_text(decode_html(data), mode) == extract_text(page, mode)
    assert extract_text(b"\xef\xbb\xbf" + data, mode) == extract_text(page, mode)


def test_utf8_page_only_for_pages_needing_no_decoding():
    assert H.utf8_page(b"<p>ok</p>") == b"<p>ok</p>"
    assert H.utf8_page(b"\xef\xbb\xbf<p>ok</p>") == b"<p>ok</p>"
    assert H.utf8_page("<p>caf\u00e9</p>".encode("cp1252")) is None  # undeclared, not UTF-8: detected
    assert H.utf8_page("<meta charset=utf-8><p>caf\u00e9</p>".encode("cp1252")) is None  # invalid: replaced
    assert H.utf8_page("<meta charset=koi8-r><p>\u041f</p>".encode("koi8-r")) is None
    assert H.utf8_page(b"<p>x</p>", "iso-8859-1") is None  # the HTTP header wins
    assert H.utf8_page(b" \t\n") is None and H.utf8_page(b"") is None  # blank: decoded and told apart
    assert H.utf8_page("\u3000".encode()) is None


# ---------------------------------------------------------------------------------- encodings
# Real pages (the Debian Administrator's Handbook, translated) re-encoded; characters a legacy
# encoding lacks become character references, as a page in that encoding would write them.
LANGS = [("fr-FR", "latin-1"), ("de-DE", "iso-8859-1"), ("ru-RU", "windows-1251"), ("ja-JP", "shift_jis"),
         ("zh-CN", "gb2312"), ("ko-KR", "euc-kr")]
_DECL = re.compile(r'<meta http-equiv="Content-Type" content="text/html; charset=UTF-8" />')
_XML = re.compile(r'^<\?xml[^>]*\?>')


def _page(lang):
    with open(os.path.join(ENCODINGS, f"{lang}.html"), encoding="utf-8") as fh:
        return fh.read()


@pytest.mark.parametrize("lang,charset", LANGS)
def test_real_pages_in_legacy_encodings(lang, charset):
    page = _page(lang)
    want = extract_text(page, "main")
    assert sum(ord(c) > 127 for c in want) > 40  # real non-ASCII text, not an untranslated page
    assert _DECL.search(page) and _XML.match(page)
    bare = _XML.sub("", _DECL.sub("", page))
    meta = _XML.sub("", _DECL.sub(f'<meta http-equiv="Content-Type" content="text/html; charset={charset}" />', page))
    meta5 = _XML.sub("", _DECL.sub(f'<meta charset="{charset}">', page))
    xml = _XML.sub(f'<?xml version="1.0" encoding="{charset}"?>', _DECL.sub("", page))
    for variant, http, where in ((meta, None, "meta"), (meta5, None, "meta"), (xml, None, "xml"),
                                 (bare, charset, "http"), (meta, charset, "http")):
        data = variant.encode(charset, "xmlcharrefreplace")
        assert declared_charset(data, http)[1] == where
        assert extract_text(decode_html(data, http), "main") == want, (lang, where)
    # Undeclared: the bytes alone. The detector's name may be a superset (gb18030, cp932), but
    # the text must come out the same.
    data = bare.encode(charset, "xmlcharrefreplace")
    assert declared_charset(data) == (None, "none")
    assert detect_charset(data) != "utf-8"
    assert extract_text(data, "main") == want, (lang, detect_charset(data))


def test_byte_order_marks_win():
    page = "<html><head><meta charset='windows-1251'></head><body><main><p>Привет, мир</p></main></body></html>"
    assert extract_text(b"\xef\xbb\xbf" + page.encode("utf-8"), "main") == "Привет, мир"
    assert extract_text(page.encode("utf-16"), "main") == "Привет, мир"
    assert declared_charset(b"\xef\xbb\xbf<p>", "latin-1") == ("utf-8-sig", "bom")


def test_http_charset_wins_over_meta():
    page = "<html><head><meta charset='utf-8'></head><body><main><p>Привет</p></main></body></html>"
    data = page.encode("koi8-r")
    assert declared_charset(data, "koi8-r") == ("koi8-r", "http")
    assert extract_text(decode_html(data, "koi8-r"), "main") == "Привет"


def test_undeclared_utf8_stays_utf8():
    data = "<p>café crème</p>".encode("utf-8")
    assert detect_charset(data) == "utf-8"
    assert decode_html(data) == "<p>café crème</p>"


# ---------------------------------------------------------------------------------- one extraction
@pytest.mark.parametrize("mode", ["main", "whole"])
def test_readers_give_the_same_text_as_extract_text(tmp_path, mode):
    """A folder of pages, a JSONL of HTML (in worker processes too) and extract_text agree."""
    import orjson

    from neardup.io import read_documents
    from neardup.io.documents import Document

    labels, _ = _sample()
    files = sorted(r["file"] for r in labels.values())[::4]
    want = {}
    site = tmp_path / "site"
    site.mkdir()
    with open(tmp_path / "pages.jsonl", "wb") as out:
        for name in files:
            with open(os.path.join(DEBIAN, name), "rb") as fh:
                data = fh.read()
            want[name] = extract_text(data, mode)
            out.write(orjson.dumps({"id": name, "text": decode_html(data)}) + b"\n")
            (site / name).write_bytes(data)
    folder = {os.path.basename(d.id): d.text for d in read_documents([str(site)], format="html", html=mode)
              if isinstance(d, Document)}
    assert folder == want
    for jobs in (1, 2):
        docs = read_documents([str(tmp_path / "pages.jsonl")], content="html", html=mode, jobs=jobs)
        assert {d.id: d.text for d in docs if isinstance(d, Document)} == want
