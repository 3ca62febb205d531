"""A rejected approval aborts the tool call: its `tool_result` is an error (docs/protocol.md), in code mode
(`exec`, whose output reads `aborted by user after 1.8s`) as for a plain function call."""

from __future__ import annotations

from codex_env import FIXTURES

from litbridge.drivers.codex import rollout as ro


def _results(capture: str) -> list[ro.TurnEvent]:
    (path,) = (FIXTURES / capture / "transcripts" / "sessions").glob("*/*/*/rollout-*.jsonl")
    evs = ro.TurnTracker().feed(ro.RolloutReader(path).poll())
    return [e for e in evs if e.kind == "tool_result"]


def test_code_mode_denied_exec_is_an_error() -> None:
    ok, denied = _results("codex_tool_approval")
    assert not ok.data["is_error"]
    assert denied.text.startswith("aborted by user after ")
    assert denied.data["is_error"] is True


def test_function_call_denied_is_an_error() -> None:
    ok, denied = _results("codex_tool_approval_fn")
    assert (ok.data["is_error"], denied.data["is_error"]) == (False, True)


def test_an_answer_mentioning_the_phrase_is_not_an_error() -> None:
    tracker = ro.TurnTracker()
    (ev,) = tracker.feed(
        [
            {
                "type": "response_item",
                "payload": {
                    "type": "custom_tool_call_output",
                    "call_id": "c1",
                    "output": "Process exited with code 0\nOutput:\nthe log says: aborted by user at 10:02\nok\n",
                },
            }
        ]
    )
    assert ev.data["is_error"] is False
