"""End-to-end tests: the real Claude Code 2.1.328 binary, driven by `litbridge serve` over its socket, talking to
the scripted mock API (tests/fakes/mock_anthropic.py). They check what a client sees (protocol events) and what
really happened (mock request log, transcript, files). Screen parsing details are covered by the fixture tests.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from claude_env import FAKE_API_KEY, ClaudeHome, make_home, offline_env, write_preapproval
from mock_anthropic import MockAnthropic, all_text, tool_results

pytestmark = [pytest.mark.real_claude, pytest.mark.asyncio]

TERMINAL = ("complete", "interrupted", "turn_error")
STATES = {"starting", "idle", "thinking", "responding", "dialog", "dead"}


def check_invariants(lb: Any, key: str) -> None:
    """Protocol invariants over everything the session emitted: one terminal event per accepted turn, every
    question closed, only spec state names."""
    events = lb.since(key, 0)
    turns = [e["turn_id"] for e in events if e["event"] == "accepted"]
    terminals = [e["turn_id"] for e in events if e["event"] in TERMINAL]
    assert sorted(terminals) == sorted(turns), f"terminal events {terminals} for turns {turns}"
    asked = {e["question_id"] for e in events if e["event"] == "question"}
    closed = [e["question_id"] for e in events if e["event"] == "question_closed"]
    assert sorted(closed) == sorted(asked)
    bad = [
        (e["from"], e["to"]) for e in events if e["event"] == "state" and not {e["from"], e["to"]} <= STATES
    ]
    assert bad == []


async def create(
    lb: Any,
    claude_bin: Path,
    key: str,
    home: ClaudeHome,
    mock: MockAnthropic,
    args: list[str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Send `create` for the real binary in `home`, wait for `ready`; returns it (with `_index`)."""
    env = offline_env(home, mock.url, **extra.pop("env", {}))
    if key not in lb.created:
        lb.created.append(key)
    begin = len(lb.events)
    await lb.send(
        "create",
        session=key,
        cli=str(claude_bin),
        args=args or [],
        working_dir=str(home.cwd),
        env=env,
        **extra,
    )
    return await lb.session_event(key, "ready", start=begin)


async def turn(lb: Any, key: str, content: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Send a message; returns (accepted, terminal event of that turn)."""
    begin = len(lb.events)
    await lb.send("send", session=key, content=content)
    acc = await lb.session_event(key, "accepted", start=begin)
    end = await lb.session_event(key, TERMINAL, start=begin, turn_id=acc["turn_id"])
    return acc, end


def preapproved_home(tmp_path: Path) -> ClaudeHome:
    home = make_home(tmp_path)
    write_preapproval(home)
    return home


def user_prompts(home: ClaudeHome) -> list[str]:
    """Typed prompts recorded in the session's transcript(s)."""
    out = []
    for path in home.transcripts():
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if entry.get("type") == "user" and isinstance(entry.get("message", {}).get("content"), str):
                out.append(entry["message"]["content"])
    return out


async def test_startup_dialogs_without_preapproval_then_qa(
    lb: Any, claude_bin: Path, claude_home: ClaudeHome, mock: MockAnthropic, key: str
) -> None:
    """Fresh HOME: trust + API-key dialogs are answered from the screen (not blindly), then a Q&A turn."""
    answer = "Paris is the capital of France."
    mock.push({"label": "qa", "text": answer})
    begin = len(lb.events)
    ready = await create(lb, claude_bin, key, claude_home, mock)
    assert ready["resumed"] is False
    dismissed = [
        e["dialog"]
        for e in lb.events[begin : ready["_index"]]
        if e.get("session") == key and e["event"] == "dialog_dismissed"
    ]
    assert dismissed == ["trust", "api_key"]
    # the accepting options were chosen (Claude recorded them), not the safe defaults
    cfg = claude_home.load_config()
    assert cfg["projects"][str(claude_home.cwd)]["hasTrustDialogAccepted"] is True
    assert cfg["customApiKeyResponses"]["approved"] == [FAKE_API_KEY[-20:]]
    assert cfg["customApiKeyResponses"]["rejected"] == []

    _acc, end = await turn(lb, key, "What is the capital of France?")
    assert end["event"] == "complete", end
    assert end["content"] == answer
    assert end["source"] == "transcript"
    assert set(end["usage"]) >= {"input_tokens", "output_tokens"}
    (req,) = mock.main_requests()
    assert req["last_user"] == "What is the capital of France?"
    # the session's own transcript, named after the session id Claude sent the API
    sid = req["headers"]["X-Claude-Code-Session-Id"]
    assert claude_home.transcripts() == [claude_home.transcript(sid)]
    assert user_prompts(claude_home) == ["What is the capital of France?"]
    check_invariants(lb, key)


LONG_PARAGRAPH = " ".join(f"word{i:03d}" for i in range(60))  # 479 chars: wraps over 3 screen rows
MARKDOWN = (
    "# Report\n\n"
    f"{LONG_PARAGRAPH}\n\n"
    "- first bullet\n- second bullet with `code`\n\n"
    "```python\ndef f(x):\n    return x * 2\n```\n\n"
    "| col a | col b |\n|---|---|\n| 1 | 2 |\n\n"
    "Done."
)


async def test_long_markdown_answer(
    lb: Any, claude_bin: Path, tmp_path: Path, mock: MockAnthropic, key: str
) -> None:
    """A markdown answer with a paragraph wider than 200 columns: streamed `replace` rejoins the wrapped prose,
    `complete` carries the exact markdown. Uses the driver's own `preapprove` flag (no dialog expected)."""
    home = make_home(tmp_path)
    mock.push({"label": "md", "text": MARKDOWN, "chunk": 12, "delay": 0.03})
    begin = len(lb.events)
    await create(lb, claude_bin, key, home, mock, preapprove=True)
    assert lb.since(key, begin, "dialog_dismissed") == []
    acc, end = await turn(lb, key, "Write a short markdown report.")
    assert end["event"] == "complete", end
    assert end["content"] == MARKDOWN
    assert end["source"] == "transcript"
    replaces = [e["text"] for e in lb.since(key, acc["_index"], "replace")]
    assert replaces, "no replace event during a ~1.5 s streamed answer"
    assert all(e["turn_id"] == acc["turn_id"] for e in lb.since(key, acc["_index"], "replace"))
    assert any(LONG_PARAGRAPH in text for text in replaces), replaces[-1]
    check_invariants(lb, key)


async def test_tool_turn_permission_question_answered(
    lb: Any, claude_bin: Path, tmp_path: Path, mock: MockAnthropic, key: str
) -> None:
    """Manual permission mode: the Bash permission dialog becomes a `question`, `answer` approves it."""
    home = preapproved_home(tmp_path)
    command = "touch made_by_tool.txt && echo tool-ran-ok"
    mock.push(
        {
            "label": "bash",
            "blocks": [
                {
                    "type": "tool_use",
                    "name": "Bash",
                    "id": "toolu_e2e_1",
                    "input": {"command": command, "description": "Create a file"},
                }
            ],
        },
        {"label": "after", "text": "Created made_by_tool.txt."},
    )
    await create(lb, claude_bin, key, home, mock, args=["--permission-mode", "manual"])
    begin = len(lb.events)
    await lb.send("send", session=key, content="Create the file please.")
    acc = await lb.session_event(key, "accepted", start=begin)
    q = await lb.session_event(key, "question", start=begin)
    assert q["kind"] == "permission"
    assert "Do you want to proceed?" in q["text"]
    labels = [o["label"] for o in q["options"]]
    assert labels[0] == "Yes" and labels[-1] == "No", labels
    # digit type is not pinned by the spec (the driver sends ints, `answer.digit` is a string)
    assert [str(o["digit"]) for o in q["options"]] == [str(i) for i in range(1, len(labels) + 1)]
    assert command in json.dumps(q.get("detail"))
    assert not (home.cwd / "made_by_tool.txt").exists()
    await lb.send("answer", session=key, question_id=q["question_id"], digit="1")
    await lb.session_event(key, "answer_sent", start=q["_index"])
    closed = await lb.session_event(key, "question_closed", start=q["_index"], question_id=q["question_id"])
    assert closed["reason"] == "answered"
    end = await lb.session_event(key, TERMINAL, start=begin, turn_id=acc["turn_id"])
    assert end["event"] == "complete", end
    assert end["content"] == "Created made_by_tool.txt."
    uses = lb.since(key, begin, "tool_use")
    assert [(u["tool_use_id"], u["name"], u["input"]["command"]) for u in uses] == [
        ("toolu_e2e_1", "Bash", command)
    ]
    results = lb.since(key, begin, "tool_result")
    assert [r["tool_use_id"] for r in results] == ["toolu_e2e_1"]
    assert "tool-ran-ok" in results[0]["content"] and results[0]["is_error"] is False
    assert all(e["turn_id"] == acc["turn_id"] for e in uses + results)
    assert (home.cwd / "made_by_tool.txt").exists()
    second = mock.main_requests()[1]["body"]
    assert any(
        r["tool_use_id"] == "toolu_e2e_1" and "tool-ran-ok" in json.dumps(r) for r in tool_results(second)
    )
    order = [
        e["event"] for e in lb.since(key, begin) if e["event"] in ("tool_use", "tool_result", "complete")
    ]
    assert order == ["tool_use", "tool_result", "complete"]
    check_invariants(lb, key)


async def test_persistent_api_500_is_turn_error(
    lb: Any, claude_bin: Path, tmp_path: Path, mock: MockAnthropic, key: str
) -> None:
    """Persistent HTTP 500 (1 retry) -> `turn_error{kind: api_error}`; the next message works again."""
    home = preapproved_home(tmp_path)
    mock.push({"label": "e500", "status": 500, "persistent": True})
    await create(lb, claude_bin, key, home, mock, env={"CLAUDE_CODE_MAX_RETRIES": "1"})
    _, end = await turn(lb, key, "This will fail.")
    assert end["event"] == "turn_error", end
    assert end["kind"] == "api_error"
    assert "500" in end["message"]
    assert len(mock.main_requests()) == 2  # first attempt + 1 retry
    # the input now shows Claude's "Resend your message to try again" placeholder; the session must stay usable
    mock.set_script([{"label": "back", "text": "Back online."}])
    _, end2 = await turn(lb, key, "Try again.")
    assert (end2["event"], end2["content"]) == ("complete", "Back online."), end2
    assert mock.main_requests()[-1]["last_user"] == "Try again."
    check_invariants(lb, key)


async def test_interrupt_then_next_turn(
    lb: Any, claude_bin: Path, tmp_path: Path, mock: MockAnthropic, key: str
) -> None:
    """A slowly streamed answer is interrupted (`interrupted`, partial content); the session stays usable."""
    home = preapproved_home(tmp_path)
    slow = "".join(f"Line {i} of a slow answer.\n" for i in range(1, 200))
    mock.push(
        {"label": "slow", "text": slow, "chunk": 8, "delay": 0.15},
        {"label": "next", "text": "Second answer."},
    )
    await create(lb, claude_bin, key, home, mock)
    begin = len(lb.events)
    await lb.send("send", session=key, content="Tell me a long story.")
    acc = await lb.session_event(key, "accepted", start=begin)
    await lb.wait(
        lambda e: e.get("session") == key and e["event"] == "replace" and "Line 2" in e["text"],
        start=begin,
        what="a replace with streamed text",
    )
    await lb.send("interrupt", session=key)
    end = await lb.session_event(key, TERMINAL, start=begin, turn_id=acc["turn_id"])
    assert end["event"] == "interrupted", end
    assert "Line 1 of a slow answer." in end["content"]
    assert "Line 199" not in end["content"]
    assert any(e["event"] == "client_gone" and e["label"] == "slow" for e in mock.events)
    _, end2 = await turn(lb, key, "Now answer briefly.")
    assert end2["event"] == "complete", end2
    assert end2["content"] == "Second answer."
    # the interrupted prompt was not re-typed in front of the next one
    assert mock.main_requests()[-1]["last_user"] == "Now answer briefly."
    check_invariants(lb, key)


async def test_kill_store_resume_then_create_resumes(
    lb: Any, claude_bin: Path, tmp_path: Path, mock: MockAnthropic, key: str
) -> None:
    home = preapproved_home(tmp_path)
    mock.push({"label": "t1", "text": "Noted: PELICAN."}, {"label": "t2", "text": "The word was PELICAN."})
    first = await create(lb, claude_bin, key, home, mock)
    assert first["resumed"] is False
    _, end1 = await turn(lb, key, "Remember the word PELICAN.")
    assert end1["event"] == "complete" and end1["content"] == "Noted: PELICAN."
    begin = len(lb.events)
    await lb.send("kill", session=key, store_resume=True)
    await lb.session_event(key, "killed", start=begin)
    again = await create(lb, claude_bin, key, home, mock)
    assert again["resumed"] is True
    assert "reused" not in again or again["reused"] is False
    _, end2 = await turn(lb, key, "Which word did I ask you to remember?")
    assert end2["event"] == "complete", end2
    assert end2["content"] == "The word was PELICAN."
    seen = all_text(mock.main_requests()[-1]["body"])
    assert "Remember the word PELICAN." in seen and "Noted: PELICAN." in seen
    # same conversation file, both prompts in it
    assert len(home.transcripts()) == 1
    assert user_prompts(home) == ["Remember the word PELICAN.", "Which word did I ask you to remember?"]
    check_invariants(lb, key)


async def test_messages_sent_while_busy_are_queued_fifo(
    lb: Any, claude_bin: Path, tmp_path: Path, mock: MockAnthropic, key: str
) -> None:
    """Two sends back to back: the second is queued, typed only after the first turn ends, answered in order,
    and neither turn's `replace`/`complete` carries the other's text."""
    home = preapproved_home(tmp_path)
    first = "First answer, streamed slowly over a couple of lines.\nSecond line of the first answer."
    mock.push(
        {"label": "a", "text": first, "chunk": 6, "delay": 0.08}, {"label": "b", "text": "Second answer."}
    )
    await create(lb, claude_bin, key, home, mock)
    begin = len(lb.events)
    await lb.send("send", session=key, content="First question?")
    await lb.send("send", session=key, content="Second question?")
    acc1 = await lb.session_event(key, "accepted", start=begin)
    acc2 = await lb.session_event(key, "accepted", start=acc1["_index"] + 1)
    assert acc1["queued"] is False and acc2["queued"] is True
    assert acc1["turn_id"] != acc2["turn_id"]
    end1 = await lb.session_event(key, TERMINAL, start=begin, turn_id=acc1["turn_id"])
    end2 = await lb.session_event(key, TERMINAL, start=begin, turn_id=acc2["turn_id"])
    assert end1["event"] == end2["event"] == "complete", (end1, end2)
    assert end1["_index"] < end2["_index"]
    assert (end1["content"], end2["content"]) == (first, "Second answer.")
    assert [r["last_user"] for r in mock.main_requests()] == ["First question?", "Second question?"]
    for r in lb.since(key, begin, "replace"):
        other = "Second answer." if r["turn_id"] == acc1["turn_id"] else "First answer"
        assert other not in r["text"], r
    assert user_prompts(home) == ["First question?", "Second question?"]
    check_invariants(lb, key)


async def test_classic_renderer_qa(
    lb: Any, claude_bin: Path, tmp_path: Path, mock: MockAnthropic, key: str
) -> None:
    """settings.json {"tui": "default"}: the inline (non-alternate-screen) renderer works the same way; a thinking
    block is not part of `complete.content`."""
    home = make_home(tmp_path)
    write_preapproval(home, tui="default")
    mock.push(
        {
            "label": "c1",
            "blocks": [
                {"type": "thinking", "thinking": "Pondering the first question."},
                {"type": "text", "text": "Classic one."},
            ],
        },
        {"label": "c2", "text": "Classic two."},
    )
    await create(lb, claude_bin, key, home, mock)
    _, end1 = await turn(lb, key, "One?")
    acc2, end2 = await turn(lb, key, "Two?")
    assert (end1["event"], end1["content"]) == ("complete", "Classic one.")
    assert (end2["event"], end2["content"], end2["source"]) == ("complete", "Classic two.", "transcript")
    assert all("Classic one." not in r["text"] for r in lb.since(key, acc2["_index"], "replace"))
    # the transcript can end the turn before the screen shows the answer (a CLI short of CPU draws late)
    for _ in range(60):
        begin = len(lb.events)
        await lb.send("dump", session=key)
        dump = await lb.session_event(key, "dump", start=begin)
        if "❯ One?" in dump["capture"] and "Classic two." in dump["capture"]:
            break
        await asyncio.sleep(0.5)
    if dump.get("modes", {}).get("alternate") is not None:  # the pyte fallback does not track it
        assert dump["modes"]["alternate"] is False, dump["modes"]  # really the inline renderer
    assert "❯ One?" in dump["capture"] and "Classic two." in dump["capture"], dump["capture"]
    check_invariants(lb, key)


@pytest.mark.parametrize("how", ["command", "attach"])
async def test_interrupt_before_first_token(
    lb: Any, claude_bin: Path, tmp_path: Path, mock: MockAnthropic, key: str, how: str
) -> None:
    """Esc before any token: Claude puts the prompt back into its input box (reference §7); the turn still ends
    `interrupted` and the next message is sent alone, not appended to the restored draft. The same whether the
    interrupt is the `interrupt` command or an Esc a user types through the attach socket."""
    home = preapproved_home(tmp_path)
    mock.push(
        {"label": "never", "text": "Too late.", "first_delay": 60}, {"label": "next", "text": "Recovered."}
    )
    await create(lb, claude_bin, key, home, mock)
    begin = len(lb.events)
    await lb.send("send", session=key, content="Slow first token please.")
    acc = await lb.session_event(key, "accepted", start=begin)
    await asyncio.to_thread(mock.wait_for_requests, 1, 60.0)
    if how == "command":
        await lb.send("interrupt", session=key)
    else:
        reader, writer = await asyncio.open_unix_connection(lb.daemon.socket + ".attach")
        writer.write(key.encode() + b"\n")
        await reader.read(1)  # the initial paint: attached (and in control, the first attacher)
        writer.write(b"\x1b")
        await writer.drain()
    end = await lb.session_event(key, TERMINAL, start=begin, turn_id=acc["turn_id"])
    if how == "attach":
        writer.close()
    assert end["event"] == "interrupted", end
    assert "Too late." not in end["content"]
    # t1 left only its prompt line in the JSONL: when t2's prompt lands, the transcript reports t1 `abandoned`;
    # that must not end t2, which Claude completes normally
    _, end2 = await turn(lb, key, "Second try.")
    assert (end2["event"], end2["content"]) == ("complete", "Recovered."), end2
    assert [r["last_user"] for r in mock.main_requests()] == ["Slow first token please.", "Second try."]
    check_invariants(lb, key)


def _inotify_fds(pid: int) -> int:
    import os

    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:inotify":
                n += 1
        except OSError:
            pass
    return n


async def test_transcript_watch_fd_closed_after_kill(
    lb: Any, claude_bin: Path, tmp_path: Path, mock: MockAnthropic, key: str
) -> None:
    """The driver watches the transcript folder with inotify; its fd goes with the last session (no leak)."""
    pid = lb.daemon.proc.pid
    home = preapproved_home(tmp_path)
    for i in range(3):
        mock.push({"label": f"t{i}", "text": f"Answer {i}."})
        k = f"{key}-{i}"
        await create(lb, claude_bin, k, home, mock)
        assert _inotify_fds(pid) == 1  # one shared instance, not one per session
        _, end = await turn(lb, k, f"Question {i}?")
        assert end["event"] == "complete" and end["content"] == f"Answer {i}."
        begin = len(lb.events)
        await lb.send("kill", session=k)
        await lb.session_event(k, "killed", start=begin)
        for _ in range(100):
            if _inotify_fds(pid) == 0:
                break
            await asyncio.sleep(0.05)
        assert _inotify_fds(pid) == 0


async def test_rewind_list_is_a_question(
    lb: Any, claude_bin: Path, tmp_path: Path, mock: MockAnthropic, key: str
) -> None:
    """Esc Esc at idle opens Claude's rewind list: relayed as a `question` (one option per past prompt plus
    `(current)`), not as an unknown dialog; Esc closes it and the session is usable again."""
    home = preapproved_home(tmp_path)
    mock.push({"label": "t1", "text": "First answer."}, {"label": "t2", "text": "Second answer."})
    await create(lb, claude_bin, key, home, mock)
    _, end = await turn(lb, key, "first prompt here")
    assert end["event"] == "complete"
    begin = len(lb.events)
    for _ in range(2):
        await lb.send("keystroke", session=key, keys=["Esc"])
        await asyncio.sleep(0.15)
    q = await lb.session_event(key, "question", start=begin)
    labels = [o["label"] for o in q["options"]]
    assert "first prompt here" in labels and labels[-1] == "(current)", q
    assert q["options"][-1]["selected"] and q["text"].startswith("Rewind")
    assert not lb.since(key, begin, "unknown_dialog")
    await lb.send("answer", session=key, question_id=q["question_id"], text="free text")
    err = await lb.wait(lambda e: e.get("event") == "error", start=begin)
    assert err["code"] == "bad_field" and "text answers are not supported" in err["message"]
    after = err["_index"] + 1
    await lb.send("keystroke", session=key, keys=["Esc"])
    await lb.session_event(key, "question_closed", start=after, question_id=q["question_id"])
    _, end2 = await turn(lb, key, "second prompt")
    assert end2["event"] == "complete" and end2["content"] == "Second answer."
    check_invariants(lb, key)


async def test_fast_answers_get_a_replace_before_complete_never_the_previous_text(
    lb: Any, claude_bin: Path, tmp_path: Path, mock: MockAnthropic, key: str
) -> None:
    """An answer that is done almost at once still streams at least one `replace` (from the transcript when the
    screen was too quick), and no `replace` of a turn ever carries the previous turn's text."""
    home = preapproved_home(tmp_path)
    mock.push(
        {"label": "a", "text": "Alpha."}, {"label": "b", "text": "Bravo."}, {"label": "c", "text": "Charlie."}
    )
    await create(lb, claude_bin, key, home, mock)
    previous = None
    for prompt, answer in (("one?", "Alpha."), ("two?", "Bravo."), ("three?", "Charlie.")):
        begin = len(lb.events)
        acc, end = await turn(lb, key, prompt)
        assert end["event"] == "complete" and end["content"] == answer
        mine = [e for e in lb.since(key, begin) if e.get("turn_id") == acc["turn_id"]]
        kinds = [e["event"] for e in mine if e["event"] in ("replace", "complete")]
        assert kinds[0] == "replace" and kinds[-1] == "complete", kinds
        texts = [e["text"] for e in mine if e["event"] == "replace"]
        assert texts[-1] == answer and previous not in texts, texts
        previous = answer
    check_invariants(lb, key)


async def test_a_send_after_a_401_is_delivered_not_held(
    lb: Any, claude_bin: Path, tmp_path: Path, mock: MockAnthropic, key: str
) -> None:
    """After a 401 Claude reports OSC 7501 `blocked` (kind auth) while its prompt is live: the next send must be
    typed (and answered once the API accepts the key again), never held silently behind the `blocked` report."""
    home = preapproved_home(tmp_path)
    mock.push({"label": "auth", "status": 401, "message": "invalid x-api-key", "persistent": True})
    await create(lb, claude_bin, key, home, mock, env={"CLAUDE_CODE_MAX_RETRIES": "1"})
    _, end = await turn(lb, key, "This will be refused.")
    assert end["event"] == "turn_error", end
    mock.set_script([{"label": "back", "text": "Key accepted."}])
    begin = len(lb.events)
    _acc, end2 = await turn(lb, key, "Try again.")
    assert (end2["event"], end2.get("content")) == ("complete", "Key accepted."), lb.since(key, begin)
    check_invariants(lb, key)
