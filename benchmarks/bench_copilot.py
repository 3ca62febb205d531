"""Copilot driver benchmarks: a real `litbridge serve`, the real GitHub Copilot CLI 1.0.102 and the project's mock
chat-completions API (`tests/fakes/mock_chat.py`), offline.

- **mock's last byte -> `complete`** (p50/p99 over 30 turns): the mock stamps the wall time it wrote `data: [DONE]`;
  the client stamps the read of the `complete` line. Covers Copilot writing `assistant.message` and
  `assistant.turn_end` to its `events.jsonl`, the driver's read of it, and the socket.
- **record write -> `complete`** (the daemon's share): the `events.jsonl` mtime read right after `complete` (the
  write that brought the turn's last `assistant.turn_end`) -> the `complete` read. Not the lines' own `timestamp`:
  Copilot stamps an entry when it makes it and writes entries in batches, 5-250 ms later in the recordings.
- **create -> ready**: `create` written -> `ready` read, private HOME; the folder trust dialog answered on screen.

Prints a table and writes `.benchmarks/copilot-{latest,smoke}.md`; never fails on a miss. Skips (with the reason)
without the Copilot CLI (`python tests/fetch_fixtures.py`).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest
from mock_chat import MockChat  # type: ignore[import-not-found]

from cli_latency import CREATES, TURNS, create_ready, latency_rows, ms, report, startup_rows, turn  # type: ignore[import-not-found]
from daemon_support import Conn, daemon, pct  # type: ignore[import-not-found]
from fetch_fixtures import copilot_binary, copilot_missing  # type: ignore[import-not-found]

ROWS, _report = report("copilot", "litbridge + real Copilot CLI 1.0.102 (same run)")
pytestmark = pytest.mark.timeout(1800)


def _create(conn: Conn, name: str, home: Path, mock: MockChat) -> float:
    """Seconds from `create` written to `ready` read."""
    cwd = home / "work"
    cwd.mkdir(parents=True)
    env = {
        "HOME": str(home),
        "COPILOT_OFFLINE": "true",
        "COPILOT_PROVIDER_BASE_URL": mock.url,
        "COPILOT_PROVIDER_API_KEY": "sk-mock-bench",
        "COPILOT_MODEL": "mock-model",
        "COPILOT_PROVIDER_MAX_PROMPT_TOKENS": "128000",
        "COPILOT_PROVIDER_MAX_OUTPUT_TOKENS": "8192",
    }
    return create_ready(conn, name, "copilot", cwd, env)


def test_copilot_complete_latency_and_startup(tmp_path: Path) -> None:
    why = copilot_missing()
    if why:
        pytest.skip(why)
    bindir = Path(tempfile.mkdtemp(prefix="lbbench-copilot-", dir=tmp_path))
    (bindir / "copilot").symlink_to(copilot_binary())
    path = os.pathsep.join([str(bindir), os.environ.get("PATH", "")])
    wall_minus_mono = time.time() - time.monotonic()
    latencies: list[float] = []
    shares: list[float] = []
    startups: list[float] = []
    with MockChat() as mock, daemon({"PATH": path}) as d:
        conn = d.connect()
        for i in range(CREATES):
            startups.append(_create(conn, f"c{i}", tmp_path / f"h{i}", mock))
            if i:
                conn.cmd("kill", session=f"c{i}")
        for i in range(TURNS):
            r = turn(conn, mock, "c0", i)
            done = mock.wait_for_event("done", f"t{i}", timeout=10)
            latencies.append(r.at + wall_minus_mono - done["t"])
            (record,) = (tmp_path / "h0" / ".copilot" / "session-state").glob("*/events.jsonl")
            shares.append(r.at + wall_minus_mono - record.stat().st_mtime_ns / 1e9)
        conn.cmd("kill", session="c0")
    ROWS.extend(latency_rows("mock's last byte → complete", latencies))
    ROWS.append(("events.jsonl write → complete, p50", f"{ms(pct(shares, 50))} ms", "the daemon's share"))
    ROWS.append(("events.jsonl write → complete, p99", f"{ms(pct(shares, 99))} ms", "file mtime (ns)"))
    ROWS.extend(startup_rows(startups, "trust dialog answered"))
    assert len(latencies) == TURNS
