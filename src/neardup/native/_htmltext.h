/* The text functions of neardup._htmlscan (in _htmltext.c), for its method table. */
#ifndef NEARDUP_HTMLTEXT_H
#define NEARDUP_HTMLTEXT_H

#include <Python.h>

PyObject *htmltext_lines(PyObject *self, PyObject *arg);
PyObject *htmltext_stats(PyObject *self, PyObject *arg);
PyObject *htmltext_is_utf8(PyObject *self, PyObject *arg);

#endif
