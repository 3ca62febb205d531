"""The shared OSC 7501 interpreter, and both terminals handing it the raw payload."""

from __future__ import annotations

import base64

from litbridge.drivers import osc7501


def b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


def test_parse_claude_report_decodes_msg():
    st = osc7501.parse(f"state=blocked:app=claude-code:kind=permission:msg={b64('trust this folder')}")
    assert st == {"state": "blocked", "app": "claude-code", "kind": "permission", "msg": "trust this folder"}
    assert osc7501.state_of(st) == "blocked"


def test_parse_codex_report_and_bytes():
    assert osc7501.parse(b"state=idle:app=codex") == {"state": "idle", "app": "codex"}


def test_probe_and_empty_are_not_reports():
    assert osc7501.parse("?") is None
    assert osc7501.parse("") is None
    assert osc7501.state_of(None) is None
    assert osc7501.state_of({"app": "x"}) is None


def test_unpadded_and_bad_base64():
    assert osc7501.parse(f"msg={b64('ab').rstrip('=')}")["msg"] == "ab"  # type: ignore[index]
    assert osc7501.parse("msg=%%%")["msg"] == "%%%"  # type: ignore[index]
    assert osc7501.parse("state=done;app=x") == {"state": "done", "app": "x"}


def _terminal_reports(cls: type) -> tuple[list, list]:
    got: list = []
    replies: list = []
    term = cls(200, 50, on_reply=replies.append, on_status=got.append)
    data = (
        f"\x1b]7501;?\x07ab\x1b]7501;state=working:msg={b64('x y')}\x07\x1b]7501;state=idle:app=codex\x1b\\"
    )
    raw = data.encode()
    for i in range(0, len(raw), 7):  # split mid-sequence: the terminal keeps parser state
        term.feed(raw[i : i + 7])
    return got, replies


def test_core_terminal_hands_the_raw_payload():
    from litbridge.term import Terminal

    got, replies = _terminal_reports(Terminal)
    assert got == [f"state=working:msg={b64('x y')}", "state=idle:app=codex"]
    assert [osc7501.parse(p)["state"] for p in got] == ["working", "idle"]  # type: ignore[index]
    assert b"\x1b]7501;?\x07" in b"".join(replies)


def test_fallback_terminal_delivers_osc7501_too():
    from litbridge.term import PyteTerminal

    got, replies = _terminal_reports(PyteTerminal)
    assert got == [f"state=working:msg={b64('x y')}", "state=idle:app=codex"]
    assert b"\x1b]7501;?\x07" in b"".join(replies)
