"""What the front ends' tests (`litbridge acp`, `litbridge mcp`) share.

Fixtures (a conftest imports them by name): one real daemon per module (tests use distinct session names), with
the fake rift (which asks questions) on hand, and a watching client whose every event is checked against
`litbridge schema` (tests/client/_daemon.py does the check and fails the module on a violation); `lb`, a
schema- and turn-order-checked raw connection to whichever `daemon` the test module provides (the real-CLI
modules override `daemon`; `claude_daemon` is the real Claude Code one). Helpers: `until` (poll),
`StdioPeer` (the front end as a child on pipes, for how it starts and ends, which the SDKs' clients hide),
`wait_turn_running` and `check_no_daemon_error`."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest
import pytest_asyncio
from _daemon import Daemon, running_daemon
from claude_env import require_claude_binary
from lbd_helpers import EventClient, ServeDaemon

from litbridge.client import Client


@pytest.fixture(scope="module")
def daemon() -> Iterator[Daemon]:
    with running_daemon() as d:
        yield d


@pytest_asyncio.fixture
async def watcher(daemon: Daemon) -> AsyncIterator[Client]:
    """A client subscribed to every session: everything the daemon emits while the test runs is decoded (and
    so schema-checked) here too."""
    async with Client.connect(socket=daemon.socket) as c:
        await c.hello(subscribe="*")
        yield c


@pytest_asyncio.fixture
async def lb(daemon: Any) -> AsyncIterator[EventClient]:
    """A raw connection to the module's daemon; every daemon event schema- and turn-order-checked."""
    client = await EventClient.connect(daemon)
    yield client
    await client.close()


def claude_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeDaemon]:
    """The body of a real-Claude module's `daemon` fixture: `litbridge serve` with only the environment Claude
    Code needs (skipped when the binary cannot be installed)."""
    require_claude_binary()
    d = ServeDaemon(tmp_path_factory.mktemp("lbd"), ("PATH", "LANG", "LC_ALL", "USER", "TMPDIR"))
    yield d
    d.stop()


async def until(check: Any, what: str, timeout: float = 60.0) -> Any:
    """Poll the async `check` until it returns something truthy (generous timeout: a loaded box)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        got = await check()
        if got:
            return got
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)


class StdioPeer:
    """`python ARGV` (a front end) as a child speaking JSON-RPC lines on its stdin and stdout; killed on exit
    from the `with` block."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )

    def send(self, msg: dict[str, Any]) -> None:
        """One JSON-RPC 2.0 message (`jsonrpc` added)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **msg}) + "\n")
        self.proc.stdin.flush()

    def read(self) -> Any:
        """The next message the child wrote (it failing if its stdout ended: its stderr is shown)."""
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, self.stderr()
        return json.loads(line)

    def close_and_wait(self, timeout: float = 60) -> int:
        """Close its stdin (the client went away) and return its exit status."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout)

    def stderr(self) -> str:
        return self.proc.stderr.read() if self.proc.stderr else ""

    def __enter__(self) -> StdioPeer:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.proc.kill()
        self.proc.wait(10)


def wait_turn_running(daemon: Daemon, timeout: float = 60) -> None:
    """Until the daemon lists a session thinking (a prompt is in, its turn running)."""
    deadline = time.monotonic() + timeout
    while "thinking" not in daemon.cli("list").stdout:
        assert time.monotonic() < deadline, daemon.cli("list").stdout
        time.sleep(0.2)


def check_no_daemon_error(argv_of: Callable[[str], list[str]], tmp_path: Path) -> None:
    """The front end, pointed at a socket nothing listens on, exits 1 saying so on stderr, with nothing on stdout
    that its client could take for a message."""
    sock = str(tmp_path / "none.sock")
    proc = subprocess.run(
        [sys.executable, *argv_of(sock)], input="", capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert f"no litbridge daemon at {sock}" in proc.stderr and "litbridge serve" in proc.stderr
