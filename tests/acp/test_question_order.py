"""A permission dialog is read off the CLI's screen, its tool call off the CLI's transcript: the question can
reach `litbridge acp` a moment before the tool call does. The permission request must still name the real
tool call (the editor shows the command it approves), not a made-up one."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from acp import schema as S

from litbridge.acp.agent import SessionView


class _Editor:
    """The ACP client side, recording what it is sent; it allows whatever it is asked."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.asked: list[Any] = []

    async def session_update(self, session_id: str, update: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any]) -> Any:
        self.asked.append(tool_call)
        return S.RequestPermissionResponse(outcome=S.AllowedOutcome(outcome="selected", option_id="1"))


class _Daemon:
    def __init__(self, record: str | None = "/home/u/.claude/projects/p/s1.jsonl") -> None:
        self.answers: list[tuple[str, str, str]] = []
        self.record = record

    async def dump(self, key: str) -> dict[str, Any]:
        return {"event": "dump", "session": key, "transcript_path": self.record}

    async def answer(self, key: str, question_id: str, digit: str) -> None:
        self.answers.append((key, question_id, digit))


def _view(record: str | None = "/home/u/.claude/projects/p/s1.jsonl") -> tuple[SessionView, _Editor, _Daemon]:
    editor, daemon = _Editor(), _Daemon(record)
    agent = SimpleNamespace(conn=editor, elicitation=False, prompt_of=lambda key, tid: "go")
    view = SessionView(agent, "s1")  # type: ignore[arg-type]
    view.client = daemon  # type: ignore[assignment]
    return view, editor, daemon


QUESTION = {  # as the daemon sends it: a question names no turn (the session's latest one is meant)
    "event": "question",
    "question_id": "q1",
    "kind": "permission",
    "text": "Do you want to proceed?",
    "options": [{"digit": 1, "label": "Yes"}, {"digit": 2, "label": "No"}],
}
TOOL_USE = {"event": "tool_use", "turn_id": "t1", "tool_use_id": "toolu_1", "name": "Bash", "input": {}}


@pytest.mark.asyncio
async def test_question_before_its_tool_call_names_the_tool_call() -> None:
    view, editor, daemon = _view()
    await view.apply({"event": "accepted", "turn_id": "t1"}, live=True)
    await view.apply(QUESTION, live=True)
    asking = view.asking["q1"]
    await asyncio.sleep(0.2)  # the transcript's record comes later than the screen's dialog
    await view.apply(TOOL_USE, live=True)
    await asyncio.wait_for(asking, 5)
    (call,) = editor.asked
    assert call.tool_call_id == "toolu_1"
    assert daemon.answers == [("s1", "q1", "1")]
    assert not view.synthetic


@pytest.mark.asyncio
async def test_question_on_the_editors_own_prompt_waits_for_its_tool_call() -> None:
    """The editor's own prompt: its `accepted` is the only event of the turn before the dialog (no text yet, the
    tool call's record still to come). The question still waits for that tool call instead of making one up."""
    view, editor, _ = _view()
    mine = asyncio.get_running_loop().create_future()
    view.mine["acp-1"] = mine
    await view.apply({"event": "accepted", "turn_id": "t1", "re": "acp-1"}, live=True)
    assert mine.done()
    await view.apply(QUESTION, live=True)
    asking = view.asking["q1"]
    await asyncio.sleep(0.2)
    assert view.in_grace == {"q1"} and not editor.asked
    await view.apply(TOOL_USE, live=True)
    await asyncio.wait_for(asking, 5)
    (call,) = editor.asked
    assert call.tool_call_id == "toolu_1" and not view.synthetic


@pytest.mark.asyncio
async def test_question_with_no_tool_call_gets_one_made_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("litbridge.acp.agent.TOOL_CALL_GRACE", 0.1)
    view, editor, daemon = _view()
    await view.apply({"event": "accepted", "turn_id": "t1"}, live=True)
    await view.apply({**QUESTION, "detail": "Bash command\n\n  touch x.txt"}, live=True)
    await asyncio.wait_for(view.asking["q1"], 5)
    (call,) = editor.asked
    assert call.tool_call_id == "question-q1"
    # what the dialog shows with its question is the made-up call's content (the editor shows what it approves)
    assert [c.content.text for c in call.content] == ["Bash command\n\n  touch x.txt"]
    (start,) = [u for u in editor.updates if u.session_update == "tool_call"]
    assert start.tool_call_id == "question-q1" and start.content == call.content
    assert view.synthetic == {"question-q1"}
    assert daemon.answers == [("s1", "q1", "1")]


@pytest.mark.asyncio
async def test_session_without_a_record_asks_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """No record, no tool call to wait for (the generic driver): the question is asked without the grace."""
    monkeypatch.setattr("litbridge.acp.agent.TOOL_CALL_GRACE", 30.0)
    view, editor, daemon = _view(record=None)
    await view.apply({"event": "accepted", "turn_id": "t1"}, live=True)
    await view.apply(QUESTION, live=True)
    await asyncio.wait_for(view.asking["q1"], 5)
    (call,) = editor.asked
    assert call.tool_call_id == "question-q1"
    assert daemon.answers == [("s1", "q1", "1")]


@pytest.mark.asyncio
async def test_question_answered_elsewhere_during_the_grace_is_not_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Answered in the attach view (or by another client) while its tool call was awaited: the editor is never
    shown a permission request for a question that is gone."""
    monkeypatch.setattr("litbridge.acp.agent.TOOL_CALL_GRACE", 30.0)
    view, editor, daemon = _view()
    await view.apply({"event": "accepted", "turn_id": "t1"}, live=True)
    await view.apply(QUESTION, live=True)
    asking = view.asking["q1"]
    await asyncio.sleep(0.1)
    assert view.in_grace == {"q1"}
    closed = {"event": "question_closed", "question_id": "q1", "reason": "answered"}
    await view.apply(closed, live=True)
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(asking, 5)
    assert not editor.asked and not daemon.answers and not view.in_grace
