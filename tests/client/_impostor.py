"""Impostors for the TCP proof-first tests: listeners that record every byte a client sends them.

Shared by tests/client/test_tcp_proof.py (control port) and tests/cli/test_attach_tcp_auth.py (attach port).
"""

from __future__ import annotations

import asyncio
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


OTHER_USER_LISTENER = textwrap.dedent(
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
