# Byte-level parser fused with Screen (included by screen.pyx so it can call the cdef methods directly).
# State lives in the object, so feeds may split anywhere (mid-escape, mid-UTF-8).


cdef class Parser:
    """Parses PTY bytes and applies them to a native `Screen` (the fast path).

    Replies go through `screen.write_process_input`; DA1 answers are deferred to the end of each feed so
    that they come after the other replies of the same feed. Titles and bells call the screen's Python
    methods (so subclasses overriding only those hooks keep the fast path).
    """

    cdef Screen scr
    cdef int state
    cdef int params[MAXP]
    cdef uint8_t sub[MAXP]
    cdef int np
    cdef int cur
    cdef bint have_cur
    cdef bint next_sub
    cdef int priv          # 0, '?', '<', '=', '>'
    cdef int inter         # intermediate byte seen (0x20-0x2f), 0 if none
    cdef bint bad          # sequence to be ignored (non-ASCII inside, too many params...)
    cdef uint32_t ucp
    cdef int uneed
    cdef uint8_t ulo, uhi
    cdef uint32_t* osc     # grown on demand up to OSCMAX code points
    cdef int osccap
    cdef int osclen
    cdef int charset_mode
    cdef public bint use_utf8
    cdef public bint str_mode

    def __cinit__(self, *args, **kwargs):
        self.osc = NULL
        self.osccap = 0

    def __dealloc__(self):
        free(self.osc)

    cdef int _osc_put(self, uint32_t cp) except -1:
        cdef uint32_t* grown
        cdef int cap
        if self.osclen >= self.osccap:
            if self.osccap >= OSCMAX:
                return 0
            cap = 256 if self.osccap == 0 else self.osccap * 2
            grown = <uint32_t*>realloc(self.osc, cap * sizeof(uint32_t))
            if grown == NULL:
                raise MemoryError()
            self.osc = grown
            self.osccap = cap
        self.osc[self.osclen] = cp
        self.osclen += 1
        return 0

    def __init__(self, Screen screen, bint str_mode=False):
        self.scr = screen
        self.use_utf8 = True
        self.str_mode = str_mode
        self.reset()

    def reset(self):
        """Back to the ground state (pyte re-creates its parser after a handler raised)."""
        self.state = S_GROUND
        self.uneed = 0
        self.np = 0
        self.osclen = 0

    @property
    def screen(self):
        return self.scr

    def select_other_charset(self, code):
        if code == "@":
            self.use_utf8 = False
            self.uneed = 0
        elif code in ("G", "8"):
            self.use_utf8 = True

    def feed(self, data):
        """Feed bytes (or any contiguous buffer, or str encoded to UTF-8) through the fused parser."""
        cdef const unsigned char* p
        cdef Py_ssize_t n
        cdef const unsigned char[::1] mv
        if type(data) is str:
            try:  # the str's own UTF-8 (no copy at all for ASCII)
                p = <const unsigned char*>PyUnicode_AsUTF8AndSize(data, &n)
            except UnicodeEncodeError:  # lone surrogates: encoded as pyte's decoder would have seen them
                data = (<str>data).encode("utf-8", "surrogatepass")
                p = <const unsigned char*>PyBytes_AS_STRING(data)
                n = PyBytes_GET_SIZE(data)
        elif type(data) is bytes:  # what a pty read returns: no buffer protocol round trip
            p = <const unsigned char*>PyBytes_AS_STRING(data)
            n = PyBytes_GET_SIZE(data)
        else:
            if isinstance(data, str):
                data = (<str>data).encode("utf-8", "surrogatepass")
            mv = data
            n = mv.shape[0]
            if n == 0:
                return
            p = &mv[0]
        if n == 0:
            return
        cdef Screen s = self.scr
        if s.hist_on:
            s.before_event("feed")
        s.feeding += 1
        try:
            self._feed(p, n)
        except BaseException:
            self.reset()
            raise
        finally:
            s.feeding -= 1
            if s.feeding == 0 and s.pending_da:
                s._flush_da()
            if (s.main_g.cells if s.in_alt else s.alt_g.cells) != NULL:  # a hidden grid, not packed yet
                s.switch_feeds += 1
                if s.switch_feeds >= FREEZE_AFTER:
                    s._freeze_hidden()
            if s.hist_on:
                s.after_event("feed")

    cdef int _feed(self, const unsigned char* p, Py_ssize_t n) except -1:
        cdef Py_ssize_t i = 0, j
        cdef unsigned char b
        cdef uint32_t cp
        cdef Screen s = self.scr
        cdef bint decode = self.use_utf8 or self.str_mode
        while i < n:
            b = p[i]
            if self.uneed:
                # inside a multi-byte UTF-8 sequence
                if self.ulo <= b <= self.uhi:
                    self.ucp = (self.ucp << 6) | (b & 0x3F)
                    self.ulo = 0x80
                    self.uhi = 0xBF
                    self.uneed -= 1
                    i += 1
                    if self.uneed == 0:
                        self._cp(self.ucp)
                        decode = self.use_utf8 or self.str_mode
                    continue
                self.uneed = 0
                self._cp(0xFFFD)
                decode = self.use_utf8 or self.str_mode
                continue  # reprocess b
            if self.state == S_GROUND:
                if 0x20 <= b < 0x7F:
                    j = i + 1
                    while j < n and 0x20 <= p[j] < 0x7F:
                        j += 1
                    if s.tr_active or s.m_irm:
                        while i < j:
                            s.draw_cp(s.tr[p[i]] if s.tr_active else p[i])
                            i += 1
                    else:
                        s.draw_ascii(p + i, j - i)
                        i = j
                    continue
                if b == 0x1B and i + 1 < n and p[i + 1] == 0x5B:
                    i += 2
                    self._csi_start()
                    continue
                if b < 0x20:
                    i += 1
                    self._c0(b)
                    continue
                if decode and 0xE0 <= b <= 0xEF and i + 2 < n:
                    # whole 3-byte UTF-8 char in the buffer (box drawing, CJK...): decode inline
                    j = p[i + 1]
                    if (0xA0 if b == 0xE0 else 0x80) <= j <= (0x9F if b == 0xED else 0xBF) and 0x80 <= p[i + 2] <= 0xBF:
                        cp = ((b & 0x0F) << 12) | ((j & 0x3F) << 6) | (p[i + 2] & 0x3F)
                        i += 3
                        if s.tr_active or cp == 0x9B or cp == 0x9D or cp < 0xA0:
                            self._cp(cp)
                            continue
                        s.draw_cp(cp)
                        # a run of the same narrow character (`────`): one fill instead of a call per cell
                        j = i
                        while j + 2 < n and p[j] == b and p[j + 1] == p[i - 2] and p[j + 2] == p[i - 1]:
                            j += 3
                        if j > i and not s.m_irm and wclass(cp) == W_ONE:
                            s.draw_repeat(cp, (j - i) // 3)
                            i = j
                        continue
                if b == 0x7F:
                    i += 1
                    continue
            elif self.state == S_CSI and b < 0x80:
                # inline CSI scanner: parameters and the final byte without per-byte calls
                while i < n:
                    b = p[i]
                    if 0x30 <= b <= 0x39:
                        if self.cur < 100000:
                            self.cur = self.cur * 10 + (b - 0x30)
                        self.have_cur = True
                        i += 1
                    elif b == 0x3B:
                        if self.np < MAXP:
                            self.params[self.np] = self.cur if self.cur < 9999 else 9999
                            self.sub[self.np] = self.next_sub
                            self.np += 1
                        self.cur = 0
                        self.have_cur = False
                        self.next_sub = False
                        i += 1
                    elif 0x40 <= b <= 0x7E:
                        i += 1
                        self._push_param()
                        self.state = S_GROUND
                        if not self.bad:
                            self._csi_dispatch(b)
                        break
                    elif b < 0x80:
                        i += 1
                        self._csi_byte(b)
                        break
                    else:
                        break
                continue
            elif b < 0x80:
                i += 1
                self._cp(b)
                decode = self.use_utf8 or self.str_mode
                continue
            # b >= 0x80
            i += 1
            if not decode:
                self._cp(b)
                decode = self.use_utf8 or self.str_mode
                continue
            if 0xC2 <= b <= 0xDF:
                self.ucp = b & 0x1F
                self.uneed = 1
                self.ulo = 0x80
                self.uhi = 0xBF
            elif 0xE0 <= b <= 0xEF:
                self.ucp = b & 0x0F
                self.uneed = 2
                self.ulo = 0xA0 if b == 0xE0 else 0x80
                self.uhi = 0x9F if b == 0xED else 0xBF
            elif 0xF0 <= b <= 0xF4:
                self.ucp = b & 0x07
                self.uneed = 3
                self.ulo = 0x90 if b == 0xF0 else 0x80
                self.uhi = 0x8F if b == 0xF4 else 0xBF
            else:
                self._cp(0xFFFD)
                decode = self.use_utf8 or self.str_mode
        return 0

    cdef int _c0(self, unsigned char b) except -1:
        """C0 control in the ground state (pyte's `basic` table)."""
        cdef Screen s = self.scr
        if b == 0x1B:
            self.state = S_ESC
        elif b == 0x0A or b == 0x0B or b == 0x0C:
            s._linefeed()
        elif b == 0x0D:
            s._cursor.x = 0
        elif b == 0x08:
            s._cursor_back(1)
        elif b == 0x09:
            s._tab()
        elif b == 0x07:
            if not self._own_hooks():  # the native bell does nothing
                s.bell()
        elif b == 0x0E:
            if not self.use_utf8:
                s.charset = 1
        elif b == 0x0F:
            if not self.use_utf8:
                s.charset = 0

    cdef void _csi_start(self) noexcept:
        self.state = S_CSI
        self.np = 0
        self.cur = 0
        self.have_cur = False
        self.next_sub = False
        self.priv = 0
        self.inter = 0
        self.bad = False

    cdef int _cp(self, uint32_t cp) except -1:
        """One decoded character outside the ASCII-run fast path, dispatched by parser state."""
        cdef Screen s = self.scr
        cdef int st = self.state
        if st == S_GROUND:
            if cp < 0x20:
                self._c0(cp)
            elif cp == 0x9B:
                self._csi_start()
            elif cp == 0x9D:
                self.state = S_OSC
                self.osclen = 0
            elif cp == 0x7F:
                pass
            else:
                if s.tr_active and cp < 256:
                    cp = s.tr[cp]
                s.draw_cp(cp)
        elif st == S_ESC:
            self._esc(cp)
        elif st == S_CSI:
            self._csi_byte(cp)
        elif st == S_CSI_SKIP1:
            self.state = S_GROUND
        elif st == S_OSC:
            if cp == 0x07 or cp == 0x9C:
                self._osc_end()
            elif cp == 0x1B:
                self.state = S_OSC_ESC
            elif cp == 0x18 or cp == 0x1A:
                self.state = S_GROUND
            else:
                self._osc_put(cp)
        elif st == S_OSC_ESC:
            # as pyte: `ESC \\` is ST, any other `ESC x` is kept in the payload (never printed)
            if cp == 0x5C:
                self._osc_end()
            else:
                self.state = S_OSC
                self._osc_put(0x1B)
                self._osc_put(cp)
        elif st == S_STR:
            if cp == 0x1B:
                self.state = S_STR_ESC
            elif cp == 0x9C or cp == 0x18 or cp == 0x1A:
                self.state = S_GROUND
        elif st == S_STR_ESC:
            # only ST (`ESC \\`, C1 ST) ends a control string; an ESC inside the payload is payload
            if cp == 0x5C:
                self.state = S_GROUND
            elif cp != 0x1B:
                self.state = S_STR
        elif st == S_ESC_SHARP:
            self.state = S_GROUND
            if cp == 0x38:
                s.alignment_display()
        elif st == S_ESC_PERCENT:
            self.state = S_GROUND
            if cp == 0x40:
                self.use_utf8 = False
            elif cp == 0x47 or cp == 0x38:
                self.use_utf8 = True
        elif st == S_ESC_CHARSET:
            self.state = S_GROUND
            if not self.use_utf8:
                s.define_charset(chr(cp), "(" if self.charset_mode == 0x28 else ")")
        elif st == S_ESC_SKIP:
            self.state = S_GROUND

    cdef int _esc(self, uint32_t cp) except -1:
        cdef Screen s = self.scr
        self.state = S_GROUND
        if cp == 0x5B:
            self._csi_start()
        elif cp == 0x5D:
            self.state = S_OSC
            self.osclen = 0
        elif cp == 0x50 or cp == 0x5F or cp == 0x5E or cp == 0x58:
            self.state = S_STR
        elif cp == 0x23:
            self.state = S_ESC_SHARP
        elif cp == 0x25:
            self.state = S_ESC_PERCENT
        elif cp == 0x28 or cp == 0x29:
            self.state = S_ESC_CHARSET
            self.charset_mode = cp
        elif 0x20 <= cp <= 0x2F:
            self.state = S_ESC_SKIP
        elif cp == 0x1B:
            self.state = S_ESC
        elif cp == 0x63:
            s.reset()
        elif cp == 0x44:
            s._index()
        elif cp == 0x45:
            s._linefeed()
        elif cp == 0x4D:
            s._reverse_index()
        elif cp == 0x48:
            s.tabstops.add(s._cursor.x)
        elif cp == 0x37:
            s._save_cursor()
        elif cp == 0x38:
            s._restore_cursor()

    cdef void _push_param(self) noexcept:
        if self.np < MAXP:
            self.params[self.np] = self.cur if self.cur < 9999 else 9999
            self.sub[self.np] = self.next_sub
            self.np += 1
        self.cur = 0
        self.have_cur = False

    cdef int _csi_byte(self, uint32_t cp) except -1:
        cdef Screen s = self.scr
        if 0x30 <= cp <= 0x39:
            if self.cur < 100000:
                self.cur = self.cur * 10 + (cp - 0x30)
            self.have_cur = True
        elif cp == 0x3B:
            self._push_param()
            self.next_sub = False
        elif cp == 0x3A:
            self._push_param()
            self.next_sub = True
        elif cp == 0x3F:
            if self.priv == 0:
                self.priv = cp
        elif cp == 0x3C or cp == 0x3D or cp == 0x3E:
            self.priv = cp
        elif 0x20 <= cp <= 0x2F:
            self.inter = cp
        elif 0x40 <= cp <= 0x7E:
            self._push_param()
            self.state = S_GROUND
            if not self.bad:
                self._csi_dispatch(cp)
        elif cp == 0x1B:
            self.state = S_ESC
        elif cp == 0x18 or cp == 0x1A:
            self.state = S_GROUND
        elif cp == 0x07:
            if not self._own_hooks():
                s.bell()
        elif cp == 0x08:
            s._cursor_back(1)
        elif cp == 0x09:
            s._tab()
        elif cp == 0x0A or cp == 0x0B or cp == 0x0C:
            s._linefeed()
        elif cp == 0x0D:
            s._cursor.x = 0
        elif cp >= 0x80:
            # pyte takes it as an (unknown) final byte and xterm abandons the sequence (CASE_GROUND_STATE):
            # either way the CSI ends here, nothing is dispatched and the character is not drawn
            self.state = S_GROUND

    cdef int _csi_dispatch(self, uint32_t f) except -1:
        cdef Screen s = self.scr
        cdef int* p = self.params
        cdef int n = self.np
        cdef int i
        cdef bint has_sub = False
        for i in range(n):
            if self.sub[i]:
                has_sub = True
                break
        if self.inter:
            return 0
        if f == 0x6D and self.priv == 0:     # m: SGR (colon sub-parameters allowed)
            s._sgr(p, self.sub, n)
            return 0
        if has_sub:
            return 0
        if self.priv == 0x3F:
            if f == 0x68 or f == 0x6C:
                if n == 1:
                    s._set_mode1(p[0], True, f == 0x68)
                else:
                    s._set_modes([p[i] for i in range(n)], True, f == 0x68)
            elif f == 0x4A:
                s._erase_in_display(p[0])
            elif f == 0x4B:
                s._erase_in_line(p[0])
            elif f == 0x75:
                if s.kitty_reply:
                    s.write_process_input("\x1b[?0u")
            return 0
        if self.priv == 0x3E:
            if f == 0x71 and p[0] == 0:
                s.write_process_input("\x1bP>|" + s.xtversion + "\x1b\\")
            return 0
        if self.priv:
            return 0
        if f == 0x48 or f == 0x66:          # H f
            s._cursor_position(p[0], p[1] if n > 1 else 0)
        elif f == 0x4B:                     # K
            s._erase_in_line(p[0])
        elif f == 0x47 or f == 0x60:        # G `
            s._cursor_to_column(p[0])
        elif f == 0x41:
            s._cursor_up(p[0])
        elif f == 0x42 or f == 0x65:
            s._cursor_down(p[0])
        elif f == 0x43 or f == 0x61:
            s._cursor_forward(p[0])
        elif f == 0x44:
            s._cursor_back(p[0])
        elif f == 0x45:
            s._cursor_down(p[0])
            s._cursor.x = 0
        elif f == 0x46:
            s._cursor_up(p[0])
            s._cursor.x = 0
        elif f == 0x4A:
            s._erase_in_display(p[0])
        elif f == 0x64:
            s._cursor_to_line(p[0])
        elif f == 0x40:
            s._insert_characters(p[0])
        elif f == 0x4C:
            s._insert_lines(p[0])
        elif f == 0x4D:
            s._delete_lines(p[0])
        elif f == 0x50:
            s._delete_characters(p[0])
        elif f == 0x58:
            s._erase_characters(p[0])
        elif f == 0x68 or f == 0x6C:
            if n == 1:
                s._set_mode1(p[0], False, f == 0x68)
            else:
                s._set_modes([p[i] for i in range(n)], False, f == 0x68)
        elif f == 0x72:
            if n == 1:
                s.set_margins(p[0])
            else:
                s.set_margins(p[0], p[1])
        elif f == 0x63:
            if p[0] == 0:
                s.report_device_attributes(0)
        elif f == 0x6E:
            s.report_device_status(p[0])
        elif f == 0x67:
            s.clear_tab_stop(p[0])

    cdef inline bint _own_hooks(self):
        """True if the screen's title/icon/bell hooks are the native ones (not overridden on a subclass or the
        instance), so the parser can apply them in C."""
        cdef Screen s = self.scr
        return type(s) is Screen and not PyObject_GenericGetDict(s, NULL)

    cdef int _osc_end(self) except -1:
        cdef Screen s = self.scr
        self.state = S_GROUND
        cdef int i = 0, code = 0
        cdef bint digits = False
        while i < self.osclen and 0x30 <= self.osc[i] <= 0x39:
            if code < 100000:
                code = code * 10 + (self.osc[i] - 0x30)
            digits = True
            i += 1
        if not digits:
            return 0
        if i < self.osclen and self.osc[i] == 0x3B:
            i += 1
        elif i < self.osclen:
            return 0
        if code != 0 and code != 1 and code != 2 and code != 7501:
            return 0
        param = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, self.osc + i, self.osclen - i)
        if code != 7501 and self._own_hooks():  # titles with the native methods: applied here, no Python call
            if code == 0 or code == 1:
                s.icon_name = param
            if code == 0 or code == 2:
                s.title = param
                if s.on_title is not None:
                    s.on_title(param)
            return 0
        if code == 0 or code == 1:
            s.set_icon_name(param)
        if code == 0 or code == 2:
            s.set_title(param)
        if code == 7501:
            s._program_status(param)
