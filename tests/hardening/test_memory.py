"""Daemon memory against a real `litbridge serve`: clients that never read cost a bounded amount and are cut
with a complete `slow_consumer` line; memory freed by ended sessions goes back to the system.

RSS is read from /proc/<daemon pid>/status (VmRSS), so these run on Linux only.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from hardening_helpers import connect, lbd, spawn_daemon, wait_until

L = lbd()
ASYNC = pytest.mark.asyncio(loop_scope="function")
LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def read_all(sock: socket.socket, timeout: float) -> bytes:
    """Everything the daemon left for this socket, up to its EOF (a reset ends it too)."""
    sock.settimeout(timeout)
    data = bytearray()
    try:
        while chunk := sock.recv(1 << 20):
            data += chunk
    except (TimeoutError, ConnectionResetError):
        pass
    return bytes(data)


# ------------------------------------------------------------------------------ clients that never read


@LINUX
@ASYNC
async def test_non_reading_subscribers_cost_little_and_get_a_complete_slow_consumer_line(
    tmp_short: str,
) -> None:
    """Three subscribed clients never read while `bash` floods a turn with 3000-character lines (each
    `replace` carries the whole text so far, up to ~1 MB). Superseded replaces leave their queues at once,
    so the daemon grows by at most 20 MiB (RSS sampled every 20 ms; it grew by 51-82 MiB before); the turn
    stops producing events once its text reaches the 1 MiB cap, and the stall check, which runs on a timer,
    still cuts them (LITBRIDGE_CLIENT_STALL lowered from 15 s to 4 s to keep this short). Each one then reads
    a stream of complete JSON lines ending with `error{code:"slow_consumer"}`. (Long lines keep the
    session's own per-evaluation garbage small: `seq` output, 150 000 short lines, costs the session ~15 MiB
    of transient memory with no client at all, which is not what this test is about.)"""
    d = spawn_daemon(os.path.join(tmp_short, "m.sock"), env={"LITBRIDGE_CLIENT_STALL": "4"})
    slow = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(3)]
    try:
        c = await connect(d.socket)
        await c.request({"cmd": "hello", "subscribe": ["nothing-here"]}, "capabilities")
        create = {
            "cmd": "create",
            "session": "flood",
            "cli": "bash",
            "args": ["--norc", "--noprofile"],
            "working_dir": "/tmp",
            "env": {"PS1": "$ "},
            "quiescence": 0.3,
        }
        await c.request(create, "ready", timeout=60)
        for s in slow:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(d.socket)  # subscribed to everything, and never reads
        await asyncio.sleep(2)  # past their 1 s hold: their events flow from now on
        base = rss_mib(d.proc.pid)
        samples: list[float] = []
        sampling = threading.Event()

        def sample() -> None:
            while not sampling.is_set():
                samples.append(rss_mib(d.proc.pid))
                time.sleep(0.02)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        flood = "yes $(printf '%03000d' 0)"
        try:
            assert await c.request({"cmd": "send", "session": "flood", "content": flood}, "accepted")
            end = time.monotonic() + 20
            while time.monotonic() < end:
                assert (await c.request({"cmd": "ping"}, "pong", timeout=30))["event"] == "pong"
                await asyncio.sleep(0.25)
        finally:
            sampling.set()
            sampler.join()
        peak = max(samples)
        print(f"3 non-reading clients: daemon RSS {base:.1f} MiB -> peak {peak:.1f} MiB (+{peak - base:.1f})")
        assert peak - base <= 20, f"the daemon grew by {peak - base:.1f} MiB (base {base:.1f} MiB)"
        assert d.log().count("is too slow") == 3, d.log()[-3000:]
        for s in slow:
            data = await asyncio.to_thread(read_all, s, 30)
            assert data.endswith(b"\n"), f"the stream ends mid-line: ...{data[-200:]!r}"
            lines = [orjson.loads(x) for x in data.splitlines()]  # every line is complete JSON
            for e in lines:
                L.check_event(e)
            assert lines[0]["event"] == "monitor_ready"
            assert lines[-1]["event"] == "error" and lines[-1]["code"] == "slow_consumer", lines[-1]
        await c.request({"cmd": "kill", "session": "flood"}, "killed", timeout=30)
        await c.close()
    finally:
        for s in slow:
            s.close()
        assert d.stop() == 0, d.log()


# ------------------------------------------------------------------------------ freed memory goes back


async def _self_exiting_sessions(c: Any, start: int, n: int) -> None:
    """n sessions whose program exits by itself soon after it is ready (reaped after LITBRIDGE_REAP_AFTER). It
    lives 3 s: long enough to be ready first on a loaded machine, where 4 clients creating at once once took the
    generic driver's start-up past a 0.5 s lifetime (the create then fails, as it should, with `spawn_failed`)."""
    for i in range(start, start + n):
        create = {
            "cmd": "create",
            "session": f"x{i}",
            "cli": "sh",
            "args": ["-c", "printf 'hello\\n'; exec sleep 3"],
            "working_dir": "/tmp",
            "quiescence": 0.05,
        }
        reply = await c.request(create, "ready", timeout=60)
        assert reply["event"] == "ready", reply


@LINUX
@ASYNC
@pytest.mark.parametrize(
    ("per_client", "bound"), [(100, 12), pytest.param(500, 40, marks=pytest.mark.slow, id="2000")]
)
async def test_memory_freed_by_ended_sessions_goes_back_to_the_system(
    tmp_short: str, per_client: int, bound: float
) -> None:
    """400 sessions (2000 with `-m slow`) whose CLI exits by itself, created by 4 clients in parallel and
    reaped 0.2 s after they exited: once they are gone, the daemon's RSS is back near where it was. (Ended
    sessions leave cycles for the collector, and glibc keeps freed heap unless it is trimmed: before the
    daemon collected and trimmed after reaps, 400 sessions left it 20-30 MiB larger, 2000 left it 57 MiB.)"""
    d = spawn_daemon(os.path.join(tmp_short, "r.sock"), env={"LITBRIDGE_REAP_AFTER": "0.2"})
    try:
        clients = [await connect(d.socket) for _ in range(4)]
        for c in clients:
            await c.request({"cmd": "hello", "subscribe": ["nothing-here"]}, "capabilities")
        ctl = clients[0]

        async def all_reaped(n: int) -> None:
            assert await wait_until(lambda: d.log().count("reaped") >= n, timeout=120), d.log()[-2000:]
            lst = await ctl.request({"cmd": "list"}, "sessions")
            assert lst["sessions"] == [], lst

        warm = 20
        await _self_exiting_sessions(ctl, 0, warm)  # warm-up: imports, caches, the spawn executor
        await all_reaped(warm)
        await asyncio.sleep(8)  # past the deferred clean-up (memory.TRIM_DELAY + TRIM_EVERY)
        base = rss_mib(d.proc.pid)
        n = per_client * len(clients)
        await asyncio.gather(
            *(_self_exiting_sessions(c, 100_000 * (k + 1), per_client) for k, c in enumerate(clients))
        )
        await all_reaped(warm + n)
        # the clean-up is deferred by a few seconds: poll (the old code never came down)
        await wait_until(lambda: rss_mib(d.proc.pid) - base <= bound, timeout=20, interval=0.5)
        after = rss_mib(d.proc.pid)
        print(f"{n} self-exiting sessions: daemon RSS {base:.1f} MiB -> {after:.1f} MiB")
        assert after - base <= bound, f"RSS {base:.1f} -> {after:.1f} MiB after {n} sessions ended"
        for c in clients:
            await c.close()
    finally:
        assert d.stop() == 0, d.log()


def test_tune_gc_sets_a_large_young_generation_and_freezes_the_start_up() -> None:
    """`memory.tune_gc` (which `serve` calls once the daemon is up): a young generation of GC_YOUNG objects, the
    objects made until then out of the full collections. Asked in a process of its own: the test process keeps
    Python's defaults."""
    import subprocess

    code = (
        "import gc, json; from litbridge.daemon import memory; before = gc.get_freeze_count(); "
        "memory.tune_gc(); print(json.dumps([gc.get_threshold(), before, gc.get_freeze_count(), memory.GC_YOUNG]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    threshold, before, after, young = orjson.loads(out.stdout)
    assert before == 0 and after > 1000
    assert threshold[0] == young > 700
