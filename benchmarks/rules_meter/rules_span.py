"""The span the screen-rules figures time: the engine's `reading` (the driver's rules on a frame) and `stream`
(the tick's response text), outermost calls only, by the calling thread's CPU clock.

One definition for both places that time it: `bench_screen_rules.py` (replays, in its own process) and the
daemon's meter (`sitecustomize.py` beside this file, loaded into the daemon by the scale test). Beside it, the
daemon's steps the scale test counts (`STEPS`, `StepCounter`: `LITBRIDGE_SCALE_STEPS=1`).
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


STEPS: tuple[tuple[str, str, str, str], ...] = (
    ("litbridge.pty.base", "ChildProcess", "_read_fd", "PTY reads"),
    ("litbridge.session", "Session", "_evaluate", "screen evaluations"),
    ("litbridge.drivers.engine", "_EngineState", "reading", "readings asked"),
    ("litbridge.drivers.engine", "EngineHooks", "read_screen", "rules run on a new frame"),
    ("litbridge.drivers.engine", "_EngineTurns", "stream", "streaming reads"),
    ("litbridge.drivers.engine", "_EngineState", "_settle", "settles"),
    ("litbridge.drivers.engine", "_EngineState", "commit", "commits"),
    ("litbridge.drivers.engine", "EngineHooks", "response_text", "response texts extracted"),
    ("litbridge.drivers.records.follow", "RecordFollower", "read", "record reads"),
    ("litbridge.timers", "Timers", "call_at", "timers armed"),
    ("litbridge.timers", "Timers", "_fire", "timer wake-ups"),
    ("litbridge.daemon.hub", "Hub", "publish", "events published"),
)
"""The daemon's steps the scale test counts per turn (`LITBRIDGE_SCALE_STEPS=1`): (module, class, method, what it
is). A method a subclass overrides (a driver's `read_screen`) is counted on every class that defines it."""


class StepCounter:
    """How many times each of `STEPS` ran (no clock: a counter costs a fraction of a timed call, and the counts
    are exact)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def wrap_all(self) -> None:
        import importlib

        for module, cls_name, name, label in STEPS:
            base = getattr(importlib.import_module(module), cls_name)
            self.counts.setdefault(label, 0)
            for cls in _with_subclasses(base):
                if name in cls.__dict__:
                    self._wrap(cls, name, label)

    def _wrap(self, cls: type, name: str, label: str) -> None:
        orig = cls.__dict__[name]
        counts = self.counts

        def counted(*args: Any, **kwargs: Any) -> Any:
            counts[label] += 1
            return orig(*args, **kwargs)

        counted.__name__ = name
        setattr(cls, name, counted)


def _with_subclasses(cls: type) -> list[type]:
    """`cls` and every class below it, each once (a class that derives from two of them is one class to wrap:
    wrapped twice, its calls would count twice)."""
    out: list[type] = []
    seen: set[type] = set()
    todo = [cls]
    while todo:
        c = todo.pop()
        if c in seen:
            continue
        seen.add(c)
        out.append(c)
        todo.extend(c.__subclasses__())
    return out


class BatchMeter:
    """Where a `complete` published from a record waits (`LITBRIDGE_SCALE_BATCHES=1`): one inotify read hands the
    record followers of every session whose folder changed to one callback, run one after another. For each
    `complete` published inside such a batch, the time from the batch's start (`batch`: its place in the batch;
    for a line written after the batch began, more than the line waited) and from its own follower's read
    (`own`), by the monotonic clock; and each batch's followers, `complete`s, CPU (this thread's clock) and wall
    time. Batches that published no `complete` and fired one follower are counted, not kept."""

    def __init__(self) -> None:
        self.batch_at: float | None = None
        self.read_at: float | None = None
        self.followers = 0
        self.completes = 0
        self.waits: list[tuple[float, float]] = []
        self.batches: list[tuple[int, int, float, float]] = []
        self.small = 0

    def wrap_all(self) -> None:
        from litbridge.daemon import hub
        from litbridge.drivers.records import follow, watch

        meter = self
        readable = watch._Hub._readable
        changed = follow.RecordFollower._changed
        publish = hub.Hub.publish

        def timed_batch(this: Any) -> None:
            meter.batch_at, meter.followers, meter.completes = time.monotonic(), 0, 0
            t0 = time.thread_time()
            try:
                readable(this)
            finally:
                cpu = time.thread_time() - t0
                if meter.completes or meter.followers > 1:
                    wall = time.monotonic() - (meter.batch_at or 0.0)
                    meter.batches.append((meter.followers, meter.completes, cpu, wall))
                else:
                    meter.small += 1
                meter.batch_at = None

        def timed_read(this: Any) -> None:
            meter.followers += 1
            meter.read_at = time.monotonic()
            try:
                changed(this)
            finally:
                meter.read_at = None

        def counted_publish(this: Any, event: dict[str, Any]) -> None:
            if event.get("event") == "complete" and meter.batch_at is not None and meter.read_at is not None:
                now = time.monotonic()
                meter.completes += 1
                meter.waits.append((now - meter.batch_at, now - meter.read_at))
            publish(this, event)

        watch._Hub._readable = timed_batch  # type: ignore[method-assign]
        follow.RecordFollower._changed = timed_read  # type: ignore[method-assign]
        hub.Hub.publish = counted_publish  # type: ignore[method-assign]

    def snapshot(self) -> dict[str, Any]:
        """What the scale test reads: the waits and the batches so far (lists copied: the loop thread appends)."""
        return {"waits": list(self.waits), "batches": list(self.batches), "small": self.small}
