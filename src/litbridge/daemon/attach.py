"""Attach: a raw terminal view of one session on `<socket>.attach` (or TCP port N+1).

Selector line (JSON object, bare key, `list` / `{"list":true}`), initial paint from
`Terminal.ansi_repaint()`, then raw PTY bytes out and the controller's bytes in. Many viewers, one
controller (the first, or whoever asks `{"control":true}`); never resizes; a slow viewer is dropped, and so is
a controller whose CLI leaves `WRITE_QUEUE_MAX` of its bytes unread.
Over TCP the connection is authenticated first (`_tcp_selector`): the proof-first handshake of
`protocol/auth.py`, or the legacy `token` in the selector. No screen parsing here.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
from typing import TYPE_CHECKING, Any

import orjson

from litbridge.protocol import auth
from litbridge.protocol import events as ev
from litbridge.protocol.framing import encode
from litbridge.protocol.names import shown
from litbridge.protocol.spec import session_key
from litbridge.pty import WriteQueueFull

if TYPE_CHECKING:
    from litbridge.daemon.front import DaemonFront
    from litbridge.session import Session

log = logging.getLogger("litbridge.attach")

SELECTOR_MAX = 4096
VIEWER_BUFFER_MAX = int(os.environ.get("LITBRIDGE_ATTACH_BUFFER", str(2 * 1024 * 1024)))
# Exact prefix lit-bridge-rs attach clients match on (scripts/attach.py); kept for compatibility.
NO_SUCH_SESSION = "lit-bridge-rs: no such session"
SELECTOR_TIMEOUT = 30.0
"""Seconds a connection may take to send each selector line."""


class Viewer:
    def __init__(self, writer: asyncio.StreamWriter, session: Session) -> None:
        self.writer = writer
        self.session = session
        self.closed = False

    def on_output(self, data: bytes | None) -> None:
        if self.closed:
            return
        if data is None:  # the session died
            self.close()
            return
        transport = self.writer.transport
        if transport.is_closing():
            self.close()
            return
        if transport.get_write_buffer_size() > VIEWER_BUFFER_MAX:
            log.warning("attach viewer of %r is too slow; dropping it", self.session.key)
            self.closed = True
            self.session.remove_output_listener(self.on_output)
            transport.abort()
            return
        self.writer.write(data)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.session.remove_output_listener(self.on_output)
            with contextlib.suppress(Exception):
                self.writer.close()


class AttachServer:
    """The attach connections of one daemon, which it reads through its public face only."""

    def __init__(self, daemon: DaemonFront) -> None:
        self.daemon = daemon
        self.controllers: dict[str, Viewer] = {}
        self.viewers: set[Viewer] = set()

    async def _read_selector(self, reader: asyncio.StreamReader) -> bytes | None:
        buf = bytearray()
        while len(buf) <= SELECTOR_MAX:
            ch = await reader.read(1)
            if not ch:
                return None
            if ch == b"\n":
                return bytes(buf)
            buf += ch
        return None

    async def _next_selector(self, reader: asyncio.StreamReader) -> tuple[str, Any] | None:
        """The next selector line as (text, parsed JSON or None); None when the client sent none in time."""
        try:
            raw = await asyncio.wait_for(self._read_selector(reader), SELECTOR_TIMEOUT)
        except asyncio.TimeoutError:
            raw = None
        if raw is None:
            return None
        text = raw.decode("utf-8", "replace").strip()
        obj: Any = None
        if text.startswith("{"):
            with contextlib.suppress(orjson.JSONDecodeError):
                obj = orjson.loads(text)
        return text, obj

    async def _tcp_selector(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, first: tuple[str, Any]
    ) -> tuple[str, Any] | None:
        """Authenticate a TCP attach; returns the selector to serve, or None after writing why not.

        Either the proof-first handshake (docs/protocol.md, Attach over TCP) — `{"auth":{"nonce"}}`, our
        `auth_challenge` line, then the real selector with `"auth":{"proof"}` — or the legacy selector that
        carries the token itself (lit-bridge clients)."""
        obj = first[1]
        token = self.daemon.token
        why = 'attach over TCP needs {"auth":{"nonce":...}} (or the legacy {"token":...}) as the selector'
        if isinstance(obj, dict) and token:
            request = obj.get("auth")
            if isinstance(request, dict):
                second = await self._challenge(reader, writer, request.get("nonce"), token)
                if second is not None:
                    return second
                why = "wrong nonce or proof in the attach selector's auth (docs/protocol.md, Attach over TCP)"
            else:
                legacy = obj.get("token")
                if isinstance(legacy, str) and hmac.compare_digest(legacy.encode(), token.encode()):
                    return first
        writer.write(f"\r\nlitbridge: {why}\r\n".encode())
        return None

    async def _challenge(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_nonce: Any, token: str
    ) -> tuple[str, Any] | None:
        """Answer the client's nonce with one `auth_challenge` line; return its next selector when that
        carries the right `auth.proof`, else None."""
        if not auth.valid_nonce(client_nonce):
            return None
        daemon_nonce = auth.new_nonce()
        where = auth.endpoint(writer.get_extra_info("sockname"))
        proof = auth.server_proof(token, client_nonce, daemon_nonce, where)
        writer.write(encode(ev.auth_challenge(daemon_nonce, proof)))
        second = await self._next_selector(reader)
        given = second[1].get("auth") if second is not None and isinstance(second[1], dict) else None
        expected = auth.client_proof(token, client_nonce, daemon_nonce, where)
        return second if isinstance(given, dict) and auth.same(expected, given.get("proof")) else None

    async def handle(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, tcp: bool = False
    ) -> None:
        viewer: Viewer | None = None
        try:
            if not tcp and not self.daemon.peer_ok(writer):
                return
            selector = await self._next_selector(reader)
            if selector is not None and tcp:
                selector = await self._tcp_selector(reader, writer, selector)
            if selector is None:
                return
            text, obj = selector
            if text == "list" or (isinstance(obj, dict) and obj.get("list") is True):
                writer.write(
                    encode(
                        {
                            "pid": os.getpid(),
                            "sessions": [
                                {"name": s.key, "state": s.state, "model": s.model}
                                for s in self.daemon.sessions.values()
                            ],
                        }
                    )
                )
                return
            if isinstance(obj, dict):
                fields = {"session": obj.get("session") if isinstance(obj.get("session"), str) else ""}
                if isinstance(obj.get("channel_id"), str):
                    fields["channel_id"] = obj["channel_id"]
                key = session_key(fields)
                want_control = obj.get("control") is True
                watch_only = obj.get("control") is False  # explicit false: never the controller (web view)
            else:
                key, want_control, watch_only = text, False, False
            session = self.daemon.sessions.get(key)
            if session is None or session.dead:
                keys = ", ".join(
                    shown(k) for k in sorted(k for k, s in self.daemon.sessions.items() if not s.dead)
                )
                writer.write(
                    f"\r\n{NO_SUCH_SESSION} '{shown(key)}' (pid {os.getpid()} has: [{keys}])\r\n".encode()
                )
                return
            viewer = Viewer(writer, session)
            self.viewers.add(viewer)
            writer.write(session.terminal.ansi_repaint())
            session.add_output_listener(viewer.on_output)
            current = self.controllers.get(key)
            if want_control or (not watch_only and (current is None or current.closed)):
                self.controllers[key] = viewer
                session.set_focus(True)  # a CLI with focus reporting on hears focus-in
            while not viewer.closed:
                data = await reader.read(1024)
                if not data:
                    break
                if self.controllers.get(key) is viewer:
                    try:
                        session.write_raw(data)
                    except WriteQueueFull as exc:  # the CLI does not read: stop taking its keyboard's bytes
                        log.info("attach controller of %r: %s; detaching it", session.key, exc)
                        if not viewer.closed:
                            writer.write(f"\r\nlitbridge: {exc}; detached\r\n".encode())
                        break
        except (ConnectionError, OSError) as exc:
            log.debug("attach connection ended: %s", exc)
        except asyncio.CancelledError:
            pass
        finally:
            if viewer is not None:
                viewer.close()
                self.viewers.discard(viewer)
                key = viewer.session.key
                if self.controllers.get(key) is viewer:
                    del self.controllers[key]
                    viewer.session.set_focus(False)  # unattended again: focus-out
            with contextlib.suppress(Exception):
                await writer.drain()
            with contextlib.suppress(Exception):
                writer.close()

    def close_all(self) -> None:
        for v in list(self.viewers):
            v.close()
        self.viewers.clear()
        self.controllers.clear()
