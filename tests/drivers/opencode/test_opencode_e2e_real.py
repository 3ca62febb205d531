"""End-to-end: the real opencode 1.18.33 driven by `litbridge serve` over its socket, offline against the shared
chat-completions mock. What a client sees (events, schema- and turn-order-checked) and what really happened (the
mock's request log, files, opencode's own database) are both checked. Few sessions, several scenarios each: every
opencode start costs seconds (its first start migrates its database)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from lbd_helpers import EventClient, processes_left, processes_with_home
from mock_chat import MockChat
from opencode_helpers import TERMINAL, OpencodeHome

pytestmark = [pytest.mark.real_opencode, pytest.mark.asyncio, pytest.mark.timeout(600)]

ANSWER = "Line one? Yes?\n日本語のテスト 🎉 done\n\n**Last** line."
PROMPT = "Is this exact? 日本語 🎉 and a?b"


async def create(lb: EventClient, key: str, home: OpencodeHome, **extra: Any) -> dict[str, Any]:
    begin = len(lb.events)
    await lb.send("create", session=key, cli="opencode", working_dir=str(home.cwd), env=home.env(), **extra)
    return await lb.session_event(key, ("ready", "error"), start=begin, timeout=240)


async def turn(
    lb: EventClient, key: str, text: str, timeout: float = 120
) -> tuple[dict[str, Any], dict[str, Any]]:
    begin = len(lb.events)
    await lb.send("send", session=key, content=text)
    acc = await lb.session_event(key, "accepted", start=begin)
    end = await lb.session_event(key, TERMINAL, start=begin, timeout=timeout, turn_id=acc["turn_id"])
    return acc, end


def bash(command: str) -> dict[str, Any]:
    return {"name": "bash", "arguments": {"command": command, "description": "test approvals"}}


def check_invariants(lb: EventClient, key: str) -> None:
    events = lb.since(key, 0)
    turns = [e["turn_id"] for e in events if e["event"] == "accepted"]
    ends = [e["turn_id"] for e in events if e["event"] in TERMINAL]
    assert sorted(ends) == sorted(turns), f"terminal events {ends} for turns {turns}"
    asked = {e["question_id"] for e in events if e["event"] == "question"}
    closed = {e["question_id"] for e in events if e["event"] == "question_closed"}
    assert asked == closed


async def test_answer_approval_deny_interrupt_error(lb: EventClient, key: str, oc_home: OpencodeHome,
                                                    mock: MockChat) -> None:  # fmt: skip
    ready = await create(lb, key, oc_home, permission="ask")
    assert ready["event"] == "ready", ready

    # an exact answer with `?`, CJK and emoji, from the store (not the screen); the title request is not it
    mock.push({"label": "qa", "text": ANSWER})
    _acc, end = await turn(lb, key, PROMPT)
    assert end["event"] == "complete", end
    assert end["content"] == ANSWER
    assert end["source"] == "transcript"
    assert end["usage"]["input_tokens"] > 0
    assert mock.main_requests()[-1]["last_user"] == PROMPT
    assert mock.side_requests(), "opencode asks for a title through its small model"
    assert [r[0] for r in oc_home.rows("SELECT directory FROM session")] == [str(oc_home.cwd)]

    # approval: asked (numbered by the driver), answered by digit, the tool ran, the turn completed
    mock.push(
        {
            "label": "call",
            "text": "I'll create the file.",
            "tool_calls": [bash("touch made.txt && echo hi-there")],
        },
        {"label": "after", "text": "Done: the file was created."},
    )
    begin = len(lb.events)
    await lb.send("send", session=key, content="Please create a file with a shell command.")
    q = await lb.session_event(key, "question", start=begin, timeout=120)
    assert q["kind"] == "permission"
    assert [(o["digit"], o["label"]) for o in q["options"]] == [
        ("1", "Allow once"),
        ("2", "Allow always"),
        ("3", "Reject"),
    ]
    assert "touch made.txt" in json.dumps(q.get("detail"))
    await lb.send("answer", session=key, question_id=q["question_id"], digit="1")
    end = await lb.session_event(key, TERMINAL, start=begin, timeout=120)
    assert end["event"] == "complete", end
    assert end["content"] == "Done: the file was created."
    assert (oc_home.cwd / "made.txt").exists()
    use = await lb.session_event(key, "tool_use", start=begin)
    res = await lb.session_event(key, "tool_result", start=begin)
    assert use["input"]["command"].startswith("touch made.txt")
    assert res["tool_use_id"] == use["tool_use_id"] and "hi-there" in res["content"] and not res["is_error"]

    # deny: the tool never runs, the turn ends, the next one works
    mock.push({"label": "deny", "text": "Removing it.", "tool_calls": [bash("rm -f README.md")]})
    begin = len(lb.events)
    await lb.send("send", session=key, content="Now remove the README please.")
    q = await lb.session_event(key, "question", start=begin, timeout=120)
    await lb.send("answer", session=key, question_id=q["question_id"], digit="3")
    end = await lb.session_event(key, TERMINAL, start=begin, timeout=120)
    assert end["event"] == "complete", end
    assert (oc_home.cwd / "README.md").exists()

    # interrupt mid-stream
    slow = " ".join(f"word{i}" for i in range(300))
    mock.push({"label": "slow", "text": slow, "chunk": 6, "delay": 0.1})
    begin = len(lb.events)
    await lb.send("send", session=key, content="Tell me a long story")
    await lb.session_event(key, "replace", start=begin, timeout=120)
    await lb.send("interrupt", session=key)
    end = await lb.session_event(key, TERMINAL, start=begin, timeout=60)
    assert end["event"] == "interrupted", end

    # an unrecoverable API error, then the next send works
    mock.push({"label": "bad", "status": 400}, {"label": "ok", "text": "Recovered."})
    _acc, end = await turn(lb, key, "this one fails")
    assert end["event"] == "turn_error", end
    _acc, end = await turn(lb, key, "and this one works")
    assert end["event"] == "complete" and end["content"] == "Recovered.", end
    check_invariants(lb, key)

    # kill: no process of the session (its private HOME) is left
    assert processes_with_home(oc_home.home), "opencode should be running before the kill"
    begin = len(lb.events)
    await lb.send("kill", session=key)
    await lb.session_event(key, ("exited", "killed", "closed"), start=begin, timeout=30)
    assert await processes_left(oc_home.home) == []


async def test_two_sessions_in_one_folder_then_resume(lb: EventClient, key: str, oc_home: OpencodeHome,
                                                      mock: MockChat) -> None:  # fmt: skip
    a, b = key + "-a", key + "-b"
    mock.push({"label": "a", "when": "alpha question", "text": "Answer for A."},
              {"label": "b", "when": "bravo question", "text": "Answer for B."})  # fmt: skip
    ra, rb = await asyncio.gather(create(lb, a, oc_home), create(lb, b, oc_home))
    assert ra["event"] == "ready" and rb["event"] == "ready", (ra, rb)
    (_, end_a), (_, end_b) = await asyncio.gather(
        turn(lb, a, "alpha question"), turn(lb, b, "bravo question")
    )
    assert end_a["content"] == "Answer for A." and end_b["content"] == "Answer for B."  # records never cross
    assert len(oc_home.rows("SELECT id FROM session")) == 2

    # queueing on b: two sends back to back end in order, each with its own answer
    mock.push({"label": "q1", "text": "First queued."}, {"label": "q2", "text": "Second queued."})
    begin = len(lb.events)
    await lb.send("send", session=b, content="queued one")
    await lb.send("send", session=b, content="queued two")
    ends: list[dict[str, Any]] = []
    while len(ends) < 2:
        start = ends[-1]["_index"] + 1 if ends else begin
        ends.append(await lb.session_event(b, TERMINAL, start=start, timeout=120))
    assert [(e["event"], e["content"]) for e in ends] == [
        ("complete", "First queued."),
        ("complete", "Second queued."),
    ]

    # 10 quick turns on b: each ends with its own exact answer (no dark turn)
    mock.push(*({"label": f"n{i}", "text": f"Quick answer {i}."} for i in range(10)))
    dark = []
    for i in range(10):
        _acc, end = await turn(lb, b, f"quick {i}")
        if end["event"] != "complete" or end["content"] != f"Quick answer {i}.":
            dark.append((i, end))
    assert dark == []
    check_invariants(lb, a)
    check_invariants(lb, b)

    begin = len(lb.events)
    await lb.send("kill", session=a, store_resume=True)
    killed = await lb.session_event(a, "killed", start=begin, timeout=30)
    assert killed["resume_stored"] is True, killed
    mock.push({"label": "again", "text": "Resumed fine."})
    ready = await create(lb, a, oc_home)  # the same key: the stored session id resumes it
    assert ready["event"] == "ready" and ready.get("resumed") is True, ready
    _acc, end = await turn(lb, a, "still there?")
    assert end["event"] == "complete" and end["content"] == "Resumed fine.", end
    assert len(oc_home.rows("SELECT id FROM session")) == 2  # the same conversation, not a new session
