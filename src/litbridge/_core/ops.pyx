# cython: language_level=3, boundscheck=False, wraparound=False
"""Compiled twins of the row loops in `litbridge.drivers.screen_ops` (the pure functions there are the reference).

`last_kind` / `first_kind` walk a frame's rows through a memo (row text -> the row's kind, an int; 0 = keep
going), so a row that did not change since the previous frame costs one dict lookup; only new row texts run the
rules' own test (`kind`). The caller checks the range; `rows` is a list (or a list subclass).
"""

from cpython.dict cimport PyDict_GetItem, PyDict_SetItem
from cpython.object cimport PyObject


cdef inline object _kind(object r, object kind, dict memo):
    cdef PyObject* v = PyDict_GetItem(memo, r)
    if v != NULL:
        return <object>v
    k = kind(r)
    PyDict_SetItem(memo, r, k)
    return k


def last_kind(rows, kind, dict memo, Py_ssize_t start, Py_ssize_t stop):
    """(y, kind) of the last row in [start, stop) whose kind is not 0 (scanning up), else (-1, 0)."""
    cdef Py_ssize_t y
    if not isinstance(rows, list):
        raise TypeError("rows must be a list, got %s" % type(rows).__name__)
    cdef list lst = <list>rows
    for y in range(stop - 1, start - 1, -1):
        k = _kind(lst[y], kind, memo)
        if k:
            return y, k
    return -1, 0


def first_kind(rows, kind, dict memo, Py_ssize_t start, Py_ssize_t stop):
    """(y, kind) of the first row in [start, stop) whose kind is not 0, else (-1, 0)."""
    cdef Py_ssize_t y
    if not isinstance(rows, list):
        raise TypeError("rows must be a list, got %s" % type(rows).__name__)
    cdef list lst = <list>rows
    for y in range(start, stop):
        k = _kind(lst[y], kind, memo)
        if k:
            return y, k
    return -1, 0
