"""The web view's login in headless Chromium: what another port of 127.0.0.1 can get from the browser (nothing
that opens the web view), and `litbridge web`'s one-time link (off every command line, spent on first use)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import aiohttp
import pytest
from web_helpers import WebDaemon, ws_first

from litbridge.web.server import WS_UNAUTHORIZED

WAIT = 30_000  # ms

# A page on another port of the same host: it reports what it can see of the web view's secrets (cookies,
# storage) and whether it can open the web view's WebSocket or log in there.
SNOOP = """<!doctype html><meta charset="utf-8"><title>another port</title><script>
(async () => {
  const target = new URLSearchParams(location.search).get("target");
  const out = { cookie: document.cookie, session: JSON.stringify(sessionStorage),
                local: JSON.stringify(localStorage), ws: "never opened", ws_messages: 0 };
  try {
    const r = await fetch("http://" + target + "/login", { method: "POST", credentials: "include",
      headers: { "Content-Type": "application/json" }, body: "{}" });
    out.login = r.status;
  } catch (e) { out.login = "blocked: " + e; }
  await new Promise((done) => {
    const ws = new WebSocket("ws://" + target + "/ws/events");
    ws.onopen = () => { out.ws = "opened"; ws.send(JSON.stringify({ cmd: "list" })); };
    ws.onmessage = () => { out.ws_messages += 1; };
    ws.onclose = (e) => { out.ws_close = e.code; done(); };
    setTimeout(done, 5000);
  });
  await fetch("/report", { method: "POST", body: JSON.stringify(out) });
})();
</script>"""


class Snoop:
    """An HTTP server on another loopback port that records every request the browser makes to it."""

    def __init__(self) -> None:
        self.requests: list[dict[str, str]] = []
        self.report: dict[str, Any] | None = None
        self.reported = threading.Event()
        snoop = self

        class Handler(BaseHTTPRequestHandler):
            def _record(self) -> bytes:
                snoop.requests.append({"path": self.path, **{k.lower(): v for k, v in self.headers.items()}})
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else b""

            def do_GET(self) -> None:
                self._record()
                body = SNOOP.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                snoop.report = json.loads(self._record())
                self.send_response(204)
                self.end_headers()
                snoop.reported.set()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Snoop:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def snoop() -> Iterator[Snoop]:
    with Snoop() as s:
        yield s


def test_another_port_of_the_host_gets_nothing_that_opens_the_web_view(
    web_daemon: WebDaemon, page: Any, snoop: Snoop
) -> None:
    """The browser is logged in to the web view; a page served by another (local user's) server on another port
    of 127.0.0.1 is then visited in the same browser. Browsers send a host's cookies to every port of it, so no
    cookie may carry anything; the credential lives in the web view origin's sessionStorage."""
    assert page.evaluate("() => sessionStorage.getItem('litbridge.credential')")  # logged in, by the fixture
    assert page.context.cookies() == []
    other = page.context.new_page()
    other.goto(f"http://127.0.0.1:{snoop.port}/?target={web_daemon.host_port}")
    assert snoop.reported.wait(60), "the page on the other port never reported"
    report = snoop.report or {}
    # what the other port's server received from the browser: no cookie at all
    assert [r for r in snoop.requests if "cookie" in r] == []
    # what its page could read: nothing of the web view's
    assert report["cookie"] == "" and report["session"] == "{}" and report["local"] == "{}"
    # and it could neither log in nor open the web view's WebSocket
    assert report["login"] != 200 and report["ws"] == "never opened" and report["ws_messages"] == 0
    # every value the other side saw, tried as a credential with a forged Origin, opens nothing
    seen = {v for r in snoop.requests for v in r.values()} | {str(v) for v in report.values()}
    for value in sorted(seen):
        msg, code = ws_first(web_daemon, "/ws/events", json.dumps({"auth": value}))
        assert code == WS_UNAUTHORIZED and msg.type != aiohttp.WSMsgType.TEXT, value
    other.close()


def _recorder(tmp_path: Path) -> tuple[str, Path]:
    """A stand-in browser (`$BROWSER`) that records the argv it was started with."""
    out = tmp_path / "argv.json"
    script = tmp_path / "browser.py"
    script.write_text(f"import json, sys\nopen({str(out)!r}, 'w').write(json.dumps(sys.argv))\n")
    return f"{sys.executable} {script} %s", out


def test_litbridge_web_opens_a_one_time_link_that_is_on_no_command_line(
    web_daemon: WebDaemon, browser: Any, tmp_path: Path
) -> None:
    browser_cmd, argv_file = _recorder(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "litbridge", "web", "--socket", web_daemon.socket],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "BROWSER": browser_cmd},
    )
    assert proc.returncode == 0, proc.stderr
    argv = json.loads(argv_file.read_text())
    opened = argv[-1]
    # the browser's command line (readable by every local user in /proc/PID/cmdline) holds only a file's path
    assert opened.startswith("file://") and "code=" not in " ".join(argv) and "token" not in " ".join(argv)
    assert "code=" not in proc.stdout + proc.stderr
    forwarder = Path(unquote(urlparse(opened).path))
    st, dir_st = forwarder.stat(), forwarder.parent.stat()
    assert stat.S_IMODE(st.st_mode) == 0o600 and stat.S_IMODE(dir_st.st_mode) == 0o700
    assert st.st_uid == os.getuid() == dir_st.st_uid

    first = browser.new_context()
    pg = first.new_page()
    pg.goto(opened)
    pg.wait_for_function("() => document.querySelector('#conn').dataset.state === 'open'", timeout=WAIT)
    assert pg.url == web_daemon.url  # the code left the address bar (and the history entry)
    assert "code" not in pg.evaluate("() => location.hash")
    assert first.cookies() == []
    pg.reload()  # the tab's login survives a reload (sessionStorage), with no code
    pg.wait_for_function("() => document.querySelector('#conn').dataset.state === 'open'", timeout=WAIT)

    second = browser.new_context()  # the same link again, e.g. from the history or the file: spent
    pg2 = second.new_page()
    pg2.goto(opened)
    pg2.wait_for_function("() => document.querySelector('#conn').dataset.state === 'login'", timeout=WAIT)
    assert "already used or has expired" in pg2.locator("#conn").inner_text()
    assert "litbridge web" in pg2.locator("#conn").inner_text()
    fresh = second.new_page()  # a page of the origin with no login at all
    fresh.goto(web_daemon.url)
    fresh.wait_for_function("() => document.querySelector('#conn').dataset.state === 'login'", timeout=WAIT)
    assert pg2.evaluate("() => window.litbridge.events.length") == 0
    second.close()
    first.close()
