"""A real `litbridge serve` subprocess on a private socket, for client and CLI tests (shared helper).

Also writes a `rift` wrapper around tests/fakes/fake_rift.py (handed to the daemon as LITBRIDGE_RIFT_BIN) so
tests can get real `question` events without a model.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FAKES = Path(__file__).resolve().parents[1] / "fakes"

from lbd_helpers import DaemonProc, check_event, wait_listening  # noqa: E402  (one wait loop, one schema check)


@dataclass
class Daemon:
    socket: str
    home: Path
    proc: subprocess.Popen[bytes]
    log: Path
    env: dict[str, str] = field(default_factory=dict)

    def cli(
        self,
        *args: str,
        input: str | None = None,
        timeout: float = 60,
        extra_env: dict[str, str] | None = None,
        cwd: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run `python -m litbridge ARGS --socket <ours>` and capture its output."""
        argv = [sys.executable, "-m", "litbridge", *args]
        if args and args[0] != "schema":
            argv += ["--socket", self.socket]
        env = {**os.environ, **(extra_env or {})}
        return subprocess.run(
            argv, input=input, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd
        )

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""


async def run_cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """`python -m litbridge ARGS` (stdin /dev/null; `env` added to ours) without blocking the event loop, where
    an impostor or a relay the command talks to may be serving: its exit status, stdout and stderr."""
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "litbridge", *args),
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def _wait_listening(path: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 30.0) -> None:
    """lbd_helpers.wait_listening for a daemon started here (own Popen: new session, stdout+stderr to `log`)."""
    wait_listening(DaemonProc(path, proc, str(log)), timeout)


@contextmanager
def running_daemon(port: int | None = None) -> Iterator[Daemon]:
    """Start a daemon (short socket path under /tmp: AF_UNIX paths are limited to ~104 bytes)."""
    base = Path(tempfile.mkdtemp(prefix="lbt-"))
    home = base / "home"
    home.mkdir()
    bindir = base / "bin"
    bindir.mkdir()
    rift = write_rift(bindir)
    sock = str(base / "d.sock")
    log = base / "daemon.log"
    env = {
        **os.environ,
        "HOME": str(home),
        "LITBRIDGE_RIFT_BIN": str(rift),
        "FAKE_RIFT_SPEED": "0",
        "PS1": "$ ",
    }
    daemon = Daemon(sock, home, spawn(sock, env, log, port), log, env)
    violations: list[str] = []
    from litbridge.client import client as client_mod

    try:
        with checked_decode(client_mod, violations):
            yield daemon
    finally:
        stop(daemon.proc)  # the current one: a test may have restarted the daemon
        shutil.rmtree(base, ignore_errors=True)
    assert not violations, "events that violate `litbridge schema`:\n" + "\n".join(violations[:10])


def write_rift(bindir: Path) -> Path:
    """A `rift` executable in `bindir` that runs tests/fakes/fake_rift.py (for LITBRIDGE_RIFT_BIN)."""
    rift = bindir / "rift"
    rift.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKES / "fake_rift.py"}" "$@"\n')
    rift.chmod(0o755)
    return rift


@contextmanager
def checked_decode(module: Any, violations: list[str]) -> Iterator[None]:
    """Every event `module.decode` returns (an event, or each event of a reply array) is checked against
    `litbridge schema`; violations are collected for the caller to report at the end (raising inside a client's
    read loop or a NATS callback would look like a lost line)."""
    original = module.decode

    def decode(line: bytes) -> object:
        value = original(line)
        for ev in value if isinstance(value, list) else [value]:
            if isinstance(ev, dict) and "event" in ev:
                try:
                    check_event(ev)
                except AssertionError as exc:
                    violations.append(str(exc))
        return value

    module.decode = decode
    try:
        yield
    finally:
        module.decode = original


def spawn(sock: str, env: dict[str, str], log: Path, port: int | None = None) -> subprocess.Popen[bytes]:
    """Start `litbridge serve --socket sock` and wait until it accepts connections."""
    argv = [sys.executable, "-m", "litbridge", "serve", "--socket", sock]
    if port is not None:
        argv += ["--port", str(port)]
    with open(log, "ab") as logf:
        proc = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        _wait_listening(sock, proc, log)
    except BaseException:
        stop(proc)
        raise
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM (the daemon kills its sessions and unlinks its socket), SIGKILL the group if it hangs."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


def free_port() -> int:
    """A free TCP port whose successor is free too (control on N, attach on N+1)."""
    for _ in range(50):
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            port = a.getsockname()[1]
        try:
            with socket.socket() as b, socket.socket() as c:
                b.bind(("127.0.0.1", port))
                c.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue
    raise RuntimeError("no free port pair")
