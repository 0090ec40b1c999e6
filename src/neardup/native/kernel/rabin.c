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
    uint64_t pow_big[64];     /* x^(8 RABIN_POW_CACHE 2^j) mod P: longer powers by squaring */
    uint64_t mu;              /* Barrett: x^(2 degree) div P (degree 64: without its x^64 term) */
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

/* a * b mod P, bit by bit: only to build the tables. */
static uint64_t rabin_mulmod_slow(const rabin_t *r, uint64_t a, uint64_t b) {
    uint64_t hi = 0, lo = 0;
    for (int i = 0; i < 64; i++)
        if ((b >> i) & 1) {
            lo ^= a << i;
            if (i) hi ^= a >> (64 - i);
        }
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
    /* mu = x^(2d) div P by long division; the remainder in three words (bit 128 for d = 64) */
    uint64_t rem[3] = {0, 0, 0}, q[2] = {0, 0};
    rem[(2 * degree) / 64] = (uint64_t)1 << ((2 * degree) % 64);
    for (int bit = 2 * degree; bit >= degree; bit--) {
        if (!((rem[bit / 64] >> (bit % 64)) & 1)) continue;
        const int sh = bit - degree;
        q[sh / 64] |= (uint64_t)1 << (sh % 64);
        rem[bit / 64] ^= (uint64_t)1 << (bit % 64); /* the x^degree term of P << sh */
        for (int b = 0; b < degree; b++) /* its other terms */
            if ((low >> b) & 1) rem[(b + sh) / 64] ^= (uint64_t)1 << ((b + sh) % 64);
    }
    r->mu = q[0]; /* degree 64: q[1] = 1, the x^64 term, implied */
    r->pow_big[0] = rabin_step(r, r->pow[RABIN_POW_CACHE - 1]);
    for (int j = 1; j < 64; j++) r->pow_big[j] = rabin_mulmod_slow(r, r->pow_big[j - 1], r->pow_big[j - 1]);
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

/* (hi:lo) mod P for a product of two values below 2^D (D = r->degree, a constant where this is
 * inlined, so each degree gets its own code), by tables: a fixed number of independent lookups
 * (a loop that stops at the last nonzero byte mispredicts its exit). */
static inline uint64_t rabin_reduce(const rabin_t *r, const int D, uint64_t hi, uint64_t lo) {
    const uint64_t(*red)[256] = r->red;
    if (D == 64)
        return lo ^ red[0][hi & 0xFF] ^ red[1][(hi >> 8) & 0xFF] ^ red[2][(hi >> 16) & 0xFF] ^
               red[3][(hi >> 24) & 0xFF] ^ red[4][(hi >> 32) & 0xFF] ^ red[5][(hi >> 40) & 0xFF] ^
               red[6][(hi >> 48) & 0xFF] ^ red[7][hi >> 56];
    const uint64_t h = (hi << 24) | (lo >> 40); /* degree 40: the product's bits 40..79 */
    return (lo & (((uint64_t)1 << 40) - 1)) ^ red[0][h & 0xFF] ^ red[1][(h >> 8) & 0xFF] ^
           red[2][(h >> 16) & 0xFF] ^ red[3][(h >> 24) & 0xFF] ^ red[4][(h >> 32) & 0xFF];
}

/* The carry-less product a * b as (hi:lo), bit by bit: the portable code path. */
static inline void rabin_clmul_portable(uint64_t a, uint64_t b, uint64_t *hi, uint64_t *lo) {
    uint64_t h = 0, l = 0;
    for (int i = 0; i < 64; i++) {
        uint64_t m = (uint64_t)0 - ((b >> i) & 1);
        l ^= (a << i) & m;
        if (i) h ^= (a >> (64 - i)) & m;
    }
    *hi = h;
    *lo = l;
}

/* The 8 bytes at p, first byte highest. */
static inline uint64_t load_be64(const uint8_t *p) {
    uint64_t w;
    memcpy(&w, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return w;
#else
    return __builtin_bswap64(w);
#endif
}

/*
 * f * x^(8n) + w mod P for 1 <= n <= 8 and w < 2^(8n): n bytes appended to a fingerprint in one
 * step, without a product. The value f x^(8n) + w has at most D + 8n bits; its bits from D up,
 * at most 8n of them, are folded back by eight independent table lookups (red[j] is exactly
 * v * x^(8j + D)), against one dependent lookup per byte for a byte loop.
 */
static inline uint64_t rabin_append(const rabin_t *r, const int D, uint64_t f, uint64_t w, unsigned n) {
    const unsigned s = 8 * n;
    const uint64_t hi = s == 64 ? f : f >> (64 - s);
    const uint64_t lo = s == 64 ? w : (f << s) | w;
    uint64_t h, low;
    if (D == 64) {
        h = hi;
        low = lo;
    } else { /* degree 40: hi < 2^(8n - 24) */
        h = (hi << 24) | (lo >> 40);
        low = lo & (((uint64_t)1 << 40) - 1);
    }
    const uint64_t(*red)[256] = r->red;
    return low ^ red[0][h & 0xFF] ^ red[1][(h >> 8) & 0xFF] ^ red[2][(h >> 16) & 0xFF] ^ red[3][(h >> 24) & 0xFF] ^
           red[4][(h >> 32) & 0xFF] ^ red[5][(h >> 40) & 0xFF] ^ red[6][(h >> 48) & 0xFF] ^ red[7][h >> 56];
}

/* f = fp(A || p[0:n]) from f = fp(A), up to eight bytes per step. p[0:cap) is readable memory
 * (the scratch buffer's capacity): a short tail is read as a whole word where it fits, shifted. */
#define RABIN_EXTEND(APPEND, f, P, N, CAP)                                                                  \
    do {                                                                                                    \
        const uint8_t *p_ = (P);                                                                            \
        size_t n_ = (N);                                                                                    \
        for (; n_ >= 8; p_ += 8, n_ -= 8) f = APPEND(r, D, f, load_be64(p_), 8);                            \
        if (n_) {                                                                                           \
            uint64_t w_ = 0;                                                                                \
            if ((CAP) - p_ >= 8)                                                                            \
                w_ = load_be64(p_) >> (64 - 8 * n_);                                                        \
            else                                                                                            \
                for (size_t i_ = 0; i_ < n_; i_++) w_ = (w_ << 8) | p_[i_];                                 \
            f = APPEND(r, D, f, w_, (unsigned)n_);                                                          \
        }                                                                                                   \
    } while (0)

/* f = fp(A || unit j || joiner): the units but the last end with their joiner in buf */
#define RABIN_UNIT(APPEND, f, j)                                                                            \
    do {                                                                                                    \
        if ((j) + 1 < nu) {                                                                                 \
            RABIN_EXTEND(APPEND, f, buf + pos[j], pos[(j) + 1] - pos[j], end);                              \
        } else {                                                                                            \
            RABIN_EXTEND(APPEND, f, buf + pos[j], out_len - pos[j], end);                                   \
            if (gap) f = APPEND(r, D, f, joiner, 1);                                                        \
        }                                                                                                   \
    } while (0)

/* Below this many shingles per chain, one chain (the overlap of k units per chain is waste). */
#define RABIN_CHAINS_FROM 16

/*
 * RABIN_IDS(name, pow, degree, attributes, mul2, append): the ids of every shingle of k units of buf
 * (units start at pos[0..nu-1], pos[nu] the sentinel one joiner past the end; gap = the joiner's
 * length, 0 or 1, joiner its byte; buf readable up to buf_cap) into ids[0..ns-1],
 * ns = nu - k + 1, or one id of the whole buffer when nu < k (the caller handles nu == 0).
 * starts: rabin_scratch(nu, k) uint64 of scratch. Returns the number of ids. Written once, made
 * for each degree D (a constant, so the reductions have no branch on it), with PCLMULQDQ and
 * portable.
 *
 * Prefix fingerprints F_a(p) = buf[a:p] mod P are carried from unit start to unit start, up to
 * eight bytes per step (append). A shingle followed by its joiner is buf[start_i : start_(i+k)],
 * and buf[a:c] = buf[a:b] x^(8 (c-b)) + buf[b:c], so with L = start_(i+k) - start_i, for any base
 * a <= start_i,
 *   fp(shingle) x^(8 gap) = F_a(start_(i+k)) + F_a(start_i) x^(8 L) + joiner
 * (the part before start_i cancels), and the id, fp(shingle) x^64, is that times
 * x^(64 - 8 gap) = x^(8 z):
 *   id = F_a(start_(i+k)) x^(8 z) + F_a(start_i) x^(8 (L + z)) + joiner x^(8 z) mod P.
 * The two carry-less products are added before the one reduction (reduction is linear), the
 * powers from the table or by squaring (pow). Since any base will do, the shingles are cut into
 * four runs, each with its own base, whose chains of steps are independent: the CPU overlaps
 * them (one chain is bound by the latency of its steps). Each run's chain goes k units past it.
 */
#define RABIN_IDS(NAME, POW, DEG, ATTR, MUL2, APPEND)                                                        \
    ATTR static uint64_t POW(const rabin_t *r, size_t L) { /* x^(8L) mod P */                               \
        const int D = DEG;                                                                                  \
        if (L < RABIN_POW_CACHE) return r->pow[L];                                                          \
        uint64_t f = r->pow[L % RABIN_POW_CACHE];                                                           \
        size_t q = L / RABIN_POW_CACHE;                                                                     \
        for (int j = 0; q; j++, q >>= 1)                                                                    \
            if (q & 1) f = MUL2(r, D, f, r->pow_big[j], 0, 0);                                              \
        return f;                                                                                           \
    }                                                                                                       \
    ATTR static size_t NAME(const rabin_t *r, const uint8_t *buf, size_t out_len, size_t buf_cap,           \
                            const uint32_t *pos, size_t nu, size_t k, uint32_t gap, uint8_t joiner,         \
                            uint64_t *starts, uint64_t *ids) {                                              \
        const int D = DEG;                                                                                  \
        const uint8_t *end = buf + buf_cap;                                                                 \
        const unsigned z = 8 - gap; /* null bytes appended: x^(64 - 8 gap) */                              \
        if (nu < k) {                                                                                       \
            uint64_t f = 0;                                                                                 \
            RABIN_EXTEND(APPEND, f, buf, out_len, end);                                                     \
            ids[0] = rabin_append(r, D, f, 0, 8) << (64 - D);                                               \
            return 1;                                                                                       \
        }                                                                                                   \
        const size_t ns = nu - k + 1;                                                                       \
        /* runs: [a_c, a_c + len_c), the last one taking the remainder; run c's prefixes (len_c + k    \
         * of them, from its base a_c) at P_c = starts + c (run + k) */                                   \
        const int chains = ns >= 4 * RABIN_CHAINS_FROM ? 4 : 1;                                             \
        const size_t run = ns / chains, last = ns - (size_t)(chains - 1) * run;                            \
        const size_t stride = run + k;                                                                      \
        if (chains == 4) {                                                                                  \
            uint64_t f0 = 0, f1 = 0, f2 = 0, f3 = 0;                                                        \
            uint64_t *P0 = starts, *P1 = P0 + stride, *P2 = P1 + stride, *P3 = P2 + stride;                 \
            const size_t a1 = run, a2 = 2 * run, a3 = 3 * run;                                              \
            size_t t = 0;                                                                                   \
            for (; t + 1 < stride; t++) {                                                                   \
                P0[t] = f0;                                                                                 \
                P1[t] = f1;                                                                                 \
                P2[t] = f2;                                                                                 \
                P3[t] = f3;                                                                                 \
                RABIN_UNIT(APPEND, f0, t);                                                                  \
                RABIN_UNIT(APPEND, f1, a1 + t);                                                             \
                RABIN_UNIT(APPEND, f2, a2 + t);                                                             \
                RABIN_UNIT(APPEND, f3, a3 + t);                                                             \
            }                                                                                               \
            P0[t] = f0;                                                                                     \
            P1[t] = f1;                                                                                     \
            P2[t] = f2;                                                                                     \
            for (; t + 1 < last + k; t++) {                                                                 \
                P3[t] = f3;                                                                                 \
                RABIN_UNIT(APPEND, f3, a3 + t);                                                             \
            }                                                                                               \
            P3[t] = f3;                                                                                     \
        } else {                                                                                            \
            uint64_t f = 0;                                                                                 \
            size_t t = 0;                                                                                   \
            for (; t + 1 < ns + k; t++) {                                                                   \
                starts[t] = f;                                                                              \
                RABIN_UNIT(APPEND, f, t);                                                                   \
            }                                                                                               \
            starts[t] = f;                                                                                  \
        }                                                                                                   \
        const uint64_t jc = gap ? rabin_append(r, D, joiner, 0, z) : 0, xz = r->pow[z];                     \
        for (int c = 0; c < chains; c++) {                                                                  \
            const size_t a = (size_t)c * run, n = c == chains - 1 ? last : run;                            \
            const uint64_t *Pc = starts + (size_t)c * stride;                                               \
            for (size_t t = 0; t < n; t++)                                                                  \
                ids[a + t] = (MUL2(r, D, Pc[t + k], xz, Pc[t], POW(r, pos[a + t + k] - pos[a + t] + z)) ^ jc)  \
                             << (64 - D);                                                                   \
        }                                                                                                   \
        return ns;                                                                                          \
    }

/* starts' size for RABIN_IDS: the four runs' prefixes, at most ns + 4 k + 4 */
static inline size_t rabin_scratch(size_t nu, size_t k) { return nu + 4 * k + 8; }

/* a b + c d mod P: the two products added before one reduction (reduction is linear) */
static inline uint64_t rabin_mul2_portable(const rabin_t *r, const int D, uint64_t a, uint64_t b, uint64_t c,
                                           uint64_t d) {
    uint64_t h1, l1, h2, l2;
    rabin_clmul_portable(a, b, &h1, &l1);
    rabin_clmul_portable(c, d, &h2, &l2);
    return rabin_reduce(r, D, h1 ^ h2, l1 ^ l2);
}

RABIN_IDS(rabin40_ids_portable, rabin40_pow_portable, 40, , rabin_mul2_portable, rabin_append)
RABIN_IDS(rabin64_ids_portable, rabin64_pow_portable, 64, , rabin_mul2_portable, rabin_append)

#if ND_X86
/*
 * Barrett reduction of a carry-less product V (degree < 2D) in the vector registers: with
 * mu = x^(2D) div P, V div P = ((V div x^D) mu) div x^D exactly (over GF(2) there is no
 * correction step), and V mod P = V + (V div P) P: two more products instead of five or eight
 * table lookups. For D = 40 the shifts by D are whole bytes (five). For D = 64, mu has an
 * x^64 term, kept apart: (q mu) div x^64 = q + (q mu_low) div x^64.
 */
__attribute__((target("pclmul,sse2"))) static inline uint64_t rabin_barrett(const rabin_t *r, const int D, __m128i v) {
    const __m128i mu = _mm_cvtsi64_si128((long long)r->mu), p = _mm_cvtsi64_si128((long long)r->low);
    if (D == 64) {
        __m128i t = _mm_clmulepi64_si128(v, mu, 0x01);                  /* q mu_low, q = V's high word */
        __m128i q2 = _mm_xor_si128(_mm_srli_si128(v, 8), _mm_srli_si128(t, 8));
        return (uint64_t)_mm_cvtsi128_si64(_mm_xor_si128(v, _mm_clmulepi64_si128(q2, p, 0x00)));
    }
    /* D = 40: P's x^40 term with its others */
    const __m128i pf = _mm_cvtsi64_si128((long long)(r->low | ((uint64_t)1 << 40)));
    __m128i t = _mm_clmulepi64_si128(_mm_srli_si128(v, 5), mu, 0x00);
    return (uint64_t)_mm_cvtsi128_si64(_mm_xor_si128(v, _mm_clmulepi64_si128(_mm_srli_si128(t, 5), pf, 0x00)));
}

__attribute__((target("pclmul,sse2"))) static inline __m128i rabin_product(uint64_t a, uint64_t b) {
    return _mm_clmulepi64_si128(_mm_cvtsi64_si128((long long)a), _mm_cvtsi64_si128((long long)b), 0);
}

/* rabin_append by one product: f x^(8n) + w, reduced by Barrett */
__attribute__((target("pclmul,sse2"))) static inline uint64_t rabin_append_pclmul(const rabin_t *r, const int D,
                                                                                  uint64_t f, uint64_t w, unsigned n) {
    return rabin_barrett(r, D, _mm_xor_si128(rabin_product(f, r->pow[n]), _mm_cvtsi64_si128((long long)w)));
}

/* a b + c d mod P */
__attribute__((target("pclmul,sse2"))) static inline uint64_t rabin_mul2_pclmul(const rabin_t *r, const int D,
                                                                                uint64_t a, uint64_t b, uint64_t c,
                                                                                uint64_t d) {
    return rabin_barrett(r, D, _mm_xor_si128(rabin_product(a, b), rabin_product(c, d)));
}

#define PCLMUL_TARGET __attribute__((target("pclmul,sse2")))
RABIN_IDS(rabin40_ids_pclmul, rabin40_pow_pclmul, 40, PCLMUL_TARGET, rabin_mul2_pclmul, rabin_append_pclmul)
RABIN_IDS(rabin64_ids_pclmul, rabin64_pow_pclmul, 64, PCLMUL_TARGET, rabin_mul2_pclmul, rabin_append_pclmul)
#endif

ND_HIDDEN size_t rabin_doc_ids(scratch_t *s, const classes_t *cl, size_t out_len, size_t nu, size_t k,
                               int use_simd) {
    (void)use_simd; /* read only where PCLMULQDQ can exist */
    const int wide = cl->hash == H_RABIN64;
    const rabin_t *r = &g_rabin[wide];
    /* the joiners of neardup.shingle.JOINERS: a space between words, a newline between lines,
     * nothing between characters */
    const uint32_t gap = cl->unit == U_CHAR ? 0 : 1;
    const uint8_t joiner = cl->unit == U_CHAR ? 0 : cl->unit == U_LINE ? '\n' : ' ';
    /* the prefix fingerprints in the sort buffer, free until the ids are made distinct */
    if (k > nu + 1) k = nu + 1; /* nu < k either way: one id; keeps rabin_scratch small */
    if (!GROW(s->ids, s->ids_cap, nu < k ? 1 : nu - k + 1) || !GROW(s->tmp, s->tmp_cap, rabin_scratch(nu, k)))
        return (size_t)-1;
    uint64_t *starts = s->tmp;
#if ND_X86
    if (use_simd && g_have_pclmul > 0)
        return (wide ? rabin64_ids_pclmul : rabin40_ids_pclmul)(r, s->buf, out_len, s->buf_cap, s->pos, nu, k, gap,
                                                                joiner, starts, s->ids);
#endif
    return (wide ? rabin64_ids_portable : rabin40_ids_portable)(r, s->buf, out_len, s->buf_cap, s->pos, nu, k, gap,
                                                                joiner, starts, s->ids);
}
