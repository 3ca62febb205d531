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
    """Buffers what is written while the writer's gate is shut (a peer that does not read), as a socket's
    transport does once the kernel's buffer is full."""

    def __init__(self, writer: FakeWriter) -> None:
        self.writer = writer
        self.aborted = False

    def abort(self) -> None:
        self.aborted = True

    def get_write_buffer_size(self) -> int:
        return 0 if self.writer.gate.is_set() else self.writer.pending

    def is_closing(self) -> bool:
        return self.aborted or self.writer.closed


class FakeWriter:
    def __init__(self) -> None:
        self.data = bytearray()
        self.pending = 0
        self.drains = 0
        self.closed = False
        self.transport = FakeTransport(self)
        self.gate = asyncio.Event()
        self.gate.set()

    def write(self, b: bytes) -> None:
        self.data += b
        self.pending += len(b)

    async def drain(self) -> None:
        self.drains += 1
        await self.gate.wait()
        self.pending = 0

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


def hub_a_client_left(n: int) -> Hub:
    """A hub whose only client got seq 1..n and left: what is published next is buffered for the next one."""
    hub = Hub()
    gone = Client(hub, FakeWriter(), "gone")  # type: ignore[arg-type]
    gone.start()
    hub.attach(gone, greet)
    for i in range(n):
        hub.publish(ev("s", n=i))
    gone.close()
    return hub


async def reading_client(hub: Hub) -> tuple[Client, FakeWriter]:
    """A client whose peer has read everything so far (its greeting included): its socket holds nothing."""
    w = FakeWriter()
    c = Client(hub, w, "c")  # type: ignore[arg-type]
    c.start()
    hub.attach(c, greet)
    await settle()
    w.pending = 0
    return c, w


async def stuck_client(hub: Hub) -> tuple[Client, FakeWriter]:
    """A client whose drain never returns once its monitor_ready is written: what follows stays queued."""
    w = FakeWriter()
    w.gate.clear()
    c = Client(hub, w, "c")  # type: ignore[arg-type]
    c.start()
    hub.attach(c, greet)
    await settle()
    return c, w


@pytest.mark.asyncio
async def test_buffer_flush_then_live_and_ring_bound() -> None:
    hub = Hub(buffer=10)
    for i in range(15):
        hub.publish(ev("s", n=i))
    w = FakeWriter()
    c = Client(hub, w, "t")  # type: ignore[arg-type]
    c.start()
    c.hold()  # as the daemon does for every new connection
    assert hub.attach(c, greet) == 10, "only the newest `buffer` events are kept"
    hub.publish(ev("s", n=99))
    await settle()
    assert w.events() == [{"event": "monitor_ready", "buffered": 10}], "held until the first command"
    c.release()
    await settle()
    got = w.events()
    assert got[0] == {"event": "monitor_ready", "buffered": 10}
    assert [e["seq"] for e in got[1:]] == list(range(6, 17))
    c.close()
    assert not hub.clients


@pytest.mark.asyncio
async def test_a_drain_is_awaited_only_for_what_the_transport_still_holds() -> None:
    """A batch the kernel took whole needs no drain (nor a task to wait on one); a peer that stopped reading
    leaves bytes in the transport, and then the client waits for them before it writes more."""
    hub = Hub()
    w = FakeWriter()
    c = Client(hub, w, "t")  # type: ignore[arg-type]
    c.start()
    hub.attach(c, greet)
    for i in range(5):
        hub.publish(ev("s", n=i))
        await settle()
    assert len(w.events()) == 6 and w.drains == 0
    w.gate.clear()  # the peer stops reading: what is written next stays in the transport
    hub.publish(ev("s", n=5))
    await settle()
    hub.publish(ev("s", n=6))
    await settle()
    assert w.drains == 1 and [e.get("n") for e in w.events()][-1] == 5, "n=6 waits behind the undrained batch"
    w.gate.set()
    await settle()
    assert [e.get("n") for e in w.events()][-1] == 6
    c.close()


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
    c, w = await stuck_client(hub)
    hub.publish(ev("s", n=6))
    hub.publish(ev("s", n=7))
    assert hub.replay(c, 2) == 3
    w.gate.set()
    await settle()
    assert [e["seq"] for e in w.events()[1:]] == [3, 4, 5, 6, 7]


@pytest.mark.asyncio
async def test_buffered_events_wait_for_a_late_hello_so_replay_stays_in_seq_order() -> None:
    """A new client's events (buffered while nobody listened, and live ones) are held until its first
    command: a hello{since_seq} that comes after them still gets the older events first."""
    hub = hub_a_client_left(4)  # seq 1..4 went to a client that left
    for i in range(3):
        hub.publish(ev("s", n=i))  # seq 5..7: buffered, nobody listens
    w = FakeWriter()
    c = Client(hub, w, "c")  # type: ignore[arg-type]
    c.start()
    c.hold()
    assert hub.attach(c, greet) == 3
    for _ in range(20):
        await asyncio.sleep(0.005)  # 100 ms: the client is slow to send its hello
    hub.publish(ev("s", n=8))  # seq 8, live
    assert hub.replay(c, 1) == 3  # seq 2..4 (5..7 are already queued for it)
    c.release()
    await settle()
    assert [e["seq"] for e in w.events()[1:]] == [2, 3, 4, 5, 6, 7, 8]


@pytest.mark.asyncio
async def test_turn_ends_among_buffered_and_held_events_keep_the_replay_in_seq_order() -> None:
    """As the daemon does it (attach, then hold until the first command): a `complete` among the events
    buffered while nobody listened, and one published while the client is held, wait like the rest, so a
    late hello{since_seq} still gets the older events first."""
    hub = hub_a_client_left(4)  # seq 1..4 went to a client that left
    hub.publish(ev("s", "replace", turn_id="t1", text="a"))  # seq 5..6: buffered, nobody listens
    hub.publish(ev("s", "complete", turn_id="t1", content="a"))
    w = FakeWriter()
    c = Client(hub, w, "c")  # type: ignore[arg-type]
    c.start()
    assert hub.attach(c, greet) == 2
    c.hold()
    hub.publish(ev("s", "complete", turn_id="t2", content="b"))  # seq 7, live, while held
    await settle()
    assert [e["event"] for e in w.events()] == ["monitor_ready"]
    assert hub.replay(c, 1) == 3  # seq 2..4
    c.release()
    await settle()
    assert [e["seq"] for e in w.events()[1:]] == [2, 3, 4, 5, 6, 7]


@pytest.mark.asyncio
async def test_a_turn_end_is_written_as_it_is_published() -> None:
    """A `complete` does not wait for the writer task's next turn of the loop; what was queued before it goes
    first, in order."""
    hub = Hub()
    _, w = await reading_client(hub)
    hub.publish(ev("s", "replace", turn_id="t1", text="a"))
    hub.publish(ev("s", "complete", turn_id="t1", content="a"))
    assert [e["event"] for e in w.events()] == ["monitor_ready", "replace", "complete"]  # no await between
    w.closed = True  # the connection is going: nothing more is written from publish
    hub.publish(ev("s", "complete", turn_id="t2", content="b"))
    assert [e["event"] for e in w.events()][-1] == "complete" and len(w.events()) == 3


@pytest.mark.asyncio
async def test_a_peer_that_stops_reading_after_a_turn_end_written_at_once_is_cut_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The bytes a turn end left in the transport are timed like the writer task's own: a peer that reads
    nothing more is still cut off with `slow_consumer`, even with nothing else queued for it."""
    monkeypatch.setattr(hubmod, "STALL_AFTER", 0.2)
    hub = Hub()
    c, w = await reading_client(hub)
    w.gate.clear()  # the peer stops reading
    hub.publish(ev("s", "complete", turn_id="t1", content="a"))
    assert w.events()[-1]["event"] == "complete" and not c._queue
    for _ in range(100):
        if c.closed:
            break
        await asyncio.sleep(0.02)
    assert c.closed and c not in hub.clients
    assert orjson.loads(bytes(w.data).splitlines()[-1])["code"] == "slow_consumer"


@pytest.mark.asyncio
async def test_replay_gap_names_what_left_the_ring() -> None:
    hub = Hub(buffer=5)
    keeper = Client(hub, FakeWriter(), "k")  # type: ignore[arg-type]
    keeper.start()
    hub.attach(keeper, greet)
    for i in range(12):
        hub.publish(ev("s", n=i))  # ring keeps 8..12
    c = Client(hub, FakeWriter(), "c")  # type: ignore[arg-type]
    c.start()
    hub.attach(c, greet)
    assert hub.gap(2, c) == (3, 7)
    assert hub.gap(7, c) is None
    assert hub.gap(12, c) is None


@pytest.mark.asyncio
async def test_superseded_replaces_leave_the_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stuck client's queue holds each session's newest replace, not one (blanked) entry per event."""
    monkeypatch.setattr(hubmod, "COALESCE_AT", 5)
    hub = Hub()
    c, _ = await stuck_client(hub)
    for i in range(20000):
        hub.publish(ev(f"s{i % 3}", "replace", text="y" * 100))
    assert not c.closed
    assert len(c._queue) < 200, len(c._queue)
    assert c._bytes < 200 * 150


@pytest.mark.asyncio
async def test_queued_bytes_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hubmod, "MAX_QUEUE_BYTES", 100_000)
    hub = Hub()
    c, w = await stuck_client(hub)
    for _ in range(30):  # 30 entries: far below the entry limit
        hub.publish(ev("s", "tool_result", content="z" * 10_000))
    assert c.closed and c not in hub.clients
    err = orjson.loads(bytes(w.data).splitlines()[-1])
    assert err["code"] == "slow_consumer" and "bytes" in err["message"]


@pytest.mark.asyncio
async def test_a_client_that_reads_nothing_for_too_long_is_cut_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stall check runs on a timer: a client stuck with an event waiting is cut even when no later event
    comes (a session that stopped producing)."""
    monkeypatch.setattr(hubmod, "STALL_AFTER", 0.2)
    hub = Hub()
    c, w = await stuck_client(hub)
    hub.publish(ev("s", "replace", text="a"))
    for _ in range(100):
        if c.closed:
            break
        await asyncio.sleep(0.02)
    assert c.closed and c not in hub.clients
    assert "nothing read" in orjson.loads(bytes(w.data).splitlines()[-1])["message"]


@pytest.mark.asyncio
async def test_a_superseded_unsent_replace_leaves_the_queue_at_once() -> None:
    """However short the queue, only the newest unsent `replace` of a turn stays; a turn's end starts anew
    (the last `replace` of a finished turn is kept), and the order of everything else is unchanged."""
    hub = Hub()
    c, w = await stuck_client(hub)
    for i in range(3):
        hub.publish(ev("s", "replace", text=f"a{i}"))
    hub.publish(ev("t", "replace", text="other"))
    hub.publish(ev("s", "tool_use", tool="x"))
    hub.publish(ev("s", "replace", text="a3"))
    hub.publish(ev("s", "complete", content="a3!"))
    hub.publish(ev("s", "replace", text="b0"))
    hub.publish(ev("s", "replace", text="b1"))
    assert c._live == 5
    w.gate.set()
    await settle()
    got = [(e["event"], e.get("text"), e["seq"]) for e in w.events()[1:]]
    assert got == [
        ("replace", "other", 4),
        ("tool_use", None, 5),
        ("replace", "a3", 6),
        ("complete", None, 7),
        ("replace", "b1", 9),
    ], got


@pytest.mark.asyncio
async def test_a_replay_is_trimmed_to_the_queue_and_the_rest_is_a_gap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A replay larger than the client's byte cap is not a cut-off: the newest events that fit are replayed
    and `gap` names the older ones."""
    monkeypatch.setattr(hubmod, "MAX_QUEUE_BYTES", 200_000)
    monkeypatch.setattr(hubmod, "REPLAY_SLACK_BYTES", 1_000)
    hub = Hub()
    keeper = Client(hub, FakeWriter(), "k")  # type: ignore[arg-type]
    keeper.start()
    hub.attach(keeper, greet)  # someone listens: nothing is buffered for the next client
    for i in range(20):
        hub.publish(ev("s", "tool_result", content=f"{i}" + "z" * 20_000))  # ~20 kB each, 400 kB in all
        await settle()
    w = FakeWriter()
    c = Client(hub, w, "c")  # type: ignore[arg-type]
    c.start()
    hub.attach(c, greet)
    gap = hub.gap(0, c)
    n = hub.replay(c, 0)
    assert not c.closed
    assert gap is not None and gap[0] == 1 and 5 <= n < 10 and gap[1] == 20 - n, (gap, n)
    await settle()
    assert [e["seq"] for e in w.events()[1:]] == list(range(21 - n, 21))


@pytest.mark.asyncio
async def test_events_buffered_beyond_the_queue_stay_replayable() -> None:
    """Events buffered while nobody listened that do not fit a new client's queue are not a cut-off: it gets
    the newest, and a hello{since_seq} names the older ones as a gap (or replays them once there is room)."""
    hub = Hub()
    for i in range(20):
        hub.publish(ev("s", "tool_result", content=f"{i}" + "z" * 20_000))
    w = FakeWriter()
    c = Client(hub, w, "c")  # type: ignore[arg-type]
    c.start()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(hubmod, "MAX_QUEUE_BYTES", 200_000)
        mp.setattr(hubmod, "REPLAY_SLACK_BYTES", 1_000)
        n = hub.attach(c, greet)
        assert not c.closed and 5 <= n < 10
        assert hub.gap(0, c) == (1, 20 - n)
    await settle()
    assert [e["seq"] for e in w.events()[1:]] == list(range(21 - n, 21))
    assert hub.replay(c, 0) == 20 - n  # room again (the default cap): the rest comes too


@pytest.mark.asyncio
async def test_replies_reach_an_unsubscribed_asker() -> None:
    hub = Hub()
    w = FakeWriter()
    c = Client(hub, w, "c")  # type: ignore[arg-type]
    c.start()
    hub.attach(c, greet)
    c.subscribed = {"a"}
    c.expect_reply("b", 7)
    hub.publish(ev("b", "input_sent", re=7))
    hub.publish(ev("b", "state"))  # not a reply: filtered as before
    hub.publish(ev("b", "input_sent", re=8))  # someone else's reply
    await settle()
    assert [(e["event"], e.get("re")) for e in w.events()[1:]] == [("input_sent", 7)]


# ---------------------------------------------------------------------------------------------- deltas


def rebuild(events: list[dict[str, Any]]) -> dict[str, str]:
    """A delta client's view: turn_id -> text, applying `append` (cut to offset, then add) and `replace`."""
    texts: dict[str, str] = {}
    for e in events:
        if e["event"] == "append":
            have = texts.get(e["turn_id"], "")
            assert e["offset"] <= len(have), f"offset past the text this client has: {e}"
            texts[e["turn_id"]] = have[: e["offset"]] + e["text"]
        elif e["event"] == "replace":
            texts[e["turn_id"]] = e["text"]
    return texts


def delta_client(hub: Hub, name: str = "d") -> tuple[Client, FakeWriter]:
    w = FakeWriter()
    c = Client(hub, w, name)  # type: ignore[arg-type]
    c.set_deltas(True)
    c.start()
    hub.attach(c, greet)
    return c, w


def checked(w: FakeWriter) -> list[dict[str, Any]]:
    """The writer's events after monitor_ready, each validated against the protocol schema."""
    from lbd_helpers import check_event

    got = w.events()[1:]
    for e in got:
        check_event(e)
    return got


# A turn's texts as a CLI redraws them: growth, a rewrite of earlier text, multi-byte characters, a rewrite
# back to a shorter text, then growth again.
TEXTS = ["He", "Hello", "Hello wor", "Hello world\n", "Hallo world\nsecond ✓ line", "Hallo", "Hallo 🌍 end"]


@pytest.mark.asyncio
async def test_a_delta_client_gets_appends_and_a_replace_client_the_same_bytes_as_before() -> None:
    hub = Hub()
    old_w = FakeWriter()
    old = Client(hub, old_w, "old")  # type: ignore[arg-type]
    old.start()
    hub.attach(old, greet)
    _, w = delta_client(hub)
    published: list[bytes] = []
    for i, t in enumerate(TEXTS):
        event = ev("s", "replace", text=t, turn_id="t1")
        hub.publish(event)
        published.append(hubmod.encode(event))
        await settle()
        assert rebuild(checked(w)) == {"t1": t}, i
    hub.publish(ev("s", "complete", content=TEXTS[-1], turn_id="t1"))
    hub.publish(ev("s", "replace", text="next", turn_id="t2"))
    await settle()
    assert bytes(old_w.data).splitlines(keepends=True)[1 : len(TEXTS) + 1] == published, "replace unchanged"
    got = checked(w)
    assert [e["event"] for e in got] == ["append"] * len(TEXTS) + ["complete", "append"]
    assert [e["seq"] for e in got] == list(range(1, len(TEXTS) + 3)), "the replace's own seq"
    assert [(e["offset"], e["text"]) for e in got[:4]] == [(0, "He"), (2, "llo"), (5, " wor"), (9, "ld\n")]
    assert (got[4]["offset"], got[5]["offset"]) == (1, 5), "a rewrite cuts back to the common prefix"
    assert (got[-1]["offset"], got[-1]["text"], got[-1]["turn_id"]) == (0, "next", "t2")
    assert rebuild(got) == {"t1": TEXTS[-1], "t2": "next"}


@pytest.mark.asyncio
async def test_a_slow_delta_client_gets_one_merged_append_with_the_right_text() -> None:
    """Updates coalesced away while the client read nothing leave as one `append` against what it was
    really sent (never against an update it did not get), rewrites included."""
    hub = Hub()
    _, fast_w = delta_client(hub, "fast")
    slow_w = FakeWriter()
    slow = Client(hub, slow_w, "slow")  # type: ignore[arg-type]
    slow.set_deltas(True)
    slow.start()
    hub.attach(slow, greet)
    await settle()
    hub.publish(ev("s", "replace", text="line 1\n", turn_id="t"))
    await settle()
    slow_w.gate.clear()  # stuck from here on: its next line is written, then nothing drains
    hub.publish(ev("s", "replace", text="line 1\nline 2\n", turn_id="t"))
    await settle()
    final = "line 1\n"
    for i in range(2, 300):
        if i == 150:
            final = final.replace("line 2\n", "LINE 2\n")  # one rewrite of earlier text on the way
        final += f"line {i}\n"
        hub.publish(ev("s", "replace", text=final, turn_id="t"))
        await settle()
    assert slow._live == 1, "one replace queued, not a backlog"
    slow_w.gate.set()
    hub.publish(ev("s", "state"))
    await settle()
    got = checked(slow_w)
    assert [e["event"] for e in got] == ["append", "append", "append", "state"]
    assert got[2]["offset"] == len("line 1\n"), "cut back to what it has that still stands"
    assert rebuild(got) == {"t": final}
    assert rebuild(checked(fast_w)) == {"t": final}


@pytest.mark.asyncio
async def test_a_delta_client_reconnecting_with_since_seq_rebuilds_the_text() -> None:
    """Replayed (and buffered) `replace`s leave the ring as `append` from offset 0: a new connection has been
    sent nothing; the live updates after them are deltas against that."""
    hub = Hub()
    first, first_w = delta_client(hub, "first")
    hub.publish(ev("s", "accepted", turn_id="t"))
    for n in range(1, 6):
        hub.publish(ev("s", "replace", text="x" * n, turn_id="t"))
    await settle()
    seen = checked(first_w)
    first.close()  # gone; the client remembers seq 6 and its text
    for n in range(6, 9):
        hub.publish(ev("s", "replace", text="x" * n, turn_id="t"))  # buffered: nobody listens
    keeper = Client(hub, FakeWriter(), "k")  # type: ignore[arg-type]
    keeper.start()
    hub.attach(keeper, greet)
    hub.publish(ev("s", "replace", text="x" * 9 + "y", turn_id="t"))  # delivered to keeper only
    w = FakeWriter()
    again = Client(hub, w, "again")  # type: ignore[arg-type]
    again.start()
    again.hold()
    hub.attach(again, greet)
    again.set_deltas(True)
    hub.replay(again, seen[-1]["seq"])
    again.release()
    hub.publish(ev("s", "replace", text="x" * 9 + "yz", turn_id="t"))
    await settle()
    got = checked(w)
    assert [(e["event"], e.get("offset")) for e in got] == [("append", 0), ("append", 10)]
    assert rebuild(seen + got) == {"t": "x" * 9 + "yz"}
    # the buffered flush (nobody listened) also starts from offset 0
    keeper.close()
    again.close()
    hub.publish(ev("s", "replace", text="x" * 9 + "yz!", turn_id="t"))
    late, late_w = delta_client(hub, "late")
    late.release()
    await settle()
    assert [(e["event"], e["offset"], e["text"]) for e in checked(late_w)] == [("append", 0, "x" * 9 + "yz!")]


def test_common_prefix() -> None:
    for a, b in [
        ("", ""),
        ("abc", "abd"),
        ("abc", "abcdef"),
        ("abcdef", "abc"),
        ("x" * 1000 + "a", "x" * 1000),
    ]:
        n = hubmod.common_prefix(a, b)
        assert a[:n] == b[:n] and (n == min(len(a), len(b)) or a[n] != b[n]), (a[:5], b[:5], n)


@pytest.mark.asyncio
async def test_a_turns_end_is_written_at_once_with_what_was_queued_before_it() -> None:
    """A `complete` leaves in the call that published it, after the events queued before it and in their order,
    without waiting for the writer task's turn of the loop; other events wait for that turn (one write for
    all of them)."""
    hub = Hub()
    w = FakeWriter()
    c = Client(hub, w, "t")  # type: ignore[arg-type]
    c.start()
    hub.attach(c, greet)
    await settle()
    assert len(w.events()) == 1
    hub.publish(ev("s", "replace", turn_id="t1", text="hel"))
    hub.publish(ev("s", "thinking", text="…"))
    assert len(w.events()) == 1, "ordinary events wait for the writer task"
    hub.publish(ev("s", "complete", turn_id="t1", content="hello"))
    got = w.events()
    assert [e["event"] for e in got[1:]] == ["replace", "thinking", "complete"]
    assert [e["seq"] for e in got[1:]] == [1, 2, 3]
    await settle()
    assert len(w.events()) == 4, "nothing is written twice"
    c.close()


@pytest.mark.asyncio
async def test_a_turns_end_waits_its_turn_behind_a_peer_that_does_not_read_or_a_held_client() -> None:
    hub = Hub()
    c, w = await stuck_client(hub)  # its transport still holds the greeting
    hub.publish(ev("s", "complete", turn_id="t1", content="x"))
    assert [e["event"] for e in w.events()] == ["monitor_ready"], "the writer task waits for the drain first"
    w.gate.set()
    await settle()
    assert [e["event"] for e in w.events()] == ["monitor_ready", "complete"]
    c.close()

    w2 = FakeWriter()
    held = Client(hub, w2, "h")  # type: ignore[arg-type]
    held.start()
    held.hold()
    hub.attach(held, greet)
    hub.publish(ev("s", "complete", turn_id="t2", content="y"))
    await settle()
    assert [e["event"] for e in w2.events()] == ["monitor_ready"], "held until its first command"
    held.release()
    await settle()
    assert [e["event"] for e in w2.events()][-1] == "complete"
    held.close()
