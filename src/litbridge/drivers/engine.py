"""The turn engine: the settle/dialog/submit/interrupt machinery every screen-driven CLI driver shares.

A driver knows its CLI (how to read a screen, which keys a dialog takes, where a turn's text is, when the CLI's
own record says a turn ended); the engine knows none of that and owns the bookkeeping around it:

- **settle debounce**: a reading (state + dialog) must hold `Timing.settle` seconds before it is committed
  (half-drawn frames never open a question or end a turn);
- **state**: `dialog` while a question is open, `thinking`/`responding` while the CLI is busy or a turn is
  open, `idle` otherwise; OSC 7501 (`drivers/osc7501.py`) leads the screen when the CLI reports it, and a
  `working` report contradicted by an idle screen for `Timing.status_stale` is dropped;
- **input readiness**: `can_accept_input()`; `host.input_ready()` on every not-ready -> ready edge;
- **verified submit**: type the message, press Enter as its own write, then re-press Enter / re-type until the
  CLI shows the turn started (busy, or the driver's `witness()`), or end it with `turn_error{timeout}`; it
  re-types only after the CLI wrote output since the typing (a silent CLI has not read its input yet);
- **one terminal event per turn**: `complete()` / `interrupted()` / `failed()` end the engine's turn once; the
  state is updated *before* the host emits the terminal event;
- **interrupts, whatever started them**: `interrupt()` (the `interrupt` command), an Esc typed through attach or
  `keystroke` (`on_keys()`), the CLI's own cancel (`note_interrupt("cli")`): once the CLI reads idle for
  `Timing.interrupt_grace` the turn ends `interrupted` (unless the driver's record ends it first); every
  interrupt is reported to the host (`DriverHost.interrupt_noted`), whose fallback ends the turn if the CLI
  never reads idle;
- **questions**: a settled dialog opens one `question`, a new dialog closes the old one (`answered` when we
  answered it, else `dismissed`), the dialog going away closes it; `answer()` drives the cursor one key per
  settled frame (never a blind Enter);
- **startup**: the dialog loop (one key per settled frame, `dialog_dismissed` per dialog), `unknown_dialog` for
  modals it cannot parse, ready once a live prompt holds;
- **hold reasons**: `hold_reason()` says in words why input is not live (an open question, a `blocked`
  status, a busy CLI, a draft in the box...); the session reports a held send with it (`dialog_blocked`);
- **deadlines**: a per-turn deadline (`Timing.turn_deadline`, None = none) ends a turn with `turn_error{timeout}`.

What a driver supplies is the `EngineHooks` interface (subclass it; every method but `read_screen` has a
default). Readings are any object with the `Reading` attributes (Claude's `ScreenState` is one). The engine
never reads rows itself and never decides what text a turn produced: `EngineHooks.response_text` does.

Wiring: the driver creates `TurnEngine(host, hooks, timing)` in `__init__` and forwards the `Driver` calls
(`on_screen`, `on_status`, `on_exit`, `can_accept_input`, `submit`, `interrupt`, `keys`, `answer`, `startup`)
to it; `drivers/engine_driver.EngineDriver` does both for a driver that subclasses it.

Turn state has one owner, the session's `TurnDesk` (`host.turns`, `litbridge.turns`): `turn` is the desk's
running turn, `begin()` takes the turn the desk dispatched, and a turn the desk ends by itself (its interrupt
fallback, the CLI's death) is gone from here at once; nothing is kept in step.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from litbridge.drivers import osc7501
from litbridge.drivers.base import DriverError, DriverHost
from litbridge.keys import encode_keys
from litbridge.timers import Cancellable
from litbridge.turns import Turn, TurnDesk

__all__ = [
    "DialogLike",
    "EngineHooks",
    "OptionLike",
    "Reading",
    "Timing",
    "Turn",
    "TurnEngine",
    "holds_prompt",
]

ESC = b"\x1b"
CLEAR_GAP = 0.15
"""Between the writes of `EngineHooks.clear_keys` (two Escs in one read are one key to some CLIs)."""
PUT_BACK_WATCH, PUT_BACK_TRIES, PUT_BACK_AGAIN = 12.0, 3, 2.5
"""How long after an interrupted turn a prompt put back into the box is watched for, how often it is cleared, and
the seconds between two clears: a CLI too starved to redraw within them may have taken the first after all, and
a clear key pressed twice in quick succession on an empty box can mean "exit" to a CLI."""


def prompt_words(text: str) -> str:
    """A message as compared wherever the CLI shows it back (its input box, its record): whitespace aside (a CLI
    may wrap it, trim it or change its line ends)."""
    return " ".join(text.split())


def holds_prompt(draft: str, text: str) -> bool:
    """The input box's `draft` is (the start of) the message `text`, whitespace aside: the message still in the
    box, or a prompt put back."""
    head = prompt_words(draft)[:40]
    return bool(head) and prompt_words(text).startswith(head)


# ---------------------------------------------------------------------------------------------- readings


# Members are read-only properties: the engine only reads them, and a read-only member accepts what the
# drivers pass (dataclass fields of narrower types, e.g. `list[Option]`, `Dialog | None`, or a property).


class OptionLike(Protocol):
    @property
    def digit(self) -> Any: ...

    @property
    def label(self) -> str: ...

    def as_dict(self) -> dict[str, Any]: ...


class DialogLike(Protocol):
    """A parsed modal: what the question shows and how to find an option."""

    @property
    def kind(self) -> str: ...

    @property
    def text(self) -> str: ...

    @property
    def detail(self) -> str: ...

    def wire_detail(self) -> Any: ...

    @property
    def options(self) -> Sequence[OptionLike]: ...

    def signature(self) -> tuple[Any, ...]: ...

    def find(self, *, digit: int | None = None, label: str | None = None) -> int | None: ...

    def grew_from(self, earlier: Any) -> bool: ...


class Reading(Protocol):
    """One screen as the driver's rules read it.

    `state`: "blank" (nothing drawn yet), "idle" (input prompt shown), "busy" (the CLI is working),
    "dialog" (a modal the driver parsed into `dialog`), "other" (anything else, e.g. an unparseable modal).
    """

    @property
    def state(self) -> str: ...

    @property
    def dialog(self) -> DialogLike | None: ...

    @property
    def spinner(self) -> str | None: ...

    @property
    def live_prompt(self) -> bool:
        """The input box accepts typing (no dialog over it)."""
        ...

    @property
    def draft(self) -> str:
        """Text sitting unsent in the input box ("" when empty)."""
        ...


@dataclass
class Timing:
    """The engine's clocks (seconds). A driver passes its own values where its CLI needs them."""

    settle: float = 0.15
    """A reading must hold this long before it is committed."""
    dialog_quiet: float = 0.5
    """Output quiet this long after a dialog first paints before a key is sent."""
    key_quiet: float = 0.2
    """... and this long after the repaint our previous key caused, before the next key."""
    enter_gap: float = 0.12
    """Message typed -> Enter, as separate writes (an Enter in the same read is taken as part of a paste)."""
    startup_timeout: float = 60.0
    dialog_gone: float = 15.0
    """Startup: a dialog answered is waited on this long to go before it is answered again (a CLI starved of CPU
    can take seconds to act on a key; answering twice sends the second key to whatever comes next)."""
    submit_timeout: float = 15.0
    interrupt_grace: float = 0.5
    """After an interrupt, the CLI reading idle this long ends the turn `interrupted`."""
    status_stale: float = 3.0
    ready_stable: float = 0.3
    """Startup: an idle live prompt must hold this long before `ready` (screen evidence only)."""
    ready_stable_status: float = 0.05
    """... when the CLI itself has reported status `idle`."""
    unknown_modal_wait: float = 5.0
    frame_quiet: float = 0.03
    """Response text is read only after output paused this long (whole frames)."""
    stream_every: float = 0.1
    tick: float = 0.25
    """The bookkeeping timer (interrupt grace, deadlines, `EngineHooks.on_tick`) while a turn is open."""
    tick_busy: float = 1.0
    """... while the CLI is not idle, for hooks whose `on_tick` acts only on an idle CLI (`tick_idle_only`): the
    interrupt grace needs an idle CLI too, so nothing the tick checks is due before it reads idle (a deadline
    caps it)."""
    turn_deadline: float | None = None
    """A turn still open this long after it started ends with `turn_error{timeout}` (None: no deadline)."""


@dataclass
class Question:
    id: str
    dialog: DialogLike
    signature: tuple[Any, ...]
    first_paint: float
    answered: bool = False


# ---------------------------------------------------------------------------------------------- hooks


class EngineHooks:
    """What a driver supplies to the engine. Override `read_screen`; the rest have working defaults."""

    def read_screen(self) -> Reading:
        """The current screen's reading (the engine caches it per frame)."""
        raise NotImplementedError

    def dialog_keys(self, dialog: DialogLike, index: int) -> list[str]:
        """Key names (`litbridge.keys`) that move the cursor to option `index` and confirm it. The engine
        sends the first one, waits for the repaint, and asks again; [] means it cannot be answered."""
        return []

    def startup_answer(self, dialog: DialogLike) -> str | None:
        """At startup: the option label to pick by ourselves in this dialog, or None to relay it as a question."""
        return None

    def question_kind(self, dialog: DialogLike) -> str:
        """`question.kind` for a dialog (permission, trust, choice, text)."""
        return "choice"

    def unknown_modal(self) -> str | None:
        """An excerpt of a modal the rules cannot parse (reported as `unknown_dialog`), or None."""
        return None

    def type_message(self, text: str) -> None:
        """Write the message into the CLI's input (without Enter)."""
        raise NotImplementedError

    def submit_key(self) -> bytes:
        """The bytes that submit a typed message."""
        return b"\r"

    def interrupt_key(self) -> bytes:
        """The bytes that interrupt a running turn."""
        return ESC

    def input_live(self) -> bool:
        """An extra condition for typing (e.g. the CLI has enabled bracketed paste); default True."""
        return True

    def is_interrupt_key(self, data: bytes) -> bool:
        """Keys typed by a user (attach, `keystroke`) that interrupt this CLI's running turn."""
        return data == ESC

    def response_text(self, turn: Turn, reading: Reading) -> str | None:
        """The open turn's response as the screen shows it now, or None (nothing to show yet). The streaming tick
        does not ask again while the screen (`screen_key`), the turn and its text so far are what they were at
        the last ask whose answer was not taken: an answer must follow from those (and the driver's record)."""
        return None

    def status_busy(self, status: osc7501.ProgramStatus) -> bool:
        """Whether a program-status report means the CLI is working."""
        return osc7501.state_of(status) == "working"

    def status_idle(self, status: osc7501.ProgramStatus) -> bool:
        return osc7501.state_of(status) in ("idle", "done")

    def on_committed(self, reading: Reading) -> None:
        """A reading was committed (settled); called after the engine's own bookkeeping. A busy reading that reads
        as the committed busy one (`_reads_as_committed`) is not committed again: act on idle or changed screens."""

    tick_idle_only = False
    """`on_tick` does nothing while the CLI is not idle (`TurnEngine.cli_idle()`): the engine then ticks every
    `Timing.tick_busy`, not every `Timing.tick`, until it reads idle."""

    def on_tick(self, turn: Turn) -> None:
        """Every `Timing.tick` while a turn is open: driver fallbacks (e.g. a screen-only turn end)."""

    def on_turn_end(self, turn: Turn, how: str) -> None:
        """The engine's turn ended (`complete`, `interrupted`, `error`); e.g. clear a put-back draft."""

    def interrupt_settled(self, turn: Turn) -> bool:
        """After an interrupt the CLI reads idle: may the engine end the turn now? (e.g. False while the
        CLI's own record of the interrupt, which carries the partial text, may still be on its way)."""
        return True

    def clear_keys(self) -> tuple[bytes, ...]:
        """Writes (sent `CLEAR_GAP` apart) that empty the input box of a prompt the CLI put back there when its
        turn was interrupted; () means this CLI does not put prompts back."""
        return ()


def _resolve(fut: asyncio.Future[None]) -> None:
    """`wait_change`'s timeout: the wait ends as if the screen had changed."""
    if not fut.done():
        fut.set_result(None)


# ---------------------------------------------------------------------------------------------- engine


class _EngineState:
    """The engine's screen side: clocks, events in, the settle debounce, questions, state and readiness."""

    def __init__(self, host: DriverHost, hooks: EngineHooks, timing: Timing | None = None) -> None:
        self.host = host
        self.hooks = hooks
        self.timing = timing or Timing()
        self.started = False
        self.exited = False
        self.exit_code: int | None = None
        self.screen: Reading | None = None
        """The last committed (settled) reading."""
        self.status: osc7501.ProgramStatus | None = None
        """The last OSC 7501 report (None before any)."""
        self.status_at = 0.0
        # a stub host without turns (a launch-only test) gets a desk of the engine's own
        self.turns: TurnDesk = getattr(host, "turns", None) or TurnDesk(cast(Any, host), lambda event: None)
        self.turns.watch_ends(self._turn_gone)
        self.question: Question | None = None
        self.prev_final = ""
        self.last_change = 0.0
        self._frame = 0
        self._cache_key: tuple[Any, ...] | None = None
        self._text_key: tuple[Any, ...] | None = None
        """What the last `response_text` read was asked on (screen, turn, its text so far): asked again on
        the same, it would say the same, so the streaming tick skips it."""
        self._content = 0
        """Counts the frames that changed more than the spinner row (`on_screen`): the screen part of
        `_text_key`. Most busy frames redraw only the spinner (its glyph, its seconds), which no turn's text is
        read from, so the tick does not read the text again for them."""
        self._content_key: Any = None
        """The reading key (`_cache_key`) `_content` was last counted at: a screen `on_screen` has not seen yet
        counts as changed."""
        self._spinner_row: int | None = None
        """The row the spinner was drawn on in the last frame that changed it."""
        self._cache: Reading | None = None
        self._pending_key: tuple[Any, ...] | None = None
        self._pending_since = 0.0
        self._settle_handle: Cancellable | None = None
        self._stream_handle: Cancellable | None = None
        self._tick_handle: Cancellable | None = None
        self._tick_slow = False
        """The pending tick is a `Timing.tick_busy` one: an idle CLI or an interrupt brings it forward."""
        self._last_stream_at = 0.0
        self._waiters: list[asyncio.Future[None]] = []
        self._watches: set[asyncio.Task[None]] = set()
        """`_confirm_taken` watches still running (kept referenced until done)."""
        self._dialog_paint: dict[tuple[Any, ...], float] = {}
        self._idle_since: float | None = None
        self._input_was_ready = False
        self._unknown_reported: str | None = None
        self._last_spinner_body: str | None = None
        self._after_turn = False
        """A turn just ended: busy signals trailing its end (a spinner still drawn, a working status not yet
        withdrawn) do not make the session `thinking` again until the CLI reads not busy or a turn starts."""
        self._ended_dialog: tuple[Any, ...] | None = None
        """The dialog of a question closed with its turn while still drawn: not asked again until it goes."""
        self.unrecorded: deque[str] = deque(maxlen=8)
        """The prompts of the last turns that ended before the CLI's record showed them (an interrupt read off
        the screen while the record lagged): their prompt lines, read late, belong to no open turn."""

    @property
    def hooks(self) -> EngineHooks:
        return self._hooks

    @hooks.setter
    def hooks(self, hooks: EngineHooks) -> None:
        self._hooks = hooks
        self._extra = getattr(hooks, "screen_key_extra", None)
        """The driver's `screen_key_extra` (None: the rules read nothing besides the text and the title)."""

    @property
    def turn(self) -> Turn | None:
        """The turn the driver is running (the desk's, once `begin()` took it), or None."""
        t = self.turns.current
        return t if t is not None and t.phase == "running" else None

    def _turn_gone(self, turn: Turn) -> None:
        """The desk ended a turn; one we were still running was ended by the session itself."""
        if turn.phase == "running":
            self.prev_final = turn.last_text
            self._input_was_ready = False
        if not turn.witnessed and turn.phase in ("running", "ending") and turn.text.strip():
            self.unrecorded.append(turn.text)

    # ------------------------------------------------------------------------------------------ clocks
    def now(self) -> float:
        return self.host.loop.time()

    def quiet_for(self) -> float:
        """Seconds since the last output chunk or screen change."""
        last = max(getattr(self.host, "last_output_at", 0.0) or 0.0, self.last_change)
        return self.now() - last

    def screen_key(self) -> tuple[Any, ...]:
        """What a reading depends on: the terminal's generation (it changes only when a row's text does), the
        window title, the driver's rules, and whatever else of the screen they read (the driver's optional
        `screen_key_extra()`, e.g. the colours of the cells that show a selection). A terminal without
        generations: every output chunk and frame."""
        term = getattr(self.host, "terminal", None)
        gen = getattr(term, "generation", None)
        if gen is None:
            return (self._frame, getattr(self.host, "last_output_at", 0.0) or 0.0)
        extra = self._extra  # what the rules read besides text (colours)
        return (
            gen,
            getattr(term, "title", None),
            id(getattr(self.hooks, "rules", None)),
            extra() if extra else (),
        )

    def reading(self) -> Reading:
        """The current screen's reading, computed once per screen generation (not per call).

        The hot path (every reader of a frame asks) compares the generation int, the title and the rules with
        the cached key's; the key (`screen_key`) is built from the same reads only when they differ."""
        cache, key = self._cache, self._cache_key
        if self._extra is None:
            term = getattr(self.host, "terminal", None)
            gen = getattr(term, "generation", None)
            if gen is not None:
                title = getattr(term, "title", None)
                rules = id(getattr(self._hooks, "rules", None))
                if (
                    cache is not None
                    and key is not None
                    and gen == key[0]
                    and title == key[1]
                    and rules == key[2]
                ):
                    return cache
                key = (gen, title, rules, ())
                cache = self._cache = self.hooks.read_screen()
                self._cache_key = key
                return cache
        key = self.screen_key()
        if cache is None or key != self._cache_key:
            cache = self._cache = self.hooks.read_screen()
            self._cache_key = key
        return cache

    def invalidate(self) -> None:
        """Forget the cached reading (e.g. the driver switched rules)."""
        self._cache = None
        self._content += 1

    def _wake(self) -> None:
        for fut in self._waiters:
            if not fut.done():
                fut.set_result(None)
        self._waiters.clear()

    async def wait_change(self, timeout: float) -> None:
        """Until the screen changes, a status report arrives or the CLI exits; at most `timeout` seconds.

        The timeout resolves the same future a change would (a loop timer, as `asyncio.wait_for` arms): no
        wrapper task, no cancellation to wait for when it expires. The start-up dialog loops wait like this
        after every frame, and over a thousand creates `wait_for`'s timeouts were a tenth of the daemon's profile
        samples."""
        loop = self.host.loop
        fut: asyncio.Future[None] = loop.create_future()
        self._waiters.append(fut)
        timer = loop.call_later(max(timeout, 0.0), _resolve, fut)
        try:
            await fut
        finally:
            timer.cancel()
            if fut in self._waiters:
                self._waiters.remove(fut)

    def write_keys(self, names: list[str]) -> None:
        self.host.write(encode_keys(names))

    # ------------------------------------------------------------------------------------------ events in
    def on_screen(self, changed: list[tuple[int, str]] | None = None) -> None:
        """The screen changed (the driver's `on_screen`; `changed`: the rows that did, None for unknown)."""
        self._frame += 1
        now = self.now()
        self.last_change = now
        self._wake()
        cls = self.reading()
        self._count_content(changed, cls.spinner)
        if cls.state == "busy" and self.turn is not None:
            self.turn.went_busy = True  # even a busy blip shorter than the debounce proves the Enter landed
        sig = cls.dialog.signature() if cls.dialog is not None else None
        key = (cls.state, sig)
        if key != self._pending_key:
            self._pending_key, self._pending_since = key, now
            if sig is not None:
                self._dialog_paint.setdefault(sig, now)
        if self._settle_handle is None and not self._reads_as_committed(cls):
            self._settle_handle = self.host.call_later(self.timing.settle, self._settle)
        if (
            (self.turn is not None or cls.state == "busy")
            and self._stream_handle is None
            and self.stream_would_act(cls)
        ):
            self.arm_stream(now)

    def _reads_as_committed(self, cls: Reading) -> bool:
        """`cls`, a busy frame, reads as the committed busy screen does in all a commit takes from it: a spinner,
        no dialog, the same input box. Such a frame (the spinner's animation, a streaming answer's rows: most
        frames of a busy CLI) arms no settle: committing it would decide nothing differently (the state, the
        question, input readiness and the drivers' commit hooks read only those, and busy), and the streaming
        tick reads the text and relays the spinner."""
        screen = self.screen
        return (
            cls.state == "busy"
            and cls.spinner is not None
            and cls.dialog is None
            and screen is not None
            and screen.state == "busy"
            and screen.spinner is not None
            and screen.dialog is None
            and self.question is None
            and screen.live_prompt == cls.live_prompt
            and screen.draft == cls.draft
        )

    def arm_stream(self, now: float | None = None) -> None:
        """The streaming tick, unless one is armed: at the leading edge after a pause (the first text shows at
        once), then at most every `stream_every`."""
        if self._stream_handle is not None or self.exited:
            return
        since = (self.now() if now is None else now) - self._last_stream_at
        delay = (
            self.timing.frame_quiet if since >= self.timing.stream_every else self.timing.stream_every - since
        )
        self._stream_handle = self.host.call_later(max(delay, self.timing.frame_quiet), self.stream)

    def _count_content(self, changed: list[tuple[int, str]] | None, spinner: str | None) -> None:
        """`_content` += 1 unless the frame changed only the spinner's row (the same row as before)."""
        key, last = self._cache_key, self._content_key
        if key == last:
            return  # output that changed no row (a cursor move, the same text again)
        self._content_key = key
        if changed and spinner is not None and key and last and key[1:] == last[1:]:  # the same title, rules
            only = True
            for y, row in changed:
                if row.strip() != spinner:
                    only = False
                elif y != self._spinner_row:
                    only, self._spinner_row = False, y
            if only:
                return
        self._content += 1

    def on_status(self, status: osc7501.ProgramStatus | None) -> None:
        """An OSC 7501 report (already parsed by `osc7501.parse`)."""
        if osc7501.state_of(status) is None:
            return
        assert status is not None
        self.status = status
        self.status_at = self.now()
        self._wake()
        if self.turn is not None and self.hooks.status_busy(status):
            self.turn.went_busy = True
        if self.started:
            self.update_state()
            self.check_input_ready()
            if self.hooks.status_busy(status):
                # re-check once the report could have gone stale (nothing else may wake the session)
                self.host.call_later(self.timing.status_stale + 0.05, self._recheck)

    def on_exit(self, exit_code: int | None) -> None:
        self.exited = True
        self.exit_code = exit_code
        self._wake()
        for h in (self._settle_handle, self._stream_handle, self._tick_handle):
            if h is not None:
                h.cancel()
        self._settle_handle = self._stream_handle = self._tick_handle = None

    def on_keys(self, data: bytes) -> None:
        """Keys a user typed (attach or `keystroke`): an interrupt key during a turn is an interrupt."""
        if self.turn is not None and self.hooks.is_interrupt_key(data):
            self.note_interrupt("keys")

    def _recheck(self) -> None:
        if not self.exited:
            self.update_state()
            self.check_input_ready()

    # ------------------------------------------------------------------------------------------ settle
    def _settle(self) -> None:
        self._settle_handle = None
        cls = self.reading()
        key = (cls.state, cls.dialog.signature() if cls.dialog is not None else None)
        now = self.now()
        if key != self._pending_key:
            self._pending_key, self._pending_since = key, now
        if now - self._pending_since >= self.timing.settle - 1e-6:
            self.commit(cls)
        else:
            self._settle_handle = self.host.call_later(
                self.timing.settle - (now - self._pending_since), self._settle
            )

    def _set_screen(self, cls: Reading) -> None:
        if cls.state != "idle":
            self._idle_since = None
        elif self._idle_since is None:
            self._idle_since = self.now()
        self.screen = cls

    def commit(self, cls: Reading) -> None:
        """Take `cls` as the settled screen: questions, unknown modals, state, streaming, input readiness."""
        self._set_screen(cls)
        if not self.started:
            return
        dialog = cls.dialog if cls.state in ("dialog", "other") else None
        if dialog is not None and dialog.signature() == self._ended_dialog:
            dialog = None  # the CLI's record ended this dialog's turn before the screen took it down
        if dialog is not None:
            sig = dialog.signature()
            if self.question is None or self.question.signature != sig:
                # the answer given to a first paint drives the dialog painted further (`drive_dialog`)
                answered = self.question is not None and self.question.answered
                grown = answered and dialog.grew_from(self.question.dialog)  # type: ignore[union-attr]
                self.close_question()
                qid = self.host.open_question(
                    self.hooks.question_kind(dialog),
                    dialog.text,
                    [o.as_dict() for o in dialog.options],
                    dialog.wire_detail(),
                    "cli-dialog",
                )
                self.question = Question(qid, dialog, sig, self._dialog_paint.get(sig, self.now()), grown)
            else:
                self.question.dialog = dialog
        elif self.question is not None and cls.state != "blank":
            self.close_question()
        if cls.dialog is None:
            self._dialog_paint.clear()
            self._ended_dialog = None
        if cls.state == "other" and cls.dialog is None:
            excerpt = self.hooks.unknown_modal()
            if excerpt is not None and excerpt != self._unknown_reported:
                self._unknown_reported = excerpt  # a modal we cannot parse: say so once, never type into it
                self.host.emit("unknown_dialog", dialog=excerpt)
        elif cls.state in ("idle", "busy"):
            self._unknown_reported = None
        if self.turn is not None and cls.state == "busy":
            self.turn.went_busy = True
        self.update_state()
        if self.turn is not None:
            self.stream()
        self.hooks.on_committed(cls)
        self.check_input_ready()

    def close_question(self) -> None:
        q, self.question = self.question, None
        if q is not None:
            self.host.close_question(q.id, "answered" if q.answered else "dismissed")

    # ------------------------------------------------------------------------------------------ state
    def status_working(self) -> bool:
        """The status says working, unless an idle screen has contradicted it for `status_stale` (a lost
        `done` report must not hold the session busy forever)."""
        if self.status is None or not self.hooks.status_busy(self.status):
            return False
        if self.screen is not None and self.screen.state == "idle" and self._idle_since is not None:
            return self.now() - max(self._idle_since, self.status_at) < self.timing.status_stale
        return True

    def status_blocked(self) -> bool:
        return osc7501.state_of(self.status) == "blocked"

    def busy(self) -> bool:
        screen = self.screen
        if self.status is not None:
            # the status leads the screen by a few ms both ways; a busy screen with status idle needs a spinner
            return self.status_working() or (
                screen is not None and screen.state == "busy" and screen.spinner is not None
            )
        return screen is not None and screen.state == "busy"

    def update_state(self) -> None:
        """Set the session state from the question, the busy signals and the open turn."""
        if not self.started:
            self.host.set_state("starting")
            return
        if self.exited:
            return
        turn = self.turn
        busy = self.busy()
        if self.question is not None:
            state = "dialog"
        elif turn is not None or (busy and not self._after_turn):
            state = "responding" if turn is not None and turn.last_text else "thinking"
        elif self._after_turn or (self.screen is not None and self.screen.state in ("idle", "busy")):
            state = "idle"
        else:
            return
        if self._after_turn and not busy:
            self._after_turn = False
        self.host.set_state(state)
        if self._tick_slow and self.cli_idle():
            self._arm_tick()  # what the slow tick waited for: the hooks' idle checks, the interrupt grace

    def cli_idle(self) -> bool:
        """The CLI reads idle: a settled idle screen with no question and nothing busy."""
        return (
            self.screen is not None
            and self.screen.state == "idle"
            and self.question is None
            and not self.busy()
        )

    def can_accept_input(self) -> bool:
        screen = self.screen
        return (
            self.started
            and not self.exited
            and self.turn is None
            and self.question is None
            and screen is not None
            and screen.state == "idle"
            and screen.live_prompt
            and not screen.draft
            and not self.status_working()
            and self.hooks.input_live()
        )

    def hold_reason(self) -> str | None:
        """Why `can_accept_input()` is False, in words (`dialog_blocked` when a send is held)."""
        screen = self.screen
        if not self.started:
            return "the CLI is starting"
        if self.exited:
            return "the CLI exited"
        if self.question is not None:
            return f"question {self.question.id} ({self.question.dialog.kind}) is open"
        if self.status_blocked():
            status = self.status or {}
            return f"the CLI reports it is blocked ({status.get('kind') or status.get('msg') or 'no reason given'})"
        if self.status_working() or self.busy():
            return "the CLI is busy"
        if screen is None or screen.state != "idle" or not screen.live_prompt:
            return f"the CLI shows no input prompt (screen: {screen.state if screen else 'blank'})"
        if screen.draft:
            return f"unsent text is in the CLI's input box: {screen.draft[:60]!r}"
        if not self.hooks.input_live():
            return "the CLI's input is not live yet"
        return None

    def check_input_ready(self) -> None:
        ready = self.can_accept_input()
        if ready and not self._input_was_ready:
            self.host.input_ready()
        self._input_was_ready = ready

    # ------------------------------------------------------------------------------------------ turn side
    # Called from here, implemented by `_EngineTurns` (the engine is only ever used as `TurnEngine`).
    def note_interrupt(self, source: str) -> None:
        raise NotImplementedError

    def stream(self) -> None:
        raise NotImplementedError

    def stream_would_act(self, cls: Reading) -> bool:
        raise NotImplementedError

    def _arm_tick(self, delay: float | None = None, slow: bool = False) -> None:
        raise NotImplementedError


class _EngineTurns(_EngineState):
    """The engine's turn side: one terminal event per turn, interrupts, verified submit, streaming."""

    # ------------------------------------------------------------------------------------------ turns
    def begin(self, text: str) -> Turn:
        """Take the turn the desk dispatched for this send (a detached one if there is none: never `turn`)."""
        turn = self.turns.current
        if turn is None or turn.phase != "dispatched":
            turn = Turn(text)
        turn.phase = "running"
        turn.started = self.now()
        self._after_turn = False
        self._input_was_ready = False
        self._arm_tick()
        return turn

    def begin_organic(self, text: str) -> Turn | None:
        """A prompt typed into the CLI itself (attach): a turn like any other, if none is open."""
        if self.turn is not None or not self.started:
            return None
        if self.host.begin_organic_turn(text) is None or self.turns.current is None:
            return None
        turn = self.turns.current
        turn.phase, turn.started, turn.organic, turn.witnessed = "running", self.now(), True, True
        self._after_turn = False
        self._input_was_ready = False
        self._arm_tick()
        self.arm_stream()  # its text may be on the screen already: frames armed no tick without a turn
        self.update_state()  # working now, as for a dispatched send (not at the next frame)
        return turn

    def witness(self) -> None:
        """The CLI's own record shows the open turn's prompt: the submit is verified."""
        if self.turn is not None and not self.turn.witnessed:
            self.turn.witnessed = True
            self.arm_stream()  # the text is read differently once witnessed; no frame may come to arm it

    def set_text(self, text: str) -> None:
        """The open turn's response so far (`replace`)."""
        turn = self.turn
        if turn is None or not text or text == turn.last_text:
            return
        turn.last_text = text
        self.host.turn_text(text)
        self.update_state()

    def _finish(self, how: str) -> Turn | None:
        """End the engine's turn and settle the state first, so `state` precedes the terminal event."""
        turn = self.turn
        if turn is None:
            return None
        turn.phase = "ending"  # no longer `turn`; the desk holds it until the host emits its terminal event
        self.prev_final = turn.last_text
        self._input_was_ready = False
        if self._tick_handle is not None:
            self._tick_handle.cancel()
            self._tick_handle = None
            self._tick_slow = False
        cls = self.reading()
        q = self.question
        if q is not None:
            # the turn's question ends with it, before the terminal event, so `state` never reads `dialog`
            # after it (`orphaned`, as the session would close it, unless we answered it); a dialog the CLI's
            # record ended but the screen still draws is not asked again
            self.question = None
            if cls.dialog is not None:
                self._ended_dialog = cls.dialog.signature()
            self.host.close_question(q.id, "answered" if q.answered else "orphaned")
        self._after_turn = True  # state first, then the terminal event: settled, not busy
        if cls.state in ("idle", "busy"):
            # the record can land before the settle debounce of the screen that follows an answered dialog:
            # take that screen now, so a closed dialog's question is dropped before the terminal event
            self.commit(cls)
        self.update_state()
        self.hooks.on_turn_end(turn, how)
        return turn

    def complete(
        self,
        text: str,
        usage: dict[str, int] | None = None,
        source: str = "screen",
        exit_code: int | None = None,
    ) -> bool:
        """End the open turn normally; False if there was none."""
        turn = self._finish("complete")
        if turn is None:
            return False
        last = turn.last_text
        if text and text != last and (not last or (source != "transcript" and len(text) >= len(last))):
            # finished before the first stream tick, or read off the screen after the last one: the last
            # `replace` is the content (a transcript's exact text may differ from the screen's: its driver
            # decides whether to restate it; a shorter screen reading, the visible end of an answer taller
            # than the screen, would overwrite the streamed whole)
            self.host.turn_text(text)
        if exit_code is None:
            self.host.turn_complete(text, usage, source)
        else:
            self.host.turn_complete(text, usage, source, exit_code)
        self.check_input_ready()
        return True

    def interrupted(self, text: str | None = None) -> bool:
        turn = self._finish("interrupted")
        if turn is None:
            return False
        self.host.turn_interrupted(text if text else turn.last_text)
        self.check_input_ready()
        keys = self.hooks.clear_keys()
        if keys:
            self._watch(self._clear_put_back(turn, keys))
        return True

    def failed(self, message: str, kind: str = "api_error", detail: str | None = None) -> bool:
        turn = self._finish("error")
        if turn is None:
            return False
        self.host.turn_error(message, kind, detail)
        self.check_input_ready()
        return True

    # ------------------------------------------------------------------------------------------ interrupts
    def interrupt(self) -> None:
        """The `interrupt` command: the CLI's interrupt key, then the grace watch."""
        self.host.write(self.hooks.interrupt_key())
        self.note_interrupt("command")

    def note_interrupt(self, source: str) -> None:
        """An interrupt happened (`command`, `keys` typed by a user, `cli` = the CLI's own cancel)."""
        turn = self.turn
        if turn is None:
            return
        if turn.interrupt_at is None:
            turn.interrupt_at = self.now()
            turn.interrupt_source = source
        self.host.interrupt_noted()
        self._arm_tick(0.05)

    def _arm_tick(self, delay: float | None = None, slow: bool = False) -> None:
        """The bookkeeping tick in `delay` (`Timing.tick`), unless one is pending; a slow one gives way."""
        if self.exited:
            return
        if self._tick_handle is not None:
            if not self._tick_slow or slow:
                return
            self._tick_handle.cancel()
        self._tick_slow = slow
        self._tick_handle = self.host.call_later(self.timing.tick if delay is None else delay, self._on_tick)

    def _on_tick(self) -> None:
        self._tick_handle = None
        self._tick_slow = False
        turn = self.turn
        if turn is None or self.exited:
            return
        now = self.now()
        self.check_deadlines(now)
        if self.turn is turn:
            self.hooks.on_tick(turn)
        turn = self.turn
        if turn is None:
            return
        if self.hooks.tick_idle_only and turn.interrupt_at is None and not self.cli_idle():
            delay = self.timing.tick_busy
            deadline = self.timing.turn_deadline
            if deadline is not None:
                # just past the deadline: a timer at it exactly can fire a float's hair before it
                delay = min(delay, max(turn.started + deadline - now + 0.001, self.timing.tick))
            self._arm_tick(delay, slow=True)
        else:
            self._arm_tick()

    def check_deadlines(self, now: float | None = None) -> None:
        """Interrupt grace and the per-turn deadline (also called by drivers that poll)."""
        turn = self.turn
        if turn is None or not self.started:
            return
        now = self.now() if now is None else now
        if turn.interrupt_at is not None and self.cli_idle():
            idle_from = max(turn.interrupt_at, self._idle_since or turn.interrupt_at)
            if now - idle_from >= self.timing.interrupt_grace and self.hooks.interrupt_settled(turn):
                self.interrupted(turn.last_text)
                return
        deadline = self.timing.turn_deadline
        if deadline is not None and now - turn.started >= deadline:
            self.failed(f"the turn did not end within {deadline:.0f}s", "timeout")

    # ------------------------------------------------------------------------------------------ submit
    async def submit(self, text: str) -> None:
        """Type `text`, press Enter as its own write, and verify the CLI took it (see the module docstring)."""
        turn = self.begin(text)
        typed_at = self.now()
        self.hooks.type_message(text)
        await asyncio.sleep(self.timing.enter_gap)
        if self.turn is not turn:
            return
        self.host.write(self.hooks.submit_key())
        turn.enters = 1
        last_enter = self.now()
        deadline = last_enter + self.timing.submit_timeout
        while self.turn is turn and not (turn.witnessed or turn.went_busy):
            if self.exited:
                return
            await self.wait_change(0.3)
            now = self.now()
            if self.turn is not turn or turn.witnessed or self.exited:
                return
            if turn.went_busy:
                break
            if self.question is not None or (self.screen is not None and self.screen.state == "dialog"):
                deadline = max(deadline, now + 5.0)  # never press Enter into a dialog; wait for it
                continue
            if now > deadline:
                self.failed("the message was not submitted (the CLI never showed it started)", "timeout")
                return
            cls = self.reading()
            if cls.state != "idle" or not cls.live_prompt or now - self.last_change < 0.2:
                continue
            if cls.draft and now - last_enter >= 0.9 and turn.enters < 4:
                self.host.write(self.hooks.submit_key())  # the text is in the box but the Enter was eaten
                turn.enters += 1
                last_enter = now
            elif (
                not cls.draft
                and now - last_enter >= 2.5
                and turn.retypes < 1
                and self.quiet_for() < now - typed_at
            ):
                # the typing was swallowed: the CLI drew its screen since, and the box is empty. A CLI that
                # has drawn nothing since has not read its input yet (a CPU-starved one can take seconds):
                # typing again then would queue the text twice, so it waits (for the submit deadline)
                typed_at = self.now()
                self.hooks.type_message(text)
                await asyncio.sleep(self.timing.enter_gap)
                if self.turn is turn:
                    self.host.write(self.hooks.submit_key())
                turn.retypes += 1
                last_enter = self.now()
        if self.turn is turn and turn.went_busy:
            # watched beside the turn, not by the submit: the session's next send must not wait on the watch
            self._watch(self._confirm_taken(turn, text, last_enter))

    def _watch(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run a watch beside the session (kept referenced until done)."""
        task = self.host.loop.create_task(coro)
        self._watches.add(task)
        task.add_done_callback(self._watches.discard)

    async def _confirm_taken(self, turn: Turn, text: str, last_enter: float) -> None:
        """The busy that ended the submit's wait may not have been the CLI taking the message: a CLI still busy
        with the end of the previous turn (Copilot wrapping up a denied tool call) ignores an Enter, and then
        reads idle with the message still in its box. Until the turn shows text, its record or a question, such
        a box gets the Enter again (up to the submit's four). Not once the turn is being interrupted: an Esc before
        the first token puts the prompt back in the box too, and Enter would send it again."""
        until = self.now() + self.timing.submit_timeout
        while self.turn is turn and turn.enters < 4:
            await self.wait_change(0.3)
            now = self.now()
            if (
                self.turn is not turn
                or self.exited
                or turn.witnessed
                or turn.last_text
                or turn.interrupt_at is not None
                or self.question is not None
                or now > until
            ):
                return
            cls = self.reading()
            if (
                cls.state == "idle"
                and cls.live_prompt
                and holds_prompt(cls.draft, text)
                and not self.busy()
                and now - self.last_change >= 0.2
                and now - last_enter >= 0.9
            ):
                self.host.write(self.hooks.submit_key())
                turn.enters += 1
                last_enter = now

    async def _clear_put_back(self, turn: Turn, keys: tuple[bytes, ...]) -> None:
        """An interrupted CLI may put the turn's prompt back into its input box, draw it only after the turn
        ended, or miss the keys that clear it (a starved CLI can read two Escs as one): until the next turn starts
        or PUT_BACK_WATCH passes, an idle box still holding the prompt gets the keys again, PUT_BACK_AGAIN apart."""
        until = self.now() + PUT_BACK_WATCH
        tries, last = 0, -PUT_BACK_WATCH
        while tries < PUT_BACK_TRIES:
            await self.wait_change(0.3)
            now = self.now()
            if self.turn is not None or self.exited or now > until:
                return
            cls = self.reading()
            if (
                cls.state != "idle"
                or not cls.live_prompt
                or not holds_prompt(cls.draft, turn.text)
                or now - self.last_change < 0.2
                or now - last < PUT_BACK_AGAIN
            ):
                continue
            for i, key in enumerate(keys):
                if i:
                    await asyncio.sleep(CLEAR_GAP)
                    if self.turn is not None or self.exited:
                        return
                self.host.write(key)
            tries += 1
            last = self.now()

    # ------------------------------------------------------------------------------------------ streaming
    def _text_state(self, turn: Turn) -> tuple[Any, ...]:
        """What the open turn's text is read from: the screen's content (`_content`, or the reading key of a frame
        `on_screen` has not counted yet) and the turn's state; the same key reads the same text."""
        ck = self._cache_key
        screen = self._content if ck == self._content_key else ck
        return (screen, id(turn), turn.started, turn.witnessed, turn.last_text, self.prev_final)

    def stream_would_act(self, cls: Reading) -> bool:
        """Whether a streaming tick on this frame could relay anything: the turn's text state changed since the
        last read, or the spinner's text did (not its glyph). Most busy frames are the spinner's animation only; a
        tick armed for one of those read nothing and relayed nothing (25 of the 201 stream calls over four Claude
        recordings) and cost a timer and a wake-up. The tick's rate cap is unchanged: the next frame that does
        change something arms it as before."""
        turn = self.turn
        if turn is not None and self._text_state(turn) != self._text_key:
            return True
        spinner = cls.spinner if cls.state == "busy" else None
        return bool(spinner) and spinner[2:] != self._last_spinner_body  # type: ignore[index]

    def _relay_spinner(self, spinner: str | None) -> None:
        """`thinking` for the spinner line, once per change of its text (not per animation frame)."""
        if not spinner:
            return
        body = spinner[2:]
        if body != self._last_spinner_body:
            self._last_spinner_body = body
            self.host.turn_thinking(spinner)

    def stream(self) -> None:
        """Read the open turn's text off the screen (between frames) and relay it, or relay the spinner."""
        self._stream_handle = None
        now = self._last_stream_at = self.now()
        if self.question is not None or self.exited:
            return
        since_output = now - (getattr(self.host, "last_output_at", 0.0) or 0.0)
        if since_output < self.timing.frame_quiet:
            # a frame split across reads looks like garbage for a moment: read the screen between frames
            self._stream_handle = self.host.call_later(
                self.timing.frame_quiet - since_output + 0.005, self.stream
            )
            return
        cls = self.reading()
        spinner = cls.spinner if cls.state == "busy" else None
        turn = self.turn
        text = None
        if turn is not None:
            key = self._text_state(turn)
            if key != self._text_key:
                # the same screen for the same turn state was read last time and its text not taken: skip it
                text = self.hooks.response_text(turn, cls)
                self._text_key = key
        if (
            turn is not None
            and text
            and text != turn.last_text
            and text != self.prev_final
            and len(text) * 2 >= len(turn.last_text)
        ):
            self.set_text(text)
        else:
            self._relay_spinner(spinner)


class TurnEngine(_EngineTurns):
    """See the module docstring. One per driver instance; this level adds dialogs and startup."""

    # ------------------------------------------------------------------------------------------ dialogs
    async def answer(
        self,
        question_id: str | None,
        digit: str | int | None = None,
        option: str | None = None,
        text: str | None = None,
    ) -> dict[str, Any]:
        """Answer the open question: by digit, option label, or a label given as text. -> {question_id, digit}
        of the option answered (for `answer_sent`)."""
        q = self.question
        if q is None or (question_id and question_id != q.id):
            raise DriverError(
                "no_question",
                "no dialog is waiting on this session"
                if q is None
                else f"question {question_id} is not open (open: {q.id})",
            )
        dialog = q.dialog
        idx: int | None = None
        labels = ", ".join(f"{o.digit}. {o.label}" for o in dialog.options)
        if digit is not None and str(digit).strip():
            try:
                idx = dialog.find(digit=int(str(digit).strip()))
            except ValueError:
                raise DriverError("bad_field", f"digit must be a number, got {digit!r}") from None
        elif option:
            idx = dialog.find(label=option)
        elif text:
            idx = dialog.find(label=text)
            if idx is None:
                raise DriverError(
                    "bad_field",
                    f"text answers are not supported for this {dialog.kind} question (it has no free-text "
                    f"field); answer with a digit or an option label (options: {labels})",
                )
        if idx is None:
            raise DriverError("bad_field", f"no such option (options: {labels})")
        q.answered = True
        picked = dialog.options[idx]
        await self.drive_dialog(q.signature, picked.label, dialog=q.dialog)
        return {"question_id": q.id, "digit": str(picked.digit)}

    def _key_wait(self, first_paint: float, keys_sent: int, now: float) -> float:
        """Seconds until the dialog has settled enough for the next key (<= 0: now)."""
        t = self.timing
        return max(
            t.dialog_quiet - (now - first_paint),
            (t.key_quiet if keys_sent else t.dialog_quiet) - self.quiet_for(),
        )

    async def drive_dialog(
        self,
        signature: tuple[Any, ...],
        label: str,
        sent: list[str] | None = None,
        dialog: DialogLike | None = None,
    ) -> bool:
        """Move the cursor to `label` and confirm: one key per settled frame, never a blind Enter.
        Returns True once the confirming key was sent (or the dialog went away); keys go into `sent`.
        `dialog` is the dialog as it was asked: one that grew from it (painted further) is driven on (`commit`
        counts its question as answered)."""
        first = self._dialog_paint.get(signature, self.now())
        changed = True
        last_key = 0.0
        keys_sent = 0
        deadline = self.now() + 20.0
        while not self.exited and self.now() < deadline:
            now = self.now()
            cls = self.reading()
            current = cls.dialog
            if current is not None and dialog is not None and current.grew_from(dialog):
                dialog, signature = current, current.signature()
                first = self._dialog_paint.get(signature, now)
            if current is None or current.signature() != signature:
                return True
            dialog = current
            wait = self._key_wait(first, keys_sent, now)
            settled = wait <= 0
            if settled and (changed or now - last_key > 2.0):
                idx = dialog.find(label=label)
                keys = self.hooks.dialog_keys(dialog, idx) if idx is not None else []
                if not keys:
                    return False
                self.write_keys(keys[:1])
                if sent is not None:
                    sent.append(keys[0])
                keys_sent += 1
                last_key = now
                changed = False
                # cursor moves (a row of options: Left/Right)
                if keys[0] not in ("Up", "Down", "Left", "Right"):
                    return True
            before = self.last_change
            await self.wait_change(0.5 if settled or not changed else wait + 0.005)
            if self.last_change != before:
                changed = True
        return False

    # ------------------------------------------------------------------------------------------ startup
    async def startup(self) -> None:
        """Until input is live: answer the dialogs `hooks.startup_answer` names (one key per settled frame),
        relay others as questions, report unparseable modals. Raises DriverError on exit or timeout."""
        t = self.timing
        deadline = self.now() + t.startup_timeout
        idle_since: float | None = None
        unknown_since: float | None = None
        while True:
            if self.exited:
                raise DriverError("spawn_failed", f"the CLI exited during startup (code {self.exit_code})")
            now = self.now()
            if now > deadline:
                raise DriverError(
                    "timeout", f"the CLI did not reach its prompt within {t.startup_timeout:.0f}s"
                )
            cls = self.reading()
            dialog = cls.dialog
            label = (
                self.hooks.startup_answer(dialog) if cls.state == "dialog" and dialog is not None else None
            )
            if dialog is not None and label is not None:
                idle_since = unknown_since = None
                sent: list[str] = []
                ok = await self.drive_dialog(dialog.signature(), label, sent)
                if not ok and not self.exited and self.reading().dialog is not None:
                    raise DriverError("startup_dialog", f"cannot answer the {dialog.kind} dialog by itself")
                # wait until this dialog is gone (or replaced) before looking again
                end = self.now() + t.dialog_gone
                while not self.exited and self.now() < end:
                    d = self.reading().dialog
                    if d is None or d.signature() != dialog.signature():
                        break
                    await self.wait_change(0.3)
                if sent and not self.exited:  # a CLI that died under the keys dismissed nothing
                    self.host.emit("dialog_dismissed", dialog=dialog.kind, keys=sent)
                continue
            if cls.state == "idle" and cls.live_prompt and self.hooks.input_live():
                unknown_since = None
                idle_since = idle_since if idle_since is not None else now
                status_idle = self.status is not None and self.hooks.status_idle(self.status)
                need = t.ready_stable_status if status_idle else t.ready_stable
                if now - idle_since >= need - 1e-6:
                    break
                await self.wait_change(need - (now - idle_since) + 0.005)
                continue
            idle_since = None
            if dialog is not None:
                # a modal we do not answer by ourselves: relay it as a question once it has settled
                unknown_since = unknown_since if unknown_since is not None else now
                if now - unknown_since >= 1.5 and self.quiet_for() >= t.dialog_quiet:
                    self.started = True
                    self.commit(cls)
                    break
            else:
                excerpt = self.hooks.unknown_modal() if cls.state == "other" else None
                if excerpt is None:
                    unknown_since = None
                else:
                    # a modal we cannot even parse: never type into it; tell the client and hand over
                    unknown_since = unknown_since if unknown_since is not None else now
                    if now - unknown_since >= t.unknown_modal_wait and self.quiet_for() >= t.dialog_quiet:
                        self.host.emit("unknown_dialog", dialog=excerpt)
                        self._unknown_reported = excerpt
                        break
            await self.wait_change(0.25)
        self.started = True
        self._set_screen(self.reading())
        self.update_state()
        self._input_was_ready = self.can_accept_input()
