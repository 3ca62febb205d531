"""CI check that the real-CLI latency benchmarks (each CLI offline against its mock, through a real `litbridge
serve`) run end to end at their tiny smoke size (no speed asserted), and each measured at least one turn. Each
skips, saying why, where its CLI was not fetched."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from smoke_run import expect_rows, judges_no_target, measured

import fetch_fixtures as fx

FILES = [
    "bench_codex.py",
    "bench_gemini.py",
    "bench_copilot.py",
    "bench_pi.py",
    "bench_qwen.py",
    "bench_kimi.py",
    "bench_opencode.py",
]


@dataclass(frozen=True)
class Bench:
    """One CLI's benchmark: why it cannot run here, its table's title and rows (the first is a measured figure)."""

    missing: Callable[[], str | None]
    title: str
    rows: tuple[str, ...]


LAST_BYTE, READY = "mock's last byte → complete, p50", "create → ready, p50"
BENCHES = {
    "codex": Bench(
        fx.codex_unavailable,
        "litbridge codex driver (same run)",
        ("mock response.completed → complete, p50", "rollout task_complete line → complete, p99", READY),
    ),
    # from this process's environment (in CI that has CI=true: the driver must still start the interactive TUI)
    "gemini": Bench(
        fx.gemini_missing,
        "litbridge + real Gemini CLI 0.61.0 (same run)",
        ("mock's last chunk → complete, p50", READY),
    ),
    "copilot": Bench(
        fx.copilot_missing,
        "litbridge + real Copilot CLI 1.0.102 (same run)",
        (LAST_BYTE, "events.jsonl write → complete, p50", READY),
    ),
    "pi": Bench(fx.pi_missing, "litbridge + real Pi 0.73.1 (same run)", (LAST_BYTE, READY)),
    "qwen": Bench(
        lambda: fx.qwen_missing() or fx.node22_missing(),
        "litbridge + real Qwen Code 0.24.4 (same run)",
        (LAST_BYTE, READY),
    ),
    "kimi": Bench(
        lambda: fx.kimi_missing() or fx.node22_missing(),
        "litbridge + real Kimi Code 2.1.0 (same run)",
        (LAST_BYTE, "wire.jsonl write → complete, p50", READY),
    ),
    "opencode": Bench(
        fx.opencode_missing,
        "litbridge + real opencode 1.18.33 (same run)",
        (LAST_BYTE, "database write → complete, p50", READY),
    ),
}


@pytest.mark.timeout(960)
@pytest.mark.parametrize("cli", list(BENCHES))
def test_cli_benchmark_runs_at_smoke_size(smoke_output: str, cli: str) -> None:
    bench = BENCHES[cli]
    reason = bench.missing()
    if reason:
        pytest.skip(reason)
    expect_rows(smoke_output, bench.title, [f"| {row} |" for row in bench.rows])
    measured(smoke_output, bench.title, bench.rows[0])


def test_every_cli_benchmark_is_checked() -> None:
    assert sorted(f"bench_{cli}.py" for cli in BENCHES) == sorted(FILES)


@pytest.mark.timeout(960)
def test_smoke_size_judges_no_target(smoke_output: str) -> None:
    judges_no_target(smoke_output, at_least=0)
