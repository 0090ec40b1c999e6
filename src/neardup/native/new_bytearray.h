/* A new bytearray of `size` bytes, a copy of `data` (NULL: left uninitialized), for every
 * extension's results in place of PyByteArray_FromStringAndSize.
 *
 * Why not PyByteArray_FromStringAndSize: in CPython 3.11 (and the releases that share its code),
 * when it cannot allocate the bytes it frees the new object before it has set its export count, so
 * bytearray_dealloc reads whatever the memory held before. When that is not 0 the interpreter
 * prints "SystemError: deallocated bytearray object has exported buffers" on stderr (as well as
 * the MemoryError the call raises): a run that fails for want of memory (RLIMIT_AS, a container's
 * limit) printed it from its reading and sketching threads. Made empty first (no second
 * allocation: the object is complete before anything can fail), then grown by PyByteArray_Resize,
 * which on failure leaves it empty and whole, so the DECREF frees it cleanly. Resizing up from
 * empty allocates exactly size + 1 bytes, as PyByteArray_FromStringAndSize does. */
#ifndef NEARDUP_NEW_BYTEARRAY_H
#define NEARDUP_NEW_BYTEARRAY_H

#ifndef PY_SSIZE_T_CLEAN
#define PY_SSIZE_T_CLEAN
#endif
#include <Python.h>
#include <string.h>

static inline PyObject *nd_new_bytearray(const char *data, Py_ssize_t size) {
    PyObject *out = PyByteArray_FromStringAndSize(NULL, 0);
    if (!out || size == 0) return out;
    if (PyByteArray_Resize(out, size) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    if (data) memcpy(PyByteArray_AS_STRING(out), data, (size_t)size);
    return out;
}

#endif
