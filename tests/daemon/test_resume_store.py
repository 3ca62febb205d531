"""Stored resume tokens survive a daemon restart (`litbridge.daemon.resume_store`).

Unit tests on the store's file (location, modes, atomic replace, a corrupt or unwritable file), then the
user-visible promise end to end: `kill --store-resume`, restart `litbridge serve`, `create` resumes.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from litbridge.daemon import resume_store
from litbridge.daemon.resume_store import ResumeStore


@pytest.fixture
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


def test_location_follows_xdg_state_home(state_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resume_store.state_dir() == state_home / "litbridge"
    p1, p2 = resume_store.store_path("/tmp/a.sock"), resume_store.store_path("/tmp/b.sock")
    assert p1.parent == state_home / "litbridge" and p1 != p2  # one store per control socket
    monkeypatch.setenv("XDG_STATE_HOME", "relative/ignored")  # the spec: non-absolute values are ignored
    monkeypatch.setenv("HOME", "/home/someone")
    assert resume_store.state_dir() == Path("/home/someone/.local/state/litbridge")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")
def test_tokens_round_trip_through_a_private_file(state_home: Path) -> None:
    os.umask(0o022)
    store = ResumeStore.for_socket("/tmp/x.sock")
    assert dict(store) == {} and not store.path.exists()  # nothing written until there is something to keep
    store["work"] = "tok-1"
    store["other:chan"] = "tok-2"
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700
    data = json.loads(store.path.read_text())
    assert data["tokens"] == {"work": "tok-1", "other:chan": "tok-2"} and data["socket"] == "/tmp/x.sock"

    again = ResumeStore.for_socket("/tmp/x.sock")  # a restarted daemon
    assert dict(again) == {"work": "tok-1", "other:chan": "tok-2"}
    assert again.pop("work") == "tok-1"  # a create consumes its token ...
    assert dict(ResumeStore.for_socket("/tmp/x.sock")) == {"other:chan": "tok-2"}  # ... on disk too
    assert again.pop("nosuch", None) is None
    assert [p.name for p in store.path.parent.iterdir()] == [store.path.name]  # no temporary files left


def test_corrupt_file_is_moved_aside_not_fatal(state_home: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = resume_store.store_path("/tmp/y.sock")
    path.parent.mkdir(parents=True)
    path.write_text('{"tokens": ["not", "a", "map"]}')
    store = ResumeStore.for_socket("/tmp/y.sock")
    assert dict(store) == {}
    assert "unreadable" in caplog.text
    (aside,) = path.parent.glob(path.name + ".corrupt-*")  # kept for a human to look at
    assert "not" in aside.read_text()
    store["k"] = "t"
    assert json.loads(path.read_text())["tokens"] == {"k": "t"}


def test_unwritable_path_keeps_tokens_in_memory(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    store = ResumeStore(blocker / "litbridge" / "resume.json")  # parent is a file: mkdir fails, even for root
    store["k"] = "t"
    assert store["k"] == "t" and "kept in memory only" in caplog.text


def test_store_resume_survives_a_daemon_restart(tmp_path: Path) -> None:
    """The fake rift saves its sessions like rift does; the token that names one outlives the daemon."""
    from _daemon import running_daemon, spawn, stop

    with running_daemon() as d:
        d.env["XDG_STATE_HOME"] = str(tmp_path / "state")
        stop(d.proc)
        d.proc = spawn(d.socket, d.env, d.log)  # now with our private state home
        assert d.cli("create", "keep", "--cli", "rift").returncode == 0
        assert d.cli("send", "keep", "remember the word pineapple").returncode == 0
        killed = d.cli("kill", "keep", "--store-resume")
        assert killed.returncode == 0, killed.stderr
        (stored,) = (tmp_path / "state" / "litbridge").glob("resume-*.json")
        assert "keep" in json.loads(stored.read_text())["tokens"]

        stop(d.proc)  # SIGTERM: a clean restart ...
        d.proc = spawn(d.socket, d.env, d.log)
        again = d.cli("create", "keep", "--cli", "rift", "--json")
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout.splitlines()[0])["resumed"] is True
        assert "pineapple" in d.cli("send", "keep", "[recall]").stdout
        assert json.loads(stored.read_text())["tokens"] == {}  # consumed by the create
        assert "loaded 1 stored resume token(s)" in d.log_text()
        d.cli("kill", "keep")


def test_state_home_of_the_test_run_is_private() -> None:
    """tests/conftest.py keeps daemons started by the suite out of the developer's ~/.local/state."""
    home = os.environ["XDG_STATE_HOME"]
    assert "lbt-state-" in home and not home.startswith(os.path.expanduser("~/.local"))
    out = subprocess.run(
        [sys.executable, "-c", "import os; print(os.environ['XDG_STATE_HOME'])"],
        capture_output=True,
        text=True,
    )
    assert out.stdout.strip() == home  # inherited by every daemon a test spawns
