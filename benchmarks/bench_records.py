"""Record-following benchmarks: what Claude Code sessions sharing one project folder cost each other.

Every session's transcript is a file in the project folder of its working directory, and a `/clear` roll shows up
as a new file there, so each new file is a possible roll for every session in the folder: N sessions in one folder
with N new files (a burst of creates) is N x N questions. Measured: the CPU (this thread's clock) of one roll check
by each of N tailers pinned before N new files appear (meta entries only: undecided, the dearest case), as the
follower asks it (`find_clear_roll(cwd, now)`, every session at the same loop time). The folder is listed once per
change and each file's head read once, whichever session asks; what grows with N x N is set arithmetic.
Prints a table (and writes .benchmarks/records-{latest,smoke}.md); never fails on a figure.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import orjson
import pytest

from inputs import SMOKE  # type: ignore[import-not-found]
from litbridge.drivers.claude.transcript import TranscriptTailer

SIZES = (20,) if SMOKE else (100, 300, 1000)
ROWS: list[tuple[str, str, str]] = []


def _table() -> str | None:
    if not ROWS:
        return None
    head = ["| sessions in one folder | one roll check each (CPU) | per session |", "|---|---|---|"]
    return "\n".join(head + [f"| {a} | {b} | {c} |" for a, b, c in ROWS])


@pytest.fixture(scope="module", autouse=True)
def _report(request: pytest.FixtureRequest) -> None:
    from report import report_at_end  # type: ignore[import-not-found]

    report_at_end(request, "records", "litbridge record following, sessions sharing a folder", _table)


def _settled(folder: Path) -> None:
    os.utime(folder, ns=(time.time_ns() - 10**9,) * 2)  # a folder that stopped changing a moment ago


@pytest.mark.parametrize("n", SIZES)
def test_sessions_sharing_a_folder_check_new_files(n: int) -> None:
    meta = orjson.dumps({"type": "mode", "mode": "normal"}) + b"\n"
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        for i in range(n):
            (folder / f"s{i}.jsonl").write_bytes(meta)
        _settled(folder)
        tailers = [TranscriptTailer(folder, f"s{i}") for i in range(n)]
        for i in range(n):
            (folder / f"n{i}.jsonl").write_bytes(meta)
        _settled(folder)
        t0 = time.thread_time()
        found = [t.find_clear_roll("/w", 10.0) for t in tailers]
        spent = time.thread_time() - t0
    assert found == [None] * n
    ROWS.append((f"{n} sessions, {n} new files", f"{spent * 1000:.1f} ms", f"{spent / n * 1e6:.0f} µs"))
