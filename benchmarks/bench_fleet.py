"""Fleet benchmarks: D `litbridge serve --nats` daemons x S sessions through one real nats-server (JetStream).

Two workloads, each driven over every daemon's local socket:
- `replay` (the issue's size: `LITBRIDGE_FLEET_BENCH=10x50`): Claude-driver sessions whose CLI replays real
  recordings (benchmarks/daemon_support `claude_create`) at recorded speed; each session is sent its recording's
  prompts, the next on each `complete`;
- `tick`: generic-driver sessions answering every send with timestamped tick lines; all run T turns at once
  (plus the same turns without `--nats`, the CPU baseline).
Two readers see every event: the local socket connection that sent the turns, and a JetStream ordered consumer
on the fleet's stream (what `Fleet` clients read). Measured:
- events/s at the local sockets and through the stream (messages the consumer received / window),
- added latency: the consumer's arrival time minus the local socket's for the same (daemon, seq), p50 / p99,
- CPU of the daemons (sum) and of nats-server over the window, as % of one core.
Prints a table (and writes .benchmarks/fleet-{latest,smoke}.md); never fails on a figure. Skips without
nats-server or nats-py (from a checkout: pip install '.[fleet]'), and the replay without the recordings.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from daemon_support import (  # type: ignore[import-not-found]
    REPLAYABLE,
    Conn,
    cpu_seconds,
    daemon,
    need_captures,
    pct,
    prompts_of,
)
from report import SMOKE, report_at_end  # type: ignore[import-not-found]


def _size() -> tuple[int, int, int]:
    """D x S x T: smoke 1x2x1, default 4x20x3; `LITBRIDGE_FLEET_BENCH=10x50` (x T for the tick workload) for
    the issue's size."""
    if SMOKE:
        return 1, 2, 1
    text = os.environ.get("LITBRIDGE_FLEET_BENCH", "4x20x3")
    d, s, *t = (int(x) for x in text.lower().split("x"))
    return d, s, (t[0] if t else 3)


DAEMONS, SESSIONS, TURNS = _size()
REPLAY_SESSIONS = 1 if SMOKE else SESSIONS  # per daemon; a replayed recording takes its recorded time
TICKS, INTERVAL, QUIET = (3, 0.02, 0.15) if SMOKE else (10, 0.02, 0.15)
pytestmark = pytest.mark.timeout(1800)  # the 10 x 50 replay on a loaded 2-core box

ROWS: list[tuple[str, str, str, str]] = []  # workload, measure, case, value


def _table() -> str | None:
    if not ROWS:
        return None
    return "\n".join(
        ["| workload | measure | case | value |", "|---|---|---|---|"]
        + [f"| {w} | {a} | {b} | {c} |" for w, a, b, c in ROWS]
    )


@pytest.fixture(scope="module", autouse=True)
def _report(request: pytest.FixtureRequest) -> None:
    report_at_end(request, "fleet", "litbridge fleet over NATS (same run)", _table)


@contextlib.contextmanager
def nats_server() -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    binary = shutil.which("nats-server")
    if binary is None:
        pytest.skip("no nats-server (tests/fetch_fixtures.py installs Debian's nats-server)")
    pytest.importorskip(
        "nats", reason="the fleet benchmark needs nats-py (from a checkout: pip install '.[fleet]')"
    )
    tmp = Path(tempfile.mkdtemp(prefix="lbnats-"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(tmp / "nats.log", "wb")
    proc = subprocess.Popen(
        [binary, "-js", "-sd", str(tmp / "js"), "-a", "127.0.0.1", "-p", str(port)], stdout=log, stderr=log
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((tmp / "nats.log").read_text()[-2000:])
            time.sleep(0.05)
        yield proc, f"nats://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


class StreamReader:
    """A JetStream ordered consumer on every daemon's events, in its own thread and loop, stamping each message
    with time.monotonic() on arrival, keyed by (daemon, seq)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.seen: dict[tuple[str, int], float] = {}
        self.count = 0
        self.ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._t = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)
        self._t.start()

    async def _run(self) -> None:
        import nats

        from litbridge.fleet import subjects
        from litbridge.fleet.client import Fleet

        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with Fleet.connect(self.url) as fleet:
            while len([d for d in await fleet.daemons() if d["available"]]) < DAEMONS:  # noqa: ASYNC110
                await asyncio.sleep(0.1)  # every daemon has joined (its stream and registry exist)

            async def on_msg(msg: Any) -> None:
                now = time.monotonic()
                headers = msg.headers or {}
                seq = headers.get(subjects.SEQ_HEADER)
                self.count += 1
                if seq is not None:
                    self.seen[(headers.get(subjects.DAEMON_HEADER, ""), int(seq))] = now

            sub = await fleet.js.subscribe(
                subjects.events_all(fleet.name),
                stream=subjects.stream(fleet.name),
                cb=on_msg,
                ordered_consumer=True,
                deliver_policy=nats.js.api.DeliverPolicy.NEW,
            )
            self.ready.set()
            await self._stop.wait()
            await sub.unsubscribe()

    def close(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._t.join(10)


def _create_sessions(daemons: list[Any]) -> list[Conn]:
    """S tick sessions on every daemon, created over its local socket (that connection then sees their events)."""
    conns: list[Conn] = [d.connect() for d in daemons]
    for d, c in zip(daemons, conns, strict=True):
        for j in range(SESSIONS):
            c.cmd("create", **d.tick_create(f"s{j}", TICKS, INTERVAL, QUIET))
        for _ in range(SESSIONS):
            r = c.wait(lambda e: e.get("event") in ("ready", "error"), 120)
            assert r.ev["event"] == "ready", r.ev
    return conns


def _turns(conns: list[Conn]) -> tuple[float, list[list[Any]]]:
    """TURNS rounds: every session gets a turn at once, then all are awaited; (wall seconds, events per conn)."""
    sinks: list[list[Any]] = [[] for _ in conns]
    t0 = time.monotonic()
    for _ in range(TURNS):
        for c in conns:
            for j in range(SESSIONS):
                c.cmd("send", session=f"s{j}", content="go")
        for c, sink in zip(conns, sinks, strict=True):
            for _ in range(SESSIONS):
                c.wait(lambda e: e.get("event") in ("complete", "turn_error", "interrupted"), 300, sink)
    return time.monotonic() - t0, sinks


def _replay(daemons: list[Any]) -> tuple[list[Conn], Any]:
    """S Claude sessions per daemon replaying recordings (cycling REPLAYABLE); returns the conns and a driver
    that sends each session its recording's prompts, the next on each `complete`, one thread per daemon."""
    conns: list[Conn] = [d.connect() for d in daemons]
    plans = [
        [(f"r{j}", prompts_of(REPLAYABLE[j % len(REPLAYABLE)])) for j in range(REPLAY_SESSIONS)]
        for _ in daemons
    ]
    for d, c in zip(daemons, conns, strict=True):
        for j in range(REPLAY_SESSIONS):
            c.cmd("create", **d.claude_create(f"r{j}", REPLAYABLE[j % len(REPLAYABLE)]))
        for _ in range(REPLAY_SESSIONS):
            r = c.wait(lambda e: e.get("event") in ("ready", "error"), 300)
            assert r.ev["event"] == "ready", r.ev
    failed: list[str] = []

    def drive_one(c: Conn, plan: list[tuple[str, list[str]]], sink: list[Any]) -> None:
        sent = {name: 1 for name, _ in plan}
        prompts = dict(plan)
        for name, ps in plan:
            c.cmd("send", session=name, content=ps[0])
        left = len(plan)
        deadline = time.monotonic() + 600
        while left:
            try:
                r = c.wait(lambda e: True, max(1.0, deadline - time.monotonic()), sink)
            except Exception:
                failed.append(f"timeout with {left} sessions unfinished")
                return
            name, kind = r.ev.get("session"), r.ev.get("event")
            if name not in prompts or kind not in (
                "complete",
                "turn_error",
                "interrupted",
                "exited",
                "error",
            ):
                continue
            if kind != "complete" or sent[name] >= len(prompts[name]):
                if kind != "complete":
                    failed.append(f"{name}: {kind} {r.ev.get('code') or r.ev.get('message') or ''}".strip())
                left -= 1
                sent[name] = len(prompts[name]) + 1
                continue
            c.cmd("send", session=name, content=prompts[name][sent[name]])
            sent[name] += 1

    def drive() -> tuple[float, list[list[Any]], str]:
        sinks: list[list[Any]] = [[] for _ in conns]
        threads = [
            threading.Thread(target=drive_one, args=(c, plan, sink), daemon=True)
            for c, plan, sink in zip(conns, plans, sinks, strict=True)
        ]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        turns = sum(len(ps) for plan in plans for _, ps in plan)
        note = f"{turns} turns of {len(REPLAYABLE)} recordings"
        return (
            time.monotonic() - t0,
            sinks,
            note + (f"; failed {len(failed)}: {failed[:3]}" if failed else ""),
        )

    return conns, drive


def _tick(daemons: list[Any]) -> tuple[list[Conn], Any]:
    conns = _create_sessions(daemons)

    def drive() -> tuple[float, list[list[Any]], str]:
        window, sinks = _turns(conns)
        return window, sinks, f"{TURNS} turns per session at once"

    return conns, drive


def _fleet_run(workload: str) -> None:
    with contextlib.ExitStack() as stack:
        server, url = stack.enter_context(nats_server())
        daemons = [
            stack.enter_context(daemon(args=("--nats", url, "--daemon-id", f"b{i}"))) for i in range(DAEMONS)
        ]
        reader = StreamReader(url)
        stack.callback(reader.close)
        assert reader.ready.wait(120), "the daemons did not join the fleet"
        conns, drive = (_replay if workload == "replay" else _tick)(daemons)
        c0 = [cpu_seconds(d.pid) for d in daemons]
        s0 = cpu_seconds(server.pid)
        n0 = reader.count
        t0 = time.monotonic()
        window, sinks, how = drive()
        local: dict[tuple[str, int], float] = {}
        kinds: dict[tuple[str, int], str] = {}
        for i, (c, sink) in enumerate(zip(conns, sinks, strict=True)):
            c.drain(sink)
            for r in sink:
                if isinstance(r.ev.get("seq"), int):
                    local.setdefault((f"b{i}", r.ev["seq"]), r.at)
                    kinds[(f"b{i}", r.ev["seq"])] = str(r.ev.get("event"))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not all(k in reader.seen for k in local):
            time.sleep(0.1)
        # the span: from the first send until the stream delivered the last event (it may lag the sockets);
        # CPU is taken over it, so the daemons' publishing of a backlog after the turns is counted
        span = max([window, *(t - t0 for t in reader.seen.values() if t >= t0)])
        cpu_daemons = sum(cpu_seconds(d.pid) - a for d, a in zip(daemons, c0, strict=True)) / span
        cpu_server = (cpu_seconds(server.pid) - s0) / span
        stream_events = reader.count - n0
        added = [(reader.seen[k] - t) * 1000 for k, t in local.items() if k in reader.seen]
        missing = [kinds[k] for k in local if k not in reader.seen]
        replaces = sum(1 for kind in missing if kind == "replace")  # superseded: skipped by design
        others = sorted({kind for kind in missing if kind != "replace"})

    def row(measure: str, case: str, value: str) -> None:
        ROWS.append((workload, measure, case, value))

    size = f"{DAEMONS} x {SESSIONS} x {TURNS}" if workload == "tick" else f"{DAEMONS} x {REPLAY_SESSIONS}"
    row("setup", "daemons x sessions" + (" x turns" if workload == "tick" else ""), f"{size} ({how})")
    row(
        "window",
        "turns; until the stream's last event; load average at the end",
        f"{window:.1f} s; {span:.1f} s; {os.getloadavg()[0]:.1f}",
    )
    row("events at the local sockets", "per second over the turns", f"{len(local) / window:.0f} /s")
    row("events through the stream", "per second until its last event", f"{stream_events / span:.0f} /s")
    note = f"{len(added)} events"
    if replaces:
        note += f"; {replaces} superseded replace skipped by the publisher"
    if len(missing) > replaces:
        note += f"; {len(missing) - replaces} others NOT on the stream: {others}"
    row("added latency, stream vs local socket", f"p50 ({note})", f"{pct(added, 50) or 0:.1f} ms")
    row("added latency, stream vs local socket", "p99", f"{pct(added, 99) or 0:.1f} ms")
    row(
        "daemon CPU (all daemons)",
        "% of one core, until the stream's last event",
        f"{cpu_daemons * 100:.1f} %",
    )
    row("nats-server CPU", "% of one core, until the stream's last event", f"{cpu_server * 100:.1f} %")


def test_fleet_replay_recordings() -> None:
    """The issue's workload: Claude sessions replaying recordings through the fleet (never fails on a figure)."""
    need_captures()
    _fleet_run("replay")


def test_fleet_events_latency_and_cpu() -> None:
    _fleet_run("tick")


def test_local_only_baseline() -> None:
    """The same daemons and turns without --nats: the daemons' CPU the fleet's numbers compare with."""
    with contextlib.ExitStack() as stack:
        daemons = [stack.enter_context(daemon()) for _ in range(DAEMONS)]
        conns = _create_sessions(daemons)
        c0 = [cpu_seconds(d.pid) for d in daemons]
        window, sinks = _turns(conns)
        cpu = sum(cpu_seconds(d.pid) - a for d, a in zip(daemons, c0, strict=True)) / window
    events = sum(1 for sink in sinks for r in sink if isinstance(r.ev.get("seq"), int))
    ROWS.append(("tick", "daemon CPU (all daemons), without --nats", "% of one core", f"{cpu * 100:.1f} %"))
    ROWS.append(
        (
            "tick",
            "events at the local sockets, without --nats",
            "per second over the run",
            f"{events / window:.0f} /s",
        )
    )
