"""Pi driver benchmarks: a real `litbridge serve`, the real Pi 0.73.1 and the project's mock chat-completions API
(`tests/fakes/mock_chat.py`), offline.

- **mock's last byte -> `complete`** (p50/p99 over 30 turns): the mock stamps the wall time it wrote `data: [DONE]`;
  the client stamps the read of the `complete` line. Covers Pi appending the answer to its session JSONL, the
  driver's read of it, and the socket.
  The whole span is a few ms, so it bounds the daemon's share; no record-mtime row as Copilot and Kimi have: the
  session JSONL's mtime read ~3 ms *before* the mock's finish chunk in the runs made, so it times nothing useful.
- **create -> ready**: `create` written -> `ready` read, private HOME (the tests' `pi_env.make_home`); Pi shows no
  start-up dialog, so this is Node starting Pi.

Prints a table and writes `.benchmarks/pi-{latest,smoke}.md`; never fails on a miss. Skips (with the reason)
without Pi (`python tests/fetch_fixtures.py`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from mock_chat import MockChat  # type: ignore[import-not-found]
from pi_env import create_cmd, make_home  # type: ignore[import-not-found]

from cli_latency import CREATES, TURNS, create_ready, latency_rows, report, startup_rows, turn  # type: ignore[import-not-found]
from daemon_support import daemon  # type: ignore[import-not-found]
from fetch_fixtures import pi_launcher, pi_missing  # type: ignore[import-not-found]

ROWS, _report = report("pi", "litbridge + real Pi 0.73.1 (same run)")
pytestmark = pytest.mark.timeout(1800)


def test_pi_complete_latency_and_startup(tmp_path: Path) -> None:
    why = pi_missing()
    if why:
        pytest.skip(why)
    path = os.pathsep.join([str(pi_launcher().parent), os.environ.get("PATH", "")])
    wall_minus_mono = time.time() - time.monotonic()
    latencies: list[float] = []
    startups: list[float] = []
    with MockChat() as mock, daemon({"PATH": path}) as d:
        conn = d.connect()
        homes = [make_home(tmp_path / f"h{i}", mock.url) for i in range(CREATES)]
        for i, h in enumerate(homes):
            cmd = create_cmd(f"p{i}", h)
            fields = {k: cmd[k] for k in ("args", "model")}
            startups.append(create_ready(conn, f"p{i}", "pi", h.cwd, cmd["env"], **fields))
            if i:
                conn.cmd("kill", session=f"p{i}")
        for i in range(TURNS):
            r = turn(conn, mock, "p0", i)
            done = mock.wait_for_event("done", f"t{i}", timeout=10)
            latencies.append(r.at + wall_minus_mono - done["t"])
        conn.cmd("kill", session="p0")
    ROWS.extend(latency_rows("mock's last byte → complete", latencies))
    ROWS.extend(startup_rows(startups, "Node start, no dialog"))
    assert len(latencies) == TURNS
