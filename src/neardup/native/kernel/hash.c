/*
 * Pass 2, shingle ids (XXH3-64), and the content fingerprints (BLAKE2b).
 * Part of neardup._kernel; the overview is in kernel.h.
 */

#include "kernel.h"

#define XXH_INLINE_ALL
#include "../_vendor/xxhash/xxhash.h" /* xxHash 0.8.2, BSD-2-Clause: _vendor/xxhash/LICENSE */

/* ------------------------------------------------------------------------------------------ */
/* Pass 2: hash shingles                                                                       */
/* ------------------------------------------------------------------------------------------ */

/* Splits one document and hashes its shingles into s->ids. Returns the number of shingles
 * (repeats included), or (size_t)-1 when memory runs out; *n_units (when not NULL) receives the
 * number of units of the split, which stays in s->buf and s->pos. */
ND_HIDDEN size_t doc_shingle_ids(scratch_t *s, const classes_t *cl, const uint8_t *text, size_t len,
                              size_t k, int use_simd, size_t *content_len, size_t *n_units) {
    size_t out_len = 0;
    size_t nu = split_units(s, cl, text, len, &out_len, use_simd);
    *content_len = out_len;
    if (n_units) *n_units = nu;
    if (nu == (size_t)-1) return (size_t)-1;
    if (nu == 0) return 0;
    if (cl->hash != H_XXH3) { /* Rabin: every shingle in one pass over the units (rabin.c) */
        return rabin_doc_ids(s, cl, out_len, nu, k, use_simd);
    }
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
/* Simhash of the word tokens                                                                  */
/* ------------------------------------------------------------------------------------------ */

/*
 * neardup.sketch.simhash.simhashes_of_words with the xxh3 feature hash: each distinct word,
 * weighted by its count, adds its weight to total b when bit b of its XXH3-64 is 1 and
 * subtracts it when 0; bit b of the simhash is 1 when total b is positive. Summed over the
 * occurrences instead of the distinct words, that is: bit b is 1 when more than half of the nw
 * tokens have bit b set, 2 * count[b] > nw, with no word counting at all.
 *
 * The 64 counts are kept in byte lanes, eight to a uint64 (lane j of acc[k] counts bit 8k+j),
 * and emptied into count[] every 255 tokens, before a lane can overflow: 8 table look-ups and
 * adds per token instead of 64 shifts and adds. Token i is buf[pos[i] : pos[i+1] - 1] (the
 * word unit's split: tokens joined by one space, pos[nw] its sentinel).
 */
static const uint32_t NIBBLE_LANES[16] = {
    0x00000000u, 0x00000001u, 0x00000100u, 0x00000101u, 0x00010000u, 0x00010001u, 0x00010100u, 0x00010101u,
    0x01000000u, 0x01000001u, 0x01000100u, 0x01000101u, 0x01010000u, 0x01010001u, 0x01010100u, 0x01010101u,
};

static inline void simhash_flush(uint64_t acc[8], uint64_t count[64]) {
    for (int k = 0; k < 8; k++) {
        for (int j = 0; j < 8; j++) count[8 * k + j] += (acc[k] >> (8 * j)) & 0xFF;
        acc[k] = 0;
    }
}

ND_HIDDEN uint64_t simhash_words(const uint8_t *buf, const uint32_t *pos, size_t nw) {
    uint64_t count[64] = {0}, acc[8] = {0};
    unsigned pending = 0;
    for (size_t i = 0; i < nw; i++) {
        const uint64_t h = XXH3_64bits(buf + pos[i], (size_t)(pos[i + 1] - 1 - pos[i]));
        for (int k = 0; k < 8; k++) {
            const unsigned b = (unsigned)(h >> (8 * k)) & 0xFF;
            acc[k] += (uint64_t)NIBBLE_LANES[b & 15] | ((uint64_t)NIBBLE_LANES[b >> 4] << 32);
        }
        if (++pending == 255) {
            simhash_flush(acc, count);
            pending = 0;
        }
    }
    simhash_flush(acc, count);
    uint64_t out = 0;
    for (int b = 0; b < 64; b++)
        if (2 * count[b] > (uint64_t)nw) out |= (uint64_t)1 << b;
    return out;
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
ND_HIDDEN uint64_t blake2b_64(const uint8_t *data, size_t len, int simd) {
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

