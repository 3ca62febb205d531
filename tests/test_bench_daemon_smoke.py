"""CI check that the daemon benchmarks (benchmarks/bench_daemon.py) import and run at their smoke size.

Runs the documented benchmark command restricted to the daemon module, with LITBRIDGE_BENCH_SMOKE=1, in a
subprocess, and checks that every measurement row came out. No speed is asserted (the rows say pass/SHORT).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fetch_fixtures import CAPTURES  # tests/ is on sys.path (the rootdir of this module)

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.timeout(600)
def test_daemon_benchmarks_run_at_smoke_size() -> None:
    env = {**os.environ, "LITBRIDGE_BENCH_SMOKE": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "benchmarks", "-p", "benchmark", "-q", "-p", "no:cacheprovider",
         "-k", "bench_daemon", "-rs"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=580,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-5000:]
    assert "litbridge daemon (same run)" in out, out[-5000:]
    rows = ["| latency | PTY write → replace, p50 |", "| latency | PTY write → state, p99 |"]
    if (CAPTURES / "s08a_first_session" / "chunks.jsonl").exists():
        rows += ["| latency | JSONL end_turn → complete, p99 |", "| scale N=2 | daemon CPU, % of one core |",
                 "| scale N=2 | daemon RSS peak |", "| scale N=2 | sessions spawned per second |"]
    for row in rows:
        assert row in out, f"missing {row!r} in:\n{out[-5000:]}"
