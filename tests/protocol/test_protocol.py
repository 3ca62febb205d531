"""The protocol table, framing and builders: validation codes, 1 MiB lines, lenient UTF-8, v1 sets only grow."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from litbridge.protocol import (
    COMMANDS,
    EVENTS,
    LineSplitter,
    ProtocolError,
    TooLarge,
    decode,
    encode,
    events,
    session_key,
    validate_command,
)
from v1_names import V1_COMMANDS, V1_EVENTS


def test_v1_sets_only_grow() -> None:
    assert set(V1_COMMANDS) <= set(COMMANDS)
    assert set(V1_EVENTS) <= set(EVENTS)


def test_every_command_names_existing_reply_events() -> None:
    for cmd in COMMANDS.values():
        assert cmd.replies, cmd.name
        for r in cmd.replies:
            assert r in EVENTS, (cmd.name, r)


@pytest.mark.parametrize(
    ("msg", "code"),
    [
        ([1], "unknown_command"),
        ({"cmd": "nope"}, "unknown_command"),
        ({}, "unknown_command"),
        ({"cmd": "send", "content": "x"}, "bad_field"),
        ({"cmd": "send", "session": 3}, "bad_field"),
        ({"cmd": "keystroke", "session": "s", "keys": "Enter"}, "bad_field"),
        ({"cmd": "create", "session": "s", "args": ["a", 1]}, "bad_field"),
        ({"cmd": "create", "session": "s", "env": {"A": None}}, "bad_field"),
        ({"cmd": "kill", "session": "s", "store_resume": 1}, "bad_field"),
        ({"cmd": "hello", "since_seq": True}, "bad_field"),
        ({"cmd": "ping", "id": 1.5}, "bad_field"),
    ],
)
def test_validation_errors(msg: object, code: str) -> None:
    with pytest.raises(ProtocolError) as info:
        validate_command(msg)
    assert info.value.code == code


def test_validation_defaults_and_extras() -> None:
    cmd, f = validate_command({"cmd": "create", "session": "s", "preapprove": True, "model": None})
    assert cmd.name == "create" and f["cli"] == "claude" and f["args"] == [] and f["env"] == {}
    assert f["preapprove"] is True and "model" not in f, "extras kept, null = absent"
    _, f = validate_command({"cmd": "hello", "subscribe": "*"})
    assert f["subscribe"] == "*"
    _, f = validate_command({"cmd": "send", "session": "s", "id": "m1"})
    assert f["content"] == ""
    assert validate_command({"cmd": "ping"})[0].per_session is False


def test_unknown_command_message_matches_lit_bridge() -> None:
    with pytest.raises(ProtocolError, match=r"^unknown command: nope$"):
        validate_command({"cmd": "nope"})
    with pytest.raises(ProtocolError, match=r"^unknown command: $"):
        validate_command({"x": 1})


def test_session_key() -> None:
    assert session_key({"session": "a"}) == "a"
    assert session_key({"session": "a", "channel_id": "c"}) == "a:c"
    assert session_key({"session": "a", "channel_id": ""}) == "a:"


def test_splitter_lines_chunks_and_crlf() -> None:
    sp = LineSplitter(max_line=10)
    assert sp.feed(b"ab") == []
    assert sp.feed(b"c\r\nde\nf") == [b"abc", b"de"]
    assert sp.feed(b"\n") == [b"f"]
    assert sp.feed(b"no eol") == [] and sp.take_rest() == b"no eol"
    assert sp.take_rest() == b"" and sp.pending == 0


def test_splitter_too_large_is_discarded_and_stream_continues() -> None:
    sp = LineSplitter(max_line=10)
    out = sp.feed(b"x" * 8) + sp.feed(b"y" * 8) + sp.feed(b"zzz\nok\n")
    assert isinstance(out[0], TooLarge) and out[0].size == 19
    assert out[1:] == [b"ok"]
    out = sp.feed(b"q" * 30 + b"\nfine\n")
    assert isinstance(out[0], TooLarge) and out[1] == b"fine"


def test_decode_invalid_utf8_replaced_and_bad_json() -> None:
    assert decode(b'{"a":"\xff"}') == {"a": "\ufffd"}
    with pytest.raises(ProtocolError) as info:
        decode(b"{nope")
    assert info.value.code == "bad_json" and info.value.message.startswith("invalid JSON: ")


def test_encode_is_one_compact_line() -> None:
    line = encode({"event": "pong", "text": "a\nb"})
    assert line.endswith(b"\n") and line.count(b"\n") == 1 and b" " not in line
    assert orjson.loads(line) == {"event": "pong", "text": "a\nb"}


def test_encode_never_fails_on_what_a_cli_handed_over() -> None:
    """A tool input parsed by the stdlib can hold integers past 64 bits; drivers may pass sets or bytes.
    The event must still go out (a TypeError here would silently drop a turn's event)."""
    import json

    big = 123456789012345678901234567890
    line = encode({"event": "tool_use", "input": {"n": big, "tags": {"x"}, "raw": b"\xffok"}})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == {"event": "tool_use", "input": {"n": big, "tags": ["x"], "raw": "\ufffdok"}}
    assert json.loads(encode({"p": Path("/tmp/x"), "t": (1, 2)})) == {"p": "/tmp/x", "t": [1, 2]}


def test_builders() -> None:
    assert events.pong() == {"event": "pong"}
    assert events.pong(re=3) == {"event": "pong", "re": 3}
    ev = events.ready("s:c", "c", model=None, re="x")
    assert ev == {
        "event": "ready",
        "session": "s:c",
        "channel_id": "c",
        "state": "starting",
        "model": None,
        "resumed": False,
        "re": "x",
    }
    assert events.ready_reused("s", None, model="m") == {
        "event": "ready",
        "session": "s",
        "reused": True,
        "model": "m",
    }
    assert events.state("s", None, "idle", "thinking") == {
        "event": "state",
        "session": "s",
        "from": "idle",
        "to": "thinking",
    }
    tr = events.tool_result("s", None, "t", "x" * 6000, False, "t1")
    assert len(tr["content"]) == 5001 and tr["content"].endswith("…")
    assert "usage" not in events.complete("s", None, "hi", "t1", None, "screen")
    mr = events.monitor_ready(2, 0, ["claude"])
    assert mr["protocol_version"] == 1 and mr["limits"] == {"max_line": 1048576, "buffer": 5000}
    assert "last_seq" not in mr and "daemon_id" not in mr  # additive: absent unless known
    mr = events.monitor_ready(2, 0, ["claude"], 17, "abc")
    assert mr["last_seq"] == 17 and mr["daemon_id"] == "abc" and "seq" not in mr
    caps = events.capabilities(["claude"], "*", 0, None, "h1", 0, "abc")
    assert caps["last_seq"] == 0 and caps["daemon_id"] == "abc" and caps["re"] == "h1"
    with pytest.raises(ValueError):
        events.generic("not_an_event", "s", None)
    tu = events.tool_use("s", None, "tu1", "Bash", {"command": "ls"}, "t1")
    assert tu["name"] == "Bash" and tu["event"] == "tool_use"
    for name in ("dialog_dismissed", "unknown_dialog"):
        assert events.generic(name, "s", None, dialog="d")["event"] == name
