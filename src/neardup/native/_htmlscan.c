/*
 * neardup._htmlscan: the string work of neardup.text.html's main-content extraction, in C.
 *
 * The page is parsed by lexbor (selectolax); every CSS query walks its whole tree and every
 * Python call per node costs more than lexbor's parse of the page, so what can be learnt from
 * the markup itself is learnt here, in one pass over the bytes, before the parse:
 *
 *   scan(html, cut_navigation=False, page_fingerprint=False)
 *       -> (marked, flags, title, class_names, ids, page_fingerprint)
 *       marked: the UTF-8 page to parse, with
 *         - a form feed (HTML white space, kept by the parser where it stands) before every
 *           start or end tag of a block element, a space before every table cell tag, so that
 *           the text of a subtree, cut at the form feeds, has one line per block and inline
 *           elements never separate words;
 *         - \x01 right after every <a ...> start tag and \x02 before every </a> (control
 *           characters, which the parser keeps in text, and which keep an ASCII page's text
 *           ASCII), so that the share of a subtree's text inside links is read off its text
 *           (stats) instead of a query for its links and a text() call per link;
 *         - an attribute data-neardup-name in every start tag whose class or id names
 *           navigation, data-neardup-hidden in those that are hidden (the hidden attribute, a
 *           style that hides) and data-neardup-role in those with a navigation role, so that
 *           each is one cheap query ([data-neardup-name]) instead of a list of attribute
 *           selectors (unless the page has such attributes of its own: flag OWN_MARKS); and
 *           data-neardup-consent beside data-neardup-name when a class names a box asking to
 *           accept cookies (CONSENT_AFFIX);
 *         - of the other attributes of start tags only role (the extraction reads role="main"),
 *           but on the elements whose attributes change the parse (attributes_matter); all of
 *           them when the page has attributes like the marks (OWN_MARKS: it is scanned again);
 *         - <script>, <style>, <textarea> and <iframe> elements, comments and processing
 *           instructions cut out (the extraction drops them anyway; lexbor has less to parse);
 *         - form feeds, \x01 and \x02 of the page itself replaced by spaces, and each run of
 *           white space in text that holds a line feed made one line feed (copy_text);
 *         - (cut_navigation: for "main" mode, which drops <nav> and <dialog> wherever they
 *           are) every <nav> and <dialog> element whose content provably stays inside it in
 *           the parser's tree replaced by an empty one (see cut_region): a seventh of the
 *           markup lexbor parses is navigation, parsed only to be removed.
 *       flags: a bit per element of TAGS that has a start tag in the page, and the attribute
 *         bits below (hidden, a style that hides, the navigation, main and complementary
 *         roles), so that the caller queries the tree only for what the page has, and
 *         JSON_LD when a script's start tag says "ld+json" (any case), PRODUCT_DATA when such
 *         a script names a "Product", and ASIDE_HEADING when the text of an h2-h6 opens with
 *         one of ASIDE_WORDS (below);
 *       title: the raw text of the first <title> element (entities not decoded), or None;
 *       class_names, ids: the class tokens and id values that name navigation (the vocabulary
 *         below), each once, in the order met;
 *       page_fingerprint: (None unless asked for: a few microseconds a page that dedup need not
 *         spend) the whole-page fingerprint, XXH3-64 (seed 0) of the page's visible
 *         text read off the markup in the same pass: its tokens (runs of bytes other than HTML
 *         white space) joined by one space, where text is the character data outside tags,
 *         comments, the doctype and processing instructions, and outside the elements whose
 *         content is not shown: script, style, textarea and iframe (cut), title, noembed and
 *         noframes (raw text), template and noscript (xmp and plaintext are shown); a block or
 *         table cell tag separates tokens, an inline tag does not ("a<b>b</b>" is one token);
 *         entities are not decoded (a page re-encoding "&" as "&amp;" changes it) and the
 *         hidden attribute and hiding styles are not followed (the scan builds no tree).
 *         Computed over the UTF-8 page, so a page's charset does not change it; the same for
 *         both modes and whether or not navigation is cut. So a change of the text of
 *         navigation, footer or ads changes it; one of markup, attributes, scripts or styles
 *         alone does not.
 *   lines, stats and is_utf8 are in _htmltext.c:
 *   lines(text) -> str
 *       One line per block: a form feed ends a line, other white space (str.isspace)
 *       collapses to one space, \x01 and \x02 vanish, empty lines go.
 *   stats(text) -> (chars, link_chars)
 *       The length of the text with its white space collapsed (what lines would give, a line
 *       break counted as one), and how much of it lies between \x01 and \x02.
 *       (Both read the str's code points in place, never its UTF-8.)
 *   is_utf8(data) -> bool
 *       Whether bytes decode as strict UTF-8 (then the page is scanned as it is, not decoded
 *       and encoded back).
 *
 * The tokenizer follows the HTML tokenizer's states that decide where a tag ends (quoted and
 * unquoted attribute values, comments and their short forms, raw text elements that end only at
 * their end tag); it never builds a tree. Every read is bounds-checked against the input's
 * length; scan and lines release the GIL while they work on their own copies, so threads run
 * them in parallel.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_htmltext.h"

#define XXH_INLINE_ALL
#include "_vendor/xxhash/xxhash.h" /* xxHash 0.8.2, BSD-2-Clause: _vendor/xxhash/LICENSE */

/* ------------------------------------------------------------------------------------------- */
/* elements                                                                                    */

enum {
    F_MAIN = 1 << 0, F_ARTICLE = 1 << 1, F_HEADER = 1 << 2, F_FOOTER = 1 << 3, F_H1 = 1 << 4,
    F_ASIDE = 1 << 5, F_NAV = 1 << 6, F_DIALOG = 1 << 7, F_NOSCRIPT = 1 << 8, F_TEMPLATE = 1 << 9,
    F_SVG = 1 << 10, F_OBJECT = 1 << 11, F_EMBED = 1 << 12, F_CANVAS = 1 << 13, F_MATH = 1 << 14,
    F_SELECT = 1 << 15, F_BUTTON = 1 << 16, F_FIGCAPTION = 1 << 17, F_FORM = 1 << 18, F_RUBY_TEXT = 1 << 19,
    /* attributes */
    F_HIDDEN = 1 << 20, F_STYLE_HIDDEN = 1 << 21, F_ROLE_NAV = 1 << 22, F_ROLE_MAIN = 1 << 23,
    F_ROLE_COMPLEMENTARY = 1 << 24, F_NAMED = 1 << 25, F_OWN_MARKS = 1 << 26, F_SECONDARY = 1 << 27,
    F_PRODUCT_DATA = 1 << 28, F_JSON_LD = 1 << 29, F_ASIDE_HEADING = 1 << 30,
};

/* per start tag */
enum { T_NAME = 1, T_HIDDEN = 2, T_ROLE = 4, T_SECONDARY = 8, T_CONSENT = 16 };
static const char MARK_NAME[] = " data-neardup-name";
static const char MARK_SECONDARY[] = " data-neardup-secondary";
static const char MARK_CONSENT[] = " data-neardup-consent";
static const char MARK_HIDDEN[] = " data-neardup-hidden";
static const char MARK_ROLE[] = " data-neardup-role";

typedef struct {
    const char *name;
    int flag;     /* F_* when the caller wants to know the page has one */
    char block;   /* 1: block (form feed), 2: table cell (space) */
    char raw;     /* 1: cut with its content; 2: raw text kept as it is (to its end tag) */
} tag_info;

static const tag_info TAGS[] = {
    {"a", 0, 0, 0}, {"address", 0, 1, 0}, {"article", F_ARTICLE, 1, 0}, {"aside", F_ASIDE, 1, 0},
    {"blockquote", 0, 1, 0}, {"body", 0, 1, 0}, {"br", 0, 1, 0}, {"button", F_BUTTON, 0, 0},
    {"canvas", F_CANVAS, 0, 0}, {"caption", 0, 1, 0}, {"center", 0, 1, 0}, {"dd", 0, 1, 0},
    {"details", 0, 1, 0}, {"dialog", F_DIALOG, 1, 0}, {"dir", 0, 1, 0}, {"div", 0, 1, 0},
    {"dl", 0, 1, 0}, {"dt", 0, 1, 0}, {"embed", F_EMBED, 0, 0}, {"fieldset", 0, 1, 0},
    {"figcaption", F_FIGCAPTION, 1, 0}, {"figure", 0, 1, 0}, {"footer", F_FOOTER, 1, 0}, {"form", F_FORM, 1, 0},
    {"frameset", 0, 1, 0}, {"h1", F_H1, 1, 0}, {"h2", 0, 1, 0}, {"h3", 0, 1, 0}, {"h4", 0, 1, 0},
    {"h5", 0, 1, 0}, {"h6", 0, 1, 0}, {"header", F_HEADER, 1, 0}, {"hgroup", 0, 1, 0},
    {"hr", 0, 1, 0}, {"html", 0, 1, 0}, {"iframe", 0, 0, 1}, {"legend", 0, 1, 0}, {"li", 0, 1, 0},
    {"listing", 0, 1, 0}, {"main", F_MAIN, 1, 0}, {"math", F_MATH, 0, 0}, {"menu", 0, 1, 0},
    {"nav", F_NAV, 1, 0}, {"noembed", 0, 0, 2}, {"noframes", 0, 0, 2}, {"noscript", F_NOSCRIPT, 0, 0},
    {"object", F_OBJECT, 0, 0}, {"ol", 0, 1, 0}, {"option", 0, 1, 0}, {"p", 0, 1, 0},
    {"plaintext", 0, 1, 2}, {"pre", 0, 1, 0}, {"rp", F_RUBY_TEXT, 0, 0}, {"rt", F_RUBY_TEXT, 0, 0},
    {"script", 0, 0, 1}, {"section", 0, 1, 0},
    {"select", F_SELECT, 0, 0}, {"style", 0, 0, 1}, {"summary", 0, 1, 0}, {"svg", F_SVG, 0, 0},
    {"table", 0, 1, 0}, {"tbody", 0, 1, 0}, {"td", 0, 2, 0}, {"template", F_TEMPLATE, 0, 0},
    {"textarea", 0, 0, 1}, {"tfoot", 0, 1, 0}, {"th", 0, 2, 0}, {"thead", 0, 1, 0},
    {"title", 0, 0, 2}, {"tr", 0, 1, 0}, {"ul", 0, 1, 0}, {"xmp", 0, 1, 2},
};
#define NTAGS ((int)(sizeof(TAGS) / sizeof(TAGS[0])))
#define MAX_TAG 16

/* The tags by first letter ('a'..'z') and length (1..MAX_TAG): a tag name is compared with the
 * few known tags it could be (at most GROUP of them), so that the many tags a page has that are
 * not in TAGS (span, code, em...) cost one lookup; filled once at import (index_tags), read
 * only after. */
#define GROUP 8
static signed char by_name[26][MAX_TAG + 1][GROUP];  /* indices into TAGS, -1 after the last */
static size_t tag_len[NTAGS];

/* Files entry t of a table of names (TAGS, CUT_NAMES) under its first letter and length in
 * ``index`` (cleared to -1 before the first); -1 when the name does not fit the index. */
static int index_name(signed char index[26][MAX_TAG + 1][GROUP], const char *name, int t) {
    size_t len = strlen(name);
    int c = name[0] - 'a';
    if (c < 0 || c >= 26 || len > MAX_TAG)
        return -1;
    signed char *g = index[c][len];
    int k = 0;
    while (k < GROUP && g[k] >= 0)
        k++;
    if (k == GROUP)
        return -1;
    g[k] = (signed char)t;
    return 0;
}

static int index_tags(void) {
    memset(by_name, -1, sizeof(by_name));
    for (int t = 0; t < NTAGS; t++) {
        tag_len[t] = strlen(TAGS[t].name);
        if (index_name(by_name, TAGS[t].name, t) < 0)
            return -1;
    }
    return 0;
}

static const tag_info *find_tag(const unsigned char *lower, size_t len) {
    if (len == 0 || len > MAX_TAG || lower[0] < 'a' || lower[0] > 'z')
        return NULL;
    const signed char *g = by_name[lower[0] - 'a'][len];
    for (int k = 0; k < GROUP && g[k] >= 0; k++) {
        const char *name = TAGS[g[k]].name;
        size_t x = 1;  /* the first letters agree */
        while (x < len && lower[x] == (unsigned char)name[x])
            x++;
        if (x == len)
            return &TAGS[g[k]];
    }
    return NULL;
}

/* ------------------------------------------------------------------------------------------- */
/* the navigation vocabulary of class and id names                                             */

/* A token matches when it is one of these words, or starts or ends with one ("navlinks",
 * "topnav", "leftsidebar"); a token is a run of [a-z0-9] in the lower-cased name. */
typedef struct {
    const char *w;
    size_t len;
} word;
#define W(x) {x, sizeof(x) - 1}

static const word AFFIX[] = {
    W("nav"), W("navigation"), W("menu"), W("sidebar"), W("breadcrumb"), W("breadcrumbs"), W("footer"), W("banner"), W("masthead"),
    W("topbar"), W("pager"), W("pagination"), W("related"), W("skiplink"), W("cookie"), W("share"), W("social"), W("copyright"),
    W("searchbox"), W("facet"), W("facets"), W("filter"), W("filters"), W("refinement"), W("refinements"),
};
/* These must be the whole token (delimited by anything but [a-z0-9]): a "toc..." compound often
 * lists the page's own children, which is content. */
static const word EXACT[] = {
    W("toc"), W("bar"), W("crumbs"), W("search"), W("top"), W("bottom"), W("foot"), W("skip"), W("hidden"), W("sr-only"), W("visually-hidden"),
};
/* The secondary vocabulary: what sits beside the content of a page (comment threads,
 * newsletter boxes, advertising, recommendations). Matched as AFFIX (SECONDARY_AFFIX) and EXACT
 * (SECONDARY_EXACT) words are, when no navigation word matches; the extraction drops these
 * only when the rest of the content outweighs them (a forum thread is all comments). */
static const word SECONDARY_AFFIX[] = {
    W("comment"), W("comments"), W("newsletter"), W("subscribe"), W("subscription"), W("signup"), W("promo"),
    W("advert"), W("advertisement"), W("sponsor"), W("sponsored"), W("recommended"), W("recommendations"),
    W("trending"), W("popular"), W("widget"), W("respond"), W("reviews"), W("consent"), W("gdpr"),
    W("byline"), W("authorbox"),
};
static const word SECONDARY_EXACT[] = {
    W("ad"), W("ads"), W("bio"), W("bios"),
};
/* The consent vocabulary: a box asking to accept cookies, shown over the page by its scripts as
 * a dialog. A class with one of these words (matched as AFFIX words are; "cookie" also names
 * navigation, "consent" and "gdpr" the secondary) names navigation and marks the element as
 * such a box (data-neardup-consent), which the extraction drops whatever its length; not on
 * body, html, main and article, whose classes say the state of the page ("cookies-not-set"),
 * nor by an id, often a heading's title made a name (<section id="cookies">). */
#define CONSENT_WORD 4  /* what names_navigation adds to its answer for a consent word */
static const word CONSENT_AFFIX[] = {
    W("cookie"), W("cookies"), W("consent"), W("gdpr"),
};

static inline int is_alnum_lower(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
static inline unsigned char ascii_lower(unsigned char c) { return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : c; }

#define NAFFIX (sizeof(AFFIX) / sizeof(AFFIX[0]))
#define NEXACT (sizeof(EXACT) / sizeof(EXACT[0]))
#define NSECONDARY_AFFIX (sizeof(SECONDARY_AFFIX) / sizeof(SECONDARY_AFFIX[0]))
#define NSECONDARY_EXACT (sizeof(SECONDARY_EXACT) / sizeof(SECONDARY_EXACT[0]))
#define NCONSENT_AFFIX (sizeof(CONSENT_AFFIX) / sizeof(CONSENT_AFFIX[0]))

/* Whether a (lower-cased) name has a token of the vocabulary: the same answer as the regular
 * expression (^|[^a-z0-9])AFFIX | AFFIX($|[^a-z0-9]) | EXACT in the places exact_place() allows for
 * the navigation words, (^|[^a-z0-9])EXACT($|[^a-z0-9]) for the secondary ones. Only the
 * words that start with the character at hand are compared (by_letter). */
/* The words by first letter ('a'..'z'), AFFIX words first, then EXACT ones; filled once at
 * import (index_words), read only after. */
#define MAX_WORDS_PER_LETTER 16
typedef struct {
    const word *w[MAX_WORDS_PER_LETTER];
    unsigned char exact[MAX_WORDS_PER_LETTER];   /* bit 0: the whole token; bit 1: secondary; bit 2: consent */
    int n;
} letter_words;
static letter_words by_letter[26];

/* The vocabulary's words that may end a name's run of letters and digits without starting it
 * (AFFIX and SECONDARY_AFFIX: "mainnav", "post-comments"), by last letter; filled once at import
 * with the words by first letter (index_words). */
typedef struct {
    const word *w[MAX_WORDS_PER_LETTER];
    unsigned char kind[MAX_WORDS_PER_LETTER];  /* 1 navigation, 2 secondary, 4 consent (CONSENT_WORD) */
    int n;
} ending_words;
static ending_words by_last_letter[26];

static size_t min_word_len;  /* the shortest word of the vocabulary */

static int index_words(void) {
    memset(by_letter, 0, sizeof(by_letter));
    memset(by_last_letter, 0, sizeof(by_last_letter));
    min_word_len = SIZE_MAX;
    for (int pass = 0; pass < 5; pass++) {
        static const word *const lists[5] = {AFFIX, EXACT, SECONDARY_AFFIX, SECONDARY_EXACT, CONSENT_AFFIX};
        static const size_t counts[5] = {NAFFIX, NEXACT, NSECONDARY_AFFIX, NSECONDARY_EXACT, NCONSENT_AFFIX};
        const word *list = lists[pass];
        size_t count = counts[pass];
        for (size_t k = 0; k < count; k++) {
            if (list[k].len < 2)
                return -1;  /* names_navigation compares the second letter first */
            if (list[k].len < min_word_len)
                min_word_len = list[k].len;
            letter_words *l = &by_letter[list[k].w[0] - 'a'];
            if (l->n == MAX_WORDS_PER_LETTER)
                return -1;
            l->w[l->n] = &list[k];
            l->exact[l->n] = (unsigned char)pass;  /* (CONSENT_AFFIX, pass 4: bit 2) */
            l->n++;
            if (pass == 0 || pass == 2 || pass == 4) {  /* the affix words: by last letter too */
                unsigned char last = (unsigned char)list[k].w[list[k].len - 1];
                if (last < 'a' || last > 'z')
                    return -1;
                ending_words *e = &by_last_letter[last - 'a'];
                if (e->n == MAX_WORDS_PER_LETTER)
                    return -1;
                e->w[e->n] = &list[k];
                e->kind[e->n] = (unsigned char)(pass == 0 ? 1 : pass == 2 ? 2 : CONSENT_WORD);
                e->n++;
            }
        }
    }
    return 0;
}

/* Layout properties of utility class names: "overflow-hidden", "border-top" say how an
 * element is drawn, not what it holds. */
static const word UTILITY[] = {
    W("overflow"), W("margin"), W("padding"), W("border"), W("rounded"), W("text"), W("align"), W("scroll"), W("inset"),
};

/* Whether the exact navigation word at s[i..i+len) (a whole token) names the element: it opens
 * the name ("top-bar", "search-form", "toc"), not followed by a number ("top-0"), or it ends a
 * name whose previous token is no layout property ("side-bar", not "overflow-hidden"). In the
 * middle of a name it is the value of a utility class ("margin-bottom-small"); "hidden" ending a
 * name is mostly a responsive variant ("md:hidden": hidden at one screen size, shown at others). */
static int exact_place(const unsigned char *s, size_t n, size_t i, size_t len) {
    size_t e = i + len;
    if (len == 3 && memcmp(s + i, "top", 3) == 0)
        return i == 0 && e == n;  /* "top" names a region only whole: "top-doc" is a place in the content */
    if (i == 0)
        return e == n || (e + 1 < n && s[e + 1] >= 'a' && s[e + 1] <= 'z');
    if (e != n || (len == 6 && memcmp(s + i, "hidden", 6) == 0))
        return 0;
    size_t b = i - 1;  /* the separator; the previous token is s[a..b) */
    size_t a = b;
    while (a > 0 && is_alnum_lower(s[a - 1]))
        a--;
    for (size_t k = 0; k < sizeof(UTILITY) / sizeof(UTILITY[0]); k++)
        if (b - a == UTILITY[k].len && memcmp(s + a, UTILITY[k].w, b - a) == 0)
            return 0;
    return 1;
}


/* 1: a navigation word; else 2: a secondary word; else 0; plus CONSENT_WORD when a consent word
 * is there too. A word matches where it starts a run of [a-z0-9] (any word: the whole-token ones
 * must also end at a run's end, and may span a '-': "sr-only") or ends one (the affix words). So
 * each run is looked at twice, at its first and at its last letter, not at each of its letters. */
static int names_navigation(const unsigned char *s, size_t n) {
    int found = 0;  /* 1 navigation, 2 secondary, 4 consent (bits) */
    size_t i = 0;
    while (i < n) {
        if (!is_alnum_lower(s[i])) {
            i++;
            continue;
        }
        size_t a = i, b = i;  /* the run s[a, b) */
        while (b < n && is_alnum_lower(s[b]))
            b++;
        unsigned char c = s[a];
        if (c >= 'a' && c <= 'z') {  /* every word starts with a letter */
            const letter_words *l = &by_letter[c - 'a'];
            for (int k = 0; k < l->n; k++) {
                size_t len = l->w[k]->len;  /* >= 2: the second letter tells most words apart */
                if (a + len > n || s[a + 1] != (unsigned char)l->w[k]->w[1] ||
                    memcmp(s + a + 2, l->w[k]->w + 2, len - 2) != 0)
                    continue;
                int ends = a + len == n || !is_alnum_lower(s[a + len]);
                int match = l->exact[k] == 1 ? ends && exact_place(s, n, a, len) : (l->exact[k] & 1) ? ends : 1;
                if (match)
                    found |= (l->exact[k] & 4) ? CONSENT_WORD : (l->exact[k] & 2) ? 2 : 1;
            }
        }
        c = s[b - 1];
        if (c >= 'a' && c <= 'z') {
            const ending_words *e = &by_last_letter[c - 'a'];
            for (int k = 0; k < e->n; k++) {
                size_t len = e->w[k]->len;  /* a word that starts the run was met above */
                if (len < b - a && memcmp(s + b - len, e->w[k]->w, len) == 0)
                    found |= e->kind[k];
            }
        }
        i = b;
    }
    return (found & CONSENT_WORD) | ((found & 1) ? 1 : found & 2);
}

/* The answers for the names already met on this page (a page repeats its class names a lot):
 * an open-addressing table of (offset, length, answer) keyed by a hash of the raw bytes. */
#define NAME_CACHE 2048
typedef struct {
    size_t off[NAME_CACHE];
    uint32_t len[NAME_CACHE];  /* 0: empty slot */
    unsigned char answer[NAME_CACHE];
    size_t used;
} name_cache;

/* A hash of a name for the cache: its first and last eight bytes (all of most names), multiplied
 * apart, and its length; names that share both ends and length only share a probe sequence. */
static inline size_t name_hash(const unsigned char *p, size_t n) {
    uint64_t head = 0, tail = 0;
    size_t m = n < 8 ? n : 8;
    memcpy(&head, p, m);
    memcpy(&tail, p + n - m, m);
    uint64_t h = (head * 0x9E3779B97F4A7C15ULL) ^ (tail * 0xC2B2AE3D27D4EB4FULL) ^ (uint64_t)n;
    return (size_t)(h ^ (h >> 32) ^ (h >> 47));
}

static int name_is_navigation(name_cache *cache, const unsigned char *base, size_t off, size_t n) {
    if (n < min_word_len)
        return 0;  /* holds no word (most of a page's class names: "k", "nf", "s1" of highlighted code) */
    size_t slot = name_hash(base + off, n) & (NAME_CACHE - 1);
    int cacheable = n < UINT32_MAX && cache->used < NAME_CACHE / 2;
    for (size_t probe = 0; probe < NAME_CACHE; probe++, slot = (slot + 1) & (NAME_CACHE - 1)) {
        if (cache->len[slot] == 0)
            break;
        if (cache->len[slot] == n && memcmp(base + cache->off[slot], base + off, n) == 0)
            return cache->answer[slot];
    }
    unsigned char low[256];
    size_t tl = n < sizeof(low) ? n : sizeof(low);
    for (size_t y = 0; y < tl; y++)
        low[y] = ascii_lower(base[off + y]);
    int answer = names_navigation(low, tl);
    if (cacheable && n > 0 && cache->len[slot] == 0) {
        cache->off[slot] = off;
        cache->len[slot] = (uint32_t)n;
        cache->answer[slot] = (unsigned char)answer;
        cache->used++;
    }
    return answer;
}

/* ------------------------------------------------------------------------------------------- */
/* buffers                                                                                     */

typedef struct {
    char *p;
    size_t len, cap;
    int failed;
} buf;

static int buf_reserve(buf *b, size_t more) {
    if (b->failed)
        return 0;
    if (b->len + more <= b->cap)
        return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more) {
        if (cap > ((size_t)PY_SSIZE_T_MAX) / 2) {
            b->failed = 1;
            return 0;
        }
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (!p) {
        b->failed = 1;
        return 0;
    }
    b->p = p;
    b->cap = cap;
    return 1;
}

static inline void buf_put(buf *b, const void *s, size_t n) {
    if (n && buf_reserve(b, n)) {
        memcpy(b->p + b->len, s, n);
        b->len += n;
    }
}

static inline void buf_byte(buf *b, char c) { buf_put(b, &c, 1); }

/* A list of (offset, length) spans of the input, each kept once (names repeat a lot). */
typedef struct {
    size_t (*span)[2];
    size_t len, cap;
    int failed;
} spans;

static void spans_add(spans *l, const unsigned char *base, size_t off, size_t n) {
    if (l->failed)
        return;
    for (size_t i = 0; i < l->len; i++)  /* few names match per page: a linear check is enough */
        if (l->span[i][1] == n && memcmp(base + l->span[i][0], base + off, n) == 0)
            return;
    if (l->len == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        void *p = realloc(l->span, cap * sizeof(*l->span));
        if (!p) {
            l->failed = 1;
            return;
        }
        l->span = p;
        l->cap = cap;
    }
    l->span[l->len][0] = off;
    l->span[l->len][1] = n;
    l->len++;
}

/* ------------------------------------------------------------------------------------------- */
/* the scan                                                                                    */

/* Character classes of the tag reader, one table lookup instead of up to eight comparisons. */
enum { C_SP = 1, C_SL = 2, C_GT = 4, C_EQ = 8 };
static const unsigned char CCLASS[256] = {
    ['\t'] = C_SP, ['\n'] = C_SP, ['\f'] = C_SP, ['\r'] = C_SP, [' '] = C_SP, ['/'] = C_SL, ['>'] = C_GT,
    ['='] = C_EQ};
static inline int is_html_space(unsigned char c) { return CCLASS[c] & C_SP; }
static inline int is_alpha(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* Text copied as it is, but for the page's own form feeds, \x01 and \x02 (the marks), when
 * it has any (``clean``: it has none, as almost every page). */
static void copy_plain(buf *out, const unsigned char *s, size_t from, size_t to, int clean) {
    if (clean) {
        buf_put(out, s + from, to - from);
        return;
    }
    size_t run = from;
    for (size_t i = from; i < to; i++) {
        unsigned char c = s[i];
        if (c <= 0x0c && (c == '\f' || c == 0x01 || c == 0x02)) {
            buf_put(out, s + run, i - run);
            buf_byte(out, ' ');
            run = i + 1;
        }
    }
    buf_put(out, s + run, to - run);
}

/* Text copied with each run of HTML white space that holds a line feed and more (a line break
 * and the next line's indentation) made one line feed, else as copy_plain copies it. The
 * extraction reads white space only as a separator (lines and stats collapse a run to one), so
 * its texts are the same; lexbor and the extraction's passes read a third less of a typical
 * page's text. Raw text elements are copied as they are, not by this. */
static void copy_text(buf *out, const unsigned char *s, size_t from, size_t to, int clean) {
    size_t run = from;  /* s[run, ...) is still to be copied */
    size_t i = from;
    while (i < to) {
        const unsigned char *lf = memchr(s + i, '\n', to - i);
        if (!lf)
            break;
        size_t a = (size_t)(lf - s), b = a + 1;  /* the white space run around it: s[a, b) */
        while (a > run && is_html_space(s[a - 1]))
            a--;
        while (b < to && is_html_space(s[b]))
            b++;
        if (b - a >= 2) {
            copy_plain(out, s, run, a, clean);
            buf_byte(out, '\n');
            run = b;
        }
        i = b;
    }
    copy_plain(out, s, run, to, clean);
}

/* Case-insensitive search for "</name" followed by white space, '/' or '>' (or the end), from
 * ``from``; returns its offset or n. */
static size_t find_end_tag(const unsigned char *s, size_t n, size_t from, const char *name) {
    size_t l = strlen(name);
    for (size_t i = from; i + 2 + l <= n; i++) {
        const unsigned char *lt = memchr(s + i, '<', n - 2 - l - i + 1);
        if (!lt)
            break;
        i = (size_t)(lt - s);
        if (s[i + 1] != '/')
            continue;
        size_t k = 0;
        while (k < l && ascii_lower(s[i + 2 + k]) == (unsigned char)name[k])
            k++;
        if (k < l)
            continue;
        size_t j = i + 2 + l;
        if (j == n || is_html_space(s[j]) || s[j] == '/' || s[j] == '>')
            return i;
    }
    return n;
}

#define MAX_KEPT 4

typedef struct {
    unsigned char name[MAX_TAG];
    size_t name_len;  /* the name's full length (may exceed MAX_TAG: then no known tag) */
    size_t name_end;  /* just past the name */
    size_t end;       /* just past the '>' (or n) */
    int bits;         /* T_* of a start tag */
    int closed;       /* ended by '>' (not by the end of the page) */
    int self_closing; /* "/>" */
    int n_kept;       /* the attributes that stay (role), or -1: too many to list, all stay */
    size_t kept[MAX_KEPT][2];
} tag;

static int contains(const unsigned char *s, size_t n, const char *needle) {
    size_t l = strlen(needle);
    for (size_t i = 0; i + l <= n; i++)
        if (memcmp(s + i, needle, l) == 0)
            return 1;
    return 0;
}

/* contains() with the ASCII letters of s in any case (needle: lower case). */
static int contains_nocase(const unsigned char *s, size_t n, const char *needle) {
    size_t l = strlen(needle);
    for (size_t i = 0; i + l <= n; i++) {
        size_t j = 0;
        while (j < l && ascii_lower(s[i + j]) == (unsigned char)needle[j])
            j++;
        if (j == l)
            return 1;
    }
    return 0;
}

typedef struct {
    int flags;
    spans classes, ids;
    name_cache *names;
} found;

#define MAX_ATTR 24

/* Reads a tag from s[i] == '<' (start tag: s[i+1] a letter; end tag: "</" and a letter), its
 * attributes (recorded in ``f`` and ``t->bits`` for start tags) and where it ends. */
/* Whether a start tag's classes say the state of the whole page rather than of a box in it
 * (body, html, main, article: "cookies-not-set"), so that a consent word does not hide it. */
static int names_page_state(const tag *t) {
    size_t l = t->name_len;
    return (l == 4 && (memcmp(t->name, "body", 4) == 0 || memcmp(t->name, "html", 4) == 0 ||
                       memcmp(t->name, "main", 4) == 0)) ||
           (l == 7 && memcmp(t->name, "article", 7) == 0);
}

static void read_tag(const unsigned char *s, size_t n, size_t i, int is_end, tag *t, found *f) {
    size_t j = i + 1 + (size_t)is_end;
    size_t start = j;
    t->bits = 0;
    t->closed = t->self_closing = 0;
    t->n_kept = 0;
    while (j < n && !(CCLASS[s[j]] & (C_SP | C_SL | C_GT)))
        j++;
    t->name_len = j - start;
    t->name_end = j;
    for (size_t k = 0; k < t->name_len && k < MAX_TAG; k++)
        t->name[k] = ascii_lower(s[start + k]);
    while (j < n) {
        int slash = 0;  /* a '/' right before the '>': the tokenizer's self-closing flag */
        while (j < n && (CCLASS[s[j]] & (C_SP | C_SL)))
            slash = s[j++] == '/';
        if (j >= n)
            break;
        if (s[j] == '>') {
            j++;
            t->end = j;
            t->closed = 1;
            t->self_closing = slash;
            return;
        }
        size_t an = j;
        j++;  /* an attribute name's first character may be '=' */
        while (j < n && !(CCLASS[s[j]] & (C_SP | C_SL | C_GT | C_EQ)))
            j++;
        size_t an_len = j - an;
        size_t k = j;
        while (k < n && is_html_space(s[k]))
            k++;
        size_t v = 0, v_len = 0;
        int has_value = 0;
        if (k < n && s[k] == '=') {
            k++;
            while (k < n && is_html_space(s[k]))
                k++;
            if (k < n && (s[k] == '"' || s[k] == '\'')) {
                unsigned char q = s[k];
                v = k + 1;
                const unsigned char *e = memchr(s + v, q, n - v);
                size_t ve = e ? (size_t)(e - s) : n;
                v_len = ve - v;
                j = ve < n ? ve + 1 : n;
            } else {
                v = k;
                while (k < n && !(CCLASS[s[k]] & (C_SP | C_GT)))
                    k++;
                v_len = k - v;
                j = k;
            }
            has_value = 1;
        }
        if (is_end || an_len > MAX_ATTR)
            continue;
        /* only the names read below: id (2), role (4), class and style (5), hidden (6), and the
         * data-neardup- ones (more than 13) */
        if (an_len != 2 && an_len != 4 && an_len != 5 && an_len != 6 && an_len <= 13)
            continue;
        unsigned char a[MAX_ATTR];
        for (size_t x = 0; x < an_len; x++)
            a[x] = ascii_lower(s[an + x]);
        if (an_len == 5 && memcmp(a, "class", 5) == 0 && has_value) {
            size_t x = v, e = v + v_len;
            while (x < e) {  /* class tokens: runs of non-space */
                while (x < e && is_html_space(s[x]))
                    x++;
                size_t ts = x;
                while (x < e && !is_html_space(s[x]))
                    x++;
                int kind = x > ts ? name_is_navigation(f->names, s, ts, x - ts) : 0;
                if ((kind & CONSENT_WORD) && !names_page_state(t)) {  /* a consent box */
                    spans_add(&f->classes, s, ts, x - ts);
                    t->bits |= T_NAME | T_CONSENT;
                    continue;
                }
                kind &= ~CONSENT_WORD;
                if (kind == 1) {
                    spans_add(&f->classes, s, ts, x - ts);
                    t->bits |= T_NAME;
                } else if (kind == 2) {
                    t->bits |= T_SECONDARY;
                }
            }
        } else if (an_len == 2 && a[0] == 'i' && a[1] == 'd' && has_value && v_len) {
            int kind = name_is_navigation(f->names, s, v, v_len) & ~CONSENT_WORD;
            if (kind == 1) {
                spans_add(&f->ids, s, v, v_len);
                t->bits |= T_NAME;
            } else if (kind == 2) {
                t->bits |= T_SECONDARY;
            }
        } else if (an_len == 6 && memcmp(a, "hidden", 6) == 0) {
            f->flags |= F_HIDDEN;
            t->bits |= T_HIDDEN;
        } else if (an_len == 5 && memcmp(a, "style", 5) == 0 && has_value) {
            /* as the CSS attribute selectors they replace match: case-sensitive substrings */
            if (contains(s + v, v_len, "display:none") || contains(s + v, v_len, "display: none") ||
                contains(s + v, v_len, "visibility:hidden")) {
                f->flags |= F_STYLE_HIDDEN;
                t->bits |= T_HIDDEN;
            }
        } else if (an_len == 4 && memcmp(a, "role", 4) == 0 && has_value) {
            if (t->n_kept >= 0 && t->n_kept < MAX_KEPT) {  /* the extraction reads role="main" */
                t->kept[t->n_kept][0] = an;
                t->kept[t->n_kept][1] = j;
                t->n_kept++;
            } else {
                t->n_kept = -1;
            }
            static const char *const nav_roles[] = {"navigation", "banner", "contentinfo", "search",
                                                    "menu", "menubar", "toolbar", "tablist"};
            for (size_t r = 0; r < sizeof(nav_roles) / sizeof(nav_roles[0]); r++)
                if (v_len == strlen(nav_roles[r]) && memcmp(s + v, nav_roles[r], v_len) == 0) {
                    f->flags |= F_ROLE_NAV;
                    t->bits |= T_ROLE;
                }
            if (v_len == 4 && memcmp(s + v, "main", 4) == 0)
                f->flags |= F_ROLE_MAIN;
            if (v_len == 13 && memcmp(s + v, "complementary", 13) == 0)
                f->flags |= F_ROLE_COMPLEMENTARY;
        } else if (an_len > 13 && memcmp(a, "data-neardup-", 13) == 0) {
            f->flags |= F_OWN_MARKS;  /* the page has attributes like the marks: they cannot be told apart */
        }
    }
    t->end = n;  /* a tag cut by the end of the page */
}

static const unsigned char LINK_OPEN[1] = {0x01};
static const unsigned char LINK_CLOSE[1] = {0x02};

typedef struct {
    size_t title_at, title_len;  /* title_at == SIZE_MAX: none */
} title_span;

/* The page's visible text, as the whole-page fingerprint covers it (see page_fingerprint in the
 * header comment): its tokens, one space between two of them. */
typedef struct {
    buf text;
    int apart;     /* white space or a block boundary since the last token */
    int templates; /* <template> elements open (their content is inert) */
    int noscript;  /* inside <noscript> (shown only without scripts) */
} visible;

static void visible_add(visible *v, const unsigned char *s, size_t from, size_t to) {
    if (!v || v->templates || v->noscript)
        return;
    size_t i = from;
    while (i < to) {
        while (i < to && is_html_space(s[i])) {
            v->apart = 1;
            i++;
        }
        if (i >= to)
            break;
        /* tokens each followed by one space, as most text is, copied in one go */
        size_t j = i;
        while (j < to) {
            if (!is_html_space(s[j]))
                j++;
            else if (s[j] == ' ' && j + 1 < to && !is_html_space(s[j + 1]))
                j += 2;
            else
                break;
        }
        if (v->apart && v->text.len)
            buf_byte(&v->text, ' ');
        v->apart = 0;
        buf_put(&v->text, s + i, j - i);
        i = j;
    }
}

/* A known tag met: a block or cell boundary separates tokens (inline tags never do), and
 * <template> and <noscript> hide what they hold. */
static void visible_tag(visible *v, const tag_info *info, int is_end) {
    if (!v)
        return;
    if (info->block)
        v->apart = 1;
    if (info->flag == F_TEMPLATE) {
        if (!is_end)
            v->templates++;
        else if (v->templates > 0)
            v->templates--;
    } else if (info->flag == F_NOSCRIPT) {
        v->noscript = !is_end;
    }
}

/* Start tags whose attributes change how the page is parsed (an <input type=hidden> in a table,
 * a <font color> in SVG, the encoding of MathML's <annotation-xml>, a declarative shadow root):
 * they keep all of theirs. */
static int attributes_matter(const tag *t) {
    switch (t->name_len) {  /* by length first: one comparison for most tags */
    case 4:
        return memcmp(t->name, "font", 4) == 0;
    case 5:
        return memcmp(t->name, "input", 5) == 0;
    case 8:
        return memcmp(t->name, "template", 8) == 0;
    case 14:
        return memcmp(t->name, "annotation-xml", 14) == 0;
    default:
        return 0;
    }
}

/* A start tag as it goes to the parser: its name, the marks, and (``strip``) of its attributes
 * only those the extraction reads (role), or (not ``strip``) all of them. Attributes are most
 * of the markup (links, classes), and each one costs lexbor an allocation and the CSS queries a
 * comparison; none of the others changes the text. */
static void put_start_tag(buf *out, const unsigned char *s, size_t at, const tag *t, int strip, found *f) {
    buf_put(out, s + at, t->name_end - at);
    if (t->bits & T_NAME) {
        buf_put(out, MARK_NAME, sizeof(MARK_NAME) - 1);
        f->flags |= F_NAMED;
    }
    if (t->bits & T_HIDDEN)
        buf_put(out, MARK_HIDDEN, sizeof(MARK_HIDDEN) - 1);
    if (t->bits & T_ROLE)
        buf_put(out, MARK_ROLE, sizeof(MARK_ROLE) - 1);
    if (t->bits & T_CONSENT)
        buf_put(out, MARK_CONSENT, sizeof(MARK_CONSENT) - 1);
    if ((t->bits & (T_SECONDARY | T_NAME)) == T_SECONDARY) {
        buf_put(out, MARK_SECONDARY, sizeof(MARK_SECONDARY) - 1);
        f->flags |= F_SECONDARY;
    }
    if (!strip || t->n_kept < 0 || attributes_matter(t)) {
        buf_put(out, s + t->name_end, t->end - t->name_end);
        return;
    }
    for (int k = 0; k < t->n_kept; k++) {
        buf_byte(out, ' ');
        buf_put(out, s + t->kept[k][0], t->kept[k][1] - t->kept[k][0]);
    }
    if (t->closed)  /* a tag cut by the end of the page is dropped by the parser, as it was */
        buf_put(out, t->self_closing ? "/>" : ">", t->self_closing ? 2 : 1);
}

/* ------------------------------------------------------------------------------------------- */
/* navigation cut out before the parse (cut_navigation)                                       */

/* A <nav> or <dialog> element is replaced by an empty one ("\f<nav></nav>") when what lies
 * between its start tag and its end tag provably ends up inside it, and nothing of it outside,
 * in the HTML5 tree construction; the caller removes the element anyway, so its text is the
 * same. Proven by a stack of the element names opened inside: every end tag must close one of
 * them (all above it being elements whose end tags are implied: li, p, dd, dt, option...), so
 * that no end tag closes an element opened outside (which would close the nav too), and no
 * element is left open at its end tag (a formatting element left open would be re-opened after
 * it); tags that change the insertion mode or scope (tables, forms, select, template, math,
 * body...) give up, and so do a <button> inside a <button> (which closes the outer one) and a
 * <form> inside a form or while one may be open outside (the parser ignores it); an
 * <svg> inside is proven by the svg cut below, the candidate waiting for its end tag, and gives
 * the candidate up with it. Not started inside an <a>, a <button> or in svg/math/template (whose
 * rules differ), nor for an element the page does not close. When a proof fails the element is
 * kept as it was, so the cut never changes a text; the flags met inside a cut element are
 * forgotten (the queries they would ask find nothing). */
#define CUT_DEPTH 64
typedef struct {
    int active;            /* inside a candidate element */
    size_t out_at;         /* out->len at its start */
    int flags_at;          /* f->flags at its start */
    int root_flag;         /* F_NAV or F_DIALOG */
    int depth;             /* names[0] is the element itself */
    unsigned char names[CUT_DEPTH][MAX_TAG];
    unsigned char lens[CUT_DEPTH];
    unsigned char kinds[CUT_DEPTH];  /* K_* */
    int in_a;              /* outside candidates: an <a> is open */
    int in_button;         /* outside candidates: a <button> is open */
    int in_form;           /* outside candidates: a <form> may be open (the parser's form pointer) */
    int foreign;           /* outside candidates: svg, math or template elements open */
} cut_region;

/* What a tag name is to the cut: one lookup by first letter and length (as find_tag), filled
 * once at import (index_cut), read only after. */
enum { K_OTHER = 0, K_GIVE_UP, K_FOREIGN, K_VOID, K_IMPLIED, K_A, K_BUTTON, K_FORM };
typedef struct {
    const char *name;
    unsigned char kind;
} cut_name;
static const cut_name CUT_NAMES[] = {
    {"table", K_GIVE_UP}, {"caption", K_GIVE_UP}, {"colgroup", K_GIVE_UP}, {"col", K_GIVE_UP},
    {"tbody", K_GIVE_UP}, {"thead", K_GIVE_UP}, {"tfoot", K_GIVE_UP}, {"tr", K_GIVE_UP}, {"td", K_GIVE_UP},
    {"th", K_GIVE_UP}, {"applet", K_GIVE_UP}, {"object", K_GIVE_UP}, {"marquee", K_GIVE_UP},
    {"select", K_GIVE_UP}, {"button", K_BUTTON}, {"body", K_GIVE_UP}, {"html", K_GIVE_UP},
    {"head", K_GIVE_UP}, {"frameset", K_GIVE_UP}, {"frame", K_GIVE_UP}, {"plaintext", K_GIVE_UP},
    {"form", K_FORM}, {"template", K_FOREIGN}, {"svg", K_FOREIGN}, {"math", K_FOREIGN},
    {"area", K_VOID}, {"base", K_VOID}, {"basefont", K_VOID}, {"bgsound", K_VOID}, {"br", K_VOID},
    {"embed", K_VOID}, {"hr", K_VOID}, {"img", K_VOID}, {"image", K_VOID}, {"input", K_VOID},
    {"keygen", K_VOID}, {"link", K_VOID}, {"meta", K_VOID}, {"param", K_VOID}, {"source", K_VOID},
    {"track", K_VOID}, {"wbr", K_VOID}, {"li", K_IMPLIED}, {"p", K_IMPLIED}, {"dd", K_IMPLIED},
    {"dt", K_IMPLIED}, {"option", K_IMPLIED}, {"optgroup", K_IMPLIED}, {"rb", K_IMPLIED}, {"rp", K_IMPLIED},
    {"rt", K_IMPLIED}, {"rtc", K_IMPLIED}, {"a", K_A},
};
#define NCUT ((int)(sizeof(CUT_NAMES) / sizeof(CUT_NAMES[0])))
static signed char cut_by_name[26][MAX_TAG + 1][GROUP];

static int index_cut(void) {
    memset(cut_by_name, -1, sizeof(cut_by_name));
    for (int t = 0; t < NCUT; t++)
        if (index_name(cut_by_name, CUT_NAMES[t].name, t) < 0)
            return -1;
    return 0;
}

/* The K_* of a lower-cased tag name (the first MAX_TAG bytes of it: longer names are none). */
static int cut_kind(const unsigned char *name, size_t len) {
    if (len == 0 || len > MAX_TAG || name[0] < 'a' || name[0] > 'z')
        return K_OTHER;
    const signed char *g = cut_by_name[name[0] - 'a'][len];
    for (int k = 0; k < GROUP && g[k] >= 0; k++)
        if (memcmp(name, CUT_NAMES[g[k]].name, len) == 0)
            return CUT_NAMES[g[k]].kind;
    return K_OTHER;
}

/* Outside a candidate: a tag of the page (it may start one). */
static void cut_outside(cut_region *c, const tag *t, const tag_info *info, int is_end, size_t out_len, int flags) {
    if (!info)  /* a, svg, math, template, nav and dialog are all in TAGS */
        return;
    if (info->name[0] == 'a' && info->name[1] == 0) {
        c->in_a = !is_end;
        return;
    }
    if (info->flag == F_BUTTON) {  /* (a button start tag closes an open button: one at most) */
        c->in_button = !is_end;
        return;
    }
    if (strcmp(info->name, "form") == 0) {  /* (in a template an end tag leaves the pointer) */
        if (!is_end)
            c->in_form = 1;
        else if (!c->foreign)
            c->in_form = 0;
        return;
    }
    if (info->flag & (F_SVG | F_MATH | F_TEMPLATE)) {
        if (!is_end && !(t->self_closing && info->flag != F_TEMPLATE))  /* "<svg/>" is closed */
            c->foreign++;
        else if (c->foreign > 0)
            c->foreign--;
        return;
    }
    if (is_end || !(info->flag & (F_NAV | F_DIALOG)) || c->in_a || c->in_button || c->foreign)
        return;
    c->active = 1;
    c->out_at = out_len;
    c->flags_at = flags;
    c->root_flag = info->flag;
    c->depth = 1;
    memcpy(c->names[0], t->name, t->name_len);
    c->lens[0] = (unsigned char)t->name_len;
    c->kinds[0] = K_OTHER;
}

/* Inside a candidate: 0 go on, 1 its end tag (cut it), -1 give up (keep it; the tag is then
 * read as outside). */
static int cut_inside(cut_region *c, const tag *t, int kind, int is_end) {
    if (kind == K_FOREIGN && !is_end && t->self_closing && t->name[0] != 't')
        return 0;  /* "<svg/>", "<math/>": closed (a template's "/>" is not) */
    if (t->name_len > MAX_TAG || kind == K_GIVE_UP || kind == K_FOREIGN)
        return -1;
    if (!is_end) {
        if (kind == K_VOID)
            return 0;
        if (c->depth == CUT_DEPTH)
            return -1;
        if (kind == K_BUTTON || kind == K_FORM) {
            /* a button inside a button closes the outer one; a form inside a form is ignored */
            if (kind == K_FORM && c->in_form)
                return -1;
            for (int x = 1; x < c->depth; x++)
                if (c->kinds[x] == kind)
                    return -1;
        }
        memcpy(c->names[c->depth], t->name, t->name_len);
        c->lens[c->depth] = (unsigned char)t->name_len;
        c->kinds[c->depth] = (unsigned char)kind;
        c->depth++;
        return 0;
    }
    int k = c->depth - 1;
    while (k >= 0 && !(c->lens[k] == t->name_len && memcmp(c->names[k], t->name, t->name_len) == 0))
        k--;
    if (k < 0)
        return -1;  /* closes an element opened outside, or none */
    for (int x = k + 1; x < c->depth; x++)
        if (c->kinds[x] != K_IMPLIED)
            return -1;  /* left open (a formatting element would be re-opened after it) */
    c->depth = k;
    return k == 0 ? 1 : 0;
}

/* ------------------------------------------------------------------------------------------- */
/* svg cut out before the parse (cut_navigation)                                              */

/* An <svg> element (icons, logos, drawings: a tenth of the markup of many pages, and dropped by
 * the extraction wherever it is) is cut out of the marked page, with its content, when its
 * content provably stays inside it in the parser's tree: in foreign content every start tag
 * opens an element (there are no void elements; "/>" closes one) and every end tag closes the
 * nearest open element of its name, except the "breakout" tags of the HTML5 tree construction
 * (b, div, p, table... and font), and </br> and </p>, which leave the svg: those give up. An end
 * tag of no element opened inside it gives up too (it would close elements outside), and so do
 * what the scan reads otherwise than the parser does in foreign content: a CDATA section, a
 * script, textarea or iframe, and a style, title, xmp, noembed or noframes whose content holds
 * a '<' (the parser reads tags there) or is not closed. Started only outside svg, math and
 * template. The scan reads the element as it would otherwise (the same flags while in it, the
 * same title and page fingerprint) and forgets what it wrote of it at its end tag; when a proof
 * fails, the element stays as it was, so the cut never changes a text. */
typedef struct {
    int pending;       /* inside a candidate */
    size_t out_at;     /* out->len at its start tag */
    int flags_at;      /* f->flags before its start tag */
    int depth;         /* names[0] is the svg itself */
    unsigned char names[CUT_DEPTH][MAX_TAG];
    unsigned char lens[CUT_DEPTH];
    int in_region;     /* inside a candidate of the navigation cut, which waits for its end */
} svg_cut;

static const char *const BREAKOUT_NAMES[] = {
    "b", "big", "blockquote", "body", "br", "center", "code", "dd", "div", "dl", "dt", "em", "embed", "font",
    "h1", "h2", "h3", "h4", "h5", "h6", "head", "hr", "i", "img", "li", "listing", "menu", "meta", "nobr", "ol",
    "p", "pre", "ruby", "s", "small", "span", "strike", "strong", "sub", "sup", "table", "tt", "u", "ul", "var",
};
#define NBREAKOUT ((int)(sizeof(BREAKOUT_NAMES) / sizeof(BREAKOUT_NAMES[0])))
static signed char breakout_by_name[26][MAX_TAG + 1][GROUP];

static int index_breakout(void) {
    memset(breakout_by_name, -1, sizeof(breakout_by_name));
    for (int t = 0; t < NBREAKOUT; t++)
        if (index_name(breakout_by_name, BREAKOUT_NAMES[t], t) < 0)
            return -1;
    return 0;
}

static int is_breakout(const unsigned char *name, size_t len) {
    if (len == 0 || len > MAX_TAG || name[0] < 'a' || name[0] > 'z')
        return 0;
    const signed char *g = breakout_by_name[name[0] - 'a'][len];
    for (int k = 0; k < GROUP && g[k] >= 0; k++)
        if (memcmp(name, BREAKOUT_NAMES[g[k]], len) == 0)
            return 1;
    return 0;
}

/* A tag inside a candidate: 0 go on, 1 its end tag (cut it), -1 give up. */
static int svg_inside(svg_cut *c, const tag *t, int is_end) {
    if (!is_end) {
        if (is_breakout(t->name, t->name_len))
            return -1;
        if (t->self_closing)
            return 0;
        if (t->name_len > MAX_TAG || c->depth == CUT_DEPTH)
            return -1;
        memcpy(c->names[c->depth], t->name, t->name_len);
        c->lens[c->depth] = (unsigned char)t->name_len;
        c->depth++;
        return 0;
    }
    if ((t->name_len == 1 && t->name[0] == 'p') || (t->name_len == 2 && t->name[0] == 'b' && t->name[1] == 'r'))
        return -1;
    int k = c->depth - 1;
    while (k >= 0 && !(c->lens[k] == t->name_len && memcmp(c->names[k], t->name, t->name_len) == 0))
        k--;
    if (k < 0)
        return -1;
    c->depth = k;
    return k == 0 ? 1 : 0;
}

/* Whether a raw text element inside a candidate, its content s[from, to) (to == n: not
 * closed), reads as the parser reads it in foreign content. */
static int svg_raw_ok(const tag_info *info, const unsigned char *s, size_t n, size_t from, size_t to) {
    if (to >= n || (info->raw == 1 && strcmp(info->name, "style") != 0))
        return 0;  /* not closed; script, textarea, iframe */
    return !memchr(s + from, '<', to - from);
}

/* A candidate given up: its tags are read as outside ones from the next on; an <a>, a <button>
 * or a <form> opened inside it is still open. */
static void region_give_up(cut_region *c) {
    c->active = 0;
    for (int x = 1; x < c->depth; x++) {
        if (c->kinds[x] == K_A)
            c->in_a = 1;
        else if (c->kinds[x] == K_BUTTON)
            c->in_button = 1;
        else if (c->kinds[x] == K_FORM)
            c->in_form = 1;
    }
}

/* An svg given up; a candidate of the navigation cut around it, whose proof needed the svg's,
 * is given up too, the svg and the foreign elements open in it counted as open outside. */
static void svg_give_up(svg_cut *g, cut_region *c) {
    g->pending = 0;
    if (!g->in_region)
        return;
    region_give_up(c);
    c->foreign = 0;
    for (int x = 0; x < g->depth; x++)
        if (cut_kind(g->names[x], g->lens[x]) == K_FOREIGN)
            c->foreign++;
}

/* The words that open a heading of what a page recommends beside its content ("Related posts",
 * "Customers also viewed", "More from ..."): the extraction drops the block such a heading opens
 * (text/html_rules.py, drop_headed_asides), and looks for it only on a page where the scan saw
 * one. The same list is html_scan.ASIDE_WORDS (a test compares them). */
static const char *const ASIDE_WORDS[] = {
    "related", "you may also like", "you might also like", "you may like", "you might like", "recommended",
    "also viewed", "also bought", "also purchased", "also like", "similar items", "similar products",
    "similar posts", "similar articles", "similar stories", "similar threads", "similar topics",
    "similar questions", "more from", "more like this", "more to explore", "more to consider",
    "customers also", "people also", "frequently bought", "popular", "trending", "most read", "most popular",
    "read next", "up next", "don't miss", "more stories", "more articles", "more topics", "more posts",
    "more threads", "more videos", "more news", "other topics", "other posts", "other threads",
    "other articles", "other stories", "other products", "recently viewed", "sponsored", "suggested topics",
    "suggested posts", "suggested threads", "suggested articles", "suggested products",
    /* German, French, Spanish, Italian, Portuguese, Dutch, Polish */
    "mehr zum thema", "das könnte sie auch interessieren", "das könnte dich auch interessieren",
    "weitere artikel", "weitere beiträge", "weitere nachrichten", "ähnliche artikel", "ähnliche beiträge",
    "verwandte artikel", "verwandte beiträge", "empfohlene artikel", "empfohlene beiträge", "meistgelesen",
    "meist gelesen", "beliebte beiträge", "auch interessant", "zum weiterlesen", "sur le même sujet",
    "articles similaires", "articles liés", "les plus lus", "vous aimerez aussi", "vous aimerez peut-être",
    "noticias relacionadas", "artículos relacionados", "notas relacionadas", "temas relacionados",
    "te puede interesar", "le puede interesar", "también te puede interesar", "lo más leído", "más noticias",
    "articoli correlati", "potrebbe interessarti", "i più letti", "notícias relacionadas", "mais lidas",
    "gerelateerde artikelen", "meest gelezen", "podobne artykuły", "najczęściej czytane",
};
#define NASIDE_WORDS (sizeof(ASIDE_WORDS) / sizeof(ASIDE_WORDS[0]))

/* The byte s[from + j] in lower case: an ASCII letter, or the second byte of a capital letter of
 * Latin-1 (U+00C0..U+00DE but U+00D7, UTF-8 0xC3 0x80..0x9E: "Ä" -> "ä" is 0x84 -> 0xA4) when the
 * byte before it, from the same word, is 0xC3. */
static inline unsigned char latin_lower(const unsigned char *s, size_t from, size_t j) {
    unsigned char c = s[from + j];
    if (j > 0 && s[from + j - 1] == 0xC3 && c >= 0x80 && c <= 0x9E && c != 0x97)
        return (unsigned char)(c + 0x20);
    return ascii_lower(c);
}

/* 1 when the text s[from, to) opens, after HTML white space, with one of ASIDE_WORDS (ASCII
 * letters and Latin-1 capitals in any case) that ends the text or is followed by a byte other than an ASCII letter,
 * digit or '_' and other than a byte of a multi-byte character; 0 when not; -1 when the text
 * is all white space (the heading's text is still to come, after a tag). */
static size_t aside_len[NASIDE_WORDS];  /* the words' lengths, filled once at import (index_aside) */

static int index_aside(void) {
    for (size_t k = 0; k < NASIDE_WORDS; k++)
        aside_len[k] = strlen(ASIDE_WORDS[k]);
    return 0;
}

static int opens_aside(const unsigned char *s, size_t from, size_t to) {
    while (from < to && is_html_space(s[from]))
        from++;
    if (from == to)
        return -1;
    unsigned char first = ascii_lower(s[from]);  /* (a Latin-1 capital's first byte is its small one's) */
    for (size_t k = 0; k < NASIDE_WORDS; k++) {
        const char *w = ASIDE_WORDS[k];
        size_t l = aside_len[k], j = 1;
        if ((unsigned char)w[0] != first || to - from < l)
            continue;
        while (j < l && latin_lower(s, from, j) == (unsigned char)w[j])
            j++;
        if (j < l)
            continue;
        if (from + l == to)
            return 1;
        unsigned char c = s[from + l];
        if (!(is_alnum_lower(ascii_lower(c)) || c == '_' || c >= 0x80))
            return 1;
    }
    return 0;
}

static void scan_page(const unsigned char *s, size_t n, buf *out, found *f, title_span *title, visible *v, int strip,
                      int cut) {
    size_t i = 0;
    cut_region region;
    region.active = region.in_a = region.in_button = region.in_form = region.foreign = 0;
    svg_cut svg;
    svg.pending = 0;
    int clean = !memchr(s, '\f', n) && !memchr(s, 0x01, n) && !memchr(s, 0x02, n);
    int in_noscript = 0;
    int heading_open = 0;  /* after an h2-h6 start tag, before its first text */
    title->title_at = SIZE_MAX;
    title->title_len = 0;
    while (i < n) {
        const unsigned char *lt = memchr(s + i, '<', n - i);
        size_t at = lt ? (size_t)(lt - s) : n;
        copy_text(out, s, i, at, clean);
        visible_add(v, s, i, at);
        if (heading_open && at > i) {
            int r = opens_aside(s, i, at);
            if (r >= 0) {
                if (r)
                    f->flags |= F_ASIDE_HEADING;
                heading_open = 0;
            }
        }
        if (at >= n)
            break;
        i = at;
        unsigned char c1 = at + 1 < n ? s[at + 1] : 0;
        if (is_alpha(c1) || (c1 == '/' && at + 2 < n && is_alpha(s[at + 2]))) {
            int is_end = c1 == '/';
            int flags_before = f->flags;  /* (an svg cut forgets its start tag's attributes too) */
            tag t;
            read_tag(s, n, at, is_end, &t, f);
            const tag_info *info = t.name_len <= MAX_TAG ? find_tag(t.name, t.name_len) : NULL;
            if (info && !is_end && info->raw == 1) {  /* cut, with its content and end tag */
                size_t e = find_end_tag(s, n, t.end, info->name);
                int closed = e < n;
                if (!closed && in_noscript)
                    /* never closed inside <noscript>: a browser running scripts reads a noscript's
                     * content as text up to </noscript>, where the element ends too (a tag
                     * manager's "<iframe ... />" would otherwise swallow the rest of the page) */
                    e = find_end_tag(s, n, t.end, "noscript");
                /* schema.org data of a Product (the extraction reads its description): looked
                 * for in JSON-LD scripts only, which are small, rather than in the whole page */
                if (info->name[1] == 'c' && contains_nocase(s + at, t.end - at, "ld+json")) {
                    f->flags |= F_JSON_LD;
                    if (contains(s + at, t.end - at, "ld+json") && contains(s + t.end, e - t.end, "\"Product\""))
                        f->flags |= F_PRODUCT_DATA;
                }
                if (svg.pending && !svg_raw_ok(info, s, n, t.end, e))
                    svg_give_up(&svg, &region);
                if (closed) {
                    tag et;
                    read_tag(s, n, e, 1, &et, f);  /* an end tag: records nothing */
                    e = et.end;
                }
                i = e;
                continue;
            }
            if (info && info->flag == F_NOSCRIPT)
                in_noscript = !is_end;
            if (info && info->name[0] == 'h' && info->name[1] >= '2' && info->name[1] <= '6' && !info->name[2] &&
                !(f->flags & F_ASIDE_HEADING))
                heading_open = !is_end;
            if (info)
                visible_tag(v, info, is_end);
            if (cut) {
                int svg_start = info && info->flag == F_SVG && !is_end && t.closed && !t.self_closing;
                int waits = 0;  /* a tag of an svg inside a candidate: the candidate waits */
                int started = 0;  /* an svg candidate starts at this tag */
                if (svg.pending && svg.in_region) {
                    int r = svg_inside(&svg, &t, is_end);
                    if (r == 1) {  /* its end tag: the svg goes, the candidate goes on */
                        out->len = svg.out_at;
                        f->flags = svg.flags_at;
                        svg.pending = 0;
                        i = t.end;
                        continue;
                    }
                    if (r == 0)
                        waits = 1;
                    else
                        svg_give_up(&svg, &region);
                }
                if (!waits && region.active) {
                    if (svg_start) {
                        svg.pending = svg.in_region = waits = started = 1;
                    } else {
                        int r = cut_inside(&region, &t, cut_kind(t.name, t.name_len), is_end);
                        if (r == 1) {  /* its end tag: the element goes, an empty one stays */
                            out->len = region.out_at;
                            f->flags = region.flags_at | region.root_flag;
                            buf_byte(out, '\f');
                            buf_put(out, "<", 1);
                            buf_put(out, region.names[0], region.lens[0]);
                            buf_put(out, "></", 3);
                            buf_put(out, region.names[0], region.lens[0]);
                            buf_put(out, ">", 1);
                            region.active = 0;
                            i = t.end;
                            continue;
                        }
                        if (r < 0)
                            region_give_up(&region);
                    }
                }
                if (!waits) {
                    if (!region.active)
                        cut_outside(&region, &t, info, is_end, out->len, f->flags);
                    if (svg.pending) {
                        int r = svg_inside(&svg, &t, is_end);
                        if (r == 1) {  /* its end tag: the element goes */
                            out->len = svg.out_at;
                            f->flags = svg.flags_at;
                            svg.pending = 0;
                            i = t.end;
                            continue;
                        }
                        if (r < 0)
                            svg.pending = 0;
                    } else if (svg_start && region.foreign == 1) {
                        svg.pending = started = 1;
                        svg.in_region = 0;
                    }
                }
                if (started) {
                    svg.out_at = out->len;
                    svg.flags_at = flags_before;
                    svg.depth = 1;
                    memcpy(svg.names[0], "svg", 3);
                    svg.lens[0] = 3;
                }
            }
            if (info) {
                if (!is_end)
                    f->flags |= info->flag;
                if (info->block == 1)
                    buf_byte(out, '\f');
                else if (info->block == 2)
                    buf_byte(out, ' ');
                if (is_end && info->name[0] == 'a' && info->name[1] == 0)
                    buf_put(out, LINK_CLOSE, 1);
            }
            if (!is_end)  /* the marks go right after the name */
                put_start_tag(out, s, at, &t, strip, f);
            else
                buf_put(out, s + at, t.end - at);
            i = t.end;
            if (info && !is_end) {
                if (info->name[0] == 'a' && info->name[1] == 0)
                    buf_put(out, LINK_OPEN, 1);
                else if (info->raw == 2) {  /* raw text kept as it is, up to its end tag */
                    size_t e = info->name[0] == 'p' ? n : find_end_tag(s, n, i, info->name);
                    if (info->name[0] == 't' && title->title_at == SIZE_MAX) {
                        title->title_at = i;
                        title->title_len = e - i;
                    }
                    if (info->name[0] == 'x' || info->name[0] == 'p')  /* xmp, plaintext: shown */
                        visible_add(v, s, i, e);
                    if (svg.pending && !svg_raw_ok(info, s, n, i, e))
                        svg_give_up(&svg, &region);
                    buf_put(out, s + i, e - i);
                    i = e;
                }
            }
            continue;
        }
        if (c1 == '!' || c1 == '?') {
            size_t e;
            if (svg.pending && c1 == '!' && at + 2 < n && s[at + 2] == '[')
                svg_give_up(&svg, &region);  /* a CDATA section: text in foreign content */
            if (c1 == '!' && at + 3 < n && s[at + 2] == '-' && s[at + 3] == '-') {
                /* a comment: "<!-->", "<!--->", else up to "-->" or "--!>" (or the end) */
                size_t k = at + 4;
                if (k < n && s[k] == '>')
                    e = k + 1;
                else if (k + 1 < n && s[k] == '-' && s[k + 1] == '>')
                    e = k + 2;
                else {
                    e = n;
                    for (; k + 2 < n; k++) {
                        if (s[k] == '-' && s[k + 1] == '-') {
                            if (s[k + 2] == '>') {
                                e = k + 3;
                                break;
                            }
                            if (k + 3 < n && s[k + 2] == '!' && s[k + 3] == '>') {
                                e = k + 4;
                                break;
                            }
                        }
                    }
                }
                i = e;
                continue;
            }
            const unsigned char *gt = memchr(s + at, '>', n - at);
            e = gt ? (size_t)(gt - s) + 1 : n;
            if (c1 == '!')  /* <!DOCTYPE ...> (it sets the parser's mode): kept */
                buf_put(out, s + at, e - at);
            i = e;  /* <?...>: a bogus comment, cut */
            continue;
        }
        buf_byte(out, '<');  /* a '<' that opens no tag is text */
        visible_add(v, s, at, at + 1);
        i = at + 1;
    }
}

static PyObject *spans_list(spans *l, const unsigned char *s) {
    PyObject *list = PyList_New((Py_ssize_t)l->len);
    if (!list)
        return NULL;
    for (size_t k = 0; k < l->len; k++) {
        PyObject *v = PyUnicode_DecodeUTF8((const char *)s + l->span[k][0], (Py_ssize_t)l->span[k][1], "replace");
        if (!v) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)k, v);
    }
    return list;
}

static PyObject *py_scan(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *arg;
    int cut = 0, page = 0;
    if (!PyArg_ParseTuple(args, "O|pp:scan", &arg, &cut, &page))
        return NULL;
    const char *data;
    Py_ssize_t n;
    PyObject *keep = arg;  /* holds the buffer alive while the GIL is released */
    if (PyUnicode_Check(arg)) {
        data = PyUnicode_AsUTF8AndSize(arg, &n);
        if (!data)
            return NULL;
    } else if (PyBytes_Check(arg)) {
        data = PyBytes_AS_STRING(arg);
        n = PyBytes_GET_SIZE(arg);
    } else {
        PyErr_SetString(PyExc_TypeError, "scan() takes a str or bytes");
        return NULL;
    }
    buf out = {0};
    found f = {0};
    name_cache *names = calloc(1, sizeof(name_cache));
    if (!names)
        return PyErr_NoMemory();
    f.names = names;
    Py_INCREF(keep);
    title_span title;
    visible v = {0};
    uint64_t page_fingerprint;
    const unsigned char *s = (const unsigned char *)data;
    Py_BEGIN_ALLOW_THREADS
    buf_reserve(&out, (size_t)n + (size_t)n / 8 + 64);
    scan_page(s, (size_t)n, &out, &f, &title, page ? &v : NULL, 1, cut);
    if (f.flags & F_OWN_MARKS) {
        /* attributes like the marks: the caller queries the page's own attributes (class, id,
         * style, hidden, role), so they all stay; scanned again (rare) */
        free(f.classes.span);
        free(f.ids.span);
        memset(&f.classes, 0, sizeof(f.classes));
        memset(&f.ids, 0, sizeof(f.ids));
        f.flags = 0;
        memset(names, 0, sizeof(name_cache));
        out.len = 0;
        v.text.len = 0;
        v.apart = v.templates = v.noscript = 0;
        scan_page(s, (size_t)n, &out, &f, &title, page ? &v : NULL, 0, cut);
    }
    page_fingerprint = page ? XXH3_64bits(v.text.p ? v.text.p : "", v.text.len) : 0;
    Py_END_ALLOW_THREADS
    PyObject *result = NULL, *marked = NULL, *tt = NULL, *cl = NULL, *ids = NULL;
    if (out.failed || f.classes.failed || f.ids.failed || v.text.failed) {
        PyErr_NoMemory();
        goto done;
    }
    marked = PyBytes_FromStringAndSize(out.p ? out.p : "", (Py_ssize_t)out.len);
    if (!marked)
        goto done;
    if (title.title_at == SIZE_MAX) {
        tt = Py_None;
        Py_INCREF(tt);
    } else {
        tt = PyUnicode_DecodeUTF8(data + title.title_at, (Py_ssize_t)title.title_len, "replace");
        if (!tt)
            goto done;
    }
    cl = spans_list(&f.classes, s);
    if (!cl)
        goto done;
    ids = spans_list(&f.ids, s);
    if (!ids)
        goto done;
    if (page)
        result = Py_BuildValue("(OiOOOK)", marked, f.flags, tt, cl, ids, (unsigned long long)page_fingerprint);
    else
        result = Py_BuildValue("(OiOOOO)", marked, f.flags, tt, cl, ids, Py_None);
done:
    Py_XDECREF(marked);
    Py_XDECREF(tt);
    Py_XDECREF(cl);
    Py_XDECREF(ids);
    free(out.p);
    free(v.text.p);
    free(f.classes.span);
    free(f.ids.span);
    free(names);
    Py_DECREF(keep);
    return result;
}


static PyMethodDef methods[] = {
    {"scan", py_scan, METH_VARARGS, "scan(html, cut_navigation=False, page_fingerprint=False) -> (marked UTF-8 bytes, flags, title or None, class names, ids, page fingerprint or None)"},
    {"lines", htmltext_lines, METH_O, "lines(text) -> the text, one line per block"},
    {"stats", htmltext_stats, METH_O, "stats(text) -> (collapsed length, of it inside links)"},
    {"is_utf8", htmltext_is_utf8, METH_O, "is_utf8(data) -> whether bytes.decode('utf-8') would succeed"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "neardup._htmlscan", NULL, -1, methods};

PyMODINIT_FUNC PyInit__htmlscan(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    for (int t = 1; t < NTAGS; t++)
        if (strcmp(TAGS[t - 1].name, TAGS[t].name) >= 0) {
            PyErr_Format(PyExc_ImportError, "neardup._htmlscan: TAGS is not sorted at %s", TAGS[t].name);
            Py_DECREF(m);
            return NULL;
        }
    if (index_tags() < 0 || index_words() < 0 || index_cut() < 0 || index_breakout() < 0 || index_aside() < 0) {
        PyErr_SetString(PyExc_ImportError, "neardup._htmlscan: too many tags or words with one first letter and length");
        Py_DECREF(m);
        return NULL;
    }
    static const struct { const char *name; int value; } consts[] = {
        {"MAIN", F_MAIN}, {"ARTICLE", F_ARTICLE}, {"HEADER", F_HEADER}, {"FOOTER", F_FOOTER}, {"H1", F_H1},
        {"ASIDE", F_ASIDE}, {"NAV", F_NAV}, {"DIALOG", F_DIALOG}, {"NOSCRIPT", F_NOSCRIPT},
        {"TEMPLATE", F_TEMPLATE}, {"SVG", F_SVG}, {"OBJECT", F_OBJECT}, {"EMBED", F_EMBED},
        {"CANVAS", F_CANVAS}, {"MATH", F_MATH}, {"SELECT", F_SELECT}, {"BUTTON", F_BUTTON},
        {"FIGCAPTION", F_FIGCAPTION}, {"FORM", F_FORM}, {"RT", F_RUBY_TEXT}, {"RP", F_RUBY_TEXT},
        {"HIDDEN", F_HIDDEN}, {"STYLE_HIDDEN", F_STYLE_HIDDEN}, {"ROLE_NAV", F_ROLE_NAV},
        {"ROLE_MAIN", F_ROLE_MAIN}, {"ROLE_COMPLEMENTARY", F_ROLE_COMPLEMENTARY}, {"NAMED", F_NAMED},
        {"OWN_MARKS", F_OWN_MARKS}, {"SECONDARY", F_SECONDARY}, {"PRODUCT_DATA", F_PRODUCT_DATA},
        {"JSON_LD", F_JSON_LD}, {"ASIDE_HEADING", F_ASIDE_HEADING},
    };
    for (size_t k = 0; k < sizeof(consts) / sizeof(consts[0]); k++)
        if (PyModule_AddIntConstant(m, consts[k].name, consts[k].value) < 0) {
            Py_DECREF(m);
            return NULL;
        }
    PyObject *words = PyTuple_New((Py_ssize_t)NASIDE_WORDS);
    if (!words) {
        Py_DECREF(m);
        return NULL;
    }
    for (size_t k = 0; k < NASIDE_WORDS; k++) {
        PyObject *w = PyUnicode_FromString(ASIDE_WORDS[k]);
        if (!w) {
            Py_DECREF(words);
            Py_DECREF(m);
            return NULL;
        }
        PyTuple_SET_ITEM(words, (Py_ssize_t)k, w);
    }
    if (PyModule_AddObject(m, "ASIDE_WORDS", words) < 0) {
        Py_DECREF(words);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
