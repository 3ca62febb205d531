"""The Claude recordings the suite reads ship in the repository, so a clone runs every capture test (no skip).

Guards the trimmed copy under tests/fixtures/captures/claude/: each capture keeps the files the tests and
benchmarks open (see that folder's README), and `fetch_fixtures.CAPTURES` points at it by default.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import fetch_fixtures

REPO_CAPTURES = Path(__file__).resolve().parent / "fixtures" / "captures" / "claude"
CAPTURE_NAMES = sorted(p.name for p in REPO_CAPTURES.iterdir() if p.is_dir())


def test_captures_default_to_the_repository_copy() -> None:
    if "LITBRIDGE_CAPTURES" in os.environ:
        pytest.skip("$LITBRIDGE_CAPTURES overrides the default on purpose")
    assert fetch_fixtures.CAPTURES == REPO_CAPTURES


def test_all_sixteen_recordings_are_present() -> None:
    assert len(CAPTURE_NAMES) == 16, CAPTURE_NAMES
    assert CAPTURE_NAMES[0] == "s01a_startup_dialogs" and CAPTURE_NAMES[-1] == "s10_program_status_lifecycle"


@pytest.mark.parametrize("name", CAPTURE_NAMES)
def test_capture_has_what_the_tests_read(name: str) -> None:
    cap = REPO_CAPTURES / name
    # keys.jsonl: `litbridge replay` types the recorder's keys, so a replay without them ends differently
    for f in ("chunks.jsonl", "keys.jsonl", "meta.json", "timeline.txt"):
        assert (cap / f).is_file(), f"{name}/{f} missing"
    meta = json.loads((cap / "meta.json").read_text())
    assert (meta["cols"], meta["rows"]) == (200, 50)
    first = json.loads((cap / "chunks.jsonl").read_text().splitlines()[0])
    assert {"t", "n", "b64"} <= first.keys()
    assert list((cap / "screens").glob("*.txt")), f"{name} has no screens"
    # every transcript the watcher saw is there: the replay grows it from this copy
    watch = cap / "transcript_watch.jsonl"
    if watch.exists():
        for line in watch.read_text().splitlines():
            f = Path(json.loads(line)["file"]).name
            assert list((cap / "transcripts").rglob(f)), f"{name}: transcript {f} missing"


class _Runs:
    """Records the commands fetch_fixtures runs instead of running them (each one succeeds)."""

    def __init__(self) -> None:
        self.cmds: list[list[str]] = []

    def __call__(self, cmd: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        self.cmds.append(list(cmd))
        return subprocess.CompletedProcess(cmd, 0)


@pytest.mark.parametrize(
    ("euid", "has_sudo", "expected"),
    [(0, False, []), (1001, True, ["sudo", "-n"]), (1001, False, None)],
    ids=["root", "passwordless-sudo", "no-way-to-root"],
)
def test_system_packages_install_as_root_or_through_passwordless_sudo(
    monkeypatch: pytest.MonkeyPatch, euid: int, has_sudo: bool, expected: list[str] | None
) -> None:
    """GitHub's runners are a non-root user with passwordless sudo: the browser and shell tests' packages
    install there through `sudo -n` (they used to be skipped), as root directly, and nowhere else."""
    runs = _Runs()
    tools = {"apt-get": "/usr/bin/apt-get", **({"sudo": "/usr/bin/sudo"} if has_sudo else {})}
    monkeypatch.setattr(fetch_fixtures.sys, "platform", "linux")
    monkeypatch.setattr(fetch_fixtures.os, "geteuid", lambda: euid)
    monkeypatch.setattr(fetch_fixtures.shutil, "which", tools.get)
    monkeypatch.setattr(fetch_fixtures.subprocess, "run", runs)
    monkeypatch.setattr(fetch_fixtures, "_system_binary", lambda package: None)

    fetch_fixtures.fetch_system_packages()

    installs = [c for c in runs.cmds if "install" in c]
    if expected is None:
        assert not installs, runs.cmds
        return
    assert installs, runs.cmds
    (install,) = installs
    assert install[: len(expected)] == expected
    rest = install[len(expected) :]
    assert rest[:3] == ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get"]
    assert rest[3:] == ["install", "-y", "-q", *fetch_fixtures.SYSTEM_PACKAGES]


def test_one_unavailable_system_package_does_not_keep_the_others_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the joint install fails (stale lists, or a name the distribution lacks), the lists are updated and
    each package is installed on its own."""
    cmds: list[list[str]] = []

    def run(cmd: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        cmds.append(list(cmd))
        return subprocess.CompletedProcess(cmd, 100 if len(cmds) == 1 else 0)

    monkeypatch.setattr(fetch_fixtures, "apt_get_prefix", lambda: [])
    monkeypatch.setattr(fetch_fixtures.subprocess, "run", run)
    monkeypatch.setattr(fetch_fixtures, "_system_binary", lambda package: None)

    fetch_fixtures.fetch_system_packages()

    apt = ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get"]
    packages = list(fetch_fixtures.SYSTEM_PACKAGES)
    assert cmds == [
        [*apt, "install", "-y", "-q", *packages],
        [*apt, "update", "-q"],
        *([*apt, "install", "-y", "-q", p] for p in packages),
    ]
