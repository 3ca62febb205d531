"""Helpers of the Gemini driver tests (a uniquely named module: test directories share one import namespace):
private HOMEs, the `litbridge serve` subprocess with `gemini` on PATH, and a client that records (and
schema-validates) every event it receives. The fixtures built from them are in conftest.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lbd_helpers import ServeDaemon, TurnOrder, check_event
from mock_gemini import MockGemini

from fetch_fixtures import GEMINI_CAPTURES
from litbridge.client import Client

TESTS = Path(__file__).resolve().parents[2]

ROOT = TESTS.parent
FIXTURES = TESTS / "fixtures" / "captures" / "gemini"
"""The in-repo copy of the Gemini recordings (its README): the screens, chat files and recordings the tests read."""
CAPTURES = GEMINI_CAPTURES
"""The recordings the replay tests run: FIXTURES unless $LITBRIDGE_GEMINI_CAPTURES names another folder (e.g. the
full set, which the same tests also pass on)."""
API_KEY = "mock-gemini-key-0123456789"
TERMINAL = ("complete", "interrupted", "turn_error")


@dataclass
class GeminiHome:
    """A private HOME with a git-less project folder `cwd` inside it."""

    home: Path
    cwd: Path

    @property
    def dot(self) -> Path:
        return self.home / ".gemini"

    def chat_files(self) -> list[Path]:
        return sorted(self.dot.glob("tmp/*/chats/session-*.jsonl"))

    def trust(self) -> None:
        """The user's own trustedFolders.json trusts `cwd` (the driver only reads it)."""
        self.dot.mkdir(parents=True, exist_ok=True)
        (self.dot / "trustedFolders.json").write_text(json.dumps({str(self.cwd): "TRUST_FOLDER"}))


def make_home(base: Path, name: str = "proj") -> GeminiHome:
    home = base / "home"
    cwd = home / "work" / name
    cwd.mkdir(parents=True)
    (cwd / "README.md").write_text("A test project.\n")
    return GeminiHome(home, cwd)


def offline_env(home: GeminiHome, mock_url: str) -> dict[str, str]:
    """The create.env of a session: its own HOME, the mock's URL and a key (reference §1)."""
    return {"HOME": str(home.home), "GOOGLE_GEMINI_BASE_URL": mock_url, "GEMINI_API_KEY": API_KEY}


class Daemon(ServeDaemon):
    """The daemon (lbd_helpers.ServeDaemon) with `gemini` (and node) on its PATH, started as from a CI job
    (`CI=true`, `GITHUB_ACTIONS=true`): Gemini CLI goes headless under those, so every real-CLI test also checks
    that the driver keeps them from the child (its launch spec's env_remove)."""

    def __init__(self, base: Path, bin_dir: Path) -> None:
        node = shutil.which("node")
        path = (
            [str(bin_dir)]
            + ([os.path.dirname(node)] if node else [])
            + ["/usr/local/bin", "/usr/bin", "/bin"]
        )
        super().__init__(
            base,
            ("LANG", "LC_ALL", "USER", "TMPDIR"),
            PATH=os.pathsep.join(path),
            CI="true",
            GITHUB_ACTIONS="true",
        )

    def log_tail(self, n: int = 40) -> str:
        return super().log_tail(n)


def check_schema(ev: dict[str, Any]) -> None:
    """Every event a test sees validates against `litbridge schema` (the project's one checker)."""
    check_event(ev)


class Recorder:
    """A `litbridge.client.Client` plus a list of every event of this connection (schema-checked on arrival)."""

    def __init__(self, client: Client, daemon: Daemon) -> None:
        self.client, self.daemon = client, daemon
        self.events: list[dict[str, Any]] = []
        self.created: list[str] = []
        self._changed = asyncio.Event()
        self._order = TurnOrder()
        self._stream = client.events()
        self._task = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        async for ev in self._stream:
            check_schema(ev)
            problem = self._order.observe(
                ev
            )  # the turn contract too (state settles before the terminal event)
            assert problem is None, problem
            self.events.append(ev)
            self._changed.set()

    async def wait(self, key: str, names: str | tuple[str, ...], start: int = 0, timeout: float = 90.0,
                   **match: Any) -> dict[str, Any]:  # fmt: skip
        """The first `names` event of session `key` at index >= start with fields equal to `match`."""
        names = (names,) if isinstance(names, str) else names
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        i = start
        while True:
            if self._task.done():
                self._task.result()
            while i < len(self.events):
                ev = self.events[i]
                i += 1
                if (
                    ev.get("session") == key
                    and ev["event"] in names
                    and all(ev.get(k) == v for k, v in match.items())
                ):
                    ev.setdefault("_index", i - 1)
                    return ev
            left = deadline - loop.time()
            if left <= 0:
                raise AssertionError(await self._timeout_report(key, names, start))
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), min(left, 1.0))
            except asyncio.TimeoutError:
                pass

    async def _timeout_report(self, key: str, names: tuple[str, ...], start: int) -> str:
        tail = [e for e in self.events[start:] if e.get("event") != "replace"][-30:]
        text = f"timed out waiting for {names} of {key}; events since: {json.dumps(tail)[:5000]}"
        try:
            dump = await asyncio.wait_for(self.client.dump(key), 5)
            screen = "\n".join(r.rstrip() for r in (dump.get("capture") or "").splitlines() if r.strip())
            text += f"\n--- dump: state={dump.get('state')} driver={dump.get('driver')}\n{screen}"
        except Exception as exc:  # the report itself must not hide the timeout
            text += f"\n(no dump: {exc})"
        return text + "\n--- daemon log:\n" + self.daemon.log_tail()

    def since(self, key: str, start: int = 0, name: str | None = None) -> list[dict[str, Any]]:
        return [
            e for e in self.events[start:] if e.get("session") == key and (name is None or e["event"] == name)
        ]

    async def create(self, key: str, home: GeminiHome, mock: MockGemini, **extra: Any) -> dict[str, Any]:
        """`create` a gemini session in `home` against `mock`; waits for `ready`."""
        self.created.append(key)
        begin = len(self.events)
        env = {**offline_env(home, mock.url), **extra.pop("env", {})}
        asyncio.get_running_loop().create_task(
            self.client.create(key, "gemini", working_dir=str(home.cwd), env=env, timeout=None, **extra)
        )
        return await self.wait(key, ("ready", "error"), start=begin, timeout=120)

    async def turn(
        self, key: str, content: str, timeout: float = 90.0
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Send; -> (accepted, the terminal event of that turn)."""
        begin = len(self.events)
        asyncio.get_running_loop().create_task(self.client.send(key, content))
        acc = await self.wait(key, "accepted", start=begin)
        end = await self.wait(key, TERMINAL, start=begin, timeout=timeout, turn_id=acc["turn_id"])
        return acc, end

    async def close(self) -> None:
        for key in self.created:
            try:
                await asyncio.wait_for(self.client.kill(key), 15)
            except Exception:  # already dead
                pass
        self._stream.close()
        self._task.cancel()
        await self.client.close()


def check_invariants(lb: Recorder, key: str) -> None:
    """One terminal event per accepted turn; every question closed."""
    events = lb.since(key)
    turns = [e["turn_id"] for e in events if e["event"] == "accepted"]
    ends = [e["turn_id"] for e in events if e["event"] in TERMINAL]
    assert sorted(ends) == sorted(turns), f"terminal events {ends} for turns {turns}"
    asked = {e["question_id"] for e in events if e["event"] == "question"}
    closed = {e["question_id"] for e in events if e["event"] == "question_closed"}
    assert asked == closed
