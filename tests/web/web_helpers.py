"""Helpers for the web view tests: a real `litbridge serve --web 127.0.0.1:0` daemon (`WebDaemon`) and the
Chromium launch flags. The fixtures are in conftest.py; test modules import this module by its own name."""

from __future__ import annotations

import asyncio
import concurrent.futures
import http.client
import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from lbd_helpers import DaemonProc, check_event, start_daemon

TESTS = Path(__file__).resolve().parents[1]

ARTIFACTS = Path(os.environ.get("LITBRIDGE_TEST_ARTIFACTS", TESTS.parent / ".artifacts")) / "web"


class WebDaemon:
    """A daemon with its web view: `url`, `login_link()` (a fresh one-time link), sync `request` over its
    socket."""

    def __init__(self, proc: DaemonProc, url: str) -> None:
        self.proc = proc
        self.socket = proc.socket
        self.url = url
        self.host_port = url.split("/")[2]
        self.origin = f"http://{self.host_port}"

    def login_link(self) -> str:
        """A fresh one-time login link (`web_login`), as `litbridge web` gets it."""
        return str(self.request({"cmd": "web_login"}, "web_login")["url"])

    def login_code(self) -> str:
        return self.login_link().split("#code=", 1)[1]

    def credential(self) -> str:
        """What the page gets for a code: a browser session's credential (POST /login, same origin)."""
        host, port = self.host_port.rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=20)
        try:
            body = json.dumps({"code": self.login_code()})
            conn.request("POST", "/login", body, {"Origin": self.origin, "Content-Type": "application/json"})
            resp = conn.getresponse()
            assert resp.status == 200, resp.status
            return str(json.loads(resp.read())["credential"])
        finally:
            conn.close()

    def request(
        self,
        cmd: dict[str, Any],
        reply: str | None = None,
        timeout: float = 60.0,
        until: Callable[[dict[str, Any]], bool] | None = None,
        rid: str = "t",
    ) -> dict[str, Any]:
        """One command over a fresh control connection; returns the reply echoing its id `rid` (`reply`: the
        name of the event to wait for, else the first one; an error always ends the wait), or with
        `until`, the first event (of any client) it accepts. A `send` is idempotent by its id: give each
        message its own `rid`."""
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(timeout)
            s.connect(self.socket)
            s.sendall(orjson.dumps({**cmd, "id": rid}) + b"\n")
            buf = b""
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    ev = orjson.loads(line)
                    check_event(ev)
                    if until is not None:
                        if until(ev) or (ev.get("re") == rid and ev.get("event") == "error"):
                            return ev
                    elif ev.get("re") == rid and (reply is None or ev.get("event") in (reply, "error")):
                        return ev
        raise TimeoutError(f"no reply to {cmd}")


def ws_first(wd: WebDaemon, path: str, first: str | bytes | None) -> tuple[Any, int | None]:
    """Open a WebSocket with the web view's own Origin (as any local process can forge it), send `first`,
    and return the first thing the server sends (a message or the close) and the close code."""

    async def run() -> tuple[Any, int | None]:
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(wd.url.rstrip("/") + path, origin=wd.origin) as ws:
                if isinstance(first, str):
                    await ws.send_str(first)
                elif first is not None:
                    await ws.send_bytes(first)
                msg = await ws.receive(timeout=40)
                return msg, ws.close_code

    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # its own thread: Playwright's loop may run here
        return pool.submit(asyncio.run, run()).result()


def start_web_daemon(directory: str, env: dict[str, str] | None = None) -> WebDaemon:
    sock = os.path.join(directory, "d.sock")
    proc = start_daemon(sock, "--web", "127.0.0.1:0", env=env)
    try:  # the daemon writes <socket>.web once its web view listens (atomically: never half a file)
        info = Path(sock + ".web")
        deadline = time.monotonic() + 20
        while not info.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        url = json.loads(info.read_text())["url"]
    except BaseException:
        proc.stop()  # never leave a daemon behind a failed start
        raise
    return WebDaemon(proc, url)


# --------------------------------------------------------------------------------------- the page, step by step
def open_session(page: Any, key: str, timeout: float = 30_000) -> None:
    """Click session `key` in the list and wait for the page to select it."""
    page.locator(f'#sessions tr[data-session="{key}"]').click(timeout=timeout)
    page.wait_for_function("k => window.litbridge.state.selected === k", arg=key, timeout=timeout)


def chat(page: Any, key: str) -> Any:
    """The chat log of session `key`."""
    return page.locator(f'.chat-log[data-session="{key}"]')


def screen_rows(wd: WebDaemon, key: str) -> list[str]:
    """The session's screen as the daemon's own emulator has it (`dump`)."""
    return wd.request({"cmd": "dump", "session": key}, "dump")["capture"].split("\n")


def wait_rows_equal_dump(page: Any, wd: WebDaemon, key: str, timeout: float) -> None:
    """Wait until the xterm.js rows equal the daemon's `dump` of the session, row for row. The dump is taken again
    on each try: a CLI that repaints after one (a late footer or hint on a busy machine) is compared with its
    newest screen, not held to an old one."""
    same = (
        "rows => { const r = window.litbridge.rows().map(x => x.trimEnd());"
        " return r.length === rows.length && r.every((x, i) => x === rows[i]); }"
    )
    deadline = time.monotonic() + timeout / 1000
    while True:
        rows = screen_rows(wd, key)
        try:
            page.wait_for_function(same, arg=rows, timeout=2000)
            return
        except Exception:
            if time.monotonic() >= deadline:
                assert page.evaluate("() => window.litbridge.rows().map(x => x.trimEnd())") == rows
                raise


def open_when_idle(page: Any, wd: WebDaemon, key: str, timeout: float) -> Any:
    """Open session `key`, wait for it to read idle and for its terminal to show the CLI's screen as `dump` has
    it; returns the session's chat log."""
    open_session(page, key, timeout)
    page.wait_for_function(
        "k => window.litbridge.state.sessions.get(k)?.state === 'idle'", arg=key, timeout=timeout
    )
    wait_rows_equal_dump(page, wd, key, timeout)
    return chat(page, key)


def send_from_page(page: Any, text: str) -> None:
    """Type a message into the chat box and press Enter (the page sends it as `send`)."""
    box = page.locator("#send textarea")
    box.fill(text)
    box.press("Enter")


def first_answer(log: Any, timeout: float) -> tuple[str, list[str]]:
    """Wait for the chat's first completed answer; -> (its bold text, its list items) as the markdown rendered."""
    done = log.locator(".msg.assistant.done").first
    done.wait_for(timeout=timeout)
    return done.locator("strong").inner_text(), done.locator("li").all_inner_texts()


def answer_by_click(page: Any, key: str, label: str, timeout: float) -> Any:
    """Wait for the chat's first question, click the option button carrying `label`, wait for it to close."""
    question = chat(page, key).locator(".question").first
    question.wait_for(timeout=timeout)
    question.locator("button", has_text=label).first.click()
    page.wait_for_function(
        'k => document.querySelector(`.chat-log[data-session="${k}"] .question.closed`) !== null',
        arg=key,
        timeout=timeout,
    )
    return question


def kill_from_page(page: Any, key: str, timeout: float) -> None:
    """Kill the session with its row's button (accepting the confirm dialog); the detail pane reads dead."""
    page.once("dialog", lambda d: d.accept())
    page.locator(f'#sessions tr[data-session="{key}"] button.kill').click()
    page.wait_for_function(
        "() => document.querySelector('#detail-state').textContent === 'dead'", timeout=timeout
    )
