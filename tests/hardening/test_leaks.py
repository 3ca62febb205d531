"""Leaks: many create/send/kill cycles with a fake CLI leave the daemon's fds, threads, children and RSS at baseline.

Measured from outside through /proc/<daemon pid> of a real `litbridge serve`. CI size: 100 cycles (4 clients in
parallel); `-m slow`: 1000. Also checks connections that come and go (control and attach) leak no fds.
"""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path
from typing import Any

import pytest
from hardening_helpers import children_of, connect, lbd, spawn_daemon, wait_until

from litbridge.pty import SPAWN_THREADS

L = lbd()
Conn = L.Conn
ASYNC = pytest.mark.asyncio(loop_scope="function")


def usage(pid: int) -> dict[str, int]:
    status = Path(f"/proc/{pid}/status").read_text()
    rss = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
    return {
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
        "threads": len(os.listdir(f"/proc/{pid}/task")),
        "children": len(children_of(pid)),
        "rss_kib": rss,
    }


async def cycle(c: Conn, key: str) -> None:
    ready = await c.request(L.fake_create(key, "--silent-start", quiescence=0.1), "ready")
    assert ready["event"] == "ready", ready
    acc = await c.request({"cmd": "send", "session": key, "content": f"echo-{key}"}, "accepted")
    done = await c.wait(
        lambda e: (
            e.get("turn_id") == acc["turn_id"] and e.get("event") in ("complete", "interrupted", "turn_error")
        ),
        timeout=30.0,
    )
    assert done["event"] == "complete" and key in done["content"], done
    killed = await c.request({"cmd": "kill", "session": key}, "killed")
    assert killed["event"] == "killed", killed
    c.events.clear()  # keep the client's own memory flat too
    c._taken.clear()


async def run_cycles(path: str, prefix: str, total: int, workers: int = 4) -> None:
    async def worker(w: int) -> None:
        c = await connect(path)
        for i in range(total // workers):
            await cycle(c, f"{prefix}-{w}-{i}")
        await c.close()

    await asyncio.gather(*(worker(w) for w in range(workers)))


async def churn_connections(path: str, n: int) -> None:
    """Connections that open, do one thing (or nothing) and close; plus attach sockets."""
    for i in range(n):
        c = await Conn.open(path)
        if i % 2:
            await c.wait(lambda e: True)
            await c.request({"cmd": "list"}, "sessions")
        await c.close()
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(path + ".attach")
            s.sendall(b'{"list":true}\n')
            s.settimeout(10)
            while s.recv(65536):
                pass


async def check_no_leak(tmp_short: str, cycles: int, plateau: bool = False) -> dict[str, Any]:
    d = spawn_daemon(os.path.join(tmp_short, "leak.sock"))
    pid = d.proc.pid
    try:
        await run_cycles(d.socket, "warm", 8)  # imports, caches, the event loop's own fds
        await churn_connections(d.socket, 10)
        assert await wait_until(lambda: usage(pid)["children"] == 0)
        base = usage(pid)
        half: dict[str, int] | None = None
        if (
            plateau
        ):  # RSS legitimately grows until the 5000-event replay ring is full (~600 cycles): then flat
            await run_cycles(d.socket, "fill", cycles // 2)
            half = usage(pid)
            await run_cycles(d.socket, "leak", cycles - cycles // 2)
        else:
            await run_cycles(d.socket, "leak", cycles)
        await churn_connections(d.socket, cycles // 4)
        assert await wait_until(lambda: usage(pid)["children"] == 0), f"children left: {children_of(pid)}"
        assert await wait_until(lambda: usage(pid)["fds"] <= base["fds"], 10.0), (base, usage(pid))
        after = usage(pid)
        # bounded pools only: the loop's default executor keeps up to min(32, cpus + 4) threads, the spawn
        # threads (`pty.spawn_executor`) up to SPAWN_THREADS
        bound = 1 + min(32, (os.cpu_count() or 1) + 4) + SPAWN_THREADS
        assert after["threads"] <= max(base["threads"], bound), (base, after)
        # RSS: allocator noise only (~ a few MiB), not per-cycle growth (a 200x50 screen alone is > 100 KiB)
        assert after["rss_kib"] - base["rss_kib"] < 8 * 1024 + cycles * 16, (base, after)
        if half is not None:
            assert after["rss_kib"] - half["rss_kib"] < 3 * 1024, (
                f"RSS still growing after the ring filled: {half} -> {after}"
            )
        c = await connect(d.socket)
        lst = await c.request({"cmd": "list"}, "sessions")
        assert lst["sessions"] == [], "killed sessions must leave the list"
        await c.close()
        return {"base": base, "half": half, "after": after}
    finally:
        assert d.stop() == 0, d.log()


@ASYNC
async def test_create_send_kill_cycles_leak_nothing(tmp_short: str) -> None:
    result = await check_no_leak(tmp_short, 100)
    print("leak check 100 cycles:", result)


@ASYNC
@pytest.mark.slow
@pytest.mark.timeout(1800)
async def test_create_send_kill_cycles_leak_nothing_1000(tmp_short: str) -> None:
    result = await check_no_leak(tmp_short, 1000, plateau=True)
    print("leak check 1000 cycles:", result)


def test_session_loggers_are_not_kept_forever() -> None:
    import gc
    import logging

    from litbridge.session import Session

    loop = asyncio.new_event_loop()
    try:
        key = "lbh-logger-" + os.urandom(4).hex()
        Session(key, {"session": key, "cli": "true"}, lambda e: None, loop=loop)
        gc.collect()
        assert not [n for n in logging.Logger.manager.loggerDict if key in n]
    finally:
        loop.close()
