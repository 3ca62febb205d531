"""The daemon as its front ends see it: the one public way in for attach, the web view and the fleet link.

A front end carries connections or commands from somewhere else (a WebSocket, a NATS request, the attach
socket) into the daemon. It never reaches into `Daemon`'s privates and never imports `daemon/server.py`: it
is typed against `DaemonFront`, which `Daemon` satisfies. So `daemon/server.py` imports no front end but its
own attach listener, no front end imports it back, and `cli/serve.py` (the composition root) builds the
daemon and hands it to each front end.

The contract:
- `serve_control(reader, writer, tcp=)` runs one control connection (JSON lines, the wire protocol) until
  either side ends; `tcp=True` asks for the token handshake first. The peer check of a Unix socket is part
  of it; a writer without a socket (an in-process stream, say) is taken as authenticated by its front end.
- `serve_attach(reader, writer, tcp=)` runs one attach connection (selector, paint, raw bytes).
- `handle(client, msg)` runs one command for a `hub.Client` of the caller's own (the fleet link).
- `peer_ok(writer)` says whether a Unix socket's peer runs as the daemon's uid.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from litbridge.daemon import paths

if TYPE_CHECKING:
    from litbridge.daemon.hub import Client, Hub
    from litbridge.session import Session

log = logging.getLogger("litbridge.daemon")


def peer_ok(writer: asyncio.StreamWriter) -> bool:
    """True unless the writer's socket belongs to a process of another uid (SO_PEERCRED / getpeereid).
    No socket (an in-process stream) or no uid on this platform: True, the front end vouches for it."""
    sock = writer.get_extra_info("socket")
    if sock is None or not hasattr(os, "getuid"):
        return True
    uid = paths.peer_uid(sock)
    if uid is not None and uid != os.getuid():
        log.warning("refused a connection from uid %d", uid)
        return False
    return True


class WebLogin(Protocol):
    """What `web_login` needs of a web view: a one-time login link and how long it lasts."""

    login_ttl: int

    def login_url(self) -> str: ...


class DaemonFront(Protocol):
    """The daemon's public face for front ends (see the module docstring)."""

    socket_path: str
    token: str | None
    hub: Hub
    web: WebLogin | None

    @property
    def sessions(self) -> Mapping[str, Session]: ...

    async def serve_control(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, tcp: bool = False
    ) -> None: ...

    async def serve_attach(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, tcp: bool = False
    ) -> None: ...

    async def handle(self, client: Client, msg: Any) -> None: ...

    def peer_ok(self, writer: asyncio.StreamWriter) -> bool: ...
