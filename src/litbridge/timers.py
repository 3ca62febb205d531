"""Many short timers on one loop timer: the sessions' settle, streaming and bookkeeping deadlines.

A session arms a few timers per frame (settle, streaming tick, turn tick), and a few hundred sessions arm
thousands a second. Each `loop.call_later` is a loop timer of its own (under uvloop a libuv timer allocated,
started and closed again); here a timer is a heap entry, and the loop holds one timer per loop for the
earliest deadline. Timers fire in deadline order (first armed first among equal deadlines), each callback on
its own: one that raises is logged and the others still run.

The loop timer is armed at the end of the earliest deadline's slot of a `GRID` (20 ms) shared by every session
of the loop, and fires every timer due by then: a timer runs up to 20 ms late, and the loop wakes for timers at
most 50 times a second however many sessions arm them. Spread over a few hundred sessions, their deadlines
each woke the loop on their own; a woken daemon starts with cold caches, and what it does per wake-up is most of
its CPU at scale (the scale benchmark: 8-14 % less CPU per turn at N=100-1000, benchmarks/README.md). The deadlines
armed here are a settle (150 ms), a streaming tick (100 ms), a turn's bookkeeping (250 ms), a sync frame's
fallback: none is a deadline to the millisecond.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import math
from collections.abc import Callable
from typing import Protocol

log = logging.getLogger(__name__)

__all__ = ["GRID", "Cancellable", "Timer", "Timers"]

GRID = 0.02
"""Seconds: timers fire at the end of their deadline's slot of this grid of loop time (see the module docstring)."""


class Cancellable(Protocol):
    """What arming a timer returns to its owner: a `Timer` here, an `asyncio.TimerHandle` in test hosts."""

    def cancel(self) -> None: ...


class Timer:
    """One armed deadline; `cancel()` it (idempotent; harmless after it fired). With an `owner` set, the timer
    is in it from arming until it fires or is cancelled: what its owner must cancel, and nothing more (a timer
    kept after that would outlive its use, and the collector would walk it again and again)."""

    __slots__ = ("callback", "deadline", "owner")

    def __init__(
        self, deadline: float, callback: Callable[[], None], owner: set[Timer] | None = None
    ) -> None:
        self.deadline = deadline
        self.callback: Callable[[], None] | None = callback
        self.owner = owner
        if owner is not None:
            owner.add(self)

    @classmethod
    def spent(cls, callback: Callable[[], None]) -> Timer:
        """A timer that will never fire (armed where nothing may run any more)."""
        timer = cls(math.inf, callback)
        timer.callback = None
        return timer

    def cancel(self) -> None:
        self.callback = None  # the heap entry stays until its deadline; it no longer holds the callback
        self._disown()

    def _disown(self) -> None:
        owner = self.owner
        if owner is not None:
            self.owner = None
            owner.discard(self)

    def cancelled(self) -> bool:
        """True once cancelled or fired."""
        return self.callback is None


class Timers:
    """The timers of one event loop (`for_loop`)."""

    _by_loop: dict[asyncio.AbstractEventLoop, Timers] = {}

    def __init__(self, loop: asyncio.AbstractEventLoop, grid: float = GRID) -> None:
        self.loop = loop
        self.grid = grid
        self._heap: list[tuple[float, int, Timer]] = []
        self._seq = 0
        self._handle: asyncio.TimerHandle | None = None
        self._armed_at = math.inf
        # due = deadline within the loop clock's resolution of now, as the loop itself runs its timers
        # (uvloop keeps time in milliseconds; asyncio's resolution is the monotonic clock's)
        self._slack = float(getattr(loop, "_clock_resolution", 0.001))

    @classmethod
    def for_loop(cls, loop: asyncio.AbstractEventLoop) -> Timers:
        """The loop's timers (made on first use; those of closed loops are dropped then)."""
        if loop.is_closed():
            cls._by_loop.pop(loop, None)
            raise RuntimeError("the event loop is closed")
        timers = cls._by_loop.get(loop)
        if timers is None:
            for old in [lp for lp in cls._by_loop if lp.is_closed()]:
                del cls._by_loop[old]
            timers = cls._by_loop[loop] = cls(loop)
        return timers

    def call_later(
        self, delay: float, callback: Callable[[], None], owner: set[Timer] | None = None
    ) -> Timer:
        return self.call_at(self.loop.time() + delay, callback, owner)

    def call_at(
        self, deadline: float, callback: Callable[[], None], owner: set[Timer] | None = None
    ) -> Timer:
        """`callback` at `deadline` (loop time, up to a `grid` slot later); with `owner`, the timer is in that
        set until it fires or is cancelled (see `Timer`)."""
        timer = Timer(deadline, callback, owner)
        self._seq += 1
        heapq.heappush(self._heap, (deadline, self._seq, timer))
        self._arm(deadline)
        return timer

    def _arm(self, deadline: float) -> None:
        """The loop timer at the end of `deadline`'s slot, unless it is armed that early already."""
        grid = self.grid
        at = math.ceil(deadline / grid) * grid if grid > 0 else deadline
        if at >= self._armed_at:
            return
        if self._handle is not None:
            self._handle.cancel()
        self._armed_at = at
        self._handle = self.loop.call_at(at, self._fire)

    def _fire(self) -> None:
        self._handle, self._armed_at = None, math.inf
        heap = self._heap
        due = self.loop.time() + self._slack
        batch = []
        while heap and heap[0][0] <= due:
            batch.append(heapq.heappop(heap))
        # what a callback arms now runs at a later turn of the loop, as with `loop.call_later`, even if due
        for i, (_, _, timer) in enumerate(batch):
            callback = timer.callback
            if callback is None:
                continue
            timer.callback = None
            timer._disown()
            try:
                callback()
            except Exception:
                log.exception("timer callback %r", callback)
            except BaseException:
                for entry in batch[i + 1 :]:
                    heapq.heappush(heap, entry)
                if heap:
                    self._arm(heap[0][0])
                raise
        if heap:
            self._arm(heap[0][0])
