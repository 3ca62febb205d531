"""`litbridge web --nats URL`: a read-only view of a fleet (every daemon's sessions, grouped by daemon).

Served by the `litbridge web` process itself on loopback, not by a daemon: it is a `Fleet` client (NATS) that
reads the KV registry and hands it to the page as JSON (`/fleet.json`, polled). It shows; it never commands:
creating, sending or answering stays with the CLI, the `Fleet` class, or a daemon's own web view.

The guards are the daemon web view's, one code (`site.GuardedSite`): the `Host` header must name this server
(DNS rebinding), the page buys a per-tab credential with the one-time code from the link (`auth.WebLogins`, a
same-origin JSON POST to `/login`) and presents it in the `X-Litbridge-Credential` header of every `/fleet.json`
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
from litbridge.web.site import STATIC_DIR, GuardedSite, Handler

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


class FleetWebView(GuardedSite):
    """The read-only fleet page on `host:port` (loopback by default), over one `Fleet` connection."""

    relogin = "litbridge web --nats"
    client_max_size = 16 * 1024

    def __init__(self, fleet: Fleet, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host, port)
        self.fleet = fleet

    def routes(self) -> list[tuple[str, str, Handler]]:
        pages: list[tuple[str, str, Handler]] = [
            ("GET", "/", self._page),
            ("GET", "/fleet.json", self._state),
        ]
        return pages + [("GET", url, self._file) for url in FILES]

    async def _headers(self, request: web.Request, response: web.StreamResponse) -> None:
        await super()._headers(request, response)
        response.headers.setdefault("Cache-Control", "no-store")

    async def _page(self, request: web.Request) -> web.Response:
        return web.Response(
            body=(PAGE_DIR / "fleet.html").read_bytes(), content_type="text/html", charset="utf-8"
        )

    async def _file(self, request: web.Request) -> web.Response:
        path = STATIC_DIR / request.path.removeprefix("/static/")
        return web.Response(body=path.read_bytes(), headers={"Content-Type": FILES[request.path]})

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
