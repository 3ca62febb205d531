"""A browser (or any local process holding a credential) that floods the web view's WebSockets and never reads
a reply must not grow the daemon: inbound WebSocket bytes are bounded like the Unix socket's (the sender blocks
instead), on `/ws/events` and on a controlling `/ws/attach`, and a frame over the line limit is refused."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import shutil
import struct
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import WSCloseCode, WSMsgType
from web_helpers import WebDaemon, start_web_daemon

from litbridge.protocol.spec import MAX_LINE

FLOOD_BYTES = 300 * 1024 * 1024
MESSAGE = (b'{"cmd":"ping"}\n' * 60_000)[:-1]  # ~900 KB: one frame under the 1 MiB line limit
LIMIT_MIB = 32
SLEEP = {"cli": "sleep", "args": ["600"], "working_dir": "/tmp", "quiescence": 0.3}  # reads nothing
CAT = {
    "cli": "cat",
    "working_dir": "/tmp",
    "quiescence": 0.3,
}  # a CLI that reads all it is typed and echoes it


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


async def flood(url: str, origin: str, credential: str) -> int:
    """Send up to FLOOD_BYTES of pings without reading; stop when the server stops taking them (a send that
    has not gone out for 5 s: the backpressure this test wants) or closes. Returns the bytes sent."""
    sent = 0
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(url, origin=origin, max_msg_size=0) as ws:
            await ws.send_str(json.dumps({"auth": credential}))
            while sent < FLOOD_BYTES and not ws.closed:
                try:
                    await asyncio.wait_for(ws.send_bytes(MESSAGE), 5)
                except (asyncio.TimeoutError, ConnectionError, RuntimeError):
                    break
                sent += len(MESSAGE)
    return sent


def peak_growth(pid: int, run: Callable[[], int]) -> tuple[int, float, float]:
    """(what `run` returned, RSS before, peak RSS while it ran and 1 s after), sampling every 0.1 s."""
    base = peak = rss_mib(pid)
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, rss_mib(pid))
            time.sleep(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        result = run()
        time.sleep(1.0)  # what the daemon read before the stop is in its memory by now
    finally:
        done.set()
        sampler.join()
    return result, base, peak


@pytest.fixture
def fresh_web_daemon() -> Iterator[WebDaemon]:
    """A daemon of its own: its memory is measured."""
    directory = tempfile.mkdtemp(prefix="lbw-")
    wd = start_web_daemon(directory)
    try:
        yield wd
    finally:
        assert wd.proc.stop() == 0, wd.proc.log()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.parametrize(
    ("path", "cli"),
    [
        ("ws/events", None),
        ("ws/attach?session=flood&control=1", CAT),
        ("ws/attach?session=flood&control=1", SLEEP),
    ],
    ids=["events", "attach-cat", "attach-not-reading"],
)
def test_a_websocket_flood_that_never_reads_does_not_grow_the_daemon(
    fresh_web_daemon: WebDaemon, path: str, cli: dict[str, object] | None
) -> None:
    """300 MB of ~900 KB frames, nothing read back: on `/ws/events` every frame is a batch of commands whose
    replies pile up; on a controlling `/ws/attach` every byte is typed into `cat`, which echoes it twice (the
    terminal's echo and cat's own output) into a terminal view that is never read, or into `sleep`, which
    reads none of it (the attach is then detached, with no error in the daemon's log)."""
    wd = fresh_web_daemon
    if cli is not None:
        assert wd.request({"cmd": "create", "session": "flood", **cli}, "ready")["event"] == "ready"
    credential = wd.credential()
    sent, base, peak = peak_growth(
        wd.proc.proc.pid, lambda: asyncio.run(flood(wd.url + path, wd.origin, credential))
    )
    grown = peak - base
    print(
        f"web flood on /{path}: sent {sent / 2**20:.0f} MiB, RSS {base:.1f} -> peak {peak:.1f} MiB (+{grown:.1f})"
    )
    assert grown <= LIMIT_MIB, f"the daemon grew {grown:.0f} MiB while {sent / 2**20:.0f} MiB were sent"
    assert wd.request({"cmd": "ping"}, "pong")["event"] == "pong"  # and it still serves
    if cli is not None:
        listed = wd.request({"cmd": "list"}, "sessions")
        assert [s["name"] for s in listed["sessions"] if s.get("alive", True)] == ["flood"], listed
    assert "Traceback" not in wd.proc.log() and " ERROR " not in wd.proc.log(), wd.proc.log()[-3000:]


async def oversized_frame(url: str, origin: str, credential: str) -> int | None:
    """Authenticate, send one text frame a byte over MAX_LINE (a valid command padded), read what comes back
    until the server closes; the close code."""
    head, tail = '{"cmd":"ping","pad":"', '"}'
    frame = head + "x" * (MAX_LINE + 1 - len(head) - len(tail)) + tail
    assert len(frame.encode()) == MAX_LINE + 1
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(url, origin=origin, max_msg_size=0) as ws:
            await ws.send_str(json.dumps({"auth": credential}))
            await ws.send_str(frame)
            deadline = asyncio.get_running_loop().time() + 60
            while asyncio.get_running_loop().time() < deadline:
                msg = await ws.receive(timeout=60)
                if msg.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED, WSMsgType.ERROR):
                    break
            return ws.close_code


@pytest.mark.parametrize("path", ["ws/events", "ws/attach?session=big&control=1"], ids=["events", "attach"])
def test_a_frame_over_the_line_limit_is_refused_and_the_daemon_stays_up(
    fresh_web_daemon: WebDaemon, path: str
) -> None:
    """A frame longer than MAX_LINE (the Unix socket's line limit) is not read into memory: the WebSocket is
    closed with 1009 (message too big); the daemon and its other clients carry on."""
    wd = fresh_web_daemon
    if "attach" in path:
        assert wd.request({"cmd": "create", "session": "big", **CAT}, "ready")["event"] == "ready"
    code = asyncio.run(oversized_frame(wd.url + path, wd.origin, wd.credential()))
    assert code == WSCloseCode.MESSAGE_TOO_BIG, code
    assert wd.proc.proc.poll() is None
    assert wd.request({"cmd": "ping"}, "pong")["event"] == "pong"
    if "attach" in path:
        dump = wd.request({"cmd": "dump", "session": "big"}, "dump")
        assert dump["event"] == "dump" and "xxxxxxxx" not in json.dumps(dump), "the refused frame was typed"


def _client_frame(opcode: int, payload: bytes, length: int | None = None) -> bytes:
    """A masked client frame (RFC 6455 §5.2); `length` declares a longer payload than the bytes given."""
    mask = os.urandom(4)
    n = len(payload) if length is None else length
    head = bytes([0x80 | opcode])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack("!H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack("!Q", n)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


async def refused_while_sending(wd: WebDaemon, path: str) -> tuple[int | None, int]:
    """Declare a frame of 2 x MAX_LINE and send it all at once, reading meanwhile: (the close code read before
    the connection ended, bytes of the frame sent)."""
    host, port = wd.host_port.split(":")
    r, w = await asyncio.open_connection(host, int(port))
    key = base64.b64encode(os.urandom(16)).decode()
    w.write(
        f"GET /{path} HTTP/1.1\r\nHost: {wd.host_port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nOrigin: {wd.origin}\r\n\r\n".encode()
    )
    assert b" 101 " in await r.readuntil(b"\r\n\r\n")
    w.write(_client_frame(1, json.dumps({"auth": wd.credential()}).encode()))
    w.write(_client_frame(1, b"", length=2 * MAX_LINE))
    got = bytearray()

    async def read() -> None:
        with contextlib.suppress(ConnectionError):
            while data := await r.read(65536):
                got.extend(data)

    reading = asyncio.create_task(read())
    sent = 0
    with contextlib.suppress(ConnectionError):
        for _ in range(2):
            w.write(b"x" * MAX_LINE)
            await w.drain()
            sent += MAX_LINE
    await asyncio.wait_for(reading, 30)
    w.close()
    at = got.find(
        b"\x88"
    )  # the server's close frame (unmasked): FIN + opcode 8, then the length, then the code
    code = struct.unpack("!H", got[at + 2 : at + 4])[0] if at >= 0 and len(got) >= at + 4 else None
    return code, sent


@pytest.mark.parametrize("path", ["ws/events", "ws/attach?session=big&control=1"], ids=["events", "attach"])
def test_a_sender_still_sending_the_refused_frame_reads_why(fresh_web_daemon: WebDaemon, path: str) -> None:
    """The refused frame's bytes are usually still on their way when the server refuses it: closing the socket
    with them unread made the kernel reset the connection, and the reset could beat the close frame to the
    sender (about one time in ten here). The server half-closes and drops what still comes instead, so the
    sender always reads 1009, every time."""
    wd = fresh_web_daemon
    if "attach" in path:
        assert wd.request({"cmd": "create", "session": "big", **CAT}, "ready")["event"] == "ready"
    codes = [asyncio.run(refused_while_sending(wd, path))[0] for _ in range(40)]
    assert codes == [WSCloseCode.MESSAGE_TOO_BIG] * 40, codes
    assert wd.request({"cmd": "ping"}, "pong")["event"] == "pong"
