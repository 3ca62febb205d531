"""The screen rules' and streaming tick's CPU inside a daemon, by the thread clock (the scale test's meter).

The scale test starts the daemon with this folder first on `PYTHONPATH` and `LITBRIDGE_RULES_METER=<file>`
(`LITBRIDGE_SCALE_METER=1`): once `litbridge.drivers.engine` is imported, the engine's `reading` (the driver's
rules on a frame) and `stream` (the tick's response text) are wrapped, outermost calls only, with the calling
thread's CPU clock, and every 50 ms the file is replaced with `{"process", "spent", "calls"}`: the process's CPU
seconds, the seconds spent inside those calls, and how many there were. The test reads it at both ends of its
turn window. Unlike a sampling profile, nothing is missed (a non-blocking py-spy sample can read a torn stack,
which drops the frames that mark the rules); the meter's own cost per call is measured in the test's process
(`bench_screen_rules.overhead`) and taken off.

`LITBRIDGE_STEP_COUNTS=<file>` (`LITBRIDGE_SCALE_STEPS=1`) counts the daemon's steps instead (`rules_span.STEPS`:
PTY reads, screen evaluations, readings, ticks, settles, timers, events...), for the scale test's "steps per turn".
`LITBRIDGE_RECORD_BATCHES=<file>` (`LITBRIDGE_SCALE_BATCHES=1`) times where each `complete` published from a
record waits (`rules_span.BatchMeter`: from the start of the inotify batch it came in, and from its own follower's
read), for the scale test's "complete: wait in its record batch".

Nothing here runs unless a variable is set; it is not part of the package.
"""

from __future__ import annotations

import os
from collections.abc import Callable


def _publish(path: str, name: str, needs: tuple[str, ...], start: Callable[[], Callable[[], object]]) -> None:
    """In a thread: wait until the daemon has imported `needs` (the classes to wrap exist then), call `start()`
    (it wraps them and returns what to write), then write that to `path` as JSON every 50 ms (atomically)."""
    import json
    import sys
    import threading
    import time

    def imported(name: str) -> bool:  # in sys.modules from the start of its import: wait for its end too
        spec = getattr(sys.modules.get(name), "__spec__", None)
        return spec is not None and not getattr(spec, "_initializing", False)

    def run() -> None:
        while not all(imported(module) for module in needs):
            time.sleep(0.005)
        snapshot = start()
        tmp = f"{path}.{os.getpid()}.tmp"
        while True:
            with open(tmp, "w") as f:
                json.dump(snapshot(), f)
            os.replace(tmp, path)
            time.sleep(0.05)

    threading.Thread(target=run, name=name, daemon=True).start()


def _rules_meter() -> Callable[[], object]:
    """`LITBRIDGE_RULES_METER=<file>`: the daemon's process CPU and the time inside the rules and the tick."""
    import time

    from rules_span import meter_rules  # beside this file, on the same PYTHONPATH entry

    meter = meter_rules()
    return lambda: {"process": time.process_time(), "spent": meter.spent, "calls": meter.calls}


def _step_counts() -> Callable[[], object]:
    """`LITBRIDGE_STEP_COUNTS=<file>`: the daemon's `STEPS` (`rules_span.py`) counted, as `{"counts": {...}}`. A
    method is counted on the classes that exist when it is wrapped: once the Claude driver (the scale test's)
    and the hub are imported."""
    from rules_span import StepCounter

    counter = StepCounter()
    counter.wrap_all()
    return lambda: {"counts": counter.counts}


def _record_batches() -> Callable[[], object]:
    """`LITBRIDGE_RECORD_BATCHES=<file>`: the `complete`s' waits in their record batches (`BatchMeter`)."""
    from rules_span import BatchMeter

    meter = BatchMeter()
    meter.wrap_all()
    return meter.snapshot


if os.environ.get("LITBRIDGE_RULES_METER"):
    _publish(os.environ["LITBRIDGE_RULES_METER"], "rules-meter", ("litbridge.drivers.engine",), _rules_meter)
if os.environ.get("LITBRIDGE_STEP_COUNTS"):
    _publish(
        os.environ["LITBRIDGE_STEP_COUNTS"],
        "step-counter",
        ("litbridge.drivers.claude.driver", "litbridge.daemon.hub"),
        _step_counts,
    )
if os.environ.get("LITBRIDGE_RECORD_BATCHES"):
    _publish(
        os.environ["LITBRIDGE_RECORD_BATCHES"],
        "batch-meter",
        ("litbridge.drivers.records.watch", "litbridge.drivers.records.follow", "litbridge.daemon.hub"),
        _record_batches,
    )
