"""opencode driver benchmarks: a real `litbridge serve`, the real opencode 1.18.33 and the project's mock
chat-completions API (`tests/fakes/mock_chat.py`), offline.

- **mock's last byte -> `complete`** (p50/p99 over 30 turns): the mock stamps the wall time it wrote `data: [DONE]`;
  the client stamps the read of the `complete` line. Covers opencode storing the step (its `event` rows in its
  SQLite session store), the driver's read-only poll of the database, and the socket.
- **database write -> `complete`** (the daemon's share): the mtime of the database's write-ahead log read right
  after `complete` (the commit that brought the turn's last rows) -> the `complete` read.
- **create -> ready**: `create` written -> `ready` read, private HOME. The first create is opencode's first start
  on a fresh database (it creates and migrates it: much slower), so each create has its own HOME.

Prints a table and writes `.benchmarks/opencode-{latest,smoke}.md`; never fails on a miss. Skips (with the reason)
without opencode (`python tests/fetch_fixtures.py`).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest
from mock_chat import MockChat  # type: ignore[import-not-found]
from opencode_helpers import make_home  # type: ignore[import-not-found]

from cli_latency import CREATES, TURNS, create_ready, latency_rows, ms, report, startup_rows, turn  # type: ignore[import-not-found]
from daemon_support import daemon, pct  # type: ignore[import-not-found]
from fetch_fixtures import opencode_binary, opencode_missing  # type: ignore[import-not-found]

ROWS, _report = report("opencode", "litbridge + real opencode 1.18.33 (same run)")
pytestmark = pytest.mark.timeout(1800)


def test_opencode_complete_latency_and_startup(tmp_path: Path) -> None:
    why = opencode_missing()
    if why:
        pytest.skip(why)
    bindir = Path(tempfile.mkdtemp(prefix="lbbench-opencode-", dir=tmp_path))
    (bindir / "opencode").symlink_to(opencode_binary())
    path = os.pathsep.join([str(bindir), os.environ.get("PATH", "")])
    wall_minus_mono = time.time() - time.monotonic()
    latencies: list[float] = []
    shares: list[float] = []
    startups: list[float] = []
    misses: list[str] = []
    try:
        with MockChat() as mock, daemon({"PATH": path}) as d:
            conn = d.connect()
            homes = [make_home(tmp_path / f"h{i}", mock.url) for i in range(CREATES)]
            for i, h in enumerate(homes):
                startups.append(create_ready(conn, f"c{i}", "opencode", h.cwd, h.env()))
                if i:
                    conn.cmd("kill", session=f"c{i}")
            wal = homes[0].db.with_name(homes[0].db.name + "-wal")
            for i in range(TURNS):
                try:
                    r = turn(conn, mock, "c0", i)
                except RuntimeError as exc:  # a miss is a row, not a failure (see the docstring)
                    misses.append(str(exc)[:160])
                    continue
                done = mock.wait_for_event("done", f"t{i}", timeout=10)
                latencies.append(r.at + wall_minus_mono - done["t"])
                try:  # opencode's checkpoint may have truncated and recreated the log between the commit and now
                    shares.append(r.at + wall_minus_mono - wal.stat().st_mtime_ns / 1e9)
                except FileNotFoundError:
                    pass
            conn.cmd("kill", session="c0")
    except Exception as exc:  # the run could not finish: its rows say why (a miss never fails the benchmark)
        misses.append(f"{type(exc).__name__}: {exc}"[:160])
    if latencies:
        ROWS.extend(latency_rows("mock's last byte → complete", latencies))
    else:
        ROWS.append(("mock's last byte → complete, p50", "n/a", "no turn completed"))
    if misses:
        ROWS.append(("turns that did not complete", str(len(misses)), misses[0]))
    if shares:
        ROWS.append(("database write → complete, p50", f"{ms(pct(shares, 50))} ms", "the daemon's share"))
        ROWS.append(("database write → complete, p99", f"{ms(pct(shares, 99))} ms", "WAL file mtime (ns)"))
    else:
        ROWS.append(("database write → complete, p50", "n/a", "the write-ahead log was gone at every read"))
    if startups:
        ROWS.extend(startup_rows(startups, "each a first start: a fresh database created and migrated"))
    else:
        ROWS.append(("create → ready, p50", "n/a", "no create became ready"))
    assert latencies or misses
