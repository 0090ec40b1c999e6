"""The main-content rules for pages of the open web (news, forums, shops, service pages), on small
hand-made pages, and the block classifier's file and determinism."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("selectolax")

from neardup.text import html as H  # noqa: E402
from neardup.text import html_blocks, html_scan, html_tree  # noqa: E402
from neardup.text.html import extract_text  # noqa: E402
from neardup.text.html_rules import without_byline, without_line_furniture  # noqa: E402

ARTICLE = " ".join(f"Paragraph sentence {i} tells how the river flooded the valley in spring." for i in range(40))
MENU = "".join(f"<li><a href='/s{i}'>Section {i}</a></li>" for i in range(25))


def main(html: str) -> str:
    return extract_text(html, "main")


def test_comment_thread_under_an_article_is_dropped():
    comments = "".join(f"<div class='comment-body'><p>Reader {i} says great story {i}.</p></div>" for i in range(10))
    html = (f"<html><body><nav><ul>{MENU}</ul></nav><article><h1>Flood</h1><p>{ARTICLE}</p>"
            f"<section id='comments'>{comments}</section></article></body></html>")
    text = main(html)
    assert "Paragraph sentence 39" in text
    assert "Reader" not in text


def test_an_article_ends_at_the_heading_of_its_tail():
    # Unnamed blocks after the story: the heading "Related stories" in the last part of the text
    # ends the content; the same heading early in the text is part of it.
    tail = "".join(f"<p>Story {i} about the weather</p>" for i in range(5))
    html = f"<html><body><main><h1>Flood</h1><p>{ARTICLE}</p><h2>Related stories</h2>{tail}</main></body></html>"
    text = main(html)
    assert "Paragraph sentence 39" in text
    assert "Related stories" not in text and "Story 0" not in text
    early = f"<html><body><main><h1>Flood</h1><h2>Related stories</h2>{tail}<p>{ARTICLE}</p></main></body></html>"
    assert "Story 4 about" in main(early)


def test_forum_thread_made_of_comments_is_kept():
    # The comment-named posts are the page: the rest does not outweigh them.
    posts = "".join(f"<div class='comment'><p>Post {i}: {ARTICLE[:300]}</p></div>" for i in range(8))
    html = f"<html><body><nav><ul>{MENU}</ul></nav><main><h1>Question about floods</h1>{posts}</main></body></html>"
    text = main(html)
    assert all(f"Post {i}:" in text for i in range(8))


def test_readers_comments_with_reply_links_under_a_short_post_are_dropped():
    # a post of 800 characters under a longer thread of comments: the thread outweighs it, but
    # each comment ends with a "Reply" link (readers answering each other, not a forum's posts)
    post = ARTICLE[:800]
    comments = "".join(f"<li class='comment'><p>Reader {i} says: {ARTICLE[:300]}</p><a href='#r{i}'>Reply</a></li>"
                       for i in range(8))
    html = (f"<html><body><nav><ul>{MENU}</ul></nav><main><h1>Flood</h1><p>{post}</p>"
            f"<ol class='comment-list'>{comments}</ol></main></body></html>")
    text = main(html)
    assert post[:700] in text and "Reader" not in text
    # without the links it is a thread that may be the content: kept, as a forum's posts are
    assert "Reader 7 says" in main(html.replace("<a href='#r", "<span data-x='").replace("Reply</a>", "</span>"))
    # under a shorter post (a forum's question), the thread is the content
    short = html.replace(f"<p>{post}</p>", "<p>How high did the river rise?</p>")
    assert "Reader 7 says" in main(short)


def test_comments_inside_a_secondary_wrapper_of_the_post_are_dropped():
    # The template wraps the post and its readers' thread in one block named as a widget (a
    # secondary name): it holds the whole text, so the blocks inside it are weighed instead; the
    # comments end with a line of actions that opens with "Reply".
    post = ARTICLE[:800]
    comments = "".join(f"<li class='comment'><p>Reader {i} says: {ARTICLE[:300]}</p>"
                       f"<span><a href='#r{i}'>Reply</a><span><a href='#d{i}'>Delete</a></span></span></li>"
                       for i in range(8))
    html = (f"<html><body><div class='widget Blog'><h1>Flood</h1><div class='post-body'><p>{post}</p></div>"
            f"<div class='comments'><h4>8 comments:</h4><ol>{comments}</ol></div></div></body></html>")
    text = main(html)
    assert post[:700] in text and "Reader" not in text
    # no wrapper to look into when the secondary block beside the post is not most of the text
    assert "Reader 7 says" in main(html.replace("class='widget Blog'", "class='blog'").replace(
        "Reply</a>", "Answer</a>"))


def test_newsletter_box_beside_the_article_is_dropped():
    html = (f"<body><main><h1>Flood</h1><p>{ARTICLE}</p><div class='newsletter-signup'><p>Get our daily "
            f"newsletter in your inbox</p></div></main></body>")
    text = main(html)
    assert "Paragraph sentence 0" in text
    assert "newsletter" not in text


def test_listing_cards_are_kept_whole():
    cards = "".join(f"<div class='card'><a href='/p{i}'>Blue kettle model {i}</a><p>Steel, 1.7 litres, "
                    f"${20 + i}.00</p></div>" for i in range(12))
    html = (f"<body><div class='site-header'><ul>{MENU}</ul></div><div class='content'><h1>Kettles</h1>"
            f"<div class='grid'>{cards}</div></div></body>")
    text = main(html)
    for i in range(12):
        assert f"Blue kettle model {i}" in text
        assert f"${20 + i}.00" in text
    assert "Section 3" not in text


def test_menu_column_beside_the_content_column_is_dropped():
    html = (f"<body><div class='layout'><div class='left-col'><ul>{MENU}</ul></div>"
            f"<div class='page-body'><h1>Flood</h1><p>{ARTICLE}</p></div></div></body>")
    text = main(html)
    assert "Paragraph sentence 0" in text
    assert "Section 3" not in text


def test_table_of_contents_inside_the_content_is_kept():
    html = (f"<body><div><h1>Manual</h1><p>{ARTICLE}</p><div class='children'><ul>{MENU}</ul></div></div></body>")
    assert "Section 3" in main(html)


def test_json_ld_article_body_when_the_page_shows_little():
    body = "The council approved the new bridge on Monday. " * 20
    data = json.dumps({"@context": "https://schema.org", "@graph": [
        {"@type": "WebPage", "name": "x"}, {"@type": "NewsArticle", "headline": "Bridge", "articleBody": body}]})
    html = (f"<html><head><title>Evening edition</title><script type='application/ld+json'>{data}</script></head>"
            f"<body><div id='app'>Loading</div></body></html>")
    text = main(html)
    assert text.startswith("Evening edition\n")
    assert text.count("The council approved the new bridge on Monday.") == 20


def test_json_ld_of_a_readers_review_is_not_the_pages_body():
    body = "The council approved the new bridge on Monday. " * 20
    review = "I crossed the old bridge every day for ten years and never liked it. " * 30
    data = json.dumps({"@context": "https://schema.org", "@graph": [
        {"@type": "NewsArticle", "headline": "Bridge", "articleBody": body},
        {"@type": "Review", "reviewBody": "short", "description": review},
        {"@type": "SiteNavigationElement", "description": review}]})
    html = (f"<html><head><title>Evening edition</title><script type='application/ld+json'>{data}</script></head>"
            f"<body><div id='app'>Loading</div></body></html>")
    text = main(html)
    assert "The council approved the new bridge on Monday." in text and "old bridge" not in text

def test_json_ld_is_not_used_when_the_page_shows_the_content():
    data = json.dumps({"@type": "Article", "description": "A short teaser."})
    html = (f"<html><head><script type='application/ld+json'>{data}</script></head>"
            f"<body><main><p>{ARTICLE}</p></main></body></html>")
    text = main(html)
    assert "teaser" not in text and "Paragraph sentence 39" in text


def test_noscript_content_of_a_page_written_by_scripts():
    html = (f"<html><body><div id='splash'>Loading</div><noscript><main><h1>Thread</h1><p>{ARTICLE}</p></main>"
            f"</noscript></body></html>")
    text = main(html)
    assert "Paragraph sentence 39" in text
    # a page that shows its content keeps ignoring the noscript apology
    assert main(f"<body><main><p>{ARTICLE}</p><noscript>Please enable JavaScript to comment.</noscript></main></body>"
                ).count("JavaScript") == 0


def test_heading_above_the_landmark_is_kept():
    html = (f"<html><head><title>Flood - The Daily Site</title></head><body><div class='intro'><h1>Storm report</h1></div><main><p>{ARTICLE}</p></main></body></html>")
    text = main(html)
    assert text.split("\n")[0] == "Storm report"
    assert "Daily Site" not in text


def test_repeated_lines_are_kept_once():
    slide = "Free delivery on every order over fifty pounds"
    html = f"<body><main><p>{ARTICLE}</p>" + f"<div>{slide}</div>" * 3 + "<p>ok</p><p>ok</p></main></body>"
    text = main(html)
    assert text.count(slide) == 1
    assert text.count("ok") == 2  # short lines (a code brace, a cell) are not copies


@pytest.mark.parametrize("cls", ["comment-list", "ad", "sponsored-links", "popular_posts", "comments"])
def test_secondary_vocabulary_marked_alike_in_c_and_python(cls):
    page = f"<div class='{cls}'><p>x</p></div><div id='{cls}'>y</div><div class='nav {cls}'>z</div>".encode()
    out = html_scan.scan_python(page)
    assert out[0].count(html_scan.MARK_SECONDARY.encode()) == 2  # the navigation word wins on the third
    assert out[1] & html_scan.FLAGS["SECONDARY"]
    if html_scan.compiled():
        assert html_scan.scan(page) == out


@pytest.mark.parametrize("cls", ["adventure", "loading", "commentary-x"])
def test_secondary_vocabulary_words_are_tokens(cls):
    out = html_scan.scan_python(f"<div class='{cls}'>x</div>".encode())
    # "commentary" starts with "comment": an affix word matches; "adventure" is not "ad"
    assert (html_scan.MARK_SECONDARY.encode() in out[0]) == cls.startswith("comment")


def test_block_classifier_file_loads_and_matches_the_features():
    weights, threshold = html_blocks.block_model()
    assert weights.shape == (len(html_blocks.BLOCK_FEATURES),)
    assert weights.dtype.name == "float64"
    assert isinstance(threshold, float)


def test_block_classifier_is_deterministic(monkeypatch):
    html = (f"<body><div class='layout'><div class='left-col'><ul>{MENU}</ul></div><div><h1>Flood</h1>"
            f"<p>{ARTICLE}</p><div><a href='/x'>Share</a> <a href='/y'>Print</a></div></div></div></body>")
    tree = html_tree.get_lexbor()(H._scanned(html)[0])
    nodes, rows = html_blocks.blocks(tree.body)
    assert nodes and all(len(r) == len(html_blocks.BLOCK_FEATURES) for r in rows)
    assert html_blocks.blocks(html_tree.get_lexbor()(H._scanned(html)[0]).body)[1] == rows
    monkeypatch.setattr(H, "USE_CLASSIFIER", True)
    first = main(html)
    assert first == main(html)
    assert "Paragraph sentence 39" in first


def test_content_column_found_when_the_menu_column_outweighs_it():
    # The layout as a whole is mostly links (a long menu beside a short page): the column with
    # the most text out of links is the content, and the strips around it go.
    menu = "".join(f"<li><a href='/p{i}'>Page title number {i} of the manual</a></li>" for i in range(40))
    html = ("<body><div class='upper-strip'><a href='/'>Library</a> <a href='/about'>About</a> <span>Browse the "
            "manuals</span></div><div class='layout'><div class='left-col'><ul>" + menu + "</ul></div>"
            "<div class='page-body'><h1>Macro X</h1><p>Expands to the size of the buffer in bytes.</p></div></div>"
            "<div class='lower-strip'><p>Kept by the library.</p><a href='/terms'>Terms</a> <a href='/p'>Privacy</a></div>"
            "</body>")
    text = main(html)
    assert text == "Macro X\nExpands to the size of the buffer in bytes."


def test_code_comments_are_not_comment_threads():
    code = "".join(f"<span class='hljs-comment'>// step {i} of the loop</span>\n<span>x{i} = {i};</span>\n" for i in range(30))
    html = f"<body><main><h1>Loops</h1><p>A short note.</p><pre>{code}</pre></main></body>"
    text = main(html)
    assert "// step 29 of the loop" in text


def test_page_hidden_until_its_scripts_run_keeps_its_content():
    # the whole content in a hidden element (revealed or moved by scripts): most of the page's
    # text, not links, so it stays; a small hidden menu still goes
    html = (f"<html><body><div hidden><ul>{MENU}</ul></div><div hidden><h1>Flood</h1><p>{ARTICLE}</p></div>"
            "</body></html>")
    text = main(html)
    assert "Paragraph sentence 39" in text and "Section 3" not in text


def test_a_page_shown_by_its_scripts_in_hidden_parts_keeps_them():
    # the content streamed in parts, each hidden until a script moves it into place: none holds
    # most of the page alone, together they do; the hidden menu (links) and the visible header stay out
    parts = "".join(f"<div hidden id='part{k}'><h2>Part {k}</h2><p>{ARTICLE[:700]} End of part {k}.</p></div>"
                    for k in range(4))
    html = (f"<html><body><header><p>The valley news, read in every town of the county since 1901.</p></header>"
            f"<div hidden><ul>{MENU}</ul></div><main><h1>Flood</h1></main>{parts}</body></html>")
    text = main(html)
    assert "End of part 0." in text and "End of part 3." in text
    assert "Section 3" not in text
    # a few hidden boxes that hold little of the page still go
    html = (f"<html><body><main><h1>Flood</h1><p>{ARTICLE}</p></main><div hidden><p>Sign in to comment.</p></div>"
            f"<div hidden><p>Your basket is empty.</p></div></body></html>")
    text = main(html)
    assert "Paragraph sentence 39" in text and "basket" not in text and "Sign in" not in text

def test_tab_list_around_the_panels_keeps_them():
    html = (f"<html><body><main><p>Tabs of the report, with one short line of their own.</p><div role=tablist><div>"
            f"<p>{ARTICLE}</p></div></div></main></body></html>")
    assert "Paragraph sentence 39" in main(html)


def test_layout_utility_classes_are_not_navigation():
    # cards whose titles are links (a listing): dense in links, and named only by utility classes
    cards = "".join(f"<div class='margin-bottom-small'><a href=/s{i}>Story {i} on the flood of the valley</a>"
                    f"<p>How the river rose in spring, part {i}.</p></div>" for i in range(20))
    html = (f"<html><body><main><p>Latest stories.</p><div class='overflow-hidden top-0'>{cards}</div></main>"
            "</body></html>")
    text = main(html)
    assert "Story 19 on the flood" in text and "part 19" in text


def test_small_main_landmark_is_not_the_root():
    html = (f"<html><body><div role=main><p>Welcome</p></div><div class=content><h1>Flood</h1><p>{ARTICLE}</p>"
            "</div></body></html>")
    assert "Paragraph sentence 39" in main(html)


def test_small_main_landmark_that_is_the_whole_content_stays_the_root():
    # A stub under a second site's frame: the main holds a tenth of the body's text or less, and
    # the body's passes would keep the footer strip (more text out of links than the stub) and
    # drop the layout block with the main in it.
    titles = "".join(f"<li><a href='/p{i}'>Chapter {i} of the manual</a></li>" for i in range(40))
    html = ("<html><head><title>const_params - Library copy</title></head><body>"
            "<div class=upper><a href=/>Library copy</a> <a href=/about>About</a> <a href=/help>Help</a> "
            "<span>Browse the manuals of this site by section</span></div>"
            f"<div class=layout><div class=left><div>In this manual</div><ul>{titles}</ul></div>"
            "<div class=page><main><h1>const_params</h1><p>The tracking issue for this feature is: "
            "<a href=/i/95174>#95174</a></p></main></div></div>"
            "<div class=lower><p>This page is a copy kept by the library; the original remains with its authors.</p>"
            "<a href=/terms>Terms</a> <a href=/privacy>Privacy</a></div></body></html>")
    text = main(html)
    assert "The tracking issue for this feature" in text and "copy kept by the library" not in text


def test_small_main_landmark_that_is_a_menu_gives_way_to_the_page():
    # The body's passes drop the menu marked as main, and keep an article beside it: the body is
    # the root, not the menu read again.
    html = (f"<html><body><div class=top><main><p>Browse</p><ul>{MENU}</ul></main></div>"
            f"<div class=content><h1>Flood</h1><p>{ARTICLE}</p></div></body></html>")
    text = main(html)
    assert "Paragraph sentence 39" in text and "Section 3" not in text


def test_heading_named_with_a_navigation_word_is_kept():
    # A heading's id is its title made a name; "related" in it names no related-links box.
    html = (f"<html><body><main><h1 id='using-structs-to-structure-related-data'>Using Structs to Structure "
            f"Related Data</h1><p>{ARTICLE}</p></main></body></html>")
    assert main(html).startswith("Using Structs to Structure Related Data")


def test_single_article_inside_the_main_landmark_is_the_root():
    related = "".join(f"<div><p>Other story {i} about another river and its long valley floods.</p></div>"
                      for i in range(12))
    html = (f"<html><body><main><article><h1>Flood</h1><p>{ARTICLE}</p></article><div>{related}</div></main>"
            "</body></html>")
    text = main(html)
    assert "Paragraph sentence 39" in text and "Other story" not in text


def test_product_text_starts_at_its_schema_org_description():
    desc = "A sturdy oak table with a waxed finish, made by hand in a small workshop. " * 4
    data = json.dumps({"@context": "https://schema.org", "@type": "Product", "name": "Oak table",
                       "description": desc.strip()})
    buy = "".join(f"<p>Size {s} in stock, delivery in {s} days</p>" for s in range(8))
    html = (f"<html><head><script type='application/ld+json'>{data}</script></head><body><main><h1>Oak table</h1>"
            f"{buy}<div><p>{desc}</p><ul><li>Width 120 cm</li><li>Oak</li></ul></div></main></body></html>")
    text = main(html)
    assert text.startswith("Oak table\nA sturdy oak table") and "Width 120 cm" in text
    assert "in stock" not in text
    # not a product: the text as it was
    assert "in stock" in main(html.replace('"Product"', '"Thing"'))


def test_list_of_headlines_is_kept_where_a_menu_goes():
    # a page that is a list of stories, every one a link: its links are headlines, not menu items
    stories = "".join(f"<li><a href=/s{i}>River {i} floods the valley again after the spring rains</a></li>"
                      for i in range(15))
    html = (f"<html><body><div><ul>{MENU}</ul></div><div><h2>Latest</h2><ul>{stories}</ul></div>"
            "<div><p>Our newsroom covers the rivers of the region, their floods and the people who live by them.</p>"
            "</div></body></html>")
    text = main(html)
    assert "River 14 floods the valley" in text and "Section 3" not in text


def test_thread_of_posts_without_a_main_landmark_is_the_root():
    posts = "".join(f"<article><p>Post {i}: I fixed my boat with epoxy and fibreglass cloth last spring.</p></article>"
                    for i in range(8))
    html = (f"<html><body><div><p>Log in</p><p>Register</p><p>What is new here</p></div>"
            f"<div class=thread><h1>Boat repair</h1>{posts}</div></body></html>")
    text = main(html)
    assert "Post 7: I fixed my boat" in text and "Register" not in text


def test_teaser_cards_wrapped_in_links_are_kept_whatever_their_class():
    # a newsletter archive: each issue is a link around its date and summary, drawn with a rounded
    # border ("bar-md"), a class that reads like a navigation bar
    teaser = ("This week we look at how the river authority plans the spring floods, what the new "
              "gauges measure, and why the valley's farmers want the old dikes kept as they are, now that the "
              "water comes earlier every year.")
    cards = "".join(f"<div><a href='/issue-{i}/' class='d-block p24 bar-md'><time>March {i}, 2026</time>"
                    f"<p>Issue {i}: {teaser}</p></a></div>" for i in range(4))
    html = (f"<html><body><div><ul>{MENU}</ul></div><section><h2>Past issues</h2>{cards}</section>"
            "</body></html>")
    text = main(html)
    assert "Issue 3: This week we look at how the river authority" in text
    assert "Section 3" not in text
    # a short link drawn the same way is still a bar of the page
    bar = "<a href='/' class='d-block bar-md'>Home</a>"
    assert "Home" not in main(f"<html><body>{bar}<main><p>{ARTICLE}</p></main></body></html>")


def test_hidden_grid_of_products_holding_the_page_is_kept():
    # a shop's category page whose scripts reveal the grid: every product's name is a link (some 40 %
    # of the text), its price and blurb are not; a hidden menu, all links, still goes
    tiles = "".join(f"<li><a href='/p{i}'>Vintage brass compass no. {i}</a><p>Price 4{i}.00 EUR, "
                    f"hand polished.</p></li>" for i in range(12))
    html = (f"<html><body><div hidden><ul>{MENU}</ul></div><div style='display:none'><h1>Compasses</h1>"
            f"<ul>{tiles}</ul></div></body></html>")
    text = main(html)
    assert "Vintage brass compass no. 11" in text and "Price 411.00 EUR" in text
    assert "Section 3" not in text


def test_wrapper_named_after_its_sidebar_layout_is_kept():
    # an archive page: the column of teasers sits in a wrapper whose class says the layout has a
    # sidebar; the teasers' headlines are links (a third of the text), the wrapper is the content
    teasers = "".join(f"<div class=tease><h3><a href='/p{i}'>Hotel {i} changes hands in a regional deal</a></h3>"
                      f"<p>The buyer plans a refit of all rooms by spring {2027 + i}.</p></div>" for i in range(10))
    html = (f"<html><body><nav><ul>{MENU}</ul></nav><main><h1>Issues</h1><div class='layout has-sidebar'>"
            f"{teasers}</div></main></body></html>")
    text = main(html)
    assert "Hotel 9 changes hands" in text and "refit of all rooms by spring 2036" in text
    # a sidebar of links beside the content still goes
    side = f"<div class=sidebar><ul>{MENU}</ul></div>"
    assert "Section 3" not in main(f"<html><body><main><p>{ARTICLE}</p>{side}</main></body></html>")


def test_a_block_headed_as_recommendations_goes_wherever_it_stands():
    # "Customers also viewed" in the middle of a product page (not in the text's tail): its cards
    # go, the description after them stays; the heading stays too, so it may still end a tail
    cards = "".join(f"<div class=card><a href=/p{i}>Other lamp {i}</a><span>$ {i}9.00</span></div>" for i in range(6))
    html = (f"<html><body><main><h1>Desk lamp</h1><p>{ARTICLE}</p>"
            f"<section><h2>Customers also viewed</h2>{cards}</section>"
            f"<div><h2>Details</h2><p>The lamp's arm is steel, its shade is linen, and it takes one bulb.</p></div>"
            "</main></body></html>")
    text = main(html)
    assert "Paragraph sentence 39" in text and "its shade is linen" in text
    assert "Other lamp" not in text
    # a heading that heads no block of its own (its parent holds the content too) removes nothing
    flat = (f"<html><body><main><h1>Desk lamp</h1><h2>Related</h2><p>The lamp's arm is steel.</p><p>{ARTICLE}</p>"
            "</main></body></html>")
    assert "The lamp's arm is steel" in main(flat)
    # on a listing (a root made of links), a section of headlines called "Most read" is of the listing
    stories = "".join(f"<li><a href=/s{i}>River {i} floods the valley again after the spring rains</a></li>"
                      for i in range(8))
    listing = (f"<html><body><main><h1>News</h1><ul>{stories}</ul>"
               f"<section><h2>Most read</h2><ul>{stories.replace('River', 'Lake')}</ul></section></main></body></html>")
    assert "Lake 7 floods" in main(listing)
    # a product page whose two grids of recommendations, all links, are most of its links (each
    # under half of its text): the page without them is the description, no listing, and they go
    def grid(name):
        return "".join(f"<div class=card><a href=/p{i}>{name} desk lamp number {i}</a></div>" for i in range(12))
    product = (f"<html><body><main><h1>Desk lamp</h1><p>{ARTICLE[:400]}</p>"
               f"<div><h2>Related items to explore</h2>{grid('Other')}</div>"
               f"<div><h2>More like this</h2>{grid('Similar')}</div></main></body></html>")
    text = main(product)
    assert ARTICLE[:300] in text and "desk lamp number" not in text


def test_a_main_holding_a_grid_of_cards_beside_a_longer_description_is_not_the_root():
    # a shop's category: the main landmark is the grid of products; the category's description,
    # longer, stands below it outside the main
    cards = "".join(f"<article class=product><a href=/p{i}>Lamp {i}</a><span>$ {i}9.00</span></article>"
                    for i in range(12))
    description = " ".join(f"Our desk lamps {i} are chosen for a steady, warm light that does not tire the eyes."
                           for i in range(12))
    html = (f"<html><body><nav><ul>{MENU}</ul></nav><div><main><h1>Desk lamps</h1>{cards}</main>"
            f"<div class=seo><p>{description}</p></div></div></body></html>")
    text = main(html)
    assert "Our desk lamps 11 are chosen" in text and "Lamp 3" in text and "Section 3" not in text
    # the same grid without the description outside it: the main is the root
    alone = html.replace(f"<div class=seo><p>{description}</p></div>", "<footer><p>Shop address</p></footer>")
    text = main(alone)
    assert "Lamp 3" in text and "Shop address" not in text


def test_a_lone_small_article_is_a_teaser_not_the_root():
    # a service page whose only <article> is a short news teaser in its side column
    services = " ".join(f"We move households {i} across the state with trained crews and our own trucks." for i in range(30))
    html = (f"<html><body><div><h1>Movers</h1><p>{services}</p></div>"
            "<div><article><p>Posted in May</p><p>We won an award this year.</p><a href=/news>Continue</a></article>"
            "</div></body></html>")
    text = main(html)
    assert "We move households 29" in text and "We won an award" in text
    # the same article holding the page's text is the root
    story = html.replace("We won an award this year.", ARTICLE).replace(f"<p>{services}</p>", "<p>Short intro.</p>")
    text = main(story)
    assert "Paragraph sentence 39" in text and "Short intro" not in text


def test_the_byline_and_dateline_above_a_story_go():
    story = [f"Paragraph {i} of the story, long enough to be prose and not a line of furniture." for i in range(30)]
    text = "\n".join(["Flood in the valley", "By Jane Doe", "March 10, 2026 at 9:00 am PDT", "4 min read"] + story)
    assert without_byline(text) == "\n".join(["Flood in the valley"] + story)
    # the same lines further down are the story's (a dated entry of a timeline, a quoted byline)
    late = "\n".join(story[:10] + ["March 10, 2026", "By Jane Doe"] + story[10:])
    assert without_byline(late) == late
    # in other languages, with the time after a comma
    for line in ("Aktualisiert am 17.01.2021.", "12.12.2022, 08:30 Uhr", "Publié le 03/04/2022 à 17h45",
                 "Publicado el 2022-05-06"):
        assert without_byline("\n".join(["Hochwasser im Tal", line] + story)) == "\n".join(["Hochwasser im Tal"] + story), line
    # a longer line that opens like a byline is prose
    prose = "\n".join(["By the time the river rose, the town had already moved its archives uphill."] + story)
    assert without_byline(prose) == prose
    # through the extraction
    html = ("<html><body><main><h1>Flood</h1><p class=meta>By Jane Doe</p><time>2026-03-10</time>"
            + "".join(f"<p>{s}</p>" for s in story) + "</main></body></html>")
    text = main(html)
    assert "Jane Doe" not in text and "2026-03-10" not in text and story[29] in text


def test_the_details_around_each_post_of_a_thread_go():
    posts = []
    for i in range(4):
        posts += [f"poster{i}", "Senior Member", f"Joined: Mar {i + 1}, 2021", f"Messages: 1,20{i}",
                  f"Post {i}: how high did the river rise in the valley this spring, and where?", "Click to expand...",
                  "Reply"]
    text = "\n".join(posts)
    kept = [line for line in posts if line.startswith(("poster", "Post "))]
    assert without_line_furniture(text) == "\n".join(kept)
    # two such lines are no thread; a story's "Location: ..." and "#1" are no post details
    few = "\n".join(["Member", "A story about a club and its newest member, long enough.", "Reply"])
    assert without_line_furniture(few) == few
    listing = "\n".join(["#1", "Location: Paris", "Member", "Reply", "Online", "A river cruise in spring."])
    assert without_line_furniture(listing) == "\n".join(["#1", "Location: Paris", "A river cruise in spring."])
    # through the extraction
    html = ("<html><body><main><h1>River levels</h1>" + "".join(
        f"<article><div class=user><a href=/u{i}>poster{i}</a><div>Senior Member</div><dl><dt>Messages:</dt>"
        f"<dd>1,20{i}</dd></dl></div><p>Post {i}: {ARTICLE[:200]}</p><a href=#r{i}>Reply</a></article>"
        for i in range(4)) + "</main></body></html>")
    text = main(html)
    assert "Post 3:" in text and "Senior Member" not in text and "Reply" not in text


def test_invitations_to_read_on_alone_on_their_line_go():
    text = "\n".join(["Flood in the valley", "The river rose two metres overnight.", "Read more", "Dams",
                      "The dams held.", "Learn More →", "READ MORE"])
    assert without_line_furniture(text) == "\n".join(["Flood in the valley", "The river rose two metres overnight.",
                                                       "Dams", "The dams held."])
    # in a sentence, it is prose
    prose = "The river rose.\nRead more about the dams in our report on the spring floods."
    assert without_line_furniture(prose) == prose


def test_a_shops_controls_and_states_on_its_cards_go():
    cards = ["Canvas tote", "$30.00", "Add to cart", "Quick view", "Linen scarf", "$45.00", "Sold out",
             "Wishlist", "Loading...", "ADD TO BAG"]
    assert without_line_furniture("\n".join(cards)) == "\n".join(["Canvas tote", "$30.00", "Linen scarf", "$45.00"])
    # in a sentence, they are prose
    prose = "Linen scarf\nAdd to cart the scarf and the tote together for a discount."
    assert without_line_furniture(prose) == prose

def test_short_forms_beside_the_content_go():
    login = ("<form action='/login'><label>E-mail address</label><input type='email' name='u'>"
             "<label>Password</label><input type='password' name='p'><input type='hidden' name='t' value='x'>"
             "<button>Log in</button></form>")
    basket = "<form><label>Quantity</label><input name='qty' value='1'><button>Add to basket</button></form>"
    html = (f"<html><body><div class='page'><div><h1>Flood</h1><p>{ARTICLE}</p></div>"
            f"<div>{login}</div><div>{basket}</div></div></body></html>")
    text = main(html)
    assert "Paragraph sentence 39" in text
    assert "Password" not in text and "E-mail address" not in text and "Quantity" not in text
    # a form whose fields are not filled in (a button, a hidden value) is not a box of fields
    share = "<form><input type='hidden' name='id' value='7'><p>The river authority drew the flood map below.</p></form>"
    text = main(f"<html><body><main><h1>Flood</h1><p>{ARTICLE}</p>{share}</main></body></html>")
    assert "The river authority drew the flood map below." in text


def test_a_page_that_is_its_form_or_is_wrapped_in_one_keeps_it():
    # a template that wraps the whole page in one form (the content is in it)
    html = (f"<html><body><form action='/page.aspx'><input type='hidden' name='state' value='x'>"
            f"<input type='text' name='q'><main><h1>Flood</h1><p>{ARTICLE}</p></main></form></body></html>")
    assert "Paragraph sentence 39" in main(html)
    # a contact page: the form is most of what the page says
    fields = "".join(f"<p><label>Question {i} about your visit to the valley</label><input name='f{i}'></p>"
                     for i in range(8))
    html = f"<html><body><main><h1>Contact us</h1><p>Write to us.</p><form>{fields}</form></main></body></html>"
    assert "Question 7 about your visit to the valley" in main(html)


def test_a_main_landmark_the_rules_empty_is_the_content_rather_than_the_whole_page():
    # a grid of cards named like a menu inside <main>: the rules leave nothing, and the text is the
    # main landmark's, not the whole page's with its header's categories and banner
    cards = "".join(f"<div class='product-tile'><a href='/p{i}'><span>Walnut chair {i}</span> <span>$120</span></a></div>"
                    for i in range(12))
    categories = "".join(f"<li><a href='/c{i}'>Category {i}</a></li>" for i in range(8))
    html = (f"<html><head><title>Chairs</title></head><body><header><ul>{categories}</ul></header>"
            f"<div><p>Free delivery on orders over fifty pounds, every day of the week, to every town.</p></div>"
            f"<main><div class='menu'>{cards}</div></main><footer>Shop Ltd</footer></body></html>")
    text = main(html)
    assert "Walnut chair 11 $120" in text
    assert "Category" not in text and "Free delivery" not in text


def test_a_papers_discussion_and_a_storys_read_more_links_are_not_its_tail():
    results = "".join(f"<p>Result {i} shows the flood plain held water for {i} days after the rain.</p>" for i in range(8))
    html = (f"<html><body><main><h1>Floods and soils</h1><p>{ARTICLE}</p><h2>Results</h2>{results}"
            f"<h2>Discussion</h2><p>The soils of the valley drain slowly, which explains the long floods.</p>"
            f"<p><a href='/dams'>Read more</a> about the dams that held.</p>"
            f"<p>Also read: the river authority's map of the flood plain, drawn in spring.</p>"
            f"<p>The valley will flood again unless the drains are cleared.</p>"
            f"<h2>Comments</h2><p>Reader one says the drains were cleared last year.</p></main></body></html>")
    text = main(html)
    assert "The soils of the valley drain slowly" in text
    assert "The valley will flood again unless the drains are cleared." in text
    assert "Reader one" not in text  # the comments are the tail


def test_a_series_of_widgets_that_hold_the_review_is_its_content():
    specs = " ".join(f"Battery lasts {i} hours and the screen is bright in the sun." for i in range(8))
    widgets = "".join(f"<div class='product-widget'><h3>Laptop {i}</h3><p>{specs}</p></div>" for i in range(5))
    html = (f"<html><body><main><h1>The best laptops</h1><p>We tested twenty laptops for a month.</p>{widgets}"
            f"<div class='newsletter-signup'><p>Get our daily newsletter in your inbox</p></div></main></body></html>")
    text = main(html)
    assert "Laptop 4" in text and "Battery lasts 7 hours" in text
    assert "newsletter" not in text
    # readers' comments, one block each with its "Reply" link, are a thread: they go
    # (as long as widgets: the "Reply" links tell them apart)
    said = " ".join(f"Reader says this laptop is too heavy for a bag, reason {j}." for j in range(6))
    comments = "".join(f"<div class='comment'><p>Reader {i}: {said}</p><p><a href='#r{i}'>Reply</a></p></div>"
                       for i in range(8))
    html = f"<html><body><main><h1>The best laptops</h1><p>{ARTICLE}</p><div>{comments}</div></main></body></html>"
    text = main(html)
    assert "Paragraph sentence 39" in text and "Reader" not in text


def test_a_label_and_a_link_between_a_storys_paragraphs_go():
    # "Read also: <a>another story</a>" set between paragraphs, in any language: a link to
    # another page, not the story
    paragraphs = [f"<p>{ARTICLE[i * 200:(i + 1) * 200]}</p>" for i in range(6)]
    inserts = ["<p>Lea también: <a href='/a'>Impiden el ingreso de dos reporteros al país</a></p>",
               "<p><strong>READ MORE:</strong> <a href='/b'>The dams that held the river in spring</a></p>"]
    body = paragraphs[0] + inserts[0] + "".join(paragraphs[1:4]) + inserts[1] + "".join(paragraphs[4:])
    text = main(f"<html><body><main><h1>Flood</h1>{body}</main></body></html>")
    assert ARTICLE[1000:1100] in text
    assert "Impiden" not in text and "dams that held" not in text and "Lea también" not in text
    # a label with a file or a name as its link, and an index of "name : class" lines, stay
    docs = (f"<html><body><main><h1>urllib.error</h1><p>Source code: <a href='/e'>Lib/urllib/error.py</a></p>"
            f"<p>{ARTICLE[:300]}</p><p>Definition: <a href='/v'>bits/stl_vector.h:96</a></p></main></body></html>")
    text = main(docs)
    assert "Lib/urllib/error.py" in text and "bits/stl_vector.h:96" in text
    # more than LINK_INSERTS of them: the content's own list of references
    refs = "".join(f"<p>{ARTICLE[i * 100:(i + 1) * 100]}</p><p>See: <a href='/r{i}'>How the dams of the valley {i} held</a></p>"
                   for i in range(6))
    text = main(f"<html><body><main><h1>Dams</h1>{refs}</main></body></html>")
    assert all(f"How the dams of the valley {i} held" in text for i in range(6))


def test_an_articles_tail_is_told_in_the_webs_main_languages():
    # (two titles: three or more under a short heading go whatever it says, see the test of the
    # titles that end the text)
    tail = "".join(f"<p><a href=/s{i}>Hochwasser im Tal {i}</a></p>" for i in range(2))
    html = (f"<html><body><main><h1>Hochwasser</h1><p>{ARTICLE}</p>"
            f"<h2>Das könnte Sie auch interessieren</h2>{tail}</main></body></html>")
    text = main(html)
    assert "Paragraph sentence 39" in text and "Hochwasser im Tal" not in text
    for heading in ("Noticias relacionadas", "Sur le même sujet", "Articoli correlati", "Kommentare"):
        assert "Hochwasser im Tal" not in main(html.replace("Das könnte Sie auch interessieren", heading)), heading
    # an inline "read also" is a link set in the story as well as under it: not a tail
    inline = html.replace("Das könnte Sie auch interessieren", "Lesen Sie auch")
    assert "Hochwasser im Tal 1" in main(inline)


def test_a_block_headed_as_recommendations_goes_in_the_webs_main_languages():
    cards = "".join(f"<div class=card><a href=/p{i}>Andere Lampe {i}</a><span>{i}9,00 €</span></div>" for i in range(6))
    # (in the middle of the text: under it, the heading would end the text as its tail's)
    html = (f"<html><body><main><h1>Schreibtischlampe</h1><p>{ARTICLE[:1200]}</p>"
            f"<section><h2>Ähnliche Artikel</h2>{cards}</section>"
            f"<div><h2>Details</h2><p>Der Arm der Lampe ist aus Stahl, der Schirm aus Leinen.</p><p>{ARTICLE[1200:]}</p></div>"
            "</main></body></html>")
    text = main(html)
    assert "Paragraph sentence 39" in text and "der Schirm aus Leinen" in text
    assert "Andere Lampe" not in text


def test_the_pages_controls_alone_on_their_line_go():
    text = "\n".join(["Hochwasser im Tal", "Der Fluss stieg über Nacht zwei Meter.", "Drucken", "Zurück zur Übersicht",
                      "Back to top ↑", "« Zurück", "Imprimer"])
    assert without_line_furniture(text) == "\n".join(["Hochwasser im Tal", "Der Fluss stieg über Nacht zwei Meter."])
    prose = "Der Fluss stieg.\nZurück zur Übersicht der Pegel geht es über die Karte."
    assert without_line_furniture(prose) == prose


def test_a_rubys_annotations_are_not_words_of_the_text():
    # furigana: the reading of each character, shown above it (rt), in parentheses for a browser
    # without ruby (rp); the text is the characters
    html = ("<html><body><main><h1>法律</h1><p><ruby>子<rp>(</rp><rt>こ</rt><rp>)</rp></ruby>どもへの"
            "<ruby>体罰<rt>たいばつ</rt></ruby>を禁止する法律ができる。</p></main></body></html>")
    for mode in ("main", "whole"):
        assert "子どもへの体罰を禁止する法律ができる。" in extract_text(html, mode)


def test_a_box_asking_to_accept_cookies_goes_however_long():
    notice = ("We use cookies and similar technologies to personalise content, tailor and measure ads, and "
              "provide a better experience. By clicking accept you agree to this, as outlined in our cookie "
              "policy. You can change your choices at any time in the settings of your browser. ") * 2
    html = (f"<html><body class='single cookies-not-set'><div class='cookie-notice-container'><p>{notice}</p>"
            f"<button>Accept</button></div><div class=wrap><h1>Flood</h1><p>{ARTICLE}</p></div></body></html>")
    text = main(html)
    assert "Paragraph sentence 39" in text and "We use cookies" not in text
    # the body's class says the page's state, not a box: the page stays; and a manual's section on
    # cookies, named by its id after its heading, is content
    manual = (f"<html><body><main><h1>Quickstart</h1><p>{ARTICLE[:600]}</p><section id='cookies'><h2>Cookies</h2>"
              f"<p>{notice}</p></section></main></body></html>")
    assert "We use cookies" in main(manual)
    for scan in (html_scan.scan_python, H._scan):
        marked = scan(html, True)[0]
        assert marked.count(html_scan.MARK_CONSENT.encode()) == 1


def test_a_tails_heading_is_looked_up_by_its_first_word_with_the_same_answers():
    from neardup.text import html_rules as R
    headings = ("Related posts", "More from the author", "You may also like", "Recommended", "Read next",
                "Keep reading", "Trending", "Latest", "Comments (3)", "Comment", "Leave a reply", "Share this:",
                "Subscribe", "Sign up", "Newsletter", "About the author", "Tags:", "Tag", "More in Sport",
                "Most read", "Further reading", "Other articles", "Similar", "Recent posts", "Written by Ann",
                "Categories", "Follow us", "Share on X", "Author:", "Mehr zum Thema", "Das könnte Sie auch interessieren",
                "Weitere Artikel", "Ähnliche Beiträge", "Verwandte Themen", "Kommentare", "Kommentar schreiben",
                "Schreibe einen Kommentar", "Hinterlasse einen Kommentar", "Diesen Artikel teilen", "Beitrag teilen",
                "Empfohlene Artikel", "Beliebte Beiträge", "Neueste Beiträge", "Meistgelesen", "Meist gelesen",
                "Schlagwörter", "Schlagworte", "Über den Autor", "Zum Thema", "Auch interessant", "Sur le même sujet",
                "Articles similaires", "Dans la même rubrique", "Commentaires", "Laisser un commentaire", "Les plus lus",
                "Vous aimerez aussi", "À propos de l'auteur", "Partager cet article", "También te puede interesar",
                "Te puede interesar", "Le puede interesar", "Noticias relacionadas", "Artículos relacionados",
                "Notas relacionadas", "Temas relacionados", "Más noticias", "Lo más leído", "Comentarios",
                "Deja un comentario", "Sobre el autor", "Etiquetas", "Articoli correlati", "Potrebbe interessarti",
                "Commenti", "Lascia un commento", "I più letti", "Notícias relacionadas", "Comentários",
                "Deixe um comentário", "Mais lidas", "Gerelateerde artikelen", "Reacties", "Meer over", "Meest gelezen",
                "Komentarze", "Podobne artykuły", "Najczęściej czytane", "RELATED—STORIES", "Filed under politics",
                "Explore further", "Ähnliche Nachrichten", "Verwandte Meldungen", "Weitere aktuelle Themen",
                "Abgelegt unter: Archiv", "Am meisten gelesen", "Die meistgelesenen Artikel", "Zum Weiterlesen:",
                "Diese Seite teilen", "Artikel bewerten", "Sur le sujet", "Contenido relacionado",
                "Temas:", "Inne artykuły autora", "Czytaj także")
    story = "\n".join(f"Paragraph {i} of the story, long enough to be prose and not a heading of anything." for i in range(8))
    for h in headings:
        assert R._TAIL_HEADING.match(h), h
        assert R.without_tail(f"{story}\n{h}\nOther story") == story, h
    for line in ("Relatedness of species", "Discussion", "Read more", "Lesen Sie auch", "The related posts", "» Related"):
        assert not R._TAIL_HEADING.match(line) and R.without_tail(f"{story}\n{line}\nOther") == f"{story}\n{line}\nOther"


def test_the_titles_of_other_stories_that_end_the_text_go_with_their_heading():
    story = "".join(f"<p>{ARTICLE[i * 200:(i + 1) * 200]}</p>" for i in range(5))
    titles = "".join(f"<li><a href='/s{i}'>Another story of the region, number {i}</a></li>" for i in range(4))
    page = f"<html><body><main><h1>Flood</h1>{story}<h3>Aus der Region</h3><ul>{titles}</ul></main></body></html>"
    text = main(page)
    assert ARTICLE[800:1000].strip() in text and "Aus der Region" not in text and "Another story" not in text
    # a date or a section's name between the titles is of them
    dated = titles.replace("</a></li>", "</a><div class=date>May 3</div></li>")
    assert "Another story" not in main(page.replace(titles, dated))
    # without a heading (a listing's last titles, a manual's links at the end of a page), or with
    # fewer than three, or when they are most of the text, they stay
    assert "Another story of the region, number 3" in main(page.replace("<h3>Aus der Region</h3>", ""))
    two = "".join(f"<li><a href='/s{i}'>Another story of the region, number {i}</a></li>" for i in range(2))
    assert "Another story of the region, number 1" in main(page.replace(titles, two))
    short = page.replace(story, f"<p>{ARTICLE[:120]}</p>")
    assert "Another story of the region, number 3" in main(short)
    # the tail is read on the text as the page has it: the titles cut from its end are counted in
    # its length, and a "Related" box in the middle of the story does not become its tail
    from neardup.text import html_rules as R
    lines = [f"Line {i} of the story, long enough to be prose and not a heading of anything." for i in range(10)]
    text = "\n".join(lines[:8] + ["Related"] + lines[8:])
    assert R.without_tail(text) == "\n".join(lines[:8])
    assert R.without_tail(text, cut=len(text)) == text


def test_a_tail_heading_printed_on_each_post_is_a_label_not_the_tail():
    from neardup.text import html_rules as R
    posts = [f"Post {i}: the thread's question about the river, answered at length by its readers." for i in range(9)]
    # "Author" beside each of the thread's author's posts (three times): the thread goes on after it
    badged = []
    for i, post in enumerate(posts):
        badged += (["Author", post] if i % 3 == 2 else [post])
    text = "\n".join(badged)
    assert R.without_tail(text) == text
    # once, under the story, it heads the author's box: the text ends before it
    story = "\n".join(posts + ["Author", "Jane Doe writes about rivers."])
    assert R.without_tail(story) == "\n".join(posts)


def test_the_json_ld_scripts_are_found_as_written_in_any_case():
    from neardup.text.html_jsonld import _RE_JSON_LD, _json_ld_texts
    pages = [
        b'<script type="application/ld+json">{"a": 1}</script><p>x</p><script type=application/ld+json>[2]</script>',
        b"<script async id='s' type='application/ld+json' nonce=x>{\"b\": 2}</SCRIPT>",
        b'<script type="application/LD+JSON">{"c": 3}</script>',
        b'<p>application/ld+json is a type</p><script type="application/ld+json">{"d": 4}</script>',
        b'<meta content="application/ld+json"><script>var x = 1;</script>',
        b'<script type="application/ld+json">{"e": 5}',
    ]
    for page in pages:
        # the same contents as the case-blind expression over the whole page
        assert list(_json_ld_texts(page)) == [m.group(1) for m in _RE_JSON_LD.finditer(page)], page
    assert list(_json_ld_texts(pages[0])) == [b'{"a": 1}', b"[2]"]
