"""End-to-end: the real Qwen Code 0.24.4 (on a fetched Node 22) driven by `litbridge serve` over its socket,
against the shared chat-completions mock. What a client sees (events) and what really happened (mock requests,
chat file, files on disk, processes) are both checked. One session runs several scenarios: a Qwen start costs
seconds on a busy machine.
"""

from __future__ import annotations

import asyncio
import json
import os

import pytest
from mock_chat import last_user_text
from qwen_env import TERMINAL, check_invariants, create_cmd

pytestmark = [pytest.mark.real_qwen, pytest.mark.asyncio]

ANSWER = "Line one? Yes: 你好 🎉\n\n- two\n- three?"


def _shell(command: str) -> dict:
    return {"name": "run_shell_command", "arguments": {"command": command, "description": "test approvals"}}


@pytest.mark.timeout(300)  # six turns of a Node CLI: 40-60 s idle, over 120 s once beside two CPU hogs
async def test_answer_approval_deny_interrupt_error(lb, key, qwen_home, mock) -> None:
    mock.push(
        {"label": "qa", "text": ANSWER},
        {
            "label": "call",
            "text": "I'll create the file.",
            "tool_calls": [_shell("touch made.txt && echo hi-there")],
        },
        {"label": "after", "text": "Done: the file was created."},
        {"label": "deny", "text": "", "tool_calls": [_shell("rm -f README.md && echo removed")]},
    )
    ready = await lb.create(create_cmd(key, qwen_home, approval_mode="default"))
    assert ready["event"] == "ready", ready

    # an exact multi-line answer with `?`, CJK and emoji, from the CLI's own record
    prompt = "What is this? 你好 🎉\nAnd a second line?"
    end = await lb.turn(key, prompt)
    assert end["event"] == "complete", end
    assert end["content"] == ANSWER
    assert end["source"] == "transcript"
    assert end["usage"]["input_tokens"] > 0
    main = mock.main_requests()
    assert last_user_text(main[-1]["body"]).endswith(prompt)  # every `?` and character arrived
    # the user's own settings were never written (the session's live in its own QWEN_HOME)
    assert "enableFollowupSuggestions" not in (qwen_home.dot / "settings.json").read_text()

    # approval asked -> answered by digit -> the tool ran -> complete
    begin = len(lb.events)
    await lb.send("send", session=key, content="Please create a file with a shell command.")
    q = await lb.session_event(key, "question", start=begin)
    assert q["kind"] == "permission", q
    assert q["options"][0]["digit"] == "1" and q["options"][0]["label"].startswith("Yes")
    assert "touch made.txt" in json.dumps(q.get("detail"))
    await lb.send("answer", session=key, question_id=q["question_id"], digit="1")
    end = await lb.session_event(key, TERMINAL, start=begin)
    assert end["event"] == "complete", end
    assert end["content"] == "I'll create the file.\n\nDone: the file was created."
    assert (qwen_home.cwd / "made.txt").exists()
    use = await lb.session_event(key, "tool_use", start=begin)
    res = await lb.session_event(key, "tool_result", start=begin)
    assert use["name"] == "run_shell_command" and "hi-there" in res["content"]
    closed = await lb.session_event(key, "question_closed", start=begin, question_id=q["question_id"])
    assert closed["reason"] == "answered"

    # deny: the tool never runs, the turn ends, the next one works
    begin = len(lb.events)
    await lb.send("send", session=key, content="Now remove the README please.")
    q = await lb.session_event(key, "question", start=begin)
    no = next(o for o in q["options"] if o["label"].startswith("No"))
    await lb.send("answer", session=key, question_id=q["question_id"], digit=no["digit"])
    end = await lb.session_event(key, TERMINAL, start=begin)
    assert end["event"] in ("interrupted", "complete"), end
    assert (qwen_home.cwd / "README.md").exists()

    # interrupt mid-stream -> `interrupted`, and the prompt put back in the box is cleared
    slow = " ".join(f"word{i}" for i in range(200))
    mock.push({"label": "slow", "text": slow, "chunk": 6, "delay": 0.15})
    begin = len(lb.events)
    await lb.send("send", session=key, content="Say many words\nplease, on two lines")
    await lb.session_event(key, "replace", start=begin, timeout=60)
    await lb.send("interrupt", session=key)
    end = await lb.session_event(key, TERMINAL, start=begin)
    assert end["event"] == "interrupted", end

    # an unrecoverable API error -> turn_error, then the next send works
    mock.push({"status": 400}, {"label": "ok", "text": "Still alive."})
    end = await lb.turn(key, "this request fails")
    assert end["event"] == "turn_error", end
    assert "400" in end["message"]
    end = await lb.turn(key, "are you there?")
    assert end["event"] == "complete" and end["content"] == "Still alive.", end
    check_invariants(lb, key)


async def test_no_provider_configured_fails_create_with_what_to_do(lb, key, qwen_home) -> None:
    (qwen_home.dot / "settings.json").write_text("{}")
    begin = len(lb.events)
    await lb.send("create", **{k: v for k, v in create_cmd(key, qwen_home).items() if k != "cmd"})
    err = await lb.session_event(key, "error", start=begin, timeout=120)
    assert err["code"] == "spawn_failed" and "Connect a Provider" in err["message"], err
    for _ in range(50):  # nothing of the CLI is left
        if not _processes_in(str(qwen_home.cwd)):
            break
        await asyncio.sleep(0.2)
    assert not _processes_in(str(qwen_home.cwd))


def _processes_in(folder: str) -> list[int]:
    """Processes whose working directory is `folder` (the CLI and everything it started there)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/cwd") == folder:
                    out.append(int(entry))
            except OSError:
                continue
    return out


async def test_queue_quick_turns_resume_and_kill(lb, key, qwen_home, mock) -> None:
    n = 20
    mock.push(*({"label": f"t{i}", "text": f"answer {i}?"} for i in range(n)))
    qwen_home.configure(mock.url, folder_trust=True)  # the trust dialog at start, answered from the screen
    begin = len(lb.events)
    ready = await lb.create(create_cmd(key, qwen_home))
    assert [e["dialog"] for e in lb.since(key, begin, "dialog_dismissed")] == ["trust"], lb.since(key, begin)
    assert ready["resumed"] is False
    assert not (qwen_home.dot / "trustedFolders.json").exists()  # the answer went to the session's copy
    assert _processes_in(str(qwen_home.cwd))
    begin = len(lb.events)
    for i in range(n):  # all sent at once: the session queues them
        await lb.send("send", session=key, content=f"quick {i}")
    ends: list[dict] = []
    for _ in range(n):
        start = ends[-1]["_index"] + 1 if ends else begin
        ends.append(await lb.session_event(key, TERMINAL, start=start, timeout=120))
    assert [e["event"] for e in ends] == ["complete"] * n, ends
    assert [e["content"] for e in ends] == [f"answer {i}?" for i in range(n)]
    dark = [e for e in ends if e.get("source") != "transcript"]  # every turn's answer came from the record
    assert not dark, dark
    assert sum(1 for e in lb.since(key, begin, "accepted") if e.get("queued")) > 0
    check_invariants(lb, key)

    # kill storing the resume token: nothing of the CLI is left; a create of the key resumes the conversation
    begin = len(lb.events)
    await lb.send("kill", session=key, store_resume=True)
    killed = await lb.session_event(key, "killed", start=begin, timeout=30)
    assert killed.get("resume_stored") is True, killed
    for _ in range(50):
        if not _processes_in(str(qwen_home.cwd)):
            break
        await asyncio.sleep(0.2)
    assert not _processes_in(str(qwen_home.cwd)), "a process of the CLI outlived kill"
    mock.push({"label": "resumed", "text": "I remember."})
    ready = await lb.create(create_cmd(key, qwen_home))
    assert ready["resumed"] is True, ready
    end = await lb.turn(key, "do you remember?")
    assert end["event"] == "complete" and end["content"] == "I remember.", end
    history = json.dumps(mock.main_requests()[-1]["body"]["messages"], ensure_ascii=False)
    assert "quick 19" in history and "answer 19?" in history  # the resumed conversation went to the API
    assert len(qwen_home.chat_files()) == 1  # `--resume` appends to the same chat file
    check_invariants(lb, key)
