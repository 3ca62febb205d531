"""End-to-end against the real Codex CLI 0.169.0 binary, through a real `litbridge serve`, offline against the
project's mock Responses API (tests/fakes/mock_openai.py). Few, fast, robust: generous timeouts, no timing asserts.
"""

from __future__ import annotations

import asyncio
import json
import sys

import pytest
from codex_env import CodexHome, create_cmd, make_home, shell_approval_script
from lbd_helpers import processes_left, processes_with_home
from mock_openai import output_text, tool_outputs, user_texts

pytestmark = pytest.mark.asyncio

LONG_MARKDOWN = "\n".join(
    [
        "# Report",
        "",
        "Intro paragraph with `code`, **bold** and _italic_ text.",
        "",
        *[
            line
            for i in range(1, 9)
            for line in (
                f"## Section {i}",
                "",
                f"Paragraph {i}: lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.",
                "",
                f"- bullet {i}.1",
                f"- bullet {i}.2",
                "",
                "```python",
                f"def f{i}(x):",
                f"    return x * {i}",
                "```",
                "",
            )
        ],
        "| a | b |",
        "|---|---|",
        "| 1 | 2 |",
        "",
        "> The end.",
    ]
)


async def test_plain_qa_exact_content_then_kill_leaves_no_process(lb, key, codex_home, mock) -> None:
    mock.push({"label": "q1", "text": "The capital of France is **Paris**."})
    ready = await lb.create(create_cmd(key, codex_home, mock))
    assert ready["session"] == key
    assert lb.since(key, 0, "dialog_dismissed") == []  # preapprove: the git cwd is trusted, no dialog
    end = await lb.turn(key, "What is the capital of France?")
    assert end["event"] == "complete", end
    assert end["content"] == "The capital of France is **Paris**."
    assert end["source"] == "transcript"
    assert end["usage"]["input_tokens"] > 0
    states = [
        e["to"] for e in lb.events[: end["_index"]] if e.get("session") == key and e["event"] == "state"
    ]
    assert states[-1] == "idle"  # the state settles before the terminal event
    assert "thinking" not in states[states.index("responding") :]  # no flip back while the turn ends
    # the title-generation request Codex makes per thread is not a turn: one agent request, one turn
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, lambda: mock.wait_for_requests(2, timeout=30, main_only=False))
    assert [r["last_user"] for r in mock.main_requests()] == ["What is the capital of France?"]
    assert [r["thread_source"] for r in mock.requests if not r["main"]] == ["thread_title"]
    await asyncio.sleep(0.5)
    assert len(lb.since(key, 0, "complete")) == 1 and len(lb.since(key, 0, "accepted")) == 1
    assert processes_with_home(codex_home.home), "the Codex process should be running before the kill"
    start = len(lb.events)
    await lb.send("kill", session=key)
    await lb.session_event(key, "killed", start=start)
    assert await processes_left(codex_home.home) == []


async def test_long_markdown_answer_is_exact(lb, key, codex_home, mock) -> None:
    mock.push({"label": "md", "text": LONG_MARKDOWN, "chunk": 40, "delay": 0.005})
    await lb.create(create_cmd(key, codex_home, mock))
    start = len(lb.events)
    end = await lb.turn(key, "Write a long markdown report.")
    assert end["event"] == "complete", end
    assert end["content"] == LONG_MARKDOWN
    replaces = lb.since(key, start, "replace")
    assert replaces and replaces[-1]["text"] == LONG_MARKDOWN


async def _approval_turn(lb, key: str, h: CodexHome, mock, digit: str) -> tuple[dict, dict]:
    mock.push(*shell_approval_script("touch created_by_codex.txt && echo hi-from-shell"))
    await lb.create(create_cmd(key, h, mock))
    start = len(lb.events)
    await lb.send("send", session=key, content="Please create a file with a shell command.")
    q = await lb.session_event(key, "question", start=start, timeout=90)
    assert q["kind"] == "permission"
    labels = [o["label"] for o in q["options"]]
    assert labels[0] == "Yes, proceed (y)" and labels[-1] == "No, and tell Codex what to do differently (esc)"
    assert q["detail"]["command"] == "touch created_by_codex.txt && echo hi-from-shell"
    await lb.send("answer", session=key, question_id=q["question_id"], digit=digit)
    sent = await lb.session_event(key, "answer_sent", start=start)
    assert (sent["question_id"], sent["digit"]) == (q["question_id"], digit)
    end = await lb.session_event(key, ("complete", "interrupted", "turn_error"), start=start, timeout=90)
    closed = lb.since(key, start, "question_closed")
    assert [c["question_id"] for c in closed] == [q["question_id"]]
    return end, {"start": start}


async def test_approval_answered_yes_runs_the_command(lb, key, codex_home, mock) -> None:
    end, ctx = await _approval_turn(lb, key, codex_home, mock, "1")
    assert end["event"] == "complete", end
    assert end["content"] == "Done: the file was created."
    assert (codex_home.cwd / "created_by_codex.txt").exists()
    uses = lb.since(key, ctx["start"], "tool_use")
    results = lb.since(key, ctx["start"], "tool_result")
    assert uses and uses[0]["name"] == "exec" and "exec_command" in uses[0]["input"]["input"]
    assert (
        results
        and results[0]["tool_use_id"] == uses[0]["tool_use_id"]
        and "hi-from-shell" in results[0]["content"]
    )
    outs = tool_outputs(mock.main_requests()[-1]["body"])
    assert outs and "hi-from-shell" in output_text(outs[-1])


async def test_approval_answered_no_interrupts_the_turn(lb, key, codex_home, mock) -> None:
    end, _ = await _approval_turn(lb, key, codex_home, mock, "3")
    assert end["event"] == "interrupted", end
    assert not (codex_home.cwd / "created_by_codex.txt").exists()
    assert len(mock.main_requests()) == 1  # a rejected approval ends the turn: no follow-up request
    mock.set_script([{"label": "next", "text": "Still here."}])  # the unused follow-up entry is dropped
    after = await lb.turn(key, "Are you there?")
    assert after["event"] == "complete" and after["content"] == "Still here."


async def test_interrupt_mid_stream_and_before_first_token(lb, key, codex_home, mock) -> None:
    words = " ".join(f"word{i}" for i in range(400))
    mock.push(
        {"label": "slow", "text": words, "chunk": 6, "delay": 0.05},
        {"label": "hang", "text": "never shown", "first_delay": 60},
        {"label": "ok", "text": "Back to normal."},
    )
    await lb.create(create_cmd(key, codex_home, mock))
    # mid-stream: once some of the answer is on screen
    start = len(lb.events)
    await lb.send("send", session=key, content="first slow answer please")
    await lb.session_event(key, "replace", start=start, timeout=60)
    await lb.send("interrupt", session=key)
    end = await lb.session_event(key, ("complete", "interrupted", "turn_error"), start=start)
    assert end["event"] == "interrupted", end
    # before the first token: the request is in flight, nothing streamed yet
    start = len(lb.events)
    await lb.send("send", session=key, content="no token yet")
    await asyncio.get_running_loop().run_in_executor(None, lambda: mock.wait_for_requests(2, timeout=60))
    await lb.session_event(key, "state", start=start, to="thinking")
    await lb.send("interrupt", session=key)
    end = await lb.session_event(key, ("complete", "interrupted", "turn_error"), start=start)
    assert end["event"] == "interrupted", end
    assert end["content"] == ""
    after = await lb.turn(key, "and now a normal one")
    assert after["event"] == "complete" and after["content"] == "Back to normal."


async def test_http_500_is_turn_error_then_a_normal_turn(lb, key, codex_home, mock) -> None:
    mock.push({"label": "e500", "status": 500, "persistent": True})
    await lb.create(create_cmd(key, codex_home, mock))
    end = await lb.turn(key, "trigger a server error", timeout=120)
    assert end["event"] == "turn_error", end
    assert end["kind"] == "api_error" and end["message"]
    mock.set_script([{"label": "ok", "text": "Recovered fine."}])
    after = await lb.turn(key, "try again")
    assert after["event"] == "complete" and after["content"] == "Recovered fine."


async def test_kill_store_resume_then_create_resumes(lb, key, codex_home, mock) -> None:
    mock.push({"label": "one", "text": "Noted: 42."}, {"label": "two", "text": "It was 42."})
    await lb.create(create_cmd(key, codex_home, mock))
    first = await lb.turn(key, "Remember the number 42.")
    assert first["event"] == "complete"
    start = len(lb.events)
    await lb.send("kill", session=key, store_resume=True)
    await lb.session_event(key, "killed", start=start)
    ready = await lb.create(create_cmd(key, codex_home, mock))
    assert ready["resumed"] is True
    second = await lb.turn(key, "Which number did I ask you to remember?")
    assert second["event"] == "complete" and second["content"] == "It was 42."
    history = user_texts(mock.main_requests()[-1]["body"])
    assert history[-2:] == ["Remember the number 42.", "Which number did I ask you to remember?"]


async def test_two_sessions_in_one_home_at_once(lb, key, tmp_path, mock) -> None:
    h = make_home(tmp_path)
    other = h.home / "other"
    other.mkdir()
    h2 = CodexHome(h.home, other)
    mock.push(
        {"when": "alpha", "text": "Answer for alpha.", "delay": 0.03, "chunk": 4},
        {"when": "beta", "text": "Answer for beta.", "delay": 0.03, "chunk": 4},
    )
    k1, k2 = f"{key}-a", f"{key}-b"
    await asyncio.gather(lb.create(create_cmd(k1, h, mock)), lb.create(create_cmd(k2, h2, mock)))
    e1, e2 = await asyncio.gather(lb.turn(k1, "question alpha"), lb.turn(k2, "question beta"))
    assert (e1["event"], e1["content"]) == ("complete", "Answer for alpha.")
    assert (e2["event"], e2["content"]) == ("complete", "Answer for beta.")


async def test_trust_dialog_is_answered_and_login_screen_is_an_error(lb, key, codex_home, mock) -> None:
    mock.push({"label": "q", "text": "Trusted and ready."})
    start = len(lb.events)
    await lb.create(create_cmd(key, codex_home, mock, trust=False))
    dismissed = lb.since(key, start, "dialog_dismissed")
    assert [d["dialog"] for d in dismissed] == ["trust"]
    end = await lb.turn(key, "hello")
    assert end["event"] == "complete" and end["content"] == "Trusted and ready."
    # preapprove trusts the cwd for this run through `-c` (no dialog), nothing is saved in config.toml
    fresh = make_home(codex_home.home.parent / "fresh")
    start = len(lb.events)
    await lb.create(create_cmd(f"{key}-pre", fresh, mock, trust=True))
    assert lb.since(f"{key}-pre", start, "dialog_dismissed") == []
    config = fresh.codex_home / "config.toml"
    assert not config.exists() or str(fresh.cwd) not in config.read_text()
    # no provider and no auth.json: Codex opens its login screen; create fails with how to log in, not a hang
    bare = make_home(codex_home.home.parent / "bare")
    start = len(lb.events)
    await lb.command(
        {
            "cmd": "create",
            "session": f"{key}-login",
            "cli": "codex",
            "working_dir": str(bare.cwd),
            "env": {"HOME": str(bare.home)},
        }
    )
    err = await lb.session_event(f"{key}-login", "error", start=start, timeout=90)
    assert "codex login" in err["message"]
    assert await processes_left(bare.home) == []


async def test_kill_during_a_running_command_leaves_no_process(lb, key, codex_home, mock) -> None:
    """A command Codex started (its unified exec keeps it running in the background) dies with the session."""
    js = (
        'const r = await tools.exec_command({cmd: "sleep 171", yield_time_ms: 500, '
        'sandbox_permissions: "require_escalated", justification: "Wait a while"});\ntext(r);'
    )
    mock.push(
        {"label": "call", "items": [{"type": "custom_tool_call", "name": "exec", "input": js}]},
        {"label": "after", "text": "Started it.", "first_delay": 30},
    )
    await lb.create(create_cmd(key, codex_home, mock))
    start = len(lb.events)
    await lb.send("send", session=key, content="Run a long command.")
    q = await lb.session_event(key, "question", start=start, timeout=90)
    await lb.send("answer", session=key, question_id=q["question_id"], digit="1")
    for _ in range(100):
        if any(b"sleep\x00171" in _cmdline(p) for p in processes_with_home(codex_home.home)):
            break
        await asyncio.sleep(0.1)
    assert any(b"sleep\x00171" in _cmdline(p) for p in processes_with_home(codex_home.home))
    start = len(lb.events)
    await lb.send("kill", session=key)
    await lb.session_event(key, "killed", start=start)
    assert [_cmdline(p) for p in await processes_left(codex_home.home)] == []


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read()
    except OSError:
        return b""


async def test_command_line_create_and_send(lb, key, codex_home, mock, daemon) -> None:
    """`litbridge create --cli codex` + `litbridge send` (the README's quick start) against the real binary."""
    mock.push({"label": "cli", "text": "Codex answers from the command line."})
    lb.created.append(key)  # killed at the end by the fixture's client
    cmd = create_cmd(key, codex_home, mock)
    flags = [f"--arg={a}" for a in cmd["args"]] + [f"--env={k}={v}" for k, v in cmd["env"].items()]

    async def run(*args: str) -> tuple[int, str]:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "litbridge",
            *args,
            "--socket",
            daemon.socket,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        out, _ = await asyncio.wait_for(proc.communicate(), 180)
        return proc.returncode or 0, out.decode()

    rc, out = await run(
        "create", key, "--cli", "codex", "--cwd", str(codex_home.cwd), "--opt=preapprove=true", *flags
    )
    assert rc == 0, out
    assert f"{key}: ready" in out
    rc, out = await run("send", key, "Say something from the shell", "--json")
    assert rc == 0, out
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    ends = [
        (e["event"], e.get("content"))
        for e in events
        if e["event"] in ("complete", "interrupted", "turn_error")
    ]
    assert ends == [("complete", "Codex answers from the command line.")]
    assert mock.main_requests()[-1]["last_user"] == "Say something from the shell"
