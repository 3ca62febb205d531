"""CI check that the real-CLI latency benchmarks (each CLI offline against its mock, through a real `litbridge
serve`) run end to end at their tiny smoke size (no speed asserted). Each skips, saying why, where its CLI was not
fetched."""

from __future__ import annotations

import pytest
from smoke_run import expect_rows, judges_no_target, measured, run_smoke

from fetch_fixtures import (
    codex_unavailable,
    copilot_missing,
    gemini_missing,
    kimi_missing,
    node22_missing,
    opencode_missing,
    pi_missing,
    qwen_missing,
)

FILES = [
    "bench_codex.py",
    "bench_gemini.py",
    "bench_copilot.py",
    "bench_pi.py",
    "bench_qwen.py",
    "bench_kimi.py",
    "bench_opencode.py",
]


@pytest.fixture(scope="module")
def smoke_output() -> str:
    """One run of this group at smoke size, shared by the checks below (each suite's rows)."""
    return run_smoke(FILES)


def _skip_if(reason: str | None) -> None:
    if reason:
        pytest.skip(reason)


@pytest.mark.timeout(960)
def test_codex_benchmark_runs_at_smoke_size(smoke_output: str) -> None:
    _skip_if(codex_unavailable())
    rows = [
        "| mock response.completed → complete, p50 |",
        "| rollout task_complete line → complete, p99 |",
        "| create → ready, p50 |",
    ]
    expect_rows(smoke_output, "litbridge codex driver (same run)", rows)
    measured(smoke_output, "litbridge codex driver (same run)", "mock response.completed → complete, p50")


@pytest.mark.timeout(960)
def test_gemini_benchmark_runs_at_smoke_size(smoke_output: str) -> None:
    """From this process's environment (in CI that has CI=true: the driver must still start the interactive TUI)."""
    _skip_if(gemini_missing())
    rows = ["| mock's last chunk → complete, p50 |", "| create → ready, p50 |"]
    expect_rows(smoke_output, "litbridge + real Gemini CLI 0.61.0 (same run)", rows)
    measured(
        smoke_output, "litbridge + real Gemini CLI 0.61.0 (same run)", "mock's last chunk → complete, p50"
    )


@pytest.mark.timeout(960)
def test_copilot_benchmark_runs_at_smoke_size(smoke_output: str) -> None:
    _skip_if(copilot_missing())
    rows = [
        "| mock's last byte → complete, p50 |",
        "| events.jsonl write → complete, p50 |",
        "| create → ready, p50 |",
    ]
    expect_rows(smoke_output, "litbridge + real Copilot CLI 1.0.102 (same run)", rows)
    measured(
        smoke_output, "litbridge + real Copilot CLI 1.0.102 (same run)", "mock's last byte → complete, p50"
    )


@pytest.mark.timeout(960)
def test_pi_benchmark_runs_at_smoke_size(smoke_output: str) -> None:
    _skip_if(pi_missing())
    rows = ["| mock's last byte → complete, p50 |", "| create → ready, p50 |"]
    expect_rows(smoke_output, "litbridge + real Pi 0.73.1 (same run)", rows)
    measured(smoke_output, "litbridge + real Pi 0.73.1 (same run)", "mock's last byte → complete, p50")


@pytest.mark.timeout(960)
def test_qwen_benchmark_runs_at_smoke_size(smoke_output: str) -> None:
    _skip_if(qwen_missing() or node22_missing())
    rows = ["| mock's last byte → complete, p50 |", "| create → ready, p50 |"]
    expect_rows(smoke_output, "litbridge + real Qwen Code 0.24.4 (same run)", rows)
    measured(smoke_output, "litbridge + real Qwen Code 0.24.4 (same run)", "mock's last byte → complete, p50")


@pytest.mark.timeout(960)
def test_kimi_benchmark_runs_at_smoke_size(smoke_output: str) -> None:
    _skip_if(kimi_missing() or node22_missing())
    rows = [
        "| mock's last byte → complete, p50 |",
        "| wire.jsonl write → complete, p50 |",
        "| create → ready, p50 |",
    ]
    expect_rows(smoke_output, "litbridge + real Kimi Code 2.1.0 (same run)", rows)
    measured(smoke_output, "litbridge + real Kimi Code 2.1.0 (same run)", "mock's last byte → complete, p50")


@pytest.mark.timeout(960)
def test_opencode_benchmark_runs_at_smoke_size(smoke_output: str) -> None:
    _skip_if(opencode_missing())
    rows = [
        "| mock's last byte → complete, p50 |",
        "| database write → complete, p50 |",
        "| create → ready, p50 |",
    ]
    expect_rows(smoke_output, "litbridge + real opencode 1.18.33 (same run)", rows)
    measured(smoke_output, "litbridge + real opencode 1.18.33 (same run)", "mock's last byte → complete, p50")


@pytest.mark.timeout(960)
def test_smoke_size_judges_no_target(smoke_output: str) -> None:
    judges_no_target(smoke_output, at_least=0)
