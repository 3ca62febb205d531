"""The turn engine's bookkeeping, against a recording host and scripted readings on a virtual clock."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from litbridge.drivers.base import DriverError
from litbridge.drivers.dialog import Dialog, Option
from litbridge.drivers.engine import EngineHooks, Timing, Turn, TurnEngine
from litbridge.turns import TurnDesk
from litbridge.vclock import VirtualTimeLoop

Opt, Dlg = Option, Dialog  # the one dialog model every driver's rules return


@dataclass
class R:
    state: str
    dialog: Dlg | None = None
    spinner: str | None = None
    live_prompt: bool = False
    draft: str = ""


IDLE = R("idle", live_prompt=True)
BUSY = R("busy", spinner="✻ Working…")


def dialog(kind: str = "permission", cursor: int = 0) -> R:
    opts = [Opt(1, "Yes"), Opt(2, "No")]
    opts[cursor].selected = True
    return R("dialog", Dlg(kind, "Do you want to proceed?", opts))


class Host:
    """A recording DriverHost: every call lands in `calls` as (name, args...)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.key = "s"
        self.terminal = None
        self.loop = loop
        self.log = logging.getLogger("test")
        self.last_output_at = 0.0
        self.spawned_at = 0.0
        self.state = "starting"
        self.channel_id = None
        self.dead = False
        self.started = self.ready = True
        self.driver = None
        self.turns = TurnDesk(self, lambda event: None)  # the turns' own events are recorded below
        self.pid = None
        self.calls: list[tuple[Any, ...]] = []
        self.writes: list[bytes] = []
        self._q = 0

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def close_stdin(self) -> None:
        pass

    def call_later(self, delay: float, callback: Callable[[], None]) -> asyncio.TimerHandle:
        return self.loop.call_later(delay, callback)

    def set_state(self, state: str) -> None:
        if state != self.state:
            self.calls.append(("state", state))
            self.state = state

    def turn_text(self, text: str) -> None:
        self.calls.append(("replace", text))

    def turn_thinking(self, text: str) -> None:
        self.calls.append(("thinking", text))

    def tool_use(self, *a: Any) -> None: ...

    def tool_result(self, *a: Any) -> None: ...

    @property
    def turn_id(self) -> str | None:
        return self.turns.turn_id

    def dispatch(self, text: str) -> None:
        """What the session's pump does: the next send becomes the desk's turn, for the driver to take."""
        self.turns.current = Turn(text, phase="dispatched")

    def _end(self, *call: Any) -> None:
        if self.turns.current is not None:
            self.calls.append(call)
            self.turns.error("ended")

    def turn_complete(self, content: str, usage: Any = None, source: str = "screen") -> None:
        self._end("complete", content, source)

    def turn_interrupted(self, content: str = "") -> None:
        self._end("interrupted", content)

    def interrupt_noted(self) -> None:
        self.calls.append(("interrupt_noted",))

    def turn_error(self, message: str, kind: str = "api_error", detail: str | None = None) -> None:
        self._end("turn_error", kind)

    def open_question(
        self, kind: str, text: str, options: Any, detail: Any = None, source: Any = None
    ) -> str:
        self._q += 1
        self.calls.append(("question", kind, f"q{self._q}"))
        return f"q{self._q}"

    def close_question(self, question_id: str, reason: str = "answered") -> None:
        self.calls.append(("question_closed", question_id, reason))

    def open_questions(self) -> list[str]:
        return []

    def input_ready(self) -> None:
        self.calls.append(("input_ready",))

    def begin_organic_turn(self, text: str) -> str | None:
        return self.turns.begin_organic(text)

    def emit(self, event: str, **fields: Any) -> None:
        self.calls.append((event, fields))

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]


class Hooks(EngineHooks):
    def __init__(self) -> None:
        self.current: R = R("blank")
        self.typed: list[str] = []
        self.text: str | None = None
        self.ended: list[str] = []

    def read_screen(self) -> R:  # type: ignore[override]
        return self.current

    def dialog_keys(self, dlg: Any, index: int) -> list[str]:
        sel = next(i for i, o in enumerate(dlg.options) if o.selected)
        if sel < index:
            return ["Down"] * (index - sel) + ["Enter"]
        if sel > index:
            return ["Up"] * (sel - index) + ["Enter"]
        return ["Enter"]

    def startup_answer(self, dlg: Any) -> str | None:
        return "Yes" if dlg.kind == "trust" else None

    def question_kind(self, dlg: Any) -> str:
        return dlg.kind

    def type_message(self, text: str) -> None:
        self.typed.append(text)

    def response_text(self, turn: Any, reading: Any) -> str | None:
        return self.text

    def on_turn_end(self, turn: Any, how: str) -> None:
        self.ended.append(how)


@pytest.fixture
def rig():
    loop = VirtualTimeLoop()
    asyncio.set_event_loop(loop)
    host = Host(loop)
    hooks = Hooks()
    eng = TurnEngine(host, hooks, Timing(turn_deadline=None))

    def show(reading: R, hold: float = 0.0) -> None:
        hooks.current = reading
        host.last_output_at = loop.time()
        eng.on_screen()
        if hold:
            run(hold)

    def run(seconds: float) -> None:
        loop.run_until_complete(asyncio.sleep(seconds))

    yield loop, host, hooks, eng, show, run
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for t in pending:
        t.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    asyncio.set_event_loop(None)
    loop.close()


def started(eng: TurnEngine, show: Callable[..., None]) -> None:
    eng.started = True
    show(IDLE, 0.5)


def send(loop: asyncio.AbstractEventLoop, host: Host, eng: TurnEngine, text: str = "hi") -> asyncio.Task:
    host.dispatch(text)
    return loop.create_task(eng.submit(text))


def test_settle_debounce_opens_one_question_and_closes_it(rig):
    _loop, host, _hooks, eng, show, _run = rig
    started(eng, show)
    show(dialog(), 0.05)  # shorter than the settle time: a half-drawn frame
    show(IDLE, 0.5)
    assert "question" not in host.names()
    show(dialog(), 0.5)
    show(dialog(), 0.5)  # repainted, same dialog
    assert host.names().count("question") == 1
    assert host.state == "dialog"
    show(IDLE, 0.5)
    assert ("question_closed", "q1", "dismissed") in host.calls
    assert host.state == "idle"


def test_submit_writes_text_then_enter_and_verifies_busy(rig):
    loop, host, hooks, eng, show, run = rig
    started(eng, show)
    task = send(loop, host, eng, "hello")
    run(0.2)
    assert hooks.typed == ["hello"] and host.writes == [b"\r"]
    show(BUSY, 0.3)
    run(0.1)
    assert eng.turn is not None and eng.turn.went_busy
    assert host.state == "thinking"
    hooks.text = "the answer"  # text shows: the message was taken, the submit stops watching
    show(BUSY, 0.3)
    run(0.5)
    assert task.done() and host.writes == [b"\r"]


def test_submit_repeats_enter_when_the_text_stays_in_the_box(rig):
    loop, host, _hooks, eng, show, run = rig
    started(eng, show)
    task = send(loop, host, eng, "hello")
    run(0.2)
    show(R("idle", live_prompt=True, draft="hello"), 1.5)
    assert host.writes.count(b"\r") >= 2
    show(BUSY, 0.5)
    eng.witness()  # the CLI's record shows the prompt
    run(0.5)
    assert task.done()


def test_a_busy_that_was_not_the_message_gets_the_enter_again(rig):
    """A CLI still busy with the end of the last turn when the message is typed ignores its Enter, then reads
    idle with the message in its box: the Enter is pressed again. An empty box or someone else's draft is left
    alone."""
    loop, host, hooks, eng, show, run = rig
    started(eng, show)
    task = send(loop, host, eng, "Tell me a long story.")
    run(0.2)
    show(BUSY, 0.5)  # the previous turn's tail, not this message
    assert eng.turn is not None and eng.turn.went_busy and host.writes == [b"\r"]
    show(R("idle", live_prompt=True, draft="Tell me a long story."), 1.5)
    assert host.writes.count(b"\r") == 2
    hooks.text = "Once upon a time"
    show(BUSY, 0.5)
    run(0.5)
    assert task.done() and host.writes.count(b"\r") == 2

    for box in ("", "something the user typed"):
        host.writes.clear()
        hooks.text = None
        if eng.turn is not None:
            eng.complete("done")
        show(IDLE, 0.5)
        task = send(loop, host, eng, "Tell me a long story.")
        run(0.2)
        show(BUSY, 0.5)
        show(R("idle", live_prompt=True, draft=box), 3.0)
        assert host.writes == [b"\r"], box
        eng.witness()
        run(0.5)
        assert task.done()


def test_submit_gives_up_with_timeout_error(rig):
    loop, host, _hooks, eng, show, run = rig
    started(eng, show)
    task = send(loop, host, eng)
    run(eng.timing.submit_timeout + 5)
    assert task.done()
    assert ("turn_error", "timeout") in host.calls
    assert eng.turn is None


def test_exactly_one_terminal_event_and_state_first(rig):
    loop, host, hooks, eng, show, run = rig
    started(eng, show)
    send(loop, host, eng)
    run(0.2)
    show(BUSY, 0.3)
    hooks.text = "answer"
    show(IDLE, 0.3)
    assert eng.complete("answer", None, "transcript")
    assert not eng.interrupted()
    assert not eng.failed("late")
    ends = [c for c in host.calls if c[0] in ("complete", "interrupted", "turn_error")]
    assert ends == [("complete", "answer", "transcript")]
    names = host.names()
    assert names.index("complete") > max(i for i, n in enumerate(names) if n == "state")
    assert host.state == "idle" and hooks.ended == ["complete"]


@pytest.mark.parametrize(
    ("source", "last_replace"), [("screen", "answer, all of it"), ("transcript", "answer, so far")]
)
def test_the_last_replace_of_a_screen_read_turn_is_its_content(rig, source, last_replace):
    """A screen-read answer that grew after the last stream tick still streams its end before `complete`; a
    transcript's text (which may be formatted otherwise than the screen) is left to its driver, and so is a
    shorter screen reading (the visible end of an answer taller than the screen)."""
    loop, host, hooks, eng, show, run = rig
    started(eng, show)
    send(loop, host, eng)
    run(0.2)
    hooks.text = "answer, so far"
    show(BUSY, 0.5)
    assert ("replace", "answer, so far") in host.calls
    assert eng.complete("answer, all of it", None, source)
    replaces = [c[1] for c in host.calls if c[0] == "replace"]
    assert replaces[-1] == last_replace
    assert host.names().index("complete") > max(i for i, n in enumerate(host.names()) if n == "replace")
    send(loop, host, eng)
    run(0.2)
    hooks.text = "a long answer, all of it"
    show(BUSY, 0.5)
    assert eng.complete("all of it", None, "screen")
    assert [c[1] for c in host.calls if c[0] == "replace"][-1] == "a long answer, all of it"


def test_interrupt_after_a_denied_dialog_closes_the_question_before_the_event(rig):
    loop, host, _hooks, eng, show, run = rig
    started(eng, show)
    send(loop, host, eng)
    run(0.2)
    show(dialog(), 0.5)
    assert host.state == "dialog"
    eng.question.answered = True  # type: ignore[union-attr]
    show(IDLE)  # the dialog is gone, not yet settled
    eng.interrupted("")
    names = host.names()
    assert names.index("question_closed") < names.index("interrupted")
    states = [c for c in host.calls[: names.index("interrupted")] if c[0] == "state"]
    assert states[-1] == ("state", "idle") and "state" not in names[names.index("interrupted") :]


def test_esc_through_attach_ends_the_turn_once_the_cli_is_idle(rig):
    loop, host, _hooks, eng, show, run = rig
    started(eng, show)
    send(loop, host, eng)
    run(0.2)
    show(BUSY, 0.3)
    eng.on_keys(b"\x1b")
    run(0.3)
    assert eng.turn is not None  # still busy: not ended
    show(R("idle", live_prompt=True, draft="hi"), 0.2)
    run(1.0)
    assert ("interrupted", "") in host.calls
    assert eng.turn is None


def test_the_interrupt_command_writes_the_key(rig):
    loop, host, _hooks, eng, show, run = rig
    started(eng, show)
    send(loop, host, eng)
    run(0.2)
    show(BUSY, 0.3)
    eng.interrupt()
    assert host.writes[-1] == b"\x1b"
    show(IDLE, 1.0)
    assert "interrupted" in host.names()


def test_a_prompt_put_back_after_an_interrupt_is_cleared_until_it_is_gone(rig):
    """A CLI that puts the interrupted prompt back into its box may draw it only after the turn ended, and may miss
    the keys that clear it: the clear keys go out (their writes apart) once the box holds the prompt, and again
    while it still does. A box holding something else is left alone."""
    loop, host, hooks, eng, show, run = rig
    hooks.clear_keys = lambda: (b"\x1b", b"\x1b")  # type: ignore[method-assign]
    started(eng, show)
    send(loop, host, eng, "Say many words\nplease")
    run(0.2)
    show(BUSY, 0.3)
    eng.interrupt()
    show(IDLE, 1.0)  # the turn ends before the CLI draws the prompt back
    assert "interrupted" in host.names() and eng.turn is None
    host.writes.clear()
    show(R("idle", live_prompt=True, draft="Say many words please"), 0.6)
    assert host.writes == [b"\x1b", b"\x1b"]
    run(2.0)  # the CLI may still be drawing the box emptied: not again yet
    assert host.writes == [b"\x1b"] * 2
    run(1.0)  # the Escs were lost: the box still holds the prompt
    assert host.writes == [b"\x1b"] * 4
    show(IDLE, 3.0)
    assert host.writes == [b"\x1b"] * 4 and not eng.busy()

    host.writes.clear()
    send(loop, host, eng, "another prompt")
    run(0.2)
    show(BUSY, 0.3)
    eng.interrupt()
    show(IDLE, 1.0)
    host.writes.clear()
    show(R("idle", live_prompt=True, draft="what the user types next"), 5.0)
    assert host.writes == []


def test_answer_sends_one_key_per_settled_frame(rig):
    loop, host, _hooks, eng, show, run = rig
    started(eng, show)
    show(dialog(cursor=0), 0.6)
    task = loop.create_task(eng.answer(None, digit="2"))
    run(0.8)
    assert host.writes == [b"\x1b[B"]  # Down only: the Enter waits for the repaint
    show(dialog(cursor=1), 0.8)
    assert host.writes[-1] == b"\r"
    assert task.done() and task.exception() is None
    show(IDLE, 0.5)
    assert ("question_closed", "q1", "answered") in host.calls


def test_answer_moves_a_row_of_options_with_left_right_one_key_per_frame(rig):
    """A CLI whose options sit in one row (opencode's permission prompt) moves its cursor with Right/Left: those
    are cursor moves like Up/Down, so the engine keeps driving until it confirms the option asked for."""
    loop, host, hooks, eng, show, run = rig
    hooks.dialog_keys = lambda dlg, index: ["Right"] * (index - dlg.selected_index()) + ["Enter"]  # type: ignore[method-assign]
    started(eng, show)
    show(dialog(cursor=0), 0.6)
    task = loop.create_task(eng.answer(None, digit="2"))
    run(0.8)
    assert host.writes == [b"\x1b[C"]
    show(dialog(cursor=1), 0.8)
    assert host.writes[-1] == b"\r"
    assert task.done() and task.exception() is None


def test_an_answer_to_a_dialog_painted_in_steps_drives_the_whole_dialog(rig):
    """A CLI can draw a modal in steps (opencode: options and title first, then the command); on a busy machine
    the first paint can settle and be asked. The answer to it drives the dialog as painted further, whose question
    closes as answered; another dialog (other facts) with the same options is never answered with it."""
    loop, host, _hooks, eng, show, _run = rig

    def perm(command: str | None, cursor: int = 0) -> R:
        opts = [Opt(1, "Allow"), Opt(2, "Reject")]
        opts[cursor].selected = True
        fields = {"title": "Shell"} | ({"command": command} if command else {})
        return R(
            "dialog",
            Dlg("permission", "Permission required", opts, fields=fields, ident=tuple(fields.items())),
        )

    started(eng, show)
    show(perm(None), 0.6)  # the first paint settles: asked without its command
    task = loop.create_task(eng.answer(None, digit="2"))
    show(perm("rm -f README.md"), 0.8)  # painted further before any key: driven on
    assert host.writes == [b"\x1b[B"]
    show(perm("rm -f README.md", cursor=1), 0.8)
    assert host.writes[-1] == b"\r" and task.done() and task.exception() is None
    show(IDLE, 0.5)
    asked = [c[2] for c in host.calls if c[0] == "question"]
    closed = [(c[1], c[2]) for c in host.calls if c[0] == "question_closed"]
    assert closed == [(q, "answered") for q in asked], (asked, closed)

    show(perm("ls"), 0.6)  # a dialog with other facts is not the answered one grown
    writes = len(host.writes)
    task = loop.create_task(eng.answer(None, digit="1"))
    show(perm("rm -rf /"), 0.8)
    assert task.done() and host.writes[writes:] == []


def test_answer_errors(rig):
    loop, _host, _hooks, eng, show, _run = rig
    started(eng, show)
    with pytest.raises(DriverError) as exc:
        loop.run_until_complete(eng.answer(None, digit="1"))
    assert exc.value.code == "no_question"
    show(dialog(), 0.6)
    for kwargs in ({"digit": "7"}, {"option": "Maybe"}, {"text": "free text"}):
        with pytest.raises(DriverError) as exc:
            loop.run_until_complete(eng.answer(None, **kwargs))
        assert exc.value.code == "bad_field"


def test_startup_answers_its_dialog_then_is_ready(rig):
    loop, host, _hooks, eng, show, _run = rig
    task = loop.create_task(eng.startup())
    show(dialog("trust", cursor=0), 0.8)
    assert host.writes == [b"\r"]
    show(IDLE, 0.6)
    assert task.done() and task.exception() is None
    assert eng.started
    assert ("dialog_dismissed", {"dialog": "trust", "keys": ["Enter"]}) in host.calls


def test_startup_answers_a_dialog_once_while_a_starved_cli_is_slow_to_act(rig):
    """A CLI starved of CPU can take seconds to act on the answer: the dialog is not answered again meanwhile (the
    second key would land in whatever comes next); one still there after `dialog_gone` is answered again."""
    loop, host, _hooks, eng, show, _run = rig
    task = loop.create_task(eng.startup())
    show(dialog("trust", cursor=0), 8.0)
    assert host.writes == [b"\r"]
    show(IDLE, 0.6)
    assert task.done() and task.exception() is None
    assert [c for c in host.calls if c[0] == "dialog_dismissed"] == [
        ("dialog_dismissed", {"dialog": "trust", "keys": ["Enter"]})
    ]

    host.writes.clear()
    eng.started = False
    task = loop.create_task(eng.startup())
    show(dialog("trust", cursor=0), eng.timing.dialog_gone + 2.0)  # the key was lost
    assert host.writes == [b"\r", b"\r"]


def test_startup_relays_a_dialog_it_does_not_answer(rig):
    loop, host, _hooks, eng, show, _run = rig
    task = loop.create_task(eng.startup())
    show(dialog("permission"), 2.5)
    assert task.done() and eng.started
    assert "question" in host.names() and host.writes == []


def test_startup_timeout_code_is_a_spec_code(rig):
    from litbridge.protocol.spec import ERROR_CODES

    loop, _host, _hooks, eng, _show, _run = rig
    eng.timing.startup_timeout = 2.0
    with pytest.raises(DriverError) as exc:
        loop.run_until_complete(eng.startup())
    assert exc.value.code in ERROR_CODES


def test_hold_reason_says_why_input_is_not_live(rig):
    _loop, host, _hooks, eng, show, _run = rig
    assert eng.hold_reason() == "the CLI is starting"
    started(eng, show)
    assert eng.hold_reason() is None and eng.can_accept_input()
    eng.on_status({"state": "blocked", "kind": "auth"})
    show(R("idle", live_prompt=True, draft="half typed"), 0.5)
    assert not eng.can_accept_input()
    assert "blocked (auth)" in (eng.hold_reason() or "")
    eng.on_status({"state": "idle"})
    assert "unsent text" in (eng.hold_reason() or "")
    show(dialog(), 0.5)
    assert "question q1" in (eng.hold_reason() or "")
    assert not [c for c in host.calls if c[0] in ("dialog_blocked", "dialog_cleared")]  # the session's to say


def test_turn_deadline_ends_the_turn_with_timeout(rig):
    loop, host, _hooks, eng, show, run = rig
    eng.timing.turn_deadline = 5.0
    started(eng, show)
    send(loop, host, eng)
    run(0.2)
    show(BUSY, 6.0)
    assert ("turn_error", "timeout") in host.calls


def test_organic_turn_and_stale_turn_sync(rig):
    _loop, host, _hooks, eng, show, _run = rig
    started(eng, show)
    turn = eng.begin_organic("typed in attach")
    assert turn is not None and turn.organic and host.turn_id == turn.id
    assert eng.begin_organic("again") is None
    host.turns.error("ended by the session")  # the session ended it by itself (a fallback, a kill...)
    assert eng.can_accept_input() and eng.turn is None


def test_an_organic_turn_reads_working_at_once(rig):
    """A record that ends one turn and holds the next prompt in the same read (a queued message, a record read
    late): the next turn is working as soon as it is opened, not at the next frame, so the session is never idle
    inside it."""
    loop, host, _hooks, eng, show, _run = rig
    started(eng, show)
    send(loop, host, eng)
    show(BUSY, 0.3)
    eng.on_status({"state": "working"})
    eng.complete("first")
    assert host.state == "idle"
    assert eng.begin_organic("queued next") is not None
    assert host.state == "thinking"


def test_status_working_goes_stale_on_an_idle_screen(rig):
    _loop, _host, _hooks, eng, show, _run = rig
    started(eng, show)
    eng.on_status({"state": "working"})
    assert eng.busy() and not eng.can_accept_input()
    show(IDLE, eng.timing.status_stale + 0.5)
    assert not eng.busy() and eng.can_accept_input()


def test_driver_error_codes_come_from_the_spec():
    from litbridge.protocol.spec import ERROR_CODES, TURN_ERROR_KINDS

    for code in (*ERROR_CODES, *TURN_ERROR_KINDS):
        assert DriverError(code, "m").code == code
    with pytest.raises(ValueError):
        DriverError("startup_failed_somehow", "an invented code never reaches a client")


@pytest.mark.parametrize("source", ["keys", "command", "cli"])
def test_an_interrupt_the_cli_never_honours_is_left_to_the_host_fallback(rig, source):
    """Whatever started the interrupt, the engine reports it to the host (whose fallback ends a turn the CLI never
    lets go of, tests/daemon/test_session.py) and, once the host ended the turn, drops its own record of it."""
    loop, host, _hooks, eng, show, run = rig
    started(eng, show)
    send(loop, host, eng)
    run(0.2)
    show(BUSY, 0.3)
    if source == "keys":
        eng.on_keys(b"\x1b")
    elif source == "command":
        eng.interrupt()
    else:
        eng.note_interrupt("cli")
    assert host.names().count("interrupt_noted") == 1
    show(BUSY, 5.0)  # still working: the engine does not end the turn on its own
    assert eng.turn is not None and "interrupted" not in host.names()
    host.turn_interrupted("")  # the host's fallback
    run(0.5)
    assert [c for c in host.calls if c[0] in ("complete", "interrupted", "turn_error")] == [
        ("interrupted", "")
    ]
    assert eng.turn is None


def test_an_interrupt_given_up_ends_the_turn_state_first_while_the_cli_still_works(rig):
    """The host's fallback asks the engine to end the turn (`give_up_interrupt`): `state` settles to idle before
    `interrupted` although the screen still reads busy."""
    loop, host, hooks, eng, show, run = rig
    started(eng, show)
    send(loop, host, eng)
    run(0.2)
    hooks.text = hooks_text = "partial"
    show(BUSY, 0.3)
    eng.interrupt()
    show(BUSY, 5.0)
    assert host.state in ("thinking", "responding")
    assert eng.interrupted()
    names = host.names()
    assert ("interrupted", hooks_text) in host.calls and host.state == "idle"
    assert names.index("interrupted") > max(i for i, c in enumerate(host.calls) if c == ("state", "idle"))
    assert eng.turn is None


class _Gen:
    """A terminal that says only when its rows changed (`generation`), as `litbridge.term` does."""

    def __init__(self) -> None:
        self.generation = 0
        self.title = ""


def test_the_screen_is_read_once_per_change_and_the_tick_skips_an_unchanged_one(rig):
    """Output that changes no row (a cursor move, a redraw of the same text) costs no reading and no response
    extraction: the engine keys its reading on the terminal's generation, the streaming tick on it and the turn."""
    loop, host, hooks, eng, show, run = rig
    term = host.terminal = _Gen()
    reads: list[int] = []
    asked: list[str | None] = []
    read_screen, response_text = hooks.read_screen, hooks.response_text
    hooks.read_screen = lambda: reads.append(1) or read_screen()  # type: ignore[method-assign]
    hooks.response_text = lambda turn, r: asked.append(hooks.text) or response_text(turn, r)  # type: ignore[method-assign]
    started(eng, show)
    send(loop, host, eng)
    run(0.2)
    hooks.text = "partial"
    term.generation += 1
    show(BUSY, 0.5)
    assert ("replace", "partial") in host.calls
    n_reads, n_asked = len(reads), len(asked)
    for _ in range(5):  # output arrives, but the rows stay what they were
        host.last_output_at = loop.time()
        eng.on_screen()
        run(0.2)
    assert len(reads) == n_reads and len(asked) <= n_asked + 1
    hooks.text = "partial and more"
    term.generation += 1
    show(BUSY, 0.5)
    assert len(reads) == n_reads + 1
    assert ("replace", "partial and more") in host.calls


def test_frames_that_redraw_only_the_spinner_are_not_read_for_text(rig):
    """A busy CLI redraws its spinner row every frame (glyph, seconds): no turn's text is read from it, so the
    streaming tick does not extract the text again for such frames, yet still relays the spinner; a frame that
    changes any other row, or draws the spinner on another row, is read again."""
    loop, host, hooks, eng, show, run = rig
    term = host.terminal = _Gen()
    asked: list[str | None] = []
    response_text = hooks.response_text
    hooks.response_text = lambda turn, r: asked.append(hooks.text) or response_text(turn, r)  # type: ignore[method-assign]
    started(eng, show)
    send(loop, host, eng)
    run(0.2)

    def frame(changed: list[tuple[int, str]], spinner: str) -> None:
        term.generation += 1
        hooks.current = R("busy", spinner=spinner)
        host.last_output_at = loop.time()
        eng.on_screen(changed)
        run(0.2)

    hooks.text = "partial"
    frame([(10, "partial"), (12, "  ✻ Working… (0s)")], "✻ Working… (0s)")
    assert ("replace", "partial") in host.calls
    # the turn's text changed since it was read (a driver may stitch onto it): the next tick reads once more
    frame([(12, "  ✢ Working… (1s)  ")], "✢ Working… (1s)")
    n = len(asked)
    for i in range(2, 6):
        frame([(12, f"  ✢ Working… ({i}s)  ")], f"✢ Working… ({i}s)")
    assert len(asked) == n
    assert ("thinking", "✢ Working… (5s)") in host.calls  # the tick ran, for the spinner
    hooks.text = "partial and more"
    frame([(11, "and more"), (12, "  ✢ Working… (6s)")], "✢ Working… (6s)")
    assert len(asked) > n and ("replace", "partial and more") in host.calls
    frame([(12, "  ✢ Working… (7s)")], "✢ Working… (7s)")
    n = len(asked)
    frame([(12, "  ✢ Working… (8s)")], "✢ Working… (8s)")
    assert len(asked) == n
    frame([(13, "  ✢ Working… (9s)")], "✢ Working… (9s)")  # the spinner moved down a row
    assert len(asked) == n + 1


def armed(host: Host, method: Callable[..., Any]) -> list[float]:
    """The delays of the timers armed through `host.call_later` for `method` (an engine method, e.g.
    `TurnEngine._settle`), from now on."""
    delays: list[float] = []
    call_later = host.call_later

    def counted(delay: float, callback: Callable[[], None]) -> asyncio.TimerHandle:
        if getattr(callback, "__func__", None) is method:
            delays.append(round(delay, 3))
        return call_later(delay, callback)

    host.call_later = counted  # type: ignore[method-assign]
    return delays


def busy_frames(rig: Any, term: _Gen) -> Callable[[list[tuple[int, str]], R], None]:
    """`frame(changed, reading)`: a new screen generation reading `reading`, these rows changed, then 0.2 s."""
    loop, host, hooks, eng, _show, run = rig

    def frame(changed: list[tuple[int, str]], reading: R) -> None:
        term.generation += 1
        hooks.current = reading
        host.last_output_at = loop.time()
        eng.on_screen(changed)
        run(0.2)

    return frame


def test_a_frame_that_changes_nothing_the_tick_relays_arms_no_tick(rig):
    """Most busy frames redraw only the spinner's glyph: a streaming tick for one would read nothing and relay
    nothing, so none is armed. A new spinner text or a changed row still arms one, and so does a change of the
    turn no frame follows (the record witnessing the prompt)."""
    loop, host, hooks, eng, show, run = rig
    term = host.terminal = _Gen()
    ticks = armed(
        host, type(eng).stream
    )  # streaming ticks armed (a commit also reads the text, at once: not counted)
    started(eng, show)
    send(loop, host, eng)
    run(0.2)
    busy = busy_frames(rig, term)

    def frame(changed: list[tuple[int, str]], spinner: str) -> None:
        busy(changed, R("busy", spinner=spinner))

    hooks.text = "partial"
    frame([(10, "partial"), (12, "  ✻ Working… (1s)")], "✻ Working… (1s)")
    assert ("replace", "partial") in host.calls
    n = len(ticks)
    for glyph in "✢✶✻✽":  # the glyph animates, the text stays
        frame([(12, f"  {glyph} Working… (1s)")], f"{glyph} Working… (1s)")
    assert len(ticks) == n
    frame([(12, "  ✢ Working… (2s)")], "✢ Working… (2s)")
    assert len(ticks) == n + 1 and ("thinking", "✢ Working… (2s)") in host.calls
    hooks.text = "partial and more"
    frame([(11, "and more"), (12, "  ✶ Working… (2s)")], "✶ Working… (2s)")
    assert len(ticks) == n + 2 and ("replace", "partial and more") in host.calls
    hooks.text = "partial and more, witnessed"
    eng.witness()  # no frame: the turn itself changed
    run(0.3)
    assert len(ticks) == n + 3 and ("replace", "partial and more, witnessed") in host.calls


def test_a_busy_frame_that_reads_as_the_committed_one_arms_no_settle(rig):
    """A busy frame that reads as the committed busy screen in all a commit takes from it (a spinner, no dialog,
    the same input box) arms no settle: the spinner's animation and a streaming answer's rows. A frame that ends
    the spinner, opens a dialog or changes the input box is settled and committed as before; the turn's text
    still streams (the tick reads it)."""
    loop, host, hooks, eng, show, run = rig
    term = host.terminal = _Gen()
    settles = armed(host, type(eng)._settle)
    started(eng, show)
    send(loop, host, eng)
    run(0.2)
    frame = busy_frames(rig, term)

    frame([(10, "thinking"), (12, "  ✻ Working… (1s)")], R("busy", spinner="✻ Working… (1s)"))
    assert eng.screen is hooks.current  # settled and committed
    committed = eng.screen
    n = len(settles)
    for i, glyph in enumerate("✢✶✻✽"):
        frame([(12, f"  {glyph} Working… ({i + 2}s)")], R("busy", spinner=f"{glyph} Working… ({i + 2}s)"))
    hooks.text = "the answer so far"
    frame([(11, "the answer so far"), (12, "  ✢ Working… (6s)")], R("busy", spinner="✢ Working… (6s)"))
    assert len(settles) == n and eng.screen is committed
    assert ("thinking", "✽ Working… (5s)") in host.calls  # the tick still relays the spinner's text
    assert ("replace", "the answer so far") in host.calls  # and reads the text
    frame([(13, "> draft")], R("busy", spinner="✢ Working… (6s)", draft="draft"))  # the input box changed
    assert len(settles) == n + 1 and eng.screen is hooks.current
    frame([(12, "")], R("busy", draft="draft"))  # the spinner is gone: busy() reads it
    assert len(settles) == n + 2 and eng.screen is hooks.current


def test_hooks_that_tick_on_an_idle_cli_only_tick_slowly_while_it_is_busy(rig):
    """With `tick_idle_only` (an `on_tick` that acts on an idle CLI only, as Claude's screen fallback), the
    bookkeeping tick runs every `tick_busy` while the CLI is busy, and every `tick` again as soon as it reads idle
    or an interrupt is noted; a turn deadline still ends the turn on time."""
    loop, host, hooks, eng, show, run = rig
    hooks.tick_idle_only = True  # type: ignore[misc]
    seen: list[float] = []
    on_tick = hooks.on_tick
    hooks.on_tick = lambda turn: seen.append(loop.time()) or on_tick(turn)  # type: ignore[method-assign]
    ticks = armed(host, type(eng)._on_tick)
    started(eng, show)
    send(loop, host, eng)
    show(BUSY, 3.0)
    assert eng.timing.tick_busy in ticks and len(seen) <= 6  # 0.25 s ticks would have been 12
    n = len(seen)
    show(IDLE, 0.2)  # committed idle at once after the settle: the slow tick gives way
    run(0.3)
    assert len(seen) > n and ticks[-1] == eng.timing.tick
    # an interrupt noted while busy gets its quick tick
    eng.interrupted()
    send(loop, host, eng, "again")
    show(BUSY, 2.0)
    assert ticks[-1] == eng.timing.tick_busy
    eng.note_interrupt("keys")
    assert ticks[-1] == 0.05
    eng.interrupted()
    # a deadline within the slow tick's reach is kept
    eng.timing.turn_deadline = 1.6
    send(loop, host, eng, "third")
    show(BUSY, 1.75)  # a slow tick past 1.25 s would come at 2.25 s
    assert host.calls[-1] == ("turn_error", "timeout")


def test_a_change_the_text_generation_misses_still_gives_a_new_reading() -> None:
    """A selection moved by colour only (opencode's permission prompt) leaves every row's text, and so the
    terminal's generation, as it was: the driver's `screen_key_extra` makes the engine read the screen again."""
    from types import SimpleNamespace

    colour = ["a"]
    reads: list[str] = []
    term = SimpleNamespace(generation=7, title=None)

    class Hooks:
        rules = None

        def screen_key_extra(self) -> tuple[str, ...]:
            return (colour[0],)

        def read_screen(self) -> str:
            reads.append(colour[0])
            return colour[0]

    eng = TurnEngine.__new__(TurnEngine)
    eng.host = SimpleNamespace(terminal=term)
    eng.hooks = Hooks()
    eng._cache, eng._cache_key = None, None
    assert eng.reading() == "a" and eng.reading() == "a" and reads == ["a"]
    colour[0] = "b"
    assert eng.reading() == "b" and reads == ["a", "b"]
