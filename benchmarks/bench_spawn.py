"""Spawn benchmarks: what starting a CLI costs as the daemon grows, fork (ptyprocess) against the compiled vfork
spawner, in the same run.

- spawn latency: a fresh Python process whose heap is inflated to ~50 MB and ~300 MB RSS (the sizes of a daemon
  with tens and with hundreds of sessions) starts `/bin/true` under a 200x50 PTY from a worker thread, as the
  daemon does, one process per path; the time is the `spawn()` call (fork/vfork up to a successful exec).
- creates per second: a real `litbridge serve` gets N `create`s back to back on one connection (a CLI that shows
  its prompt at once), then `list`: N / (first create written -> `list` answered) is sessions spawned per second,
  N / (-> last `ready`) sessions ready per second. Once with `LITBRIDGE_SPAWN=fork`, once with the default.
- a kill wave: KILLS sessions (the same `sh`), left idle for IDLE_WINDOW seconds (the daemon's CPU meanwhile),
  then `kill` for half of them back to back on one connection (each waits for its CLI to be reaped, as a client
  killing its sessions one by one does), then SIGTERM to the daemon with the other half still running: kills
  answered per second and the time the daemon takes to stop.
Prints a table (and writes .benchmarks/spawn-{latest,smoke}.md); never fails on a figure.

`python benchmarks/bench_spawn.py probe MB N METHOD` is the latency probe (one JSON line), run by the test
below once per path and size.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

import pytest

if __name__ == "__main__":
    SMOKE = False  # the probe: its sizes come from its arguments
else:
    from inputs import SMOKE  # type: ignore[import-not-found]

RSS_TARGETS_MB = (50,) if SMOKE else (50, 300)
SPAWNS = 3 if SMOKE else 40  # per path and size
CREATES = 5 if SMOKE else 100
KILLS = 6 if SMOKE else 600
IDLE_SETTLE, IDLE_WINDOW = (0.5, 1.0) if SMOKE else (5.0, 10.0)
METHODS = ("fork", "vfork")
pytestmark = pytest.mark.timeout(900)

ROWS: list[tuple[str, str, str, str, str]] = []
KILL_ROWS: list[tuple[str, str, str]] = []


def _table() -> str | None:
    lines: list[str] = []
    if ROWS:
        lines += [
            "| measure | case | fork (ptyprocess) | vfork (compiled) | vfork speed-up |",
            "|---|---|---|---|---|",
        ]
        lines += [f"| {a} | {b} | {c} | {d} | {e} |" for a, b, c, d, e in ROWS]
    if KILL_ROWS:
        lines += ([""] if lines else []) + ["| measure | case | value |", "|---|---|---|"]
        lines += [f"| {a} | {b} | {c} |" for a, b, c in KILL_ROWS]
    return "\n".join(lines) or None


@pytest.fixture(scope="module", autouse=True)
def _report(request: pytest.FixtureRequest) -> None:
    from report import report_at_end  # type: ignore[import-not-found]

    report_at_end(request, "spawn", "litbridge spawn, fork vs vfork (same run)", _table)


# ---------------------------------------------------------------------------------------------- the probe


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def probe(target_mb: int, n: int, method: str) -> dict[str, Any]:
    """Inflate this process's heap to `target_mb` of small Python objects, then time `n` spawns by `method`.
    One path per process: after a fork the parent takes a copy-on-write fault on each page it next writes,
    which would be charged to whatever ran next."""
    from concurrent.futures import ThreadPoolExecutor

    from litbridge.pty import child_env
    from litbridge.pty.unix import UnixPty

    heap: list[Any] = []
    while _rss_mb() < target_mb:
        heap.extend({"k": i, "v": f"value {i} " * 4} for i in range(20_000))
    env = child_env(base={"PATH": os.environ.get("PATH", os.defpath)})

    def once() -> float:
        t = time.perf_counter()
        p = UnixPty(["/bin/true"], env, "/", method=method)
        took = time.perf_counter() - t
        os.waitpid(p.pid, 0)
        p._close_io()
        for item in heap[:: max(1, len(heap) // 2000)]:  # the daemon goes on using its heap in between
            item["k"] += 1
        return took

    with ThreadPoolExecutor(1) as pool:  # a worker thread, as the daemon's spawn pool
        for _ in range(2):  # warm-up: imports, the PTY devices
            pool.submit(once).result()
        times = [pool.submit(once).result() for _ in range(n)]
    return {"rss_mb": round(_rss_mb(), 1), "objects": len(heap), "times": times}


# ---------------------------------------------------------------------------------------------- benchmarks


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1e3:.2f} ms"


def test_spawn_latency_against_daemon_size() -> None:
    for mb in RSS_TARGETS_MB:
        r = {}
        for method in METHODS:
            out = subprocess.run(
                [sys.executable, __file__, "probe", str(mb), str(SPAWNS), method],
                capture_output=True,
                text=True,
                timeout=600,
                check=True,
            )
            r[method] = json.loads(out.stdout.strip().splitlines()[-1])
        fork, vfork = r["fork"]["times"], r["vfork"]["times"]
        ratio = statistics.median(fork) / statistics.median(vfork)
        case = f"RSS {r['fork']['rss_mb']:.0f} / {r['vfork']['rss_mb']:.0f} MB"
        ROWS.append(("spawn latency p50", case, _ms(fork), _ms(vfork), f"{ratio:.1f}x"))
        ROWS.append(
            ("spawn latency max", case, f"{max(fork) * 1e3:.2f} ms", f"{max(vfork) * 1e3:.2f} ms", "")
        )


def _prompt_cli(tmp: Any) -> dict[str, Any]:
    """`create` fields of a generic session whose CLI shows its prompt at once and then only reads."""
    return {
        "cli": "sh",
        "args": ["-c", "printf 'ready\\n> '; exec cat"],
        "working_dir": str(tmp),
        "quiescence": 0.2,
    }


def _creates(extra_env: dict[str, str]) -> dict[str, float]:
    from daemon_support import daemon, mem_kb  # type: ignore[import-not-found]

    with daemon(extra_env) as d:
        conn = d.connect()
        create = _prompt_cli(d.tmp)
        conn.cmd("create", session="warm", **create)  # imports, executor threads
        conn.wait(lambda e: e.get("session") == "warm" and e.get("event") in ("ready", "error"), 60)
        t0 = time.monotonic()
        ids = {conn.cmd("create", session=f"s{i}", **create) for i in range(CREATES)}
        list_id = conn.cmd("list")
        spawned = ready = 0.0
        failed = 0
        while ids:
            r = conn.wait(lambda e: e.get("re") in ids or e.get("re") == list_id, 300)
            if r.ev.get("re") == list_id:
                spawned = r.at - t0
                continue
            ids.discard(r.ev["re"])
            failed += r.ev.get("event") != "ready"
            ready = r.at - t0
        if not spawned:
            spawned = conn.wait(lambda e: e.get("re") == list_id, 60).at - t0
        return {
            "spawned_per_s": CREATES / spawned,
            "ready_per_s": CREATES / ready,
            "failed": failed,
            "rss_mb": mem_kb(d.pid)["VmRSS"] / 1024,
        }


def test_creates_per_second_on_one_connection() -> None:
    runs = {m: _creates({"LITBRIDGE_SPAWN": m}) for m in METHODS}
    fork, vfork = runs["fork"], runs["vfork"]
    case = f"{CREATES} creates, one connection"
    for key, label in (
        ("spawned_per_s", "sessions spawned per second"),
        ("ready_per_s", "sessions ready per second"),
    ):
        ROWS.append(
            (label, case, f"{fork[key]:.1f} /s", f"{vfork[key]:.1f} /s", f"{vfork[key] / fork[key]:.2f}x")
        )
    ROWS.append(
        ("daemon RSS after the creates", case, f"{fork['rss_mb']:.0f} MB", f"{vfork['rss_mb']:.0f} MB", "")
    )
    assert not fork["failed"] and not vfork["failed"], runs


def test_kill_wave() -> None:
    from daemon_support import cpu_seconds, daemon  # type: ignore[import-not-found]

    half = KILLS // 2
    with daemon() as d:
        conn = d.connect()
        create = _prompt_cli(d.tmp)
        ids = {conn.cmd("create", session=f"s{i}", **create) for i in range(KILLS)}
        while ids:
            r = conn.wait(lambda e: e.get("re") in ids, 600)
            assert r.ev.get("event") == "ready", r.ev
            ids.discard(r.ev["re"])
        procs = sum(1 for n in os.listdir("/proc") if n.isdigit()) if os.path.isdir("/proc") else 0
        time.sleep(IDLE_SETTLE)  # the sessions' start-up settled: nothing happens from here on
        cpu0, t0 = cpu_seconds(d.pid), time.monotonic()
        time.sleep(IDLE_WINDOW)
        idle = 100 * (cpu_seconds(d.pid) - cpu0) / (time.monotonic() - t0)
        t0 = time.monotonic()
        ids = {conn.cmd("kill", session=f"s{i}") for i in range(half)}
        last = 0.0
        while ids:
            r = conn.wait(lambda e: e.get("re") in ids, 600)
            assert r.ev.get("event") == "killed", r.ev
            ids.discard(r.ev["re"])
            last = r.at
        killed = last - t0
        conn.close()
        t0 = time.monotonic()
        d.proc.terminate()
        d.proc.wait(600)
        stopped = time.monotonic() - t0
    case = f"{KILLS} sessions, {procs} processes on the machine"
    idle_case = f"{case}: every session idle, {IDLE_WINDOW:.0f} s"
    KILL_ROWS.append(("idle daemon CPU", idle_case, f"{idle:.2f} % of a core"))
    KILL_ROWS.append(
        ("kills answered per second", f"{case}: {half} kills, one connection", f"{half / killed:.0f} /s")
    )
    KILL_ROWS.append(
        ("daemon stop (SIGTERM → exit)", f"{case}: {KILLS - half} sessions left", f"{stopped:.2f} s")
    )


if __name__ == "__main__" and len(sys.argv) == 5 and sys.argv[1] == "probe":
    print(json.dumps(probe(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])))
