"""Fidelity against the real Gemini CLI 0.61.0 (offline, the mock Gemini API): the history Gemini re-writes into its
chat file after a denied tool call is not a new turn, and `ready` names the model the footer shows."""

from __future__ import annotations

import pytest
from gemini_helpers import TERMINAL, check_invariants

pytestmark = [pytest.mark.real_gemini, pytest.mark.asyncio]


async def test_denied_tool_call_makes_no_phantom_turn_and_the_queued_send_runs_next(
    lb, key, gemini_home, mock
) -> None:
    """After a denied call Gemini re-appends the conversation so far to its chat file (each earlier prompt and
    answer as a new record): no organic turn, no `complete` repeating an old answer, and the send queued behind
    the denied turn is the next turn."""
    mock.push(
        {"label": "one", "text": "First answer."},
        {"label": "two", "text": "Second answer."},
        {
            "label": "call",
            "text": "",
            "function_call": {
                "name": "run_shell_command",
                "args": {"command": "rm -f README.md && echo removed", "description": "remove"},
            },
        },
        {"label": "four", "text": "Fourth answer."},
    )
    ready = await lb.create(key, gemini_home, mock)
    assert ready["event"] == "ready", ready
    assert ready["model"] == "Auto"  # the footer's `/model` column: no --model, Gemini routes automatically
    for prompt, answer in (("First question", "First answer."), ("Second question", "Second answer.")):
        _acc, end = await lb.turn(key, prompt)
        assert (end["event"], end["content"]) == ("complete", answer), end
    begin = len(lb.events)
    await lb.client.send(key, "Now remove the README please.")
    await lb.client.send(key, "Fourth question")
    q = await lb.wait(key, "question", start=begin)
    no = next(o for o in q["options"] if o["label"].startswith("No"))
    await lb.client.answer(key, question_id=q["question_id"], digit=no["digit"])
    accepted = lb.since(key, begin, "accepted")
    assert [a["queued"] for a in accepted] == [False, True]
    third, fourth = (a["turn_id"] for a in accepted)
    end3 = await lb.wait(key, TERMINAL, start=begin, turn_id=third)
    assert end3["event"] == "interrupted", end3
    end4 = await lb.wait(key, TERMINAL, start=begin, turn_id=fourth)
    assert (end4["event"], end4["content"]) == ("complete", "Fourth answer."), end4
    assert (gemini_home.cwd / "README.md").exists()
    events = lb.since(key, begin)
    assert [e["turn_id"] for e in events if e["event"] == "accepted"] == [third, fourth], events
    assert not [e for e in events if e["event"] in TERMINAL and e["turn_id"] not in (third, fourth)]
    assert mock.main_requests()[-1]["last_user"] == "Fourth question"
    check_invariants(lb, key)


async def test_ready_model_is_the_one_the_footer_shows(lb, key, gemini_home, mock) -> None:
    """A `--model` given in `create.args` (not `create.model`): only the footer says which model runs."""
    mock.push({"label": "one", "text": "Flash here."})
    ready = await lb.create(key, gemini_home, mock, args=["--model", "gemini-2.5-flash"])
    assert (ready["event"], ready["model"]) == ("ready", "gemini-2.5-flash"), ready
    _acc, end = await lb.turn(key, "hello")
    assert (end["event"], end["content"]) == ("complete", "Flash here."), end
    assert (await lb.client.dump(key))["model"] == "gemini-2.5-flash"
    check_invariants(lb, key)
