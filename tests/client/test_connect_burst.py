"""A burst of simultaneous connects: the daemon's listeners use the system's maximum accept queue, and the
client retries, briefly and before sending anything, a Unix-socket connect refused because the queue is full."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from _daemon import Daemon

from litbridge.client import Client, LitbridgeError
from litbridge.protocol import events as ev
from litbridge.protocol.framing import encode

BURST = 300


async def _connect_all(n: int, **options: object) -> tuple[list[Client], list[BaseException]]:
    results = await asyncio.gather(
        *(Client.connect(reconnect=False, connect_timeout=120, **options) for _ in range(n)),  # type: ignore[arg-type]
        return_exceptions=True,
    )
    clients = [r for r in results if isinstance(r, Client)]
    errors = [r for r in results if isinstance(r, BaseException)]
    return clients, errors


@pytest.mark.asyncio
async def test_300_simultaneous_connects_all_succeed(daemon: Daemon) -> None:
    clients, errors = await _connect_all(BURST, socket=daemon.socket)
    try:
        assert errors == [], f"{len(errors)} of {BURST} connects failed, e.g. {errors[0]!r}"
        assert all(c.server_info.get("event") == "monitor_ready" for c in clients)
        pongs = await asyncio.gather(*(c.ping() for c in clients))
        assert {p["event"] for p in pongs} == {"pong"}
    finally:
        await asyncio.gather(*(c.close() for c in clients))


@contextlib.asynccontextmanager
async def _tiny_backlog_daemon() -> AsyncIterator[str]:
    """A stand-in daemon whose accept queue holds one connection: a burst overflows it at once."""
    path = str(Path(tempfile.mkdtemp(prefix="lbq-")) / "d.sock")

    async def serve(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        w.write(encode(ev.monitor_ready(0, 0, ["claude"], 0, "tiny")))
        with contextlib.suppress(ConnectionError):
            await r.read()
        w.close()

    server = await asyncio.start_unix_server(serve, path=path, backlog=1)
    try:
        yield path
    finally:
        server.close()


@pytest.mark.asyncio
async def test_a_full_accept_queue_is_retried_until_it_drains() -> None:
    async with _tiny_backlog_daemon() as path:
        clients, errors = await _connect_all(60, socket=path)
        await asyncio.gather(*(c.close() for c in clients))
    assert errors == [], f"{len(errors)} of 60 connects failed, e.g. {errors[0]!r}"


@pytest.mark.asyncio
async def test_a_listener_that_never_accepts_fails_with_busy() -> None:
    path = str(Path(tempfile.mkdtemp(prefix="lbq-")) / "d.sock")
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(path)
        listener.listen(0)
        queued = []
        try:
            while True:  # fill its queue
                s = socket.socket(socket.AF_UNIX)
                s.setblocking(False)
                queued.append(s)
                s.connect(path)
        except BlockingIOError:
            pass
        try:
            with pytest.raises(LitbridgeError) as info:
                await Client.connect(socket=path, reconnect=False, connect_timeout=2)
        finally:
            for s in queued:
                s.close()
    assert info.value.code == "busy", info.value
    assert "too busy" in info.value.message


def _raw_burst(path: str, n: int) -> int:
    """Connect `n` plain non-blocking sockets at once; how many found the accept queue full (EAGAIN)."""
    socks, full = [], 0
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_UNIX)
            s.setblocking(False)
            socks.append(s)
            try:
                s.connect(path)
            except BlockingIOError:
                full += 1
    finally:
        for s in socks:
            s.close()
    return full


def test_daemon_listeners_queue_a_burst_without_the_client_retrying(daemon: Daemon) -> None:
    """The control and attach sockets hold a 300-connect burst in their accept queues (asyncio's default
    backlog of 100 does not)."""
    for path in (daemon.socket, daemon.socket + ".attach"):
        assert _raw_burst(path, BURST) == 0, path
