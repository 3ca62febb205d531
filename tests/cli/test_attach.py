"""`litbridge attach` under a real pty (ptyprocess): initial paint, typing through, Ctrl-] detach, size warning,
unknown session, TCP attach with the token."""

from __future__ import annotations

import os
import select
import sys
import time

from _daemon import Daemon, free_port, running_daemon
from ptyprocess import PtyProcess

BASH = ["--cli", "bash", "--arg=--norc", "--arg=--noprofile", "--env", "PS1=$ "]


def _read_until(proc: PtyProcess, needle: bytes, timeout: float = 30.0) -> bytes:
    """Everything the pty printed until `needle` appeared (or EOF / timeout, then fail)."""
    buf = b""
    deadline = time.monotonic() + timeout
    while needle not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"{needle!r} not seen within {timeout}s; got {buf[-2000:]!r}")
        ready, _, _ = select.select([proc.fd], [], [], min(left, 0.5))
        if ready:
            try:
                chunk = os.read(proc.fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                raise AssertionError(f"EOF before {needle!r}; got {buf[-2000:]!r}")
            buf += chunk
    return buf


def _attach(daemon: Daemon, session: str, rows: int = 50, cols: int = 200, *extra: str) -> PtyProcess:
    argv = [sys.executable, "-m", "litbridge", "attach", session, "--socket", daemon.socket, *extra]
    return PtyProcess.spawn(argv, dimensions=(rows, cols), env={**os.environ, "TERM": "xterm-256color"})


def _wait_exit(proc: PtyProcess, timeout: float = 30.0) -> int:
    deadline = time.monotonic() + timeout
    while proc.isalive() and time.monotonic() < deadline:
        try:
            os.read(proc.fd, 65536)  # keep draining so the child never blocks on a full pty
        except OSError:
            pass
        time.sleep(0.05)
    if proc.isalive():
        proc.terminate(force=True)
        raise AssertionError("attach did not exit")
    return proc.exitstatus if proc.exitstatus is not None else -1


def test_attach_paints_types_and_detaches(daemon: Daemon) -> None:
    assert daemon.cli("create", "att", *BASH).returncode == 0
    assert daemon.cli("send", "att", "echo painted-$((20+3))").returncode == 0
    proc = _attach(daemon, "att")
    try:
        first = _read_until(proc, b"painted-23")
        assert b"\x1b[2J" in first or b"\x1b[H" in first  # a full repaint, not a diff
        assert b"warning" not in first  # 200x50 is big enough
        proc.write(b"echo via-attach-$((40+2))\r")
        _read_until(proc, b"via-attach-42")
        proc.write(b"\x1d")  # Ctrl-]
        tail = _read_until(proc, b"[detached]")
        assert b"\x1b[?25h" in tail  # the cursor is given back
        assert _wait_exit(proc) == 0
    finally:
        if proc.isalive():
            proc.terminate(force=True)
    # Typing went to the session, and the session outlived the attach.
    dump = daemon.cli("dump", "att")
    assert "via-attach-42" in dump.stdout


def test_attach_warns_on_small_terminal_and_read_only(daemon: Daemon) -> None:
    assert daemon.cli("create", "att-small", *BASH).returncode == 0
    proc = _attach(daemon, "att-small", 24, 80, "--read-only")
    try:
        out = _read_until(proc, b"200x50")
        assert b"warning: your terminal is 80x24" in out
        proc.write(b"echo should-not-arrive\r")
        time.sleep(0.5)
        proc.write(b"\x1d")
        _read_until(proc, b"[detached]")
        assert _wait_exit(proc) == 0
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
        try:
            _read_until(proc, b"over-2-tcp")
            proc.write(b"\x1d")
            _read_until(proc, b"[detached]")
            assert _wait_exit(proc) == 0
        finally:
            if proc.isalive():
                proc.terminate(force=True)
