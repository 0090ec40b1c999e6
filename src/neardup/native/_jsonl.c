/*
 * neardup._jsonl: the fast path of the JSONL reader. One call scans a block of complete lines,
 * off the GIL, and for each line that is an ordinary record (a JSON object whose text field is a
 * string) copies the text's UTF-8 (escapes decoded) and the id out of it, without building any
 * Python object. neardup dedup feeds those bytes straight to the kernel, so the text of such a
 * record never becomes a Python str. For HTML records the page's URL (a third field) comes out
 * the same way, and the page's UTF-8 goes to the extraction as it is.
 *
 * Anything unusual sends the line to the Python reader (neardup.io.read, orjson), which
 * decides what the record is and reports the problems: the scanner never accepts a line that
 * orjson would reject, and never reads a value differently. It falls back on: invalid JSON of
 * any kind, invalid UTF-8 (overlong forms, surrogates, beyond U+10FFFF), a top-level value that
 * is not an object, a key written with escapes, a repeated id or text key, a text that is not a
 * string or holds no ASCII character that is not white space (the reader decides whether it is
 * blank), an escaped lone surrogate, an id that is neither a string, null, nor a plain integer
 * of at most 18 digits, numbers of over 20 characters or with a three-digit exponent (orjson
 * reads some of those as infinity, an error), nesting deeper than 64, and lines over max_line
 * bytes.
 *
 * tests/test_io.py checks the records of both paths against each other on every case above and
 * on random JSON.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "new_bytearray.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define TABLE_SIZE 0x110000
#define MAX_DEPTH 64

enum { K_FLAGGED = 1, K_NO_ID = 2, K_FALLBACK = 4, K_NO_URL = 8 };

/* Where a decoded string goes (out == NULL: validate only). */
typedef struct {
    uint8_t *out;
    size_t len;            /* bytes written */
    size_t ncp;            /* code points */
    int nonspace;          /* an ASCII character that str.isspace() is false for */
    int flagged;           /* a code point marked in the table */
    size_t flag_lo, flag_hi; /* bytes [flag_lo, flag_hi) of the output hold every marked code point */
    const uint8_t *table;  /* or NULL */
} sink_t;

static inline void mark(sink_t *s, size_t at, size_t n) {
    if (!s->flagged) s->flag_lo = at;
    s->flagged = 1;
    s->flag_hi = at + n;
}

/* str.isspace() on ASCII: \t \n \v \f \r, \x1c-\x1f and space */
static inline int ascii_space(uint32_t c) { return (c >= 9 && c <= 13) || (c >= 28 && c <= 32); }

/* str.isspace() beyond ASCII (Unicode 14; tests/test_io.py checks the list against the running
 * Python's) */
static inline int other_space(uint32_t c) {
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

/* The code points str.isspace() is true for, for the test. */
static const uint32_t SPACES[] = {9, 10, 11, 12, 13, 28, 29, 30, 31, 32, 0x85, 0xA0, 0x1680, 0x2000, 0x2001, 0x2002,
                                  0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A, 0x2028, 0x2029,
                                  0x202F, 0x205F, 0x3000};

static inline void put_cp(sink_t *s, uint32_t cp) {
    s->ncp++;
    if (cp < 0x80) {
        s->nonspace |= !ascii_space(cp);
        if (s->out) s->out[s->len] = (uint8_t)cp;
        s->len += 1;
        return;
    }
    s->nonspace |= !other_space(cp);
    if (s->table && s->table[cp]) mark(s, s->len, cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4);
    if (!s->out) return;
    uint8_t *o = s->out + s->len;
    if (cp < 0x800) {
        o[0] = (uint8_t)(0xC0 | (cp >> 6));
        o[1] = (uint8_t)(0x80 | (cp & 0x3F));
        s->len += 2;
    } else if (cp < 0x10000) {
        o[0] = (uint8_t)(0xE0 | (cp >> 12));
        o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (uint8_t)(0x80 | (cp & 0x3F));
        s->len += 3;
    } else {
        o[0] = (uint8_t)(0xF0 | (cp >> 18));
        o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
        o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        o[3] = (uint8_t)(0x80 | (cp & 0x3F));
        s->len += 4;
    }
}

/* A strict UTF-8 sequence at p (p[0] >= 0x80): its length, or 0 when invalid. */
static inline int utf8_seq(const uint8_t *p, const uint8_t *end, uint32_t *cp) {
    const uint8_t c = p[0];
    if (c < 0xC2) return 0;
    if (c < 0xE0) {
        if (end - p < 2 || (p[1] & 0xC0) != 0x80) return 0;
        *cp = ((uint32_t)(c & 0x1F) << 6) | (p[1] & 0x3F);
        return 2;
    }
    if (c < 0xF0) {
        if (end - p < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return 0;
        const uint32_t v = ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
        if (v < 0x800 || (v >= 0xD800 && v <= 0xDFFF)) return 0;
        *cp = v;
        return 3;
    }
    if (c < 0xF5) {
        if (end - p < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) return 0;
        const uint32_t v = ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(p[1] & 0x3F) << 12) |
                           ((uint32_t)(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
        if (v < 0x10000 || v > 0x10FFFF) return 0;
        *cp = v;
        return 4;
    }
    return 0;
}

static inline int hex4(const uint8_t *p, const uint8_t *end, uint32_t *v) {
    if (end - p < 4) return 0;
    uint32_t x = 0;
    for (int i = 0; i < 4; i++) {
        const uint8_t c = p[i];
        x <<= 4;
        if (c >= '0' && c <= '9') x |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') x |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') x |= (uint32_t)(c - 'A' + 10);
        else return 0;
    }
    *v = x;
    return 1;
}

/* The string at p (p[0] == '"'): decoded into s; returns the byte after the closing quote, or
 * NULL (fall back). s->nonspace, ncp and flagged accumulate. */
/* The first byte at or after p that ends a run of plain ASCII: '"', '\\', a control character
 * or a byte >= 0x80 (or end). */
static inline const uint8_t *plain_run(const uint8_t *p, const uint8_t *end) {
#if defined(__SSE2__)
    /* 16 bytes at a time: a signed compare with 0x20 catches control characters and bytes >= 0x80 */
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
    while (end - p >= 16) {
        const __m128i v = _mm_loadu_si128((const __m128i *)p);
        const __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                                          _mm_cmplt_epi8(v, space));
        const int mask = _mm_movemask_epi8(stop);
        if (mask) return p + __builtin_ctz((unsigned)mask);
        p += 16;
    }
#endif
    while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\') p++;
    return p;
}

static const uint8_t *jstring(const uint8_t *p, const uint8_t *end, sink_t *s) {
    p++;
    for (;;) {
        /* a run of plain ASCII: copied as is */
        const uint8_t *run = p;
        p = plain_run(p, end);
        if (p > run) {
            const size_t n = (size_t)(p - run);
            if (s->out) memcpy(s->out + s->len, run, n);
            s->len += n;
            s->ncp += n;
            if (!s->nonspace)
                for (const uint8_t *q = run; q < p; q++)
                    if (!ascii_space(*q)) {
                        s->nonspace = 1;
                        break;
                    }
        }
        if (p >= end) return NULL;
        const uint8_t c = *p;
        if (c == '"') return p + 1;
        if (c < 0x20) return NULL; /* raw control character */
        if (c == '\\') {
            if (end - p < 2) return NULL;
            uint32_t cp;
            switch (p[1]) {
            case '"': cp = '"'; break;
            case '\\': cp = '\\'; break;
            case '/': cp = '/'; break;
            case 'b': cp = 8; break;
            case 'f': cp = 12; break;
            case 'n': cp = 10; break;
            case 'r': cp = 13; break;
            case 't': cp = 9; break;
            case 'u': {
                if (!hex4(p + 2, end, &cp)) return NULL;
                p += 4;
                if (cp >= 0xDC00 && cp <= 0xDFFF) return NULL; /* lone low surrogate */
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    uint32_t lo;
                    if (end - p < 8 || p[2] != '\\' || p[3] != 'u' || !hex4(p + 4, end, &lo) || lo < 0xDC00 ||
                        lo > 0xDFFF)
                        return NULL; /* lone high surrogate */
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    p += 6;
                }
                break;
            }
            default: return NULL;
            }
            put_cp(s, cp);
            p += 2;
            continue;
        }
        uint32_t cp;
        const int n = utf8_seq(p, end, &cp);
        if (!n) return NULL;
        s->ncp++;
        s->nonspace |= !other_space(cp);
        if (s->table && s->table[cp]) mark(s, s->len, (size_t)n);
        if (s->out) memcpy(s->out + s->len, p, (size_t)n);
        s->len += (size_t)n;
        p += n;
    }
}

static inline const uint8_t *ws(const uint8_t *p, const uint8_t *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

static inline int is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

/* A number: the byte after it, or NULL (invalid, or one the Python reader should judge). */
static const uint8_t *jnumber(const uint8_t *p, const uint8_t *end) {
    const uint8_t *start = p;
    if (*p == '-') p++;
    if (p >= end) return NULL;
    if (*p == '0') p++;
    else if (is_digit(*p))
        while (p < end && is_digit(*p)) p++;
    else
        return NULL;
    if (p < end && *p == '.') {
        p++;
        if (p >= end || !is_digit(*p)) return NULL;
        while (p < end && is_digit(*p)) p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        const uint8_t *digits = p;
        while (p < end && is_digit(*p)) p++;
        if (p == digits || p - digits > 2) return NULL;
    }
    return p - start > 20 ? NULL : p;
}

static const uint8_t *jvalue(const uint8_t *p, const uint8_t *end, int depth);

static const uint8_t *jobject(const uint8_t *p, const uint8_t *end, int depth) {
    if (depth > MAX_DEPTH) return NULL;
    sink_t none = {0};
    p = ws(p + 1, end);
    if (p < end && *p == '}') return p + 1;
    for (;;) {
        if (p >= end || *p != '"' || !(p = jstring(p, end, &none))) return NULL;
        p = ws(p, end);
        if (p >= end || *p != ':') return NULL;
        p = jvalue(ws(p + 1, end), end, depth);
        if (!p) return NULL;
        p = ws(p, end);
        if (p >= end) return NULL;
        if (*p == '}') return p + 1;
        if (*p != ',') return NULL;
        p = ws(p + 1, end);
    }
}

static const uint8_t *jarray(const uint8_t *p, const uint8_t *end, int depth) {
    if (depth > MAX_DEPTH) return NULL;
    p = ws(p + 1, end);
    if (p < end && *p == ']') return p + 1;
    for (;;) {
        p = jvalue(p, end, depth);
        if (!p) return NULL;
        p = ws(p, end);
        if (p >= end) return NULL;
        if (*p == ']') return p + 1;
        if (*p != ',') return NULL;
        p = ws(p + 1, end);
    }
}

static inline const uint8_t *literal(const uint8_t *p, const uint8_t *end, const char *word, size_t n) {
    return (size_t)(end - p) >= n && memcmp(p, word, n) == 0 ? p + n : NULL;
}

static const uint8_t *jvalue(const uint8_t *p, const uint8_t *end, int depth) {
    if (p >= end) return NULL;
    switch (*p) {
    case '"': {
        sink_t none = {0};
        return jstring(p, end, &none);
    }
    case '{': return jobject(p, end, depth + 1);
    case '[': return jarray(p, end, depth + 1);
    case 't': return literal(p, end, "true", 4);
    case 'f': return literal(p, end, "false", 5);
    case 'n': return literal(p, end, "null", 4);
    default: return (*p == '-' || is_digit(*p)) ? jnumber(p, end) : NULL;
    }
}

typedef struct {
    const uint8_t *id_key, *text_key, *url_key; /* url_key: NULL when no URL is asked for */
    size_t id_key_len, text_key_len, url_key_len;
    const uint8_t *table;
} fields_t;

/* One line (without its newline). Writes the text to text_out, the id to id_out and the URL (a
 * string value of the url field, escapes decoded) to url_out; returns the kind flags (K_FALLBACK
 * alone when the Python reader must decide). */
static int scan_line(const fields_t *f, const uint8_t *p, const uint8_t *end, uint8_t *text_out, size_t *text_len,
                     size_t *ncp, size_t flag_span[2], uint8_t *id_out, size_t *id_len, uint8_t *url_out,
                     size_t *url_len) {
    int seen_text = 0, seen_id = 0, seen_url = 0, url_is_string = 0, kind = 0;
    sink_t text = {0}, idsink = {0}, urlsink = {0};
    *text_len = *id_len = *url_len = 0;
    p = ws(p, end);
    if (p >= end || *p != '{') return K_FALLBACK;
    p = ws(p + 1, end);
    if (p < end && *p == '}') return K_FALLBACK; /* no text field */
    for (;;) {
        if (p >= end || *p != '"') return K_FALLBACK;
        const uint8_t *key = p + 1;
        sink_t none = {0};
        const uint8_t *after = jstring(p, end, &none);
        if (!after) return K_FALLBACK;
        const size_t key_len = (size_t)(after - 1 - key);
        if (memchr(key, '\\', key_len)) return K_FALLBACK; /* compare keys only as written plainly */
        const int is_text = key_len == f->text_key_len && memcmp(key, f->text_key, key_len) == 0;
        const int is_id = key_len == f->id_key_len && memcmp(key, f->id_key, key_len) == 0;
        const int is_url = f->url_key && key_len == f->url_key_len && memcmp(key, f->url_key, key_len) == 0;
        p = ws(after, end);
        if (p >= end || *p != ':') return K_FALLBACK;
        p = ws(p + 1, end);
        if (p >= end) return K_FALLBACK;
        if (is_text) {
            if (seen_text++ || *p != '"') return K_FALLBACK;
            text.out = text_out;
            text.table = f->table;
            p = jstring(p, end, &text);
        } else if (is_id) {
            if (seen_id++) return K_FALLBACK;
            if (*p == '"') {
                idsink.out = id_out;
                p = jstring(p, end, &idsink);
                if (p && idsink.len == 0) kind |= K_NO_ID; /* "" counts as no id */
            } else if (*p == 'n') {
                p = literal(p, end, "null", 4);
                kind |= K_NO_ID;
            } else if (*p == '-' || is_digit(*p)) {
                /* a plain integer, printed as Python's str(int) prints it */
                const uint8_t *num = p, *d = *p == '-' ? p + 1 : p;
                p = jnumber(p, end);
                if (!p) return K_FALLBACK;
                const size_t nd = (size_t)(p - d);
                for (const uint8_t *q = d; q < p; q++)
                    if (!is_digit(*q)) return K_FALLBACK;
                if (nd > 18 || (nd > 1 && *d == '0') || (*num == '-' && nd == 1 && *d == '0')) return K_FALLBACK;
                memcpy(id_out, num, (size_t)(p - num));
                idsink.len = (size_t)(p - num);
            } else {
                return K_FALLBACK;
            }
        } else if (is_url) {
            /* the reader takes a string URL, and none for any other value (orjson keeps the last
             * of repeated keys: those lines fall back) */
            if (seen_url++) return K_FALLBACK;
            if (*p == '"') {
                urlsink.out = url_out;
                p = jstring(p, end, &urlsink);
                url_is_string = 1;
            } else {
                p = jvalue(p, end, 1);
            }
        } else {
            p = jvalue(p, end, 1);
        }
        if (!p) return K_FALLBACK;
        p = ws(p, end);
        if (p >= end) return K_FALLBACK;
        if (*p == '}') break;
        if (*p != ',') return K_FALLBACK;
        p = ws(p + 1, end);
    }
    if (ws(p + 1, end) != end) return K_FALLBACK; /* content after the object */
    if (!seen_text || !text.nonspace) return K_FALLBACK;
    if (!seen_id) kind |= K_NO_ID;
    if (!url_is_string) kind |= K_NO_URL;
    if (text.flagged) {
        kind |= K_FLAGGED;
        flag_span[0] = text.flag_lo;
        flag_span[1] = text.flag_hi;
    }
    *text_len = text.len;
    *ncp = text.ncp;
    *id_len = (kind & K_NO_ID) ? 0 : idsink.len;
    *url_len = url_is_string ? urlsink.len : 0;
    return kind;
}

PyDoc_STRVAR(scan_doc,
"scan(block, id_field, text_field, table, max_line, url_field=None) -> (kinds, line_ends, text,\n"
"    text_offsets, ids, id_offsets, lengths, flag_spans, urls, url_offsets)\n\n"
"Scans the lines of block (bytes-like: complete lines, the last one may lack its newline) for\n"
"ordinary JSONL records. id_field, text_field: the keys, as UTF-8 bytes. table: None, or a\n"
"uint8 buffer of 0x110000 entries; a record whose text holds a code point marked in it gets\n"
"kind flag 1. max_line: lines longer than this (newline excluded) fall back; -1 for no limit.\n"
"Returns, for the n lines: kinds (bytearray of n flags: 1 marked code point, 2 no id (null,\n"
"empty or missing), 4 fall back to the Python reader, the only flag then), line_ends (n int64:\n"
"the offset after each line's newline), text and text_offsets (n+1 int64: line i's text in\n"
"UTF-8 is text[text_offsets[i]:text_offsets[i+1]], empty when it falls back), ids and\n"
"id_offsets (the same for the id, as str() of it would print), lengths (n int64: the text's\n"
"code points), flag_spans (2n int64: for a line of kind flag 1, the bytes [lo, hi) of its text\n"
"that hold every marked code point; 0, 0 otherwise), urls and url_offsets (the same for the\n"
"string value of url_field, bytes distinct from id_field and text_field; kind flag 8 when the\n"
"line has none, or no url_field is given: then urls is empty). out: None, or a bytearray at\n"
"least as long as block, reused for the texts (returned as text, its length unchanged: the\n"
"texts are out[:text_offsets[n]]), which spares a fresh buffer and its page faults per block.\n"
"The GIL is released while scanning.");

static PyObject *py_scan(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer block, idf, tf, table = {0}, uf = {0}, outbuf = {0};
    PyObject *table_obj, *url_obj = Py_None, *out_obj = Py_None;
    Py_ssize_t max_line;
    if (!PyArg_ParseTuple(args, "y*y*y*On|OO", &block, &idf, &tf, &table_obj, &max_line, &url_obj, &out_obj))
        return NULL;
    int have_table = 0, have_url = 0, have_out = 0;
    PyObject *kinds = NULL, *ends = NULL, *text = NULL, *toffs = NULL, *ids = NULL, *ioffs = NULL,
             *lengths = NULL, *spans = NULL, *urls = NULL, *uoffs = NULL, *result = NULL;
    if (url_obj != Py_None) {
        if (PyObject_GetBuffer(url_obj, &uf, PyBUF_SIMPLE) < 0) goto done;
        have_url = 1;
    }
    if (out_obj != Py_None) {
        /* a caller's bytearray for the texts (exported while scanning: it cannot be resized) */
        if (!PyByteArray_Check(out_obj)) {
            PyErr_SetString(PyExc_TypeError, "out must be a bytearray");
            goto done;
        }
        if (PyObject_GetBuffer(out_obj, &outbuf, PyBUF_WRITABLE) < 0) goto done;
        have_out = 1;
        if (outbuf.len < block.len) {
            PyErr_SetString(PyExc_ValueError, "out must be at least as long as the block");
            goto done;
        }
    }
    if (table_obj != Py_None) {
        if (PyObject_GetBuffer(table_obj, &table, PyBUF_SIMPLE) < 0) goto done;
        have_table = 1;
        if (table.len != TABLE_SIZE) {
            PyErr_SetString(PyExc_ValueError, "the table must have 0x110000 entries");
            goto done;
        }
    }
    const uint8_t *data = (const uint8_t *)block.buf;
    const size_t len = (size_t)block.len;
    size_t n = 0;
    for (const uint8_t *q = data; (q = memchr(q, '\n', (size_t)(data + len - q))) != NULL; q++) n++;
    if (len && data[len - 1] != '\n') n++;
    kinds = nd_new_bytearray(NULL, (Py_ssize_t)n);
    ends = nd_new_bytearray(NULL, (Py_ssize_t)(n * 8));
    toffs = nd_new_bytearray(NULL, (Py_ssize_t)((n + 1) * 8));
    ioffs = nd_new_bytearray(NULL, (Py_ssize_t)((n + 1) * 8));
    lengths = nd_new_bytearray(NULL, (Py_ssize_t)(n * 8));
    spans = nd_new_bytearray(NULL, (Py_ssize_t)(n * 16));
    /* decoded text is never longer than the JSON string it came from; ids are bounded likewise */
    if (have_out) {
        text = out_obj;
        Py_INCREF(text);
    } else {
        text = nd_new_bytearray(NULL, (Py_ssize_t)len);
    }
    ids = nd_new_bytearray(NULL, (Py_ssize_t)len);
    urls = nd_new_bytearray(NULL, have_url ? (Py_ssize_t)len : 0);
    uoffs = nd_new_bytearray(NULL, (Py_ssize_t)((n + 1) * 8));
    if (!kinds || !ends || !toffs || !ioffs || !lengths || !spans || !text || !ids || !urls || !uoffs) goto done;
    uint8_t *k = (uint8_t *)PyByteArray_AS_STRING(kinds);
    int64_t *e = (int64_t *)PyByteArray_AS_STRING(ends), *to = (int64_t *)PyByteArray_AS_STRING(toffs),
            *io = (int64_t *)PyByteArray_AS_STRING(ioffs), *ln = (int64_t *)PyByteArray_AS_STRING(lengths),
            *sp = (int64_t *)PyByteArray_AS_STRING(spans), *uo = (int64_t *)PyByteArray_AS_STRING(uoffs);
    uint8_t *tout = have_out ? (uint8_t *)outbuf.buf : (uint8_t *)PyByteArray_AS_STRING(text),
            *iout = (uint8_t *)PyByteArray_AS_STRING(ids), *uout = (uint8_t *)PyByteArray_AS_STRING(urls);
    fields_t f = {(const uint8_t *)idf.buf, (const uint8_t *)tf.buf, have_url ? (const uint8_t *)uf.buf : NULL,
                  (size_t)idf.len, (size_t)tf.len, have_url ? (size_t)uf.len : 0,
                  have_table ? (const uint8_t *)table.buf : NULL};
    size_t tpos = 0, ipos = 0, upos = 0;
    Py_BEGIN_ALLOW_THREADS
    const uint8_t *p = data, *end = data + len;
    to[0] = io[0] = uo[0] = 0;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        const uint8_t *line_end = nl ? nl : end, *next = nl ? nl + 1 : end;
        size_t tl = 0, il = 0, ul = 0, ncp = 0, span[2] = {0, 0};
        int kind;
        /* the Python reader's size: without "\n" or "\r\n" */
        if (max_line >= 0 && (size_t)(line_end - p) - (nl && line_end > p && line_end[-1] == '\r') > (size_t)max_line)
            kind = K_FALLBACK;
        else
            kind = scan_line(&f, p, line_end, tout + tpos, &tl, &ncp, span, iout + ipos, &il, uout + upos, &ul);
        if (kind & K_FALLBACK) {
            kind = K_FALLBACK;
            tl = il = ul = ncp = span[0] = span[1] = 0;
        }
        sp[2 * i] = (int64_t)span[0];
        sp[2 * i + 1] = (int64_t)span[1];
        k[i] = (uint8_t)kind;
        e[i] = (int64_t)(next - data);
        tpos += tl;
        ipos += il;
        upos += ul;
        to[i + 1] = (int64_t)tpos;
        io[i + 1] = (int64_t)ipos;
        uo[i + 1] = (int64_t)upos;
        ln[i] = (int64_t)ncp;
        p = next;
    }
    Py_END_ALLOW_THREADS
    if (have_out) { /* the export ends before the caller gets its bytearray back */
        PyBuffer_Release(&outbuf);
        have_out = 0;
    } else if (PyByteArray_Resize(text, (Py_ssize_t)tpos) < 0) {
        goto done;
    }
    if (PyByteArray_Resize(ids, (Py_ssize_t)ipos) < 0 ||
        PyByteArray_Resize(urls, (Py_ssize_t)upos) < 0)
        goto done;
    result = PyTuple_Pack(10, kinds, ends, text, toffs, ids, ioffs, lengths, spans, urls, uoffs);
done:
    Py_XDECREF(kinds);
    Py_XDECREF(ends);
    Py_XDECREF(text);
    Py_XDECREF(toffs);
    Py_XDECREF(ids);
    Py_XDECREF(ioffs);
    Py_XDECREF(lengths);
    Py_XDECREF(spans);
    Py_XDECREF(urls);
    Py_XDECREF(uoffs);
    if (have_url) PyBuffer_Release(&uf);
    if (have_out) PyBuffer_Release(&outbuf);
    if (have_table) PyBuffer_Release(&table);
    PyBuffer_Release(&tf);
    PyBuffer_Release(&idf);
    PyBuffer_Release(&block);
    return result;
}

PyDoc_STRVAR(line_ends_doc,
"line_ends(block) -> bytearray of int64\n\n"
"Where each line of the bytes-like block ends: the offset after its \"\\n\" (the block's length for\n"
"a last line without one). Lines as readline() gives them. The GIL is released.");

static PyObject *py_line_ends(PyObject *self, PyObject *arg) {
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    const char *data = (const char *)view.buf;
    const size_t len = (size_t)view.len;
    size_t n = 0, cap = 1024;
    int64_t *ends = malloc(cap * sizeof(int64_t));
    int oom = !ends;
    Py_BEGIN_ALLOW_THREADS
    const char *p = data, *end = data + len;
    while (!oom && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl ? nl + 1 : end;
        if (n == cap) {
            int64_t *more = realloc(ends, 2 * cap * sizeof(int64_t));
            if (!more) {
                oom = 1;
                break;
            }
            ends = more;
            cap *= 2;
        }
        ends[n++] = (int64_t)(stop - data);
        p = stop;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    PyObject *result = oom ? PyErr_NoMemory()
                           : nd_new_bytearray((const char *)ends, (Py_ssize_t)(n * sizeof(int64_t)));
    free(ends);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", py_scan, METH_VARARGS, scan_doc},
    {"line_ends", py_line_ends, METH_O, line_ends_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "neardup._jsonl",
    "The JSONL reader's fast path: ordinary records' ids and texts as UTF-8, scanned off the GIL.",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__jsonl(void) {
    PyObject *mod = PyModule_Create(&moduledef);
    if (!mod) return NULL;
    PyObject *spaces = PyTuple_New(sizeof(SPACES) / sizeof(SPACES[0]));
    if (!spaces) {
        Py_DECREF(mod);
        return NULL;
    }
    for (size_t i = 0; i < sizeof(SPACES) / sizeof(SPACES[0]); i++)
        PyTuple_SET_ITEM(spaces, (Py_ssize_t)i, PyLong_FromUnsignedLong(SPACES[i]));
    if (PyModule_AddIntConstant(mod, "FLAGGED", K_FLAGGED) < 0 || PyModule_AddIntConstant(mod, "NO_ID", K_NO_ID) < 0 ||
        PyModule_AddIntConstant(mod, "FALLBACK", K_FALLBACK) < 0 ||
        PyModule_AddIntConstant(mod, "NO_URL", K_NO_URL) < 0 ||
        PyModule_AddObject(mod, "SPACES", spaces) < 0) {
        Py_XDECREF(spaces);
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
