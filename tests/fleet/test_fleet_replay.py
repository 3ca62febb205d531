"""`Fleet.events(daemon, since=K)` against what the stream really holds: a `replay_gap` the daemon published
(its ring overflowed during a NATS outage) is replayed like an event and never makes the replay skip events,
and seqs the stream no longer keeps (its age/bytes limits) are named by a `replay_gap` first, as the local
socket names what left its ring."""

from __future__ import annotations

from typing import Any

import pytest
from fleet_helpers import (
    WAIT,
    check_order,
    completes,
    local_socket,
    nats_client,
    of_daemon,
    read_stream,
    request,
    turn,
    wait_stream,
)
from lbd_helpers import bash_create, check_event

from litbridge.fleet.client import Fleet

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(300)]


def covers(ev: dict[str, Any]) -> tuple[int, int]:
    """The seqs an event stands for: its own, or a replay_gap's from..to."""
    if ev["event"] == "replay_gap":
        return ev["from_seq"], ev["to_seq"]
    return ev["seq"], ev["seq"]


async def replay(fleet: Fleet, daemon: str, since: int) -> list[dict[str, Any]]:
    stream = await fleet.events(daemon, since=since, follow=False)
    got = []
    async with stream:
        while True:
            try:
                ev = await stream.next(WAIT)
            except StopAsyncIteration:
                break
            assert ev.pop("daemon") == daemon, ev
            check_event(ev)
            got.append(ev)
    return got


def expected(stored: list[Any], since: int) -> list[dict[str, Any]]:
    """What a replay after `since` must give: every stored message standing for a seq > since, in stream
    order; a gap that began at or before `since` reduced to its part after it."""
    out = []
    for m in stored:
        lo, hi = covers(m.event)
        if hi <= since:
            continue
        ev = dict(m.event)
        if ev["event"] == "replay_gap" and lo <= since:
            ev["from_seq"] = since + 1
        out.append(ev)
    return out


async def test_since_replay_keeps_a_published_gap_and_skips_nothing(nats_server, fleet_daemons):
    """The ring overflows while NATS is down, so the stream holds events, one replay_gap, events. A `since`
    replay from anywhere (before, at, inside, after the gap) gives exactly the stored messages after `since`:
    the gap included, every kept event, in order, no duplicate."""
    (d,) = fleet_daemons(1, env={"LITBRIDGE_RING_BYTES": "3000"})
    async with nats_client(nats_server.url, d.name) as (nc, js):
        async with local_socket(d.socket) as conn:
            await request(nc, d.name, bash_create("g"))
            for i in range(3):  # events before the outage: the gap will sit in the middle of the stream
                await turn(conn, "g", f"echo before-{i}")
            await wait_stream(js, lambda got: completes(got, d.name, "before-2"), what="turns before")
            nats_server.stop()
            for i in range(8):  # far more than the ring's 3000 bytes while NATS is away
                await turn(conn, "g", f"echo {'x' * 200}-{i}")
            nats_server.start()
            for i in range(3):  # and events after it
                await turn(conn, "g", f"echo after-{i}")
            stored = await wait_stream(js, lambda got: completes(got, d.name, "after-2"), what="turns after")
    stored = of_daemon(stored, d.name)
    check_order(stored, stored[0].headers["Nats-Msg-Id"].split(":")[0])
    (gap,) = [m.event for m in stored if m.event["event"] == "replay_gap"]
    lo, hi = gap["from_seq"], gap["to_seq"]
    assert 1 < lo < hi, gap
    last = max(covers(m.event)[1] for m in stored)
    async with Fleet.connect(nats_server.url) as fleet:
        for since in sorted({0, 1, lo - 2, lo - 1, lo, (lo + hi) // 2, hi - 1, hi, hi + 1, last - 1, last}):
            got = await replay(fleet, d.name, since)
            want = expected(stored, since)
            assert got == want, (since, gap, got[:5], want[:5])
            seqs = [s for ev in got for s in range(covers(ev)[0], covers(ev)[1] + 1)]
            assert seqs == sorted(set(seqs)) and all(s > since for s in seqs), (since, seqs)
            if since < hi:
                assert {"event": "replay_gap", "from_seq": max(lo, since + 1), "to_seq": hi} in got, since


@pytest.mark.parametrize("max_bytes", ["6000"])
async def test_since_older_than_the_streams_retention_is_a_replay_gap(nats_server, fleet_daemons, max_bytes):
    """With a stream that keeps only a few KB, the oldest events of the run are dropped: a replay from before
    them starts with `replay_gap{since+1, oldest kept - 1}`, then every kept event; from a kept seq, no gap."""
    (d,) = fleet_daemons(1, "--nats-max-bytes", max_bytes)
    async with nats_client(nats_server.url, d.name) as (nc, js):
        await request(nc, d.name, bash_create("r"))
        for i in range(10):
            reply = await request(
                nc, d.name, {"cmd": "send", "session": "r", "content": f"echo {'y' * 300}-{i}"}
            )
            assert reply[0]["event"] == "accepted", reply
            await wait_stream(js, lambda got, i=i: completes(got, d.name, f"-{i}"), what=f"turn {i}")
        stored = of_daemon(await read_stream(js), d.name)
    oldest = stored[0].event["seq"]
    assert oldest > 3, f"the stream kept everything: {len(stored)} messages from seq {oldest}"
    async with Fleet.connect(nats_server.url) as fleet:
        for since in (0, oldest - 3):
            got = await replay(fleet, d.name, since)
            assert got[0] == {"event": "replay_gap", "from_seq": since + 1, "to_seq": oldest - 1}, got[:3]
            assert got[1:] == [m.event for m in stored], since
        got = await replay(fleet, d.name, oldest)
        assert got == [m.event for m in stored[1:]]


async def test_a_replay_whose_last_message_went_unnoticed_still_ends(nats_server, fleet_daemons, monkeypatch):
    """A replay without `follow` ends on its last message; should that be missed (here: no message is ever
    taken as the last), the replay, idle, asks the server and ends with every stored event, not never."""
    from litbridge.fleet import client as fleet_client

    (d,) = fleet_daemons(1)
    async with nats_client(nats_server.url, d.name) as (nc, js):
        async with local_socket(d.socket) as conn:
            await request(nc, d.name, bash_create("w"))
            await turn(conn, "w", "echo watched")
            stored = await wait_stream(js, lambda got: completes(got, d.name, "watched"), what="the turn")
    stored = of_daemon(stored, d.name)
    monkeypatch.setattr(fleet_client.FleetEventStream, "_is_last", lambda self, msg: False)
    monkeypatch.setattr(fleet_client, "REPLAY_IDLE_CHECK", 0.2)
    async with Fleet.connect(nats_server.url) as fleet:
        got = await replay(fleet, d.name, 0)
    assert got == expected(stored, 0) and got
