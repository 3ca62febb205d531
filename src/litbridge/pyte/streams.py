"""pyte-compatible `Stream` / `ByteStream` that pick a dispatch mode per attached screen.

Fast path: a native `Screen` whose event methods are not overridden and default dispatch tables -> the
fused C parser (`litbridge._core`). Anything else (subclass overrides, handlers set on the instance,
monkeypatched tables, pure-Python screens) -> pyte's own per-event parser, calling the screen's methods with
pyte's argument shapes. Deliberate fixes (alternate screen, private CSI, DCS...) apply on the fast path only.
"""

from __future__ import annotations

import codecs
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
        super().feed(data)


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
        _ps.Stream.feed(self, data_str)

    def select_other_charset(self, code: str) -> None:
        if code == "@":
            self.use_utf8 = False
            self.utf8_decoder.reset()
        elif code in "G8":
            self.use_utf8 = True
