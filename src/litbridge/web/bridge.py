"""In-process streams between a WebSocket and the daemon's own connection handlers.

The web view is a client of the daemon, not a second implementation of it: each events WebSocket runs
the daemon's control-connection handler and each terminal WebSocket its attach handler, over an
`asyncio.StreamReader` fed from the browser and a `WsWriter` that looks like the `StreamWriter` those
handlers write to. So the browser gets exactly the wire protocol's events (seq, replay, coalescing, deltas,
slow-consumer cut-off) and the attach stream's bytes; nothing is web-only.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from aiohttp import web


class _WsTransport:
    """The transport face the handlers use: buffer size (slow viewers), is_closing, abort."""

    def __init__(self, owner: WsWriter) -> None:
        self._owner = owner

    def get_write_buffer_size(self) -> int:
        return self._owner.pending

    def is_closing(self) -> bool:
        return self._owner.closed

    def abort(self) -> None:
        self._owner.close()

    def close(self) -> None:
        self._owner.close()


class WsWriter:
    """A `StreamWriter` look-alike whose bytes go out as WebSocket messages, one message per write.

    `write` never blocks (like a transport's buffer); a pump task sends in order; `drain` waits while
    more than `high_water` bytes are waiting, which is the backpressure the hub and attach code expect.
    """

    def __init__(self, ws: web.WebSocketResponse, binary: bool, high_water: int = 256 * 1024) -> None:
        self.ws = ws
        self.binary = binary
        self.high_water = high_water
        self.pending = 0
        self.closed = False
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._room = asyncio.Event()
        self._room.set()
        self.transport = _WsTransport(self)
        self._pump = asyncio.get_running_loop().create_task(self._run())

    def write(self, data: bytes) -> None:
        if self.closed or not data:
            return
        self.pending += len(data)
        if self.pending > self.high_water:
            self._room.clear()
        self._queue.put_nowait(bytes(data))

    async def drain(self) -> None:
        if self.closed:
            raise ConnectionResetError("websocket closed")
        await self._room.wait()
        if self.closed:
            raise ConnectionResetError("websocket closed")

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default  # no socket: the web server authenticated the peer itself

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._queue.put_nowait(None)
            self._room.set()

    async def wait_closed(self) -> None:
        with contextlib.suppress(Exception):
            await self._pump

    async def _run(self) -> None:
        try:
            while True:
                data = await self._queue.get()
                if data is None:
                    break
                self.pending -= len(data)
                if self.binary:
                    await self.ws.send_bytes(data)
                else:
                    await self.ws.send_str(data.decode("utf-8", "replace"))
                if self.pending <= self.high_water // 2:
                    self._room.set()
        except (ConnectionError, RuntimeError, asyncio.CancelledError):
            pass
        finally:
            self.closed = True
            self._room.set()
            with contextlib.suppress(Exception):
                await self.ws.close()
