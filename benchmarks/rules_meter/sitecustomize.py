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

Nothing here runs unless a variable is set; it is not part of the package.
"""

from __future__ import annotations

import os


def _install(path: str) -> None:
    import json
    import sys
    import threading
    import time

    from rules_span import meter_rules  # beside this file, on the same PYTHONPATH entry

    def run() -> None:
        while getattr(sys.modules.get("litbridge.drivers.engine"), "_EngineTurns", None) is None:
            time.sleep(0.005)
        time.sleep(0.02)  # the module's own import finishes
        meter = meter_rules()
        tmp = f"{path}.{os.getpid()}.tmp"
        while True:
            with open(tmp, "w") as f:
                json.dump({"process": time.process_time(), "spent": meter.spent, "calls": meter.calls}, f)
            os.replace(tmp, path)
            time.sleep(0.05)

    threading.Thread(target=run, name="rules-meter", daemon=True).start()


def _install_steps(path: str) -> None:
    """`LITBRIDGE_STEP_COUNTS=<file>`: count the daemon's `STEPS` (`rules_span.py`), written like the meter's
    totals every 50 ms as `{"counts": {...}}`. Wrapped once the Claude driver (the scale test's) and the hub are
    imported: a method is counted on the classes that exist then."""
    import json
    import sys
    import threading
    import time

    from rules_span import StepCounter

    def run() -> None:
        while (
            "litbridge.drivers.claude.driver" not in sys.modules or "litbridge.daemon.hub" not in sys.modules
        ):
            time.sleep(0.005)
        time.sleep(0.02)
        counter = StepCounter()
        counter.wrap_all()
        tmp = f"{path}.{os.getpid()}.tmp"
        while True:
            with open(tmp, "w") as f:
                json.dump({"counts": counter.counts}, f)
            os.replace(tmp, path)
            time.sleep(0.05)

    threading.Thread(target=run, name="step-counter", daemon=True).start()


if os.environ.get("LITBRIDGE_RULES_METER"):
    _install(os.environ["LITBRIDGE_RULES_METER"])
if os.environ.get("LITBRIDGE_STEP_COUNTS"):
    _install_steps(os.environ["LITBRIDGE_STEP_COUNTS"])
