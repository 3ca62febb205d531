"""pytest wiring for `benchmarks/`: collect `bench_*.py`, provide both implementations, print the ratio table.

Every measurement is recorded per (metric, input, implementation); at the end of the run litbridge is divided by
pyte from the same run and compared with the targets (pass/short; never fails the run). No timing logic here.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from harness import RESULTS, Impl, Results, load_impl, render_recordings, render_table  # type: ignore[import-not-found]

HERE = Path(__file__).resolve().parent
RESULTS_DIR = HERE.parent / ".benchmarks"


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    if file_path.suffix == ".py" and file_path.name.startswith("bench_"):
        return pytest.Module.from_parent(parent, path=file_path)
    return None


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.has_plugin("benchmark"):
        raise pytest.UsageError(
            "benchmarks need pytest-benchmark: run `python -m pytest benchmarks -p benchmark`"
        )


@pytest.fixture(params=["pyte", "litbridge"], scope="session")
def impl(request: pytest.FixtureRequest) -> Impl:
    return load_impl(request.param)


@pytest.fixture(scope="session")
def results() -> Results:
    return RESULTS


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not RESULTS.values:
        return
    table = render_table(RESULTS)
    recordings = render_recordings(RESULTS)
    if recordings:
        table += "\n\n" + recordings
    terminalreporter.write_sep("=", "litbridge vs pyte (same run)")
    terminalreporter.write_line(table)
    try:
        RESULTS_DIR.mkdir(exist_ok=True)
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        stem = (
            "emulator-smoke"
            if os.environ.get("LITBRIDGE_BENCH_SMOKE", "") not in ("", "0")
            else "emulator-latest"
        )
        (RESULTS_DIR / f"{stem}.md").write_text(f"Measured {stamp}\n\n{table}\n")
        (RESULTS_DIR / f"{stem}.json").write_text(
            json.dumps(
                [{"section": s, "metric": m, "input": n, **v} for (s, m, n), v in RESULTS.values.items()]
                + [
                    {"section": "recording", "input": n, "bytes": r.size, "reads": r.reads, **r.values}
                    for n, r in RESULTS.recordings.items()
                ],
                indent=1,
            )
        )
        terminalreporter.write_line(f"(also written to {RESULTS_DIR}/{stem}.md and .json)")
    except OSError as exc:
        terminalreporter.write_line(f"could not write results: {exc}")
