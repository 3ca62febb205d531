"""`litbridge answer` and `litbridge interrupt` on the local daemon: what they print (text and --json) and
their exit codes, with a turn running beside them in `litbridge send`."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from _daemon import Daemon
from lbd_helpers import check_event


@contextmanager
def sending(daemon: Daemon, session: str, text: str) -> Iterator[subprocess.Popen[str]]:
    """`litbridge send SESSION TEXT` running beside the test (no terminal: it does not prompt for answers)."""
    argv = [sys.executable, "-m", "litbridge", "send", session, text, "--socket", daemon.socket]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def wait_until(ok: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.2)


def test_answer_prints_the_session_or_the_reply(daemon: Daemon) -> None:
    assert daemon.cli("create", "ans", "--cli", "rift").returncode == 0
    with sending(daemon, "ans", "first [ask:Go?|yes|no]") as send:
        wait_until(lambda: "Go?" in daemon.cli("dump", "ans").stdout, "the question on screen")
        out = daemon.cli("answer", "ans", "--digit", "1")
        assert (out.returncode, out.stdout) == (0, "ans: answered\n"), out.stderr
        _, err = send.communicate(timeout=60)
        assert send.returncode == 0, err
    with sending(daemon, "ans", "second [ask:Pick|red|blue]") as send:
        wait_until(lambda: "Pick" in daemon.cli("dump", "ans").stdout, "the second question on screen")
        out = daemon.cli("answer", "ans", "--option", "blue", "--json")
        assert out.returncode == 0, out.stderr
        (ev,) = [json.loads(line) for line in out.stdout.splitlines()]
        check_event(ev)
        assert (ev["event"], ev["session"]) == ("answer_sent", "ans"), ev
        send.communicate(timeout=60)
    unasked = daemon.cli("answer", "ans", "--text", "hi")
    assert unasked.returncode == 1 and "[no_question]" in unasked.stderr, unasked.stderr
    daemon.cli("kill", "ans")


def test_interrupt_prints_the_session_and_the_turn_ends_interrupted(daemon: Daemon) -> None:
    assert daemon.cli("create", "intr2", "--cli", "bash", "--arg=--norc", "--env", "PS1=$ ").returncode == 0
    idle = daemon.cli("interrupt", "intr2")
    assert idle.returncode == 1 and "[no_turn]" in idle.stderr, idle.stderr
    with sending(daemon, "intr2", "sleep 600") as send:
        wait_until(lambda: "thinking" in daemon.cli("list").stdout, "the turn running")
        out = daemon.cli("interrupt", "intr2")
        assert (out.returncode, out.stdout) == (0, "intr2: interrupt sent\n"), out.stderr
        _, err = send.communicate(timeout=60)
    assert send.returncode == 4 and "interrupted" in err, err  # the send's exit code for an interrupted turn
    daemon.cli("kill", "intr2")
