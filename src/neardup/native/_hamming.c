/*
 * neardup._hamming: the compiled query probe of neardup.index.simhash.SimhashIndex.
 *
 * A Prober is built (by the index, on demand) over the index's current arrays, read through the
 * buffer protocol without copying (so memory-mapped tables from SimhashIndex.open work):
 *
 *   - per segment: the sorted permuted fingerprints (uint64, tables x size, flattened), their
 *     rows (int32, same shape) and the directories (int32, tables x (2**dbits + 1));
 *   - the fingerprints by row (uint64) and the range [tail_lo, tail_hi) of the unsorted buffer,
 *     checked by brute force;
 *   - optionally the tombstones by row (bool) and the integer ids by row (int64).
 *
 * A query permutes the fingerprint for every table (the bit moves of the layout), reads the two
 * directory entries of its bucket, and checks the Hamming distance (popcount of the XOR) of each
 * entry of the bucket. The probe is staged over the tables (all directory reads prefetched, then
 * all bucket starts prefetched, then the scans), so the cache misses of the tables overlap.
 * Matches are filtered by the tombstones, sorted by (distance, row) and deduplicated (a match
 * found by several tables appears once), exactly as the numpy path of index/simhash.py answers.
 *
 * The Prober holds buffer views of the arrays it reads, so they stay alive; the index drops and
 * rebuilds it whenever it changes (add, remove, merge, compact). Rows and directory entries read
 * from the tables are bounds-checked (a corrupt file gives ValueError, never a stray read).
 * query_many releases the GIL while it probes.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "new_bytearray.h"

#if defined(__has_attribute)
#if __has_attribute(target_clones) && defined(__x86_64__) && defined(__ELF__)
/* popcnt where the CPU has it (chosen once by the loader), portable code elsewhere */
#define ND_CLONES __attribute__((target_clones("popcnt", "default")))
#endif
#endif
#ifndef ND_CLONES
#define ND_CLONES
#endif

#if defined(__GNUC__) || defined(__clang__)
#define ND_INLINE static inline __attribute__((always_inline))
#define ND_PREFETCH(p) __builtin_prefetch(p)
#define ND_POPCOUNT(x) ((unsigned)__builtin_popcountll(x))
#else /* e.g. MSVC: portable popcount, no prefetch */
#define ND_INLINE static inline
#define ND_PREFETCH(p) ((void)(p))
static inline unsigned nd_popcount(uint64_t x) {
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (unsigned)((x * 0x0101010101010101ULL) >> 56);
}
#define ND_POPCOUNT(x) nd_popcount(x)
#endif

typedef struct {
    int nmoves;
    int shift[64];     /* > 0: right shift, < 0: left shift */
    uint64_t mask[64]; /* bits kept after the shift */
} perm_t;

typedef struct {
    Py_buffer kb, rb, db;
    const uint64_t *keys;
    const int32_t *rows;
    const int32_t *dirs;
    int64_t m;      /* entries per table */
    int64_t stride; /* directory entries per table: 2**dbits + 1 */
    int dbits;
} seg_t;

typedef struct {
    PyObject_HEAD
    int k;
    int T;
    perm_t *perms;
    int nseg;
    seg_t *segs;
    int has_fps, has_dead, has_ids;
    Py_buffer fb, deadb, idb;
    const uint64_t *fps;
    const uint8_t *dead;
    const int64_t *ids;
    int64_t nrows; /* rows addressable: bounds for the rows read from the tables */
    int64_t tail_lo, tail_hi;
} Prober;

/* ------------------------------------------------------------------------------------------ */
/* hits: (distance << 32 | row) words, sorted and deduplicated at the end of a query           */

typedef struct {
    uint64_t *v;
    size_t n, cap;
    int oom, bad;
    uint64_t stack[64];
} hits_t;

static void hits_init(hits_t *h) {
    h->v = h->stack;
    h->n = 0;
    h->cap = 64;
    h->oom = h->bad = 0;
}

static void hits_free(hits_t *h) {
    if (h->v != h->stack) free(h->v);
    h->v = h->stack;
    h->cap = 64;
}

static int hits_grow(hits_t *h) {
    size_t cap = h->cap * 2;
    uint64_t *nv;
    if (h->v == h->stack) {
        nv = (uint64_t *)malloc(cap * sizeof(uint64_t));
        if (nv) memcpy(nv, h->stack, h->n * sizeof(uint64_t));
    } else {
        nv = (uint64_t *)realloc(h->v, cap * sizeof(uint64_t));
    }
    if (!nv) {
        h->oom = 1;
        return -1;
    }
    h->v = nv;
    h->cap = cap;
    return 0;
}

ND_INLINE void hits_push(hits_t *h, const Prober *p, int64_t row, unsigned d) {
    if ((uint64_t)row >= (uint64_t)p->nrows) {
        h->bad = 1;
        return;
    }
    if (p->has_dead && p->dead[row]) return;
    if (p->has_ids) ND_PREFETCH(p->ids + row); /* read when the answer is built */
    if (h->n == h->cap && hits_grow(h) < 0) return;
    h->v[h->n++] = ((uint64_t)d << 32) | (uint64_t)row;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* sort (distance, row) and drop repeats (the same row found by several tables) */
static void hits_finish(hits_t *h) {
    size_t n = h->n;
    uint64_t *v = h->v;
    if (n < 2) return;
    if (n <= 24) {
        for (size_t i = 1; i < n; i++) {
            uint64_t x = v[i];
            size_t j = i;
            while (j > 0 && v[j - 1] > x) {
                v[j] = v[j - 1];
                j--;
            }
            v[j] = x;
        }
    } else {
        qsort(v, n, sizeof(uint64_t), cmp_u64);
    }
    size_t w = 1;
    for (size_t i = 1; i < n; i++)
        if (v[i] != v[w - 1]) v[w++] = v[i];
    h->n = w;
}

/* ------------------------------------------------------------------------------------------ */
/* the probe                                                                                  */

ND_INLINE uint64_t permute(const perm_t *pm, uint64_t x) {
    uint64_t out = 0;
    for (int i = 0; i < pm->nmoves; i++) {
        int s = pm->shift[i];
        out |= (s >= 0 ? (x >> s) : (x << -s)) & pm->mask[i];
    }
    return out;
}

/* one query against every segment and the buffer; scratch: 3 * T words */
ND_CLONES static void probe_one(const Prober *p, uint64_t x, uint64_t *pv, int64_t *lo, int64_t *hi,
                                hits_t *h) {
    const int T = p->T;
    const unsigned k = (unsigned)p->k;
    for (int si = 0; si < p->nseg; si++) {
        const seg_t *s = &p->segs[si];
        const int64_t m = s->m;
        if (m == 0) continue;
        const int sh = 64 - s->dbits;
        for (int t = 0; t < T; t++) {
            uint64_t v = permute(&p->perms[t], x);
            pv[t] = v;
            int64_t b = (int64_t)t * s->stride + (s->dbits ? (int64_t)(v >> sh) : 0);
            lo[t] = b;
            ND_PREFETCH(s->dirs + b);
        }
        for (int t = 0; t < T; t++) {
            int64_t b = lo[t];
            int64_t a = s->dirs[b], e = s->dirs[b + 1];
            if (a < 0 || e > m || a > e) { /* corrupt directory */
                h->bad = 1;
                a = e = 0;
            }
            lo[t] = a;
            hi[t] = e;
            if (e > a) {
                ND_PREFETCH(s->keys + (int64_t)t * m + a);
                ND_PREFETCH(s->rows + (int64_t)t * m + a);
            }
        }
        for (int t = 0; t < T; t++) {
            const int64_t base = (int64_t)t * m;
            const uint64_t *kk = s->keys + base;
            const int32_t *rr = s->rows + base;
            const uint64_t v = pv[t];
            for (int64_t i = lo[t]; i < hi[t]; i++) {
                unsigned d = ND_POPCOUNT(kk[i] ^ v);
                if (d <= k) hits_push(h, p, rr[i], d);
            }
        }
    }
    if (p->tail_hi > p->tail_lo) {
        const uint64_t *f = p->fps;
        for (int64_t r = p->tail_lo; r < p->tail_hi; r++) {
            unsigned d = ND_POPCOUNT(f[r] ^ x);
            if (d <= k) hits_push(h, p, r, d);
        }
    }
    hits_finish(h);
}

/* ------------------------------------------------------------------------------------------ */
/* construction                                                                               */

static int get_view(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    if (view->itemsize != itemsize || view->len % itemsize) {
        PyErr_Format(PyExc_TypeError, "%s: expected a contiguous array of %zd-byte items", what, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static void prober_clear(Prober *self) {
    if (self->segs) {
        for (int i = 0; i < self->nseg; i++) {
            PyBuffer_Release(&self->segs[i].kb);
            PyBuffer_Release(&self->segs[i].rb);
            PyBuffer_Release(&self->segs[i].db);
        }
        PyMem_Free(self->segs);
        self->segs = NULL;
    }
    self->nseg = 0;
    if (self->has_fps) PyBuffer_Release(&self->fb);
    if (self->has_dead) PyBuffer_Release(&self->deadb);
    if (self->has_ids) PyBuffer_Release(&self->idb);
    self->has_fps = self->has_dead = self->has_ids = 0;
    PyMem_Free(self->perms);
    self->perms = NULL;
    self->T = 0;
}

static void prober_dealloc(Prober *self) {
    prober_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int parse_moves(Prober *self, PyObject *moves) {
    PyObject *seq = PySequence_Fast(moves, "moves must be a sequence (one per table)");
    if (!seq) return -1;
    Py_ssize_t T = PySequence_Fast_GET_SIZE(seq);
    if (T > INT32_MAX / 4) {
        PyErr_SetString(PyExc_ValueError, "too many tables");
        Py_DECREF(seq);
        return -1;
    }
    self->perms = (perm_t *)PyMem_Calloc(T ? (size_t)T : 1, sizeof(perm_t));
    if (!self->perms) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    self->T = (int)T;
    for (Py_ssize_t t = 0; t < T; t++) {
        PyObject *tm = PySequence_Fast(PySequence_Fast_GET_ITEM(seq, t), "a table's moves must be a sequence");
        if (!tm) goto fail;
        Py_ssize_t nm = PySequence_Fast_GET_SIZE(tm);
        if (nm > 64) {
            PyErr_SetString(PyExc_ValueError, "a table has more than 64 moves");
            Py_DECREF(tm);
            goto fail;
        }
        perm_t *pm = &self->perms[t];
        pm->nmoves = (int)nm;
        for (Py_ssize_t i = 0; i < nm; i++) {
            int s, w, d;
            if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(tm, i), "iii;a move is (src_shift, width, dst_shift)",
                                  &s, &w, &d)) {
                Py_DECREF(tm);
                goto fail;
            }
            if (w < 1 || w > 64 || s < 0 || d < 0 || s + w > 64 || d + w > 64) {
                PyErr_SetString(PyExc_ValueError, "a move lies outside 64 bits");
                Py_DECREF(tm);
                goto fail;
            }
            pm->shift[i] = s - d;
            pm->mask[i] = (w == 64 ? ~(uint64_t)0 : (((uint64_t)1 << w) - 1)) << d;
        }
        Py_DECREF(tm);
    }
    Py_DECREF(seq);
    return 0;
fail:
    Py_DECREF(seq);
    return -1;
}

static int prober_init(Prober *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"k", "moves", "segments", "fingerprints", "tail_lo", "tail_hi", "dead", "ids", NULL};
    int k;
    PyObject *moves, *segments, *fps_obj, *dead_obj = Py_None, *ids_obj = Py_None;
    Py_ssize_t tail_lo, tail_hi;
    if (self->perms || self->nseg || self->has_fps) {
        PyErr_SetString(PyExc_RuntimeError, "a Prober is initialised once");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "iOOOnn|OO", kwlist, &k, &moves, &segments, &fps_obj, &tail_lo,
                                     &tail_hi, &dead_obj, &ids_obj))
        return -1;
    if (k < 0 || k > 64) {
        PyErr_SetString(PyExc_ValueError, "k must be in [0, 64]");
        return -1;
    }
    self->k = k;
    if (parse_moves(self, moves) < 0) goto fail;
    if (get_view(fps_obj, &self->fb, 8, "fingerprints") < 0) goto fail;
    self->has_fps = 1;
    self->fps = (const uint64_t *)self->fb.buf;
    self->nrows = self->fb.len / 8;
    if (tail_lo < 0 || tail_hi < tail_lo || tail_hi > self->nrows) {
        PyErr_SetString(PyExc_ValueError, "the buffer range lies outside the fingerprints");
        goto fail;
    }
    self->tail_lo = tail_lo;
    self->tail_hi = tail_hi;
    if (dead_obj != Py_None) {
        if (get_view(dead_obj, &self->deadb, 1, "dead") < 0) goto fail;
        self->has_dead = 1;
        self->dead = (const uint8_t *)self->deadb.buf;
        if (self->deadb.len < self->nrows) {
            PyErr_SetString(PyExc_ValueError, "dead is shorter than the fingerprints");
            goto fail;
        }
    }
    if (ids_obj != Py_None) {
        if (get_view(ids_obj, &self->idb, 8, "ids") < 0) goto fail;
        self->has_ids = 1;
        self->ids = (const int64_t *)self->idb.buf;
        if (self->idb.len / 8 < self->nrows) {
            PyErr_SetString(PyExc_ValueError, "ids are shorter than the fingerprints");
            goto fail;
        }
    }
    PyObject *seq = PySequence_Fast(segments, "segments must be a sequence");
    if (!seq) goto fail;
    Py_ssize_t ns = PySequence_Fast_GET_SIZE(seq);
    self->segs = (seg_t *)PyMem_Calloc(ns ? (size_t)ns : 1, sizeof(seg_t));
    if (!self->segs) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < ns; i++) {
        PyObject *ko, *ro, *dob;
        Py_ssize_t m, stride;
        int dbits;
        seg_t *s = &self->segs[i];
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "OOOnni;a segment is (keys, rows, dirs, size, stride, dbits)",
                              &ko, &ro, &dob, &m, &stride, &dbits)) {
            Py_DECREF(seq);
            goto fail;
        }
        if (get_view(ko, &s->kb, 8, "keys") < 0) {
            Py_DECREF(seq);
            goto fail;
        }
        if (get_view(ro, &s->rb, 4, "rows") < 0) {
            PyBuffer_Release(&s->kb);
            Py_DECREF(seq);
            goto fail;
        }
        if (get_view(dob, &s->db, 4, "dirs") < 0) {
            PyBuffer_Release(&s->kb);
            PyBuffer_Release(&s->rb);
            Py_DECREF(seq);
            goto fail;
        }
        self->nseg = (int)i + 1; /* released by prober_clear from here on */
        s->keys = (const uint64_t *)s->kb.buf;
        s->rows = (const int32_t *)s->rb.buf;
        s->dirs = (const int32_t *)s->db.buf;
        s->m = m;
        s->stride = stride;
        s->dbits = dbits;
        if (m < 0 || dbits < 0 || dbits > 40 || stride != ((Py_ssize_t)1 << dbits) + 1 ||
            s->kb.len / 8 != (Py_ssize_t)self->T * m || s->rb.len / 4 != (Py_ssize_t)self->T * m ||
            s->db.len / 4 != (Py_ssize_t)self->T * stride) {
            PyErr_SetString(PyExc_ValueError, "a segment's arrays do not match its size, directory bits and tables");
            Py_DECREF(seq);
            goto fail;
        }
    }
    Py_DECREF(seq);
    return 0;
fail:
    prober_clear(self);
    return -1;
}

/* ------------------------------------------------------------------------------------------ */
/* methods                                                                                    */

static int get_u64(PyObject *o, uint64_t *out) {
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "a fingerprint must be an int, got %s", Py_TYPE(o)->tp_name);
        return -1;
    }
    unsigned long long v = PyLong_AsUnsignedLongLong(o);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    *out = (uint64_t)v;
    return 0;
}

static PyObject *bad_index(void) {
    PyErr_SetString(PyExc_ValueError,
                    "simhash index tables hold a row or directory entry out of range (corrupt file?)");
    return NULL;
}

/* list of (id or row, distance) from finished hits */
static PyObject *hits_to_list(const Prober *self, const uint64_t *v, size_t n) {
    PyObject *out = PyList_New((Py_ssize_t)n);
    if (!out) return NULL;
    for (size_t i = 0; i < n; i++) {
        int64_t row = (int64_t)(v[i] & 0xFFFFFFFFu);
        PyObject *id = self->has_ids ? PyLong_FromLongLong(self->ids[row]) : PyLong_FromLongLong(row);
        PyObject *d = PyLong_FromUnsignedLong((unsigned long)(v[i] >> 32));
        PyObject *tup = (id && d) ? PyTuple_New(2) : NULL;
        if (!tup) {
            Py_XDECREF(id);
            Py_XDECREF(d);
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(tup, 0, id);
        PyTuple_SET_ITEM(tup, 1, d);
        PyList_SET_ITEM(out, (Py_ssize_t)i, tup);
    }
    return out;
}

PyDoc_STRVAR(query_doc,
"query(fingerprint) -> list of (id, distance)\n\n"
"Every live row within k bits of the fingerprint (an int in [0, 2**64)), sorted by distance and\n"
"row; the id is the int64 id of the row when ids were given, else the row.");

static PyObject *prober_query(Prober *self, PyObject *arg) {
    uint64_t x;
    if (get_u64(arg, &x) < 0) return NULL;
    uint64_t sbuf[3 * 64];
    uint64_t *scratch = sbuf;
    int T = self->T;
    if (T > 64) {
        scratch = (uint64_t *)PyMem_Malloc(3 * (size_t)T * sizeof(uint64_t));
        if (!scratch) return PyErr_NoMemory();
    }
    hits_t h;
    hits_init(&h);
    probe_one(self, x, scratch, (int64_t *)(scratch + T), (int64_t *)(scratch + 2 * (size_t)T), &h);
    if (scratch != sbuf) PyMem_Free(scratch);
    PyObject *res;
    if (h.oom)
        res = PyErr_NoMemory();
    else if (h.bad)
        res = bad_index();
    else
        res = hits_to_list(self, h.v, h.n);
    hits_free(&h);
    return res;
}

typedef struct {
    int64_t *qi;
    int32_t *row;
    uint8_t *dist;
    size_t n, cap;
} flat_t;

static int flat_reserve(flat_t *f, size_t need) {
    if (need <= f->cap) return 0;
    size_t cap = f->cap ? f->cap : 1024;
    while (cap < need) cap *= 2;
    int64_t *a = (int64_t *)realloc(f->qi, cap * sizeof(int64_t));
    if (a) f->qi = a;
    int32_t *b = (int32_t *)realloc(f->row, cap * sizeof(int32_t));
    if (b) f->row = b;
    uint8_t *c = (uint8_t *)realloc(f->dist, cap);
    if (c) f->dist = c;
    if (!a || !b || !c) return -1;
    f->cap = cap;
    return 0;
}

static void flat_free(flat_t *f) {
    free(f->qi);
    free(f->row);
    free(f->dist);
    memset(f, 0, sizeof(*f));
}

PyDoc_STRVAR(query_many_doc,
"query_many(fingerprints, lists) -> answers\n\n"
"query() for each fingerprint of a uint64 buffer, with the GIL released while probing.\n"
"lists=True: a list (one per query) of lists of (id, distance), as query() returns them.\n"
"lists=False: (query_index, row, distance) as bytearrays of int64, int32 and uint8 items, sorted by\n"
"query, distance and row (rows, never ids).");

static PyObject *prober_query_many(Prober *self, PyObject *args) {
    PyObject *qobj;
    int lists;
    if (!PyArg_ParseTuple(args, "Op", &qobj, &lists)) return NULL;
    Py_buffer qb;
    if (get_view(qobj, &qb, 8, "fingerprints") < 0) return NULL;
    const uint64_t *qs = (const uint64_t *)qb.buf;
    size_t nq = (size_t)(qb.len / 8);
    int T = self->T;
    flat_t f = {0};
    size_t *bounds = (size_t *)malloc((nq + 1) * sizeof(size_t));
    uint64_t *scratch = (uint64_t *)malloc(3 * (size_t)(T ? T : 1) * sizeof(uint64_t));
    int oom = !bounds || !scratch, bad = 0;
    if (!oom) {
        Py_BEGIN_ALLOW_THREADS
        hits_t h;
        hits_init(&h);
        bounds[0] = 0;
        for (size_t q = 0; q < nq && !oom; q++) {
            h.n = 0;
            probe_one(self, qs[q], scratch, (int64_t *)(scratch + T), (int64_t *)(scratch + 2 * (size_t)T), &h);
            if (h.oom || flat_reserve(&f, f.n + h.n) < 0) {
                oom = 1;
                break;
            }
            bad |= h.bad;
            for (size_t i = 0; i < h.n; i++) {
                f.qi[f.n + i] = (int64_t)q;
                f.row[f.n + i] = (int32_t)(h.v[i] & 0xFFFFFFFFu);
                f.dist[f.n + i] = (uint8_t)(h.v[i] >> 32);
            }
            f.n += h.n;
            bounds[q + 1] = f.n;
        }
        hits_free(&h);
        Py_END_ALLOW_THREADS
    }
    free(scratch);
    PyBuffer_Release(&qb);
    PyObject *res = NULL;
    if (oom) {
        PyErr_NoMemory();
    } else if (bad) {
        bad_index();
    } else if (!lists) {
        PyObject *a = nd_new_bytearray((const char *)f.qi, (Py_ssize_t)(f.n * sizeof(int64_t)));
        PyObject *b = nd_new_bytearray((const char *)f.row, (Py_ssize_t)(f.n * sizeof(int32_t)));
        PyObject *c = nd_new_bytearray((const char *)f.dist, (Py_ssize_t)f.n);
        if (a && b && c) res = PyTuple_Pack(3, a, b, c);
        Py_XDECREF(a);
        Py_XDECREF(b);
        Py_XDECREF(c);
    } else {
        res = PyList_New((Py_ssize_t)nq);
        for (size_t q = 0; res && q < nq; q++) {
            size_t a = bounds[q], e = bounds[q + 1];
            PyObject *one = PyList_New((Py_ssize_t)(e - a));
            if (!one) {
                Py_CLEAR(res);
                break;
            }
            for (size_t i = a; i < e; i++) {
                int64_t row = f.row[i];
                PyObject *id = self->has_ids ? PyLong_FromLongLong(self->ids[row]) : PyLong_FromLongLong(row);
                PyObject *d = PyLong_FromUnsignedLong(f.dist[i]);
                PyObject *tup = (id && d) ? PyTuple_New(2) : NULL;
                if (!tup) {
                    Py_XDECREF(id);
                    Py_XDECREF(d);
                    Py_DECREF(one);
                    Py_CLEAR(res);
                    break;
                }
                PyTuple_SET_ITEM(tup, 0, id);
                PyTuple_SET_ITEM(tup, 1, d);
                PyList_SET_ITEM(one, (Py_ssize_t)(i - a), tup);
            }
            if (res) PyList_SET_ITEM(res, (Py_ssize_t)q, one);
        }
    }
    free(bounds);
    flat_free(&f);
    return res;
}

static PyObject *prober_get_tables(Prober *self, void *unused) {
    (void)unused;
    return PyLong_FromLong(self->T);
}

static PyObject *prober_get_segments(Prober *self, void *unused) {
    (void)unused;
    return PyLong_FromLong(self->nseg);
}

static PyMethodDef prober_methods[] = {
    {"query", (PyCFunction)prober_query, METH_O, query_doc},
    {"query_many", (PyCFunction)prober_query_many, METH_VARARGS, query_many_doc},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef prober_getset[] = {
    {"tables", (getter)prober_get_tables, NULL, "number of tables", NULL},
    {"segments", (getter)prober_get_segments, NULL, "number of segments", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyDoc_STRVAR(prober_doc,
"Prober(k, moves, segments, fingerprints, tail_lo, tail_hi, dead=None, ids=None)\n\n"
"The compiled probe over a SimhashIndex's arrays (read in place through the buffer protocol).\n"
"moves: per table, the (src_shift, width, dst_shift) bit moves of its permutation;\n"
"segments: (keys uint64, rows int32, dirs int32, size, stride, dbits) flattened tables;\n"
"fingerprints: uint64 by row, rows [tail_lo, tail_hi) checked by brute force;\n"
"dead: bool by row (removed rows are skipped); ids: int64 by row (reported instead of rows).");

static PyTypeObject ProberType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "neardup._hamming.Prober",
    .tp_basicsize = sizeof(Prober),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = prober_doc,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)prober_init,
    .tp_dealloc = (destructor)prober_dealloc,
    .tp_methods = prober_methods,
    .tp_getset = prober_getset,
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "neardup._hamming",
    "Compiled query probe of neardup's SimhashIndex (permuted tables over 64-bit fingerprints).",
    -1, NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__hamming(void) {
    if (PyType_Ready(&ProberType) < 0) return NULL;
    PyObject *mod = PyModule_Create(&moduledef);
    if (!mod) return NULL;
    Py_INCREF(&ProberType);
    if (PyModule_AddObject(mod, "Prober", (PyObject *)&ProberType) < 0) {
        Py_DECREF(&ProberType);
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
