/*
 * The Python functions over buffers of text and bytes: xxh3_64 (the header's check), utf8_join
 * (texts encoded and joined off the GIL) and gather (the result lines assembled from slices of
 * buffers, neardup.io.write.result_lines). Part of neardup._kernel; the overview is in kernel.h.
 */

#include "kernel.h"

#define XXH_INLINE_ALL
#include "../_vendor/xxhash/xxhash.h" /* xxHash 0.8.2, BSD-2-Clause: _vendor/xxhash/LICENSE */

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

ND_HIDDEN PyMethodDef nd_buffers_methods[] = {
    {"xxh3_64", py_xxh3, METH_O, xxh3_doc},
    {"utf8_join", py_utf8_join, METH_VARARGS, utf8_join_doc},
    {"gather", py_gather, METH_VARARGS, gather_doc},
    {NULL, NULL, 0, NULL},
};
