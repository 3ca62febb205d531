"""A browser (or any local process holding a credential) that floods `/ws/events` and never reads a reply must
not grow the daemon: inbound WebSocket bytes are bounded like the Unix socket's (the sender blocks instead)."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import threading
import time
from pathlib import Path

import aiohttp
from web_helpers import start_web_daemon

FLOOD_BYTES = 300 * 1024 * 1024
MESSAGE = (b'{"cmd":"ping"}\n' * 60_000)[:-1]  # ~900 KB: one frame under the 1 MiB line limit
LIMIT_MIB = 32


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


async def flood(url: str, origin: str, credential: str) -> int:
    """Send up to FLOOD_BYTES of pings without reading; stop when the server stops taking them (a send that
    has not gone out for 15 s: the backpressure this test wants) or closes. Returns the bytes sent."""
    sent = 0
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(url + "ws/events", origin=origin, max_msg_size=0) as ws:
            await ws.send_str(json.dumps({"auth": credential}))
            while sent < FLOOD_BYTES and not ws.closed:
                try:
                    await asyncio.wait_for(ws.send_bytes(MESSAGE), 15)
                except (asyncio.TimeoutError, ConnectionError, RuntimeError):
                    break
                sent += len(MESSAGE)
    return sent


def test_a_websocket_flood_that_never_reads_does_not_grow_the_daemon() -> None:
    directory = tempfile.mkdtemp(prefix="lbw-")
    wd = start_web_daemon(directory)
    try:
        credential = wd.credential()
        pid = wd.proc.proc.pid
        base = rss_mib(pid)
        peak = base
        done = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not done.is_set():
                peak = max(peak, rss_mib(pid))
                time.sleep(0.1)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            sent = asyncio.run(flood(wd.url, wd.origin, credential))
            time.sleep(1.0)  # what the daemon read before the stop is in its memory by now
        finally:
            done.set()
            sampler.join()
        grown = peak - base
        print(f"web flood: sent {sent / 2**20:.0f} MiB, RSS {base:.1f} -> peak {peak:.1f} MiB (+{grown:.1f})")
        assert grown <= LIMIT_MIB, f"the daemon grew {grown:.0f} MiB while {sent / 2**20:.0f} MiB were sent"
        assert wd.request({"cmd": "ping"}, "pong")["event"] == "pong"  # and it still serves
    finally:
        assert wd.proc.stop() == 0, wd.proc.log()
        shutil.rmtree(directory, ignore_errors=True)
