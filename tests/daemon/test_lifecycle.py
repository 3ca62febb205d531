"""Daemon process hygiene: no-steal (exit 3), stale socket reclaim, permissions under a hostile umask,
SIGTERM cleanup (sessions killed and reaped, socket files removed), TCP token handshake, slow consumers.
Each test starts its own daemon (they kill it or need special settings).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from lbd_helpers import (
    WAIT,
    Conn,
    cgroup_member,
    check_event,
    fake_create,
    make_cgroup,
    pid_alive,
    remove_cgroup,
    start_daemon,
)


def short_dir() -> str:
    return tempfile.mkdtemp(prefix="lbl-")


def free_port() -> int:
    # the daemon needs N and N+1
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port < 65535:
            with socket.socket() as s2:
                try:
                    s2.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
            return port
    raise RuntimeError("no free port pair")


def test_second_daemon_exits_3_and_stale_socket_reclaimed() -> None:
    d = tempfile.mkdtemp(prefix="lbl-")
    sock = os.path.join(d, "x.sock")
    first = start_daemon(sock)
    try:
        second = subprocess.run(
            [sys.executable, "-m", "litbridge", "serve", "--socket", sock],
            capture_output=True,
            text=True,
            timeout=WAIT,
        )
        assert second.returncode == 3
        assert "refusing to steal" in second.stderr
        with socket.socket(socket.AF_UNIX) as s:  # the first is still reachable
            s.connect(sock)
            assert b"monitor_ready" in s.recv(65536)
    finally:
        assert first.stop() == 0
    assert not os.path.exists(sock) and not os.path.exists(sock + ".attach")
    # a stale socket file (nobody listening) is reclaimed
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(sock)
    stale.close()
    assert os.path.exists(sock)
    again = start_daemon(sock)
    assert again.stop() == 0


def test_permissions_under_hostile_umask() -> None:
    base = short_dir()
    sock_dir = os.path.join(base, "fresh")
    sock = os.path.join(sock_dir, "p.sock")
    proc = subprocess.Popen(
        [sys.executable, "-m", "litbridge", "serve", "--socket", sock],
        stderr=subprocess.DEVNULL,
        preexec_fn=lambda: os.umask(0),
    )
    try:
        deadline = time.monotonic() + 90  # a daemon's start-up on a starved machine can take tens of seconds
        while not os.path.exists(sock + ".attach"):
            if proc.poll() is not None:
                pytest.fail(f"daemon exited {proc.returncode}")
            assert time.monotonic() < deadline, "the daemon did not listen within 90 s"
            time.sleep(0.05)
        assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(sock + ".attach").st_mode) == 0o600
        assert stat.S_IMODE(os.stat(sock_dir).st_mode) == 0o700
    finally:
        proc.terminate()
        assert proc.wait(WAIT) == 0


def test_default_socket_path_layout(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from litbridge.daemon import paths

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert paths.default_socket_path() == str(tmp_path / "litbridge" / "litbridge.sock")
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert paths.default_socket_path() == os.path.join(
        tempfile.gettempdir(), f"litbridge-{os.getuid()}", "litbridge.sock"
    )


@pytest.mark.asyncio
async def test_sigterm_kills_sessions_and_cleans_up() -> None:
    sock = os.path.join(short_dir(), "t.sock")
    d = start_daemon(sock, "--port", str(port := free_port()))
    c = await Conn.open(sock)
    await c.wait("monitor_ready")
    await c.request(fake_create("victim"), "ready")
    await c.request(fake_create("victim2", "--ignore-term"), "ready")
    lst = await c.request({"cmd": "list"}, "sessions")
    pids = [s["pid"] for s in lst["sessions"]]
    assert len(pids) == 2 and all(pid_alive(p) for p in pids)
    assert Path(sock + ".token").is_file()
    code = await asyncio.to_thread(d.stop)
    assert code == 0, d.log()
    for p in pids:
        assert not pid_alive(p)
    for p in (sock, sock + ".attach", sock + ".token"):
        assert not os.path.exists(p), p
    await c.close()
    assert port


@pytest.mark.asyncio
async def test_tcp_token_handshake() -> None:
    sock = os.path.join(short_dir(), "tcp.sock")
    port = free_port()
    d = start_daemon(sock, "--port", str(port))
    try:
        token_file = sock + ".token"
        assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
        token = Path(token_file).read_text().strip()
        # anything but hello{token} first: error + close, no monitor_ready
        r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write(b'{"cmd":"ping"}\n')
        data = await asyncio.wait_for(r.read(), WAIT)
        assert b"monitor_ready" not in data and b'"unauthorized"' in data
        w.close()
        r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write(b'{"cmd":"hello","token":"wrong"}\n')
        data = await asyncio.wait_for(r.read(), WAIT)
        assert b"monitor_ready" not in data and b"unauthorized" in data
        w.close()
        r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write(orjson.dumps({"cmd": "hello", "token": token, "id": 1}) + b"\n" + b'{"cmd":"ping","id":2}\n')
        await w.drain()
        first = orjson.loads(await asyncio.wait_for(r.readline(), WAIT))
        assert first["event"] == "monitor_ready"
        caps = orjson.loads(await asyncio.wait_for(r.readline(), WAIT))
        assert caps["event"] == "capabilities" and caps["re"] == 1
        pong = orjson.loads(await asyncio.wait_for(r.readline(), WAIT))
        assert pong == {"event": "pong", "re": 2}
        for e in (first, caps, pong):
            check_event(e)
        w.close()
        # attach over TCP needs the token in the selector
        r, w = await asyncio.open_connection("127.0.0.1", port + 1)
        w.write(b'{"list":true}\n')
        assert b"token" in await asyncio.wait_for(r.read(), WAIT)
        w.close()
        r, w = await asyncio.open_connection("127.0.0.1", port + 1)
        w.write(orjson.dumps({"list": True, "token": token}) + b"\n")
        assert orjson.loads(await asyncio.wait_for(r.read(), WAIT))["sessions"] == []
        w.close()
    finally:
        assert d.stop() == 0


@pytest.mark.asyncio
async def test_slow_consumer_does_not_block_others() -> None:
    sock = os.path.join(short_dir(), "slow.sock")
    d = start_daemon(sock, env={"LITBRIDGE_CLIENT_QUEUE": "300", "LITBRIDGE_CLIENT_COALESCE": "50"})
    try:
        # the slow client: tiny receive buffer and never reads
        slow = socket.socket(socket.AF_UNIX)
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.connect(sock)
        fast = await Conn.open(sock)
        await fast.wait("monitor_ready")
        chan = "c" * 256  # the longest channel id: big events, so kernel socket buffers fill quickly
        await fast.request(fake_create("flood", channel_id=chan), "ready")
        n = 3000
        batch = b"".join(
            orjson.dumps(
                {"cmd": "keystroke", "session": "flood", "channel_id": chan, "keys": [], "id": f"k{i}"}
            )
            + b"\n"
            for i in range(n)
        )
        fast.writer.write(batch)
        await fast.writer.drain()
        last = await fast.wait(lambda e: e.get("re") == f"k{n - 1}", timeout=60)
        assert last["event"] == "keystroke_sent"
        acks = [e for e in fast.events if e.get("event") == "keystroke_sent"]
        assert len(acks) == n, "the fast client got every event"
        # the slow one was cut off with slow_consumer (after whatever fit in its buffers)
        slow.setblocking(True)
        slow.settimeout(WAIT)
        data = b""
        while True:
            chunk = await asyncio.to_thread(slow.recv, 65536)
            if not chunk:
                break
            data += chunk
        lines = [orjson.loads(x) for x in data.splitlines() if x.strip()]
        for e in lines:
            check_event(e)
        assert lines[0]["event"] == "monitor_ready"
        assert lines[-1]["event"] == "error" and lines[-1]["code"] == "slow_consumer"
        assert len(lines) < n
        pong = await fast.request({"cmd": "ping"}, "pong")
        assert pong["event"] == "pong"
        await fast.request({"cmd": "kill", "session": "flood", "channel_id": chan}, "killed")
        await fast.close()
        slow.close()
    finally:
        assert d.stop() == 0, d.log()


@pytest.mark.asyncio
async def test_client_mistakes_never_kill_the_daemon(tmp_path: Path) -> None:
    sock = os.path.join(short_dir(), "m.sock")
    d = start_daemon(sock)
    try:
        c = await Conn.open(sock)
        await c.wait("monitor_ready")
        garbage: list[Any] = [
            b"\xff\xfe\xfd\n",
            b"null\n",
            b"42\n",
            b'"str"\n',
            b'{"cmd":null}\n',
            b'{"cmd":["create"]}\n',
            b'{"cmd":"create","session":{"a":1}}\n',
            b'{"cmd":"hello","subscribe":5}\n',
            b'{"cmd":"send","session":"x","channel_id":7}\n',
            b'{"cmd":"kill","session":"x","store_resume":"yes"}\n',
            b'{"cmd":"ping","id":true}\n',
            b'{"cmd":"ping","id":{"x":1}}\n',
        ]
        for g in garbage:
            await c.send(g)
        await c.send({"cmd": "ping", "id": "alive"})
        await c.wait("pong", re="alive")
        errors = [e for e in c.events if e["event"] == "error"]
        assert len(errors) >= len(garbage) - 2 and all("code" in e for e in errors)
        w = c.writer
        w.write(b'{"cmd":"create","session":"half')  # then vanish mid-line
        w.close()
        c2 = await Conn.open(sock)
        await c2.wait("monitor_ready")
        await c2.request({"cmd": "ping"}, "pong")
        await c2.close()
    finally:
        assert d.stop() == 0, d.log()


@pytest.mark.asyncio
async def test_slow_attach_viewer_is_dropped() -> None:
    sock = os.path.join(short_dir(), "av.sock")
    d = start_daemon(sock)  # the default 2 MB a viewer may fall behind by
    try:
        c = await Conn.open(sock)
        await c.wait("monitor_ready")
        await c.request(fake_create("viewed"), "ready")
        slow = socket.socket(socket.AF_UNIX)
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.connect(sock + ".attach")
        slow.sendall(b'{"session":"viewed"}\n')
        r, w = await asyncio.open_unix_connection(sock + ".attach")  # a viewer that keeps up
        w.write(b'{"session":"viewed"}\n')
        await w.drain()
        await c.request({"cmd": "input", "session": "viewed", "content": "flood 30000 100"}, "input_sent")
        seen = b""
        # 4.5 MB at about 1.5 MB/s: the slow viewer falls 2 MB behind; the reading one would have to stall >1 s
        while b"flood done" not in seen:
            chunk = await asyncio.wait_for(r.read(1 << 16), 60)
            assert chunk, "the reading viewer was not dropped"
            seen = seen[-64:] + chunk
        slow.settimeout(WAIT)
        total = 0
        while True:  # the slow one gets what was buffered, then the connection ends
            try:
                chunk = await asyncio.to_thread(slow.recv, 1 << 16)
            except ConnectionResetError:
                break
            if not chunk:
                break
            total += len(chunk)
        assert total < 30000 * 150, "the slow viewer was cut off, not fed everything"
        slow.close()
        w.close()
        dump = await c.request({"cmd": "dump", "session": "viewed"}, "dump")
        assert "flood done" in dump["capture"], "the session itself was never slowed down or stopped"
        await c.request({"cmd": "kill", "session": "viewed"}, "killed")
        await c.close()
    finally:
        assert d.stop() == 0, d.log()


@pytest.mark.asyncio
@pytest.mark.skipif(sys.platform == "win32", reason="nice values are Unix")
async def test_cli_nice_runs_every_cli_below_the_daemon() -> None:
    sock = os.path.join(short_dir(), "t.sock")
    d = start_daemon(sock, "--cli-nice", "6")
    try:
        c = await Conn.open(sock)
        await c.wait("monitor_ready")
        await c.request(fake_create("low"), "ready")
        lst = await c.request({"cmd": "list"}, "sessions")
        (pid,) = [s["pid"] for s in lst["sessions"]]
        daemon_nice = os.getpriority(os.PRIO_PROCESS, d.proc.pid)
        assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, daemon_nice + 6)
        assert os.getpriority(os.PRIO_PROCESS, d.proc.pid) == os.getpriority(os.PRIO_PROCESS, 0)
        await c.close()
    finally:
        assert await asyncio.to_thread(d.stop) == 0, d.log()


@pytest.mark.asyncio
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="cgroups are Linux's")
async def test_cli_cgroup_starts_every_cli_in_that_cgroup() -> None:
    group = make_cgroup()
    if group is None:
        pytest.skip("no cgroup can be made here (needs root on a cgroup v1 cpu or a cgroup v2 mount)")
    sock = os.path.join(short_dir(), "t.sock")
    d = start_daemon(sock, "--cli-cgroup", str(group), "--cli-nice", "4")
    try:
        async with _two_clis(sock) as pids:
            assert len(pids) == 2 and all(cgroup_member(pid, group) for pid in pids)
            assert not cgroup_member(d.proc.pid, group), "the daemon itself stays where it was"
            daemon_nice = os.getpriority(os.PRIO_PROCESS, d.proc.pid)
            assert all(os.getpriority(os.PRIO_PROCESS, pid) == min(19, daemon_nice + 4) for pid in pids)
    finally:
        assert await asyncio.to_thread(d.stop) == 0, d.log()
        remove_cgroup(group)


@contextlib.asynccontextmanager
async def _two_clis(sock: str) -> AsyncIterator[list[int]]:
    """The pids of two sessions created on the daemon at `sock`, both killed when the block ends."""
    c = await Conn.open(sock)
    await c.wait("monitor_ready")
    for key in ("a", "b"):
        await c.request(fake_create(key), "ready")
    lst = await c.request({"cmd": "list"}, "sessions")
    yield [s["pid"] for s in lst["sessions"]]
    for key in ("a", "b"):
        await c.request({"cmd": "kill", "session": key}, "killed")
    await c.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="cgroups are Linux's")
def test_cli_cgroup_that_is_not_a_cgroup_stops_serve_with_a_clear_error(tmp_path: Path) -> None:
    sock = os.path.join(short_dir(), "t.sock")
    r = subprocess.run(
        [sys.executable, "-m", "litbridge", "serve", "--socket", sock, "--cli-cgroup", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2, r.stderr
    assert f"--cli-cgroup: {tmp_path} is not a cgroup directory" in r.stderr
    assert not os.path.exists(sock), "nothing was served"


@pytest.mark.asyncio
@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="CPU binding is Linux's")
@pytest.mark.parametrize("cli_cpus", [True, False], ids=["cli-cpus", "cpus-alone"])
async def test_cpus_bind_the_daemon_and_cli_cpus_every_cli(cli_cpus: bool) -> None:
    """Every thread of the daemon on `--cpus` (the spawn threads, started after the pin, inherit it); every CLI
    on `--cli-cpus`, or with `--cpus` alone on every CPU the daemon had, not on the daemon's pin."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("needs two CPUs to run on")
    mine, theirs = allowed[0], allowed[-1]
    sock = os.path.join(short_dir(), "t.sock")
    flags = ["--cpus", str(mine), *(["--cli-cpus", str(theirs)] if cli_cpus else [])]
    d = start_daemon(sock, *flags)
    try:
        async with _two_clis(sock) as pids:
            expected = {theirs} if cli_cpus else set(allowed)
            assert len(pids) == 2 and all(os.sched_getaffinity(pid) == expected for pid in pids)
            daemon_threads = os.listdir(f"/proc/{d.proc.pid}/task")
            assert len(daemon_threads) > 1
            assert all(os.sched_getaffinity(int(t)) == {mine} for t in daemon_threads)
    finally:
        assert await asyncio.to_thread(d.stop) == 0, d.log()


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="CPU binding is Linux's")
@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--cpus", "x", "--cpus: not a CPU list: 'x'"),
        ("--cli-cpus", "3-1", "--cli-cpus: not a CPU range: '3-1'"),
        ("--cli-cpus", "1023", "--cli-cpus: CPU 1023 is not available to the daemon (it may use "),
    ],
)
def test_cpus_that_cannot_be_used_stop_serve_with_a_clear_error(flag: str, value: str, message: str) -> None:
    sock = os.path.join(short_dir(), "t.sock")
    r = subprocess.run(
        [sys.executable, "-m", "litbridge", "serve", "--socket", sock, flag, value],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert not os.path.exists(sock), "nothing was served"
