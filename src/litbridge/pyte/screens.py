"""pyte-compatible screens: the compiled `Screen` (and its `DiffScreen` alias) plus pyte's value types.

`Char`, `Margins`, `Savepoint`, `History`, `StaticDefaultDict`, `DebugEvent` and `DebugScreen` are pyte's own
(pure data / pure Python). `HistoryScreen` is still pyte's (compat path); the native screen does not page.
Without the compiled core every class here is pyte's.
"""

from __future__ import annotations

import warnings
from typing import Any

from pyte import screens as _pscreens
from pyte.screens import (
    Char,
    DebugEvent,
    DebugScreen,
    History,
    HistoryScreen,
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

if _core.AVAILABLE:
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

else:
    Screen = _pscreens.Screen  # type: ignore[misc]
    Cursor = _pscreens.Cursor  # type: ignore[misc]
    DiffScreen = _pscreens.DiffScreen  # type: ignore[misc]
