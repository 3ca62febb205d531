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
sys.path[:0] = [
    str(HERE),
    str(HERE / "rules_meter"),
    str(HERE.parent / "tests"),
]  # run alone too: the helpers

from rules_span import Meter, meter_rules  # type: ignore[import-not-found]  # noqa: E402

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


class _Probe:
    def call(self) -> None:
        return None


def overhead(n: int = 20000, reps: int = 5) -> tuple[float, float]:
    """The meter's own CPU per timed call, in seconds: (inside the span it times, in the whole process). Its
    thread clock is a system call (µs on a sandboxed kernel, more than a cached reading), so a replay's readings
    and ticks are counted without it: `measure` takes `calls` x these off the rules and the total."""
    probe = _Probe()
    inside: list[float] = []
    whole: list[float] = []
    for _ in range(reps):
        t0 = time.process_time()
        for _ in range(n):
            probe.call()
        bare = time.process_time() - t0
        meter = Meter()
        meter.wrap(_Probe, "call")
        try:
            t0 = time.process_time()
            for _ in range(n):
                probe.call()
            timed = time.process_time() - t0
        finally:
            meter.close()
        inside.append(max(0.0, meter.spent - bare) / n)
        whole.append(max(0.0, timed - bare) / n)
    return min(inside), min(whole)


def measure(cli: str, name: str, reps: int = REPS, cost: tuple[float, float] | None = None) -> dict[str, Any]:
    """Median CPU of one fast replay of `cli`/`name` (after a warm-up), and the rules + tick share of it, the
    meter's own cost (`overhead`) taken off both."""
    from litbridge.replay import replay

    inside, whole = cost if cost is not None else overhead()
    path = CAPTURES / cli / name
    replay(path, fast=True)  # warm-up: imports, first-use caches
    totals: list[float] = []
    rules: list[float] = []
    for _ in range(reps):
        meter = meter_rules()
        try:
            t0 = time.process_time()
            replay(path, fast=True)
            totals.append(time.process_time() - t0 - meter.calls * whole)
        finally:
            meter.close()
        rules.append(max(0.0, meter.spent - meter.calls * inside))
    total = statistics.median(totals)
    spent = statistics.median(rules)
    return {
        "cli": cli,
        "recording": name,
        "cpu_ms": total * 1000,
        "rules_ms": spent * 1000,
        "calls": meter.calls,
        "meter_us": [inside * 1e6, whole * 1e6],
    }


def run_all() -> list[dict[str, Any]]:
    rows = []
    cost = overhead()
    for cli, names in RECORDINGS.items():
        for name in names[:1] if SMOKE else names:
            if (CAPTURES / cli / name / "chunks.jsonl").exists():
                rows.append(measure(cli, name, cost=cost))
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
    if rows:
        inside, whole = rows[0]["meter_us"]
        lines.append(
            f"\nMeter cost taken off: {inside:.2f} µs per timed call inside the span, {whole:.2f} µs in the "
            f"process ({sum(r['calls'] for r in rows)} timed calls in the last replay of each recording)."
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
