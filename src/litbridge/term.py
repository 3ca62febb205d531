"""The terminal as a session sees it: PTY bytes in; screen text, changed rows and side-channel events out.

`Terminal` wraps the emulator (the compiled core in `litbridge._core` when built, else real pyte via
`litbridge.pyte`) behind the small surface the session and drivers need. It knows nothing about CLIs.

Contract (stable; the compiled implementation must keep it):
  Terminal(columns=GRID[0], lines=GRID[1], *, on_reply, on_status, on_title, on_frame_end, kitty_reply=False)
  feed(data: bytes)              feed raw PTY output; replies go to on_reply(bytes) in order
  display -> ScreenRows          every row, padded to `columns` (pyte semantics); one shared list per
                                 generation (readers of a frame share it: never mutate it); `.stripped`
                                 holds the same rows right-stripped
  generation -> int              changes whenever a row's text (or a wrap flag) changed since it was read
  line(y) -> str                 one row
  changed_rows() -> list[(y, text)]   rows whose text changed since the previous call
  wrapped(y) -> bool             row y soft-wrapped into row y+1
  logical_lines() -> ScreenRows  rows joined where soft-wrapped, right-stripped (shared as `display`)
  cursor -> (x, y, hidden)       title -> str
  modes -> dict[str, bool]       bracketed_paste, sync, alternate, mouse, focus, cursor_hidden
  in_sync_frame -> bool          inside ?2026h ... ?2026l
  program_status -> str | None   raw payload of the last OSC 7501 report (on_status(payload) for each;
                                 `litbridge.drivers.osc7501` reads it); the `?` probe is answered
  snapshot() -> dict             {"rows": [...], "cursor": [x, y], ...} for dump
  ansi_repaint() -> bytes        clear + home + every row with attributes + cursor (attach initial paint)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import pyte as _pyte

from litbridge.protocol.spec import GRID

if TYPE_CHECKING:
    from litbridge._core import screen as _core_screen

_OSC7501_RE = re.compile(rb"\x1b\]7501;([^\x07\x1b]*)(?:\x07|\x1b\\)")
ReplyCallback = Callable[[bytes], None]
StatusCallback = Callable[[str], None]
TitleCallback = Callable[[str], None]
FrameCallback = Callable[[], None]


class ScreenRows(list[str]):
    """One frame's rows, shared by every reader of the frame (the rules read a screen many times per frame: the
    rows are built once per change, not per call). Never mutate it. `stripped` is the same rows right-stripped
    (the list itself when they already are), so rules that strip rows get them without a pass of their own."""

    __slots__ = ("_stripped", "text")
    _stripped: ScreenRows | None
    text: str
    """`"\\n".join(self)`, set by the first reader that needs it (`drivers.screen_ops.joined`)."""

    @property
    def stripped(self) -> ScreenRows:
        """The rows right-stripped: another ScreenRows, or these very rows when they are stripped already. Those
        are kept as None, not as a reference to the list itself: a list that refers to itself is a cycle, freed
        only by the garbage collector, and every frame read made one (at 1000 sessions, young collections found
        up to eleven thousand such objects and took up to 34 ms)."""
        s = self._stripped
        return self if s is None else s

    @stripped.setter
    def stripped(self, rows: ScreenRows) -> None:
        self._stripped = None if rows is self else rows


def _shared(rows: list[str], stripped: list[str] | None = None) -> ScreenRows:
    out = ScreenRows(rows)
    if stripped is None:
        out.stripped = out
    else:
        own = ScreenRows(stripped)
        own.stripped = own
        out.stripped = own
    return out


class _PyteScreen(_pyte.Screen):
    """pyte Screen that forwards replies and titles; the fallback when the compiled core is missing."""

    def __init__(self, columns: int, lines: int, term: PyteTerminal) -> None:
        super().__init__(columns, lines)
        self._term = term

    def write_process_input(self, data: str) -> None:
        if self._term.on_reply is not None:
            self._term.on_reply(data.encode("utf-8"))

    def set_title(self, param: str) -> None:
        super().set_title(param)
        if self._term.on_title is not None:
            self._term.on_title(param)


class _ScreenReaders:
    """What both implementations read the same way off a pyte-shaped `self.screen` (private modes are stored
    `mode << 5`, as pyte does). Subclasses say whether the alternate screen and sync output exist."""

    screen: _pyte.Screen | _core_screen.Screen

    @property
    def cursor(self) -> tuple[int, int, bool]:
        c = self.screen.cursor
        return (c.x, c.y, c.hidden)

    @property
    def title(self) -> str:
        return self.screen.title

    def _alternate(self) -> bool:
        return False

    def _sync(self) -> bool:
        return False

    @property
    def focus_reporting(self) -> bool:
        """DECSET 1004 is on; the session asks after every read, so this is one set lookup, not `modes`."""
        return 1004 << 5 in self.screen.mode

    @property
    def bracketed_paste(self) -> bool:
        """DECSET 2004 is on (the drivers ask before typing; the engine while it waits for input)."""
        return 2004 << 5 in self.screen.mode

    @property
    def modes(self) -> dict[str, bool]:
        m = self.screen.mode
        return {
            "bracketed_paste": self.bracketed_paste,
            "sync": self._sync(),
            "alternate": self._alternate(),
            "mouse": any(n << 5 in m for n in (1000, 1002, 1003, 1006)),
            "focus": self.focus_reporting,
            "cursor_hidden": self.screen.cursor.hidden,
        }


class PyteTerminal(_ScreenReaders):
    """Fallback `Terminal` over real pyte: no alternate screen, no wrap flags; OSC 7501 cut from the bytes."""

    implementation = "pyte"
    screen: _PyteScreen

    def __init__(
        self,
        columns: int = GRID[0],
        lines: int = GRID[1],
        *,
        on_reply: ReplyCallback | None = None,
        on_status: StatusCallback | None = None,
        on_title: TitleCallback | None = None,
        on_frame_end: FrameCallback | None = None,
        kitty_reply: bool = False,
    ) -> None:
        self.columns, self.lines = columns, lines
        self.on_reply, self.on_status, self.on_title, self.on_frame_end = (
            on_reply,
            on_status,
            on_title,
            on_frame_end,
        )
        self.kitty_reply = kitty_reply
        self.screen = _PyteScreen(columns, lines, self)
        self.stream = _pyte.ByteStream(self.screen)
        self._last = [""] * lines
        self.program_status: str | None = None
        self._osc_carry = b""
        self._gen = 0
        self._fed = True  # something may have changed since the frame below was taken
        self._rows = _shared([])
        self._logical: ScreenRows | None = None

    def feed(self, data: bytes) -> None:
        self._fed = True
        self.stream.feed(data)
        if self._osc_carry or b"\x1b]7501;" in data or b"\x1b" in data[-8:]:
            self._scan_osc7501(data)

    def _scan_osc7501(self, data: bytes) -> None:
        """pyte drops OSC 7501: cut its payloads from the bytes (a sequence may span feeds), as the core does."""
        buf = self._osc_carry + data
        end = 0
        for m in _OSC7501_RE.finditer(buf):
            end = m.end()
            payload = m.group(1).decode("utf-8", "replace")
            if payload == "?":
                if self.on_reply is not None:
                    self.on_reply(b"\x1b]7501;?\x07")
                continue
            self.program_status = payload
            if self.on_status is not None:
                self.on_status(payload)
        rest = buf[end:]
        start = rest.rfind(b"\x1b")
        tail = rest[start:] if start >= 0 else b""
        head = tail[2:7]
        unfinished = tail == b"\x1b" or (
            tail.startswith(b"\x1b]") and (b"7501;".startswith(head) or head == b"7501;") and len(tail) < 4096
        )
        self._osc_carry = tail if unfinished else b""

    def _frame(self) -> ScreenRows:
        """The current frame, re-read from pyte only after a feed; a new generation only if it differs."""
        if self._fed:
            self._fed = False
            rows = self.screen.display
            if rows != self._rows:
                old, olds = self._rows, self._rows.stripped
                same = len(old) == len(rows)
                stripped = [olds[y] if same and r == old[y] else r.rstrip() for y, r in enumerate(rows)]
                self._rows = _shared(rows, stripped)
                self._logical = None
                self._gen += 1
        return self._rows

    @property
    def generation(self) -> int:
        self._frame()
        return self._gen

    @property
    def display(self) -> ScreenRows:
        return self._frame()

    def line(self, y: int) -> str:
        return self._frame()[y]

    def changed_rows(self) -> list[tuple[int, str]]:
        out = []
        display = self.screen.display
        for y in sorted(self.screen.dirty):
            if 0 <= y < self.lines and display[y] != self._last[y]:
                self._last[y] = display[y]
                out.append((y, display[y]))
        self.screen.dirty.clear()
        return out

    def wrapped(self, y: int) -> bool:
        return False

    def logical_lines(self) -> ScreenRows:
        rows = self._frame()
        if self._logical is None:
            self._logical = _shared(rows.stripped)
        return self._logical

    @property
    def in_sync_frame(self) -> bool:
        return False

    def snapshot(self) -> dict:
        x, y, hidden = self.cursor
        return {"rows": [r.rstrip() for r in self.screen.display], "cursor": [x, y], "cursor_hidden": hidden}

    def ansi_repaint(self) -> bytes:
        rows = "\r\n".join(r.rstrip() for r in self.screen.display)
        x, y, _ = self.cursor
        return f"\x1b[0m\x1b[2J\x1b[H{rows}\x1b[{y + 1};{x + 1}H".encode()


class NativeTerminal(_ScreenReaders):
    """`Terminal` over the compiled core: alternate screen, replies, OSC 7501, wrap flags, cached rows."""

    implementation = "native"
    screen: _core_screen.Screen

    def __init__(
        self,
        columns: int = GRID[0],
        lines: int = GRID[1],
        *,
        on_reply: ReplyCallback | None = None,
        on_status: StatusCallback | None = None,
        on_title: TitleCallback | None = None,
        on_frame_end: FrameCallback | None = None,
        kitty_reply: bool = False,
    ) -> None:
        from litbridge._core import native as _native

        assert _native is not None, "compiled core unavailable (not built, or LITBRIDGE_NO_EXTENSIONS=1)"
        self.columns, self.lines = columns, lines
        self.screen = _native.Screen(columns, lines)
        self._parser = _native.Parser(self.screen)
        # the C method itself: no Python frame per pty read (it takes all that the `feed` method it shadows does)
        self.feed = self._parser.feed  # type: ignore[method-assign]
        self.screen.kitty_reply = kitty_reply
        self._gen = -1
        self._rows = _shared([])
        self._logical_gen = -1
        self._logical = _shared([])
        self.on_reply, self.on_status, self.on_title, self.on_frame_end = (
            on_reply,
            on_status,
            on_title,
            on_frame_end,
        )

    # Callbacks live on the native screen so the C parser can call them without a Python subclass.
    on_reply = property(
        lambda self: self.screen.on_reply, lambda self, v: setattr(self.screen, "on_reply", v)
    )
    on_status = property(
        lambda self: self.screen.on_status, lambda self, v: setattr(self.screen, "on_status", v)
    )
    on_title = property(
        lambda self: self.screen.on_title, lambda self, v: setattr(self.screen, "on_title", v)
    )
    on_frame_end = property(
        lambda self: self.screen.on_frame_end, lambda self, v: setattr(self.screen, "on_frame_end", v)
    )
    kitty_reply = property(
        lambda self: self.screen.kitty_reply, lambda self, v: setattr(self.screen, "kitty_reply", v)
    )

    def feed(self, data: bytes) -> None:
        self._parser.feed(data)

    @property
    def generation(self) -> int:
        return self.screen.generation

    @property
    def display(self) -> ScreenRows:
        gen = self.screen.generation
        if gen != self._gen:
            self._rows = _shared(self.screen.rows(), self.screen.stripped_rows())
            self._gen = gen
        return self._rows

    def line(self, y: int) -> str:
        return self.screen.line(y)

    def changed_rows(self) -> list[tuple[int, str]]:
        return self.screen.changed_rows()

    def wrapped(self, y: int) -> bool:
        return self.screen.wrapped(y)

    def logical_lines(self) -> ScreenRows:
        gen = self.screen.generation
        if gen != self._logical_gen:
            logical = self.screen.logical_rows()
            if logical is self.screen.stripped_rows():  # nothing soft-wrapped: the frame's own stripped rows
                self._logical = self.display.stripped
            else:
                self._logical = _shared(logical)
            self._logical_gen = gen
        return self._logical

    @property
    def program_status(self) -> str | None:
        return self.screen.program_status

    def _alternate(self) -> bool:
        return bool(self.screen.alternate)

    def _sync(self) -> bool:
        return self.screen.in_sync_frame

    @property
    def in_sync_frame(self) -> bool:
        return self.screen.in_sync_frame

    def snapshot(self) -> dict:
        return self.screen.snapshot()

    def ansi_repaint(self) -> bytes:
        return self.screen.ansi_repaint()


def _pick() -> type:
    from litbridge import _core

    return NativeTerminal if _core.AVAILABLE else PyteTerminal


Terminal = _pick()
