"""CI runs exactly what the README tells a newcomer: its set-up lines appear in `.ci/run`."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_setup() -> tuple[str, str]:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    fence = lines.index("```sh")
    assert lines[fence + 3] == "```", "the README opens with exactly two set-up commands"
    return lines[fence + 1], lines[fence + 2]


def test_the_readme_opens_with_the_install_and_the_test_command() -> None:
    install, test = _readme_setup()
    venv, pip_install, serve = install.split(" && ")
    assert venv == "python3 -m venv .venv" and serve == ".venv/bin/litbridge serve"
    assert pip_install == ".venv/bin/pip install ."
    # the test line installs only the test dependency group: litbridge itself is not rebuilt
    assert "--group test" in test and "'.[test]'" not in test and "install ." not in test
    # four pytest-xdist workers on two cores: most tests wait on processes and sockets (idle, 2026-12-03: 13 min 32 s
    # on two workers, 10 min 34 s on three, 9 min 30 s on four)
    assert test.endswith("&& .venv/bin/python -m pytest -q -n 4 --dist loadfile")


def test_ci_runs_the_readmes_set_up_lines() -> None:
    install, test = _readme_setup()
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test in run, "the README's test command must be a line of .ci/run, unchanged"
    venv, pip_install, _serve = install.split(" && ")
    assert pip_install in run, "the first line's install runs in .ci/run too (the test line does not install)"
    assert any(venv in line for line in run) and "rm -rf .venv" not in "\n".join(run)
    assert not any("litbridge serve" in line for line in run if not line.startswith("#"))
    assert run.index(pip_install) < run.index(test)


def test_the_readme_says_what_ci_run_does() -> None:
    """It used to say `.ci/run` does "both" lines; it runs the first without the daemon."""
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert "does both" not in readme
    assert "without starting the daemon" in readme and "second line verbatim" in readme
