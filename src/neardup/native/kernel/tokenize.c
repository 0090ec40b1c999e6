/*
 * Classification of code points and pass 1: a document split into units.
 * Part of neardup._kernel; the overview is in kernel.h.
 */

#include "kernel.h"

/* The folding of cp, or NULL when it has none. */
static inline const uint32_t *fold_of(const classes_t *c, uint32_t cp) {
    size_t lo = 0, hi = c->nfold;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        uint32_t x = c->fold[4 * mid];
        if (x == cp) return c->fold + 4 * mid;
        if (x < cp) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

static int is_linebreak(uint32_t cp) {
    /* str.splitlines(): \n \v \f \r \x1c \x1d \x1e \x85 \u2028 \u2029 (\r\n is one boundary,
     * but the empty line between \r and \n would be dropped anyway) */
    return (cp >= 0x0A && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1E) || cp == 0x85 || cp == 0x2028 ||
           cp == 0x2029;
}

/* Returns 0 if the fold table is malformed (unsorted, or ASCII folding to non-ASCII). */
ND_HIDDEN int classes_init(classes_t *c, const uint8_t *table, int unit, int keep_punct,
                        const uint32_t *fold, size_t nfold) {
    c->table = table;
    c->unit = unit;
    c->hash = H_XXH3; /* callers that hash otherwise set it after */
    c->fold = fold;
    c->nfold = nfold;
    for (size_t i = 0; i < nfold; i++) {
        const uint32_t *e = fold + 4 * i;
        if (i && e[0] <= e[-4]) return 0; /* sorted, distinct */
        if (e[0] >= TABLE_SIZE || e[1] == 0) return 0;
        uint8_t tmp[4];
        size_t in = utf8_encode(e[0], tmp), out = 0, count = 0;
        for (int j = 1; j < 4; j++) {
            if (e[j] == 0) {
                for (int r = j + 1; r < 4; r++)
                    if (e[r]) return 0;
                break;
            }
            if (e[j] >= TABLE_SIZE) return 0;
            out += utf8_encode(e[j], tmp) + 1; /* bytes, and a separator before each */
            count++;
        }
        /* the worst-case buffer factors (see split_units) must cover every folding */
        if (out > FOLD_OUT_FACTOR * in || count > FOLD_POS_FACTOR * in) return 0;
    }
    for (int i = 0; i < 256; i++) c->remap[i] = C_SEP;
    c->remap[C_WORD] = C_WORD;
    c->remap[C_SOLO] = C_SOLO;
    c->remap[C_PUNCT] = keep_punct ? C_WORD : C_SEP;
    c->ascii_simple = 1;
    c->ascii_lower = 0;
    int identity = 1, lower = 1;
    for (int i = 0; i < 128; i++) {
        uint32_t f = (uint32_t)i;
        if (table[i] & FOLD_FLAG) {
            const uint32_t *e = fold_of(c, (uint32_t)i);
            if (e) {
                if (e[1] >= 0x80 || e[2] != 0) return 0;
                f = e[1];
            }
        }
        c->amap[i] = (uint8_t)f;
        c->ascii[i] = (unit == U_LINE && is_linebreak(f)) ? C_LB : c->remap[table[f] & 0x7F];
        identity &= f == (uint32_t)i;
        lower &= f == (uint32_t)((i >= 'A' && i <= 'Z') ? i + 32 : i);
    }
    if (!identity) {
        if (lower)
            c->ascii_lower = 1;
        else
            c->ascii_simple = 0;
    }
    memset(c->word_bits, 0, sizeof(c->word_bits));
    memset(c->lb_bits, 0, sizeof(c->lb_bits));
    for (int i = 0; i < 128; i++) {
        uint8_t k = c->ascii[i];
        if (k == C_WORD) c->word_bits[i & 15] |= (uint8_t)(1u << (i >> 4));
        else if (k == C_LB) c->lb_bits[i & 15] |= (uint8_t)(1u << (i >> 4));
        else if (k != C_SEP) c->ascii_simple = 0;
    }
    return 1;
}

/* Decode one non-ASCII code point at p (p < end, *p >= 0x80). Sets *n to its length in bytes.
 * Surrogates (from 'surrogatepass') are decoded like any other 3-byte sequence. Malformed or
 * truncated sequences and overlong forms give BAD_CP with *n = 1. */
static inline uint32_t decode_nonascii(const uint8_t *p, const uint8_t *end, size_t *n) {
    uint32_t c0 = p[0];
    size_t avail = (size_t)(end - p);
    if (c0 < 0xC2) goto bad;
    if (c0 < 0xE0) {
        if (avail < 2 || (p[1] & 0xC0) != 0x80) goto bad;
        *n = 2;
        return ((c0 & 0x1F) << 6) | (p[1] & 0x3F);
    }
    if (c0 < 0xF0) {
        if (avail < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) goto bad;
        uint32_t cp = ((c0 & 0x0F) << 12) | ((uint32_t)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
        if (cp < 0x800) goto bad;
        *n = 3;
        return cp;
    }
    if (c0 < 0xF5) {
        if (avail < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80)
            goto bad;
        uint32_t cp = ((c0 & 0x07) << 18) | ((uint32_t)(p[1] & 0x3F) << 12) |
                      ((uint32_t)(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
        if (cp < 0x10000 || cp > 0x10FFFF) goto bad;
        *n = 4;
        return cp;
    }
bad:
    *n = 1;
    return BAD_CP;
}

/* ------------------------------------------------------------------------------------------ */
/* Pass 1: split into units                                                                    */
/* ------------------------------------------------------------------------------------------ */

/*
 * Writes the units of s[0:len] into out, joined by their joiner, and the start of each unit
 * into pos (plus a sentinel pos[n] such that unit i ends at pos[i+1] - gap, where gap is the
 * joiner length). Returns the number of units; *out_len receives the bytes written.
 *
 *   word: tokens are maximal runs of WORD (PUNCT too when kept) and single SOLO code points;
 *         out = " ".join(tokens)
 *   char: out = normalize(text): kept code points, each run of others one space, stripped;
 *         units are the code points of out
 *   line: lines split like str.splitlines(); each line's word tokens joined by " "; empty
 *         lines dropped; out = "\n".join(lines)
 *
 * Capacity: every step but a case-folding expansion writes at most 2 bytes and 1 unit per input
 * byte, so 2*len + OUT_SLACK bytes and len + 2 units always suffice without folding. Before an
 * expansion, split_step checks that the rest still fits at that rate; if not, it sets overflow
 * and stops, and the caller retries with the worst-case sizes (FOLD_OUT_FACTOR, ...).
 */
#define OUT_SLACK 64

typedef struct {
    size_t o, nu;
    int in_word, line_has, pending;
    int overflow;
    size_t cap_out, cap_pos;
} split_state;

/* Opens a new word token (word and line units). */
static inline void open_token(const int unit, split_state *st, uint8_t *out, uint32_t *pos) {
    if (unit == U_WORD) {
        if (st->nu) out[st->o++] = ' ';
        pos[st->nu++] = (uint32_t)st->o;
    } else if (st->line_has) {
        out[st->o++] = ' ';
    } else {
        if (st->nu) out[st->o++] = '\n';
        pos[st->nu++] = (uint32_t)st->o;
        st->line_has = 1;
    }
}

/* Acts on one (folded) code point of class cls whose UTF-8 bytes are b[0:n]. */
static inline void split_cp(const int unit, int cls, const uint8_t *b, size_t n, uint8_t *out,
                            uint32_t *pos, split_state *st) {
    switch (cls) {
    case C_WORD:
        if (unit == U_CHAR) {
            if (st->pending) {
                pos[st->nu++] = (uint32_t)st->o;
                out[st->o++] = ' ';
                st->pending = 0;
            }
            pos[st->nu++] = (uint32_t)st->o;
        } else if (!st->in_word) {
            open_token(unit, st, out, pos);
            st->in_word = 1;
        }
        break;
    case C_SOLO:
        if (unit == U_CHAR) {
            if (st->pending) {
                pos[st->nu++] = (uint32_t)st->o;
                out[st->o++] = ' ';
                st->pending = 0;
            }
            pos[st->nu++] = (uint32_t)st->o;
        } else {
            open_token(unit, st, out, pos);
        }
        st->in_word = 0;
        break;
    case C_LB:
        st->line_has = 0;
        st->in_word = 0;
        return;
    default: /* separator */
        st->in_word = 0;
        if (unit == U_CHAR && st->nu) st->pending = 1;
        return;
    }
    if (n == 1) {
        out[st->o++] = b[0];
    } else {
        memcpy(out + st->o, b, n);
        st->o += n;
    }
}

/* Consumes one code point at p (p < end); returns the position after it. */
static inline const uint8_t *split_step(const classes_t *cl, const int unit, const uint8_t *p,
                                        const uint8_t *end, uint8_t *out, uint32_t *pos,
                                        split_state *st) {
    uint8_t c = *p;
    if (c < 0x80) {
        uint8_t f = cl->amap[c];
        split_cp(unit, cl->ascii[c], &f, 1, out, pos, st);
        return p + 1;
    }
    size_t n;
    uint32_t cp = decode_nonascii(p, end, &n);
    if (cp == BAD_CP) {
        split_cp(unit, C_SEP, p, 1, out, pos, st);
        return p + 1;
    }
    uint8_t raw = cl->table[cp];
    const uint32_t *e;
    if ((raw & FOLD_FLAG) && (e = fold_of(cl, cp)) != NULL) {
        /* room for this expansion (<= 3 code points, a space before each, a pending space)
         * plus the rest of the text at the no-folding rate */
        const size_t rest = (size_t)(end - (p + n));
        if (st->o + 16 + 2 * rest + OUT_SLACK > st->cap_out || st->nu + 4 + rest + 2 > st->cap_pos) {
            st->overflow = 1;
            return end;
        }
        for (int i = 1; i < 4 && e[i]; i++) {
            uint8_t b[4];
            size_t m = utf8_encode(e[i], b);
            int cls = (unit == U_LINE && is_linebreak(e[i])) ? C_LB : cl->remap[cl->table[e[i]] & 0x7F];
            split_cp(unit, cls, b, m, out, pos, st);
        }
        return p + n;
    }
    int cls = (unit == U_LINE && (cp == 0x85 || cp == 0x2028 || cp == 0x2029)) ? C_LB
                                                                              : cl->remap[raw & 0x7F];
    split_cp(unit, cls, p, n, out, pos, st);
    return p + n;
}

static inline size_t split_finish(const int unit, split_state *st, uint32_t *pos, split_state *init,
                                  size_t *out_len) {
    pos[st->nu] = (uint32_t)(unit == U_CHAR ? st->o : st->o + 1);
    *out_len = st->o;
    init->overflow = st->overflow;
    return st->nu;
}

static inline size_t split_impl(const classes_t *cl, const int unit, const uint8_t *s, size_t len,
                                uint8_t *out, uint32_t *pos, split_state *init, size_t *out_len) {
    const uint8_t *p = s, *end = s + len;
    split_state st = *init;
    while (p < end) p = split_step(cl, unit, p, end, out, pos, &st);
    return split_finish(unit, &st, pos, init, out_len);
}

#if ND_X86
/*
 * Word and line units with AVX2: 32 bytes at a time while they are ASCII. The WORD bytes of a
 * block (a bitmap lookup with two pshufb) form a bit mask whose runs are the token pieces;
 * each run is copied with one 32-byte store. Non-ASCII code points go through split_step.
 * Same output as split_impl (requires cl->ascii_simple).
 */
__attribute__((target("avx2,bmi,bmi2"))) static size_t
split_words_avx2(const classes_t *cl, const int unit, const uint8_t *s, size_t len, uint8_t *out,
                 uint32_t *pos, split_state *init, size_t *out_len) {
    const uint8_t *p = s, *end = s + len;
    split_state st = *init;
    const __m256i nib = _mm256_set1_epi8(0x0F);
    const __m256i zero = _mm256_setzero_si256();
    const __m256i wrow = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)cl->word_bits));
    const __m256i lrow = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)cl->lb_bits));
    const __m256i hibit = _mm256_setr_epi8(1, 2, 4, 8, 16, 32, 64, (char)128, 0, 0, 0, 0, 0, 0, 0, 0,
                                           1, 2, 4, 8, 16, 32, 64, (char)128, 0, 0, 0, 0, 0, 0, 0, 0);
    while (end - p >= 64) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)p);
        const uint32_t high = (uint32_t)_mm256_movemask_epi8(v);
        const unsigned f = high ? (unsigned)_tzcnt_u32(high) : 32u; /* ASCII prefix length */
        if (f) {
            const __m256i lo = _mm256_and_si256(v, nib);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nib);
            const __m256i bit = _mm256_shuffle_epi8(hibit, hi);
            const uint64_t lim = f == 32 ? 0xFFFFFFFFull : ((1ull << f) - 1);
            const __m256i w = _mm256_and_si256(_mm256_shuffle_epi8(wrow, lo), bit);
            uint64_t m = ~(uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(w, zero)) & lim;
            uint64_t lm = 0;
            if (unit == U_LINE) {
                const __m256i l = _mm256_and_si256(_mm256_shuffle_epi8(lrow, lo), bit);
                lm = ~(uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(l, zero)) & lim;
            }
            const int last_is_word = (int)((m >> (f - 1)) & 1);
            while (m) {
                const unsigned start = (unsigned)_tzcnt_u64(m);
                const unsigned stop = start + (unsigned)_tzcnt_u64(~(m >> start));
                if (unit == U_LINE && _bzhi_u64(lm, start)) st.line_has = 0;
                if (start != 0 || !st.in_word) open_token(unit, &st, out, pos);
                __m256i run = _mm256_loadu_si256((const __m256i *)(p + start));
                if (cl->ascii_lower) {
                    const __m256i up = _mm256_and_si256(_mm256_cmpgt_epi8(run, _mm256_set1_epi8('A' - 1)),
                                                        _mm256_cmpgt_epi8(_mm256_set1_epi8('Z' + 1), run));
                    run = _mm256_or_si256(run, _mm256_and_si256(up, _mm256_set1_epi8(0x20)));
                }
                _mm256_storeu_si256((__m256i *)(out + st.o), run);
                st.o += stop - start;
                st.in_word = 1;
                m &= ~0ull << stop; /* stop <= 32 */
                if (unit == U_LINE) lm &= ~0ull << stop;
            }
            if (unit == U_LINE && lm) st.line_has = 0;
            st.in_word = last_is_word;
            p += f;
        }
        if (f < 32) {
            /* non-ASCII: the scalar step, for as long as the bytes stay non-ASCII */
            do {
                p = split_step(cl, unit, p, end, out, pos, &st);
            } while (p < end && *p >= 0x80);
        }
    }
    while (p < end) p = split_step(cl, unit, p, end, out, pos, &st);
    return split_finish(unit, &st, pos, init, out_len);
}

#endif

static size_t split_dispatch(const classes_t *cl, const uint8_t *s, size_t len, uint8_t *out,
                             uint32_t *pos, split_state *init, size_t *out_len, int use_simd) {
    switch (cl->unit) {
    case U_CHAR:
        return split_impl(cl, U_CHAR, s, len, out, pos, init, out_len);
    case U_LINE:
#if ND_X86
        if (use_simd && cl->ascii_simple) return split_words_avx2(cl, U_LINE, s, len, out, pos, init, out_len);
#endif
        return split_impl(cl, U_LINE, s, len, out, pos, init, out_len);
    default:
#if ND_X86
        if (use_simd && cl->ascii_simple) return split_words_avx2(cl, U_WORD, s, len, out, pos, init, out_len);
#endif
        return split_impl(cl, U_WORD, s, len, out, pos, init, out_len);
    }
}

/* The units of s[0:len] (see split_impl) into s->buf and s->pos; returns their number, or
 * (size_t)-1 when memory runs out. */
ND_HIDDEN size_t split_units(scratch_t *sc, const classes_t *cl, const uint8_t *s, size_t len,
                          size_t *out_len, int use_simd) {
    size_t fo = 2, fp = 1;
    for (;;) {
        if (!GROW(sc->buf, sc->buf_cap, fo * len + OUT_SLACK) || !GROW(sc->pos, sc->pos_cap, fp * len + 2))
            return (size_t)-1;
        split_state st = {0, 0, 0, 0, 0, 0, sc->buf_cap, sc->pos_cap};
        size_t nu = split_dispatch(cl, s, len, sc->buf, sc->pos, &st, out_len, use_simd);
        if (!st.overflow) return nu;
        if (fo == FOLD_OUT_FACTOR) return (size_t)-1; /* cannot happen: classes_init checked */
        fo = FOLD_OUT_FACTOR;
        fp = FOLD_POS_FACTOR;
    }
}

