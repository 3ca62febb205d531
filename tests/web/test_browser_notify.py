"""The web view's browser notifications in headless Chromium: the page raises a Notification for a finished turn
only while its tab is hidden and notifications are on. The Notification API and `document.visibilityState` are
replaced by an init script (headless Chromium shows no notifications and is never hidden), so what is tested
is the page's own decision: when to notify, with what title and body."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _daemon import write_rift
from lbd_helpers import bash_create
from web_helpers import WebDaemon

WAIT = 60_000  # ms

# Records every Notification the page makes; permission starts at "default" and the page's button asks for it;
# window.__hidden decides what document.visibilityState says.
STUBS = """
window.__notes = [];
window.__hidden = false;
Object.defineProperty(Document.prototype, "visibilityState", {
  configurable: true, get() { return window.__hidden ? "hidden" : "visible"; } });
class RecordedNotification {
  constructor(title, options) { window.__notes.push({ title, body: options && options.body, tag: options && options.tag }); }
  close() {}
  static requestPermission() { RecordedNotification.permission = "granted"; return Promise.resolve("granted"); }
}
RecordedNotification.permission = "default";
window.Notification = RecordedNotification;
"""


@pytest.fixture
def stubbed_page(browser: Any, web_daemon: WebDaemon) -> Iterator[Any]:
    """The page opened through a one-time `litbridge web` link, with the stubs installed before its script."""
    ctx = browser.new_context(viewport={"width": 1600, "height": 900})
    ctx.add_init_script(STUBS)
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.goto(web_daemon.login_link())
    pg.wait_for_function("() => document.querySelector('#conn').dataset.state === 'open'", timeout=WAIT)
    yield pg
    ctx.close()
    assert not errors, errors


def _turn(wd: WebDaemon, page: Any, key: str, text: str) -> None:
    """Send `echo TEXT` from a socket client and wait until the page has applied its `complete`."""
    accepted = wd.request({"cmd": "send", "session": key, "content": f"echo {text}"}, "accepted", rid=text)
    assert accepted["event"] == "accepted" and "duplicate" not in accepted, accepted
    page.wait_for_function(
        "t => window.litbridge.events.some(e => e.event === 'complete' && e.turn_id === t)",
        arg=accepted["turn_id"],
        timeout=WAIT,
    )


def test_notifies_only_while_hidden(stubbed_page: Any, web_daemon: WebDaemon) -> None:
    page, wd, key = stubbed_page, web_daemon, "notify-web"
    button = page.locator("#notify")
    assert button.is_visible() and button.text_content() == "Enable notifications"
    button.click()  # the permission prompt (stubbed: granted)
    page.wait_for_function("() => document.querySelector('#notify').textContent === 'Notifications on'")
    created = wd.request(bash_create(key), "ready")
    assert created["event"] == "ready", created
    try:
        page.evaluate("() => { window.__hidden = true; }")
        _turn(wd, page, key, "while-hidden")
        page.wait_for_function("() => window.__notes.length > 0", timeout=WAIT)
        notes = page.evaluate("() => window.__notes")
        assert len(notes) == 1, notes
        assert notes[0]["title"] == f"litbridge: {key} finished a turn"
        assert "while-hidden" in notes[0]["body"] and notes[0]["tag"] == f"{key}:complete"

        page.evaluate("() => { window.__hidden = false; }")
        _turn(wd, page, key, "while-visible")  # the user is looking: no notification

        # a turn that ended while the page was disconnected comes in the reconnect's catch-up: old news
        page.evaluate("() => { window.__hidden = true; window.litbridge.dropConnection(true); }")
        done = wd.request(
            {"cmd": "send", "session": key, "content": "echo while-away"},
            until=lambda e: e.get("event") == "complete" and e.get("session") == key,
            rid="while-away",
        )
        assert done["event"] == "complete", done
        page.evaluate("() => window.litbridge.reconnect()")
        page.wait_for_function("s => window.litbridge.caughtUp.includes(s)", arg=done["seq"], timeout=WAIT)
        assert page.evaluate("() => window.__notes.length") == 1
        page.evaluate("() => { window.__hidden = false; }")
        button.click()  # muted
        page.wait_for_function("() => document.querySelector('#notify').textContent === 'Notifications off'")
        page.evaluate("() => { window.__hidden = true; }")
        _turn(wd, page, key, "while-muted")
        assert page.evaluate("() => window.__notes.length") == 1
    finally:
        with contextlib.suppress(Exception):
            wd.request({"cmd": "kill", "session": key}, "killed")


def _applied(page: Any, name: str, key: str) -> None:
    """Wait until the page has applied an event `name` of session `key`."""
    page.wait_for_function(
        "([n, k]) => window.litbridge.events.some(e => e.event === n && e.session === k)",
        arg=[name, key],
        timeout=WAIT,
    )


def test_question_turn_error_and_exit_notify_a_kill_does_not(
    stubbed_page: Any, web_daemon: WebDaemon, tmp_path: Path
) -> None:
    """A question and a CLI that dies mid-turn notify (`turn failed`, then `CLI exited`); a turn that a kill
    ends does not (the daemon's rule: its `turn_error` is the kill's doing, not news)."""
    page, wd = stubbed_page, web_daemon
    page.locator("#notify").click()
    page.wait_for_function("() => document.querySelector('#notify').textContent === 'Notifications on'")
    (tmp_path / "bin").mkdir()
    rift = write_rift(tmp_path / "bin")
    env = {
        "PATH": f"{rift.parent}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "FAKE_RIFT_SPEED": "0",
    }
    keys = ("nw-ask", "nw-die", "nw-kill")
    try:
        ready = wd.request(
            {"cmd": "create", "session": keys[0], "cli": "rift", "working_dir": str(tmp_path), "env": env},
            "ready",
        )
        assert ready["event"] == "ready", ready
        for key in keys[1:]:
            assert wd.request(bash_create(key), "ready", rid=key)["event"] == "ready"
        page.evaluate("() => { window.__hidden = true; }")

        wd.request(
            {"cmd": "send", "session": keys[0], "content": "[ask:Pick one|red|blue]"}, "accepted", rid="ask"
        )
        _applied(page, "question", keys[0])
        wd.request({"cmd": "send", "session": keys[1], "content": "exit 3"}, "accepted", rid="die")
        _applied(page, "exited", keys[1])

        sleeping = {"cmd": "send", "session": keys[2], "content": "sleep 60"}
        assert wd.request(sleeping, "accepted", rid="sleep")["event"] == "accepted"
        for key in (keys[2], keys[0]):  # a running turn, and one blocked on a question
            assert (
                wd.request({"cmd": "kill", "session": key}, "killed", rid=f"kill-{key}")["event"] == "killed"
            )
            _applied(page, "killed", key)
        ended = page.evaluate(
            "() => window.litbridge.events.filter(e => e.event === 'turn_error').map(e => [e.session, e.kind])"
        )
        assert [keys[2], "cli_exited"] in ended, ended  # what the kill ended the page got, and kept quiet

        notes = page.evaluate("() => window.__notes")
        assert [(n["title"], n["tag"]) for n in notes] == [
            (f"litbridge: {keys[0]} asks a question", f"{keys[0]}:question"),
            (f"litbridge: {keys[1]} turn failed", f"{keys[1]}:turn_error"),
            (f"litbridge: {keys[1]} CLI exited", f"{keys[1]}:exited"),
        ], notes
        assert notes[0]["body"] == "Pick one"
        assert notes[1]["body"] == "CLI exited (code 3)" and notes[2]["body"].startswith("exit code 3")
    finally:
        for key in keys:
            with contextlib.suppress(Exception):
                wd.request({"cmd": "kill", "session": key}, "killed", rid=f"end-{key}")
