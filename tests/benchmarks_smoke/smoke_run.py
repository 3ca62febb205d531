"""One run of the documented benchmark command at smoke size over a group of `benchmarks/` files, and the checks on
its output that the smoke tests share.

The suites are split into three groups, one test module each, so the suite's workers (`-n 4 --dist loadfile`)
run them side by side instead of one worker carrying every benchmark.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def bench_env() -> dict[str, str]:
    """The benchmarks' own pytest at smoke size, never as an xdist worker: pytest-benchmark switches itself off
    when it sees the outer run's `PYTEST_XDIST_*` variables (the suite runs under `-n`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    return {**env, "LITBRIDGE_BENCH_SMOKE": "1"}


def pytest_in_benchmarks(args: list[str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`python -m pytest ARGS` from the repository's root with the benchmarks' environment (smoke size)."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=ROOT,
        env=bench_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_smoke(files: list[str]) -> str:
    """`python -m pytest benchmarks/<files> -p benchmark` at smoke size; its output (it must exit 0)."""
    args = [f"benchmarks/{name}" for name in files]
    proc = pytest_in_benchmarks(
        [*args, "-p", "benchmark", "-q", "-p", "no:cacheprovider", "-rfEs"], timeout=900
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, failures(out)
    return out


def failures(out: str) -> str:
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


def expect_rows(out: str, title: str, rows: list[str]) -> None:
    assert title in out, out[-5000:]
    for row in rows:
        assert row in out, f"missing {row!r} in:\n{out[-5000:]}"


def measured(out: str, title: str, row: str) -> float:
    """In the table under `title`, the row (its leading cells, "section | case" or "case") holds a figure, not
    `n/a`: the benchmark did what it measures (a real CLI that never finished a turn at smoke size is a broken
    set-up, which the benchmark only reports as a row). Returns the figure."""
    table = out.split(title, 1)[-1].split("\n=", 1)[0]
    prefix = f"| {row} | "
    got = [line for line in table.splitlines() if line.startswith(prefix)]
    assert got, f"no {row!r} row under {title!r} in:\n{out[-5000:]}"
    figure = re.match(r"[0-9][0-9,]*(\.[0-9]+)?", got[0][len(prefix) :])
    assert figure, got[0]
    return float(figure.group().replace(",", ""))


def judges_no_target(out: str, at_least: int) -> None:
    """A single pass of a few µs is timer noise: the tables print their targets but no pass/SHORT verdict."""
    tables = [line for line in out.splitlines() if line.startswith("| ")]
    judged = [line for line in tables if "SHORT" in line or "| pass |" in line or "** pass (" in line]
    assert not judged, "\n".join(judged)
    assert sum("not judged (smoke)" in line for line in tables) >= at_least, "\n".join(tables)
