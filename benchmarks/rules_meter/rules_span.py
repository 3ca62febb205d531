"""The span the screen-rules figures time: the engine's `reading` (the driver's rules on a frame) and `stream`
(the tick's response text), outermost calls only, by the calling thread's CPU clock.

One definition for both places that time it: `bench_screen_rules.py` (replays, in its own process) and the
daemon's meter (`sitecustomize.py` beside this file, loaded into the daemon by the scale test).
"""

from __future__ import annotations

import time
from typing import Any


class Meter:
    """CPU (this thread's clock) inside the wrapped methods, outermost call only (a reading inside a tick is
    counted once), and how many outermost calls it timed (`calls`: its own cost is per call, which
    `bench_screen_rules.overhead` measures)."""

    def __init__(self) -> None:
        self.depth = 0
        self.spent = 0.0
        self.calls = 0
        self._undo: list[tuple[type, str, Any]] = []

    def wrap(self, cls: type, name: str) -> None:
        orig = cls.__dict__[name]
        meter = self

        def timed(*args: Any, **kwargs: Any) -> Any:
            if meter.depth:
                return orig(*args, **kwargs)
            meter.depth += 1
            meter.calls += 1
            t0 = time.thread_time()
            try:
                return orig(*args, **kwargs)
            finally:
                meter.spent += time.thread_time() - t0
                meter.depth -= 1

        timed.__name__ = "timed"
        setattr(cls, name, timed)
        self._undo.append((cls, name, orig))

    def close(self) -> None:
        for cls, name, orig in reversed(self._undo):
            setattr(cls, name, orig)
        self._undo.clear()


def meter_rules() -> Meter:
    """A `Meter` on the engine's `reading` and `stream` (undone by its `close()`)."""
    from litbridge.drivers import engine

    meter = Meter()
    meter.wrap(engine._EngineState, "reading")
    meter.wrap(engine._EngineTurns, "stream")
    return meter
