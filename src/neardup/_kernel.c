/*
 * neardup._kernel: the compiled hot path of neardup (case folding, tokenize, shingle, hash,
 * MinHash) over batches of documents.
 *
 * Every function here reproduces a pure-Python definition exactly; tests/test_native.py
 * checks them against each other. The definitions are:
 *
 *   neardup.text.normalize   fold() = NFKC, then str.casefold
 *   neardup.text.charclass   class of every code point (SEP=0, WORD=1, SOLO=2, PUNCT=3)
 *   neardup.text.tokenize    word / char / line tokens of the folded text
 *   neardup.shingle          k consecutive tokens joined by " " (word), "" (char), "\n" (line);
 *                            fewer than k tokens (but some): one shingle of them all
 *   neardup.hashing          shingle id = XXH3-64 of the UTF-8 bytes, seed 0
 *   neardup.sketch.permutations   affine61, mulshift64 and mulshift32 permutation families
 *
 * The input is the UTF-8 (surrogatepass) encoding of text that Python has put in NFKC (when
 * asked); case folding happens here, from the running Python's str.casefold mapping passed in
 * as a table (casefold maps each code point on its own). A malformed byte sequence, which
 * str.encode never produces, counts as one separator byte. Each document is processed in four
 * passes over contiguous arrays:
 *
 *   1. split: decode, fold, classify, and write the units (tokens or lines) joined by their
 *      joiner into a scratch buffer, recording where each unit starts; a shingle is then a
 *      contiguous slice of that buffer, hashed without copying. With AVX2, runs of ASCII are
 *      classified 32 bytes at a time;
 *   2. hash: XXH3-64 of each shingle slice;
 *   3. distinct ids: an open-addressing set, or a sort when the ids are returned (the distinct
 *      count is always reported; MinHash runs over distinct ids only);
 *   4. MinHash: shingles outer, permutations inner over contiguous a/b/min arrays, four
 *      shingles per sweep; AVX2 versions are chosen at run time when the CPU has AVX2.
 *
 * The batch functions release the GIL, so Python threads run them on all cores.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include "_vendor/xxhash/xxhash.h" /* xxHash 0.8.2, BSD-2-Clause: _vendor/xxhash/LICENSE */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ND_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define ND_X86 0
#endif

#define TABLE_SIZE 0x110000

enum { C_SEP = 0, C_WORD = 1, C_SOLO = 2, C_PUNCT = 3, C_LB = 4 };
enum { U_WORD = 0, U_CHAR = 1, U_LINE = 2 };
enum { F_AFFINE61 = 0, F_MULSHIFT64 = 1, F_MULSHIFT32 = 2 };

#define P61 ((uint64_t)0x1FFFFFFFFFFFFFFFULL) /* 2**61 - 1 */
#define SIGN64 ((uint64_t)0x8000000000000000ULL)
#define BAD_CP 0xFFFFFFFFu

/* CPU features (cpu_features()); the AVX2 paths need all of CPU_AVX2_PATH. */
enum { CPU_AVX2 = 1, CPU_BMI1 = 2, CPU_BMI2 = 4, CPU_POPCNT = 8, CPU_OS_AVX = 16 };
#define CPU_AVX2_PATH (CPU_AVX2 | CPU_BMI1 | CPU_BMI2 | CPU_POPCNT | CPU_OS_AVX)

/* 0 = pick the fastest available; 1 = force the portable scalar code (tests). */
static int g_force_scalar = 0;

/* ------------------------------------------------------------------------------------------ */
/* Scratch memory, one per call (so per thread)                                               */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    uint8_t *buf;       /* units joined by their joiner */
    size_t buf_cap;
    uint32_t *pos;      /* start of each unit in buf, plus a sentinel */
    size_t pos_cap;
    uint64_t *ids;      /* shingle ids, then distinct ids */
    size_t ids_cap;
    uint64_t *set;      /* open-addressing set for dedup */
    size_t set_cap;
    uint64_t *tmp;      /* sort buffer */
    size_t tmp_cap;
    uint64_t *sorted;   /* an in-place sort's output, copied back */
    size_t sorted_cap;
    uint32_t *cnt;      /* bucket counts for the sort */
    size_t cnt_cap;
} scratch_t;

static void scratch_free(scratch_t *s) {
    free(s->buf);
    free(s->pos);
    free(s->ids);
    free(s->set);
    free(s->tmp);
    free(s->sorted);
    free(s->cnt);
    memset(s, 0, sizeof(*s));
}

/* Make *p hold at least n elements of size sz; returns 0 on allocation failure. */
static int grow(void **p, size_t *cap, size_t n, size_t sz) {
    if (n <= *cap) return 1;
    size_t c = *cap ? *cap : 256;
    while (c < n) c *= 2;
    void *q = realloc(*p, c * sz);
    if (!q) return 0;
    *p = q;
    *cap = c;
    return 1;
}

#define GROW(ptr, cap, n) grow((void **)&(ptr), &(cap), (n), sizeof(*(ptr)))

/* ------------------------------------------------------------------------------------------ */
/* Classification                                                                              */
/* ------------------------------------------------------------------------------------------ */

/*
 * Case folding (str.casefold) is a per-code-point mapping to one to three code points. The
 * Python side passes the mapping of every code point it changes (taken from the running
 * Python), sorted, as uint32 quadruples (cp, f1, f2, f3; unused slots 0), and marks those code
 * points in the class table with FOLD_FLAG.
 */
#define FOLD_FLAG 0x80
/* Buffer sizes per input byte that cover any folding (checked in classes_init): bytes of the
 * units with their joiners, and units. Without folding, 2 and 1 suffice. */
#define FOLD_OUT_FACTOR 5
#define FOLD_POS_FACTOR 2

typedef struct {
    const uint8_t *table; /* class per code point (| FOLD_FLAG), TABLE_SIZE entries */
    uint8_t remap[256];   /* class -> effective class (PUNCT becomes WORD or SEP) */
    uint8_t ascii[128];   /* effective class of folded ASCII bytes, C_LB for line breaks (line unit) */
    uint8_t amap[128];    /* folded ASCII byte (every ASCII code point folds to one ASCII one) */
    int unit;
    const uint32_t *fold; /* sorted (cp, f1, f2, f3) quadruples */
    size_t nfold;
    int ascii_simple;     /* ASCII bytes are WORD, SEP or LB and fold to themselves or A-Z to a-z */
    int ascii_lower;      /* ... and A-Z fold to a-z */
    uint8_t word_bits[16]; /* ASCII bitmaps for the AVX2 splitter: bit (b >> 4) of [b & 15] */
    uint8_t lb_bits[16];
} classes_t;

static inline size_t utf8_encode(uint32_t cp, uint8_t *out) {
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xC0 | (cp >> 6));
        out[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | (cp >> 12));
        out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (uint8_t)(0xF0 | (cp >> 18));
    out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

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
static int classes_init(classes_t *c, const uint8_t *table, int unit, int keep_punct,
                        const uint32_t *fold, size_t nfold) {
    c->table = table;
    c->unit = unit;
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

static int have_avx2(void);
#endif

static int simd_enabled(void);

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
static size_t split_units(scratch_t *sc, const classes_t *cl, const uint8_t *s, size_t len,
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

/* ------------------------------------------------------------------------------------------ */
/* Pass 2: hash shingles                                                                       */
/* ------------------------------------------------------------------------------------------ */

/* Splits one document and hashes its shingles into s->ids. Returns the number of shingles
 * (repeats included), or (size_t)-1 when memory runs out. */
static size_t doc_shingle_ids(scratch_t *s, const classes_t *cl, const uint8_t *text, size_t len,
                              size_t k, int use_simd, size_t *content_len) {
    size_t out_len = 0;
    size_t nu = split_units(s, cl, text, len, &out_len, use_simd);
    *content_len = out_len;
    if (nu == (size_t)-1) return (size_t)-1;
    if (nu == 0) return 0;
    if (nu < k) {
        if (!GROW(s->ids, s->ids_cap, 1)) return (size_t)-1;
        s->ids[0] = XXH3_64bits(s->buf, out_len);
        return 1;
    }
    size_t ns = nu - k + 1;
    if (!GROW(s->ids, s->ids_cap, ns)) return (size_t)-1;
    const uint8_t *buf = s->buf;
    const uint32_t *pos = s->pos;
    uint64_t *ids = s->ids;
    const uint32_t gap = cl->unit == U_CHAR ? 0 : 1;
    for (size_t i = 0; i < ns; i++) {
        uint32_t a = pos[i], b = pos[i + k] - gap;
        ids[i] = XXH3_64bits(buf + a, b - a);
    }
    return ns;
}

/* ------------------------------------------------------------------------------------------ */
/* Content fingerprints: BLAKE2b (RFC 7693), 8-byte digest                                     */
/* ------------------------------------------------------------------------------------------ */

/*
 * neardup.exact.fingerprint: int.from_bytes(blake2b(" ".join(words), digest_size=8), "big"),
 * which is the word unit's joined buffer. Unkeyed BLAKE2b with an 8-byte digest; the digest is
 * the little-endian bytes of h[0], read big-endian.
 */
static const uint64_t B2_IV[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
    0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL,
};

static const uint8_t B2_SIGMA[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
};

static inline uint64_t rotr64(uint64_t x, int r) { return (x >> r) | (x << (64 - r)); }

static inline uint64_t load64_le(const uint8_t *p) {
    uint64_t x;
    memcpy(&x, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    x = __builtin_bswap64(x);
#endif
    return x;
}

#define B2_G(a, b, c, d, x, y)                                                                    \
    do {                                                                                          \
        a = a + b + (x);                                                                          \
        d = rotr64(d ^ a, 32);                                                                    \
        c = c + d;                                                                                \
        b = rotr64(b ^ c, 24);                                                                    \
        a = a + b + (y);                                                                          \
        d = rotr64(d ^ a, 16);                                                                    \
        c = c + d;                                                                                \
        b = rotr64(b ^ c, 63);                                                                    \
    } while (0)

static void b2_compress(uint64_t h[8], const uint8_t block[128], uint64_t t, int last) {
    uint64_t m[16], v[16];
    for (int i = 0; i < 16; i++) m[i] = load64_le(block + 8 * i);
    for (int i = 0; i < 8; i++) {
        v[i] = h[i];
        v[i + 8] = B2_IV[i];
    }
    v[12] ^= t; /* the high word of the 128-bit counter stays 0 (inputs < 2**64 bytes) */
    if (last) v[14] = ~v[14];
    for (int r = 0; r < 12; r++) {
        const uint8_t *sg = B2_SIGMA[r];
        B2_G(v[0], v[4], v[8], v[12], m[sg[0]], m[sg[1]]);
        B2_G(v[1], v[5], v[9], v[13], m[sg[2]], m[sg[3]]);
        B2_G(v[2], v[6], v[10], v[14], m[sg[4]], m[sg[5]]);
        B2_G(v[3], v[7], v[11], v[15], m[sg[6]], m[sg[7]]);
        B2_G(v[0], v[5], v[10], v[15], m[sg[8]], m[sg[9]]);
        B2_G(v[1], v[6], v[11], v[12], m[sg[10]], m[sg[11]]);
        B2_G(v[2], v[7], v[8], v[13], m[sg[12]], m[sg[13]]);
        B2_G(v[3], v[4], v[9], v[14], m[sg[14]], m[sg[15]]);
    }
    for (int i = 0; i < 8; i++) h[i] ^= v[i] ^ v[i + 8];
}

#if ND_X86
/*
 * The same compression with the 4 x 4 state in four AVX2 registers, one row each: the four
 * column G functions run as one, then the rows are rotated so that the diagonals are columns
 * (the layout of the BLAKE2 authors' SIMD code). About twice the scalar speed.
 */
#define B2_ROTR32(x) _mm256_shuffle_epi32((x), _MM_SHUFFLE(2, 3, 0, 1))
#define B2_ROTR63(x) _mm256_or_si256(_mm256_srli_epi64((x), 63), _mm256_add_epi64((x), (x)))
#define B2_G4(a, b, c, d, x, y, r16, r24)                                                        \
    do {                                                                                          \
        a = _mm256_add_epi64(_mm256_add_epi64(a, b), x);                                          \
        d = B2_ROTR32(_mm256_xor_si256(d, a));                                                    \
        c = _mm256_add_epi64(c, d);                                                               \
        b = _mm256_shuffle_epi8(_mm256_xor_si256(b, c), r24);                                     \
        a = _mm256_add_epi64(_mm256_add_epi64(a, b), y);                                          \
        d = _mm256_shuffle_epi8(_mm256_xor_si256(d, a), r16);                                     \
        c = _mm256_add_epi64(c, d);                                                               \
        b = B2_ROTR63(_mm256_xor_si256(b, c));                                                    \
    } while (0)

__attribute__((target("avx2"))) static void b2_compress_avx2(uint64_t h[8], const uint8_t block[128], uint64_t t,
                                                            int last) {
    uint64_t m[16];
    for (int i = 0; i < 16; i++) m[i] = load64_le(block + 8 * i);
    const __m256i r16 = _mm256_setr_epi8(2, 3, 4, 5, 6, 7, 0, 1, 10, 11, 12, 13, 14, 15, 8, 9, 2, 3, 4, 5, 6, 7, 0,
                                         1, 10, 11, 12, 13, 14, 15, 8, 9);
    const __m256i r24 = _mm256_setr_epi8(3, 4, 5, 6, 7, 0, 1, 2, 11, 12, 13, 14, 15, 8, 9, 10, 3, 4, 5, 6, 7, 0, 1,
                                         2, 11, 12, 13, 14, 15, 8, 9, 10);
    const __m256i h0 = _mm256_loadu_si256((const __m256i *)h), h1 = _mm256_loadu_si256((const __m256i *)(h + 4));
    __m256i a = h0, b = h1;
    __m256i c = _mm256_loadu_si256((const __m256i *)B2_IV);
    __m256i d = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(B2_IV + 4)),
                                 _mm256_setr_epi64x((long long)t, 0, last ? -1LL : 0, 0));
    for (int r = 0; r < 12; r++) {
        const uint8_t *sg = B2_SIGMA[r];
        const __m256i x0 = _mm256_setr_epi64x((long long)m[sg[0]], (long long)m[sg[2]], (long long)m[sg[4]],
                                              (long long)m[sg[6]]);
        const __m256i y0 = _mm256_setr_epi64x((long long)m[sg[1]], (long long)m[sg[3]], (long long)m[sg[5]],
                                              (long long)m[sg[7]]);
        const __m256i x1 = _mm256_setr_epi64x((long long)m[sg[8]], (long long)m[sg[10]], (long long)m[sg[12]],
                                              (long long)m[sg[14]]);
        const __m256i y1 = _mm256_setr_epi64x((long long)m[sg[9]], (long long)m[sg[11]], (long long)m[sg[13]],
                                              (long long)m[sg[15]]);
        B2_G4(a, b, c, d, x0, y0, r16, r24);
        /* diagonals to columns: b, c, d rotated left by 1, 2, 3 lanes */
        b = _mm256_permute4x64_epi64(b, _MM_SHUFFLE(0, 3, 2, 1));
        c = _mm256_permute4x64_epi64(c, _MM_SHUFFLE(1, 0, 3, 2));
        d = _mm256_permute4x64_epi64(d, _MM_SHUFFLE(2, 1, 0, 3));
        B2_G4(a, b, c, d, x1, y1, r16, r24);
        b = _mm256_permute4x64_epi64(b, _MM_SHUFFLE(2, 1, 0, 3));
        c = _mm256_permute4x64_epi64(c, _MM_SHUFFLE(1, 0, 3, 2));
        d = _mm256_permute4x64_epi64(d, _MM_SHUFFLE(0, 3, 2, 1));
    }
    _mm256_storeu_si256((__m256i *)h, _mm256_xor_si256(h0, _mm256_xor_si256(a, c)));
    _mm256_storeu_si256((__m256i *)(h + 4), _mm256_xor_si256(h1, _mm256_xor_si256(b, d)));
}
#endif

/* int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big") */
static uint64_t blake2b_64(const uint8_t *data, size_t len, int simd) {
    void (*compress)(uint64_t *, const uint8_t *, uint64_t, int) = b2_compress;
#if ND_X86
    if (simd) compress = b2_compress_avx2;
#else
    (void)simd;
#endif
    uint64_t h[8];
    memcpy(h, B2_IV, sizeof(h));
    h[0] ^= 0x01010000ULL ^ 8; /* fanout 1, depth 1, no key, 8-byte digest */
    uint64_t t = 0;
    while (len > 128) {
        t += 128;
        compress(h, data, t, 0);
        data += 128;
        len -= 128;
    }
    uint8_t block[128] = {0};
    if (len) memcpy(block, data, len);
    t += len;
    compress(h, block, t, 1);
    return __builtin_bswap64(h[0]); /* digest bytes = h[0] little-endian; read big-endian */
}

/* ------------------------------------------------------------------------------------------ */
/* Pass 3: distinct ids, sorting                                                               */
/* ------------------------------------------------------------------------------------------ */

/*
 * Big documents first split their ids by the top 8 bits into 256 parts (two sequential passes,
 * 256 output streams), so that the per-part hash set or sort stays in the L1/L2 cache.
 */
#define SPLIT_ABOVE 8192

/* Distributes v[0:n] into out by the top 8 bits; part b is out[start[b]:start[b+1]]. */
static void split_top8(const uint64_t *v, size_t n, uint64_t *out, size_t start[257]) {
    size_t cnt[257] = {0};
    for (size_t i = 0; i < n; i++) cnt[(v[i] >> 56) + 1]++;
    for (int b = 1; b <= 256; b++) cnt[b] += cnt[b - 1];
    memcpy(start, cnt, sizeof(cnt));
    for (size_t i = 0; i < n; i++) out[cnt[v[i] >> 56]++] = v[i];
}

/* Writes the distinct values of in[0:n] to out (which may be in); returns their count, or
 * (size_t)-1 when memory runs out. */
static size_t dedup_set(scratch_t *s, const uint64_t *in, size_t n, uint64_t *out) {
    if (n <= 16) {
        size_t u = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t x = in[i];
            size_t j = 0;
            while (j < u && out[j] != x) j++;
            if (j == u) out[u++] = x;
        }
        return u;
    }
    int bits = 5;
    while (((size_t)1 << bits) < 2 * n) bits++;
    size_t cap = (size_t)1 << bits, mask = cap - 1;
    if (!GROW(s->set, s->set_cap, cap)) return (size_t)-1;
    uint64_t *set = s->set;
    memset(set, 0, cap * sizeof(uint64_t));
    int have_zero = 0;
    size_t u = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = in[i];
        if (x == 0) {
            if (!have_zero) {
                have_zero = 1;
                out[u++] = 0;
            }
            continue;
        }
        size_t h = (size_t)((x * 0x9E3779B97F4A7C15ULL) >> (64 - bits));
        for (;;) {
            uint64_t y = set[h];
            if (y == x) break;
            if (y == 0) {
                set[h] = x;
                out[u++] = x;
                break;
            }
            h = (h + 1) & mask;
        }
    }
    return u;
}

/* Keeps the distinct values of ids[0:n] (in no particular order); returns their count, or
 * (size_t)-1 when memory runs out. */
static size_t dedup(scratch_t *s, uint64_t *ids, size_t n) {
    if (n < 2) return n;
    if (n <= SPLIT_ABOVE) return dedup_set(s, ids, n, ids);
    if (!GROW(s->tmp, s->tmp_cap, n)) return (size_t)-1;
    size_t start[257], u = 0;
    split_top8(ids, n, s->tmp, start);
    for (int b = 0; b < 256; b++) {
        size_t k = dedup_set(s, s->tmp + start[b], start[b + 1] - start[b], ids + u);
        if (k == (size_t)-1) return k;
        u += k;
    }
    return u;
}

static void insertion_sort(uint64_t *v, size_t n) {
    for (size_t i = 1; i < n; i++) {
        uint64_t x = v[i];
        size_t j = i;
        while (j > 0 && v[j - 1] > x) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Sorts src[0:n] into dst, both sharing their top `skip` bits. Shingle ids are uniform hashes,
 * so one distribution pass on the next bits into about 2n buckets leaves dst nearly sorted
 * (only elements of one bucket, a few on average, out of order), which one insertion sort pass
 * finishes in linear time. When some bucket is unexpectedly large (repeats, skew), each bucket
 * is finished on its own (qsort for large ones). Returns 0 when memory runs out. */
static int bucket_sort(scratch_t *s, const uint64_t *src, uint64_t *dst, size_t n, int skip) {
    if (n <= 48) {
        /* n == 0 comes with src NULL (an empty scratch buffer): memmove must not see it */
        if (n) memmove(dst, src, n * sizeof(uint64_t));
        insertion_sort(dst, n);
        return 1;
    }
    int bits = 1;
    while (((size_t)1 << bits) < 2 * n && bits < 16) bits++;
    const size_t nb = (size_t)1 << bits, mask = nb - 1;
    const int shift = 64 - skip - bits;
    if (!GROW(s->cnt, s->cnt_cap, nb + 1)) return 0;
    uint32_t *cnt = s->cnt;
    memset(cnt, 0, (nb + 1) * sizeof(uint32_t));
    for (size_t i = 0; i < n; i++) cnt[((src[i] >> shift) & mask) + 1]++;
    uint32_t biggest = 0;
    for (size_t b = 1; b <= nb; b++) {
        biggest = cnt[b] > biggest ? cnt[b] : biggest;
        cnt[b] += cnt[b - 1];
    }
    /* cnt[b] = start of bucket b; the scatter moves it to the end of bucket b */
    for (size_t i = 0; i < n; i++) dst[cnt[(src[i] >> shift) & mask]++] = src[i];
    if (biggest > 64) {
        size_t start = 0;
        for (size_t b = 0; b < nb; b++) {
            size_t stop = cnt[b], m = stop - start;
            if (m > 64)
                qsort(dst + start, m, sizeof(uint64_t), cmp_u64);
            else if (m > 1)
                insertion_sort(dst + start, m);
            start = stop;
        }
    } else {
        insertion_sort(dst, n);
    }
    return 1;
}

/* Writes src[0:n] sorted ascending to dst (which must not overlap src). Returns 0 when memory
 * runs out. */
static int sort_into(scratch_t *s, const uint64_t *src, size_t n, uint64_t *dst) {
    if (n <= SPLIT_ABOVE) return bucket_sort(s, src, dst, n, 0);
    if (!GROW(s->tmp, s->tmp_cap, n)) return 0;
    size_t start[257];
    split_top8(src, n, s->tmp, start);
    for (int b = 0; b < 256; b++)
        if (!bucket_sort(s, s->tmp + start[b], dst + start[b], start[b + 1] - start[b], 8)) return 0;
    return 1;
}

/* Sorts v[0:n] ascending. Returns 0 when memory runs out. */
static int sort_u64(scratch_t *s, uint64_t *v, size_t n) {
    if (n <= 48) {
        insertion_sort(v, n);
        return 1;
    }
    if (!GROW(s->sorted, s->sorted_cap, n) || !sort_into(s, v, n, s->sorted)) return 0;
    memcpy(v, s->sorted, n * sizeof(uint64_t));
    return 1;
}

/* Drops repeats from sorted v[0:n]; returns the new length. */
static size_t unique_sorted(uint64_t *v, size_t n) {
    if (n < 2) return n;
    size_t u = 1;
    for (size_t i = 1; i < n; i++) {
        v[u] = v[i];
        u += v[i] != v[u - 1];
    }
    return u;
}

/* ------------------------------------------------------------------------------------------ */
/* Pass 4: MinHash                                                                             */
/* ------------------------------------------------------------------------------------------ */

/*
 * Coefficients, padded to a multiple of 4 permutations (padding: a = b = 0, never read back).
 *   mulshift64: h = a*x + b mod 2**64. The AVX2 code keeps values biased by 2**63 (top bit
 *               flipped) so that a signed compare orders them as unsigned: (a*x + b) ^ 2**63 ==
 *               a*x + (b ^ 2**63) mod 2**64, so only b is stored biased (bx).
 *   affine61:   h = (a*(x mod p) + b) mod p, p = 2**61 - 1, a, b < p.
 *   mulshift32: h = a*(x >> 32) + b mod 2**32, a, b < 2**32: eight 32-bit lanes per AVX2
 *               register (vpmulld, vpminud) instead of four emulated 64-bit products.
 */
typedef struct {
    size_t m, m4, m8;
    int family;
    uint64_t *a, *ahi, *b, *bx; /* 32-byte aligned, m4 entries each */
    uint64_t *work;             /* running minimums of the AVX2 code, m4 entries */
    uint32_t *a32, *b32, *work32; /* mulshift32: 32-byte aligned, m8 entries each */
    void *mem;
} coeffs_t;

static int coeffs_init(coeffs_t *c, const uint64_t *a, const uint64_t *b, size_t m, int family) {
    c->m = m;
    c->m4 = (m + 3) & ~(size_t)3;
    c->m8 = (m + 7) & ~(size_t)7;
    c->family = family;
    size_t bytes = 5 * c->m4 * sizeof(uint64_t) + 3 * c->m8 * sizeof(uint32_t) + 32;
    c->mem = calloc(1, bytes);
    if (!c->mem) return 0;
    uintptr_t base = ((uintptr_t)c->mem + 31) & ~(uintptr_t)31;
    c->a = (uint64_t *)base;
    c->ahi = c->a + c->m4;
    c->b = c->ahi + c->m4;
    c->bx = c->b + c->m4;
    c->work = c->bx + c->m4;
    c->a32 = (uint32_t *)(c->work + c->m4); /* m4 * 8 bytes is a multiple of 32 */
    c->b32 = c->a32 + c->m8;
    c->work32 = c->b32 + c->m8;
    for (size_t j = 0; j < m; j++) {
        c->a[j] = a[j];
        c->ahi[j] = a[j] >> 32;
        c->b[j] = b[j];
        c->bx[j] = b[j] ^ SIGN64;
        c->a32[j] = (uint32_t)a[j];
        c->b32[j] = (uint32_t)b[j];
    }
    return 1;
}

static void coeffs_free(coeffs_t *c) {
    free(c->mem);
    c->mem = NULL;
}

static inline uint64_t mod61(uint64_t x) {
    uint64_t r = (x & P61) + (x >> 61);
    return r >= P61 ? r - P61 : r;
}

/* Portable versions: mins[0:m] = min(mins, h_j(x)) over x in ids. */
static void minhash_mulshift_scalar(const coeffs_t *c, const uint64_t *ids, size_t n,
                                    uint64_t *mins) {
    const size_t m = c->m;
    const uint64_t *a = c->a, *b = c->b;
    for (size_t i = 0; i < n; i++) {
        const uint64_t x = ids[i];
        for (size_t j = 0; j < m; j++) {
            uint64_t h = a[j] * x + b[j];
            mins[j] = h < mins[j] ? h : mins[j];
        }
    }
}

static void minhash_mulshift32_scalar(const coeffs_t *c, const uint64_t *ids, size_t n,
                                      uint64_t *mins) {
    const size_t m = c->m;
    const uint32_t *a = c->a32, *b = c->b32;
    for (size_t i = 0; i < n; i++) {
        const uint32_t x = (uint32_t)(ids[i] >> 32);
        for (size_t j = 0; j < m; j++) {
            uint64_t h = (uint32_t)(a[j] * x + b[j]);
            mins[j] = h < mins[j] ? h : mins[j];
        }
    }
}

static void minhash_affine_scalar(const coeffs_t *c, const uint64_t *ids, size_t n, uint64_t *mins) {
    const size_t m = c->m;
    const uint64_t *a = c->a, *b = c->b;
    for (size_t i = 0; i < n; i++) {
        const uint64_t x = mod61(ids[i]);
        for (size_t j = 0; j < m; j++) {
            unsigned __int128 t = (unsigned __int128)a[j] * x + b[j]; /* < 2**122 + 2**61 */
            uint64_t r = ((uint64_t)t & P61) + (uint64_t)(t >> 61);   /* < 2**62 + 2 */
            r = (r & P61) + (r >> 61);                                  /* <= p + 2 */
            r = r >= P61 ? r - P61 : r;
            mins[j] = r < mins[j] ? r : mins[j];
        }
    }
}

#if ND_X86
#define MIN64(M, H) _mm256_blendv_epi8((M), (H), _mm256_cmpgt_epi64((M), (H)))

/* a*x + b mod 2**64 with two multiplies: xs = x with its 32-bit halves swapped, broadcast.
 * One vpmulld gives both cross products a_lo*x_hi and a_hi*x_lo (mod 2**32), in the two halves
 * of each 64-bit lane; their sum goes to the high half. */
__attribute__((target("avx2"))) static inline __m256i mul64b(__m256i a, __m256i x, __m256i xs, __m256i b) {
    const __m256i p = _mm256_mullo_epi32(a, xs);
    const __m256i cross = _mm256_slli_epi64(_mm256_add_epi64(p, _mm256_srli_epi64(p, 32)), 32);
    return _mm256_add_epi64(_mm256_add_epi64(_mm256_mul_epu32(a, x), b), cross);
}

__attribute__((target("avx2"))) static void
minhash_mulshift_avx2(coeffs_t *c, const uint64_t *ids, size_t n, uint64_t *mins_out) {
    const size_t m = c->m, m4 = c->m4;
    uint64_t *mins = c->work;
    for (size_t j = 0; j < m4; j++) mins[j] = (j < m ? mins_out[j] : UINT64_MAX) ^ SIGN64;
    const __m256i *A = (const __m256i *)c->a, *B = (const __m256i *)c->bx;
    __m256i *M = (__m256i *)mins;
    const size_t nv = m4 / 4;
    size_t i = 0;
#define SWAP32(x) (((x) >> 32) | ((x) << 32))
    for (; i + 4 <= n; i += 4) {
        const __m256i x0 = _mm256_set1_epi64x((long long)ids[i]);
        const __m256i x1 = _mm256_set1_epi64x((long long)ids[i + 1]);
        const __m256i x2 = _mm256_set1_epi64x((long long)ids[i + 2]);
        const __m256i x3 = _mm256_set1_epi64x((long long)ids[i + 3]);
        const __m256i y0 = _mm256_set1_epi64x((long long)SWAP32(ids[i]));
        const __m256i y1 = _mm256_set1_epi64x((long long)SWAP32(ids[i + 1]));
        const __m256i y2 = _mm256_set1_epi64x((long long)SWAP32(ids[i + 2]));
        const __m256i y3 = _mm256_set1_epi64x((long long)SWAP32(ids[i + 3]));
        for (size_t v = 0; v < nv; v++) {
            const __m256i a = _mm256_load_si256(A + v);
            const __m256i b = _mm256_load_si256(B + v);
            __m256i h0 = mul64b(a, x0, y0, b);
            __m256i h1 = mul64b(a, x1, y1, b);
            __m256i h2 = mul64b(a, x2, y2, b);
            __m256i h3 = mul64b(a, x3, y3, b);
            h0 = MIN64(h0, h1);
            h2 = MIN64(h2, h3);
            h0 = MIN64(h0, h2);
            _mm256_store_si256(M + v, MIN64(_mm256_load_si256(M + v), h0));
        }
    }
    for (; i < n; i++) {
        const __m256i x0 = _mm256_set1_epi64x((long long)ids[i]);
        const __m256i y0 = _mm256_set1_epi64x((long long)SWAP32(ids[i]));
        for (size_t v = 0; v < nv; v++) {
            const __m256i a = _mm256_load_si256(A + v);
            const __m256i b = _mm256_load_si256(B + v);
            _mm256_store_si256(M + v, MIN64(_mm256_load_si256(M + v), mul64b(a, x0, y0, b)));
        }
    }
#undef SWAP32
    for (size_t j = 0; j < m; j++) mins_out[j] = mins[j] ^ SIGN64;
}

/*
 * (a*x + b) mod p for 4 lanes, p = 2**61 - 1, a, x, b < p, all in 64-bit lanes.
 * With a = a1*2**32 + a0, x = x1*2**32 + x0 (a1, x1 < 2**29):
 *   a*x = a1*x1*2**64 + (a1*x0 + a0*x1)*2**32 + a0*x0
 *   2**64 = 8 (mod p); mid = a1*x0 + a0*x1 < 2**62 = mh*2**29 + ml with ml < 2**29, so
 *   mid*2**32 = mh*2**61 + ml*2**32 = mh + ml*2**32 (mod p); a0*x0 = (a0x0 & p) + (a0x0 >> 61).
 * The sum of the six parts (plus b) is < 4*2**61 + 2**34, folded once more and corrected once.
 * Results are < 2**61, so a signed compare orders them.
 */
__attribute__((target("avx2"))) static inline __m256i affine4(__m256i a, __m256i ah, __m256i b,
                                                              __m256i x, __m256i xh) {
    const __m256i P = _mm256_set1_epi64x((long long)P61);
    const __m256i p00 = _mm256_mul_epu32(a, x);
    const __m256i mid = _mm256_add_epi64(_mm256_mul_epu32(ah, x), _mm256_mul_epu32(a, xh));
    const __m256i p11 = _mm256_mul_epu32(ah, xh);
    __m256i s = _mm256_add_epi64(_mm256_slli_epi64(p11, 3), _mm256_srli_epi64(mid, 29));
    s = _mm256_add_epi64(s, _mm256_srli_epi64(_mm256_slli_epi64(mid, 35), 3));
    s = _mm256_add_epi64(s, _mm256_and_si256(p00, P));
    s = _mm256_add_epi64(s, _mm256_srli_epi64(p00, 61));
    s = _mm256_add_epi64(s, b);
    s = _mm256_add_epi64(_mm256_and_si256(s, P), _mm256_srli_epi64(s, 61)); /* <= p + 7 */
    /* s >= p  <=>  s > p - 1 */
    const __m256i ge = _mm256_cmpgt_epi64(s, _mm256_set1_epi64x((long long)(P61 - 1)));
    return _mm256_sub_epi64(s, _mm256_and_si256(ge, P));
}

__attribute__((target("avx2"))) static void
minhash_affine_avx2(coeffs_t *c, const uint64_t *ids, size_t n, uint64_t *mins_out) {
    const size_t m = c->m, m4 = c->m4;
    /* running mins start at 2**63 - 1 (above any value < p); UINT64_MAX is restored below */
    uint64_t *mins = c->work;
    for (size_t j = 0; j < m4; j++)
        mins[j] = (j < m && mins_out[j] != UINT64_MAX) ? mins_out[j] : (uint64_t)INT64_MAX;
    const __m256i *A = (const __m256i *)c->a, *AH = (const __m256i *)c->ahi,
                  *B = (const __m256i *)c->b;
    __m256i *M = (__m256i *)mins;
    const size_t nv = m4 / 4;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const uint64_t r0 = mod61(ids[i]), r1 = mod61(ids[i + 1]);
        const uint64_t r2 = mod61(ids[i + 2]), r3 = mod61(ids[i + 3]);
        const __m256i x0 = _mm256_set1_epi64x((long long)r0), y0 = _mm256_set1_epi64x((long long)(r0 >> 32));
        const __m256i x1 = _mm256_set1_epi64x((long long)r1), y1 = _mm256_set1_epi64x((long long)(r1 >> 32));
        const __m256i x2 = _mm256_set1_epi64x((long long)r2), y2 = _mm256_set1_epi64x((long long)(r2 >> 32));
        const __m256i x3 = _mm256_set1_epi64x((long long)r3), y3 = _mm256_set1_epi64x((long long)(r3 >> 32));
        for (size_t v = 0; v < nv; v++) {
            const __m256i a = _mm256_load_si256(A + v), ah = _mm256_load_si256(AH + v);
            const __m256i b = _mm256_load_si256(B + v);
            __m256i h0 = affine4(a, ah, b, x0, y0);
            __m256i h1 = affine4(a, ah, b, x1, y1);
            __m256i h2 = affine4(a, ah, b, x2, y2);
            __m256i h3 = affine4(a, ah, b, x3, y3);
            h0 = MIN64(h0, h1);
            h2 = MIN64(h2, h3);
            h0 = MIN64(h0, h2);
            _mm256_store_si256(M + v, MIN64(_mm256_load_si256(M + v), h0));
        }
    }
    for (; i < n; i++) {
        const uint64_t r0 = mod61(ids[i]);
        const __m256i x0 = _mm256_set1_epi64x((long long)r0), y0 = _mm256_set1_epi64x((long long)(r0 >> 32));
        for (size_t v = 0; v < nv; v++) {
            const __m256i a = _mm256_load_si256(A + v), ah = _mm256_load_si256(AH + v);
            const __m256i b = _mm256_load_si256(B + v);
            __m256i h0 = affine4(a, ah, b, x0, y0);
            _mm256_store_si256(M + v, MIN64(_mm256_load_si256(M + v), h0));
        }
    }
    for (size_t j = 0; j < m; j++) mins_out[j] = mins[j] == (uint64_t)INT64_MAX ? UINT64_MAX : mins[j];
}

/* Eight 32-bit lanes, four shingles per sweep. Running minimums start at 2**32 - 1; n > 0, so
 * every minimum ends as a real value (a value of 2**32 - 1 is a real value too). */
__attribute__((target("avx2"))) static void
minhash_mulshift32_avx2(coeffs_t *c, const uint64_t *ids, size_t n, uint64_t *mins_out) {
    const size_t m = c->m, m8 = c->m8;
    uint32_t *mins = c->work32;
    for (size_t j = 0; j < m8; j++) mins[j] = (j < m && mins_out[j] < UINT32_MAX) ? (uint32_t)mins_out[j] : UINT32_MAX;
    const __m256i *A = (const __m256i *)c->a32, *B = (const __m256i *)c->b32;
    __m256i *M = (__m256i *)mins;
    const size_t nv = m8 / 8;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const __m256i x0 = _mm256_set1_epi32((int)(uint32_t)(ids[i] >> 32));
        const __m256i x1 = _mm256_set1_epi32((int)(uint32_t)(ids[i + 1] >> 32));
        const __m256i x2 = _mm256_set1_epi32((int)(uint32_t)(ids[i + 2] >> 32));
        const __m256i x3 = _mm256_set1_epi32((int)(uint32_t)(ids[i + 3] >> 32));
        for (size_t v = 0; v < nv; v++) {
            const __m256i a = _mm256_load_si256(A + v);
            const __m256i b = _mm256_load_si256(B + v);
            __m256i h0 = _mm256_add_epi32(_mm256_mullo_epi32(a, x0), b);
            __m256i h1 = _mm256_add_epi32(_mm256_mullo_epi32(a, x1), b);
            __m256i h2 = _mm256_add_epi32(_mm256_mullo_epi32(a, x2), b);
            __m256i h3 = _mm256_add_epi32(_mm256_mullo_epi32(a, x3), b);
            h0 = _mm256_min_epu32(h0, h1);
            h2 = _mm256_min_epu32(h2, h3);
            h0 = _mm256_min_epu32(h0, h2);
            _mm256_store_si256(M + v, _mm256_min_epu32(_mm256_load_si256(M + v), h0));
        }
    }
    for (; i < n; i++) {
        const __m256i x0 = _mm256_set1_epi32((int)(uint32_t)(ids[i] >> 32));
        for (size_t v = 0; v < nv; v++) {
            const __m256i h0 = _mm256_add_epi32(_mm256_mullo_epi32(_mm256_load_si256(A + v), x0),
                                                _mm256_load_si256(B + v));
            _mm256_store_si256(M + v, _mm256_min_epu32(_mm256_load_si256(M + v), h0));
        }
    }
    for (size_t j = 0; j < m; j++) mins_out[j] = mins[j];
}

/*
 * Whether every instruction set the AVX2 paths are compiled for is usable: AVX2 (MinHash,
 * blake2b, the splitter), BMI1 and BMI2 (the splitter's tzcnt, andn, bzhi, shlx, shrx), POPCNT
 * (the intersections' block counts), and the OS saving the YMM registers (OSXSAVE and XCR0
 * bits 1-2). __builtin_cpu_supports("avx2") alone is not enough: hypervisors and emulators
 * report AVX2 without BMI2 (SIGILL in split_words_avx2), and a kernel may leave AVX state off.
 * Read from CPUID directly, so that the test is the same under gcc and clang.
 */
static unsigned cpu_features(void) {
    unsigned f = 0, eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    if (ecx & bit_POPCNT) f |= CPU_POPCNT;
    if ((ecx & bit_OSXSAVE) && (ecx & bit_AVX)) {
        uint32_t lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        if ((lo & 6) == 6) f |= CPU_OS_AVX; /* XMM and YMM state enabled */
    }
    if (__get_cpuid_max(0, NULL) >= 7) {
        __cpuid_count(7, 0, eax, ebx, ecx, edx);
        if (ebx & bit_AVX2) f |= CPU_AVX2;
        if (ebx & bit_BMI) f |= CPU_BMI1;
        if (ebx & bit_BMI2) f |= CPU_BMI2;
    }
    return f;
}

static int have_avx2(void) {
    static int cached = -1;
    if (cached < 0) cached = (cpu_features() & CPU_AVX2_PATH) == CPU_AVX2_PATH;
    return cached;
}
#endif

/* mins[0:m] = min(mins, h_j(x)) over x in ids[0:n]. */
static void minhash_update(coeffs_t *c, const uint64_t *ids, size_t n, uint64_t *mins,
                           int use_simd) {
    if (n == 0) return;
#if ND_X86
    if (use_simd) {
        if (c->family == F_MULSHIFT64)
            minhash_mulshift_avx2(c, ids, n, mins);
        else if (c->family == F_MULSHIFT32)
            minhash_mulshift32_avx2(c, ids, n, mins);
        else
            minhash_affine_avx2(c, ids, n, mins);
        return;
    }
#else
    (void)use_simd;
#endif
    if (c->family == F_MULSHIFT64)
        minhash_mulshift_scalar(c, ids, n, mins);
    else if (c->family == F_MULSHIFT32)
        minhash_mulshift32_scalar(c, ids, n, mins);
    else
        minhash_affine_scalar(c, ids, n, mins);
}

static int simd_enabled(void) {
#if ND_X86
    return !g_force_scalar && have_avx2();
#else
    return 0;
#endif
}

/* ------------------------------------------------------------------------------------------ */
/* Argument helpers                                                                            */
/* ------------------------------------------------------------------------------------------ */

static int get_table(PyObject *obj, Py_buffer *view) {
    if (PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) < 0) return 0;
    if (view->len != TABLE_SIZE) {
        PyErr_Format(PyExc_ValueError, "class table must have %d entries, got %zd", TABLE_SIZE,
                     view->len);
        PyBuffer_Release(view);
        return 0;
    }
    return 1;
}

static int check_unit_k(int unit, Py_ssize_t k) {
    if (unit != U_WORD && unit != U_CHAR && unit != U_LINE) {
        PyErr_Format(PyExc_ValueError, "unit must be 0 (word), 1 (char) or 2 (line), got %d", unit);
        return 0;
    }
    if (k < 1) {
        PyErr_Format(PyExc_ValueError, "k must be >= 1, got %zd", k);
        return 0;
    }
    return 1;
}

/* The case-folding table: None, or a buffer of uint32 quadruples (copied: alignment). */
static int get_fold(PyObject *obj, uint32_t **fold, size_t *nfold) {
    *fold = NULL;
    *nfold = 0;
    if (obj == NULL || obj == Py_None) return 1;
    Py_buffer v;
    if (PyObject_GetBuffer(obj, &v, PyBUF_SIMPLE) < 0) return 0;
    if (v.len % 16) {
        PyBuffer_Release(&v);
        PyErr_SetString(PyExc_ValueError, "the fold table must hold uint32 quadruples");
        return 0;
    }
    *nfold = (size_t)v.len / 16;
    *fold = malloc(v.len ? (size_t)v.len : 16);
    if (!*fold) {
        PyBuffer_Release(&v);
        PyErr_NoMemory();
        return 0;
    }
    memcpy(*fold, v.buf, (size_t)v.len);
    PyBuffer_Release(&v);
    return 1;
}

static int init_classes(classes_t *cl, const Py_buffer *table, int unit, int keep, const uint32_t *fold,
                        size_t nfold) {
    if (!classes_init(cl, (const uint8_t *)table->buf, unit, keep, fold, nfold)) {
        PyErr_SetString(PyExc_ValueError,
                        "the fold table must be sorted by code point, and fold ASCII to ASCII");
        return 0;
    }
    return 1;
}

/* Documents are addressed with 32-bit positions in a buffer of up to 2*len + 1 bytes. */
#define MAX_DOC_BYTES ((size_t)0x30000000) /* 5 * len + slack < 2**32 */

/* The limit in force: MAX_DOC_BYTES, or lower for tests (set_max_doc_bytes), so that what a
 * caller does with a document over the limit can be tested without a 768 MiB document. */
static size_t g_max_doc_bytes = MAX_DOC_BYTES;

static int check_doc_len(size_t len) {
    if (len > g_max_doc_bytes) {
        PyErr_Format(PyExc_ValueError, "a document of %zu bytes is larger than the kernel's limit (%zu)",
                     len, g_max_doc_bytes);
        return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Python functions                                                                            */
/* ------------------------------------------------------------------------------------------ */

PyDoc_STRVAR(units_doc,
"units(data, table, unit, keep_punct, fold=None) -> list[bytes]\n\n"
"The units of one UTF-8 document (case folded first when a fold table is given): word\n"
"tokens (unit 0), code points of the normalized text (unit 1) or non-empty lines, each its\n"
"tokens joined by a space (unit 2). For tests.");

static PyObject *py_units(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer data, table;
    PyObject *table_obj, *fold_obj = NULL;
    int unit, keep;
    if (!PyArg_ParseTuple(args, "y*Oip|O", &data, &table_obj, &unit, &keep, &fold_obj)) return NULL;
    if (!get_table(table_obj, &table)) {
        PyBuffer_Release(&data);
        return NULL;
    }
    PyObject *result = NULL;
    scratch_t s = {0};
    uint32_t *fold = NULL;
    size_t nfold = 0;
    size_t len = (size_t)data.len;
    classes_t cl;
    if (!check_unit_k(unit, 1) || !check_doc_len(len) || !get_fold(fold_obj, &fold, &nfold) ||
        !init_classes(&cl, &table, unit, keep, fold, nfold))
        goto done;

    size_t out_len, nu = split_units(&s, &cl, (const uint8_t *)data.buf, len, &out_len, simd_enabled());
    if (nu == (size_t)-1) {
        PyErr_NoMemory();
        goto done;
    }
    uint32_t gap = unit == U_CHAR ? 0 : 1;
    result = PyList_New((Py_ssize_t)nu);
    if (!result) goto done;
    for (size_t i = 0; i < nu; i++) {
        PyObject *b = PyBytes_FromStringAndSize((const char *)s.buf + s.pos[i],
                                                (Py_ssize_t)(s.pos[i + 1] - gap - s.pos[i]));
        if (!b) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, (Py_ssize_t)i, b);
    }
done:
    free(fold);
    scratch_free(&s);
    PyBuffer_Release(&table);
    PyBuffer_Release(&data);
    return result;
}

PyDoc_STRVAR(shingle_ids_doc,
"shingle_ids(data, table, unit, k, keep_punct, fold=None) -> bytearray\n\n"
"Sorted distinct XXH3-64 shingle ids (native-endian uint64) of one UTF-8 document.\n"
"unit: 0 word, 1 char, 2 line; table: the uint8 class of every code point (0x110000 bytes),\n"
"| 0x80 on code points that case folding changes; fold: None (no case folding) or the\n"
"sorted uint32 quadruples (cp, f1, f2, f3) of str.casefold for those code points.");

static PyObject *py_shingle_ids(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer data, table;
    PyObject *table_obj, *fold_obj = NULL;
    int unit, keep;
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "y*Oinp|O", &data, &table_obj, &unit, &k, &keep, &fold_obj)) return NULL;
    if (!get_table(table_obj, &table)) {
        PyBuffer_Release(&data);
        return NULL;
    }
    PyObject *result = NULL;
    scratch_t s = {0};
    uint32_t *fold = NULL;
    size_t nfold = 0;
    size_t len = (size_t)data.len, n = 0;
    int oom = 0;
    classes_t cl;
    if (!check_unit_k(unit, k) || !check_doc_len(len) || !get_fold(fold_obj, &fold, &nfold) ||
        !init_classes(&cl, &table, unit, keep, fold, nfold))
        goto done;
    const int simd = simd_enabled();
    Py_BEGIN_ALLOW_THREADS
    size_t content_len;
    n = doc_shingle_ids(&s, &cl, (const uint8_t *)data.buf, len, (size_t)k, simd, &content_len);
    if (n != (size_t)-1) n = sort_u64(&s, s.ids, n) ? unique_sorted(s.ids, n) : (size_t)-1;
    oom = n == (size_t)-1;
    Py_END_ALLOW_THREADS
    if (oom) {
        PyErr_NoMemory();
        goto done;
    }
    result = PyByteArray_FromStringAndSize(n ? (const char *)s.ids : NULL, (Py_ssize_t)(n * 8));
done:
    free(fold);
    scratch_free(&s);
    PyBuffer_Release(&table);
    PyBuffer_Release(&data);
    return result;
}

PyDoc_STRVAR(signatures_doc,
"signatures(data, offsets, table, unit, k, keep_punct, a, b, family, with_ids, fold=None,\n"
"           with_fingerprints=False) -> (values, n_shingles, ids, fingerprints)\n\n"
"MinHash signatures of a batch of UTF-8 documents, document i being\n"
"data[offsets[i]:offsets[i+1]] (offsets: n+1 int64). a, b: uint64 coefficients of the\n"
"permutations; family 0 = affine61 ((a*(x mod p) + b) mod p, p = 2**61-1, a, b < p),\n"
"1 = mulshift64 (a*x + b mod 2**64), 2 = mulshift32 (a*(x >> 32) + b mod 2**32, a, b < 2**32).\n"
"Returns bytearrays: values (n*m uint64, row-major;\n"
"all 2**64-1 for a document without shingles), n_shingles (n int64, distinct shingles per\n"
"document), when with_ids the concatenated sorted distinct shingle ids (uint64), and when\n"
"with_fingerprints the content fingerprint of each document (uint64: BLAKE2b-64 of its word\n"
"tokens joined by spaces, 0 without tokens), else None. The GIL is released while computing.");

PyDoc_STRVAR(fingerprints_doc,
"fingerprints(data, offsets, table, keep_punct, fold=None) -> bytearray\n\n"
"Content fingerprints of a batch of UTF-8 documents (uint64 each): BLAKE2b with an 8-byte\n"
"digest, read big-endian, of the document's word tokens joined by single spaces; 0 for a\n"
"document without tokens. The GIL is released.");

static PyObject *py_fingerprints(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer data, offs, table;
    PyObject *offs_obj, *table_obj, *fold_obj = NULL;
    int keep;
    if (!PyArg_ParseTuple(args, "y*OOp|O", &data, &offs_obj, &table_obj, &keep, &fold_obj)) return NULL;
    int got_offs = 0, got_table = 0;
    PyObject *result = NULL;
    uint32_t *fold = NULL;
    size_t nfold = 0;
    int64_t *off = NULL;
    scratch_t s = {0};
    classes_t cl;
    if (PyObject_GetBuffer(offs_obj, &offs, PyBUF_SIMPLE) < 0) goto done;
    got_offs = 1;
    if (!get_table(table_obj, &table)) goto done;
    got_table = 1;
    if (!get_fold(fold_obj, &fold, &nfold) || !init_classes(&cl, &table, U_WORD, keep, fold, nfold)) goto done;
    if (offs.len % 8 || offs.len < 8) {
        PyErr_SetString(PyExc_ValueError, "offsets must be n+1 int64 values");
        goto done;
    }
    const size_t n = (size_t)offs.len / 8 - 1;
    off = malloc((size_t)offs.len);
    if (!off) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(off, offs.buf, (size_t)offs.len);
    int bad = off[0] < 0 || off[n] > (int64_t)data.len;
    for (size_t i = 0; i < n && !bad; i++)
        bad = off[i + 1] < off[i] || (size_t)(off[i + 1] - off[i]) > g_max_doc_bytes;
    if (bad) {
        PyErr_SetString(PyExc_ValueError,
                        "offsets must be non-decreasing, within the data, and documents under 768 MiB");
        goto done;
    }
    result = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(n * 8));
    if (!result) goto done;
    uint64_t *fps = (uint64_t *)PyByteArray_AS_STRING(result);
    const uint8_t *text = (const uint8_t *)data.buf;
    const int simd = simd_enabled();
    int oom = 0;
    Py_BEGIN_ALLOW_THREADS
    for (size_t i = 0; i < n; i++) {
        size_t clen;
        if (split_units(&s, &cl, text + off[i], (size_t)(off[i + 1] - off[i]), &clen, simd) == (size_t)-1) {
            oom = 1;
            break;
        }
        fps[i] = clen ? blake2b_64(s.buf, clen, simd) : 0;
    }
    Py_END_ALLOW_THREADS
    if (oom) {
        Py_CLEAR(result);
        PyErr_NoMemory();
    }
done:
    free(off);
    free(fold);
    scratch_free(&s);
    if (got_table) PyBuffer_Release(&table);
    if (got_offs) PyBuffer_Release(&offs);
    PyBuffer_Release(&data);
    return result;
}

/* uint64 values given as one buffer or as a list or tuple of buffers read as their
 * concatenation: dedup keeps the ids and signatures the kernel returned batch by batch (and a
 * memory map of what spilled) without joining them into one copy. */
typedef struct {
    Py_ssize_t n;
    Py_buffer *views;
    size_t *start; /* n + 1 cumulative counts of values */
} pieces_t;

static void pieces_release(pieces_t *p) {
    for (Py_ssize_t k = 0; k < p->n; k++) PyBuffer_Release(&p->views[k]);
    PyMem_Free(p->views);
    PyMem_Free(p->start);
    p->n = 0;
    p->views = NULL;
    p->start = NULL;
}

/* 1 on success; 0 with an exception set when obj is not uint64 buffers. */
static int pieces_get(PyObject *obj, pieces_t *p) {
    const int many = PyList_Check(obj) || PyTuple_Check(obj);
    /* a tuple of the list's items: each piece is held by its export, and the list may change
     * size or items meanwhile without affecting what is read */
    PyObject *seq = many ? PySequence_Tuple(obj) : NULL;
    if (many && !seq) return 0;
    const Py_ssize_t n = many ? PyTuple_GET_SIZE(seq) : 1;
    p->n = 0;
    p->views = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Py_buffer));
    p->start = PyMem_Calloc((size_t)n + 1, sizeof(size_t));
    if (!p->views || !p->start) {
        Py_XDECREF(seq);
        pieces_release(p);
        PyErr_NoMemory();
        return 0;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *item = many ? PyTuple_GET_ITEM(seq, k) : obj;
        if (PyObject_GetBuffer(item, &p->views[k], PyBUF_C_CONTIGUOUS) < 0) break;
        p->n = k + 1;
        if (p->views[k].itemsize != 8 || p->views[k].len % 8) {
            PyErr_SetString(PyExc_ValueError, "values must be uint64 buffers");
            break;
        }
        p->start[k + 1] = p->start[k] + (size_t)p->views[k].len / 8;
    }
    Py_XDECREF(seq);
    if (p->n != n || PyErr_Occurred()) {
        pieces_release(p);
        return 0;
    }
    return 1;
}

/* The values [pos, pos + len) when they lie in one piece, else NULL. */
static inline const uint64_t *pieces_at(const pieces_t *p, size_t pos, size_t len) {
    Py_ssize_t lo = 0, hi = p->n; /* the last piece whose start <= pos */
    while (hi - lo > 1) {
        const Py_ssize_t mid = (lo + hi) / 2;
        if (p->start[mid] <= pos) lo = mid;
        else hi = mid;
    }
    if (p->n == 0) return len == 0 ? (const uint64_t *)"" : NULL;
    if (pos + len > p->start[lo + 1] || pos < p->start[lo]) return NULL;
    return (const uint64_t *)p->views[lo].buf + (pos - p->start[lo]);
}

PyDoc_STRVAR(intersections_doc,
"intersections(ids, offsets, i, j) -> bytearray\n\n"
"|A & B| for each pair (i[q], j[q]) of sorted distinct id runs A = ids[offsets[i]:offsets[i+1]]\n"
"(ids: uint64, or a list of uint64 buffers read as their concatenation, each run within one;\n"
"offsets: int64, i, j: int64); int64 counts. The GIL is released.");

#if ND_X86
/* |A & B| of two sorted runs of distinct values, four of each at a time: all 16 pairs of a
 * block of A and a block of B compared at once (B's block in its four rotations), then the
 * block with the smaller last value moves on (both when equal). A value of A meets each block
 * of B that could hold it, once, so nothing is counted twice or missed; what is left when
 * either run has under four values is merged one by one. Sets *i and *j to where it stopped. */
__attribute__((target("avx2,popcnt"))) static int64_t intersect_blocks_avx2(const uint64_t *a, size_t na,
                                                                         const uint64_t *b, size_t nb,
                                                                         size_t *i_out, size_t *j_out) {
    size_t i = 0, j = 0;
    int64_t c = 0;
    while (i + 4 <= na && j + 4 <= nb) {
        const __m256i va = _mm256_loadu_si256((const __m256i *)(a + i));
        const __m256i vb = _mm256_loadu_si256((const __m256i *)(b + j));
        const __m256i r0 = _mm256_cmpeq_epi64(va, vb);
        const __m256i r1 = _mm256_cmpeq_epi64(va, _mm256_permute4x64_epi64(vb, 0x39));
        const __m256i r2 = _mm256_cmpeq_epi64(va, _mm256_permute4x64_epi64(vb, 0x4E));
        const __m256i r3 = _mm256_cmpeq_epi64(va, _mm256_permute4x64_epi64(vb, 0x93));
        const __m256i any = _mm256_or_si256(_mm256_or_si256(r0, r1), _mm256_or_si256(r2, r3));
        c += __builtin_popcount((unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(any)));
        const uint64_t amax = a[i + 3], bmax = b[j + 3];
        i += amax <= bmax ? 4 : 0;
        j += bmax <= amax ? 4 : 0;
    }
    *i_out = i;
    *j_out = j;
    return c;
}
#endif

/* |A & B| of two sorted runs of distinct values. */
static int64_t intersect_count(const uint64_t *a, size_t na, const uint64_t *b, size_t nb, int simd) {
    if (na > nb) {
        const uint64_t *t = a;
        a = b;
        b = t;
        size_t tn = na;
        na = nb;
        nb = tn;
    }
    int64_t c = 0;
    if (na == 0) return 0;
    if (nb / na >= 32) {
        /* very unequal sizes: binary search each element of the small run (galloping from the
         * last position) */
        size_t lo = 0;
        for (size_t x = 0; x < na && lo < nb; x++) {
            const uint64_t v = a[x];
            size_t step = 1, hi = lo;
            while (hi < nb && b[hi] < v) {
                lo = hi + 1;
                hi += step;
                step *= 2;
            }
            if (hi > nb) hi = nb;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (b[mid] < v) lo = mid + 1;
                else hi = mid;
            }
            if (lo < nb && b[lo] == v) {
                c++;
                lo++;
            }
        }
        return c;
    }
    size_t x = 0, y = 0;
#if ND_X86
    if (simd) c = intersect_blocks_avx2(a, na, b, nb, &x, &y);
#else
    (void)simd;
#endif
    while (x < na && y < nb) {
        const uint64_t u = a[x], v = b[y];
        c += u == v;
        x += u <= v;
        y += v <= u;
    }
    return c;
}

/* 1 when every pair (pi[q], pj[q]) indexes one of n rows. */
static int pairs_in_range(const int64_t *pi, const int64_t *pj, size_t np, size_t n) {
    for (size_t q = 0; q < np; q++)
        if (pi[q] < 0 || pj[q] < 0 || (size_t)pi[q] >= n || (size_t)pj[q] >= n) return 0;
    return 1;
}

/* A private copy of a C-contiguous buffer of int64 taken under the GIL (NULL with an exception
 * set when obj is not one): what the kernel validates and then reads with the GIL released must
 * be memory no other thread can write meanwhile, or a value could change between the check
 * and its use (an index past the end). *n is the number of values. */
static int64_t *int64_copy(PyObject *obj, size_t *n, const char *what) {
    Py_buffer v;
    if (PyObject_GetBuffer(obj, &v, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (v.itemsize != 8 || v.len % 8) {
        PyBuffer_Release(&v);
        PyErr_Format(PyExc_ValueError, "%s must be an int64 buffer", what);
        return NULL;
    }
    int64_t *out = malloc(v.len ? (size_t)v.len : 8);
    if (!out) {
        PyBuffer_Release(&v);
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(out, v.buf, (size_t)v.len);
    *n = (size_t)v.len / 8;
    PyBuffer_Release(&v);
    return out;
}

static PyObject *py_intersections(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *ids_obj, *offs_obj, *i_obj, *j_obj;
    if (!PyArg_ParseTuple(args, "OOOO", &ids_obj, &offs_obj, &i_obj, &j_obj)) return NULL;
    pieces_t ids;
    if (!pieces_get(ids_obj, &ids)) return NULL;
    PyObject *result = NULL;
    size_t noff = 0, np = 0, npj = 0;
    /* offsets and pairs copied: the ids are read through held buffer exports, and any values
     * they hold are safe to read; only the copied offsets and pairs index memory */
    int64_t *off = int64_copy(offs_obj, &noff, "offsets"), *pi = off ? int64_copy(i_obj, &np, "i") : NULL,
            *pj = pi ? int64_copy(j_obj, &npj, "j") : NULL;
    if (!pj) goto done;
    if (noff < 1 || np != npj) {
        PyErr_SetString(PyExc_ValueError, "ids: uint64; offsets: n+1 int64; i, j: int64 of equal length");
        goto done;
    }
    const size_t nid = ids.start[ids.n], n = noff - 1;
    int bad = off[0] < 0 || off[n] > (int64_t)nid;
    for (size_t q = 0; q < n && !bad; q++) bad = off[q + 1] < off[q];
    if (!bad) bad = !pairs_in_range(pi, pj, np, n);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "offsets must be non-decreasing within the ids, and pairs index runs");
        goto done;
    }
    result = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(np * 8));
    if (!result) goto done;
    int64_t *out = (int64_t *)PyByteArray_AS_STRING(result);
    int straddles = 0;
    const int simd = simd_enabled();
    Py_BEGIN_ALLOW_THREADS
    for (size_t q = 0; q < np; q++) {
        const int64_t a = pi[q], b = pj[q];
        const size_t na = (size_t)(off[a + 1] - off[a]), nb = (size_t)(off[b + 1] - off[b]);
        const uint64_t *ra = pieces_at(&ids, (size_t)off[a], na), *rb = pieces_at(&ids, (size_t)off[b], nb);
        if (!ra || !rb) {
            straddles = 1;
            break;
        }
        out[q] = intersect_count(ra, na, rb, nb, simd);
    }
    Py_END_ALLOW_THREADS
    if (straddles) {
        PyErr_SetString(PyExc_ValueError, "a run of ids crosses from one buffer to the next");
        Py_CLEAR(result);
    }
done:
    free(off);
    free(pi);
    free(pj);
    pieces_release(&ids);
    return result;
}

PyDoc_STRVAR(agreements_doc,
"agreements(values, m, i, j) -> bytearray of int64\n\n"
"For each pair (i[q], j[q]), how many of the m positions of rows i[q] and j[q] of the (n, m)\n"
"uint64 matrix values are equal (the MinHash estimate times m); values may be a list of uint64\n"
"buffers of whole rows read as their concatenation. The GIL is released.");

static PyObject *py_agreements(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *v_obj, *i_obj, *j_obj;
    Py_ssize_t m;
    if (!PyArg_ParseTuple(args, "OnOO", &v_obj, &m, &i_obj, &j_obj)) return NULL;
    pieces_t val;
    if (!pieces_get(v_obj, &val)) return NULL;
    PyObject *result = NULL;
    size_t np = 0, npj = 0;
    /* the pairs copied under the GIL (see int64_copy); the values are read through held exports */
    int64_t *pi = int64_copy(i_obj, &np, "i"), *pj = pi ? int64_copy(j_obj, &npj, "j") : NULL;
    if (!pj) goto done;
    int ragged = m <= 0;
    for (Py_ssize_t k = 0; k < val.n && !ragged; k++) ragged = (val.start[k + 1] - val.start[k]) % (size_t)m != 0;
    if (ragged || np != npj) {
        PyErr_SetString(PyExc_ValueError, "values: (n, m) uint64 in whole rows; i, j: int64 of equal length");
        goto done;
    }
    const size_t n = val.start[val.n] / (size_t)m;
    if (!pairs_in_range(pi, pj, np, n)) {
        PyErr_SetString(PyExc_ValueError, "pairs must index rows of values");
        goto done;
    }
    result = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(np * 8));
    if (!result) goto done;
    int64_t *out = (int64_t *)PyByteArray_AS_STRING(result);
    int straddles = 0;
    Py_BEGIN_ALLOW_THREADS
    for (size_t q = 0; q < np; q++) {
        /* every piece holds whole rows (checked above), so a row lies in one piece; the NULL
         * check keeps that an invariant checked here rather than a promise */
        const uint64_t *a = pieces_at(&val, (size_t)pi[q] * (size_t)m, (size_t)m),
                       *b = pieces_at(&val, (size_t)pj[q] * (size_t)m, (size_t)m);
        if (!a || !b) {
            straddles = 1;
            break;
        }
        int64_t c = 0;
        for (Py_ssize_t p = 0; p < m; p++) c += a[p] == b[p];
        out[q] = c;
    }
    Py_END_ALLOW_THREADS
    if (straddles) {
        PyErr_SetString(PyExc_ValueError, "a row of values crosses from one buffer to the next");
        Py_CLEAR(result);
    }
done:
    free(pi);
    free(pj);
    pieces_release(&val);
    return result;
}

/* The documents of one signatures() call: doc i is ptr[i][0:len[i]]. */
typedef struct {
    size_t n;
    const uint8_t **ptr;
    size_t *len;
} docs_t;

/* Parses the arguments after the data, runs the batch, returns the result tuple (or NULL). */
static PyObject *signatures_run(const docs_t *docs, PyObject *table_obj, int unit, Py_ssize_t k, int keep,
                                PyObject *a_obj, PyObject *b_obj, int family, int with_ids, PyObject *fold_obj,
                                int with_fps) {
    Py_buffer table, abuf, bbuf;
    uint32_t *fold = NULL;
    size_t nfold = 0;
    classes_t cl, clw;
    scratch_t sw = {0};
    PyObject *fps_out = NULL;
    int got_table = 0, got_a = 0, got_b = 0;
    PyObject *values = NULL, *counts = NULL, *ids_out = NULL, *result = NULL;
    scratch_t s = {0};
    coeffs_t co = {0};
    uint64_t *idbuf = NULL;
    size_t idlen = 0;

    if (!get_table(table_obj, &table)) goto done;
    got_table = 1;
    if (PyObject_GetBuffer(a_obj, &abuf, PyBUF_SIMPLE) < 0) goto done;
    got_a = 1;
    if (PyObject_GetBuffer(b_obj, &bbuf, PyBUF_SIMPLE) < 0) goto done;
    got_b = 1;
    if (!check_unit_k(unit, k) || !get_fold(fold_obj, &fold, &nfold) ||
        !init_classes(&cl, &table, unit, keep, fold, nfold) ||
        !init_classes(&clw, &table, U_WORD, keep, fold, nfold))
        goto done;
    if (family != F_AFFINE61 && family != F_MULSHIFT64 && family != F_MULSHIFT32) {
        PyErr_Format(PyExc_ValueError, "family must be 0 (affine61), 1 (mulshift64) or 2 (mulshift32), got %d",
                     family);
        goto done;
    }
    if (abuf.len % 8 || abuf.len == 0 || abuf.len != bbuf.len) {
        PyErr_SetString(PyExc_ValueError, "a and b must be non-empty uint64 buffers of equal length");
        goto done;
    }
    const size_t n = docs->n, m = (size_t)abuf.len / 8;
    /* buffers from Python objects are not necessarily 8-byte aligned: copy what we index */
    uint64_t *a = malloc(m * sizeof(uint64_t)), *b = malloc(m * sizeof(uint64_t));
    if (!a || !b) {
        free(a);
        free(b);
        PyErr_NoMemory();
        goto done;
    }
    memcpy(a, abuf.buf, m * sizeof(uint64_t));
    memcpy(b, bbuf.buf, m * sizeof(uint64_t));
    int bad = 0;
    for (size_t i = 0; i < n && !bad; i++) bad = docs->len[i] > g_max_doc_bytes;
    if (bad) PyErr_SetString(PyExc_ValueError, "documents must be under 768 MiB");
    if (!bad && family == F_AFFINE61) {
        for (size_t j = 0; j < m && !bad; j++) bad = a[j] >= P61 || b[j] >= P61;
        if (bad) PyErr_SetString(PyExc_ValueError, "affine61 coefficients must be below 2**61 - 1");
    }
    if (!bad && family == F_MULSHIFT32) {
        for (size_t j = 0; j < m && !bad; j++) bad = a[j] > UINT32_MAX || b[j] > UINT32_MAX;
        if (bad) PyErr_SetString(PyExc_ValueError, "mulshift32 coefficients must be below 2**32");
    }
    int ok = !bad && coeffs_init(&co, a, b, m, family);
    free(a);
    free(b);
    if (!ok) {
        if (!bad) PyErr_NoMemory();
        goto done;
    }
    values = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(n * m * 8));
    counts = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(n * 8));
    if (with_ids && values && counts) {
        /* a document of len bytes has at most len units, so shingles: allocate that bound (pages never
         * written are never touched) and shrink it afterwards, so the ids are written once */
        size_t bound = 0;
        for (size_t i = 0; i < n; i++) bound += docs->len[i];
        if (nfold) bound *= FOLD_POS_FACTOR; /* case folding can make more units than bytes */
        ids_out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(bound * 8));
        if (ids_out) idbuf = (uint64_t *)PyByteArray_AS_STRING(ids_out);
    }
    if (with_fps) fps_out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(n * 8));
    if (!values || !counts || (with_ids && !ids_out) || (with_fps && !fps_out)) goto done;
    uint64_t *fps = with_fps ? (uint64_t *)PyByteArray_AS_STRING(fps_out) : NULL;
    uint64_t *vals = (uint64_t *)PyByteArray_AS_STRING(values);
    int64_t *cnts = (int64_t *)PyByteArray_AS_STRING(counts);
    const int simd = simd_enabled();
    int oom = 0;
    Py_BEGIN_ALLOW_THREADS
    for (size_t i = 0; i < n; i++) {
        uint64_t *row = vals + i * m;
        for (size_t j = 0; j < m; j++) row[j] = UINT64_MAX;
        const uint8_t *text = docs->ptr[i];
        const size_t len = docs->len[i];
        size_t content_len;
        size_t ns = doc_shingle_ids(&s, &cl, text, len, (size_t)k, simd, &content_len);
        if (ns != (size_t)-1 && with_fps) {
            /* the word unit's joined buffer is the fingerprinted content */
            if (unit == U_WORD) {
                fps[i] = content_len ? blake2b_64(s.buf, content_len, simd) : 0;
            } else {
                size_t nw = split_units(&sw, &clw, text, len, &content_len, simd);
                if (nw == (size_t)-1)
                    ns = nw;
                else
                    fps[i] = content_len ? blake2b_64(sw.buf, content_len, simd) : 0;
            }
        }
        const uint64_t *distinct = s.ids;
        if (ns != (size_t)-1) {
            if (!with_ids) {
                ns = dedup(&s, s.ids, ns); /* distinct ids, unordered */
            } else {
                /* sorted straight into the output (its bound covers every shingle) */
                uint64_t *out = idbuf + idlen;
                ns = sort_into(&s, s.ids, ns, out) ? unique_sorted(out, ns) : (size_t)-1;
                distinct = out;
            }
        }
        if (ns == (size_t)-1) {
            oom = 1;
            break;
        }
        cnts[i] = (int64_t)ns;
        minhash_update(&co, distinct, ns, row, simd);
        if (with_ids) idlen += ns;
    }
    Py_END_ALLOW_THREADS
    if (oom) {
        PyErr_NoMemory();
        goto done;
    }
    if (with_ids) {
        if (PyByteArray_Resize(ids_out, (Py_ssize_t)(idlen * 8)) < 0) goto done;
    } else {
        ids_out = Py_None;
        Py_INCREF(ids_out);
    }
    if (!with_fps) {
        fps_out = Py_None;
        Py_INCREF(fps_out);
    }
    result = PyTuple_Pack(4, values, counts, ids_out, fps_out);
done:
    Py_XDECREF(values);
    Py_XDECREF(counts);
    Py_XDECREF(ids_out);
    Py_XDECREF(fps_out);
    free(fold);
    scratch_free(&sw);
    coeffs_free(&co);
    scratch_free(&s);
    if (got_b) PyBuffer_Release(&bbuf);
    if (got_a) PyBuffer_Release(&abuf);
    if (got_table) PyBuffer_Release(&table);
    return result;
}

/* Adds the documents of one (data, offsets) pair to docs; 0 with an exception set when the
 * offsets are not n+1 non-decreasing int64 within the data. */
static int add_segment(docs_t *docs, const Py_buffer *data, const Py_buffer *offs) {
    if (offs->len % 8 || offs->len < 8) {
        PyErr_SetString(PyExc_ValueError, "offsets must be n+1 int64 values");
        return 0;
    }
    const size_t n = (size_t)offs->len / 8 - 1;
    const char *ob = (const char *)offs->buf;
    int64_t lo, hi;
    memcpy(&lo, ob, 8); /* not necessarily aligned */
    if (lo < 0) goto bad;
    for (size_t i = 0; i < n; i++) {
        memcpy(&hi, ob + 8 * (i + 1), 8);
        if (hi < lo || hi > (int64_t)data->len) goto bad;
        docs->ptr[docs->n] = (const uint8_t *)data->buf + lo;
        docs->len[docs->n] = (size_t)(hi - lo);
        docs->n++;
        lo = hi;
    }
    return 1;
bad:
    PyErr_SetString(PyExc_ValueError, "offsets must be non-decreasing and within the data");
    return 0;
}

static PyObject *py_signatures(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer data, offs;
    PyObject *offs_obj, *table_obj, *a_obj, *b_obj, *fold_obj = NULL;
    int unit, keep, family, with_ids, with_fps = 0;
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "y*OOinpOOip|Op", &data, &offs_obj, &table_obj, &unit, &k, &keep,
                          &a_obj, &b_obj, &family, &with_ids, &fold_obj, &with_fps))
        return NULL;
    PyObject *result = NULL;
    docs_t docs = {0};
    if (PyObject_GetBuffer(offs_obj, &offs, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    const size_t n = offs.len >= 8 ? (size_t)offs.len / 8 - 1 : 0;
    docs.ptr = malloc((n + 1) * sizeof(*docs.ptr));
    docs.len = malloc((n + 1) * sizeof(*docs.len));
    if (!docs.ptr || !docs.len)
        PyErr_NoMemory();
    else if (add_segment(&docs, &data, &offs))
        result = signatures_run(&docs, table_obj, unit, k, keep, a_obj, b_obj, family, with_ids, fold_obj, with_fps);
    free(docs.ptr);
    free(docs.len);
    PyBuffer_Release(&offs);
    PyBuffer_Release(&data);
    return result;
}

PyDoc_STRVAR(signatures_segments_doc,
"signatures_segments(segments, table, unit, k, keep_punct, a, b, family, with_ids, fold=None,\n"
"                    with_fingerprints=False) -> (values, n_shingles, ids, fingerprints)\n\n"
"signatures() of the documents of several buffers, in order: segments is a list of\n"
"(data, offsets) pairs, each as signatures() takes them. The buffers are read in place (no\n"
"joined copy of them is made).");

static PyObject *py_signatures_segments(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *segs_obj, *table_obj, *a_obj, *b_obj, *fold_obj = NULL;
    int unit, keep, family, with_ids, with_fps = 0;
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "OOinpOOip|Op", &segs_obj, &table_obj, &unit, &k, &keep, &a_obj, &b_obj, &family,
                          &with_ids, &fold_obj, &with_fps))
        return NULL;
    PyObject *segs = PySequence_Fast(segs_obj, "segments must be a list of (data, offsets) pairs");
    if (!segs) return NULL;
    const Py_ssize_t ns = PySequence_Fast_GET_SIZE(segs);
    Py_buffer *bufs = calloc((size_t)(2 * ns + 1), sizeof(Py_buffer));
    Py_ssize_t got = 0;
    PyObject *result = NULL;
    docs_t docs = {0};
    if (!bufs) {
        PyErr_NoMemory();
        goto done;
    }
    size_t total = 0;
    for (Py_ssize_t i = 0; i < ns; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(segs, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "segments must be a list of (data, offsets) pairs");
            goto done;
        }
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(pair, 0), &bufs[got], PyBUF_SIMPLE) < 0) goto done;
        got++;
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(pair, 1), &bufs[got], PyBUF_SIMPLE) < 0) goto done;
        got++;
        if (bufs[got - 1].len >= 8) total += (size_t)bufs[got - 1].len / 8 - 1;
    }
    docs.ptr = malloc((total + 1) * sizeof(*docs.ptr));
    docs.len = malloc((total + 1) * sizeof(*docs.len));
    if (!docs.ptr || !docs.len) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < ns; i++)
        if (!add_segment(&docs, &bufs[2 * i], &bufs[2 * i + 1])) goto done;
    result = signatures_run(&docs, table_obj, unit, k, keep, a_obj, b_obj, family, with_ids, fold_obj, with_fps);
done:
    free(docs.ptr);
    free(docs.len);
    while (got > 0) PyBuffer_Release(&bufs[--got]);
    free(bufs);
    Py_DECREF(segs);
    return result;
}

PyDoc_STRVAR(minhash_doc,
"minhash(ids, offsets, a, b, family) -> bytearray\n\n"
"MinHash values of runs of shingle ids: run i is ids[offsets[i]:offsets[i+1]] (ids: uint64,\n"
"offsets: n+1 int64, repeats allowed). Same permutations and output as signatures().");

static PyObject *py_minhash(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *ids_obj, *offs_obj, *a_obj, *b_obj;
    int family;
    if (!PyArg_ParseTuple(args, "OOOOi", &ids_obj, &offs_obj, &a_obj, &b_obj, &family)) return NULL;
    Py_buffer ib, ob, ab, bb;
    int got = 0;
    PyObject *values = NULL;
    uint64_t *ids = NULL, *a = NULL, *b = NULL;
    int64_t *off = NULL;
    coeffs_t co = {0};
    if (PyObject_GetBuffer(ids_obj, &ib, PyBUF_SIMPLE) < 0) goto done;
    got = 1;
    if (PyObject_GetBuffer(offs_obj, &ob, PyBUF_SIMPLE) < 0) goto done;
    got = 2;
    if (PyObject_GetBuffer(a_obj, &ab, PyBUF_SIMPLE) < 0) goto done;
    got = 3;
    if (PyObject_GetBuffer(b_obj, &bb, PyBUF_SIMPLE) < 0) goto done;
    got = 4;
    if (family != F_AFFINE61 && family != F_MULSHIFT64 && family != F_MULSHIFT32) {
        PyErr_Format(PyExc_ValueError, "family must be 0 (affine61), 1 (mulshift64) or 2 (mulshift32), got %d",
                     family);
        goto done;
    }
    if (ib.len % 8 || ob.len % 8 || ob.len < 8 || ab.len % 8 || ab.len == 0 || ab.len != bb.len) {
        PyErr_SetString(PyExc_ValueError, "ids: uint64; offsets: n+1 int64; a, b: equal non-empty uint64");
        goto done;
    }
    const size_t nid = (size_t)ib.len / 8, n = (size_t)ob.len / 8 - 1, m = (size_t)ab.len / 8;
    ids = malloc(nid ? ib.len : 8);
    off = malloc((size_t)ob.len);
    a = malloc((size_t)ab.len);
    b = malloc((size_t)bb.len);
    if (!ids || !off || !a || !b) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(ids, ib.buf, (size_t)ib.len);
    memcpy(off, ob.buf, (size_t)ob.len);
    memcpy(a, ab.buf, (size_t)ab.len);
    memcpy(b, bb.buf, (size_t)bb.len);
    int bad = off[0] < 0 || off[n] > (int64_t)nid;
    for (size_t i = 0; i < n && !bad; i++) bad = off[i + 1] < off[i];
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "offsets must be non-decreasing and within the ids");
        goto done;
    }
    if (family == F_AFFINE61) {
        for (size_t j = 0; j < m && !bad; j++) bad = a[j] >= P61 || b[j] >= P61;
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "affine61 coefficients must be below 2**61 - 1");
            goto done;
        }
    }
    if (family == F_MULSHIFT32) {
        for (size_t j = 0; j < m && !bad; j++) bad = a[j] > UINT32_MAX || b[j] > UINT32_MAX;
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "mulshift32 coefficients must be below 2**32");
            goto done;
        }
    }
    if (!coeffs_init(&co, a, b, m, family)) {
        PyErr_NoMemory();
        goto done;
    }
    values = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(n * m * 8));
    if (!values) goto done;
    uint64_t *vals = (uint64_t *)PyByteArray_AS_STRING(values);
    const int simd = simd_enabled();
    Py_BEGIN_ALLOW_THREADS
    for (size_t i = 0; i < n; i++) {
        uint64_t *row = vals + i * m;
        for (size_t j = 0; j < m; j++) row[j] = UINT64_MAX;
        minhash_update(&co, ids + off[i], (size_t)(off[i + 1] - off[i]), row, simd);
    }
    Py_END_ALLOW_THREADS
done:
    coeffs_free(&co);
    free(ids);
    free(off);
    free(a);
    free(b);
    if (got >= 4) PyBuffer_Release(&bb);
    if (got >= 3) PyBuffer_Release(&ab);
    if (got >= 2) PyBuffer_Release(&ob);
    if (got >= 1) PyBuffer_Release(&ib);
    return values;
}

PyDoc_STRVAR(set_simd_doc,
"set_simd(enabled) -> bool\n\n"
"Allow (True, the default) or forbid the AVX2 MinHash code; returns the previous setting.\n"
"For tests and benchmarks: results are identical either way.");

static PyObject *py_set_simd(PyObject *self, PyObject *arg) {
    (void)self;
    int on = PyObject_IsTrue(arg);
    if (on < 0) return NULL;
    int prev = !g_force_scalar;
    g_force_scalar = !on;
    return PyBool_FromLong(prev);
}

PyDoc_STRVAR(simd_doc, "simd() -> str\n\nThe MinHash code in use: 'avx2' or 'scalar'.");

static PyObject *py_simd(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyUnicode_FromString(simd_enabled() ? "avx2" : "scalar");
}

PyDoc_STRVAR(cpu_features_doc,
"cpu_features() -> dict[str, bool]\n\n"
"What CPUID and XGETBV report of what the AVX2 code needs (avx2, bmi1, bmi2, popcnt, os_avx:\n"
"the OS saves the YMM registers); the AVX2 code runs only when all are true. All false off x86-64.");

static PyObject *py_cpu_features(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
#if ND_X86
    const unsigned f = cpu_features();
#else
    const unsigned f = 0;
#endif
    return Py_BuildValue("{sOsOsOsOsO}", "avx2", f & CPU_AVX2 ? Py_True : Py_False, "bmi1",
                         f & CPU_BMI1 ? Py_True : Py_False, "bmi2", f & CPU_BMI2 ? Py_True : Py_False,
                         "popcnt", f & CPU_POPCNT ? Py_True : Py_False, "os_avx",
                         f & CPU_OS_AVX ? Py_True : Py_False);
}

PyDoc_STRVAR(max_doc_bytes_doc,
"max_doc_bytes() -> int\n\n"
"The largest document (in UTF-8 bytes, after NFKC) the kernel takes; a larger one is a ValueError\n"
"for its whole call.");

static PyObject *py_max_doc_bytes(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromSize_t(g_max_doc_bytes);
}

PyDoc_STRVAR(set_max_doc_bytes_doc,
"set_max_doc_bytes(n) -> int\n\n"
"For tests: lower the document limit to n bytes (1 <= n <= the built-in 768 MiB); returns the\n"
"previous limit.");

static PyObject *py_set_max_doc_bytes(PyObject *self, PyObject *arg) {
    (void)self;
    const Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n < 1 || (size_t)n > MAX_DOC_BYTES) {
        PyErr_Format(PyExc_ValueError, "the document limit must be in [1, %zu], got %zd", MAX_DOC_BYTES, n);
        return NULL;
    }
    const size_t prev = g_max_doc_bytes;
    g_max_doc_bytes = (size_t)n;
    return PyLong_FromSize_t(prev);
}

PyDoc_STRVAR(xxh3_doc, "xxh3_64(data) -> int\n\nXXH3-64 of the bytes, seed 0 (to check the header).");

static PyObject *py_xxh3(PyObject *self, PyObject *arg) {
    (void)self;
    Py_buffer v;
    if (PyObject_GetBuffer(arg, &v, PyBUF_SIMPLE) < 0) return NULL;
    uint64_t h = XXH3_64bits(v.buf, (size_t)v.len);
    PyBuffer_Release(&v);
    return PyLong_FromUnsignedLongLong(h);
}

PyDoc_STRVAR(utf8_join_doc,
"utf8_join(texts, start, stop, unsafe=None) -> (bytes, offsets, flagged)\n\n"
"texts[start:stop] encoded as UTF-8 (surrogatepass) and joined: the bytes, their int64\n"
"offsets (stop - start + 1, as bytes) and, when an NFKC table is given (uint8 per code point,\n"
"nonzero = unsafe), the list of positions (from start) of the texts holding an unsafe code\n"
"point: only those may change under NFKC. The encoding runs with the GIL released (str\n"
"objects are immutable, and the call holds a reference to each), so threads encode in parallel.");

typedef struct {
    const void *data;
    Py_ssize_t len;
    int kind;  /* 1, 2 or 4 bytes per code point; 0 = pure ASCII */
} strview_t;

/* One loop per str kind (Latin-1, UCS-2, UCS-4): encode to UTF-8 at o, noting in first/last the
 * first and last index of a code point flagged in table (which may be NULL). */
#define ENCODE_KIND(T)                                              \
    do {                                                            \
        const T *d = (const T *)v->data;                            \
        for (Py_ssize_t i = 0; i < n; i++) {                        \
            uint32_t cp = d[i];                                     \
            if (cp < 0x80) {                                        \
                *o++ = (uint8_t)cp;                                 \
                continue;                                           \
            }                                                       \
            if (table && table[cp]) {                               \
                if (first < 0) first = i;                           \
                last = i;                                           \
            }                                                       \
            o += utf8_encode(cp, o);                                \
        }                                                           \
    } while (0)

/* Encode one str as UTF-8 (surrogatepass) into out, which has room for its worst case; sets
 * span[0..1] to the first and last index of a flagged code point (-1 when none). Returns the
 * bytes written. */
static size_t encode_str(const strview_t *v, uint8_t *out, const uint8_t *table, Py_ssize_t *span) {
    Py_ssize_t n = v->len, first = -1, last = -1;
    uint8_t *o = out;
    if (v->kind == 0)
        memcpy(o, v->data, (size_t)n), o += n;
    else if (v->kind == 1)
        ENCODE_KIND(uint8_t);
    else if (v->kind == 2)
        ENCODE_KIND(uint16_t);
    else
        ENCODE_KIND(uint32_t);
    span[0] = first;
    span[1] = last;
    return (size_t)(o - out);
}
#undef ENCODE_KIND

static PyObject *py_utf8_join(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *seq_obj, *table_obj = Py_None;
    Py_ssize_t start, stop;
    if (!PyArg_ParseTuple(args, "Onn|O", &seq_obj, &start, &stop, &table_obj)) return NULL;
    PyObject *seq = PySequence_Fast(seq_obj, "texts must be a sequence");
    if (!seq) return NULL;
    Py_ssize_t total = PySequence_Fast_GET_SIZE(seq);
    if (start < 0 || stop > total || start > stop) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_IndexError, "utf8_join: start/stop out of range");
        return NULL;
    }
    Py_buffer table = {0};
    int have_table = table_obj != Py_None;
    if (have_table) {
        if (PyObject_GetBuffer(table_obj, &table, PyBUF_SIMPLE) < 0) {
            Py_DECREF(seq);
            return NULL;
        }
        if (table.len != TABLE_SIZE) {
            PyBuffer_Release(&table);
            Py_DECREF(seq);
            PyErr_SetString(PyExc_ValueError, "utf8_join: the NFKC table must have 0x110000 entries");
            return NULL;
        }
    }
    Py_ssize_t n = stop - start;
    /* The texts are read with the GIL released: a reference of our own to each keeps it alive
     * (the caller's list alone does not: another thread may replace an item meanwhile, which
     * frees the str being encoded). str objects are immutable, so the data stays as read. */
    PyObject *held = PySequence_GetSlice(seq, start, stop);
    Py_DECREF(seq);
    if (!held) {
        if (have_table) PyBuffer_Release(&table);
        return NULL;
    }
    seq = held;
    PyObject **items = PySequence_Fast_ITEMS(seq);
    strview_t *views = (strview_t *)malloc(sizeof(strview_t) * (size_t)(n ? n : 1));
    int64_t *offsets = (int64_t *)malloc(sizeof(int64_t) * (size_t)(n + 1));
    Py_ssize_t *spans = (Py_ssize_t *)malloc(sizeof(Py_ssize_t) * 2 * (size_t)(n ? n : 1));
    PyObject *result = NULL;
    uint8_t *out = NULL;
    if (!views || !offsets || !spans) {
        PyErr_NoMemory();
        goto done;
    }
    size_t cap = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *s = items[i];
        if (!PyUnicode_Check(s)) {
            PyErr_Format(PyExc_TypeError, "a document's text must be a str, got %.100s (item %zd)",
                         Py_TYPE(s)->tp_name, start + i);
            goto done;
        }
        if (PyUnicode_READY(s) < 0) goto done;
        views[i].data = PyUnicode_DATA(s);
        views[i].len = PyUnicode_GET_LENGTH(s);
        views[i].kind = PyUnicode_IS_ASCII(s) ? 0 : (int)PyUnicode_KIND(s);
        /* worst case: Latin-1 2 bytes, UCS-2 3 bytes, UCS-4 4 bytes per code point */
        cap += (size_t)views[i].len * (size_t)(views[i].kind == 0 ? 1 : views[i].kind == 1 ? 2 : views[i].kind == 2 ? 3 : 4);
    }
    out = (uint8_t *)malloc(cap ? cap : 1);
    if (!out) {
        PyErr_NoMemory();
        goto done;
    }
    size_t used = 0;
    Py_BEGIN_ALLOW_THREADS
    const uint8_t *t = have_table ? (const uint8_t *)table.buf : NULL;
    offsets[0] = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        used += encode_str(&views[i], out + used, t, spans + 2 * i);
        offsets[i + 1] = (int64_t)used;
    }
    Py_END_ALLOW_THREADS
    PyObject *data = PyBytes_FromStringAndSize((const char *)out, (Py_ssize_t)used);
    PyObject *offs = PyBytes_FromStringAndSize((const char *)offsets, (Py_ssize_t)(sizeof(int64_t) * (size_t)(n + 1)));
    PyObject *flagged = PyList_New(0);
    if (data && offs && flagged) {
        int ok = 1;
        for (Py_ssize_t i = 0; i < n && ok; i++) {
            if (spans[2 * i] < 0) continue;
            PyObject *k = Py_BuildValue("(nnn)", i, spans[2 * i], spans[2 * i + 1]);
            ok = k && PyList_Append(flagged, k) == 0;
            Py_XDECREF(k);
        }
        if (ok) result = PyTuple_Pack(3, data, offs, flagged);
    }
    Py_XDECREF(data);
    Py_XDECREF(offs);
    Py_XDECREF(flagged);
done:
    free(out);
    free(views);
    free(offsets);
    free(spans);
    if (have_table) PyBuffer_Release(&table);
    Py_DECREF(seq);
    return result;
}

/* ------------------------------------------------------------------------------------------ */
/* Candidate pairs from band keys                                                              */
/* ------------------------------------------------------------------------------------------ */

/* A growing array of packed pairs (lo << 32 | hi). */
typedef struct {
    int64_t *v;
    size_t n, cap;
} pairs_t;

static int pairs_push(pairs_t *p, uint32_t a, uint32_t b) {
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 1 << 16;
        int64_t *v = realloc(p->v, cap * sizeof(int64_t));
        if (!v) return 0;
        p->v = v;
        p->cap = cap;
    }
    const uint32_t lo = a < b ? a : b, hi = a < b ? b : a;
    p->v[p->n++] = ((int64_t)lo << 32) | (int64_t)hi;
    return 1;
}

PyDoc_STRVAR(band_pairs_doc,
"band_pairs(keys, bands, window) -> (pairs, buckets_shared, largest_bucket, buckets_over_window)\n\n"
"The pairs of rows of the (n, bands) uint64 band-key matrix that share a key in some band, as\n"
"neardup.cluster.candidates.candidate_pairs makes them: in each bucket (rows with one key in one\n"
"band, in row order) every row is paired with the next window - 1 rows. pairs: bytearray of\n"
"int64 lo << 32 | hi (lo < hi), with repeats, in no order. Buckets are found by hashing, in one\n"
"pass per band, not by sorting. n must be below 2**32. The GIL is released.");

static PyObject *py_band_pairs(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *keys_obj;
    Py_ssize_t bands, window;
    if (!PyArg_ParseTuple(args, "Onn", &keys_obj, &bands, &window)) return NULL;
    Py_buffer kb;
    if (PyObject_GetBuffer(keys_obj, &kb, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    PyObject *result = NULL;
    /* whole uint64 first, then rows of bands: 8 * bands would overflow (to 0, then % 0) */
    if (bands < 1 || window < 2 || kb.len % 8 || (kb.len / 8) % bands ||
        (size_t)kb.len / 8 / (size_t)bands >= UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "keys must be (n, bands) uint64 with n < 2**32, and window >= 2");
        PyBuffer_Release(&kb);
        return NULL;
    }
    const size_t n = (size_t)kb.len / 8 / (size_t)bands;
    const uint64_t *keys = (const uint64_t *)kb.buf;
    int bits = 4;
    while (((size_t)1 << bits) < 2 * n) bits++;
    const size_t cap = (size_t)1 << bits, mask = cap - 1;
    /* per slot: the key, the first and last row of its chain, the chain's size; per row: the next row */
    uint64_t *slot_key = malloc(cap * sizeof(uint64_t));
    uint32_t *head = malloc(cap * sizeof(uint32_t)), *tail = malloc(cap * sizeof(uint32_t));
    uint32_t *size = malloc(cap * sizeof(uint32_t)), *next = malloc((n + 1) * sizeof(uint32_t));
    uint32_t *members = malloc((n + 1) * sizeof(uint32_t));
    pairs_t pairs = {0};
    long long shared = 0, capped = 0;
    size_t largest = 0;
    int oom = !slot_key || !head || !tail || !size || !next || !members;
    Py_BEGIN_ALLOW_THREADS
    /* n == 0 has no pairs in any band: stop before the loop over bands, which for a huge bands
     * (any is allowed when keys is empty) would run for years */
    for (Py_ssize_t band = 0; n && band < bands && !oom; band++) {
        memset(size, 0, cap * sizeof(uint32_t));
        for (size_t i = 0; i < n; i++) {
            const uint64_t k = keys[i * (size_t)bands + (size_t)band];
            size_t h = (size_t)((k * 0x9E3779B97F4A7C15ULL) >> (64 - bits));
            while (size[h] && slot_key[h] != k) h = (h + 1) & mask;
            if (!size[h]) {
                slot_key[h] = k;
                head[h] = (uint32_t)i;
            } else {
                next[tail[h]] = (uint32_t)i;
            }
            tail[h] = (uint32_t)i;
            size[h]++;
        }
        for (size_t h = 0; h < cap && !oom; h++) {
            const size_t m = size[h];
            if (m < 2) continue;
            shared++;
            largest = m > largest ? m : largest;
            capped += m > (size_t)window;
            members[0] = head[h];
            for (size_t q = 1; q < m; q++) members[q] = next[members[q - 1]]; /* in row order */
            for (size_t a = 0; a < m && !oom; a++) {
                const size_t stop = a + (size_t)window < m ? a + (size_t)window : m;
                for (size_t b = a + 1; b < stop; b++)
                    if (!pairs_push(&pairs, members[a], members[b])) {
                        oom = 1;
                        break;
                    }
            }
        }
    }
    Py_END_ALLOW_THREADS
    free(slot_key);
    free(head);
    free(tail);
    free(size);
    free(next);
    free(members);
    if (oom) {
        free(pairs.v);
        PyBuffer_Release(&kb);
        return PyErr_NoMemory();
    }
    PyObject *out = PyByteArray_FromStringAndSize((const char *)pairs.v, (Py_ssize_t)(pairs.n * sizeof(int64_t)));
    free(pairs.v);
    if (out) result = Py_BuildValue("(NLnL)", out, shared, (Py_ssize_t)largest, capped);
    PyBuffer_Release(&kb);
    return result;
}

/* ------------------------------------------------------------------------------------------ */
/* LSH band keys                                                                               */
/* ------------------------------------------------------------------------------------------ */

static inline uint64_t splitmix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

PyDoc_STRVAR(band_keys_doc,
"band_keys(values, m, bands, rows) -> bytearray\n\n"
"LSH band keys of the (n, m) uint64 signature matrix values, as neardup.lsh.banding.band_keys:\n"
"key = band, then key = splitmix64(key ^ values[i, row]) for each row of the band. Returns\n"
"n*bands uint64 (row-major). The GIL is released.");

static PyObject *py_band_keys(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *values_obj;
    Py_ssize_t m, bands, rows;
    if (!PyArg_ParseTuple(args, "Onnn", &values_obj, &m, &bands, &rows)) return NULL;
    Py_buffer vb;
    if (PyObject_GetBuffer(values_obj, &vb, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    PyObject *result = NULL;
    /* rows > m / bands rather than bands * rows > m, and whole uint64 first: for huge
     * arguments both products overflow (8 * m to 0, then % 0) */
    if (m < 1 || bands < 1 || rows < 1 || bands > m || rows > m / bands || vb.len % 8 || (vb.len / 8) % m) {
        PyErr_SetString(PyExc_ValueError, "values must be (n, m) uint64 with bands * rows <= m");
        goto done;
    }
    const size_t n = (size_t)vb.len / 8 / (size_t)m;
    result = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(n * (size_t)bands * 8));
    if (!result) goto done;
    const uint64_t *v = (const uint64_t *)vb.buf;
    uint64_t *out = (uint64_t *)PyByteArray_AS_STRING(result);
    Py_BEGIN_ALLOW_THREADS
    for (size_t i = 0; i < n; i++) {
        const uint64_t *row = v + i * (size_t)m;
        for (Py_ssize_t b = 0; b < bands; b++) {
            uint64_t key = (uint64_t)b;
            for (Py_ssize_t r = b * rows; r < (b + 1) * rows; r++) key = splitmix64(key ^ row[r]);
            out[i * (size_t)bands + (size_t)b] = key;
        }
    }
    Py_END_ALLOW_THREADS
done:
    PyBuffer_Release(&vb);
    return result;
}

static PyMethodDef methods[] = {
    {"units", py_units, METH_VARARGS, units_doc},
    {"shingle_ids", py_shingle_ids, METH_VARARGS, shingle_ids_doc},
    {"signatures", py_signatures, METH_VARARGS, signatures_doc},
    {"signatures_segments", py_signatures_segments, METH_VARARGS, signatures_segments_doc},
    {"minhash", py_minhash, METH_VARARGS, minhash_doc},
    {"fingerprints", py_fingerprints, METH_VARARGS, fingerprints_doc},
    {"intersections", py_intersections, METH_VARARGS, intersections_doc},
    {"agreements", py_agreements, METH_VARARGS, agreements_doc},
    {"band_keys", py_band_keys, METH_VARARGS, band_keys_doc},
    {"band_pairs", py_band_pairs, METH_VARARGS, band_pairs_doc},
    {"set_simd", py_set_simd, METH_O, set_simd_doc},
    {"simd", py_simd, METH_NOARGS, simd_doc},
    {"cpu_features", py_cpu_features, METH_NOARGS, cpu_features_doc},
    {"max_doc_bytes", py_max_doc_bytes, METH_NOARGS, max_doc_bytes_doc},
    {"set_max_doc_bytes", py_set_max_doc_bytes, METH_O, set_max_doc_bytes_doc},
    {"xxh3_64", py_xxh3, METH_O, xxh3_doc},
    {"utf8_join", py_utf8_join, METH_VARARGS, utf8_join_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "neardup._kernel",
    "Compiled hot path of neardup: tokenize, shingle, XXH3 and MinHash over batches of documents.",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__kernel(void) {
    PyObject *mod = PyModule_Create(&moduledef);
    if (!mod) return NULL;
    if (PyModule_AddIntConstant(mod, "UNIT_WORD", U_WORD) < 0 ||
        PyModule_AddIntConstant(mod, "UNIT_CHAR", U_CHAR) < 0 ||
        PyModule_AddIntConstant(mod, "UNIT_LINE", U_LINE) < 0 ||
        PyModule_AddIntConstant(mod, "FAMILY_AFFINE61", F_AFFINE61) < 0 ||
        PyModule_AddIntConstant(mod, "FAMILY_MULSHIFT64", F_MULSHIFT64) < 0 ||
        PyModule_AddIntConstant(mod, "FAMILY_MULSHIFT32", F_MULSHIFT32) < 0 ||
        PyModule_AddIntConstant(mod, "XXH_VERSION", XXH_VERSION_NUMBER) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
