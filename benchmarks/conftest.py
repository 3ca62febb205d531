"""pytest wiring for `benchmarks/`: collect `bench_*.py`, provide both implementations, print the ratio table.

Every measurement is recorded per (metric, input, implementation); at the end of the run litbridge is divided by
pyte from the same run and compared with the targets (pass/short; never fails the run). No timing logic here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import RESULTS, Impl, Results, load_impl, render_recordings, render_table  # type: ignore[import-not-found]
from report import publish  # type: ignore[import-not-found]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    # a file named on the command line is collected by pytest itself: collecting it here too ran it twice
    if (
        file_path.suffix == ".py"
        and file_path.name.startswith("bench_")
        and not parent.session.isinitpath(file_path)
    ):
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
    rows = [{"section": s, "metric": m, "input": n, **v} for (s, m, n), v in RESULTS.values.items()] + [
        {"section": "recording", "input": n, "bytes": r.size, "reads": r.reads, **r.values}
        for n, r in RESULTS.recordings.items()
    ]
    publish(terminalreporter, "emulator", "litbridge vs pyte (same run)", table, rows)
