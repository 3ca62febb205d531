"""Record events -> the turn engine and the host's tool events: the one copy every screen driver shares.

An event is anything with `kind`, `text` and `data` (each CLI's tracker makes its own): `prompt`, `text`,
`reasoning`, `tool_use`, `tool_result`, `complete`, `interrupted` / `abandoned`, `error`; a kind not listed goes to `other()`.
A prompt verifies the open send (`witness`) or opens a turn typed into the CLI itself (attach); everything else
touches a turn only once its own prompt was seen in the record, so lines of an older turn never end a newer one.
A prompt read late, after its turn already ended off the screen (`TurnEngine.unrecorded`), witnesses nothing, and
the lines after it up to the next prompt are its own (its `abandoned` close must not end the turn sent since).
A driver subclasses it to change one kind's handling.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from litbridge.drivers.engine import prompt_words

if TYPE_CHECKING:
    from litbridge.drivers.engine import Turn, TurnEngine


class Dispatch:
    stream_text = False
    """`text` events carry the turn's exact text so far and become `replace`s (else the screen streams it)."""
    exact_final = True
    """A final text that differs from the last `replace` is sent as one more `replace` before `complete`."""
    stream_on_prompt = False
    """Read the screen at once when the prompt lands (the first `replace` comes sooner)."""

    def __init__(self, engine: TurnEngine, host: Any) -> None:
        self.engine, self.host = engine, host
        self.stale = False
        """The record's current prompt is one of a turn already ended (read late): its lines touch no turn."""

    def __call__(self, events: Iterable[Any]) -> None:
        for ev in events:
            self.event(ev)

    def event(self, ev: Any) -> None:
        eng = self.engine
        if ev.kind == "prompt":
            self.stale = self.late(ev.text)
            if not self.stale:
                self.prompt(ev)
            return
        self.seen(ev)
        turn = eng.turn
        if turn is None or not turn.witnessed or self.stale:
            return  # e.g. the `abandoned` close of an older prompt that arrives with the next one
        kind = ev.kind
        if kind == "text":
            if self.stream_text:
                eng.set_text(ev.text)
        elif kind == "reasoning":
            if ev.text.strip():
                self.host.reasoning(ev.text)
        elif kind == "tool_use":
            self.host.tool_use(tool_id(ev), ev.text, ev.data.get("input"))
        elif kind == "tool_result":
            self.host.tool_result(tool_id(ev), ev.text, bool(ev.data.get("is_error")))
        elif kind == "complete":
            self.complete(ev, turn)
        elif kind in ("interrupted", "abandoned"):
            self.interrupted(ev, turn)
        elif kind == "error":
            self.error(ev, turn)
        else:
            self.other(ev, turn)

    # -------------------------------------------------------------------------------------------- per kind
    def prompt(self, ev: Any) -> None:
        eng = self.engine
        if eng.turn is not None and not eng.turn.witnessed:
            eng.witness()
        elif eng.turn is None:
            eng.begin_organic(ev.text)  # typed into the CLI itself (attach); none before startup ends
        if self.stream_on_prompt and eng.turn is not None:
            eng.stream()

    def late(self, text: str) -> bool:
        """`text` is the prompt of a turn that ended before its record line was read (and not the open turn's)."""
        ended = self.engine.unrecorded
        if not ended:
            return False
        words = prompt_words(text)
        turn = self.engine.turn
        mine = turn is not None and not turn.witnessed and prompt_words(turn.text) == words
        for i, old in enumerate(ended):
            if prompt_words(old) == words:
                del ended[i]  # one prompt line per turn
                # the open send's own words too: taken as its line (the two cannot be told apart), and the
                # ended turn's forgotten, so that the send's line, if it comes later, is not taken for stale
                return not mine
        return False

    def seen(self, ev: Any) -> None:
        """Every non-prompt event, before the witnessed check."""

    def complete(self, ev: Any, turn: Turn) -> None:
        if self.exact_final and ev.text and ev.text != turn.last_text:
            self.engine.set_text(ev.text)
        self.engine.complete(ev.text, ev.data.get("usage"), "transcript")

    def interrupted(self, ev: Any, turn: Turn) -> None:
        self.engine.interrupted(ev.text or turn.last_text)

    def error(self, ev: Any, turn: Turn) -> None:
        self.engine.failed(ev.text, "api_error")

    def other(self, ev: Any, turn: Turn) -> None:
        """A kind of the CLI's own (e.g. Gemini's `answer`, a turn end that waits for an idle screen)."""


def tool_id(ev: Any) -> str:
    """The tool call's id, however the tracker named it."""
    data = ev.data
    return str(data.get("tool_use_id", data.get("id")) or "")
