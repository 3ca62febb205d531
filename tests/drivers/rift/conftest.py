"""Fixtures for the rift driver tests: spawn `rift --serve` (the fake by default, a real binary when RIFT_BIN is
set) on pipes with HOME in a temp dir, and a small synchronous line client for the conformance checks.

RIFT_BIN=/path/to/rift runs the conformance checks against a real rift (it needs a reachable model server; pass
RIFT_MODEL / RIFT_HOST through the environment). Checks that need the fake's scripted turns skip then.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

FAKE = Path(__file__).resolve().parents[2] / "fakes" / "fake_rift.py"
RIFT_BIN = os.environ.get("RIFT_BIN")
EVENT_TIMEOUT = 60.0  # generous: a real local model can be slow; the fake answers in milliseconds


class RiftProc:
    """`rift --serve` on pipes with a reader thread per stream; events are parsed dicts in arrival order."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str) -> None:
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        self.events: queue.Queue[dict | None] = queue.Queue()
        self.seen: list[dict] = []
        self.stderr: list[str] = []
        self.raw_stdout: list[bytes] = []
        threading.Thread(target=self._read_out, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read_out(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.raw_stdout.append(line)
            self.events.put(json.loads(line))  # every stdout line must be a JSON object
        self.events.put(None)

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.decode("utf-8", "replace").rstrip())

    def send(self, cmd: dict | str) -> None:
        assert self.proc.stdin is not None
        line = cmd if isinstance(cmd, str) else json.dumps(cmd)
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def next(self, timeout: float = EVENT_TIMEOUT) -> dict | None:
        """The next event, or None at EOF."""
        ev = self.events.get(timeout=timeout)
        if ev is not None:
            self.seen.append(ev)
        return ev

    def until(self, name: str, timeout: float = EVENT_TIMEOUT, **match: Any) -> list[dict]:
        """Events up to and including the first `name` event whose fields match; fails at EOF."""
        out: list[dict] = []
        deadline = time.monotonic() + timeout
        while True:
            ev = self.next(max(deadline - time.monotonic(), 0.01))
            assert ev is not None, (
                f"EOF before {name}; got {[e['event'] for e in out]}; stderr={self.stderr[-5:]}"
            )
            out.append(ev)
            if ev["event"] == name and all(ev.get(k) == v for k, v in match.items()):
                return out

    def marker(self) -> list[dict]:
        """Events before the synchronous reply to `list_sessions`: proves nothing else was emitted for the
        commands written before it (rift handles stdin in order)."""
        self.send({"cmd": "list_sessions"})
        return self.until("sessions")[:-1]

    def startup(self) -> tuple[dict, dict]:
        ready = self.next()
        assert ready is not None and ready["event"] == "ready", (ready, self.stderr)
        context = self.next()
        assert context is not None and context["event"] == "context"
        return ready, context

    def wait(self, timeout: float = EVENT_TIMEOUT) -> int:
        return self.proc.wait(timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.close_stdin()
            except (BrokenPipeError, ValueError):
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait(5)


def rift_argv(*extra: str) -> list[str]:
    if RIFT_BIN:
        return [RIFT_BIN, "--serve", *extra]
    return [sys.executable, str(FAKE), "--serve", *extra]


@pytest.fixture
def rift_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "project"
    p.mkdir()
    return p


@pytest.fixture
def spawn(rift_home: Path, project: Path):
    """spawn(*flags, env={...}) -> RiftProc; every process is stopped at teardown."""
    procs: list[RiftProc] = []

    def _spawn(*flags: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> RiftProc:
        full = {**os.environ, "HOME": str(rift_home), "RIFT_NO_UPDATE_CHECK": "1", "FAKE_RIFT_SPEED": "0.05"}
        full.update(env or {})
        p = RiftProc(rift_argv(*flags), full, str(cwd or project))
        procs.append(p)
        return p

    yield _spawn
    for p in procs:
        p.stop()


@pytest.fixture
def sessions_dir(rift_home: Path) -> Path:
    return rift_home / ".local" / "share" / "rift" / "sessions"


@pytest.fixture
def fake_rift_path(tmp_path: Path) -> Path:
    """A temp dir holding an executable `rift` that runs the fake with this Python (put it first on PATH)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "rift"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    exe.chmod(0o755)
    return bindir


@pytest.fixture
def rift_env(fake_rift_path: Path, rift_home: Path) -> dict[str, str]:
    """create.env for a rift session on the fake: fake first on PATH, HOME in a temp dir, no delays."""
    return {
        "PATH": f"{fake_rift_path}{os.pathsep}{os.environ.get('PATH', os.defpath)}",
        "HOME": str(rift_home),
        "FAKE_RIFT_SPEED": "0",
    }
