"""`litbridge attach` under a real pty (ptyprocess): initial paint, typing through, Ctrl-] detach, size warning,
unknown session, TCP attach (the proof-first handshake; its refusals are in test_attach_tcp_auth.py)."""

from __future__ import annotations

import os
import sys
import time

from _daemon import Daemon, free_port, running_daemon
from _pty import finish, read_until
from ptyprocess import PtyProcess

BASH = ["--cli", "bash", "--arg=--norc", "--arg=--noprofile", "--env", "PS1=$ "]


def _attach(daemon: Daemon, session: str, rows: int = 50, cols: int = 200, *extra: str) -> PtyProcess:
    argv = [sys.executable, "-m", "litbridge", "attach", session, "--socket", daemon.socket, *extra]
    return PtyProcess.spawn(argv, dimensions=(rows, cols), env={**os.environ, "TERM": "xterm-256color"})


def test_attach_paints_types_and_detaches(daemon: Daemon) -> None:
    assert daemon.cli("create", "att", *BASH).returncode == 0
    assert daemon.cli("send", "att", "echo painted-$((20+3))").returncode == 0
    proc = _attach(daemon, "att")
    buf = bytearray()
    try:
        first = read_until(proc, buf, b"painted-23")
        assert b"\x1b[2J" in first or b"\x1b[H" in first  # a full repaint, not a diff
        assert b"warning" not in first  # 200x50 is big enough
        proc.write(b"echo via-attach-$((40+2))\r")
        read_until(proc, buf, b"via-attach-42")
        proc.write(b"\x1d")  # Ctrl-]
        tail = read_until(proc, buf, b"[detached]")
        assert b"\x1b[?25h" in tail  # the cursor is given back
        assert finish(proc, buf) == 0
    finally:
        if proc.isalive():
            proc.terminate(force=True)
    # Typing went to the session, and the session outlived the attach.
    dump = daemon.cli("dump", "att")
    assert "via-attach-42" in dump.stdout


def test_attach_warns_on_small_terminal_and_read_only(daemon: Daemon) -> None:
    assert daemon.cli("create", "att-small", *BASH).returncode == 0
    proc = _attach(daemon, "att-small", 24, 80, "--read-only")
    buf = bytearray()
    try:
        out = read_until(proc, buf, b"200x50")
        assert b"warning: your terminal is 80x24" in out
        proc.write(b"echo should-not-arrive\r")
        time.sleep(0.5)
        proc.write(b"\x1d")
        read_until(proc, buf, b"[detached]")
        assert finish(proc, buf) == 0
    finally:
        if proc.isalive():
            proc.terminate(force=True)
    assert "should-not-arrive" not in daemon.cli("dump", "att-small").stdout


def test_attach_unknown_session(daemon: Daemon) -> None:
    out = daemon.cli("attach", "no-such-session-here")
    assert out.returncode == 1
    assert "no such session 'no-such-session-here'" in out.stderr


def test_attach_over_tcp_with_token() -> None:
    port = free_port()
    with running_daemon(port=port) as daemon:
        assert daemon.cli("create", "tatt", *BASH).returncode == 0
        assert daemon.cli("send", "tatt", "echo over-$((1+1))-tcp").returncode == 0
        argv = [
            sys.executable,
            "-m",
            "litbridge",
            "attach",
            "tatt",
            "--port",
            str(port),
            "--socket",
            daemon.socket,
        ]
        proc = PtyProcess.spawn(argv, dimensions=(50, 200))
        buf = bytearray()
        try:
            read_until(proc, buf, b"over-2-tcp")
            proc.write(b"\x1d")
            read_until(proc, buf, b"[detached]")
            assert finish(proc, buf) == 0
        finally:
            if proc.isalive():
                proc.terminate(force=True)
