"""The history Gemini CLI re-appends to its chat file after a denied (cancelled) tool call: the preamble record,
then every earlier prompt and answer as new records, closed by a `$set` of the whole `messages` array (the shape
of the gemini_tool_approval recording, with two earlier turns). It is history, not a new turn."""

from __future__ import annotations

from typing import Any

from litbridge.drivers.gemini.chat import CANCELLED, SESSION_CONTEXT, ChatTurns

CTX = {"text": f"{SESSION_CONTEXT}\nThis is the Gemini CLI.\n</session_context>"}


def user(rid: str, *parts: dict[str, Any]) -> dict[str, Any]:
    return {"id": rid, "type": "user", "content": list(parts)}


def gemini(rid: str, text: str, calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    rec: dict[str, Any] = {"id": rid, "type": "gemini", "content": text}
    if calls is not None:
        rec["toolCalls"] = calls
    return rec


CALL = {"id": "run_shell_command_1", "name": "run_shell_command", "args": {"command": "rm -f README.md"}}
LIVE = [
    {"sessionId": "s1", "projectHash": "p", "startTime": "t"},
    {"$set": {"messages": [user("c0", CTX)]}},
    user("u1", {"text": "First question"}),
    gemini("g1", "First answer."),
    user("u2", {"text": "Second question"}),
    gemini("g2", "Second answer."),
    user("u3", {"text": "Now remove the README please."}),
    gemini("g3", "", [{**CALL, "status": "awaiting_approval"}]),
    gemini("g3", "", [{**CALL, "status": "cancelled"}]),
    {"id": "i1", "type": "info", "content": CANCELLED},
]
REWRITE = [
    user("h1", CTX, {"text": "First question"}),
    {"id": "h2", "type": "gemini", "content": [{"text": "First answer."}]},
    user("h3", {"text": "Second question"}),
    {"id": "h4", "type": "gemini", "content": [{"text": "Second answer."}]},
    {"$set": {"messages": ["…the four records above…"], "lastUpdated": "t2"}},
]


def test_the_rewrite_after_a_cancelled_call_is_not_a_turn() -> None:
    turns = ChatTurns()
    live = [(e.kind, e.text) for e in turns.feed(LIVE)]
    assert live[-1] == ("interrupted", "")
    assert turns.feed(REWRITE) == []
    assert turns.pending is None and not turns.open
    # the next prompt is a turn again, even when its text repeats an earlier one
    evs = [
        (e.kind, e.text)
        for e in turns.feed([user("u4", {"text": "Second question"}), gemini("g4", "Again.")])
    ]
    assert evs == [("prompt", "Second question"), ("text", "Again."), ("answer", "Again.")]


def test_a_new_prompt_inside_the_rewrite_window_is_still_a_turn() -> None:
    """Were the closing `$set` late, a prompt that is not history ends the rewrite at once."""
    turns = ChatTurns()
    turns.feed(LIVE)
    evs = [(e.kind, e.text) for e in turns.feed([*REWRITE[:-1], user("u4", {"text": "Fourth question"})])]
    assert evs == [("prompt", "Fourth question")]
    assert [e.kind for e in turns.feed([gemini("g4", "Fourth answer.")])] == ["text", "answer"]
