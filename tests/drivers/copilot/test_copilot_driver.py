"""CopilotDriver's launch (session pinning, resume, model, env), the record's turn events and the interrupt keys."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from litbridge.drivers import clis, get_driver
from litbridge.drivers.base import DriverError
from litbridge.drivers.copilot.driver import ESC, CopilotDriver
from litbridge.drivers.copilot.events import TurnTracker, copilot_home, events_path


def driver(tmp_path: Path, **options) -> CopilotDriver:
    host = SimpleNamespace(log=logging.getLogger("test"), loop=None)
    cwd = tmp_path / "work"
    cwd.mkdir(parents=True, exist_ok=True)
    opts = {"cli": "copilot", "working_dir": str(cwd), "env": {"HOME": str(tmp_path)}, **options}
    return CopilotDriver(host, opts)


def test_registered() -> None:
    assert get_driver("copilot") is CopilotDriver
    assert get_driver("/usr/local/bin/copilot") is CopilotDriver
    assert "copilot" in clis()


def test_launch_pins_a_new_session_id_and_turns_updates_and_telemetry_off(tmp_path: Path) -> None:
    d = driver(tmp_path, model="mock-model")
    spec = d.launch()
    assert spec.argv[:3] == ["copilot", "--no-auto-update", "--disable-client-telemetry"]
    assert spec.argv[3] == "--session-id" and spec.argv[4] == d.session_id
    assert spec.argv[5:] == ["--model", "mock-model"]
    assert spec.env == {"COPILOT_AUTO_UPDATE": "false"}
    assert "COPILOT_ALLOW_ALL" in spec.env_remove
    assert not d.resumed
    assert d.transcript_path() == tmp_path / ".copilot" / "session-state" / d.session_id / "events.jsonl"
    assert not (tmp_path / ".copilot").exists()  # nothing of the CLI's config is written by the driver


def test_resume_token_with_a_record_resumes_it(tmp_path: Path) -> None:
    sid = "0cb916db-26aa-40f2-86b5-1ba81b225fd2"
    path = events_path({"HOME": str(tmp_path)}, sid)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"type": "session.start", "data": {}}) + "\n")
    d = driver(tmp_path, resume=sid)
    spec = d.launch()
    assert f"--resume={sid}" in spec.argv and "--session-id" not in spec.argv
    assert d.resumed and d.session_id == sid
    assert d.follower is not None and d.follower.reader.offset == path.stat().st_size  # history not replayed


def test_resume_token_without_a_record_starts_fresh(tmp_path: Path) -> None:
    d = driver(tmp_path, resume="0cb916db-26aa-40f2-86b5-1ba81b225fd2")
    spec = d.launch()
    assert "--session-id" in spec.argv and not any(a.startswith("--resume") for a in spec.argv)
    assert not d.resumed and d.session_id != "0cb916db-26aa-40f2-86b5-1ba81b225fd2"


def test_a_session_id_that_is_not_a_uuid_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DriverError):
        driver(tmp_path, args=["--session-id", "../../etc"]).launch()


def test_copilot_home_is_honoured(tmp_path: Path) -> None:
    assert copilot_home({"HOME": "/h"}) == Path("/h/.copilot")
    assert copilot_home({"HOME": "/h", "COPILOT_HOME": "/c"}) == Path("/c")


def test_preapprove_remembers_the_folder_else_this_run_only(tmp_path: Path) -> None:
    trust = SimpleNamespace(kind="trust")
    assert driver(tmp_path).startup_answer(trust) == "Yes"
    assert driver(tmp_path, preapprove=True).startup_answer(trust) == "Yes, and remember"


def test_two_escs_typed_through_attach_interrupt_one_does_not(tmp_path: Path) -> None:
    d = driver(tmp_path)
    assert d.is_interrupt_key(ESC) is False
    assert d.is_interrupt_key(ESC) is True  # the second, within a second
    assert d.is_interrupt_key(ESC) is False  # a new pair starts
    assert d.is_interrupt_key(ESC + ESC) is True
    assert d.is_interrupt_key(b"q") is False


def _e(typ: str, **data) -> dict:
    return {"type": typ, "data": data}


def test_tracker_completes_on_the_final_turn_end_with_the_last_message() -> None:
    t = TurnTracker()
    evs = t.feed(
        [
            _e("user.message", content="Run it?\n日本 🎉", messageId="m1"),
            _e("assistant.turn_start", turnId="0"),
            _e("session.usage_record", usage={"apiCallId": "a1", "inputTokens": 10, "outputTokens": 2}),
            _e("assistant.message", content="", toolRequests=[{"toolCallId": "c1", "name": "bash",
                                                                "arguments": {"command": "ls"}}]),
            _e("permission.requested", requestId="r1"),
            _e("permission.completed", requestId="r1", result={"kind": "approved"}),
            _e("tool.execution_complete", toolCallId="c1", success=True, result={"content": "out"}),
            _e("assistant.turn_end", turnId="0"),
            _e("assistant.turn_start", turnId="1"),
            _e("session.usage_record", usage={"apiCallId": "a2", "inputTokens": 12, "outputTokens": 3}),
            _e("assistant.message", content="Done? Yes 👍", toolRequests=[]),
            _e("assistant.turn_end", turnId="1"),
        ]
    )  # fmt: skip
    kinds = [e.kind for e in evs]
    assert kinds == ["prompt", "tool_use", "permission", "permission", "tool_result", "text", "complete"]
    assert evs[0].text == "Run it?\n日本 🎉"
    assert evs[1].text == "bash" and evs[1].data == {"tool_use_id": "c1", "input": {"command": "ls"}}
    assert evs[4].text == "out" and evs[4].data["is_error"] is False
    assert evs[-1].text == "Done? Yes 👍"
    assert evs[-1].data["usage"]["input_tokens"] == 22 and evs[-1].data["usage"]["output_tokens"] == 5


def test_tracker_turn_end_without_a_message_waits_for_abort_or_error() -> None:
    t = TurnTracker()
    t.feed([_e("user.message", content="q"), _e("assistant.turn_start")])
    assert t.feed([_e("assistant.turn_end")]) == [] and t.ended_without_answer
    [ev] = t.feed([_e("abort", reason="user_abort")])
    assert ev.kind == "interrupted" and not t.open
    t.feed([_e("user.message", content="q2"), _e("assistant.turn_start"), _e("assistant.turn_end")])
    [ev] = t.feed([_e("session.error", message="Last error: 400", statusCode=400)])
    assert (ev.kind, ev.text, ev.data["status"]) == ("error", "Last error: 400", 400)
    assert t.feed([_e("assistant.message", content="late")]) == []  # no open turn: nothing
