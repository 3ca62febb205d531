"""Kimi Code driver benchmarks: a real `litbridge serve`, the real Kimi Code 2.1.0 on Node 22 and the project's mock
chat-completions API (`tests/fakes/mock_chat.py`), offline.

- **mock's last byte -> `complete`** (p50/p99 over 30 turns): the mock stamps the wall time it wrote `data: [DONE]`;
  the client stamps the read of the `complete` line. Covers Kimi appending the turn's end to its `wire.jsonl`, the
  driver's read of it, and the socket.
- **record write -> `complete`** (the daemon's share): the `wire.jsonl` mtime read right after `complete` (the
  write that brought the turn's end) -> the `complete` read.
- **create -> ready**: `create` written -> `ready` read, private HOME (the tests' `kimi_env.make_home`); the folder
  trust panel answered on screen.

Prints a table and writes `.benchmarks/kimi-{latest,smoke}.md`; never fails on a miss. Skips (with the reason)
without Kimi Code or the Node 22 it needs (`python tests/fetch_fixtures.py`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from kimi_env import create_cmd, make_home  # type: ignore[import-not-found]
from mock_chat import MockChat  # type: ignore[import-not-found]

from cli_latency import CREATES, TURNS, create_ready, latency_rows, ms, report, startup_rows, turn  # type: ignore[import-not-found]
from daemon_support import daemon, pct  # type: ignore[import-not-found]
from fetch_fixtures import kimi_launcher, kimi_missing, node22_bin, node22_missing  # type: ignore[import-not-found]

ROWS, _report = report("kimi", "litbridge + real Kimi Code 2.1.0 (same run)")
pytestmark = pytest.mark.timeout(1800)


def test_kimi_complete_latency_and_startup(tmp_path: Path) -> None:
    why = kimi_missing() or node22_missing()
    if why:
        pytest.skip(why)
    # the Node 22 fixture first: the system's node may be older than Kimi needs
    path = os.pathsep.join([str(node22_bin()), str(kimi_launcher().parent), os.environ.get("PATH", "")])
    wall_minus_mono = time.time() - time.monotonic()
    latencies: list[float] = []
    shares: list[float] = []
    startups: list[float] = []
    with MockChat() as mock, daemon({"PATH": path}) as d:
        conn = d.connect()
        homes = [make_home(tmp_path / f"h{i}", mock.url) for i in range(CREATES)]
        for i, h in enumerate(homes):
            startups.append(create_ready(conn, f"k{i}", "kimi", h.cwd, create_cmd(f"k{i}", h)["env"]))
            if i:
                conn.cmd("kill", session=f"k{i}")
        for i in range(TURNS):
            r = turn(conn, mock, "k0", i)
            done = mock.wait_for_event("done", f"t{i}", timeout=10)
            latencies.append(r.at + wall_minus_mono - done["t"])
            (record,) = homes[0].wires()
            shares.append(r.at + wall_minus_mono - record.stat().st_mtime_ns / 1e9)
        conn.cmd("kill", session="k0")
    ROWS.extend(latency_rows("mock's last byte → complete", latencies))
    ROWS.append(("wire.jsonl write → complete, p50", f"{ms(pct(shares, 50))} ms", "the daemon's share"))
    ROWS.append(("wire.jsonl write → complete, p99", f"{ms(pct(shares, 99))} ms", "file mtime (ns)"))
    ROWS.extend(startup_rows(startups, "Node 22 start, trust panel answered"))
    assert len(latencies) == TURNS
