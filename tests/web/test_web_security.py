"""The web view's refusals, each on the wire: the one-time login, the WebSocket credential, no cookie, the Host
allowlist, WebSocket Origin, static files (no listing, no traversal) and the security headers."""

from __future__ import annotations

import base64
import http.client
import json
import os
from typing import Any

import aiohttp
import pytest
from web_helpers import WebDaemon, ws_first

from litbridge.web.auth import CODE_TTL, MAX_CODES, MAX_CREDENTIALS, WebLogins
from litbridge.web.server import WS_UNAUTHORIZED


def get(
    wd: WebDaemon,
    path: str,
    *,
    host: str | None = None,
    headers: dict | None = None,
    method: str = "GET",
    body: bytes | None = None,
) -> http.client.HTTPResponse:
    hostname, port = wd.host_port.rsplit(":", 1)
    conn = http.client.HTTPConnection(hostname, int(port), timeout=20)
    h = {"Host": wd.host_port if host is None else host, **(headers or {})}
    conn.request(method, path, body=body, headers=h)
    resp = conn.getresponse()
    resp.body = resp.read()  # type: ignore[attr-defined]
    conn.close()
    return resp


def login(wd: WebDaemon, code: Any, origin: str | None = "", content_type: str = "application/json"):
    """POST /login as the page does; origin "" = the web view's own."""
    headers = {"Content-Type": content_type}
    if origin is not None:
        headers["Origin"] = origin or wd.origin
    return get(wd, "/login", method="POST", headers=headers, body=json.dumps({"code": code}).encode())


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


def test_the_page_and_assets_are_served_without_a_credential_and_no_cookie_is_ever_set(
    web_daemon: WebDaemon,
) -> None:
    """They hold no secret; what grants access is the credential, which a cookie never carries."""
    resp = get(web_daemon, "/")
    assert resp.status == 200
    assert resp.getheader("Set-Cookie") is None
    csp = resp.getheader("Content-Security-Policy") or ""
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "default-src 'none'" in csp
    assert resp.getheader("X-Content-Type-Options") == "nosniff"
    assert resp.getheader("X-Frame-Options") == "DENY"
    js = get(web_daemon, "/static/vendor/xterm/xterm.js")
    assert js.status == 200 and js.getheader("Content-Security-Policy")
    ok = login(web_daemon, web_daemon.login_code())
    assert ok.status == 200 and ok.getheader("Set-Cookie") is None
    assert ok.getheader("Cache-Control") == "no-store"


def test_a_login_code_works_once(web_daemon: WebDaemon) -> None:
    code = web_daemon.login_code()
    first = login(web_daemon, code)
    assert first.status == 200
    cred = json.loads(first.body)["credential"]  # type: ignore[attr-defined]
    assert cred != code and len(cred) >= 32
    again = login(web_daemon, code)
    assert again.status == 401
    assert b"already used or has expired" in again.body  # type: ignore[attr-defined]


@pytest.mark.parametrize("code", ["", "0" * 43, None, 7, ["x"]])
def test_a_wrong_code_is_refused(web_daemon: WebDaemon, code: Any) -> None:
    assert login(web_daemon, code).status == 401


@pytest.mark.parametrize("origin", [None, "http://evil.example", "null", "http://127.0.0.1:1"])
def test_a_cross_origin_login_is_refused_and_spends_nothing(
    web_daemon: WebDaemon, origin: str | None
) -> None:
    code = web_daemon.login_code()
    assert login(web_daemon, code, origin=origin).status == 403
    assert login(web_daemon, code, content_type="text/plain").status == 415
    assert login(web_daemon, code).status == 200  # the refusals did not spend it


def test_every_link_has_its_own_code_and_none_is_the_daemon_token(web_daemon: WebDaemon) -> None:
    links = {web_daemon.login_link() for _ in range(3)}
    assert len(links) == 3
    assert all(link.startswith(web_daemon.url + "#code=") for link in links)
    assert not os.path.exists(web_daemon.socket + ".token")  # the web view needs no daemon token at all


def test_web_login_codes_expire_and_the_tables_are_bounded() -> None:
    now = [1000.0]
    logins = WebLogins(clock=lambda: now[0])
    code = logins.mint()
    now[0] += CODE_TTL + 0.001
    assert logins.redeem(code) is None  # expired unused
    codes = [logins.mint() for _ in range(MAX_CODES + 1)]
    assert logins.redeem(codes[0]) is None  # the oldest unspent code made room
    first = logins.redeem(codes[1])
    assert first is not None and logins.check(first)
    creds = [logins.redeem(logins.mint()) for _ in range(MAX_CREDENTIALS)]
    assert not logins.check(first)  # the least recently used credential made room
    assert all(c is not None and logins.check(c) for c in creds)
    assert not logins.check(codes[2])  # a code is not a credential
    logins.revoke_all()
    assert not logins.check(creds[-1])


@pytest.mark.parametrize("path", ["/ws/events", "/ws/attach?session=x"])
@pytest.mark.parametrize("first", ["not json", '{"auth": "wrong"}', '{"cmd": "list"}', b"\x00binary", "code"])
def test_a_websocket_without_a_valid_credential_first_gets_nothing(
    web_daemon: WebDaemon, path: str, first: str | bytes
) -> None:
    """Even with the right Origin (which a local process can forge), the socket carries nothing until its first
    message is a credential from /login: a login code, the wrong credential or a command are refused."""
    if first == "code":
        first = json.dumps({"auth": web_daemon.login_code()})
    msg, code = ws_first(web_daemon, path, first)
    assert msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING)
    assert code == WS_UNAUTHORIZED


def test_a_websocket_with_the_credential_first_is_a_control_connection(web_daemon: WebDaemon) -> None:
    msg, _ = ws_first(web_daemon, "/ws/events", json.dumps({"auth": web_daemon.credential()}))
    assert msg.type == aiohttp.WSMsgType.TEXT
    assert json.loads(msg.data.splitlines()[0])["event"] == "monitor_ready"
    assert "web_login" in json.loads(msg.data.splitlines()[0])["commands"]


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1:1", ""])
def test_a_foreign_host_header_is_refused(web_daemon: WebDaemon, host: str) -> None:
    """DNS rebinding: a page from another name that resolves to 127.0.0.1 is refused, even with a login code."""
    host = host.format(port=web_daemon.host_port.rsplit(":", 1)[1])
    assert get(web_daemon, "/", host=host).status == 421
    assert get(web_daemon, "/ws/events", host=host).status == 421
    code = web_daemon.login_code()
    resp = get(
        web_daemon,
        "/login",
        host=host,
        method="POST",
        headers={"Origin": f"http://{host}", "Content-Type": "application/json"},
        body=json.dumps({"code": code}).encode(),
    )
    assert resp.status == 421
    assert login(web_daemon, code).status == 200  # not spent by the refused request


def test_loopback_names_are_allowed(web_daemon: WebDaemon) -> None:
    port = web_daemon.host_port.rsplit(":", 1)[1]
    for name in ("127.0.0.1", "localhost", "LOCALHOST"):
        assert get(web_daemon, "/", host=f"{name}:{port}").status == 200


@pytest.mark.parametrize("origin", [None, "http://evil.example", "null", "http://127.0.0.1:1"])
@pytest.mark.parametrize("path", ["/ws/events", "/ws/attach?session=x"])
def test_a_cross_origin_websocket_is_refused(web_daemon: WebDaemon, origin: str | None, path: str) -> None:
    resp = upgrade(web_daemon, path, origin)
    assert resp.status == 403


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
