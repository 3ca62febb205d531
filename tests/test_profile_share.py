"""`benchmarks/profile_share.py` counts the samples of a py-spy raw profile in the engine's screen readings and
streaming tick (the share the scale benchmark reports against its ≤ 10 % goal)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from profile_share import inclusive, share

RAW = "\n".join(
    [
        "main (litbridge/cli/serve.py:158);Runner.run (asyncio/runners.py:118) 10",
        "main (litbridge/cli/serve.py:158);_EngineState.reading (litbridge/drivers/engine.py:348);"
        "Screen.classify (litbridge/drivers/claude/v2_1.py:222) 3",
        "main (litbridge/cli/serve.py:158);_EngineTurns.stream (litbridge/drivers/engine.py:842);"
        "_EngineState.reading (litbridge/drivers/engine.py:348) 2",
        "main (litbridge/cli/serve.py:158);JsonlFile.poll (litbridge/drivers/records/jsonl.py:90) 5",
        "not a profile line",
    ]
)


def test_rules_and_tick_samples_are_counted_once_each() -> None:
    s = share(RAW)
    assert (s.samples, s.rules_tick, s.reading, s.stream) == (20, 5, 3, 2)
    assert s.pct == 25.0
    assert s.top["main"] == 10 and s.top["JsonlFile.poll"] == 5 and s.top["Screen.classify"] == 3


def test_an_empty_profile_is_zero_not_an_error() -> None:
    assert share("").pct == 0.0


METER = '''
import json, os, sys, time
from litbridge.drivers import engine
deadline = time.monotonic() + 10
while engine._EngineTurns.__dict__["stream"].__name__ != "timed":  # the meter's thread wraps once imported
    assert time.monotonic() < deadline
    time.sleep(0.01)

class Host:
    pass

class Fake:
    """Enough of an engine for `reading` to fail on (the meter counts the call all the same)."""
    _extra = None
    host = Host()
    _hooks = None

for _ in range(3):
    try:
        engine._EngineState.reading(Fake())
    except Exception:
        pass
time.sleep(0.3)
print(open(os.environ["LITBRIDGE_RULES_METER"]).read())
'''


def test_rules_meter_counts_the_engines_readings_in_the_daemons_process(tmp_path: Path) -> None:
    """The scale test's thread-clock meter (`benchmarks/rules_meter/`) wraps the engine's `reading` and `stream`
    in the process it is loaded into (by `PYTHONPATH` and `LITBRIDGE_RULES_METER`) and writes its totals."""
    import json
    import os
    import subprocess

    out = tmp_path / "meter.json"
    meter_dir = Path(__file__).resolve().parent.parent / "benchmarks" / "rules_meter"
    env = {**os.environ, "PYTHONPATH": str(meter_dir), "LITBRIDGE_RULES_METER": str(out)}
    r = subprocess.run([sys.executable, "-c", METER], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["calls"] == 3 and got["spent"] >= 0 and got["process"] > 0
    plain = subprocess.run(
        [
            sys.executable,
            "-c",
            "from litbridge.drivers import engine; print(engine._EngineState.reading.__name__)",
        ],
        env={**os.environ, "PYTHONPATH": str(meter_dir)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert plain.stdout.strip() == "reading"  # without the variable nothing is wrapped


def test_inclusive_counts_each_function_once_per_sample_and_its_direct_callees() -> None:
    raw = "\n".join(
        [
            "main (a.py:1);evaluate (s.py:3);reading (e.py:9) 4",
            "main (a.py:1);evaluate (s.py:3);reading (e.py:9);reading (e.py:12) 2",  # recursion: once
            "main (a.py:1);tick (e.py:20) 4",
            "garbage",
        ]
    )
    total, on_stack, callees = inclusive(raw)
    assert total == 10
    assert (on_stack["main"], on_stack["evaluate"], on_stack["reading"], on_stack["tick"]) == (10, 6, 6, 4)
    assert callees["main"] == {"evaluate": 6, "tick": 4}
    assert callees["evaluate"] == {"reading": 6}


STEP_SCRIPT = """
import asyncio, json, os, time
import litbridge.drivers.claude.driver, litbridge.daemon.hub
from litbridge.timers import Timers
deadline = time.monotonic() + 10
while not os.path.exists(os.environ["LITBRIDGE_STEP_COUNTS"]):
    assert time.monotonic() < deadline  # the counter's thread wraps once the driver and the hub are imported
    time.sleep(0.01)
loop = asyncio.new_event_loop()
timers = Timers(loop)
for _ in range(4):
    timers.call_later(1.0, lambda: None)
from litbridge.drivers.claude.driver import ClaudeDriver
try:  # a driver's own override is counted (once), not only the hooks' base method
    ClaudeDriver.read_screen(object())
except Exception:
    pass
time.sleep(0.3)
print(open(os.environ["LITBRIDGE_STEP_COUNTS"]).read())
"""


def test_step_counter_counts_the_daemons_steps_in_its_process(tmp_path: Path) -> None:
    """`LITBRIDGE_SCALE_STEPS=1`: the counter (`rules_meter/`, `LITBRIDGE_STEP_COUNTS`) wraps every step of
    `rules_span.STEPS` in the process it is loaded into, on each class that defines it, and writes the counts."""
    import json
    import os
    import subprocess

    from rules_meter.rules_span import STEPS  # type: ignore[import-not-found]

    out = tmp_path / "steps.json"
    meter_dir = Path(__file__).resolve().parent.parent / "benchmarks" / "rules_meter"
    env = {**os.environ, "PYTHONPATH": str(meter_dir), "LITBRIDGE_STEP_COUNTS": str(out)}
    r = subprocess.run(
        [sys.executable, "-c", STEP_SCRIPT], env=env, capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    counts = json.loads(r.stdout)["counts"]
    assert set(counts) == {label for *_, label in STEPS}
    assert counts["timers armed"] == 4  # call_later arms through call_at: each counted once
    assert counts["readings asked"] == 0 and counts["PTY reads"] == 0
    assert counts["rules run on a new frame"] == 1


def test_batch_meter_times_each_complete_in_its_record_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """`LITBRIDGE_SCALE_BATCHES=1`: the meter (`rules_span.BatchMeter`) times a `complete` published inside an
    inotify batch from the batch's start and from its own follower's read, and keeps each batch's followers,
    `complete`s, CPU and wall time; a batch of one follower with no `complete` is only counted."""
    import time

    from litbridge.daemon import hub
    from litbridge.drivers.records import follow, watch
    from rules_meter.rules_span import BatchMeter  # type: ignore[import-not-found]

    published: list[str] = []

    def publish(self: object, event: dict[str, str]) -> None:
        published.append(event["event"])

    def changed(self: object) -> None:  # a follower's read: a little work, then what it publishes
        time.sleep(0.01)
        for kind in self.kinds:  # type: ignore[attr-defined]
            hub.Hub.publish(None, {"event": kind})  # type: ignore[arg-type]

    def readable(self: object) -> None:  # one inotify batch: its followers read one after another
        for f in self.followers:  # type: ignore[attr-defined]
            follow.RecordFollower._changed(f)

    monkeypatch.setattr(hub.Hub, "publish", publish)  # undone after the test, the meter's wrappers too
    monkeypatch.setattr(follow.RecordFollower, "_changed", changed)
    monkeypatch.setattr(watch._Hub, "_readable", readable)
    meter = BatchMeter()
    meter.wrap_all()

    def batch(*kinds: tuple[str, ...]) -> None:
        watch._Hub._readable(type("Batch", (), {"followers": [type("F", (), {"kinds": k}) for k in kinds]}))

    batch(("replace", "complete"), ("complete",))
    batch(("replace",))
    hub.Hub.publish(None, {"event": "complete"})  # type: ignore[arg-type]  # outside a batch: not timed
    got = meter.snapshot()
    assert published == ["replace", "complete", "complete", "replace", "complete"]
    assert len(got["waits"]) == 2 and got["small"] == 1
    (first_batch, first_own), (second_batch, second_own) = got["waits"]
    assert 0.01 <= first_own <= first_batch  # its read's own work, inside the batch
    # the second waited for the first follower's read before its own
    assert second_batch >= 0.02 and second_batch - second_own >= 0.01
    [(followers, completes, cpu, wall)] = got["batches"]
    assert (followers, completes) == (2, 2) and wall >= 0.02 and 0 <= cpu <= wall
