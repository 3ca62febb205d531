"""What every litbridge web page shares: the guards, the security headers, the login, the aiohttp site.

Both web views (a daemon's own, `server.py`, and the fleet's, `fleet.py`) are a `GuardedSite`, so their
refusals are one code:
- the `Host` header must name this server (loopback names, the bound host; when bound to every address,
  this machine's names too): DNS rebinding is refused with 421;
- `/login` must come from this server's own `Origin` (cross-site requests are refused with 403) and be
  JSON; it spends a one-time code (`auth.WebLogins`) for a per-tab credential;
- every response carries a Content-Security-Policy (scripts from this origin only) and no-sniff /
  no-frame / no-referrer headers.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from litbridge.web.auth import CODE_TTL, WebLogins

log = logging.getLogger("litbridge.web")

STATIC_DIR = Path(__file__).resolve().parent / "static"
# xterm.js's DOM renderer injects its theme as a <style> element, hence 'unsafe-inline' for styles only;
# scripts are this origin's files and nothing else.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class GuardedSite:
    """One aiohttp site on `host:port` behind the shared guards; subclasses add their routes (`routes`).

    `relogin` is the command a page's user runs for a fresh login link (named in refusals)."""

    relogin = "litbridge web"
    client_max_size = 64 * 1024

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.logins = WebLogins()
        self.login_ttl = int(CODE_TTL)
        self.allowed_hosts: set[str] = set()
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        if host in ("0.0.0.0", "[::]"):
            host = "127.0.0.1"
        return f"http://{host}:{self.port}/"

    def login_url(self) -> str:
        """A one-time login link: the code rides in the fragment, so no request or Referer carries it."""
        return f"{self.url}#code={self.logins.mint()}"

    def routes(self) -> list[tuple[str, str, Handler]]:
        """(method, path, handler) of this page, besides `/login`."""
        return []

    async def start(self) -> None:
        """Listen; `port` 0 becomes the port the OS chose, and the `Host` names are fixed from it."""
        app = web.Application(middlewares=[self._guard], client_max_size=self.client_max_size)
        app.on_response_prepare.append(self._headers)
        app.router.add_post("/login", self._login)
        for method, path, handler in self.routes():
            app.router.add_route(method, path, handler)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, self.port).start()
        self.port = self._runner.addresses[0][1]
        self.allowed_hosts = self._hosts()

    async def close(self) -> None:
        self.logins.revoke_all()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def _hosts(self) -> set[str]:
        names = set(LOOPBACK_NAMES)
        if self.host not in ("0.0.0.0", "::", ""):
            names.add(f"[{self.host}]" if ":" in self.host else self.host)
        else:  # listening everywhere: this machine's own names too
            names.update({socket.gethostname(), socket.getfqdn()})
        return {f"{n.lower()}:{self.port}" for n in names}

    @web.middleware
    async def _guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        host = (request.headers.get("Host") or "").lower()
        if host not in self.allowed_hosts:
            log.warning("web: refused Host %r", host)
            raise web.HTTPMisdirectedRequest(text="litbridge: unknown Host header (DNS rebinding?)\n")
        return await handler(request)

    def origin_ok(self, request: web.Request) -> bool:
        origin = request.headers.get("Origin", "").lower()
        return any(origin == f"http://{h}" for h in self.allowed_hosts)

    async def _headers(self, request: web.Request, response: web.StreamResponse) -> None:
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)

    async def _login(self, request: web.Request) -> web.Response:
        """Spend a one-time code (JSON `{"code"}`, same origin only) for a credential (`{"credential"}`)."""
        if not self.origin_ok(request):
            log.warning("web: refused a login from Origin %r", request.headers.get("Origin"))
            raise web.HTTPForbidden(text="litbridge: cross-origin login refused\n")
        if request.content_type != "application/json":
            raise web.HTTPUnsupportedMediaType(text="litbridge: the login wants application/json\n")
        try:
            body = await request.json()
        except ValueError:
            body = None
        code = body.get("code") if isinstance(body, dict) else None
        credential = self.logins.redeem(code) if isinstance(code, str) else None
        headers = {"Cache-Control": "no-store"}
        if credential is None:
            return web.json_response(
                {"error": f"this login link was already used or has expired: run `{self.relogin}` again"},
                status=401,
                headers=headers,
            )
        return web.json_response({"credential": credential}, headers=headers)
