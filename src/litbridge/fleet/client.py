"""The `Fleet` class: every daemon of a fleet through one NATS server, with the methods of `Client`.

Commands go by request/reply to `litbridge.<fleet>.cmd.<daemon>` (the reply is the JSON array of the daemon's
direct replies); a turn's events are read from the JetStream stream with an ordered consumer on the session's
subject, opened before the command is sent so nothing between `accepted` and the turn's end is missed; the
registry (sessions, daemons, liveness) is the KV bucket. Sessions are addressed as `DAEMON/SESSION` (daemon
names never contain `/`) or with `daemon=`.

Example::

    import asyncio
    from litbridge.fleet.client import Fleet

    async def main() -> None:
        async with Fleet.connect("nats://nats.internal:4222") as fleet:
            for s in await fleet.list():                     # every daemon's sessions
                print(s["daemon"], s["name"], s["state"], s["available"])
            ready = await fleet.create("work", cli="claude", working_dir="/srv/repo")  # fewest sessions
            turn = await fleet.send(f"{ready['daemon']}/work", "Summarise README.md")
            print((await turn.result())["content"])

    asyncio.run(main())
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import datetime
import itertools
import logging
import os
import ssl
import uuid
from collections import deque
from collections.abc import Callable, Collection, Generator, Sequence
from typing import Any, Literal

from litbridge.client import commands
from litbridge.client.client import Event, Turn, note_question, session_key
from litbridge.client.errors import ConnectionLost, LitbridgeError
from litbridge.fleet import registry, subjects
from litbridge.fleet.config import REGISTRY_TTL, FleetConfig, FleetConfigError, first_connect, is_tls
from litbridge.protocol.framing import decode, encode
from litbridge.protocol.spec import ProtocolError

log = logging.getLogger(__name__)

CREATE_TIMEOUT = 600.0
"""Seconds `create` waits for the daemon's `ready` (its direct reply), as `Client.create` does."""

_FINAL_REPLY = {"create": "ready"}
"""Commands whose reply is not the first event with their `re` (a `create` may be preceded by progress)."""

_LATE_REPLY = frozenset({"interrupt"})
"""Commands whose reply comes later on the stream (an interrupt's is its turn's `interrupted`), not in the
request's reply array."""


def _import_nats() -> Any:
    try:
        import nats
    except ImportError:
        raise LitbridgeError(
            "unsupported", "fleet mode needs nats-py (from a checkout: pip install '.[fleet]')"
        ) from None
    return nats


def split_target(target: str, daemon: str | None = None) -> tuple[str, str]:
    """`DAEMON/SESSION` (or SESSION with `daemon=`) -> (daemon, session); the session may contain `/`.

    >>> split_target("host-a1b2c3/work"), split_target("a/b/c"), split_target("work", "d1")
    (('host-a1b2c3', 'work'), ('a', 'b/c'), ('d1', 'work'))
    """
    if daemon is None:
        daemon, sep, session = target.partition("/")
        if not sep or not daemon or not session:
            raise LitbridgeError("bad_usage", f"expected DAEMON/SESSION, got {target!r}")
    else:
        session = target
    try:
        subjects.check_name(daemon, "daemon name")
    except ValueError as exc:
        raise LitbridgeError("bad_usage", str(exc)) from None
    return daemon, session


def _age(entry: Any, now: datetime.datetime) -> float:
    """Seconds between the server storing a registry entry and `now` (the server's clock too: see
    `Fleet._registry`), so neither a daemon's nor the client's clock matters."""
    created = entry.created
    if not isinstance(created, datetime.datetime):
        return 0.0
    return (now - created).total_seconds()


class _Feed:
    """One session's events from the stream (an ordered consumer on its subject), offered to its turns."""

    def __init__(self, view: FleetDaemon, key: str) -> None:
        self.view = view
        self.key = key
        self.sub: Any = None

    async def start(self) -> None:
        fleet = self.view.fleet
        nats = _import_nats()
        self.sub = await fleet.js.subscribe(
            subjects.event(fleet.name, self.view.name, self.key),
            stream=subjects.stream(fleet.name),
            cb=self._on_msg,
            ordered_consumer=True,
            deliver_policy=nats.js.api.DeliverPolicy.NEW,
            inactive_threshold=300.0,
        )

    async def _on_msg(self, msg: Any) -> None:
        try:
            ev = decode(msg.data)
        except ProtocolError:
            return
        if isinstance(ev, dict):
            self.view._dispatch(ev)

    async def stop(self) -> None:
        if self.sub is not None:
            with contextlib.suppress(Exception):
                await self.sub.unsubscribe()
            self.sub = None


class FleetDaemon:
    """One daemon of the fleet with the `Client` methods (create, send, answer, interrupt, kill, dump, list):
    what `Fleet.daemon(name)` returns, and what a `Turn` from the fleet calls back into (`turn.interrupt()`)."""

    def __init__(self, fleet: Fleet, name: str) -> None:
        self.fleet = fleet
        self.name = subjects.check_name(name, "daemon name")
        self._turns: set[Turn] = set()
        self._recent: deque[tuple[int, Event]] = deque(maxlen=1024)  # (arrival, event) for late turn handles
        self.arrivals = 0  # events dispatched so far
        self._questions: dict[str, Event] = {}  # session key -> its open question (read by `Turn`)
        self._feeds: dict[str, _Feed] = {}
        self._waiters: dict[str, asyncio.Future[Event]] = {}

    @property
    def address(self) -> str:
        return f"{self.fleet.name}/{self.name}"

    def _dispatch(self, ev: Event) -> None:
        waiter = self._waiters.get(str(ev.get("re")))
        if waiter is not None and not waiter.done():
            waiter.set_result(ev)
        self.arrivals += 1
        if Turn.remembers(ev):
            self._recent.append((self.arrivals, ev))
        note_question(self._questions, ev)
        for turn in list(self._turns):
            turn._offer(ev)

    async def _feed(self, key: str) -> _Feed:
        feed = self._feeds.get(key)
        if feed is None:
            feed = _Feed(self, key)
            await feed.start()
            self._feeds[key] = feed
        return feed

    async def _close(self, exc: LitbridgeError) -> None:
        for turn in list(self._turns):
            turn._fail(exc)
        for feed in list(self._feeds.values()):
            await feed.stop()
        self._feeds.clear()

    async def request(
        self,
        cmd: str,
        fields: dict[str, Any] | None = None,
        *,
        timeout: float | Literal["default"] | None = "default",
        id: str | None = None,
    ) -> Event:
        """Send one command to this daemon and return its reply (the event whose `re` is the command's id);
        an `error` reply raises `LitbridgeError` with the daemon's code.

        A reply that comes later on the session's stream (an interrupt's: its turn's `interrupted`) is awaited
        there, through a subscription opened before the command is sent."""
        session = (fields or {}).get("session")
        if cmd not in _LATE_REPLY or not isinstance(session, str):
            return await self.fleet._request(self.name, cmd, fields, timeout=timeout, id=id)
        await self._feed(session_key(session, (fields or {}).get("channel_id")))
        cmd_id = id or self.fleet._next_id()
        waiter: asyncio.Future[Event] = asyncio.get_running_loop().create_future()
        self._waiters[cmd_id] = waiter
        wait = self.fleet.request_timeout if timeout == "default" else timeout
        try:
            reply = await self.fleet._request(self.name, cmd, fields, timeout=timeout, id=cmd_id, late=True)
            if reply is not None:
                return reply
            try:
                ev = await asyncio.wait_for(waiter, wait)
            except asyncio.TimeoutError:
                raise LitbridgeError(
                    "timeout", f"no reply to {cmd!r} from daemon {self.name!r} within {wait} s"
                ) from None
            if ev.get("event") == "error":
                raise commands.reply_error(ev)
            return ev
        finally:
            self._waiters.pop(cmd_id, None)

    async def ping(self) -> Event:
        return await self.request("ping")

    async def list(self) -> builtins.list[Event]:
        """This daemon's sessions, asked of the daemon itself (its `sessions` reply)."""
        reply = await self.request("list")
        return builtins.list(reply.get("sessions") or [])

    async def create(
        self,
        session: str,
        cli: str | None = None,
        *,
        args: Sequence[str] | None = None,
        working_dir: str | os.PathLike[str] | None = None,
        env: dict[str, str] | None = None,
        model: str | None = None,
        channel_id: str | None = None,
        timeout: float | None = CREATE_TIMEOUT,
        worktree: bool | str | None = None,
        **extra: Any,
    ) -> Event:
        """Start `cli` as `session` on this daemon; returns `ready` (plus `daemon`: this daemon's name).

        `env` is refused on a connection without TLS unless the fleet was connected with
        `allow_plaintext_env=True`: it typically holds API keys, and NATS without TLS is readable on the wire."""
        if env and not self.fleet.env_allowed():
            raise LitbridgeError(
                "plaintext_env",
                f"refusing to send create env over a NATS connection without TLS (to {self.address}); "
                "use tls:// with --nats-tls-ca, or opt in with allow_plaintext_env / --nats-allow-plaintext-env",
            )
        fields = commands.create_fields(
            session,
            cli,
            args=args,
            working_dir=working_dir,
            env=env or None,  # an empty env is not sent (nor refused above)
            model=model,
            channel_id=channel_id,
            worktree=worktree,
            extra=extra,
        )
        ready = await self.request("create", fields, timeout=timeout)
        return {**ready, "daemon": self.name}

    async def send(
        self,
        session: str,
        content: str,
        *,
        channel_id: str | None = None,
        msg_id: str | None = None,
        timeout: float | Literal["default"] | None = "default",
    ) -> Turn:
        """Send `content` as a turn; returns a `Turn` (the same class `Client.send` returns) fed from the stream.

        The session's stream subscription is opened before the command goes out, so every event of the turn
        is seen; it ends on `complete`, `interrupted` or `turn_error`."""
        key = session_key(session, channel_id)
        await self._feed(key)
        since = self.arrivals  # what came before the send is no event of its turn
        accepted = await self.request(
            "send",
            {"session": session, "channel_id": channel_id, "content": content},
            id=msg_id,
            timeout=timeout,
        )
        return Turn(self, accepted, str(accepted.get("session") or key), since)  # type: ignore[arg-type]

    async def input(self, session: str, content: str, *, channel_id: str | None = None) -> Event:
        return await self.request("input", {"session": session, "channel_id": channel_id, "content": content})

    async def keystroke(
        self, session: str, keys: Sequence[str] | str, *, channel_id: str | None = None
    ) -> Event:
        return await self.request("keystroke", commands.keystroke_fields(session, keys, channel_id))

    async def answer(
        self,
        session: str,
        *,
        question_id: str | None = None,
        digit: str | int | None = None,
        option: str | None = None,
        text: str | None = None,
        channel_id: str | None = None,
    ) -> Event:
        """Answer an open `question` by digit, option label or free text; returns `answer_sent`."""
        fields = commands.answer_fields(
            session, question_id=question_id, digit=digit, option=option, text=text, channel_id=channel_id
        )
        return await self.request("answer", fields)

    async def interrupt(self, session: str, *, channel_id: str | None = None) -> Event:
        return await self.request("interrupt", {"session": session, "channel_id": channel_id})

    async def dump(self, session: str, *, channel_id: str | None = None) -> Event:
        return await self.request("dump", {"session": session, "channel_id": channel_id})

    async def kill(self, session: str, *, store_resume: bool = False, channel_id: str | None = None) -> Event:
        return await self.request(
            "kill", commands.kill_fields(session, store_resume=store_resume, channel_id=channel_id)
        )

    def __repr__(self) -> str:
        return f"<FleetDaemon {self.address}>"


REPLAY_IDLE_CHECK = 1.0
"""Seconds a replay without `follow` waits idle before it asks the server whether it has caught up."""


class FleetEventStream:
    """Events of the fleet's stream, in stream order, each with `daemon` (the sender's fleet name) added.

    With `since`, one daemon's events after its `seq` `since` are replayed from the stream first (no gap, no
    duplicate: an ordered consumer), then, with `follow`, new ones as they come; without `follow` the stream
    ends once it has caught up. `seq` numbering is per daemon run: events of an earlier run of the daemon
    (another `daemon_id`) are left out of a `since` replay."""

    def __init__(
        self,
        fleet: Fleet,
        daemon: str | None,
        *,
        since: int | None,
        session: str | None,
        kinds: Collection[str] | None,
        follow: bool,
        daemon_id: str | None,
        last_seq: int | None = None,
    ) -> None:
        self.fleet = fleet
        self.daemon = daemon
        self.since = since
        self.session = session
        self.kinds = frozenset(kinds) if kinds is not None else None
        self.follow = follow
        self.daemon_id = daemon_id
        self.last_seq = last_seq  # the run's newest published seq (its registry entry), for `_lost`
        self._queue: asyncio.Queue[Event | BaseException | None] = asyncio.Queue()
        self._sub: Any = None
        self._done = False
        self._taken = 0  # messages our callback took (a replay's end compares it with what the server sent)
        self._taken_at = 0.0
        self._end_watch: asyncio.Task[None] | None = None

    def _subject(self) -> str:
        name = self.fleet.name
        if self.daemon is None:
            return subjects.events_all(name)
        if self.session is not None:
            return subjects.event(name, self.daemon, self.session)
        return subjects.events_of(name, self.daemon)

    @staticmethod
    def _covers(headers: dict[str, str] | None) -> tuple[str, int, int] | None:
        """(run, first seq, last seq) a stored message stands for: an event its own seq, a `replay_gap` its
        from_seq..to_seq; None for a message without `Litbridge-Seq`."""
        headers = headers or {}
        try:
            first = int(headers.get(subjects.SEQ_HEADER, ""))
            last = int(headers.get(subjects.TO_SEQ_HEADER, first))
        except ValueError:
            return None
        return subjects.run_of(str(headers.get(subjects.MSG_ID, ""))), first, last

    def _of_run(self, covers: tuple[str, int, int] | None) -> bool:
        return covers is not None and (self.daemon_id is None or covers[0] == self.daemon_id)

    def _wanted(self, headers: dict[str, str] | None) -> bool:
        """Whether a stored message belongs in the `since` replay: this run, and it stands for a seq > since (a
        `replay_gap` whose to_seq is past `since` too). Along one daemon's messages this is false, then true."""
        covers = self._covers(headers)
        return self._of_run(covers) and covers is not None and covers[2] > (self.since or 0)

    async def _first(self, subject: str, pred: Callable[[dict[str, str] | None], bool]) -> Any:
        """The first stored message on `subject` for which `pred(headers)` holds (`pred` must be false, then
        true along the subject's messages), found by bisection with direct gets of the next message on the
        subject: O(log n) requests, not a read of the whole history. None when there is none. Raises when the
        server cannot do it (an older server, no MSG.GET right)."""
        nats = _import_nats()
        js, name = self.fleet.js, subjects.stream(self.fleet.name)
        state = (await js.stream_info(name)).state
        lo, hi = int(state.first_seq), int(state.last_seq) + 1
        found = None
        while lo < hi:
            mid = (lo + hi) // 2
            try:
                msg = await js.get_msg(name, seq=mid, subject=subject, next=True)
            except nats.js.errors.NotFoundError:  # no message of the subject at or after mid
                hi = mid
                continue
            if pred(msg.headers):
                found, hi = msg, mid
            else:
                lo = int(msg.seq) + 1
        return found

    async def _start_seq(self) -> int | None:
        """The stream sequence a `since` replay starts at (its first wanted message; past the end when there is
        none). None: read from the start, filtering (the server cannot bisect)."""
        try:
            found = await self._first(self._subject(), self._wanted)
            if found is not None:
                return int(found.seq)
            return int((await self.fleet.js.stream_info(subjects.stream(self.fleet.name))).state.last_seq) + 1
        except Exception:
            return None

    async def _lost(self) -> tuple[int, int] | None:
        """The seqs after `since` the stream no longer holds (its age/bytes limits dropped them, or it was
        deleted): from since+1 up to the first seq of the run's oldest kept message (on any of the daemon's
        subjects), or up to the run's last published seq when none is kept. As the socket names what left
        its ring. Needs the run (`daemon_id`)."""
        if self.daemon_id is None or self.daemon is None:
            return None
        first_wanted = (self.since or 0) + 1
        try:
            oldest = await self._first(
                subjects.events_of(self.fleet.name, self.daemon), lambda h: self._of_run(self._covers(h))
            )
        except Exception:
            return None
        if oldest is not None:
            covers = self._covers(oldest.headers)
            last_missing = (covers[1] if covers else first_wanted) - 1
        else:
            last_missing = self.last_seq or 0
        return (first_wanted, last_missing) if first_wanted <= last_missing else None

    async def start(self) -> FleetEventStream:
        nats = _import_nats()
        api = nats.js.api
        policy, start_seq = (api.DeliverPolicy.ALL if not self.follow else api.DeliverPolicy.NEW), None
        if self.since is not None:
            lost = await self._lost()
            if lost is not None:  # first, as the socket's replay_gap precedes its replayed events
                self._put({"event": "replay_gap", "from_seq": lost[0], "to_seq": lost[1]}, self.daemon)
            start_seq = await self._start_seq()
            policy = api.DeliverPolicy.ALL if start_seq is None else api.DeliverPolicy.BY_START_SEQUENCE
        try:
            self._sub = await self.fleet.js.subscribe(
                self._subject(),
                stream=subjects.stream(self.fleet.name),
                cb=self._on_msg,
                ordered_consumer=True,
                deliver_policy=policy,
                config=api.ConsumerConfig(opt_start_seq=start_seq) if start_seq is not None else None,
                inactive_threshold=300.0,
            )
        except nats.js.errors.NotFoundError:
            raise LitbridgeError(
                "no_fleet",
                f"no stream {subjects.stream(self.fleet.name)}: no daemon has joined fleet "
                f"{self.fleet.name!r} on {self.fleet.url}",
            ) from None
        if not self.follow:
            if self._caught_up(await self._sub.consumer_info()):
                self._queue.put_nowait(None)  # nothing stored (or all of it taken already): caught up at once
            else:
                self._end_watch = asyncio.get_running_loop().create_task(self._watch_end())
        return self

    def _caught_up(self, info: Any) -> bool:
        """The consumer has nothing pending and our callback took every message the server says it sent. What
        the server sent counts, not only what we took: messages already on their way end the replay themselves
        (the last one's `num_pending` is 0), and ending before them cut a replay to its gap."""
        sent = info.delivered.consumer_seq if info.delivered is not None else 0
        return bool(info.num_pending == 0 and self._taken >= sent)

    async def _watch_end(self) -> None:
        """A replay (no `follow`) ends on its last message (`num_pending` 0). Should that end be missed (the
        ordered consumer recreated under us, a count not 0 on the last message), a replay idle for
        `REPLAY_IDLE_CHECK` asks the server, and ends once nothing is pending and every message it sent was
        taken: a replay never waits forever for a message that will not come."""
        loop = asyncio.get_running_loop()
        while not self._done:
            await asyncio.sleep(REPLAY_IDLE_CHECK)
            sub = self._sub
            if self._done or sub is None:
                return
            if loop.time() - self._taken_at < REPLAY_IDLE_CHECK:
                continue
            try:
                info = await sub.consumer_info()
            except Exception:  # the connection is away for a moment: ask again later
                continue
            if self._caught_up(info) and not self._done:
                self._queue.put_nowait(None)
                return

    def _put(self, ev: Event, daemon: str | None) -> None:
        if self.kinds is None or ev.get("event") in self.kinds:
            self._queue.put_nowait({**ev, "daemon": daemon})

    def _is_last(self, msg: Any) -> bool:
        """A replay's last message: nothing left for the consumer after it."""
        return not self.follow and msg.metadata.num_pending == 0

    async def _on_msg(self, msg: Any) -> None:
        last = self._is_last(msg)
        self._taken += 1
        self._taken_at = asyncio.get_running_loop().time()
        try:
            self._accept(msg)
        except Exception:  # a message we cannot read must not cost the replay its end
            log.warning("fleet: skipping a stored message that could not be read", exc_info=True)
        if last:
            self._queue.put_nowait(None)

    def _accept(self, msg: Any) -> None:
        headers = msg.headers or {}
        if self.since is not None and not self._wanted(headers):
            return
        try:
            ev = decode(msg.data)
        except ProtocolError:
            return
        if not isinstance(ev, dict):
            return
        if (
            self.since is not None
            and ev.get("event") == "replay_gap"
            and isinstance(ev.get("from_seq"), int)
            and ev["from_seq"] <= self.since
        ):  # a gap that began before `since`: only its part after `since` is missed, as on the socket
            ev = {**ev, "from_seq": self.since + 1}
        daemon = headers.get(subjects.DAEMON_HEADER)
        if not daemon:
            with contextlib.suppress(ValueError):
                daemon = subjects.parse_event_subject(msg.subject)[1]
        self._put(ev, daemon)

    def __aiter__(self) -> FleetEventStream:
        return self

    async def __anext__(self) -> Event:
        if self._done:
            raise StopAsyncIteration
        item = await self._queue.get()
        if item is None:
            await self.close()
            raise StopAsyncIteration
        if isinstance(item, BaseException):
            await self.close()
            raise item
        return item

    async def next(self, timeout: float | None = None) -> Event:
        """The next event; raises `LitbridgeError('timeout')` after `timeout` seconds."""
        try:
            return await asyncio.wait_for(self.__anext__(), timeout)
        except asyncio.TimeoutError:
            raise LitbridgeError("timeout", f"no event within {timeout} s") from None

    async def close(self) -> None:
        self._done = True
        watch, self._end_watch = self._end_watch, None
        if watch is not None and watch is not asyncio.current_task():
            watch.cancel()
        if self._sub is not None:
            sub, self._sub = self._sub, None
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    async def __aenter__(self) -> FleetEventStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class _Connecting:
    """What `Fleet.connect(...)` returns: `await` it, or use it as `async with`."""

    def __init__(self, fleet: Fleet) -> None:
        self._fleet = fleet

    def __await__(self) -> Generator[Any, None, Fleet]:
        return self._fleet._start().__await__()

    async def __aenter__(self) -> Fleet:
        return await self._fleet._start()

    async def __aexit__(self, *exc: object) -> None:
        await self._fleet.close()


class Fleet:
    """A connection to a fleet: every daemon that joined it through one NATS server (or cluster).

    The methods are `Client`'s; the session argument is `DAEMON/SESSION` (or SESSION with `daemon=`), and
    `create` places a session on a daemon (`on=`, else the live daemon with the fewest sessions, optionally
    among those with matching `labels`). `list()` reads the registry: every daemon's sessions with `daemon`,
    `host` and `available` (False when the daemon stopped renewing its registry entry)."""

    def __init__(
        self,
        config: FleetConfig,
        *,
        request_timeout: float | None = 60.0,
        allow_plaintext_env: bool | None = None,
        ttl: float | None = None,
        reconnect_attempts: int = 5,
    ) -> None:
        self.config = config
        self.name = config.fleet
        self.url = config.url
        self.request_timeout = request_timeout
        self.allow_plaintext_env = (
            config.allow_plaintext_env if allow_plaintext_env is None else allow_plaintext_env
        )
        self.ttl = ttl if ttl is not None else REGISTRY_TTL
        """The registry's TTL in seconds (see `stale_after`)."""
        self.reconnect_attempts = reconnect_attempts
        """How often a lost NATS connection is retried (-1: forever, for long-running views) before commands fail."""
        self.nc: Any = None
        self.js: Any = None
        self._kv: Any = None
        self._daemons: dict[str, FleetDaemon] = {}
        self._ids = itertools.count(1)
        self._id_prefix = uuid.uuid4().hex[:10]

    @classmethod
    def connect(
        cls,
        url: str,
        *,
        fleet: str = subjects.DEFAULT_FLEET,
        creds: str | None = None,
        token: str | None = None,
        tls_ca: str | None = None,
        tls_cert: str | None = None,
        tls_key: str | None = None,
        allow_plaintext_env: bool = False,
        **options: Any,
    ) -> _Connecting:
        """Connect to the fleet `fleet` through the NATS server(s) at `url` (comma-separated for a cluster).

        Options: `request_timeout` (default 60 s), `ttl` (seconds without a registry renewal after which
        a daemon that does not state its own `ttl` counts as gone; default $LITBRIDGE_FLEET_TTL or 10 s),
        `reconnect_attempts` (default 5; -1 retries a lost NATS link forever). Bad options raise
        `LitbridgeError('bad_usage')`."""
        try:
            config = FleetConfig(
                url=url,
                fleet=fleet,
                creds=creds,
                token=token,
                tls_ca=tls_ca,
                tls_cert=tls_cert,
                tls_key=tls_key,
                allow_plaintext_env=allow_plaintext_env,
            )
        except FleetConfigError as exc:
            raise LitbridgeError("bad_usage", str(exc)) from None
        return _Connecting(cls(config, **options))

    async def _start(self) -> Fleet:
        if self.nc is not None:
            return self
        nats = _import_nats()
        kwargs = self.config.connect_kwargs(f"litbridge-client {os.getpid()}")
        # a command gives up instead of retrying forever: its user is waiting for an answer
        kwargs.update(max_reconnect_attempts=self.reconnect_attempts, allow_reconnect=True)

        async def _quiet(exc: Exception) -> None:  # nats-py logs every failed attempt otherwise
            pass

        try:
            self.nc = await first_connect(nats, kwargs, self.config.connect_wait(), _quiet)
        except ssl.SSLCertVerificationError as exc:
            raise LitbridgeError(
                "no_nats",
                f"cannot connect to NATS at {self.url}: its TLS certificate is not trusted "
                f"({exc.verify_message or exc}): give the CA that signed it with --nats-tls-ca / tls_ca",
            ) from None
        except asyncio.TimeoutError:
            raise LitbridgeError(
                "no_nats",
                f"cannot connect to NATS at {self.url}: no answer in {self.config.connect_wait():.0f} s",
            ) from None
        except Exception as exc:
            raise LitbridgeError(
                "no_nats", f"cannot connect to NATS at {self.url}: {exc or type(exc).__name__}"
            ) from None
        self.js = self.nc.jetstream()
        return self

    async def close(self) -> None:
        """Close the NATS connection; turns still running end with `ConnectionLost`."""
        lost = ConnectionLost("the fleet client was closed")
        for view in self._daemons.values():
            await view._close(lost)
        if self.nc is not None:
            nc, self.nc = self.nc, None
            with contextlib.suppress(Exception):
                await nc.drain()
            with contextlib.suppress(Exception):
                await nc.close()

    async def __aenter__(self) -> Fleet:
        return await self._start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def tls(self) -> bool:
        """Whether the live NATS connection is encrypted."""
        return self.nc is not None and is_tls(self.nc)

    def env_allowed(self) -> bool:
        return self.tls or self.allow_plaintext_env

    def daemon(self, name: str) -> FleetDaemon:
        """One daemon of the fleet, with the `Client` methods (no round trip: it need not be running)."""
        view = self._daemons.get(name)
        if view is None:
            try:
                view = self._daemons[name] = FleetDaemon(self, name)
            except ValueError as exc:
                raise LitbridgeError("bad_usage", str(exc)) from None
        return view

    def _target(self, target: str, daemon: str | None) -> tuple[FleetDaemon, str]:
        name, session = split_target(target, daemon)
        return self.daemon(name), session

    # --- the command path -----------------------------------------------------------------------------

    async def _request(
        self,
        daemon: str,
        cmd: str,
        fields: dict[str, Any] | None,
        *,
        timeout: float | Literal["default"] | None,
        id: str | None,
        late: bool = False,
    ) -> Any:
        """One command by request/reply; its reply is the event with its `re` in the reply array (an `error`
        raises; `create`'s is its `ready`); with `late`, None when it is not there (it comes on the stream)."""
        if self.nc is None:
            await self._start()
        nats = _import_nats()
        cmd_id = id or self._next_id()
        msg = commands.command(cmd, cmd_id, fields)
        wait = self.request_timeout if timeout == "default" else timeout
        subject = subjects.command(self.name, daemon)
        try:
            reply = await self.nc.request(subject, encode(msg), timeout=wait if wait is not None else 1e9)
        except nats.errors.NoRespondersError:
            raise LitbridgeError(
                "daemon_unavailable",
                f"daemon {daemon!r} of fleet {self.name!r} is not answering: nothing listens on {subject} "
                "(it is stopped, lost its NATS link, or has another name)",
            ) from None
        except nats.errors.TimeoutError:
            raise LitbridgeError(
                "timeout",
                f"daemon {daemon!r} of fleet {self.name!r} sent no reply to {cmd!r} within {wait} s",
            ) from None
        except (nats.errors.ConnectionClosedError, nats.errors.ConnectionDrainingError):
            raise ConnectionLost(f"the NATS connection to {self.url} is closed") from None
        try:
            events = decode(reply.data)
        except ProtocolError:
            events = None
        if not isinstance(events, builtins.list):
            raise LitbridgeError("bad_reply", f"daemon {daemon!r} sent a reply that is not a JSON array")
        mine = [ev for ev in events if isinstance(ev, dict) and ev.get("re") == cmd_id]
        for ev in mine:
            if ev.get("event") == "error":
                raise commands.reply_error(ev)
        want = _FINAL_REPLY.get(cmd)
        for ev in mine:
            if want is None or ev.get("event") == want:
                return ev
        if late:
            return None
        raise LitbridgeError("bad_reply", f"daemon {daemon!r} sent no reply to {cmd!r} (id {cmd_id})")

    def _next_id(self) -> str:
        return f"{self._id_prefix}-{next(self._ids)}"

    # --- the registry ---------------------------------------------------------------------------------

    async def _registry(self) -> tuple[list[Any], datetime.datetime]:
        """Every live entry of the KV bucket (empty when no daemon ever joined), and the server's time now
        (`registry.snapshot`: ages are judged on the server's clock, whatever the client's says)."""
        if self.nc is None:
            await self._start()
        nats = _import_nats()
        if self._kv is None:
            try:
                self._kv = await self.js.key_value(subjects.bucket(self.name))
            except nats.js.errors.BucketNotFoundError:
                return [], datetime.datetime.now(datetime.timezone.utc)
        return await registry.snapshot(self._kv)

    async def _read_registry(self) -> tuple[dict[str, Event], builtins.list[Event]]:
        daemons: dict[str, Event] = {}
        sessions: builtins.list[Event] = []
        entries, now = await self._registry()
        for entry in entries:
            try:
                kind, daemon, _session = subjects.parse_key(entry.key)
                value = decode(entry.value or b"")
            except (ValueError, ProtocolError):
                continue
            if not isinstance(value, dict):
                continue
            value.setdefault("daemon", daemon)
            value["age"] = round(_age(entry, now), 3)
            if kind == "session":
                sessions.append(value)
            else:
                daemons[daemon] = value
        for info in daemons.values():
            info["available"] = info["age"] <= self.stale_after(info)
        for s in sessions:
            owner = daemons.get(str(s.get("daemon")))
            # a live daemon re-puts every session it runs each heartbeat: an entry it stopped renewing is a
            # leftover (of a run that was killed), not a session it has
            s["available"] = bool(owner and owner["available"] and s["age"] <= self.stale_after(owner))
            if owner and not s.get("host"):
                s["host"] = owner.get("host")
        return daemons, sessions

    def stale_after(self, daemon: Event) -> float:
        """Seconds without a renewal after which `daemon` counts as gone: the `ttl` its registry entry states,
        else the client's (`ttl=`, default $LITBRIDGE_FLEET_TTL or 10 s)."""
        said = daemon.get("ttl")
        if isinstance(said, (int, float)) and not isinstance(said, bool) and said > 0:
            return float(said)
        return self.ttl

    async def daemons(self) -> builtins.list[Event]:
        """The daemons in the registry: `{daemon, daemon_id, host, pid, version, sessions, labels, ...,
        available}`, sorted by name."""
        daemons, _ = await self._read_registry()
        return [daemons[k] for k in sorted(daemons)]

    async def list(self) -> builtins.list[Event]:
        """Every session of the fleet: `{daemon, host, name, cli, state, cwd, question, available}`, sorted by
        daemon and name; `available` is False when its daemon is gone (stopped renewing its registry entry)."""
        _, sessions = await self._read_registry()
        return sorted(sessions, key=lambda s: (str(s.get("daemon")), str(s.get("name"))))

    async def place(self, labels: dict[str, str] | None = None) -> str:
        """The live daemon with the fewest sessions among those carrying every label in `labels`."""
        live = [d for d in await self.daemons() if d["available"]]
        fit = [
            d
            for d in live
            if all(str((d.get("labels") or {}).get(k)) == v for k, v in (labels or {}).items())
        ]
        if not fit:
            want = f" with labels {labels}" if labels else ""
            raise LitbridgeError(
                "no_daemon",
                f"no live daemon{want} in fleet {self.name!r} on {self.url} to place the session on",
            )
        return str(min(fit, key=lambda d: (int(d.get("sessions") or 0), str(d["daemon"])))["daemon"])

    # --- the Client methods ---------------------------------------------------------------------------

    async def create(
        self,
        session: str,
        cli: str | None = None,
        *,
        on: str | None = None,
        labels: dict[str, str] | None = None,
        **options: Any,
    ) -> Event:
        """Start `cli` as `session` on daemon `on` (else placed: see `place`); returns `ready` with `daemon`.

        The other options are `Client.create`'s (args, working_dir, env, model, channel_id, timeout, worktree).
        `session` may also be `DAEMON/SESSION`."""
        if on is None and "/" in session:
            on, session = split_target(session)
        view = self.daemon(on if on is not None else await self.place(labels))
        return await view.create(session, cli, **options)

    async def send(self, target: str, content: str, *, daemon: str | None = None, **options: Any) -> Turn:
        """Send `content` to `DAEMON/SESSION` as a turn; returns a `Turn` (see `FleetDaemon.send`)."""
        view, session = self._target(target, daemon)
        return await view.send(session, content, **options)

    async def input(self, target: str, content: str, *, daemon: str | None = None, **options: Any) -> Event:
        """Type `content` + Enter into `DAEMON/SESSION` without observing a turn; returns `input_sent`."""
        view, session = self._target(target, daemon)
        return await view.input(session, content, **options)

    async def keystroke(
        self, target: str, keys: Sequence[str] | str, *, daemon: str | None = None, **options: Any
    ) -> Event:
        """Send named keys (`Enter`, `Esc`, `C-c`...) to `DAEMON/SESSION`; returns `keystroke_sent`."""
        view, session = self._target(target, daemon)
        return await view.keystroke(session, keys, **options)

    async def ping(self, daemon: str) -> Event:
        """Whether `daemon` answers: its `pong` (`daemon_unavailable` when nothing listens)."""
        return await self.daemon(daemon).ping()

    async def request(
        self,
        cmd: str,
        fields: dict[str, Any] | None = None,
        *,
        daemon: str | None = None,
        timeout: float | Literal["default"] | None = "default",
        id: str | None = None,
    ) -> Event:
        """Any command to `daemon` (or, without it, to the daemon of a `DAEMON/SESSION` in `fields["session"]`),
        as `Client.request`: its reply; an `error` raises `LitbridgeError`."""
        fields = dict(fields or {})
        if daemon is None:
            session = fields.get("session")
            if not isinstance(session, str):
                raise LitbridgeError("bad_usage", f"{cmd!r}: name the daemon (daemon=) or a DAEMON/SESSION")
            daemon, fields["session"] = split_target(session)
        return await self.daemon(daemon).request(cmd, fields, timeout=timeout, id=id)

    async def answer(self, target: str, *, daemon: str | None = None, **options: Any) -> Event:
        view, session = self._target(target, daemon)
        return await view.answer(session, **options)

    async def interrupt(self, target: str, *, daemon: str | None = None, **options: Any) -> Event:
        view, session = self._target(target, daemon)
        return await view.interrupt(session, **options)

    async def kill(self, target: str, *, daemon: str | None = None, **options: Any) -> Event:
        view, session = self._target(target, daemon)
        return await view.kill(session, **options)

    async def dump(self, target: str, *, daemon: str | None = None, **options: Any) -> Event:
        view, session = self._target(target, daemon)
        return await view.dump(session, **options)

    async def events(
        self,
        daemon: str | None = None,
        *,
        since: int | None = None,
        session: str | None = None,
        kinds: Collection[str] | None = None,
        follow: bool = True,
    ) -> FleetEventStream:
        """A stream of the fleet's events (all daemons, or one), each with `daemon` added.

        `since` (needs `daemon`: seqs are per daemon) replays that daemon's stored events after seq `since`
        from JetStream first; `follow=False` ends the stream once it has caught up with what is stored."""
        if since is not None and daemon is None:
            raise LitbridgeError("bad_usage", "events since a seq need the daemon (seqs are per daemon)")
        if daemon is not None:
            split_target(f"{daemon}/x")  # a valid daemon name
        daemon_id, last_seq = None, None
        if since is not None:
            registry, _ = await self._read_registry()
            info = registry.get(str(daemon)) or {}
            daemon_id, last_seq = info.get("daemon_id"), info.get("last_seq")
        stream = FleetEventStream(
            self,
            daemon,
            since=since,
            session=session,
            kinds=kinds,
            follow=follow,
            daemon_id=daemon_id,
            last_seq=last_seq if isinstance(last_seq, int) else None,
        )
        return await stream.start()
