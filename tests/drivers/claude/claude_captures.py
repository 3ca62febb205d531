"""Helpers shared by the Claude driver tests: where the recorded captures are, how to read their screens, and a
fake child that shows captured screens under a real `Session` (driver tests without a PTY or a real CLI)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fetch_fixtures import CAPTURES


def capture_dirs() -> list[Path]:
    if not CAPTURES.is_dir():
        return []
    return sorted(p for p in CAPTURES.iterdir() if p.is_dir() and (p / "chunks.jsonl").exists())


def or_skip(params: list[Any], arity: int = 1) -> list[Any]:
    """`params` for a parametrize over the captures, or one skipped case saying where the captures were looked for
    (instead of pytest's bare "got empty parameter set")."""
    if params:
        return params
    reason = f"no Claude captures under {CAPTURES} (the repository keeps them under tests/fixtures/captures/claude; is $LITBRIDGE_CAPTURES set?)"
    return [pytest.param(*([None] * arity), marks=pytest.mark.skip(reason=reason), id="no-captures")]


def screen_files() -> list[Path]:
    return sorted(f for d in capture_dirs() for f in (d / "screens").glob("*.txt") if ".full." not in f.name)


def read_screen(path: Path) -> tuple[dict[str, str], list[str]]:
    """(header fields, 50 rows) of a captures' `screens/NN_label.txt`."""
    text = path.read_text(encoding="utf-8")
    header, _, body = text.partition("\n")
    fields = dict(part.split("=", 1) for part in header.lstrip("# ").split() if "=" in part)
    rows = body.split("\n")[:50]
    rows += [""] * (50 - len(rows))
    return fields, rows


def capture(name: str) -> Path:
    matches = [d for d in capture_dirs() if d.name.startswith(name)]
    if not matches:
        pytest.skip(f"capture {name} not available under {CAPTURES}")
    return matches[0]


def screen(cap: str, name: str) -> list[str]:
    """The 50 rows of screen `name` of the capture whose folder starts with `cap` (skips if absent)."""
    return read_screen(capture(cap) / "screens" / name)[1]


def render(rows: list[str]) -> bytes:
    """Bytes that draw `rows` on a 200x50 terminal (bracketed paste on, as Claude's live prompt has it)."""
    parts = [b"\x1b[?2004h\x1b[H\x1b[2J"]
    for y, row in enumerate(rows[:50]):
        if row:
            parts.append(f"\x1b[{y + 1};1H{row}".encode())
    return b"".join(parts)


class ScreenChild:
    """A stand-in for the CLI process under a real `Session` (`child_factory`): it shows named captured screens
    (drawn as bytes into the session's real terminal) and moves between them on the keys it receives:
    transitions[(screen name, key bytes)] -> next screen name, `repaint` seconds later."""

    pid = 0
    pgid = 0

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        screens: dict[str, list[str]],
        start: str,
        transitions: dict[tuple[str, bytes], str],
        repaint: float = 0.05,
    ) -> None:
        self.loop, self.screens, self.current = loop, screens, start
        self.transitions = transitions
        self.repaint = repaint
        self.keys_seen: list[tuple[str, bytes]] = []
        self.on_write: Callable[[bytes], None] | None = None
        self.exited = False
        self.exit_code: int | None = None
        self._out: Callable[[bytes], None] | None = None
        self._on_exit: Callable[[int | None], None] = lambda c: None

    @property
    def alive(self) -> bool:
        return not self.exited

    def start(self, loop: Any, on_output: Any, on_exit: Any, on_stderr: Any = None) -> None:
        self._out, self._on_exit = on_output, on_exit
        self.show(self.current)

    def show(self, name: str) -> None:
        self.current = name
        if self._out is not None and not self.exited:
            self._out(render(self.screens[name]))

    def write(self, data: bytes) -> None:
        if self.exited:
            return
        self.keys_seen.append((self.current, data))
        if self.on_write is not None:
            self.on_write(data)
        nxt = self.transitions.get((self.current, data))
        if nxt is not None:
            self.loop.call_later(self.repaint, self.show, nxt)

    def exit(self, code: int | None) -> None:
        if not self.exited:
            self.exited, self.exit_code = True, code
            self._on_exit(code)

    def close_stdin(self) -> None:
        pass

    async def kill(self, grace: float = 2.0) -> int | None:
        self.exit(-15)
        return self.exit_code


def make_session(tmp_path: Path, cli: ScreenChild, **options: Any) -> tuple[Any, Any, list[dict[str, Any]]]:
    """(driver, session, events) of a real `Session` over `cli`; nothing spawned yet (`boot` does it)."""
    from lbd_helpers import check_event

    from litbridge.session import Session

    class Checked(list):  # every event the session emits obeys `litbridge schema`
        def append(self, ev: dict[str, Any]) -> None:
            check_event(ev)
            super().append(ev)

    events: list[dict[str, Any]] = Checked()
    session = Session(
        "k", driver_options(tmp_path, **options), events.append, loop=cli.loop, child_factory=lambda *a: cli
    )
    return session.driver, session, events


def boot(
    loop: asyncio.AbstractEventLoop, session: Any, events: list[dict[str, Any]], timeout: float = 120.0
) -> dict[str, Any]:
    """Spawn the session and run its startup; -> the `ready` (or `error`) event."""
    session.spawn()
    session.start()

    async def wait() -> None:
        for _ in range(100_000):
            if session.started:
                break
            await asyncio.sleep(0.01)

    loop.run_until_complete(asyncio.wait_for(wait(), timeout))
    return next(e for e in reversed(events) if e["event"] in ("ready", "error"))


def send(loop: asyncio.AbstractEventLoop, session: Any, text: str, timeout: float = 120.0) -> None:
    """`send` through the session, run until the driver's submit returned (typed, Enter, verified or failed)."""
    session.send(text)

    async def wait() -> None:
        await asyncio.sleep(0)
        for _ in range(100_000):
            turns = session.turns
            if not (turns.dispatching or (turns.queue and turns.current is None and not session.dead)):
                break
            await asyncio.sleep(0.01)

    loop.run_until_complete(asyncio.wait_for(wait(), timeout))


def driver_options(tmp_path: Path, **options: Any) -> dict[str, Any]:
    """A validated-create-like options dict for `ClaudeDriver`: private HOME / config dir and cwd under tmp_path."""
    opts: dict[str, Any] = {
        "session": "k",
        "cli": "claude",
        "args": [],
        "working_dir": str(tmp_path / "work"),
        "env": {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / ".claude")},
        "cli_version": "2.1.328",  # the captured screens' version (no `claude --version` run)
    }
    opts.update(options)
    return opts
