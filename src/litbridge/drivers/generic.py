"""The generic driver: any shell, REPL or TUI, on the shared turn engine.

Turn ends come from the program itself where it can say so: bash, zsh and fish (and the Python REPL) get
shell integration at spawn (`drivers/shellmarks.py`: OSC 133 prompt/command marks through an rc file, hooks or
`sys.ps1`, never the user's own dotfiles), so `complete` fires when the prompt returns and carries the command's
output and `exit_code`. Any other program falls back to output quiescence: `idle` after a quiet window
(default QUIESCENCE s, the `create` field `quiescence` overrides it) and `complete{source:"quiescence"}` with the
screen text that appeared since the send. Knows no particular CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from dataclasses import dataclass
from typing import Any

from litbridge.drivers import shellmarks
from litbridge.drivers.base import Driver, LaunchSpec
from litbridge.drivers.engine import EngineHooks, Timing, Turn, TurnEngine
from litbridge.drivers.paste import bracketed
from litbridge.timers import Cancellable

QUIESCENCE = 3.0  # long enough not to split `echo a; sleep 2; echo b` into two answers
STARTUP_MAX = 30.0
SILENT_START = 3.0  # a program that prints nothing at all is taken as ready after this long
SILENT_TURN = 3.0
"""A send the program answers with nothing at all (not even an echo) ends after this long; the short quiescence
window runs only from the program's first output after the send (a program starved of CPU answers late)."""
CLOCK_SLACK = 1e-6
"""A timer fires at `last + window`, where `now - last` may round to just under `window` (0.8 s after 0.969472
is 0.7999999999999999): waiting that 1e-16 s again never moves a virtual clock, so it counts as elapsed."""
STARTUP_SETTLE = 0.8  # startup: the first settle needs no long window
INTERRUPT = b"\x03"
INTERRUPT_AGAIN = 1.5  # s: a Ctrl-C the running command has not ended by then is pressed again ...
INTERRUPT_PRESSES = 5  # ... up to this many times in all, well inside the session's 10 s interrupt fallback
PASTE_WAIT = 0.5  # a multi-line send waits this long for the shell to turn bracketed paste on
PROMPT_DRAWN_WAIT = 0.5  # after a command ends, the prompt's `B` mark is awaited this long before typing


@dataclass
class Reading:
    """The generic driver's reading of the program: busy while a command runs (shell marks) or output flows."""

    state: str
    live_prompt: bool = True
    draft: str = ""
    dialog: None = None
    spinner: None = None


class GenericDriver(Driver, EngineHooks):
    name = "generic"

    def __init__(self, host: Any, options: dict[str, Any]) -> None:
        super().__init__(host, options)
        try:
            self.quiet = max(0.05, float(options.get("quiescence", QUIESCENCE)))
        except (TypeError, ValueError):
            self.quiet = QUIESCENCE
        self.settle = min(self.quiet, STARTUP_SETTLE)
        self.engine = TurnEngine(host, self, Timing(settle=0.05, submit_timeout=3600.0))
        self.marks: shellmarks.Integration | None = None
        self._timer: Cancellable | None = None
        self._settled: asyncio.Future[None] | None = None
        self._quiet_from = 0.0  # quiescence is measured from max(last output, this)
        self._baseline: list[str] = []
        self._prompt = ""
        self._output_seen = asyncio.Event()

    # -- launch / startup ----------------------------------------------------------------------------
    def launch(self) -> LaunchSpec:
        program = str(self.options.get("cli") or "sh")
        args = [str(a) for a in self.options.get("args") or []]
        self.marks = shellmarks.integrate(program, args, self.options.get("env") or {})
        if self.marks is None:
            return LaunchSpec(argv=[program, *args])
        return LaunchSpec(argv=[program, *self.marks.args], env=self.marks.env)

    async def startup(self) -> dict[str, Any]:
        """Ready at the first prompt mark, or when the screen first settles: some output, then none for a short
        window (or no output at all for SILENT_START seconds, for programs such as `cat`)."""
        self._settled = self.host.loop.create_future()
        self._quiet_from = self.host.loop.time()
        self._arm()
        try:
            await asyncio.wait_for(asyncio.shield(self._settled), STARTUP_MAX)
        except asyncio.TimeoutError:
            self.host.log.info("screen never settled within %.0fs; ready anyway", STARTUP_MAX)
        self.engine.started = True
        self.engine.invalidate()
        self.engine.commit(self.engine.reading())
        return {"model": self.options.get("model"), "resumed": False}

    def on_exit(self, exit_code: int | None) -> None:
        self.engine.on_exit(exit_code)
        if self.marks is not None:
            shutil.rmtree(self.marks.tmpdir, ignore_errors=True)

    # -- events --------------------------------------------------------------------------------------
    def on_output(self, data: bytes) -> None:
        self._output_seen.set()  # after the terminal took it: its modes are current
        if self.marks is not None:
            for mark in self.marks.feed(data):
                self._on_mark(mark)
        self._arm()

    def on_screen(self, changed_rows: list[tuple[int, str]]) -> None:
        """Output is relayed at once (no settle debounce: a shell has no half-drawn dialogs to guard against)."""
        if self._settled is None or not self._settled.done():
            return
        eng = self.engine
        if eng.turn is not None:
            self.host.set_state("responding")
            text = self.response_text(eng.turn, None)
            if text:
                eng.set_text(text)
        elif self.host.state == "idle" and not (self.marks is not None and self.marks.active):
            self.host.set_state("responding")  # output outside a turn (a TUI redrawing, a background job)

    def _on_mark(self, mark: shellmarks.Mark) -> None:
        eng = self.engine
        eng.invalidate()  # the marks changed what the program reads as
        if mark.kind == "prompt" and self._settled is not None and not self._settled.done():
            self._settled.set_result(None)  # the shell's first prompt: ready now
        if mark.kind == "command" and eng.turn is not None:
            eng.turn.went_busy = True
        if mark.kind == "end":
            self.host.call_later(PROMPT_DRAWN_WAIT, self._prompt_fallback)
            turn = eng.turn
            if turn is not None and self.marks is not None and (turn.went_busy or self.marks.no_command_mark):
                output = self.marks.output()
                if turn.interrupt_at is not None:
                    eng.interrupted(output)
                else:
                    eng.complete(output, None, "screen", mark.exit_code)
        if eng.started:
            eng.commit(eng.reading())

    def _prompt_fallback(self) -> None:
        """A prompt whose `B` mark never came (a theme rewrote PS1): take it as drawn after a moment."""
        if self.marks is not None and not self.marks.running and not self.marks.prompt_drawn:
            self.marks.prompt_drawn = True
            self.engine.check_input_ready()

    def _arm(self) -> None:
        if self._timer is None:
            settled = self._settled is not None and self._settled.done()
            self._timer = self.host.call_later(self.quiet if settled else self.settle, self._check)

    def _check(self) -> None:
        """The quiescence clock: startup settles on it; without shell marks, turns end on it."""
        self._timer = None
        settled = self._settled is not None and self._settled.done()
        window = self.quiet if settled else self.settle
        quiet_for = self.host.loop.time() - max(self.host.last_output_at, self._quiet_from)
        if quiet_for < window - CLOCK_SLACK:
            self._timer = self.host.call_later(window - quiet_for, self._check)
            return
        if not settled:
            assert self._settled is not None
            silent_for = self.host.loop.time() - self.host.spawned_at
            if self.host.last_output_at == 0.0 and silent_for < SILENT_START - CLOCK_SLACK:
                # nothing printed yet: a slow starter (an interpreter on a loaded box) is not "settled"
                self._timer = self.host.call_later(min(self.quiet, SILENT_START - silent_for), self._check)
                return
            self._settled.set_result(None)
            return
        eng = self.engine
        eng.invalidate()
        if (self.marks is None or not self.marks.active) and eng.turn is not None:
            unanswered = self._unanswered_for()
            if unanswered is not None:
                self._timer = self.host.call_later(min(self.quiet, SILENT_TURN - unanswered), self._check)
                return
            eng.complete(self._screen_response(), None, "quiescence")
        eng.commit(eng.reading())

    def _unanswered_for(self) -> float | None:
        """Seconds since the send while the program has printed nothing since it, up to SILENT_TURN; else None."""
        if self.engine.turn is None or self.host.last_output_at >= self._quiet_from:
            return None
        silent_for = self.host.loop.time() - self._quiet_from
        return silent_for if silent_for < SILENT_TURN - CLOCK_SLACK else None

    # -- EngineHooks ---------------------------------------------------------------------------------
    def read_screen(self) -> Reading:
        if self.marks is not None and self.marks.active:
            return Reading("busy" if self.marks.running else "idle")
        quiet_for = self.host.loop.time() - max(self.host.last_output_at, self._quiet_from)
        busy = self.engine.turn is not None and (quiet_for < self.quiet or self._unanswered_for() is not None)
        return Reading("busy" if busy else "idle")

    def response_text(self, turn: Turn, reading: Any) -> str | None:
        if self.marks is not None and self.marks.active:
            return self.marks.partial_output() if self.marks.running else None
        return self._screen_response()

    def type_message(self, text: str) -> None:
        self.host.write(text.encode("utf-8"))

    def interrupt_key(self) -> bytes:
        return INTERRUPT

    def is_interrupt_key(self, data: bytes) -> bool:
        return data == INTERRUPT

    # -- input ---------------------------------------------------------------------------------------
    def can_accept_input(self) -> bool:
        if self._settled is None or not self._settled.done():
            return False
        if self.marks is not None and self.marks.active:
            return self.engine.turn is None and not self.marks.running and self.marks.prompt_drawn
        return self.engine.turn is None

    def hold_reason(self) -> str | None:
        return "a command is running" if self.marks is not None and self.marks.running else None

    async def submit(self, text: str) -> None:
        if self._pasteable(text):
            # fish turns bracketed paste back on just after its prompt mark: a multi-line send waits for it
            deadline = self.host.loop.time() + PASTE_WAIT
            while not self.host.terminal.bracketed_paste:
                left = deadline - self.host.loop.time()
                if left <= 0:
                    break
                self._output_seen.clear()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._output_seen.wait(), left)
        rows, y = self._rows()
        self._baseline = rows[: y + 1]
        self._prompt = rows[y] if y < len(rows) else ""
        self._quiet_from = self.host.loop.time()
        self.engine.begin(text)
        if self.marks is not None:
            self.marks.expect_command(text)
        self.host.write(self._typed(text) + b"\r")
        self._arm()

    def _typed(self, text: str) -> bytes:
        """A multi-line send to a shell that reads pastes (it set bracketed-paste mode) goes in as one paste, as
        a terminal pastes it: the shell takes all its lines as one input, so the prompt returns (and the turn
        ends) once, after the last command, not after the first."""
        data = text.encode("utf-8")
        if self._pasteable(text) and self.host.terminal.bracketed_paste:
            return bracketed(text)
        return data

    def _pasteable(self, text: str) -> bool:
        """A multi-line send to a shell with command marks (bash, zsh, fish; not the Python REPL)."""
        return (
            "\n" in text and self.marks is not None and self.marks.active and not self.marks.no_command_mark
        )

    def keys(self, data: bytes) -> None:
        self.on_user_input(data)
        self.host.write(data)

    def on_user_input(self, data: bytes) -> None:
        self.engine.on_keys(data)
        if self.marks is not None and INTERRUPT in data:
            self.marks.ctrl_c_written(data.count(INTERRUPT))

    def _write_interrupt(self) -> None:
        self.host.write(INTERRUPT)
        if self.marks is not None:
            self.marks.ctrl_c_written()

    def interrupt(self) -> None:
        """Ctrl-C (REPLs and shells understand it; Esc would do nothing there). With shell marks the turn ends
        when the prompt comes back (`interrupted`); without them at once."""
        self.engine.interrupt()
        if self.marks is not None:
            self.marks.ctrl_c_written()
        if self.marks is None or not self.marks.active:
            self.engine.interrupted(self._screen_response())
        else:
            self.marks.interrupted()
            turn = self.engine.turn
            if turn is not None:
                self.host.call_later(INTERRUPT_AGAIN, lambda: self._press_again(turn, INTERRUPT_PRESSES - 1))

    def give_up_interrupt(self) -> bool:
        return self.engine.interrupted()

    def _press_again(self, turn: Turn, left: int) -> None:
        """Ctrl-C again while the interrupted command still runs, as a user would press it again. A Ctrl-C can
        reach no process: in a shell loop (`for ...; do echo; sleep 0.1; done`) the terminal's foreground
        group is each `sleep` in turn, and one typed just after a `sleep` exited, before the shell took the
        terminal back (long on a busy machine), signals an empty group and is lost. The turn ends as usual when
        the prompt comes back; nothing is pressed once it has (or once the session's fallback ended the turn)."""
        if left <= 0 or self.engine.turn is not turn or self.marks is None or not self.marks.running:
            return
        self._write_interrupt()
        self.host.call_later(INTERRUPT_AGAIN, lambda: self._press_again(turn, left - 1))

    def info(self) -> dict[str, Any]:
        return {
            "model": self.options.get("model"),
            "quiescence": self.quiet,
            "shell_integration": self.marks.kind if self.marks is not None else None,
        }

    # -- response extraction (quiescence) -------------------------------------------------------------
    def _rows(self) -> tuple[list[str], int]:
        term = self.host.terminal
        rows = [r.rstrip() for r in term.display]
        _, y, _ = term.cursor
        last = max((i for i, r in enumerate(rows) if r), default=0)
        return rows[: max(y, last) + 1], y

    def _screen_response(self) -> str:
        """Screen text that appeared since the send, aligned against the pre-send rows (handles scroll)."""
        current, _ = self._rows()
        base = self._baseline
        history = base[:-1]  # rows above the prompt line at send time
        start = 0
        for k in range(len(history) + 1):
            kept = history[k:]
            if current[: len(kept)] == kept:
                start = len(kept)
                break
        new = current[start:]
        turn = self.engine.turn
        sent = turn.text if turn is not None else ""
        first = sent.splitlines()[0].strip() if sent.strip() else ""
        prompt = self._prompt.strip()
        if new and ((prompt and new[0].strip().startswith(prompt)) or (first and first in new[0])):
            new = new[1:]  # the prompt line with the echoed input
        if new and prompt and new[-1].strip() == prompt:
            new = new[:-1]
        while new and not new[-1].strip():
            new.pop()
        while new and not new[0].strip():
            new.pop(0)
        return "\n".join(new)
