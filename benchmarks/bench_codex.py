"""Codex driver latency against the real Codex CLI 0.169.0 and the project's mock Responses API.

- `complete` latency: the mock's last SSE event (`response.completed`) -> `complete` read by a client of a real
  `litbridge serve`, p50/p99 over 30 turns in one session. It contains Codex's own share (it writes the rollout's
  `task_complete` 11-47 ms after `response.completed`, reference §8), so the daemon's own share is reported too:
  the rollout line's `timestamp` (ms resolution) -> `complete`.
- create -> ready: `create` sent -> `ready` read (Codex's own startup, 0.34-0.64 s in the recordings, included).

Skips when the Codex binary is not fetched (`tests/fetch_fixtures.py`). Prints a table; never fails on a number.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from daemon_support import pct  # type: ignore[import-not-found]
from fetch_fixtures import codex_binary, codex_unavailable
from report import SMOKE, report_at_end  # type: ignore[import-not-found]

TURNS = 3 if SMOKE else 30
CREATES = 1 if SMOKE else 5

pytestmark = pytest.mark.timeout(1800)
ROWS: list[tuple[str, float | None, str]] = []


def _table() -> str | None:
    if not ROWS:
        return None
    lines = ["| case | value | note |", "|---|---|---|"]
    return "\n".join(lines + [f"| {c} | {'-' if v is None else f'{v:.1f}'} ms | {n} |" for c, v, n in ROWS])


@pytest.fixture(scope="module", autouse=True)
def _report(request: pytest.FixtureRequest) -> None:
    report_at_end(request, "codex", "litbridge codex driver (same run)", _table)


def _rollout_times(path: str) -> dict[str, float]:
    """turn_id -> epoch of its `task_complete` line's timestamp."""
    out = {}
    for line in Path(path).read_text().splitlines():
        e = json.loads(line)
        p = e.get("payload") or {}
        if e.get("type") == "event_msg" and p.get("type") == "task_complete":
            ts = dt.datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00")).timestamp()
            out[p.get("turn_id")] = ts
    return out


def test_codex_complete_and_create_latency() -> None:
    reason = codex_unavailable()
    if reason:
        pytest.skip(reason)
    from codex_env import Daemon  # type: ignore[import-not-found]
    from mock_openai import MockOpenAI  # type: ignore[import-not-found]

    with tempfile.TemporaryDirectory(prefix="lb-bench-codex-") as tmp, MockOpenAI() as mock:
        base = Path(tmp)
        (base / "lbd").mkdir()
        d = Daemon(base / "lbd", codex_binary())
        try:
            mock_to_complete, disk_to_complete, create_ready = asyncio.run(_measure(base, d, mock))
        finally:
            d.stop()
    note = f"{len(mock_to_complete)} turns, one session, real Codex 0.169.0"
    ROWS.append(("mock response.completed → complete, p50", _ms(pct(mock_to_complete, 50)), note))
    ROWS.append(("mock response.completed → complete, p99", _ms(pct(mock_to_complete, 99)), note))
    ROWS.append(
        ("rollout task_complete line → complete, p50", _ms(pct(disk_to_complete, 50)), "the daemon's share")
    )
    ROWS.append(
        ("rollout task_complete line → complete, p99", _ms(pct(disk_to_complete, 99)), "ms-resolution stamps")
    )
    cnote = f"{len(create_ready)} creates, Codex startup included"
    ROWS.append(("create → ready, p50", _ms(pct(create_ready, 50)), cnote))
    ROWS.append(("create → ready, max", _ms(max(create_ready) if create_ready else None), cnote))
    assert len(mock_to_complete) == TURNS


async def _measure(base: Path, d: Any, mock: Any) -> tuple[list[float], list[float], list[float]]:
    from codex_env import LBClient, create_cmd, make_home  # type: ignore[import-not-found]

    lb = await LBClient.connect(d)
    create_ready: list[float] = []
    mock_to_complete: list[float] = []
    disk_to_complete: list[float] = []
    try:
        for i in range(CREATES):
            h = make_home(base / f"c{i}")
            t0 = time.time()
            await lb.create(create_cmd(f"c{i}", h, mock))
            create_ready.append(time.time() - t0)
            if i:
                await lb.send("kill", session=f"c{i}")
        key = "c0"
        completes: list[tuple[str, float]] = []
        for n in range(TURNS):
            label = f"t{n}"
            mock.push({"label": label, "text": f"Answer number {n}.", "delay": 0.002})
            end = await lb.turn(key, f"question number {n}")
            got = time.time()
            assert end["event"] == "complete", end
            sent = mock.wait_for_event("response.completed", label=label, timeout=5)
            mock_to_complete.append(got - sent["t"])
            completes.append((end["turn_id"], got))
        await lb.send("dump", session=key, id="bench-dump")
        dump = await lb.wait(lambda e: e.get("event") == "dump" and e.get("re") == "bench-dump", timeout=10)
        path = dump.get("transcript_path")
        if path:
            stamps = sorted(_rollout_times(path).values())
            for (_tid, got), ts in zip(completes, stamps, strict=False):
                disk_to_complete.append(got - ts)
    finally:
        await lb.close()
    return mock_to_complete, disk_to_complete, create_ready


def _ms(v: float | None) -> float | None:
    return None if v is None else v * 1000
