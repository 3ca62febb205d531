"""End-to-end against the real Pi 0.73.1 through a real `litbridge serve`, offline against the shared mock
chat-completions API (tests/fakes/mock_chat.py). Few tests, each one session carrying several scenarios; generous
timeouts, no timing asserts.
"""

from __future__ import annotations

import json

import pytest
from lbd_helpers import processes_left, processes_with_home
from pi_env import create_cmd

pytestmark = [pytest.mark.asyncio, pytest.mark.real_pi]

ANSWER = "Is this exact?\n日本語のテキスト 🎉 and more?\n\n- a list item\n- 最後 ✅"
SLOW = " ".join(f"word{i}" for i in range(200))


def _uses_results(lb, key: str, start: int) -> tuple[list[dict], list[dict]]:
    return lb.since(key, start, "tool_use"), lb.since(key, start, "tool_result")


async def test_pi_turns_tools_interrupt_error_queue_and_kill(lb, key, pi_home, mock) -> None:
    # retries quick and few, so a persistent 5xx becomes final in a second (Pi retries 5xx up to 3 times)
    (pi_home.agent / "settings.json").write_text(
        json.dumps({"retry": {"enabled": True, "maxRetries": 1, "baseDelayMs": 200}}), encoding="utf-8"
    )
    mock.push(
        {"label": "exact", "text": ANSWER},
        {
            "label": "tool",
            "text": "Running it.",
            "tool_calls": [
                {"name": "bash", "arguments": {"command": "echo hi-from-pi > made.txt; cat made.txt"}}
            ],
        },
        {"label": "after", "text": "Done: made.txt holds hi-from-pi."},
        {"label": "slow", "text": SLOW, "chunk": 4, "delay": 0.2},
    )
    ready = await lb.create(create_cmd(key, pi_home))
    assert ready["model"] == "mock/mock-model"
    assert lb.since(key, 0, "dialog_dismissed") == []  # Pi shows no start-up dialog

    # 1. the exact multi-line answer, from Pi's own record
    end = await lb.turn(key, "First question?\nWith a second line: 日本 🎌")
    assert end["event"] == "complete", end
    assert end["content"] == ANSWER
    assert end["source"] == "transcript"
    assert end["usage"]["input_tokens"] > 0
    assert mock.main_requests()[0]["last_user"] == "First question?\nWith a second line: 日本 🎌"

    # 2. a tool call runs without a question: tool_use/tool_result pairs, then the final answer
    start = len(lb.events)
    end = await lb.turn(key, "Make a file with bash.")
    assert end["event"] == "complete", end
    assert end["content"] == "Done: made.txt holds hi-from-pi."
    assert (pi_home.cwd / "made.txt").read_text() == "hi-from-pi\n"
    uses, results = _uses_results(lb, key, start)
    assert [u["name"] for u in uses] == ["bash"]
    assert uses[0]["input"] == {"command": "echo hi-from-pi > made.txt; cat made.txt"}
    assert [r["tool_use_id"] for r in results] == [uses[0]["tool_use_id"]]
    assert results[0]["content"] == "hi-from-pi\n"
    assert lb.since(key, start, "question") == []

    # 3. interrupt a streaming answer
    start = len(lb.events)
    await lb.send("send", session=key, content="Write a long answer.")
    await lb.session_event(key, "replace", start=start, timeout=60)
    await lb.send("interrupt", session=key)
    end = await lb.session_event(key, ("complete", "interrupted", "turn_error"), start=start, timeout=60)
    assert end["event"] == "interrupted", end
    assert end["content"] and SLOW.startswith(end["content"].strip())

    # 4. an unrecoverable API error (retried once, then final), then the next send works
    mock.set_script([{"label": "down", "status": 500, "persistent": True}])
    end = await lb.turn(key, "This one fails.")
    assert end["event"] == "turn_error", end
    assert "500" in end["message"]
    mock.set_script([{"label": "back", "text": "Back again."}, {"label": "q2", "text": "Second queued."}])

    # 5. two sends at once: the second is queued until the first ends
    start = len(lb.events)
    await lb.send("send", session=key, content="Are you back?")
    await lb.send("send", session=key, content="And the queued one?")
    ends = []
    while len(ends) < 2:
        ev = await lb.session_event(
            key, ("complete", "interrupted", "turn_error"), start=(ends[-1]["_index"] + 1 if ends else start)
        )
        ends.append(ev)
    assert [e["content"] for e in ends] == ["Back again.", "Second queued."]

    # 6. kill leaves no process behind
    assert processes_with_home(pi_home.home), "Pi should be running before the kill"
    start = len(lb.events)
    await lb.send("kill", session=key)
    await lb.session_event(key, "killed", start=start)
    assert await processes_left(pi_home.home) == []


async def test_pi_twenty_quick_turns_then_kill_store_resume_resumes(lb, key, pi_home, mock) -> None:
    mock.push(*({"label": f"t{i}", "text": f"Answer {i}?"} for i in range(20)))
    await lb.create(create_cmd(key, pi_home))
    start = len(lb.events)
    for i in range(20):
        end = await lb.turn(key, f"Quick {i}")
        assert (end["event"], end["content"]) == ("complete", f"Answer {i}?"), end
    # no dark turn: every accepted send got exactly one terminal event
    accepted = lb.since(key, start, "accepted")
    terminal = [
        e
        for e in lb.events[start:]
        if e.get("session") == key and e["event"] in ("complete", "interrupted", "turn_error")
    ]
    assert len(accepted) == len(terminal) == 20
    assert [r["last_user"] for r in mock.main_requests()] == [f"Quick {i}" for i in range(20)]

    mock.push({"label": "resumed", "text": "It was Quick 19."})
    start = len(lb.events)
    await lb.send("kill", session=key, store_resume=True)
    await lb.session_event(key, "killed", start=start)
    assert len(pi_home.sessions()) == 1
    ready = await lb.create(create_cmd(key, pi_home))
    assert ready["resumed"] is True, ready
    end = await lb.turn(key, "What was my last message?")
    assert (end["event"], end["content"]) == ("complete", "It was Quick 19."), end
    users = [m["content"] for m in mock.main_requests()[-1]["body"]["messages"] if m["role"] == "user"]
    texts = [u if isinstance(u, str) else "".join(p.get("text", "") for p in u) for u in users]
    assert texts[-2:] == ["Quick 19", "What was my last message?"]
    assert len(pi_home.sessions()) == 1  # the same file goes on
