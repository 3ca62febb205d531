"""Protocol v1 conformance over the real socket of a real `litbridge serve` process.

Drives the generic driver (bash) and the scripted fake TUI (tests/fakes/fake_tui.py). One daemon for the
module; every test uses its own session keys and closes its connections.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from lbd_helpers import WAIT, Conn, DaemonProc, fake_create, pid_alive, start_daemon

from v1_names import V1_COMMANDS, V1_EVENTS

pytestmark = pytest.mark.asyncio(loop_scope="function")

TERMINAL = ("complete", "interrupted", "turn_error")


async def connect(daemon: Any) -> tuple[Conn, dict[str, Any]]:
    c = await Conn.open(daemon.socket)
    ready = await c.wait(lambda e: True)
    assert ready["event"] == "monitor_ready"
    return c, ready


async def create(c: Conn, cmd: dict[str, Any]) -> dict[str, Any]:
    ev = await c.request(cmd, "ready")
    assert ev["event"] == "ready", ev
    return ev


async def wait_prompt(c: Conn, key: str) -> None:
    """Until bash's prompt is drawn and the session idle. `ready` comes at the first prompt mark (or when a
    slow start settles) and may still say state "starting"; until the prompt is on screen (its `B` mark read) a send
    is queued, so a test that needs a send to run at once waits for this first."""
    loop = asyncio.get_running_loop()
    end = loop.time() + WAIT
    while True:
        dump = await c.request({"cmd": "dump", "session": key}, "dump")
        rows = dump["capture"].split("\n")
        y = dump["cursor"]["y"]
        if dump["state"] == "idle" and dump["queued"] == 0 and y < len(rows) and rows[y].strip() == "$":
            await asyncio.sleep(0.2)  # the `B` mark follows the prompt text within the same write
            return
        assert loop.time() < end, f"no idle prompt: {dump}"
        await asyncio.sleep(0.05)


def terminal_counts(events: list[dict[str, Any]]) -> Counter[str]:
    return Counter(e["turn_id"] for e in events if e.get("event") in TERMINAL)


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes whose process group is pgid (orphaned zombies are init's business)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                out.append(int(d.name))
    return out


def children(pid: int) -> list[int]:
    kids = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in kids.read_text().split()] if kids.exists() else []


# ----------------------------------------------------------------------------- handshake / framing
async def test_handshake_fields(daemon: Any) -> None:
    c, ready = await connect(daemon)
    assert isinstance(ready["sessions"], int) and isinstance(ready["buffered"], int)
    assert ready["version"] and ready["protocol_version"] == 1
    assert V1_COMMANDS <= set(ready["commands"]), "the v1 command set only ever grows"
    assert V1_EVENTS <= set(ready["events"]), "the v1 event set only ever grows"
    assert {"claude", "rift"} <= set(ready["clis"])
    assert ready["limits"] == {"max_line": 1048576, "buffer": 5000}
    await c.close()


async def test_ping_and_id_echo(daemon: Any) -> None:
    c, _ = await connect(daemon)
    await c.send({"cmd": "ping"})
    assert await c.wait(lambda e: True) == {"event": "pong"}
    await c.send({"cmd": "ping", "id": 42})
    assert await c.wait(lambda e: True) == {"event": "pong", "re": 42}
    await c.close()


async def test_bad_json_unknown_command_blank_lines(daemon: Any) -> None:
    c, _ = await connect(daemon)
    await c.send(b"{not json\n")
    err = await c.wait(lambda e: True)
    assert err["event"] == "error" and err["code"] == "bad_json" and err["message"].startswith("invalid JSON")
    assert "session" not in err
    await c.send({"cmd": "nope", "id": "x1"})
    err = await c.wait(lambda e: True)
    assert err == {
        "event": "error",
        "message": "unknown command: nope",
        "code": "unknown_command",
        "re": "x1",
    }
    await c.send(b"[1]\n")
    assert (await c.wait(lambda e: True))["code"] == "unknown_command"
    await c.send(b"\n   \n\r\n")
    await c.send({"cmd": "ping", "id": "after"})
    assert await c.wait(lambda e: True) == {"event": "pong", "re": "after"}, "blank lines produce no output"
    await c.close()


async def test_oversize_line_and_invalid_utf8(daemon: Any) -> None:
    c, _ = await connect(daemon)
    await c.send(b'{"cmd":"ping","pad":"' + b"x" * (1024 * 1024 + 10) + b'"}\n')
    err = await c.wait(lambda e: True)
    assert err["event"] == "error" and err["code"] == "too_large"
    await c.send(b'{"cmd":"ping","id":"u\xff\xfe"}\n')
    pong = await c.wait(lambda e: True)
    assert pong["event"] == "pong" and pong["re"] == "u\ufffd\ufffd"
    await c.close()


async def test_unknown_session_and_bad_fields(daemon: Any) -> None:
    c, _ = await connect(daemon)
    for cmd in (
        {"cmd": "send", "content": "x"},
        {"cmd": "input", "content": "x"},
        {"cmd": "keystroke", "keys": ["Enter"]},
        {"cmd": "dump"},
        {"cmd": "kill"},
        {"cmd": "answer", "digit": "1"},
        {"cmd": "interrupt"},
    ):
        err = await c.request({**cmd, "session": "ghost", "channel_id": "c"})
        assert err["event"] == "error" and err["code"] == "session_not_found", err
        assert err["session"] == "ghost:c"
    for cmd in (
        {"cmd": "send", "session": "s", "content": 5},
        {"cmd": "keystroke", "session": "s", "keys": "Enter"},
        {"cmd": "keystroke", "session": "s", "keys": [1]},
        {"cmd": "create", "cli": "bash"},
        {"cmd": "create", "session": ""},
        {"cmd": "create", "session": "s", "env": {"A": 1}},
        {"cmd": "hello", "since_seq": "3"},
        {"cmd": "create", "session": "nul", "cli": "cat", "env": {"A": "x\u0000y"}},
        {"cmd": "create", "session": "nul", "cli": "cat", "env": {"A=B": "1"}},
        {"cmd": "create", "session": "nul", "cli": "cat", "args": ["a\u0000"]},
    ):
        err = await c.request(cmd)
        assert err["event"] == "error" and err["code"] == "bad_field", (cmd, err)
    err = await c.request({"cmd": "create", "session": "nf", "cli": "no-such-cli-xyz"})
    assert err["code"] == "cli_not_found"
    err = await c.request(
        {"cmd": "create", "session": "nf", "cli": "bash", "working_dir": "/nonexistent/dir"}
    )
    assert err["code"] == "spawn_failed"
    lst = await c.request({"cmd": "list"}, "sessions")
    assert "nf" not in [s["name"] for s in lst["sessions"]]
    await c.close()


# ----------------------------------------------------------------------------- turns (generic driver, bash)
async def test_bash_send_replace_complete(daemon: Any, bash_create: Any) -> None:
    c, _ = await connect(daemon)
    ready = await create(c, bash_create("bash1"))
    # the state when `ready` is sent: bash may still be drawing its first prompt
    assert ready["state"] in ("starting", "idle") and ready["resumed"] is False and ready["model"] is None
    await wait_prompt(c, "bash1")
    acc = await c.request({"cmd": "send", "session": "bash1", "content": "echo hi"}, "accepted")
    turn = acc["turn_id"]
    assert acc["queued"] is False
    st = await c.wait("state", to="thinking")
    assert st["session"] == "bash1"
    rep = await c.wait("replace", turn_id=turn)
    assert "hi" in rep["text"]
    done = await c.wait("complete", turn_id=turn)
    assert done["content"] == "hi" and done["source"] == "screen"
    await c.drain_for(0.3)
    assert terminal_counts(c.events)[turn] == 1
    seqs = [e["seq"] for e in c.events if "seq" in e]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    await c.request({"cmd": "kill", "session": "bash1"}, "killed")
    await c.close()


async def test_fifo_queue_and_dedupe(daemon: Any, bash_create: Any) -> None:
    c, _ = await connect(daemon)
    await create(c, bash_create("fifo"))
    await wait_prompt(c, "fifo")
    await c.send({"cmd": "send", "session": "fifo", "content": "sleep 0.2; echo first", "id": "m1"})
    await c.send({"cmd": "send", "session": "fifo", "content": "echo second", "id": "m2"})
    await c.send({"cmd": "send", "session": "fifo", "content": "echo third", "id": "m3"})
    await c.send({"cmd": "send", "session": "fifo", "content": "echo second", "id": "m2"})  # repeated id
    accs = [await c.wait("accepted") for _ in range(4)]
    assert [a["re"] for a in accs] == ["m1", "m2", "m3", "m2"]
    assert accs[0]["queued"] is False and accs[1]["queued"] is True and accs[2]["queued"] is True
    assert accs[3]["duplicate"] is True and accs[3]["turn_id"] == accs[1]["turn_id"]
    ids = [a["turn_id"] for a in accs[:3]]
    assert len(set(ids)) == 3
    dones = [await c.wait("complete") for _ in range(3)]
    assert [d["turn_id"] for d in dones] == ids
    assert [d["content"] for d in dones] == ["first", "second", "third"]
    await c.drain_for(1.0)
    counts = terminal_counts(c.events)
    assert all(counts[t] == 1 for t in ids) and len(counts) == 3
    dump = await c.request({"cmd": "dump", "session": "fifo"}, "dump")
    assert dump["capture"].count("echo second") == 1, "a repeated id is not sent twice"
    await c.request({"cmd": "kill", "session": "fifo"}, "killed")
    await c.close()


async def test_create_reuse_and_channel_key(daemon: Any, bash_create: Any) -> None:
    c, _ = await connect(daemon)
    await create(c, bash_create("reuse"))
    again = await create(c, bash_create("reuse"))
    assert again["reused"] is True and "resumed" not in again
    chan = await create(c, bash_create("reuse", channel_id="c1"))
    assert chan["session"] == "reuse:c1" and chan["channel_id"] == "c1" and "reused" not in chan
    lst = await c.request({"cmd": "list"}, "sessions")
    items = {s["name"]: s for s in lst["sessions"]}
    assert items["reuse"]["pid"] != items["reuse:c1"]["pid"]
    assert items["reuse:c1"]["channel_id"] == "c1" and items["reuse"]["cli"] == "bash"
    assert items["reuse"]["state"] == "idle"
    await c.request({"cmd": "kill", "session": "reuse"}, "killed")
    killed = await c.request({"cmd": "kill", "session": "reuse", "channel_id": "c1"}, "killed")
    assert killed["session"] == "reuse:c1"
    await c.close()


async def test_ready_and_list_say_whether_the_cli_answers_in_markdown(bash_create: Any) -> None:
    """`ready.markdown` and each `list` item's: true for an AI CLI (rift, on its fake), false for bash under the
    generic driver; a reused `ready` says it too. Clients render `complete.content` by it."""
    from _daemon import running_daemon

    with running_daemon() as d:
        c = await Conn.open(d.socket)
        await c.wait("monitor_ready")
        ai = await c.request({"cmd": "create", "session": "md-ai", "cli": "rift"}, "ready")
        shell = await c.request(bash_create("md-sh"), "ready")
        assert ai["event"] == shell["event"] == "ready", (ai, shell)
        assert ai["markdown"] is True and shell["markdown"] is False
        again = await c.request({"cmd": "create", "session": "md-ai", "cli": "rift"}, "ready")
        assert again["reused"] is True and again["markdown"] is True
        lst = await c.request({"cmd": "list"}, "sessions")
        items = {s["name"]: s for s in lst["sessions"]}
        assert items["md-ai"]["markdown"] is True and items["md-sh"]["markdown"] is False
        for key in ("md-ai", "md-sh"):
            await c.request({"cmd": "kill", "session": key}, "killed")
        await c.close()


async def test_session_name_and_channel_id_are_at_most_256_bytes(daemon: Any, bash_create: Any) -> None:
    """A name is repeated in every event and log line: past 256 UTF-8 bytes it is `bad_field` (and the error
    does not echo it whole); 256 bytes, counted in UTF-8, is still a name."""
    c, _ = await connect(daemon)
    huge = "n" * 900_000
    for cmd in (
        bash_create(huge),
        bash_create("ok", channel_id=huge),
        {"cmd": "send", "session": huge, "content": "x"},
        {"cmd": "kill", "session": "é" * 129},  # 258 bytes, 129 characters
    ):
        err = await c.request(cmd)
        assert err["event"] == "error" and err["code"] == "bad_field", err
        assert "at most 256 bytes" in err["message"] and len(err["message"]) < 300
        assert "session" not in err
    err = await c.request({"cmd": "kill", "session": "é" * 128})  # exactly 256 bytes: a valid (unknown) name
    assert err["code"] == "session_not_found"
    await c.close()


async def test_create_with_an_empty_cli_is_bad_field(daemon: Any, bash_create: Any) -> None:
    """`cli: ""` used to start the default CLI (claude) silently."""
    c, _ = await connect(daemon)
    for extra in ({"cli": ""}, {"cli": "  "}, {"exe": ""}):
        err = await c.request({**bash_create("emptycli"), **extra})
        assert err["event"] == "error" and err["code"] == "bad_field", (extra, err)
        assert "empty" in err["message"]
    lst = await c.request({"cmd": "list"}, "sessions")
    assert "emptycli" not in [s["name"] for s in lst["sessions"]]
    await c.close()


async def test_colon_key_and_channel_id_name_the_same_session(daemon: Any, bash_create: Any) -> None:
    """The documented key rule (docs/protocol.md, "Session keys"): `session:"k:c"` and `session:"k",
    channel_id:"c"` are one session, as in lit-bridge-rs, whose events name a sub-session by the joined key."""
    c, _ = await connect(daemon)
    first = await create(c, bash_create("same", channel_id="c"))
    again = await create(c, bash_create("same:c"))
    assert first["session"] == again["session"] == "same:c" and again["reused"] is True
    killed = await c.request({"cmd": "kill", "session": "same:c"}, "killed")
    assert killed["event"] == "killed"
    err = await c.request({"cmd": "dump", "session": "same", "channel_id": "c"})
    assert err["code"] == "session_not_found"
    await c.close()


async def test_kill_store_resume_says_whether_the_token_was_stored(
    daemon: Any, bash_create: Any, tmp_path: Path
) -> None:
    """`killed.resume_stored` (+ `resume_error`) after `store_resume:true`: true once the token is on disk; false
    when the CLI had none, or when the store cannot be written (a full disk: the kill still succeeds)."""
    from _daemon import running_daemon, spawn, stop

    c, _ = await connect(daemon)
    await create(c, bash_create("noresume"))
    killed = await c.request({"cmd": "kill", "session": "noresume", "store_resume": True}, "killed")
    assert killed["resume_stored"] is False and "no resume token" in killed["resume_error"]
    killed = await c.request({"cmd": "kill", "session": "ghost-x", "store_resume": False})
    assert killed["code"] == "session_not_found"
    await c.close()

    blocker = tmp_path / "file"
    blocker.write_text("")
    with running_daemon() as d:
        for state_home, stored in ((tmp_path / "state", True), (blocker / "state", False)):
            d.env["XDG_STATE_HOME"] = str(state_home)  # under a file: every write fails, as on a full disk
            stop(d.proc)
            d.proc = spawn(d.socket, d.env, d.log)
            c = await Conn.open(d.socket)
            await c.wait("monitor_ready")
            await c.request({"cmd": "create", "session": "keep", "cli": "rift"}, "ready")
            acc = await c.request(
                {"cmd": "send", "session": "keep", "content": "remember pineapple"}, "accepted"
            )
            await c.wait("complete", turn_id=acc["turn_id"])
            killed = await c.request({"cmd": "kill", "session": "keep", "store_resume": True}, "killed")
            assert killed["event"] == "killed" and killed["resume_stored"] is stored, killed
            if stored:
                assert "resume_error" not in killed
            else:
                assert "cannot write" in killed["resume_error"] and str(blocker) in killed["resume_error"]
                again = await c.request({"cmd": "create", "session": "keep", "cli": "rift"}, "ready")
                assert again["resumed"] is True  # kept in memory meanwhile
                await c.request({"cmd": "kill", "session": "keep"}, "killed")
            await c.close()


async def test_cli_not_found_says_where_it_looked_and_how_to_install(daemon: Any) -> None:
    c, _ = await connect(daemon)
    err = await c.request({"cmd": "create", "session": "nf2", "cli": "no-such-cli-xyz"})
    assert err["code"] == "cli_not_found" and "searched the daemon's PATH: " in err["message"]
    assert (
        "/usr/bin" in err["message"] and "npm install" not in err["message"]
    )  # no hint for an unknown program
    err = await c.request(
        {"cmd": "create", "session": "nf2", "cli": "codex", "env": {"PATH": "/nonexistent-bin"}}
    )
    assert err["code"] == "cli_not_found", err
    assert (
        "create.env's PATH: /nonexistent-bin)" in err["message"]
        and "npm install -g @openai/codex" in err["message"]
    )
    long_path = ":".join(f"/opt/tool-{i}/bin" for i in range(100))
    err = await c.request({"cmd": "create", "session": "nf2", "cli": "claude", "env": {"PATH": long_path}})
    assert "npm install -g @anthropic-ai/claude-code" in err["message"] and "more)" in err["message"]
    assert "/opt/tool-0/bin" in err["message"] and "/opt/tool-99/bin" not in err["message"]
    assert len(err["message"]) < 600
    from litbridge import drivers

    for cli in sorted(set(drivers.BUILTIN) - {"rift"}):  # every npm-installed CLI says how to get it
        err = await c.request(
            {"cmd": "create", "session": "nf2", "cli": cli, "env": {"PATH": "/nonexistent-bin"}}
        )
        assert err["code"] == "cli_not_found", err
        hint = f"install it with `npm install -g {drivers.get_driver(cli).CLI.package}`"
        assert hint in err["message"], err
    await c.close()


@pytest.mark.parametrize("linger", ["0", "0.3"], ids=["exits-at-once", "exits-while-settling"])
async def test_startup_exit_error_keeps_the_meaningful_lines(
    daemon: Any, tmp_path: Path, linger: str
) -> None:
    """A CLI that exits while starting (before or after the driver's startup began): the error quotes its last
    lines with words, not its banner art."""
    script = tmp_path / "bannered"
    script.write_text(
        "#!/bin/sh\n"
        "printf '\\n'\n"
        "printf ' ███  █████ ██   ██\\n ░░░███ ░███ ░███\\n ███░  ░███  ██x██\\n\\n'\n"
        "printf '╭──────────────────────────╮\\n│ Welcome to Bannered 1.0! │\\n╰──────────────────────────╯\\n'\n"
        "printf '  _   _\\n | |_| |\\n |_| |_|\\n'\n"
        "printf 'Error: not signed in.\\nRun bannered login first.\\n\\n'\n"
        f"sleep {linger}\n"
        "exit 3\n"
    )
    script.chmod(0o755)
    c, _ = await connect(daemon)
    err = await c.request({"cmd": "create", "session": "bannered", "cli": str(script)}, "ready")
    assert err["event"] == "error" and err["code"] == "spawn_failed", err
    assert err["message"] == (
        "CLI exited (code 3) during startup: Welcome to Bannered 1.0!\nError: not signed in.\n"
        "Run bannered login first."
    ), err["message"]
    await c.close()


# ----------------------------------------------------------------------------- fake TUI: keys, input, env
async def test_keystroke_bytes_reach_pty_and_bad_key_types_nothing(daemon: Any, tmp_path: Path) -> None:
    log = tmp_path / "rx.log"
    c, _ = await connect(daemon)
    await create(c, fake_create("keys", env={"FAKE_TUI_LOG": str(log)}))
    keys = ["Up", "Down", "Right", "Left", "Tab", "Esc", "C-a", "BTab", "BSpace", "x"]
    sent = await c.request({"cmd": "keystroke", "session": "keys", "keys": keys}, "keystroke_sent")
    assert sent["event"] == "keystroke_sent" and sent["keys"] == keys
    want = b"\x1b[A\x1b[B\x1b[C\x1b[D\t\x1b\x01\x1b[Z\x7fx".hex()
    for _ in range(100):
        if log.exists() and want in log.read_text().replace("\n", ""):
            break
        await asyncio.sleep(0.05)
    assert want in log.read_text().replace("\n", "")
    before = log.read_text()
    err = await c.request({"cmd": "keystroke", "session": "keys", "keys": ["Up", "Bogus"]})
    assert err["event"] == "error" and err["code"] == "bad_key" and "Bogus" in err["message"]
    await c.request({"cmd": "keystroke", "session": "keys", "keys": ["z"]}, "keystroke_sent")
    for _ in range(100):
        if log.read_text() != before:
            break
        await asyncio.sleep(0.05)
    assert log.read_text()[len(before) :].strip() == b"z".hex(), "nothing of the bad keystroke was typed"
    await c.request({"cmd": "kill", "session": "keys"}, "killed")
    await c.close()


async def test_input_env_size(daemon: Any) -> None:
    c, _ = await connect(daemon)
    await create(c, fake_create("env", env={"CLAUDE_CODE_MINE": "kept"}))
    for line in (
        "env CLAUDECODE",
        "env CLAUDE_CODE_ENTRYPOINT",
        "env CLAUDE_CODE_MINE",
        "env TERM",
        "env COLORTERM",
        "size",
    ):
        ack = await c.request({"cmd": "input", "session": "env", "content": line}, "input_sent")
        assert ack["event"] == "input_sent"
    want = [
        # only the Claude driver strips Claude's nesting variables (its launch spec's env_remove); a generic
        # program inherits the daemon's env as it is
        "CLAUDECODE=1",
        "CLAUDE_CODE_ENTRYPOINT=cli",
        "CLAUDE_CODE_MINE=kept",
        "TERM=xterm-256color",
        "COLORTERM=truecolor",
        "50x200",
    ]
    for _ in range(100):
        dump = await c.request({"cmd": "dump", "session": "env"}, "dump")
        if all(w in dump["capture"] for w in want):
            break
        await asyncio.sleep(0.1)
    for w in want:
        assert w in dump["capture"]
    assert dump["driver"] == "generic" and dump["queued"] == 0 and dump["turn_id"] is None
    assert set(dump["cursor"]) == {"x", "y", "hidden"} and dump["modes"]["bracketed_paste"] is True
    assert not any(e["event"] == "complete" for e in c.events), "input does not observe"
    await c.request({"cmd": "kill", "session": "env"}, "killed")
    await c.close()


# ----------------------------------------------------------------------------- death and kill
async def test_kill_reaps_group(daemon: Any) -> None:
    c, _ = await connect(daemon)
    await create(c, fake_create("k1"))
    await c.request({"cmd": "input", "session": "k1", "content": "spawn"}, "input_sent")
    child = None
    for _ in range(100):
        dump = await c.request({"cmd": "dump", "session": "k1"}, "dump")
        words = dump["capture"].split()
        if "child" in words:
            child = int(words[words.index("child") + 1])
            break
        await asyncio.sleep(0.1)
    assert child is not None
    pid = dump["pid"]
    assert pid_alive(pid) and pid_alive(child)
    killed = await c.request({"cmd": "kill", "session": "k1"}, "killed")
    assert killed["event"] == "killed" and "exit_code" in killed
    assert not pid_alive(pid), "the CLI is gone and reaped (no zombie)"
    for _ in range(50):
        if not pid_alive(child):
            break
        await asyncio.sleep(0.05)
    assert not pid_alive(child)
    assert group_members(pid) == [], "no live process is left in the CLI's process group"
    err = await c.request({"cmd": "send", "session": "k1", "content": "x"})
    assert err["code"] == "session_not_found"
    await c.close()


async def test_kill_escalates_to_sigkill(daemon: Any) -> None:
    c, _ = await connect(daemon)
    await create(c, fake_create("stubborn", "--ignore-term"))
    pid = (await c.request({"cmd": "dump", "session": "stubborn"}, "dump"))["pid"]
    killed = await c.request({"cmd": "kill", "session": "stubborn"}, "killed")
    assert killed["exit_code"] == -9
    assert not pid_alive(pid)
    await c.close()


async def test_cli_exit_ends_turn_and_recreate(daemon: Any) -> None:
    c, _ = await connect(daemon)
    first = await create(c, fake_create("dies", quiescence=30))
    assert first["event"] == "ready"
    pid1 = (await c.request({"cmd": "dump", "session": "dies"}, "dump"))["pid"]
    # the turn stays open (long quiescence) until the CLI exits 2 s later; the second send queues behind it
    acc = await c.request({"cmd": "send", "session": "dies", "content": "exit 7 2"}, "accepted")
    q = await c.request({"cmd": "send", "session": "dies", "content": "never typed"}, "accepted")
    assert q["queued"] is True
    err = await c.wait("turn_error", turn_id=acc["turn_id"])
    assert err["kind"] == "cli_exited"
    err2 = await c.wait("turn_error", turn_id=q["turn_id"])
    assert err2["kind"] == "cli_exited"
    exited = await c.wait("exited")
    assert exited["exit_code"] == 7 and "fake stderr bye" in exited["stderr_tail"]
    assert any(e["event"] == "state" and e["to"] == "dead" for e in c.events)
    assert not pid_alive(pid1)
    lst = await c.request({"cmd": "list"}, "sessions")
    assert {s["name"]: s["state"] for s in lst["sessions"]}["dies"] == "dead"
    err = await c.request({"cmd": "send", "session": "dies", "content": "x"})
    assert err["event"] == "error"
    again = await create(c, fake_create("dies"))
    assert "reused" not in again, "a dead key is re-created, never reused"
    pid2 = (await c.request({"cmd": "dump", "session": "dies"}, "dump"))["pid"]
    assert pid2 != pid1
    await c.request({"cmd": "kill", "session": "dies"}, "killed")
    await c.drain_for(0.2)
    counts = terminal_counts(c.events)
    assert counts[acc["turn_id"]] == 1 and counts[q["turn_id"]] == 1
    await c.close()


async def test_interrupt(daemon: Any) -> None:
    c, _ = await connect(daemon)
    await create(c, fake_create("intr"))
    err = await c.request({"cmd": "interrupt", "session": "intr"})
    assert err["code"] == "no_turn"
    acc = await c.request({"cmd": "send", "session": "intr", "content": "stream 200"}, "accepted")
    await c.wait("replace", turn_id=acc["turn_id"])
    await c.send({"cmd": "interrupt", "session": "intr", "id": "i1"})
    ev = await c.wait("interrupted", turn_id=acc["turn_id"])
    assert ev["re"] == "i1"
    await c.drain_for(1.0)
    assert terminal_counts(c.events)[acc["turn_id"]] == 1
    await c.request({"cmd": "kill", "session": "intr"}, "killed")
    await c.close()


async def test_answer_without_question(daemon: Any) -> None:
    c, _ = await connect(daemon)
    await create(c, fake_create("ans"))
    err = await c.request({"cmd": "answer", "session": "ans", "digit": "1"})
    assert err["code"] == "no_question"
    err = await c.request({"cmd": "answer", "session": "ans", "question_id": "q999"})
    assert err["code"] == "no_question"
    err = await c.request({"cmd": "answer", "session": "ans", "digit": "x"})
    assert err["code"] == "bad_field"
    # digit as a JSON integer is accepted on the wire too (it reaches the session: no question open) ...
    err = await c.request({"cmd": "answer", "session": "ans", "digit": 1})
    assert err["code"] == "no_question", err
    # ... but still exactly one digit
    for bad in (12, -1, True, 1.5):
        err = await c.request({"cmd": "answer", "session": "ans", "digit": bad})
        assert err["code"] == "bad_field", (bad, err)
    await c.request({"cmd": "kill", "session": "ans"}, "killed")
    await c.close()


# ----------------------------------------------------------------------------- many clients, replay
async def test_two_clients_both_receive(daemon: Any, bash_create: Any) -> None:
    a, _ = await connect(daemon)
    b, _ = await connect(daemon)
    await create(a, bash_create("two"))
    acc = await a.request({"cmd": "send", "session": "two", "content": "echo both"}, "accepted")
    da = await a.wait("complete", turn_id=acc["turn_id"])
    db = await b.wait("complete", turn_id=acc["turn_id"])
    assert da == db and da["content"] == "both"
    assert (await b.wait("accepted", turn_id=acc["turn_id"]))["seq"] == acc["seq"]
    pong = await b.request({"cmd": "ping"}, "pong")
    assert pong["event"] == "pong"
    await a.drain_for(0.2)
    assert not any(e["event"] == "pong" and e.get("re") == pong["re"] for e in a.events), (
        "replies are private"
    )
    await a.request({"cmd": "kill", "session": "two"}, "killed")
    await a.close()
    await b.close()


async def test_reconnect_since_seq_loses_and_duplicates_nothing(daemon: Any, bash_create: Any) -> None:
    keeper, _ = await connect(daemon)  # keeps the daemon from buffering: this is the replay path
    a, _ = await connect(daemon)
    await create(a, bash_create("rc"))
    last = max(e["seq"] for e in a.events if "seq" in e)
    await a.close()
    acc = await keeper.request({"cmd": "send", "session": "rc", "content": "echo missed"}, "accepted")
    await keeper.wait("complete", turn_id=acc["turn_id"])
    await keeper.drain_for(0.5)
    produced = [e for e in keeper.events if e.get("session") == "rc" and e.get("seq", 0) > last]
    a2, ready = await connect(daemon)
    assert ready["buffered"] == 0
    assert (
        ready["last_seq"] == produced[-1]["seq"] and "seq" not in ready
    )  # high-water mark, not an event seq
    caps = await a2.request({"cmd": "hello", "since_seq": last, "subscribe": ["rc"]}, "capabilities")
    assert caps["event"] == "capabilities" and caps["protocol_version"] == 1 and caps["subscribed"] == ["rc"]
    assert (
        caps["daemon_id"] == ready["daemon_id"]
        and caps["last_seq"] == ready["last_seq"]
        and "seq" not in caps
    )
    await a2.drain_for(0.5)
    got = [e for e in a2.events if e.get("session") == "rc"]
    assert [e["seq"] for e in got] == [e["seq"] for e in produced] and caps["replayed"] == len(produced)
    assert any(e["event"] == "complete" and e["content"] == "missed" for e in got)
    # a second hello with the same since_seq replays nothing again
    caps2 = await a2.request({"cmd": "hello", "since_seq": last}, "capabilities")
    assert caps2["replayed"] == 0
    await keeper.request({"cmd": "kill", "session": "rc"}, "killed")
    await a2.close()
    await keeper.close()


@pytest.fixture
def lone_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProc]:
    """A daemon of this test's own: buffering happens only while *no* control client is connected, which a
    shared daemon cannot promise while an earlier test's connection is still being closed on a loaded box."""
    d = tempfile.mkdtemp(prefix="lbd-")  # AF_UNIX paths are short
    proc = start_daemon(os.path.join(d, "d.sock"))
    yield proc
    proc.stop()
    shutil.rmtree(d, ignore_errors=True)


async def test_buffering_while_no_client(lone_daemon: DaemonProc, bash_create: Any, tmp_path: Path) -> None:
    daemon = lone_daemon
    gate = tmp_path / "gate"
    c, _ = await connect(daemon)
    await create(c, bash_create("buf", quiescence=2.0))
    # the output comes only when the test opens the gate, 1 s after the client left (not 1 s after the
    # send: a loaded box may take that long to get the close to the daemon): it has long noticed by then
    command = f'while [ ! -e {gate} ]; do sleep 0.05; done; echo lat""er'  # its echo is not "later"
    await c.send({"cmd": "send", "session": "buf", "content": command, "id": "b1"})
    await c.wait("accepted")
    await c.close()
    r, w = await attach(daemon, b"buf")  # a raw viewer is not a control client
    await asyncio.sleep(1)
    gate.touch()  # after the viewer's paint: it sees the output itself arrive
    assert b"later\r\n" in await read_until(r, b"later\r\n")
    w.close()
    for _ in range(400):  # the attach listing (not a control client either) shows when the turn is over
        r, _ = await attach(daemon, b'{"list":true}')
        listing = orjson.loads(await r.read())
        if {s["name"]: s["state"] for s in listing["sessions"]}.get("buf") == "idle":
            break
        await asyncio.sleep(0.1)
    c2, ready = await connect(daemon)
    assert ready["buffered"] > 0
    flushed = [await c2.wait(lambda e: True) for _ in range(ready["buffered"])]
    assert all("seq" in e for e in flushed)
    assert [e["seq"] for e in flushed] == sorted(e["seq"] for e in flushed)
    assert any(e["event"] == "complete" and e["content"] == "later" for e in flushed), flushed
    await c2.request({"cmd": "kill", "session": "buf"}, "killed")
    await c2.close()


# ----------------------------------------------------------------------------- attach
async def attach(daemon: Any, selector: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    r, w = await asyncio.open_unix_connection(daemon.socket + ".attach")
    w.write(selector + b"\n")
    await w.drain()
    return r, w


async def read_until(r: asyncio.StreamReader, needle: bytes, timeout: float = WAIT) -> bytes:
    buf = b""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while needle not in buf:
        chunk = await asyncio.wait_for(r.read(65536), max(0.01, end - loop.time()))
        if not chunk:
            break
        buf += chunk
    return buf


async def test_attach_paint_round_trip_and_viewers(daemon: Any) -> None:
    c, _ = await connect(daemon)
    await create(c, fake_create("att"))
    r, w = await attach(daemon, orjson.dumps({"session": "att"}))
    paint = await read_until(r, b"FAKE TUI ready")
    assert paint.startswith(b"\x1b[") and b"\x1b[2J" in paint and b"\x1b[H" in paint
    viewer_r, viewer_w = await attach(daemon, b"att")  # bare key; second attacher is read-only
    await read_until(viewer_r, b"FAKE TUI ready")
    viewer_w.write(b"reply from-viewer\r")
    await viewer_w.drain()
    w.write(b"reply attached-ok\r")
    await w.drain()
    out = await read_until(r, b"attached-ok\r\n")
    assert b"attached-ok" in out
    assert b"attached-ok" in await read_until(viewer_r, b"attached-ok\r\n"), "viewers see the same output"
    dump = await c.request({"cmd": "dump", "session": "att"}, "dump")
    assert "attached-ok" in dump["capture"] and "from-viewer" not in dump["capture"]
    # a viewer asking for control gets it
    ctl_r, ctl_w = await attach(daemon, orjson.dumps({"session": "att", "control": True}))
    await read_until(ctl_r, b"attached-ok")
    ctl_w.write(b"reply took-control\r")
    await ctl_w.drain()
    await read_until(ctl_r, b"took-control\r\n")
    lst = await c.request({"cmd": "list"}, "sessions")
    assert {s["name"]: s for s in lst["sessions"]}["att"]["state"] in ("idle", "responding")
    for writer in (w, viewer_w, ctl_w):
        writer.close()
    await c.request({"cmd": "kill", "session": "att"}, "killed")
    await c.close()


async def test_attach_list_and_unknown_key(daemon: Any) -> None:
    c, _ = await connect(daemon)
    await create(c, fake_create("attl"))
    r, _ = await attach(daemon, b'{"list":true}')
    data = await r.read()
    listing = orjson.loads(data)
    assert listing["pid"] > 0 and "attl" in [s["name"] for s in listing["sessions"]]
    assert data.endswith(b"\n")
    r, _ = await attach(daemon, b"nosuch")
    data = await r.read()
    assert data.startswith(b"\r\nlit-bridge-rs: no such session 'nosuch' (pid ")
    assert b"attl" in data and data.endswith(b"])\r\n")
    await c.request({"cmd": "kill", "session": "attl"}, "killed")
    await c.close()


@pytest.mark.skipif(sys.platform != "linux", reason="uses /proc")
async def test_no_zombies_left(daemon: Any) -> None:
    """After the tests above, the daemon has no defunct children."""
    for pid in children(daemon.proc.pid):
        assert pid_alive(pid), f"zombie child {pid}"


async def test_deltas_are_negotiated_and_an_old_client_still_gets_replace(
    daemon: Any, bash_create: Any
) -> None:
    """hello{deltas:true}: that connection gets `append` (rebuilding the turn's text exactly); a connection
    that did not ask gets the same `replace` events as always, and the daemon advertises the field."""
    old, ready = await connect(daemon)
    assert "hello.deltas" in ready["features"] and "append" in ready["events"]
    new, _ = await connect(daemon)
    caps = await new.request({"cmd": "hello", "deltas": True}, "capabilities")
    assert caps["deltas"] is True
    plain = await old.request({"cmd": "hello", "subscribe": "*"}, "capabilities")
    assert "deltas" not in plain, "said only to a hello that asked"
    await create(old, bash_create("deltas"))
    await wait_prompt(old, "deltas")
    acc = await old.request(
        {
            "cmd": "send",
            "session": "deltas",
            "content": "for i in $(seq 1 400); do echo line $i; sleep 0.002; done",
        },
        "accepted",
    )
    tid = acc["turn_id"]
    done = await old.wait("complete", turn_id=tid)
    await new.wait("complete", turn_id=tid)
    assert done["content"].splitlines()[-1] == "line 400"
    replaces = [e for e in old.events if e.get("turn_id") == tid and e["event"] == "replace"]
    assert replaces and not [e for e in old.events if e["event"] == "append"]
    assert all(set(e) == {"event", "session", "text", "turn_id", "seq"} for e in replaces)
    appends = [e for e in new.events if e.get("turn_id") == tid and e["event"] in ("append", "replace")]
    assert appends and {e["event"] for e in appends} == {"append"}
    # one append per replace (fewer when it fell behind: coalesced), carrying the replace's seq
    assert {e["seq"] for e in appends} <= {e["seq"] for e in replaces}
    assert appends[-1]["seq"] == replaces[-1]["seq"]
    text = ""
    for e in appends:
        assert e["offset"] <= len(text)
        text = text[: e["offset"]] + e["text"]
    assert text == replaces[-1]["text"]
    await old.request({"cmd": "kill", "session": "deltas"}, "killed")
    await old.close()
    await new.close()
