"""`benchmarks/profile_share.py` counts the samples of a py-spy raw profile in the engine's screen readings and
streaming tick (the share the scale benchmark reports against its ≤ 10 % goal)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from profile_share import share

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
