"""What every benchmark suite shares about its report, defined once: the smoke switch, the verdict against a
target, and where the table goes.

`LITBRIDGE_BENCH_SMOKE=1` (what the test suite runs, `tests/benchmarks_smoke/`) shrinks every suite to a
single pass of a few µs per case: enough to prove the suite runs end to end, too little to judge a target. So at
smoke size the verdict column reads `not judged (smoke)` rather than pass/SHORT on timer noise; the figures still
print. Each suite's table goes to the terminal summary and to `.benchmarks/<suite>-latest.md` (full size) or
`<suite>-smoke.md`, with the date and CPU count, plus `.json` when the suite gives rows.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from inputs import SMOKE  # type: ignore[import-not-found]

RESULTS_DIR = Path(__file__).resolve().parent.parent / ".benchmarks"
NOT_JUDGED = "not judged (smoke)"


def verdict(ok: bool | None) -> str:
    """`pass` / `SHORT` against a target, blank without one, `not judged (smoke)` at smoke size."""
    if ok is None:
        return ""
    if SMOKE:
        return NOT_JUDGED
    return "pass" if ok else "SHORT"


def publish(terminalreporter: Any, suite: str, title: str, table: str, rows: Any = None) -> None:
    """Print `table` under `title` and write it (and `rows` as JSON, when given) to the suite's results file."""
    terminalreporter.write_sep("=", title)
    terminalreporter.write_line(table)
    stem = f"{suite}-smoke" if SMOKE else f"{suite}-latest"
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    try:
        RESULTS_DIR.mkdir(exist_ok=True)
        (RESULTS_DIR / f"{stem}.md").write_text(f"Measured {stamp} (cpus: {os.cpu_count()})\n\n{table}\n")
        if rows is not None:
            (RESULTS_DIR / f"{stem}.json").write_text(json.dumps(rows, indent=1))
        also = f"{stem}.md and .json" if rows is not None else f"{stem}.md"
        terminalreporter.write_line(f"(also written to {RESULTS_DIR}/{also})")
    except OSError as exc:
        terminalreporter.write_line(f"could not write results: {exc}")


class _Summary:
    def __init__(
        self, suite: str, title: str, table: Callable[[], str | None], rows: Callable[[], Any]
    ) -> None:
        self.suite, self.title, self.table, self.rows = suite, title, table, rows

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        table = self.table()
        if table:
            publish(terminalreporter, self.suite, self.title, table, self.rows())


def report_at_end(
    request: pytest.FixtureRequest,
    suite: str,
    title: str,
    table: Callable[[], str | None],
    rows: Callable[[], Any] = lambda: None,
) -> None:
    """From a suite's module fixture: publish `table()` (skipped when it returns nothing) in the terminal summary,
    registered once per run however many modules ask."""
    pm = request.config.pluginmanager
    name = f"litbridge-{suite}-report"
    if not pm.has_plugin(name):
        pm.register(_Summary(suite, title, table, rows), name)
