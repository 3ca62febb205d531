"""Shared fixtures for the Claude driver tests: the real binary (one for the run), private temp HOMEs, one mock
Anthropic API per test, one `litbridge serve` daemon per module, and a tiny JSON-lines socket client.

The daemon is spawned as a subprocess with a whitelisted environment (no inherited CLAUDE_* / ANTHROPIC_*);
each session gets its own HOME, cwd and mock URL through `create.env`, so tests cannot see each other's files.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import pytest_asyncio

FAKES = Path(__file__).resolve().parents[2] / "fakes"
HERE = Path(__file__).resolve().parent
# this directory too: the capture-fixture tests import their helpers (claude_captures) from it
for _p in (FAKES, HERE):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))
_DAEMON_HELPERS = str(Path(__file__).resolve().parents[2] / "daemon")
if _DAEMON_HELPERS not in sys.path:
    sys.path.append(_DAEMON_HELPERS)

from claude_env import ClaudeHome, make_home, require_claude_binary  # noqa: E402
from lbd_helpers import start_daemon, wait_listening  # noqa: E402
from mock_anthropic import MockAnthropic  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
EVENT_TIMEOUT = 60.0


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """The real Claude Code 2.1.328 binary; skips (with the reason) only if it cannot be installed or run."""
    return require_claude_binary()  # never fetches (npm, ~370 MB): tests/fetch_fixtures.py's job


@pytest.fixture
def mock() -> Iterator[MockAnthropic]:
    with MockAnthropic() as m:
        yield m


@pytest.fixture
def claude_home(tmp_path: Path) -> ClaudeHome:
    """A private, onboarded HOME (no trust / API-key pre-approval) with a cwd inside it."""
    return make_home(tmp_path)


class Daemon:
    """A `python -m litbridge serve --socket PATH` subprocess (lbd_helpers.start_daemon) with a whitelisted
    environment: HOME and XDG_RUNTIME_DIR in `base`, nothing of the developer's Claude setup leaks in."""

    def __init__(self, base: Path) -> None:
        self.dir = base
        self.socket = str(base / "lb.sock")
        self.log_path = base / "daemon.log"
        passthrough = ("PATH", "LANG", "LC_ALL", "USER", "TMPDIR", "LITBRIDGE_NO_EXTENSIONS")
        env = {k: os.environ[k] for k in passthrough if k in os.environ}
        env.update(HOME=str(base), PYTHONUNBUFFERED="1", XDG_RUNTIME_DIR=str(base))
        self._d = start_daemon(self.socket, base_env=env, cwd=str(ROOT), log_path=str(self.log_path), wait=False)
        self.proc = self._d.proc
        try:
            wait_listening(self._d, timeout=30)
        except RuntimeError as e:
            raise RuntimeError(f"litbridge serve did not come up (rc={self.proc.returncode}):\n{self.log_tail()}") from e

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def stop(self) -> None:
        self._d.stop()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Iterator[Daemon]:
    d = Daemon(tmp_path_factory.mktemp("lbd"))
    yield d
    d.stop()


class LBClient:
    """Minimal JSON-lines client: every event is kept, waits scan forward from a cursor."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, daemon: Daemon) -> None:
        self.reader, self.writer, self.daemon = reader, writer, daemon
        self.events: list[dict[str, Any]] = []
        self._changed = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._read())
        self.created: list[str] = []

    @classmethod
    async def connect(cls, daemon: Daemon) -> LBClient:
        reader, writer = await asyncio.open_unix_connection(daemon.socket, limit=4 * 1024 * 1024)
        client = cls(reader, writer, daemon)
        await client.wait(lambda e: e["event"] == "monitor_ready", timeout=15)
        return client

    async def _read(self) -> None:
        while True:
            line = await self.reader.readline()
            if not line:
                self.events.append({"event": "_eof"})
                self._changed.set()
                return
            if line.strip():
                self.events.append(orjson.loads(line))
                self._changed.set()

    async def send(self, cmd: str, **fields: Any) -> None:
        self.writer.write(orjson.dumps({"cmd": cmd, **fields}) + b"\n")
        await self.writer.drain()

    async def wait(
        self,
        pred: Callable[[dict[str, Any]], bool],
        timeout: float = EVENT_TIMEOUT,
        start: int = 0,
        what: str = "",
    ) -> dict[str, Any]:
        """First event at index >= start matching pred; on timeout fail with the events seen and a dump."""
        deadline = asyncio.get_running_loop().time() + timeout
        i = start
        while True:
            while i < len(self.events):
                ev = self.events[i]
                i += 1
                if pred(ev):
                    ev.setdefault("_index", i - 1)
                    return ev
                if ev["event"] == "_eof":
                    raise AssertionError(
                        f"daemon closed the connection while waiting for {what}\n{self.daemon.log_tail()}"
                    )
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                raise AssertionError(await self.describe_timeout(what or repr(pred), start))
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), left)
            except asyncio.TimeoutError:
                pass

    async def describe_timeout(self, what: str, start: int) -> str:
        tail = [e for e in self.events[start:] if e.get("event") != "replace"][-40:]
        text = f"timed out waiting for {what}; events since: {orjson.dumps(tail).decode()[:6000]}"
        for key in self.created:
            try:
                await self.send("dump", session=key, id="timeout-dump")
                dump = await asyncio.wait_for(self._next_dump(), 5)
                screen = "\n".join(r.rstrip() for r in (dump.get("capture") or "").splitlines() if r.strip())
                text += f"\n--- dump {key}: state={dump.get('state')} driver={dump.get('driver')}\n{screen}"
            except (asyncio.TimeoutError, OSError):
                pass
        return text + "\n--- daemon log tail:\n" + self.daemon.log_tail(30)

    async def _next_dump(self) -> dict[str, Any]:
        n = len(self.events)
        while True:
            for ev in self.events[n:]:
                if ev.get("event") == "dump" or (
                    ev.get("event") == "error" and ev.get("re") == "timeout-dump"
                ):
                    return ev
            self._changed.clear()
            await self._changed.wait()

    async def session_event(
        self,
        session: str,
        name: str | tuple[str, ...],
        start: int = 0,
        timeout: float = EVENT_TIMEOUT,
        **match: Any,
    ) -> dict[str, Any]:
        """Next `name` event of `session` (fields in `match` must be equal); an `error` for it fails fast."""
        names = (name,) if isinstance(name, str) else name

        def pred(ev: dict[str, Any]) -> bool:
            if ev.get("session") != session and not (
                ev.get("event") == "error" and ev.get("session") in (None, session)
            ):
                return False
            if ev["event"] == "error" and "error" not in names:
                raise AssertionError(f"daemon error while waiting for {names}: {ev}")
            return ev["event"] in names and all(ev.get(k) == v for k, v in match.items())

        return await self.wait(pred, timeout=timeout, start=start, what=f"{names} of {session} {match or ''}")

    def since(self, session: str, start: int, name: str | None = None) -> list[dict[str, Any]]:
        return [
            e
            for e in self.events[start:]
            if e.get("session") == session and (name is None or e["event"] == name)
        ]

    async def close(self) -> None:
        for key in self.created:
            try:
                await self.send("kill", session=key)
            except OSError:
                pass
        await asyncio.sleep(0.2)
        self._task.cancel()
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except OSError:
            pass


@pytest_asyncio.fixture
async def lb(daemon: Daemon) -> AsyncIterator[LBClient]:
    client = await LBClient.connect(daemon)
    yield client
    await client.close()


@pytest.fixture
def key(request: pytest.FixtureRequest) -> str:
    """A unique session key per test (one daemon serves the whole module)."""
    return f"{request.node.name[:40]}-{uuid.uuid4().hex[:6]}"
