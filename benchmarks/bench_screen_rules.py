"""What the screen rules and the streaming tick cost: CPU per replayed recording of each CLI, and their share of it.

Each recording (Claude, Codex, Gemini) goes through a real `Session` and its driver on a virtual clock (`litbridge
replay --fast`: every timer fires, nothing sleeps), so the CPU is the daemon's work for that session without the
waits. "rules + tick" is the CPU spent inside the engine's screen readings (`reading`: the driver's rules on a
frame) and its streaming tick (`stream`: the rules' response text), outermost calls only; the share is of the
whole replay's CPU (terminal, session, record following and the replay's own recorded child included).

Runs as a suite (`python -m pytest benchmarks -p benchmark`) or alone, which prints the same table for whatever
`litbridge` is importable (`PYTHONPATH=<other checkout>/src python benchmarks/bench_screen_rules.py`): how the
figures of an older checkout were taken in the same run. Prints a table; never fails on a number.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CAPTURES = HERE.parent / "tests" / "fixtures" / "captures"
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]  # run alone too: the suite's helpers

from inputs import SMOKE  # type: ignore[import-not-found]  # noqa: E402

RECORDINGS: dict[str, tuple[str, ...]] = {
    "claude": (
        "s03_long_markdown_response",
        "s02_simple_qa",
        "s08a_first_session",
        "s02b_simple_qa_classic_tui",
    ),
    "codex": ("codex_long_markdown", "codex_plain_qa"),
    "gemini": ("gemini_long_markdown", "gemini_plain_qa"),
}
"""Claude's are the ones the daemon's scale benchmark replays; Codex's and Gemini's a long and a short answer."""
REPS = 1 if SMOKE else 7
TARGET_SHARE = 10.0
"""Screen rules + streaming tick, % of the daemon's CPU (at N=100)."""


class _Meter:
    """CPU (this thread's clock) inside the wrapped methods, outermost call only (a reading inside a tick is
    counted once)."""

    def __init__(self) -> None:
        self.depth = 0
        self.spent = 0.0
        self._undo: list[tuple[type, str, Any]] = []

    def wrap(self, cls: type, name: str) -> None:
        orig = cls.__dict__[name]
        meter = self

        def timed(*args: Any, **kwargs: Any) -> Any:
            if meter.depth:
                return orig(*args, **kwargs)
            meter.depth += 1
            t0 = time.thread_time()
            try:
                return orig(*args, **kwargs)
            finally:
                meter.spent += time.thread_time() - t0
                meter.depth -= 1

        setattr(cls, name, timed)
        self._undo.append((cls, name, orig))

    def close(self) -> None:
        for cls, name, orig in reversed(self._undo):
            setattr(cls, name, orig)
        self._undo.clear()


def measure(cli: str, name: str, reps: int = REPS) -> dict[str, Any]:
    """Median CPU of one fast replay of `cli`/`name` (after a warm-up), and the rules + tick share of it."""
    from litbridge.drivers import engine
    from litbridge.replay import replay

    path = CAPTURES / cli / name
    replay(path, fast=True)  # warm-up: imports, first-use caches
    totals: list[float] = []
    rules: list[float] = []
    for _ in range(reps):
        meter = _Meter()
        meter.wrap(engine._EngineState, "reading")
        meter.wrap(engine._EngineTurns, "stream")
        try:
            t0 = time.process_time()
            replay(path, fast=True)
            totals.append(time.process_time() - t0)
        finally:
            meter.close()
        rules.append(meter.spent)
    total = statistics.median(totals)
    spent = statistics.median(rules)
    return {"cli": cli, "recording": name, "cpu_ms": total * 1000, "rules_ms": spent * 1000}


def run_all() -> list[dict[str, Any]]:
    rows = []
    for cli, names in RECORDINGS.items():
        for name in names[:1] if SMOKE else names:
            if (CAPTURES / cli / name / "chunks.jsonl").exists():
                rows.append(measure(cli, name))
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    from report import verdict  # type: ignore[import-not-found]

    lines = [
        "| CLI | recording | CPU per replay | rules + tick | share | target | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        share = 100.0 * r["rules_ms"] / r["cpu_ms"] if r["cpu_ms"] else 0.0
        lines.append(
            f"| {r['cli']} | {r['recording']} | {r['cpu_ms']:.1f} ms | {r['rules_ms']:.1f} ms | {share:.1f}% | | |"
        )
    for cli in RECORDINGS:
        mine = [r for r in rows if r["cli"] == cli]
        if not mine:
            continue
        cpu = sum(r["cpu_ms"] for r in mine)
        spent = sum(r["rules_ms"] for r in mine)
        share = 100.0 * spent / cpu if cpu else 0.0
        lines.append(
            f"| {cli} | **all {len(mine)}** | {cpu:.1f} ms | {spent:.1f} ms | {share:.1f}% "
            f"| ≤ {TARGET_SHARE:g}% | {verdict(share <= TARGET_SHARE)} |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- the suite

_ROWS: list[dict[str, Any]] = []

try:
    import pytest
except ImportError:  # pragma: no cover - run as a script without pytest
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    @pytest.fixture(scope="module", autouse=True)
    def _report(request: pytest.FixtureRequest) -> None:
        from report import report_at_end  # type: ignore[import-not-found]

        report_at_end(
            request,
            "screen-rules",
            "litbridge screen rules + streaming tick, CPU per replay (same run)",
            lambda: table(_ROWS) if _ROWS else None,
            lambda: _ROWS,
        )

    @pytest.mark.timeout(1800)
    def test_screen_rules_cpu_per_replay() -> None:
        _ROWS.extend(run_all())
        assert _ROWS, f"no recordings under {CAPTURES}"


if __name__ == "__main__":
    print(table(run_all()))
