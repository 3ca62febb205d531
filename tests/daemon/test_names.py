"""Session names and channel ids over the real socket of a real `litbridge serve`: control characters (C0, DEL,
C1) are refused with `bad_field`, so a name can never reach a terminal as ESC/BEL; other names are kept as is."""

from __future__ import annotations

from typing import Any

import pytest
from lbd_helpers import Conn

from litbridge.protocol.names import control_character, shown

ASYNC = pytest.mark.asyncio(loop_scope="function")

BAD = ["e\x1b[31mRED", "x\x1b]0;pwn\x07y", "nul\x00", "nl\nname", "del\x7f", "csi\x9b2J", "tab\tname"]


async def _connect(daemon: Any) -> Conn:
    c = await Conn.open(daemon.socket)
    assert (await c.wait(lambda e: True))["event"] == "monitor_ready"
    return c


def _assert_refused(err: dict[str, Any], name: str) -> None:
    assert err["event"] == "error" and err["code"] == "bad_field", err
    assert shown(name) in err["message"], err
    assert control_character(err["message"]) is None, err  # the message itself is safe to print
    assert "session" not in err  # the refused name is not echoed as a key either


@ASYNC
@pytest.mark.parametrize("name", BAD)
async def test_create_refuses_control_characters_in_names(daemon: Any, bash_create: Any, name: str) -> None:
    c = await _connect(daemon)
    try:
        _assert_refused(await c.request(bash_create(name)), name)
        _assert_refused(await c.request(bash_create("chan-ok", channel_id=name)), name)
        lst = await c.request({"cmd": "list"}, "sessions")
        assert all(control_character(s["name"]) is None for s in lst["sessions"]), lst
    finally:
        await c.close()


@pytest.mark.parametrize(
    "cmd",
    [
        {"cmd": "dump"},
        {"cmd": "kill"},
        {"cmd": "send", "content": "hi"},
        {"cmd": "input", "content": "hi"},
        {"cmd": "keystroke", "keys": ["Enter"]},
        {"cmd": "interrupt"},
    ],
)
@ASYNC
async def test_every_session_command_refuses_control_characters(daemon: Any, cmd: dict[str, Any]) -> None:
    c = await _connect(daemon)
    try:
        _assert_refused(await c.request({**cmd, "session": "x\x1b]0;pwn\x07y"}), "x\x1b]0;pwn\x07y")
        _assert_refused(await c.request({**cmd, "session": "ok", "channel_id": "c\x85"}), "c\x85")
    finally:
        await c.close()


@ASYNC
async def test_printable_names_are_kept(daemon: Any, bash_create: Any) -> None:
    """Spaces, backslashes, quotes, CJK and emoji are names like any other."""
    name = "名前 \\ it's 🎉"
    c = await _connect(daemon)
    try:
        ready = await c.request(bash_create(name), "ready")
        assert ready["event"] == "ready" and ready["session"] == name, ready
        killed = await c.request({"cmd": "kill", "session": name}, "killed")
        assert killed["event"] == "killed", killed
    finally:
        await c.close()


def test_shown_and_control_character() -> None:
    assert shown("plain name") == "plain name"
    assert shown("名前 \\ it's") == "名前 \\ it's"  # printable: unchanged, backslash not doubled
    assert shown("x\x1b]0;pwn\x07y") == "x\\x1b]0;pwn\\x07y"
    assert shown("a\u200bb") == "a\\u200bb"  # invisible but not a control: still escaped for display
    assert control_character("a\u200bb") is None
    assert control_character("ok") is None
    assert [control_character(c) for c in ("\x00", "\x1f", "\x7f", "\x80", "\x9f")] == [
        "\x00",
        "\x1f",
        "\x7f",
        "\x80",
        "\x9f",
    ]
    assert control_character(" ~\xa0") is None  # space, tilde and NBSP are not controls
