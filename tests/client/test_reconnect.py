"""Reconnect with hello{since_seq}: a dropped connection loses no session event and repeats none.

The client under test reaches the daemon through a symlink; renaming the symlink away keeps it from
reconnecting, so events are provably published while it is disconnected. An observer client that is
never dropped sees the reference sequence.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from _daemon import Daemon, running_daemon, spawn, stop

from litbridge.client import Client, Event, EventStream

pytestmark = pytest.mark.asyncio

BASH = {"args": ["--norc", "--noprofile"], "env": {"PS1": "$ "}, "quiescence": 0.3}


async def _drain(stream: EventStream) -> list[Event]:
    stream.close()
    return [ev async for ev in stream]


def _seqs(events: list[Event], session: str) -> list[int]:
    return [ev["seq"] for ev in events if ev.get("session") == session and "seq" in ev]


class _Gate:
    """A symlink to the daemon's socket that can be switched off (connect then fails: ENOENT)."""

    def __init__(self, target: str, where: Path) -> None:
        self.link = where / "gate.sock"
        self.off = where / "gate.off"
        os.symlink(target, self.link)

    def close(self) -> None:
        os.rename(self.link, self.off)

    def open(self) -> None:
        os.rename(self.off, self.link)


async def _quiesce(*clients: Client) -> None:
    """A round trip per client: everything published before it has been delivered to that client."""
    for c in clients:
        await c.ping()


async def test_drop_between_turns_loses_nothing(daemon: Daemon, tmp_path: Path) -> None:
    gate = _Gate(daemon.socket, tmp_path)
    async with (
        Client.connect(socket=daemon.socket) as observer,
        Client.connect(socket=gate.link, reconnect_timeout=60) as dropped,
    ):
        # Both streams exist before the session does: each sees rc1 from its first event. (Made after `create`
        # returns, `dropped` could still be receiving the early events the observer already had.)
        ref = observer.events("rc1")
        got = dropped.events("rc1")
        await observer.create("rc1", "bash", timeout=60, **BASH)
        first = await dropped.send("rc1", "echo before")
        await first.result(timeout=60)

        gate.close()
        dropped._drop_connection()
        # Published while `dropped` cannot reconnect: a whole turn, driven by the observer.
        away = await observer.send("rc1", "echo while-away")
        await away.result(timeout=60)
        pending_ping = asyncio.create_task(dropped.ping())  # issued while disconnected
        await asyncio.sleep(0.2)
        assert not pending_ping.done()
        gate.open()
        assert (await asyncio.wait_for(pending_ping, 60))["event"] == "pong"
        after = await dropped.send("rc1", "echo after")
        await after.result(timeout=60)
        await _quiesce(observer, dropped)

        ref_events, got_events = await _drain(ref), await _drain(got)
        assert dropped.reconnects == 1
        ref_seqs, got_seqs = _seqs(ref_events, "rc1"), _seqs(got_events, "rc1")
        assert got_seqs == ref_seqs  # same events, same order: nothing lost, nothing twice
        assert got_seqs == sorted(set(got_seqs))
        contents = [ev["content"] for ev in got_events if ev["event"] == "complete"]
        assert contents == ["before", "while-away", "after"]


async def test_drop_mid_turn_turn_handle_still_ends(daemon: Daemon, tmp_path: Path) -> None:
    gate = _Gate(daemon.socket, tmp_path)
    async with (
        Client.connect(socket=daemon.socket) as observer,
        Client.connect(socket=gate.link, reconnect_timeout=60) as dropped,
    ):
        await observer.create("rc2", sys.executable, timeout=60, args=["-q", "-u", "-i"], quiescence=0.5)
        turn = await dropped.send(
            "rc2",
            "[(print('line', i, flush=True), __import__('time').sleep(0.1)) for i in range(6)] and None",
        )
        async for ev in turn:
            if ev["event"] == "replace" and "line" in ev["text"]:
                break
        assert not turn.done
        gate.close()
        dropped._drop_connection()
        async with observer.events(
            "rc2", turn=turn.turn_id, kinds={"complete", "interrupted", "turn_error"}
        ) as end:
            reference_end = await end.next(timeout=60)
        gate.open()
        done = await turn.result(timeout=60)
        assert done["seq"] == reference_end["seq"]
        assert done["event"] == "complete"
        assert [f"line {i}" for i in range(6)] == [ln.strip() for ln in done["content"].splitlines()][-6:]
        seqs = [ev["seq"] for ev in [e async for e in turn] if "seq" in ev]
        assert seqs == sorted(set(seqs))


async def test_daemon_restart_resets_seq_numbering(tmp_path: Path) -> None:
    """A new daemon on the same socket numbers events from 1 again; the client must not drop them."""
    with running_daemon() as daemon:
        async with Client.connect(socket=daemon.socket, reconnect_timeout=60) as c:
            await c.create("before-restart", "bash", timeout=60, **BASH)
            t = await c.send("before-restart", "echo x")
            await t.result(timeout=60)
            high = c.last_seq
            assert high is not None and high > 3
            first_id = c.server_info["daemon_id"]

            stop(daemon.proc)
            daemon.proc = spawn(daemon.socket, daemon.env, daemon.log)
            # The next command waits for the reconnect; its `ready` reply has a small seq again.
            ready = await c.create("after-restart", "bash", timeout=60, **BASH)
            assert ready["event"] == "ready"
            assert c.last_seq is not None and c.last_seq < high
            assert (
                c.server_info["daemon_id"] != first_id
            )  # told apart by daemon_id, not by guessing from seqs
            t2 = await c.send("after-restart", "echo y")
            assert (await t2.result(timeout=60))["content"] == "y"


async def test_sole_client_gets_the_events_buffered_while_it_was_away(daemon: Daemon, tmp_path: Path) -> None:
    """No other client: the daemon buffers while nobody listens and flushes after monitor_ready."""
    gate = _Gate(daemon.socket, tmp_path)
    async with Client.connect(socket=gate.link, reconnect_timeout=60) as c:
        await c.create("rc-solo", "bash", timeout=60, **BASH)
        got = c.events("rc-solo")
        gate.close()
        c._drop_connection()
        # Nobody is connected now: drive the session through a one-shot raw connection that leaves at once.
        reader, writer = await asyncio.open_unix_connection(daemon.socket)
        writer.write(b'{"cmd":"input","session":"rc-solo","content":"echo solo-$((2+2))"}\n')
        await writer.drain()
        await reader.readline()  # monitor_ready
        await reader.readline()  # input_sent
        writer.close()
        async with Client.connect(socket=daemon.socket) as probe:  # wait until the echo is on screen
            for _ in range(200):
                if "solo-4" in (await probe.dump("rc-solo"))["capture"]:
                    break
                await asyncio.sleep(0.05)
        gate.open()
        await c.ping()
        events = await _drain(got)
        assert c.reconnects == 1
        assert any(ev["event"] == "input_sent" for ev in events)  # published while c was away
        seqs = _seqs(events, "rc-solo")
        assert len(seqs) == len(set(seqs))


async def test_explicit_history_replay_is_delivered(daemon: Daemon) -> None:
    """hello(since_seq=0) fetches events from before the connection, even after newer ones were seen."""
    async with Client.connect(socket=daemon.socket) as old:
        await old.create("rc-hist", "bash", timeout=60, **BASH)
        t = await old.send("rc-hist", "echo history")
        await t.result(timeout=60)
    async with Client.connect(socket=daemon.socket) as late:
        stream = late.events("rc-hist")
        await late.input("rc-hist", "true")  # a live event first: late.last_seq is now the newest seq
        assert late.last_seq is not None
        caps = await late.hello(since_seq=0)
        assert caps["replayed"] > 0
        await late.ping()
        events = await _drain(stream)
        completes = [ev for ev in events if ev["event"] == "complete"]
        assert [ev["content"] for ev in completes] == ["history"]
        assert min(ev["seq"] for ev in completes) < late.last_seq
