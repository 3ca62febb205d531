"""End-to-end: `python -m litbridge serve --socket PATH` driving the fake `rift --serve` (found on PATH as `rift`),
checked over the control socket with raw JSON lines and over the attach socket."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

TIMEOUT = 30.0


from lbd_helpers import start_daemon  # noqa: E402  (the one daemon-spawning helper)


class Wire:
    """A raw control-socket client: write commands, read events in order."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.seen: list[dict] = []
        self.n = 0

    async def cmd(self, cmd: str, **fields: Any) -> str:
        self.n += 1
        rid = f"c{self.n}"
        self.writer.write(json.dumps({"cmd": cmd, "id": rid, **fields}).encode() + b"\n")
        await self.writer.drain()
        return rid

    async def next(self) -> dict:
        line = await asyncio.wait_for(self.reader.readline(), TIMEOUT)
        assert line, f"daemon closed the connection; seen {[e['event'] for e in self.seen]}"
        ev = json.loads(line)
        self.seen.append(ev)
        return ev

    async def until(self, name: str, **match: Any) -> list[dict]:
        out = []
        while True:
            ev = await self.next()
            out.append(ev)
            if ev.get("event") == name and all(ev.get(k) == v for k, v in match.items()):
                return out
            assert not (ev.get("event") == "error" and name != "error"), ev

    async def end_of_turn(self, turn_id: str) -> tuple[list[dict], dict]:
        out = []
        while True:
            ev = await self.next()
            out.append(ev)
            if ev.get("turn_id") == turn_id and ev["event"] in ("complete", "interrupted", "turn_error"):
                return out, ev


@pytest.fixture
def daemon(tmp_path: Path, fake_rift_path: Path) -> Iterator[tuple[Path, Any]]:
    """(socket path, lbd DaemonProc): a daemon already listening, the fake rift first on its PATH."""
    sock = tmp_path / "run" / "lb.sock"
    sock.parent.mkdir()
    env = {
        "PATH": f"{fake_rift_path}{os.pathsep}{os.environ.get('PATH', '')}",
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
    }
    d = start_daemon(
        str(sock), env=env, log_path=str(tmp_path / "daemon.log")
    )  # stderr to a file, never a pipe
    yield sock, d
    d.stop()


@pytest_asyncio.fixture
async def wire(daemon: Any) -> AsyncIterator[Wire]:
    sock, _ = daemon
    reader, writer = await asyncio.open_unix_connection(str(sock), limit=4 * 1024 * 1024)
    w = Wire(reader, writer)
    hello = await w.next()
    assert hello["event"] == "monitor_ready" and "rift" in hello["clis"]
    yield w
    writer.close()


async def create(w: Wire, project: Path, home: Path, key: str = "rs", **extra: Any) -> dict:
    env = {"HOME": str(home), "FAKE_RIFT_SPEED": "0", **extra.pop("env", {})}
    rid = await w.cmd("create", session=key, cli="rift", working_dir=str(project), env=env, **extra)
    events = await w.until("ready")
    assert events[-1].get("re") == rid
    return events[-1]


async def send(w: Wire, text: str, key: str = "rs") -> str:
    await w.cmd("send", session=key, content=text)
    return (await w.until("accepted"))[-1]["turn_id"]


@pytest.mark.asyncio
async def test_qa_list_dump(wire: Wire, project: Path, rift_home: Path):
    ready = await create(wire, project, rift_home, model="qwen3:8b")
    assert ready["model"] == "qwen3:8b" and ready["resumed"] is False
    turn = await send(wire, "Hello rift")
    events, end = await wire.end_of_turn(turn)
    assert end["event"] == "complete" and end["content"] == "You said: Hello rift"
    assert [e["text"] for e in events if e["event"] == "replace"][-1].strip() == "You said: Hello rift"
    assert end["usage"]["output_tokens"] > 0
    await wire.cmd("list")
    item = next(s for s in (await wire.until("sessions"))[-1]["sessions"] if s["name"] == "rs")
    assert item["cli"] == "rift" and item["model"] == "qwen3:8b" and item["state"] == "idle"
    assert item["cli_version"] == "2.9.0" and item["rift"]["context"]["limit"] == 32768
    await wire.cmd("dump", session="rs")
    dump = (await wire.until("dump"))[-1]
    assert "❯ Hello rift" in dump["capture"] and "You said: Hello rift" in dump["capture"]
    assert dump["driver"] == "rift" and dump["transcript_path"].startswith(str(rift_home))


@pytest.mark.asyncio
async def test_tool_turn_with_ask_answered(wire: Wire, project: Path, rift_home: Path):
    await create(wire, project, rift_home)
    turn = await send(wire, "[bash:echo from-rift]")
    q = (await wire.until("question"))[-1]
    assert q["kind"] == "permission" and q["options"][0]["label"] == "allow once"
    await wire.cmd("answer", session="rs", question_id=q["question_id"], digit="1")
    events, end = await wire.end_of_turn(turn)
    names = [e["event"] for e in events]
    assert "answer_sent" in names and "question_closed" in names
    use = next(e for e in wire.seen if e["event"] == "tool_use")
    result = next(e for e in events if e["event"] == "tool_result")
    assert use["name"] == "bash" and use["input"] == {"command": "echo from-rift"}
    assert result["tool_use_id"] == use["tool_use_id"] and result["content"] == "from-rift"
    assert end["event"] == "complete" and end["content"].endswith("Done: from-rift")


@pytest.mark.asyncio
async def test_edit_review_accepted(wire: Wire, project: Path, rift_home: Path):
    await create(wire, project, rift_home, edit_review=True)
    turn = await send(wire, "[write:src/new.txt:fresh content]")
    q = (await wire.until("question"))[-1]
    assert [o["label"] for o in q["options"]] == ["apply", "reject"]
    await wire.cmd("answer", session="rs", question_id=q["question_id"], option="apply")
    _, end = await wire.end_of_turn(turn)
    assert end["event"] == "complete"
    assert (project / "src" / "new.txt").read_text() == "fresh content"


@pytest.mark.asyncio
async def test_interrupt_gives_interrupted_then_next_turn_works(wire: Wire, project: Path, rift_home: Path):
    await create(wire, project, rift_home)
    turn = await send(wire, "[long]")
    await wire.until("replace")
    await wire.cmd("interrupt", session="rs")
    _, end = await wire.end_of_turn(turn)
    assert end["event"] == "interrupted" and end["content"].startswith("word0")
    turn2 = await send(wire, "again")
    _, end2 = await wire.end_of_turn(turn2)
    assert end2["event"] == "complete" and end2["content"] == "You said: again"


@pytest.mark.asyncio
async def test_rift_dying_mid_turn(wire: Wire, project: Path, rift_home: Path):
    await create(wire, project, rift_home)
    turn = await send(wire, "[crash]")
    events, end = await wire.end_of_turn(turn)
    assert end["event"] == "turn_error" and end["kind"] == "cli_exited"
    exited = next((e for e in events if e["event"] == "exited"), None) or (await wire.until("exited"))[-1]
    assert exited["exit_code"] == 101 and "panicked" in exited["stderr_tail"]


@pytest.mark.asyncio
async def test_empty_send_never_hangs(wire: Wire, project: Path, rift_home: Path):
    await create(wire, project, rift_home)
    await wire.cmd("send", session="rs", content="  ")
    while True:
        ev = await wire.next()
        if ev["event"] == "error":
            assert ev["code"] == "bad_field"
            break
        if ev["event"] == "turn_error":
            assert "empty" in ev["message"]
            break
    turn = await send(wire, "fine")
    _, end = await wire.end_of_turn(turn)
    assert end["event"] == "complete"


@pytest.mark.asyncio
async def test_kill_store_resume_and_resume(wire: Wire, project: Path, rift_home: Path):
    await create(wire, project, rift_home)
    turn = await send(wire, "the secret is banana")
    await wire.end_of_turn(turn)
    await wire.cmd("kill", session="rs", store_resume=True)
    await wire.until("killed")
    ready = await create(wire, project, rift_home)
    assert ready["resumed"] is True and not ready.get("reused")
    turn = await send(wire, "[recall]")
    _, end = await wire.end_of_turn(turn)
    assert "the secret is banana" in end["content"]


@pytest.mark.asyncio
async def test_attach_paints_the_transcript(daemon: Any, wire: Wire, project: Path, rift_home: Path):
    await create(wire, project, rift_home)
    turn = await send(wire, "paint me")
    await wire.end_of_turn(turn)
    sock, _ = daemon
    reader, writer = await asyncio.open_unix_connection(str(sock) + ".attach")
    writer.write(b'{"session":"rs"}\n')
    await writer.drain()
    data = b""
    while b"You said: paint me" not in data:
        chunk = await asyncio.wait_for(reader.read(65536), TIMEOUT)
        assert chunk, data[-500:]
        data += chunk
    assert b"\x1b[2J" in data  # a full repaint first
    writer.write(b"typed in attach\r")  # the attacher types a line: it runs as a rift prompt
    await writer.drain()
    while b"You said: typed in attach" not in data:
        chunk = await asyncio.wait_for(reader.read(65536), TIMEOUT)
        assert chunk, data[-500:]
        data += chunk
    writer.close()
