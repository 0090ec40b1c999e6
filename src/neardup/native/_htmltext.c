/*
 * The text half of neardup._htmlscan (see _htmlscan.c for the module): what the extraction reads
 * off lexbor's text of a subtree after the parse, and the UTF-8 test of a page's bytes.
 *
 *   lines(text) -> str          one line per block (form feeds end lines, white space collapses,
 *                               the link marks \x01 and \x02 vanish, empty lines go);
 *   stats(text) -> (chars, link_chars)
 *                               the collapsed length, and how much of it lies between the marks;
 *   is_utf8(data) -> bool       whether bytes decode as strict UTF-8.
 *
 * Both text functions read the str's code points in place (PEP 393), never its UTF-8. The markup
 * scan (_htmlscan.c) writes the marks these functions read; nothing else is shared.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_htmltext.h"

/* ------------------------------------------------------------------------------------------- */
/* lines and stats                                                                             */

enum { C_OTHER = 0, C_SPACE, C_BREAK, C_LINK_OPEN, C_LINK_CLOSE };

/* The class of a code point: white space as str.isspace (but the form feed), the line marks,
 * the link marks, or anything else. */
static inline int char_class(Py_UCS4 c) {
    if (c < 0x80) {
        if (c == '\f')
            return C_BREAK;
        if (c == 0x01)
            return C_LINK_OPEN;
        if (c == 0x02)
            return C_LINK_CLOSE;
        if (c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f))
            return C_SPACE;
        return C_OTHER;
    }
    if (c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
        c == 0x202F || c == 0x205F || c == 0x3000)
        return C_SPACE;
    return C_OTHER;
}

/* lines and stats read the str's own code points (1, 2 or 4 bytes each: PEP 393) rather than
 * its UTF-8, which CPython would first have to make (and keep) for any text that is not
 * ASCII. One function per width, made by the macros below. */
static inline int str_ready(PyObject *s) {
#if PY_VERSION_HEX < 0x030C0000
    return PyUnicode_READY(s);  /* a no-op from 3.12 on, and deprecated */
#else
    (void)s;
    return 0;
#endif
}

static inline int is_printable_ascii(Py_UCS4 c) { return c > 0x20 && c < 0x7f; }

/* Words of eight bytes tested at once (SWAR): whether every byte is in 0x20..0x7e (printable
 * ASCII or a space) with no two spaces side by side. Exact: the range tests are the classic
 * "has a byte less than / more than" tests (exact about whether there is one), the spaces are
 * found byte by byte exactly (no borrow crosses a byte). */
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
static inline int word_of_words(uint64_t w, int unit_bits) {
    if ((((w - ONES * 0x20) & ~w) | ((w + ONES) | w)) & HIGHS)
        return 0;  /* a byte below 0x20, or above 0x7e */
    uint64_t t = w ^ (ONES * 0x20);
    uint64_t sp = ~(((t & ~HIGHS) + ~HIGHS) | t) & HIGHS;  /* the high bit of every space byte */
    return !(sp & (sp << unit_bits));
}

/* The end of the run that starts at s[i], a printable ASCII character: printable ASCII
 * characters and single spaces between two of them, which lines copies as they are and stats
 * counts one each (a space between two characters collapses to itself). Read a word at a
 * time where the width allows (1 and 2 bytes a character), then a character at a time. At
 * the top of the loop s[j - 1] is printable ASCII, not a space. */
#define RUN_IMPL(NAME, T)                                                                   \
    static inline size_t NAME(const T *s, size_t i, size_t n) {                             \
        const size_t per_word = 8 / sizeof(T);                                              \
        size_t j = i + 1;                                                                   \
        for (;;) {                                                                          \
            if (sizeof(T) <= 2 && j + per_word <= n && s[j + per_word - 1] != ' ') {        \
                uint64_t w;                                                                 \
                memcpy(&w, s + j, 8);                                                       \
                int ok;                                                                     \
                if (sizeof(T) == 1)                                                         \
                    ok = word_of_words(w, 8);                                               \
                else /* every high byte 0, then the low ones tested with 'A' above them */ \
                    ok = !(w & 0xFF00FF00FF00FF00ULL) && word_of_words(w | 0x4100410041004100ULL, 16); \
                if (ok) {                                                                   \
                    j += per_word;                                                          \
                    continue;                                                               \
                }                                                                           \
            }                                                                               \
            if (j < n && is_printable_ascii(s[j])) {                                        \
                j++;                                                                        \
            } else if (j + 1 < n && s[j] == ' ' && is_printable_ascii(s[j + 1])) {          \
                j += 2;                                                                     \
            } else {                                                                        \
                return j;                                                                   \
            }                                                                               \
        }                                                                                   \
    }

RUN_IMPL(run_1, Py_UCS1)
RUN_IMPL(run_2, Py_UCS2)
RUN_IMPL(run_4, Py_UCS4)

/* lines: ``o`` the output's length so far, ``pending`` 0 (nothing), 1 (a space) or 2 (a line
 * break) owed before the next character. */
#define LINES_IMPL(NAME, T, RUN)                                                            \
    static size_t NAME(const T *s, size_t n, T *out) {                                      \
        size_t o = 0;                                                                       \
        int pending = 0;                                                                    \
        for (size_t i = 0; i < n;) {                                                        \
            Py_UCS4 c = s[i];                                                               \
            if (is_printable_ascii(c)) { /* a run of words: copied at once */               \
                size_t j = RUN(s, i, n);                                                    \
                if (o && pending)                                                           \
                    out[o++] = pending == 2 ? '\n' : ' ';                                   \
                pending = 0;                                                                \
                memcpy(out + o, s + i, (j - i) * sizeof(T));                                \
                o += j - i;                                                                 \
                i = j;                                                                      \
                continue;                                                                   \
            }                                                                               \
            int k = char_class(c);                                                          \
            if (k == C_SPACE) {                                                             \
                if (pending < 1)                                                            \
                    pending = 1;                                                            \
            } else if (k == C_BREAK) {                                                      \
                pending = 2;                                                                \
            } else if (k == C_OTHER) {                                                      \
                if (o && pending)                                                           \
                    out[o++] = pending == 2 ? '\n' : ' ';                                   \
                pending = 0;                                                                \
                out[o++] = s[i];                                                            \
            }                                                                               \
            i++;                                                                            \
        }                                                                                   \
        return o;                                                                           \
    }

LINES_IMPL(lines_1, Py_UCS1, run_1)
LINES_IMPL(lines_2, Py_UCS2, run_2)
LINES_IMPL(lines_4, Py_UCS4, run_4)

PyObject *htmltext_lines(PyObject *self, PyObject *arg) {
    (void)self;
    if (!PyUnicode_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "lines() takes a str");
        return NULL;
    }
    if (str_ready(arg) < 0)
        return NULL;
    int kind = PyUnicode_KIND(arg);
    const void *data = PyUnicode_DATA(arg);
    size_t n = (size_t)PyUnicode_GET_LENGTH(arg);
    /* the output is never longer than the input (a space or line break only ever replaces at
     * least one character), in the input's width */
    void *out = malloc(n * (size_t)kind + 1);
    if (!out)
        return PyErr_NoMemory();
    size_t o = 0;
    Py_INCREF(arg);  /* the str is immutable and held: its data stay put without the GIL */
    Py_BEGIN_ALLOW_THREADS
    if (kind == PyUnicode_1BYTE_KIND)
        o = lines_1((const Py_UCS1 *)data, n, (Py_UCS1 *)out);
    else if (kind == PyUnicode_2BYTE_KIND)
        o = lines_2((const Py_UCS2 *)data, n, (Py_UCS2 *)out);
    else
        o = lines_4((const Py_UCS4 *)data, n, (Py_UCS4 *)out);
    Py_END_ALLOW_THREADS
    /* the narrowest width that holds the result (what str equality and hashing expect) */
    PyObject *r = PyUnicode_FromKindAndData(kind, out, (Py_ssize_t)o);
    free(out);
    Py_DECREF(arg);
    return r;
}

#define STATS_IMPL(NAME, T, RUN)                                                            \
    static void NAME(const T *s, size_t n, Py_ssize_t *chars_out, Py_ssize_t *link_out) {   \
        Py_ssize_t chars = 0, link = 0;                                                     \
        int pending = 0, in_link = 0, any = 0;                                              \
        for (size_t i = 0; i < n;) {                                                        \
            Py_UCS4 c = s[i];                                                               \
            if (is_printable_ascii(c)) { /* a run of words: counted at once */              \
                size_t j = RUN(s, i, n);                                                    \
                Py_ssize_t add = (Py_ssize_t)(j - i) + (any && pending);                    \
                chars += add;                                                               \
                if (in_link)                                                                \
                    link += add;                                                            \
                pending = 0;                                                                \
                any = 1;                                                                    \
                i = j;                                                                      \
                continue;                                                                   \
            }                                                                               \
            int k = char_class(c);                                                          \
            if (k == C_SPACE || k == C_BREAK) {                                             \
                pending = 1;                                                                \
            } else if (k == C_LINK_OPEN) {                                                  \
                in_link = 1;                                                                \
            } else if (k == C_LINK_CLOSE) {                                                 \
                in_link = 0;                                                                \
            } else {                                                                        \
                Py_ssize_t add = 1 + (any && pending);                                      \
                chars += add;                                                               \
                if (in_link)                                                                \
                    link += add;                                                            \
                pending = 0;                                                                \
                any = 1;                                                                    \
            }                                                                               \
            i++;                                                                            \
        }                                                                                   \
        *chars_out = chars;                                                                 \
        *link_out = link;                                                                   \
    }

STATS_IMPL(stats_1, Py_UCS1, run_1)
STATS_IMPL(stats_2, Py_UCS2, run_2)
STATS_IMPL(stats_4, Py_UCS4, run_4)

PyObject *htmltext_stats(PyObject *self, PyObject *arg) {
    (void)self;
    if (!PyUnicode_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "stats() takes a str");
        return NULL;
    }
    if (str_ready(arg) < 0)
        return NULL;
    int kind = PyUnicode_KIND(arg);
    const void *data = PyUnicode_DATA(arg);
    size_t n = (size_t)PyUnicode_GET_LENGTH(arg);
    Py_ssize_t chars, link;
    if (kind == PyUnicode_1BYTE_KIND)
        stats_1((const Py_UCS1 *)data, n, &chars, &link);
    else if (kind == PyUnicode_2BYTE_KIND)
        stats_2((const Py_UCS2 *)data, n, &chars, &link);
    else
        stats_4((const Py_UCS4 *)data, n, &chars, &link);
    return Py_BuildValue("(nn)", chars, link);
}

/* Whether bytes are valid UTF-8 as Python's strict decoder reads it (no overlong forms, no
 * surrogates, nothing above U+10FFFF): then the page is read as its bytes, not decoded to a str
 * and encoded back. Runs of ASCII are skipped 32 bytes, then eight bytes at a time. */
static int utf8_valid(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        if (i + 32 <= n) {  /* four words at a time while they are ASCII */
            uint64_t w[4];
            memcpy(w, s + i, 32);
            if (!((w[0] | w[1] | w[2] | w[3]) & 0x8080808080808080ULL)) {
                i += 32;
                continue;
            }
        }
        if (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ULL)) {
                i += 8;
                continue;
            }
        }
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80)
                return 0;
            i += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            if (i + 2 >= n)
                return 0;
            unsigned char b = s[i + 1];
            unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
            if (b < lo || b > hi || (s[i + 2] & 0xC0) != 0x80)
                return 0;
            i += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            if (i + 3 >= n)
                return 0;
            unsigned char b = s[i + 1];
            unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
            if (b < lo || b > hi || (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80)
                return 0;
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

PyObject *htmltext_is_utf8(PyObject *self, PyObject *arg) {
    (void)self;
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "is_utf8() takes bytes");
        return NULL;
    }
    const unsigned char *s = (const unsigned char *)PyBytes_AS_STRING(arg);
    size_t n = (size_t)PyBytes_GET_SIZE(arg);
    int ok;
    Py_INCREF(arg);
    Py_BEGIN_ALLOW_THREADS
    ok = utf8_valid(s, n);
    Py_END_ALLOW_THREADS
    Py_DECREF(arg);
    return PyBool_FromLong(ok);
}
