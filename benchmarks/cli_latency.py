"""What the real-CLI latency benchmarks share (bench_copilot, bench_gemini, bench_pi, bench_kimi): a table of rows, `create` -> `ready`,
one scripted turn through a real `litbridge serve`, and the p50/p99 rows, so each bench keeps only its CLI's
set-up and what it stamps the end of a turn with."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from daemon_support import Conn, Received, pct  # type: ignore[import-not-found]
from report import SMOKE, report_at_end  # type: ignore[import-not-found]

TURNS = 3 if SMOKE else 30
CREATES = 1 if SMOKE else 5
NOTE = "1 session, 2-core VM shared with other work"

Row = tuple[str, str, str]


def ms(v: float | None) -> str:
    return "-" if v is None else f"{v * 1000:,.1f}"


def report(suite: str, title: str) -> tuple[list[Row], Any]:
    """The bench's rows and the module fixture that publishes them as a `| case | value | note |` table at the end
    of the run (nothing when empty): `ROWS, _report = report("copilot", "...")`."""
    rows: list[Row] = []

    def table() -> str | None:
        if not rows:
            return None
        return "| case | value | note |\n|---|---|---|\n" + "\n".join(
            f"| {a} | {b} | {c} |" for a, b, c in rows
        )

    @pytest.fixture(scope="module", autouse=True)
    def _report(request: pytest.FixtureRequest) -> None:
        report_at_end(request, suite, title, table)

    return rows, _report


def create_ready(conn: Conn, name: str, cli: str, cwd: Path, env: dict[str, str], **fields: Any) -> float:
    """Seconds from `create` written to `ready` read; `fields`: more `create` fields (`args`, `model`, ...)."""
    t0 = time.monotonic()
    conn.cmd("create", session=name, cli=cli, working_dir=str(cwd), env=env, **fields)
    r = conn.wait(lambda e: e.get("session") == name and e["event"] in ("ready", "error"), timeout=120)
    if r.ev["event"] != "ready":
        raise RuntimeError(f"create failed: {r.ev}")
    return float(r.at - t0)


def turn(conn: Conn, mock: Any, session: str, i: int) -> Received:
    """Script turn `i`'s answer (labelled `t{i}`) on `mock`, send its question, and return the `complete` read."""
    mock.push({"label": f"t{i}", "text": f"Answer number {i}: the value is {i * 7}.", "chunk": 12})
    conn.cmd("send", session=session, content=f"Question {i}?")
    r = conn.wait(lambda e: e.get("session") == session and e["event"] in ("complete", "turn_error"), 120)
    if r.ev["event"] != "complete":
        raise RuntimeError(f"turn {i} failed: {r.ev}")
    return r


def latency_rows(case: str, latencies: list[float]) -> list[Row]:
    """`case`, p50 / p99 / min-max."""
    note = f"{len(latencies)} turns, {NOTE}"
    return [
        (f"{case}, p50", f"{ms(pct(latencies, 50))} ms", note),
        (f"{case}, p99", f"{ms(pct(latencies, 99))} ms", note),
        (f"{case}, min/max", f"{ms(min(latencies))} / {ms(max(latencies))} ms", ""),
    ]


def startup_rows(startups: list[float], how: str) -> list[Row]:
    """`create → ready`, p50 / max; `how` says what the creates went through."""
    return [
        ("create → ready, p50", f"{ms(pct(startups, 50))} ms", f"{len(startups)} creates ({how})"),
        ("create → ready, max", f"{ms(max(startups))} ms", ""),
    ]
