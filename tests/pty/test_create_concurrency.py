"""Creates sent back to back on one connection run side by side (each one's slow start - its CLI's `--version`,
its git worktree, its spawn - overlaps the others'), while any other command still sees what the creates
before it did."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from lbd_helpers import FAKE_TUI, Conn, pid_alive, start_daemon

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="Unix daemon")

N = 5
VERSION_DELAY = 1.0  # how long each fake CLI takes to answer `--version` (the create waits for it)


def _slow_claude(directory: Path) -> str:
    """A `claude` that takes VERSION_DELAY to say its version, then runs the fake TUI (which never draws
    Claude's prompt: the create stays in start-up until it is killed). Each file is its own binary, so each
    create runs its own `--version`."""
    directory.mkdir(parents=True)
    path = directory / "claude"
    path.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = --version ]; then sleep {VERSION_DELAY}; echo "2.1.0 (Claude Code)"; exit 0; fi\n'
        f"exec {sys.executable} {FAKE_TUI}\n"
    )
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def tmp_short() -> Iterator[str]:
    """A short directory for the daemon's socket (a Unix socket path is limited to ~100 bytes)."""
    d = tempfile.mkdtemp(prefix="lbc-", dir="/tmp")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.asyncio
async def test_creates_on_one_connection_overlap(tmp_short: str) -> None:
    home = Path(tmp_short) / "home"
    home.mkdir()
    d = start_daemon(os.path.join(tmp_short, "c.sock"), env={"HOME": str(home)})
    try:
        clis = [_slow_claude(Path(tmp_short) / f"bin{i}") for i in range(N)]
        conn, watcher = await Conn.open(d.socket), await Conn.open(d.socket)
        env = {"CLAUDE_CONFIG_DIR": str(home / ".claude")}
        t0 = time.monotonic()
        for i, cli in enumerate(clis):
            await conn.send(
                {
                    "cmd": "create",
                    "session": f"c{i}",
                    "id": f"c{i}",
                    "cli": cli,
                    "working_dir": tmp_short,
                    "env": env,
                }
            )
        await conn.send({"cmd": "list", "id": "after"})  # waits for the creates before it, as it always did
        spawned: dict[str, int] = {}
        while len(spawned) < N:  # from another connection, which none of them holds up
            assert time.monotonic() - t0 < 60, spawned
            listing = await watcher.request({"cmd": "list"}, "sessions")
            spawned = {s["name"]: s["pid"] for s in listing["sessions"] if s.get("pid")}
            await asyncio.sleep(0.05)
        took = time.monotonic() - t0
        after = await conn.wait(lambda e: e.get("re") == "after", 30)
        assert sorted(s["name"] for s in after["sessions"] if s.get("pid")) == [f"c{i}" for i in range(N)], (
            "a command after the creates sees every one of them spawned"
        )
        # one at a time, the last CLI could not even start before N x VERSION_DELAY
        assert took < N * VERSION_DELAY * 0.7, f"{N} creates took {took:.2f}s: they did not overlap"
        for i in range(N):
            killed = await conn.request({"cmd": "kill", "session": f"c{i}"}, "killed", timeout=30)
            assert killed["event"] == "killed", killed
        assert not [pid for pid in spawned.values() if pid_alive(pid)]
        await conn.close()
        await watcher.close()
    finally:
        assert d.stop() == 0, d.log()


@pytest.mark.asyncio
async def test_send_right_after_create_finds_the_session(tmp_short: str) -> None:
    """The create's reply and the next command's reply come as before: the command waits for the create."""
    d = start_daemon(os.path.join(tmp_short, "s.sock"))
    try:
        conn = await Conn.open(d.socket)
        for i in range(3):
            await conn.send(
                {
                    "cmd": "create",
                    "session": f"s{i}",
                    "id": f"c{i}",
                    "cli": sys.executable,
                    "args": [FAKE_TUI],
                    "working_dir": "/tmp",
                    "quiescence": 0.3,
                }
            )
            await conn.send({"cmd": "input", "session": f"s{i}", "id": f"i{i}", "content": "reply hi"})
        for i in range(3):
            ready = await conn.wait(lambda e, i=i: e.get("re") == f"c{i}", 60)
            assert ready["event"] == "ready", ready
            sent = await conn.wait(lambda e, i=i: e.get("re") == f"i{i}", 60)
            assert sent["event"] == "input_sent", sent
        for i in range(3):
            assert (await conn.request({"cmd": "kill", "session": f"s{i}"}, "killed", 30))[
                "event"
            ] == "killed"
        await conn.close()
    finally:
        assert d.stop() == 0, d.log()
