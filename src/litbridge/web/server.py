"""`serve --web`: one page (sessions, live terminal, chat) served from inside the daemon's event loop.

aiohttp because it is an asyncio-native HTTP + WebSocket server that runs on the daemon's own loop
(uvloop included) without a second process, thread or ASGI adapter, and is long and actively
maintained. The page's two WebSockets are bridged in-process to the daemon's own handlers
(`bridge.py`): `/ws/events` speaks the control protocol, `/ws/attach` carries the attach stream.

Security, as a local web server must have it (each refusal is tested; the Host, Origin and header rules
and `/login` are `site.GuardedSite`'s, shared with the fleet page):
- the page and its assets hold no secret and are served to anyone who passes the `Host` rule; what grants
  access is a per-browser-session credential (`auth.py`): the page buys it once, with a one-time code from
  the link `litbridge web` opens (`/#code=`, a fragment: never sent in a request), by a same-origin POST
  to `/login`, keeps it in `sessionStorage` (this origin's only: another port of the host cannot read it)
  and presents it as the first message of each WebSocket, which carries nothing else until it is valid.
  No cookie is ever set;
- the `Host` header must name this server (loopback names, the bound host): DNS rebinding is refused;
- `/login` and every WebSocket upgrade must come from this server's own `Origin` (cross-site hijacking);
- a WebSocket's inbound bytes are bounded as the Unix socket's are (`_pipe`): a flood waits in the sender;
- static files come from a fixed list built at start-up: no listing, no path is ever joined from a URL;
- every response carries a Content-Security-Policy (scripts from this origin only) and no-sniff /
  no-frame / no-referrer headers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import WSCloseCode, WSMsgType, web

from litbridge.daemon import paths
from litbridge.protocol.spec import MAX_LINE
from litbridge.web.bridge import WsWriter
from litbridge.web.site import STATIC_DIR, GuardedSite, Handler

if TYPE_CHECKING:
    from litbridge.daemon.front import DaemonFront

log = logging.getLogger("litbridge.web")

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".png": "image/png",
    ".svg": "image/svg+xml",
}
AUTH_TIMEOUT = 10.0
"""Seconds a WebSocket has to present its credential."""
INBOUND_LIMIT = 64 * 1024
"""A WebSocket's unread inbound bytes pause its reading past twice this (the handlers read in chunks, never
whole lines, so this is only a flow-control mark)."""
WS_UNAUTHORIZED = 4401
"""WebSocket close code for a missing or unknown credential (the page then asks for a fresh link)."""


def parse_address(value: str) -> tuple[str, int]:
    """`[HOST:]PORT` -> (host, port); the host defaults to loopback. Raises ValueError with a message."""
    host, sep, port_text = value.rpartition(":")
    if not sep:
        host = "127.0.0.1"
    host = host.strip("[]") or "127.0.0.1"
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"--web wants [HOST:]PORT, got {value!r}") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"--web port out of range: {port}")
    return host, port


def web_info_path(socket_path: str) -> str:
    """Where a running daemon says where its web view is (read by `litbridge web`)."""
    return socket_path + ".web"


def _static_files() -> dict[str, Path]:
    """URL path -> file, walked once: the only files the server will ever send."""
    files: dict[str, Path] = {}
    for path in sorted(STATIC_DIR.rglob("*")):
        if path.is_file() and path.suffix in CONTENT_TYPES and path.name != "index.html":
            files["/static/" + path.relative_to(STATIC_DIR).as_posix()] = path
    return files


class WebServer(GuardedSite):
    """The web view of one daemon: started after the daemon's listeners, closed after its shutdown. It uses
    the daemon's public face only (`serve_control`, `serve_attach`, `socket_path`)."""

    def __init__(self, daemon: DaemonFront, host: str, port: int) -> None:
        super().__init__(host, port)
        self.daemon = daemon
        self.static = _static_files()
        self._index = (STATIC_DIR / "index.html").read_bytes()
        self._sockets: set[web.WebSocketResponse] = set()
        self._info_path: str | None = None

    def routes(self) -> list[tuple[str, str, Handler]]:
        pages: list[tuple[str, str, Handler]] = [
            ("GET", "/", self._page),
            ("GET", "/ws/events", self._ws_events),
            ("GET", "/ws/attach", self._ws_attach),
        ]
        return pages + [("GET", url, self._file) for url in self.static]

    async def start(self) -> None:
        await super().start()
        self._info_path = web_info_path(self.daemon.socket_path)
        _write_private(self._info_path, json.dumps({"url": self.url, "pid": os.getpid()}) + "\n")
        log.info("web view on %s (open it with `litbridge web`)", self.url)

    async def close(self) -> None:
        self.logins.revoke_all()
        for ws in list(self._sockets):
            with contextlib.suppress(Exception):
                await ws.close()
        await super().close()
        if self._info_path:
            paths.unlink_quietly(self._info_path)

    # ------------------------------------------------------------------ pages
    async def _page(self, request: web.Request) -> web.Response:
        response = web.Response(body=self._index, content_type="text/html", charset="utf-8")
        response.headers["Cache-Control"] = "no-store"
        return response

    async def _file(self, request: web.Request) -> web.Response:
        path = self.static[request.path]
        return web.Response(
            body=path.read_bytes(),
            headers={"Content-Type": CONTENT_TYPES[path.suffix], "Cache-Control": "no-cache"},
        )

    # ------------------------------------------------------------------ websockets
    async def _open_ws(self, request: web.Request) -> tuple[web.WebSocketResponse, bool]:
        """Origin checked before the upgrade, the credential right after it; False: refused and closed."""
        if not self.origin_ok(request):
            log.warning("web: refused a WebSocket from Origin %r", request.headers.get("Origin"))
            raise web.HTTPForbidden(text="litbridge: cross-origin WebSocket refused\n")
        ws = _WebSocket(max_msg_size=MAX_LINE + 1, heartbeat=30.0)
        await ws.prepare(request)
        self._sockets.add(ws)
        if not await self._authenticate(ws):
            self._sockets.discard(ws)
            await ws.close(code=WS_UNAUTHORIZED, message=b"unauthorized: open a fresh `litbridge web` link")
            return ws, False
        return ws, True

    async def _authenticate(self, ws: web.WebSocketResponse) -> bool:
        """The first message must be `{"auth": credential}` with a credential `/login` issued."""
        try:
            msg = await asyncio.wait_for(ws.receive(), AUTH_TIMEOUT)
        except asyncio.TimeoutError:
            return False
        if msg.type != WSMsgType.TEXT:
            return False
        try:
            first = json.loads(msg.data)
        except ValueError:
            return False
        credential = first.get("auth") if isinstance(first, dict) else None
        return isinstance(credential, str) and self.logins.check(credential)

    async def _pipe(self, ws: web.WebSocketResponse, handler: Any, first: bytes | None, typing: bool) -> None:
        """Run a daemon handler over this socket until either side ends.

        Inbound is bounded as on the Unix socket: the reader pauses this loop once it holds more than
        2 x INBOUND_LIMIT unread bytes (plus the frame just fed, at most MAX_LINE), and while it is paused no
        frame is read, so aiohttp stops reading the TCP socket and the sender waits on its kernel buffers
        rather than filling this process's memory."""
        reader = asyncio.StreamReader(limit=INBOUND_LIMIT)
        flow = _Flow()
        reader.set_transport(flow)  # type: ignore[arg-type]
        writer = WsWriter(ws, binary=first is not None)
        if first is not None:
            reader.feed_data(first)
        task = asyncio.get_running_loop().create_task(handler(reader, writer))

        def handler_done(_task: asyncio.Task[None]) -> None:
            writer.close()
            flow.resume_reading()  # the loop below must not wait on a reader nobody reads any more

        task.add_done_callback(handler_done)
        try:
            while True:
                await flow.wait()
                if task.done():
                    break
                msg = await ws.receive()
                if msg.type == WSMsgType.TEXT:
                    data = msg.data.encode()
                elif msg.type == WSMsgType.BINARY:
                    data = msg.data
                else:
                    if isinstance(ws, _WebSocket) and ws.refused:
                        await _WebSocket.linger(request_of(ws))
                    break
                if first is None and not data.endswith(b"\n"):
                    data += b"\n"  # one command per message
                if typing or first is None:
                    reader.feed_data(data)
        finally:
            self._sockets.discard(ws)
            reader.feed_eof()
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(task), 5.0)
            writer.close()
            await writer.wait_closed()

    async def _ws_events(self, request: web.Request) -> web.WebSocketResponse:
        ws, ok = await self._open_ws(request)
        if not ok:
            return ws
        await self._pipe(ws, self.daemon.serve_control, None, typing=False)
        return ws

    async def _ws_attach(self, request: web.Request) -> web.WebSocketResponse:
        key = request.query.get("session", "")
        control = request.query.get("control") == "1"
        ws, ok = await self._open_ws(request)
        if not ok:
            return ws
        # "control": false = watch only, never the controller, so a terminal attacher keeps the keyboard;
        # and the browser's keystrokes are dropped here unless the page took control
        selector = json.dumps({"session": key, "control": control}).encode() + b"\n"
        await self._pipe(ws, self.daemon.serve_attach, selector, typing=control)
        return ws


# s: how long a refused sender is given to read the close frame (and close) before the socket goes
LINGER = 2.0


def request_of(ws: web.WebSocketResponse) -> web.BaseRequest | None:
    """The request a WebSocket answered (aiohttp keeps it private), for its transport and connection."""
    return getattr(ws, "_req", None)


class _WebSocket(web.WebSocketResponse):
    """A frame over the line limit is refused with close code 1009, but its sender is usually still sending it:
    closing the socket then, with its bytes unread, makes the kernel reset the connection, and the reset can
    reach the sender before it has read the close frame (it then sees 1006, and not why). So for that close the
    socket is only half-closed (the close frame, then FIN), what still arrives is dropped unread, and the handler
    lingers (`linger`) until the peer has closed or LINGER has passed; aiohttp closes the socket after that.
    `_close_transport` is aiohttp's own step (3.x): were it renamed, the socket would close at once, as before."""

    refused = False  # a frame over the limit was refused (aiohttp then reports the close as abnormal)

    async def close(self, *, code: int = WSCloseCode.OK, message: bytes = b"", drain: bool = True) -> bool:
        if code == WSCloseCode.MESSAGE_TOO_BIG:
            self.refused = True
        return await super().close(code=code, message=message, drain=drain)

    def _close_transport(self) -> None:
        req = request_of(self)
        transport = req.transport if req is not None else None
        if not self.refused or req is None or transport is None:
            super()._close_transport()
            return
        req.protocol.close()  # the connection takes no more messages: the bytes still coming are dropped
        try:
            transport.write_eof()
        except (OSError, RuntimeError, NotImplementedError):
            super()._close_transport()

    @staticmethod
    async def linger(req: web.BaseRequest | None) -> None:
        transport = req.transport if req is not None else None
        deadline = asyncio.get_running_loop().time() + LINGER
        while transport is not None and not transport.is_closing():
            if asyncio.get_running_loop().time() > deadline:
                break
            await asyncio.sleep(0.05)


class _Flow:
    """The transport face a `StreamReader` pauses and resumes (its `limit` decides when)."""

    def __init__(self) -> None:
        self._open = asyncio.Event()
        self._open.set()

    def pause_reading(self) -> None:
        self._open.clear()

    def resume_reading(self) -> None:
        self._open.set()

    async def wait(self) -> None:
        await self._open.wait()


def _write_private(path: str, text: str) -> None:
    """Written 0600 beside the path, then renamed over it: a reader never sees a partial file."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)
