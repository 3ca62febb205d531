"""Fidelity against the real Claude Code 2.1.328 binary (offline, the mock API): what a client sees around an
answer taller than the screen, a resumed conversation and Claude's own `--resume` picker."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from mock_anthropic import MockAnthropic, all_text
from test_e2e_real import TERMINAL, check_invariants, create, preapproved_home, turn

pytestmark = [pytest.mark.real_claude, pytest.mark.asyncio]

TALL = "\n\n".join(f"Paragraph {i:02d} of the tall answer." for i in range(1, 41))  # ~80 rows: > 50


async def test_interrupt_before_first_token_after_a_tall_answer(
    lb: Any, claude_bin: Path, tmp_path: Path, mock: MockAnthropic, key: str
) -> None:
    """Esc before the first token of the turn after an answer taller than the screen: the interrupted turn
    produced nothing, so neither its `replace` events nor `interrupted.content` may carry the previous answer."""
    home = preapproved_home(tmp_path)
    mock.push(
        {"label": "tall", "text": TALL},
        {"label": "never", "text": "Too late.", "first_delay": 60},
        {"label": "next", "text": "Recovered."},
    )
    await create(lb, claude_bin, key, home, mock)
    _, end1 = await turn(lb, key, "Write forty short paragraphs.")
    assert end1["event"] == "complete" and end1["content"] == TALL
    begin = len(lb.events)
    await lb.send("send", session=key, content="Slow first token please.")
    acc = await lb.session_event(key, "accepted", start=begin)
    await asyncio.to_thread(mock.wait_for_requests, 2, 60.0)
    await asyncio.sleep(1.0)  # the prompt is in the transcript and on screen, no token yet
    await lb.send("interrupt", session=key)
    end = await lb.session_event(key, TERMINAL, start=begin, turn_id=acc["turn_id"])
    assert end["event"] == "interrupted", end
    assert "Paragraph" not in end["content"], end
    replaces = [e["text"] for e in lb.since(key, begin, "replace") if e["turn_id"] == acc["turn_id"]]
    assert not any("Paragraph" in t for t in replaces), replaces
    _, end2 = await turn(lb, key, "Second try.")
    assert (end2["event"], end2["content"]) == ("complete", "Recovered."), end2
    check_invariants(lb, key)


async def test_ready_model_after_resuming_a_conversation_taller_than_the_screen(
    lb: Any, claude_bin: Path, tmp_path: Path, mock: MockAnthropic, key: str
) -> None:
    """The resumed history fills the screen, so the logo naming the model is never drawn at the top: `ready`
    still names the model (the conversation's, from its transcript)."""
    home = preapproved_home(tmp_path)
    mock.push({"label": "tall", "text": TALL}, {"label": "after", "text": "Still here."})
    first = await create(lb, claude_bin, key, home, mock)
    assert first["model"]
    _, end = await turn(lb, key, "Write forty short paragraphs.")
    assert end["event"] == "complete"
    begin = len(lb.events)
    await lb.send("kill", session=key, store_resume=True)
    await lb.session_event(key, "killed", start=begin)
    again = await create(lb, claude_bin, key, home, mock)
    assert again["resumed"] is True
    assert again["model"] == first["model"]
    _, end2 = await turn(lb, key, "Still there?")
    assert (end2["event"], end2["content"]) == ("complete", "Still here.")
    check_invariants(lb, key)


async def test_resume_picker_one_option_per_conversation_and_picking_the_second_resumes_it(
    lb: Any, claude_bin: Path, tmp_path: Path, mock: MockAnthropic, key: str
) -> None:
    """`--resume` without an id opens Claude's picker: one option per conversation (its date/branch/size row
    is that option's detail, not an option); answering 2 resumes the second one and the session works."""
    home = preapproved_home(tmp_path)
    mock.push(
        {"label": "a", "text": "Alpha noted."},
        {"label": "b", "text": "Bravo noted."},
        {"label": "c", "text": "It was ALPHA."},
    )
    for i, word in enumerate(("ALPHA", "BRAVO")):
        await create(lb, claude_bin, f"{key}-{i}", home, mock)
        _, end = await turn(lb, f"{key}-{i}", f"Remember the word {word}.")
        assert end["event"] == "complete"
        begin = len(lb.events)
        await lb.send("kill", session=f"{key}-{i}")
        await lb.session_event(f"{key}-{i}", "killed", start=begin)
        await asyncio.sleep(1.1)  # the picker lists the newest first: distinct modification times
    begin = len(lb.events)
    await create(lb, claude_bin, key, home, mock, args=["--resume"])
    q = await lb.session_event(key, "question", start=begin)
    assert [o["label"] for o in q["options"]] == ["Remember the word BRAVO.", "Remember the word ALPHA."], q
    assert [o["digit"] for o in q["options"]] == ["1", "2"] and q["options"][0]["selected"]
    assert " ago" in q["detail"]
    await lb.send("answer", session=key, question_id=q["question_id"], digit="2")
    closed = await lb.session_event(key, "question_closed", start=q["_index"], question_id=q["question_id"])
    assert closed["reason"] == "answered"
    _, end = await turn(lb, key, "Which word did I ask you to remember?")
    assert (end["event"], end["content"]) == ("complete", "It was ALPHA."), end
    last = mock.main_requests()[-1]["body"]
    assert "Remember the word ALPHA." in all_text(last) and "BRAVO" not in all_text(last)
    assert not lb.since(key, closed["_index"], "question")  # the picker did not come back
    begin = len(lb.events)
    await lb.send("dump", session=key)
    dump = await lb.session_event(key, "dump", start=begin)
    assert dump["model"]  # the logo names it once the conversation is open
    check_invariants(lb, key)
