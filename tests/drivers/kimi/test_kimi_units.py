"""Kimi Code's pure pieces on what the real 2.1.0 drew and wrote: the screen rules and the wire-log parser."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from litbridge.drivers.kimi.driver import KimiDriver
from litbridge.drivers.kimi.v2_1 import Rules
from litbridge.drivers.kimi.versions import CLI, Record
from litbridge.drivers.kimi.wire import WireTurns

RULE = " " + "─" * 198
TOP, BOTTOM = " ╭" + "─" * 196 + "╮", " ╰" + "─" * 196 + "╯"


def _pad(rows: list[str]) -> list[str]:
    return [r.ljust(200) for r in rows] + [" " * 200] * (50 - len(rows))


def _idle(*middle: str, draft: str = "") -> list[str]:
    return _pad(
        [
            " │  Version:   2.1.0",
            *middle,
            TOP,
            f" │ > {draft}".ljust(199) + "│",
            BOTTOM,
            " mock-model  …/work",
        ]
    )


def test_idle_busy_draft_version_model() -> None:
    r = Rules()
    idle = r.classify(_idle(" ✨ Hi?", " ● Hello."))
    assert (idle.state, idle.draft, idle.version) == ("idle", "", "2.1.0")
    busy = r.classify(_idle(" ✨ Hi?", "  ⠦ Working… · Tip: @: mention files"))
    assert (busy.state, busy.spinner) == ("busy", "Working… · Tip: @: mention files")
    assert r.classify(_idle(draft="typed")).draft == "typed"
    assert r.footer_model(_idle()) == "mock-model"


def test_trust_and_approval_panels() -> None:
    r = Rules()
    trust = r.classify(
        _pad(
            [
                RULE,
                "  Trust this folder?",
                "  ↑↓ navigate · Enter select · Esc exit",
                "",
                "  /tmp/work",
                "",
                "   ❯ Trust this folder",
                "     Enable project MCP servers.",
                "",
                "     Don't trust",
                "     Exit Kimi Code.",
                RULE,
            ]
        )
    )
    assert trust.state == "dialog" and trust.dialog.kind == "trust"
    assert [(o.digit, o.label, o.selected) for o in trust.dialog.options] == [
        ("1", "Trust this folder", True),
        ("2", "Don't trust", False),
    ]
    assert r.dialog_keys(trust.dialog, 0) == ["Enter"]
    approval = r.classify(
        _pad(
            [
                " ✨ Run",
                " ● Running a command · $ ls",
                RULE,
                "   ▶ Run this command?",
                "",
                "   cwd: /tmp/work",
                "   $ ls -la",
                "",
                "   ▶ 1. Approve once",
                "     2. Approve for this session",
                "     3. Reject",
                "     4. Reject with feedback",
                "",
                "   ↑/↓ select · 1/2/3/4 choose · ↵ confirm",
                RULE,
                " mock-model",
            ]
        )
    )
    d = approval.dialog
    assert approval.state == "dialog" and d.kind == "permission" and d.text == "Run this command?"
    assert [o.label for o in d.options] == [
        "Approve once",
        "Approve for this session",
        "Reject",
        "Reject with feedback",
    ]
    assert d.fields == {"cwd": "/tmp/work", "command": "ls -la"}
    assert r.dialog_keys(d, 2) == ["3"]


def test_wire_entries_to_turn_events() -> None:
    t = WireTurns()
    loop = "context.append_loop_event"
    events = t.feed(
        [
            {"type": "turn.prompt", "input": [{"type": "text", "text": "Go?"}]},
            {
                "type": "usage.record",
                "usage": {"inputOther": 5, "output": 1, "inputCacheRead": 0, "inputCacheCreation": 0},
            },
            {
                "type": loop,
                "event": {"type": "tool.call", "toolCallId": "c1", "name": "Bash", "args": {"command": "ls"}},
            },
            {
                "type": loop,
                "event": {
                    "type": "tool.result",
                    "toolCallId": "c1",
                    "result": {"output": "rejected", "isError": True},
                },
            },
            {
                "type": "agent.message.appended",
                "message": {
                    "message": {"role": "assistant", "content": [{"type": "text", "text": "Done 🎉"}]}
                },
            },
            {"type": "turn.ended", "reason": "completed"},
        ]
    )
    assert [(e.kind, e.text) for e in events] == [
        ("prompt", "Go?"),
        ("tool_use", "Bash"),
        ("tool_result", "rejected"),
        ("text", "Done 🎉"),
        ("complete", "Done 🎉"),
    ]
    assert events[2].data == {"tool_use_id": "c1", "is_error": True}
    assert events[-1].data["usage"]["input_tokens"] == 5
    failed = t.feed(
        [
            {"type": "turn.prompt", "input": []},
            {
                "type": "turn.ended",
                "reason": "failed",
                "error": {"code": "provider.auth_error", "message": "401 no"},
            },
        ]
    )
    assert failed[-1].kind == "error" and failed[-1].text == "[provider.auth_error] 401 no"
    assert t.feed([{"type": "turn.ended", "reason": "cancelled"}])[0].kind == "interrupted"


def test_the_moon_loader_before_the_first_token_reads_busy() -> None:
    """Until the model's first token Kimi draws a moon-phase loader with a tip (`🌒 · Tip: ...`), not the braille one:
    the recorded frame 0.4 s after the prompt was sent reads busy, not idle."""
    import base64
    import json
    from pathlib import Path

    import pyte

    capture = Path(__file__).resolve().parents[2] / "fixtures" / "captures" / "kimi" / "kimi_tool_approval"

    class Screen(pyte.Screen):  # type: ignore[misc]
        def report_device_status(self, *args: object, **kwargs: object) -> None:
            """No terminal to answer (the recording holds the answers)."""

    screen = Screen(200, 50)
    stream = pyte.ByteStream(screen)
    for line in (capture / "chunks.jsonl").read_text().splitlines():
        chunk = json.loads(line)
        if chunk["t"] > 12.2:
            break
        stream.feed(base64.b64decode(chunk["b64"]))
    rows = list(screen.display)
    assert any("🌒" in r or "🌑" in r for r in rows)
    reading = Rules().classify(rows)
    assert reading.state == "busy"
    assert reading.spinner == "Tip: /web: use the Web UI for a better experience"


class _NewerTurns(WireTurns):
    """A later version's mapping of the wire log (same logic here)."""


class _Record22(Record):
    VERSION = "2.2"

    def tracker(self) -> WireTurns:
        return _NewerTurns()


def test_the_follower_maps_the_wire_log_with_the_versions_record_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The follower's tracker is the picked `Record`'s; a version read later from the welcome box hands it that
    version's while nothing was read."""
    monkeypatch.setitem(CLI.record, "2.2", _Record22)
    host = SimpleNamespace(log=logging.getLogger("test"), loop=SimpleNamespace(time=time.monotonic))
    options = {"working_dir": str(tmp_path), "env": {"HOME": str(tmp_path)}}
    d = KimiDriver(host, {**options, "cli_version": "2.2.0"})
    assert isinstance(d.record, _Record22) and type(d.follower.tracker) is _NewerTurns
    d = KimiDriver(host, options)  # not known yet: the newest
    assert type(d.follower.tracker) is _NewerTurns
    d._version_found("2.1.0")
    assert type(d.follower.tracker) is WireTurns
    d.follower.close()
