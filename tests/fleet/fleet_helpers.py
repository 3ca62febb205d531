"""Raw nats-py helpers for the fleet tests: requests to a daemon, reading the whole stream, the registry."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import nats.js.errors
import orjson
from lbd_helpers import Conn, check_event

from litbridge.fleet import subjects

FLEET = subjects.DEFAULT_FLEET
WAIT = 60.0  # generous: the test box is loaded
T = TypeVar("T")


@dataclass
class TlsFiles:
    """A throwaway CA and a server certificate (with its key) for 127.0.0.1 and localhost, as PEM files (the
    `tls_files` fixture)."""

    ca: Path
    cert: Path
    key: Path


async def request(nc: Any, daemon: str, cmd: dict[str, Any], timeout: float = 60.0) -> list[dict[str, Any]]:
    """One command over NATS request/reply -> the reply's events (each checked against the schema)."""
    msg = await nc.request(subjects.command(FLEET, daemon), orjson.dumps(cmd), timeout=timeout)
    events = orjson.loads(msg.data)
    assert isinstance(events, list), msg.data
    for ev in events:
        check_event(ev)
    return events


async def joined(nc: Any, *daemons: str, timeout: float = WAIT) -> None:
    """Wait until each daemon answers a ping over NATS (they connect in the background after starting)."""
    import nats

    deadline = time.monotonic() + timeout
    for daemon in daemons:
        while True:
            try:
                reply = await request(nc, daemon, {"cmd": "ping"}, timeout=5)
                assert reply[0]["event"] == "pong", reply
                break
            except (nats.errors.NoRespondersError, nats.errors.TimeoutError):
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)


@contextlib.asynccontextmanager
async def nats_client(url: str, *daemons: str) -> AsyncIterator[tuple[Any, Any]]:
    """A raw NATS connection and its JetStream context, once each daemon answers over it (see `joined`); it
    reconnects for as long as it is open (tests restart the server), and is closed at the end."""
    import nats

    nc = await nats.connect(url, max_reconnect_attempts=-1, reconnect_time_wait=0.5)
    try:
        await joined(nc, *daemons)
        yield nc, nc.jetstream()
    finally:
        await nc.close()


@contextlib.asynccontextmanager
async def local_socket(socket_path: str) -> AsyncIterator[Conn]:
    """A connection to a daemon's own Unix socket, past its `monitor_ready`; closed at the end."""
    conn = await Conn.open(socket_path)
    try:
        await conn.wait("monitor_ready")
        yield conn
    finally:
        await conn.close()


async def turn(conn: Conn, session: str, content: str, timeout: float = WAIT) -> dict[str, Any]:
    """Send `content` to `session` over `conn` and wait for its `complete`."""
    await conn.request({"cmd": "send", "session": session, "content": content}, "accepted")
    return await conn.wait("complete", timeout=timeout)


class Stored:
    """One stream message: subject, headers, raw body and the decoded event."""

    def __init__(self, msg: Any) -> None:
        self.subject: str = msg.subject
        self.headers: dict[str, str] = dict(msg.headers or {})
        self.data: bytes = msg.data
        self.event: dict[str, Any] = orjson.loads(msg.data)
        check_event(self.event)
        self.daemon = subjects.parse_event_subject(self.subject)[1]

    def __repr__(self) -> str:
        return f"Stored({self.subject}, {self.headers}, {self.data!r})"


async def read_stream(js: Any) -> list[Stored]:
    """Every message in the fleet's stream, in stream order (direct gets by stream sequence)."""
    name = subjects.stream(FLEET)
    info = await js.stream_info(name)
    out = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        try:
            msg = await js.get_msg(name, seq)
        except Exception:  # a deleted message (none expected)
            continue
        out.append(Stored(msg))
    return out


async def _wait(
    read: Callable[[], Awaitable[T]],
    pred: Callable[[T], bool],
    timeout: float,
    what: str,
    shown: Callable[[T], str],
) -> T:
    """Read until `pred` holds; fail naming `what` and (`shown`) the last read."""
    deadline = time.monotonic() + timeout
    got: T | None = None
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):  # the server may be restarting: the deadline reports
            got = await read()
            if pred(got):
                return got
        await asyncio.sleep(0.3)
    raise AssertionError(
        f"{what}: condition not met in {timeout}s; {shown(got) if got is not None else 'nothing read'}"
    )


async def wait_stream(
    js: Any, pred: Callable[[list[Stored]], bool], timeout: float = WAIT, what: str = "stream"
) -> list[Stored]:
    return await _wait(
        lambda: read_stream(js), pred, timeout, what, lambda got: f"last messages: {got[-10:]}"
    )


async def registry(js: Any) -> dict[str, dict[str, Any]]:
    """Every key of the fleet's KV registry -> its JSON value. A read that fails (a request timed out on a
    loaded machine, the server restarting) raises rather than returning what it got so far: an empty or partial
    registry would satisfy a predicate about what is gone (`wait_registry` reads again)."""
    kv = await js.key_value(subjects.bucket(FLEET))
    out: dict[str, dict[str, Any]] = {}
    try:
        keys = await kv.keys()
    except nats.js.errors.NoKeysError:  # an empty bucket
        return out
    for key in keys:
        try:
            entry = await kv.get(key)
        except nats.js.errors.KeyNotFoundError:  # deleted since it was listed
            continue
        if entry.value:
            out[key] = orjson.loads(entry.value)
    return out


async def wait_registry(
    js: Any, pred: Callable[[dict[str, dict[str, Any]]], bool], timeout: float = WAIT, what: str = "registry"
) -> dict[str, dict[str, Any]]:
    return await _wait(lambda: registry(js), pred, timeout, what, lambda got: f"registry: {got}")


def completes(stored: list[Stored], daemon: str, marker: str) -> list[Stored]:
    """The `complete` events of `daemon` whose answer holds `marker`."""
    return [
        m
        for m in of_daemon(stored, daemon)
        if m.event["event"] == "complete" and marker in (m.event.get("content") or "")
    ]


def of_daemon(stored: list[Stored], daemon: str) -> list[Stored]:
    return [m for m in stored if m.daemon == daemon]


def check_order(stored: list[Stored], daemon_id: str) -> list[int]:
    """One daemon's events: seqs strictly increasing (so no duplicates), headers agreeing with the body."""
    seqs = []
    for m in stored:
        seq = m.event.get("seq")
        if m.event["event"] == "replay_gap":  # its headers name the seqs it stands for, and the run
            assert m.subject.endswith("._"), m
            assert m.headers[subjects.MSG_ID] == f"{daemon_id}:gap:{m.event['from_seq']}", m
            assert m.headers[subjects.SEQ_HEADER] == str(m.event["from_seq"]), m
            assert m.headers[subjects.TO_SEQ_HEADER] == str(m.event["to_seq"]), m
            continue
        assert m.headers[subjects.MSG_ID] == f"{daemon_id}:{seq}", m
        assert m.headers[subjects.SEQ_HEADER] == str(seq), m
        assert m.subject == subjects.event(FLEET, m.daemon, m.event.get("session")), m
        seqs.append(seq)
    assert seqs == sorted(set(seqs)), f"seqs out of order or repeated: {seqs}"
    return seqs
