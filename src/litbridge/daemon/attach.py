"""Attach: a raw terminal view of one session on `<socket>.attach` (or TCP port N+1).

Selector line (JSON object, bare key, `list` / `{"list":true}`), initial paint from
`Terminal.ansi_repaint()`, then raw PTY bytes out and the controller's bytes in. Many viewers, one
controller (the first, or whoever asks `{"control":true}`); never resizes; a slow viewer is dropped.
Over TCP the selector must carry the daemon's `token`. No JSON events, no screen parsing here.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
from typing import TYPE_CHECKING, Any

import orjson

from litbridge.protocol.framing import encode
from litbridge.protocol.names import shown
from litbridge.protocol.spec import session_key

if TYPE_CHECKING:
    from litbridge.daemon.server import Daemon
    from litbridge.session import Session

log = logging.getLogger("litbridge.attach")

SELECTOR_MAX = 4096
VIEWER_BUFFER_MAX = int(os.environ.get("LITBRIDGE_ATTACH_BUFFER", str(2 * 1024 * 1024)))
# Exact prefix lit-bridge-rs attach clients match on (scripts/attach.py); kept for compatibility.
NO_SUCH_SESSION = "lit-bridge-rs: no such session"


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
    def __init__(self, daemon: Daemon) -> None:
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

    async def handle(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, tcp: bool = False
    ) -> None:
        viewer: Viewer | None = None
        try:
            if not tcp and not self.daemon._peer_ok(writer):
                return
            try:
                raw = await asyncio.wait_for(self._read_selector(reader), 30.0)
            except asyncio.TimeoutError:
                raw = None
            if raw is None:
                return
            text = raw.decode("utf-8", "replace").strip()
            obj: Any = None
            if text.startswith("{"):
                with contextlib.suppress(orjson.JSONDecodeError):
                    obj = orjson.loads(text)
            if tcp:
                token = obj.get("token") if isinstance(obj, dict) else None
                if (
                    not isinstance(token, str)
                    or not self.daemon.token
                    or not hmac.compare_digest(token, self.daemon.token)
                ):
                    writer.write(b'\r\nlitbridge: attach over TCP needs {"token":...} in the selector\r\n')
                    return
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
            while not viewer.closed:
                data = await reader.read(1024)
                if not data:
                    break
                if self.controllers.get(key) is viewer:
                    session.write_raw(data)
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
            with contextlib.suppress(Exception):
                await writer.drain()
            with contextlib.suppress(Exception):
                writer.close()

    def close_all(self) -> None:
        for v in list(self.viewers):
            v.close()
        self.viewers.clear()
        self.controllers.clear()
