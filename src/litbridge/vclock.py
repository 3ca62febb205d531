"""A virtual-time asyncio loop: the clock jumps to the next timer instead of sleeping.

Used by `litbridge replay --fast` (a recorded session replays as fast as the CPU allows, with its recorded
timing intact) and by tests of timer-driven bookkeeping (the turn engine), so they assert order, never speed.
"""

from __future__ import annotations

import asyncio
import selectors
from typing import Any


class _FastSelector(selectors.DefaultSelector):
    """A selector that, instead of sleeping, advances its loop's virtual clock by the timeout."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def select(self, timeout: float | None = None) -> Any:
        if timeout is None:  # no timer at all: only an fd (a thread's wake-up, a socket) can move things on
            return super().select(None)
        ready = super().select(0)
        if not ready and timeout:
            self.now += timeout
        return ready


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock jumps to the next timer (real fds still work, polled without waiting)."""

    def __init__(self) -> None:
        self._fast = _FastSelector()
        super().__init__(self._fast)

    def time(self) -> float:
        return self._fast.now
