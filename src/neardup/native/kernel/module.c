/*
 * The module neardup._kernel: the argument checks the Python functions share, the document size
 * limit, and the module's creation from the method tables of the kernel's files. The overview is
 * in kernel.h.
 */

#include "kernel.h"

#define XXH_INLINE_ALL
#include "../_vendor/xxhash/xxhash.h" /* xxHash 0.8.2, BSD-2-Clause: _vendor/xxhash/LICENSE */

/* ------------------------------------------------------------------------------------------ */
/* Argument helpers                                                                            */
/* ------------------------------------------------------------------------------------------ */

ND_HIDDEN int get_table(PyObject *obj, Py_buffer *view) {
    if (PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) < 0) return 0;
    if (view->len != TABLE_SIZE) {
        PyErr_Format(PyExc_ValueError, "class table must have %d entries, got %zd", TABLE_SIZE,
                     view->len);
        PyBuffer_Release(view);
        return 0;
    }
    return 1;
}

ND_HIDDEN int check_unit_k(int unit, Py_ssize_t k) {
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
ND_HIDDEN int get_fold(PyObject *obj, uint32_t **fold, size_t *nfold) {
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

ND_HIDDEN int init_classes(classes_t *cl, const Py_buffer *table, int unit, int keep, const uint32_t *fold,
                           size_t nfold) {
    if (!classes_init(cl, (const uint8_t *)table->buf, unit, keep, fold, nfold)) {
        PyErr_SetString(PyExc_ValueError,
                        "the fold table must be sorted by code point, and fold ASCII to ASCII");
        return 0;
    }
    return 1;
}

/* The limit in force: MAX_DOC_BYTES, or lower for tests (set_max_doc_bytes), so that what a
 * caller does with a document over the limit can be tested without a 768 MiB document. */
ND_HIDDEN size_t g_max_doc_bytes = MAX_DOC_BYTES;

ND_HIDDEN int check_hash(int hash) {
    if (hash == H_XXH3 || hash == H_RABIN40 || hash == H_RABIN64) return 1;
    PyErr_Format(PyExc_ValueError, "hash must be 0 (xxh3), 1 (rabin40) or 2 (rabin64), got %d", hash);
    return 0;
}

ND_HIDDEN int check_doc_len(size_t len) {
    if (len > g_max_doc_bytes) {
        PyErr_Format(PyExc_ValueError, "a document of %zu bytes is larger than the kernel's limit (%zu)",
                     len, g_max_doc_bytes);
        return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* The document limit                                                                          */
/* ------------------------------------------------------------------------------------------ */

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

static PyMethodDef methods[] = {
    {"max_doc_bytes", py_max_doc_bytes, METH_NOARGS, max_doc_bytes_doc},
    {"set_max_doc_bytes", py_set_max_doc_bytes, METH_O, set_max_doc_bytes_doc},
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
    if (PyModule_AddFunctions(mod, nd_documents_methods) < 0 || PyModule_AddFunctions(mod, nd_buffers_methods) < 0 ||
        PyModule_AddFunctions(mod, nd_dispatch_methods) < 0 || PyModule_AddFunctions(mod, nd_pairs_methods) < 0 ||
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

