"""End-to-end against the real GitHub Copilot CLI binary (tests/fetch_fixtures.py), through a real `litbridge
serve`, offline against the shared chat-completions mock (tests/fakes/mock_chat.py). Few tests, several scenarios
per session (Copilot takes ~7 s to start): generous timeouts, no timing asserts.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from copilot_env import create_cmd, processes_with_home, shell_call

pytestmark = [pytest.mark.asyncio, pytest.mark.real_copilot]

ANSWER = "Line one?\n二行目は日本語です 🎉\n\n- a *list* item\n\nDone? Yes! 👍"


def _record_types(path) -> list[str]:
    return [json.loads(line)["type"] for line in path.read_text().splitlines() if line.strip()]


async def test_ready_exact_answer_approval_deny_interrupt_error_then_kill(
    lb, key, copilot_home, mock
) -> None:
    ready = await lb.create(create_cmd(key, copilot_home, mock))
    assert ready["session"] == key
    assert ready["model"] == "mock-model" and ready["resumed"] is False
    dismissed = lb.since(key, 0, "dialog_dismissed")
    assert dismissed and "trust" in json.dumps(dismissed[0]).lower(), dismissed
    # the trust answer is "Yes" (this run only): nothing remembered in the session's config
    config = copilot_home.copilot_home / "config.json"
    assert str(copilot_home.cwd) not in (config.read_text() if config.exists() else "")

    # an exact multi-line answer with `?`, CJK and emoji: the record's text, not the screen's rendering
    mock.push({"label": "qa", "text": ANSWER, "chunk": 7})
    start = len(lb.events)
    end = await lb.turn(key, "Say it?\nTwo lines 日本 🎉")
    assert end["event"] == "complete", end
    assert end["content"] == ANSWER
    assert end["source"] == "transcript"
    assert end["usage"]["input_tokens"] > 0
    states = [e["to"] for e in lb.since(key, start, "state") if lb.events.index(e) < end["_index"]]
    assert states and states[-1] == "idle"
    await lb.send("dump", session=key)
    dump = await lb.session_event(key, "dump", start=start)
    info_path = dump.get("transcript_path")
    assert info_path and info_path.endswith("events.jsonl")
    assert info_path.startswith(str(copilot_home.copilot_home))

    # approval asked -> approved by digit -> the tool ran -> complete
    marker = copilot_home.cwd / "approved.txt"
    mock.push(
        shell_call(f"echo ran > {marker.name}", "write a marker"), {"label": "after", "text": "Written."}
    )
    start = len(lb.events)
    await lb.send("send", session=key, content="Write the marker file.")
    q = await lb.session_event(key, "question", start=start, timeout=90)
    assert q["kind"] == "permission"
    assert [o["digit"] for o in q["options"]][:2] == ["1", "2"]
    assert "approved.txt" in json.dumps(q.get("detail"))
    await lb.send("answer", session=key, question_id=q["question_id"], digit="1")
    end = await lb.session_event(key, ("complete", "interrupted", "turn_error"), start=start, timeout=90)
    assert end["event"] == "complete", end
    assert end["content"] == "Written."
    assert marker.read_text().strip() == "ran"
    uses = lb.since(key, start, "tool_use")
    results = lb.since(key, start, "tool_result")
    assert uses and uses[0]["name"] == "bash"
    assert results and not results[0].get("is_error")

    # Copilot's own question to the user (`ask_user`): a choice, its options numbered by the driver
    ask = {"message": "Which color do you like?", "requestedSchema": {"properties": {"color": {"type": "string",
           "enum": ["red", "blue"]}}, "required": ["color"]}}  # fmt: skip
    mock.push(
        {"tool_calls": [{"name": "ask_user", "arguments": ask}]}, {"label": "thanks", "text": "Thanks."}
    )
    start = len(lb.events)
    await lb.send("send", session=key, content="Ask me something.")
    q = await lb.session_event(key, "question", start=start, timeout=90)
    assert q["kind"] == "choice" and q["text"] == "Which color do you like?", q
    assert [(o["digit"], o["label"]) for o in q["options"]][:2] == [("1", "red"), ("2", "blue")]
    await lb.send("answer", session=key, question_id=q["question_id"], digit="2")
    end = await lb.session_event(key, ("complete", "interrupted", "turn_error"), start=start, timeout=90)
    assert end["event"] == "complete" and end["content"] == "Thanks.", end
    assert [r["content"] for r in lb.since(key, start, "tool_result")] == ["User responded: blue"]

    # deny: option 2 ("No, and tell Copilot what to do differently (Esc to stop)"): Copilot cancels the turn
    denied = copilot_home.cwd / "denied.txt"
    mock.push(shell_call(f"echo no > {denied.name}", "write another"))
    start = len(lb.events)
    await lb.send("send", session=key, content="Write the other file.")
    q = await lb.session_event(key, "question", start=start, timeout=90)
    await lb.send("answer", session=key, question_id=q["question_id"], digit="2")
    end = await lb.session_event(key, ("complete", "interrupted", "turn_error"), start=start, timeout=90)
    assert end["event"] == "interrupted", end
    assert not denied.exists()

    # interrupt while the answer streams
    mock.push({"label": "slow", "text": "slow " * 200, "chunk": 5, "delay": 0.2})
    start = len(lb.events)
    await lb.send("send", session=key, content="Tell me a long story.")
    await lb.session_event(key, "replace", start=start, timeout=90)
    await lb.send("interrupt", session=key)
    end = await lb.session_event(key, ("complete", "interrupted", "turn_error"), start=start, timeout=60)
    assert end["event"] == "interrupted", end

    # an API error Copilot gives up on (400 is not retried) -> turn_error; the next send works
    mock.push({"status": 400, "times": 1})
    end = await lb.turn(key, "This one fails.")
    assert end["event"] == "turn_error", end
    mock.push({"label": "ok", "text": "Recovered."})
    end = await lb.turn(key, "Again please.")
    assert end["event"] == "complete", end
    assert end["content"] == "Recovered."

    assert processes_with_home(copilot_home.home)
    start = len(lb.events)
    await lb.send("kill", session=key)
    await lb.session_event(key, "killed", start=start)
    for _ in range(100):
        if not processes_with_home(copilot_home.home):
            break
        await asyncio.sleep(0.1)
    assert processes_with_home(copilot_home.home) == []


async def test_twenty_queued_turns_all_end_then_kill_store_resume_resumes(
    lb, key, copilot_home, mock
) -> None:
    await lb.create(create_cmd(key, copilot_home, mock))
    n = 20
    mock.push(*({"label": f"t{i}", "text": f"Answer {i}."} for i in range(n)))
    start = len(lb.events)
    for i in range(n):  # sent at once: the session queues them, each runs once the CLI is idle again
        await lb.send("send", session=key, content=f"Question {i}?")
    ends = []
    for _ in range(n):
        end = await lb.session_event(
            key,
            ("complete", "interrupted", "turn_error"),
            start=(ends[-1]["_index"] + 1) if ends else start,
            timeout=120,
        )
        ends.append(end)
    assert [e["event"] for e in ends] == ["complete"] * n  # no dark turn: every send ended, in order
    assert [e["content"] for e in ends] == [f"Answer {i}." for i in range(n)]
    assert len({e["turn_id"] for e in ends}) == n
    await asyncio.sleep(1.0)
    assert len(lb.since(key, start, "complete")) == n

    # kill{store_resume} -> the next create resumes the same conversation (`--resume=<id>`)
    start = len(lb.events)
    await lb.send("kill", session=key, store_resume=True)
    await lb.session_event(key, "killed", start=start)
    ready = await lb.create(create_cmd(key, copilot_home, mock))
    assert ready["resumed"] is True, ready
    mock.push({"label": "again", "text": "Still here."})
    end = await lb.turn(key, "Do you remember?")
    assert end["event"] == "complete" and end["content"] == "Still here.", end
    body = mock.main_requests()[-1]["body"]
    said = json.dumps(body["messages"], ensure_ascii=False)
    assert "Question 0?" in said and "Answer 19." in said  # the model saw the resumed history
    start = len(lb.events)
    await lb.send("kill", session=key)
    await lb.session_event(key, "killed", start=start)
