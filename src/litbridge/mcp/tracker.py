"""What `litbridge mcp` knows of the daemon's sessions, followed from one connection's event stream.

The daemon's events say when a turn ends, which questions are open and what each turn produced, and what was
typed (`accepted.content`, where the daemon fills it: `monitor_ready.features` lists `accepted.content`);
prompts sent through this server are also recorded by `note_prompt` (uncut), the others without a text are
marked as sent by another client. History starts with what the daemon still buffers when the server
connects (`hello{since_seq:0}` replays its ring of `limits.buffer` events) and grows with every event after.
Pure asyncio and the litbridge client: no MCP here, so it is testable on its own (and `litbridge acp` shares
`Bridge` and `Tracker` without needing the MCP SDK).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from litbridge.client import TERMINAL_EVENTS, Client, ConnectionLost, Event, EventStream, LitbridgeError

MAX_TURNS = 200
"""Turns kept per session for the transcript (older ones are summarised as a count)."""

MAX_EVENTS = 2000
"""Recent events kept per session for waiters that are catching up (progress, questions)."""


@dataclass
class TurnRecord:
    turn_id: str
    prompt: str | None = None
    text: str = ""
    tools: list[str] = field(default_factory=list)
    terminal: Event | None = None


@dataclass
class SessionLog:
    key: str
    turns: OrderedDict[str, TurnRecord] = field(default_factory=OrderedDict)
    questions: dict[str, Event] = field(default_factory=dict)
    """Open questions by id, in the order asked."""
    events: deque[tuple[int, Event]] = field(default_factory=lambda: deque(maxlen=MAX_EVENTS))
    count: int = 0
    dropped_turns: int = 0
    running: str | None = None
    """The turn the session is running (its first own event seen, no terminal yet)."""

    def turn(self, turn_id: str) -> TurnRecord:
        rec = self.turns.get(turn_id)
        if rec is None:
            rec = self.turns[turn_id] = TurnRecord(turn_id)
            while len(self.turns) > MAX_TURNS:
                self.turns.popitem(last=False)
                self.dropped_turns += 1
        return rec


ProgressFn = Callable[[Event], Awaitable[None]]


class Tracker:
    """Session logs kept from the event stream; `wait_turn` waits for a turn's end or a new question."""

    def __init__(self) -> None:
        self.sessions: dict[str, SessionLog] = {}
        self.reported: set[str] = set()
        """Question ids already returned to the MCP caller (by `send` or `wait`): not returned again."""
        self.failure: LitbridgeError | None = None
        self.gap: tuple[int, int] | None = None
        """Seqs the daemon no longer had when this server connected (`replay_gap`)."""
        self.last_seq = 0
        """The highest `seq` observed so far."""
        self._tick = asyncio.Event()

    # --- following the stream -------------------------------------------------------------------------

    async def follow(self, stream: EventStream) -> None:
        """Consume `stream` until it ends; a lost connection is kept in `failure` and wakes every waiter."""
        try:
            async for ev in stream:
                self.observe(ev)
                self._changed()
        except LitbridgeError as exc:
            self.failure = exc
        else:
            self.failure = ConnectionLost("the connection to the daemon was closed")
        self._changed()

    def _changed(self) -> None:
        tick, self._tick = self._tick, asyncio.Event()
        tick.set()

    def session(self, key: str) -> SessionLog:
        log = self.sessions.get(key)
        if log is None:
            log = self.sessions[key] = SessionLog(key)
        return log

    def observe(self, ev: Event) -> None:
        kind = ev.get("event")
        seq = ev.get("seq")
        if isinstance(seq, int) and seq > self.last_seq:
            self.last_seq = seq
        if kind == "replay_gap":
            self.gap = (int(ev.get("from_seq") or 0), int(ev.get("to_seq") or 0))
            return
        key = ev.get("session")
        if not isinstance(key, str) or kind == "error":
            return
        if kind in ("killed", "reaped_idle"):
            self.sessions.pop(key, None)  # a later create of the name is a new conversation
            return
        log = self.session(key)
        log.count += 1
        log.events.append((log.count, ev))
        tid = ev.get("turn_id")
        if kind == "question":
            qid = str(ev.get("question_id"))
            log.questions[qid] = ev
        elif kind == "question_closed":
            log.questions.pop(str(ev.get("question_id")), None)
        if not isinstance(tid, str):
            return
        rec = log.turn(tid)
        if kind == "accepted" and isinstance(ev.get("content"), str) and rec.prompt is None:
            rec.prompt = ev["content"]
        if kind == "replace":
            rec.text = str(ev.get("text") or "")
        elif kind == "tool_use":
            rec.tools.append(f"tool {ev.get('name')}: {brief(ev.get('input'))}")
        elif kind == "tool_result":
            mark = "error" if ev.get("is_error") else "result"
            rec.tools.append(f"  {mark}: {brief(ev.get('content'), 300)}")
        elif kind in TERMINAL_EVENTS:
            rec.terminal = ev
            if isinstance(ev.get("content"), str):
                rec.text = ev["content"]
            if log.running == tid:
                log.running = None
            return
        if kind != "accepted" or not ev.get("queued"):
            log.running = tid

    def note_prompt(self, key: str, turn_id: str, prompt: str) -> None:
        """Remember what was sent for `turn_id` (whole: `accepted.content` is cut, and an older daemon has none)."""
        self.session(key).turn(turn_id).prompt = prompt

    def open_question(self, key: str, question_id: str | None = None) -> Event | None:
        log = self.sessions.get(key)
        if log is None or not log.questions:
            return None
        if question_id is not None:
            return log.questions.get(question_id)
        return next(iter(log.questions.values()))

    # --- waiting --------------------------------------------------------------------------------------

    async def caught_up(self, seq: int | None, timeout: float) -> bool:
        """Wait until the events up to `seq` (a client's `last_seq`: delivered, maybe not yet observed here) are
        observed; False after `timeout` or when the stream failed."""
        deadline = time.monotonic() + timeout
        while seq is not None and self.last_seq < seq and self.failure is None:
            tick = self._tick
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(tick.wait(), left)
        return self.failure is None

    def position(self, key: str) -> int:
        """How many events of `key` were seen so far (a `since` for `wait_turn`)."""
        log = self.sessions.get(key)
        return log.count if log is not None else 0

    async def wait_turn(
        self,
        key: str,
        turn_id: str,
        timeout: float,
        progress: ProgressFn | None = None,
        since: int | None = None,
    ) -> dict[str, Any]:
        """The outcome of `turn_id`: its terminal event, or the first open question of the session not yet
        reported to the caller, or `timeout` after `timeout` seconds (the turn keeps running). `progress` is
        called with each event of the session after its `since`-th (default: from now on)."""
        log = self.session(key)
        rec = log.turn(turn_id)
        pos = log.count if since is None else since
        deadline = time.monotonic() + timeout
        while True:
            tick = self._tick
            for n, ev in list(log.events):
                if n > pos:
                    pos = n
                    if progress is not None:
                        await progress(ev)
            if rec.terminal is not None:
                return outcome(key, rec)
            for qid, q in log.questions.items():
                if qid not in self.reported:
                    self.reported.add(qid)
                    return question_outcome(key, turn_id, q)
            if self.failure is not None:
                raise ConnectionLost(
                    f"lost the daemon while waiting for turn {turn_id} of {key}: {self.failure.message}"
                )
            left = deadline - time.monotonic()
            if left <= 0:
                return {
                    "status": "timeout",
                    "session": key,
                    "turn_id": turn_id,
                    "text_so_far": rec.text,
                    "hint": f"the turn is still running: call `wait` with turn_id {turn_id!r} to keep waiting, "
                    "or `interrupt`",
                }
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(tick.wait(), left)

    # --- the transcript resource ----------------------------------------------------------------------

    def transcript(self, key: str) -> str:
        """The session's turns as Markdown: prompt, tool calls, final (or latest) text, how each ended."""
        log = self.sessions.get(key)
        out = [f"# litbridge session {key}", ""]
        out.append(
            "Built from the daemon's events since `litbridge mcp` connected, plus the events the daemon still "
            "buffered then."
        )
        if self.gap is not None:
            out.append(
                f"Older events (seq {self.gap[0]}-{self.gap[1]}) had already left the daemon's buffer."
            )
        if log is None or not log.turns:
            out += ["", "(no turns seen yet)"]
            return "\n".join(out) + "\n"
        if log.dropped_turns:
            out.append(f"{log.dropped_turns} older turns are not kept here.")
        for rec in log.turns.values():
            end = rec.terminal
            status = "running" if end is None else str(end.get("event"))
            out += ["", f"## Turn {rec.turn_id} ({status})", ""]
            prompt = rec.prompt if rec.prompt is not None else "(sent by another client: not in the events)"
            out += ["> " + line for line in prompt.splitlines() or [""]]
            if rec.tools:
                out += ["", *rec.tools]
            out += ["", rec.text or "(no text)"]
            if end is not None and end.get("event") == "turn_error":
                out += ["", f"error [{end.get('kind')}]: {end.get('message')}"]
            elif end is not None and isinstance(end.get("exit_code"), int) and end.get("exit_code"):
                out += ["", f"exit status {end.get('exit_code')}"]
        return "\n".join(out) + "\n"


class Bridge:
    """One daemon connection and the `Tracker` following it; re-opened on the next call after it is lost."""

    def __init__(self, connect: Callable[[], Awaitable[Client]]) -> None:
        self._connect = connect
        self._client: Client | None = None
        self.tracker = Tracker()
        self._follower: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    async def start(self) -> Client:
        """Connect (raises DaemonNotRunning), follow every session's events, replay what the daemon buffers."""
        async with self._lock:
            if self._client is not None and self.tracker.failure is None:
                return self._client
            await self._close_client()
            client: Client = await self._connect()
            tracker = Tracker()
            stream = client.events()  # registered before the replay, so nothing is missed
            self._follower = asyncio.create_task(tracker.follow(stream), name="litbridge-mcp tracker")
            try:
                await client.hello(subscribe="*", since_seq=0)
            except BaseException:
                await client.close()
                raise
            self._client, self.tracker = client, tracker
            return client

    async def client(self) -> Client:
        if self._client is not None and self.tracker.failure is None:
            return self._client
        return await self.start()

    async def _close_client(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()
        if self._follower is not None:
            with contextlib.suppress(BaseException):
                await self._follower
            self._follower = None

    async def close(self) -> None:
        async with self._lock:
            await self._close_client()


def brief(value: Any, limit: int = 200) -> str:
    """One short line for a tool's input or result (the same summary `litbridge send` prints)."""
    from litbridge.cli.send import _short

    return _short(value if value is not None else "", limit)


def outcome(key: str, rec: TurnRecord) -> dict[str, Any]:
    """A finished turn as the `send` / `wait` tools report it."""
    end = rec.terminal or {}
    kind = end.get("event")
    out: dict[str, Any] = {"status": kind, "session": key, "turn_id": rec.turn_id}
    if kind == "turn_error":
        out.update(error_kind=end.get("kind"), message=end.get("message"))
        if end.get("detail"):
            out["detail"] = end.get("detail")
        if rec.text:
            out["content"] = rec.text
        return out
    out["content"] = str(end.get("content") or "")
    if isinstance(end.get("exit_code"), int):
        out["exit_code"] = end["exit_code"]
    return out


def question_outcome(key: str, turn_id: str, q: Event) -> dict[str, Any]:
    """An open question as `send` / `wait` return it: enough to answer it with the `answer` tool."""
    out: dict[str, Any] = {
        "status": "question",
        "session": key,
        "turn_id": turn_id,
        "question_id": q.get("question_id"),
        "kind": q.get("kind"),
        "text": q.get("text"),
        "options": [{"digit": str(o.get("digit")), "label": o.get("label")} for o in q.get("options") or []],
        "hint": "answer it with the `answer` tool (an option's digit or label, or text), then call `wait` "
        f"with turn_id {turn_id!r} for the rest of the turn",
    }
    if q.get("detail") is not None:
        out["detail"] = q.get("detail")
    return out
