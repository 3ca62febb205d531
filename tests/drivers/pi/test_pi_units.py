"""Pi's pure pieces on what the real 0.73.1 drew and wrote: the screen rules and the session-JSONL parser."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from litbridge.drivers.pi.driver import PiDriver
from litbridge.drivers.pi.session import SessionTurns, session_dir
from litbridge.drivers.pi.v0_73 import Rules
from litbridge.drivers.pi.versions import CLI, Record
from litbridge.drivers.shellmarks import MarkReader

RULE = "─" * 200


def _screen(*middle: str, draft: str = "") -> list[str]:
    rows = [
        "",
        " pi v0.73.1",
        " escape interrupt · ctrl+c/ctrl+d clear/exit",
        "",
        *middle,
        "",
        RULE,
        draft,
        RULE,
    ]
    rows += ["/tmp/work", "0.0%/128k (auto)" + " " * 150 + "mock-model"]
    return [r.ljust(200) for r in rows] + [" " * 200] * (50 - len(rows))


def test_idle_busy_retrying_and_draft() -> None:
    r = Rules()
    idle = r.classify(_screen(" Hi?", "", " Hello."))
    assert (idle.state, idle.live_prompt, idle.draft, idle.version) == ("idle", True, "", "0.73.1")
    busy = r.classify(_screen(" Hi?", "", " ⠇ Working..."))
    assert (busy.state, busy.spinner) == ("busy", "Working...")
    retry = r.classify(_screen(" Hi?", " Error: 500 boom", " ⠸ Retrying (1/3) in 2s... (escape to cancel)"))
    assert retry.state == "busy" and retry.spinner.startswith("Retrying")
    assert r.classify(_screen(draft="typed text")).draft == "typed text"
    assert r.footer_model(_screen()) == "mock-model"


def test_response_between_prompt_and_editor() -> None:
    r = Rules()
    rows = _screen(" First?", " Line two", "", " Answer one?", " 日本語 🎉", "", " ⠇ Working...")
    start = r.find_prompt(rows, "First?\nLine two")
    assert r.extract_response(rows, start) == "Answer one?\n日本語 🎉"


def _msg(role: str, **kw: object) -> dict:
    return {"type": "message", "id": kw.pop("id", role), "message": {"role": role, **kw}}


def test_session_entries_to_turn_events() -> None:
    t = SessionTurns()
    usage = {"input": 10, "output": 2, "cacheRead": 1, "cacheWrite": 0}
    events = t.feed(
        [
            {"type": "session", "id": "x"},
            _msg("user", content=[{"type": "text", "text": "Run it?"}]),
            _msg(
                "assistant",
                id="a1",
                content=[
                    {"type": "text", "text": "Running."},
                    {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls"}},
                ],
                usage=usage,
                stopReason="toolUse",
            ),
            _msg("toolResult", toolCallId="c1", content=[{"type": "text", "text": "a\n"}], isError=False),
            _msg(
                "assistant",
                id="a2",
                content=[{"type": "text", "text": "Done ✅"}],
                usage=usage,
                stopReason="stop",
            ),
        ]
    )
    assert [(e.kind, e.text) for e in events] == [
        ("prompt", "Run it?"),
        ("tool_use", "bash"),
        ("text", "Running."),
        ("tool_result", "a\n"),
        ("text", "Done ✅"),
        ("complete", "Done ✅"),
    ]
    assert events[1].data == {"tool_use_id": "c1", "input": {"command": "ls"}}
    assert events[-1].data["usage"] == {
        "input_tokens": 20,
        "output_tokens": 4,
        "cache_read_tokens": 2,
        "cache_creation_tokens": 0,
    }
    aborted = t.feed(
        [
            _msg("user", content="x"),
            _msg("assistant", content=[{"type": "text", "text": "par"}], stopReason="aborted"),
        ]
    )
    assert [(e.kind, e.text) for e in aborted][-1] == ("interrupted", "par")
    failed = t.feed([_msg("assistant", content=[], stopReason="error", errorMessage="500 boom")])
    assert [(e.kind, e.text) for e in failed] == [("error", "500 boom")]


def test_session_dir_and_zone_marks() -> None:
    from pathlib import Path

    assert session_dir(Path("/a"), "/tmp/my work") == Path("/a/sessions/--tmp-my work--")
    m = MarkReader()
    assert m.feed(b"x\x1b]133;A\x07y\x1b]13") == [("A", None)]
    assert m.feed(b"3;B\x07\x1b]133;C\x07") == [("B", None), ("C", None)]


class _NewerTurns(SessionTurns):
    """A later version's mapping of the session file (same logic here)."""


class _Record074(Record):
    VERSION = "0.74"

    def tracker(self) -> SessionTurns:
        return _NewerTurns()


def test_the_follower_maps_the_record_with_the_versions_record_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The follower's tracker is the picked `Record`'s; a version read later from the first frame (Pi's header)
    hands it that version's while nothing was read."""
    monkeypatch.setitem(CLI.record, "0.74", _Record074)
    host = SimpleNamespace(log=logging.getLogger("test"), loop=SimpleNamespace(time=time.monotonic))
    options = {"working_dir": str(tmp_path), "env": {"HOME": str(tmp_path)}}
    d = PiDriver(host, {**options, "cli_version": "0.74.0"})
    assert isinstance(d.record, _Record074) and type(d.follower.tracker) is _NewerTurns
    d = PiDriver(host, options)  # not known yet: the newest
    assert type(d.follower.tracker) is _NewerTurns
    d._version_found("0.73.1")
    assert type(d.follower.tracker) is SessionTurns
    d.follower.close()
