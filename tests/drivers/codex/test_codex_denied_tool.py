"""A rejected approval aborts the tool call: its `tool_result` is an error (docs/protocol.md), in code mode
(`exec`, whose output reads `aborted by user after 1.8s`) as for a plain function call."""

from __future__ import annotations

import pytest
from codex_env import FIXTURES, create_cmd, shell_approval_script

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


@pytest.mark.asyncio
async def test_real_codex_denied_exec_is_an_error(lb, key, codex_home, mock) -> None:
    """The real Codex CLI 0.169.0 in code mode: `No` at the approval ends the turn `interrupted` and the aborted
    `exec` call's `tool_result` is an error."""
    mock.push(*shell_approval_script("touch created_by_codex.txt && echo hi-from-shell"))
    await lb.create(create_cmd(key, codex_home, mock))
    start = len(lb.events)
    await lb.send("send", session=key, content="Please create a file with a shell command.")
    q = await lb.session_event(key, "question", start=start, timeout=90)
    no = next(o for o in q["options"] if o["label"].startswith("No"))
    await lb.send("answer", session=key, question_id=q["question_id"], digit=no["digit"])
    end = await lb.session_event(key, ("complete", "interrupted", "turn_error"), start=start, timeout=90)
    assert end["event"] == "interrupted", end
    (use,) = lb.since(key, start, "tool_use")
    results = lb.since(key, start, "tool_result")
    if not results:  # the rollout's output line may land just after `turn_aborted` was read
        results = [await lb.session_event(key, "tool_result", start=start, timeout=10)]
    assert use["name"] == "exec"
    assert [(r["tool_use_id"], r["is_error"]) for r in results] == [(use["tool_use_id"], True)], results
    assert not (codex_home.cwd / "created_by_codex.txt").exists()
