"""Fidelity against the real Claude Code 2.1.328 binary (offline, the mock API): what a client sees around an
answer taller than the screen, a resumed conversation and Claude's own `--resume` picker."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from mock_anthropic import MockAnthropic
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
