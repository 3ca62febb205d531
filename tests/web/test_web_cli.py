"""`litbridge serve --web` argument handling and `litbridge web`'s link (no browser needed)."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from lbd_helpers import check_event, start_daemon
from web_helpers import WebDaemon

from litbridge.web import parse_address


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("8765", ("127.0.0.1", 8765)),
        ("0", ("127.0.0.1", 0)),
        (":8765", ("127.0.0.1", 8765)),
        ("localhost:80", ("localhost", 80)),
        ("0.0.0.0:8765", ("0.0.0.0", 8765)),
        ("[::1]:8765", ("::1", 8765)),
    ],
)
def test_parse_address(value: str, expected: tuple[str, int]) -> None:
    assert parse_address(value) == expected


@pytest.mark.parametrize("value", ["", "web", "127.0.0.1:", "1:2:x", "70000", "-1"])
def test_parse_address_rejects(value: str) -> None:
    with pytest.raises(ValueError, match="--web"):
        parse_address(value)


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "litbridge", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_serve_rejects_a_bad_web_address(tmp_path: object) -> None:
    proc = run_cli("serve", "--socket", f"{tmp_path}/x.sock", "--web", "nope")
    assert proc.returncode == 2
    assert "--web wants [HOST:]PORT" in proc.stderr


def test_web_prints_a_fresh_one_time_link(web_daemon: WebDaemon) -> None:
    first = run_cli("web", "--print", "--socket", web_daemon.socket)
    second = run_cli("web", "--print", "--socket", web_daemon.socket)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    link = first.stdout.strip()
    assert link.startswith(web_daemon.url + "#code=") and link != second.stdout.strip()
    host, port = web_daemon.host_port.rsplit(":", 1)
    for expected in (200, 401):  # the code buys one login, then it is spent
        conn = http.client.HTTPConnection(host, int(port), timeout=20)
        body = json.dumps({"code": link.split("#code=", 1)[1]})
        conn.request(
            "POST", "/login", body, {"Origin": web_daemon.origin, "Content-Type": "application/json"}
        )
        assert conn.getresponse().status == expected
        conn.close()


def test_web_without_a_daemon_says_so(tmp_path: object) -> None:
    proc = run_cli("web", "--print", "--socket", f"{tmp_path}/none.sock")
    assert proc.returncode == 1
    assert "litbridge serve --web" in proc.stderr


def test_web_on_a_daemon_without_a_web_view_says_so(tmp_path: object) -> None:
    sock = f"{tmp_path}/plain.sock"
    daemon = start_daemon(sock)
    try:
        proc = run_cli("web", "--print", "--socket", sock)
        with socket.socket(socket.AF_UNIX) as s:  # the reply is an error event of the schema
            s.settimeout(30)
            s.connect(sock)
            s.sendall(b'{"cmd":"web_login","id":1}\n')
            reply = b""
            while reply.count(b"\n") < 2:
                reply += s.recv(65536)
    finally:
        assert daemon.stop() == 0
    assert proc.returncode == 1
    assert "no web view" in proc.stderr and "litbridge serve --web" in proc.stderr
    error = json.loads(reply.split(b"\n")[1])
    check_event(error)
    assert error["event"] == "error" and error["code"] == "no_web_view" and error["re"] == 1


def test_serve_exits_when_the_web_port_is_taken(tmp_path: object) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        sock = f"{tmp_path}/busy.sock"
        proc = run_cli("serve", "--socket", sock, "--web", f"127.0.0.1:{port}")
    assert proc.returncode == 1
    assert "cannot listen" in proc.stderr
    for suffix in ("", ".web", ".token", ".attach"):
        assert not os.path.exists(sock + suffix), suffix


def test_the_screenshot_script_imports() -> None:
    """docs/make_web_screenshot.py (what makes docs/web-view.png) is run by hand, never by the suite: it still
    compiles, its imports (playwright, the fixtures' chromium helpers) resolve, and it has its `main`."""
    import importlib.util

    pytest.importorskip("playwright.sync_api", reason="playwright is a test extra")
    path = Path(__file__).resolve().parents[2] / "docs" / "make_web_screenshot.py"
    spec = importlib.util.spec_from_file_location("make_web_screenshot", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # runs nothing but its imports and definitions (main is behind __main__)
    assert callable(module.main) and module.MESSAGES
