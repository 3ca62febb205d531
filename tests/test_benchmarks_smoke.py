"""CI check that the benchmark suite imports and runs end to end at its tiny smoke size (no speed asserted).

Runs `python -m pytest benchmarks -p benchmark` with LITBRIDGE_BENCH_SMOKE=1 in a subprocess, exactly the
documented benchmark command, and checks that the measurements and the ratio table came out.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from fetch_fixtures import CAPTURES  # tests/ is on sys.path (the rootdir of this module)

ROOT = Path(__file__).resolve().parent.parent


def test_benchmarks_run_at_smoke_size() -> None:
    env = {**os.environ, "LITBRIDGE_BENCH_SMOKE": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "benchmarks", "-p", "benchmark", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-5000:]
    assert "litbridge vs pyte (same run)" in out, out[-5000:]
    rows = ["| redraw | full 200x50 frame", "| display |", "| memory | per screen [tracemalloc] |"]
    if any(CAPTURES.glob("*/chunks.jsonl")):  # the Claude recordings live beside the project (../shared)
        rows.append("| throughput | claude:all | MB/s |")
    for row in rows:
        assert row in out, f"missing {row!r} in:\n{out[-5000:]}"
