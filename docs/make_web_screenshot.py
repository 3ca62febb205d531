#!/usr/bin/env python3
"""Make docs/web-view.png: the web view of a clean demo session, in headless Chromium.

A throwaway daemon (socket in a temp dir) runs bash under the generic driver in ~/project (created for the
shot, and removed afterwards when this script created it and it is still empty), with a `~/project $`
prompt; two messages are sent from the page and the page is captured. Needs Debian's chromium and the
test extras (playwright): `.venv/bin/python docs/make_web_screenshot.py [OUT.png]`.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from fetch_fixtures import CHROMIUM_ARGS, chromium_binary  # noqa: E402

MESSAGES = [
    "uname -s && bash --version | head -1",
    "printf '%s\\n' 'plain output keeps its lines' '*stars* and _underscores_ stay'",
]


def request(sock: str, cmd: dict, reply: str) -> dict:
    """One command over a fresh control connection; the reply that echoes its id."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(60)
        s.connect(sock)
        s.sendall(json.dumps({**cmd, "id": "shot"}).encode() + b"\n")
        buf = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                raise EOFError(cmd)
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                ev = json.loads(line) if line.strip() else {}
                if ev.get("re") == "shot" and ev.get("event") in (reply, "error"):
                    return ev


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "web-view.png"
    exe = chromium_binary()
    if exe is None:
        print("no chromium: run tests/fetch_fixtures.py first", file=sys.stderr)
        return 1
    project = Path.home() / "project"
    made = not project.exists()
    project.mkdir(exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="lbshot-"))
    sock = str(tmp / "d.sock")
    daemon = subprocess.Popen(
        [sys.executable, "-m", "litbridge", "serve", "--socket", sock, "--web", "127.0.0.1:0"],
        stdout=subprocess.DEVNULL,
        stderr=open(tmp / "daemon.log", "wb"),
    )
    try:
        while not os.path.exists(sock + ".web"):  # written once the web view listens
            if daemon.poll() is not None:
                raise RuntimeError((tmp / "daemon.log").read_text())
            time.sleep(0.05)
        bash = {
            "cli": "bash",
            "args": ["--norc", "--noprofile"],
            "env": {"PS1": r"\w $ ", "HISTFILE": "/dev/null"},
            "working_dir": str(project),
            "quiescence": 0.6,
        }
        assert request(sock, {"cmd": "create", "session": "project", **bash}, "ready")["event"] == "ready"
        python = {"cli": "python3", "args": ["-q"], "working_dir": str(project), "quiescence": 0.6}
        assert request(sock, {"cmd": "create", "session": "repl", **python}, "ready")["event"] == "ready"
        link = request(sock, {"cmd": "web_login"}, "web_login")["url"]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
            page = browser.new_context(viewport={"width": 1800, "height": 900}).new_page()
            page.goto(link)
            page.wait_for_function("() => document.querySelector('#conn').dataset.state === 'open'")
            page.locator('#sessions tr[data-session="project"]').click()
            page.wait_for_function("() => window.litbridge.state.sessions.get('project')?.state === 'idle'")
            for i, message in enumerate(MESSAGES, 1):
                box = page.locator("#send textarea")
                box.fill(message)
                box.press("Enter")
                page.locator(".chat-log[data-session='project'] .msg.assistant.done").nth(i - 1).wait_for()
            page.wait_for_timeout(800)  # the terminal's last paint
            page.screenshot(path=str(out))
            browser.close()
        print(f"wrote {out}")
    finally:
        daemon.terminate()
        daemon.wait(30)
        shutil.rmtree(tmp, ignore_errors=True)
        if made and not any(project.iterdir()):
            project.rmdir()
    return 0


if __name__ == "__main__":
    sys.exit(main())
