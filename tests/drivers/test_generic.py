"""The generic driver end to end in-process (Session + real PTY): bash and python3 turns, scrolling,
ready on first settle, quiescence completion with source "screen", Ctrl-C interrupt."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest

from litbridge.drivers import get_driver
from litbridge.drivers.generic import GenericDriver
from litbridge.session import Session

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="Unix PTY")


class Recorder:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self._cond = asyncio.Condition()

    def __call__(self, ev: dict[str, Any]) -> None:
        self.events.append(ev)
        asyncio.get_running_loop().create_task(self._notify())

    async def _notify(self) -> None:
        async with self._cond:
            self._cond.notify_all()

    async def wait(self, name: str, timeout: float = 20, **match: Any) -> dict[str, Any]:
        def find() -> dict[str, Any] | None:
            for e in self.events:
                if e["event"] == name and all(e.get(k) == v for k, v in match.items()):
                    return e
            return None

        async with self._cond:
            await asyncio.wait_for(self._cond.wait_for(find), timeout)
        found = find()
        assert found is not None
        return found


def make(cli: str, args: list[str], rec: Recorder, **extra: Any) -> Session:
    opts = {"session": cli, "cli": cli, "args": args, "working_dir": "/tmp", "quiescence": 0.5, **extra}
    s = Session(cli, opts, rec)
    s.spawn()
    s.start(re="c1")
    return s


def test_unknown_cli_uses_generic() -> None:
    assert get_driver("bash") is GenericDriver
    assert get_driver("/usr/bin/python3") is GenericDriver


@pytest.mark.asyncio
async def test_bash_turns_and_scroll() -> None:
    rec = Recorder()
    s = make("bash", ["--norc", "--noprofile"], rec, env={"PS1": "$ ", "HISTFILE": "/dev/null"})
    try:
        ready = await rec.wait("ready")
        assert ready["re"] == "c1" and ready["model"] is None
        s.send("echo hi")
        done = await rec.wait("complete")
        assert done["content"] == "hi" and done["source"] == "screen"
        states = [(e["from"], e["to"]) for e in rec.events if e["event"] == "state"]
        assert ("starting", "idle") in states and ("idle", "thinking") in states and states[-1][1] == "idle"
        # more output than the screen holds: the tail of the text is still right
        s.send("seq 1 120")
        for _ in range(200):
            completes = [e for e in rec.events if e["event"] == "complete"]
            if len(completes) == 2:
                break
            await asyncio.sleep(0.05)
        text = completes[1]["content"]
        lines = text.splitlines()
        assert lines[-1] == "120" and lines == [str(n) for n in range(int(lines[0]), 121)]
    finally:
        await s.kill()


@pytest.mark.asyncio
async def test_python_repl_turn_and_interrupt() -> None:
    rec = Recorder()
    s = make("python3", ["-q", "-i"], rec)
    try:
        await rec.wait("ready")
        s.send("print(6*7)")
        done = await rec.wait("complete")
        assert done["content"] == "42"
        s.send("import time\nwhile True: print('tick'); time.sleep(0.1)\n")  # output keeps the turn open
        for _ in range(400):
            ticks = [e for e in rec.events if e["event"] == "replace" and "tick" in e["text"]]
            if ticks:
                break
            await asyncio.sleep(0.05)
        turn = ticks[0]["turn_id"]
        assert s.turn_id == turn
        s.interrupt(re="i1")
        ev = await rec.wait("interrupted", turn_id=turn)
        assert ev["re"] == "i1"
        for _ in range(200):  # let the REPL print its KeyboardInterrupt and prompt before the next send
            if "KeyboardInterrupt" in "\n".join(s.terminal.display) and s.state == "idle":
                break
            await asyncio.sleep(0.05)
        s.send("print('after')")
        done = await rec.wait("complete", content="after")
        assert done["turn_id"] != turn
        assert sum(1 for e in rec.events if e.get("turn_id") == turn and e["event"] in ("complete", "interrupted")) == 1
    finally:
        await s.kill()


@pytest.mark.asyncio
async def test_ready_when_program_prints_nothing() -> None:
    rec = Recorder()
    s = make("cat", [], rec)
    try:
        ready = await rec.wait("ready")
        assert ready["state"] == "starting"
        s.send("hello")
        done = await rec.wait("complete")
        assert done["content"] == "hello", "cat echoes the line once it is entered"
    finally:
        await s.kill()
