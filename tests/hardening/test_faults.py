"""Faults: a CLI killed mid-turn, a CLI that never becomes ready, clients dropping mid-turn and reconnecting,
a client that never reads, a damaged transcript, and the daemon itself terminated or killed.

Everything runs against real `litbridge serve` processes and real child processes (the fake TUI of
tests/fakes/fake_tui.py and the misbehaving fakes of tests/fakes/fake_hardening.py), except the transcript
tailer, which is exercised directly on files.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import stat
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from hardening_helpers import (
    FAKES,
    HERE,
    children_of,
    connect,
    lbd,
    pid_alive,
    refused_serve,
    spawn_daemon,
    wait_until,
)

from litbridge.drivers.claude.transcript import TranscriptTailer

L = lbd()
Conn = L.Conn
ASYNC = pytest.mark.asyncio(loop_scope="function")
TERMINAL = ("complete", "interrupted", "turn_error")


async def session_pid(c: Conn, key: str) -> int:
    """The CLI's pid from `list` (the fork runs in a worker thread: wait until the key has one)."""
    for _ in range(200):
        lst = await c.request({"cmd": "list"}, "sessions")
        items = [s for s in lst["sessions"] if s["name"] == key]
        if items and isinstance(items[0].get("pid"), int):
            return int(items[0]["pid"])
        await asyncio.sleep(0.05)
    raise AssertionError(f"no pid for {key}: {lst}")


def exists(path: str) -> bool:
    return os.path.lexists(path)


def session_events(events: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    return [e for e in events if e.get("session") == key and "seq" in e]


# ------------------------------------------------------------------------------------------ CLI killed mid-turn


@ASYNC
async def test_cli_sigkilled_mid_turn(daemon: Any) -> None:
    c = await connect(daemon.socket)
    key = "f-kill9"
    ready = await c.request(L.fake_create(key), "ready")
    assert ready["event"] == "ready", ready
    running = await c.request({"cmd": "send", "session": key, "content": "stream 400"}, "accepted")
    queued = await c.request({"cmd": "send", "session": key, "content": "reply never"}, "accepted")
    assert queued["queued"] is True
    await c.wait("replace", turn_id=running["turn_id"])  # the turn is really running
    pid = await session_pid(c, key)
    os.kill(pid, signal.SIGKILL)
    err = await c.wait("turn_error", turn_id=running["turn_id"])
    assert err["kind"] == "cli_exited"
    err2 = await c.wait("turn_error", turn_id=queued["turn_id"])
    assert err2["kind"] == "cli_exited"
    exited = await c.wait("exited", session=key)
    assert exited["exit_code"] == -signal.SIGKILL
    await c.wait("state", session=key, to="dead")
    assert await wait_until(lambda: not pid_alive(pid))
    await c.drain_for(0.3)
    counts = Counter(e["turn_id"] for e in c.events if e.get("event") in TERMINAL)
    assert counts == {running["turn_id"]: 1, queued["turn_id"]: 1}, "exactly one terminal event per turn"
    # the dead key is re-created, never "reused"
    again = await c.request(L.fake_create(key), "ready")
    assert again["event"] == "ready" and not again.get("reused"), again
    assert await session_pid(c, key) != pid
    await c.request({"cmd": "kill", "session": key}, "killed")
    await c.close()


# ------------------------------------------------------------------------------------------ never ready


@pytest.fixture
def never_ready_claude(tmp_short: str) -> str:
    """A `claude` executable (shell wrapper) that paints a busy line forever and ignores SIGTERM/SIGHUP."""
    path = Path(tmp_short) / "bin" / "claude"
    path.parent.mkdir()
    path.write_text(
        f'#!/bin/sh\nexec {sys.executable} {FAKES / "fake_hardening.py"} never-ready --ignore-term "$@"\n'
    )
    path.chmod(0o755)
    return str(path)


@ASYNC
async def test_cli_never_ready_create_times_out_and_is_reaped(
    tmp_short: str, never_ready_claude: str
) -> None:
    """The Claude driver's startup timeout (STARTUP_TIMEOUT, 60 s, not configurable: lowered to 3 s through
    serve_patched.py) ends the create with an error, and the CLI must be reaped, not left running."""
    d = spawn_daemon(
        os.path.join(tmp_short, "nr.sock"), launcher=[sys.executable, str(HERE / "serve_patched.py"), "3"]
    )
    pid = None
    try:
        c = await connect(d.socket)
        home = Path(tmp_short) / "home"
        home.mkdir()
        await c.send(
            {
                "cmd": "create",
                "session": "f-never",
                "cli": never_ready_claude,
                "working_dir": str(home),
                "env": {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")},
                "id": "nr",
            }
        )
        assert await wait_until(lambda: any(e.get("event") == "ready" for e in c.events), 0.5) is False
        pid = await session_pid(c, "f-never")
        err = await c.wait(lambda e: e.get("re") == "nr", timeout=60.0)
        assert err["event"] == "error" and err["code"] in ("timeout", "spawn_failed"), err
        assert "prompt" in err["message"] or "startup" in err["message"]
        reaped = await wait_until(lambda: not pid_alive(pid), 8.0)
        lst = await c.request({"cmd": "list"}, "sessions")
        alive = [s for s in lst["sessions"] if s["name"] == "f-never" and s.get("alive")]
        await c.close()
        assert reaped and not alive, f"pid {pid} alive={pid_alive(pid)}; list={lst['sessions']}"
    finally:
        if pid is not None and pid_alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(os.getpgid(pid), signal.SIGKILL)
        assert d.stop() == 0, d.log()


# ------------------------------------------------------------------------------------------ reconnect since_seq


def _check_exactly_once_in_order(
    first: list[dict[str, Any]], second: list[dict[str, Any]], reference: list[dict[str, Any]]
) -> None:
    """`first` (before the drop) + `second` (after the reconnect) against what an always-connected observer got.

    Every event arrives exactly once and in seq order, except that the replay may skip a `replace` superseded by a
    newer `replace` of the same session (replace carries the full text so far: nothing is lost)."""
    s1 = [e["seq"] for e in first]
    s2 = [e["seq"] for e in second]
    assert s2 == sorted(s2) and len(set(s2)) == len(s2), (
        f"reconnected stream out of order or duplicated: {s2}"
    )
    assert not set(s1) & set(s2), f"delivered twice: {sorted(set(s1) & set(s2))}"
    upto = min(reference[-1]["seq"], s2[-1])
    got = [e for e in first + second if e["seq"] <= upto]
    ref = [e for e in reference if s1[0] <= e["seq"] <= upto]
    assert [e["seq"] for e in got if e["event"] != "replace"] == [
        e["seq"] for e in ref if e["event"] != "replace"
    ], "events lost or reordered across the reconnect"
    _check_only_superseded_replaces_missing(got, {e["seq"]: e for e in ref})


def _check_only_superseded_replaces_missing(
    got: list[dict[str, Any]], ref: dict[int, dict[str, Any]]
) -> None:
    """Either side may lack a `replace` that a newer `replace` it has supersedes: the replay skips superseded
    ones, and a live client's queue drops one that was superseded before it was sent (the observer too)."""
    have = {e["seq"] for e in got}
    replaces = [e["seq"] for e in got if e["event"] == "replace"]
    ref_replaces = [seq for seq, e in ref.items() if e["event"] == "replace"]
    for seq, e in ref.items():
        if seq not in have:
            assert e["event"] == "replace" and any(r > seq for r in replaces), f"lost event {e}"
    for e in got:
        if e["seq"] in ref:
            assert ref[e["seq"]] == e
        else:
            assert e["event"] == "replace" and any(r > e["seq"] for r in ref_replaces), f"unknown event {e}"


async def _drop_mid_turn(path: str, key: str, observer: Conn | None) -> tuple[list[dict[str, Any]], str]:
    a = await connect(path)
    await a.request(L.fake_create(key), "ready")
    acc = await a.request({"cmd": "send", "session": key, "content": "stream 40"}, "accepted")
    for _ in range(3):
        await a.wait("replace", turn_id=acc["turn_id"])
    got = session_events(a.events, key)
    sock = a.writer.get_extra_info("socket")
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    a.writer.transport.abort()
    await asyncio.sleep(0.3)  # the turn goes on while nobody (or only the observer) listens
    if observer is not None:  # plus events that no later `replace` supersedes
        for _ in range(3):
            await observer.request({"cmd": "keystroke", "session": key, "keys": []}, "keystroke_sent")
    await asyncio.sleep(0.3)
    return got, acc["turn_id"]


@ASYNC
async def test_reconnect_since_seq_with_other_client_connected(daemon: Any) -> None:
    """hello{since_seq} as the first line while the turn streams on: exactly once and in seq order."""
    key = "f-recon1"
    obs = await connect(daemon.socket)
    first, turn = await _drop_mid_turn(daemon.socket, key, obs)
    b = await Conn.open(daemon.socket)
    await b.send({"cmd": "hello", "since_seq": first[-1]["seq"], "id": "h"})
    await b.wait("complete", turn_id=turn, timeout=30.0)
    await obs.wait("complete", turn_id=turn, timeout=30.0)
    await b.drain_for(0.3)
    await obs.drain_for(0.3)
    assert b.events[0]["event"] == "monitor_ready"
    _check_exactly_once_in_order(first, session_events(b.events, key), session_events(obs.events, key))
    # the gap held non-replace events too (keystroke_sent): the replay went ahead of the live stream
    assert any(e["event"] == "keystroke_sent" for e in session_events(b.events, key)), (
        "the gap was not replayed"
    )
    await b.request({"cmd": "kill", "session": key}, "killed")
    await b.close()
    await obs.close()


async def _late_hello(
    path: str, key: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """A drops mid-turn; B reads a live `replace` first, then sends hello{since_seq}. -> (A's, B's, observer's)."""
    obs = await connect(path)
    first, turn = await _drop_mid_turn(path, key, obs)
    b = await connect(path)
    # a live event reaches the new connection first (not a `replace`: on a loaded machine the 2 s stream may
    # have ended before B connected)
    await obs.request({"cmd": "keystroke", "session": key, "keys": []}, "keystroke_sent")
    await b.wait("keystroke_sent", session=key)
    await b.send({"cmd": "hello", "since_seq": first[-1]["seq"], "id": "h"})
    await b.wait("complete", turn_id=turn, timeout=30.0)
    await obs.wait("complete", turn_id=turn, timeout=30.0)
    await b.drain_for(0.3)
    await obs.drain_for(0.3)
    await b.request({"cmd": "kill", "session": key}, "killed")
    await b.close()
    await obs.close()
    return first, session_events(b.events, key), session_events(obs.events, key)


@ASYNC
async def test_reconnect_since_seq_after_live_events_exactly_once(daemon: Any) -> None:
    """hello{since_seq} sent after the client already read live events: every event still arrives exactly once,
    but the older replayed ones necessarily come after the live ones it read, so such a client orders by seq."""
    first, second, ref = await _late_hello(daemon.socket, "f-recon3")
    _check_exactly_once_in_order(first, sorted(second, key=lambda e: e["seq"]), ref)


@ASYNC
async def test_reconnect_since_seq_when_nobody_was_connected(tmp_short: str) -> None:
    d = spawn_daemon(os.path.join(tmp_short, "rc.sock"))
    try:
        key = "f-recon2"
        first, turn = await _drop_mid_turn(d.socket, key, None)
        b = await Conn.open(d.socket)
        await b.send({"cmd": "hello", "since_seq": first[-1]["seq"], "id": "h"})
        await b.wait("complete", turn_id=turn, timeout=30.0)
        await b.drain_for(0.3)
        mine = session_events(b.events, key)
        seqs = [e["seq"] for e in mine]
        assert b.events[0]["event"] == "monitor_ready"
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), f"out of order or duplicated: {seqs}"
        assert not {e["seq"] for e in first} & set(seqs)
        # one session on this daemon, so every seq belongs to it: a gap may only be a superseded replace
        replaces = [e["seq"] for e in mine if e["event"] == "replace"]
        for gap in set(range(first[-1]["seq"] + 1, seqs[-1] + 1)) - set(seqs):
            assert any(r > gap for r in replaces), f"seq {gap} lost (not a superseded replace): {seqs}"
        assert mine[-1]["event"] != "replace" and [e["event"] for e in mine].count("complete") == 1
        await b.request({"cmd": "kill", "session": key}, "killed")
        await b.close()
    finally:
        assert d.stop() == 0, d.log()


# ------------------------------------------------------------------------------------------ slow consumer


@ASYNC
async def test_slow_consumer_is_cut_off_and_others_are_unaffected(tmp_short: str) -> None:
    d = spawn_daemon(
        os.path.join(tmp_short, "sc.sock"),
        env={"LITBRIDGE_CLIENT_QUEUE": "300", "LITBRIDGE_CLIENT_COALESCE": "50"},
    )
    try:
        slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.connect(d.socket)  # ... and never reads
        p = await connect(d.socket)
        await p.request(L.fake_create("f-slow"), "ready")
        n = 8000  # ~85 B each: well past the kernel buffers + transport high-water + the 300-entry queue
        batch = b"".join(
            orjson.dumps({"cmd": "keystroke", "session": "f-slow", "keys": [], "id": i}) + b"\n"
            for i in range(n)
        )
        pings = 0
        send_task = asyncio.create_task(p.send(batch))
        # the producer reads its acks while it sends, and the control client subscribes to no session: it
        # wants only its pongs. Subscribed to everything, it got all 8000 acks too while the test read it only
        # between pings, so on a busy machine it was cut as a slow consumer itself (300 entries, or 15 s
        # without reading while the producer's acks were checked).
        acks_task = asyncio.create_task(p.wait("keystroke_sent", re=n - 1, timeout=120.0))
        ctl = await connect(d.socket)
        await ctl.request({"cmd": "hello", "subscribe": ["nothing-here"]}, "capabilities")
        while not send_task.done() or pings < 5:
            assert (await ctl.request({"cmd": "ping"}, "pong", timeout=30.0))["event"] == "pong"
            pings += 1
            await asyncio.sleep(0.02)
        await send_task
        await acks_task
        acks = [e["re"] for e in p.events if e.get("event") == "keystroke_sent"]
        assert acks == list(range(n)), "the reading client lost or reordered acks"
        # the slow client was disconnected (its socket reaches EOF/reset once drained), the daemon lives on
        slow.settimeout(30.0)
        data = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := slow.recv(65536):
                data += chunk
        slow.close()
        lines = [orjson.loads(x) for x in data.split(b"\n") if x.strip() and x.endswith(b"}")]
        assert lines and lines[0]["event"] == "monitor_ready"
        assert len(lines) < n, "the slow client was not cut off"
        tail_errors = [e for e in lines if e["event"] == "error"]
        assert all(e["code"] == "slow_consumer" for e in tail_errors), tail_errors
        assert "too slow" in d.log()
        assert (await ctl.request({"cmd": "ping"}, "pong"))["event"] == "pong"
        # a new client is served normally (resuming with since_seq is covered by the reconnect tests; with the
        # queue lowered to 300 here, a replay of the thousands of missed events would itself overflow it)
        r = await connect(d.socket)
        assert (await r.request({"cmd": "list"}, "sessions"))["event"] == "sessions"
        for conn in (p, ctl, r):
            await conn.close()
    finally:
        assert d.stop() == 0, d.log()


# ------------------------------------------------------------------------------------------ transcript tailer


def _line(i: int) -> bytes:
    return orjson.dumps({"type": "assistant", "n": i}) + b"\n"


def _ns(entries: list[dict[str, Any]]) -> list[int]:
    return [e["n"] for e in entries]


def test_transcript_corrupt_and_partial_lines(tmp_path: Path) -> None:
    path = tmp_path / "s1.jsonl"
    path.write_bytes(b"")
    t = TranscriptTailer(tmp_path, "s1", from_start=True)
    with path.open("ab") as f:
        f.write(
            _line(1) + b'{"type": "assist\n' + b"\x00\xff garbage\n" + b"[1,2]\n" + _line(2) + b'{"n": 3, "ty'
        )
    assert _ns(t.poll()) == [1, 2]
    assert t.corrupt_lines == 3
    with path.open("ab") as f:
        f.write(b'pe": "x"}\n')  # the partial line completes
    assert _ns(t.poll()) == [3]
    # disk-full style: a write cut short, then the writer goes on with a new entry on the same line
    with path.open("ab") as f:
        f.write(b'{"type": "assistant", "n": 4, "message": {"te' + _line(5) + _line(6))
    assert _ns(t.poll()) == [6] and t.corrupt_lines == 4


def test_transcript_truncated_and_rotated(tmp_path: Path) -> None:
    path = tmp_path / "s2.jsonl"
    path.write_bytes(_line(1) + _line(2))
    t = TranscriptTailer(tmp_path, "s2", from_start=True)
    assert _ns(t.poll()) == [1, 2]
    path.write_bytes(_line(3))  # truncated in place and rewritten shorter
    assert _ns(t.poll()) == [3]
    rotated = tmp_path / "s2.jsonl.1"
    path.rename(rotated)
    assert t.poll() == []  # gone for a moment: no error
    path.write_bytes(_line(4) + _line(5))  # a new file (new inode) under the pinned name
    assert _ns(t.poll()) == [4, 5]
    with rotated.open("ab") as f:
        f.write(_line(99))  # the old file keeps growing: never read
    assert t.poll() == []


def test_transcript_path_problems(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "dir"
    t = TranscriptTailer(missing, "s3", from_start=True)
    assert t.poll() == [] and t.find_clear_roll() is None and t.newest_since(0) is None
    missing.mkdir(parents=True)
    (missing / "s3.jsonl").write_bytes(_line(1))
    assert _ns(t.poll()) == [1]
    # the pinned name is a directory; then a dangling symlink: nothing raises
    d = tmp_path / "d"
    d.mkdir()
    (d / "s4.jsonl").mkdir()
    assert TranscriptTailer(d, "s4", from_start=True).poll() == []
    (d / "s5.jsonl").symlink_to(d / "nowhere")
    assert TranscriptTailer(d, "s5", from_start=True).poll() == []
    # an unreadable file (meaningful when not root) and a directory we may not list
    f = d / "s6.jsonl"
    f.write_bytes(_line(1))
    f.chmod(0)
    try:
        got = TranscriptTailer(d, "s6", from_start=True).poll()
        assert got in ([], [{"type": "assistant", "n": 1}])
    finally:
        f.chmod(stat.S_IRUSR | stat.S_IWUSR)


def test_transcript_huge_line(tmp_path: Path) -> None:
    path = tmp_path / "s7.jsonl"
    big = orjson.dumps({"type": "assistant", "n": 1, "pad": "x" * (8 << 20)}) + b"\n"
    path.write_bytes(big + _line(2))
    t = TranscriptTailer(tmp_path, "s7", from_start=True)
    assert _ns(t.poll()) == [1, 2]


@ASYNC
async def test_claude_config_dir_unwritable_is_an_error_not_a_crash(daemon: Any, tmp_short: str) -> None:
    """preapprove writes Claude's config; a config dir under a regular file fails cleanly with an error."""
    blocker = Path(tmp_short) / "file"
    blocker.write_text("not a dir")
    fake_claude = Path(tmp_short) / "claude"
    fake_claude.write_text(f"#!/bin/sh\nexec {sys.executable} {FAKES / 'fake_hardening.py'} never-ready\n")
    fake_claude.chmod(0o755)
    c = await connect(daemon.socket)
    err = await c.request(
        {
            "cmd": "create",
            "session": "f-cfg",
            "cli": str(fake_claude),
            "preapprove": True,
            "working_dir": tmp_short,
            "env": {"CLAUDE_CONFIG_DIR": str(blocker / "cfg")},
        }
    )
    assert err["event"] == "error" and err["code"], err
    lst = await c.request({"cmd": "list"}, "sessions")
    assert not [s for s in lst["sessions"] if s["name"] == "f-cfg" and s.get("alive")], lst
    assert (await c.request({"cmd": "ping"}, "pong"))["event"] == "pong"
    await c.close()


# ------------------------------------------------------------------------------------------ daemon terminated


@ASYNC
async def test_daemon_sigterm_reaps_everything_and_unlinks_sockets(tmp_short: str) -> None:
    sock_path = os.path.join(tmp_short, "t.sock")
    d = spawn_daemon(sock_path)
    c = await connect(sock_path)
    pids = []
    for key, args in (("t-plain", ()), ("t-stubborn", ("--ignore-term",)), ("t-parent", ())):
        r = await c.request(L.fake_create(key, *args), "ready")
        assert r["event"] == "ready", r
        pids.append(await session_pid(c, key))
    await c.request({"cmd": "input", "session": "t-parent", "content": "spawn"}, "input_sent")
    assert await wait_until(lambda: len(children_of(pids[2])) == 1)
    grandchild = children_of(pids[2])[0]
    busy = await c.request({"cmd": "send", "session": "t-plain", "content": "stream 400"}, "accepted")
    await c.wait("replace", turn_id=busy["turn_id"])
    assert exists(sock_path) and exists(sock_path + ".attach")
    d.proc.send_signal(signal.SIGTERM)
    code = await asyncio.get_running_loop().run_in_executor(None, d.proc.wait, 30)
    assert code == 0, d.log()
    # the open turn got its terminal event before the connection closed
    err = await c.wait("turn_error", turn_id=busy["turn_id"], timeout=5.0)
    assert err["kind"] == "cli_exited"
    for pid in [*pids, grandchild]:
        assert not pid_alive(pid), f"pid {pid} survived the daemon's SIGTERM"
    assert not exists(sock_path) and not exists(sock_path + ".attach")
    await c.close()


@ASYNC
async def test_daemon_sigkill_then_next_start_reclaims_the_socket(tmp_short: str) -> None:
    sock_path = os.path.join(tmp_short, "k.sock")
    d = spawn_daemon(sock_path)
    c = await connect(sock_path)
    await c.request(L.fake_create("k-one"), "ready")
    pid = await session_pid(c, "k-one")
    d.proc.kill()
    d.proc.wait(10)
    await c.close()
    assert stat.S_ISSOCK(os.lstat(sock_path).st_mode), "a SIGKILLed daemon leaves its socket file behind"
    # its orphaned CLI loses the PTY and goes away by itself
    assert await wait_until(lambda: not pid_alive(pid), 20.0), f"orphan pid {pid} still alive"
    d2 = spawn_daemon(sock_path)
    try:
        c2 = await connect(sock_path)
        assert (await c2.request({"cmd": "ping"}, "pong"))["event"] == "pong"
        assert stat.S_IMODE(os.stat(sock_path).st_mode) == 0o600
        await c2.close()
        # a third daemon must not steal the live socket: exit status 3
        refused_serve(sock_path)
    finally:
        assert d2.stop() == 0, d2.log()


# ------------------------------------------------------------------------------------------ output flood


@ASYNC
async def test_cli_flooding_output_does_not_starve_the_daemon(daemon: Any) -> None:
    """A CLI writing ~20 MB as fast as it can: pings stay answered, dump and kill work, the group is reaped."""
    c = await connect(daemon.socket)
    key = "f-flood"
    await c.send(
        {
            "cmd": "create",
            "session": key,
            "cli": sys.executable,
            "id": "fl",
            "quiescence": 0.2,
            "args": [str(FAKES / "fake_hardening.py"), "flood", "200000"],
            "working_dir": "/tmp",
        }
    )
    ctl = await connect(daemon.socket)
    pid = None
    for _ in range(20):
        assert (await ctl.request({"cmd": "ping"}, "pong", timeout=10.0))["event"] == "pong"
        if pid is None:
            pid = await session_pid(ctl, key)
        await asyncio.sleep(0.05)
    dump = await ctl.request({"cmd": "dump", "session": key}, "dump")
    assert dump["event"] == "dump" and len(dump["capture"].split("\n")) == 50
    killed = await ctl.request({"cmd": "kill", "session": key}, "killed", timeout=30.0)
    assert killed["event"] == "killed", killed
    assert pid is not None and await wait_until(lambda: not pid_alive(pid))
    await c.close()
    await ctl.close()


# ------------------------------------------------------------------------------------------ fd exhaustion


def _low_nofile() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))


@ASYNC
async def test_fd_exhaustion_is_survived_and_recovered(tmp_short: str) -> None:
    """A daemon limited to 64 fds flooded with 150 connections keeps serving its existing client (a create
    either works or fails cleanly) and serves new clients again once the flood is gone."""
    d = spawn_daemon(os.path.join(tmp_short, "fd.sock"), preexec=_low_nofile)
    socks: list[socket.socket] = []
    try:
        ctl = await connect(d.socket)
        for _ in range(150):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.setblocking(False)
            with contextlib.suppress(BlockingIOError, ConnectionRefusedError):
                s.connect(d.socket)
            socks.append(s)
        await asyncio.sleep(1.0)
        assert len(os.listdir(f"/proc/{d.proc.pid}/fd")) >= 60, "the flood did not exhaust the daemon's fds"
        assert (await ctl.request({"cmd": "ping"}, "pong"))["event"] == "pong"
        r = await ctl.request(L.fake_create("fd-during"), timeout=30.0)
        assert r["event"] == "ready" or (
            r["event"] == "error" and r["code"] in ("spawn_failed", "internal")
        ), r
        for s in socks:
            s.close()
        socks.clear()
        await asyncio.sleep(1.0)
        fresh = await connect(d.socket)
        r = await fresh.request(L.fake_create("fd-after"), "ready", timeout=30.0)
        assert r["event"] == "ready", r
        for conn in (ctl, fresh):
            await conn.close()
        assert d.proc.poll() is None
    finally:
        for s in socks:
            s.close()
        assert d.stop() == 0, d.log()


# ------------------------------------------------------------------------------------------ hostile CLI output

HOSTILE = [
    b"\x1b[?6h\x1b[6n",  # CPR in origin mode without margins (asserted inside pyte)
    b"\x1b[?6h\x1b[5d\x1b[?6l",
    b"\x1b[?3h\x1b[?3l",  # DECCOLM: a resize request; the grid stays 200x50
    b"\x1b[8;100;300t",  # XTWINOPS resize
    b"\x1b[99999999999;99999999999H\x1b[99999999999L\x1b[99999999999M\x1b[99999999999@\x1b[99999999999P",
    b"\x1b[99999999999S\x1b[99999999999T\x1b[99999999999X\x1b[99999999999b",
    b"\x1b[;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;m",
    b"\x1b[1;99999r\x1b[50;1r\x1b[0;0r\x1bD" * 3,
    b"\x1b]7501;" + b"x=" * 50000 + b"\x07",
    b"\x1b]0;" + b"t" * 200000 + b"\x07",
    b"\x1bP" + b"q" * 200000 + b"\x1b\\",
    b"\x1b#8\x1b(0\x0e\x0f\x1b)B\x1bc",
    b"\x1b[?1049h\x1b[?1049h\x1b[?47l\x1b[?1047l\x1b[?1049l\x1b[?1049l",
    "👩\u200d".encode() * 1000 + b"\xcc\x81" * 5000,
    b"\x9b2J\xc2\x9b2J\x90q\x9c",
]


@ASYNC
async def test_hostile_cli_output_does_not_break_the_session(daemon: Any, tmp_short: str) -> None:
    """Escape sequences meant to crash or wedge an emulator: the session keeps rendering, the daemon serves on."""
    payload = Path(tmp_short) / "hostile.bin"
    payload.write_bytes(b"".join(HOSTILE) + b"\x1b[?1049l\x1b[H\x1b[2Jafter-marker\r\n")
    script = "import os,sys,time; os.write(1, open(sys.argv[1], 'rb').read()); time.sleep(60)"
    c = await connect(daemon.socket)
    key = "f-hostile"
    r = await c.request(
        {
            "cmd": "create",
            "session": key,
            "cli": sys.executable,
            "args": ["-c", script, str(payload)],
            "working_dir": "/tmp",
            "quiescence": 0.3,
        },
        "ready",
        timeout=30.0,
    )
    assert r["event"] == "ready", r

    async def rendered() -> bool:
        dump = await c.request({"cmd": "dump", "session": key}, "dump")
        assert dump["event"] == "dump" and len(dump["capture"].split("\n")) == 50, dump
        return "after-marker" in dump["capture"]

    for _ in range(100):
        if await rendered():
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError("the screen stopped following the CLI's output")
    lst = await c.request({"cmd": "list"}, "sessions")
    assert next(s for s in lst["sessions"] if s["name"] == key)["alive"] is True
    assert (await c.request({"cmd": "kill", "session": key}, "killed"))["event"] == "killed"
    await c.close()
