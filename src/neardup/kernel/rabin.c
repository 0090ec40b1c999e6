/*
 * Rabin fingerprints of shingle bytes (shingle hashes rabin40 and rabin64).
 * Part of neardup._kernel; the overview is in kernel.h.
 *
 * neardup.rabin is the definition: a shingle's id is S(x) * x^64 mod P(x) over GF(2), S the
 * shingle's bytes read as a polynomial (first byte's high bit highest), P the fixed irreducible
 * polynomial of degree 40 or 64, the result in the id's high bits. Here all shingles of a
 * document are computed in one pass:
 *
 *   F(p) = buf[0:p](x) mod P
 *   id(a, b) = (F(b) XOR F(a) * x^(8 (b - a))) * x^64 mod P
 *
 * since buf[0:b] = buf[0:a] * x^(8 (b-a)) + buf[a:b]. Each byte is read once, whatever k; each
 * shingle costs two 64x64 carry-less products (PCLMULQDQ where the CPU has it, a portable loop
 * otherwise) with a table-driven reduction. F is only kept at unit boundaries.
 */

#include "kernel.h"

#if ND_X86
#include <wmmintrin.h>
#endif

/* Powers x^(8L) mod P kept for L below this; longer shingles step on from the last one. */
#define RABIN_POW_CACHE 4096

typedef struct {
    int degree;
    uint64_t low;             /* P without its x^degree term */
    uint64_t mask;            /* 2^degree - 1 */
    uint64_t shift[256];      /* t * x^degree mod P: the top byte shifted out, folded back */
    uint64_t red[8][256];     /* v * x^(8j + degree) mod P: a product's high part, byte j */
    uint64_t pow[RABIN_POW_CACHE];
} rabin_t;

static rabin_t g_rabin[2]; /* degree 40, degree 64; built once at import, read-only after */
static int g_have_pclmul = -1;

/* (hi:lo) mod P, bit by bit: only to build the tables. */
static uint64_t rabin_reduce_slow(const rabin_t *r, uint64_t hi, uint64_t lo) {
    const int d = r->degree;
    for (int bit = 127; bit >= d; bit--) {
        int set = bit >= 64 ? (int)((hi >> (bit - 64)) & 1) : (int)((lo >> bit) & 1);
        if (!set) continue;
        /* XOR P << (bit - d): P = x^d + low */
        int s = bit - d;
        if (bit >= 64) hi ^= (uint64_t)1 << (bit - 64); else lo ^= (uint64_t)1 << bit;
        if (s == 0) lo ^= r->low;
        else if (s < 64) { lo ^= r->low << s; hi ^= r->low >> (64 - s); }
        else hi ^= r->low << (s - 64);
    }
    return lo & r->mask;
}

/* v * x^shift mod P for v < 2^64 and shift < 64 + 64 (table building only). */
static uint64_t rabin_shifted(const rabin_t *r, uint64_t v, int shift) {
    uint64_t hi, lo;
    if (shift == 0) { hi = 0; lo = v; }
    else if (shift < 64) { hi = v >> (64 - shift); lo = v << shift; }
    else { hi = v << (shift - 64); lo = 0; }
    return rabin_reduce_slow(r, hi, lo);
}

static inline uint64_t rabin_step(const rabin_t *r, uint64_t f) {
    /* f * x^8 mod P */
    return ((f << 8) & r->mask) ^ r->shift[f >> (r->degree - 8)];
}

static void rabin_init_one(rabin_t *r, int degree, uint64_t low) {
    r->degree = degree;
    r->low = low;
    r->mask = degree == 64 ? ~(uint64_t)0 : (((uint64_t)1 << degree) - 1);
    for (int t = 0; t < 256; t++) {
        r->shift[t] = rabin_shifted(r, (uint64_t)t, degree);
    }
    /* red[j][v] = v * x^(8j + degree): built by stepping v * x^degree up one byte at a time */
    for (int v = 0; v < 256; v++) {
        uint64_t f = r->shift[v];
        for (int j = 0; j < 8; j++) {
            r->red[j][v] = f;
            f = rabin_step(r, f);
        }
    }
    r->pow[0] = 1;
    for (size_t L = 1; L < RABIN_POW_CACHE; L++) r->pow[L] = rabin_step(r, r->pow[L - 1]);
}

ND_HIDDEN void rabin_init(void) {
    /* neardup.rabin.POLYNOMIALS without their leading terms */
    rabin_init_one(&g_rabin[0], 40, 0x0B0CA19113ULL);
    rabin_init_one(&g_rabin[1], 64, 0xD6967248FBE68CEDULL);
#if ND_X86
    __builtin_cpu_init();
    g_have_pclmul = __builtin_cpu_supports("pclmul") ? 1 : 0;
#else
    g_have_pclmul = 0;
#endif
}

static inline uint64_t rabin_pow(const rabin_t *r, size_t L) {
    if (L < RABIN_POW_CACHE) return r->pow[L];
    uint64_t f = r->pow[RABIN_POW_CACHE - 1];
    for (size_t i = RABIN_POW_CACHE - 1; i < L; i++) f = rabin_step(r, f);
    return f;
}

/* (hi:lo) mod P for a product of two values below 2^degree, by tables: a fixed number of
 * independent lookups (a loop that stops at the last nonzero byte mispredicts its exit). */
static inline uint64_t rabin_reduce(const rabin_t *r, uint64_t hi, uint64_t lo) {
    const uint64_t(*red)[256] = r->red;
    if (r->degree == 64)
        return lo ^ red[0][hi & 0xFF] ^ red[1][(hi >> 8) & 0xFF] ^ red[2][(hi >> 16) & 0xFF] ^
               red[3][(hi >> 24) & 0xFF] ^ red[4][(hi >> 32) & 0xFF] ^ red[5][(hi >> 40) & 0xFF] ^
               red[6][(hi >> 48) & 0xFF] ^ red[7][hi >> 56];
    const uint64_t h = (hi << 24) | (lo >> 40); /* degree 40: the product's bits 40..78 */
    return (lo & r->mask) ^ red[0][h & 0xFF] ^ red[1][(h >> 8) & 0xFF] ^ red[2][(h >> 16) & 0xFF] ^
           red[3][(h >> 24) & 0xFF] ^ red[4][(h >> 32) & 0xFF];
}

static inline uint64_t rabin_mulmod_portable(const rabin_t *r, uint64_t a, uint64_t b) {
    uint64_t h = 0, l = 0;
    for (int i = 0; i < 64; i++) {
        uint64_t m = (uint64_t)0 - ((b >> i) & 1);
        l ^= (a << i) & m;
        if (i) h ^= (a >> (64 - i)) & m;
    }
    return rabin_reduce(r, h, l);
}

/* fp(bytes) without the premultiplication, one table step per byte. */
static inline uint64_t rabin_bytes(const rabin_t *r, uint64_t f, const uint8_t *p, size_t n) {
    const uint64_t mask = r->mask;
    const int top = r->degree - 8;
    for (size_t i = 0; i < n; i++) f = (((f << 8) & mask) ^ r->shift[f >> top]) ^ p[i];
    return f;
}

/*
 * RABIN_IDS(name, attributes, mulmod): the ids of every shingle of k units of buf (units start
 * at pos[0..nu-1], pos[nu] the sentinel one joiner past the end; gap = the joiner's length, 0 or
 * 1, joiner its byte) into ids[0..ns-1], ns = nu - k + 1, or one id of the
 * whole buffer when nu < k (the caller handles nu == 0). starts: nu + 1 uint64 of scratch.
 * Returns the number of ids. Written once, made twice: with PCLMULQDQ and portable.
 *
 * The byte loop's table step is a chain of dependent loads, so each unit with the joiner after
 * it is fingerprinted on its own (the units are independent: the CPU overlaps them), and the
 * prefix of the buffer is carried from unit start to unit start by one product each:
 *   F(start_(i+1)) = F(start_i) x^(8 (len_i + gap)) + fp(unit_i joiner).
 * A shingle followed by its joiner is buf[start_i : start_(i+k)], so
 *   fp(shingle) x^(8 gap) = F(start_(i+k)) + F(start_i) x^(8 (L + gap)) + joiner
 * and the id, fp(shingle) x^64, is that times x^(64 - 8 gap): one premultiplication constant.
 */
#define RABIN_IDS(NAME, ATTR, MULMOD)                                                               \
    ATTR static size_t NAME(const rabin_t *r, const uint8_t *buf, size_t out_len, const uint32_t *pos, \
                            size_t nu, size_t k, uint32_t gap, uint8_t joiner, uint64_t *starts,      \
                            uint64_t *units, uint64_t *ids) {                                                          \
        const int up = 64 - r->degree; /* the fingerprint in the id's high bits (neardup.rabin) */   \
        if (nu < k) {                                                                                 \
            ids[0] = MULMOD(r, rabin_bytes(r, 0, buf, out_len), r->pow[8]) << up;                     \
            return 1;                                                                                 \
        }                                                                                             \
        for (size_t i = 0; i < nu; i++) {                                                             \
            uint64_t u = rabin_bytes(r, 0, buf + pos[i], pos[i + 1] - gap - pos[i]);                  \
            units[i] = gap ? rabin_bytes(r, u, &joiner, 1) : u;                                       \
        }                                                                                             \
        uint64_t f = 0;                                                                               \
        for (size_t i = 0; i < nu; i++) {                                                             \
            starts[i] = f;                                                                            \
            f = MULMOD(r, f, rabin_pow(r, pos[i + 1] - pos[i])) ^ units[i];                           \
        }                                                                                             \
        starts[nu] = f;                                                                               \
        const uint64_t pre = r->pow[8 - gap]; /* x^(64 - 8 gap) */                                    \
        const size_t ns = nu - k + 1;                                                                 \
        for (size_t i = 0; i < ns; i++) {                                                             \
            uint64_t g = starts[i + k] ^ MULMOD(r, starts[i], rabin_pow(r, pos[i + k] - pos[i])) ^ joiner; \
            ids[i] = MULMOD(r, g, pre) << up;                                                         \
        }                                                                                             \
        return ns;                                                                                    \
    }

RABIN_IDS(rabin_ids_portable, , rabin_mulmod_portable)

#if ND_X86
__attribute__((target("pclmul,sse2"))) static inline uint64_t rabin_mulmod_pclmul(const rabin_t *r, uint64_t a,
                                                                                  uint64_t b) {
    __m128i p = _mm_clmulepi64_si128(_mm_cvtsi64_si128((long long)a), _mm_cvtsi64_si128((long long)b), 0);
    uint64_t lo = (uint64_t)_mm_cvtsi128_si64(p);
    uint64_t hi = (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(p, p));
    return rabin_reduce(r, hi, lo);
}
RABIN_IDS(rabin_ids_pclmul, __attribute__((target("pclmul,sse2"))), rabin_mulmod_pclmul)
#endif

ND_HIDDEN size_t rabin_doc_ids(const classes_t *cl, const uint8_t *buf, size_t out_len, const uint32_t *pos,
                               size_t nu, size_t k, uint64_t *ids, int use_simd) {
    (void)use_simd; /* read only where PCLMULQDQ can exist */
    const rabin_t *r = &g_rabin[cl->hash == H_RABIN64];
    /* the joiners of neardup.shingle.JOINERS: a space between words, a newline between lines,
     * nothing between characters */
    const uint32_t gap = cl->unit == U_CHAR ? 0 : 1;
    const uint8_t joiner = cl->unit == U_CHAR ? 0 : cl->unit == U_LINE ? '\n' : ' ';
    uint64_t *bounds = malloc((2 * nu + 1) * sizeof(uint64_t));
    if (!bounds) return (size_t)-1;
    size_t got;
#if ND_X86
    if (use_simd && g_have_pclmul > 0)
        got = rabin_ids_pclmul(r, buf, out_len, pos, nu, k, gap, joiner, bounds, bounds + nu + 1, ids);
    else
#endif
        got = rabin_ids_portable(r, buf, out_len, pos, nu, k, gap, joiner, bounds, bounds + nu + 1, ids);
    free(bounds);
    return got;
}
