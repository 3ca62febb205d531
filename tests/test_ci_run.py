"""CI runs exactly what the README tells a newcomer: its test command appears verbatim in `.ci/run`."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_the_readmes_test_command_verbatim() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    fence = lines.index("```sh")
    install, test = lines[fence + 1], lines[fence + 2]
    assert install.startswith("python3 -m venv .venv ") and "litbridge serve" in install
    assert test.startswith(".venv/bin/pip install '.[test]'") and "pytest" in test
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test in run, "the README's test command must be a line of .ci/run, unchanged"
    assert "python3 -m venv .venv" in "\n".join(run) and "rm -rf .venv" not in "\n".join(run)
