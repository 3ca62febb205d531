"""`litbridge serve --web` argument handling and `litbridge web`'s link (no browser needed)."""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys

import pytest
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


def test_web_prints_a_working_link(web_daemon: WebDaemon) -> None:
    proc = run_cli("web", "--print", "--socket", web_daemon.socket)
    assert proc.returncode == 0, proc.stderr
    link = proc.stdout.strip()
    assert link == web_daemon.link
    host, port = web_daemon.host_port.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=20)
    conn.request("GET", link.split(web_daemon.host_port, 1)[1])
    resp = conn.getresponse()
    assert resp.status == 200 and b"xterm.js" in resp.read()


def test_web_without_a_web_view_says_so(tmp_path: object) -> None:
    proc = run_cli("web", "--print", "--socket", f"{tmp_path}/none.sock")
    assert proc.returncode == 1
    assert "litbridge serve --web" in proc.stderr


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
