"""Event delivery: per-daemon `seq`, the replay ring, buffering while nobody listens, broadcast, slow clients.

`Hub.publish(event)` stamps a session event with `seq`, keeps it in a ring of the last `limits.buffer`
events and queues it for every subscribed client. Each `Client` has a bounded queue drained by its own
writer task: a `replace` not yet sent leaves the queue as soon as a newer `replace` of the same turn
supersedes it; past a limit (entries, bytes, or time without progress, checked on a timer) the client is
disconnected with `error{code:"slow_consumer"}`. Knows nothing of commands or sessions' internals.

Deltas: a client that asked for them (`hello{deltas:true}`, `Client.deltas`) gets each `replace` as an
`append` (the text cut to `offset`, then `text`), computed when the writer takes the entry off the queue,
against the text this connection was last *sent* for the turn: coalescing, a superseded entry or a replay
can never leave it with a wrong base. The queue, the ring and the limits only ever hold `replace` lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
from collections import deque
from collections.abc import Callable
from typing import Any

import orjson

from litbridge.daemon import memory
from litbridge.protocol import events as ev
from litbridge.protocol.framing import encode
from litbridge.protocol.spec import BUFFER_EVENTS

log = logging.getLogger(__name__)

# Queued entries past which a client's own commands wait (backpressure; the name is historical).
COALESCE_AT = int(os.environ.get("LITBRIDGE_CLIENT_COALESCE", "256"))
MAX_QUEUE = int(os.environ.get("LITBRIDGE_CLIENT_QUEUE", "10000"))
# Bytes a client may have queued (not yet handed to its socket); a single event larger than this still goes.
# Most lines are shared with the ring (they cost nothing extra); the cap bounds what a stuck client keeps
# alive beyond it. A replay is trimmed to fit (the client is told the rest with `replay_gap`).
MAX_QUEUE_BYTES = int(os.environ.get("LITBRIDGE_CLIENT_QUEUE_BYTES", str(8 * 1024 * 1024)))
# A client whose socket accepted nothing for this long while data waited for it is cut off: coalescing
# keeps the queue of a never-reading client short, so its length alone would never say "too slow".
STALL_AFTER = float(os.environ.get("LITBRIDGE_CLIENT_STALL", "15"))
# Seconds a cut-off client gets to read what was already handed to its socket (complete lines, then the
# `slow_consumer` error line) before the connection is aborted.
SLOW_ABORT_AFTER = 60.0
BATCH_BYTES = 256 * 1024  # one socket write: bounds what sits in the transport beyond the high-water mark
HOLD_EVENTS = 1.0  # seconds a new client's events wait for its first command (a hello{since_seq})


# Events that end a turn: a `replace` after one of them belongs to a new turn and supersedes nothing.
TURN_ENDS = frozenset(("complete", "interrupted", "turn_error", "killed", "exited"))


def common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix of `a` and `b` (C-speed compares, O(len) work in all)."""
    if b.startswith(a):
        return len(a)
    lo, hi = 0, min(len(a), len(b))  # a[:lo] == b[:lo]; the answer is at most hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class _Text:
    """A published `replace`'s text, for delta clients, with its `append` against the session's previous
    `replace` of the same turn (`base`, None for the first): encoded once, shared by every client whose last
    text of the turn is that very `base` object (a client that was sent every update)."""

    __slots__ = ("_line", "base", "channel_id", "seq", "session", "text", "turn_id")

    def __init__(self, event: dict[str, Any], base: str | None) -> None:
        self.session: str | None = event.get("session")
        self.channel_id: str | None = event.get("channel_id")
        self.turn_id: str | None = event.get("turn_id")
        self.seq: int | None = event.get("seq")
        self.text = str(event.get("text") or "")
        self.base = base
        self._line: bytes | None = None  # made by the first delta client that needs it (none: no cost)

    @classmethod
    def of_line(cls, line: bytes) -> _Text:
        """From a ring line (a replay, or events buffered while nobody listened): no shared base."""
        return cls(orjson.loads(line), None)

    def line(self, offset: int | None = None) -> bytes:
        """The `append` line: against `base` (cached), or from `offset` of this text."""
        if offset is None:
            if self._line is None:
                self._line = self._encode(0 if self.base is None else common_prefix(self.base, self.text))
            return self._line
        return self._encode(offset)

    def _encode(self, offset: int) -> bytes:
        out = ev.append(self.session or "", self.channel_id, self.turn_id, offset, self.text[offset:])
        if self.session is None:
            del out["session"]
        if self.seq is not None:
            out["seq"] = self.seq
        return encode(out)


class _Entry:
    __slots__ = ("kind", "line", "session", "text")

    def __init__(
        self, line: bytes | None, kind: str | None, session: str | None, text: _Text | None = None
    ) -> None:
        self.line, self.kind, self.session, self.text = line, kind, session, text


class Client:
    """One control connection's outbound side (a bounded, coalescing queue + writer task).

    Bounded three ways: entries (`MAX_QUEUE`), bytes (`MAX_QUEUE_BYTES`) and time without progress
    (`STALL_AFTER`); past any of them the client is cut off with `slow_consumer`. An unsent `replace` is
    dropped from the queue as soon as a newer `replace` of its turn arrives (it carries the whole text so
    far): a client that does not keep up holds one `replace` per running turn, not one per update. With
    `deltas` on, that one entry leaves as a single `append` merging every update it missed.
    """

    def __init__(self, hub: Hub, writer: asyncio.StreamWriter, peer: str, authed: bool = True) -> None:
        self.hub = hub
        self.writer = writer
        self.peer = peer
        self.authed = authed
        self.subscribed: set[str] | None = None  # None = every session
        self.covered_from = 0  # every event with seq >= covered_from (and subscribed) was queued for us
        self.closed = False
        self._queue: deque[_Entry] = deque()
        self._live = 0  # entries in the queue with a line
        self._blank = 0  # superseded entries still in the deque (compacted once they outnumber live ones)
        self._bytes = 0  # bytes of the live entries
        self._last_replace: dict[str | None, _Entry] = {}
        self.deltas = False  # hello{deltas:true}: `replace` leaves as `append`
        self._sent: dict[str | None, tuple[str | None, str]] = {}  # session -> (turn_id, text) last sent
        self._expected: deque[tuple[str, Any]] = deque(maxlen=256)  # (session, re) of unsubscribed commands
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._room = asyncio.Event()
        self._room.set()
        self._held = False  # events after the greeting wait for the first command (see hold)
        self._blocked_since: float | None = None  # loop time the writer last saw the peer make progress
        self._blocked_size = 0  # bytes the transport held then

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    def wants(self, session: str | None) -> bool:
        if self.subscribed is None or session is None:
            return True
        return session in self.subscribed or session.split(":", 1)[0] in self.subscribed

    def expect_reply(self, session: str, re: Any) -> None:
        """A command for a session outside the subscription: its replies (events carrying `re`) still come."""
        self._expected.append((session, re))

    def wants_reply(self, session: str | None, re: Any) -> bool:
        return re is not None and session is not None and (session, re) in self._expected

    def send_event(self, event: dict[str, Any]) -> None:
        """A reply for this client only (no seq)."""
        self.send(encode(event), event.get("event"), event.get("session"))

    def set_deltas(self, on: bool) -> None:
        """From now on (the next entry the writer takes) `replace` leaves as `append`, or again as `replace`."""
        if on != self.deltas:
            self.deltas = on
            self._sent.clear()

    def send(
        self, line: bytes, kind: str | None = None, session: str | None = None, text: _Text | None = None
    ) -> None:
        if self.closed:
            return
        if kind == "replace":
            older = self._last_replace.get(session)
            if older is not None and older.line is not None:
                self._drop(older)  # superseded: only the newest replace of a turn is kept
        elif kind in TURN_ENDS:
            self._last_replace.pop(session, None)
        entry = _Entry(line, kind, session, text)
        self._queue.append(entry)
        self._live += 1
        self._bytes += len(line)
        if kind == "replace":
            self._last_replace[session] = entry
        if self._over_limit():
            self._overflow()
            return
        self._wake.set()

    def write_now(self) -> bool:
        """Write the whole queue from here, without waiting for the writer task's next turn of the loop (the
        hub does so for a turn's end as it is published: under load, a turn of the loop is what it would wait
        for). Only while the transport holds nothing (the kernel took everything so far) and nothing holds the
        queue back; True when the queue was emptied, else the writer task carries on as usual."""
        if (
            self.closed
            or self._held
            or self._closing
            or self._blocked_since is not None
            or _buffered(self.writer)
            or self.writer.transport.is_closing()
        ):
            return False  # the writer task's path (it waits for a drain, or sees the connection go)
        try:
            self._flush()
        except (ConnectionError, OSError, RuntimeError):
            self.close()
            return True
        if self._blocked_since is not None:
            self._wake.set()  # the writer task waits for the drain, and times it
        return not self._queue

    def _flush(self) -> None:
        """Write the queue, a batch at a time, while the transport takes every byte (the usual case: no drain
        to wait for). A write that leaves bytes in the transport, or finds it closing, starts the stall clock
        (`_blocked_since`) and stops there: the writer task waits for the drain."""
        while self._blocked_since is None and self._queue and not self.closed:
            batch = self._next_batch()
            if not batch:
                break
            self.writer.write(b"".join(batch))
            pending = _buffered(self.writer)
            if pending or self.writer.transport.is_closing():
                self._blocked_since = asyncio.get_running_loop().time()
                self._blocked_size = pending
        if self._live <= COALESCE_AT // 2:
            self._room.set()

    def _drop(self, entry: _Entry) -> None:
        assert entry.line is not None
        self._bytes -= len(entry.line)
        entry.line = None
        entry.text = None  # its text and its base: up to 2 MiB held by a blank entry otherwise
        self._live -= 1
        self._blank += 1
        if self._blank > 64 and self._blank > self._live:
            self._queue = deque(e for e in self._queue if e.line is not None)
            self._blank = 0

    def _over_limit(self) -> bool:
        if self._live > MAX_QUEUE or (self._bytes > MAX_QUEUE_BYTES and self._live > 1):
            return True
        if self._blocked_since is None:
            return False
        now = asyncio.get_running_loop().time()
        with contextlib.suppress(Exception):
            pending = self.writer.transport.get_write_buffer_size()
            if pending < self._blocked_size:  # the peer read something: that is progress
                self._blocked_size, self._blocked_since = pending, now
        return now - self._blocked_since > STALL_AFTER

    async def wait_room(self) -> None:
        """Backpressure for this client's own commands: wait while its outbound queue is long."""
        while self._live > COALESCE_AT and not self.closed:
            self._room.clear()
            await self._room.wait()

    def hold(self, pending: Callable[[], bool] | None = None) -> None:
        """Keep everything after the greeting until `release()`: the first command, or HOLD_EVENTS seconds in
        which the client sent nothing (`pending()` says whether bytes from it wait unread). A hello{since_seq}
        sent right after connecting then gets its older (replayed) events before the buffered and live ones
        it would otherwise already have been sent, so replay is always in seq order."""
        self._held = True
        loop = asyncio.get_running_loop()

        def timeout() -> None:
            if self._held and not self.closed and pending is not None and pending():
                loop.call_later(0.1, timeout)  # its first command arrived but was not read yet: wait for it
            else:
                self.release()

        loop.call_later(HOLD_EVENTS, timeout)

    def release(self) -> None:
        if self._held:
            self._held = False
            self._wake.set()

    def send_before_queued(self, items: list[tuple[bytes, str | None, str | None]]) -> None:
        """Replayed (older) events go ahead of live events still waiting in the queue, so a client that
        sends hello{since_seq} first gets everything in seq order."""
        if self.closed or not items:
            return
        entries = [_Entry(line, kind, session) for line, kind, session in items]
        head = self._queue.popleft() if self._queue and self._queue[0].kind == "monitor_ready" else None
        self._queue.extendleft(reversed(entries))
        if head is not None:  # the handshake always stays first
            self._queue.appendleft(head)
        self._live += len(entries)
        self._bytes += sum(len(e.line) for e in entries if e.line is not None)
        if self._over_limit():
            self._overflow()
            return
        self._wake.set()

    def room(self) -> tuple[int, int]:
        """(entries, bytes) this client's queue can still take before it is cut off."""
        return MAX_QUEUE - self._live, MAX_QUEUE_BYTES - self._bytes

    def _overflow(self) -> None:
        why = (
            f"more than {MAX_QUEUE} events"
            if self._live > MAX_QUEUE
            else f"more than {MAX_QUEUE_BYTES} bytes"
            if self._bytes > MAX_QUEUE_BYTES and self._live > 1
            else f"nothing read for {STALL_AFTER:g} s"
        )
        log.warning(
            "client %s is too slow (%s queued: %d events, %d bytes); disconnecting",
            self.peer,
            why,
            self._live,
            self._bytes,
        )
        self.closed = True
        self._queue.clear()
        self._live = self._bytes = self._blank = 0
        self._last_replace.clear()
        self._room.set()
        err = ev.error(f"client too slow: {why}; reconnect with hello{{since_seq}}", "slow_consumer")
        transport = self.writer.transport
        with contextlib.suppress(Exception):
            # the transport holds whole lines only (at most one batch): the error is a complete last line
            self.writer.write(encode(err))
            self.writer.close()
        # a peer that reads nothing would keep the buffered bytes forever: abort after a grace period
        asyncio.get_running_loop().call_later(SLOW_ABORT_AFTER, transport.abort)
        self.hub.detach(self)
        memory.trim_soon()

    def _next_batch(self) -> list[bytes]:
        batch: list[bytes] = []
        size = 0
        queue = self._queue
        while queue and len(batch) < 512 and size < BATCH_BYTES:
            if self._held and queue[0].kind != "monitor_ready":
                break
            entry = queue.popleft()
            if entry.line is None:
                self._blank -= 1
                continue
            line = entry.line
            if self.deltas:
                if entry.kind == "replace":
                    line = self._append_line(entry, line)
                elif entry.kind in TURN_ENDS:
                    self._sent.pop(entry.session, None)
            batch.append(line)
            size += len(line)
            self._live -= 1
            self._bytes -= len(entry.line)
            entry.line = None
            entry.text = None
        return batch

    def _append_line(self, entry: _Entry, line: bytes) -> bytes:
        """The `append` that takes this connection from the text it was last sent for the turn to the one of
        `entry` (one merged delta however many updates were coalesced away; offset 0 for a text it never got)."""
        try:
            text = entry.text or _Text.of_line(line)
        except (orjson.JSONDecodeError, TypeError, ValueError):
            return line  # cannot happen (the hub encoded it); a replace is always correct
        sent = self._sent.get(entry.session)
        base = sent[1] if sent is not None and sent[0] == text.turn_id else None
        self._sent[entry.session] = (text.turn_id, text.text)
        if base is text.base:  # the usual case: it was sent the previous update: the shared line
            return text.line()
        return text.line(0 if base is None else common_prefix(base, text.text))

    async def _run(self) -> None:
        try:
            while not self.closed:
                await self._wake.wait()
                self._wake.clear()
                while not self.closed:
                    if self._blocked_since is not None:  # bytes wait in the transport (ours or write_now's)
                        if not await self._drained():
                            return
                        self._blocked_since = None
                    self._flush()
                    if self._blocked_since is None:
                        break  # the queue is empty, or held back
                if self._closing:
                    return
        except (ConnectionError, OSError, RuntimeError):
            self.close()
        except asyncio.CancelledError:
            pass

    async def _drained(self) -> bool:
        """Wait until the transport took the batch, checking a few times per STALL_AFTER that the peer makes
        progress (a session that stopped producing would otherwise never run the check); False once cut."""
        every = max(0.05, min(1.0, STALL_AFTER / 4))
        drain = asyncio.ensure_future(self.writer.drain())
        try:
            while not drain.done():
                await asyncio.wait((drain,), timeout=every)
                if not drain.done() and not self.closed and self._over_limit():
                    self._overflow()
                    return False
            drain.result()  # a lost connection raises here
        finally:
            if not drain.done():
                drain.cancel()
        return not self.closed

    def close(self) -> None:
        self._room.set()
        if not self.closed:
            self.closed = True
            with contextlib.suppress(Exception):
                self.writer.close()
        self.hub.detach(self)

    async def aclose(self) -> None:
        """Flush what is queued (best effort, bounded) and close."""
        self._closing = True
        self._held = False
        self._wake.set()
        if self._task is not None and not self.closed:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self._task), 1.0)
        self.close()
        if self._task is not None:
            self._task.cancel()


def _buffered(writer: asyncio.StreamWriter) -> int:
    try:
        return int(writer.transport.get_write_buffer_size())
    except Exception:
        return 0


class _Kept:
    """One ring entry; `line` becomes None when a newer `replace` of the same session supersedes it."""

    __slots__ = ("kind", "line", "seq", "session")

    def __init__(self, seq: int, session: str | None, kind: str | None, line: bytes) -> None:
        self.seq, self.session, self.kind = seq, session, kind
        self.line: bytes | None = line


RING_BYTES = int(os.environ.get("LITBRIDGE_RING_BYTES", str(64 * 1024 * 1024)))
REPLAY_SLACK_ENTRIES = 16  # room a replay leaves in the client's queue for the replies that follow it
REPLAY_SLACK_BYTES = 64 * 1024


def _fit(client: Client, items: list[_Kept]) -> tuple[list[_Kept], int]:
    """The newest of `items` (in seq order) that fit in the client's queue, leaving room for the replies that
    follow; and the seq of the newest one left out (0 when none)."""
    room_entries, room_bytes = client.room()
    room_entries -= REPLAY_SLACK_ENTRIES
    room_bytes -= REPLAY_SLACK_BYTES
    first = len(items)
    while first > 0:
        size = len(items[first - 1].line or b"")
        if len(items) - first + 1 > room_entries or size > room_bytes:
            break
        room_bytes -= size
        first -= 1
    return items[first:], items[first - 1].seq if first else 0


class Hub:
    """Seq stamping, the replay ring, buffering and broadcast.

    The ring keeps the last `buffer` events; a `replace` supersedes the previous `replace` of its session
    in the ring (replace means "the full text so far", so replaying the newest loses nothing), and the
    ring's bytes are capped (`LITBRIDGE_RING_BYTES`) so streamed responses cannot grow it without bound.
    """

    def __init__(self, buffer: int = BUFFER_EVENTS) -> None:
        self.seq = 0
        self.daemon_id = secrets.token_hex(8)  # handshake field: clients tell a restarted daemon by it
        self.ring: deque[_Kept] = deque()
        self.buffer = buffer
        self.ring_bytes = 0
        self._last_replace: dict[str | None, _Kept] = {}
        # session -> (turn_id, the newest replace text): the base of the next replace's shared `append`
        self._texts: dict[str | None, tuple[str | None, str]] = {}
        self.clients: set[Client] = set()
        self._idle_since: int | None = 0  # seq at which the last client left (None while clients exist)
        self.taps: list[
            Callable[[dict[str, Any]], None]
        ] = []  # in-process observers (notify.py); must not raise

    def publish(self, event: dict[str, Any]) -> None:
        """A session event: seq, ring, broadcast to every subscribed (authenticated) client."""
        self.seq += 1
        event["seq"] = self.seq
        line = encode(event)
        kind, session = event.get("event"), event.get("session")
        self._keep(_Kept(self.seq, session, kind, line))
        text = self._text(event, kind, session) if any(c.deltas for c in self.clients) else None
        if kind in TURN_ENDS and text is None:
            self._texts.pop(session, None)
        re = event.get("re")
        ends = kind in TURN_ENDS
        for client in list(self.clients):
            if client.wants(session) or client.wants_reply(session, re):
                client.send(line, kind, session, text)
                if ends:  # a turn's end leaves now, with what was queued before it
                    client.write_now()
        for tap in self.taps:
            tap(event)

    def _text(self, event: dict[str, Any], kind: str | None, session: str | None) -> _Text | None:
        """A `replace`'s `_Text` (its delta against the previous text of the turn), for delta clients."""
        if kind in TURN_ENDS:
            self._texts.pop(session, None)
        if kind != "replace":
            return None
        prev = self._texts.get(session)
        turn_id = event.get("turn_id")
        text = _Text(event, prev[1] if prev is not None and prev[0] == turn_id else None)
        self._texts[session] = (turn_id, text.text)
        return text

    def _keep(self, item: _Kept) -> None:
        if item.kind == "replace":
            older = self._last_replace.get(item.session)
            if older is not None and older.line is not None:
                self.ring_bytes -= len(older.line)
                older.line = None
            self._last_replace[item.session] = item
        elif item.kind in TURN_ENDS:
            self._last_replace.pop(item.session, None)
        self.ring.append(item)
        self.ring_bytes += len(item.line or b"")
        while self.ring and (len(self.ring) > self.buffer or self.ring_bytes > RING_BYTES):
            old = self.ring.popleft()
            if old.line is not None:
                self.ring_bytes -= len(old.line)
                if self._last_replace.get(old.session) is old:
                    del self._last_replace[old.session]

    def attach(self, client: Client, greeting: Callable[[int], dict[str, Any]]) -> int:
        """Register a client: queue `greeting(n_buffered)` (monitor_ready), then the events buffered while
        no client was connected. Returns n_buffered."""
        buffered: list[_Kept] = []
        if not self.clients and self._idle_since is not None:
            buffered = [item for item in self.ring if item.seq > self._idle_since and item.line is not None]
            buffered = _fit(client, buffered)[0]  # older ones stay in the ring, for a hello{since_seq}
            client.covered_from = buffered[0].seq if buffered else self.seq + 1
        else:
            client.covered_from = self.seq + 1
        self._idle_since = None
        client.send_event(greeting(len(buffered)))
        self._queue_items(client, buffered)
        self.clients.add(client)
        return len(buffered)

    def _queue_items(self, client: Client, items: list[_Kept]) -> int:
        for item in items:
            if item.line is not None:
                client.send(item.line, item.kind, item.session)
        return len(items)

    def gap(self, since_seq: int, client: Client) -> tuple[int, int] | None:
        """The seqs (from, to) a replay from `since_seq` cannot deliver: they left the ring, or they are older
        than what fits in the client's queue (call just before `replay`)."""
        first_wanted = since_seq + 1
        oldest = self.ring[0].seq if self.ring else self.seq + 1
        last_missing = max(min(oldest, client.covered_from) - 1, self._replayable(client, since_seq)[1])
        if first_wanted <= last_missing:
            return first_wanted, last_missing
        return None

    def _replayable(self, client: Client, since_seq: int) -> tuple[list[_Kept], int]:
        """The ring events a replay from `since_seq` sends (since_seq < seq < client.covered_from, never one
        it already got): the newest ones that fit in the client's queue, and the seq of the newest one left
        out for lack of room (0 when none)."""
        items = [
            item
            for item in self.ring
            if since_seq < item.seq < client.covered_from
            and item.line is not None
            and client.wants(item.session)
        ]
        return _fit(client, items)

    def replay(self, client: Client, since_seq: int) -> int:
        """Queue ring events with since_seq < seq < client.covered_from (never one it already got), as many of
        the newest as fit in its queue (`gap` names the rest)."""
        items = self._replayable(client, since_seq)[0]
        client.covered_from = min(client.covered_from, since_seq + 1)
        client.send_before_queued(
            [(item.line, item.kind, item.session) for item in items if item.line is not None]
        )
        return len(items)

    def kept(self, seq: int) -> _Kept | None:
        """The ring entry of `seq` (its `line` is None when a newer `replace` superseded it), or None when it
        left the ring or is not published yet. Fast near the newest end (the ring's seqs are consecutive)."""
        if not self.ring or not self.ring[0].seq <= seq <= self.ring[-1].seq:
            return None
        return self.ring[seq - self.ring[-1].seq - 1]

    @property
    def oldest_seq(self) -> int | None:
        return self.ring[0].seq if self.ring else None

    def detach(self, client: Client) -> None:
        if client in self.clients:
            self.clients.discard(client)
            if not self.clients:
                self._idle_since = self.seq
