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


from cpython.mem cimport PyMem_Free, PyMem_Realloc


cdef class FrameFacts:
    """Per-row facts of the frames a rules instance reads, one after the other: `kind(row) -> int` (bits the
    rules define) for every row, where only the rows whose text changed since the previous frame are looked up
    (a memo by row text, as the scans above). The rules then ask in C what changed and where (`changed_in`) and
    which row holds a fact (`last` / `first`) instead of looping over rows in Python. Never mutate a frame
    handed to `update`: it is kept as the previous one."""

    cdef object kind
    cdef object key
    cdef list _rows
    cdef long long* facts
    cdef long long* old
    cdef unsigned char* chg
    cdef Py_ssize_t n
    cdef readonly long long delta
    """OR of old ^ new facts over the rows the last `update` found changed; -1 when it read every row anew."""
    cdef readonly Py_ssize_t count
    """How many rows the last `update` found changed (all of them after a fresh read)."""

    def __cinit__(self, kind, key):
        self.kind = kind
        self.key = key
        self._rows = None
        self.facts = NULL
        self.old = NULL
        self.chg = NULL
        self.n = 0
        self.delta = -1
        self.count = 0

    def __dealloc__(self):
        PyMem_Free(self.facts)
        PyMem_Free(self.old)
        PyMem_Free(self.chg)

    cdef int _size(self, Py_ssize_t n) except -1:
        cdef void* p
        cdef Py_ssize_t m = n if n > 0 else 1
        p = PyMem_Realloc(self.facts, m * sizeof(long long))
        if p == NULL:
            raise MemoryError()
        self.facts = <long long*>p
        p = PyMem_Realloc(self.old, m * sizeof(long long))
        if p == NULL:
            raise MemoryError()
        self.old = <long long*>p
        p = PyMem_Realloc(self.chg, m)
        if p == NULL:
            raise MemoryError()
        self.chg = <unsigned char*>p
        self.n = n
        return 0

    def update(self, rows):
        """Take `rows` as the next frame; returns `delta`. A first frame, or one of another height, is read
        whole (`delta` -1, every row counted changed)."""
        cdef list lst = _rows(rows)
        cdef list last = self._rows
        cdef Py_ssize_t y, n = len(lst)
        cdef dict m = memo(self.key)
        cdef long long k, d = 0, c = 0
        kind = self.kind
        if last is None or len(last) != n or self.n != n:
            self._size(n)
            for y in range(n):
                self.facts[y] = _kind(lst[y], kind, m)
                self.old[y] = 0
                self.chg[y] = 1
            self._rows = lst
            self.delta = -1
            self.count = n
            return -1
        for y in range(n):
            r = lst[y]
            s = last[y]
            if r is s or r == s:
                self.chg[y] = 0
                continue
            k = _kind(r, kind, m)
            self.old[y] = self.facts[y]
            self.facts[y] = k
            self.chg[y] = 1
            d |= self.old[y] ^ k
            c += 1
        self._rows = lst
        self.delta = d
        self.count = c
        return d

    @property
    def rows(self):
        """The frame the last `update` took (None before the first)."""
        return self._rows

    @property
    def changed(self):
        """The y of the rows the last `update` found changed, in order."""
        cdef Py_ssize_t y
        return [y for y in range(self.n) if self.chg[y]]

    def __len__(self):
        return self.n

    def __getitem__(self, Py_ssize_t y):
        """The facts of row y of the current frame."""
        if not (0 <= y < self.n):
            raise IndexError("row %d out of range" % y)
        return self.facts[y]

    def changed_in(self, start=None, stop=None, long long mask=0, long long has=0):
        """Some row in [start, stop) changed in the last `update` (with `mask`: in a fact of `mask`; with
        `has`: and now holds a fact of `has`)."""
        cdef Py_ssize_t y, a = _clip(start, 0, self.n), b = _clip(stop, self.n, self.n)
        for y in range(a, b):
            if not self.chg[y]:
                continue
            if mask and not ((self.old[y] ^ self.facts[y]) & mask):
                continue
            if has and not (self.facts[y] & has):
                continue
            return True
        return False

    def last(self, long long mask, start=None, stop=None):
        """The last y in [start, stop) whose facts hold a bit of `mask`, else None."""
        cdef Py_ssize_t y, a = _clip(start, 0, self.n), b = _clip(stop, self.n, self.n)
        for y in range(b - 1, a - 1, -1):
            if self.facts[y] & mask:
                return y
        return None

    def first(self, long long mask, start=None, stop=None):
        """The first y in [start, stop) whose facts hold a bit of `mask`, else None."""
        cdef Py_ssize_t y, a = _clip(start, 0, self.n), b = _clip(stop, self.n, self.n)
        for y in range(a, b):
            if self.facts[y] & mask:
                return y
        return None
