"""The daemon's watch for stopped CLIs (SIGSTOP): every session is looked at once a second, in slices."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from litbridge.daemon import server


class _Child:
    def __init__(self, reads: list[tuple[float, str]], key: str) -> None:
        self.reads, self.key, self.stop = reads, key, False
        self.read = asyncio.Event()

    @property
    def stopped(self) -> bool:
        self.reads.append((asyncio.get_running_loop().time(), self.key))
        self.read.set()
        return self.stop


class _Session:
    def __init__(self, key: str, reads: list[tuple[float, str]]) -> None:
        self.key, self.dead, self.state = key, False, "idle"
        self.child = _Child(reads, key)
        self.states: list[str] = []

    def set_state(self, state: str) -> None:
        self.state = state
        self.states.append(state)


def test_the_stop_watch_reads_every_session_each_second_a_slice_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(server, "STOP_WATCH_EVERY", 0.8)
    monkeypatch.setattr(server, "STOP_WATCH_SLICE", 3)

    async def main() -> tuple[list[tuple[float, str]], dict[str, Any]]:
        d = server.Daemon("/nonexistent/litbridge-test.sock")
        reads: list[tuple[float, str]] = []
        sessions = {f"s{i}": _Session(f"s{i}", reads) for i in range(10)}
        d.sessions = sessions  # type: ignore[assignment]
        sessions["s7"].state = "thinking"
        sessions["s7"].child.stop = True
        d._ensure_stop_watch()
        task = d._stop_watch
        assert task is not None
        await asyncio.wait_for(sessions["s7"].child.read.wait(), 5)  # the first round reads it stopped
        await asyncio.sleep(0.05)
        sessions["s7"].child.stop = False
        await asyncio.sleep(1.2)
        d._stop.set()
        await asyncio.wait_for(task, 2)
        return reads, sessions

    reads, sessions = asyncio.run(main())
    first_round = reads[:10]
    assert sorted(k for _, k in first_round) == sorted(sessions), "each session once per round"
    groups: list[list[float]] = []
    for t, _ in first_round:  # reads of one slice come in one go; the slices are 0.2 s apart
        if groups and t - groups[-1][-1] < 0.1:
            groups[-1].append(t)
        else:
            groups.append([t])
    assert [len(g) for g in groups] == [3, 3, 3, 1], groups
    assert groups[-1][0] - groups[0][0] >= 0.4, "the slices are spread over the round"
    assert sessions["s7"].states == ["stopped", "thinking"], "stopped, then its earlier state once continued"
    assert all(not s.states for k, s in sessions.items() if k != "s7")


def test_a_session_closed_since_the_rounds_snapshot_is_not_looked_at() -> None:
    """A session closed (and its key reused by a new one) after the round took its list is skipped: it must
    not take the new session's remembered state."""
    d = server.Daemon("/nonexistent/litbridge-test.sock")
    reads: list[tuple[float, str]] = []
    old, new = _Session("s", reads), _Session("s", reads)
    old.dead = True
    d.sessions = {"s": new}  # type: ignore[assignment]
    d._state_before_stop["s"] = "thinking"

    async def main() -> None:
        d._check_stopped(old)  # type: ignore[arg-type]

    asyncio.run(main())
    assert d._state_before_stop == {"s": "thinking"} and not reads
