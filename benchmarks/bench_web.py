"""Web view benchmarks: a real `litbridge serve --web` subprocess and headless Chromium (Debian's, via Playwright).

- paint latency: a CLI under the PTY prints timestamped lines; the page's xterm.js records when each line is
  first rendered (`onRender`) -> PTY write to painted, p50/p99; a raw `attach` client on the same session in the
  same run gives the daemon's own part (PTY write -> bytes at a socket client).
- 20 sessions open in one page: 20 CLIs printing steadily; the daemon's CPU over the same window with no viewer,
  with 20 `attach` clients, and with one page holding 20 terminals (one /ws/attach each) plus its events stream.
Prints a table (and writes .benchmarks/web-{latest,smoke}.md); never fails on a figure. Skips without chromium.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from daemon_support import _accepts, cpu_seconds, pct  # type: ignore[import-not-found]
from fetch_fixtures import CHROMIUM_ARGS, chromium_binary
from report import SMOKE, report_at_end  # type: ignore[import-not-found]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
LINES = 20 if SMOKE else 400  # timestamped lines for the latency run
INTERVAL = 0.02  # s between them
SESSIONS = 3 if SMOKE else 20
WINDOW = 1.5 if SMOKE else 10.0  # s of steady output per CPU measurement
pytestmark = pytest.mark.timeout(900)

# The CLI: says it waits (a program that prints nothing is taken as ready only after 3 s), waits for one line, then
# prints `mark <i> <wall time>` every INTERVAL, then idles.
MARKER = (
    "import sys, time\n"
    "sys.stdout.write('waiting for go\\n'); sys.stdout.flush()\n"
    "sys.stdin.readline()\n"
    "n, dt = int(sys.argv[1]), float(sys.argv[2])\n"
    "for i in range(n):\n"
    "    sys.stdout.write(f'mark {i} {time.time():.6f}\\n'); sys.stdout.flush(); time.sleep(dt)\n"
    "sys.stdin.readline()\n"
)

ROWS: list[tuple[str, str, str]] = []
MARK_RE = re.compile(rb"mark (\d+) (\d+\.\d+)\r?\n")


def _table() -> str | None:
    if not ROWS:
        return None
    return "\n".join(
        ["| measure | case | value |", "|---|---|---|"] + [f"| {a} | {b} | {c} |" for a, b, c in ROWS]
    )


@pytest.fixture(scope="module", autouse=True)
def _report(request: pytest.FixtureRequest) -> None:
    report_at_end(request, "web", "litbridge web view (same run)", _table)


# ---------------------------------------------------------------------------------------------- fixtures


class WebDaemon:
    def __init__(self, proc: subprocess.Popen[bytes], sock: str, url: str) -> None:
        self.proc, self.socket, self.url = proc, sock, url

    def request(self, cmd: dict[str, Any], reply: str, timeout: float = 60.0) -> dict[str, Any]:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(timeout)
            s.connect(self.socket)
            s.sendall(json.dumps({**cmd, "id": "b"}).encode() + b"\n")
            buf = b""
            while True:
                chunk = s.recv(1 << 20)
                if not chunk:
                    raise EOFError(cmd)
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    ev = json.loads(line) if line else {}
                    if ev.get("re") == "b" and ev.get("event") in (reply, "error"):
                        return ev

    def create(self, name: str, lines: int, interval: float) -> None:
        ev = self.request(
            {
                "cmd": "create",
                "session": name,
                "cli": sys.executable,
                "args": ["-c", MARKER, str(lines), str(interval)],
                "working_dir": tempfile.gettempdir(),
            },
            "ready",
        )
        assert ev["event"] == "ready", ev

    def go(self, name: str) -> None:
        self.request({"cmd": "input", "session": name, "content": "go"}, "input_sent")


@contextmanager
def web_daemon() -> Iterator[WebDaemon]:
    tmp = Path(tempfile.mkdtemp(prefix="lbweb-"))
    sock = str(tmp / "d.sock")
    err = open(tmp / "daemon.log", "wb")
    argv = [sys.executable, "-m", "litbridge", "serve", "--socket", sock]
    proc = subprocess.Popen(
        [*argv, "--web", "127.0.0.1:0", "--log-level", "warning"],
        stdout=subprocess.DEVNULL,
        stderr=err,
    )
    try:
        deadline = time.monotonic() + 30
        while not (_accepts(sock) and os.path.exists(sock + ".web")):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((tmp / "daemon.log").read_text()[-2000:])
            time.sleep(0.02)
        url = json.loads(Path(sock + ".web").read_text())["url"]
        yield WebDaemon(proc, sock, url)
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        err.close()
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    exe = chromium_binary()
    if exe is None:
        pytest.skip("no chromium (tests/fetch_fixtures.py installs it with apt-get when run as root)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


def open_page(browser: Any, wd: WebDaemon) -> Any:
    page = browser.new_context(viewport={"width": 1800, "height": 1000}).new_page()
    page.goto(wd.request({"cmd": "web_login"}, "web_login")["url"])  # a one-time login link
    page.wait_for_function("() => document.querySelector('#conn').dataset.state === 'open'")
    return page


class AttachReader:
    """A raw attach client (the `litbridge attach` transport) that stamps each `mark` line when it arrives."""

    def __init__(self, sock: str, name: str) -> None:
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(sock + ".attach")
        self.s.sendall(json.dumps({"session": name}).encode() + b"\n")
        self.seen: dict[int, float] = {}
        self.bytes = 0
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        buf = b""
        while True:
            try:
                data = self.s.recv(1 << 16)
            except OSError:
                return
            if not data:
                return
            now = time.time()
            self.bytes += len(data)
            buf += data
            for m in MARK_RE.finditer(buf):
                i = int(m.group(1))
                if i not in self.seen:
                    self.seen[i] = now - float(m.group(2))
            buf = buf[-100:]

    def close(self) -> None:
        self.s.close()


# ---------------------------------------------------------------------------------------------- benchmarks

PAINT_PROBE = """
() => {
  const lb = window.litbridge;
  lb.paint = {};
  lb.term.onRender(() => {
    const now = performance.timeOrigin + performance.now();
    for (const row of lb.rows()) {
      const m = /^mark (\\d+) (\\d+\\.\\d+)/.exec(row);
      if (m && !(m[1] in lb.paint)) lb.paint[m[1]] = now / 1000 - parseFloat(m[2]);
    }
  });
}
"""


def test_pty_output_to_painted(browser: Any) -> None:
    with web_daemon() as wd:
        wd.create("lat", LINES, INTERVAL)
        page = open_page(browser, wd)
        page.locator('#sessions tr[data-session="lat"]').click()
        page.wait_for_function(
            "() => document.querySelector('#term-status').textContent.includes('read-only')"
        )
        page.evaluate(PAINT_PROBE)
        raw = AttachReader(wd.socket, "lat")
        wd.go("lat")
        page.wait_for_function(
            f"() => Object.keys(window.litbridge.paint).length >= {LINES} * 0.95", timeout=120_000
        )
        time.sleep(0.5)  # let the raw reader take the last lines too (not an assertion)
        paint = [v * 1000 for v in page.evaluate("() => window.litbridge.paint").values()]
        at_socket = [v * 1000 for v in raw.seen.values()]
        raw.close()
        page.context.close()
    for label, values in (
        ("PTY write -> painted in the page", paint),
        ("PTY write -> attach socket", at_socket),
    ):
        ROWS.append((label, f"p50 ({len(values)} lines)", f"{pct(values, 50):.1f} ms"))
        ROWS.append((label, "p99", f"{pct(values, 99):.1f} ms"))
    assert paint, "no line was painted"


def _cpu_window(wd: WebDaemon, names: list[str]) -> float:
    """The daemon's CPU seconds per wall second while every session prints for WINDOW seconds."""
    for n in names:
        wd.go(n)
    time.sleep(WINDOW * 0.1)  # measure the steady part: output has started everywhere
    c0, t0 = cpu_seconds(wd.proc.pid), time.monotonic()
    time.sleep(WINDOW)
    return (cpu_seconds(wd.proc.pid) - c0) / (time.monotonic() - t0)


MULTI_TERMINALS = """
names => {
  window.benchTerms = names.map(name => {
    const div = document.createElement('div');
    document.body.append(div);
    const t = new window.Terminal({cols: 200, rows: 50, scrollback: 0});
    t.open(div);
    const ws = new WebSocket('ws://' + location.host + '/ws/attach?session=' + encodeURIComponent(name));
    ws.binaryType = 'arraybuffer';
    const st = {t, ws, bytes: 0, open: false};
    ws.onopen = () => {  // the page's credential first, as app.js sends it
      ws.send(JSON.stringify({auth: sessionStorage.getItem('litbridge.credential')}));
      st.open = true;
    };
    ws.onmessage = m => { st.bytes += m.data.byteLength; t.write(new Uint8Array(m.data)); };
    return st;
  });
}
"""


def test_twenty_sessions_in_one_page_vs_attach(browser: Any) -> None:
    lines = int(WINDOW * 1.5 / 0.01) + 50
    results: dict[str, float] = {}
    for case in ("no viewer", f"{SESSIONS} attach clients", f"one page, {SESSIONS} terminals"):
        with web_daemon() as wd:
            names = [f"s{i}" for i in range(SESSIONS)]
            with ThreadPoolExecutor(
                len(names)
            ) as pool:  # the creates side by side, as the web view's users do
                list(pool.map(lambda n: wd.create(n, lines, 0.01), names))
            viewers: list[AttachReader] = []
            page = None
            if case.endswith("attach clients"):
                viewers = [AttachReader(wd.socket, n) for n in names]
            elif case.startswith("one page"):
                page = open_page(browser, wd)
                page.evaluate(MULTI_TERMINALS, names)
                page.wait_for_function("() => window.benchTerms.every(s => s.open)")
            results[case] = _cpu_window(wd, names)
            if page is not None:
                got = page.evaluate("() => window.benchTerms.map(s => s.bytes)")
                assert all(b > 0 for b in got), got
                page.context.close()
            for v in viewers:
                assert v.bytes > 0
                v.close()
    for case, value in results.items():
        ROWS.append((f"daemon CPU, {SESSIONS} sessions printing", case, f"{value * 100:.1f} % of a core"))
