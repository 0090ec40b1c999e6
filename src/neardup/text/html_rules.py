"""The rules of the main-content extraction that read the text or a few blocks rather than
the whole tree: the copies of a line said once, an article's tail cut at its heading, the
secondary vocabulary (comments, newsletters, ads) dropped beside enough content, and the
elements kept whatever their marks say because they hold most of the page's text."""

from __future__ import annotations

import re

from .html_scan import ASIDE_WORDS
from .html_scan import MARK_HIDDEN as _MARK_HIDDEN
from .html_scan import MARK_SECONDARY as _MARK_SECONDARY
from .html_scan import stats as _stats
from .html_tree import get_ids, is_under

__all__ = ["Holder", "drop_forms", "drop_headed_asides", "drop_secondary", "once", "replies", "without_byline",
           "without_link_inserts", "without_tail", "without_tail_titles", "without_line_furniture",
           "REPEATED_LINE_CHARS", "TAIL_START"]

# A line this long met again in the main text is a copy (0: copies kept).
REPEATED_LINE_CHARS = 20
# The secondary vocabulary (comments, newsletter, ads...) is dropped when the rest of the content
# has this many characters, or more than the secondary blocks.
SECONDARY_REST_CHARS = 3000
# ...or, when they are a thread of comments whose items end with a "Reply" link (THREAD_REPLIES of
# them or more: readers' comments under a post), when the rest has this many characters: a post
# that long is the content, however long the thread under it.
THREAD_REST_CHARS = 500
THREAD_REPLIES = 3
# A line of links that opens with "Reply" (alone, or with the thread's other actions: "Reply
# Delete", "Reply Report"), between the block separators of the text.
_REPLY_LINK = re.compile(r"[\x0c\n][ \t]*\x01[ \t]*reply[ \t]*\x02(?:[ \t]*\x01[^\x01\x02\x0c\n]{0,24}\x02)*[ \t]*(?=[\x0c\n])",
                         re.I)
# A secondary block that holds this share of the root's text or more wraps the content (a
# "widget" of the page's template around the post): the secondary blocks inside it are weighed
# instead of it.
SECONDARY_WRAPPER = 0.8
# SECONDARY_SERIES sibling blocks or more with secondary names, holding SECONDARY_SERIES_SHARE of the
# root's text together, with fewer than THREAD_REPLIES "Reply" links, are the content's items (a
# review's product "widgets", one per product), not boxes beside it: they stay (0: no such rule).
SECONDARY_SERIES = 3
SECONDARY_SERIES_SHARE = 0.4
# A form with at least FORM_FIELDS fields a reader fills in (inputs of text, e-mail, password,
# quantity: not hidden values, buttons or tick boxes) and less than FORM_CHARS characters of
# labels is a box beside the content (log in, sign up for the newsletter, contact us, leave a
# comment, add to the basket) when it holds less than FORM_SHARE of the root's text; a page that
# is its form, or a template that wraps the whole page in one, keeps it (0: forms kept).
FORM_FIELDS = 1
FORM_CHARS = 1500
FORM_SHARE = 0.5
_NOT_FILLED_IN = frozenset(("hidden", "submit", "button", "image", "reset", "checkbox", "radio"))
# A short line in the last (1 - TAIL_START) of the main text that opens with one of these words
# heads what follows an article rather than the article (related stories, comments, sharing,
# the author's box, the newsletter, the site's recent posts and categories): the text ends
# before it. Generic vocabulary of page furniture in English and (since rules 15) the web's other
# main European languages (German, French, Spanish, Italian, Portuguese, Dutch, Polish), not of
# any site. Not in it (rules 14): "Discussion", a section of a paper; "Read more" and "Also read"
# (nor "Lesen Sie auch", "Lire aussi", "Lea también"...), links set in the middle of a story as
# well as under it; "Popular", which opens titles of the content too ("Popular white wines").
TAIL_START = 0.7
TAIL_LINE_CHARS = 60
# ...unless the text has that line this many times or more (since rules 16): a label printed on
# each post or card ("Author" beside each of the thread's author's posts, "Comments" under each
# teaser), not the heading of the page's tail.
TAIL_HEADING_REPEATS = 3
_TAIL_HEADING = re.compile(
    r"(?:related|more from|more stories|more articles|you may also like|you might also like|recommended"
    r"|read next|keep reading|trending|latest|comments?|leave a (?:reply|comment)"
    r"|share this|subscribe|sign up|newsletter|about the author|tags?|more in|most read"
    r"|further reading|other articles|similar|recent (?:posts|articles|stories)|written by|categories"
    r"|follow us|share (?:on|via)|filed under|explore further"
    # German
    r"|mehr zum thema|mehr zu (?:diesem|dem) thema|das könnte (?:sie|dich) (?:auch )?interessieren"
    r"|weitere (?:aktuelle )?(?:artikel|beiträge|nachrichten|meldungen|themen)"
    r"|(?:ähnliche|verwandte) (?:artikel|beiträge|themen|nachrichten|meldungen|news)|abgelegt unter"
    r"|am meisten gelesen|die meistgelesenen|das thema könnte|zum weiterlesen|(?:diese )?seite teilen|artikel bewerten"
    r"|kommentare|kommentar (?:schreiben|verfassen)|(?:schreibe|hinterlasse) einen kommentar"
    r"|(?:diesen )?(?:artikel|beitrag) teilen|(?:empfohlene|beliebte|neueste) (?:artikel|beiträge)"
    r"|meist ?gelesen|schlagw(?:örter|orte)|über den autor|zum thema|auch interessant"
    # French
    r"|sur le même sujet|articles (?:similaires|liés|connexes)|dans la même rubrique|commentaires"
    r"|laisser un commentaire|les plus lus|vous aimerez (?:peut-être )?aussi|à propos de l'auteur"
    r"|partager (?:cet |l')article|sur le sujet"
    # Spanish, Italian, Portuguese, Dutch, Polish
    r"|(?:también )?(?:te|le) puede interesar|(?:noticias|artículos|notas|temas) relacionad[oa]s|más noticias"
    r"|lo más leído|comentarios|deja un comentario|sobre el autor|etiquetas|contenido relacionado|temas(?=\s*:?\s*$)"
    r"|articoli correlati|potrebbe interessarti|commenti|lascia un commento|i più letti"
    r"|notícias relacionadas|comentários|deixe um comentário|mais lidas"
    r"|gerelateerde artikelen|reacties|meer over|meest gelezen"
    r"|komentarze|podobne artykuły|najczęściej czytane|inne artykuły|czytaj (?:także|również)"
    r")\b|author\s*:?\s*$", re.I)
# The first word of each of them (lower case): a line whose first word is none of these is no
# heading of a tail without the expression's hundred alternatives tried on it (most lines).
_TAIL_FIRST_WORDS = frozenset("""
    related more you recommended read keep trending latest comment comments leave share subscribe sign
    newsletter about tag tags most further other similar recent written categories follow author filed explore
    mehr das weitere ähnliche verwandte kommentare kommentar schreibe hinterlasse diesen artikel beitrag
    empfohlene beliebte neueste meistgelesen meist schlagwörter schlagworte über zum auch abgelegt am die
    diese seite
    sur articles dans commentaires laisser les vous à partager
    también te le noticias artículos notas temas más lo comentarios deja sobre etiquetas contenido
    articoli potrebbe commenti lascia i notícias comentários deixe mais
    gerelateerde reacties meer meest komentarze podobne najczęściej inne czytaj""".split())
_FIRST_WORD = re.compile(r"\w+")
# A heading that names what is recommended beside the content (other products, other stories):
# the block it heads goes, wherever it stands in the content, when it is not most of the content.
_ASIDE_HEADING = re.compile("(?:" + "|".join(re.escape(w) for w in ASIDE_WORDS) + r")\b", re.I)
# Such a heading is short (a longer one is a title of the content that opens with "Popular...").
HEADED_ASIDE_CHARS = 60
# The block goes when it holds under this share of the root's text (more is the content itself).
HEADED_ASIDE_SHARE = 0.5
# ...and only in a root under this share of links without such blocks: on a listing, a "Most read"
# section is of it.
HEADED_ASIDE_LINKS = 0.5
_BLANK_OR_MARK = " \t\n\r\x0c\x01\x02"  # white space and the scan's link marks
# An element that would go as hidden or navigation holds "most of the page's text" above this share.
MOST_TEXT = 0.5
# ...or, hidden, with the other hidden blocks together (see Holder; False: each alone), when they
# hold this many characters or more (the content of a page; not a few hidden labels and boxes).
HIDDEN_TOGETHER = True
HIDDEN_TOGETHER_CHARS = 500


class Holder:
    """Whether an element marked as furniture (hidden, a navigation role) is the content all the
    same: the main element, or a block that holds most of the page's text and is not made of
    links (under ``link_density`` of its text: a page hidden until its scripts run, a grid of
    products whose names are links, a tab list around its panels). Since rules 14 the hidden
    blocks are also weighed together (HIDDEN_TOGETHER): a page whose scripts show its content in
    parts (a segment per section, each hidden until it is moved into place) holds most of its
    text in several of them, none of which holds most alone."""

    def __init__(self, body, main_id, short_chars: int, link_density: float):
        self.body, self.main_id, self.total = body, main_id, None
        self.short_chars, self.link_density = short_chars, link_density
        # the elements that may hold the page: the others are never kept
        self.tags = get_ids().containers | {main_id}
        self.hidden_hold = None  # whether the hidden blocks together hold the page (asked once)

    def __call__(self, node) -> bool:
        if node.tag_id == self.main_id:
            return True
        if not MOST_TEXT or node.tag_id not in self.tags:
            return False
        chars, links = _stats(node.text_lexbor())
        if links >= self.link_density * chars:
            return False
        if chars >= self.short_chars and chars > MOST_TEXT * self._total():
            return True
        # (a part of the content hidden with the others may be short: a heading's segment)
        return HIDDEN_TOGETHER and _MARK_HIDDEN in node.attributes and self._hidden_together()

    def _total(self) -> int:
        if self.total is None:
            self.total = _stats(self.body.text_lexbor())[0]
        return self.total

    def _hidden_together(self) -> bool:
        if self.hidden_hold is None:
            hidden = _outermost(self.body.css(f"[{_MARK_HIDDEN}]"))
            chars = links = 0
            for n in hidden:
                c, l = _stats(n.text_lexbor())
                chars += c
                links += l
            # (the body's text is weighed last: most pages' hidden blocks are a few labels and
            # boxes, or menus, told without it)
            self.hidden_hold = (len(hidden) > 1 and chars >= HIDDEN_TOGETHER_CHARS
                                and links < self.link_density * chars and chars > MOST_TEXT * self._total())
        return self.hidden_hold


def drop_headed_asides(root) -> bool:
    """Drop the blocks headed (h2-h6 first in them) by a heading of what is recommended beside
    the content ("Related articles", "Customers also viewed"), wherever they stand in the root,
    when they hold under HEADED_ASIDE_SHARE of its text: the highest such block goes. Called for
    the pages whose scan saw such a heading (ASIDE_HEADING)."""
    found = []
    for h in root.css("h2, h3, h4, h5, h6"):
        t = h.text_lexbor()
        if len(t) > HEADED_ASIDE_CHARS:
            continue
        t = t.replace("\x01", "").replace("\x02", "").strip()
        if t and _ASIDE_HEADING.match(t):
            found.append((h, t))
    if not found:
        return False
    total, links = _stats(root.text_lexbor())
    blocks = []
    for h, t in found:
        best, n = h, h.parent
        while n is not None and n.mem_id != root.mem_id:
            text = n.text_lexbor()
            # its opening only, without the link marks (a few inside the heading's own text)
            head = text.lstrip(_BLANK_OR_MARK)[:2 * len(t) + 16].replace("\x01", "").replace("\x02", "").lstrip()
            if not head.startswith(t) or _stats(text)[0] >= HEADED_ASIDE_SHARE * total:
                break
            best, n = n, n.parent
        if best is not h and not (blocks and (best.mem_id == blocks[-1][1].mem_id or is_under(best, blocks[-1][1]))):
            blocks.append((h, best))  # (a block inside the one before, or the same, goes with it)
    if not blocks:
        return False
    # A listing's sections of headlines ("Most read") are of it: the rest of the root, without
    # the blocks (themselves mostly links, which would make any root look like a listing), is
    # made of links.
    for _h, block in blocks:
        chars, in_links = _stats(block.text_lexbor())
        total, links = total - chars, links - in_links
    if links >= HEADED_ASIDE_LINKS * total:
        return False
    for h, best in blocks:
        # The block goes but its heading stays: a heading of an article's tail still ends the
        # text there (without_tail), with what the page puts after the block.
        n = h
        while n.mem_id != best.mem_id:
            parent = n.parent
            for sibling in list(parent.iter()):
                if sibling.mem_id != n.mem_id:
                    sibling.remove()
            n = parent
    return True


# The first tenth of the text is where a story's byline and dateline stand, above its text: a line
# there of at most BYLINE_CHARS that is only a date (with its time, "Updated ..."),
# "By <name>" (up to five words) or "N min read" goes. They tell nothing of the story, and the
# same story on another site carries its own (another date format, another author line).
BYLINE_HEAD = 0.1
BYLINE_LINES = 10
BYLINE_CHARS = 70
_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
          r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_DATE = (rf"(?:{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}|\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH},?\s+\d{{4}}"
         r"|\d{4}-\d{2}-\d{2}|\d{1,2}[/.]\d{1,2}[/.]\d{2,4})")
# (the words before a date in other languages too: "Aktualisiert am", "Publié le", "Publicado el"; its
# time after a comma or a dash, "12.12.2022, 08:30 Uhr", "17:45h")
_DATED = (r"published|updated|posted|last updated|modified|date|aktualisiert(?: am)?|veröffentlicht(?: am)?"
          r"|erstellt(?: am)?|stand|publié le|mis à jour le|publicado(?: el)?|actualizado(?: el)?|pubblicato(?: il)?"
          r"|aggiornato(?: il)?|opublikowano")
_BYLINE = re.compile(
    rf"(?:(?:{_DATED})\s*(?:on|:)?\s*)?{_DATE}\.?"
    r"(?:,?\s*(?:at\s+|um\s+|à\s+|a las\s+|-\s*)?\d{1,2}[:.h]\d{2}(?:\s*(?:[ap]\.?m\.?|uhr|h))?(?:\s+[A-Z]{2,4})?)?\s*"
    r"|(?:written |reviewed |edited |posted |fact[- ]checked |words |story )?by\s*:?\s*\S+(?:\s+\S+){0,4}\s*"
    r"|\d+\s*min(?:ute)?s?\s+read\s*", re.I)

# What forum software prints around each post, a line each: the poster's figures ("Joined: Mar
# 2021", "Messages: 1,204", "Reaction score: 88"), rank ("Senior Member") and status ("Offline"),
# the post's actions ("Reply", "Quote", "Permalink Embed Save Report") and the "Click to expand..."
# of a long quote. Generic vocabulary of forum software, not of any site; dropped only from a text
# with THREAD_DETAIL_LINES such lines or more (a thread), where each post repeats them.
THREAD_DETAIL_LINES = 3


def _capitalized_either(phrases: str) -> str:
    """An alternation of the |-separated phrases, each word's first letter in either case ("Reply",
    "reply"): a case-blind pattern costs three times as much, on every page."""
    def word(w: str) -> str:
        return f"[{w[0].upper()}{w[0]}]{re.escape(w[1:])}" if w[:1].isalpha() else re.escape(w)
    return "|".join(" ".join(word(w) for w in phrase.split(" ")) for phrase in phrases.split("|"))


_POST_ACTION = _capitalized_either("reply|reply with quote|quote|multi-quote|multiquote|permalink|embed|save|report|share"
                                   "|parent|like|likes")
_THREAD_DETAIL = re.compile(
    r"\n(?:(?:" + _capitalized_either("joined|join date|messages|posts|reaction score|points|trophy points|likes received"
                                     "|member since|registered|reputation|karma") + r")\s*:?\s*[\w ,.+-]{1,30}"
    r"|" + _capitalized_either("click to expand") + r"\.*"
    r"|(?:(?:" + _capitalized_either("senior|junior|new|established|active|registered|well-known|full|veteran") + r") )?"
    r"(?:" + _capitalized_either("member|user") + r")"
    r"|" + _capitalized_either("original poster|offline|online")
    + rf"|(?:{_POST_ACTION})(?: (?:{_POST_ACTION}))*)[ \t]*(?=\n|\Z)")


# Such details as they stand on their line: a text has one, or is searched no further (the search
# of _THREAD_DETAIL costs three per cent of the extraction; a set of the lines, a fraction of it).
_THREAD_DETAIL_LINES = frozenset(
    form for phrase in ("reply", "quote", "permalink", "report", "parent", "click to expand...", "member",
                        "senior member", "junior member", "new member", "registered user", "offline", "online",
                        "original poster", "reply with quote", "multi-quote", "multiquote")
    for form in (phrase, phrase[0].upper() + phrase[1:], phrase.title()))


# A link that invites to read on, alone on its line ("Read more", "Learn more →"): a card's or a
# teaser's furniture, the same under every one of them, no words of the content. So are a shop's
# controls and states printed on each of its cards ("Add to cart", "Quick view", "Sold out",
# "Loading..."). Matched as the line stands (lower case, capitalized, title case or upper case,
# with or without an arrow or an ellipsis), by a set: no search over the text.
_CALLS_TO_ACTION = frozenset(
    case(phrase) + arrow
    for phrase in ("read more", "learn more", "continue reading", "know more", "find out more", "see more", "view more",
                   "discover more", "explore more", "read the blog", "read the story", "read the case study",
                   "read the report", "watch the video", "watch video", "watch the demo", "watch demo", "shop now",
                   "book now", "order now", "check price",
                   "add to cart", "add to basket", "add to bag", "add to wishlist", "add to list", "add to compare",
                   "buy now", "quick view", "quick shop", "compare", "wishlist", "sold out", "out of stock", "in stock",
                   "loading")
    for case in (str, str.capitalize, str.title, str.upper)
    for arrow in ("", " →", "→", " ›", "›", " »", "»", " >", "...", "…"))


def _first_up(phrase: str) -> str:
    """The phrase with its first letter in upper case, the others as they are (German nouns)."""
    return phrase[:1].upper() + phrase[1:]


# So are the page's own controls, alone on their line under the text (since rules 15): back (to the
# top, to the overview), print, comment, in the web's main European languages.
_PAGE_CONTROLS = frozenset(
    case(phrase) + arrow
    for phrase in ("back", "back to top", "back to overview", "print", "print this page",
                   "zurück", "zurück zur Übersicht", "nach oben", "drucken", "Seite drucken", "kommentieren",
                   "retour", "retour en haut", "haut de page", "imprimer", "volver", "volver arriba", "imprimir",
                   "torna su", "stampa")
    for case in (str, _first_up, str.capitalize, str.title, str.upper)
    for arrow in ("", " →", "→", " ›", "›", " »", "»", " >", "...", "…", " ↑", "↑")
) | frozenset(arrow + case(phrase) for phrase in ("back", "zurück", "zurück zur Übersicht")
              for case in (str, _first_up) for arrow in ("« ", "‹ ", "< ", "← ", "«", "‹", "<", "←"))
_DROPPED_LINES = _CALLS_TO_ACTION | _PAGE_CONTROLS
_FURNITURE_LINES = _DROPPED_LINES | _THREAD_DETAIL_LINES


def without_line_furniture(text: str) -> str:
    """The text without the lines that are only an invitation to read on (_CALLS_TO_ACTION) or a
    control of the page (_PAGE_CONTROLS), and without the details forum software prints around
    each post (_THREAD_DETAIL) when it has THREAD_DETAIL_LINES of them or more and one that is
    such a detail as it stands: one split and one set lookup for a page that has neither (most)."""
    lines = text.split("\n")
    if _FURNITURE_LINES.isdisjoint(lines):
        return text
    if not _DROPPED_LINES.isdisjoint(lines):
        lines = [line for line in lines if line not in _DROPPED_LINES]
        text = "\n".join(lines)
    if _THREAD_DETAIL_LINES.isdisjoint(lines):
        return text
    lined = "\n" + text  # (every line after a line break: the search looks for those only)
    if len(_THREAD_DETAIL.findall(lined)) < THREAD_DETAIL_LINES:
        return text
    return _THREAD_DETAIL.sub("", lined)[1:]


# A block of the content that is a short label, a colon and a link ("Read also: <a>another
# story</a>", "Lea también: ...", "MIRA: ...") is a link to another page set between the
# paragraphs of a story, in any language: it goes (since rules 15) when the text has at most
# LINK_INSERTS of them; more are the content's own list (references, "See: ..." after each
# point, a guide's recommendations). The link is a title: three words or more, INSERT_LINK_CHARS
# characters or more ("Source code: <a>Lib/json.py</a>", "Definition: <a>vector.h:96</a>"
# stay); the label has INSERT_LABEL_CHARS at most. Read on the text as lexbor gives it, where a
# form feed separates blocks and the scan's marks enclose the text of links.
LINK_INSERTS = 4
INSERT_LABEL_CHARS = 30
INSERT_LINK_CHARS = 15
INSERT_AFTER_CHARS = 80
_LABEL_BEFORE_LINK = re.compile(r":[^\S\f]*\x01")  # a label's colon, and the link it opens
_INSERT_LINK = re.compile(  # the link: three words or more (a title, not a file or a name), its block's end
    rf"\x01(?=(?:[^\x01\x02\f ]* ){{2}})[^\x01\x02\f]{{{INSERT_LINK_CHARS},}}\x02[^\S\f]*(?=\f)")


def without_link_inserts(raw: str) -> str:
    """``raw`` (a subtree's text with the scan's marks) without its link inserts (LINK_INSERTS)."""
    found = []
    # (from each colon before a link, of which most pages have none or a few: no search of
    # every block)
    for colon in _LABEL_BEFORE_LINK.finditer(raw):
        start = raw.rfind("\f", max(0, colon.start() - INSERT_LABEL_CHARS - 1), colon.start())
        if start < 0 or start + 1 == colon.start():
            continue  # no block's opening in reach: a longer label; or no label
        label = raw[start + 1:colon.start()]
        if "\x01" in label or "\x02" in label:
            continue
        link = _INSERT_LINK.match(raw, colon.end() - 1)
        if link is not None and _after_paragraph(raw, start):
            found.append((start, link.end()))
            if len(found) > LINK_INSERTS:
                return raw  # the content's own list
    return _without_spans(raw, found, "\f") if found else raw


def _after_paragraph(raw: str, at: int) -> bool:
    """Whether the last block with text before ``raw[at]`` is a paragraph (INSERT_AFTER_CHARS or
    more out of links): an insert interrupts prose; a line of an index ("name : <a>class</a>")
    follows others."""
    block = _block_before(raw, at, _BLANK_OR_MARK)[1]
    if not block:
        return False
    chars, links = _stats(block)
    return chars - links >= INSERT_AFTER_CHARS


def _block_before(raw: str, end: int, blank: str | None = None) -> tuple[int, str]:
    """Where the last block with text that ends at or before ``raw[end]`` starts, and its text
    without the ``blank`` characters around it (white space by default); (-1, "") when none."""
    while end > 0:
        start = raw.rfind("\f", 0, end) + 1
        block = raw[start:end].strip(blank)
        if block:
            return start, block
        end = start - 1
    return -1, ""


def replies(blocks) -> int:
    """How many "Reply" links, each alone on its line, the blocks hold."""
    count = 0
    for n in blocks:
        text = n.text_lexbor()
        if "eply" in text or "EPLY" in text:  # (most threads have none: no regular expression)
            count += len(_REPLY_LINK.findall(text))
    return count


def without_byline(text: str) -> str:
    """The text without the byline and dateline lines of its head: the lines that start in its
    first tenth (BYLINE_HEAD of its characters; the first line always), BYLINE_LINES at most."""
    limit, size = int(BYLINE_HEAD * len(text)), len(text)
    dropped, pos = [], 0  # (the spans of the lines that go, with their line break)
    for _ in range(BYLINE_LINES):
        end = text.find("\n", pos)
        stop = size if end < 0 else end
        if stop - pos <= BYLINE_CHARS and _BYLINE.fullmatch(text[pos:stop].strip()):
            dropped.append((pos, stop + 1))
        pos = stop + 1
        if pos > limit:
            break
    return _without_spans(text, dropped).rstrip("\n") if dropped else text


def _without_spans(text: str, spans: list, between: str = "") -> str:
    """``text`` without its ``spans`` ((start, end), in order, apart), ``between`` in each one's place."""
    parts, at = [], 0
    for start, end in spans:
        parts.append(text[at:start])
        at = end
    parts.append(text[at:])
    return between.join(parts)


def without_tail(text: str, cut: int = 0) -> str:
    """The text up to the first short line, past TAIL_START of it, that heads an article's tail;
    ``cut``: the characters of lines already cut from its end (without_tail_titles), counted in
    its length: the tail is read on the text as the page has it."""
    start = int(TAIL_START * (len(text) + cut))
    # only the lines that start past `start` are read: the first of them starts after the first
    # line break at or past it
    pos = text.find("\n", start) + 1
    if not pos:
        return text
    for line in text[pos:].split("\n"):
        if len(line) < TAIL_LINE_CHARS:
            # (its first word looked up first: most lines are not tried against the expression)
            first = _FIRST_WORD.match(line)
            if (first is not None and first.group().lower() in _TAIL_FIRST_WORDS and _TAIL_HEADING.match(line)
                    and f"\n{text}\n".count(f"\n{line}\n") < TAIL_HEADING_REPEATS):
                return text[:pos].rstrip("\n")
        pos += len(line) + 1
    return text


# A story's page often ends with the titles of other stories under a short heading of its own, a
# heading the tail vocabulary may not know, in any language ("Mehr aus der Region", "Hacemos
# periodismo..."): since rules 16 the last blocks of the text, when TAIL_TITLES or more of them are
# each one link of TAIL_TITLE_WORDS words or more alone in its block (a title; blocks of under
# TAIL_BETWEEN_CHARS without links between and after them: a date, a section's name), go with
# the short block that is no link before them (their heading, under TAIL_LINE_CHARS), when the
# text before holds TAIL_TITLES_REST of the text or more. Without such a heading (a listing's last titles, a
# manual's list of links at the end of a page) they stay.
TAIL_TITLES = 3
TAIL_TITLE_WORDS = 3
TAIL_BETWEEN_CHARS = 40
TAIL_TITLES_REST = 0.5


def without_tail_titles(raw: str) -> str:
    """``raw`` (a subtree's text with the scan's marks) without the titles that end it and their
    heading (TAIL_TITLES)."""
    titles, between, first, end = 0, 0, -1, len(raw.rstrip())  # (its empty last blocks skipped at once)
    # (from the end, block by block: most texts end with a block that is no title, and cost one;
    # short blocks are read between the titles, up to two for each and one more, not in a run of
    # short lines, a table's or a footer's)
    while True:
        start, block = _block_before(raw, end)
        if not block:
            break
        end = start - 1
        if (block[0] == "\x01" and block[-1] == "\x02" and block.count("\x01") == 1
                and len(block.split(None, TAIL_TITLE_WORDS - 1)) >= TAIL_TITLE_WORDS):
            titles, first = titles + 1, start
        elif len(block) >= TAIL_BETWEEN_CHARS or "\x01" in block or between > 2 * titles + 1:
            break
        else:
            between += 1
    if titles < TAIL_TITLES:
        return raw
    start, heading = _block_before(raw, first - 1)  # the block with text before the first title
    if not heading or len(heading) >= TAIL_LINE_CHARS or "\x01" in heading:
        return raw
    if _stats(raw[:start])[0] < TAIL_TITLES_REST * _stats(raw)[0]:
        return raw
    return raw[:start]


def once(text: str) -> str:
    """The text without the second and later copies of a line of REPEATED_LINE_CHARS or more
    characters: carousels, tabs and the mobile and desktop copies of one block repeat it, which a
    reader sees once."""
    lines = text.split("\n")
    if len(set(lines)) == len(lines):
        return text  # no line twice (one set of the lines, in C)
    long = [line for line in lines if len(line) >= REPEATED_LINE_CHARS]
    if len(set(long)) == len(long):
        return text  # most pages: no copy, and no second walk over the lines
    seen = set()
    out = []
    for line in lines:
        if len(line) >= REPEATED_LINE_CHARS:
            if line in seen:
                continue
            seen.add(line)
        out.append(line)
    return "\n".join(out)


_WRAPPER_DEPTH = 4  # wrappers inside wrappers looked into, at most


def _outermost(nodes: list) -> list:
    """The nodes not under another of them (``nodes`` in document order)."""
    outer = []
    for n in nodes:
        # in document order a subtree is one run: an element under an earlier outer match is
        # under the last one
        if not outer or not is_under(n, outer[-1]):
            outer.append(n)
    return outer


def drop_forms(root) -> bool:
    """Drop the short forms beside the content (see FORM_FIELDS); whether any went."""
    short = []
    for form in root.css("form"):
        if form.mem_id == root.mem_id:
            continue
        fields = 0
        for field in form.css("input"):  # (select and textarea elements are gone by now)
            if (field.attributes.get("type") or "text").lower() not in _NOT_FILLED_IN:
                fields += 1
        if fields >= FORM_FIELDS:
            chars = _stats(form.text_lexbor())[0]
            if chars < FORM_CHARS:
                short.append((form, chars))
    if not short:
        return False
    total = _stats(root.text_lexbor())[0]  # (only for a page with a short form: most have none)
    dropped = False
    for form, chars in short:
        if chars < FORM_SHARE * total:
            form.remove()
            dropped = True
    return dropped


def _without_series(outer: list, sizes: list, total: int) -> tuple[list, list]:
    """The secondary blocks without the series among them: SECONDARY_SERIES siblings or more that
    together hold SECONDARY_SERIES_SHARE of the root's text and are no thread of replies."""
    siblings: dict = {}
    for k, node in enumerate(outer):
        parent = node.parent
        if parent is not None:
            siblings.setdefault(parent.mem_id, []).append(k)
    items = set()
    for ks in siblings.values():
        if len(ks) < SECONDARY_SERIES:
            continue
        # items of a series are alike in size: a short box among them (a newsletter's) is not one
        typical = sorted(sizes[k] for k in ks)[len(ks) // 2]
        ks = [k for k in ks if 2 * sizes[k] >= typical]
        if (len(ks) >= SECONDARY_SERIES and sum(sizes[k] for k in ks) >= SECONDARY_SERIES_SHARE * total
                and replies([outer[k] for k in ks]) < THREAD_REPLIES):
            items.update(ks)
    if not items:
        return outer, sizes
    return ([n for k, n in enumerate(outer) if k not in items],
            [size for k, size in enumerate(sizes) if k not in items])


def drop_secondary(root) -> bool:
    """Drop what sits beside the content (comment threads, newsletter boxes, advertising,
    recommendations: the secondary vocabulary of class and id names) when the rest of the root
    outweighs it; a forum thread or a page of reviews, where it is the content, keeps it. A
    secondary block holding most of the root (SECONDARY_WRAPPER) is the template's wrapper of
    the content, not beside it: the secondary blocks inside it are weighed instead; a series of
    them holding much of the root (SECONDARY_SERIES) is the content's items."""
    # blocks only: a span named "comment" is a comment of highlighted code
    sections = get_ids().secondary_blocks
    found = [n for n in root.css(f"[{_MARK_SECONDARY}]") if n.mem_id != root.mem_id and n.tag_id in sections]
    if not found:
        return False
    total = _stats(root.text_lexbor())[0]
    outer = _outermost(found)
    sizes = [_stats(n.text_lexbor())[0] for n in outer]
    for _ in range(_WRAPPER_DEPTH):
        wrappers = [k for k, size in enumerate(sizes) if size >= SECONDARY_WRAPPER * total]
        if not wrappers:
            break
        wrapper = outer[wrappers[0]]
        inner = _outermost([n for n in found if n.mem_id != wrapper.mem_id and is_under(n, wrapper)])
        del outer[wrappers[0]], sizes[wrappers[0]]
        outer += inner
        sizes += [_stats(n.text_lexbor())[0] for n in inner]
    if SECONDARY_SERIES:
        outer, sizes = _without_series(outer, sizes, total)
    if not outer:
        return False
    inside = sum(sizes)
    rest = total - inside
    if rest < SECONDARY_REST_CHARS and rest < inside and (
            rest < THREAD_REST_CHARS or replies(outer) < THREAD_REPLIES):
        return False
    for n in outer:
        n.remove()
    return True
