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
import weakref
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


# (screen class, events) -> no event method overridden; classes are not expected to be re-patched after use.
_CLASS_OK: weakref.WeakKeyDictionary[type, dict[frozenset, bool]] = weakref.WeakKeyDictionary()


def fast_path_ok(stream: _ps.Stream, screen: Any) -> bool:
    """True if `screen` can be driven by the fused parser with the same observable result."""
    if _core.native is None or not isinstance(screen, _core.native.Screen):
        return False
    cls = type(screen)
    events = stream.events
    by_events = _CLASS_OK.setdefault(cls, {})
    ok = by_events.get(events)
    if ok is None:
        base = _core.native.Screen
        ok = by_events[events] = all(
            getattr(cls, ev, None) is getattr(base, ev, None) for ev in events if ev not in _HOOKS
        )
    inst = getattr(screen, "__dict__", None)
    return ok and not (inst and any(ev in inst for ev in events if ev not in _HOOKS))


_TABLE_NAMES = frozenset({"basic", "escape", "sharp", "csi"})
# Streams currently on the fast path; told when any dispatch table changes (rare), so `feed` never compares them.
_FAST: weakref.WeakSet[Stream] = weakref.WeakSet()


def _tables_changed() -> None:
    for stream in list(_FAST):
        stream._recheck_tables()


class _Table(dict):
    """A default dispatch table (a copy of pyte's) that tells the fast streams when it is edited in place."""

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        _tables_changed()

    def __delitem__(self, key: Any) -> None:
        super().__delitem__(key)
        _tables_changed()

    def _edit(name: str) -> Any:  # type: ignore[misc]
        def method(self: _Table, *args: Any, **kwargs: Any) -> Any:
            result = getattr(dict, name)(self, *args, **kwargs)
            _tables_changed()
            return result

        method.__name__ = name
        return method

    update = _edit("update")
    pop = _edit("pop")
    popitem = _edit("popitem")
    clear = _edit("clear")
    setdefault = _edit("setdefault")
    __ior__ = _edit("__ior__")
    del _edit


class _StreamType(type):
    """Assigning a dispatch table on a Stream class (pyte's tests monkeypatch `Stream.escape`) is seen at once."""

    def __setattr__(cls, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name in _TABLE_NAMES:
            _tables_changed()

    def __delattr__(cls, name: str) -> None:
        super().__delattr__(name)
        if name in _TABLE_NAMES:
            _tables_changed()


class Stream(_ps.Stream, metaclass=_StreamType):
    """pyte's `Stream` (str input) with the native fast path when the screen allows it.

    Whether the fast path applies is decided when a screen is attached and again only when a dispatch table
    changes (class or instance assignment, or an in-place edit of a default table): on the fast path
    `stream.feed` is the native parser's own `feed`, so a call costs what `Terminal.feed` costs.
    """

    basic = _Table(_ps.Stream.basic)
    escape = _Table(_ps.Stream.escape)
    sharp = _Table(_ps.Stream.sharp)
    csi = _Table(_ps.Stream.csi)

    _bytes = False

    def __init__(self, screen: Any = None, strict: bool = True) -> None:
        self._native: Any = None  # the compiled Parser when fast_path_ok
        self._use_utf8 = True
        self._filter = _CompatFilter()
        super().__init__(screen, strict)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if name in _TABLE_NAMES:
            _tables_changed()

    @property
    def use_utf8(self) -> bool:
        return self._native.use_utf8 if self._native is not None else self._use_utf8

    @use_utf8.setter
    def use_utf8(self, value: bool) -> None:
        self._use_utf8 = value
        if getattr(self, "_native", None) is not None:
            self._native.use_utf8 = value

    def attach(self, screen: Any) -> None:
        self._leave_fast()
        self._going_fast = fast_path_ok(self, screen) and self._tables_default()
        super().attach(screen)
        if self._going_fast and _core.native is not None:
            self._going_fast = False
            self._native = _core.native.Parser(screen, str_mode=not self._bytes)
            self._native.use_utf8 = self._use_utf8
            if type(self).feed in (Stream.feed, ByteStream.feed):  # a subclass's own feed stays in charge
                object.__setattr__(self, "feed", self._native.feed)
            _FAST.add(self)

    def detach(self, screen: Any) -> None:
        super().detach(screen)
        if self.listener is None:
            self._leave_fast()

    def _initialize_parser(self) -> None:
        if getattr(self, "_going_fast", False):
            self._parser = None  # pyte's generator parser is built only if the fast path is ever left
            return
        super()._initialize_parser()

    def _leave_fast(self) -> None:
        native = getattr(self, "_native", None)
        if native is None:
            return
        self._use_utf8 = native.use_utf8
        self.__dict__.pop("feed", None)
        object.__setattr__(self, "_native", None)
        _FAST.discard(self)
        if self.listener is not None:
            super()._initialize_parser()

    def _recheck_tables(self) -> None:
        if not self._tables_default():
            self._leave_fast()  # tables were patched: pyte's parser from now on

    def _tables_default(self) -> bool:
        return (self.basic, self.escape, self.sharp, self.csi) == _DEFAULT_TABLES

    def feed(self, data: str) -> None:
        if self._native is not None:
            self._native.feed(data)
            return
        super().feed(self._filter.feed(data, self.escape, self.csi))


class ByteStream(Stream):
    """pyte's `ByteStream`: bytes in, decoded as UTF-8 (or Latin-1 after `ESC % @`)."""

    _bytes = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.utf8_decoder = codecs.getincrementaldecoder("utf-8")("replace")
        super().__init__(*args, **kwargs)

    def feed(self, data: bytes) -> None:  # type: ignore[override]
        if self._native is not None:
            self._native.feed(data)
            return
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
