"""The web view's browser notifications in headless Chromium: the page raises a Notification for a finished turn
only while its tab is hidden and notifications are on. The Notification API and `document.visibilityState` are
replaced by an init script (headless Chromium shows no notifications and is never hidden), so what is tested
is the page's own decision: when to notify, with what title and body."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
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
