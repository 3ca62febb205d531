"""CI check that the in-process benchmark suites (emulator against pyte, state accuracy, screen rules, spawn paths)
import and run end to end at their tiny smoke size (no speed asserted), through the documented benchmark command,
and that the benchmark plugin's own flags and file arguments work."""

from __future__ import annotations

import sys

import pytest
from smoke_run import ROOT, expect_rows, judges_no_target, pytest_in_benchmarks

from fetch_fixtures import CAPTURES

FILES = [
    "bench_emulator.py",
    "bench_accuracy.py",
    "bench_screen_rules.py",
    "bench_spawn.py",
    "bench_records.py",
]


@pytest.mark.timeout(960)
def test_emulator_benchmarks_run_at_smoke_size(smoke_output: str) -> None:
    assert any(CAPTURES.glob("*/chunks.jsonl")), f"no Claude recordings under {CAPTURES}"
    rows = [
        "| redraw | full 200x50 frame",
        "| display |",
        "| memory | per screen [tracemalloc] |",
        "| fixed | alt screen enter+leave",
        "| fixed | one 46-byte read, Terminal |",
        # the recordings ship in tests/fixtures/captures/claude
        "| throughput | claude:all | MB/s |",
        "| recording | KB | reads (median B) |",
        "| **geomean** of",
    ]
    expect_rows(smoke_output, "litbridge vs pyte (same run)", rows)


@pytest.mark.timeout(960)
def test_spawn_benchmark_runs_at_smoke_size(smoke_output: str) -> None:
    """fork (ptyprocess) against the compiled vfork spawner: needs nothing fetched, never skipped on Linux."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the compiled spawner is Linux-only")
    rows = [
        "| spawn latency p50 | RSS ",
        "| sessions spawned per second | 5 creates, one connection |",
        "| sessions ready per second | 5 creates, one connection |",
    ]
    expect_rows(smoke_output, "litbridge spawn, fork vs vfork (same run)", rows)


@pytest.mark.timeout(960)
def test_accuracy_benchmark_runs_at_smoke_size(smoke_output: str) -> None:
    """Replays of the recordings in the repository on a virtual clock: nothing to fetch, never skipped."""
    rows = [
        "| CLI | recordings (scored) | turns | right state |",
        "| claude | 1 (1) |",
        "| codex | 1 (1) |",
        "| gemini | 1 (1) |",
        "| copilot | 1 (1) |",
        "| opencode | 1 (1) |",
    ]
    expect_rows(smoke_output, "litbridge state accuracy against the CLIs' own records (same run)", rows)


@pytest.mark.timeout(960)
def test_screen_rules_benchmark_runs_at_smoke_size(smoke_output: str) -> None:
    """Replays of the recordings in the repository on a virtual clock: nothing to fetch, never skipped."""
    rows = [
        "| CLI | recording | CPU per replay | rules + tick | share | target | verdict |",
        "| claude | **all 1** |",
        "| codex | **all 1** |",
        "| gemini | **all 1** |",
    ]
    expect_rows(smoke_output, "litbridge screen rules + streaming tick, CPU per replay (same run)", rows)


@pytest.mark.timeout(960)
def test_records_benchmark_runs_at_smoke_size(smoke_output: str) -> None:
    rows = [
        "| sessions in one folder | one roll check each (CPU) | per session |",
        "| 20 sessions, 20 new files |",
    ]
    expect_rows(smoke_output, "litbridge record following, sessions sharing a folder", rows)


@pytest.mark.timeout(960)
def test_smoke_size_judges_no_target(smoke_output: str) -> None:
    judges_no_target(smoke_output, at_least=5)


def test_benchmark_plugin_flags_are_accepted() -> None:
    """`pytest benchmarks --benchmark-only` (the plugin's own flag, as its docs use it) collects, not "unrecognized
    arguments": the project's addopts must not switch pytest-benchmark off."""
    proc = pytest_in_benchmarks(["benchmarks", "--benchmark-only", "--collect-only", "-q"])
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "unrecognized arguments" not in out
    assert "bench_emulator.py::" in out, out[-3000:]


def test_a_benchmark_file_named_on_the_command_line_runs_once() -> None:
    """`pytest benchmarks/bench_web.py` collects its tests once (the conftest's collector used to add a second copy,
    so every suite ran twice and printed every row twice)."""
    proc = pytest_in_benchmarks(
        ["benchmarks/bench_web.py", "benchmarks/bench_emulator.py", "--collect-only", "-q"]
    )
    ids = [line for line in proc.stdout.splitlines() if "::" in line]
    assert proc.returncode == 0 and ids, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1][:5]


def test_the_smoke_groups_cover_every_benchmark_file() -> None:
    """Each `benchmarks/bench_*.py` is in exactly one smoke group, so a new suite cannot go unrun."""
    import test_smoke_clis
    import test_smoke_daemon

    groups = [*FILES, *test_smoke_daemon.FILES, *test_smoke_clis.FILES]
    on_disk = sorted(p.name for p in (ROOT / "benchmarks").glob("bench_*.py"))
    assert sorted(groups) == on_disk
