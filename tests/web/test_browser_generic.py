"""The web view in headless Chromium against a real daemon running bash under the generic driver."""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path
from typing import Any

import orjson
from _daemon import write_rift
from lbd_helpers import check_event
from web_helpers import (
    WebDaemon,
    chat,
    open_session,
    screen_rows,
    send_from_page,
    start_web_daemon,
    wait_rows_equal_dump,
)

BASH = {
    "cli": "bash",
    "args": ["--norc", "--noprofile"],
    "env": {"PS1": "$ ", "HISTFILE": "/dev/null"},
    "working_dir": "/tmp",
    "quiescence": 0.6,
}
WAIT = 30_000  # ms: the CI box is loaded


def create(wd: WebDaemon, key: str, **extra: Any) -> None:
    ev = wd.request({"cmd": "create", "session": key, **BASH, **extra}, "ready")
    assert ev["event"] == "ready", ev


def test_sessions_list_terminal_matches_dump(web_daemon: WebDaemon, page: Any) -> None:
    create(web_daemon, "g-list")
    row = page.locator('#sessions tr[data-session="g-list"]')
    row.wait_for(timeout=WAIT)
    assert row.locator(".state").inner_text() in ("idle", "starting")
    assert row.locator("td.cli").inner_text() == "bash"
    assert row.locator("td.cwd").inner_text() == "tmp"
    assert row.locator("td.cwd").get_attribute("title") == "/tmp"
    open_session(page, "g-list")
    web_daemon.request({"cmd": "input", "session": "g-list", "content": "echo web-$((6*7))"})
    page.wait_for_function("() => window.litbridge.rows().some(r => r.startsWith('web-42'))", timeout=WAIT)
    # the xterm.js rows equal the daemon's own screen (`dump`), once both have settled
    wait_rows_equal_dump(page, web_daemon, "g-list", WAIT)


def test_session_rows_are_updated_in_place_so_a_click_is_never_lost(web_daemon: WebDaemon, page: Any) -> None:
    """A row rebuilt between a click's mousedown and mouseup loses the click (seen: a session that would not
    select while the CLI started up); rows are kept and updated in place, new ones inserted in sorted order."""
    create(web_daemon, "g-rows")
    page.locator('#sessions tr[data-session="g-rows"]').wait_for(timeout=WAIT)
    page.evaluate("() => { window.__row = document.querySelector('#sessions tr[data-session=\"g-rows\"]'); }")
    seen = page.evaluate("() => window.litbridge.events.length")
    web_daemon.request({"cmd": "send", "session": "g-rows", "content": "sleep 0.3; echo rows-ok"}, "accepted")
    page.wait_for_function(
        "n => window.litbridge.events.slice(n).some(e => e.session === 'g-rows' && e.event === 'complete')",
        arg=seen,
        timeout=WAIT,
    )
    states = page.evaluate(
        "n => window.litbridge.events.slice(n).filter(e => e.session === 'g-rows' && e.event === 'state')"
        ".map(e => e.state)",
        seen,
    )
    assert len(states) >= 2, states  # the row's state did change while the element stayed
    create(web_daemon, "g-rowa")  # sorts before g-rows
    page.locator('#sessions tr[data-session="g-rowa"]').wait_for(timeout=WAIT)
    same = page.evaluate(
        "() => window.__row.isConnected && window.__row === "
        "document.querySelector('#sessions tr[data-session=\"g-rows\"]')"
    )
    assert same
    order = page.evaluate(
        "() => [...document.querySelectorAll('#sessions tbody tr')].map(r => r.dataset.session)"
    )
    assert order == sorted(order) and order.index("g-rowa") < order.index("g-rows")
    assert page.locator('#sessions tr[data-session="g-rows"] .state').inner_text() == "idle"
    open_session(page, "g-rows")
    assert page.locator('#sessions tr[data-session="g-rows"]').get_attribute("class") == "row selected"


def test_chat_message_streams_and_completes(web_daemon: WebDaemon, page: Any) -> None:
    create(web_daemon, "g-chat")
    open_session(page, "g-chat")
    send_from_page(page, "echo chat-$((2+3))")
    log = chat(page, "g-chat")
    log.locator(".msg.user", has_text="echo chat-$((2+3))").wait_for(timeout=WAIT)
    done = log.locator(".msg.assistant.done")
    done.wait_for(timeout=WAIT)
    assert "chat-5" in done.inner_text()
    assert log.locator(".msg.user .badge").count() == 0  # accepted, not queued, not failed
    events = page.evaluate("() => window.litbridge.events.filter(e => e.session === 'g-chat')")
    kinds = [e["event"] for e in events]
    assert "accepted" in kinds and kinds.index("accepted") < kinds.index("complete")
    complete = next(e for e in events if e["event"] == "complete")
    assert "chat-5" in complete["content"]


def test_streaming_queue_and_interrupt(web_daemon: WebDaemon, page: Any) -> None:
    create(web_daemon, "g-int", quiescence=5.0)  # a loaded box must not end the turn between ticks
    open_session(page, "g-int")
    send_from_page(page, "for i in $(seq 600); do echo tick-$i; sleep 0.1; done")
    log = chat(page, "g-int")
    # the response streams into a bubble that is not final yet
    page.wait_for_function(
        "() => [...document.querySelectorAll('.chat-log[data-session=\"g-int\"] .msg.assistant:not(.done)')]"
        ".some(e => e.textContent.includes('tick-3'))",
        timeout=WAIT,
    )
    send_from_page(page, "echo after-$((40+2))")
    page.wait_for_function(  # "sending…" until `accepted{queued:true}` comes back
        "() => [...document.querySelectorAll('.chat-log[data-session=\"g-int\"] .msg.user')]"
        ".some(e => e.textContent.startsWith('echo after-') && e.querySelector('.badge')?.textContent === 'queued')",
        timeout=WAIT,
    )
    page.locator("#interrupt").click()
    log.locator(".msg.assistant.interrupted").wait_for(timeout=WAIT)
    assert "tick-3" in log.locator(".msg.assistant.interrupted").inner_text()
    # the queued message runs next and completes
    log.locator(".msg.assistant.done", has_text="after-42").wait_for(timeout=WAIT)
    assert log.locator(".msg.user", has_text="echo after-").locator(".badge").count() == 0


def test_take_control_types_and_read_only_drops(web_daemon: WebDaemon, page: Any) -> None:
    create(web_daemon, "g-ctl")
    open_session(page, "g-ctl")
    page.wait_for_function("() => window.litbridge.rows().some(r => r.startsWith('$'))", timeout=WAIT)
    page.locator("#terminal").click()
    page.keyboard.type("nope")  # read-only: dropped by the server
    # the watching page is not the session's controller: a terminal attacher that comes later types
    with socket.socket(socket.AF_UNIX) as raw:
        raw.connect(web_daemon.socket + ".attach")
        raw.sendall(b'{"session":"g-ctl"}\n')
        raw.sendall(b"echo first-$((5*5))\r")
        page.wait_for_function("() => window.litbridge.rows().some(r => r === 'first-25')", timeout=WAIT)
    page.locator("#control").click()
    page.wait_for_function("() => document.querySelector('#term-status').textContent.includes('you type')")
    page.locator("#terminal").click()
    page.keyboard.type("echo typed-$((1+1))")
    page.keyboard.press("Enter")
    page.wait_for_function("() => window.litbridge.rows().some(r => r === 'typed-2')", timeout=WAIT)
    assert "$ echo typed-$((1+1))" in screen_rows(web_daemon, "g-ctl")


def test_create_and_kill_from_the_page(web_daemon: WebDaemon, page: Any) -> None:
    form = page.locator("#create")
    form.locator("input[name=session]").fill("g-made")
    form.locator("input[name=cli]").fill("bash")
    form.locator("input[name=working_dir]").fill("/tmp")
    form.locator("input[name=args]").fill("--norc --noprofile")
    form.locator("button[type=submit]").click()
    row = page.locator('#sessions tr[data-session="g-made"]')
    row.wait_for(timeout=WAIT)
    page.wait_for_function(
        "() => window.litbridge.state.sessions.get('g-made')?.state === 'idle'", timeout=WAIT
    )
    assert web_daemon.request({"cmd": "dump", "session": "g-made"})["event"] == "dump"
    page.once("dialog", lambda d: d.accept())
    row.locator("button.kill").click()
    page.wait_for_function(
        "() => document.querySelector('#sessions tr[data-session=\"g-made\"] .state').textContent === 'dead'",
        timeout=WAIT,
    )
    assert page.locator("#detail-state").inner_text() == "dead"
    chat(page, "g-made").locator(".msg.notice", has_text="session killed").wait_for(timeout=WAIT)
    assert row.locator("button.kill").is_disabled()
    assert web_daemon.request({"cmd": "dump", "session": "g-made"})["code"] == "session_not_found"


def test_reconnect_catches_up_without_duplicates_or_gaps(web_daemon: WebDaemon, page: Any) -> None:
    create(web_daemon, "g-re")
    open_session(page, "g-re")
    page.evaluate("() => window.litbridge.dropConnection(true)")  # a blip; the page stays away until told
    page.wait_for_function("() => document.querySelector('#conn').dataset.state === 'closed'")
    # while the page is away: a turn from another client runs to completion
    complete = web_daemon.request(
        {"cmd": "send", "session": "g-re", "content": "echo gap-$((3*3))"},
        until=lambda e: e.get("event") == "complete" and e.get("session") == "g-re",
    )
    assert complete["event"] == "complete", complete
    page.evaluate("() => window.litbridge.reconnect()")
    page.wait_for_function("() => document.querySelector('#conn').dataset.state === 'open'", timeout=WAIT)
    log = chat(page, "g-re")
    log.locator(".msg.assistant.done", has_text="gap-9").wait_for(timeout=WAIT)
    assert log.locator(".msg.assistant.done", has_text="gap-9").count() == 1
    assert complete["seq"] in page.evaluate("() => window.litbridge.caughtUp")  # it came from the replay
    applied = page.evaluate("() => window.litbridge.applied")
    assert len(applied) == len(set(applied)), "an event was applied twice"
    # no gap: every event the daemon still keeps was applied
    ring: list[int] = []
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(20)
        s.connect(web_daemon.socket)
        s.sendall(orjson.dumps({"cmd": "hello", "since_seq": 0, "id": "h"}) + b"\n")
        buf = b""
        while True:
            buf += s.recv(1 << 20)
            lines = buf.split(b"\n")
            buf = lines.pop()
            evs = [orjson.loads(line) for line in lines if line]
            for e in evs:
                check_event(e)
            ring += [e["seq"] for e in evs if "seq" in e]
            if any(e.get("re") == "h" for e in evs):
                break
    assert set(ring) <= set(applied), sorted(set(ring) - set(applied))


def test_the_page_reconnects_by_itself_after_a_drop(web_daemon: WebDaemon, page: Any) -> None:
    """No test hook holds the page away: its own backoff timer reconnects it, and the catch-up brings what it
    missed (the backoff is raised to 3 s so that a whole turn happens while it is away)."""
    create(web_daemon, "g-auto")
    open_session(page, "g-auto")
    page.evaluate("() => { window.litbridge.state.backoff = 3000; window.litbridge.dropConnection(false); }")
    page.wait_for_function("() => document.querySelector('#conn').dataset.state === 'closed'")
    complete = web_daemon.request(
        {"cmd": "send", "session": "g-auto", "content": "echo auto-$((4*4))"},
        until=lambda e: e.get("event") == "complete" and e.get("session") == "g-auto",
    )
    assert complete["event"] == "complete", complete
    page.wait_for_function("() => document.querySelector('#conn').dataset.state === 'open'", timeout=WAIT)
    log = chat(page, "g-auto")
    log.locator(".msg.assistant.done", has_text="auto-16").wait_for(timeout=WAIT)
    assert log.locator(".msg.assistant.done", has_text="auto-16").count() == 1
    assert complete["seq"] in page.evaluate("() => window.litbridge.caughtUp")  # from the catch-up
    applied = page.evaluate("() => window.litbridge.applied")
    assert len(applied) == len(set(applied)), "an event was applied twice"


def test_daemon_stops_cleanly_with_a_page_open(browser: Any, tmp_path: Any) -> None:
    """SIGTERM with a page connected (events + terminal): exit 0, files gone, the page says disconnected."""
    wd = start_web_daemon(tempfile.mkdtemp(prefix="lbw-"))
    try:
        create(wd, "g-stop")
        ctx = browser.new_context()
        pg = ctx.new_page()
        pg.goto(wd.login_link())
        pg.locator('#sessions tr[data-session="g-stop"]').click(timeout=WAIT)
        pg.wait_for_function("() => document.querySelector('#term-status').textContent.includes('read-only')")
    finally:
        code = wd.proc.stop()
    assert code == 0, wd.proc.log()
    pg.wait_for_function("() => document.querySelector('#conn').dataset.state === 'closed'", timeout=WAIT)
    ctx.close()
    for suffix in ("", ".web", ".token", ".attach"):
        assert not os.path.exists(wd.socket + suffix), suffix


def test_a_cli_that_exits_mid_turn_shows_the_error_and_dead(web_daemon: WebDaemon, page: Any) -> None:
    create(web_daemon, "g-exit")
    open_session(page, "g-exit")
    send_from_page(page, "exit 3")
    log = chat(page, "g-exit")
    log.locator(".msg.assistant.error", has_text="turn failed (cli_exited)").wait_for(timeout=WAIT)
    log.locator(".msg.notice", has_text="the CLI exited (3)").wait_for(timeout=WAIT)
    page.wait_for_function(
        "() => document.querySelector('#detail-state').textContent === 'dead'", timeout=WAIT
    )


def test_cli_output_is_never_run_as_html(web_daemon: WebDaemon, page: Any) -> None:
    """A response is untrusted: raw HTML in it is shown as text, a javascript: link is not made a link."""
    create(web_daemon, "g-xss")
    open_session(page, "g-xss")
    send_from_page(page, "echo '<img src=x onerror=window.pwned=1> [x](javascript:window.pwned=2) <b>b</b>'")
    done = chat(page, "g-xss").locator(".msg.assistant.done")
    done.wait_for(timeout=WAIT)
    assert "<img src=x onerror=window.pwned=1>" in done.inner_text()
    assert done.locator("img, b, a, script").count() == 0
    assert page.evaluate("() => window.pwned") is None


def test_shell_output_is_shown_as_it_is_not_as_markdown(web_daemon: WebDaemon, page: Any) -> None:
    """A shell writes plain text: its line breaks stay, and `*`, `_`, `#` are characters, not formatting."""
    create(web_daemon, "g-plain")
    open_session(page, "g-plain")
    send_from_page(page, r"printf 'a*b*c\n_x_ and __y__\n# not a heading\n  indented\n'")
    done = chat(page, "g-plain").locator(".msg.assistant.done")
    done.wait_for(timeout=WAIT)
    assert done.get_attribute("data-format") == "plain"
    shown = done.locator("pre.output").inner_text()
    assert "a*b*c\n_x_ and __y__\n# not a heading\n  indented" in shown
    assert done.locator("em, strong, h1, p").count() == 0


def test_an_ai_clis_answer_is_rendered_as_markdown(web_daemon: WebDaemon, page: Any, tmp_path: Path) -> None:
    """rift (here the project's fake, first on the session's PATH) writes markdown."""
    (tmp_path / "bin").mkdir()
    rift = write_rift(tmp_path / "bin")
    env = {
        "PATH": f"{rift.parent}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "FAKE_RIFT_SPEED": "0",
    }
    ev = web_daemon.request(
        {"cmd": "create", "session": "g-md", "cli": "rift", "working_dir": str(tmp_path), "env": env}, "ready"
    )
    assert ev["event"] == "ready", ev
    open_session(page, "g-md")
    send_from_page(page, "**bold** and *it*")
    done = chat(page, "g-md").locator(".msg.assistant.done")
    done.wait_for(timeout=WAIT)
    assert done.get_attribute("data-format") == "markdown"
    assert done.locator("strong").inner_text() == "bold" and done.locator("em").inner_text() == "it"
    assert done.locator("pre.output").count() == 0


def test_a_streamed_answer_arrives_as_deltas_and_shows_the_whole_text(
    web_daemon: WebDaemon, page: Any
) -> None:
    """The page asks for deltas: the answer streams as `append` events, and the bubble always shows exactly
    the text they add up to (checked mid-stream and at the end)."""
    create(web_daemon, "g-delta", quiescence=2.0)
    open_session(page, "g-delta")
    send_from_page(page, 'for i in $(seq 400); do echo "delta-$i ✓ 🌍"; (( i % 20 )) || sleep 0.05; done')
    bubble = "() => document.querySelector('.chat-log[data-session=\"g-delta\"] .msg.assistant')"
    page.wait_for_function(f"() => ({bubble})()?.textContent.includes('delta-100 ')", timeout=WAIT)

    def shown_and_rebuilt() -> tuple[str, str, bool]:
        got = page.evaluate(
            f"() => [({bubble})().textContent, ({bubble})().classList.contains('done'), "
            "window.litbridge.events.filter(e => e.session === 'g-delta')]"
        )
        text, done, events = got
        texts: dict[str, str] = {}
        for e in events:
            if e["event"] == "append":
                texts[e["turn_id"]] = texts.get(e["turn_id"], "")[: e["offset"]] + e["text"]
        assert not [e for e in events if e["event"] == "replace"], "a delta client gets no replace"
        return text, "".join(texts.values()), done

    text, rebuilt, done = shown_and_rebuilt()
    assert rebuilt and (done or text == rebuilt), "mid-stream: the bubble shows the text the deltas add up to"
    chat(page, "g-delta").locator(".msg.assistant.done").wait_for(timeout=WAIT)
    text, rebuilt, _ = shown_and_rebuilt()
    assert text.rstrip().endswith("delta-400 ✓ 🌍") and rebuilt.rstrip().endswith("delta-400 ✓ 🌍")
