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
 *      shingles per sweep; AVX2 versions are chosen at run time when the CPU has AVX2, BMI1,
 *      BMI2 and POPCNT and the OS saves the YMM registers.
 *
 * The batch functions release the GIL, so Python threads run them on all cores.
 *
 * One extension, one concern per file; this header has what they share:
 *
 *   tokenize.c   classification, case folding and pass 1 (scalar and AVX2 splitters)
 *   hash.c       pass 2 (XXH3-64 of the shingles), the word simhashes and the BLAKE2b content
 *                fingerprints
 *   rabin.c      pass 2 with Rabin fingerprints instead (rabin40, rabin64), one pass per document
 *   distinct.c   pass 3 (hash set, bucket sort)
 *   minhash.c    pass 4, and the CPU dispatch (set_simd, simd, cpu_features)
 *   pairs.c      pairs of documents: intersections, agreements, band_keys, band_pairs
 *   documents.c  the Python functions over batches of documents (units, shingle ids, signatures,
 *                MinHash, fingerprints)
 *   buffers.c    the Python functions over buffers (xxh3_64, utf8_join, gather)
 *   module.c     the argument checks those share, the document size limit, the module
 */

#ifndef NEARDUP_KERNEL_H
#define NEARDUP_KERNEL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../new_bytearray.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ND_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define ND_X86 0
#endif

/* Functions shared between the files of the extension, kept out of its exported symbols. */
#if defined(__GNUC__) || defined(__clang__)
#define ND_HIDDEN __attribute__((visibility("hidden")))
#else
#define ND_HIDDEN
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

static inline void scratch_free(scratch_t *s) {
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
static inline int grow(void **p, size_t *cap, size_t n, size_t sz) {
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
    int hash;              /* shingle ids: H_XXH3 (classes_init's default), H_RABIN40, H_RABIN64 */
} classes_t;

/* The shingle hashes (neardup._native._HASHES). */
enum { H_XXH3 = 0, H_RABIN40 = 1, H_RABIN64 = 2 };

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

/* ------------------------------------------------------------------------------------------ */
/* Between the files                                                                           */
/* ------------------------------------------------------------------------------------------ */

/* tokenize.c: classification and pass 1 */
ND_HIDDEN int classes_init(classes_t *c, const uint8_t *table, int unit, int keep_punct, const uint32_t *fold,
                           size_t nfold);
ND_HIDDEN size_t split_units(scratch_t *sc, const classes_t *cl, const uint8_t *s, size_t len, size_t *out_len,
                             int use_simd);

/* hash.c: pass 2 (XXH3 of shingles), word simhashes and the BLAKE2b content fingerprints */
ND_HIDDEN size_t doc_shingle_ids(scratch_t *s, const classes_t *cl, const uint8_t *text, size_t len, size_t k,
                                 int use_simd, size_t *content_len, size_t *n_units);
/* the 64-bit simhash of the nw word tokens of a word split (buf, pos): XXH3-64 features weighted
 * by their counts, as neardup.sketch.simhash.simhashes_of_words with hash "xxh3" */
ND_HIDDEN uint64_t simhash_words(const uint8_t *buf, const uint32_t *pos, size_t nw);
ND_HIDDEN uint64_t blake2b_64(const uint8_t *data, size_t len, int simd);

/* rabin.c: Rabin fingerprints of shingles (one pass per document) */
ND_HIDDEN void rabin_init(void);
/* the ids of the nu units in s->buf (split_units' output) into s->ids; s->tmp as scratch */
ND_HIDDEN size_t rabin_doc_ids(scratch_t *s, const classes_t *cl, size_t out_len, size_t nu, size_t k,
                               int use_simd);

/* distinct.c: pass 3 */
ND_HIDDEN size_t dedup(scratch_t *s, uint64_t *ids, size_t n);
ND_HIDDEN int sort_into(scratch_t *s, const uint64_t *src, size_t n, uint64_t *dst);
ND_HIDDEN int sort_u64(scratch_t *s, uint64_t *v, size_t n);
ND_HIDDEN size_t unique_sorted(uint64_t *v, size_t n);

/* minhash.c: pass 4 and the CPU dispatch */
ND_HIDDEN int coeffs_init(coeffs_t *c, const uint64_t *a, const uint64_t *b, size_t m, int family);
ND_HIDDEN void coeffs_free(coeffs_t *c);
ND_HIDDEN void minhash_update(coeffs_t *c, const uint64_t *ids, size_t n, uint64_t *mins, int use_simd);
ND_HIDDEN int simd_enabled(void);
ND_HIDDEN extern PyMethodDef nd_dispatch_methods[]; /* set_simd, simd, cpu_features */

/* pairs.c: intersections, agreements, band keys and candidate pairs */
ND_HIDDEN extern PyMethodDef nd_pairs_methods[];

/* postings.c: the posting runs' blocks (neardup.store.runs), coded and decoded */
ND_HIDDEN extern PyMethodDef nd_postings_methods[];

/* documents.c: units, shingle_ids, fingerprints, signatures, signatures_segments, minhash */
ND_HIDDEN extern PyMethodDef nd_documents_methods[];

/* buffers.c: xxh3_64, utf8_join, gather */
ND_HIDDEN extern PyMethodDef nd_buffers_methods[];

/* module.c: the argument checks of the Python functions (each sets the exception and returns 0
 * on a bad argument), and the document size limit */
/* Documents are addressed with 32-bit positions in a buffer of up to 2*len + 1 bytes. */
#define MAX_DOC_BYTES ((size_t)0x30000000) /* 5 * len + slack < 2**32 */
/* The limit in force: MAX_DOC_BYTES, or lower for tests (set_max_doc_bytes). */
ND_HIDDEN extern size_t g_max_doc_bytes;
ND_HIDDEN int get_table(PyObject *obj, Py_buffer *view);
ND_HIDDEN int check_unit_k(int unit, Py_ssize_t k);
ND_HIDDEN int get_fold(PyObject *obj, uint32_t **fold, size_t *nfold);
ND_HIDDEN int init_classes(classes_t *cl, const Py_buffer *table, int unit, int keep, const uint32_t *fold,
                           size_t nfold);
ND_HIDDEN int check_hash(int hash);
ND_HIDDEN int check_doc_len(size_t len);

#endif
