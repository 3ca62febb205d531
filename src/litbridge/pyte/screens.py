"""pyte-compatible screens: the compiled `Screen` (and its `DiffScreen` alias) plus pyte's value types.

`Char`, `Margins`, `Savepoint`, `History`, `StaticDefaultDict`, `DebugEvent` and `DebugScreen` are pyte's own
(pure data / pure Python). `HistoryScreen` is the native screen plus history hooks fired from C on scroll; its
lines are packed 12-byte cells. Without the compiled core every class here is pyte's.
"""

from __future__ import annotations

import math
import warnings
from collections import deque
from typing import Any

from pyte import modes as _mo
from pyte import screens as _pscreens
from pyte import streams as _pstreams
from pyte.screens import (
    Char,
    DebugEvent,
    DebugScreen,
    History,
    Margins,
    Savepoint,
    StaticDefaultDict,
    wcwidth,
)

from litbridge import _core

__all__ = [
    "Char",
    "Cursor",
    "DebugEvent",
    "DebugScreen",
    "DiffScreen",
    "History",
    "HistoryScreen",
    "Margins",
    "Savepoint",
    "Screen",
    "StaticDefaultDict",
    "wcwidth",
]

if _core.AVAILABLE and _core.native is not None:
    Screen = _core.native.Screen
    Cursor = _core.native.Cursor

    class DiffScreen(Screen):  # type: ignore[misc, valid-type]
        """Deprecated in pyte 0.7 (merged into `Screen`); kept, warning, for drop-in compatibility."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            warnings.warn(
                "The functionality of ``DiffScreen` has been merged into ``Screen`` and will be removed in "
                "0.8.0. Please update your code accordingly.",
                DeprecationWarning,
                stacklevel=2,
            )
            super().__init__(*args, **kwargs)

    def _detached(row: Any) -> Any:
        detach = getattr(row, "_detach", None)
        return detach() if detach is not None else row

    class _HistoryDeque(deque):
        """History deque whose lines are snapshots: a live buffer row is detached (copied) on insertion."""

        def __init__(self, maxlen: int) -> None:
            super().__init__((), maxlen)

        def append(self, row: Any) -> None:
            super().append(_detached(row))

        def appendleft(self, row: Any) -> None:
            super().appendleft(_detached(row))

        def extend(self, rows: Any) -> None:
            super().extend(_detached(r) for r in rows)

        def extendleft(self, rows: Any) -> None:
            super().extendleft(_detached(r) for r in rows)

    class HistoryScreen(Screen):  # type: ignore[misc, valid-type]
        """pyte's HistoryScreen over the native grid: scrolled-off lines go to `history.top`/`bottom`.

        `index`/`reverse_index`/`erase_in_display(3)`/`reset` feed the history from C (so the fused parser
        keeps its fast path); paging and pyte's before/after-event wrapping are pyte's Python code.
        """

        _wrapped = set(_pstreams.Stream.events)
        _wrapped.update(["next_page", "prev_page"])

        def __init__(self, columns: int, lines: int, history: int = 100, ratio: float = 0.5) -> None:
            self.history = History(
                _HistoryDeque(history), _HistoryDeque(history), float(ratio), history, history
            )
            super().__init__(columns, lines)
            self.hist_on = True

        def _make_wrapper(self, event: str, handler: Any) -> Any:
            def inner(*args: Any, **kwargs: Any) -> Any:
                self.before_event(event)
                result = handler(*args, **kwargs)
                self.after_event(event)
                return result

            return inner

        def __getattribute__(self, attr: str) -> Any:
            value = super().__getattribute__(attr)
            if attr in HistoryScreen._wrapped:
                return HistoryScreen._make_wrapper(self, attr, value)
            return value

        def before_event(self, event: str) -> None:
            if event not in ("prev_page", "next_page"):
                while self.history.position < self.history.size:
                    self.next_page()

        def after_event(self, event: str) -> None:
            self.cursor.hidden = not (self.history.position == self.history.size and _mo.DECTCEM in self.mode)

        def _reset_history(self) -> None:
            self.history.top.clear()
            self.history.bottom.clear()
            self.history = self.history._replace(position=self.history.size)

        def _history_push_top(self, top: int) -> None:
            self.history.top.append(self.buffer[top])

        def _history_push_bottom(self, bottom: int) -> None:
            self.history.bottom.append(self.buffer[bottom])

        def prev_page(self) -> None:
            if self.history.position > self.lines and self.history.top:
                mid = min(len(self.history.top), math.ceil(self.lines * self.history.ratio))
                self.history.bottom.extendleft(
                    self.buffer[y] for y in range(self.lines - 1, self.lines - mid - 1, -1)
                )
                self.history = self.history._replace(position=self.history.position - mid)
                for y in range(self.lines - 1, mid - 1, -1):
                    self.buffer[y] = self.buffer[y - mid]
                for y in range(mid - 1, -1, -1):
                    self.buffer[y] = self.history.top.pop()
                self.dirty = set(range(self.lines))

        def next_page(self) -> None:
            if self.history.position < self.history.size and self.history.bottom:
                mid = min(len(self.history.bottom), math.ceil(self.lines * self.history.ratio))
                self.history.top.extend(self.buffer[y] for y in range(mid))
                self.history = self.history._replace(position=self.history.position + mid)
                for y in range(self.lines - mid):
                    self.buffer[y] = self.buffer[y + mid]
                for y in range(self.lines - mid, self.lines):
                    self.buffer[y] = self.history.bottom.popleft()
                self.dirty = set(range(self.lines))

else:
    HistoryScreen = _pscreens.HistoryScreen  # type: ignore[misc, assignment]
    Screen = _pscreens.Screen  # type: ignore[misc]
    Cursor = _pscreens.Cursor  # type: ignore[misc]
    DiffScreen = _pscreens.DiffScreen  # type: ignore[misc, assignment]
