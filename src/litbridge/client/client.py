"""The asyncio client: one connection to the daemon, typed commands, filtered event streams, turn handles.

Speaks only the wire protocol (lines via `litbridge.protocol.framing`); knows nothing of the daemon's
internals. A dropped connection is re-opened with `hello{since_seq}` and events are de-duplicated by `seq`,
so a subscriber never sees a session event twice and never misses one the daemon still buffers.

Streamed text: the client asks for deltas (`hello{deltas:true}`, when the daemon offers them) so the wire
carries only what is new (`append`), and turns every `append` back into the `replace` it stands for (the
whole text so far, plus `delta: {offset, text}`, what changed): users see the same events as from a daemon
without deltas.

Example::

    import asyncio
    from litbridge.client import Client

    async def main() -> None:
        async with Client.connect() as c:                 # default socket, like `litbridge serve`
            await c.create("work", cli="claude", working_dir="/home/me/project")
            turn = await c.send("work", "Summarise README.md in one line")
            async for ev in turn:                          # accepted, state, replace..., complete
                if ev["event"] == "replace":
                    print(ev["text"])
            print((await turn.result())["content"])

    asyncio.run(main())
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import errno
import itertools
import os
import random
import socket as _socket
import sys
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable, Collection, Generator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from litbridge.client import commands
from litbridge.client.errors import (
    AuthFailed,
    ConnectionLost,
    DaemonNotRunning,
    LitbridgeError,
    UntrustedDaemon,
)
from litbridge.client.paths import (
    answer_challenge,
    check_peer,
    check_socket_path,
    check_tcp_peer,
    default_socket_path,
    find_token,
    no_token_hint,
)
from litbridge.protocol import auth
from litbridge.protocol.framing import LineSplitter, TooLarge, decode, encode
from litbridge.protocol.names import shown
from litbridge.protocol.spec import MAX_LINE, ProtocolError

Event = dict[str, Any]
"""An event as the daemon sent it (a decoded JSON object). Unknown kinds and fields must be ignored."""

EventFilter = Callable[[Event], bool]

TERMINAL_EVENTS = frozenset({"complete", "interrupted", "turn_error"})
"""The events that end a turn; every accepted send ends in exactly one of them."""

# Session events without a `turn_id` that a turn handle also yields while its turn is the running one.
TURN_SESSION_EVENTS = frozenset(
    {
        "state",
        "thinking",
        "question",
        "question_closed",
        "dialog_blocked",
        "dialog_cleared",
        "dialog_released",
        "unknown_dialog",
        "startup_hold",
        "exited",
        "killed",
    }
)

# Events after which a session's streamed text starts afresh (the next `append` is the next turn's).
_TEXT_ENDS = frozenset({"complete", "interrupted", "turn_error", "killed", "exited"})

# Session events a queued turn's handle yields too: why its send is held (and the question holding it).
HOLD_EVENTS = frozenset({"startup_hold", "dialog_blocked", "dialog_released"})

# Commands that only read, so they are re-sent after a reconnect if their reply had not arrived. `send` is
# re-sent too: the daemon de-duplicates by message id and answers `accepted{duplicate:true}`. Everything
# else keeps waiting: its reply, if the daemon ran it, comes back through the since_seq replay.
_RESEND_AFTER_RECONNECT = frozenset({"ping", "list", "dump", "hello", "send"})

SEEN_WINDOW = 50_000
"""How many delivered seqs the client remembers for de-duplication (10x the daemon's replay buffer)."""

# Client-side read limit: generous, because a `complete` may legitimately carry a long answer.
_CLIENT_MAX_LINE = 64 * MAX_LINE


BUSY_RETRY_FOR = 5.0
"""Seconds a Unix-socket connect is retried while the daemon's accept queue is full (a burst of connects)."""

# Errors of a Unix-socket connect that mean "busy, try again": a full accept queue is EAGAIN on Linux (which
# asyncio reports as a connect that worked: the socket is then not connected, ENOTCONN) and ECONNREFUSED on
# the BSDs and macOS (on Linux ECONNREFUSED means that nothing listens: not retried).
_BUSY = {errno.EAGAIN, errno.EWOULDBLOCK, errno.ENOTCONN} | (
    set() if sys.platform.startswith("linux") else {errno.ECONNREFUSED}
)


async def _unix_connect(path: str, retry_for: float) -> _socket.socket:
    """A connected Unix socket to `path`, retried with jittered backoff for up to `retry_for` seconds while the
    listener is busy. Nothing is sent, so a retry can never repeat part of a handshake."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + retry_for
    delay = 0.005
    while True:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, path)
            sock.getpeername()  # ENOTCONN: the EAGAIN asyncio took for success
            return sock
        except OSError as exc:
            sock.close()
            if exc.errno not in _BUSY:
                raise
            if loop.time() + delay > deadline:
                raise LitbridgeError(
                    "busy", f"the daemon at {path} stayed too busy to accept a connection for {retry_for:g} s"
                ) from None
        except BaseException:
            sock.close()
            raise
        await asyncio.sleep(delay * random.uniform(0.5, 1.5))
        delay = min(delay * 2, 0.25)


def session_key(session: str, channel_id: str | None = None) -> str:
    """The daemon's session key: `session`, or `session:channel_id` when a channel is given.

    >>> session_key("work"), session_key("work", "c1")
    ('work', 'work:c1')
    """
    return f"{session}:{channel_id}" if channel_id is not None else session


class _Pending:
    """One command awaiting its reply (the first event whose `re` is the command's `id`)."""

    __slots__ = ("cmd", "future", "line", "on_reply")

    def __init__(
        self, cmd: str, line: bytes, future: asyncio.Future[Any], on_reply: Callable[[Event], Any] | None
    ):
        self.cmd = cmd
        self.line = line
        self.future = future
        self.on_reply = on_reply


class EventStream:
    """An async iterator over the client's events that pass a filter.

    It is registered when created (not when first iterated), so nothing that arrives in between is
    lost. Use it as an async context manager (or call `close()`) to unregister.

    >>> async def wait_idle(c: Client) -> None:  # doctest: +SKIP
    ...     async with c.events(session="work", kinds={"state"}) as stream:
    ...         async for ev in stream:
    ...             if ev["to"] == "idle":
    ...                 break
    """

    def __init__(self, client: Client, accept: EventFilter) -> None:
        self._client = client
        self._accept = accept
        self._queue: asyncio.Queue[Event | BaseException] = asyncio.Queue()
        self._closed = False
        client._subscribers.add(self)

    def _offer(self, ev: Event) -> None:
        if not self._closed and self._accept(ev):
            self._queue.put_nowait(ev)

    def _fail(self, exc: BaseException) -> None:
        if not self._closed:
            self._queue.put_nowait(exc)

    def close(self) -> None:
        """Stop receiving events; a pending `__anext__` ends the iteration."""
        if not self._closed:
            self._closed = True
            self._client._subscribers.discard(self)
            self._queue.put_nowait(StopAsyncIteration())

    async def aclose(self) -> None:
        self.close()

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> Event:
        if self._closed and self._queue.empty():
            raise StopAsyncIteration
        item = await self._queue.get()
        if isinstance(item, BaseException):
            if isinstance(item, StopAsyncIteration):
                raise StopAsyncIteration
            self._closed = True
            self._client._subscribers.discard(self)
            raise item
        return item

    async def next(self, timeout: float | None = None) -> Event:
        """The next matching event; raises `LitbridgeError('timeout')` after `timeout` seconds."""
        try:
            return await asyncio.wait_for(self.__anext__(), timeout)
        except asyncio.TimeoutError:
            raise LitbridgeError("timeout", f"no matching event within {timeout} s") from None

    async def wait_for(self, match: str | EventFilter, timeout: float | None = None) -> Event:
        """Skip events until one matches (an event name or a predicate) and return it."""
        pred: EventFilter = (lambda ev: ev.get("event") == match) if isinstance(match, str) else match

        async def _scan() -> Event:
            async for ev in self:
                if pred(ev):
                    return ev
            raise ConnectionLost("event stream closed")

        try:
            return await asyncio.wait_for(_scan(), timeout)
        except asyncio.TimeoutError:
            raise LitbridgeError("timeout", f"no matching event within {timeout} s") from None

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


def note_question(questions: dict[str, Event], ev: Event) -> None:
    """Keep each session's open `question` (what a queued turn held by a dialog yields before `dialog_blocked`)."""
    kind, qkey = ev.get("event"), str(ev.get("session"))
    if kind == "question":
        questions[qkey] = ev
    elif kind in ("question_closed", "exited", "killed") and (
        kind != "question_closed" or questions.get(qkey, {}).get("question_id") == ev.get("question_id")
    ):
        questions.pop(qkey, None)


def question_detail_text(detail: Any) -> str:
    """A `question`'s `detail` as text to show: the string the CLI showed with the question, or its named facts
    one per line (`command: ls`), empty ones left out; "" for none."""
    if isinstance(detail, str):
        return detail.strip()
    if isinstance(detail, dict):
        return "\n".join(f"{k}: {v}" for k, v in detail.items() if v not in (None, "")).strip()
    return ""


def _after(seq: Any, than: Any) -> bool:
    """`seq` is a later event's than `than` (both ints; False when either is missing)."""
    ints = isinstance(seq, int) and isinstance(than, int) and not isinstance(seq, bool)
    return ints and seq > than


class Turn:
    """The handle `Client.send` returns: one message's turn, from `accepted` to its terminal event.

    `async for ev in turn` yields the turn's events in order (the `accepted` reply first; events carrying
    this `turn_id`; while the turn is the session's running one, session events such as `state`,
    `thinking` and `question`; while it is queued, why it is held: `startup_hold`, `dialog_blocked` (after
    the open `question` holding it, when the client saw one) and `dialog_released`) and stops after the terminal event (`complete`, `interrupted` or
    `turn_error`). It can be iterated more than once; `result()` can be awaited at the same time.

    >>> async def ask(c: Client) -> str:  # doctest: +SKIP
    ...     turn = await c.send("work", "What is 2+2?")
    ...     done = await turn.result()
    ...     return done["content"] if done["event"] == "complete" else ""
    """

    def __init__(self, client: Client, accepted: Event, key: str, since: int | None = None) -> None:
        self.client = client
        self.session: str = key
        """The session key (`session` or `session:channel_id`)."""
        self.turn_id: str = str(accepted.get("turn_id"))
        self.queued: bool = bool(accepted.get("queued"))
        self.accepted: Event = accepted
        self.terminal: Event | None = None
        """The terminal event once the turn has ended, else None."""
        self.text: str = ""
        """The response text so far (the latest `replace`, then the terminal event's `content`)."""
        self._events: list[Event] = [accepted]
        self._active = not self.queued
        self._waiter: asyncio.Future[None] | None = None
        self._error: BaseException | None = None
        self._seen: set[int] = {id(accepted)}
        self._held_by: Any = None  # the question a queued send is held behind (yielded with `dialog_blocked`)
        client._turns.add(self)
        # Events that arrived before this handle existed: the turn's own (ordering is the daemon's business),
        # and the session's that came after `accepted` (a `question` the CLI asked at once: a fleet delivers
        # the reply and the stream by different paths), counting only those that arrived after the send went
        # out (`since`, the client's arrival count then: a restarted daemon numbers its events afresh).
        after = accepted.get("seq")
        for arrival, ev in client._recent:
            if ev.get("session") != key:
                continue
            tid = ev.get("turn_id")
            newer = tid is None and _after(ev.get("seq"), after) and (since is None or arrival > since)
            if tid == self.turn_id or newer:
                self._offer(ev)

    @staticmethod
    def remembers(ev: Event) -> bool:
        """Whether a client keeps `ev` for a turn handle made after it arrived (see `__init__`)."""
        return ev.get("turn_id") is not None or ev.get("event") in TURN_SESSION_EVENTS

    @property
    def done(self) -> bool:
        return self.terminal is not None

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        self._waiter = None

    def _offer(self, ev: Event) -> None:
        if self.terminal is not None or ev.get("session") != self.session or id(ev) in self._seen:
            return
        kind = ev.get("event")
        tid = ev.get("turn_id")
        if kind == "accepted":
            return  # ours is the first event already; a later one is a duplicate send's echo
        if tid is not None:
            if tid != self.turn_id:
                return
            self._active = True
        elif not self._active and kind in HOLD_EVENTS:
            question = self.client._questions.get(self.session)
            if kind == "dialog_blocked" and question is not None and id(question) not in self._seen:
                self._held_by = question.get("question_id")
                self._seen.add(id(question))
                self._events.append(question)  # what the CLI asks, before the news that it holds this send
        elif not self._active and kind == "question_closed" and ev.get("question_id") == self._held_by:
            pass
        elif not (self._active and kind in TURN_SESSION_EVENTS):
            return
        self._seen.add(id(ev))
        self._events.append(ev)
        if kind == "replace" and tid == self.turn_id:
            self.text = str(ev.get("text", ""))
        if kind in TERMINAL_EVENTS and tid == self.turn_id:
            self.terminal = ev
            if isinstance(ev.get("content"), str):
                self.text = ev["content"]
            self.client._turns.discard(self)
        self._wake()

    def _fail(self, exc: BaseException) -> None:
        if self.terminal is None and self._error is None:
            self._error = exc
            self.client._turns.discard(self)
            self._wake()

    async def _wait_more(self, have: int) -> None:
        while len(self._events) <= have and self.terminal is None and self._error is None:
            loop = asyncio.get_running_loop()
            if self._waiter is None or self._waiter.done():
                self._waiter = loop.create_future()
            await asyncio.shield(self._waiter)

    async def __aiter__(self) -> AsyncIterator[Event]:
        i = 0
        while True:
            if i < len(self._events):
                ev = self._events[i]
                i += 1
                yield ev
                if ev is self.terminal:
                    return
                continue
            if self.terminal is not None:
                return
            if self._error is not None:
                raise self._error
            await self._wait_more(i)

    async def result(self, timeout: float | None = None) -> Event:
        """Wait for the terminal event (`complete`, `interrupted` or `turn_error`) and return it.

        Raises `LitbridgeError('timeout')` after `timeout` seconds (the turn keeps running) and
        `ConnectionLost` if the daemon cannot be reached any more.
        """

        async def _wait() -> Event:
            while self.terminal is None:
                if self._error is not None:
                    raise self._error
                await self._wait_more(len(self._events))
            return self.terminal

        try:
            return await asyncio.wait_for(_wait(), timeout)
        except asyncio.TimeoutError:
            raise LitbridgeError("timeout", f"turn {self.turn_id} did not end within {timeout} s") from None

    async def interrupt(self) -> Event:
        """Interrupt this turn's session (the turn then ends with `interrupted`)."""
        name, _, channel = self.session.partition(":")
        return await self.client.interrupt(name, channel_id=channel or None)

    def __repr__(self) -> str:
        state = self.terminal["event"] if self.terminal else ("queued" if not self._active else "running")
        return f"<Turn {self.session} {self.turn_id} {state}>"


class _Connecting:
    """What `Client.connect(...)` returns: `await` it, or use it as `async with`."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def __await__(self) -> Generator[Any, None, Client]:
        return self._client._start().__await__()

    async def __aenter__(self) -> Client:
        return await self._client._start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._client.close()


class Client:
    """A connection to a litbridge daemon.

    Create one with `Client.connect(...)` (an awaitable and an async context manager). Every command
    method sends the command with a fresh `id`, waits for the first event whose `re` is that id and
    returns it; an `error` reply raises `LitbridgeError(code, message)`.

    >>> async def main() -> None:  # doctest: +SKIP
    ...     async with Client.connect(socket="/tmp/lb.sock") as c:
    ...         print(await c.ping())
    ...         for s in await c.list():
    ...             print(s["name"], s["state"])
    """

    def __init__(
        self,
        socket: str | os.PathLike[str] | None = None,
        port: int | None = None,
        token: str | None = None,
        *,
        host: str = "127.0.0.1",
        subscribe: Sequence[str] | str | None = None,
        reconnect: bool = True,
        reconnect_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        request_timeout: float | None = 60.0,
        deltas: bool = True,
    ) -> None:
        if port is None and not hasattr(asyncio, "open_unix_connection"):
            raise LitbridgeError("bad_usage", "this platform has no Unix sockets: connect with port=N (TCP)")
        self.port = port
        self.host = host
        self.socket_path: Path | None = None if port is not None else Path(socket or default_socket_path())
        self.token = token
        self.subscribe = subscribe
        self.reconnect = reconnect
        self.reconnect_timeout = reconnect_timeout
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self.deltas = deltas
        """Ask for `append` events on the wire (rebuilt here into `replace`); False: full `replace` texts."""
        self.server_info: Event = {}
        """The latest `monitor_ready` (version, protocol_version, commands, events, clis, limits)."""
        self.capabilities: Event = {}
        """The latest `capabilities` (reply to `hello`), if any was requested."""
        self.last_seq: int | None = None
        """Highest `seq` delivered; a reconnect asks the daemon to replay everything after it."""
        self.reconnects = 0
        """How many times the connection was re-opened."""
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._write_lock = asyncio.Lock()
        self._pending: dict[str, _Pending] = {}
        self._subscribers: set[EventStream] = set()
        self._turns: set[Turn] = set()
        self._recent: deque[tuple[int, Event]] = deque(maxlen=1024)  # (arrival, event) for late turn handles
        self.arrivals = 0  # events dispatched so far
        self._questions: dict[str, Event] = {}  # session key -> its last open `question` (a held send's why)
        self._texts: dict[str, tuple[Any, str]] = {}  # session key -> (turn_id, its text): `append`'s base
        self._ids = itertools.count(1)
        self._id_prefix = uuid.uuid4().hex[:10]
        self._connected = asyncio.Event()
        self._closing = False
        self._failed: LitbridgeError | None = None
        self._task: asyncio.Task[None] | None = None
        self._instance: Any = None
        self._token_found = False  # else it was given
        self._token_file: str | os.PathLike[str] | None = None  # --token-file
        self._token_socket: str | os.PathLike[str] | None = None  # whose token file
        self._fresh = False  # a re-opened connection that has not delivered a seq'd event yet
        # Seqs delivered recently. A set, not just the highest: replayed events can arrive after newer ones
        # (the buffered flush precedes the since_seq replay; an explicit hello(since_seq) fetches history).
        self._seen: set[int] = set()
        self._seen_order: deque[int] = deque()

    # --- connecting ---------------------------------------------------------------------------------

    @classmethod
    def connect(
        cls,
        socket: str | os.PathLike[str] | None = None,
        port: int | None = None,
        token: str | None = None,
        *,
        token_file: str | os.PathLike[str] | None = None,
        **options: Any,
    ) -> _Connecting:
        """Connect to the daemon at `socket` (default: the daemon's default path) or TCP `port`.

        For TCP the daemon must first prove it knows the token (the token itself is never sent; see
        docs/protocol.md); without `token=` the token is read from `token_file`, else `$LITBRIDGE_TOKEN`, else
        the token file next to `socket` (or the default socket path), again on every reconnect. A listener that cannot prove it raises
        `UntrustedDaemon` having received nothing but a random nonce. Options: `host`, `subscribe` (session
        keys or "*"), `reconnect` (default True), `reconnect_timeout`, `connect_timeout`, `request_timeout`,
        `deltas` (default True: streamed text travels as `append`, still delivered as `replace`). Raises `DaemonNotRunning` when nothing listens there.

        >>> async def main() -> None:  # doctest: +SKIP
        ...     async with Client.connect(port=7800, token="…") as c:
        ...         await c.ping()
        ...     c = await Client.connect()            # without a context manager
        ...     await c.close()
        """
        client = cls(socket if port is None else None, port, token, **options)
        if port is not None and token is None:  # found (again on every reconnect) by `find_token`
            client._token_found, client._token_file, client._token_socket = True, token_file, socket
        return _Connecting(client)

    @property
    def address(self) -> str:
        """Where this client connects, for messages: the socket path or `host:port`."""
        return f"{self.host}:{self.port}" if self.port is not None else str(self.socket_path)

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    def supports(self, name: str) -> bool:
        """Whether the daemon advertised command or event `name`, or new command field `command.field`
        (`monitor_ready.features`, e.g. "create.worktree"): feature detection, no probing."""
        info = self.server_info
        return any(name in (info.get(k) or ()) for k in ("commands", "events", "features"))

    async def _start(self) -> Client:
        if self._task is None:
            await self._open(initial=True)
            self._task = asyncio.create_task(self._read_loop(), name=f"litbridge-client {self.address}")
        return self

    def _next_id(self) -> str:
        return f"{self._id_prefix}-{next(self._ids)}"

    async def _open(self, initial: bool) -> None:
        """Open one connection and finish its handshake (monitor_ready; the hello reply when one is sent).

        Over TCP the daemon first proves it knows the token (`_prove_daemon`); until then nothing but a nonce
        is sent, so a program that took the port never sees the token, a command or an `env`."""
        reader, writer = await self._connect()
        splitter = LineSplitter(_CLIENT_MAX_LINE)
        hello_id: str | None = None
        hello: Event = {}
        buffered: list[Event] = []
        proving = True  # a timeout before the daemon's proof came means it may not be the daemon at all
        try:
            if self.port is None:
                check_peer(writer.get_extra_info("socket"), self.address)  # before the first byte is sent
            else:
                check_tcp_peer(writer.get_extra_info("socket"), self.address)  # likewise (Linux)
                hello["auth"] = {"proof": await self._prove_daemon(reader, writer, splitter)}
            proving = False
            if self.subscribe is not None:
                hello["subscribe"] = (
                    self.subscribe if isinstance(self.subscribe, str) else list(self.subscribe)
                )
            if not initial and self.last_seq is not None:
                hello["since_seq"] = self.last_seq
            if hello:
                if self.deltas:
                    hello["deltas"] = True  # a daemon that does not know the field ignores it
                hello_id = self._next_id()
                writer.write(encode({"cmd": "hello", "id": hello_id, **hello}))
            got_ready = False
            got_hello = hello_id is None
            while not (got_ready and got_hello):
                chunk = await asyncio.wait_for(reader.read(65536), self.connect_timeout)
                if not chunk:
                    if self.port is not None and not got_hello:
                        raise AuthFailed(
                            f"the daemon at {self.address} closed the connection (wrong or missing token?)"
                        )
                    raise ConnectionLost(
                        f"the daemon at {self.address} closed the connection during the handshake"
                    )
                for ev in self._lines(splitter, chunk):
                    kind = ev.get("event")
                    if kind == "monitor_ready" and not got_ready:
                        got_ready = True
                        self._on_server_info(ev)
                        if hello_id is None and self.deltas and "hello.deltas" in (ev.get("features") or ()):
                            # Only to a daemon that offers them, and not waited for: the daemon holds a new
                            # connection's events until its first command, so none leaves before this is read.
                            writer.write(encode({"cmd": "hello", "id": self._next_id(), "deltas": True}))
                    elif hello_id is not None and ev.get("re") == hello_id:
                        if kind == "error":
                            code = str(ev.get("code") or "error")
                            if code == "unauthorized":
                                raise AuthFailed(str(ev.get("message", "unauthorized")))
                            raise LitbridgeError(code, str(ev.get("message", "")), ev)
                        got_hello = True
                        self.capabilities = ev
                    elif kind == "error" and ev.get("code") == "unauthorized":
                        raise AuthFailed(str(ev.get("message", "unauthorized")))
                    else:
                        buffered.append(ev)
        except asyncio.TimeoutError:
            writer.close()
            if proving:
                raise UntrustedDaemon(
                    f"{self.address} did not answer the TCP auth handshake within {self.connect_timeout} s: it "
                    "may not be a litbridge daemon (only a nonce was sent to it)"
                ) from None
            raise LitbridgeError("timeout", f"no handshake from the daemon at {self.address}") from None
        except OSError as exc:
            writer.close()
            raise ConnectionLost(
                f"the connection to {self.address} failed during the handshake: {exc}"
            ) from None
        except BaseException:
            writer.close()
            raise
        self._reader, self._writer = reader, writer
        self._splitter = splitter
        self._fresh = not initial and self._instance is None  # no daemon_id: guess a restart from seqs
        self._connected.set()
        for ev in buffered:
            self._dispatch(ev)

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Connect (no byte sent); a Unix socket whose accept queue is momentarily full is retried briefly."""
        try:
            if self.port is not None:
                coro = asyncio.open_connection(self.host, self.port, limit=_CLIENT_MAX_LINE)
                return await asyncio.wait_for(coro, self.connect_timeout)
            check_socket_path(str(self.socket_path))
            sock = await asyncio.wait_for(
                _unix_connect(str(self.socket_path), min(BUSY_RETRY_FOR, self.connect_timeout / 2)),
                self.connect_timeout,
            )
            return await asyncio.open_unix_connection(sock=sock, limit=_CLIENT_MAX_LINE)
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            raise DaemonNotRunning(self.address, exc.strerror or type(exc).__name__) from None
        except asyncio.TimeoutError:
            raise DaemonNotRunning(self.address, "connect timed out") from None
        except OSError as exc:
            raise DaemonNotRunning(self.address, exc.strerror or str(exc)) from None

    async def _prove_daemon(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, splitter: LineSplitter
    ) -> str:
        """The proof-first TCP handshake (`litbridge.protocol.auth`): send `hello{auth:{nonce}}` only, check
        the daemon's `auth_challenge` proof of the token, return our own proof. Raises UntrustedDaemon."""
        if self._token_found:  # read it again: a restarted daemon writes a new one
            self.token = find_token(self._token_file, self._token_socket) or self.token
        token = self.token
        if not token:
            raise AuthFailed(
                f"no TCP token for {self.address}: {no_token_hint(self._token_file, self._token_socket)}"
            )
        nonce = auth.new_nonce()
        auth_id = self._next_id()
        writer.write(encode({"cmd": "hello", "id": auth_id, "auth": {"nonce": nonce}}))
        where = auth.endpoint(writer.get_extra_info("peername"))
        refuse = f"the listener on {self.address} did not prove it is the litbridge daemon"
        while True:
            chunk = await asyncio.wait_for(reader.read(65536), self.connect_timeout)
            if not chunk:
                raise UntrustedDaemon(
                    f"{refuse}: it closed the connection (only a nonce was sent to it; a daemon older than the "
                    "proof-first handshake does this too)"
                )
            for ev in self._lines(splitter, chunk):
                kind = ev.get("event")
                if kind == "auth_challenge" and ev.get("re") == auth_id:
                    return answer_challenge(token, nonce, ev, where, refuse)
                said = f"{ev.get('message')} [{ev.get('code')}]" if kind == "error" else f"a {kind!r} event"
                said = shown(said[:200])  # escaped: its words must not drive the terminal that shows them
                raise UntrustedDaemon(
                    f"{refuse}: it answered {said} instead of auth_challenge (not litbridge, or a daemon older "
                    "than the proof-first handshake). Only a nonce was sent to it"
                )

    def _forget_seqs(self) -> None:
        self._texts.clear()
        self._recent.clear()  # a later turn compares these seqs with its own `accepted`'s
        self._seen.clear()
        self._seen_order.clear()
        self.last_seq = None

    def _on_server_info(self, ev: Event) -> None:
        """Restart detection: a different `daemon_id` numbers its seqs afresh. Daemons without it are told
        apart by their first seq on the new connection (see `_dispatch`)."""
        instance = ev.get("daemon_id")
        if self._instance is not None and instance is not None and instance != self._instance:
            self._forget_seqs()  # a different daemon: its seq numbers start afresh
        self._instance = instance
        self.server_info = ev

    def _lines(self, splitter: LineSplitter, chunk: bytes) -> list[Event]:
        out: list[Event] = []
        for line in splitter.feed(chunk):
            if isinstance(line, TooLarge) or not line.strip():
                continue
            try:
                ev = decode(line)
            except ProtocolError:
                continue
            if isinstance(ev, dict):
                out.append(ev)
        return out

    async def _read_loop(self) -> None:
        try:
            await self._read_forever()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # never leave callers waiting on a dead reader
            self._fail_everything(ConnectionLost(f"the client's reader failed: {exc!r}"))

    async def _read_forever(self) -> None:
        while True:
            reader = self._reader
            try:
                chunk = await reader.read(65536) if reader is not None else b""
            except (OSError, asyncio.IncompleteReadError):
                chunk = b""
            if chunk:
                for ev in self._lines(self._splitter, chunk):
                    self._dispatch(ev)
                continue
            self._connected.clear()
            if self._writer is not None:
                self._writer.close()
            self._reader = self._writer = None
            if self._closing:
                return
            why = await self._reopen() if self.reconnect else None
            if not self.reconnect or why is not None:
                lost = ConnectionLost(f"lost the connection to the daemon at {self.address}")
                if isinstance(why, AuthFailed):  # still connection_lost for callers; the reason told, chained
                    lost = ConnectionLost(f"{lost.message}; reconnecting failed: {why.message} [{why.code}]")
                    lost.__cause__ = why
                self._fail_everything(lost)
                return

    async def _reopen(self) -> LitbridgeError | None:
        """Reconnect with backoff until `reconnect_timeout`; re-send read-only commands still unanswered.
        Returns None once reconnected, else why not: an AuthFailed / UntrustedDaemon (at once), or ConnectionLost."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.reconnect_timeout
        delay = 0.05
        gone = ConnectionLost(f"lost the connection to the daemon at {self.address}")
        while not self._closing:
            try:
                await self._open(initial=False)
            except AuthFailed as exc:
                return exc
            except LitbridgeError:
                if loop.time() + delay > deadline:
                    return gone
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
                continue
            self.reconnects += 1
            for pending in list(self._pending.values()):
                if pending.cmd in _RESEND_AFTER_RECONNECT and not pending.future.done():
                    with contextlib.suppress(OSError):
                        await self._write(pending.line)
            return None
        return gone

    def _fail_everything(self, exc: LitbridgeError) -> None:
        self._failed = exc
        for pending in list(self._pending.values()):
            if not pending.future.done():
                pending.future.set_exception(exc)
        self._pending.clear()
        for sub in list(self._subscribers):
            sub._fail(exc)
        for turn in list(self._turns):
            turn._fail(exc)

    def _dispatch(self, ev: Event) -> None:
        seq = ev.get("seq")
        if isinstance(seq, int) and not isinstance(seq, bool):
            if self._fresh and self.last_seq is not None and seq <= self.last_seq:
                # The daemon never re-sends what a reconnecting client already had (replay starts after
                # since_seq), so a first seq at or below it on a new connection means a restarted daemon
                # whose numbering began afresh: forget the old numbers instead of dropping its events.
                self._forget_seqs()
            elif seq in self._seen:
                return  # already delivered
            self._fresh = False
            self._seen.add(seq)
            self._seen_order.append(seq)
            if len(self._seen_order) > SEEN_WINDOW:
                self._seen.discard(self._seen_order.popleft())
            if self.last_seq is None or seq > self.last_seq:
                self.last_seq = seq
        kind = ev.get("event")
        if kind == "monitor_ready":
            self._on_server_info(ev)
        elif kind in ("append", "replace") or kind in _TEXT_ENDS:
            ev = self._rebuild(ev, kind)
            kind = ev.get("event")
        re_ = ev.get("re")
        if re_ is not None:
            pending = self._pending.get(str(re_))
            if pending is not None and not pending.future.done():
                del self._pending[str(re_)]
                if kind == "error":
                    pending.future.set_exception(commands.reply_error(ev))
                else:
                    try:
                        result = pending.on_reply(ev) if pending.on_reply else ev
                    except Exception as exc:  # a bad reply must not kill the reader
                        pending.future.set_exception(exc)
                    else:
                        pending.future.set_result(result)
        self.arrivals += 1
        if Turn.remembers(ev):
            self._recent.append((self.arrivals, ev))
        note_question(self._questions, ev)
        for turn in list(self._turns):
            turn._offer(ev)
        for sub in list(self._subscribers):
            sub._offer(ev)

    def _rebuild(self, ev: Event, kind: Any) -> Event:
        """`append` -> the `replace` it stands for (the turn's text cut to `offset`, then `text`); every text
        event keeps the session's current text, the base of the next `append`."""
        key = str(ev.get("session"))
        tid = ev.get("turn_id")
        if kind in _TEXT_ENDS:
            self._texts.pop(key, None)
            return ev
        if kind == "replace":
            self._texts[key] = (tid, str(ev.get("text") or ""))
            return ev
        have = self._texts.get(key)
        base = have[1] if have is not None and have[0] == tid else ""
        offset = ev.get("offset")
        offset = offset if isinstance(offset, int) and 0 <= offset <= len(base) else 0
        piece = str(ev.get("text") or "")
        text = base[:offset] + piece
        self._texts[key] = (tid, text)
        out: Event = {k: v for k, v in ev.items() if k not in ("offset", "text")}
        out["event"] = "replace"
        out["text"] = text
        out["delta"] = {"offset": offset, "text": piece}
        return out

    async def _write(self, line: bytes) -> None:
        async with self._write_lock:
            writer = self._writer
            if writer is None:
                raise ConnectionResetError("not connected")
            writer.write(line)
            await writer.drain()

    async def close(self) -> None:
        """Close the connection; pending commands, streams and turns end with `ConnectionLost`."""
        if self._closing:
            return
        self._closing = True
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(Exception):
                await self._writer.wait_closed()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        self._connected.clear()
        self._fail_everything(ConnectionLost("the client was closed"))

    async def __aenter__(self) -> Client:
        return await self._start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _drop_connection(self) -> None:
        """Abort the socket under the client (tests use it to prove reconnect loses nothing)."""
        if self._writer is not None:
            self._writer.transport.abort()

    # --- commands -----------------------------------------------------------------------------------

    async def request(
        self,
        cmd: str,
        fields: dict[str, Any] | None = None,
        *,
        timeout: float | Literal["default"] | None = "default",
        id: str | None = None,
        on_reply: Callable[[Event], Any] | None = None,
    ) -> Any:
        """Send any command and wait for its reply (the first event whose `re` is the command's `id`).

        Fields whose value is None are left out. Raises `LitbridgeError` on an `error` reply, on timeout
        (`code='timeout'`) and when the connection is gone for good (`ConnectionLost`).

        >>> async def raw(c: Client) -> None:  # doctest: +SKIP
        ...     pong = await c.request("ping")
        """
        if self._failed is not None:
            raise self._failed
        if self._task is None:
            await self._start()
        cmd_id = id or self._next_id()
        line = encode(commands.command(cmd, cmd_id, fields))
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._pending[cmd_id] = _Pending(cmd, line, future, on_reply)
        wait = self.request_timeout if timeout == "default" else timeout

        async def _roundtrip() -> Any:
            await self._send_when_connected(line, future)
            return await future

        try:
            return await asyncio.wait_for(_roundtrip(), wait)
        except asyncio.TimeoutError:
            raise LitbridgeError("timeout", f"no reply to {cmd!r} within {wait} s") from None
        finally:
            self._pending.pop(cmd_id, None)

    async def _call(self, cmd: str, fields: dict[str, Any] | None = None, **options: Any) -> Event:
        """`request` for commands whose reply is the event itself."""
        reply: Event = await self.request(cmd, fields, **options)
        return reply

    async def _send_when_connected(self, line: bytes, future: asyncio.Future[Any]) -> None:
        while not future.done():
            if self._failed is not None:
                raise self._failed
            if not self._connected.is_set():
                # Until reconnected, or until the future fails (the reconnect gave up): never wait past that.
                connected = asyncio.ensure_future(self._connected.wait())
                await asyncio.wait({connected, future}, return_when=asyncio.FIRST_COMPLETED)
                connected.cancel()
                continue
            try:
                await self._write(line)
                return
            except (OSError, RuntimeError):
                # The reader notices the drop and reconnects; read-only commands are re-sent then.
                await asyncio.sleep(0.01)
                if self._connected.is_set():
                    continue

    async def hello(
        self,
        subscribe: Sequence[str] | str | None = None,
        since_seq: int | None = None,
        token: str | None = None,
    ) -> Event:
        """Subscribe to some sessions (`"*"` = all), replay events after `since_seq`; returns `capabilities`.

        The subscription is remembered and renewed on reconnect.
        """
        if subscribe is not None:
            self.subscribe = subscribe
        sub = subscribe if subscribe is None or isinstance(subscribe, str) else list(subscribe)
        reply = await self._call("hello", {"subscribe": sub, "since_seq": since_seq, "token": token})
        self.capabilities = reply
        return reply

    async def ping(self) -> Event:
        """Liveness check; returns the `pong` event."""
        return await self._call("ping")

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
        timeout: float | None = 600.0,
        worktree: bool | str | None = None,
        **extra: Any,
    ) -> Event:
        """Start `cli` (daemon default: "claude") as session `session`; returns the `ready` event.

        `ready` arrives once startup dialogs are handled and the prompt is live (`ready.reused` is true when
        the key already had a live CLI). `worktree` (True, or a branch name) runs the CLI in a new git worktree
        of `working_dir`'s repository (`ready["worktree"]` = {path, branch}); a daemon too old for it raises
        `LitbridgeError("unsupported")` instead of starting the CLI in the main checkout. Extra keyword
        arguments are passed through as fields and driver options (`worktree_allow_dirty=True`).

        >>> async def start(c: Client) -> None:  # doctest: +SKIP
        ...     ready = await c.create("sh", cli="bash", args=["--norc"], working_dir="/tmp")
        ...     ready = await c.create("work", model="sonnet", working_dir="~/project")
        ...     ready = await c.create("fix-1", working_dir="~/project", worktree=True)
        """
        if worktree not in (None, False) and not self.supports("create.worktree"):
            raise LitbridgeError(
                "unsupported", f"the daemon at {self.address} is too old for create worktree (upgrade it)"
            )
        fields = commands.create_fields(
            session,
            cli,
            args=args,
            working_dir=working_dir,
            env=env,
            model=model,
            channel_id=channel_id,
            worktree=worktree,
            extra=extra,
        )
        return await self._call("create", fields, timeout=timeout)

    async def send(
        self,
        session: str,
        content: str,
        *,
        channel_id: str | None = None,
        msg_id: str | None = None,
        timeout: float | Literal["default"] | None = "default",
    ) -> Turn:
        """Send `content` as a turn; returns a `Turn` once the daemon answers `accepted`.

        `msg_id` is the idempotency key (default: a fresh unique id): a send repeated with the same id is
        not delivered twice, which is what makes re-sending after a reconnect safe.

        >>> async def go(c: Client) -> None:  # doctest: +SKIP
        ...     turn = await c.send("work", "hi")
        ...     async for ev in turn:
        ...         print(ev["event"])
        ...     print(turn.terminal)
        """
        key = session_key(session, channel_id)
        turn: Turn = await self.request(
            "send",
            {"session": session, "channel_id": channel_id, "content": content},
            id=msg_id,
            timeout=timeout,
            on_reply=lambda ev: Turn(self, ev, str(ev.get("session") or key)),
        )
        return turn

    async def input(self, session: str, content: str, *, channel_id: str | None = None) -> Event:
        """Type `content` + Enter without observing a turn (slash commands); returns `input_sent`."""
        return await self._call("input", {"session": session, "channel_id": channel_id, "content": content})

    async def keystroke(
        self, session: str, keys: Sequence[str] | str, *, channel_id: str | None = None
    ) -> Event:
        """Send named keys (`Enter`, `Esc`, `Up`, `C-c`, tmux names...); returns `keystroke_sent`.

        A single string is one key name. Unknown names raise `LitbridgeError('bad_key')` and type nothing.

        >>> async def pick_second(c: Client) -> None:  # doctest: +SKIP
        ...     await c.keystroke("work", ["Down", "Enter"])
        """
        return await self._call("keystroke", commands.keystroke_fields(session, keys, channel_id))

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
        """Answer an open `question` by digit, option label or free text; returns `answer_sent`.

        >>> async def allow(c: Client, q: dict) -> None:  # doctest: +SKIP
        ...     await c.answer("work", question_id=q["question_id"], digit=1)
        """
        fields = commands.answer_fields(
            session, question_id=question_id, digit=digit, option=option, text=text, channel_id=channel_id
        )
        return await self._call("answer", fields)

    async def interrupt(self, session: str, *, channel_id: str | None = None) -> Event:
        """Interrupt the running turn; returns the daemon's reply (the turn ends with `interrupted`)."""
        return await self._call("interrupt", {"session": session, "channel_id": channel_id})

    async def dump(self, session: str, *, channel_id: str | None = None) -> Event:
        """The session's screen (`capture`: 50 rows of text) and bookkeeping (`state`, `cursor`, ...)."""
        return await self._call("dump", {"session": session, "channel_id": channel_id})

    async def kill(self, session: str, *, store_resume: bool = False, channel_id: str | None = None) -> Event:
        """Kill the CLI and its process group; returns `killed`. `store_resume` lets the next create resume."""
        return await self._call(
            "kill", commands.kill_fields(session, store_resume=store_resume, channel_id=channel_id)
        )

    def events(
        self,
        session: str | None = None,
        *,
        channel_id: str | None = None,
        turn: str | Turn | None = None,
        kinds: Collection[str] | None = None,
        where: EventFilter | None = None,
    ) -> EventStream:
        """An `EventStream` of this connection's events, filtered by session key, turn id, kinds, predicate.

        >>> async def watch(c: Client) -> None:  # doctest: +SKIP
        ...     async with c.events("work", kinds={"state", "complete"}) as stream:
        ...         async for ev in stream:
        ...             print(ev)
        """
        key = session_key(session, channel_id) if session is not None else None
        turn_id = turn.turn_id if isinstance(turn, Turn) else turn
        kind_set = frozenset(kinds) if kinds is not None else None

        def accept(ev: Event) -> bool:
            if key is not None and ev.get("session") != key:
                return False
            if turn_id is not None and ev.get("turn_id") != turn_id:
                return False
            if kind_set is not None and ev.get("event") not in kind_set:
                return False
            return where is None or where(ev)

        return EventStream(self, accept)

    async def list(self) -> builtins.list[Event]:
        """The sessions: `[{name, state, cli, model, pid, turn_id, queued, channel_id}, ...]`."""
        reply = await self._call("list")
        return builtins.list(reply.get("sessions") or [])
