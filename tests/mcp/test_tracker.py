"""litbridge.mcp.tracker on its own, fed events shaped like the daemon's (each checked against `litbridge schema`):
the transcript's honesty (prompts it did not see, a replay gap, the turn cap), questions reported once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from lbd_helpers import check_event

from litbridge.mcp import tracker as tracker_mod
from litbridge.mcp.tracker import Tracker

_seq = iter(range(1, 10**6))


def feed(t: Tracker, *events: dict[str, Any]) -> None:
    for ev in events:
        ev = {**ev, "seq": next(_seq)} if ev.get("event") != "replay_gap" else ev
        check_event(ev)
        t.observe(ev)
        t._changed()


def turn(session: str, tid: str, content: str) -> list[dict[str, Any]]:
    return [
        {"event": "accepted", "session": session, "turn_id": tid, "queued": False},
        {"event": "replace", "session": session, "turn_id": tid, "text": content[:3]},
        {"event": "complete", "session": session, "turn_id": tid, "content": content, "source": "screen"},
    ]


def test_transcript_says_what_it_does_not_know() -> None:
    t = Tracker()
    feed(t, {"event": "replay_gap", "from_seq": 1, "to_seq": 40})
    feed(t, *turn("w", "t1", "first answer"))
    t.note_prompt("w", "t2", "run it\nplease")
    feed(
        t,
        {"event": "accepted", "session": "w", "turn_id": "t2", "queued": False},
        {
            "event": "tool_use",
            "session": "w",
            "turn_id": "t2",
            "tool_use_id": "u1",
            "name": "Bash",
            "input": {"command": "ls"},
        },
        {
            "event": "tool_result",
            "session": "w",
            "turn_id": "t2",
            "tool_use_id": "u1",
            "content": "a\nb",
            "is_error": False,
        },
        {
            "event": "turn_error",
            "session": "w",
            "turn_id": "t2",
            "message": "API Error: 500",
            "kind": "api_error",
        },
    )
    text = t.transcript("w")
    assert "Older events (seq 1-40) had already left the daemon's buffer." in text
    assert "## Turn t1 (complete)\n\n> (sent by another client: not in the events)\n\nfirst answer\n" in text
    assert "## Turn t2 (turn_error)\n\n> run it\n> please\n\ntool Bash: ls\n  result: a b\n" in text
    assert "error [api_error]: API Error: 500" in text
    assert "(no turns seen yet)" in t.transcript("other")


def test_transcript_takes_the_prompt_the_daemon_echoes() -> None:
    """`accepted.content` (a daemon that fills it) is the turn's prompt; one noted by this server wins (it is
    uncut)."""
    t = Tracker()
    first, *rest = turn("e", "t1", "the answer")
    feed(t, {**first, "content": "typed in attach", "organic": True}, *rest)
    t.note_prompt("e", "t2", "sent whole")
    first, *rest = turn("e", "t2", "second answer")
    feed(t, {**first, "content": "sent wh…"}, *rest)
    text = t.transcript("e")
    assert "## Turn t1 (complete)\n\n> typed in attach\n\nthe answer\n" in text
    assert "## Turn t2 (complete)\n\n> sent whole\n\nsecond answer\n" in text


def test_turns_are_capped_and_a_killed_session_is_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tracker_mod, "MAX_TURNS", 3)
    t = Tracker()
    for i in range(5):
        feed(t, *turn("w", f"t{i}", f"answer {i}"))
    text = t.transcript("w")
    assert "2 older turns are not kept here." in text
    assert "## Turn t1 " not in text and "## Turn t4 (complete)" in text
    feed(t, {"event": "killed", "session": "w", "exit_code": 0})
    assert "w" not in t.sessions


@pytest.mark.asyncio
async def test_a_question_is_reported_once_then_the_turn_end() -> None:
    t = Tracker()
    feed(t, {"event": "accepted", "session": "q", "turn_id": "t1", "queued": False})
    waiting = asyncio.ensure_future(t.wait_turn("q", "t1", 60))
    await asyncio.sleep(0)
    question = {
        "event": "question",
        "session": "q",
        "question_id": "q1",
        "kind": "choice",
        "text": "Pick",
        "options": [{"digit": "1", "label": "red"}],
    }
    feed(t, question)
    asked = await asyncio.wait_for(waiting, 10)
    assert (asked["status"], asked["question_id"], asked["options"]) == (
        "question",
        "q1",
        [{"digit": "1", "label": "red"}],
    )
    assert (await t.wait_turn("q", "t1", 0))["status"] == "timeout"  # not the same question again
    later = asyncio.ensure_future(t.wait_turn("q", "t1", 60))
    feed(
        t,
        {"event": "question_closed", "session": "q", "question_id": "q1", "reason": "answered"},
        {"event": "complete", "session": "q", "turn_id": "t1", "content": "red it is", "source": "screen"},
    )
    done = await asyncio.wait_for(later, 10)
    assert (done["status"], done["content"]) == ("complete", "red it is")
    assert t.open_question("q") is None
