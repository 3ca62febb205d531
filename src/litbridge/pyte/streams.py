"""pyte-compatible `Stream` / `ByteStream` that pick a dispatch mode per attached screen.

Fast path: a native `Screen` whose event methods are not overridden and default dispatch tables -> the
fused C parser (`litbridge._core`). Anything else (subclass overrides, handlers set on the instance,
monkeypatched tables, pure-Python screens) -> pyte's own per-event parser, calling the screen's methods with
pyte's argument shapes; a small filter in front of it consumes private/intermediate CSI sequences and
DCS/APC/PM/SOS strings whole, as the fast path does (pyte would half-execute or print them).
"""

from __future__ import annotations

import codecs
import re
from typing import Any

from pyte import streams as _ps

from litbridge import _core

__all__ = ["ByteStream", "Stream"]

_DEFAULT_TABLES = (
    dict(_ps.Stream.basic),
    dict(_ps.Stream.escape),
    dict(_ps.Stream.sharp),
    dict(_ps.Stream.csi),
)
# Rare hooks the fast path calls back through Python, so overriding them keeps the fast path.
_HOOKS = frozenset({"set_title", "set_icon_name", "bell"})


_SPECIAL = re.compile("[\x1b\x9b]")
_STRING_INTRO = frozenset("PX^_")


class _CompatFilter:
    """Removes sequences pyte mis-parses before pyte's per-event parser sees them (state kept across feeds).

    Dropped whole: CSI with a `<`/`=`/`>` marker, `:` sub-parameters or intermediate bytes, and
    DCS/SOS/PM/APC strings up to ST. An undecided tail (a CSI still in its parameters) is held back until
    its final byte arrives; pyte dispatches nothing for those characters either, so holding them back is
    unobservable except for controls embedded in the parameters, which are passed on at once.
    """

    def __init__(self) -> None:
        self.state = 0  # 0 text, 1 after ESC, 2 in CSI, 3 in string, 4 ESC inside string
        self.pending: list[str] = []
        self.marked = False

    def feed(self, data: str, escape: Any = (), csi: Any = ()) -> str:
        """Filter `data`; `escape`/`csi` are the stream's tables (entries there are never dropped)."""
        out: list[str] = []
        i, n = 0, len(data)
        while i < n:
            st = self.state
            if st == 0:
                m = _SPECIAL.search(data, i)
                if m is None:
                    out.append(data[i:])
                    break
                out.append(data[i : m.start()])
                ch = data[m.start()]
                i = m.end()
                if ch == "\x9b":
                    self._csi_start(ch)
                else:
                    self.state = 1
                    self.pending = [ch]
                continue
            ch = data[i]
            i += 1
            if st == 1:
                if ch == "[":
                    self._csi_start("".join(self.pending) + ch)
                elif ch in _STRING_INTRO and ch not in escape:
                    self.state = 3
                    self.pending = []
                else:
                    out.append("".join(self.pending))
                    out.append(ch)
                    self.pending = []
                    self.state = 0
            elif st == 2:
                o = ord(ch)
                if 0x30 <= o <= 0x39 or ch == ";" or ch == "?":
                    self.pending.append(ch)
                elif (ch in "<=>:" or 0x20 <= o <= 0x2F) and ch not in csi:
                    self.marked = True
                    self.pending.append(ch)
                elif 0x40 <= o <= 0x7E or ch in csi:
                    if not self.marked:
                        out.append("".join(self.pending))
                        out.append(ch)
                    self.pending = []
                    self.state = 0
                elif ch in "\x07\x08\t\n\x0b\x0c\r":
                    out.append(ch)  # pyte executes these inside a CSI
                elif ch == "\x1b" and self.marked:
                    self.state = 1
                    self.pending = [ch]
                else:
                    if not self.marked:
                        out.append("".join(self.pending))
                        out.append(ch)
                    self.pending = []
                    self.state = 0
            elif st == 3:
                if ch == "\x1b":
                    self.state = 4
                elif ch == "\x9c":
                    self.state = 0
            else:  # ESC inside a control string: only `ESC \` (ST) ends it, as on the fast path
                if ch == "\\":
                    self.state = 0
                elif ch != "\x1b":
                    self.state = 3
        return "".join(out)

    def _csi_start(self, intro: str) -> None:
        self.state = 2
        self.pending = [intro]
        self.marked = False


def fast_path_ok(stream: _ps.Stream, screen: Any) -> bool:
    """True if `screen` can be driven by the fused parser with the same observable result."""
    if not _core.AVAILABLE or not isinstance(screen, _core.native.Screen):
        return False
    base = _core.native.Screen
    cls = type(screen)
    inst = getattr(screen, "__dict__", {})
    for ev in stream.events:
        if ev in _HOOKS:
            continue
        if ev in inst or getattr(cls, ev, None) is not getattr(base, ev, None):
            return False
    return True


class Stream(_ps.Stream):
    """pyte's `Stream` (str input) with the native fast path when the screen allows it."""

    _bytes = False

    def __init__(self, screen: Any = None, strict: bool = True) -> None:
        self._native = None
        self._use_utf8 = True
        self._filter = _CompatFilter()
        super().__init__(screen, strict)

    @property
    def use_utf8(self) -> bool:
        return self._native.use_utf8 if self._native is not None else self._use_utf8

    @use_utf8.setter
    def use_utf8(self, value: bool) -> None:
        self._use_utf8 = value
        if getattr(self, "_native", None) is not None:
            self._native.use_utf8 = value

    def attach(self, screen: Any) -> None:
        super().attach(screen)
        self._native = None
        if fast_path_ok(self, screen):
            self._native = _core.native.Parser(screen, str_mode=not self._bytes)
            self._native.use_utf8 = self._use_utf8

    def detach(self, screen: Any) -> None:
        super().detach(screen)
        if self.listener is None:
            self._native = None

    def _tables_default(self) -> bool:
        return (self.basic, self.escape, self.sharp, self.csi) == _DEFAULT_TABLES

    def feed(self, data: str) -> None:
        if self._native is not None and self._tables_default():
            self._native.feed(data)
            return
        if self._native is not None:
            self._use_utf8 = self._native.use_utf8
            self._native = None  # tables were patched: pyte's parser from now on
        super().feed(self._filter.feed(data, self.escape, self.csi))


class ByteStream(Stream):
    """pyte's `ByteStream`: bytes in, decoded as UTF-8 (or Latin-1 after `ESC % @`)."""

    _bytes = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.utf8_decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def feed(self, data: bytes) -> None:  # type: ignore[override]
        if self._native is not None and self._tables_default():
            self._native.feed(bytes(data))
            return
        if self._native is not None:
            self._use_utf8 = self._native.use_utf8
            self._native = None
        if self.use_utf8:
            data_str = self.utf8_decoder.decode(data)
        else:
            data_str = "".join(map(chr, data))
        _ps.Stream.feed(self, self._filter.feed(data_str, self.escape, self.csi))

    def select_other_charset(self, code: str) -> None:
        if code == "@":
            self.use_utf8 = False
            self.utf8_decoder.reset()
        elif code in "G8":
            self.use_utf8 = True
