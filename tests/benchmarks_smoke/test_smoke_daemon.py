"""CI check that the daemon-level benchmark suites (latency and scale through a real `litbridge serve`, the web view
in Chromium, the fleet over a real nats-server) run end to end at their tiny smoke size (no speed asserted)."""

from __future__ import annotations

import shutil

import pytest
from smoke_run import expect_rows, judges_no_target, measured

from fetch_fixtures import CAPTURES, chromium_binary

FILES = ["bench_daemon.py", "bench_web.py", "bench_fleet.py"]


@pytest.mark.timeout(960)
def test_daemon_benchmarks_run_at_smoke_size(smoke_output: str) -> None:
    assert (CAPTURES / "s08a_first_session" / "chunks.jsonl").exists(), f"no s08a recording under {CAPTURES}"
    rows = [
        "| latency | PTY write → replace, p50 |",
        "| latency | PTY write → state, p99 |",
        "| latency | JSONL end_turn → complete, p99 |",
        "| scale N=2 | daemon CPU, % of one core |",
        "| scale N=2 | daemon RSS peak |",
        "| scale N=2 | daemon CPU per streaming session |",
        "| scale N=2 | fake CLIs' CPU, % of one core |",
        "| scale N=2 | bytes per client per turn |",
        "| scale N=2 | sessions spawned per second |",
        "| scale N=2 | machine CPU busy (turns) |",
        "| scale N=2 | machine CPU busy (creates) |",
        "| streamed answer | append client: bytes / answer size |",
    ]
    expect_rows(smoke_output, "litbridge daemon (same run)", rows)
    for phase in ("turns", "creates"):  # a share of every CPU's time, and the run itself kept one busy
        row = f"scale N=2 | machine CPU busy ({phase})"
        busy = measured(smoke_output, "litbridge daemon (same run)", row)
        assert 0 < busy <= 100, (row, busy)
        line = next(x for x in smoke_output.splitlines() if x.startswith(f"| {row} | "))
        assert "the daemon" in line and "the CLIs it started" in line, line


@pytest.mark.timeout(960)
def test_web_benchmark_runs_at_smoke_size(smoke_output: str) -> None:
    if chromium_binary() is None:
        pytest.skip("no Chromium (tests/fetch_fixtures.py installs it as root)")
    expect_rows(smoke_output, "litbridge web view (same run)", ["| daemon CPU, 3 sessions printing |"])


@pytest.mark.timeout(960)
def test_fleet_benchmark_runs_at_smoke_size(smoke_output: str) -> None:
    """Through a real nats-server (the benchmark skips, saying why, without nats-server or nats-py)."""
    if shutil.which("nats-server") is None:
        pytest.skip("no nats-server (tests/fetch_fixtures.py installs it as root)")
    pytest.importorskip("nats")
    rows = ["| tick | added latency, stream vs local socket | p99 |"]
    if "Claude recordings missing" not in smoke_output:  # the replay workload skips, saying so, without them
        rows.append("| replay | added latency, stream vs local socket | p99 |")
    expect_rows(smoke_output, "litbridge fleet over NATS (same run)", rows)


@pytest.mark.timeout(960)
def test_smoke_size_judges_no_target(smoke_output: str) -> None:
    judges_no_target(smoke_output, at_least=1)
