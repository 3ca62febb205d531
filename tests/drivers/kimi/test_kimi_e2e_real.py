"""End-to-end against the real Kimi Code 2.1.0 (on Node 22) through a real `litbridge serve`, offline against the
shared mock chat-completions API (tests/fakes/mock_chat.py). Few tests, each one session carrying several
scenarios; generous timeouts, no timing asserts.
"""

from __future__ import annotations

import pytest
from kimi_env import create_cmd
from lbd_helpers import processes_left, processes_with_home
from mock_chat import content_text

pytestmark = [pytest.mark.asyncio, pytest.mark.real_kimi]

ANSWER = "Is this exact?\n日本語のテキスト 🎉 and more?\n\n- a list item\n- 最後 ✅"
SLOW = " ".join(f"word{i}" for i in range(200))


def _bash(label: str, command: str, after: str) -> list[dict]:
    return [
        {
            "label": label,
            "text": "Running it.",
            "tool_calls": [{"name": "Bash", "arguments": {"command": command}}],
        },
        {"label": f"{label}-after", "text": after},
    ]


async def _approval(lb, key: str, content: str, digit: str) -> tuple[dict, dict, int]:
    start = len(lb.events)
    await lb.send("send", session=key, content=content)
    q = await lb.session_event(key, "question", start=start, timeout=90)
    await lb.send("answer", session=key, question_id=q["question_id"], digit=digit)
    end = await lb.session_event(key, ("complete", "interrupted", "turn_error"), start=start, timeout=90)
    return q, end, start


async def test_kimi_trust_turns_approval_deny_interrupt_error_queue_and_kill(
    lb, key, kimi_home, mock
) -> None:
    mock.push(
        {"label": "exact", "text": ANSWER},
        *_bash("yes", "echo hi-from-kimi > made.txt; cat made.txt", "Done: made.txt holds hi-from-kimi."),
        *_bash("no", "touch denied.txt", "Understood, not run."),
        {"label": "slow", "text": SLOW, "chunk": 4, "delay": 0.2},
        {"label": "down", "status": 401},
        {"label": "back", "text": "Back again."},
        {"label": "q2", "text": "Second queued."},
    )
    ready = await lb.create(create_cmd(key, kimi_home))
    assert ready["model"] == "mock-model"
    dismissed = lb.since(key, 0, "dialog_dismissed")
    assert [d["dialog"] for d in dismissed] == ["trust"], dismissed

    # 1. the exact multi-line answer, from Kimi's wire log
    end = await lb.turn(key, "First question?\nWith a second line: 日本 🎌")
    assert end["event"] == "complete", end
    assert end["content"] == ANSWER
    assert end["source"] == "transcript"
    assert end["usage"]["input_tokens"] > 0
    users = [m for m in mock.main_requests()[0]["body"]["messages"] if m["role"] == "user"]
    assert "First question?\nWith a second line: 日本 🎌" in [content_text(m["content"]) for m in users]

    # 2. approval asked, answered by digit 1: the command runs, the turn completes
    q, end, start = await _approval(lb, key, "Make a file with bash.", "1")
    assert q["kind"] == "permission"
    assert [o["digit"] for o in q["options"]] == ["1", "2", "3", "4"]
    assert q["options"][0]["label"] == "Approve once" and q["options"][2]["label"] == "Reject"
    assert q["detail"]["command"] == "echo hi-from-kimi > made.txt; cat made.txt"
    assert end["event"] == "complete", end
    assert end["content"] == "Done: made.txt holds hi-from-kimi."
    assert (kimi_home.cwd / "made.txt").read_text() == "hi-from-kimi\n"
    uses, results = lb.since(key, start, "tool_use"), lb.since(key, start, "tool_result")
    assert [u["name"] for u in uses] == ["Bash"]
    assert [r["tool_use_id"] for r in results] == [uses[0]["tool_use_id"]]
    assert "hi-from-kimi" in results[0]["content"]

    # 3. denied by digit 3: nothing runs, the model hears it
    q, end, start = await _approval(lb, key, "Touch a file.", "3")
    assert end["event"] == "complete", end
    assert end["content"] == "Understood, not run."
    assert not (kimi_home.cwd / "denied.txt").exists()
    results = lb.since(key, start, "tool_result")
    assert results and results[0]["is_error"] is True

    # 4. interrupt a streaming answer
    start = len(lb.events)
    await lb.send("send", session=key, content="Write a long answer.")
    await lb.session_event(key, "replace", start=start, timeout=60)
    await lb.send("interrupt", session=key)
    end = await lb.session_event(key, ("complete", "interrupted", "turn_error"), start=start, timeout=60)
    assert end["event"] == "interrupted", end

    # 5. an unrecoverable API error, then the next send works; 6. two sends at once: the second waits
    end = await lb.turn(key, "This one fails.")
    assert end["event"] == "turn_error", end
    assert "401" in end["message"]
    start = len(lb.events)
    await lb.send("send", session=key, content="Are you back?")
    await lb.send("send", session=key, content="And the queued one?")
    ends: list[dict] = []
    while len(ends) < 2:
        ev = await lb.session_event(
            key, ("complete", "interrupted", "turn_error"), start=(ends[-1]["_index"] + 1 if ends else start)
        )
        ends.append(ev)
    assert [e["content"] for e in ends] == ["Back again.", "Second queued."]

    # 7. kill leaves no process behind
    assert processes_with_home(kimi_home.home)
    start = len(lb.events)
    await lb.send("kill", session=key)
    await lb.session_event(key, "killed", start=start)
    assert await processes_left(kimi_home.home) == []


async def test_kimi_twenty_quick_turns_then_kill_store_resume_resumes(lb, key, kimi_home, mock) -> None:
    mock.push(*({"label": f"t{i}", "text": f"Answer {i}?"} for i in range(20)))
    await lb.create(create_cmd(key, kimi_home))
    start = len(lb.events)
    for i in range(20):
        end = await lb.turn(key, f"Quick {i}")
        assert (end["event"], end["content"]) == ("complete", f"Answer {i}?"), end
    accepted = lb.since(key, start, "accepted")
    ends = ("complete", "interrupted", "turn_error")
    terminal = [e for e in lb.events[start:] if e.get("session") == key and e["event"] in ends]
    assert len(accepted) == len(terminal) == 20  # no dark turn

    mock.push({"label": "resumed", "text": "It was Quick 19."})
    start = len(lb.events)
    await lb.send("kill", session=key, store_resume=True)
    await lb.session_event(key, "killed", start=start)
    assert len(kimi_home.wires()) == 1
    ready = await lb.create(create_cmd(key, kimi_home))
    assert ready["resumed"] is True, ready
    end = await lb.turn(key, "What was my last message?")
    assert (end["event"], end["content"]) == ("complete", "It was Quick 19."), end
    texts = [
        content_text(m["content"])
        for m in mock.main_requests()[-1]["body"]["messages"]
        if m["role"] == "user"
    ]
    assert "Quick 19" in texts and texts.index("Quick 19") < texts.index("What was my last message?")
    assert len(kimi_home.wires()) == 1  # the same session goes on
