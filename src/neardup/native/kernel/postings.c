/*
 * Posting blocks of the index's posting runs (neardup.store.runs): coded and decoded. Part of
 * neardup._kernel; the overview is in kernel.h.
 *
 * A block is a first key (int64, its own column) and `data`: one byte w (the bits of the
 * block's largest delta, 1-56, or 64), one byte n (the keys after the first), then the n deltas
 * to those keys as w-bit integers packed least significant bit first, in ceil(n * w / 8) bytes.
 * Keys are summed modulo 2**64 (a delta may wrap: the keys come back exactly whatever their
 * order). runs.py codes the same bytes with numpy (its reference, compared in tests and in
 * fuzz/targets.py's `postings` target); this is its hot path: a merge of runs decodes and codes
 * every posting it rewrites, 24 postings a document with the index's defaults.
 *
 * `data` comes from the index file, so it is read as untrusted: a block shorter than its two
 * header bytes or with a width of 0 or more than 64 is refused (ValueError); a body shorter than
 * its n deltas need reads zeros past its end, as runs.py's reference does.
 */

#include "kernel.h"

#define BLOCK_KEYS 128 /* keys a block: runs.BLOCK */
#define MAX_PACKED_BITS 56 /* runs.MAX_PACKED_BITS: a wider largest delta is stored in 64 bits */

/* The bits of a block's largest delta (at least 1), or 64 past MAX_PACKED_BITS, as runs.py's
 * numpy coder takes them: from the exponent of the delta converted to a double, which rounds a
 * delta of more than 53 bits up to the next power of two when it is close enough (a width can
 * only come out larger, never too small); the same bytes from both. (A comparison of doubles,
 * not frexp: no libm.) */
static unsigned bit_width(uint64_t largest) {
    unsigned w = 64 - (unsigned)__builtin_clzll(largest | 1);
    if (w > MAX_PACKED_BITS) return 64;
    if (w > 53 && (double)largest >= (double)(UINT64_C(1) << w)) w++; /* rounded up to 2**w */
    return w > MAX_PACKED_BITS ? 64 : w;
}

/* the n deltas of one block, packed LSB first into out (ceil(n * w / 8) bytes, zeroed here) */
static void pack(const uint64_t *deltas, size_t n, unsigned w, uint8_t *out) {
    const size_t body = (n * w + 7) / 8;
    memset(out, 0, body);
    size_t bit = 0;
    for (size_t i = 0; i < n; i++, bit += w) {
        uint64_t v = w == 64 ? deltas[i] : deltas[i] & ((UINT64_C(1) << w) - 1);
        size_t at = bit >> 3;
        unsigned shift = (unsigned)(bit & 7);
        /* the value's bits from `shift` of byte `at` on: at most 9 bytes */
        out[at] |= (uint8_t)(v << shift);
        v = shift ? v >> (8 - shift) : v >> 8;
        unsigned left = w + shift > 8 ? w + shift - 8 : 0;
        for (size_t k = at + 1; left > 0; k++) {
            out[k] |= (uint8_t)v;
            v >>= 8;
            left = left > 8 ? left - 8 : 0;
        }
    }
}

/* delta t of a body of `len` bytes, w bits a delta; bytes past the end read as zeros */
static uint64_t unpack_one(const uint8_t *body, size_t len, size_t t, unsigned w) {
    const size_t bit = t * w;
    const size_t at = bit >> 3;
    const unsigned shift = (unsigned)(bit & 7);
    uint64_t v = 0;
    /* the bytes that hold bits [bit, bit + w): at most 9 */
    const size_t nbytes = (shift + w + 7) / 8;
    for (size_t k = 0; k < nbytes && k < 8; k++)
        if (at + k < len) v |= (uint64_t)body[at + k] << (8 * k);
    v >>= shift;
    if (nbytes == 9 && at + 8 < len) v |= (uint64_t)body[at + 8] << (64 - shift);
    return w == 64 ? v : v & ((UINT64_C(1) << w) - 1);
}

PyDoc_STRVAR(encode_doc,
"encode_posting_blocks(keys) -> list of (first, data)\n\n"
"The blocks of int64 keys (a C-contiguous buffer of 8-byte values, sorted and distinct for\n"
"small deltas, though any order codes and decodes exactly): as neardup.store.runs.encode_blocks.");

static PyObject *py_encode(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *obj;
    if (!PyArg_ParseTuple(args, "O", &obj)) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    PyObject *out = NULL;
    if (view.len % 8) {
        PyErr_SetString(PyExc_ValueError, "keys must be a buffer of 8-byte integers");
        goto done;
    }
    const size_t n = (size_t)view.len / 8;
    const size_t nblocks = (n + BLOCK_KEYS - 1) / BLOCK_KEYS;
    out = PyList_New((Py_ssize_t)nblocks);
    if (!out) goto done;
    uint64_t deltas[BLOCK_KEYS];
    uint8_t data[2 + 8 * BLOCK_KEYS];
    for (size_t b = 0; b < nblocks; b++) {
        uint64_t keys[BLOCK_KEYS];
        const size_t a = b * BLOCK_KEYS;
        const size_t count = n - a < BLOCK_KEYS ? n - a : BLOCK_KEYS;
        /* (copied: the buffer need not be 8-byte aligned) */
        memcpy(keys, (const uint8_t *)view.buf + a * 8, count * 8);
        uint64_t largest = 0;
        for (size_t i = 1; i < count; i++) {
            deltas[i - 1] = keys[i] - keys[i - 1];
            if (deltas[i - 1] > largest) largest = deltas[i - 1];
        }
        const unsigned w = bit_width(largest);
        const size_t nd = count - 1;
        data[0] = (uint8_t)w;
        data[1] = (uint8_t)nd;
        pack(deltas, nd, w, data + 2);
        PyObject *item = Py_BuildValue("(Ly#)", (long long)(int64_t)keys[0], (const char *)data,
                                       (Py_ssize_t)(2 + (nd * w + 7) / 8));
        if (!item) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)b, item);
    }
done:
    PyBuffer_Release(&view);
    return out;
}

PyDoc_STRVAR(decode_doc,
"decode_posting_blocks(blocks) -> (keys, block_of)\n\n"
"The keys of a list or tuple of (first, data) blocks, all at once, and for each key the position\n"
"of its block: two bytearrays of int64, as neardup.store.runs.decode_many. ValueError for a\n"
"block shorter than its header or with a width of 0 or past 64.");

static PyObject *py_decode(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *obj;
    if (!PyArg_ParseTuple(args, "O", &obj)) return NULL;
    /* a tuple of the items: each block is held by it while it is read, whatever the caller's
     * list does meanwhile (the GIL is held throughout: no other thread runs here) */
    PyObject *seq = PySequence_Tuple(obj);
    if (!seq) return NULL;
    const Py_ssize_t nb = PyTuple_GET_SIZE(seq);
    PyObject *keys_out = NULL, *block_out = NULL, *result = NULL;
    Py_buffer *views = PyMem_Calloc((size_t)(nb ? nb : 1), sizeof(Py_buffer));
    uint64_t *firsts = PyMem_Calloc((size_t)(nb ? nb : 1), sizeof(uint64_t));
    Py_ssize_t held = 0;
    if (!views || !firsts) {
        PyErr_NoMemory();
        goto done;
    }
    size_t total = 0;
    for (Py_ssize_t b = 0; b < nb; b++) {
        PyObject *item = PyTuple_GET_ITEM(seq, b);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
            PyErr_Format(PyExc_TypeError, "block %zd is not a (first, data) tuple", b);
            goto done;
        }
        PyObject *first = PyTuple_GET_ITEM(item, 0);
        if (!PyLong_Check(first)) {
            PyErr_Format(PyExc_TypeError, "block %zd: its first key is not an integer", b);
            goto done;
        }
        /* (any Python int, taken modulo 2**64 as the keys' sums are) */
        firsts[b] = (uint64_t)PyLong_AsUnsignedLongLongMask(first);
        if (PyErr_Occurred()) goto done;
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(item, 1), &views[b], PyBUF_SIMPLE) < 0) goto done;
        held = b + 1; /* views[0..held) are released at the end */
        const uint8_t *d = (const uint8_t *)views[b].buf;
        if (views[b].len < 2) {
            PyErr_Format(PyExc_ValueError, "posting block %zd is shorter than its header (%zd bytes)", b,
                         views[b].len);
            goto done;
        }
        if (d[0] < 1 || d[0] > 64) {
            PyErr_Format(PyExc_ValueError, "posting block %zd has a delta width of %d bits (1-64)", b, (int)d[0]);
            goto done;
        }
        total += (size_t)d[1] + 1;
    }
    keys_out = nd_new_bytearray(NULL, (Py_ssize_t)(total * 8));
    block_out = nd_new_bytearray(NULL, (Py_ssize_t)(total * 8));
    if (!keys_out || !block_out) goto done;
    int64_t *keys = (int64_t *)PyByteArray_AS_STRING(keys_out);
    int64_t *block_of = (int64_t *)PyByteArray_AS_STRING(block_out);
    size_t at = 0;
    for (Py_ssize_t b = 0; b < nb; b++) {
        const uint8_t *d = (const uint8_t *)views[b].buf;
        const unsigned w = d[0];
        const size_t n = d[1];
        const uint8_t *body = d + 2;
        const size_t len = (size_t)views[b].len - 2;
        uint64_t key = firsts[b];
        keys[at] = (int64_t)key;
        block_of[at++] = (int64_t)b;
        for (size_t t = 0; t < n; t++) {
            key += unpack_one(body, len, t, w);
            keys[at] = (int64_t)key;
            block_of[at++] = (int64_t)b;
        }
    }
    result = PyTuple_Pack(2, keys_out, block_out);
done:
    for (Py_ssize_t b = 0; b < held; b++) PyBuffer_Release(&views[b]);
    PyMem_Free(views);
    PyMem_Free(firsts);
    Py_XDECREF(keys_out);
    Py_XDECREF(block_out);
    Py_DECREF(seq);
    return result;
}

PyMethodDef nd_postings_methods[] = {
    {"encode_posting_blocks", py_encode, METH_VARARGS, encode_doc},
    {"decode_posting_blocks", py_decode, METH_VARARGS, decode_doc},
    {NULL, NULL, 0, NULL},
};
