"""The daemon side of fleet mode against a real nats-server: `litbridge serve --nats` publishes every event to
the JetStream stream (seq order, Nats-Msg-Id dedupe, surviving a server restart and reporting a ring overflow
as `replay_gap`), answers commands by request/reply through its own handler, and keeps the KV registry."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import subprocess
import sys
import threading
import time

import nats
import pytest
from fleet_helpers import (
    FLEET,
    check_order,
    completes,
    local_socket,
    nats_client,
    of_daemon,
    read_stream,
    request,
    turn,
    wait_registry,
    wait_stream,
)
from lbd_helpers import Conn, bash_create

from litbridge.fleet import subjects

pytestmark = pytest.mark.timeout(300)


@pytest.mark.asyncio
async def test_three_daemons_driven_over_nats(nats_server, fleet_daemons):
    names = [d.name for d in fleet_daemons(3)]
    async with nats_client(nats_server.url, *names) as (nc, js):
        # create + send on every daemon through request/reply: the same commands and replies as the socket
        for name in names:
            reply = await request(nc, name, bash_create("w.1 *>", id="c1"))  # a key that needs encoding
            assert [e["event"] for e in reply] == ["ready"] and reply[0]["re"] == "c1", reply
            reply = await request(
                nc, name, {"cmd": "send", "session": "w.1 *>", "content": f"echo fleet-{name}"}
            )
            assert reply[0]["event"] == "accepted" and reply[0]["re"].startswith("nats-"), reply
        stored = await wait_stream(
            js, lambda got: all(completes(got, n, f"fleet-{n}") for n in names), what="three turns complete"
        )
        reg = await wait_registry(
            js,
            lambda r: all(r.get(subjects.session_key(n, "w.1 *>"), {}).get("state") == "idle" for n in names),
            what="sessions idle in the registry",
        )
        for name in names:
            info = reg[subjects.daemon_key(name)]
            assert info["daemon"] == name and info["sessions"] == 1 and info["ttl"] > 0, info
            sess = reg[subjects.session_key(name, "w.1 *>")]
            assert (sess["name"], sess["cli"], sess["cwd"], sess["question"]) == (
                "w.1 *>",
                "bash",
                "/tmp",
                None,
            )
            mine = of_daemon(stored, name)
            seqs = check_order(mine, info["daemon_id"])
            kinds = [m.event["event"] for m in mine]
            assert kinds.index("ready") < kinds.index("accepted") < kinds.index("complete"), kinds
            assert seqs[0] == 1, seqs  # from the daemon's first event on
            assert all(m.subject == f"litbridge.{FLEET}.ev.{name}.w=2E1=20=2A=3E" for m in mine)
        # direct replies, validation and errors as on the socket; the daemon survives them
        listed = await request(nc, "d1", {"cmd": "list", "id": 7})
        assert listed[0]["event"] == "sessions" and listed[0]["re"] == 7
        assert [s["name"] for s in listed[0]["sessions"]] == ["w.1 *>"]
        bad = await request(nc, "d1", {"cmd": "send"})
        assert bad[0]["event"] == "error" and bad[0]["code"] == "bad_field", bad
        msg = await nc.request(subjects.command(FLEET, "d1"), b'{"cmd": "list"', timeout=30)
        assert b'"bad_json"' in msg.data
        missing = await request(nc, "d1", {"cmd": "kill", "session": "nope"})
        assert missing[0]["code"] == "session_not_found", missing
        killed = await request(nc, "d1", {"cmd": "kill", "session": "w.1 *>", "id": "k"})
        assert [e["event"] for e in killed] == ["killed"] and killed[0]["re"] == "k", killed
        await wait_registry(
            js,
            lambda r: subjects.session_key("d1", "w.1 *>") not in r,
            what="killed session leaves the registry",
        )
        assert (await request(nc, "d1", {"cmd": "ping"}))[0]["event"] == "pong"


@pytest.mark.asyncio
async def test_same_msg_id_is_stored_once(nats_server, fleet_daemons):
    (d,) = fleet_daemons(1)
    async with nats_client(nats_server.url, d.name) as (nc, js):
        await request(nc, d.name, bash_create("dup"))
        stored = await wait_stream(js, lambda got: any(m.event["event"] == "ready" for m in got))
        first = stored[0]
        before = (await js.stream_info(subjects.stream(FLEET))).state.messages
        # the daemon's retry after a lost ack publishes the same seq again with the same Nats-Msg-Id
        ack = await js.publish(first.subject, first.data, headers=first.headers)
        assert ack.duplicate, ack
        after = (await js.stream_info(subjects.stream(FLEET))).state.messages
        assert after == before
        seqs = [m.event["seq"] for m in await read_stream(js)]
        assert len(seqs) == len(set(seqs)), seqs


@pytest.mark.asyncio
async def test_killed_daemon_leaves_the_registry_others_stay(nats_server, fleet_daemons):
    daemons = fleet_daemons(3)
    async with nats_client(nats_server.url, *(d.name for d in daemons)) as (nc, js):
        for d in daemons:
            await request(nc, d.name, bash_create("s"))
        await wait_registry(
            js, lambda r: all(subjects.session_key(d.name, "s") in r for d in daemons), what="three sessions"
        )
        daemons[1].kill()
        t0 = time.time()

        def fresh(r, name):
            info = r.get(subjects.daemon_key(name))
            return info is not None and time.time() - info["ts"] <= info["ttl"]

        # its sessions stay listed (the client shows them unavailable) while its own entry goes stale
        reg = await wait_registry(
            js,
            lambda r: subjects.session_key("d1", "s") in r and not fresh(r, "d1"),
            timeout=60,
            what="d1 gone, its session listed",
        )
        gone_after = time.time() - t0
        reg = await wait_registry(js, lambda r: fresh(r, "d0") and fresh(r, "d2"), what="d0, d2 fresh")
        assert reg[subjects.daemon_key("d0")]["sessions"] == 1
        for name in ("d0", "d2"):
            assert (await request(nc, name, {"cmd": "ping"}))[0]["event"] == "pong"
        # a command to a dead daemon fails at once (no responders) or after the request timeout
        with pytest.raises((nats.errors.NoRespondersError, nats.errors.TimeoutError)):
            await request(nc, "d1", {"cmd": "ping"}, timeout=5)
        with pytest.raises((nats.errors.NoRespondersError, nats.errors.TimeoutError)):
            await request(nc, "never-was", {"cmd": "ping"}, timeout=5)
        # the bound, here with the fixture's shorter TTL (test_fleet_client.py's
        # test_dead_daemon_listed_unavailable_and_commands_name_it times it with the production TTL)
        assert gone_after <= 15.0, gone_after
        # started again under its name, it clears the entries its killed run left
        fleet_daemons(1, names=["d1"])
        reg = await wait_registry(
            js,
            lambda r: fresh(r, "d1") and subjects.session_key("d1", "s") not in r,
            what="d1 back without its old session",
        )
        assert subjects.session_key("d0", "s") in reg and subjects.session_key("d2", "s") in reg


@pytest.mark.asyncio
async def test_nats_restart_mid_turn_loses_and_repeats_nothing(nats_server, fleet_daemons):
    (d,) = fleet_daemons(1)
    async with nats_client(nats_server.url, d.name) as (nc, js):
        conn = await Conn.open(d.socket)
        await conn.wait("monitor_ready")
        await request(nc, d.name, bash_create("r"))
        script = "for i in 1 2 3 4 5 6 7 8 9 10; do echo line-$i; sleep 0.4; done; echo turn-done"
        reply = await request(nc, d.name, {"cmd": "send", "session": "r", "content": script})
        assert reply[0]["event"] == "accepted"
        nats_server.stop()  # mid-turn: the daemon keeps running, its events wait in the ring
        complete = await conn.wait("complete", timeout=60)
        assert "turn-done" in complete["content"]
        await conn.request({"cmd": "ping"}, "pong")  # the socket never noticed
        nats_server.start()  # same store: the history before the outage is still there
        stored = await wait_stream(
            js, lambda got: completes(got, d.name, "turn-done"), what="turn after restart"
        )
        daemon_id = stored[0].headers[subjects.MSG_ID].split(":")[0]
        seqs = check_order(stored, daemon_id)
        assert seqs[0] == 1
        # everything the socket can replay is in the stream, byte for byte; the stream's extras are replaces a
        # newer replace superseded in the ring after they were published
        await conn.close()
        replay = await Conn.open(d.socket)
        await replay.wait("monitor_ready")
        await replay.request({"cmd": "hello", "since_seq": 0}, "capabilities")
        ring = {e["seq"]: e for e in replay.events if "seq" in e}
        by_seq = {m.event["seq"]: m.event for m in stored}
        assert not any(e["event"] == "replay_gap" for e in replay.events)
        for seq, ev in ring.items():
            assert by_seq.get(seq) == ev, (seq, ev, by_seq.get(seq))
        extra = {by_seq[s]["event"] for s in set(by_seq) - set(ring)}
        assert extra <= {"replace"}, extra
        await replay.close()


@pytest.mark.asyncio
async def test_ring_overflow_while_nats_is_down_is_a_replay_gap(nats_server, fleet_daemons):
    (d,) = fleet_daemons(1, env={"LITBRIDGE_RING_BYTES": "3000"})
    async with nats_client(nats_server.url, d.name) as (nc, js):
        async with local_socket(d.socket) as conn:
            await request(nc, d.name, bash_create("g"))
            await wait_stream(js, lambda got: any(m.event["event"] == "ready" for m in got))
            nats_server.stop()
            for i in range(8):  # driven over the local socket meanwhile: far more than 3000 bytes of events
                await turn(conn, "g", f"echo {'x' * 200}-{i}")
            nats_server.start()
            stored = await wait_stream(
                js, lambda got: completes(got, d.name, "-7"), what="last turn after restart"
            )
            gaps = [m for m in stored if m.event["event"] == "replay_gap"]
            assert len(gaps) == 1, gaps
            gap = gaps[0]
            assert gap.subject == subjects.event(FLEET, d.name, None)
            daemon_id = stored[0].headers[subjects.MSG_ID].split(":")[0]
            seqs = check_order(stored, daemon_id)
            lo, hi = gap.event["from_seq"], gap.event["to_seq"]
            assert lo <= hi and not any(lo <= s <= hi for s in seqs), (lo, hi, seqs)
            assert max(seqs) > hi  # publishing went on after the gap
            # the gap sits where it happened: after every event below it, before every event above it
            where = stored.index(gap)
            assert all(m.event["seq"] < lo for m in stored[:where] if "seq" in m.event)
            assert all(m.event["seq"] > hi for m in stored[where + 1 :] if "seq" in m.event)


@pytest.mark.asyncio
async def test_env_over_plaintext_nats_is_refused(nats_server, fleet_daemons):
    (d,) = fleet_daemons(1, allow_plaintext_env=False)
    async with nats_client(nats_server.url, d.name) as (nc, _):
        reply = await request(nc, d.name, bash_create("e", id="e1"))
        assert reply[0]["event"] == "error" and reply[0]["code"] == "bad_field" and reply[0]["re"] == "e1"
        assert "TLS" in reply[0]["message"]
        assert (await request(nc, d.name, {"cmd": "list"}))[0]["sessions"] == []
        create = bash_create("e")
        del create["env"]
        assert (await request(nc, d.name, create))[0]["event"] == "ready"


@pytest.mark.asyncio
async def test_stream_limits_from_flags_and_a_deleted_stream_comes_back(nats_server, fleet_daemons):
    (d,) = fleet_daemons(1, "--nats-max-age", "3600", "--nats-max-bytes", "5000000")
    async with nats_client(nats_server.url, d.name) as (nc, js):
        info = await js.stream_info(subjects.stream(FLEET))
        assert (info.config.max_age, info.config.max_bytes) == (3600, 5000000)
        assert (
            getattr(info.config.storage, "value", info.config.storage) == "file"
            and info.config.duplicate_window == 120
        )
        await request(nc, d.name, bash_create("z"))
        await wait_stream(js, lambda got: any(m.event["event"] == "ready" for m in got))
        await js.delete_stream(subjects.stream(FLEET))  # an operator's mistake: the daemon makes it again
        reply = await request(nc, d.name, {"cmd": "send", "session": "z", "content": "echo back-again"})
        assert reply[0]["event"] == "accepted"
        await wait_stream(
            js, lambda got: completes(got, d.name, "back-again"), what="events after re-creation"
        )


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--nats", "http://127.0.0.1:1"], "expected nats://"),
        (["--nats", "nats://127.0.0.1:1", "--daemon-id", "a.b"], "daemon name 'a.b'"),
        (["--nats", "nats://127.0.0.1:1", "--fleet", "x y"], "fleet name 'x y'"),
        (["--nats", "nats://127.0.0.1:1", "--label", "novalue"], "KEY=VALUE"),
        (["--nats", "nats://127.0.0.1:1", "--nats-creds", "/nonexistent.creds"], "no such file"),
    ],
)
def test_bad_fleet_flags_are_refused_clearly(tmp_path, flags, said):
    out = subprocess.run(
        [sys.executable, "-m", "litbridge", "serve", "--socket", str(tmp_path / "s.sock"), *flags],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and said in out.stderr, out


@pytest.mark.asyncio
async def test_hello_since_seq_over_nats_replays_the_ring_within_the_reply(nats_server, fleet_daemons):
    (d,) = fleet_daemons(1)
    async with nats_client(nats_server.url, d.name) as (nc, _):
        await request(nc, d.name, bash_create("h"))
        reply = await request(nc, d.name, {"cmd": "hello", "since_seq": 0, "id": "h0"})
        kinds = [e["event"] for e in reply]
        assert kinds[-1] == "capabilities" and reply[-1]["replayed"] >= 1, reply
        assert "ready" in kinds and [e["seq"] for e in reply if "seq" in e] == sorted(
            e["seq"] for e in reply if "seq" in e
        )


@pytest.mark.asyncio
async def test_clean_stop_removes_its_registry_entries(nats_server, fleet_daemons):
    (d,) = fleet_daemons(1)
    async with nats_client(nats_server.url, d.name) as (nc, js):
        await request(nc, d.name, bash_create("bye"))
        await wait_registry(js, lambda r: subjects.session_key(d.name, "bye") in r, what="session listed")
        assert await asyncio.to_thread(d.stop) == 0, d.log()
        reg = await wait_registry(js, lambda r: True)
        assert not any(k.endswith(d.name) or f".{d.name}." in k for k in reg), reg


@pytest.mark.asyncio
@pytest.mark.parametrize("nats_config", ["max_payload: 8192\n"])
async def test_an_event_larger_than_max_payload_is_a_replay_gap(nats_server, fleet_daemons):
    (d,) = fleet_daemons(1)
    async with nats_client(nats_server.url, d.name) as (nc, js):
        async with local_socket(d.socket) as conn:
            await request(nc, d.name, bash_create("big"))
            script = "printf 'y%.0s' $(seq 1 12000); echo; echo small-after"
            await request(nc, d.name, {"cmd": "send", "session": "big", "content": script})
            big = await conn.wait("complete", timeout=60)
            assert len(big["content"]) > 8192
            await request(nc, d.name, {"cmd": "send", "session": "big", "content": "echo next-turn"})
            stored = await wait_stream(
                js, lambda got: completes(got, d.name, "next-turn"), what="the turn after"
            )
            gaps = [m.event for m in stored if m.event["event"] == "replay_gap"]
            assert {"event": "replay_gap", "from_seq": big["seq"], "to_seq": big["seq"]} in gaps, gaps
            assert big["seq"] not in [m.event.get("seq") for m in stored]
            check_order(stored, stored[0].headers[subjects.MSG_ID].split(":")[0])


@pytest.mark.asyncio
async def test_an_existing_stream_keeps_its_settings_only_flagged_limits_change(nats_server, fleet_daemons):
    """An administrator's stream (made beforehand with its own settings) is used as it is: a daemon without
    limit flags changes nothing, one with `--nats-max-age` changes that limit alone (replicas, description,
    message limits, duplicate window... are kept)."""
    from nats.js.api import StorageType, StreamConfig

    nc = await nats.connect(nats_server.url)
    try:
        js = nc.jetstream()
        await js.add_stream(
            StreamConfig(
                name=subjects.stream(FLEET),
                subjects=[subjects.events_all(FLEET)],
                storage=StorageType.FILE,
                description="made by the admin",
                max_msgs=123456,
                max_age=7200,
                max_bytes=50_000_000,
                duplicate_window=60,
            )
        )
        before = (await js.stream_info(subjects.stream(FLEET))).config
        await asyncio.to_thread(fleet_daemons, 1)
        await joined_and_published(nc, js, "d0")
        assert (await js.stream_info(subjects.stream(FLEET))).config == before  # no flags: left alone
        await asyncio.to_thread(fleet_daemons, 1, "--nats-max-age", "3600")
        await joined_and_published(nc, js, "d1")
        after = (await js.stream_info(subjects.stream(FLEET))).config
        assert after.max_age == 3600
        assert dataclasses.replace(after, max_age=before.max_age) == before, (before, after)
    finally:
        await nc.close()


async def joined_and_published(nc, js, daemon):
    """Once `daemon` answers and its session's `ready` is in the stream (its setup is over)."""
    from fleet_helpers import joined

    await joined(nc, daemon)
    await request(nc, daemon, bash_create("s"))
    await wait_stream(js, lambda got: any(m.daemon == daemon and m.event["event"] == "ready" for m in got))


class _SlowLink:
    """A TCP proxy to nats-server that delays everything the server sends by `delay` seconds (a long round
    trip) and stamps each event publish the daemon sends, in a thread of its own (the daemon fixture blocks)."""

    def __init__(self, target_port: int, delay: float, marker: bytes) -> None:
        self.delay, self.marker, self.target_port = delay, marker, target_port
        self.stamps: list[float] = []  # monotonic time of each event publish the daemon sent
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self.thread.start()
        ready.wait(10)

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(asyncio.start_server(self._conn, "127.0.0.1", 0))
        self.url = f"nats://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"
        ready.set()
        self.loop.run_forever()

    async def _conn(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_r, up_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        late: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def upstream() -> None:  # daemon -> server at once, counting event publishes
            tail = b""
            while data := await reader.read(65536):
                seen = tail + data
                self.stamps.extend([time.monotonic()] * seen.count(self.marker))
                tail = seen[-(len(self.marker) - 1) :]
                up_w.write(data)
                await up_w.drain()

        async def downstream() -> None:  # server -> daemon, each chunk `delay` later, in order
            while data := await up_r.read(65536):
                late.put_nowait((time.monotonic() + self.delay, data))
            late.put_nowait((0.0, b""))

        async def deliver() -> None:
            while True:
                due, data = await late.get()
                if not data:
                    break
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                writer.write(data)
                await writer.drain()

        with contextlib.suppress(Exception):
            await asyncio.gather(upstream(), downstream(), deliver())
        for w in (writer, up_w):
            w.close()

    def most_within(self, span: float) -> int:
        """The most event publishes sent within any `span` seconds."""
        best, lo = 0, 0
        for hi, t in enumerate(self.stamps):
            while t - self.stamps[lo] >= span:
                lo += 1
            best = max(best, hi - lo + 1)
        return best

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.mark.asyncio
async def test_a_burst_is_published_many_events_per_round_trip(nats_server, fleet_daemons):
    """Over a link with a 0.4 s round trip, a turn's burst of events leaves the daemon many per round trip (a
    window of publishes in flight), not one per ack; all of it reaches the stream in seq order."""
    delay = 0.4
    port = int(nats_server.url.rsplit(":", 1)[1])
    link = _SlowLink(port, delay, f"PUB {subjects.events_of(FLEET, 'd0')[:-1]}".encode())
    try:
        (d,) = fleet_daemons(1, url=lambda name: link.url)
        async with nats_client(nats_server.url, d.name) as (nc, js):
            await request(nc, d.name, bash_create("b"))
            script = "for i in $(seq 1 150); do echo burst-$i; sleep 0.01; done; echo burst-done"
            reply = await request(nc, d.name, {"cmd": "send", "session": "b", "content": script})
            assert reply[0]["event"] == "accepted"
            stored = await wait_stream(
                js, lambda got: completes(got, d.name, "burst-done"), what="the burst's turn", timeout=240
            )
            daemon_id = stored[0].headers[subjects.MSG_ID].split(":")[0]
            seqs = check_order(of_daemon(stored, d.name), daemon_id)
            assert seqs[0] == 1
            # one publish per ack would send at most one within any half round trip; a window sends many
            most = link.most_within(delay / 2)
            assert most >= 5, (most, len(link.stamps), len(seqs))
    finally:
        link.close()
