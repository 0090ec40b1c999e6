/*
 * Pass 4, MinHash over distinct ids, and the run-time choice between the AVX2 and scalar code.
 * Part of neardup._kernel; the overview is in kernel.h.
 */

#include "kernel.h"

/* 0 = pick the fastest available; 1 = force the portable scalar code (tests). */
static int g_force_scalar = 0;

/* ------------------------------------------------------------------------------------------ */
/* Pass 4: MinHash                                                                             */
/* ------------------------------------------------------------------------------------------ */

ND_HIDDEN int coeffs_init(coeffs_t *c, const uint64_t *a, const uint64_t *b, size_t m, int family) {
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

ND_HIDDEN void coeffs_free(coeffs_t *c) {
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
ND_HIDDEN void minhash_update(coeffs_t *c, const uint64_t *ids, size_t n, uint64_t *mins,
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

ND_HIDDEN int simd_enabled(void) {
#if ND_X86
    return !g_force_scalar && have_avx2();
#else
    return 0;
#endif
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

PyMethodDef nd_dispatch_methods[] = {
    {"set_simd", py_set_simd, METH_O, set_simd_doc},
    {"simd", py_simd, METH_NOARGS, simd_doc},
    {"cpu_features", py_cpu_features, METH_NOARGS, cpu_features_doc},
    {NULL, NULL, 0, NULL},
};
