"""`litbridge send` on a real terminal (ptyprocess): a question answered at the prompt, Ctrl-C interrupting."""

from __future__ import annotations

import asyncio
import json
import os
import sys

from _daemon import Daemon
from _pty import finish, read_until
from ptyprocess import PtyProcess

from litbridge.client import Client


def _send(daemon: Daemon, session: str, text: str) -> PtyProcess:
    argv = [sys.executable, "-m", "litbridge", "send", session, text, "--socket", daemon.socket]
    return PtyProcess.spawn(argv, dimensions=(50, 200), env={**os.environ, "COLUMNS": "200", "LINES": "50"})


def test_send_answers_a_question_typed_at_the_terminal(daemon: Daemon) -> None:
    assert daemon.cli("create", "tty-ask", "--cli", "rift").returncode == 0
    proc = _send(daemon, "tty-ask", "hi [ask:Pick a colour|red|blue]")
    buf = bytearray()
    try:
        read_until(proc, buf, b"answer> ")
        assert b"Pick a colour" in buf and b"2. blue" in buf
        proc.write(b"2\r")
        status = finish(proc, buf)
    finally:
        if proc.isalive():
            proc.terminate(force=True)
    assert status == 0, bytes(buf)
    assert b"question answered" in buf
    assert b"blue" in buf.split(b"question answered", 1)[1]


def test_ctrl_c_interrupts_the_turn(daemon: Daemon) -> None:
    py = ["--cli", sys.executable, "--arg=-q", "--arg=-u", "--arg=-i"]
    assert daemon.cli("create", "tty-intr", *py).returncode == 0
    proc = _send(
        daemon,
        "tty-intr",
        "[(print('tick', i, flush=True), __import__('time').sleep(0.05)) for i in range(10**6)]",
    )
    buf = bytearray()
    try:
        read_until(proc, buf, b"tick 3")
        proc.write(b"\x03")  # the terminal turns it into SIGINT for the foreground process
        status = finish(proc, buf)
    finally:
        if proc.isalive():
            proc.terminate(force=True)
    assert status == 130, bytes(buf[-1500:])
    assert b"interrupting" in buf and b"interrupted" in buf
    sessions = json.loads(daemon.cli("list", "--json").stdout)["sessions"]
    assert next(s for s in sessions if s["name"] == "tty-intr")["turn_id"] is None  # the turn really ended


def test_prompt_gives_way_when_the_question_is_answered_elsewhere(daemon: Daemon) -> None:
    assert daemon.cli("create", "tty-else", "--cli", "rift").returncode == 0
    proc = _send(daemon, "tty-else", "hi [ask:Pick a colour|red|blue]")
    buf = bytearray()
    try:
        read_until(proc, buf, b"answer> ")

        async def answer_elsewhere() -> None:
            async with Client.connect(socket=daemon.socket) as c:
                await c.answer("tty-else", option="red")

        asyncio.run(answer_elsewhere())
        status = finish(proc, buf)  # nothing typed at the prompt
    finally:
        if proc.isalive():
            proc.terminate(force=True)
    assert status == 0, bytes(buf[-1500:])
    assert b"red" in buf.split(b"answer> ", 1)[1]
