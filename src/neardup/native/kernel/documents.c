/*
 * The Python functions over batches of documents: units, shingle_ids, fingerprints (simhash),
 * signatures, signatures_segments and minhash, which run passes 1-4 (tokenize.c, hash.c,
 * rabin.c, distinct.c, minhash.c) with the GIL released. Part of neardup._kernel; the overview is
 * in kernel.h.
 */

#include "kernel.h"

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
    result = nd_new_bytearray(n ? (const char *)s.ids : NULL, (Py_ssize_t)(n * 8));
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
    result = nd_new_bytearray(NULL, (Py_ssize_t)(n * 8));
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
    values = nd_new_bytearray(NULL, (Py_ssize_t)(n * m * 8));
    counts = nd_new_bytearray(NULL, (Py_ssize_t)(n * 8));
    if (with_ids && values && counts) {
        /* a document of len bytes has at most len units, so shingles: allocate that bound (pages never
         * written are never touched) and shrink it afterwards, so the ids are written once */
        size_t bound = 0;
        for (size_t i = 0; i < n; i++) bound += docs->len[i];
        if (nfold) bound *= FOLD_POS_FACTOR; /* case folding can make more units than bytes */
        ids_out = nd_new_bytearray(NULL, (Py_ssize_t)(bound * 8));
        if (ids_out) idbuf = (uint64_t *)PyByteArray_AS_STRING(ids_out);
    }
    if (with_fps) fps_out = nd_new_bytearray(NULL, (Py_ssize_t)(n * 8));
    if (with_sh) sh_out = nd_new_bytearray(NULL, (Py_ssize_t)(n * 16));
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
    values = nd_new_bytearray(NULL, (Py_ssize_t)(n * m * 8));
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

ND_HIDDEN PyMethodDef nd_documents_methods[] = {
    {"units", py_units, METH_VARARGS, units_doc},
    {"shingle_ids", py_shingle_ids, METH_VARARGS, shingle_ids_doc},
    {"signatures", py_signatures, METH_VARARGS, signatures_doc},
    {"signatures_segments", py_signatures_segments, METH_VARARGS, signatures_segments_doc},
    {"minhash", py_minhash, METH_VARARGS, minhash_doc},
    {"fingerprints", py_fingerprints, METH_VARARGS, fingerprints_doc},
    {NULL, NULL, 0, NULL},
};
