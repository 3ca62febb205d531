"""Reliability and local security, each against a real `litbridge serve` process.

Bounded memory per client (bytes, entries, stall time; superseded `replace` events leave the queue), the lock
file that decides which daemon owns a socket (no theft, unlink only what we own), client and daemon refusing
squatted or symlinked socket places (another uid via setpriv, as root), reaping of exited sessions, replay
gaps and order, replies outside the subscription, error backpressure, stopped CLIs and the bounded write
queue, the process sweep on kill and on a daemon `kill -9`, and attach names. The soak is `-m slow`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
from hardening_helpers import connect, fill_backlog, lbd, pid_alive, refused_serve, spawn_daemon, wait_until

from litbridge.protocol import jsonschema as lbschema

L = lbd()
Conn = L.Conn
ASYNC = pytest.mark.asyncio(loop_scope="function")
SCHEMA = lbschema.protocol_schema()
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
_BY_KIND: dict[str, Any] = {}
NEEDS_ROOT = pytest.mark.skipif(
    not hasattr(os, "getuid") or os.getuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv to act as another uid (nobody)",
)
LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")


def valid(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every event validates against `litbridge schema` (against its own kind's entry when the kind is known:
    the same check as the root `oneOf`, without trying 45 alternatives per event); returns them."""
    for e in events:
        kind = e.get("event")
        if f"event.{kind}" not in SCHEMA["$defs"]:
            VALIDATOR.validate(e)
            continue
        v = _BY_KIND.get(kind)
        if v is None:
            v = _BY_KIND[kind] = jsonschema.Draft202012Validator(
                {"$ref": f"#/$defs/event.{kind}", "$defs": SCHEMA["$defs"]}
            )
        v.validate(e)
    return events


def exists(path: str) -> bool:
    return os.path.lexists(path)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


async def session_pid(c: Any, key: str) -> int:
    for _ in range(200):
        lst = await c.request({"cmd": "list"}, "sessions")
        items = [s for s in lst["sessions"] if s["name"] == key]
        if items and isinstance(items[0].get("pid"), int):
            return int(items[0]["pid"])
        await asyncio.sleep(0.05)
    raise AssertionError(f"no pid for {key}")


def read_until_eof(sock: socket.socket, timeout: float) -> bytes:
    sock.settimeout(timeout)
    data = b""
    with contextlib.suppress(ConnectionResetError, socket.timeout):
        while chunk := sock.recv(1 << 20):
            data += chunk
    return data


# ------------------------------------------------------------------------------ 1. bounded memory per client


@LINUX
@ASYNC
async def test_never_reading_client_is_cut_off_and_memory_stays_bounded(tmp_short: str) -> None:
    """`seq` floods a bash session; one client never reads (up to 30 s; 5 s past its cut-off). Its queue holds only the newest
    `replace` (superseded ones are dropped, not blanked), it is cut off with `slow_consumer` once its socket
    accepted nothing for LITBRIDGE_CLIENT_STALL (15 s; 6 s here) or its queue passes a bound (bytes, entries),
    the daemon's RSS stays within a generous bound, and another client's pings keep being answered."""
    d = spawn_daemon(os.path.join(tmp_short, "m.sock"), env={"LITBRIDGE_CLIENT_STALL": "6"})
    slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        c = await connect(d.socket)
        await c.request(L.bash_create("flood", quiescence=0.3), "ready", timeout=60)
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.connect(d.socket)  # ... and never reads
        assert await c.request({"cmd": "send", "session": "flood", "content": "seq 1 999999999"}, "accepted")
        await c.close()  # this client would read the flood; the one below only wants replies
        ctl = await connect(d.socket)
        await ctl.request({"cmd": "hello", "subscribe": ["nothing-here"]}, "capabilities")
        await asyncio.sleep(3)
        base = rss_mb(d.proc.pid)
        peak, worst_ping = base, 0.0
        tail_reader: asyncio.Task[bytes] | None = None
        end = time.monotonic() + 30
        while time.monotonic() < end:  # up to 30 s, or 5 s past the cut (memory and pings after it count too)
            t0 = time.monotonic()
            assert (await ctl.request({"cmd": "ping"}, "pong", timeout=30))["event"] == "pong"
            worst_ping = max(worst_ping, time.monotonic() - t0)
            peak = max(peak, rss_mb(d.proc.pid))
            if tail_reader is None and "too slow" in d.log():  # cut off: it may read what was left for it
                tail_reader = asyncio.create_task(asyncio.to_thread(read_until_eof, slow, 40))
                end = min(end, time.monotonic() + 5)
            await asyncio.sleep(1)
        print(f"slow consumer: RSS {base:.0f} MB -> peak {peak:.0f} MB, worst ping {worst_ping:.2f} s")
        # cut off by whichever bound it hits first: the stall time, or, when each `replace` carries the
        # whole output so far (up to 1 MiB) and a loaded box lets fewer than COALESCE_AT of them pile up, bytes
        cut = re.search(
            r"is too slow \((more than \d+ events|more than \d+ bytes|nothing read for 6 s) queued", d.log()
        )
        assert cut is not None, d.log()[-3000:]
        # unbounded, 0.45-0.75 MB/s (blanked entries) or a queue of 10k replaces of ~10 kB: far above this
        assert peak - base < 80, f"daemon RSS grew {peak - base:.0f} MB (base {base:.0f} MB)"
        assert worst_ping < 10, f"a ping took {worst_ping:.1f} s while the slow client was stuck"
        killed = await ctl.request({"cmd": "kill", "session": "flood"}, "killed", timeout=30)
        assert killed["event"] == "killed", killed
        assert tail_reader is not None
        tail = await tail_reader
        lines = [orjson.loads(x) for x in tail.split(b"\n") if x.startswith(b"{") and x.endswith(b"}")]
        assert lines and lines[0]["event"] == "monitor_ready"
        last = lines[-1]
        assert last["event"] == "error" and last["code"] == "slow_consumer", str(last)[:300]
        valid(ctl.events)
        await ctl.close()
    finally:
        slow.close()
        assert d.stop() == 0, d.log()


@ASYNC
async def test_queued_bytes_limit_cuts_off_before_the_entry_limit(tmp_short: str) -> None:
    """Entries are few but large: the bytes limit (LITBRIDGE_CLIENT_QUEUE_BYTES) is what cuts the client."""
    d = spawn_daemon(os.path.join(tmp_short, "b.sock"), env={"LITBRIDGE_CLIENT_QUEUE_BYTES": "1000000"})
    slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.connect(d.socket)
        c = await connect(d.socket)
        quiet = "stty -echo; exec sleep 100000"  # typed keys go nowhere: no output, only the acks
        await c.request(
            {"cmd": "create", "session": "big", "cli": "sh", "args": ["-c", quiet], "working_dir": "/tmp"},
            "ready",
        )
        await c.request({"cmd": "hello", "subscribe": ["nothing-here"]}, "capabilities")
        # 150 acks of ~16 kB each (the key list is echoed): 2.4 MB, far fewer entries than the 10 000 limit
        keys = ["a"] * 4000
        for i in range(150):
            # one ack in flight at a time: this client reads each before the next, so only `slow` falls behind
            # (sent all at once, 2.4 MB of acks could pile up for this client too while its process waits for a CPU)
            await c.send({"cmd": "keystroke", "session": "big", "keys": keys, "id": i})
            await c.wait("keystroke_sent", re=i, timeout=60)
        assert await wait_until(lambda: "more than 1000000 bytes" in d.log()), d.log()[-2000:]
        tail = read_until_eof(slow, 30)
        lines = [orjson.loads(x) for x in tail.split(b"\n") if x.startswith(b"{") and x.endswith(b"}")]
        assert lines[-1]["code"] == "slow_consumer" and "bytes" in lines[-1]["message"], lines[-1]
        assert len([e for e in lines if e["event"] == "keystroke_sent"]) < 150
        valid(c.events)
        await c.close()
    finally:
        slow.close()
        assert d.stop() == 0, d.log()


# ------------------------------------------------------------------------------ 2. no socket theft


@ASYNC
async def test_second_daemon_never_steals_the_socket_of_a_stopped_one(tmp_short: str) -> None:
    """The first daemon is SIGSTOPped with its accept backlog full (a connect would fail with EAGAIN): a
    second daemon still sees it as live (the lock) and exits 3; the first keeps its socket."""
    sock = os.path.join(tmp_short, "t.sock")
    d1 = spawn_daemon(sock)
    pending: list[socket.socket] = []
    try:
        ino = os.lstat(sock).st_ino
        d1.proc.send_signal(signal.SIGSTOP)
        fill_backlog(sock, pending)
        assert "already owns" in refused_serve(sock)
        assert os.lstat(sock).st_ino == ino, "the socket was replaced"
        for s in pending:
            s.close()
        d1.proc.send_signal(signal.SIGCONT)
        # a blocking connect waits for room in the backlog (asyncio's non-blocking one would take EAGAIN from a
        # Unix socket for "in progress")
        await asyncio.to_thread(L.wait_listening, d1)
        for _ in range(100):  # until the resumed daemon has drained the closed connections from its backlog
            try:
                c = await connect(sock)
                break
            except (
                OSError
            ):  # asyncio's non-blocking connect to a still-full backlog: EAGAIN, reported as EINVAL
                await asyncio.sleep(0.1)
        else:
            raise AssertionError(f"the resumed daemon never accepted a connection\n{d1.log()}")
        assert (await c.request({"cmd": "ping"}, "pong"))["event"] == "pong"
        await c.close()
    finally:
        for s in pending:
            s.close()
        d1.proc.send_signal(signal.SIGCONT)
        assert d1.stop() == 0, d1.log()
    assert not exists(sock), "the owner unlinks its own socket at exit"


@ASYNC
async def test_a_daemon_unlinks_only_a_socket_it_still_owns(tmp_short: str) -> None:
    """Someone replaced our socket path with their own socket: at exit we leave theirs alone."""
    sock = os.path.join(tmp_short, "o.sock")
    d = spawn_daemon(sock)
    other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(sock)
        other.bind(sock)
        other.listen(1)
        theirs = os.lstat(sock).st_ino
    finally:
        assert d.stop() == 0, d.log()
    try:
        assert exists(sock) and os.lstat(sock).st_ino == theirs, "a socket that was not ours was unlinked"
        assert not exists(sock + ".attach")
    finally:
        other.close()
    # the lock went with the daemon: the next one reclaims the (now stale) path
    d2 = spawn_daemon(sock)
    assert d2.stop() == 0, d2.log()


# ------------------------------------------------------------------------------ 4, 5. squatted places


def _as_nobody(argv: list[str], **kw: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *argv], **kw)


SQUATTER = """
import os, socket, sys, time
path, log = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX); s.bind(path); s.listen(5); os.chmod(path, 0o777)
open(log + ".up", "w").close()
while True:
    c, _ = s.accept()
    c.sendall(b'{"event":"monitor_ready","sessions":0,"buffered":0,"version":"x","protocol_version":1,'
              b'"commands":[],"events":[],"clis":[],"limits":{}}\\n')
    c.settimeout(2)
    try:
        data = c.recv(65536)
    except OSError:
        data = b""
    with open(log, "ab") as f:
        f.write(data)
    c.close()
"""


def _squat(directory: Path, log: Path) -> subprocess.Popen[bytes]:
    """As nobody: listen at directory/litbridge.sock and record whatever a client sends."""
    log.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(log.parent, 0o777)
    p = _as_nobody([sys.executable, "-c", SQUATTER, str(directory / "litbridge.sock"), str(log)])
    deadline = time.monotonic() + 20
    while not Path(str(log) + ".up").exists():
        assert p.poll() is None and time.monotonic() < deadline, "squatter did not start"
        time.sleep(0.05)
    return p


def _create_with_secret(env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "litbridge",
            "create",
            "s",
            "--cli",
            "bash",
            "--env",
            "ANTHROPIC_API_KEY=sk-secret",
            "--timeout",
            "10",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )


@NEEDS_ROOT
def test_client_refuses_a_default_socket_dir_squatted_by_another_user(tmp_short: str) -> None:
    """Another user pre-created the default directory and listens there: `litbridge create --env KEY=...`
    refuses with a clear message and sends nothing."""
    os.chmod(tmp_short, 0o755)
    runtime = Path(tmp_short) / "run"
    runtime.mkdir(mode=0o777)
    os.chmod(runtime, 0o1777)
    squat_dir = runtime / "litbridge"
    squat_dir.mkdir()
    os.chown(squat_dir, 65534, 65534)
    os.chmod(squat_dir, 0o755)
    log = Path(tmp_short) / "logs" / "got"
    p = _squat(squat_dir, log)
    try:
        env = {"XDG_RUNTIME_DIR": str(runtime), "LITBRIDGE_SOCKET": ""}
        out = _create_with_secret(env)
        assert out.returncode != 0, out
        assert "refusing" in out.stderr and "unsafe_socket" in out.stderr, out.stderr
        # the socket dir passes (owned by us, 0700) but the socket and its listener are nobody's
        own = Path(tmp_short) / "own"
        own.mkdir(mode=0o700)
        p2 = _squat_in_dir_we_own(own, Path(tmp_short) / "logs" / "got2")
        try:
            out2 = _create_with_secret({}, "--socket", str(own / "litbridge.sock"))
            assert out2.returncode != 0 and "unsafe_socket" in out2.stderr, out2.stderr
            att = subprocess.run(
                [sys.executable, "-m", "litbridge", "attach", "s", "--socket", str(own / "litbridge.sock")],
                capture_output=True,
                text=True,
                timeout=60,
                stdin=subprocess.DEVNULL,
            )
            assert att.returncode != 0 and "unsafe_socket" in att.stderr, att.stderr
            os.chown(own / "litbridge.sock", 0, 0)  # even a socket file of ours: the listener is nobody
            out3 = _create_with_secret({}, "--socket", str(own / "litbridge.sock"))
            assert out3.returncode != 0 and "runs as uid 65534" in out3.stderr, out3.stderr
        finally:
            p2.kill()
            p2.wait()
        time.sleep(0.5)
        got = b"".join(f.read_bytes() for f in (Path(tmp_short) / "logs").glob("got*") if f.suffix != ".up")
        assert b"sk-secret" not in got and got == b"", got
    finally:
        p.kill()
        p.wait()


def _squat_in_dir_we_own(own: Path, log: Path) -> subprocess.Popen[bytes]:
    os.chmod(own, 0o777)  # let nobody bind inside, then make it ours-only again
    p = _squat(own, log)
    os.chmod(own, 0o700)
    return p


def test_daemon_refuses_a_symlinked_default_dir(tmp_short: str) -> None:
    """$XDG_RUNTIME_DIR/litbridge planted as a symlink to a dir of ours: the daemon refuses it (lstat), leaves
    the target's mode alone and binds nothing there."""
    runtime = Path(tmp_short) / "run"
    runtime.mkdir()
    target = Path(tmp_short) / "target"
    target.mkdir()
    target.chmod(0o755)
    (runtime / "litbridge").symlink_to(target)
    sock = str(runtime / "litbridge" / "litbridge.sock")
    d = spawn_daemon(sock, env={"XDG_RUNTIME_DIR": str(runtime)}, wait=False)
    try:
        assert d.proc.wait(30) == 1, d.log()
    finally:
        d.stop()
    assert "symlink" in d.log(), d.log()
    assert stat.S_IMODE(target.stat().st_mode) == 0o755, "the symlink's target was chmodded"
    made = [p.name for p in target.iterdir() if not p.name.endswith(".stderr")]  # the test's own log
    assert made == [], f"the daemon created {made} inside the symlink's target"


@NEEDS_ROOT
def test_daemon_refuses_a_default_dir_owned_by_another_user(tmp_short: str) -> None:
    runtime = Path(tmp_short) / "run"
    runtime.mkdir()
    sock = str(runtime / "litbridge" / "litbridge.sock")
    (runtime / "litbridge").mkdir(mode=0o700)
    os.chown(runtime / "litbridge", 65534, 65534)
    d = spawn_daemon(sock, env={"XDG_RUNTIME_DIR": str(runtime)}, wait=False)
    try:
        assert d.proc.wait(30) == 1, d.log()
    finally:
        d.stop()
    assert "owned by uid 65534" in d.log(), d.log()


# ------------------------------------------------------------------------------ 3. reaping


@ASYNC
async def test_sessions_whose_cli_exits_are_reaped_after_the_grace_period(tmp_short: str) -> None:
    d = spawn_daemon(os.path.join(tmp_short, "r.sock"), env={"LITBRIDGE_REAP_AFTER": "2"})
    try:
        c = await connect(d.socket)
        n = 20
        for i in range(n):
            await c.request(L.fake_create(f"x{i}"), "ready")
            await c.request({"cmd": "input", "session": f"x{i}", "content": "exit 3\r"}, "input_sent")
        for i in range(n):
            ex = await c.wait("exited", session=f"x{i}", timeout=30)
            assert ex["exit_code"] == 3 and "fake stderr bye" in ex["stderr_tail"], ex
        listed = (await c.request({"cmd": "list"}, "sessions"))["sessions"]
        last = [s for s in listed if s["name"] == f"x{n - 1}"]
        assert last and last[0]["state"] == "dead", f"dead sessions stay listed until reaped: {listed}"
        for i in range(n):
            r = await c.wait("reaped_idle", session=f"x{i}", timeout=30)
            assert r["reason"] == "exited" and r["exit_code"] == 3, r
        assert (await c.request({"cmd": "list"}, "sessions"))["sessions"] == []
        # a re-created key starts fresh; killed sessions are not reaped twice
        await c.request(L.fake_create("x0"), "ready")
        await c.request({"cmd": "kill", "session": "x0"}, "killed")
        await asyncio.sleep(3)
        assert not [e for e in c.events if e.get("event") == "reaped_idle" and e["session"] == "x0"][1:]
        valid(c.events)
        await c.close()
    finally:
        assert d.stop() == 0, d.log()


# ------------------------------------------------------------------------------ replay gap and order


@ASYNC
async def test_replay_older_than_the_ring_says_replay_gap(tmp_short: str) -> None:
    d = spawn_daemon(os.path.join(tmp_short, "g.sock"), env={"LITBRIDGE_RING_BYTES": "6000"})
    try:
        c = await connect(d.socket)
        await c.request(L.fake_create("g"), "ready")
        for i in range(150):
            await c.send({"cmd": "keystroke", "session": "g", "keys": [], "id": i})
        last = (await c.wait("keystroke_sent", re=149))["seq"]
        r = await connect(d.socket)
        await r.send({"cmd": "hello", "since_seq": 0, "id": "h"})
        caps = await r.wait("capabilities", re="h")
        got = r.events[1 : r.events.index(caps)]
        assert got[0]["event"] == "replay_gap" and got[0]["re"] == "h", got[:2]
        gap = got[0]
        seqs = [e["seq"] for e in got[1:]]
        assert gap["from_seq"] == 1 and gap["to_seq"] + 1 == seqs[0], (gap, seqs[:3])
        assert seqs == list(range(seqs[0], last + 1)), "replayed events are contiguous and in order"
        assert caps["replayed"] == len(seqs) and caps["oldest_seq"] == seqs[0]
        # nothing missed: no gap
        await r.send({"cmd": "hello", "since_seq": last, "id": "h2"})
        await r.wait("capabilities", re="h2")
        assert not [e for e in r.events if e["event"] == "replay_gap" and e.get("re") == "h2"]
        valid(c.events + r.events)
        for x in (c, r):
            await x.close()
    finally:
        assert d.stop() == 0, d.log()


@ASYNC
async def test_a_late_hello_still_gets_every_event_in_seq_order(tmp_short: str) -> None:
    """Events published while nobody is connected are buffered; a client whose hello{since_seq} comes
    300 ms after connecting still receives the older (replayed) events first, all in seq order."""
    d = spawn_daemon(os.path.join(tmp_short, "o.sock"))
    try:
        a = await connect(d.socket)
        await a.request(L.fake_create("o"), "ready")
        await a.request({"cmd": "send", "session": "o", "content": "stream 30"}, "accepted")
        await a.wait(lambda e: e.get("event") == "replace")
        await a.close()  # the stream goes on with nobody connected: buffered
        await asyncio.sleep(0.8)
        b = await Conn.open(d.socket)
        ready = await b.wait("monitor_ready")
        assert ready["buffered"] > 0, ready
        await asyncio.sleep(0.3)
        await b.send({"cmd": "hello", "since_seq": 0, "id": "late"})
        await b.wait("capabilities", re="late")
        await b.wait(lambda e: e.get("event") in ("complete", "turn_error"), timeout=30)
        seqs = [e["seq"] for e in b.events if "seq" in e]
        assert seqs[0] == 1, seqs[:5]
        assert seqs == sorted(set(seqs)), f"out of order or repeated: {seqs}"
        valid(b.events)
        await b.close()
    finally:
        assert d.stop() == 0, d.log()


# ------------------------------------------------------------------------------ replies and backpressure


@ASYNC
async def test_every_command_gets_its_reply_whatever_the_subscription(tmp_short: str) -> None:
    d = spawn_daemon(os.path.join(tmp_short, "u.sock"))
    try:
        c = await connect(d.socket)
        await c.request({"cmd": "hello", "subscribe": ["a"]}, "capabilities")
        ready = await c.request(L.fake_create("b"), "ready")
        assert ready["event"] == "ready" and ready["session"] == "b", ready
        ack = await c.request({"cmd": "keystroke", "session": "b", "keys": ["x"]}, "keystroke_sent")
        assert ack["event"] == "keystroke_sent", ack
        killed = await c.request({"cmd": "kill", "session": "b"}, "killed")
        assert killed["event"] == "killed"
        # events of b that are not replies to c stay filtered out
        assert all(e.get("re") is not None for e in c.events if e.get("session") == "b"), c.events
        valid(c.events)
        await c.close()
    finally:
        assert d.stop() == 0, d.log()


@ASYNC
async def test_a_burst_of_malformed_lines_is_answered_not_cut_off(tmp_short: str) -> None:
    d = spawn_daemon(os.path.join(tmp_short, "e.sock"))
    try:
        c = await connect(d.socket)
        n = 10_001
        sender = asyncio.create_task(c.send(b"this is not json\n" * n))
        await asyncio.sleep(1)  # the replies pile up unread meanwhile
        errors = 0
        while errors < n:
            e = await c.wait(lambda e: e.get("event") == "error", timeout=60)
            assert e["code"] == "bad_json", e
            errors += 1
        await sender
        assert (await c.request({"cmd": "ping"}, "pong"))["event"] == "pong"
        assert "too slow" not in d.log()
        valid(c.events)
        await c.close()
    finally:
        assert d.stop() == 0, d.log()


# ------------------------------------------------------------------------------ stopped CLI, write queue


@LINUX
@ASYNC
async def test_a_stopped_cli_is_a_state_and_refuses_input_clearly(tmp_short: str) -> None:
    d = spawn_daemon(os.path.join(tmp_short, "s.sock"))
    pid = 0
    try:
        c = await connect(d.socket)
        await c.request(L.fake_create("st"), "ready")
        pid = await session_pid(c, "st")
        os.kill(pid, signal.SIGSTOP)
        await c.wait("state", to="stopped", timeout=10)
        err = await c.request({"cmd": "send", "session": "st", "content": "reply hi"}, "accepted")
        assert err["event"] == "error" and err["code"] == "cli_stopped", err
        err = await c.request({"cmd": "input", "session": "st", "content": "x"}, "input_sent")
        assert err["code"] == "cli_stopped" and "SIGSTOP" in err["message"], err
        listed = (await c.request({"cmd": "list"}, "sessions"))["sessions"]
        assert listed[0]["state"] == "stopped", listed
        os.kill(pid, signal.SIGCONT)
        back = await c.wait(lambda e: e.get("event") == "state" and e.get("from") == "stopped", timeout=10)
        assert back["to"] == "idle", back
        await c.request({"cmd": "send", "session": "st", "content": "reply hi"}, "accepted")
        done = await c.wait("complete", session="st", timeout=30)
        assert "hi" in done["content"], done
        valid(c.events)
        await c.close()
    finally:
        if pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        assert d.stop() == 0, d.log()


@LINUX
@ASYNC
async def test_the_write_queue_to_a_cli_that_never_reads_is_bounded(tmp_short: str) -> None:
    """100 inputs of 1 MB to a CLI that never reads its input: the first few fill the bounded queue, the
    rest fail with write_queue_full, and the daemon does not grow by the 100 MB."""
    d = spawn_daemon(os.path.join(tmp_short, "w.sock"))
    try:
        c = await connect(d.socket)
        never_reads = "import time, tty; tty.setraw(0); print('up', flush=True); time.sleep(1000)"
        await c.request(
            {
                "cmd": "create",
                "session": "w",
                "cli": sys.executable,
                "args": ["-c", never_reads],
                "working_dir": "/tmp",
                "quiescence": 0.3,
            },
            "ready",
        )
        base = rss_mb(d.proc.pid)
        chunk = "x" * 1_000_000
        codes = []
        for _ in range(100):
            r = await c.request({"cmd": "input", "session": "w", "content": chunk}, "input_sent", timeout=60)
            codes.append(r.get("code") or r["event"])
        assert codes.count("write_queue_full") >= 90, codes
        assert codes[0] == "input_sent"
        err = next(e for e in c.events if e.get("code") == "write_queue_full")
        assert "not reading its input" in err["message"] and err["session"] == "w", err
        grown = rss_mb(d.proc.pid) - base
        assert grown < 40, f"daemon grew {grown:.0f} MB"
        assert (await c.request({"cmd": "ping"}, "pong"))["event"] == "pong"
        await c.request({"cmd": "kill", "session": "w"}, "killed")
        valid([{k: v for k, v in e.items()} for e in c.events])
        await c.close()
    finally:
        assert d.stop() == 0, d.log()


# ------------------------------------------------------------------------------ processes end with the session


@LINUX
@ASYNC
async def test_kill_ends_a_setsid_grandchild(tmp_short: str) -> None:
    d = spawn_daemon(os.path.join(tmp_short, "k.sock"))
    pidfile = Path(tmp_short) / "gc.pid"
    gc = 0
    try:
        c = await connect(d.socket)
        await c.request(L.bash_create("k", quiescence=0.3), "ready", timeout=60)
        line = f"setsid sh -c 'echo $$ > {pidfile}; exec sleep 1000' &\r"
        await c.request({"cmd": "input", "session": "k", "content": line}, "input_sent")
        assert await wait_until(lambda: pidfile.exists() and pidfile.read_text().strip().isdigit())
        gc = int(pidfile.read_text())
        assert pid_alive(gc)
        assert os.getsid(gc) != os.getsid(await session_pid(c, "k")), "not its own session"
        await c.request({"cmd": "kill", "session": "k"}, "killed", timeout=30)
        assert await wait_until(lambda: not pid_alive(gc), timeout=15), "the setsid grandchild survived kill"
        await c.close()
    finally:
        if gc and pid_alive(gc):
            os.kill(gc, signal.SIGKILL)
        assert d.stop() == 0, d.log()


@LINUX
@ASYNC
async def test_a_cli_ignoring_sighup_dies_with_a_sigkilled_daemon(tmp_short: str) -> None:
    d = spawn_daemon(os.path.join(tmp_short, "p.sock"))
    pid = 0
    try:
        c = await connect(d.socket)
        # ignores SIGHUP/SIGTERM and never touches its terminal, so losing the PTY does not end it either
        stubborn = (
            "import signal, time; signal.signal(signal.SIGHUP, signal.SIG_IGN); "
            "signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(1000)"
        )
        await c.request(
            {
                "cmd": "create",
                "session": "p",
                "cli": sys.executable,
                "args": ["-c", stubborn],
                "working_dir": "/tmp",
                "quiescence": 0.3,
            },
            "ready",
        )
        pid = await session_pid(c, "p")
        await c.close()
        d.proc.kill()
        d.proc.wait(10)
        assert await wait_until(lambda: not pid_alive(pid), timeout=15), "the CLI outlived the daemon"
    finally:
        if pid and pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
        d.stop()


# ------------------------------------------------------------------------------ attach names


def test_attach_no_such_session_escapes_control_characters(daemon: Any) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(daemon.socket + ".attach")
        s.sendall(b"evil\x1b]2;owned\x07\x1b[2J\r\n")
        got = read_until_eof(s, 20)
    assert b"no such session" in got, got
    text = got.decode("utf-8", "replace")
    body = text.strip("\r\n")
    assert "\x1b" not in body and "\x07" not in body, got
    assert "\\x1b]2;owned\\x07" in body, body


# ------------------------------------------------------------------------------ soak


SOAK_SECONDS = float(os.environ.get("LITBRIDGE_SOAK_SECONDS", "120"))


@pytest.mark.slow
@pytest.mark.timeout(SOAK_SECONDS + 300)
@ASYNC
async def test_soak_20_sessions_5_clients_one_reconnecting(tmp_short: str) -> None:
    """20 sessions, 5 clients (one reconnecting with since_seq every 5 s): every client sees every event once,
    in strict seq order, with no gap. LITBRIDGE_SOAK_SECONDS (default 120) sets the length."""
    seconds = SOAK_SECONDS
    d = spawn_daemon(os.path.join(tmp_short, "soak.sock"))
    try:
        ctl = await connect(d.socket)
        await ctl.request({"cmd": "hello", "subscribe": ["nothing-here"]}, "capabilities")
        keys = [f"k{i}" for i in range(20)]
        for k in keys:
            await ctl.send(
                {
                    "cmd": "create",
                    "session": k,
                    "cli": "sleep",
                    "args": ["100000"],
                    "working_dir": "/tmp",
                    "id": k,
                }
            )
        for k in keys:
            assert (await ctl.wait(lambda e, k=k: e.get("re") == k, timeout=60))["event"] == "ready"
        first_seq = 0
        seen: dict[int, list[int]] = {i: [] for i in range(5)}
        stop = asyncio.Event()
        load_stop = asyncio.Event()

        async def reader(i: int) -> None:
            c = await Conn.open(d.socket)
            await c._read_one(30)
            await c.send({"cmd": "hello", "since_seq": first_seq, "id": "h"})
            while not stop.is_set():
                with contextlib.suppress(asyncio.TimeoutError, TimeoutError):
                    e = await c._read_one(1.0)
                    if "seq" in e:
                        seen[i].append(e["seq"])
                    if len(c.events) > 1000:
                        valid(c.events)
                        c.events.clear()
            valid(c.events)
            await c.close()

        async def reconnecting() -> None:
            while not stop.is_set():
                c = await Conn.open(d.socket)
                await c._read_one(30)
                since = seen[4][-1] if seen[4] else first_seq
                await c.send({"cmd": "hello", "since_seq": since, "id": "h"})
                end = time.monotonic() + 5
                while time.monotonic() < end and not stop.is_set():
                    with contextlib.suppress(asyncio.TimeoutError, TimeoutError):
                        e = await c._read_one(0.5)
                        if e.get("event") == "replay_gap":
                            raise AssertionError(f"gap on reconnect: {e}")
                        if "seq" in e:
                            seen[4].append(e["seq"])
                valid(c.events)
                await c.close()

        async def load() -> None:
            n = 0
            while not load_stop.is_set():  # one pipelined keystroke (ack only, nothing typed) per session
                batch = [
                    {"cmd": "keystroke", "session": k, "keys": [], "id": n + j} for j, k in enumerate(keys)
                ]
                n += len(keys)
                await ctl.send(b"".join(orjson.dumps(x) + b"\n" for x in batch))
                await asyncio.sleep(0.02)

        first_seq = (await ctl.request({"cmd": "hello"}, "capabilities"))["last_seq"]
        await ctl.request({"cmd": "hello", "subscribe": ["nothing-here"]}, "capabilities")
        tasks = [asyncio.create_task(reader(i)) for i in range(4)]
        tasks += [asyncio.create_task(reconnecting()), asyncio.create_task(load())]
        await asyncio.sleep(seconds)
        load_stop.set()
        await asyncio.sleep(1)
        last = (await ctl.request({"cmd": "hello"}, "capabilities"))["last_seq"]
        await asyncio.sleep(5)  # every client reads the tail
        stop.set()
        await asyncio.gather(*tasks)
        print(f"soak: {seconds:.0f} s, last seq {last}, events per client {[len(v) for v in seen.values()]}")
        for i, seqs in seen.items():
            assert seqs, f"client {i} got nothing"
            assert len(seqs) == len(set(seqs)), f"client {i}: duplicates"
            assert seqs == sorted(seqs), f"client {i}: out of order"
            assert seqs == list(range(first_seq + 1, seqs[-1] + 1)), f"client {i}: gaps"
            assert seqs[-1] == last, (i, seqs[-1], last)
        assert "too slow" not in d.log()
        await ctl.close()
    finally:
        assert d.stop() == 0, d.log()
