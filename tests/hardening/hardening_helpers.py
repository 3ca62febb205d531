"""Helpers for the hardening suite: load the emulator oracle/corpus and the daemon test helpers by path.

The oracle (`tests/term/test_differential.py`), the corpus loader (`tests/term/conftest.py`) and the daemon helpers
(`tests/daemon/lbd_helpers.py`) belong to other areas; they are imported here, never copied.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from lbd_helpers import pid_alive as pid_alive  # re-exported with the other helpers

TESTS = Path(__file__).resolve().parent.parent
FAKES = TESTS / "fakes"


def load_by_path(name: str, path: Path) -> ModuleType:
    """Import `path` as module `name` once (registered in sys.modules so dataclasses work)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[name]
        raise
    return mod


def differential() -> ModuleType:
    """tests/term/test_differential.py: `OracleScreen`, `normalise`, `first_divergence`, `chunk_cuts`."""
    return load_by_path("litbridge_hardening_differential", TESTS / "term" / "test_differential.py")


def term_corpus() -> ModuleType:
    """tests/term/conftest.py: `emulator_inputs()` (pyte's captured streams + the Claude recordings)."""
    return load_by_path("litbridge_hardening_term_corpus", TESTS / "term" / "conftest.py")


def lbd() -> ModuleType:
    """tests/daemon/lbd_helpers.py: `start_daemon`, `DaemonProc`, `Conn`, `fake_create`, `FAKE_TUI`."""
    return load_by_path("litbridge_hardening_lbd", TESTS / "daemon" / "lbd_helpers.py")


@contextlib.contextmanager
def short_tmpdir() -> Iterator[str]:
    """AF_UNIX paths are limited to ~107 bytes: a short private temp dir, removed afterwards."""
    d = tempfile.mkdtemp(prefix="lbh-")
    try:
        yield d
    finally:
        import shutil

        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def tmp_short() -> Iterator[str]:
    with short_tmpdir() as d:
        yield d


@pytest.fixture(scope="module")
def module_tmp_short() -> Iterator[str]:
    with short_tmpdir() as d:
        yield d


@pytest.fixture(scope="module")
def daemon(module_tmp_short: str) -> Iterator[object]:
    """One real `python -m litbridge serve` for the module (tests use distinct session keys)."""
    d = lbd().start_daemon(os.path.join(module_tmp_short, "d.sock"))
    yield d
    code = d.stop()
    assert code == 0, d.log()


HERE = Path(__file__).resolve().parent


def spawn_daemon(
    socket_path: str,
    *extra: str,
    env: dict[str, str] | None = None,
    launcher: list[str] | None = None,
    preexec: Any = None,
    wait: bool = True,
) -> Any:
    """lbd.start_daemon, with the log beside the socket only when that directory exists (the daemon is to create
    it itself in some tests; then the log goes to a temp file)."""
    log_path = socket_path + ".stderr"
    if not os.path.isdir(os.path.dirname(log_path)):
        fd, log_path = tempfile.mkstemp(prefix="lbh-", suffix=".stderr")
        os.close(fd)
    return lbd().start_daemon(
        socket_path, *extra, env=env, launcher=launcher, preexec=preexec, log_path=log_path, wait=wait
    )


async def connect(path: str) -> Any:
    """A lbd `Conn` to the control socket, its first event (`monitor_ready`) already read and checked."""
    c = await lbd().Conn.open(path)
    ev = await c.wait(lambda e: True)
    assert ev["event"] == "monitor_ready", ev
    return c


def refused_serve(path: str) -> str:
    """Start another `serve` on the socket `path`, which must refuse it and exit 3 (the socket is owned, or has
    a listener); its log."""
    d = spawn_daemon(path, wait=False)
    try:
        assert d.proc.wait(30) == 3, d.log()
    finally:
        d.stop()  # a no-op once it exited; stops a thief
    return d.log()


def fill_backlog(path: str, pending: list[socket.socket]) -> None:
    """Connect to the (stopped) daemon's Unix socket until its accept backlog is full, a connect failing with
    EAGAIN; the connections go in `pending`, for the caller to close however the test ends."""
    for _ in range(300):  # asyncio's default backlog is 100
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(path)
        except BlockingIOError:
            s.close()
            break
        pending.append(s)
    assert len(pending) > 50


def children_of(pid: int) -> list[int]:
    """Direct children of `pid` (every thread's children list)."""
    out: list[int] = []
    with contextlib.suppress(FileNotFoundError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(FileNotFoundError):
                out += [int(p) for p in (task / "children").read_text().split()]
    return out


async def wait_until(pred: Any, timeout: float = 20.0, interval: float = 0.05) -> bool:
    """Poll `pred()` until true (True) or the timeout (False)."""
    import asyncio

    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        if pred():
            return True
        await asyncio.sleep(interval)
    return bool(pred())
