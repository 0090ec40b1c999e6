/*
 * Pairs of documents: shared ids (intersections), equal MinHash values (agreements), LSH band
 * keys and the candidate pairs of shared band keys. Part of neardup._kernel; the overview is in
 * kernel.h.
 */

#include "kernel.h"

/* uint64 values given as one buffer or as a list or tuple of buffers read as their
 * concatenation: dedup keeps the ids and signatures the kernel returned batch by batch (and a
 * memory map of what spilled) without joining them into one copy. */
typedef struct {
    Py_ssize_t n;
    Py_buffer *views;
    size_t *start; /* n + 1 cumulative counts of values */
    size_t width;  /* bytes a value: 8 (uint64), or 4 (uint32 signatures, see pieces_get_width) */
} pieces_t;

static void pieces_release(pieces_t *p) {
    for (Py_ssize_t k = 0; k < p->n; k++) PyBuffer_Release(&p->views[k]);
    PyMem_Free(p->views);
    PyMem_Free(p->start);
    p->n = 0;
    p->views = NULL;
    p->start = NULL;
}

/* 1 on success; 0 with an exception set when obj is not buffers of values of `width` bytes
 * (8, or 0: 8 or 4 bytes, the same in every piece, as the first piece has them). */
static int pieces_get_width(PyObject *obj, pieces_t *p, size_t width) {
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
        if (k == 0 && width == 0) width = p->views[0].itemsize == 4 ? 4 : 8;
        if ((size_t)p->views[k].itemsize != width || p->views[k].len % (Py_ssize_t)width) {
            PyErr_SetString(PyExc_ValueError, width == 8 ? "values must be uint64 buffers"
                                                         : "values must be uint64 buffers, or all uint32");
            break;
        }
        p->start[k + 1] = p->start[k] + (size_t)p->views[k].len / width;
    }
    Py_XDECREF(seq);
    if (p->n != n || PyErr_Occurred()) {
        pieces_release(p);
        return 0;
    }
    p->width = width ? width : 8;
    return 1;
}

static int pieces_get(PyObject *obj, pieces_t *p) { return pieces_get_width(obj, p, 8); }

/* The values [pos, pos + len) when they lie in one piece, else NULL. */
static inline const void *pieces_at_any(const pieces_t *p, size_t pos, size_t len) {
    Py_ssize_t lo = 0, hi = p->n; /* the last piece whose start <= pos */
    while (hi - lo > 1) {
        const Py_ssize_t mid = (lo + hi) / 2;
        if (p->start[mid] <= pos) lo = mid;
        else hi = mid;
    }
    if (p->n == 0) return len == 0 ? (const void *)"" : NULL;
    if (pos + len > p->start[lo + 1] || pos < p->start[lo]) return NULL;
    return (const char *)p->views[lo].buf + (pos - p->start[lo]) * p->width;
}

static inline const uint64_t *pieces_at(const pieces_t *p, size_t pos, size_t len) {
    return (const uint64_t *)pieces_at_any(p, pos, len);
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
    result = nd_new_bytearray(NULL, (Py_ssize_t)(np * 8));
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
"uint64 (or uint32: signatures of a 32-bit hash family stored at their width) matrix values\n"
"are equal (the MinHash estimate times m); values may be a list of buffers of whole rows, all of\n"
"one width, read as their concatenation. The GIL is released.");

static PyObject *py_agreements(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *v_obj, *i_obj, *j_obj;
    Py_ssize_t m;
    if (!PyArg_ParseTuple(args, "OnOO", &v_obj, &m, &i_obj, &j_obj)) return NULL;
    pieces_t val;
    if (!pieces_get_width(v_obj, &val, 0)) return NULL;
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
    result = nd_new_bytearray(NULL, (Py_ssize_t)(np * 8));
    if (!result) goto done;
    int64_t *out = (int64_t *)PyByteArray_AS_STRING(result);
    int straddles = 0;
    Py_BEGIN_ALLOW_THREADS
    for (size_t q = 0; q < np; q++) {
        /* every piece holds whole rows (checked above), so a row lies in one piece; the NULL
         * check keeps that an invariant checked here rather than a promise */
        const void *a = pieces_at_any(&val, (size_t)pi[q] * (size_t)m, (size_t)m),
                   *b = pieces_at_any(&val, (size_t)pj[q] * (size_t)m, (size_t)m);
        if (!a || !b) {
            straddles = 1;
            break;
        }
        int64_t c = 0;
        if (val.width == 4) {
            const uint32_t *a4 = (const uint32_t *)a, *b4 = (const uint32_t *)b;
            for (Py_ssize_t p = 0; p < m; p++) c += a4[p] == b4[p];
        } else {
            const uint64_t *a8 = (const uint64_t *)a, *b8 = (const uint64_t *)b;
            for (Py_ssize_t p = 0; p < m; p++) c += a8[p] == b8[p];
        }
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
    PyObject *out = nd_new_bytearray((const char *)pairs.v, (Py_ssize_t)(pairs.n * sizeof(int64_t)));
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
    result = nd_new_bytearray(NULL, (Py_ssize_t)(n * (size_t)bands * 8));
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

PyMethodDef nd_pairs_methods[] = {
    {"intersections", py_intersections, METH_VARARGS, intersections_doc},
    {"agreements", py_agreements, METH_VARARGS, agreements_doc},
    {"band_keys", py_band_keys, METH_VARARGS, band_keys_doc},
    {"band_pairs", py_band_pairs, METH_VARARGS, band_pairs_doc},
    {NULL, NULL, 0, NULL},
};
