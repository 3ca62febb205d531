# cython: language_level=3, boundscheck=False, wraparound=False
"""Compiled twins of `litbridge.drivers.screen_ops` (the pure functions there are the reference and the fallback).

The row scans walk a frame's rows through a memo (row text -> what the rules' test said of it), so a row that did
not change since the previous frame costs one dict lookup; only new row texts run the test. Same signatures and
results as the pure functions; each implementation keeps memos of its own.
"""

from cpython.dict cimport PyDict_GetItem, PyDict_SetItem
from cpython.object cimport PyObject

cdef Py_ssize_t MEMO_MAX = 4096
cdef dict _memos = {}
cdef dict _matchers = {}


cpdef dict memo(key):
    """The row text -> kind memo under `key`, started over once it holds more than 4096 row texts."""
    cdef PyObject* v = PyDict_GetItem(_memos, key)
    cdef dict m
    if v != NULL:
        m = <dict>v
        if len(m) <= MEMO_MAX:
            return m
    m = {}
    _memos[key] = m
    return m


cdef inline object _kind(object r, object kind, dict m):
    cdef PyObject* v = PyDict_GetItem(m, r)
    if v != NULL:
        return <object>v
    k = kind(r)
    PyDict_SetItem(m, r, k)
    return k


cdef inline list _rows(rows):
    if not isinstance(rows, list):
        return list(rows)
    return <list>rows


cdef inline Py_ssize_t _clip(object v, Py_ssize_t dflt, Py_ssize_t n):
    if v is None:
        return dflt
    cdef Py_ssize_t x = v
    return 0 if x < 0 else (n if x > n else x)


cdef tuple _last(list lst, kind, dict m, Py_ssize_t a, Py_ssize_t b):
    cdef Py_ssize_t y
    for y in range(b - 1, a - 1, -1):
        k = _kind(lst[y], kind, m)
        if k:
            return y, k
    return None, 0


cdef tuple _first(list lst, kind, dict m, Py_ssize_t a, Py_ssize_t b):
    cdef Py_ssize_t y
    for y in range(a, b):
        k = _kind(lst[y], kind, m)
        if k:
            return y, k
    return None, 0


def last_kind(rows, kind, key, start=None, stop=None):
    """Scanning rows[start:stop] up: (y, kind) of the first row whose `kind` is not 0, else (None, 0)."""
    cdef list lst = _rows(rows)
    cdef Py_ssize_t n = len(lst)
    return _last(lst, kind, memo(key), _clip(start, 0, n), _clip(stop, n, n))


def first_kind(rows, kind, key, start=None, stop=None):
    """Scanning rows[start:stop] down: (y, kind) of the first row whose `kind` is not 0, else (None, 0)."""
    cdef list lst = _rows(rows)
    cdef Py_ssize_t n = len(lst)
    return _first(lst, kind, memo(key), _clip(start, 0, n), _clip(stop, n, n))


cdef object _matcher(pattern, bint search):
    key = (pattern, search)
    cdef PyObject* v = PyDict_GetItem(_matchers, key)
    if v != NULL:
        return <object>v
    test = pattern.search if search else pattern.match
    kind = lambda r: 1 if test(r) is not None else 0
    _matchers[key] = kind
    return kind


def last_match(rows, pattern, start=None, stop=None, *, bint search=False):
    """The last y in rows[start:stop] whose row `pattern` matches (at its start, or anywhere with `search`)."""
    cdef list lst = _rows(rows)
    cdef Py_ssize_t n = len(lst)
    key = (pattern, search)
    return _last(lst, _matcher(pattern, search), memo(key), _clip(start, 0, n), _clip(stop, n, n))[0]


def first_match(rows, pattern, start=None, stop=None, *, bint search=False):
    """The first y in rows[start:stop] whose row `pattern` matches (at its start, or anywhere with `search`)."""
    cdef list lst = _rows(rows)
    cdef Py_ssize_t n = len(lst)
    key = (pattern, search)
    return _first(lst, _matcher(pattern, search), memo(key), _clip(start, 0, n), _clip(stop, n, n))[0]


def needles_in(rows, tuple needles):
    """Bit i set iff needles[i] is in some row (`needles[i] in "\\n".join(rows)` for needles without a newline)."""
    cdef list lst = _rows(rows)
    cdef dict m = memo(("needles", needles))
    cdef long mask = 0, bits
    cdef Py_ssize_t i, y, nn = len(needles)
    cdef PyObject* v
    for y in range(len(lst)):
        r = lst[y]
        v = PyDict_GetItem(m, r)
        if v != NULL:
            mask |= <long>(<object>v)
            continue
        bits = 0
        for i in range(nn):
            if needles[i] in r:
                bits |= (<long>1) << i
        PyDict_SetItem(m, r, bits)
        mask |= bits
    return mask


def changed(old, new):
    """The y whose row differs between two frames (`old[y] != new[y]`), in order; None if their heights differ."""
    cdef list a = _rows(old)
    cdef list b = _rows(new)
    cdef Py_ssize_t y, n = len(b)
    if len(a) != n:
        return None
    cdef list out = []
    for y in range(n):
        r, s = a[y], b[y]
        if r is not s and r != s:
            out.append(y)
    return out
