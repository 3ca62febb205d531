"""Session fidelity over a real daemon: one reply per `create`, nothing after `exited`, `ready.state` the real
state, and a send held behind a start-up dialog said to be blocked.

The screen CLIs are played by `tests/fakes/fake_screen_cli.py` under a file named after the CLI (the daemon picks
the driver by the program's name), drawing a screen saved from the real CLI.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from lbd_helpers import ROOT, Conn

pytestmark = pytest.mark.asyncio(loop_scope="function")

FAKE_SCREEN = ROOT / "tests" / "fakes" / "fake_screen_cli.py"
CLAUDE_SCREENS = ROOT / "tests" / "fixtures" / "captures" / "claude"
TRUST = CLAUDE_SCREENS / "s01a_startup_dialogs" / "screens" / "01_trust_dialog_initial.txt"
AUTO_MODE = (
    CLAUDE_SCREENS / "s04b_tools_chain_auto_mode" / "screens" / "02_step0_auto_mode_cannot_check_dialog.txt"
)


def fake_cli(tmp_path: Path, name: str, body: str | None = None) -> str:
    """An executable called `name` (so the daemon picks that CLI's driver): the fake screen CLI, or `body`."""
    path = tmp_path / name
    path.write_text(body or f'#!/bin/sh\nexec {sys.executable} {FAKE_SCREEN} "$@"\n')
    path.chmod(0o755)
    return str(path)


def isolated(tmp_path: Path, **env: str) -> dict[str, str]:
    return {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / ".claude"), **env}


async def connect(daemon: Any) -> Conn:
    c = await Conn.open(daemon.socket)
    assert (await c.wait(lambda e: True))["event"] == "monitor_ready"
    return c


def replies(c: Conn, rid: str) -> list[dict[str, Any]]:
    return [e for e in c.events if e.get("re") == rid]


@pytest.mark.parametrize("cli", ["claude", "codex", "gemini"])
async def test_a_cli_exiting_during_startup_gets_one_error_reply(
    daemon: Any, tmp_path: Path, cli: str
) -> None:
    """The exit answers the create, and the driver's own startup failure that follows is not a second reply."""
    program = fake_cli(
        tmp_path,
        cli,
        '#!/bin/sh\n[ "$1" = --version ] && { echo 2.1.0; exit 0; }\necho "not signed in"\nsleep 0.8\nexit 3\n',
    )
    c = await connect(daemon)
    await c.send(
        {"cmd": "create", "session": f"dies-{cli}", "cli": program, "env": isolated(tmp_path), "id": "c1"}
    )
    err = await c.wait(lambda e: e.get("re") == "c1")
    assert err["event"] == "error" and err["code"] == "spawn_failed", err
    await c.wait("exited", session=f"dies-{cli}")
    await c.drain_for(2.0)  # a second reply would come from the startup task right after the exit
    assert [e["event"] for e in replies(c, "c1")] == ["error"], replies(c, "c1")
    await c.close()


async def test_no_dialog_event_after_exited(daemon: Any, tmp_path: Path) -> None:
    """A CLI that dies while its start-up dialog is being answered: `exited` is its session's last event."""
    program = fake_cli(tmp_path, "claude")
    env = isolated(tmp_path, FAKE_SCREEN=str(TRUST), FAKE_SCREEN_ON_KEY="exit")
    c = await connect(daemon)
    await c.send({"cmd": "create", "session": "trust-dies", "cli": program, "env": env, "id": "c2"})
    await c.wait("exited", session="trust-dies", timeout=30)
    await c.drain_for(2.0)
    mine = [e["event"] for e in c.events if e.get("session") == "trust-dies"]
    assert mine[-1] == "exited", mine
    assert [e["event"] for e in replies(c, "c2")] == ["error"], mine
    await c.close()


async def test_ready_carries_the_real_state(daemon: Any, bash_create: Any, tmp_path: Path) -> None:
    """`ready.state` is the state when it is sent (`dialog` behind a start-up question), also for a reused create."""
    c = await connect(daemon)
    program = fake_cli(tmp_path, "claude")
    env = isolated(tmp_path, FAKE_SCREEN=str(AUTO_MODE))
    ready = await c.request(
        {"cmd": "create", "session": "ready-dialog", "cli": program, "env": env}, "ready", 30
    )
    assert ready["event"] == "ready" and ready["state"] == "dialog", ready
    dump = await c.request({"cmd": "dump", "session": "ready-dialog"}, "dump")
    assert dump["state"] == "dialog"
    again = await c.request({"cmd": "create", "session": "ready-dialog", "cli": program, "env": env}, "ready")
    assert again["reused"] is True and again["state"] == "dialog", again
    await c.request({"cmd": "kill", "session": "ready-dialog"}, "killed")

    await c.request(bash_create("ready-bash"), "ready")
    loop = asyncio.get_running_loop()
    end = loop.time() + 30
    while (await c.request({"cmd": "dump", "session": "ready-bash"}, "dump"))["state"] != "idle":
        assert loop.time() < end
        await asyncio.sleep(0.05)
    reused = await c.request(bash_create("ready-bash"), "ready")
    assert reused["reused"] is True and reused["state"] == "idle", reused
    await c.request({"cmd": "kill", "session": "ready-bash"}, "killed")
    await c.close()


async def test_a_send_queued_behind_a_startup_dialog_is_said_blocked(daemon: Any, tmp_path: Path) -> None:
    """A send made while the CLI starts is held (`startup_hold`); when start-up ends on a dialog the CLI asks, the
    held send is reported `dialog_blocked` (with the question), not left waiting in silence."""
    c = await connect(daemon)
    program = fake_cli(tmp_path, "claude")
    env = isolated(tmp_path, FAKE_SCREEN=str(AUTO_MODE))
    await c.send({"cmd": "create", "session": "held", "cli": program, "env": env, "id": "c3"})
    acc = await c.request({"cmd": "send", "session": "held", "content": "hello"}, "accepted")
    assert acc["event"] == "accepted" and acc["queued"] is True, acc
    await c.wait("startup_hold", session="held")
    q = await c.wait("question", session="held", timeout=30)
    blocked = await c.wait("dialog_blocked", session="held", timeout=30)
    assert q["question_id"] in blocked["dialog"], blocked
    assert not [e for e in c.events if e.get("turn_id") == acc["turn_id"] and e["event"] != "accepted"]
    await c.request({"cmd": "kill", "session": "held"}, "killed")
    await c.close()


async def test_litbridge_send_held_behind_a_startup_dialog_says_what_is_asked(
    daemon: Any, tmp_path: Path
) -> None:
    """`litbridge send` to a session whose start-up ended on a dialog: it prints the question, its options and
    how to answer, instead of only "queued"; and it exits (status 3) when the held send ends, never hangs."""
    c = await connect(daemon)
    program = fake_cli(tmp_path, "claude")
    env = isolated(tmp_path, FAKE_SCREEN=str(AUTO_MODE))
    ready = await c.request({"cmd": "create", "session": "held-cli", "cli": program, "env": env}, "ready", 30)
    assert ready["state"] == "dialog", ready
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "litbridge",
        "send",
        "held-cli",
        "hello",
        "--socket",
        daemon.socket,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stderr is not None
    err = b""
    loop = asyncio.get_running_loop()
    end = loop.time() + 30
    while b"litbridge answer held-cli --digit N" not in err:
        assert loop.time() < end, err.decode()
        err += await asyncio.wait_for(proc.stderr.read(1024), 30)
    text = err.decode()
    assert "queued" in text and "dialog blocked" in text
    assert "Auto mode can't check actions" in text and "Enter to stay in auto mode" in text, text
    await c.request({"cmd": "kill", "session": "held-cli"}, "killed")
    rest = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 3, (text, rest)
    await c.close()
