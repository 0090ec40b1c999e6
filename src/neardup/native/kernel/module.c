/*
 * The Python functions over documents (units, shingle ids, signatures, MinHash, fingerprints,
 * utf8_join), their argument checks, and the module. Part of neardup._kernel; the overview is
 * in kernel.h.
 */

#include "kernel.h"

#define XXH_INLINE_ALL
#include "../_vendor/xxhash/xxhash.h" /* xxHash 0.8.2, BSD-2-Clause: _vendor/xxhash/LICENSE */

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

static int check_hash(int hash) {
    if (hash == H_XXH3 || hash == H_RABIN40 || hash == H_RABIN64) return 1;
    PyErr_Format(PyExc_ValueError, "hash must be 0 (xxh3), 1 (rabin40) or 2 (rabin64), got %d", hash);
    return 0;
}

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
    int unit, keep, hash = H_XXH3;
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "y*Oinp|Oi", &data, &table_obj, &unit, &k, &keep, &fold_obj, &hash)) return NULL;
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
    if (!check_unit_k(unit, k) || !check_doc_len(len) || !check_hash(hash) || !get_fold(fold_obj, &fold, &nfold) ||
        !init_classes(&cl, &table, unit, keep, fold, nfold))
        goto done;
    cl.hash = hash;
    const int simd = simd_enabled();
    Py_BEGIN_ALLOW_THREADS
    size_t content_len;
    n = doc_shingle_ids(&s, &cl, (const uint8_t *)data.buf, len, (size_t)k, simd, &content_len, NULL);
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
"           with_fingerprints=False, hash=0, with_simhashes=False)\n"
"    -> (values, n_shingles, ids, fingerprints[, simhashes])\n\n"
"MinHash signatures of a batch of UTF-8 documents, document i being\n"
"data[offsets[i]:offsets[i+1]] (offsets: n+1 int64). a, b: uint64 coefficients of the\n"
"permutations; family 0 = affine61 ((a*(x mod p) + b) mod p, p = 2**61-1, a, b < p),\n"
"1 = mulshift64 (a*x + b mod 2**64), 2 = mulshift32 (a*(x >> 32) + b mod 2**32, a, b < 2**32).\n"
"Returns bytearrays: values (n*m uint64, row-major;\n"
"all 2**64-1 for a document without shingles), n_shingles (n int64, distinct shingles per\n"
"document), when with_ids the concatenated sorted distinct shingle ids (uint64), and when\n"
"with_fingerprints the content fingerprint of each document (uint64: BLAKE2b-64 of its word\n"
"tokens joined by spaces, 0 without tokens), else None. With with_simhashes a fifth element:\n"
"2n uint64, for each document its 64-bit simhash of word tokens (XXH3-64 features weighted by\n"
"their counts; 0 without tokens) and its number of word tokens. The GIL is released while\n"
"computing.");

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

/* The documents of one signatures() call: doc i is ptr[i][0:len[i]]. */
typedef struct {
    size_t n;
    const uint8_t **ptr;
    size_t *len;
} docs_t;

/* Parses the arguments after the data, runs the batch, returns the result tuple (or NULL). */
static PyObject *signatures_run(const docs_t *docs, PyObject *table_obj, int unit, Py_ssize_t k, int keep,
                                PyObject *a_obj, PyObject *b_obj, int family, int with_ids, PyObject *fold_obj,
                                int with_fps, int hash, int with_sh) {
    Py_buffer table, abuf, bbuf;
    uint32_t *fold = NULL;
    size_t nfold = 0;
    classes_t cl, clw;
    scratch_t sw = {0};
    PyObject *fps_out = NULL, *sh_out = NULL;
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
    if (!check_unit_k(unit, k) || !check_hash(hash) || !get_fold(fold_obj, &fold, &nfold) ||
        !init_classes(&cl, &table, unit, keep, fold, nfold) ||
        !init_classes(&clw, &table, U_WORD, keep, fold, nfold))
        goto done;
    cl.hash = hash; /* clw, the content fingerprints' word split, hashes no shingles */
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
    if (with_sh) sh_out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(n * 16));
    if (!values || !counts || (with_ids && !ids_out) || (with_fps && !fps_out) || (with_sh && !sh_out)) goto done;
    uint64_t *fps = with_fps ? (uint64_t *)PyByteArray_AS_STRING(fps_out) : NULL;
    uint64_t *shs = with_sh ? (uint64_t *)PyByteArray_AS_STRING(sh_out) : NULL;
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
        size_t content_len, nu = 0;
        size_t ns = doc_shingle_ids(&s, &cl, text, len, (size_t)k, simd, &content_len, &nu);
        if (ns != (size_t)-1 && (with_fps || with_sh)) {
            /* the word unit's split is the fingerprinted content and the simhash's tokens; other
             * units split the words again */
            const scratch_t *words = &s;
            size_t nw = nu;
            if (unit != U_WORD) {
                nw = split_units(&sw, &clw, text, len, &content_len, simd);
                words = &sw;
            }
            if (nw == (size_t)-1) {
                ns = nw;
            } else {
                if (with_fps) fps[i] = content_len ? blake2b_64(words->buf, content_len, simd) : 0;
                if (with_sh) {
                    shs[2 * i] = nw ? simhash_words(words->buf, words->pos, nw) : 0;
                    shs[2 * i + 1] = (uint64_t)nw;
                }
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
    result = with_sh ? PyTuple_Pack(5, values, counts, ids_out, fps_out, sh_out)
                     : PyTuple_Pack(4, values, counts, ids_out, fps_out);
done:
    Py_XDECREF(sh_out);
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
    int unit, keep, family, with_ids, with_fps = 0, hash = H_XXH3, with_sh = 0;
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "y*OOinpOOip|Opip", &data, &offs_obj, &table_obj, &unit, &k, &keep,
                          &a_obj, &b_obj, &family, &with_ids, &fold_obj, &with_fps, &hash, &with_sh))
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
        result = signatures_run(&docs, table_obj, unit, k, keep, a_obj, b_obj, family, with_ids, fold_obj, with_fps,
                                hash, with_sh);
    free(docs.ptr);
    free(docs.len);
    PyBuffer_Release(&offs);
    PyBuffer_Release(&data);
    return result;
}

PyDoc_STRVAR(signatures_segments_doc,
"signatures_segments(segments, table, unit, k, keep_punct, a, b, family, with_ids, fold=None,\n"
"                    with_fingerprints=False, hash=0, with_simhashes=False)\n"
"    -> (values, n_shingles, ids, fingerprints[, simhashes])\n\n"
"signatures() of the documents of several buffers, in order: segments is a list of\n"
"(data, offsets) pairs, each as signatures() takes them. The buffers are read in place (no\n"
"joined copy of them is made).");

static PyObject *py_signatures_segments(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *segs_obj, *table_obj, *a_obj, *b_obj, *fold_obj = NULL;
    int unit, keep, family, with_ids, with_fps = 0, hash = H_XXH3, with_sh = 0;
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "OOinpOOip|Opip", &segs_obj, &table_obj, &unit, &k, &keep, &a_obj, &b_obj, &family,
                          &with_ids, &fold_obj, &with_fps, &hash, &with_sh))
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
    result = signatures_run(&docs, table_obj, unit, k, keep, a_obj, b_obj, family, with_ids, fold_obj, with_fps, hash,
                            with_sh);
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

PyDoc_STRVAR(gather_doc,
"gather(buffers, starts, lengths) -> bytes\n\n"
"The segments [starts[k], starts[k] + lengths[k]) of the buffers' concatenation (a sequence of\n"
"at most 16 bytes-like objects, not copied; each segment within one buffer), joined in order:\n"
"output lines assembled from a table of their pieces (clusters.jsonl) in one pass, with the GIL\n"
"released. starts and lengths are int64 buffers of one length; every segment is checked\n"
"against the bounds first (ValueError).");

#define GATHER_MAX_BUFFERS 16

static PyObject *py_gather(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *bufs_obj, *starts_obj, *lengths_obj;
    if (!PyArg_ParseTuple(args, "OOO", &bufs_obj, &starts_obj, &lengths_obj)) return NULL;
    PyObject *bufs = PySequence_Fast(bufs_obj, "gather: buffers must be a sequence");
    if (!bufs) return NULL;
    Py_ssize_t nb = PySequence_Fast_GET_SIZE(bufs), got = 0;
    Py_buffer views[GATHER_MAX_BUFFERS], starts = {0}, lengths = {0};
    int64_t base[GATHER_MAX_BUFFERS + 1];
    PyObject *out = NULL;
    if (nb > GATHER_MAX_BUFFERS) {
        PyErr_SetString(PyExc_ValueError, "gather: at most 16 buffers");
        goto done;
    }
    base[0] = 0;
    for (; got < nb; got++) {
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(bufs, got), &views[got], PyBUF_SIMPLE) < 0) goto done;
        base[got + 1] = base[got] + (int64_t)views[got].len;
    }
    if (PyObject_GetBuffer(starts_obj, &starts, PyBUF_SIMPLE) < 0) goto done;
    if (PyObject_GetBuffer(lengths_obj, &lengths, PyBUF_SIMPLE) < 0) goto done;
    if (starts.len != lengths.len || starts.len % (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "gather: starts and lengths must be int64 buffers of one length");
        goto done;
    }
    Py_ssize_t n = starts.len / (Py_ssize_t)sizeof(int64_t);
    const int64_t *s = (const int64_t *)starts.buf, *l = (const int64_t *)lengths.buf;
    int64_t total = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        int64_t a = s[k], len = l[k];
        if (len == 0) continue;
        Py_ssize_t b = 0;
        while (b < nb && base[b + 1] <= a) b++;
        if (a < 0 || len < 0 || b == nb || len > base[b + 1] - a) {
            PyErr_Format(PyExc_ValueError, "gather: segment %zd (%lld, %lld) is not within one buffer", k,
                         (long long)a, (long long)len);
            goto done;
        }
        if (len > PY_SSIZE_T_MAX - total) {
            PyErr_SetString(PyExc_OverflowError, "gather: the result is too large");
            goto done;
        }
        total += len;
    }
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (!out) goto done;
    {
        /* Copied with the GIL released: another thread could change starts or lengths meanwhile,
         * so each segment is read once into locals and checked again against the buffers and the
         * room left (a change makes a ValueError, never a read or write out of bounds). */
        char *o = PyBytes_AS_STRING(out);
        int64_t room = total;
        int changed = 0;
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t b = 0;
        for (Py_ssize_t k = 0; k < n; k++) {
            int64_t a = s[k], len = l[k];
            if (len == 0) continue;
            if (a < base[b] || a >= base[b + 1]) { /* segments mostly stay in one buffer: look again only on a change */
                b = 0;
                while (b < nb && base[b + 1] <= a) b++;
            }
            if (a < 0 || len < 0 || b == nb || len > base[b + 1] - a || len > room) {
                changed = 1;
                break;
            }
            memcpy(o, (const char *)views[b].buf + (a - base[b]), (size_t)len);
            o += len;
            room -= len;
        }
        Py_END_ALLOW_THREADS
        if (changed || room) {
            Py_CLEAR(out);
            PyErr_SetString(PyExc_ValueError, "gather: the segments changed during the call");
        }
    }
done:
    for (Py_ssize_t k = 0; k < got; k++) PyBuffer_Release(&views[k]);
    if (starts.obj) PyBuffer_Release(&starts);
    if (lengths.obj) PyBuffer_Release(&lengths);
    Py_DECREF(bufs);
    return out;
}

static PyMethodDef methods[] = {
    {"units", py_units, METH_VARARGS, units_doc},
    {"shingle_ids", py_shingle_ids, METH_VARARGS, shingle_ids_doc},
    {"signatures", py_signatures, METH_VARARGS, signatures_doc},
    {"signatures_segments", py_signatures_segments, METH_VARARGS, signatures_segments_doc},
    {"minhash", py_minhash, METH_VARARGS, minhash_doc},
    {"fingerprints", py_fingerprints, METH_VARARGS, fingerprints_doc},
    {"max_doc_bytes", py_max_doc_bytes, METH_NOARGS, max_doc_bytes_doc},
    {"set_max_doc_bytes", py_set_max_doc_bytes, METH_O, set_max_doc_bytes_doc},
    {"xxh3_64", py_xxh3, METH_O, xxh3_doc},
    {"utf8_join", py_utf8_join, METH_VARARGS, utf8_join_doc},
    {"gather", py_gather, METH_VARARGS, gather_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "neardup._kernel",
    "Compiled hot path of neardup: tokenize, shingle, XXH3 and MinHash over batches of documents.",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__kernel(void) {
    rabin_init(); /* read-only tables from here on, so every thread may use them */
    PyObject *mod = PyModule_Create(&moduledef);
    if (!mod) return NULL;
    if (PyModule_AddFunctions(mod, nd_dispatch_methods) < 0 || PyModule_AddFunctions(mod, nd_pairs_methods) < 0 ||
        PyModule_AddFunctions(mod, nd_postings_methods) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    if (PyModule_AddIntConstant(mod, "UNIT_WORD", U_WORD) < 0 ||
        PyModule_AddIntConstant(mod, "UNIT_CHAR", U_CHAR) < 0 ||
        PyModule_AddIntConstant(mod, "UNIT_LINE", U_LINE) < 0 ||
        PyModule_AddIntConstant(mod, "FAMILY_AFFINE61", F_AFFINE61) < 0 ||
        PyModule_AddIntConstant(mod, "FAMILY_MULSHIFT64", F_MULSHIFT64) < 0 ||
        PyModule_AddIntConstant(mod, "FAMILY_MULSHIFT32", F_MULSHIFT32) < 0 ||
        PyModule_AddIntConstant(mod, "HASH_XXH3", H_XXH3) < 0 ||
        PyModule_AddIntConstant(mod, "HASH_RABIN40", H_RABIN40) < 0 ||
        PyModule_AddIntConstant(mod, "HASH_RABIN64", H_RABIN64) < 0 ||
        PyModule_AddIntConstant(mod, "XXH_VERSION", XXH_VERSION_NUMBER) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}

