"""Gemini driver benchmarks: a real `litbridge serve`, the real Gemini CLI 0.61.0 and the project's mock Gemini API.

- **mock's last chunk -> `complete`** (p50/p99 over 30 turns): the mock stamps the wall time it wrote the final SSE
  chunk (`finishReason: STOP`); the client stamps the read of the `complete` line. Covers the CLI writing its chat
  record and then its `Ready` title (the driver completes on both: the chat record alone cannot tell a finished
  answer from one whose tool calls are about to be added), the driver's chat read, and the socket.
- **create -> ready**: `create` written -> `ready` read, private HOME, trusted folder (no dialog).

Prints a table and writes `.benchmarks/gemini-{latest,smoke}.md`; never fails on a miss. Skips (with the reason)
without the Gemini CLI (`python tests/fetch_fixtures.py`).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from mock_gemini import MockGemini  # type: ignore[import-not-found]

from cli_latency import CREATES, TURNS, create_ready, latency_rows, report, startup_rows, turn  # type: ignore[import-not-found]
from daemon_support import daemon  # type: ignore[import-not-found]
from fetch_fixtures import gemini_launcher, gemini_missing  # type: ignore[import-not-found]

ROWS, _report = report("gemini", "litbridge + real Gemini CLI 0.61.0 (same run)")
pytestmark = pytest.mark.timeout(1800)


def _home(base: Path, name: str) -> tuple[Path, Path]:
    home = base / name
    cwd = home / "work" / "bench"
    cwd.mkdir(parents=True)
    (home / ".gemini").mkdir()
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(cwd): "TRUST_FOLDER"}))
    return home, cwd


def test_gemini_complete_latency_and_startup(tmp_path: Path) -> None:
    why = gemini_missing()
    if why:
        pytest.skip(why)
    bin_dir = gemini_launcher().parent
    node_dir = os.path.dirname(shutil.which("node") or "/usr/bin/node")
    path = os.pathsep.join([str(bin_dir), node_dir, os.environ.get("PATH", "")])
    wall_minus_mono = time.time() - time.monotonic()
    latencies: list[float] = []
    startups: list[float] = []
    with MockGemini() as mock, daemon({"PATH": path}) as d:
        conn = d.connect()
        for i in range(CREATES):
            home, cwd = _home(tmp_path, f"h{i}")
            env = {"HOME": str(home), "GOOGLE_GEMINI_BASE_URL": mock.url, "GEMINI_API_KEY": "mock-key-bench"}
            startups.append(create_ready(conn, f"g{i}", "gemini", cwd, env))
            if i:
                conn.cmd("kill", session=f"g{i}")
        for i in range(TURNS):
            r = turn(conn, mock, "g0", i)
            latencies.append(r.at + wall_minus_mono - mock.last_chunk_times()[-1])
        conn.cmd("kill", session="g0")
    ROWS.extend(latency_rows("mock's last chunk → complete", latencies))
    ROWS.extend(startup_rows(startups, "Node start, no dialog"))
    assert len(latencies) == TURNS
