"""Helpers for the notification tests: a local webhook receiver (aiohttp, on the test's loop), a daemon started
with a config file, and fake-rift session commands (bash ones are lbd_helpers.bash_create)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from _daemon import write_rift
from aiohttp import web
from lbd_helpers import Conn, DaemonProc, start_daemon


class Receiver:
    """A webhook receiver on 127.0.0.1: every POST it accepts is kept (headers, raw body, parsed JSON, and
    `time`, the `time.monotonic()` at which the request reached the handler). `hang=True` accepts the request
    and never answers; `fail_first=N` answers the first N with 503."""

    def __init__(self, hang: bool = False, fail_first: int = 0) -> None:
        self.hang = hang
        self.fail_first = fail_first  # answer this many requests with 503 first
        self.posts: list[dict[str, Any]] = []
        self.started = 0  # requests that reached the handler (a hanging receiver never finishes one)
        self._changed = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def _hook(self, request: web.Request) -> web.Response:
        arrived = time.monotonic()
        self.started += 1
        self._changed.set()
        if self.hang:
            await asyncio.sleep(3600)
        body = await request.read()
        if self.started <= self.fail_first:
            return web.Response(status=503)
        doc = await request.json()
        self.posts.append({"headers": dict(request.headers), "body": body, "json": doc, "time": arrived})
        self._changed.set()
        return web.json_response({"ok": True})

    async def start(self) -> Receiver:
        app = web.Application()
        app.router.add_post("/hook", self._hook)
        self._runner = web.AppRunner(app, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}/hook"
        return self

    async def wait(self, pred: Any, timeout: float = 60.0) -> list[dict[str, Any]]:
        """The posts' JSON once `pred(list of them)` holds; AssertionError with what came on timeout."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            bodies = [p["json"] for p in self.posts]
            if pred(bodies):
                return bodies
            left = deadline - loop.time()
            if left <= 0:
                raise AssertionError(f"webhook posts never matched; got {bodies}")
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), left)
            except asyncio.TimeoutError:
                pass

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


class TimedConn(Conn):
    """A Conn that also keeps when each event reached it: `arrived[i]` is the `time.monotonic()` at which
    `events[i]` was read off the socket."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        super().__init__(reader, writer)
        self.arrived: list[float] = []

    async def _read_one(self, timeout: float) -> dict[str, Any]:
        ev = await super()._read_one(timeout)
        self.arrived.append(time.monotonic())
        return ev


def serve_with_config(
    directory: Path, config: str, *extra: str, env: dict[str, str] | None = None
) -> DaemonProc:
    """`litbridge serve --config <directory>/config.toml` (XDG_CONFIG_HOME in `directory` too, so no config of
    the developer's is ever read)."""
    cfg = directory / "config.toml"
    cfg.write_text(config)
    full_env = {"XDG_CONFIG_HOME": str(directory), **(env or {})}
    return start_daemon(str(directory / "d.sock"), "--config", str(cfg), *extra, env=full_env)


def fake_rift_path(directory: Path) -> dict[str, str]:
    """The daemon's environment with an executable `rift` running the fake first on PATH."""
    bindir = directory / "bin"
    bindir.mkdir(exist_ok=True)
    write_rift(bindir)
    return {"PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', os.defpath)}"}


def rift_create(key: str, directory: Path) -> dict[str, Any]:
    """A rift session on the fake (the daemon started with `fake_rift_path`)."""
    home = directory / "home"
    home.mkdir(exist_ok=True)
    return {
        "cmd": "create",
        "session": key,
        "cli": "rift",
        "working_dir": str(directory),
        "env": {"HOME": str(home), "FAKE_RIFT_SPEED": "0", "RIFT_NO_UPDATE_CHECK": "1"},
    }


async def created(conn: Conn, cmd: dict[str, Any]) -> None:
    ready = await conn.request(cmd, "ready", timeout=60)
    assert ready["event"] == "ready", ready


async def turn(conn: Conn, key: str, content: str) -> dict[str, Any]:
    """Send one message; the event that ends its turn (complete, interrupted or turn_error)."""
    accepted = await conn.request({"cmd": "send", "session": key, "content": content}, "accepted", timeout=60)
    assert accepted["event"] == "accepted", accepted
    tid = accepted["turn_id"]
    return await conn.wait(
        lambda e: e.get("turn_id") == tid and e.get("event") in ("complete", "interrupted", "turn_error"),
        timeout=90,
    )


def log_lines(d: DaemonProc, needle: str) -> list[str]:
    return [line for line in d.log().splitlines() if needle in line]


def env_without(name: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != name}
