"""The turn desk: the one owner of a session's turns.

A session's turns live here and nowhere else: turn ids, the FIFO send queue, client message-id de-duplication,
the held/dispatch/pump logic (a send held with no turn running is reported and timed out, never held silently
or forever), the exactly-one-terminal-event-per-turn invariant, question ids and their orphaning, the interrupt
fallback, and the turns a dead CLI ends. The driver's own record of a turn (the engine's submit and interrupt
marks, `Turn.data`) is kept on the same `Turn`, so the session and the engine read one state and never have to
be kept in step. The desk emits event dicts (built by `protocol.events`) and knows nothing of the PTY.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from litbridge.errors import DriverError
from litbridge.protocol import events as ev
from litbridge.protocol.spec import TURN_ERROR_KINDS
from litbridge.timers import Cancellable

Emit = Callable[[dict[str, Any]], None]

TURN_STATES = frozenset(("thinking", "responding", "dialog"))  # what `state` reads while a turn runs
INTERRUPT_FALLBACK = 10.0  # seconds: end an interrupted turn ourselves if the driver never does (any source)
HOLD_NOTICE = (
    2.0  # a send held this long with no turn running is reported (`dialog_blocked`, with the reason)
)
HOLD_LIMIT = 120.0  # ... and ended with `turn_error{timeout}` if it is still held this long
SEEN_IDS_MAX = 4096

_turn_ids = itertools.count(1)
_question_ids = itertools.count(1)


def _new_turn_id() -> str:
    return f"t{next(_turn_ids)}"


@dataclass(eq=False)
class Turn:
    """One turn, from `accepted` to its terminal event: the desk's bookkeeping and the driver's record of it.

    `phase`: `queued` (waiting in the queue), `dispatched` (the desk handed it to the driver), `running` (the
    driver took it: `TurnEngine.turn` is this turn), `ending` (the driver is ending it; the terminal event is
    being emitted)."""

    text: str
    started: float = 0.0
    """`loop.time()` the driver began it (engine deadlines)."""
    id: str = field(default_factory=_new_turn_id)
    re: Any = None
    phase: str = "queued"
    organic: bool = False
    replaced: str = ""
    """The last `replace` text emitted (de-duplication; the interrupt fallback's content)."""
    interrupt_re: Any = None
    fallback_armed: bool = False
    """The interrupt fallback is armed for this turn."""
    held: bool = False
    """`startup_hold` or `dialog_blocked` was said for it: its dispatch says `dialog_released`."""
    blocked: bool = False
    """`dialog_blocked` was said for it (a send held at start-up is told again why)."""
    witnessed: bool = False
    """The CLI's own record (transcript) holds this turn's prompt."""
    went_busy: bool = False
    last_text: str = ""
    """The driver's response text so far."""
    interrupt_at: float | None = None
    interrupt_source: str | None = None
    enters: int = 0
    retypes: int = 0
    data: dict[str, Any] = field(default_factory=dict)
    """Driver-private per-turn values."""


@dataclass
class Question:
    id: str
    turn_id: str | None
    kind: str
    text: str
    options: list[dict[str, Any]] = field(default_factory=list)
    answered: bool = False  # an answer was delivered to the driver; if its turn ends first, it still counts


class DeskHost(Protocol):
    """What the desk needs of its session."""

    key: str
    channel_id: str | None
    loop: asyncio.AbstractEventLoop
    state: str
    dead: bool
    started: bool
    ready: bool
    driver: Any

    @property
    def log(self) -> logging.Logger | logging.LoggerAdapter[logging.Logger]: ...

    def call_later(self, delay: float, callback: Callable[[], None]) -> Cancellable: ...

    def set_state(self, state: str) -> None: ...


class TurnDesk:
    """The current turn, the queue behind it, and the questions of a session; see the module docstring."""

    def __init__(self, host: DeskHost, emit: Emit) -> None:
        self.host = host
        self._emit = emit
        self.current: Turn | None = None
        self.queue: deque[Turn] = deque()
        self.questions: dict[str, Question] = {}
        self._seen_ids: OrderedDict[Any, Turn] = OrderedDict()
        self._end_watchers: list[Callable[[Turn], None]] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self._pump_pending = False
        self._hold_timer: Cancellable | None = None
        self._held: tuple[Turn, float] | None = None  # the queue head reported held, and since when
        self.dispatching = False
        self._last_thinking: str | None = None

    @property
    def turn_id(self) -> str | None:
        return self.current.id if self.current else None

    def watch_ends(self, callback: Callable[[Turn], None]) -> None:
        """`callback(turn)` whenever a turn ends, whoever ended it (the driver, a fallback, the CLI's death)."""
        self._end_watchers.append(callback)

    def _event(self, name: str, **fields: Any) -> None:
        self._emit(ev.generic(name, self.host.key, self.host.channel_id, **fields))

    # ------------------------------------------------------------------------------------------ sends
    def repeat(self, msg_id: Any, re: Any) -> bool:
        """A send whose message id was seen: answered `accepted{duplicate}` with the first one's turn."""
        seen = self._seen_ids.get(msg_id) if msg_id is not None else None
        if seen is None:
            return False
        h = self.host
        self._emit(
            ev.accepted(
                h.key, h.channel_id, seen.id, seen in self.queue, re, duplicate=True, content=seen.text
            )
        )
        return True

    def enqueue(self, content: str, msg_id: Any = None, re: Any = None) -> Turn:
        """A new send: `accepted`, then at once when nothing runs and input is live, else queued (FIFO)."""
        h = self.host
        turn = Turn(content, re=re)
        if msg_id is not None:
            self._seen_ids[msg_id] = turn
            while len(self._seen_ids) > SEEN_IDS_MAX:
                self._seen_ids.popitem(last=False)
        immediate = h.ready and self.current is None and not self.queue and self._can_accept()
        self._emit(ev.accepted(h.key, h.channel_id, turn.id, not immediate, re, content=content))
        if not h.started:
            turn.held = True
            self._emit(ev.startup_hold(h.key, h.channel_id))
        elif h.state == "dialog" and self.current is None:
            turn.held = turn.blocked = True  # a send hit a modal: held until it is answered (reference D.8a)
            self._event("dialog_blocked", dialog=self._hold_reason())
        self.queue.append(turn)
        if immediate:
            self._pump()
        else:
            self.schedule_pump()
        return turn

    def begin_organic(self, text: str) -> str | None:
        """A prompt typed into the CLI itself (attach), not sent by us: a turn like any other
        (`accepted{organic}`, then exactly one terminal event); queued sends wait for it. -> its id, or None when
        a turn is already open (the driver keeps reporting into that)."""
        if self.host.dead or self.current is not None:
            return None
        turn = Turn(text, organic=True, phase="dispatched")
        self.current = turn
        self._last_thinking = None
        h = self.host
        self._emit(ev.accepted(h.key, h.channel_id, turn.id, False, organic=True, content=text or None))
        return turn.id

    # ------------------------------------------------------------------------------------------ dispatch
    def _can_accept(self) -> bool:
        try:
            return bool(self.host.driver.can_accept_input())
        except Exception:
            self.host.log.exception("driver.can_accept_input")
            return False

    def _hold_reason(self) -> str:
        try:
            return str(self.host.driver.hold_reason() or "the CLI's input is not live")
        except Exception:
            self.host.log.exception("driver.hold_reason")
            return "the CLI's input is not live"

    def schedule_pump(self) -> None:
        """`_pump` soon, if a send waits (every screen evaluation asks; appending a send pumps by itself)."""
        if self.queue and not self._pump_pending and not self.host.dead:
            self._pump_pending = True
            self.host.loop.call_soon(self._pump)

    def _pump(self) -> None:
        """Dispatch the next queued send if no turn runs and the driver says input is live; a send held with
        no turn running is watched (`_hold_check`): never held silently, never held forever."""
        self._pump_pending = False
        h = self.host
        if h.dead or self.current is not None or not self.queue or not h.started or self.dispatching:
            return
        if not self._can_accept():
            if self._hold_timer is None:
                head = self.queue[0]
                self._hold_timer = h.call_later(HOLD_NOTICE, lambda: self._hold_check(head))
            return
        if self._hold_timer is not None:
            self._hold_timer.cancel()
            self._hold_timer = None
        self._held = None
        turn = self.queue.popleft()
        if turn.held:
            self._event("dialog_released")
        turn.phase = "dispatched"
        self.current = turn
        self._last_thinking = None
        h.set_state("thinking")
        self.dispatching = True
        self._spawn(self._submit(turn))

    def _hold_check(self, head: Turn) -> None:
        """The queue's head is still held with no turn running: say why (`dialog_blocked`), and after
        HOLD_LIMIT end it with `turn_error{timeout}` (the next queued send gets its own chance)."""
        self._hold_timer = None
        if self.host.dead or self.current is not None or not self.queue or self.queue[0] is not head:
            return
        if self._can_accept():
            self.schedule_pump()
            return
        now = self.host.loop.time()
        if self._held is None or self._held[0] is not head:
            self._held = (head, now)
            if not head.blocked:
                head.held = head.blocked = True
                self._event("dialog_blocked", dialog=self._hold_reason())
        held_for = now - self._held[1] + HOLD_NOTICE
        if held_for < HOLD_LIMIT:
            self._hold_timer = self.host.call_later(
                min(5.0, HOLD_LIMIT - held_for), lambda: self._hold_check(head)
            )
            return
        self.queue.popleft()
        self._held = None
        self._emit(
            ev.turn_error(
                self.host.key,
                self.host.channel_id,
                head.id,
                f"not sent: the CLI's input did not become live within {HOLD_LIMIT:.0f}s ({self._hold_reason()})",
                "timeout",
            )
        )
        self.schedule_pump()

    async def _submit(self, turn: Turn) -> None:
        try:
            await self.host.driver.submit(turn.text)
        except asyncio.CancelledError:
            raise
        except DriverError as exc:
            if self.current is turn:
                kind = exc.code if exc.code in TURN_ERROR_KINDS else "api_error"
                self.error(exc.message, kind)
        except Exception as exc:
            self.host.log.exception("driver.submit")
            if self.current is turn:
                self.error(f"submit failed: {exc}", "api_error")
        finally:
            self.dispatching = False
            self.schedule_pump()

    def _spawn(self, coro: Any) -> None:
        task = self.host.loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------------------------------ the running turn
    def text(self, text: str) -> None:
        """`replace` for the open turn (de-duplicated; ignored with no open turn)."""
        turn = self.current
        if turn is None or text == turn.replaced:
            return
        turn.replaced = text
        self._emit(ev.replace(self.host.key, self.host.channel_id, text, turn.id))

    def thinking(self, text: str) -> None:
        if text != self._last_thinking:
            self._last_thinking = text
            self._emit(ev.thinking(self.host.key, self.host.channel_id, text))

    def interrupt(self, re: Any) -> Turn | None:
        """The `interrupt` command: the running turn (its `interrupted` will echo `re`), or None."""
        if self.current is not None:
            self.current.interrupt_re = re
        return self.current

    def interrupt_noted(self) -> None:
        """An interrupt from any source is under way: arm the fallback once per turn."""
        turn = self.current
        if turn is not None and not turn.fallback_armed:
            turn.fallback_armed = True
            self.host.call_later(INTERRUPT_FALLBACK, lambda: self._interrupt_fallback(turn))

    def _interrupt_fallback(self, turn: Turn) -> None:
        if self.current is not turn:
            return
        self.host.log.warning("interrupt not honoured within %.0fs: ending the turn", INTERRUPT_FALLBACK)
        driver = self.host.driver
        try:
            if driver is not None and driver.give_up_interrupt() and self.current is not turn:
                return  # the driver ended it, state first
        except Exception:
            self.host.log.exception("driver.give_up_interrupt")
        if self.current is turn:
            if self.host.state in TURN_STATES:
                self.host.set_state("idle")  # state first, then the terminal event, as a driver ends a turn
            self.interrupted(turn.replaced)

    # ------------------------------------------------------------------------------------------ turn ends
    def complete(
        self,
        content: str,
        usage: dict[str, int] | None = None,
        source: str = "screen",
        exit_code: int | None = None,
    ) -> None:
        t = self.current
        if t is not None:
            h = self.host
            self._end(ev.complete(h.key, h.channel_id, content, t.id, usage, source, exit_code))

    def interrupted(self, content: str = "") -> None:
        t = self.current
        if t is not None:
            self._end(ev.interrupted(self.host.key, self.host.channel_id, t.id, content, t.interrupt_re))

    def error(self, message: str, kind: str = "api_error", detail: str | None = None) -> None:
        t = self.current
        if t is not None:
            self._end(ev.turn_error(self.host.key, self.host.channel_id, t.id, message, kind, detail))

    def _end(self, event: dict[str, Any]) -> bool:
        turn = self.current
        if turn is None or event.get("turn_id") != turn.id:
            return False
        self.current = None
        for watcher in list(self._end_watchers):
            try:
                watcher(turn)
            except Exception:
                self.host.log.exception("turn end watcher")
        for q in list(self.questions.values()):
            if q.turn_id == turn.id:
                self.close_question(q.id, "answered" if q.answered else "orphaned")
        self._emit(event)
        self.schedule_pump()
        return True

    def close(self, why: str) -> None:
        """The CLI is gone: the running turn and every queued send end `turn_error{cli_exited}`, open questions
        are orphaned. The session has set its state `dead` first (state before the turns it ends)."""
        for task in list(self._tasks):
            task.cancel()
        h = self.host
        if self.current is not None:
            self._end(ev.turn_error(h.key, h.channel_id, self.current.id, why, "cli_exited"))
        while self.queue:
            t = self.queue.popleft()
            self._emit(
                ev.turn_error(h.key, h.channel_id, t.id, f"{why} before the message was sent", "cli_exited")
            )
        for q in list(self.questions.values()):
            self.close_question(q.id, "orphaned")

    # ------------------------------------------------------------------------------------------ questions
    def open_question(
        self,
        kind: str,
        text: str,
        options: list[dict[str, Any]],
        detail: Any = None,
        source: str | None = None,
    ) -> str:
        qid = f"q{next(_question_ids)}"
        self.questions[qid] = Question(qid, self.turn_id, kind, text, list(options))
        h = self.host
        self._emit(ev.question(h.key, h.channel_id, qid, kind, text, options, detail, source))
        return qid

    def close_question(self, question_id: str, reason: str = "answered") -> None:
        if self.questions.pop(question_id, None) is not None:
            self._emit(ev.question_closed(self.host.key, self.host.channel_id, question_id, reason))

    def mark_answered(self, question_id: str | None) -> None:
        """An answer reached the driver: if the CLI ends the turn before the dialog goes, the question still
        closes `answered`, not orphaned."""
        if question_id is not None and question_id in self.questions:
            self.questions[question_id].answered = True
