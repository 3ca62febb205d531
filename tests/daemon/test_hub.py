"""Hub unit tests: seq, ring bounds (count and superseded replaces), buffering/flush, replay ranges,
per-client coalescing and the slow-consumer cut-off (with an in-memory writer)."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from litbridge.daemon import hub as hubmod
from litbridge.daemon.hub import Client, Hub


class FakeTransport:
    def __init__(self) -> None:
        self.aborted = False

    def abort(self) -> None:
        self.aborted = True


class FakeWriter:
    def __init__(self) -> None:
        self.data = bytearray()
        self.closed = False
        self.transport = FakeTransport()
        self.gate = asyncio.Event()
        self.gate.set()

    def write(self, b: bytes) -> None:
        self.data += b

    async def drain(self) -> None:
        await self.gate.wait()

    def close(self) -> None:
        self.closed = True

    def events(self) -> list[dict[str, Any]]:
        return [orjson.loads(x) for x in bytes(self.data).splitlines()]


def ev(session: str, name: str = "state", **f: Any) -> dict[str, Any]:
    return {"event": name, "session": session, **f}


def greet(n: int) -> dict[str, Any]:
    return {"event": "monitor_ready", "buffered": n}


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


@pytest.mark.asyncio
async def test_buffer_flush_then_live_and_ring_bound() -> None:
    hub = Hub(buffer=10)
    for i in range(15):
        hub.publish(ev("s", n=i))
    w = FakeWriter()
    c = Client(hub, w, "t")  # type: ignore[arg-type]
    c.start()
    assert hub.attach(c, greet) == 10, "only the newest `buffer` events are kept"
    hub.publish(ev("s", n=99))
    await settle()
    got = w.events()
    assert got[0] == {"event": "monitor_ready", "buffered": 10}
    assert [e["seq"] for e in got[1:]] == list(range(6, 17))
    c.close()
    assert not hub.clients


@pytest.mark.asyncio
async def test_replace_superseded_in_ring_and_replay_range() -> None:
    hub = Hub()
    a = Client(hub, FakeWriter(), "a")  # type: ignore[arg-type]
    a.start()
    hub.attach(a, greet)
    hub.publish(ev("s", "accepted"))  # seq 1
    for i in range(5):
        hub.publish(ev("s", "replace", text="x" * i))  # seq 2..6
    hub.publish(ev("s", "complete"))  # seq 7
    hub.publish(ev("s", "replace", text="next turn"))  # seq 8: not superseding anything of the old turn
    kept = [(k.seq, k.kind) for k in hub.ring if k.line is not None]
    assert kept == [(1, "accepted"), (6, "replace"), (7, "complete"), (8, "replace")]
    w = FakeWriter()
    b = Client(hub, w, "b")  # type: ignore[arg-type]
    b.start()
    hub.attach(b, greet)  # a is connected: nothing is "buffered" for b
    assert hub.replay(b, 0) == 4
    assert hub.replay(b, 0) == 0, "never replayed twice"
    await settle()
    assert [e["seq"] for e in w.events()[1:]] == [1, 6, 7, 8]


@pytest.mark.asyncio
async def test_subscription_filters_live_and_replay() -> None:
    hub = Hub()
    w = FakeWriter()
    c = Client(hub, w, "c")  # type: ignore[arg-type]
    c.start()
    hub.attach(c, greet)
    c.subscribed = {"s1"}
    hub.publish(ev("s1"))
    hub.publish(ev("s2"))
    hub.publish(ev("s1:chan"))  # a channel of a subscribed session
    await settle()
    assert [e["session"] for e in w.events()[1:]] == ["s1", "s1:chan"]


@pytest.mark.asyncio
async def test_slow_client_coalesces_then_is_cut_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hubmod, "COALESCE_AT", 5)
    monkeypatch.setattr(hubmod, "MAX_QUEUE", 20)
    hub = Hub()
    slow_w, fast_w = FakeWriter(), FakeWriter()
    slow_w.gate.clear()  # its drain never returns: a stuck peer
    slow, fast = Client(hub, slow_w, "slow"), Client(hub, fast_w, "fast")  # type: ignore[arg-type]
    for c in (slow, fast):
        c.start()
        hub.attach(c, greet)
    await settle()
    for i in range(50):
        hub.publish(ev("s", "replace", text=str(i)))
        await settle()  # the fast client drains between events; the slow one never does
    assert not slow.closed, "replace events are coalesced, not counted against the limit"
    for _ in range(30):
        hub.publish(ev("s", "state"))
        await settle()
    assert slow.closed and slow not in hub.clients
    assert orjson.loads(bytes(slow_w.data).splitlines()[-1])["code"] == "slow_consumer"
    await settle()
    fast_events = fast_w.events()
    assert len([e for e in fast_events if e["event"] == "state"]) == 30
    assert [e["text"] for e in fast_events if e["event"] == "replace"] == [str(i) for i in range(50)]


@pytest.mark.asyncio
async def test_replay_goes_before_queued_live_events() -> None:
    hub = Hub()
    keeper = Client(hub, FakeWriter(), "k")  # type: ignore[arg-type]
    keeper.start()
    hub.attach(keeper, greet)
    for i in range(5):
        hub.publish(ev("s", n=i))  # seq 1..5 while our client is away
    w = FakeWriter()
    w.gate.clear()
    c = Client(hub, w, "c")  # type: ignore[arg-type]
    c.start()
    hub.attach(c, greet)
    await settle()  # monitor_ready is written; drain blocks: later events stay queued
    hub.publish(ev("s", n=6))
    hub.publish(ev("s", n=7))
    assert hub.replay(c, 2) == 3
    w.gate.set()
    await settle()
    assert [e["seq"] for e in w.events()[1:]] == [3, 4, 5, 6, 7]
