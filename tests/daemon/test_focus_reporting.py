"""Focus reporting (DECSET 1004) for unattended sessions: a CLI that enables it hears focus-out while no attach
controller is attached and focus-in while one is (Qwen Code, for one, rings the bell for an approval only after
its terminal reported focus loss). Over a real PTY child that reports, in hex, every byte it reads."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from litbridge import drivers
from litbridge.daemon.attach import AttachServer
from litbridge.drivers.base import Driver, LaunchSpec
from litbridge.session import Session

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="Unix PTY")

CHILD = r"""
import os, sys, termios, tty
tty.setraw(0)
if sys.argv[1] == "on":
    os.write(1, b"\x1b[?1004h")
os.write(1, b"READY\r\n")
while True:
    data = os.read(0, 1024)
    if not data:
        break
    os.write(1, b"GOT" + data.hex().encode() + b"\r\n")
"""
FOCUS_IN, FOCUS_OUT = b"1b5b49", b"1b5b4f"  # CSI I, CSI O as the child reports them


class Reporter(Driver):
    name = "focus-test"
    transport = "pty"

    def __init__(self, host: Any, options: dict[str, Any]) -> None:
        super().__init__(host, options)
        self.outputs = bytearray()

    def launch(self) -> LaunchSpec:
        return LaunchSpec([sys.executable, "-c", CHILD, self.options.get("focus", "on")])

    async def startup(self) -> dict[str, Any]:
        self.host.set_state("idle")
        return {"model": None, "resumed": False}

    async def submit(self, text: str) -> None:
        self.host.write(text.encode())

    def on_output(self, data: bytes) -> None:
        self.outputs += data


drivers.register("focus-test", Reporter)


async def until(cond: Any, timeout: float = 15.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        if loop.time() > end:
            raise TimeoutError("condition never became true")
        await asyncio.sleep(0.01)


async def session(focus: str = "on") -> tuple[Session, Reporter]:
    s = Session(
        "f", {"session": "f", "cli": "focus-test", "working_dir": "/tmp", "focus": focus}, lambda e: None
    )
    s.spawn()
    s.start(re="c")
    await until(lambda: s.ready and b"READY" in s.driver.outputs)  # type: ignore[attr-defined]
    assert isinstance(s.driver, Reporter)
    return s, s.driver


def reported(d: Reporter) -> list[bytes]:
    return [line[3:] for line in bytes(d.outputs).split(b"\r\n") if line.startswith(b"GOT")]


@pytest.mark.asyncio
async def test_unattended_cli_that_enables_focus_reporting_hears_focus_out_then_in_and_out() -> None:
    s, d = await session()
    try:
        await until(lambda: reported(d) == [FOCUS_OUT])  # nobody attached: unfocused, said at once
        s.set_focus(True)  # an attach controller came
        await until(lambda: reported(d) == [FOCUS_OUT, FOCUS_IN])
        s.set_focus(True)  # no change, nothing said
        s.set_focus(False)  # it went
        await until(lambda: reported(d) == [FOCUS_OUT, FOCUS_IN, FOCUS_OUT])
    finally:
        await s.kill()


@pytest.mark.asyncio
async def test_the_daemons_own_keys_are_followed_by_focus_out_again_while_unattended() -> None:
    """A CLI may take any key as the user being back (Qwen Code does): a send or an answer typed by the daemon
    into an unattended session is followed by focus-out; an attached controller's keys are not."""
    s, d = await session()
    try:
        await until(lambda: reported(d) == [FOCUS_OUT])
        s.write(b"a")
        s.write(b"b")
        await until(lambda: len(reported(d)) >= 3)
        await asyncio.sleep(0.5)  # one focus-out after the last key, not one per key
        assert b"".join(reported(d)) == FOCUS_OUT + b"61" + b"62" + FOCUS_OUT
        s.set_focus(True)
        s.write_raw(b"c")
        await asyncio.sleep(0.6)
        assert b"".join(reported(d)).endswith(FOCUS_IN + b"63")
    finally:
        await s.kill()


@pytest.mark.asyncio
async def test_a_cli_without_focus_reporting_hears_nothing() -> None:
    s, d = await session("off")
    try:
        s.set_focus(True)
        s.set_focus(False)
        s.write(b"x")
        await until(lambda: reported(d) == [b"78"])  # only what was typed
    finally:
        await s.kill()


class _Front:
    """The few things AttachServer reads of its daemon."""

    token = None

    def __init__(self, sessions: dict[str, Session]) -> None:
        self.sessions = sessions

    def peer_ok(self, writer: Any) -> bool:
        return True


@pytest.mark.asyncio
async def test_attach_controller_focuses_the_session_and_leaving_unfocuses_it(tmp_path: Path) -> None:
    s, d = await session()
    attach = AttachServer(_Front({"f": s}))  # type: ignore[arg-type]
    server = await asyncio.start_unix_server(attach.handle, str(tmp_path / "a.sock"))
    try:
        await until(lambda: reported(d) == [FOCUS_OUT])
        viewer_r, viewer_w = await asyncio.open_unix_connection(str(tmp_path / "a.sock"))
        viewer_w.write(b'{"session": "f", "control": false}\n')  # a watch-only viewer gives no focus
        await viewer_w.drain()
        r, w = await asyncio.open_unix_connection(str(tmp_path / "a.sock"))
        w.write(b"f\n")
        await w.drain()
        await until(lambda: reported(d) == [FOCUS_OUT, FOCUS_IN])
        assert s.focused
        w.close()
        await until(lambda: reported(d) == [FOCUS_OUT, FOCUS_IN, FOCUS_OUT])
        assert not s.focused
        viewer_w.close()
        del r, viewer_r
    finally:
        server.close()
        attach.close_all()
        await s.kill()
