"""The Claude recordings the suite reads ship in the repository, so a clone runs every capture test (no skip).

Guards the trimmed copy under tests/fixtures/captures/claude/: each capture keeps the files the tests and
benchmarks open (see that folder's README), and `fetch_fixtures.CAPTURES` points at it by default.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
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
    """Records the commands fetch_fixtures runs instead of running them (each one succeeds; a dry run answers
    `plan`, apt-get's `Inst` lines)."""

    def __init__(self, plan: str = "Inst zsh (5.9-4 Debian:12/stable [amd64])\n") -> None:
        self.cmds: list[list[str]] = []
        self.plan = plan

    def __call__(self, cmd: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        self.cmds.append(list(cmd))
        return subprocess.CompletedProcess(cmd, 0, stdout=self.plan if "-s" in cmd else "")

    def installs(self) -> list[list[str]]:
        """The real installs (not the `-s` dry run)."""
        return [c for c in self.cmds if "install" in c and "-s" not in c]


APT = ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get"]
INSTALL = ["install", "-y", "-q", "--no-install-recommends"]


@pytest.fixture
def no_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in CI: no terminal on stdin, so nobody is asked."""
    monkeypatch.setattr(fetch_fixtures.sys.stdin, "isatty", lambda: False, raising=False)


@pytest.mark.parametrize(
    ("euid", "has_sudo", "expected"),
    [(0, False, []), (1001, True, ["sudo", "-n"]), (1001, False, None)],
    ids=["root", "passwordless-sudo", "no-way-to-root"],
)
def test_system_packages_install_as_root_or_through_passwordless_sudo(
    monkeypatch: pytest.MonkeyPatch, no_terminal: None, euid: int, has_sudo: bool, expected: list[str] | None
) -> None:
    """GitHub's runners are a non-root user with passwordless sudo: the browser and shell tests' packages
    install there through `sudo -n` (they used to be skipped), as root directly, and nowhere else; never with
    apt's recommended packages (a plain install of chromium pulled in 123 packages and upgraded systemd)."""
    runs = _Runs()
    tools = {"apt-get": "/usr/bin/apt-get", **({"sudo": "/usr/bin/sudo"} if has_sudo else {})}
    monkeypatch.setattr(fetch_fixtures.sys, "platform", "linux")
    monkeypatch.setattr(fetch_fixtures.os, "geteuid", lambda: euid)
    monkeypatch.setattr(fetch_fixtures.shutil, "which", tools.get)
    monkeypatch.setattr(fetch_fixtures.subprocess, "run", runs)
    monkeypatch.setattr(fetch_fixtures, "_system_binary", lambda package: None)

    fetch_fixtures.fetch_system_packages()

    installs = runs.installs()
    if expected is None:
        assert not installs, runs.cmds
        return
    assert installs, runs.cmds
    (install,) = installs
    assert install[: len(expected)] == expected
    rest = install[len(expected) :]
    assert rest[:3] == APT
    assert rest[3:] == [*INSTALL, *fetch_fixtures.SYSTEM_PACKAGES]


def test_one_unavailable_system_package_does_not_keep_the_others_out(
    monkeypatch: pytest.MonkeyPatch, no_terminal: None
) -> None:
    """When the joint install fails (stale lists, or a name the distribution lacks), the lists are updated and
    each package is installed on its own."""
    cmds: list[list[str]] = []

    def run(cmd: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        cmds.append(list(cmd))
        failed = "-s" not in cmd and len([c for c in cmds if "-s" not in c]) == 1
        return subprocess.CompletedProcess(cmd, 100 if failed else 0, stdout="")

    monkeypatch.setattr(fetch_fixtures, "apt_get_prefix", lambda: [])
    monkeypatch.setattr(fetch_fixtures.subprocess, "run", run)
    monkeypatch.setattr(fetch_fixtures, "_system_binary", lambda package: None)

    fetch_fixtures.fetch_system_packages()

    packages = list(fetch_fixtures.SYSTEM_PACKAGES)
    assert cmds == [
        [*APT, "install", "-s", "--no-install-recommends", *packages],
        [*APT, *INSTALL, *packages],
        [*APT, "update", "-q"],
        *([*APT, *INSTALL, p] for p in packages),
    ]


def _at_a_terminal(monkeypatch: pytest.MonkeyPatch, answer: str) -> list[str]:
    """stdin is a terminal outside CI, and the user types `answer`; returns the questions asked."""
    asked: list[str] = []
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(fetch_fixtures.sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr("builtins.input", lambda q: asked.append(q) or answer)
    monkeypatch.setattr(fetch_fixtures, "apt_get_prefix", lambda: [])
    monkeypatch.setattr(fetch_fixtures, "_system_binary", lambda package: None)
    return asked


@pytest.mark.parametrize("answer", ["", "n", "no"])
def test_at_a_terminal_it_lists_the_packages_and_asks_before_installing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], answer: str
) -> None:
    """A user at a terminal sees the packages named and apt-get's plan (from a dry run, which changes nothing),
    is asked, and a "no" (the default) installs nothing."""
    asked = _at_a_terminal(monkeypatch, answer)
    runs = _Runs(
        "Inst chromium (142.0 Debian:12/stable [amd64])\nInst perl [5.36.0-7] (5.36.0-8 Debian:12)\n"
    )
    monkeypatch.setattr(fetch_fixtures.subprocess, "run", runs)

    found = fetch_fixtures.fetch_system_packages()

    assert asked, "nobody was asked"
    assert runs.installs() == [] and all("-s" in c for c in runs.cmds), runs.cmds
    err = capsys.readouterr().err
    assert "about to run `apt-get install --no-install-recommends chromium zsh fish nats-server`" in err
    assert "1 new packages and upgrade 1" in err and "perl [5.36.0-7]" in err
    assert found == dict.fromkeys(fetch_fixtures.SYSTEM_PACKAGES, False)


def test_at_a_terminal_a_yes_installs(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _at_a_terminal(monkeypatch, "y")
    runs = _Runs()
    monkeypatch.setattr(fetch_fixtures.subprocess, "run", runs)
    fetch_fixtures.fetch_system_packages()
    assert asked and runs.installs() == [[*APT, *INSTALL, *fetch_fixtures.SYSTEM_PACKAGES]]


@pytest.mark.parametrize("how", ["--yes", "CI"])
def test_yes_or_ci_installs_without_asking(monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """`--yes`, or `$CI` (GitHub Actions sets CI=true), goes ahead at a terminal too: `.ci/run` never waits."""
    asked = _at_a_terminal(monkeypatch, "n")
    if how == "CI":
        monkeypatch.setenv("CI", "true")
    runs = _Runs()
    monkeypatch.setattr(fetch_fixtures.subprocess, "run", runs)
    fetch_fixtures.fetch_system_packages(assume_yes=how == "--yes")
    assert not asked and runs.installs() == [[*APT, *INSTALL, *fetch_fixtures.SYSTEM_PACKAGES]]


def test_offline_downloads_and_installs_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--offline` with an empty cache runs no command at all (no pip, npm or apt-get) and reports each entry
    missing; the run still exits 0 (the tests that need them skip)."""
    runs = _Runs()
    monkeypatch.setattr(fetch_fixtures.subprocess, "run", runs)
    monkeypatch.setattr(fetch_fixtures, "apt_get_prefix", lambda: [])
    monkeypatch.setattr(fetch_fixtures, "_system_binary", lambda package: None)
    entries = [
        "CACHE",
        *(n for n, v in vars(fetch_fixtures).items() if n.endswith("_DIR") and isinstance(v, Path)),
    ]
    assert len(entries) >= 11  # the cache and every entry in it: none may be read from the real cache
    for name in entries:
        monkeypatch.setattr(fetch_fixtures, name, tmp_path / getattr(fetch_fixtures, name).name)
    monkeypatch.setattr(fetch_fixtures, "OFFLINE", False)

    assert fetch_fixtures.main(["--offline"]) == 0

    assert runs.cmds == []
    out = capsys.readouterr()
    assert "pyte sdist MISSING" in out.out and "claude MISSING" in out.out and "chromium MISSING" in out.out
    assert " ok" not in out.out, out.out  # each CLI and Node too: an entry found would be the real cache's
    assert "--offline fetches nothing" in out.err
    assert list(tmp_path.iterdir()) == []


def test_the_cache_is_per_user_keyed_by_version_and_overridable(tmp_path: Path) -> None:
    """One cache for every checkout: `$XDG_CACHE_HOME/litbridge/fixtures` (else `~/.cache/...`), an entry per
    version; `$LITBRIDGE_TEST_CACHE` overrides it."""
    show = (
        "import fetch_fixtures as f; "
        "print(f.CACHE); print(f.PYTE_DIR.name, f.CLAUDE_DIR.name, f.CODEX_DIR.name, f.GEMINI_DIR.name)"
    )
    tests = Path(__file__).resolve().parent
    base = {k: v for k, v in os.environ.items() if k not in ("LITBRIDGE_TEST_CACHE", "XDG_CACHE_HOME")}

    def cache(**env: str) -> list[str]:
        out = subprocess.run(
            [sys.executable, "-c", show], cwd=tests, env={**base, **env}, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.splitlines()

    xdg = cache(XDG_CACHE_HOME=str(tmp_path / "xdg"), HOME=str(tmp_path / "home"))
    assert xdg[0] == str(tmp_path / "xdg" / "litbridge" / "fixtures")
    v = fetch_fixtures
    assert xdg[1].split() == [
        "pyte-0.8.2",
        f"claude-code-{v.CLAUDE_VERSION}",
        f"codex-{v.CODEX_VERSION}",
        f"gemini-{v.GEMINI_VERSION}",
    ]
    assert cache(HOME=str(tmp_path / "home"))[0] == str(
        tmp_path / "home" / ".cache" / "litbridge" / "fixtures"
    )
    over = cache(LITBRIDGE_TEST_CACHE=str(tmp_path / "mine"), XDG_CACHE_HOME=str(tmp_path / "xdg"))
    assert over[0] == str(tmp_path / "mine")


@pytest.mark.parametrize(("version", "used"), [(fetch_fixtures.CLAUDE_VERSION, True), ("2.0.1", False)])
def test_a_cache_filled_before_versioned_entries_is_used_when_its_version_matches(
    tmp_path: Path, version: str, used: bool
) -> None:
    """`$LITBRIDGE_TEST_CACHE` may name a cache filled by an older fetch_fixtures (`<cache>/claude-code`, not
    keyed by version): it serves as it is when it holds the right version, so nothing is downloaded again."""
    meta = tmp_path / "claude-code" / "node_modules" / "@anthropic-ai" / "claude-code" / "package.json"
    meta.parent.mkdir(parents=True)
    meta.write_text(json.dumps({"name": "@anthropic-ai/claude-code", "version": version}))
    out = subprocess.run(
        [sys.executable, "-c", "import fetch_fixtures as f; print(f.CLAUDE_DIR.name)"],
        cwd=Path(__file__).resolve().parent,
        env={**os.environ, "LITBRIDGE_TEST_CACHE": str(tmp_path)},
        capture_output=True,
        text=True,
        check=True,
    )
    expected = "claude-code" if used else f"claude-code-{fetch_fixtures.CLAUDE_VERSION}"
    assert out.stdout.strip() == expected


def test_an_npm_fixture_lands_whole_or_not_at_all(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """npm installs into a temporary folder renamed into place on success: a failed or interrupted download
    leaves no half entry in the shared cache for another checkout to trust."""
    prefix = tmp_path / "tool-1.0"

    def npm(fail: bool) -> Callable[..., subprocess.CompletedProcess[str]]:
        def run(cmd: list[str], **_: object) -> subprocess.CompletedProcess[str]:
            into = Path(cmd[cmd.index("--prefix") + 1])
            assert into != prefix and into.parent == prefix.parent
            (into / "node_modules").mkdir(parents=True)
            (into / "node_modules" / "tool").write_text("x")
            return subprocess.CompletedProcess(cmd, 1 if fail else 0)

        return run

    monkeypatch.setattr(fetch_fixtures.subprocess, "run", npm(fail=True))
    assert not fetch_fixtures.npm_install(prefix, "tool@1.0", "a tool")
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(fetch_fixtures.subprocess, "run", npm(fail=False))
    assert fetch_fixtures.npm_install(prefix, "tool@1.0", "a tool")
    assert [p.name for p in tmp_path.iterdir()] == ["tool-1.0"]
    assert (prefix / "node_modules" / "tool").read_text() == "x"
