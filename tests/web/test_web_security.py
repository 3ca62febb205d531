"""The web view's refusals, each on the wire: token, cookie flags, Host allowlist, WebSocket Origin,
static files (no listing, no traversal) and the security headers."""

from __future__ import annotations

import base64
import http.client
import os

import pytest
from web_helpers import WebDaemon


def get(
    wd: WebDaemon, path: str, *, cookie: bool = True, host: str | None = None, headers: dict | None = None
) -> http.client.HTTPResponse:
    hostname, port = wd.host_port.rsplit(":", 1)
    conn = http.client.HTTPConnection(hostname, int(port), timeout=20)
    h = {"Host": wd.host_port if host is None else host, **(headers or {})}
    if cookie:
        h["Cookie"] = f"litbridge_{port}={wd.token}"
    conn.request("GET", path, headers=h)
    resp = conn.getresponse()
    resp.body = resp.read()  # type: ignore[attr-defined]
    conn.close()
    return resp


def upgrade(wd: WebDaemon, path: str, origin: str | None, **kw: object) -> http.client.HTTPResponse:
    headers = {
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
    }
    if origin is not None:
        headers["Origin"] = origin
    return get(wd, path, headers=headers, **kw)  # type: ignore[arg-type]


def test_the_link_sets_an_httponly_strict_cookie_and_security_headers(web_daemon: WebDaemon) -> None:
    resp = get(web_daemon, f"/?token={web_daemon.token}", cookie=False)
    assert resp.status == 200
    cookie = resp.getheader("Set-Cookie") or ""
    assert cookie.startswith(f"litbridge_{web_daemon.host_port.rsplit(':', 1)[1]}={web_daemon.token}")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    csp = resp.getheader("Content-Security-Policy") or ""
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "default-src 'none'" in csp
    assert resp.getheader("X-Content-Type-Options") == "nosniff"
    assert resp.getheader("X-Frame-Options") == "DENY"
    # the cookie alone then opens the page and its assets
    assert get(web_daemon, "/").status == 200
    js = get(web_daemon, "/static/vendor/xterm/xterm.js")
    assert js.status == 200 and js.getheader("Content-Security-Policy")


@pytest.mark.parametrize("path", ["/", "/static/app.js", "/static/vendor/xterm/xterm.js", "/ws/events"])
def test_no_token_is_refused(web_daemon: WebDaemon, path: str) -> None:
    resp = get(web_daemon, path, cookie=False)
    assert resp.status == 401
    assert b"litbridge web" in resp.body  # type: ignore[attr-defined]


def test_a_wrong_token_is_refused(web_daemon: WebDaemon) -> None:
    assert get(web_daemon, "/?token=" + "0" * 64, cookie=False).status == 401
    assert get(web_daemon, "/", cookie=False, headers={"Cookie": "litbridge_1=x"}).status == 401
    port = web_daemon.host_port.rsplit(":", 1)[1]
    assert get(web_daemon, "/", cookie=False, headers={"Cookie": f"litbridge_{port}=wrong"}).status == 401


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1:1", ""])
def test_a_foreign_host_header_is_refused(web_daemon: WebDaemon, host: str) -> None:
    """DNS rebinding: a page from another name that resolves to 127.0.0.1 is refused, even with the token."""
    host = host.format(port=web_daemon.host_port.rsplit(":", 1)[1])
    resp = get(web_daemon, f"/?token={web_daemon.token}", host=host)
    assert resp.status == 421
    assert resp.getheader("Set-Cookie") is None
    assert get(web_daemon, "/ws/events", host=host).status == 421


def test_loopback_names_are_allowed(web_daemon: WebDaemon) -> None:
    port = web_daemon.host_port.rsplit(":", 1)[1]
    for name in ("127.0.0.1", "localhost", "LOCALHOST"):
        assert get(web_daemon, "/", host=f"{name}:{port}").status == 200


@pytest.mark.parametrize("origin", [None, "http://evil.example", "null", "http://127.0.0.1:1"])
@pytest.mark.parametrize("path", ["/ws/events", "/ws/attach?session=x"])
def test_a_cross_origin_websocket_is_refused(web_daemon: WebDaemon, origin: str | None, path: str) -> None:
    resp = upgrade(web_daemon, path, origin)
    assert resp.status == 403


def test_a_same_origin_websocket_is_accepted_only_with_the_cookie(web_daemon: WebDaemon) -> None:
    origin = f"http://{web_daemon.host_port}"
    assert upgrade(web_daemon, "/ws/events", origin).status == 101
    assert upgrade(web_daemon, "/ws/events", origin, cookie=False).status == 401


@pytest.mark.parametrize(
    "path",
    [
        "/static/",
        "/static/vendor/",
        "/static/vendor/xterm/",
        "/static/../server.py",
        "/static/%2e%2e/server.py",
        "/static/..%2fserver.py",
        "/static/vendor/../../server.py",
        "/static/index.html",
        "/static//etc/passwd",
        "/static/app.js/../../__init__.py",
        "/../../../../etc/passwd",
        "/server.py",
    ],
)
def test_no_listing_no_traversal(web_daemon: WebDaemon, path: str) -> None:
    resp = get(web_daemon, path)
    assert resp.status == 404, (path, resp.status)
    body = resp.body  # type: ignore[attr-defined]
    assert b"import" not in body and b"root:" not in body and b"<a href" not in body


def test_the_page_loads_no_external_resource(web_daemon: WebDaemon) -> None:
    """Offline: every script, stylesheet and link the page references is on this server."""
    html = get(web_daemon, "/").body.decode()  # type: ignore[attr-defined]
    assert "http://" not in html and "https://" not in html and "//" not in html.replace("<!--", "")
    for asset in ("/static/app.js", "/static/app.css", "/static/vendor/markdown-it/markdown-it.min.js"):
        assert asset in html
        assert get(web_daemon, asset).status == 200
