"""Qwen Code driver benchmarks: a real `litbridge serve`, the real Qwen Code 0.24.4 on the Node 22 fixture and the
project's mock chat-completions API (`tests/fakes/mock_chat.py`, Qwen's background requests answered as side
requests), offline.

- **mock's last byte -> `complete`** (p50/p99 over 30 turns): the mock stamps the wall time it wrote `data: [DONE]`;
  the client stamps the read of the `complete` line. Covers Qwen appending the answer to its chat JSONL, the
  driver's read of it, the idle screen the Gemini-family turn end waits for, and the socket.
- **create -> ready**: `create` written -> `ready` read, private HOME (the tests' `qwen_env.make_home`, folder trust
  off): Node starting Qwen and its "Initializing…" until the input box is live.

Prints a table and writes `.benchmarks/qwen-{latest,smoke}.md`; never fails on a miss. Skips (with the reason)
without Qwen Code or Node 22 (`python tests/fetch_fixtures.py`).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from qwen_env import create_cmd, make_home, qwen_mock  # type: ignore[import-not-found]

from cli_latency import CREATES, TURNS, create_ready, latency_rows, report, startup_rows, turn  # type: ignore[import-not-found]
from daemon_support import daemon  # type: ignore[import-not-found]
from fetch_fixtures import node22_missing, qwen_missing  # type: ignore[import-not-found]

ROWS, _report = report("qwen", "litbridge + real Qwen Code 0.24.4 (same run)")
pytestmark = pytest.mark.timeout(1800)


def test_qwen_complete_latency_and_startup(tmp_path: Path) -> None:
    why = qwen_missing() or node22_missing()
    if why:
        pytest.skip(why)
    wall_minus_mono = time.time() - time.monotonic()
    latencies: list[float] = []
    startups: list[float] = []
    with qwen_mock() as mock, daemon({}) as d:
        conn = d.connect()
        homes = [make_home(tmp_path / f"h{i}") for i in range(CREATES)]
        for i, h in enumerate(homes):
            h.configure(mock.url)
            cmd = create_cmd(f"q{i}", h)
            startups.append(create_ready(conn, f"q{i}", "qwen", h.cwd, cmd["env"]))
            if i:
                conn.cmd("kill", session=f"q{i}")
        for i in range(TURNS):
            r = turn(conn, mock, "q0", i)
            done = mock.wait_for_event("done", f"t{i}", timeout=10)
            latencies.append(r.at + wall_minus_mono - done["t"])
        conn.cmd("kill", session="q0")
    ROWS.extend(latency_rows("mock's last byte → complete", latencies))
    ROWS.extend(startup_rows(startups, "Node 22 starting Qwen, no dialog"))
    assert len(latencies) == TURNS
