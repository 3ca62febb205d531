"""RiftDriver inside a real `Session` (no socket): the fake `rift --serve` on pipes, checked through the events the
session emits — startup, Q&A, tools, asks, reviews, cancel, death mid-turn, startup failure, kill + resume."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from litbridge.drivers import get_driver
from litbridge.drivers.base import DriverError
from litbridge.drivers.rift import RiftDriver
from litbridge.session import Session, SessionCommandError

TIMEOUT = 30.0


def read(path: str | Path) -> str:
    return Path(path).read_text()


class Harness:
    def __init__(self, key: str, options: dict[str, Any]) -> None:
        self.events: list[dict] = []
        self.session = Session(key, {"session": key, "cli": "rift", **options}, self.events.append)

    async def wait(self, name: str, start: int = 0, **match: Any) -> dict:
        """The first `name` event at index >= start matching `match` (polls; generous timeout)."""
        deadline = asyncio.get_running_loop().time() + TIMEOUT
        while True:
            for ev in self.events[start:]:
                if ev["event"] == name and all(ev.get(k) == v for k, v in match.items()):
                    return ev
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"no {name} {match}; got {[e['event'] for e in self.events]}")
            await asyncio.sleep(0.01)

    def names(self, start: int = 0) -> list[str]:
        return [e["event"] for e in self.events[start:]]

    def turn_events(self, turn_id: str) -> list[dict]:
        return [e for e in self.events if e.get("turn_id") == turn_id]

    async def start(self) -> dict:
        self.session.spawn()
        self.session.start()
        return await self.wait("ready")

    async def turn(self, text: str) -> tuple[str, dict]:
        mark = len(self.events)
        self.session.send(text)
        turn_id = (await self.wait("accepted", mark))["turn_id"]
        end = await self.end_of(turn_id)
        return turn_id, end

    async def end_of(self, turn_id: str) -> dict:
        deadline = asyncio.get_running_loop().time() + TIMEOUT
        while True:
            for ev in self.events:
                if ev.get("turn_id") == turn_id and ev["event"] in ("complete", "interrupted", "turn_error"):
                    return ev
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"turn {turn_id} never ended; got {self.names()}")
            await asyncio.sleep(0.01)


@pytest_asyncio.fixture
async def make(rift_env, project):
    made: list[Harness] = []

    def _make(key: str = "r1", **options: Any) -> Harness:
        env = {**rift_env, **options.pop("env", {})}
        h = Harness(key, {"working_dir": str(project), "env": env, **options})
        made.append(h)
        return h

    yield _make
    for h in made:
        if not h.session.dead:
            await h.session.kill()


def test_registry_maps_rift_to_the_driver():
    assert get_driver("rift") is RiftDriver
    assert get_driver("/usr/local/bin/rift") is RiftDriver


def test_launch_argv_and_env():
    class H:
        pass

    d = RiftDriver(H(), {"model": "qwen3:8b", "args": ["--num-ctx", "8192"], "resume": "/s/1.json"})  # type: ignore[arg-type]
    spec = d.launch()
    assert spec.argv == [
        "rift",
        "--serve",
        "--model",
        "qwen3:8b",
        "--resume",
        "/s/1.json",
        "--num-ctx",
        "8192",
    ]
    assert spec.transport == "pipes" and spec.env["RIFT_NO_UPDATE_CHECK"] == "1"
    assert RiftDriver(H(), {}).launch().argv == ["rift", "--serve"]  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_startup_sends_hello_and_reports_model(make):
    h = make(model="llama3.1:8b", preapprove=True)
    ready = await h.start()
    assert ready["model"] == "llama3.1:8b" and ready["resumed"] is False
    await asyncio.sleep(0.2)
    info = h.session.info()
    assert info["rift"]["approve"] is False  # hello{approve:false} was acked by capabilities
    assert info["cli_version"] == "2.9.0" and info["transcript_path"].endswith(".json")
    dump = h.session.dump()
    assert "rift 2.9.0 · llama3.1:8b" in dump["capture"] and dump["driver"] == "rift"


@pytest.mark.asyncio
async def test_qa_turn(make):
    h = make()
    await h.start()
    turn_id, end = await h.turn("What is a river?")
    assert end["event"] == "complete" and end["content"] == "You said: What is a river?"
    assert end["usage"]["output_tokens"] > 0 and end["source"] == "transcript"
    replaces = [e["text"] for e in h.turn_events(turn_id) if e["event"] == "replace"]
    assert replaces and replaces[-1] == end["content"]
    states = [(e["from"], e["to"]) for e in h.events if e["event"] == "state"]
    assert ("thinking", "responding") in states and states[-1][1] == "idle"
    assert "You said: What is a river?" in h.session.dump()["capture"]


@pytest.mark.asyncio
async def test_sends_while_busy_are_queued_fifo(make):
    h = make()
    await h.start()
    for text in ("one", "two", "three"):
        h.session.send(text)
    accepted = [e for e in h.events if e["event"] == "accepted"]
    assert [a["queued"] for a in accepted] == [False, True, True]
    ends = [await h.end_of(a["turn_id"]) for a in accepted]
    assert [e["content"] for e in ends] == ["You said: one", "You said: two", "You said: three"]
    assert not any(e["event"] == "error" for e in h.events)


@pytest.mark.asyncio
async def test_empty_prompt_is_rejected_not_sent(make):
    h = make()
    await h.start()
    with pytest.raises(DriverError) as e:
        h.session.driver.validate_send("  \n")
    assert e.value.code == "bad_field"
    written: list[bytes] = []
    real_write = h.session.child.write
    h.session.child.write = lambda data: (written.append(data), real_write(data))[1]  # type: ignore[method-assign]
    mark = len(h.events)
    with pytest.raises(SessionCommandError) as rejected:  # the daemon turns this into error{code:bad_field}
        h.session.send("   ")
    assert rejected.value.code == "bad_field" and "empty" in rejected.value.message
    assert written == [] and h.names(mark) == []  # nothing sent to rift, no accepted, no turn
    _, end = await h.turn("still alive?")  # and the session is not wedged
    assert end["event"] == "complete"
    assert any(b'"still alive?"' in w for w in written)  # the spy does see what reaches rift


@pytest.mark.asyncio
async def test_tool_turn_with_ask_answered(make, project):
    h = make()
    await h.start()
    mark = len(h.events)
    h.session.send("[bash:echo hi > out.txt]")
    q = await h.wait("question", mark)
    assert q["kind"] == "permission" and q["text"] == "Allow bash: echo hi > out.txt"
    assert q["options"][0]["label"] == "allow once"
    assert h.session.state == "dialog"
    assert (await h.wait("tool_use", mark))["input"] == {"command": "echo hi > out.txt"}
    await h.session.answer(q["question_id"], "1", None, None)
    closed = await h.wait("question_closed", mark)
    assert closed == {**closed, "question_id": q["question_id"], "reason": "answered"}
    turn_id = q.get("turn_id") or h.session.turn_id
    end = await h.end_of(turn_id)
    assert end["event"] == "complete" and end["content"] == "Running the command.\n\nDone:"
    result = await h.wait("tool_result", mark)
    assert (
        result["is_error"] is False
        and result["tool_use_id"] == (await h.wait("tool_use", mark))["tool_use_id"]
    )
    assert (project / "out.txt").read_text() == "hi\n"


@pytest.mark.asyncio
async def test_free_text_ask_answered_with_text(make):
    h = make()
    await h.start()
    mark = len(h.events)
    h.session.send("[ask:What is your name?]")
    q = await h.wait("question", mark)
    assert q["kind"] == "text" and q["options"] == []
    await h.session.answer(None, None, None, "Ada")
    end = await h.wait("complete", mark)
    assert end["content"].endswith("Done: Ada")


@pytest.mark.asyncio
async def test_edit_review_accepted(make, project):
    h = make(edit_review=True)
    await h.start()
    mark = len(h.events)
    h.session.send("[write:notes.md:hello world]")
    q = await h.wait("question", mark)
    assert [o["label"] for o in q["options"]] == ["apply", "reject"] and q["detail"]["new"] == "hello world"
    await h.session.answer(q["question_id"], None, "apply", None)
    end = await h.wait("complete", mark)
    assert (project / "notes.md").read_text() == "hello world" and "wrote 1 lines" in end["content"]


@pytest.mark.asyncio
async def test_edit_review_rejected_denies_the_write(make, project):
    h = make(edit_review=True)
    await h.start()
    mark = len(h.events)
    h.session.send("[write:notes.md:nope]")
    q = await h.wait("question", mark)
    await h.session.answer(q["question_id"], "2", None, None)
    result = await h.wait("tool_result", mark)
    assert result["is_error"] is True and "DENIED" in result["content"]
    await h.wait("complete", mark)
    assert not (project / "notes.md").exists()


@pytest.mark.asyncio
async def test_interrupt_ends_the_turn_interrupted(make):
    h = make()
    await h.start()
    mark = len(h.events)
    h.session.send("[long]")
    await h.wait("replace", mark)
    h.session.interrupt()
    end = await h.wait("interrupted", mark)
    assert end["content"].startswith("word0")
    assert not any(e["event"] in ("complete", "turn_error") for e in h.events[mark:])
    _, end = await h.turn("after the cancel")
    assert end["event"] == "complete"


@pytest.mark.asyncio
async def test_interrupt_with_open_ask_orphans_the_question(make):
    h = make()
    await h.start()
    mark = len(h.events)
    h.session.send("[ask:Name?]")
    q = await h.wait("question", mark)
    h.session.interrupt()
    await h.wait("interrupted", mark)
    assert (await h.wait("question_closed", mark))["reason"] == "orphaned"
    assert h.events[mark:].count({**q}) == 1
    assert h.session.state == "idle"


@pytest.mark.asyncio
async def test_error_turn_is_turn_error(make):
    h = make()
    await h.start()
    _, end = await h.turn("[error]")
    assert end["event"] == "turn_error" and end["kind"] == "api_error" and "500" in end["message"]


@pytest.mark.asyncio
async def test_rift_dying_mid_turn(make):
    h = make()
    await h.start()
    mark = len(h.events)
    h.session.send("[crash]")
    end = await h.wait("turn_error", mark)
    assert end["kind"] == "cli_exited" and "101" in end["message"]
    exited = await h.wait("exited", mark)
    assert exited["exit_code"] == 101 and "panicked" in exited["stderr_tail"]
    assert h.session.state == "dead"
    assert h.names(mark).count("turn_error") == 1


@pytest.mark.asyncio
async def test_startup_failure_reports_stderr(make):
    h = make(env={"FAKE_RIFT_FAIL": "1"})
    h.session.spawn()
    h.session.start()
    err = await h.wait("error")
    assert err["code"] == "spawn_failed" and "cannot reach Ollama" in err["message"]
    assert "ready" not in h.names()


@pytest.mark.asyncio
async def test_kill_store_resume_then_resume(make, rift_home):
    h = make()
    await h.start()
    await h.turn("my word is banana")
    _, token = await h.session.kill(store_resume=True)
    assert token is not None and token.startswith(str(rift_home))
    saved = json.loads(read(token))
    assert saved["messages"][0]["content"] == "my word is banana"
    h2 = make(resume=token)
    ready = await h2.start()
    assert ready["resumed"] is True
    _, end = await h2.turn("[recall]")
    assert "banana" in end["content"]
    await asyncio.sleep(0.1)
    assert h2.session.info()["rift"]["history_messages"] == 2
    assert "resumed: 2 earlier message(s)" in h2.session.dump()["capture"]


@pytest.mark.asyncio
async def test_input_slash_commands_map_to_rift_controls(make):
    h = make()
    await h.start()
    h.session.input("/model llama3.1:8b")
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while h.session.info()["model"] != "llama3.1:8b":
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.02)
    h.session.input("/approve off")
    while h.session.info()["rift"]["approve"] is not False:
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.02)
    assert "model: llama3.1:8b" in h.session.dump()["capture"]


@pytest.mark.asyncio
async def test_startup_timeout_without_ready(make):
    h = make(env={"FAKE_RIFT_HANG": "1"}, startup_timeout=0.5)
    h.session.spawn()
    h.session.start()
    err = await h.wait("error")
    assert err["code"] == "spawn_failed" and "no `ready` within 0.5s" in err["message"]
    assert "approval:" in err["message"]  # the stderr tail rides along


@pytest.mark.asyncio
async def test_kill_mid_turn_keeps_the_interrupted_turn_for_resume(make):
    h = make()
    await h.start()
    mark = len(h.events)
    h.session.send("keep this [long]")
    await h.wait("replace", mark)
    _, token = await h.session.kill(store_resume=True)
    end = await h.wait("interrupted", mark)  # the driver cancelled the turn before the group was signalled
    assert end["content"].startswith("word0")
    saved = json.loads(read(token))
    assert saved["messages"][0]["content"] == "keep this [long]"
    h2 = make(resume=token)
    await h2.start()
    _, end = await h2.turn("[recall]")
    assert end["content"] == "Your first message was: keep this [long]"


@pytest.mark.asyncio
async def test_realistic_speed_stream_is_coalesced_into_replaces(make):
    h = make(env={"FAKE_RIFT_SPEED": "1"})
    await h.start()
    text = "Rivers carve valleys over thousands of years and carry sediment to the sea"
    turn_id, end = await h.turn(text)
    assert end["event"] == "complete" and end["content"] == "You said: " + text
    replaces = [e["text"] for e in h.turn_events(turn_id) if e["event"] == "replace"]
    assert replaces and replaces[-1].strip() == end["content"]
    assert all(
        b.startswith(a.rstrip()) for a, b in itertools.pairwise(replaces)
    )  # each replace extends the last
    assert len(replaces) <= len(text.split()) + 2  # never more replaces than content deltas


@pytest.mark.asyncio
async def test_input_prompt_is_unobserved_but_gates_queued_sends(make):
    h = make()
    await h.start()
    mark = len(h.events)
    h.session.input("[long]")
    await asyncio.sleep(0.1)
    h.session.send("after input")
    accepted = await h.wait("accepted", mark)
    assert accepted["queued"] is True  # rift is busy with the input's turn
    h.session.keystroke(["Esc"])  # no litbridge turn yet: Esc is rift's cancel
    end = await h.end_of(accepted["turn_id"])
    assert end["event"] == "complete" and end["content"] == "You said: after input"
    assert not any(e["event"] in ("interrupted", "turn_error") for e in h.events[mark:])
    assert "word0" in h.session.dump()["capture"]


@pytest.mark.asyncio
async def test_typed_keys_form_a_line_submitted_on_enter(make):
    h = make()
    await h.start()
    for chunk in (b"hellx", b"\x7f", b"\x1b[A", "o wörld".encode(), b"\r"):
        h.session.write_raw(chunk)  # attach typing reaches driver.keys for pipes drivers
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while "You said: hello wörld" not in h.session.dump()["capture"]:
        assert asyncio.get_running_loop().time() < deadline, h.session.dump()["capture"]
        await asyncio.sleep(0.02)
    capture = h.session.dump()["capture"]
    assert "❯ hello wörld" in capture and capture.count("❯ hello wörld") == 1
    assert "[A" not in capture


@pytest.mark.asyncio
async def test_kill_right_after_done_waits_for_the_save(make):
    h = make(env={"FAKE_RIFT_SAVE_DELAY": "0.5"})
    await h.start()
    await h.turn("saved before the kill")  # `complete` arrives before rift has saved the session file
    _, token = await h.session.kill(store_resume=True)
    saved = json.loads(read(token))
    assert saved["messages"][0]["content"] == "saved before the kill"
