"""Helpers for the daemon conformance suite: start a real `python -m litbridge serve`, and a tiny
JSON-lines client (`Conn`) over its real socket. Imported by conftest.py and the test modules.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson

FAKE_TUI = str(Path(__file__).resolve().parents[1] / "fakes" / "fake_tui.py")
WAIT = 20.0  # generous: the CI box is loaded


class DaemonProc:
    def __init__(self, socket_path: str, proc: subprocess.Popen[bytes], log_path: str) -> None:
        self.socket = socket_path
        self.proc = proc
        self.log_path = log_path

    def log(self) -> str:
        return Path(self.log_path).read_text(errors="replace")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                return self.proc.wait(5)
        return self.proc.returncode


def start_daemon(
    socket_path: str,
    *extra: str,
    env: dict[str, str] | None = None,
    base_env: Mapping[str, str] | None = None,
    launcher: list[str] | None = None,
    preexec: Callable[[], Any] | None = None,
    cwd: str | None = None,
    log_path: str | None = None,
    wait: bool = True,
) -> DaemonProc:
    """Start `litbridge serve --socket PATH --log-level debug *extra`, stderr to a log file, and wait until it listens.

    `launcher` replaces `python -m litbridge` (e.g. a patched entry point); the child's environment is `base_env`
    (default os.environ) updated with `env`; `log_path` defaults to PATH + ".stderr"; `preexec` runs in the child.
    """
    log_path = log_path or socket_path + ".stderr"
    full_env = {**(os.environ if base_env is None else base_env), **(env or {})}
    argv = [*(launcher or [sys.executable, "-m", "litbridge"]), "serve", "--socket", socket_path]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [*argv, "--log-level", "debug", *extra],
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=full_env,
            cwd=cwd,
            preexec_fn=preexec,
        )
    d = DaemonProc(socket_path, proc, log_path)
    if wait:
        wait_listening(d)
    return d


def wait_listening(d: DaemonProc, timeout: float = WAIT) -> None:
    """Return once the daemon accepts on its socket; stop it and raise (with its log) if it exits or never does."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if d.proc.poll() is not None:
            raise RuntimeError(f"daemon exited with {d.proc.returncode}:\n{d.log()}")
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as s:
            s.connect(d.socket)
            return
        time.sleep(0.05)
    d.stop()
    raise RuntimeError(f"daemon did not listen within {timeout}s:\n{d.log()}")


class Conn:
    """A control connection: send commands, wait for events matching a predicate (everything is kept)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.events: list[dict[str, Any]] = []
        self._taken: set[int] = set()

    @classmethod
    async def open(cls, path: str) -> Conn:
        reader, writer = await asyncio.open_unix_connection(path, limit=8 * 1024 * 1024)
        return cls(reader, writer)

    async def send(self, obj: Any) -> None:
        data = obj if isinstance(obj, bytes) else orjson.dumps(obj) + b"\n"
        self.writer.write(data)
        await self.writer.drain()

    async def _read_one(self, timeout: float) -> dict[str, Any]:
        line = await asyncio.wait_for(self.reader.readline(), timeout)
        if not line:
            raise EOFError("connection closed")
        ev = orjson.loads(line)
        self.events.append(ev)
        return ev

    async def wait(self, pred: Callable[[dict[str, Any]], bool] | str, timeout: float = WAIT, **match: Any) -> dict[str, Any]:
        """First event not returned by an earlier wait that matches pred / event name and field values."""
        if isinstance(pred, str):
            name = pred

            def pred(e: dict[str, Any]) -> bool:
                return e.get("event") == name and all(e.get(k) == v for k, v in match.items())

        for i, ev in enumerate(self.events):
            if i not in self._taken and pred(ev):
                self._taken.add(i)
                return ev
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                raise TimeoutError(f"no matching event; got: {self.events[-15:]}")
            ev = await self._read_one(left)
            if pred(ev):
                self._taken.add(len(self.events) - 1)
                return ev

    async def request(self, obj: dict[str, Any], reply: str | None = None, timeout: float = WAIT) -> dict[str, Any]:
        """Send with a fresh id; return the first event echoing it (`re`)."""
        Conn._ids += 1
        rid = f"r{Conn._ids}"
        await self.send({**obj, "id": rid})
        return await self.wait(lambda e: e.get("re") == rid and (reply is None or e.get("event") in (reply, "error")), timeout)

    async def drain_for(self, seconds: float) -> list[dict[str, Any]]:
        out = []
        end = asyncio.get_running_loop().time() + seconds
        with contextlib.suppress(asyncio.TimeoutError, TimeoutError):
            while True:
                left = end - asyncio.get_running_loop().time()
                if left <= 0:
                    break
                out.append(await self._read_one(left))
        return out

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(Exception):
            await self.writer.wait_closed()

    _ids = 0



def fake_create(key: str, *args: str, **extra: Any) -> dict[str, Any]:
    return {
        "cmd": "create",
        "session": key,
        "cli": sys.executable,
        "args": [FAKE_TUI, *args],
        "working_dir": "/tmp",
        "quiescence": 0.3,
        **extra,
    }
