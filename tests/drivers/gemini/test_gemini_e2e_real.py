"""End-to-end: the real Gemini CLI 0.61.0 driven by `litbridge serve` over its socket, against the project's mock
Gemini API (tests/fakes/mock_gemini.py). What a client sees (events) and what really happened (mock request log,
chat file, files, processes) are both checked; screen details are covered by test_rules.py on the recordings.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from gemini_helpers import API_KEY, check_invariants, make_home
from mock_gemini import function_responses

pytestmark = [pytest.mark.real_gemini, pytest.mark.asyncio]


async def test_qa_with_question_mark_exact(lb, key, gemini_home, mock) -> None:
    answer = "The capital of France is **Paris**.\n\n- one\n- two"
    mock.push({"label": "qa", "text": answer})
    ready = await lb.create(key, gemini_home, mock)
    assert ready["event"] == "ready", ready
    prompt = "What is the capital of France? And a?b too"
    _acc, end = await lb.turn(key, prompt)
    assert end["event"] == "complete", end
    assert end["content"] == answer
    assert end["source"] == "transcript"
    assert end["usage"]["input_tokens"] > 0
    assert mock.main_requests()[-1]["last_user"] == prompt  # every `?` arrived (reference §0.5)
    # the user's own settings were never written: the session's settings live in its own GEMINI_CLI_HOME
    assert not (gemini_home.dot / "settings.json").exists()
    assert json.loads((gemini_home.dot / "trustedFolders.json").read_text()) == {
        str(gemini_home.cwd): "TRUST_FOLDER"
    }
    check_invariants(lb, key)


_WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa".split()
# varied lines: repetitive text trips the CLI's loop detection (a dialog), which is not what this test is about
LONG_MARKDOWN = (
    "# Report\n\nIntro paragraph with **bold** and `code`.\n\n"
    + "\n".join(
        f"- item {i}: {_WORDS[i % 16]} {_WORDS[(i * 7) % 16]} {i * i} {_WORDS[(i * 3 + 5) % 16]}"
        for i in range(40)
    )
    + "\n\n## Code\n\n```python\ndef area(w, h):\n    return w * h\n\n\nprint(area(3, 4))\n```\n\n> a quote\n\nThe end."
)


async def test_long_markdown_answer_exact(lb, key, gemini_home, mock) -> None:
    mock.push({"label": "md", "text": LONG_MARKDOWN, "chunk": 200, "delay": 0.02})
    await lb.create(key, gemini_home, mock)
    acc, end = await lb.turn(key, "Write a long markdown report")
    assert end["event"] == "complete", end
    assert end["content"] == LONG_MARKDOWN  # byte for byte from the chat file, not the rendered screen
    replaces = [e for e in lb.since(key, acc["_index"], "replace") if e.get("turn_id") == acc["turn_id"]]
    assert replaces and replaces[-1]["text"] == LONG_MARKDOWN
    check_invariants(lb, key)


def _shell_call(command: str) -> dict:
    return {"name": "run_shell_command", "args": {"command": command, "description": "test approvals"}}


async def test_approval_yes_runs_the_command(lb, key, gemini_home, mock) -> None:
    mock.push(
        {
            "label": "call",
            "text": "I'll create the file.",
            "function_call": _shell_call("touch made.txt && echo hi-there"),
        },
        {"label": "after", "text": "Done: the file was created."},
    )
    await lb.create(key, gemini_home, mock)
    begin = len(lb.events)
    await lb.client.send(key, "Please create a file with a shell command.")
    q = await lb.wait(key, "question", start=begin)
    assert q["kind"] == "permission"
    assert "Allow execution" in q["text"]
    assert next(o["label"] for o in q["options"]) == "Allow once"
    assert "touch made.txt" in (q.get("detail") or "")
    await lb.client.answer(key, question_id=q["question_id"], digit="1")
    end = await lb.wait(key, ("complete", "interrupted", "turn_error"), start=begin)
    assert end["event"] == "complete", end
    assert end["content"] == "I'll create the file.\n\nDone: the file was created."
    assert (gemini_home.cwd / "made.txt").exists()
    use = await lb.wait(key, "tool_use", start=begin)
    res = await lb.wait(key, "tool_result", start=begin)
    assert use["name"] == "run_shell_command" and use["input"]["command"].startswith("touch made.txt")
    assert res["tool_use_id"] == use["tool_use_id"] and "hi-there" in res["content"] and not res["is_error"]
    assert any("hi-there" in json.dumps(r) for r in function_responses(mock.main_requests()[-1]["body"]))
    closed = await lb.wait(key, "question_closed", start=begin, question_id=q["question_id"])
    assert closed["reason"] == "answered"
    check_invariants(lb, key)


async def test_approval_no_cancels_the_turn(lb, key, gemini_home, mock) -> None:
    mock.push({"label": "call", "text": "", "function_call": _shell_call("rm -f README.md && echo removed")})
    await lb.create(key, gemini_home, mock)
    begin = len(lb.events)
    await lb.client.send(key, "Now remove the README please.")
    q = await lb.wait(key, "question", start=begin)
    no = next(o for o in q["options"] if o["label"].startswith("No"))
    await lb.client.answer(key, question_id=q["question_id"], digit=no["digit"])
    end = await lb.wait(key, ("complete", "interrupted", "turn_error"), start=begin)
    assert end["event"] == "interrupted", end  # the CLI records `Request cancelled.`
    assert (gemini_home.cwd / "README.md").exists()
    n = len(mock.main_requests())
    _acc, end2 = await lb.turn(key, "are you still there?")
    assert end2["event"] == "complete" and len(mock.main_requests()) == n + 1
    check_invariants(lb, key)


async def test_interrupt_mid_stream_then_next_turn(lb, key, gemini_home, mock) -> None:
    slow = " ".join(f"word{i}" for i in range(200))
    mock.push(
        {"label": "slow", "text": slow, "chunk": 6, "delay": 0.15}, {"label": "ok", "text": "Still alive."}
    )
    await lb.create(key, gemini_home, mock)
    begin = len(lb.events)
    await lb.client.send(key, "first slow answer please")
    acc = await lb.wait(key, "accepted", start=begin)
    while True:  # streaming is on screen, a few words in
        rep = await lb.wait(key, "replace", start=begin, turn_id=acc["turn_id"])
        begin = rep["_index"] + 1
        if "word3" in rep["text"]:
            break
    await lb.client.interrupt(key)
    end = await lb.wait(key, ("complete", "interrupted", "turn_error"), start=begin, turn_id=acc["turn_id"])
    assert end["event"] == "interrupted", end
    assert end["content"].startswith(
        "word0 word1 word2 word3"
    )  # what the screen showed (not in the chat file)
    assert len(mock.main_requests()) == 1
    _acc, end2 = await lb.turn(key, "after the interrupt")
    assert end2["event"] == "complete" and end2["content"] == "Still alive."
    check_invariants(lb, key)


async def test_500_storm_ends_at_the_turn_deadline_then_a_normal_turn(lb, key, gemini_home, mock) -> None:
    mock.push({"label": "e500", "status": 500, "persistent": True})
    await lb.create(key, gemini_home, mock, turn_timeout=12)
    _acc, end = await lb.turn(key, "trigger a server error", timeout=120)
    assert end["event"] == "turn_error", end
    assert end["kind"] == "timeout"
    assert "12s" in end["message"]  # the deadline
    assert "esc to cancel" in end["detail"]  # what the CLI showed
    assert len(mock.main_requests()) >= 2  # the CLI was retrying silently
    mock.set_script([{"label": "ok", "text": "Recovered fine."}])
    _acc, end2 = await lb.turn(key, "recover now", timeout=120)
    assert end2["event"] == "complete" and end2["content"] == "Recovered fine.", end2
    check_invariants(lb, key)


async def test_in_stream_error_is_turn_error(lb, key, gemini_home, mock) -> None:
    # the user's own settings (merged into the session's): two attempts, as in the recording [gemini_api_error]
    user_settings = json.dumps({"general": {"maxAttempts": 2}})
    (gemini_home.dot / "settings.json").write_text(user_settings)
    mock.push({"label": "streamerr", "text": "partial text", "stream_error": 500, "persistent": True})
    await lb.create(key, gemini_home, mock)
    _acc, end = await lb.turn(key, "trigger a stream error", timeout=120)
    assert end["event"] == "turn_error", end
    assert end["kind"] == "api_error"
    assert "Model stream ended without a finish reason." in end["message"]
    assert (gemini_home.dot / "settings.json").read_text() == user_settings  # read, never written
    check_invariants(lb, key)


def _session_pids(home: Path) -> list[int]:
    """Processes whose environment carries this test's HOME (the CLI, its relaunched child, tools)."""
    needle = f"HOME={home}".encode()
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as fh:
                env = fh.read().split(b"\0")
        except OSError:
            continue
        if needle in env:
            found.append(int(d))
    return found


async def test_trust_dialog_restart_then_kill_leaves_no_process(lb, key, tmp_path, mock) -> None:
    home = make_home(tmp_path, "untrusted")  # not in trustedFolders.json: the trust dialog shows
    mock.push({"label": "qa", "text": "Trusted and answering."})
    begin = len(lb.events)
    ready = await lb.create(key, home, mock)
    assert ready["event"] == "ready", ready
    dismissed = await lb.wait(key, "dialog_dismissed", start=begin)
    assert dismissed["dialog"] == "trust"
    _acc, end = await lb.turn(key, "hello after the restart")
    assert end["event"] == "complete" and end["content"] == "Trusted and answering."
    assert not (home.dot / "trustedFolders.json").exists()  # the answer went to the session's copy
    pids = _session_pids(home.home)
    assert len(pids) >= 2, pids  # gemini.js and the child it relaunched
    await lb.client.kill(key)
    await lb.wait(key, "killed", start=begin)
    for _ in range(50):
        left = _session_pids(home.home)
        if not left:
            break
        await asyncio.sleep(0.1)
    assert left == [], f"processes left after kill: {left}"
    check_invariants(lb, key)


async def test_kill_store_resume_then_create_resumes_the_same_chat(lb, key, gemini_home, mock) -> None:
    mock.push({"label": "one", "text": "First answer."}, {"label": "two", "text": "Second answer."})
    await lb.create(key, gemini_home, mock)
    _acc, end = await lb.turn(key, "first prompt")
    assert end["content"] == "First answer."
    await lb.client.kill(key, store_resume=True)
    begin = len(lb.events)
    ready = await lb.create(key, gemini_home, mock)
    assert ready["resumed"] is True, ready
    _acc, end2 = await lb.turn(key, "second prompt")
    assert end2["event"] == "complete" and end2["content"] == "Second answer."
    # the model saw the first exchange: the CLI resumed the conversation
    contents = json.dumps(mock.main_requests()[-1]["body"]["contents"])
    assert "First answer." in contents and "first prompt" in contents
    # `--resume` appends to the same chat file (when the minute changed in between, the CLI also starts an empty
    # file named by the new minute: seen live, and why the driver pins the file that existed before the resume)
    prompts = {
        f.name: [
            r["content"][0].get("text")
            for r in map(json.loads, f.read_text().splitlines())
            if r.get("type") == "user" and isinstance(r.get("content"), list)
        ]
        for f in gemini_home.chat_files()
    }
    holding = [name for name, texts in prompts.items() if "second prompt" in texts]
    assert len(holding) == 1 and "first prompt" in prompts[holding[0]], prompts
    assert len(lb.since(key, begin, "complete")) == 1
    assert API_KEY not in json.dumps(lb.events)


async def test_command_line_create_and_send(lb, key, gemini_home, mock, daemon) -> None:
    """`litbridge create --cli gemini` + `litbridge send` (the README's quick start) against the real CLI."""
    mock.push({"label": "cli", "text": "Yes, it is a question."})
    lb.created.append(key)
    base = [sys.executable, "-m", "litbridge"]
    sock = ["--socket", daemon.socket]
    env = [
        f"--env=HOME={gemini_home.home}",
        f"--env=GOOGLE_GEMINI_BASE_URL={mock.url}",
        f"--env=GEMINI_API_KEY={API_KEY}",
    ]

    async def run(*args: str) -> tuple[int, str]:
        proc = await asyncio.create_subprocess_exec(
            *base, *args, *sock, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
        out, _ = await asyncio.wait_for(proc.communicate(), 180)
        return proc.returncode, out.decode()

    rc, out = await run("create", key, "--cli", "gemini", "--cwd", str(gemini_home.cwd), *env)
    assert rc == 0, out
    rc, out = await run("send", key, "Is this a question? a?b", "--json")
    assert rc == 0, out
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert [e["content"] for e in events if e["event"] == "complete"] == ["Yes, it is a question."]
    assert mock.main_requests()[-1]["last_user"] == "Is this a question? a?b"


async def test_input_slash_quit_exits_the_cli(lb, key, gemini_home, mock) -> None:
    """`input` (type + Enter, unobserved) reaches the CLI's own commands: `/quit` ends it with code 0. A turn
    first: until its config has initialized (seconds after `ready` on a starved machine) the CLI queues whatever
    is submitted, slash commands too, and sends it to the model as a prompt (docs/protocol.md, Gemini CLI)."""
    await lb.create(key, gemini_home, mock)
    _acc, end = await lb.turn(key, "hello")
    assert end["event"] == "complete", end
    begin = len(lb.events)
    await lb.client.input(key, "/quit")
    exited = await lb.wait(key, "exited", start=begin)
    assert exited["exit_code"] == 0
    assert await _no_session_processes(gemini_home.home)


async def _no_session_processes(home: Path) -> bool:
    for _ in range(50):
        if not _session_pids(home):
            return True
        await asyncio.sleep(0.1)
    return False
