"""CI check that the benchmark suites import and run end to end at their tiny smoke size (no speed asserted).

Runs `python -m pytest benchmarks -p benchmark` with LITBRIDGE_BENCH_SMOKE=1 once, in a subprocess, exactly the
documented benchmark command, and checks that each suite's measurements came out (emulator vs pyte, daemon,
spawn paths, Codex and Gemini drivers, web view, state accuracy) and that no verdict is drawn at that size.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fetch_fixtures import CAPTURES, chromium_binary, codex_unavailable, copilot_missing, gemini_missing

ROOT = Path(__file__).resolve().parent.parent


def _bench_env() -> dict[str, str]:
    """The benchmarks' own pytest at smoke size, never as an xdist worker: pytest-benchmark switches itself off
    when it sees the outer run's `PYTEST_XDIST_*` variables (the suite runs under `-n`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    return {**env, "LITBRIDGE_BENCH_SMOKE": "1"}


@pytest.fixture(scope="module")
def smoke_output() -> str:
    """One run of the documented command at smoke size, shared by the checks below (each suite's rows)."""
    env = _bench_env()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "benchmarks",
            "-p",
            "benchmark",
            "-q",
            "-p",
            "no:cacheprovider",
            "-rfEs",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, _failures(out)
    return out


def _failures(out: str) -> str:
    """What failed, not the tables after it: the FAILURES/ERRORS sections (up to the benchmark tables pytest-benchmark
    prints next) and the short summary's FAILED/ERROR lines; a plain tail of a benchmark run shows only tables."""
    lines = out.splitlines()
    heads = [i for i, line in enumerate(lines) if re.match(r"=+ (FAILURES|ERRORS) =+$", line)]
    if not heads:
        return out[-5000:]
    body: list[str] = []
    for line in lines[heads[0] :]:
        if body and (re.match(r"-+ benchmark", line) or line.startswith("Legend:")):
            break
        body.append(line)
    summary = [line for line in lines if line.startswith(("FAILED ", "ERROR "))]
    return "\n".join(body)[-8000:] + "\n" + "\n".join(summary)


def _rows(out: str, title: str, rows: list[str]) -> None:
    assert title in out, out[-5000:]
    for row in rows:
        assert row in out, f"missing {row!r} in:\n{out[-5000:]}"


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
    _rows(smoke_output, "litbridge vs pyte (same run)", rows)


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
        "| streamed answer | append client: bytes / answer size |",
    ]
    _rows(smoke_output, "litbridge daemon (same run)", rows)


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
    _rows(smoke_output, "litbridge spawn, fork vs vfork (same run)", rows)


@pytest.mark.timeout(960)
def test_codex_benchmark_runs_at_smoke_size(smoke_output: str) -> None:
    """Against the real Codex binary (the benchmark skips, saying why, where it was not fetched)."""
    reason = codex_unavailable()
    if reason:
        pytest.skip(reason)
    rows = [
        "| mock response.completed → complete, p50 |",
        "| rollout task_complete line → complete, p99 |",
        "| create → ready, p50 |",
    ]
    _rows(smoke_output, "litbridge codex driver (same run)", rows)


@pytest.mark.timeout(960)
def test_gemini_benchmark_runs_at_smoke_size(smoke_output: str) -> None:
    """Against the real Gemini CLI, from this process's environment (in CI that has CI=true: the driver must still
    start the interactive TUI)."""
    reason = gemini_missing()
    if reason:
        pytest.skip(reason)
    rows = ["| mock's last chunk → complete, p50 |", "| create → ready, p50 |"]
    _rows(smoke_output, "litbridge + real Gemini CLI 0.61.0 (same run)", rows)


@pytest.mark.timeout(960)
def test_copilot_benchmark_runs_at_smoke_size(smoke_output: str) -> None:
    """Against the real Copilot CLI binary, offline (the benchmark skips, saying why, where it was not fetched)."""
    reason = copilot_missing()
    if reason:
        pytest.skip(reason)
    rows = [
        "| mock's last byte → complete, p50 |",
        "| events.jsonl write → complete, p50 |",
        "| create → ready, p50 |",
    ]
    _rows(smoke_output, "litbridge + real Copilot CLI 1.0.102 (same run)", rows)


@pytest.mark.timeout(960)
def test_pi_benchmark_runs_at_smoke_size(smoke_output: str) -> None:
    """Against the real Pi, offline (the benchmark skips, saying why, where it was not fetched)."""
    from fetch_fixtures import pi_missing

    reason = pi_missing()
    if reason:
        pytest.skip(reason)
    rows = ["| mock's last byte → complete, p50 |", "| create → ready, p50 |"]
    _rows(smoke_output, "litbridge + real Pi 0.73.1 (same run)", rows)


def test_qwen_benchmark_runs_at_smoke_size(smoke_output: str) -> None:
    """Against the real Qwen Code on the Node 22 fixture, offline (the benchmark skips, saying why, without them)."""
    from fetch_fixtures import node22_missing, qwen_missing

    reason = qwen_missing() or node22_missing()
    if reason:
        pytest.skip(reason)
    rows = ["| mock's last byte → complete, p50 |", "| create → ready, p50 |"]
    _rows(smoke_output, "litbridge + real Qwen Code 0.24.4 (same run)", rows)


@pytest.mark.timeout(960)
def test_kimi_benchmark_runs_at_smoke_size(smoke_output: str) -> None:
    """Against the real Kimi Code on the Node 22 fixture, offline (the benchmark skips, saying why, without them)."""
    from fetch_fixtures import kimi_missing, node22_missing

    reason = kimi_missing() or node22_missing()
    if reason:
        pytest.skip(reason)
    rows = [
        "| mock's last byte → complete, p50 |",
        "| wire.jsonl write → complete, p50 |",
        "| create → ready, p50 |",
    ]
    _rows(smoke_output, "litbridge + real Kimi Code 2.1.0 (same run)", rows)


@pytest.mark.timeout(960)
def test_web_benchmark_runs_at_smoke_size(smoke_output: str) -> None:
    if chromium_binary() is None:
        pytest.skip("no Chromium (tests/fetch_fixtures.py installs it as root)")
    _rows(smoke_output, "litbridge web view (same run)", ["| daemon CPU, 3 sessions printing |"])


@pytest.mark.timeout(960)
def test_fleet_benchmark_runs_at_smoke_size(smoke_output: str) -> None:
    """Through a real nats-server (the benchmark skips, saying why, without nats-server or nats-py)."""
    import shutil

    if shutil.which("nats-server") is None:
        pytest.skip("no nats-server (tests/fetch_fixtures.py installs it as root)")
    pytest.importorskip("nats")
    rows = ["| tick | added latency, stream vs local socket | p99 |"]
    if "Claude recordings missing" not in smoke_output:  # the replay workload skips, saying so, without them
        rows.append("| replay | added latency, stream vs local socket | p99 |")
    _rows(smoke_output, "litbridge fleet over NATS (same run)", rows)


@pytest.mark.timeout(960)
def test_opencode_benchmark_runs_at_smoke_size(smoke_output: str) -> None:
    """Against the real opencode binary, offline (the benchmark skips, saying why, where it was not fetched); its
    recordings are in the accuracy table."""
    from fetch_fixtures import opencode_missing  # its own import line: other benches' lines stay as they are

    _rows(
        smoke_output,
        "litbridge state accuracy against the CLIs' own records (same run)",
        ["| opencode | 1 (1) |"],
    )
    reason = opencode_missing()
    if reason:
        pytest.skip(reason)
    rows = [
        "| mock's last byte → complete, p50 |",
        "| database write → complete, p50 |",
        "| create → ready, p50 |",
    ]
    _rows(smoke_output, "litbridge + real opencode 1.18.33 (same run)", rows)


@pytest.mark.timeout(960)
def test_accuracy_benchmark_runs_at_smoke_size(smoke_output: str) -> None:
    """Replays of the recordings in the repository on a virtual clock: nothing to fetch, never skipped."""
    rows = ["| CLI | recordings (scored) | turns | right state |", "| claude | 1 (1) |", "| codex | 1 (1) |"]
    _rows(
        smoke_output,
        "litbridge state accuracy against the CLIs' own records (same run)",
        [*rows, "| gemini | 1 (1) |", "| copilot | 1 (1) |"],
    )


@pytest.mark.timeout(960)
def test_screen_rules_benchmark_runs_at_smoke_size(smoke_output: str) -> None:
    """Replays of the recordings in the repository on a virtual clock: nothing to fetch, never skipped."""
    rows = [
        "| CLI | recording | CPU per replay | rules + tick | share | target | verdict |",
        "| claude | **all 1** |",
        "| codex | **all 1** |",
        "| gemini | **all 1** |",
    ]
    _rows(smoke_output, "litbridge screen rules + streaming tick, CPU per replay (same run)", rows)


@pytest.mark.timeout(960)
def test_smoke_size_judges_no_target(smoke_output: str) -> None:
    """A single pass of a few µs is timer noise: the tables print their targets but no pass/SHORT verdict."""
    tables = [line for line in smoke_output.splitlines() if line.startswith("| ")]
    judged = [line for line in tables if "SHORT" in line or "| pass |" in line or "** pass (" in line]
    assert not judged, "\n".join(judged)
    assert sum("not judged (smoke)" in line for line in tables) >= 5, "\n".join(tables)


def test_benchmark_plugin_flags_are_accepted() -> None:
    """`pytest benchmarks --benchmark-only` (the plugin's own flag, as its docs use it) collects, not "unrecognized
    arguments": the project's addopts must not switch pytest-benchmark off."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "benchmarks", "--benchmark-only", "--collect-only", "-q"],
        cwd=ROOT,
        env=_bench_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "unrecognized arguments" not in out
    assert "bench_emulator.py::" in out, out[-3000:]


def test_a_benchmark_file_named_on_the_command_line_runs_once() -> None:
    """`pytest benchmarks/bench_web.py` collects its tests once (the conftest's collector used to add a second copy,
    so every suite ran twice and printed every row twice)."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "benchmarks/bench_web.py",
            "benchmarks/bench_emulator.py",
            "--collect-only",
            "-q",
        ],
        cwd=ROOT,
        env=_bench_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    ids = [line for line in proc.stdout.splitlines() if "::" in line]
    assert proc.returncode == 0 and ids, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1][:5]
