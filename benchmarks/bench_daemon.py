"""Daemon benchmarks: a real `litbridge serve` subprocess and a client on its socket, fake CLIs under PTYs.

Event latency (PTY write -> `replace`/`state` at the client, generic driver, timestamped tick lines), `complete`
latency (transcript `end_turn` line written -> `complete` at the client, Claude driver over a replayed real
recording), scale (N Claude sessions replaying recordings at recorded speed: daemon CPU in all and per
streaming session, the fake CLIs' CPU, RSS, event lag, bytes per client per turn, sessions created per second;
`LITBRIDGE_SCALE_BENCH=1,10,100,300,1000` picks the Ns, default 1,10,100), and the bytes a long streamed answer costs on the wire to a client that asked for
deltas (`append`) and to one that did not (`replace`). Prints pass/short against the targets; never fails on a
miss.
"""

from __future__ import annotations

import bisect
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest

from daemon_support import (  # type: ignore[import-not-found]
    REPLAYABLE,
    Conn,
    DaemonProc,
    Received,
    Sampler,
    children_cpu_seconds,
    cpu_seconds,
    daemon,
    kernel_side,
    machine_seconds,
    machine_split,
    mem_kb,
    need_captures,
    pct,
    prompts_of,
    read_log,
    runq_wait_seconds,
)
from profile_share import Profiler, profile_dir  # type: ignore[import-not-found]
from report import SMOKE, report_at_end, verdict  # type: ignore[import-not-found]

HERE = Path(__file__).resolve().parent


def _scale_ns() -> tuple[int, ...]:
    """The scale test's Ns: `LITBRIDGE_SCALE_BENCH` (comma-separated), else 1, 10, 100; 2 at smoke size."""
    if SMOKE:
        return (2,)
    raw = os.environ.get("LITBRIDGE_SCALE_BENCH", "1,10,100")
    return tuple(int(x) for x in raw.replace(" ", "").split(",") if x)


SCALE_N = _scale_ns()
pytestmark = pytest.mark.timeout(1800)

TICK_RE = re.compile(r"tick (\d+)\.(\d+) (\d+\.\d+)", re.M)
TERMINAL = ("complete", "interrupted", "turn_error")


# ---------------------------------------------------------------------------------------------- results


@dataclass
class Row:
    section: str
    case: str
    unit: str
    value: float | None
    target: str = ""
    ok: bool | None = None
    note: str = ""


@dataclass
class DaemonResults:
    rows: list[Row] = field(default_factory=list)

    def add(
        self,
        section: str,
        case: str,
        unit: str,
        value: float | None,
        limit: float | None = None,
        note: str = "",
        higher_better: bool = False,
    ) -> None:
        ok = None
        target = ""
        if limit is not None:
            target = f"{'≥' if higher_better else '≤'} {limit:g} {unit}"
            ok = None if value is None else (value >= limit if higher_better else value <= limit)
        self.rows.append(Row(section, case, unit, value, target, ok, note))

    def table(self) -> str:
        head = ("section", "case", "value", "target", "verdict", "note")
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in self.rows:
            v = "-" if r.value is None else (f"{r.value:,.1f}" if abs(r.value) >= 10 else f"{r.value:.2f}")
            lines.append(
                f"| {r.section} | {r.case} | {v} {r.unit} | {r.target} | {verdict(r.ok)} | {r.note} |"
            )
        return "\n".join(lines)


RESULTS = DaemonResults()


@pytest.fixture(scope="module", autouse=True)
def _report(request: pytest.FixtureRequest) -> None:
    report_at_end(
        request,
        "daemon",
        "litbridge daemon (same run)",
        lambda: RESULTS.table() if RESULTS.rows else None,
        lambda: [r.__dict__ for r in RESULTS.rows],
    )


def _ms(v: float | None) -> float | None:
    return None if v is None else v * 1000


def machine_note(split: dict[str, float], ours: tuple[float, float, float | None]) -> str:
    """A machine row's note: where all the CPUs' time went (`machine_split`), and what of it the daemon, its CLIs
    and (over the turns) this client used, from their own counters, as shares of the same total. What is left of
    `busy` is everyone else's: other processes, the kernel's own threads and interrupts."""
    total = split["seconds"]
    daemon_s, clis_s, client_s = ours
    parts = [("the daemon", daemon_s), ("the CLIs it started", clis_s), ("this client", client_s)]
    known = [(who, 100 * s / total) for who, s in parts if s is not None]
    rest = split["busy"] - sum(p for _, p in known)
    return (
        f"of {split['cpus']:.0f} CPUs' time: user {split['user']:.0f}%, niced user {split['nice']:.0f}% (the CLIs "
        f"under --cli-nice), kernel {split['kernel']:.0f}%, idle {split['idle'] + split['iowait']:.0f}%, steal "
        f"{split['steal']:.0f}%; "
        + ", ".join(f"{who} {p:.0f}%" for who, p in known)
        + f", {'everything else' if client_s is not None else 'everything else (this client too)'} {rest:.0f}%"
    )


# ---------------------------------------------------------------------------------------------- drivers of the fakes


class TickProbe:
    """A generic-driver session answering each send with timestamped tick lines: write -> event latency."""

    def __init__(
        self, d: DaemonProc, conn: Conn, name: str, ticks: int, interval: float, quiet: float
    ) -> None:
        self.conn, self.name = conn, name
        self.create = d.tick_create(name, ticks, interval, quiet)
        self.replace_lat: list[float] = []
        self.state_lat: list[float] = []
        self.turns = 0
        self._seen: set[tuple[int, int]] = set()
        self._turn_start_tick: dict[int, float] = {}
        self._awaiting_state = False
        self._pending_state_at: float | None = None

    def send(self) -> None:
        self.turns += 1
        self._awaiting_state = True
        self.conn.cmd("send", session=self.name, content=f"go {self.turns}")

    def on_event(self, r: Received) -> bool:
        """Record latencies; True when this event ended a turn."""
        e = r.ev
        kind = e.get("event")
        if kind == "replace":
            # every tick shown for the first time counts (several may arrive in one event when the daemon lags)
            for m in TICK_RE.finditer(str(e.get("text", ""))):
                key = (int(m.group(1)), int(m.group(2)))
                if key not in self._seen:
                    self._seen.add(key)
                    self.replace_lat.append(r.at - float(m.group(3)))
                    if key[1] == 0:
                        self._turn_start_tick[key[0]] = float(m.group(3))
        elif kind == "state" and e.get("to") == "responding" and self._awaiting_state:
            self._awaiting_state = False
            self._pending_state_at = r.at
        return kind in TERMINAL

    def finish_turn(self) -> None:
        """Pair the turn's `responding` state with its first tick's write time (known once the replace came)."""
        at = self._pending_state_at
        first = self._turn_start_tick.get(self.turns)
        if at is not None and first is not None and at >= first:
            self.state_lat.append(at - first)
        self._pending_state_at = None


@dataclass
class ReplaySession:
    """A Claude-driver session whose CLI replays a recording; the client sends the recorded prompts."""

    name: str
    capture: str
    prompts: list[str]
    sent: int = 0
    done: int = 0
    ready_at: float | None = None
    completes: list[Received] = field(default_factory=list)
    events: list[Received] = field(default_factory=list)
    failed: str | None = None
    sent_at: list[float] = field(default_factory=list)  # monotonic time of each `send` written

    def send_next(self, conn: Conn) -> None:
        """Send the next recorded prompt."""
        self.sent_at.append(time.monotonic())
        conn.cmd("send", session=self.name, content=self.prompts[self.sent])
        self.sent += 1

    @property
    def finished(self) -> bool:
        return self.failed is not None or self.done >= len(self.prompts)


@dataclass
class FakeTurns:
    """What a replaying fake logged of its turns (`replay_cli.py --log`), monotonic times and recorded ones."""

    submits: list[tuple[float, float]] = field(default_factory=list)
    """(written, recorded t) of each Enter taken."""
    ends: list[tuple[float, float, float]] = field(default_factory=list)
    """Per turn: (its first end_turn line written, its turn_duration line written, that line's recorded t)."""


def fake_turns(d: DaemonProc, s: ReplaySession) -> FakeTurns:
    """The k-th `ends` entry is the k-th turn_duration line; its end_turn is the first end_turn line written after
    the previous turn_duration (a turn may hold several end_turn lines)."""
    out = FakeTurns()
    first_end: float | None = None
    for x in read_log(d.logs / s.name):
        if x.get("k") == "submit":
            out.submits.append((x["m"], x["t"]))
        elif x.get("k") != "jsonl":
            continue
        elif x.get("tag") == "end_turn" and first_end is None:
            first_end = x["m"]
        elif x.get("tag") == "turn_duration":
            out.ends.append((first_end if first_end is not None else x["m"], x["m"], x["t"]))
            first_end = None
    return out


def complete_latencies(d: DaemonProc, sessions: list[ReplaySession]) -> tuple[list[float], list[float]]:
    """(end_turn line written -> complete read, turn_duration line written -> complete read) per turn: the k-th
    transcript `complete` of a session pairs with the k-th turn of `fake_turns`."""
    from_end, from_dur = [], []
    for s in sessions:
        comps = [c for c in s.completes if c.ev.get("source") == "transcript"]
        for c, (end, dur, _) in zip(comps, fake_turns(d, s).ends, strict=False):
            from_end.append(c.at - end)
            from_dur.append(c.at - dur)
    return from_end, from_dur


def turn_pace(d: DaemonProc, sessions: list[ReplaySession]) -> tuple[list[float], list[float]]:
    """(per session: its turns took this long past the recording's own, per turn: the same for Enter → end).

    A session's floor is the sum of its recorded turns, each from its Enter to its `turn_duration` line (the
    fake waits at each prompt for the daemon's Enter and skips the user's pause once the Enter came): what is
    over it is each turn's end → the next Enter (the CLI's own frames after a turn until its prompt is back,
    the `complete`, the next send, the daemon's typing and Enter gap) and the fake falling behind its recording
    (kept from the CPU, or blocked on a PTY the daemon did not read). The daemon's CPU % is taken over the
    turn window, so a daemon that saved CPU by slowing turns would show here."""
    overrun: list[float] = []
    slip: list[float] = []
    for s in sessions:
        ft = fake_turns(d, s)
        if not ft.submits:
            continue
        # (Enter taken, turn_duration written) per turn, recorded and as replayed; a turn ended before the first
        # Enter (none in the replayed recordings) would not be one of the sends'
        turns = [
            ((m_in, t_in), (m_end, t_end))
            for (m_in, t_in), (_, m_end, t_end) in zip(
                ft.submits, [e for e in ft.ends if e[1] >= ft.submits[0][0]], strict=False
            )
        ]
        slip.extend((m_end - m_in) - (t_end - t_in) for (m_in, t_in), (m_end, t_end) in turns)
        if turns and s.sent_at:
            floor = sum(t_end - t_in for (_, t_in), (_, t_end) in turns)
            overrun.append((turns[-1][1][0] - s.sent_at[0]) - floor)
    return overrun, slip


def since_last_write(d: DaemonProc, sessions: list[ReplaySession], kind: str) -> list[float]:
    """For each `kind` event of a session: read time minus the fake's latest write (PTY output or transcript
    line) before it. A lower bound of the true latency (the write that caused it may be older), for the Claude
    driver whose rules cannot say which write caused an event. `state{to: thinking}` is left out: a send causes it."""
    out = []
    for s in sessions:
        writes = sorted(x["m"] for x in read_log(d.logs / s.name) if x.get("k") in ("out", "jsonl"))
        for r in s.events:
            if r.ev.get("event") != kind or (kind == "state" and r.ev.get("to") == "thinking"):
                continue
            i = bisect.bisect_right(writes, r.at)
            if i:
                out.append(r.at - writes[i - 1])
    return out


def run_replays(
    d: DaemonProc,
    conn: Conn,
    sessions: list[ReplaySession],
    probe: TickProbe | None = None,
    timeout: float = 240.0,
    profiler: Profiler | None = None,
    meter: Path | None = None,
    steps: Path | None = None,
) -> dict[str, Any]:
    """Create every session (pipelined), wait for all `ready`, then drive their recorded prompts (the next
    one on each `complete`) until every session has finished; a probe, if given, runs turns meanwhile, and a
    profiler, if given, samples the daemon over the turn window (its share is `out["profile"]`); `meter`, the file
    the daemon's rules meter writes (`rules_meter/`), is read at both ends of the window (`out["meter"]`), and so
    is `steps`, the file of its step counts (`out["steps"]`). Returns timings and the daemon's CPU seconds over the
    turn window."""
    by_name = {s.name: s for s in sessions}
    deadline = time.monotonic() + timeout

    def probe_event(r: Received) -> bool:
        """Route a probe event (the probe keeps running turns back to back); True if it was one."""
        if probe is None or r.ev.get("session") != probe.name:
            return False
        if probe.on_event(r):
            probe.finish_turn()
            probe.send()
        return True

    if probe is not None:  # running before the creates: it also measures the lag while sessions spawn
        conn.cmd("create", **probe.create)
        r = conn.wait(lambda e: e.get("session") == probe.name and e.get("event") in ("ready", "error"), 60)
        assert r.ev["event"] == "ready", r.ev
        probe.send()
    t_create = time.monotonic()
    create_cpu0 = (cpu_seconds(d.pid), children_cpu_seconds(d.pid))
    machine0 = machine1 = machine_seconds()
    for s in sessions:
        conn.cmd("create", **d.claude_create(s.name, s.capture))
    list_id = conn.cmd("list")
    spawned_at: float | None = None
    create_cpu1 = create_cpu0
    pending = set(by_name)
    while pending:
        r = conn.wait(lambda e: True, max(1.0, deadline - time.monotonic()))
        e = r.ev
        if e.get("re") == list_id and e.get("event") == "sessions":
            spawned_at = r.at
            create_cpu1 = (cpu_seconds(d.pid), children_cpu_seconds(d.pid))
            machine1 = machine_seconds()
        if probe_event(r):
            continue
        s = by_name.get(e.get("session", ""))
        if s is None:
            continue
        if e.get("event") == "ready":
            s.ready_at = r.at
            pending.discard(s.name)
        elif e.get("event") == "error":
            s.failed = f"create: {e.get('code')}: {e.get('message')}"
            pending.discard(s.name)
    t_ready = time.monotonic()
    n_create_lat = len(probe.replace_lat) if probe is not None else 0
    cpu0, w0, rq0, me0 = cpu_seconds(d.pid), time.monotonic(), runq_wait_seconds(d.pid), time.process_time()
    sys0 = kernel_side(d.pid)
    turns_machine0 = machine_seconds()
    kids0 = children_cpu_seconds(d.pid)  # every fake CLI, wherever it was forked from, reaped ones included
    m0, st0 = read_meter(meter), read_meter(steps)
    n_events = {s.name: len(s.events) for s in sessions}
    if profiler is not None:
        profiler.start()
    with Sampler(d.pid) as sampler:
        for s in sessions:
            if not s.failed:
                s.send_next(conn)
        while not all(s.finished for s in sessions):
            r = conn.wait(lambda e: True, max(1.0, deadline - time.monotonic()))
            e = r.ev
            if probe_event(r):
                continue
            s = by_name.get(e.get("session", ""))
            if s is None:
                continue
            s.events.append(r)
            kind = e.get("event")
            if kind in TERMINAL:
                s.done += 1
                if kind == "complete":
                    s.completes.append(r)
                else:
                    s.failed = f"turn {s.done}: {kind}: {e.get('message') or e.get('content', '')[:80]}"
                if s.sent < len(s.prompts) and not s.failed:
                    s.send_next(conn)
            elif kind == "exited":
                s.failed = "exited"
        cpu1, w1, rq1, me1 = (
            cpu_seconds(d.pid),
            time.monotonic(),
            runq_wait_seconds(d.pid),
            time.process_time(),
        )
        kids1 = children_cpu_seconds(d.pid)
        sys1 = kernel_side(d.pid)
        turns_machine1 = machine_seconds()
        m1, st1 = read_meter(meter), read_meter(steps)
    profile = profiler.stop() if profiler is not None else None
    if probe is not None:  # let the probe's last turn end so it is not left half-measured
        try:
            while True:
                r = conn.wait(lambda e: e.get("session") == probe.name, 10)
                if probe.on_event(r):
                    probe.finish_turn()
                    break
        except Exception:
            pass
    window_events = [r for s in sessions for r in s.events[n_events[s.name] :]]
    return {
        "turns": sum(len(s.completes) for s in sessions),
        "wire_bytes": sum(r.size for r in window_events),
        "text_bytes": sum(r.size for r in window_events if r.ev.get("event") in ("replace", "append")),
        "probe_during_creates": probe.replace_lat[:n_create_lat] if probe is not None else [],
        "probe_during_turns": probe.replace_lat[n_create_lat:] if probe is not None else [],
        "spawn_s": (spawned_at or t_ready) - t_create,
        # CPU over the creates (first create written → `list` answered): the daemon's, and the CLIs' it started
        "create_cpu_s": (create_cpu1[0] - create_cpu0[0], create_cpu1[1] - create_cpu0[1]),
        # the whole machine over the creates and over the turn window (`machine_split`), None without /proc/stat
        "machine_creates": machine_split(machine0, machine1),
        "machine_turns": machine_split(turns_machine0, turns_machine1),
        "ready_s": t_ready - t_create,
        "window_s": w1 - w0,
        "cpu_s": cpu1 - cpu0,
        "runq_s": rq1 - rq0,
        "sys_s": sys1[0] - sys0[0],
        "minflt": sys1[1] - sys0[1],
        "client_cpu_s": me1 - me0,
        "fakes_cpu_s": kids1 - kids0,
        "rss_peak_kb": max(sampler.rss, default=0),
        "rss_end_kb": mem_kb(d.pid)["VmRSS"],
        "failed": [f"{s.name}: {s.failed}" for s in sessions if s.failed],
        "profile": profile,
        "meter": {k: m1[k] - m0[k] for k in m1} if m0 and m1 else None,
        "steps": {k: v - st0["counts"].get(k, 0) for k, v in st1["counts"].items()} if st0 and st1 else None,
    }


def _sessions(n: int, prefix: str) -> list[ReplaySession]:
    out = []
    for i in range(n):
        cap = REPLAYABLE[i % len(REPLAYABLE)]
        out.append(ReplaySession(f"{prefix}{i}", cap, prompts_of(cap)))
    return out


# ---------------------------------------------------------------------------------------------- benchmarks


def test_event_latency() -> None:
    """PTY write (fake's monotonic stamp) -> `replace` / `state{responding}` read by the client (generic driver)."""
    turns, ticks = (2, 4) if SMOKE else (40, 10)
    with daemon() as d:
        conn = d.connect()
        probe = TickProbe(d, conn, "probe", ticks, 0.02, 0.15)
        conn.cmd("create", **probe.create)
        r = conn.wait(lambda e: e.get("event") in ("ready", "error"), 60)
        assert r.ev["event"] == "ready", r.ev
        for _ in range(turns):
            probe.send()
            while not probe.on_event(conn.wait(lambda e: e.get("session") == "probe", 60)):
                pass
            probe.finish_turn()
    rl, sl = probe.replace_lat, probe.state_lat
    note = f"{len(rl)} writes, generic driver, 1 session"
    RESULTS.add("latency", "PTY write → replace, p50", "ms", _ms(pct(rl, 50)), 5, note)
    RESULTS.add("latency", "PTY write → replace, p99", "ms", _ms(pct(rl, 99)), 20, note)
    note = f"{len(sl)} turns, generic driver"
    RESULTS.add("latency", "PTY write → state, p50", "ms", _ms(pct(sl, 50)), 5, note)
    RESULTS.add("latency", "PTY write → state, p99", "ms", _ms(pct(sl, 99)), 20, note)
    assert rl, "no replace latency sample"


def test_complete_latency() -> None:
    """Transcript end_turn line written -> `complete` read (Claude driver, replayed real recordings)."""
    need_captures()
    rounds, n = (1, 1) if SMOKE else (3, 2 * len(REPLAYABLE))
    from_end: list[float] = []
    from_dur: list[float] = []
    claude_state: list[float] = []
    claude_replace: list[float] = []
    failed: list[str] = []
    for k in range(rounds):
        with daemon() as d:
            conn = d.connect()
            sessions = _sessions(n, f"c{k}-")
            out = run_replays(d, conn, sessions)
            failed += out["failed"]
            a, b = complete_latencies(d, sessions)
            from_end += a
            from_dur += b
            claude_state += since_last_write(d, sessions, "state")
            claude_replace += since_last_write(d, sessions, "replace")
    note = f"{len(from_end)} turns, Claude driver, {n} session(s), replayed recordings"
    if failed:
        note += f"; failed: {failed[:3]}"
    RESULTS.add("latency", "JSONL end_turn → complete, p50", "ms", _ms(pct(from_end, 50)), None, note)
    RESULTS.add("latency", "JSONL end_turn → complete, p99", "ms", _ms(pct(from_end, 99)), 20, note)
    RESULTS.add(
        "latency",
        "JSONL turn_duration → complete, p99",
        "ms",
        _ms(pct(from_dur, 99)),
        None,
        "complete fires on turn_duration (written with end_turn in one batch, as in the recordings)",
    )
    for kind, lat in (("state", claude_state), ("replace", claude_replace)):
        RESULTS.add(
            "latency",
            f"claude: latest write → {kind}, p50",
            "ms",
            _ms(pct(lat, 50)),
            None,
            f"p99 {_fmt(_ms(pct(lat, 99)))} ms over {len(lat)} events; a lower bound: the driver settles "
            "screen states 150 ms and streams text every 100 ms by design",
        )
    assert from_end, f"no complete measured: {failed}"


SCALE_TARGETS: dict[int, dict[str, float]] = {
    100: {"cpu": 50, "rss": 150, "rules_share": 10},
    300: {"cpu": 20, "complete_p99": 50, "replace_p99": 50},
    1000: {"cpu": 60, "complete_p99": 100, "rss": 400, "creates": 50},
}
"""The scale goals per N (not judged at smoke size): daemon CPU (% of a core), RSS (MB), p99s (ms), creates/s, and
the screen rules + streaming tick's share of the daemon's CPU (%, by the thread-clock meter: `LITBRIDGE_SCALE_METER=1`;
`LITBRIDGE_SCALE_PROFILE` adds a py-spy profile's share, not judged). `LITBRIDGE_SCALE_STEPS=1` adds "steps per turn":
how many PTY reads, screen evaluations, readings, ticks, settles, timers and events the daemon ran per turn (its
counters sit inside the readings the meter times: take the share from a run without it). `LITBRIDGE_SCALE_BATCHES=1`
adds where each `complete` published from a record waited inside its inotify batch."""


SCALE_CLI_NICE = int(os.environ.get("LITBRIDGE_SCALE_CLI_NICE", "19"))
"""The scale test's daemon runs its CLIs this many nice levels below itself (`serve --cli-nice`, the setting
for a daemon with hundreds of CLIs on few cores); `LITBRIDGE_SCALE_CLI_NICE=0` measures without it."""

SCALE_CLI_CGROUP = os.environ.get("LITBRIDGE_SCALE_CLI_CGROUP", "")
"""A cgroup directory for `serve --cli-cgroup` (all the fake CLIs in one CPU group; made and weighted by whoever
runs the benchmark), or "" for none, the default."""


SCALE_CPUS = os.environ.get("LITBRIDGE_SCALE_CPUS", "")
SCALE_CLI_CPUS = os.environ.get("LITBRIDGE_SCALE_CLI_CPUS", "")
"""CPU lists for `serve --cpus` (the daemon) and `serve --cli-cpus` (the fake CLIs), or "" for none, the default;
the benchmark's client stays on every CPU."""


def scale_flags() -> list[tuple[str, str]]:
    """The scale test's `serve` flags with their values: `--cli-nice`, and `--cli-cgroup`, `--cpus`, `--cli-cpus`
    when their LITBRIDGE_SCALE_* variable is set."""
    flags = [
        ("--cli-nice", str(SCALE_CLI_NICE)),
        ("--cli-cgroup", SCALE_CLI_CGROUP),
        ("--cpus", SCALE_CPUS),
        ("--cli-cpus", SCALE_CLI_CPUS),
    ]
    return [(flag, value) for flag, value in flags if value]


def scale_serve_args() -> tuple[str, ...]:
    """`scale_flags` as `serve` arguments."""
    return tuple(part for flag in scale_flags() for part in flag)


def scale_setting() -> str:
    """`scale_flags` as the rows' notes name them."""
    return "; ".join(f"{flag} {value}" for flag, value in scale_flags())


METER_DIR = HERE / "rules_meter"


def read_meter(path: Path | None, written_after: float | None = None) -> dict[str, Any] | None:
    """What a meter in the daemon (`rules_meter/sitecustomize.py`) last wrote: the rules meter's process CPU,
    seconds inside the engine's `reading` / `stream` and calls, the step counter's `{"counts": {...}}` or the
    batch meter's waits; None without one (or before it wrote). `written_after` (a `time.time()`): the first
    snapshot written after then (the meters write every 50 ms; at most 2 s is waited), so it holds everything the
    daemon did before it."""
    if path is None:
        return None
    deadline = time.monotonic() + 2.0
    while written_after is not None and time.monotonic() < deadline:
        try:
            if path.stat().st_mtime > written_after:
                break
        except OSError:
            pass
        time.sleep(0.01)
    try:
        return orjson.loads(path.read_bytes())  # type: ignore[no-any-return]
    except (OSError, orjson.JSONDecodeError):
        return None


def meter_env(
    path: Path | None, steps: Path | None = None, batches: Path | None = None
) -> dict[str, str] | None:
    """The daemon's env for the rules meter (`LITBRIDGE_SCALE_METER=1`), the step counts
    (`LITBRIDGE_SCALE_STEPS=1`) and the record batches' meter (`LITBRIDGE_SCALE_BATCHES=1`), or None for none."""
    if path is None and steps is None and batches is None:
        return None
    pp = os.environ.get("PYTHONPATH")
    env = {"PYTHONPATH": str(METER_DIR) + (os.pathsep + pp if pp else "")}
    if path is not None:
        env["LITBRIDGE_RULES_METER"] = str(path)
    if steps is not None:
        env["LITBRIDGE_STEP_COUNTS"] = str(steps)
    if batches is not None:
        env["LITBRIDGE_RECORD_BATCHES"] = str(batches)
    return env


@pytest.mark.parametrize("n", SCALE_N)
def test_scale(n: int) -> None:
    """N Claude sessions replaying recordings at recorded speed + 1 tick probe: CPU, RSS, event lag, create rate."""
    need_captures()
    meter = steps = batches = None
    scratch = Path(tempfile.mkdtemp(prefix="lbmeter-"))
    if os.environ.get("LITBRIDGE_SCALE_METER"):
        meter = scratch / "meter.json"
    if os.environ.get("LITBRIDGE_SCALE_STEPS"):
        steps = scratch / "steps.json"
    if os.environ.get("LITBRIDGE_SCALE_BATCHES"):
        batches = scratch / "batches.json"
    with daemon(meter_env(meter, steps, batches), scale_serve_args()) as d:
        conn = d.connect()
        rss0 = mem_kb(d.pid)["VmRSS"]
        sessions = _sessions(n, f"s{n}-")
        probe = TickProbe(d, conn, "probe", 10, 0.05, 0.15)
        folder = profile_dir()
        profiler = Profiler(d.pid, folder / f"scale-{n}.txt") if folder and not Profiler.missing() else None
        out = run_replays(
            d, conn, sessions, probe, timeout=240.0 + 0.5 * n, profiler=profiler, meter=meter, steps=steps
        )
        comp, comp_dur = complete_latencies(d, sessions)
        overrun, slip = turn_pace(d, sessions)
        in_batches = read_meter(batches, written_after=time.time())  # the last turns' `complete`s in it too
    shutil.rmtree(scratch, ignore_errors=True)
    cpu_pct = 100 * out["cpu_s"] / out["window_s"]
    fakes_pct = 100 * out["fakes_cpu_s"] / out["window_s"]
    turns = out["turns"]
    rss_mb = out["rss_peak_kb"] / 1024
    note = (
        f"window {out['window_s']:.1f}s; daemon waited for a CPU {100 * out['runq_s'] / out['window_s']:.0f}% "
        f"of it; client {100 * out['client_cpu_s'] / out['window_s']:.0f}% CPU; fake CLIs "
        f"{fakes_pct:.1f}% CPU; load avg {os.getloadavg()[0]:.1f}; {scale_setting()}; sessions' turns "
        f"{_fmt(_ms(pct(overrun, 50)))} ms (p50) past their recordings"
    )
    note += f"; failed {len(out['failed'])}: {out['failed'][:2]}" if out["failed"] else ""
    goal = {} if SMOKE else SCALE_TARGETS.get(n, {})
    RESULTS.add(f"scale N={n}", "daemon CPU, % of one core", "%", cpu_pct, goal.get("cpu"), note)
    RESULTS.add(
        f"scale N={n}",
        "daemon CPU per streaming session",
        "% of a core",
        cpu_pct / max(n, 1),
        None,
        f"{1000 * out['cpu_s'] / max(turns, 1):.1f} ms of daemon CPU per turn over {turns} turns; in the kernel "
        f"{100 * out['sys_s'] / max(out['cpu_s'], 1e-9):.0f}% of it; {out['minflt'] / max(turns, 1):.1f} minor page "
        "faults per turn (mostly new memory the daemon touched for the first time)",
    )
    RESULTS.add(
        f"scale N={n}",
        "fake CLIs' CPU, % of one core",
        "%",
        fakes_pct,
        None,
        "every process under the daemon (forked from any thread), reaped ones included; the N replays + probe",
    )
    RESULTS.add(
        f"scale N={n}",
        "bytes per client per turn",
        "KB",
        out["wire_bytes"] / 1024 / max(turns, 1),
        None,
        f"one `replace` client; the N sessions' events over the turn window ({out['wire_bytes'] / 1024:,.0f} KB, "
        f"{out['text_bytes'] / 1024:,.0f} KB of it text events) / {turns} turns",
    )
    RESULTS.add(
        f"scale N={n}",
        "daemon RSS peak",
        "MB",
        rss_mb,
        goal.get("rss"),
        f"idle daemon {rss0 / 1024:.1f} MB; {(out['rss_peak_kb'] - rss0) / 1024 / max(n, 1):.2f} MB/session",
    )
    lat, lat_c = out["probe_during_turns"], out["probe_during_creates"]
    RESULTS.add(
        f"scale N={n}",
        "probe PTY write → replace p50 (turns)",
        "ms",
        _ms(pct(lat, 50)),
        None,
        f"p99 {_fmt(_ms(pct(lat, 99)))} ms, max {_fmt(_ms(max(lat, default=None)))} ms over {len(lat)} writes, "
        "while the N sessions run their turns",
    )
    if goal.get("replace_p99") is not None:
        RESULTS.add(
            f"scale N={n}",
            "probe PTY write → replace p99 (turns)",
            "ms",
            _ms(pct(lat, 99)),
            goal["replace_p99"],
        )
    RESULTS.add(
        f"scale N={n}",
        "probe PTY write → replace p50 (creates)",
        "ms",
        _ms(pct(lat_c, 50)),
        None,
        f"p99 {_fmt(_ms(pct(lat_c, 99)))} ms, max {_fmt(_ms(max(lat_c, default=None)))} ms over {len(lat_c)} "
        "writes, while the N creates are handled",
    )
    RESULTS.add(
        f"scale N={n}",
        "end_turn → complete p50 / p99",
        "ms",
        _ms(pct(comp, 50)),
        None,
        f"p99 {_fmt(_ms(pct(comp, 99)))} ms over {len(comp)} turns",
    )
    if goal.get("complete_p99") is not None:
        RESULTS.add(f"scale N={n}", "end_turn → complete p99", "ms", _ms(pct(comp, 99)), goal["complete_p99"])
    RESULTS.add(
        f"scale N={n}",
        "turn_duration → complete p50 / p99",
        "ms",
        _ms(pct(comp_dur, 50)),
        None,
        f"p99 {_fmt(_ms(pct(comp_dur, 99)))} ms over {len(comp_dur)} turns: from the record line that ends the turn "
        "(the fake writes the recording's batches as Claude Code does, this line in the same write as the "
        "`end_turn` before it: the two rows differ only for a turn whose first `end_turn` came in an earlier batch)",
    )
    RESULTS.add(
        f"scale N={n}",
        "session's turns past the recording p50 / p99",
        "ms",
        _ms(pct(overrun, 50)),
        None,
        f"p99 {_fmt(_ms(pct(overrun, 99)))} ms over {len(overrun)} sessions: first send → last turn's end, against "
        "the sum of the recording's turns (Enter → `turn_duration`): each turn's end → the next Enter (the CLI's "
        "frames until its prompt is back, complete, send, typing, Enter gap) and the fake falling behind",
    )
    RESULTS.add(
        f"scale N={n}",
        "turn length past the recording p50 / p99",
        "ms",
        _ms(pct(slip, 50)),
        None,
        f"p99 {_fmt(_ms(pct(slip, 99)))} ms over {len(slip)} turns: the fake's Enter → `turn_duration` against the "
        "recording's (a fake starved, or blocked on a PTY the daemon did not read); a daemon that saved CPU by "
        "slowing turns would show here, its CPU % taken over a longer window",
    )
    RESULTS.add(
        f"scale N={n}",
        "sessions spawned per second",
        "/s",
        n / out["spawn_s"],
        goal.get("creates"),
        f"{n} create(s) pipelined → list reply in {out['spawn_s'] * 1000:.0f} ms; meanwhile the daemon "
        f"{100 * out['create_cpu_s'][0] / out['spawn_s']:.0f}% and the CLIs it started "
        f"{100 * out['create_cpu_s'][1] / out['spawn_s']:.0f}% of a core",
        higher_better=True,
    )
    for phase, split, ours in (
        ("turns", out["machine_turns"], (out["cpu_s"], out["fakes_cpu_s"], out["client_cpu_s"])),
        ("creates", out["machine_creates"], (*out["create_cpu_s"], None)),
    ):
        if split is not None:
            RESULTS.add(
                f"scale N={n}",
                f"machine CPU busy ({phase})",
                "%",
                split["busy"],
                None,
                machine_note(split, ours),
            )
    RESULTS.add(
        f"scale N={n}",
        "sessions ready per second",
        "/s",
        n / out["ready_s"],
        None,
        f"all ready after {out['ready_s']:.2f}s (replayed Claude startup ≈1 s + driver settle)",
    )
    prof = out["profile"]
    if prof is not None:
        top = ", ".join(f"{f} {100 * c / max(prof.samples, 1):.0f}%" for f, c in prof.top.most_common(3))
        RESULTS.add(
            f"scale N={n}",
            "screen rules + streaming tick, share of the daemon's profile",
            "%",
            prof.pct,
            None,  # judged by the thread-clock row: a non-blocking sample can read a torn stack and miss the rules
            f"py-spy --gil over the turn window, {prof.samples} samples (rules {prof.reading}, tick {prof.stream}); "
            f"top frames: {top}",
        )
    met = out["meter"]
    if met is not None and met["process"] > 0:
        from bench_screen_rules import overhead  # type: ignore[import-not-found]

        inside, whole = overhead()
        spent = max(0.0, met["spent"] - met["calls"] * inside)
        process = max(1e-9, met["process"] - met["calls"] * whole)
        RESULTS.add(
            f"scale N={n}",
            "screen rules + streaming tick, share of the daemon's CPU (thread clock)",
            "%",
            100 * spent / process,
            goal.get("rules_share"),
            f"{spent * 1000:.0f} ms in {met['calls']:.0f} outermost readings and ticks "
            f"({1e6 * spent / max(met['calls'], 1):.1f} µs each) of {process * 1000:.0f} ms of daemon CPU over the turn "
            f"window; meter cost taken off ({inside * 1e6:.2f} / {whole * 1e6:.2f} µs per call)",
        )
    counted = out["steps"]
    if counted is not None and turns:
        RESULTS.add(
            f"scale N={n}",
            "steps per turn (PTY reads)",
            "",
            counted.get("PTY reads", 0) / turns,
            None,
            "over the turn window, per turn: "
            + ", ".join(f"{label} {count / turns:.1f}" for label, count in counted.items())
            + " (LITBRIDGE_SCALE_STEPS=1: counted in the daemon, benchmarks/rules_meter/rules_span.STEPS)",
        )
    if in_batches is not None:
        add_batch_rows(n, in_batches)
    assert len(out["failed"]) < n, f"every session failed: {out['failed'][:3]}"  # speed is never asserted


def add_batch_rows(n: int, got: dict[str, Any]) -> None:
    """The record batches' meter (`LITBRIDGE_SCALE_BATCHES=1`, `rules_span.BatchMeter`): where a `complete`
    published from a record waited, from its inotify batch's start (its place in the batch) and from its own
    follower's read, and the longest batches."""
    waits = got.get("waits") or []
    batch = [w[0] for w in waits]
    own = [w[1] for w in waits]
    longest = sorted(got.get("batches") or [], key=lambda b: -b[3])[:2]
    said = [
        f"{f} followers ({c} `complete`s), {wall * 1000:.1f} ms ({cpu * 1000:.1f} ms of CPU)"
        for f, c, cpu, wall in longest
    ]
    RESULTS.add(
        f"scale N={n}",
        "complete: wait in its record batch, p99",
        "ms",
        _ms(pct(batch, 99)),
        None,
        f"{len(waits)} `complete`s published inside an inotify batch (the followers' reads it runs one after "
        f"another): from the batch's start, their place in it, p50 {_fmt(_ms(pct(batch, 50)))} ms, max "
        f"{_fmt(_ms(max(batch, default=None)))} ms; from the `complete`'s own record read p50 "
        f"{_fmt(_ms(pct(own, 50)))} ms, p99 {_fmt(_ms(pct(own, 99)))} ms; longest batches "
        + (", ".join(said) or "none")
        + " (LITBRIDGE_SCALE_BATCHES=1)",
    )


def _fmt(v: float | None) -> str:
    """One decimal, "-" for no value."""
    return "-" if v is None else f"{v:.1f}"


STREAM_LINES = 200 if SMOKE else 2000


def test_streamed_answer_wire_bytes() -> None:
    """A 2,000-line answer (bash printing ~90-character lines in bursts, generic driver) read by two clients at
    once: the bytes of its text events (`append` vs `replace`) against the answer's own size."""
    script = (
        f"for i in $(seq 1 {STREAM_LINES}); do printf 'line %05d %s\\n' $i {'x' * 78}; "
        "(( i % 25 )) || sleep 0.02; done"
    )
    with daemon() as d:
        delta, plain = d.connect(), d.connect()
        for conn, hello in ((delta, {"deltas": True}), (plain, {})):
            conn.cmd("hello", **hello)
            conn.wait(lambda e: e.get("event") in ("capabilities", "error"), 10)
        delta.cmd(
            "create",
            session="stream",
            cli="bash",
            args=["--norc", "--noprofile"],
            env={"PS1": "$ ", "HISTFILE": "/dev/null"},
            working_dir=str(d.tmp),
            quiescence=1.0,
        )
        r = delta.wait(lambda e: e.get("event") in ("ready", "error"), 60)
        assert r.ev["event"] == "ready", r.ev
        delta.cmd("send", session="stream", content=script)
        tid = delta.wait(lambda e: e.get("event") == "accepted", 60).ev["turn_id"]
        got: dict[str, list[Received]] = {"delta": [], "replace": []}

        def done(e: dict[str, Any]) -> bool:
            return e.get("event") in TERMINAL and e.get("turn_id") == tid

        end = delta.wait(done, 300, got["delta"]).ev
        plain.wait(done, 300, got["replace"])
    answer = len(str(end.get("content") or "").encode())
    note = f"{STREAM_LINES} lines, generic driver (bash), both clients reading"
    for who, kind in (("delta", "append"), ("replace", "replace")):
        texts = [r for r in got[who] if r.ev.get("event") == kind and r.ev.get("turn_id") == tid]
        wire = sum(r.size for r in texts)
        RESULTS.add(
            "streamed answer",
            f"{kind} client: text events' bytes",
            "KB",
            wire / 1024,
            None,
            f"{len(texts)} {kind} events; {wire / max(answer, 1):.2f}x the answer ({answer / 1024:.0f} KB); {note}",
        )
        if who == "delta":
            RESULTS.add(
                "streamed answer",
                "append client: bytes / answer size",
                "x",
                wire / max(answer, 1),
                2,
                "text events only (the complete event adds the answer once more, for every client)",
            )
    assert answer > 0
