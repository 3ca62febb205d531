"""Both web pages (a daemon's web view and the fleet page) refuse alike: one guard code serves them.

Each page runs in-process on loopback: the daemon's web view over a real `Daemon` on a temporary socket, the
fleet page over a stand-in for its `Fleet` (the guards never touch the fleet; the fleet page's registry view
is tested against a real nats-server in tests/fleet).
"""

from __future__ import annotations

import os
import socket
import tempfile
import types
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest

from litbridge.daemon.server import Daemon
from litbridge.web.fleet import FleetWebView
from litbridge.web.server import WebServer
from litbridge.web.site import SECURITY_HEADERS, GuardedSite

pytestmark = [pytest.mark.asyncio(loop_scope="function"), pytest.mark.timeout(120)]


@asynccontextmanager
async def daemon_view(host: str) -> AsyncIterator[GuardedSite]:
    daemon = Daemon(os.path.join(tempfile.mkdtemp(prefix="lbg-"), "s.sock"))
    await daemon.start()
    view = WebServer(daemon, host, 0)
    try:
        await view.start()
        daemon.web = view
        yield view
    finally:
        await view.close()
        await daemon.shutdown()


@asynccontextmanager
async def fleet_view(host: str) -> AsyncIterator[GuardedSite]:
    view = FleetWebView(types.SimpleNamespace(), host, 0)  # type: ignore[arg-type]
    try:
        await view.start()
        yield view
    finally:
        await view.close()


PAGES: dict[str, tuple[Callable[[str], Any], str]] = {
    "daemon": (daemon_view, "litbridge web"),
    "fleet": (fleet_view, "litbridge web --nats"),
}


async def _post_login(
    http: aiohttp.ClientSession, view: GuardedSite, body: bytes, content_type: str, origin: str | None = None
) -> aiohttp.ClientResponse:
    host = f"127.0.0.1:{view.port}"
    headers = {"Host": host, "Origin": origin or f"http://{host}", "Content-Type": content_type}
    return await http.post(f"http://127.0.0.1:{view.port}/login", data=body, headers=headers)


async def _check(resp: Awaitable[aiohttp.ClientResponse], status: int) -> aiohttp.ClientResponse:
    r = await resp
    await r.read()
    assert r.status == status, (r.status, await r.text())
    for name, value in SECURITY_HEADERS.items():
        assert r.headers.get(name) == value, (name, r.headers)
    return r


@pytest.mark.parametrize("page", sorted(PAGES))
async def test_each_page_refuses_alike(page: str) -> None:
    make, relogin = PAGES[page]
    async with make("127.0.0.1") as view, aiohttp.ClientSession() as http:
        url = f"http://127.0.0.1:{view.port}/"
        await _check(http.get(url, headers={"Host": f"127.0.0.1:{view.port}"}), 200)
        await _check(http.get(url, headers={"Host": f"localhost:{view.port}"}), 200)
        await _check(http.get(url, headers={"Host": f"evil.example:{view.port}"}), 421)  # DNS rebinding
        good = b'{"code": "x"}'
        await _check(_post_login(http, view, good, "application/json", "http://evil.example"), 403)
        await _check(_post_login(http, view, good, "text/plain"), 415)  # a form post cannot log in
        spent = await _check(_post_login(http, view, good, "application/json"), 401)
        assert spent.headers["Cache-Control"] == "no-store"
        assert f"run `{relogin}` again" in (await spent.json())["error"]
        code = view.login_url().split("#code=")[1]
        body = f'{{"code": "{code}"}}'.encode()
        bought = await _check(_post_login(http, view, body, "application/json"), 200)
        assert view.logins.check((await bought.json())["credential"])
        await _check(_post_login(http, view, body, "application/json"), 401)  # a code is spent once


@pytest.mark.parametrize("page", sorted(PAGES))
async def test_bound_to_every_address_each_page_answers_to_this_machines_name(page: str) -> None:
    make, _ = PAGES[page]
    async with make("0.0.0.0") as view, aiohttp.ClientSession() as http:
        assert view.url == f"http://127.0.0.1:{view.port}/"
        url = f"http://127.0.0.1:{view.port}/"
        name = socket.gethostname().lower()
        await _check(http.get(url, headers={"Host": f"{name}:{view.port}"}), 200)
        await _check(http.get(url, headers={"Host": f"evil.example:{view.port}"}), 421)
