"""The daemon side of fleet mode (`litbridge serve --nats URL`): publisher, command responder, registry.

- Publisher: a hub tap only wakes it; it publishes, in seq order and with acks, every event from the last
  one the stream acknowledged up to the hub's newest, reading the lines back from the hub's replay ring
  (the exact bytes the socket sends), up to `WINDOW` publishes in flight at once (one round trip per window,
  not per event; a failure resends from the first unacknowledged one, in order). So a NATS outage never
  blocks the daemon and costs no memory beyond the ring and one window: when NATS is back it carries on
  where it stopped; events that left the ring meanwhile are
  reported by one `replay_gap{from_seq,to_seq}` on the daemon's `_` subject. A `replace` superseded in the
  ring is skipped (the newer one carries the whole text). `Nats-Msg-Id: <daemon_id>:<seq>` makes a
  re-publish after a lost ack a no-op.
- Responder: request/reply on `litbridge.<fleet>.cmd.<daemon>`; each request runs through the daemon's own
  command handler (`handle` of its public face, `daemon/front.py`: the socket's path) and is answered with a
  JSON array of the events sent in reply to it (`re` = its id; one is set when it has none). `create`
  waits for its `ready`/`error`.
- Registry: KV bucket `litbridge_<fleet>`: `daemon.<daemon>` and one `session.<daemon>.<token>` per session,
  re-put every TTL/3 (a daemon entry older than `ttl` means the daemon is gone; its session entries stay, for
  the client to list as unavailable), updated on state/question changes, deleted on kill/reap/clean stop.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import itertools
import logging
import os
import socket
import ssl
import time
from typing import TYPE_CHECKING, Any

import orjson

from litbridge import __version__
from litbridge.daemon.hub import Client
from litbridge.fleet import registry, subjects
from litbridge.fleet.config import (
    DEFAULT_MAX_AGE,
    DEFAULT_MAX_BYTES,
    DUPLICATE_WINDOW,
    REGISTRY_KEEP,
    REGISTRY_TTL,
    FleetConfig,
    default_daemon_name,
    first_connect,
    is_tls,
)
from litbridge.protocol import events as ev
from litbridge.protocol.framing import encode
from litbridge.protocol.spec import ProtocolError

if TYPE_CHECKING:
    from litbridge.daemon.front import DaemonFront

log = logging.getLogger("litbridge.fleet")

PUBLISH_TIMEOUT = 5.0  # seconds to wait for a JetStream ack before retrying (same Nats-Msg-Id)
WINDOW = 256  # publishes in flight at once (awaiting their acks), in seq order
WINDOW_BYTES = 4 << 20  # ... and at most about this many bytes of them
CREATE_WAIT = float(
    os.environ.get("LITBRIDGE_FLEET_CREATE_WAIT", "120")
)  # seconds a create reply waits for ready
REGISTRY_DEBOUNCE = 0.3  # seconds: a burst of state changes is one KV put per session
# Events after which a session's registry entry is re-put (or deleted when the session is gone).
REGISTRY_EVENTS = frozenset(
    ("ready", "state", "question", "question_closed", "exited", "killed", "reaped_idle", "complete")
)
CREATE_ENDS = frozenset(("ready", "error", "exited", "killed"))


class _Collector(Client):
    """An in-process control connection for one NATS request: the direct replies are collected instead of
    written to a socket. Its replay budget is a fraction of the NATS payload limit (`room`)."""

    def __init__(self, link: FleetLink, max_bytes: int) -> None:
        super().__init__(link.hub, None, "nats")  # type: ignore[arg-type]  # never written to
        self.lines: list[bytes] = []
        self.covered_from = link.hub.seq + 1  # a hello{since_seq} replays the ring up to now
        self._max_bytes = max_bytes
        self._size = 0

    def send(
        self, line: bytes, kind: str | None = None, session: str | None = None, text: Any = None
    ) -> None:  # `text`: the hub's delta text, for delta clients (this one is not)
        self.lines.append(line)
        self._size += len(line)

    def send_before_queued(self, items: list[tuple[bytes, str | None, str | None]]) -> None:
        for line, _kind, _session in items:
            self.send(line)

    def room(self) -> tuple[int, int]:
        return 10_000, self._max_bytes - self._size

    async def wait_room(self) -> None:
        return None

    def close(self) -> None:
        self.closed = True


class _NoStream(Exception):
    """No stream listens on the subject (a no-responders status instead of an ack)."""


@dataclasses.dataclass(eq=False)
class _Out:
    """One publish in flight: event `seq` (or a `replay_gap` for `seq`..`last`), until its ack."""

    seq: int
    last: int
    subject: str
    payload: bytes
    msg_id: str
    ack: asyncio.Future[Any]
    gap: bool = False
    sent: float = 0.0

    @property
    def token(self) -> str:
        return str(self.seq)


class _Waiter:
    """The published events carrying one NATS command's id (`re`); `ended` once its create is answered."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.ended = asyncio.Event()


class FleetLink:
    """One daemon's link to the fleet; `start()` returns at once (connecting happens in the background)."""

    def __init__(self, daemon: DaemonFront, cfg: FleetConfig) -> None:
        self.daemon = daemon
        self.hub = daemon.hub
        self.cfg = cfg
        self.name = cfg.daemon or default_daemon_name(daemon.socket_path)
        self.host = socket.gethostname()
        self.started = time.time()
        self.nc: Any = None
        self.js: Any = None
        self.kv: Any = None
        self.next_seq = self.hub.seq + 1  # the next event to publish
        self.acked_seq = self.hub.seq  # the newest seq the stream acknowledged (or skipped)
        self.gaps = 0  # replay_gap events published
        self._wake = asyncio.Event()
        self._progress = asyncio.Event()  # set whenever acked_seq advances
        self._acks: dict[str, asyncio.Future[Any]] = {}  # reply token -> the ack of the publish in flight
        self._resend = False  # resend the window (a reconnect: what the old connection carried may be lost)
        self._dirty: set[str] = set()
        self._session_keys: set[str] = set()  # registry keys we put (deleted at a clean stop)
        self._dirty_event = asyncio.Event()
        self._waiters: dict[tuple[Any, str | None], _Waiter] = {}
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._main: asyncio.Task[None] | None = None
        self._stopping = False

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self.hub.taps.append(self.observe)
        self._main = asyncio.get_running_loop().create_task(self._run())
        log.info(
            "fleet: joining %r as %r via %s",
            self.cfg.fleet,
            self.name,
            ", ".join(shown_url(u) for u in self.cfg.servers()),
        )

    async def _run(self) -> None:
        import nats

        while self.nc is None:
            try:
                self.nc = await first_connect(
                    nats,
                    dict(
                        self.cfg.connect_kwargs(f"litbridge {self.name}"),
                        inbox_prefix=subjects.inbox_prefix(self.name),
                        disconnected_cb=self._on_disconnect,
                        reconnected_cb=self._on_reconnect,
                    ),
                    self.cfg.connect_wait(),
                    self._on_error,
                )
            except asyncio.TimeoutError:
                log.warning(
                    "fleet: cannot connect to NATS (no answer in %.0f s); retrying", self.cfg.connect_wait()
                )
            except ssl.SSLCertVerificationError as exc:
                log.warning(
                    "fleet: cannot connect to NATS: its TLS certificate is not trusted (%s; give the CA that "
                    "signed it with --nats-tls-ca); retrying",
                    exc.verify_message or exc,
                )
                await asyncio.sleep(2.0)
            except Exception as exc:  # nats raises its own errors and OSError; the daemon must not care
                log.warning("fleet: cannot connect to NATS (%s); retrying", exc or type(exc).__name__)
                await asyncio.sleep(2.0)
        self.js = self.nc.jetstream()
        await self._retry("setting up the stream and registry", self._setup)
        await self._retry("clearing our old registry entries", self._sweep)
        await self.nc.subscribe(subjects.command(self.cfg.fleet, self.name), cb=self._on_request)
        log.info("fleet: connected; commands on %s", subjects.command(self.cfg.fleet, self.name))
        self._spawn(self._publish_loop())
        self._spawn(self._registry_loop())
        self._wake.set()

    async def _setup(self) -> None:
        """Create the stream and the bucket, or use the ones there. An existing stream keeps its settings
        (an administrator's replicas, placement, description...): only the limits given as flags
        (`--nats-max-age`, `--nats-max-bytes`) are changed, when they differ."""
        from nats.js.api import KeyValueConfig, StorageType, StreamConfig
        from nats.js.errors import BadRequestError, BucketNotFoundError, NotFoundError

        fleet = self.cfg.fleet
        name = subjects.stream(fleet)
        info = None
        with contextlib.suppress(NotFoundError):
            info = await self.js.stream_info(name)
        if info is None:
            config = StreamConfig(
                name=name,
                subjects=[subjects.events_all(fleet)],
                storage=StorageType.FILE,
                max_age=self.cfg.max_age if self.cfg.max_age is not None else DEFAULT_MAX_AGE,
                max_bytes=self.cfg.max_bytes if self.cfg.max_bytes is not None else DEFAULT_MAX_BYTES,
                duplicate_window=DUPLICATE_WINDOW,
            )
            try:
                await self.js.add_stream(config)
            except BadRequestError:  # another daemon made it meanwhile (with other limits)
                info = await self.js.stream_info(name)
        if info is not None:
            wanted = {
                k: v
                for k, v in (("max_age", self.cfg.max_age), ("max_bytes", self.cfg.max_bytes))
                if v is not None and getattr(info.config, k) != v
            }
            if wanted:
                log.info("fleet: stream %s: setting %s (its other settings kept)", name, wanted)
                await self.js.update_stream(dataclasses.replace(info.config, **wanted))
        try:
            self.kv = await self.js.key_value(subjects.bucket(fleet))
        except BucketNotFoundError:
            self.kv = await self.js.create_key_value(
                KeyValueConfig(bucket=subjects.bucket(fleet), history=1, ttl=REGISTRY_KEEP)
            )

    async def _sweep(self) -> None:
        """Delete `session.<us>.*` entries a previous run under our name left (it was SIGKILLed or lost NATS
        at its end): none of those sessions exists any more."""
        prefix = subjects.sessions_of(self.name)[:-1]  # "session.<daemon>."
        entries, _ = await registry.snapshot(self.kv)
        keys = [e.key for e in entries]
        stale = [
            k for k in keys if k.startswith(prefix) and subjects.parse_key(k)[2] not in self.daemon.sessions
        ]
        for key in stale:
            await self.kv.delete(key)
        if stale:
            log.info("fleet: removed %d registry entries of sessions of a previous run", len(stale))

    async def _retry(self, what: str, step: Any) -> None:
        while True:
            try:
                await step()
                return
            except Exception as exc:
                log.warning("fleet: %s failed (%s); retrying", what, exc or type(exc).__name__)
                await asyncio.sleep(2.0)

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def aclose(self, flush: float = 3.0) -> None:
        """Publish what is still pending (at most `flush` seconds), drop our registry key, disconnect."""
        if self.observe in self.hub.taps:
            self.hub.taps.remove(self.observe)
        self._wake.set()
        if self.js is not None:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + flush
            while self.acked_seq < self.hub.seq and self.nc.is_connected and loop.time() < deadline:
                self._progress.clear()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._progress.wait(), deadline - loop.time())
        self._stopping = True
        if self.kv is not None and self.nc is not None and self.nc.is_connected:
            for key in [subjects.daemon_key(self.name), *self._session_keys]:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self.kv.delete(key), 2.0)
        if self._main is not None:
            self._main.cancel()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, *(t for t in [self._main] if t), return_exceptions=True)
        if self.nc is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.nc.close(), 3.0)

    async def _on_error(self, exc: Exception) -> None:
        log.debug("fleet: NATS error: %s", exc)

    async def _on_disconnect(self) -> None:
        self._drop_unsent()
        self._resend = True
        if not self._stopping:
            log.warning("fleet: NATS disconnected; events wait in the ring (%d)", self.hub.buffer)

    async def _on_reconnect(self) -> None:
        log.info("fleet: NATS reconnected; publishing from seq %d", self.acked_seq + 1)
        self._resend = True
        self._wake.set()
        self._dirty_event.set()

    # ------------------------------------------------------------------ the hub's tap
    def observe(self, event: dict[str, Any]) -> None:
        """Cheap and never raises: wake the publisher, note registry changes, collect command replies."""
        self._wake.set()
        key = event.get("session")
        if self._waiters:
            waiter = self._waiters.get((event.get("re"), key))
            if waiter is not None:
                waiter.lines.append(encode(event))
                if event.get("event") in CREATE_ENDS:
                    waiter.ended.set()
        if isinstance(key, str) and event.get("event") in REGISTRY_EVENTS:
            self._dirty.add(key)
            self._dirty_event.set()

    # ------------------------------------------------------------------ publisher
    async def _publish_loop(self) -> None:
        """Keep up to `WINDOW` publishes in flight, in seq order, on the one connection (the server stores them
        in the order it reads them); retire them as their acks come, in order. A failed or unanswered front,
        or a reconnect, resends every unacknowledged one in order (their Nats-Msg-Id makes a stored one a
        no-op), so the stream keeps seq order with no duplicate."""
        loop = asyncio.get_running_loop()
        inbox = self.nc.new_inbox()
        await self.nc.subscribe(f"{inbox}.*", cb=self._on_ack)
        window: collections.deque[_Out] = collections.deque()
        size, delay = 0, 0.2
        while True:
            self._wake.clear()
            while window and window[0].ack.done() and window[0].ack.exception() is None:
                out = window.popleft()
                size -= len(out.payload)
                self._acks.pop(out.token, None)
                # what it covers, and the superseded replaces up to the next one in flight
                self.acked_seq = window[0].seq - 1 if window else self.next_seq - 1
                self._progress.set()
                delay = 0.2
            if self._resend and not window and self.nc.is_connected:
                self._resend = False  # nothing in flight to resend
            if window and (
                self._resend
                or (window[0].ack.done())  # failed: done without a result
                or loop.time() - window[0].sent > PUBLISH_TIMEOUT
            ):
                if not self._resend:
                    exc = window[0].ack.exception() if window[0].ack.done() else None
                    log.debug("fleet: publish %s failed: %s", window[0].msg_id, exc or "no ack")
                    if isinstance(exc, _NoStream):  # the stream is gone (deleted by hand?): make it again
                        log.warning("fleet: no stream takes %s; creating it again", window[0].subject)
                        with contextlib.suppress(Exception):
                            await self._setup()
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 2.0)
                if not self.nc.is_connected:
                    await asyncio.sleep(delay)
                    continue
                self._resend = False
                for out in window:  # in order, every one not yet acknowledged
                    if not out.ack.done() or out.ack.exception() is not None:
                        if not await self._put_out(out, inbox, loop):
                            break
                continue
            while (
                len(window) < WINDOW
                and size < WINDOW_BYTES
                and self.next_seq <= self.hub.seq
                and self.nc.is_connected
                and not self._resend
            ):
                nxt = self._next_out(loop)
                if nxt is None:  # a superseded replace: nothing to publish
                    if not window:
                        self.acked_seq = self.next_seq - 1
                        self._progress.set()
                    continue
                window.append(nxt)
                size += len(nxt.payload)
                if not await self._put_out(nxt, inbox, loop):
                    break
            if not window and self.next_seq > self.hub.seq:
                await self._wake.wait()
                continue
            timeout = None
            if window:
                timeout = max(0.01, window[0].sent + PUBLISH_TIMEOUT - loop.time())
            if not self.nc.is_connected:
                timeout = delay
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    def _next_out(self, loop: asyncio.AbstractEventLoop) -> _Out | None:
        """The publish for `next_seq` (advancing it): its event, a `replay_gap` for what left the ring or
        can never be published, or None for a superseded `replace`. Already-acknowledged futures stand for
        entries that need no publish."""
        seq = self.next_seq
        item = self.hub.kept(seq)
        if item is None:  # it left the ring while NATS was away
            oldest = self.hub.oldest_seq
            to_seq = (oldest - 1) if oldest is not None else self.hub.seq
            log.warning("fleet: events %d..%d left the ring before NATS took them", seq, to_seq)
            self.next_seq = to_seq + 1
            return self._gap(seq, to_seq, loop)
        self.next_seq = seq + 1
        line = item.line
        if line is None:  # a replace superseded by a newer one of the same turn
            return None
        if len(line) > self.nc.max_payload:
            log.warning("fleet: event %d (%d bytes) exceeds the server's max_payload", seq, len(line))
            return self._gap(seq, seq, loop)
        return _Out(
            seq,
            seq,
            subjects.event(self.cfg.fleet, self.name, item.session),
            line,
            f"{self.hub.daemon_id}:{seq}",
            loop.create_future(),
        )

    def _gap(self, from_seq: int, to_seq: int, loop: asyncio.AbstractEventLoop) -> _Out:
        """`replay_gap{from_seq,to_seq}` on the daemon's `_` subject: these events will never be in the stream.
        Its headers say which seqs it stands for (`Litbridge-Seq` from_seq, `Litbridge-To-Seq` to_seq) and, in
        its Nats-Msg-Id, the run, so a `since` replay finds and keeps it like an event."""
        self.gaps += 1
        return _Out(
            from_seq,
            to_seq,
            subjects.event(self.cfg.fleet, self.name, None),
            encode(ev.replay_gap(from_seq, to_seq)),
            f"{self.hub.daemon_id}:gap:{from_seq}",
            loop.create_future(),
            gap=True,
        )

    async def _put_out(self, out: _Out, inbox: str, loop: asyncio.AbstractEventLoop) -> bool:
        """Send one publish with its ack coming to `<inbox>.<first seq>`; False when the client refused it
        (disconnected meanwhile): it is resent with the rest after the reconnect."""
        headers = {
            subjects.MSG_ID: out.msg_id,
            subjects.DAEMON_HEADER: self.name,
            subjects.SEQ_HEADER: str(out.seq),
        }
        if out.gap:
            headers[subjects.TO_SEQ_HEADER] = str(out.last)
        if out.ack.done():
            out.ack = loop.create_future()
        self._acks[out.token] = out.ack
        out.sent = loop.time()
        try:
            await self.nc.publish(out.subject, out.payload, reply=f"{inbox}.{out.token}", headers=headers)
        except Exception as exc:
            log.debug("fleet: publish %s failed: %s", out.msg_id, exc or type(exc).__name__)
            self._resend = True
            return False
        return True

    async def _on_ack(self, msg: Any) -> None:
        """A JetStream ack (or error, or no-responders status) for the publish its subject's last token names."""
        ack = self._acks.get(msg.subject.rsplit(".", 1)[-1])
        if ack is None or ack.done():
            return
        if msg.headers and msg.headers.get("Status") == "503":
            ack.set_exception(_NoStream())
        else:
            try:
                resp = orjson.loads(msg.data)
            except orjson.JSONDecodeError:
                resp = {"error": "not JSON"}
            if isinstance(resp, dict) and "error" not in resp:
                ack.set_result(resp)
            else:
                ack.set_exception(RuntimeError(str(resp.get("error") if isinstance(resp, dict) else resp)))
        self._wake.set()

    def _drop_unsent(self) -> None:
        """nats-py keeps what it had not written when its connection broke and writes it after reconnecting:
        our event publishes there would land after the ones lost with the old connection, out of seq order.
        They are dropped (the window is resent in order after the reconnect). Guarded: nats-py's buffer is
        not public API; without it this does nothing."""
        pending = getattr(self.nc, "_pending", None)
        if not isinstance(pending, list) or not hasattr(self.nc, "_pending_data_size"):
            return
        prefix = f"HPUB {subjects.events_of(self.cfg.fleet, self.name)[:-1]}".encode()
        kept = [c for c in pending if not bytes(c[: len(prefix)]) == prefix]
        if len(kept) != len(pending):
            pending[:] = kept
            self.nc._pending_data_size = sum(len(c) for c in kept)

    # ------------------------------------------------------------------ commands
    async def _on_request(self, msg: Any) -> None:
        self._spawn(
            self._answer(msg)
        )  # one at a time per subscription otherwise: a create would block the rest

    async def _answer(self, msg: Any) -> None:
        if not msg.reply:
            return
        try:
            lines = await self.run_command(msg.data)
        except Exception as exc:
            log.exception("fleet: command failed")
            lines = [encode(ev.error(f"internal error: {exc}", "internal"))]
        body = b"[" + b",".join(line.rstrip(b"\n") for line in lines) + b"]"
        if len(body) > self.nc.max_payload:
            body = (
                b"["
                + encode(
                    ev.error(
                        f"reply too large for NATS ({len(body)} bytes > {self.nc.max_payload})", "too_large"
                    )
                ).rstrip(b"\n")
                + b"]"
            )
        with contextlib.suppress(Exception):
            await msg.respond(body)

    async def run_command(self, data: bytes) -> list[bytes]:
        """One command (a JSON line as on the socket) through the daemon's handler -> the lines it answered
        with: its direct replies and the published events carrying its id (for `create`, up to `ready`)."""
        from litbridge.protocol.framing import decode

        collector = _Collector(self, max(self.nc.max_payload // 2, 1))
        try:
            cmd = decode(data)
        except ProtocolError as exc:
            return [encode(ev.error(exc.message, exc.code))]
        if isinstance(cmd, dict) and cmd.get("id") is None:
            cmd["id"] = f"nats-{next(self._ids)}"
        re = cmd.get("id") if isinstance(cmd, dict) else None
        session = cmd.get("session") if isinstance(cmd, dict) else None
        key = None
        if isinstance(session, str):
            from litbridge.protocol.spec import session_key

            with contextlib.suppress(Exception):
                key = session_key(cmd)
        if (
            isinstance(cmd, dict)
            and cmd.get("cmd") == "create"
            and cmd.get("env")
            and not (self.cfg.allow_plaintext_env or is_tls(self.nc))
        ):
            return [
                encode(
                    ev.error(
                        "create: env refused over a NATS connection without TLS (start the daemon with "
                        "--nats-allow-plaintext-env to allow it)",
                        "bad_field",
                        re,
                        key,
                        cmd.get("channel_id"),
                    )
                )
            ]
        waiter = _Waiter()
        if re is not None and (re, key) not in self._waiters:
            self._waiters[(re, key)] = waiter
        try:
            await self.daemon.handle(collector, cmd)
            if isinstance(cmd, dict) and cmd.get("cmd") == "create" and not collector.lines:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(waiter.ended.wait(), CREATE_WAIT)
        finally:
            if self._waiters.get((re, key)) is waiter:
                del self._waiters[(re, key)]
        # direct replies (no seq) first, then the published ones in seq order
        return collector.lines + waiter.lines

    # ------------------------------------------------------------------ registry
    async def _registry_loop(self) -> None:
        every = REGISTRY_TTL / 3
        loop = asyncio.get_running_loop()
        next_beat = 0.0
        while True:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._dirty_event.wait(), max(0.0, next_beat - loop.time()))
            await asyncio.sleep(REGISTRY_DEBOUNCE)
            self._dirty_event.clear()
            if not self.nc.is_connected:
                await asyncio.sleep(0.5)
                continue
            try:
                beat = loop.time() >= next_beat
                if beat:
                    self._dirty.update(self.daemon.sessions)
                    next_beat = loop.time() + every
                if beat or self._dirty:  # its session count may have changed
                    await self._put_daemon()
                dirty, self._dirty = self._dirty, set()
                try:
                    for key in dirty:
                        await self._put_session(key)
                except Exception:
                    self._dirty |= dirty  # tried again at the next beat
                    raise
            except Exception as exc:
                log.debug("fleet: registry update failed: %s", exc)
                next_beat = 0.0

    async def _put_daemon(self) -> None:
        info = {
            "daemon": self.name,
            "daemon_id": self.hub.daemon_id,
            "host": self.host,
            "pid": os.getpid(),
            "version": __version__,
            "sessions": sum(1 for s in self.daemon.sessions.values() if not s.dead),
            "labels": self.cfg.labels,
            "ttl": REGISTRY_TTL,
            "heartbeat": REGISTRY_TTL / 3,
            "started": self.started,
            "last_seq": self.acked_seq,
            "ts": time.time(),
        }
        await self.kv.put(subjects.daemon_key(self.name), orjson.dumps(info))

    async def _put_session(self, key: str) -> None:
        kv_key = subjects.session_key(self.name, key)
        s = self.daemon.sessions.get(key)
        if s is None:
            if kv_key in self._session_keys:
                await self.kv.delete(kv_key)
                self._session_keys.discard(kv_key)
            return
        question = None
        for q in s.turns.questions.values():
            question = {"id": q.id, "kind": q.kind, "text": q.text, "options": q.options}
            break
        info = {
            "daemon": self.name,
            "host": self.host,
            "name": key,
            "cli": s.cli,
            "state": s.state,
            "alive": not s.dead,
            "cwd": s.options.get("working_dir"),
            "question": question,
            "ts": time.time(),
        }
        await self.kv.put(kv_key, orjson.dumps(info))
        self._session_keys.add(kv_key)


def shown_url(url: str) -> str:
    """A server URL without its user:password part (never logged)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    return f"{parts.scheme}://{host}{':' + str(parts.port) if parts.port else ''}"
