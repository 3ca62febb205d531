"""`litbridge web --nats URL`: a read-only view of a fleet (every daemon's sessions, grouped by daemon).

Served by the `litbridge web` process itself on loopback, not by a daemon: it is a `Fleet` client (NATS) that
reads the KV registry and hands it to the page as JSON (`/fleet.json`, polled). It shows; it never commands:
creating, sending or answering stays with the CLI, the `Fleet` class, or a daemon's own web view.

The guards are the daemon web view's (`server.py`), reused: the `Host` header must name this server (DNS
rebinding), the page buys a per-tab credential with the one-time code from the link (`auth.WebLogins`, a
same-origin POST to `/login`) and presents it in the `X-Litbridge-Credential` header of every `/fleet.json`
request (a custom header: a cross-site page cannot send it without a CORS preflight, which is never granted);
no cookie; the same Content-Security-Policy and no-sniff / no-frame headers on every response.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from litbridge.fleet.client import Fleet
from litbridge.web.auth import WebLogins
from litbridge.web.server import LOOPBACK_NAMES, SECURITY_HEADERS, STATIC_DIR

log = logging.getLogger("litbridge.web.fleet")

PAGE_DIR = STATIC_DIR / "fleet"
FILES = {
    "/static/fleet/fleet.js": "text/javascript; charset=utf-8",
    "/static/app.css": "text/css; charset=utf-8",
}
CREDENTIAL_HEADER = "X-Litbridge-Credential"


def group(daemons: list[dict[str, Any]], sessions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The registry as the page shows it: one entry per daemon (sorted), its sessions inside (sorted by name).
    A session whose daemon has no registry entry is grouped under its daemon name, unavailable."""
    by_name: dict[str, dict[str, Any]] = {
        str(d["daemon"]): {**d, "session_list": []} for d in daemons if d.get("daemon") is not None
    }
    for s in sessions:
        name = str(s.get("daemon"))
        entry = by_name.setdefault(
            name, {"daemon": name, "host": s.get("host"), "available": False, "session_list": []}
        )
        entry["session_list"].append(s)
    for entry in by_name.values():
        entry["session_list"].sort(key=lambda s: str(s.get("name")))
    return [by_name[k] for k in sorted(by_name)]


class FleetWebView:
    """The read-only fleet page on `host:port` (loopback by default), over one `Fleet` connection."""

    def __init__(self, fleet: Fleet, host: str = "127.0.0.1", port: int = 0) -> None:
        self.fleet = fleet
        self.host = host
        self.port = port
        self.logins = WebLogins()
        self.allowed_hosts: set[str] = set()
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def login_url(self) -> str:
        """A one-time login link (the code in the fragment: never sent in a request or a Referer)."""
        return f"{self.url}#code={self.logins.mint()}"

    async def start(self) -> None:
        app = web.Application(middlewares=[self._guard], client_max_size=16 * 1024)
        app.on_response_prepare.append(self._headers)
        app.router.add_get("/", self._page)
        app.router.add_post("/login", self._login)
        app.router.add_get("/fleet.json", self._state)
        for url in FILES:
            app.router.add_get(url, self._file)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]
        names = set(LOOPBACK_NAMES) | {f"[{self.host}]" if ":" in self.host else self.host}
        self.allowed_hosts = {f"{n.lower()}:{self.port}" for n in names}

    async def close(self) -> None:
        self.logins.revoke_all()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @web.middleware
    async def _guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if (request.headers.get("Host") or "").lower() not in self.allowed_hosts:
            raise web.HTTPMisdirectedRequest(text="litbridge: unknown Host header (DNS rebinding?)\n")
        return await handler(request)

    async def _headers(self, request: web.Request, response: web.StreamResponse) -> None:
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        response.headers.setdefault("Cache-Control", "no-store")

    async def _page(self, request: web.Request) -> web.Response:
        return web.Response(
            body=(PAGE_DIR / "fleet.html").read_bytes(), content_type="text/html", charset="utf-8"
        )

    async def _file(self, request: web.Request) -> web.Response:
        path = STATIC_DIR / request.path.removeprefix("/static/")
        return web.Response(body=path.read_bytes(), headers={"Content-Type": FILES[request.path]})

    async def _login(self, request: web.Request) -> web.Response:
        origin = request.headers.get("Origin", "").lower()
        if not any(origin == f"http://{h}" for h in self.allowed_hosts):
            raise web.HTTPForbidden(text="litbridge: cross-origin login refused\n")
        try:
            body = await request.json()
        except ValueError:
            body = None
        code = body.get("code") if isinstance(body, dict) else None
        credential = self.logins.redeem(code) if isinstance(code, str) else None
        if credential is None:
            return web.json_response(
                {
                    "error": "this login link was already used or has expired: run `litbridge web --nats` again"
                },
                status=401,
            )
        return web.json_response({"credential": credential})

    async def _state(self, request: web.Request) -> web.Response:
        credential = request.headers.get(CREDENTIAL_HEADER, "")
        if not credential or not self.logins.check(credential):
            return web.json_response(
                {"error": "unauthorized: open a fresh `litbridge web --nats` link"}, status=401
            )
        try:
            daemons = await self.fleet.daemons()
            sessions = await self.fleet.list()
        except Exception as exc:  # NATS down: say so on the page, keep serving
            log.warning("fleet web view: reading the registry failed: %s", exc)
            return web.json_response({"error": f"cannot read the fleet's registry: {exc}"}, status=503)
        return web.json_response(
            {
                "fleet": self.fleet.name,
                "url": self.fleet.url,
                "at": time.time(),
                "daemons": group(daemons, sessions),
            },
            dumps=lambda obj: json.dumps(obj, default=str),
        )


async def serve(fleet: Fleet, host: str, port: int, on_ready: Callable[[FleetWebView], None]) -> None:
    """Run the view until cancelled; `on_ready(view)` gets it once it listens (to print or open the link)."""
    view = FleetWebView(fleet, host, port)
    await view.start()
    try:
        on_ready(view)
        await asyncio.Event().wait()
    finally:
        with contextlib.suppress(Exception):
            await view.close()


__all__ = ["FleetWebView", "group", "serve"]
