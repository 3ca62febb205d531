"""pyte 0.8.2's own test suite, run unmodified against `litbridge.pyte` (and against pyte, as the baseline).

Copies the sdist's `tests/` into a temp dir, drops in `pyte_conftest.py` (module aliasing), runs pytest in a
subprocess and parses the summary. Does not judge individual pyte tests; the counts are the gate.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
BASELINE_PASSED = 114  # pyte 0.8.2 on itself: 114 passed, 1 xfailed (test_draw_width2_irm)
SUMMARY_RE = re.compile(r"(\d+) (passed|failed|xfailed|xpassed|skipped|errors?|deselected)")


def run_pyte_suite(
    pyte_tests: Path, tmp_path: Path, impl: str, extra_env: dict[str, str] | None = None
) -> tuple[dict[str, int], str]:
    """Run the copied suite with `pyte` aliased to `impl`; return the summary counts and the full output."""
    if not (pyte_tests / "test_screen.py").is_file():
        pytest.skip(f"pyte 0.8.2 sdist tests not found at {pyte_tests}: run `python tests/fetch_fixtures.py`")
    work = tmp_path / "pyte-tests"
    shutil.copytree(pyte_tests, work)
    shutil.copy(HERE / "pyte_conftest.py", work / "conftest.py")
    (work / "pytest.ini").write_text("[pytest]\n")  # isolate from the project's pyproject (addopts, markers)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTE_"))}
    env.update({"PYTE_IMPL": impl, "PYTHONDONTWRITEBYTECODE": "1"})
    env.update(extra_env or {})
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-rfE",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:benchmark",
            "-p",
            "no:randomly",
            "-p",
            "no:asyncio",
            "--rootdir",
            str(work),
            str(work),
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = proc.stdout + proc.stderr
    summary = next((ln for ln in reversed(out.splitlines()) if SUMMARY_RE.search(ln) and " in " in ln), "")
    counts: dict[str, int] = {}
    for n, kind in SUMMARY_RE.findall(summary):
        counts["errors" if kind.startswith("error") else kind] = int(n)
    assert summary, f"no pytest summary line (exit {proc.returncode}):\n{out[-4000:]}"
    return counts, out


def assert_baseline(counts: dict[str, int], out: str) -> None:
    detail = f"counts={counts}\n{out[-6000:]}"
    assert counts.get("failed", 0) == 0, detail
    assert counts.get("errors", 0) == 0, detail
    assert counts.get("passed", 0) >= BASELINE_PASSED, detail
    assert counts.get("xfailed", 0) <= 1, detail


def test_pyte_suite_baseline_on_real_pyte(pyte_tests_dir: Path, tmp_path: Path) -> None:
    """The harness itself: real pyte through the alias gives pyte's published baseline."""
    counts, out = run_pyte_suite(pyte_tests_dir, tmp_path, "pyte")
    assert "pyte-impl: pyte Screen=pyte.screens.Screen" in out
    assert_baseline(counts, out)


@pytest.mark.parametrize("no_ext", [False, True], ids=["default", "no-extensions"])
def test_pyte_suite_on_litbridge(pyte_tests_dir: Path, tmp_path: Path, no_ext: bool) -> None:
    """The gate: pyte's suite passes against `litbridge.pyte` (compiled core, and the forced fallback)."""
    env = {"LITBRIDGE_NO_EXTENSIONS": "1"} if no_ext else {}
    probe = subprocess.run(
        [sys.executable, "-c", "import litbridge.pyte"],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
    )
    if probe.returncode != 0:
        pytest.skip(f"litbridge.pyte is not importable yet: {probe.stderr.strip().splitlines()[-1:]}")
    counts, out = run_pyte_suite(pyte_tests_dir, tmp_path, "litbridge.pyte", env)
    assert "pyte-impl: litbridge.pyte " in out, out[:2000]
    assert_baseline(counts, out)


@pytest.mark.parametrize("impl", ["pyte", "litbridge.pyte"])
def test_pyte_suite_harness_can_fail(pyte_tests_dir: Path, tmp_path: Path, impl: str) -> None:
    """A Screen whose `display` right-strips must fail many pyte tests, so the gate is not vacuous."""
    if impl != "pyte":
        probe = subprocess.run(
            [sys.executable, "-c", "import litbridge.pyte"], capture_output=True, text=True
        )
        if probe.returncode != 0:
            pytest.skip("litbridge.pyte is not importable yet")
    counts, out = run_pyte_suite(pyte_tests_dir, tmp_path, impl, {"PYTE_SUITE_BREAK": "rstrip-display"})
    assert "RstripScreen" in out, out[:2000]
    assert counts.get("failed", 0) >= 10, f"counts={counts}\n{out[-3000:]}"
