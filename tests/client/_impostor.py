"""Impostors for the TCP proof-first tests: listeners that record every byte a client sends them.

Shared by tests/client/test_tcp_proof.py (control port) and tests/cli/test_attach_tcp_auth.py (attach port),
with the recording relay and the listener of another user they both refuse.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

Reply = Callable[[dict[str, Any], asyncio.StreamWriter], Awaitable[None]]


class Impostor:
    """A plain TCP listener on the daemon's port that records every byte a client sends it."""

    def __init__(self, reply: Reply | None, port: int = 0) -> None:
        self.reply = reply
        self.received = bytearray()
        self.server: asyncio.AbstractServer | None = None
        self.port = port
        self.handlers: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> Impostor:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Stop listening and wait for every connection's handler (the client has hung up by now)."""
        assert self.server is not None
        self.server.close()
        await asyncio.wait_for(asyncio.gather(*self.handlers, return_exceptions=True), 30)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.handlers.add(task)
        try:
            first = await reader.readline()
            self.received += first
            if self.reply is not None and first.strip():
                await self.reply(orjson.loads(first), writer)
                await writer.drain()
            while chunk := await reader.read(65536):  # record whatever else comes
                self.received += chunk
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    def lines(self) -> list[dict[str, Any]]:
        return [orjson.loads(x) for x in bytes(self.received).splitlines() if x.strip()]


class Relay:
    """A relay on another port that forwards to `target` on 127.0.0.1 and records what the client sends."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.seen = bytearray()
        self.server: asyncio.AbstractServer | None = None
        self.port = 0

    async def __aenter__(self) -> Relay:
        self.server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    async def _pipe(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, record: bool) -> None:
        while chunk := await src.read(65536):
            if record:
                self.seen.extend(chunk)
            dst.write(chunk)
            await dst.drain()
        dst.close()

    async def _relay(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        ur, uw = await asyncio.open_connection("127.0.0.1", self.target)
        await asyncio.gather(self._pipe(r, uw, True), self._pipe(ur, w, False), return_exceptions=True)


_OTHER_USER_LISTENER = textwrap.dedent(
    """
    import os, pwd, socket, sys
    nobody = pwd.getpwnam("nobody")
    os.setgroups([]); os.setgid(nobody.pw_gid); os.setuid(nobody.pw_uid)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    print(s.getsockname()[1], flush=True)
    c, _ = s.accept()
    c.settimeout(5)
    got = b""
    try:
        while chunk := c.recv(65536):
            got += chunk
    except OSError:
        pass
    print(repr(got), flush=True)
    """
)


class OtherUserListener:
    """`_OTHER_USER_LISTENER` in a subprocess (needs root): the `port` it listens on, and `received()`, what
    it got once the client hung up (the repr of the bytes)."""

    async def __aenter__(self) -> OtherUserListener:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", _OTHER_USER_LISTENER, stdout=subprocess.PIPE
        )
        try:
            assert self.proc.stdout is not None
            self.port = int(await asyncio.wait_for(self.proc.stdout.readline(), 60))
        except BaseException:
            await self.__aexit__()
            raise
        return self

    async def received(self) -> bytes:
        assert self.proc.stdout is not None
        return await asyncio.wait_for(self.proc.stdout.readline(), 60)

    async def __aexit__(self, *exc: object) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
        await self.proc.wait()
