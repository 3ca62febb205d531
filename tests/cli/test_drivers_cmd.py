"""`litbridge drivers`: the versions each CLI's rules know, the version installed on PATH (known or not) and the
record the driver follows, as text and as JSON lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def _fake(bindir: Path, name: str, version_line: str) -> None:
    exe = bindir / name
    exe.write_text(f'#!/bin/sh\n[ "$1" = "--version" ] && echo "{version_line}"\nexit 0\n')
    exe.chmod(0o755)


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    bindir = tmp_path / "bin"
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}/usr/bin{os.pathsep}/bin"}
    return subprocess.run(
        [sys.executable, "-m", "litbridge", "drivers", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )


def test_drivers_json_says_which_installed_versions_the_rules_know(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _fake(bindir, "claude", "2.1.328 (Claude Code)")
    _fake(bindir, "codex", "codex-cli 0.999.1")
    rows = {r["cli"]: r for r in map(json.loads, _run(tmp_path, "--json").stdout.splitlines())}
    assert {"claude", "codex", "gemini", "rift"} <= set(rows)
    claude, codex, gemini = rows["claude"], rows["codex"], rows["gemini"]
    assert claude["versions"] == ["2.1"] and claude["installed"] == "2.1.328" and claude["known"] is True
    assert claude["path"] == str(bindir / "claude")
    assert claude["driver"] == "litbridge.drivers.claude.driver.ClaudeDriver"
    assert claude["record"]["shape"] == "jsonl" and "<session id>.jsonl" in claude["record"]["source"]
    assert codex["versions"] == ["0.169"] and codex["installed"] == "0.999.1" and codex["known"] is False
    assert "rollout" in codex["record"]["source"]
    assert gemini["path"] is None and gemini["installed"] is None and gemini["known"] is None
    assert gemini["versions"] == ["0.61"] and "chats" in gemini["record"]["source"]
    assert rows["rift"]["versions"] == [] and rows["rift"]["record"] is None


def test_drivers_table(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _fake(bindir, "codex", "codex-cli 0.999.1")
    out = _run(tmp_path).stdout
    assert "codex\n" in out and "rules for: 0.169" in out
    assert "installed: 0.999.1 (NOT known: newest rules)" in out
    assert "gemini\n" in out and "installed: not on PATH" in out


def test_each_driver_names_the_version_its_real_binary_tests_run_against() -> None:
    """`CliSpec.tested` (what `litbridge drivers` shows as `tested`) is the version `tests/fetch_fixtures.py`
    installs for the real-binary tests: the two cannot drift apart."""
    import fetch_fixtures
    from litbridge import drivers

    pinned = {
        name.removesuffix("_VERSION").lower(): value
        for name, value in vars(fetch_fixtures).items()
        if name.endswith("_VERSION") and isinstance(value, str) and not name.startswith("NODE")
    }
    checked = 0
    for cli in drivers.clis():
        spec = getattr(drivers.get_driver(cli), "CLI", None)
        if spec is None or cli not in pinned:
            continue
        assert spec.tested == (pinned[cli],), cli
        checked += 1
    assert checked >= 5
