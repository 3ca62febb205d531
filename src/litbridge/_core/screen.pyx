# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled terminal core: a pyte-compatible `Screen` over a flat cell grid plus a byte-level `Parser`.

Owns the grid, cursor, modes, alternate screen, replies and row-text caches. The `Parser` fuses parsing and
screen updates in C (the fast path); the pyte-compatible per-event dispatch (compat path) lives in
`litbridge.pyte.streams`, which calls this Screen's Python methods with pyte's argument shapes.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.object cimport PyObject
from cpython.ref cimport Py_XINCREF, Py_XDECREF
from cpython.unicode cimport PyUnicode_FromKindAndData, PyUnicode_4BYTE_KIND, PyUnicode_DecodeASCII
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t, int32_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memchr, memcpy, memmove, memset

import copy as _copy
import unicodedata

from pyte import charsets as _cs
from pyte import graphics as _g
from pyte.screens import Char, Margins, Savepoint
from wcwidth import wcswidth as _wcswidth
from wcwidth import wcwidth as _wcwidth

ctypedef uint32_t ucs4

cdef struct Cell:
    uint32_t cp      # codepoint (or XSTR index) | attribute flags | PRESENT
    uint32_t fg      # 0 = default; tag<<24 | value
    uint32_t bg

# --- cell word layout ----------------------------------------------------------------------------
DEF CPMASK = 0x1FFFFF
DEF XSTR = 0x200000
DEF F_BOLD = 0x400000
DEF F_ITAL = 0x800000
DEF F_UND = 0x1000000
DEF F_STRIKE = 0x2000000
DEF F_REV = 0x4000000
DEF F_BLINK = 0x8000000
DEF F_DIM = 0x10000000
DEF PRESENT = 0x20000000
DEF FLAGMASK = 0x1FC00000
DEF DATAMASK = 0x3FFFFF       # cp | XSTR

# colour tags
DEF T_NAME = 0x1000000
DEF T_RGB = 0x2000000
DEF T_256 = 0x3000000
DEF TAGMASK = 0xFF000000
DEF VALMASK = 0xFFFFFF

# width classes
DEF W_UNK = 0
DEF W_CTRL = 1
DEF W_ZERO = 2
DEF W_COMB = 3
DEF W_ONE = 4
DEF W_TWO = 5

# modes (pyte values)
DEF M_LNM = 20
DEF M_IRM = 4
DEF M_DECTCEM = 800      # 25 << 5
DEF M_DECSCNM = 160      # 5 << 5
DEF M_DECOM = 192        # 6 << 5
DEF M_DECAWM = 224       # 7 << 5
DEF M_DECCOLM = 96       # 3 << 5

DEF M_SYNC = 64832       # 2026 << 5 (synchronized output)

# Grid.used values per physical row
DEF U_USED = 1           # may hold written cells
DEF U_PENDING = 2        # a whole-screen clear is pending: wiped on first access, reads blank until then

DEF SPMAX = 4096         # DECSC stack depth kept (pyte's is unbounded)
DEF FREEZE_AFTER = 32    # feeds on one screen after which the other, hidden, grid is packed

# join_kind: what may join the previous cell's grapheme cluster
DEF J_ZWJ = 1            # after a ZERO WIDTH JOINER: the next printable character
DEF J_RI = 2             # after a lone regional indicator: a second one (a flag)

# Codepoints kept in one cell's grapheme cluster; marks past it are dropped (a flood of combining marks would
# otherwise rebuild and intern an ever longer string per mark: quadratic time, memory never freed).
DEF CLUSTER_MAX = 32

DEF MAXP = 32
DEF OSCMAX = 65536

# parser states
DEF S_GROUND = 0
DEF S_ESC = 1
DEF S_CSI = 2
DEF S_OSC = 3
DEF S_OSC_ESC = 4
DEF S_STR = 5
DEF S_STR_ESC = 6
DEF S_ESC_SHARP = 7
DEF S_ESC_PERCENT = 8
DEF S_ESC_CHARSET = 9
DEF S_ESC_SKIP = 10
DEF S_CSI_SKIP1 = 11

cdef uint8_t _wcache[0x110000]

cdef int _fill_width(uint32_t cp) except -1:
    ch = chr(cp)
    w = _wcwidth(ch)
    cdef int v
    if w == 2:
        v = W_TWO
    elif w == 1:
        v = W_ONE
    elif w == 0:
        v = W_COMB if unicodedata.combining(ch) else W_ZERO
    else:
        v = W_CTRL
    _wcache[cp] = v
    return v

cdef dict _VS16 = {}

cdef bint _vs16_widens(uint32_t base) except -1:
    """True if `base` + VS16 is a two-column emoji (wcwidth's table) while `base` alone is one column."""
    v = _VS16.get(base)
    if v is None:
        v = base < 0x110000 and _wcwidth(chr(base)) == 1 and _wcswidth(chr(base) + "\ufe0f") == 2
        _VS16[base] = v
    return v

cdef inline int wclass(uint32_t cp) except -1:
    if 0x20 <= cp < 0x7f:
        return W_ONE
    if cp > 0x10FFFF:
        return W_CTRL
    cdef int v = _wcache[cp]
    if v == W_UNK:
        v = _fill_width(cp)
    return v

# --- interned strings: colours and multi-codepoint cell data --------------------------------------
cdef list _NAMES = ["default"]
cdef dict _NAME_ID = {"default": 0}
cdef list _XSTR = [""]
cdef dict _XSTR_ID = {"": 0}
cdef uint8_t _XLEN[XSTR]     # codepoints in each _XSTR entry (capped at 255): the cluster cap without a Python call
CLUSTER_MAX_CODEPOINTS = CLUSTER_MAX


def interned_cluster_count():
    """Multi-codepoint cell texts interned so far (process-wide, never freed): lets tests bound their growth."""
    return len(_XSTR)
cdef list _FGBG256 = list(_g.FG_BG_256)

cdef uint32_t _name_id(str s) except? 0xFFFFFFFF:
    i = _NAME_ID.get(s)
    if i is None:
        i = len(_NAMES)
        _NAMES.append(s)
        _NAME_ID[s] = i
    return <uint32_t>i

cdef uint32_t _FG_ANSI[10]
cdef uint32_t _BG_ANSI[10]
cdef uint32_t _FG_AIX[8]
cdef uint32_t _BG_AIX[8]

cdef int _init_colors() except -1:
    cdef int i
    for i in range(8):
        _FG_ANSI[i] = T_NAME | _name_id(_g.FG_ANSI[30 + i])
        _BG_ANSI[i] = T_NAME | _name_id(_g.BG_ANSI[40 + i])
        _FG_AIX[i] = T_NAME | _name_id(_g.FG_AIXTERM[90 + i])
        _BG_AIX[i] = T_NAME | _name_id(_g.BG_AIXTERM[100 + i])

_init_colors()

# SGR code for a named colour in the ANSI repaint
cdef dict _NAME_FG_SGR = {v: k for k, v in _g.FG_ANSI.items() if v != "default"}
_NAME_FG_SGR.update({v: k for k, v in _g.FG_AIXTERM.items()})
_NAME_FG_SGR["bfightmagenta"] = 95
cdef dict _NAME_BG_SGR = {v: k for k, v in _g.BG_ANSI.items() if v != "default"}
_NAME_BG_SGR.update({v: k for k, v in _g.BG_AIXTERM.items()})
_NAME_BG_SGR["brightmagenta"] = 105

cdef str _color_str(uint32_t c):
    cdef uint32_t tag = c & TAGMASK
    if c == 0:
        return "default"
    if tag == T_NAME:
        return _NAMES[c & VALMASK]
    if tag == T_RGB:
        return "%06x" % (c & VALMASK)
    if tag == T_256:
        return _FGBG256[c & VALMASK]
    return "default"

cdef uint32_t _color_pack(object s) except? 0xFFFFFFFF:
    if s == "default":
        return 0
    return T_NAME | _name_id(str(s))

cdef str _data_str(uint32_t w):
    if w & XSTR:
        return _XSTR[w & CPMASK]
    cdef uint32_t cp = w & CPMASK
    if cp == 0:
        return ""
    return chr(cp)

cdef uint32_t _data_pack(str s) except? 0xFFFFFFFF:
    if len(s) == 1:
        return <uint32_t>ord(s)
    if len(s) == 0:
        return 0
    i = _XSTR_ID.get(s)
    if i is None:
        i = len(_XSTR)
        if i > CPMASK:
            return <uint32_t>ord(s[0])
        _XSTR.append(s)
        _XSTR_ID[s] = i
        _XLEN[i] = len(s) if len(s) < 255 else 255
    return XSTR | <uint32_t>i

cdef uint32_t _first_cp(uint32_t w):
    if w & XSTR:
        s = _XSTR[w & CPMASK]
        return ord(s[0]) if s else 0
    return w & CPMASK

# Direct-mapped cache of materialised `Char`s keyed by the raw cell: a hit allocates nothing.
DEF CCACHE = 8192
cdef struct CharSlot:
    uint32_t w
    uint32_t fg
    uint32_t bg
    PyObject* ch

cdef CharSlot _ccache[CCACHE]

cdef object _make_char(uint32_t w, uint32_t fg, uint32_t bg):
    w &= (DATAMASK | FLAGMASK) & ~F_DIM
    cdef uint32_t h = (w * 2654435761u) ^ (fg * 40503u) ^ (bg * 2246822519u)
    cdef CharSlot* slot = &_ccache[(h ^ (h >> 15)) & (CCACHE - 1)]
    if slot.ch != NULL and slot.w == w and slot.fg == fg and slot.bg == bg:
        return <object>slot.ch
    ch = Char(_data_str(w), _color_str(fg), _color_str(bg), bool(w & F_BOLD), bool(w & F_ITAL),
              bool(w & F_UND), bool(w & F_STRIKE), bool(w & F_REV), bool(w & F_BLINK))
    Py_XINCREF(<PyObject*>ch)
    Py_XDECREF(slot.ch)
    slot.ch = <PyObject*>ch
    slot.w = w
    slot.fg = fg
    slot.bg = bg
    return ch


cdef tuple _pack_char(object ch):
    """(word without PRESENT, fg, bg) for a pyte Char (or anything with its fields)."""
    cdef uint32_t w = _data_pack(ch.data)
    if ch.bold:
        w |= F_BOLD
    if ch.italics:
        w |= F_ITAL
    if ch.underscore:
        w |= F_UND
    if ch.strikethrough:
        w |= F_STRIKE
    if ch.reverse:
        w |= F_REV
    if ch.blink:
        w |= F_BLINK
    if getattr(ch, "dim", False):
        w |= F_DIM
    return (w, _color_pack(ch.fg), _color_pack(ch.bg))


cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object o, Py_ssize_t* size) except NULL
    object PyObject_GenericGetDict(object o, void* context)
    object PyUnicode_New(Py_ssize_t size, uint32_t maxchar)
    void* PyUnicode_DATA(object o)


cdef str _ucs4_to_str(ucs4* buf, int n):
    """Row text from the UCS4 scratch buffer, written straight into a compact str of the narrowest kind."""
    cdef uint32_t mx = 0
    cdef int i
    for i in range(n):
        mx |= buf[i]
    return _ucs4_to_str_mx(buf, n, mx)


cdef str _ucs4_to_str_mx(ucs4* buf, int n, uint32_t mx):
    """As `_ucs4_to_str` with `mx` the OR of the code points (the caller tracked it while filling `buf`).

    An OR has the same str kind as the true maximum (the kind limits are powers of two), which keeps equal
    strings equal; only the top is clamped to the largest code point."""
    cdef int i
    if mx > 0x10FFFF:
        mx = 0x10FFFF
    cdef object out = PyUnicode_New(n, mx)
    cdef uint8_t* d1
    cdef uint16_t* d2
    if mx < 256:
        d1 = <uint8_t*>PyUnicode_DATA(out)
        for i in range(n):
            d1[i] = <uint8_t>buf[i]
    elif mx < 65536:
        d2 = <uint16_t*>PyUnicode_DATA(out)
        for i in range(n):
            d2[i] = <uint16_t>buf[i]
    else:
        memcpy(PyUnicode_DATA(out), buf, n * sizeof(ucs4))
    return out



cdef inline void _reverse_ints(int* a, int i, int j) noexcept nogil:
    """Reverse a[i..j] in place (the building block of the row-index rotations)."""
    cdef int t
    while i < j:
        t = a[i]
        a[i] = a[j]
        a[j] = t
        i += 1
        j -= 1

# Charset maps by small id (DECSC saves ids, not objects); the list keeps every map seen alive.
cdef list _CHARSETS = []
cdef dict _CHARSET_IDS = {}

cdef int _charset_id(object m) except -1:
    i = _CHARSET_IDS.get(id(m))
    if i is None:
        i = len(_CHARSETS)
        _CHARSETS.append(m)
        _CHARSET_IDS[id(m)] = i
    return i

_charset_id(_cs.LAT1_MAP)
_charset_id(_cs.VT100_MAP)


cdef struct SavedCursor:
    int x, y
    bint hidden
    uint32_t aw, afg, abg
    int g0, g1, charset
    bint origin, wrap


class _ModeSet(set):
    """`Screen.mode`: a set whose edits write through to the core's mode flags (pyte's tests read it as a set)."""

    __slots__ = ("_screen",)

    def add(self, v):
        set.add(self, v)
        self._screen._mode_write(v, True)

    def discard(self, v):
        set.discard(self, v)
        self._screen._mode_write(v, False)

    def remove(self, v):
        set.remove(self, v)
        self._screen._mode_write(v, False)

    def pop(self):
        v = set.pop(self)
        self._screen._mode_write(v, False)
        return v

    def clear(self):
        for v in list(self):
            self.discard(v)

    def update(self, *others):
        for o in others:
            for v in o:
                self.add(v)

    def difference_update(self, *others):
        for o in others:
            for v in o:
                self.discard(v)

    def __ior__(self, other):
        self.update(other)
        return self

    def __isub__(self, other):
        self.difference_update(other)
        return self


cdef class Cursor:
    """pyte's Cursor (x, y, attrs, hidden) with attrs packed as integers; `x == columns` is pending wrap."""

    cdef public int x, y
    cdef public bint hidden
    cdef uint32_t aw, afg, abg

    def __init__(self, int x, int y, attrs=None):
        self.x = x
        self.y = y
        self.hidden = False
        if attrs is None:
            self.aw = 0x20
            self.afg = 0
            self.abg = 0
        else:
            self.attrs = attrs

    @property
    def attrs(self):
        return _make_char(self.aw, self.afg, self.abg)

    @attrs.setter
    def attrs(self, value):
        cdef tuple t = _pack_char(value)
        self.aw = t[0]
        self.afg = t[1]
        self.abg = t[2]

    @property
    def dim(self):
        """SGR 2 state of the current attributes (pyte's Char has no dim field)."""
        return bool(self.aw & F_DIM)

    cpdef Cursor _copy(self):
        cdef Cursor c = Cursor.__new__(Cursor)
        c.x = self.x
        c.y = self.y
        c.hidden = self.hidden
        c.aw = self.aw
        c.afg = self.afg
        c.abg = self.abg
        return c

    def __copy__(self):
        return self._copy()

    def __repr__(self):
        return "Cursor(x=%d, y=%d, hidden=%r)" % (self.x, self.y, self.hidden)


cdef extern from *:
    """
    /* A grid's cells: whole pages of their own where there is mmap, so they read as zeros untouched (a row
       costs memory once written) and a freed grid gives its pages back, not a hole in the heap that only
       another large allocation could reuse. The last few freed blocks are kept for reuse (zeroed again), so a
       screen switching back and forth between its grids, or a session made as another ends, costs neither a
       mapping nor its page faults; at most LB_POOL blocks (200x50: 120 KB each) are held that way. */
    #if defined(_WIN32)
    #include <stdlib.h>
    static void* lb_cells_alloc(size_t n) { return calloc(n, 1); }
    static void lb_cells_free(void* p, size_t n) { (void)n; free(p); }
    #else
    #include <string.h>
    #include <sys/mman.h>
    #if !defined(MAP_ANONYMOUS) && defined(MAP_ANON)
    #define MAP_ANONYMOUS MAP_ANON
    #endif
    #define LB_POOL 8
    static void* lb_pool_p[LB_POOL];
    static size_t lb_pool_n[LB_POOL];
    static int lb_pool_len = 0;
    static void* lb_cells_alloc(size_t n) {
        for (int i = lb_pool_len - 1; i >= 0; i--) {
            if (lb_pool_n[i] == n) {
                void* p = lb_pool_p[i];
                lb_pool_len--;
                lb_pool_p[i] = lb_pool_p[lb_pool_len];
                lb_pool_n[i] = lb_pool_n[lb_pool_len];
                memset(p, 0, n);
                return p;
            }
        }
        void* p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return p == MAP_FAILED ? NULL : p;
    }
    static void lb_cells_free(void* p, size_t n) {
        if (p == NULL) return;
        if (lb_pool_len < LB_POOL) {
            lb_pool_p[lb_pool_len] = p;
            lb_pool_n[lb_pool_len] = n;
            lb_pool_len++;
            return;
        }
        munmap(p, n);
    }
    #endif
    """
    void* lb_cells_alloc(size_t n)
    void lb_cells_free(void* p, size_t n)


cdef struct Grid:
    Cell* cells
    size_t nbytes    # of `cells` (what `lb_cells_free` is given)
    int* rowmap
    uint8_t* wrapped
    uint8_t* stale
    Cell* hidden     # pyte keeps one cell past the right margin (ICH pushes into it, DCH pulls it back)
    uint8_t* used    # per physical row: may hold written cells (0 = certainly blank; lets ED/freeze skip it)


cdef int _cells_alloc(Grid* g, int cols, int lines) except -1:
    """Blank cells for a cols x lines grid (plus one), in `g.cells`."""
    g.nbytes = (<size_t>cols * lines + 1) * sizeof(Cell)
    g.cells = <Cell*>lb_cells_alloc(g.nbytes)
    if g.cells == NULL:
        raise MemoryError()
    return 0


cdef void _cells_free(Grid* g) noexcept:
    lb_cells_free(g.cells, g.nbytes)
    g.cells = NULL


cdef int _grid_alloc(Grid* g, int cols, int lines) except -1:
    _cells_alloc(g, cols, lines)
    g.rowmap = <int*>malloc((lines + 1) * sizeof(int))
    g.wrapped = <uint8_t*>calloc(lines + 1, 1)
    g.stale = <uint8_t*>malloc(lines + 1)
    g.hidden = <Cell*>calloc(lines + 1, sizeof(Cell))
    g.used = <uint8_t*>calloc(lines + 1, 1)
    if g.cells == NULL or g.rowmap == NULL or g.wrapped == NULL or g.stale == NULL or g.hidden == NULL or g.used == NULL:
        raise MemoryError()
    cdef int i
    for i in range(lines):
        g.rowmap[i] = i
    memset(g.stale, 1, lines + 1)
    return 0

cdef void _grid_free(Grid* g) noexcept:
    _cells_free(g)
    free(g.rowmap)
    free(g.wrapped)
    free(g.hidden)
    g.hidden = NULL
    free(g.used)
    g.used = NULL
    free(g.stale)
    g.cells = NULL
    g.rowmap = NULL
    g.wrapped = NULL
    g.stale = NULL


cdef char* _grid_pack(Grid* g, int cols, int lines) noexcept:
    """Copy `g`'s non-blank rows into a new buffer and free its cells (a hidden grid then costs its text, not
    a whole grid); `g.stale` marks the packed rows until `_grid_unpack`. NULL when the buffer cannot be had:
    `g` is left as it was."""
    cdef Py_ssize_t rowbytes = <Py_ssize_t>cols * sizeof(Cell)
    cdef Py_ssize_t nwords = rowbytes // 8, k
    cdef int p, n = 0
    cdef uint64_t* w
    cdef uint8_t* keep = g.stale   # reused as scratch: 1 = row has content
    for p in range(lines):
        keep[p] = 0
        if g.used[p] != U_USED:  # never written, or a clear is pending: blank
            continue
        w = <uint64_t*>(<char*>g.cells + p * rowbytes)
        for k in range(nwords):
            if w[k]:
                keep[p] = 1
                n += 1
                break
    cdef char* pack = <char*>malloc(n * rowbytes + 1)
    if pack == NULL:
        memset(keep, 1, lines)
        return NULL
    n = 0
    for p in range(lines):
        if keep[p]:
            memcpy(pack + n * rowbytes, <char*>g.cells + p * rowbytes, rowbytes)
            n += 1
    _cells_free(g)
    return pack


cdef int _grid_unpack(Grid* g, char** pack, int cols, int lines) except -1:
    """Re-inflate a grid `_grid_pack` packed into `*pack`, then free `*pack` (NULL: not packed, nothing to do)."""
    if pack[0] == NULL:
        return 0
    cdef Py_ssize_t rowbytes = <Py_ssize_t>cols * sizeof(Cell)
    cdef int p, n = 0
    _cells_alloc(g, cols, lines)
    for p in range(lines):
        if g.stale[p]:
            memcpy(<char*>g.cells + p * rowbytes, pack[0] + n * rowbytes, rowbytes)
            n += 1
            g.used[p] = U_USED
        else:
            g.used[p] = 0
    memset(g.stale, 1, lines)
    free(pack[0])
    pack[0] = NULL
    return 0


_DEFAULT_EVENTS_NOTE = "see litbridge.pyte.streams for the dispatch-mode rules"


cdef class Screen:
    """pyte-compatible screen over a flat grid of 12-byte cells with row indirection.

    Everything pyte exposes is here with pyte's semantics (sparse-cell quirks included); the extras the
    bridge needs (alternate screen, replies, OSC 7501, wrap flags, cached row text) are additions.
    """

    cdef readonly int columns, lines
    cdef Grid g            # current grid
    cdef Grid main_g
    cdef Grid alt_g
    cdef bint in_alt
    cdef list rowtext      # per physical row of the current grid
    cdef list main_text
    cdef list alt_text
    cdef uint8_t* pdirty   # pyte `dirty` bits (logical rows)
    cdef uint8_t* ldirty   # changed_rows bits (logical rows)
    cdef list last_rows    # text last returned by changed_rows
    cdef uint8_t* sdirty   # rows changed_rows cleared since the last snapshot (`_snapshot` re-reads them)
    cdef unsigned long long content_gen  # bumped when a snapshot finds the rows' text or wrap flags changed
    cdef list snap_rows, snap_strip, snap_logical   # the last snapshot: rows, right-stripped, logical lines
    cdef bytes snap_wraps
    cdef ucs4* scratch
    cdef Cursor _cursor
    cdef object _dirty
    cdef int* modev        # every mode that is on (pyte values: private modes << 5), unordered
    cdef int nmodes, modecap
    cdef object _modeset   # the pyte-visible `mode` set, refreshed on read after a change
    cdef bint modeset_stale
    cdef bint m_awm, m_irm, m_lnm, m_om, m_scnm, m_sync   # mirrors of the modes the hot path reads
    cdef int join_kind     # the next character may join the previous cell: J_ZWJ / J_RI (see draw_cp)
    cdef int jx, jy        # ... only if it is drawn where the cursor was left then
    cdef bint has_margins
    cdef int mtop, mbot
    cdef public str title, icon_name
    cdef int _charset
    cdef object _g0, _g1
    cdef int g0_id, g1_id
    cdef bint tr_active
    cdef uint32_t tr[256]
    cdef public object tabstops
    cdef SavedCursor* sps  # DECSC stack (pyte's `savepoints`, a list view of it)
    cdef int nsps, spcap
    cdef SavedCursor alt_sp  # ?1049h keeps its own slot (xterm), not on the DECSC stack
    cdef bint has_alt_sp
    cdef public object saved_columns
    cdef bint fresh
    cdef char* main_pack   # the normal grid's non-blank rows while a long-lived alternate screen is shown
    cdef char* alt_pack    # the alternate grid's non-blank rows once the normal screen is back for long
    cdef public int switch_feeds  # fused-parser feeds since the last switch between the two screens
    cdef public object program_status
    cdef public bint kitty_reply
    cdef public bint alt_screen_enabled
    cdef public object on_reply, on_status, on_title, on_frame_end
    cdef int feeding
    cdef int pending_da
    cdef public str xtversion
    cdef object _bufview
    cdef public dict _proxies
    cdef public bint hist_on
    cdef object __weakref__
    cdef dict __dict__

    def __cinit__(self, *args, **kwargs):
        self.pdirty = NULL
        self.ldirty = NULL
        self.sdirty = NULL
        self.scratch = NULL
        self.modev = NULL
        self.sps = NULL
        self.main_pack = NULL
        self.alt_pack = NULL
        self.fresh = True

    def __init__(self, int columns, int lines):
        if columns < 1 or lines < 1:
            raise ValueError("screen must be at least 1x1, got %dx%d" % (columns, lines))
        self.columns = columns
        self.lines = lines
        self._alloc(columns, lines)
        self._dirty = set()
        self._bufview = None
        self._proxies = {}
        self.kitty_reply = False
        self.alt_screen_enabled = True
        self.program_status = None
        self.on_reply = self.on_status = self.on_title = self.on_frame_end = None
        self.feeding = 0
        self.pending_da = 0
        from litbridge import __version__
        self.xtversion = "litbridge(%s)" % __version__
        self.reset()
        self.mode = {M_DECAWM, M_DECTCEM}
        self.margins = None

    cdef int _alloc(self, int cols, int lines) except -1:
        _grid_alloc(&self.main_g, cols, lines)
        self.main_text = [""] * lines
        self.g = self.main_g
        self.rowtext = self.main_text
        self.in_alt = False
        self.alt_g.cells = NULL
        self.alt_text = None
        self.pdirty = <uint8_t*>calloc(lines + 1, 1)
        self.ldirty = <uint8_t*>malloc(lines + 1)
        memset(self.ldirty, 1, lines + 1)
        self.sdirty = <uint8_t*>calloc(lines + 1, 1)
        self.scratch = <ucs4*>malloc((cols + 1) * sizeof(ucs4))
        self.last_rows = [None] * lines
        return 0

    def __dealloc__(self):
        if self.in_alt:
            self.alt_g = self.g
        else:
            self.main_g = self.g
        _grid_free(&self.main_g)
        if self.alt_g.cells != NULL or self.alt_pack != NULL:
            _grid_free(&self.alt_g)
        free(self.pdirty)
        free(self.ldirty)
        free(self.sdirty)
        free(self.scratch)
        free(self.modev)
        free(self.sps)
        free(self.main_pack)
        free(self.alt_pack)

    def __repr__(self):
        return "{0}({1}, {2})".format(self.__class__.__name__, self.columns, self.lines)

    # ---------------------------------------------------------------- pyte state attributes
    @property
    def cursor(self):
        return self._cursor

    @cursor.setter
    def cursor(self, Cursor value):
        self._cursor = value

    @property
    def dirty(self):
        cdef int y
        d = self._dirty
        for y in range(self.lines):
            if self.pdirty[y]:
                d.add(y)
                self.pdirty[y] = 0
        return d

    @dirty.setter
    def dirty(self, value):
        memset(self.pdirty, 0, self.lines)
        self._dirty = value

    @property
    def mode(self):
        """pyte's mode set; edits of it (add/discard...) write through to the core's mode flags."""
        cdef int i
        if self._modeset is None:
            self._modeset = _ModeSet()
            self._modeset._screen = self
            self.modeset_stale = True
        if self.modeset_stale:
            set.clear(self._modeset)
            set.update(self._modeset, [self.modev[i] for i in range(self.nmodes)])
            self.modeset_stale = False
        return self._modeset

    @mode.setter
    def mode(self, value):
        self.nmodes = 0
        self.modeset_stale = True  # also when `value` is empty: no mode_put marks it then
        for v in value:
            self.mode_put(v, True)
        self._sync_modes()

    def _mode_write(self, int v, bint on):
        """Write-through from `_ModeSet` (no side effects, as adding to pyte's set has none)."""
        self.mode_put(v, on)

    cdef bint has_mode(self, int v) noexcept:
        cdef int i
        for i in range(self.nmodes):
            if self.modev[i] == v:
                return True
        return False

    cdef int mode_put(self, int v, bint on) except -1:
        """Set or clear one mode: the flag array, its hot-path mirrors, and the pyte set on next read."""
        cdef int i
        cdef int* grown
        for i in range(self.nmodes):
            if self.modev[i] == v:
                if not on:
                    self.nmodes -= 1
                    self.modev[i] = self.modev[self.nmodes]
                    self.modeset_stale = True
                    self._mirror(v, False)
                return 0
        if not on:
            return 0
        if self.nmodes >= self.modecap:
            grown = <int*>realloc(self.modev, (self.modecap * 2 + 16) * sizeof(int))
            if grown == NULL:
                raise MemoryError()
            self.modev = grown
            self.modecap = self.modecap * 2 + 16
        self.modev[self.nmodes] = v
        self.nmodes += 1
        self.modeset_stale = True
        self._mirror(v, True)
        return 0

    cdef inline void _mirror(self, int v, bint on) noexcept:
        if v == M_DECAWM:
            self.m_awm = on
        elif v == M_IRM:
            self.m_irm = on
        elif v == M_LNM:
            self.m_lnm = on
        elif v == M_DECOM:
            self.m_om = on
        elif v == M_DECSCNM:
            self.m_scnm = on
        elif v == M_SYNC:
            self.m_sync = on

    cdef int _sync_modes(self) except -1:
        self.m_awm = self.has_mode(M_DECAWM)
        self.m_irm = self.has_mode(M_IRM)
        self.m_lnm = self.has_mode(M_LNM)
        self.m_om = self.has_mode(M_DECOM)
        self.m_scnm = self.has_mode(M_DECSCNM)
        self.m_sync = self.has_mode(M_SYNC)
        return 0

    @property
    def margins(self):
        if self.has_margins:
            return Margins(self.mtop, self.mbot)
        return None

    @margins.setter
    def margins(self, value):
        if value is None:
            self.has_margins = False
        else:
            self.has_margins = True
            self.mtop = value[0]
            self.mbot = value[1]

    @property
    def charset(self):
        return self._charset

    @charset.setter
    def charset(self, int value):
        self._charset = value
        self._sync_tr()

    @property
    def g0_charset(self):
        return self._g0

    @g0_charset.setter
    def g0_charset(self, value):
        self._g0 = value
        self.g0_id = _charset_id(value)
        self._sync_tr()

    @property
    def g1_charset(self):
        return self._g1

    @g1_charset.setter
    def g1_charset(self, value):
        self._g1 = value
        self.g1_id = _charset_id(value)
        self._sync_tr()

    cdef int _sync_tr(self) except -1:
        t = self._g1 if self._charset else self._g0
        cdef int i
        if t is None or t is _cs.LAT1_MAP or t == _cs.LAT1_MAP:
            self.tr_active = False
            return 0
        self.tr_active = True
        for i in range(256):
            self.tr[i] = ord(t[i]) if i < len(t) else i

    @property
    def default_char(self):
        return Char(data=" ", fg="default", bg="default", reverse=bool(self.m_scnm))

    @property
    def buffer(self):
        if self._bufview is None:
            self._bufview = _Buffer(self)
        return self._bufview

    @property
    def alternate(self):
        """True while the alternate screen (?1049/?1047/?47) is shown."""
        return self.in_alt

    @property
    def in_sync_frame(self):
        return bool(self.m_sync)

    # ---------------------------------------------------------------- low-level helpers
    cdef inline Cell* prow(self, int p) noexcept:
        """Cells of physical row p, blanked first if a whole-screen clear is still pending on it."""
        if self.g.used[p] & U_PENDING:
            self.clear_phys(p)
        return self.g.cells + <Py_ssize_t>p * self.columns

    cdef inline Cell* row(self, int y) noexcept:
        return self.prow(self.g.rowmap[y])

    cdef inline void touch(self, int y) noexcept:
        cdef int p = self.g.rowmap[y]
        self.pdirty[y] = 1
        self.ldirty[y] = 1
        self.g.stale[p] = 1
        self.g.used[p] |= U_USED

    cdef inline void touch_text(self, int y) noexcept:
        self.ldirty[y] = 1
        self.g.stale[self.g.rowmap[y]] = 1
        self.g.used[self.g.rowmap[y]] |= U_USED

    cdef void clear_lazy(self) noexcept:
        """Blank the whole current grid in O(rows): written rows are marked pending and wiped on first access."""
        cdef int p
        for p in range(self.lines):
            if self.g.used[p]:
                self.g.used[p] = U_PENDING
        memset(self.g.hidden, 0, self.lines * sizeof(Cell))
        memset(self.g.wrapped, 0, self.lines)
        memset(self.g.stale, 1, self.lines)

    cdef void mark_all(self) noexcept:
        memset(self.pdirty, 1, self.lines)
        memset(self.ldirty, 1, self.lines)

    cdef inline void clear_phys(self, int p) noexcept:
        memset(self.g.cells + <Py_ssize_t>p * self.columns, 0, self.columns * sizeof(Cell))
        self.g.hidden[p].cp = 0
        self.g.used[p] = 0
        self.g.wrapped[p] = 0
        self.g.stale[p] = 1

    cdef inline uint32_t blank_word(self) noexcept:
        return PRESENT | 0x20 | (F_REV if self.m_scnm else 0)

    cdef inline void get_tb(self, int* top, int* bot) noexcept:
        if self.has_margins:
            top[0] = max(0, min(self.mtop, self.lines - 1))
            bot[0] = max(top[0], min(self.mbot, self.lines - 1))
        else:
            top[0] = 0
            bot[0] = self.lines - 1

    # ---------------------------------------------------------------- reset / resize
    def reset(self):
        """RIS: pyte's reset, plus leaving the alternate screen and clearing both grids."""
        cdef int y
        if self.in_alt:
            self._switch_main()
        memset(self.pdirty, 1, self.lines)
        memset(self.ldirty, 1, self.lines)
        for y in range(self.lines):
            self.g.rowmap[y] = y
        if not self.fresh:  # new cells are already blank
            self.clear_lazy()
        self.fresh = False
        self.has_margins = False
        self.nmodes = 0
        self.mode_put(M_DECAWM, True)
        self.mode_put(M_DECTCEM, True)
        self._sync_modes()
        self.has_alt_sp = False  # (pyte's reset keeps the DECSC stack)
        self.join_kind = 0
        self.title = ""
        self.icon_name = ""
        self._charset = 0
        self._g0 = _cs.LAT1_MAP
        self._g1 = _cs.VT100_MAP
        self.g0_id = 0
        self.g1_id = 1
        self._sync_tr()
        self.tabstops = set(range(8, self.columns, 8))
        self._cursor = Cursor(0, 0)
        self._cursor_position(0, 0)
        self.saved_columns = None
        self._proxies = {}
        if self.hist_on:
            self._reset_history()

    def resize(self, lines=None, columns=None):
        lines = lines or self.lines
        columns = columns or self.columns
        if lines == self.lines and columns == self.columns:
            return
        self.dirty.update(range(lines))
        if lines < self.lines:
            self.save_cursor()
            self.cursor_position(0, 0)
            self.delete_lines(self.lines - lines)
            self.restore_cursor()
        self._realloc(lines, columns)
        self.set_margins()

    cdef int _resized_grid(self, Grid* old, Grid* ng, int lines, int cols) except -1:
        """Allocate `ng` at the new size with `old`'s visible cells (top-left aligned), then free `old`."""
        cdef int y, ncopy_rows, ncopy_cols
        cdef Cell* src
        _grid_alloc(ng, cols, lines)
        ncopy_rows = min(lines, self.lines)
        ncopy_cols = min(cols, self.columns)
        for y in range(ncopy_rows):
            if old.used[old.rowmap[y]] & U_PENDING:
                continue  # cleared, not yet wiped: reads blank
            src = old.cells + <Py_ssize_t>old.rowmap[y] * self.columns
            memcpy(ng.cells + <Py_ssize_t>y * cols, src, ncopy_cols * sizeof(Cell))
            ng.wrapped[y] = old.wrapped[old.rowmap[y]] if cols == self.columns else 0
            ng.used[y] = 1
        _grid_free(old)
        return 0

    cdef int _realloc(self, int lines, int cols) except -1:
        """Resize both buffers; the alternate screen stays shown if it was (xterm)."""
        cdef Grid ng, na
        cdef int y
        cdef bint was_alt = self.in_alt
        if was_alt:
            self._switch_main()
        _grid_unpack(&self.alt_g, &self.alt_pack, self.columns, self.lines)  # its text is made anew below
        cdef Grid old = self.g
        self._resized_grid(&old, &ng, lines, cols)
        na.cells = NULL
        if self.alt_g.cells != NULL:
            self._resized_grid(&self.alt_g, &na, lines, cols)
        self.alt_g = na
        self.alt_text = [""] * lines if na.cells != NULL else None
        self.main_g = ng
        self.g = ng
        self.main_text = [""] * lines
        self.rowtext = self.main_text
        free(self.pdirty)
        free(self.ldirty)
        free(self.sdirty)
        free(self.scratch)
        self.pdirty = <uint8_t*>calloc(lines + 1, 1)
        self.ldirty = <uint8_t*>malloc(lines + 1)
        memset(self.ldirty, 1, lines + 1)
        self.sdirty = <uint8_t*>calloc(lines + 1, 1)
        self.scratch = <ucs4*>malloc((cols + 1) * sizeof(ucs4))
        self.last_rows = [None] * lines
        self._proxies = {}
        self.lines = lines
        self.columns = cols
        for y in self._dirty:
            if 0 <= y < lines:
                self.pdirty[y] = 1
        self._dirty.clear()
        if was_alt:
            self._switch_alt(False)
        return 0

    # ---------------------------------------------------------------- alternate screen
    cdef int _switch_alt(self, bint clear) except -1:
        """Show the alternate grid: a pointer swap; its clear is lazy (`clear_lazy`), so a switch is O(rows)."""
        if self.in_alt:
            if clear:
                self._clear_grid()
            return 0
        cdef bint fresh = False
        if self.alt_pack != NULL:
            _grid_unpack(&self.alt_g, &self.alt_pack, self.columns, self.lines)
            self.alt_text = [""] * self.lines  # every row stale: rendered again
        elif self.alt_g.cells == NULL:
            _grid_alloc(&self.alt_g, self.columns, self.lines)
            self.alt_text = [""] * self.lines
            fresh = True
        self.main_g = self.g
        self.g = self.alt_g
        self.main_text = self.rowtext
        self.rowtext = self.alt_text
        self.in_alt = True
        self.switch_feeds = 0
        self._proxies = {}
        if clear and not fresh:  # new cells are already blank
            self.clear_lazy()
        memset(self.g.stale, 1, self.lines)
        self.mark_all()

    cdef int _switch_main(self) except -1:
        if not self.in_alt:
            return 0
        self.alt_g = self.g
        if self.main_pack != NULL:
            _grid_unpack(&self.main_g, &self.main_pack, self.columns, self.lines)
            self.main_text = [""] * self.lines  # every row stale: rendered again
        self.g = self.main_g
        self.alt_text = self.rowtext
        self.rowtext = self.main_text
        self.in_alt = False
        self.switch_feeds = 0
        self._proxies = {}
        memset(self.g.stale, 1, self.lines)
        self.mark_all()

    cdef void _clear_grid(self) noexcept:
        self.clear_lazy()
        self.mark_all()

    cdef int _freeze_hidden(self) except -1:
        """Pack the hidden grid to its non-blank rows, once the shown one has lasted FREEZE_AFTER feeds (never on
        the switch itself, which stays a pointer swap): the normal grid under a fullscreen app (Claude Code runs in
        the alternate screen all session long), or an alternate screen left for good, then costs its text, not a
        whole grid. Showing it again unpacks it (`_grid_unpack`), and so does a resize."""
        cdef Grid* g = &self.main_g if self.in_alt else &self.alt_g
        if g.cells == NULL:  # no such grid, or packed already
            return 0
        cdef char* pack = _grid_pack(g, self.columns, self.lines)
        if pack == NULL:  # no memory for it: the grid stays as it was
            return 0
        if self.in_alt:  # the packed grid's row text goes too: showing it again renders every row anew
            self.main_pack = pack
            self.main_text = None
        else:
            self.alt_pack = pack
            self.alt_text = None
        return 0

    # ---------------------------------------------------------------- modes
    def set_margins(self, top=None, bottom=None):
        if (top is None or top == 0) and bottom is None:
            self.has_margins = False
            return
        cdef int t, b
        if self.has_margins:
            t, b = self.mtop, self.mbot
        else:
            t, b = 0, self.lines - 1
        if top is not None:
            t = max(0, min(top - 1, self.lines - 1))
        if bottom is not None:
            b = max(0, min(bottom - 1, self.lines - 1))
        if b - t >= 1:
            self.has_margins = True
            self.mtop = t
            self.mbot = b
            self._cursor_position(0, 0)

    def set_mode(self, *modes, **kwargs):
        self._set_modes(list(modes), bool(kwargs.get("private")), True)

    def reset_mode(self, *modes, **kwargs):
        self._set_modes(list(modes), bool(kwargs.get("private")), False)

    cdef int _set_mode1(self, int m, bint private, bint on) except -1:
        """One mode without side effects beyond the flags (bracketed paste, mouse, focus...): no lists."""
        cdef int v = m << 5 if private else m
        if v == M_DECCOLM or v == M_DECOM or v == M_DECSCNM:
            return self._set_modes([m], private, on)
        self.mode_put(v, on)
        if v == M_DECTCEM:
            self._cursor.hidden = not on
        elif private and (m == 1049 or m == 47 or m == 1047):
            if self.alt_screen_enabled:
                self._alt_mode(m, on)
        elif v == M_SYNC and not on and self.on_frame_end is not None:
            self.on_frame_end()
        return 0

    cdef int _alt_mode(self, int m, bint on) except -1:
        if m == 1049:
            if on:
                if not self.in_alt:  # already there (via 47/1047): xterm only clears
                    self._save_into(&self.alt_sp)  # as DECSC, into its own slot
                    self.has_alt_sp = True
                self._switch_alt(True)
            elif self.in_alt:
                self._switch_main()
                if self.has_alt_sp:
                    self.has_alt_sp = False
                    self._restore_from(&self.alt_sp)
        elif on:
            self._switch_alt(False)
        elif self.in_alt:
            if m == 1047:
                self._clear_grid()
            self._switch_main()
        return 0

    cdef int _set_modes(self, list modes, bint private, bint on) except -1:
        cdef list ml
        if private:
            ml = [m << 5 for m in modes]
            if M_DECSCNM in ml:
                self.mark_all()
        else:
            ml = modes
        for v in ml:
            self.mode_put(v, on)
        if M_DECCOLM in ml:
            if on:
                self.saved_columns = self.columns
                self.resize(columns=132)
            elif self.columns == 132 and self.saved_columns is not None:
                self.resize(columns=self.saved_columns)
                self.saved_columns = None
            self.erase_in_display(2)
            self.cursor_position()
        if M_DECOM in ml:
            self._cursor_position(0, 0)
        if M_DECSCNM in ml:
            self._reverse_all(on)
            self._sgr1(7 if on else 27)
        if M_DECTCEM in ml:
            self._cursor.hidden = not on
        if private and self.alt_screen_enabled:
            for m in modes:
                if m == 1049 or m == 47 or m == 1047:
                    self._alt_mode(m, on)
        if private and not on and 2026 in modes and self.on_frame_end is not None:
            self.on_frame_end()

    cdef void _reverse_all(self, bint on) noexcept:
        cdef Py_ssize_t i, n = <Py_ssize_t>self.columns * self.lines
        cdef Cell* c = self.g.cells
        for i in range(n):
            if c[i].cp & PRESENT:
                if on:
                    c[i].cp |= F_REV
                else:
                    c[i].cp &= ~F_REV
        c = self.g.hidden
        for i in range(self.lines):
            if c[i].cp & PRESENT:
                if on:
                    c[i].cp |= F_REV
                else:
                    c[i].cp &= ~F_REV
        memset(self.g.stale, 1, self.lines)

    def define_charset(self, code, mode):
        if code in _cs.MAPS:
            if mode == "(":
                self.g0_charset = _cs.MAPS[code]
            elif mode == ")":
                self.g1_charset = _cs.MAPS[code]

    def shift_in(self):
        self.charset = 0

    def shift_out(self):
        self.charset = 1

    # ---------------------------------------------------------------- drawing
    def draw(self, str data):
        """pyte's draw: charset translation, autowrap, IRM, wide chars, combining marks."""
        cdef uint32_t cp
        for ch in data:
            cp = ord(ch)
            if self.tr_active and cp < 256:
                cp = self.tr[cp]
            self.draw_cp(cp)
        if 0 <= self._cursor.y < self.lines:
            self.touch(self._cursor.y)

    cdef inline int _wrap_or_clamp(self, int width) except -1:
        """Before drawing `width` cells: a cursor past the margin wraps to the next line (autowrap, the row
        marked wrapped) or is put back where the cells still fit. -> 1 when it was put back (no autowrap)."""
        cdef Cursor c = self._cursor
        cdef int y
        cdef int clamped = 0
        if c.x >= self.columns:
            if self.m_awm:
                y = c.y
                if 0 <= y < self.lines:
                    self.pdirty[y] = 1
                    self.g.wrapped[self.g.rowmap[y]] = 1
                c.x = 0
                self._linefeed()
            else:
                c.x = self.columns - width
                clamped = 1
        if c.x < 0:
            c.x = 0
        return clamped

    cdef inline Py_ssize_t _run_span(self, Py_ssize_t* n) except -1:
        """Where the next part of a run of `n[0]` narrow cells goes, for `draw_ascii` and `draw_repeat`: past the
        margin the cursor wraps or stays on the last column, where only the run's last character lands (`n[0]`
        drops to 1). -> how many cells to write at the cursor now; 0 when the cursor is off screen."""
        cdef Cursor c = self._cursor
        cdef Py_ssize_t k
        if self._wrap_or_clamp(1):
            n[0] = 1
        if c.y < 0 or c.y >= self.lines:
            return 0
        k = self.columns - c.x
        return n[0] if k > n[0] else k

    cdef int draw_ascii(self, const unsigned char* p, Py_ssize_t n) except -1:
        """Hot path: a run of printable ASCII with no translation and no IRM."""
        cdef Cursor c = self._cursor
        cdef uint32_t aw = (c.aw & FLAGMASK) | PRESENT
        cdef uint32_t fg = c.afg, bg = c.abg
        cdef Py_ssize_t k, i, left
        cdef Cell* r
        self.join_kind = 0
        while n > 0:
            left = n
            k = self._run_span(&n)
            if k == 0:
                return 0
            p += left - n  # clamped at the last column: only the last character is drawn
            r = self.row(c.y) + c.x
            for i in range(k):
                r[i].cp = aw | p[i]
                r[i].fg = fg
                r[i].bg = bg
            c.x += k
            p += k
            n -= k
            self.touch(c.y)

    cdef int _attach_target(self, int* ty, int* tx) noexcept:
        """Cell that receives a zero-width char: the base cell before the cursor (skipping a wide stub)."""
        cdef Cursor c = self._cursor
        cdef int x = c.x, y = c.y
        if y < 0 or y >= self.lines:
            return 0
        if x > self.columns:
            x = self.columns
        if x > 0:
            x -= 1
        elif y > 0:
            y -= 1
            x = self.columns - 1
        else:
            return 0
        cdef Cell* cell = self.row(y) + x
        if (cell.cp & PRESENT) and (cell.cp & DATAMASK) == 0 and x > 0:
            x -= 1
        ty[0] = y
        tx[0] = x
        return 1

    cdef int _attach(self, uint32_t cp, bint normalize) except -1:
        """Append cp to the grapheme cluster of the cell before the cursor (text kept whole, NFC for marks),
        up to CLUSTER_MAX codepoints: past that, cp is dropped, as terminals cap combining marks per cell.

        A VARIATION SELECTOR-16 after a narrow base with an emoji presentation widens that cell to two
        columns when the cursor is right after it (the next cell becomes its stub), as the CLIs' width
        functions (and wcwidth's `wcswidth`) count it."""
        cdef int ty, tx
        cdef Cursor c = self._cursor
        if not self._attach_target(&ty, &tx):
            return 0
        cdef Cell* r = self.row(ty)
        cdef Cell* cell = r + tx
        cdef uint32_t w = cell.cp
        if not (w & PRESENT):
            w = self.blank_word()
            cell.fg = 0
            cell.bg = 0
        if (w & XSTR) and _XLEN[w & CPMASK] >= CLUSTER_MAX:
            self.pdirty[c.y] = 1  # nothing changed, but pyte's draw marks the cursor row dirty
            return 0  # the cluster is full: drop the mark (C only, no string built)
        s = _data_str(w) + chr(cp)
        if normalize:
            s = unicodedata.normalize("NFC", s)
            if len(s) > CLUSTER_MAX:
                s = s[:CLUSTER_MAX]  # NFC can expand a codepoint (U+0344 -> 2)
        cell.cp = (w & ~DATAMASK) | _data_pack(s)
        if cp == 0x200D:
            self.join_kind = J_ZWJ
            self.jx = c.x
            self.jy = c.y
        elif (cp == 0xFE0F and ty == c.y and tx + 1 == c.x and c.x < self.columns
              and _vs16_widens(_first_cp(w))):
            r[c.x].cp = (w & FLAGMASK) | PRESENT
            r[c.x].fg = cell.fg
            r[c.x].bg = cell.bg
            c.x += 1
            if self.join_kind:
                self.jx = c.x
        self.touch(ty)

    cdef bint _joins_prev(self, uint32_t cp) except -1:
        """An emoji skin-tone modifier after a wide emoji joins the previous cell."""
        cdef int ty, tx
        if not self._attach_target(&ty, &tx):
            return False
        cdef uint32_t w = (self.row(ty) + tx).cp
        if not (w & PRESENT):
            return False
        return wclass(_first_cp(w)) == W_TWO

    cdef int draw_cp(self, uint32_t cp) except -1:
        cdef int wc = wclass(cp)
        cdef Cursor c = self._cursor
        cdef int cols = self.columns
        cdef int width, y
        cdef Cell* r
        if wc == W_CTRL:
            return 0
        if wc == W_ZERO or wc == W_COMB:
            self._attach(cp, wc == W_COMB)
            return 0
        if self.join_kind:
            # ZWJ sequence, or the second regional indicator of a flag: same cell, same cluster
            if c.x == self.jx and c.y == self.jy and (
                    (self.join_kind == J_ZWJ and cp >= 0x80) or 0x1F1E6 <= cp <= 0x1F1FF):
                self.join_kind = 0
                self._attach(cp, False)
                return 0
            self.join_kind = 0
        width = 2 if wc == W_TWO else 1
        if 0x1F3FB <= cp <= 0x1F3FF and self._joins_prev(cp):
            self._attach(cp, False)
            return 0
        self._wrap_or_clamp(width)
        if self.m_irm:
            self._insert_characters(width)
        y = c.y
        if y < 0 or y >= self.lines:
            return 0
        r = self.row(y)
        r[c.x].cp = (c.aw & FLAGMASK) | PRESENT | cp
        r[c.x].fg = c.afg
        r[c.x].bg = c.abg
        if width == 2 and c.x + 1 < cols:
            r[c.x + 1].cp = (c.aw & FLAGMASK) | PRESENT
            r[c.x + 1].fg = c.afg
            r[c.x + 1].bg = c.abg
        c.x = min(c.x + width, cols)
        if 0x1F1E6 <= cp <= 0x1F1FF:
            self.join_kind = J_RI
            self.jx = c.x
            self.jy = c.y
        self.touch(y)

    cdef int draw_repeat(self, uint32_t cp, Py_ssize_t n) except -1:
        """A run of one narrow character (`───...`) drawn as runs of cells, like `draw_ascii`."""
        cdef Cursor c = self._cursor
        cdef uint32_t aw = (c.aw & FLAGMASK) | PRESENT | cp
        cdef uint32_t fg = c.afg, bg = c.abg
        cdef Py_ssize_t k, i
        cdef Cell* r
        self.join_kind = 0
        while n > 0:
            k = self._run_span(&n)
            if k == 0:
                return 0
            r = self.row(c.y) + c.x
            for i in range(k):
                r[i].cp = aw
                r[i].fg = fg
                r[i].bg = bg
            c.x += k
            n -= k
            self.touch(c.y)
        return 0

    def set_title(self, param):
        self.title = param
        if self.on_title is not None:
            self.on_title(param)

    def set_icon_name(self, param):
        self.icon_name = param

    # ---------------------------------------------------------------- cursor movement
    def carriage_return(self):
        self._cursor.x = 0

    cdef int _index(self) except -1:
        cdef int top, bot, p, y
        self.get_tb(&top, &bot)
        if self._cursor.y == bot:
            if self.hist_on:
                self._history_push_top(top)
            self.mark_all()
            p = self.g.rowmap[top]
            memmove(self.g.rowmap + top, self.g.rowmap + top + 1, (bot - top) * sizeof(int))
            self.g.rowmap[bot] = p
            self.clear_phys(p)
        else:
            self._cursor_down(1)

    cdef int _reverse_index(self) except -1:
        cdef int top, bot, p
        self.get_tb(&top, &bot)
        if self._cursor.y == top:
            if self.hist_on:
                self._history_push_bottom(bot)
            self.mark_all()
            p = self.g.rowmap[bot]
            memmove(self.g.rowmap + top + 1, self.g.rowmap + top, (bot - top) * sizeof(int))
            self.g.rowmap[top] = p
            self.clear_phys(p)
        else:
            self._cursor_up(1)

    cdef inline int _linefeed(self) except -1:
        self._index()
        if self.m_lnm:
            self._cursor.x = 0

    def index(self):
        self._index()

    def reverse_index(self):
        self._reverse_index()

    def linefeed(self):
        self._linefeed()

    cdef int _tab(self) except -1:
        cdef int x = self._cursor.x
        best = None
        for stop in self.tabstops:
            if x < stop and (best is None or stop < best):
                best = stop
        self._cursor.x = self.columns - 1 if best is None else best

    def tab(self):
        self._tab()

    def backspace(self):
        self._cursor_back(1)

    def save_cursor(self):
        self._save_cursor()

    def restore_cursor(self):
        self._restore_cursor()

    cdef void _save_into(self, SavedCursor* sp) noexcept:
        cdef Cursor c = self._cursor
        sp.x = c.x
        sp.y = c.y
        sp.hidden = c.hidden
        sp.aw = c.aw
        sp.afg = c.afg
        sp.abg = c.abg
        sp.g0 = self.g0_id
        sp.g1 = self.g1_id
        sp.charset = self._charset
        sp.origin = self.m_om
        sp.wrap = self.m_awm

    cdef int _save_cursor(self) except -1:
        """DECSC: pushed on a C stack (pyte stacks savepoints; beyond SPMAX the oldest is dropped)."""
        cdef SavedCursor* grown
        if self.nsps >= self.spcap:
            if self.spcap >= SPMAX:
                memmove(self.sps, self.sps + 1, (self.nsps - 1) * sizeof(SavedCursor))
                self.nsps -= 1
            else:
                grown = <SavedCursor*>realloc(self.sps, (self.spcap * 2 + 4) * sizeof(SavedCursor))
                if grown == NULL:
                    raise MemoryError()
                self.sps = grown
                self.spcap = self.spcap * 2 + 4
        self._save_into(self.sps + self.nsps)
        self.nsps += 1
        return 0

    cdef int _restore_from(self, SavedCursor* sp) except -1:
        """pyte's restore_cursor for one savepoint (the cursor object is updated in place, not replaced)."""
        cdef Cursor c = self._cursor
        if sp.g0 != self.g0_id or sp.g1 != self.g1_id or sp.charset != self._charset:
            self._g0 = _CHARSETS[sp.g0]
            self._g1 = _CHARSETS[sp.g1]
            self.g0_id = sp.g0
            self.g1_id = sp.g1
            self._charset = sp.charset
            self._sync_tr()
        if sp.origin:
            self._set_modes([M_DECOM], False, True)
        if sp.wrap:
            self.mode_put(M_DECAWM, True)
        c.x = sp.x
        c.y = sp.y
        c.hidden = sp.hidden
        c.aw = sp.aw
        c.afg = sp.afg
        c.abg = sp.abg
        self._ensure_h()
        self._ensure_v(True)
        return 0

    cdef int _restore_cursor(self) except -1:
        if self.nsps > 0:
            self.nsps -= 1
            return self._restore_from(self.sps + self.nsps)
        self._set_modes([M_DECOM], False, False)
        self._cursor_position(0, 0)
        return 0

    @property
    def savepoints(self):
        """pyte's list of `Savepoint`s, built from the C stack (a copy: assign the attribute to change it)."""
        cdef int i
        cdef SavedCursor* sp
        out = []
        for i in range(self.nsps):
            sp = self.sps + i
            c = Cursor.__new__(Cursor)
            (<Cursor>c).x = sp.x
            (<Cursor>c).y = sp.y
            (<Cursor>c).hidden = sp.hidden
            (<Cursor>c).aw = sp.aw
            (<Cursor>c).afg = sp.afg
            (<Cursor>c).abg = sp.abg
            out.append(Savepoint(c, _CHARSETS[sp.g0], _CHARSETS[sp.g1], sp.charset, bool(sp.origin),
                                 bool(sp.wrap)))
        return out

    @savepoints.setter
    def savepoints(self, value):
        cdef SavedCursor* sp
        cdef Cursor c
        self.nsps = 0
        for item in value:
            self._save_cursor()
            sp = self.sps + self.nsps - 1
            c = item.cursor
            sp.x = c.x
            sp.y = c.y
            sp.hidden = c.hidden
            sp.aw = c.aw
            sp.afg = c.afg
            sp.abg = c.abg
            sp.g0 = _charset_id(item.g0_charset)
            sp.g1 = _charset_id(item.g1_charset)
            sp.charset = item.charset
            sp.origin = bool(item.origin)
            sp.wrap = bool(item.wrap)

    cdef int _shift_lines(self, int count, bint down) except -1:
        """IL (`down`) and DL: rotate the row indexes of [cursor row, bottom margin] by `count` and blank the rows
        that rolled in, so no cell moves. As pyte, every row from the cursor down is marked dirty."""
        cdef int top, bot, y, n, k, first
        cdef int cy = self._cursor.y
        if count <= 0:
            count = 1
        self.get_tb(&top, &bot)
        if not (top <= cy <= bot):
            return 0
        for y in range(cy, self.lines):
            self.pdirty[y] = 1
        n = bot - cy + 1
        if count > n:
            count = n
        # rotate rows[0:n] right by k with three reversals (IL: k = count; DL: left by count = right by n - count)
        cdef int* rows = self.g.rowmap + cy
        k = count if down else n - count
        _reverse_ints(rows, 0, n - 1)
        _reverse_ints(rows, 0, k - 1)
        _reverse_ints(rows, k, n - 1)
        first = cy if down else bot - count + 1
        for y in range(first, first + count):
            self.clear_phys(self.g.rowmap[y])
        for y in range(cy, bot + 1):
            self.ldirty[y] = 1
        self._cursor.x = 0

    cdef int _insert_lines(self, int count) except -1:
        return self._shift_lines(count, True)

    cdef int _delete_lines(self, int count) except -1:
        return self._shift_lines(count, False)

    def insert_lines(self, count=None):
        self._insert_lines(count or 1)

    def delete_lines(self, count=None):
        self._delete_lines(count or 1)

    cdef int _insert_characters(self, int count) except -1:
        cdef int y = self._cursor.y, cx = self._cursor.x, cols = self.columns, x
        if count <= 0:
            count = 1
        if y < 0 or y >= self.lines:
            return 0
        self.touch(y)
        if cx < 0:
            cx = 0
        if cx >= cols:
            return 0
        cdef Cell* r = self.row(y)
        cdef uint32_t bw = self.blank_word()
        cdef Cell* hid = &self.g.hidden[self.g.rowmap[y]]
        if cols - count >= cx:  # pyte: the cell pushed past the margin is kept (materialised)
            hid[0] = r[cols - count]
            if not (hid.cp & PRESENT):
                hid.cp = bw
                hid.fg = 0
                hid.bg = 0
        else:
            hid.cp = 0
        for x in range(cols - 1, cx + count - 1, -1):
            r[x] = r[x - count]
            if not (r[x].cp & PRESENT):
                r[x].cp = bw
                r[x].fg = 0
                r[x].bg = 0
        for x in range(cx, min(cx + count, cols)):
            r[x].cp = 0
            r[x].fg = 0
            r[x].bg = 0

    cdef int _delete_characters(self, int count) except -1:
        cdef int y = self._cursor.y, cx = self._cursor.x, cols = self.columns, x
        if count <= 0:
            count = 1
        if y < 0 or y >= self.lines:
            return 0
        self.touch(y)
        if cx < 0:
            cx = 0
        cdef Cell* r = self.row(y)
        cdef uint32_t bw = self.blank_word()
        cdef Cell* hid = &self.g.hidden[self.g.rowmap[y]]
        for x in range(cx, cols):
            if x + count <= cols:
                if x + count < cols and (r[x + count].cp & PRESENT):
                    r[x] = r[x + count]
                elif x + count == cols and (hid.cp & PRESENT):
                    r[x] = hid[0]  # pyte pulls back the cell an earlier ICH pushed past the margin
                    hid.cp = 0
                else:
                    r[x].cp = bw
                    r[x].fg = 0
                    r[x].bg = 0
            else:
                r[x].cp = 0
                r[x].fg = 0
                r[x].bg = 0

    cdef int _erase_characters(self, int count) except -1:
        cdef int y = self._cursor.y, cx = self._cursor.x, x
        if count <= 0:
            count = 1
        if y < 0 or y >= self.lines:
            return 0
        self.touch(y)
        self._fill(y, cx, min(cx + count, self.columns))

    cdef inline void _fill(self, int y, int x0, int x1) noexcept:
        """Write the cursor attributes (pyte: `line[x] = cursor.attrs`) into [x0, x1) of row y."""
        cdef Cursor c = self._cursor
        cdef Cell cell
        cdef Cell* r = self.row(y)
        cdef int x
        cell.cp = c.aw | PRESENT
        cell.fg = c.afg
        cell.bg = c.abg
        if x0 < 0:
            x0 = 0
        if x1 > self.columns:
            x1 = self.columns
        # cells become "present" even with default attributes: pyte's later ED with colours repaints only
        # present cells, so this is not the same as leaving them unwritten
        for x in range(x0, x1):
            r[x] = cell
        if x1 >= self.columns:
            self.g.wrapped[self.g.rowmap[y]] = 0

    def insert_characters(self, count=None):
        self._insert_characters(count or 1)

    def delete_characters(self, count=None):
        self._delete_characters(count or 1)

    def erase_characters(self, count=None):
        self._erase_characters(count or 1)

    cdef int _erase_in_line(self, int how) except -1:
        cdef int y = self._cursor.y, x = self._cursor.x
        if y < 0 or y >= self.lines:
            return 0
        self.touch(y)
        if how == 0:
            self._fill(y, x, self.columns)
        elif how == 1:
            self._fill(y, 0, x + 1)
            if x == self.columns:  # pyte's range(x + 1) reaches the cell past the margin
                self.g.hidden[self.g.rowmap[y]].cp = self._cursor.aw | PRESENT
                self.g.hidden[self.g.rowmap[y]].fg = self._cursor.afg
                self.g.hidden[self.g.rowmap[y]].bg = self._cursor.abg
        elif how == 2:
            self._fill(y, 0, self.columns)

    def erase_in_line(self, how=0, private=False):
        self._erase_in_line(how)

    cdef int _erase_in_display(self, int how) except -1:
        cdef int y0, y1, y, x
        cdef Cursor c = self._cursor
        cdef Cell cell
        cdef Cell* r
        if how == 0:
            y0, y1 = c.y + 1, self.lines
        elif how == 1:
            y0, y1 = 0, c.y
        elif how == 2 or how == 3:
            y0, y1 = 0, self.lines
        else:
            return 0
        if y0 < 0:
            y0 = 0
        if y1 > self.lines:
            y1 = self.lines
        cell.cp = c.aw | PRESENT
        cell.fg = c.afg
        cell.bg = c.abg
        for y in range(y0, y1):
            if self.g.used[self.g.rowmap[y]] == U_USED:  # blank or pending-clear rows have no present cell
                r = self.g.cells + <Py_ssize_t>self.g.rowmap[y] * self.columns
                for x in range(self.columns):
                    if r[x].cp & PRESENT:
                        r[x] = cell
            self.touch(y)
            if self.g.hidden[self.g.rowmap[y]].cp & PRESENT:
                self.g.hidden[self.g.rowmap[y]] = cell
            self.g.wrapped[self.g.rowmap[y]] = 0
        if how == 0 or how == 1:
            self._erase_in_line(how)
        elif how == 3 and self.hist_on:
            self._reset_history()

    def erase_in_display(self, how=0, *args, **kwargs):
        self._erase_in_display(how)

    def set_tab_stop(self):
        self.tabstops.add(self._cursor.x)

    def clear_tab_stop(self, how=0):
        if how == 0:
            self.tabstops.discard(self._cursor.x)
        elif how == 3:
            self.tabstops = set()

    cdef inline void _ensure_h(self) noexcept:
        cdef Cursor c = self._cursor
        c.x = min(max(0, c.x), self.columns - 1)

    cdef inline void _ensure_v(self, bint use_margins) noexcept:
        cdef int top = 0, bot = self.lines - 1
        if (use_margins or self.m_om) and self.has_margins:
            top = self.mtop
            bot = self.mbot
        cdef Cursor c = self._cursor
        c.y = min(max(top, c.y), bot)

    def ensure_hbounds(self):
        self._ensure_h()

    def ensure_vbounds(self, use_margins=None):
        self._ensure_v(bool(use_margins))

    cdef inline void _cursor_up(self, int count) noexcept:
        cdef int top = self.mtop if self.has_margins else 0
        if count <= 0:
            count = 1
        self._cursor.y = max(self._cursor.y - count, top)

    cdef inline void _cursor_down(self, int count) noexcept:
        cdef int bot = self.mbot if self.has_margins else self.lines - 1
        if count <= 0:
            count = 1
        self._cursor.y = min(self._cursor.y + count, bot)

    cdef inline void _cursor_back(self, int count) noexcept:
        cdef Cursor c = self._cursor
        if count <= 0:
            count = 1
        if c.x == self.columns:
            c.x -= 1
        c.x -= count
        self._ensure_h()

    cdef inline void _cursor_forward(self, int count) noexcept:
        if count <= 0:
            count = 1
        self._cursor.x += count
        self._ensure_h()

    cdef void _cursor_position(self, int line, int column) noexcept:
        """pyte's cursor_position(line, column) with 0 meaning default (1)."""
        if column <= 0:
            column = 1
        if line <= 0:
            line = 1
        column -= 1
        line -= 1
        if self.has_margins and self.m_om:
            line += self.mtop
            if not (self.mtop <= line <= self.mbot):
                return
        self._cursor.x = column
        self._cursor.y = line
        self._ensure_h()
        self._ensure_v(False)

    cdef inline void _cursor_to_column(self, int column) noexcept:
        if column <= 0:
            column = 1
        self._cursor.x = column - 1
        self._ensure_h()

    cdef inline void _cursor_to_line(self, int line) noexcept:
        if line <= 0:
            line = 1
        self._cursor.y = line - 1
        if self.m_om and self.has_margins:
            self._cursor.y += self.mtop
        self._ensure_v(False)

    def cursor_up(self, count=None):
        self._cursor_up(count or 1)

    def cursor_up1(self, count=None):
        self._cursor_up(count or 1)
        self._cursor.x = 0

    def cursor_down(self, count=None):
        self._cursor_down(count or 1)

    def cursor_down1(self, count=None):
        self._cursor_down(count or 1)
        self._cursor.x = 0

    def cursor_back(self, count=None):
        self._cursor_back(count or 1)

    def cursor_forward(self, count=None):
        self._cursor_forward(count or 1)

    def cursor_position(self, line=None, column=None):
        self._cursor_position(line or 0, column or 0)

    def cursor_to_column(self, column=None):
        self._cursor_to_column(column or 0)

    def cursor_to_line(self, line=None):
        self._cursor_to_line(line or 0)

    def bell(self, *args):
        pass

    def alignment_display(self):
        cdef int y, x
        cdef Cell* r
        self.mark_all()
        for y in range(self.lines):
            r = self.row(y)
            self.g.stale[self.g.rowmap[y]] = 1
            self.g.used[self.g.rowmap[y]] |= U_USED
            for x in range(self.columns):
                if r[x].cp & PRESENT:
                    r[x].cp = (r[x].cp & ~DATAMASK) | 0x45
                else:
                    r[x].cp = self.blank_word() & ~DATAMASK | 0x45
                    r[x].fg = 0
                    r[x].bg = 0

    # ---------------------------------------------------------------- SGR
    def select_graphic_rendition(self, *attrs):
        cdef int n = len(attrs), i
        cdef int p[MAXP]
        cdef uint8_t sub[MAXP]
        if n > MAXP:
            n = MAXP
        for i in range(n):
            p[i] = attrs[i]
            sub[i] = 0
        self._sgr(p, sub, n)

    cdef int _sgr1(self, int code) except -1:
        cdef int p[1]
        cdef uint8_t s[1]
        p[0] = code
        s[0] = 0
        self._sgr(p, s, 1)

    cdef int _sgr(self, int* p, uint8_t* sub, int n) except -1:
        cdef Cursor c = self._cursor
        cdef int i = 0, a, j, k, m
        cdef uint32_t dflt = 0x20 | (F_REV if self.m_scnm else 0)
        cdef uint32_t* target
        if n == 0 or (n == 1 and p[0] == 0):
            c.aw = dflt
            c.afg = 0
            c.abg = 0
            return 0
        while i < n:
            a = p[i]
            # group of colon sub-parameters following this one
            k = i + 1
            while k < n and sub[k]:
                k += 1
            if k > i + 1:
                # colon sub-parameters (4:3, 38:2::r:g:b, 58:5:n ...): skipped whole, like pyte cannot express them
                i = k
                continue
            i += 1
            if a == 0:
                c.aw = dflt
                c.afg = 0
                c.abg = 0
            elif 30 <= a <= 37:
                c.afg = _FG_ANSI[a - 30]
            elif a == 39:
                c.afg = 0
            elif 40 <= a <= 47:
                c.abg = _BG_ANSI[a - 40]
            elif a == 49:
                c.abg = 0
            elif a == 1:
                c.aw |= F_BOLD
            elif a == 2:
                c.aw |= F_DIM
            elif a == 3:
                c.aw |= F_ITAL
            elif a == 4:
                c.aw |= F_UND
            elif a == 5:
                c.aw |= F_BLINK
            elif a == 7:
                c.aw |= F_REV
            elif a == 9:
                c.aw |= F_STRIKE
            elif a == 22:
                c.aw &= ~(F_BOLD | F_DIM)
            elif a == 23:
                c.aw &= ~F_ITAL
            elif a == 24:
                c.aw &= ~F_UND
            elif a == 25:
                c.aw &= ~F_BLINK
            elif a == 27:
                c.aw &= ~F_REV
            elif a == 29:
                c.aw &= ~F_STRIKE
            elif 90 <= a <= 97:
                c.afg = _FG_AIX[a - 90]
            elif 100 <= a <= 107:
                c.abg = _BG_AIX[a - 100]
            elif a == 38 or a == 48:
                target = &c.afg if a == 38 else &c.abg
                if i >= n:
                    break
                m = p[i]
                i += 1
                if m == 5:
                    if i >= n:
                        break
                    m = p[i]
                    i += 1
                    if 0 <= m < 256:
                        target[0] = T_256 | m
                elif m == 2:
                    if i + 3 > n:
                        i = n
                        break
                    if p[i] < 256 and p[i + 1] < 256 and p[i + 2] < 256:
                        target[0] = T_RGB | (p[i] << 16) | (p[i + 1] << 8) | p[i + 2]
                    else:
                        target[0] = _color_pack("{0:02x}{1:02x}{2:02x}".format(p[i], p[i + 1], p[i + 2]))
                    i += 3
            elif a == 58:
                # underline colour: not representable; skip its arguments whole
                if i < n and p[i] == 5:
                    i += 2
                elif i < n and p[i] == 2:
                    i += 4
                if i > n:
                    i = n

    # ---------------------------------------------------------------- reports
    def report_device_attributes(self, mode=0, **kwargs):
        if mode == 0 and not kwargs.get("private"):
            if self.feeding:
                self.pending_da += 1
            else:
                self.write_process_input("\x1b[?6c")

    def report_device_status(self, mode):
        if mode == 5:
            self.write_process_input("\x1b[0n")
        elif mode == 6:
            x = self._cursor.x + 1
            y = self._cursor.y + 1
            if self.m_om and self.has_margins:
                y -= self.mtop
            self.write_process_input("\x1b[{0};{1}R".format(y, x))

    def write_process_input(self, data):
        """Replies to the program (DA, DSR, XTVERSION...): forwarded to `on_reply` as UTF-8 bytes."""
        if self.on_reply is not None:
            self.on_reply(data.encode("utf-8"))

    def debug(self, *args, **kwargs):
        pass

    cdef int _flush_da(self) except -1:
        cdef int n = self.pending_da
        self.pending_da = 0
        while n > 0:
            n -= 1
            self.write_process_input("\x1b[?6c")

    def _program_status(self, str payload):
        """OSC 7501: `?` is the probe (echoed); any other payload goes raw to `on_status`. Its meaning is
        read in one place, `litbridge.drivers.osc7501` (a terminal knows the sequence, not its fields)."""
        if payload == "?":
            self.write_process_input("\x1b]7501;?\x07")
            return
        self.program_status = payload
        if self.on_status is not None:
            self.on_status(payload)

    # ---------------------------------------------------------------- reading
    cdef str _render(self, int p):
        cdef Cell* r = self.prow(p)
        cdef int x, n = 0
        cdef bint skip = False, slow = False
        cdef uint32_t w, cp, mx = 0
        cdef ucs4* buf = self.scratch
        for x in range(self.columns):
            if skip:
                skip = False
                continue
            w = r[x].cp
            if not (w & PRESENT):
                buf[n] = 0x20
                n += 1
                continue
            if w & XSTR:
                slow = True
                break
            cp = w & CPMASK
            if cp == 0:
                continue
            buf[n] = cp
            n += 1
            mx |= cp
            if cp >= 0x1100 and wclass(cp) == W_TWO:
                skip = True
        if not slow:
            return _ucs4_to_str_mx(buf, n, mx | 0x20)
        parts = []
        skip = False
        for x in range(self.columns):
            if skip:
                skip = False
                continue
            w = r[x].cp
            if not (w & PRESENT):
                parts.append(" ")
                continue
            s = _data_str(w)
            parts.append(s)
            if s:
                skip = wclass(ord(s[0])) == W_TWO
        return "".join(parts)

    cdef inline str _line(self, int y):
        cdef int p = self.g.rowmap[y]
        if self.g.stale[p]:
            self.rowtext[p] = self._render(p)
            self.g.stale[p] = 0
        return self.rowtext[p]

    @property
    def display(self):
        cdef int y
        return [self._line(y) for y in range(self.lines)]

    def line(self, int y):
        """Text of row y (cached until the row changes)."""
        if y < 0:
            y += self.lines
        if not (0 <= y < self.lines):
            raise IndexError("row %d out of range" % y)
        return self._line(y)

    def wrapped(self, int y):
        """True if row y soft-wrapped (autowrap at the last column) into row y + 1."""
        if not (0 <= y < self.lines):
            return False
        return bool(self.g.wrapped[self.g.rowmap[y]])

    def logical_lines(self):
        """Rows joined where soft-wrapped, each logical line right-stripped (a copy of `logical_rows()`)."""
        return list(self.logical_rows())

    def changed_rows(self):
        """(y, text) for rows whose text changed since the previous call."""
        cdef int y
        out = []
        last = self.last_rows
        for y in range(self.lines):
            if self.ldirty[y]:
                self.ldirty[y] = 0
                self.sdirty[y] = 1
                t = self._line(y)
                if t != last[y]:
                    last[y] = t
                    out.append((y, t))
        return out

    # -------- per-frame snapshots: what readers of one frame share (rows, stripped rows, logical lines)
    cdef int _snapshot(self) except -1:
        """Refresh the snapshot if a row's text or wrap flag may have changed since it was taken.

        A change always sets a `changed_rows` bit (`ldirty`; when `changed_rows` clears one it sets the row's
        `sdirty` bit for the next snapshot), so only those rows are re-read: the others keep their str objects
        and their stripped text. A touched-but-identical frame keeps its generation."""
        cdef int y
        cdef bint dirty = memchr(self.ldirty, 1, self.lines) != NULL or memchr(self.sdirty, 1, self.lines) != NULL
        old = self.snap_rows
        cdef bytes sw = self.snap_wraps
        cdef const unsigned char* sp
        cdef bint fresh = old is None or sw is None or len(<list>old) != self.lines or len(sw) != self.lines
        if not fresh:
            # the hot cases (every reader of a frame asks): nothing re-rendered, or the rows marked changed since
            # the last snapshot still read as they did then (a frame not yet taken by `changed_rows`, a repaint of
            # the same text); no copy is made unless a row's text or a wrap flag differs
            if dirty:
                for y in range(self.lines):
                    if self.ldirty[y] or self.sdirty[y]:
                        r = self._line(y)
                        s = (<list>old)[y]
                        if r is not s and r != s:
                            break
                else:
                    dirty = False
            if not dirty:
                sp = sw
                for y in range(self.lines):
                    if sp[y] != self.g.wrapped[self.g.rowmap[y]]:
                        break
                else:
                    memset(self.sdirty, 0, self.lines)
                    return 0
        cdef bytearray wb = bytearray(self.lines)
        cdef unsigned char* w = wb
        for y in range(self.lines):
            w[y] = self.g.wrapped[self.g.rowmap[y]]
        wraps = bytes(wb)
        cdef list new, strip
        cdef bint same
        if fresh:
            new = [self._line(y) for y in range(self.lines)]
            strip = [r.rstrip() for r in new]
        else:
            new = list(<list>old)
            strip = None
            for y in range(self.lines):
                if self.ldirty[y] or self.sdirty[y]:
                    r = self._line(y)
                    if r is not new[y] and r != new[y]:
                        if strip is None:
                            strip = list(<list>self.snap_strip)
                        new[y] = r
                        strip[y] = r.rstrip()
        memset(self.sdirty, 0, self.lines)
        if strip is None:
            if wraps == sw:
                return 0
            strip = self.snap_strip
            new = old
        self.snap_rows = new
        self.snap_strip = strip
        self.snap_wraps = wraps
        self.snap_logical = None
        self.content_gen += 1
        return 0

    @property
    def generation(self):
        """A counter that changes whenever the rows' text (or a wrap flag) changed since it was last read."""
        self._snapshot()
        return self.content_gen

    def rows(self):
        """Every row (as `display`) for the current generation: one shared list per change; never mutate it."""
        self._snapshot()
        return self.snap_rows

    def stripped_rows(self):
        """`rows()` right-stripped, shared the same way; a row that did not change is not stripped again."""
        self._snapshot()
        return self.snap_strip

    def logical_rows(self):
        """`logical_lines()` for the current generation, shared the same way; never mutate it. With no row
        soft-wrapped (most frames: the CLIs wrap their own text) it is `stripped_rows()` itself."""
        cdef int y
        self._snapshot()
        if self.snap_logical is None:
            rows = self.snap_rows
            w = self.snap_wraps
            if memchr(<const char*>w, 1, self.lines) == NULL:
                self.snap_logical = self.snap_strip
                return self.snap_logical
            out = []
            cur = []
            for y in range(self.lines):
                cur.append(rows[y])
                if not w[y] or y == self.lines - 1:
                    out.append("".join(cur).rstrip() if len(cur) > 1 else self.snap_strip[y])
                    cur = []
            self.snap_logical = out
        return self.snap_logical

    # -------- buffer proxy primitives (physical rows, so a row object follows its line as pyte's dicts do)
    def _phys(self, int y):
        """Physical row index of logical row y in the current grid."""
        return self.g.rowmap[y]

    cdef void _touch_phys(self, int p) noexcept:
        cdef int y
        self.g.stale[p] = 1
        self.g.used[p] |= U_USED
        for y in range(self.lines):
            if self.g.rowmap[y] == p:
                self.ldirty[y] = 1
                break

    def _char_phys(self, int p, int x):
        if not (0 <= p < self.lines and 0 <= x < self.columns):
            return self.default_char
        cdef Cell* c = self.prow(p) + x
        if not (c.cp & PRESENT):
            return _make_char(self.blank_word(), 0, 0)
        return _make_char(c.cp, c.fg, c.bg)

    def _set_phys(self, int p, int x, ch):
        if not (0 <= p < self.lines and 0 <= x < self.columns):
            return
        cdef tuple t = _pack_char(ch)
        cdef Cell* c = self.prow(p) + x
        c.cp = <uint32_t>t[0] | PRESENT
        c.fg = t[1]
        c.bg = t[2]
        self._touch_phys(p)

    def _del_phys(self, int p, int x):
        if 0 <= p < self.lines and 0 <= x < self.columns:
            (self.prow(p) + x).cp = 0
            self._touch_phys(p)

    def _present_phys(self, int p, int x):
        if 0 <= p < self.lines and 0 <= x < self.columns:
            return bool((self.prow(p) + x).cp & PRESENT)
        return False

    def _row_bytes(self, int p):
        """Copy of physical row p (packed 12-byte cells): a history line / detached row."""
        return bytearray((<char*>self.prow(p))[:self.columns * sizeof(Cell)])

    def _load_row(self, int p, const unsigned char[::1] data):
        """Overwrite physical row p from packed cells (shorter data: the rest reads unwritten)."""
        cdef Py_ssize_t n = min(<Py_ssize_t>data.shape[0], self.columns * <Py_ssize_t>sizeof(Cell))
        cdef char* dst = <char*>self.prow(p)
        memset(dst, 0, self.columns * sizeof(Cell))
        if n > 0:
            memcpy(dst, &data[0], n)
        self.g.wrapped[p] = 0
        self._touch_phys(p)

    def _copy_phys(self, int dst, int src):
        if dst != src:
            memcpy(self.prow(dst), self.prow(src),
                   self.columns * sizeof(Cell))
            self.g.wrapped[dst] = self.g.wrapped[src]
            self.g.hidden[dst] = self.g.hidden[src]
        self._touch_phys(dst)

    def _clear_phys_py(self, int p):
        self.clear_phys(p)
        self._touch_phys(p)

    def dim_at(self, int y, int x):
        """SGR 2 (dim) state of cell (x, y); pyte's Char has no field for it."""
        if not (0 <= y < self.lines and 0 <= x < self.columns):
            return False
        return bool((self.row(y) + x).cp & F_DIM)

    def char_at(self, int y, int x):
        """pyte Char of cell (x, y) (unwritten cells read as default_char)."""
        if not (0 <= y < self.lines):
            return self.default_char
        return self._char_phys(self.g.rowmap[y], x)

    cdef str _sgr_of(self, uint32_t w, uint32_t fg, uint32_t bg):
        parts = ["0"]
        if w & F_BOLD:
            parts.append("1")
        if w & F_DIM:
            parts.append("2")
        if w & F_ITAL:
            parts.append("3")
        if w & F_UND:
            parts.append("4")
        if w & F_BLINK:
            parts.append("5")
        if w & F_REV:
            parts.append("7")
        if w & F_STRIKE:
            parts.append("9")
        _col_sgr(parts, fg, True)
        _col_sgr(parts, bg, False)
        return ";".join(parts)

    def snapshot(self):
        """Rows as text (right-stripped) plus attribute runs [start, end, sgr] per row, cursor and modes."""
        cdef int y, x, start
        cdef Cell* r
        cdef uint32_t key_w = 0, key_fg = 0, key_bg = 0, w = 0
        rows = []
        attrs = []
        for y in range(self.lines):
            rows.append(self._line(y).rstrip())
            r = self.row(y)
            runs = []
            start = 0
            key_w = r[0].cp & FLAGMASK if r[0].cp & PRESENT else 0
            key_fg = r[0].fg
            key_bg = r[0].bg
            for x in range(1, self.columns + 1):
                if x < self.columns:
                    w = r[x].cp & FLAGMASK if r[x].cp & PRESENT else 0
                    if w == key_w and r[x].fg == key_fg and r[x].bg == key_bg:
                        continue
                if key_w or key_fg or key_bg:
                    runs.append([start, x, self._sgr_of(key_w, key_fg, key_bg)])
                if x < self.columns:
                    start = x
                    key_w = w
                    key_fg = r[x].fg
                    key_bg = r[x].bg
            attrs.append(runs)
        c = self._cursor
        return {
            "rows": rows,
            "attrs": attrs,
            "cursor": [c.x, c.y],
            "cursor_hidden": bool(c.hidden),
            "title": self.title,
            "alternate": bool(self.in_alt),
            "columns": self.columns,
            "lines": self.lines,
        }

    def ansi_repaint(self):
        """Bytes that repaint this screen on a blank terminal of the same size: SGR, text, cursor."""
        cdef int y, x, last, col
        cdef Cell* r
        cdef uint32_t w, cw, cfg, cbg, cp
        cdef bint skip
        out = ["\x1b[0m\x1b[H\x1b[2J"]
        cw = 0
        cfg = 0
        cbg = 0
        for y in range(self.lines):
            r = self.row(y)
            last = -1
            for x in range(self.columns):
                w = r[x].cp
                if (w & PRESENT) and ((w & DATAMASK) not in (0, 0x20) or (w & FLAGMASK) or r[x].fg or r[x].bg):
                    last = x
            if last < 0:
                continue
            out.append("\x1b[%d;1H" % (y + 1))
            col = 0
            skip = False
            for x in range(last + 1):
                if skip:
                    skip = False
                    continue
                w = r[x].cp
                if not (w & PRESENT):
                    w = 0x20
                    fg = 0
                    bg = 0
                    if cw != 0 or cfg != 0 or cbg != 0:
                        out.append("\x1b[0m")
                        cw = cfg = cbg = 0
                else:
                    if (w & FLAGMASK) != cw or r[x].fg != cfg or r[x].bg != cbg:
                        cw = w & FLAGMASK
                        cfg = r[x].fg
                        cbg = r[x].bg
                        out.append("\x1b[" + self._sgr_of(cw, cfg, cbg) + "m")
                s = _data_str(w)
                if not s:
                    continue
                if col != x:
                    out.append("\x1b[%dG" % (x + 1))
                out.append(s)
                if wclass(ord(s[0])) == W_TWO:
                    skip = True
                    col = x + 2
                else:
                    col = x + 1
        c = self._cursor
        out.append("\x1b[0m")
        out.append("\x1b[%d;%dH" % (c.y + 1, min(c.x, self.columns - 1) + 1))
        out.append("\x1b[?25l" if c.hidden else "\x1b[?25h")
        return "".join(out).encode("utf-8")


cdef int _col_sgr(list parts, uint32_t c, bint fg) except -1:
    cdef uint32_t tag = c & TAGMASK
    if c == 0:
        return 0
    if tag == T_256:
        parts.append("%d;5;%d" % (38 if fg else 48, c & VALMASK))
    elif tag == T_RGB:
        v = c & VALMASK
        parts.append("%d;2;%d;%d;%d" % (38 if fg else 48, v >> 16, (v >> 8) & 255, v & 255))
    elif tag == T_NAME:
        name = _NAMES[c & VALMASK]
        code = (_NAME_FG_SGR if fg else _NAME_BG_SGR).get(name)
        if code is not None:
            parts.append(str(code))
        elif len(name) == 6:
            try:
                v = int(name, 16)
            except ValueError:
                return 0
            parts.append("%d;2;%d;%d;%d" % (38 if fg else 48, v >> 16, (v >> 8) & 255, v & 255))


cdef object _char_from_bytes(const unsigned char[::1] data, Py_ssize_t x, object dflt):
    if x < 0 or (x + 1) * <Py_ssize_t>sizeof(Cell) > data.shape[0]:
        return dflt
    cdef const Cell* c = (<const Cell*>&data[0]) + x
    if not (c.cp & PRESENT):
        return dflt
    return _make_char(c.cp, c.fg, c.bg)


cdef object _store_in_bytes(bytearray data, Py_ssize_t x, object ch):
    if x < 0 or (x + 1) * <Py_ssize_t>sizeof(Cell) > len(data):
        return None
    cdef tuple t = _pack_char(ch)
    cdef unsigned char* base = data
    cdef Cell* c = (<Cell*>base) + x
    c.cp = <uint32_t>t[0] | PRESENT
    c.fg = t[1]
    c.bg = t[2]
    return None


cdef class _Row:
    """One line of `Screen.buffer` (pyte: a StaticDefaultDict of `Char`).

    Live rows view a physical grid row; a row pushed into history is *detached*: it keeps a packed copy
    (`_data`, 12 bytes per cell) and stays the same object, so `history.top[-1] is line` holds as in pyte.
    """

    cdef public Screen _s
    cdef public int _p
    cdef public object _data
    cdef object __weakref__

    def __init__(self, Screen screen, int p, data=None):
        self._s = screen
        self._p = p
        self._data = data

    def _detach(self):
        if self._data is None:
            s = self._s
            self._data = s._row_bytes(self._p)
            if s._proxies.get(self._p) is self:
                del s._proxies[self._p]
        return self

    @property
    def default(self):
        return self._s.default_char

    def __getitem__(self, Py_ssize_t x):
        cdef Screen s = self._s
        cdef Cell* c
        if self._data is not None:
            return _char_from_bytes(self._data, x, s.default_char)
        if not (0 <= self._p < s.lines and 0 <= x < s.columns):
            return s.default_char
        c = s.prow(self._p) + x
        if not (c.cp & PRESENT):
            return _make_char(s.blank_word(), 0, 0)
        return _make_char(c.cp, c.fg, c.bg)

    def __setitem__(self, x, ch):
        if self._data is not None:
            _store_in_bytes(self._data, x, ch)
        else:
            self._s._set_phys(self._p, x, ch)

    def __delitem__(self, x):
        if self._data is not None:
            if 0 <= x < len(self._data) // 12:
                self._data[x * 12 : x * 12 + 12] = bytes(12)
        else:
            self._s._del_phys(self._p, x)

    def __contains__(self, x):
        if self._data is not None:
            if not (0 <= x < len(self._data) // 12):
                return False
            return bool(int.from_bytes(self._data[x * 12 : x * 12 + 4], "little") & 0x20000000)
        return self._s._present_phys(self._p, x)

    def pop(self, x, *default):
        if x in self:
            ch = self[x]
            del self[x]
            return ch
        if default:
            return default[0]
        raise KeyError(x)

    def keys(self):
        n = len(self._data) // 12 if self._data is not None else self._s.columns
        return [x for x in range(n) if x in self]

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        return len(self.keys())

    def values(self):
        return [self[x] for x in self.keys()]

    def items(self):
        return [(x, self[x]) for x in self.keys()]

    def get(self, x, default=None):
        return self[x] if x in self else default

    def __eq__(self, other):
        if self is other:
            return True
        try:
            return dict(self.items()) == dict(other.items())
        except AttributeError:
            return NotImplemented

    def __hash__(self):
        return id(self)

    def __repr__(self):
        return "Row(%s)" % ("detached" if self._data is not None else "phys %d" % self._p)


cdef class _Buffer:
    """`Screen.buffer`: a mapping view y -> row object, reading and writing the native grid."""

    cdef Screen _s

    def __init__(self, Screen screen):
        self._s = screen

    def __getitem__(self, Py_ssize_t y):
        cdef Screen s = self._s
        if y < 0:
            y += s.lines
        if not (0 <= y < s.lines):
            return _Row(s, -1, bytearray())
        cdef int p = s.g.rowmap[y]
        row = s._proxies.get(p)
        if row is None:
            row = _Row(s, p)
            s._proxies[p] = row
        return row

    def __setitem__(self, y, row):
        s = self._s
        if not (0 <= y < s.lines):
            return
        p = s._phys(y)
        if isinstance(row, _Row) and row._s is s:
            if row._data is not None:
                s._load_row(p, bytes(row._data))
                row._data = None
                row._p = p
                s._proxies[p] = row
            else:
                s._copy_phys(p, row._p)
            return
        s._clear_phys_py(p)
        for x, ch in row.items():
            s._set_phys(p, x, ch)

    def __len__(self):
        return self._s.lines

    def __iter__(self):
        return iter(range(self._s.lines))

    def __contains__(self, y):
        return 0 <= y < self._s.lines

    def keys(self):
        return list(range(self._s.lines))

    def values(self):
        return [self[y] for y in range(self._s.lines)]

    def items(self):
        return [(y, self[y]) for y in range(self._s.lines)]

    def clear(self):
        s = self._s
        for y in range(s.lines):
            s._clear_phys_py(s._phys(y))

    def pop(self, y, default=None):
        if y in self:
            row = self[y]._detach()
            self._s._clear_phys_py(self._s._phys(y))
            return row
        return default


include "parser.pxi"
