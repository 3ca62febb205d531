"""The record dispatch and prompt lines read late: a turn ended off the screen before its prompt line was read
(`TurnEngine.unrecorded`) owns that line and the lines after it, never the turn open now."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from litbridge.drivers.records.dispatch import Dispatch
from litbridge.turns import Turn


@dataclass
class Ev:
    kind: str
    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)


class Engine:
    def __init__(self, *ended: str) -> None:
        self.unrecorded: deque[str] = deque(ended, maxlen=8)
        self.turn: Turn | None = None
        self.ends: list[tuple[str, str]] = []

    def witness(self) -> None:
        assert self.turn is not None
        self.turn.witnessed = True

    def begin_organic(self, text: str) -> None:
        self.turn = Turn(text, witnessed=True)

    def interrupted(self, text: str) -> None:
        self.ends.append(("interrupted", text))
        self.turn = None

    def complete(self, text: str, usage: Any, source: str) -> None:
        self.ends.append(("complete", text))
        self.turn = None

    def set_text(self, text: str) -> None:
        pass


def test_an_ended_turns_line_and_its_close_touch_the_open_send_not() -> None:
    eng = Engine("slow first token")
    eng.turn = Turn("second try")
    d = Dispatch(eng, host=None)  # type: ignore[arg-type]
    d([Ev("prompt", " slow  first token\n")])  # read late; spacing as the CLI recorded it
    assert not eng.turn.witnessed and not eng.unrecorded
    d([Ev("abandoned"), Ev("prompt", "second try"), Ev("complete", "Recovered.")])
    assert eng.ends == [("complete", "Recovered.")]


def test_a_late_line_while_idle_opens_no_turn() -> None:
    eng = Engine("slow first token")
    d = Dispatch(eng, host=None)  # type: ignore[arg-type]
    d([Ev("prompt", "slow first token")])
    assert eng.turn is None
    d([Ev("abandoned"), Ev("prompt", "typed in the terminal")])  # then a prompt typed into the CLI itself
    assert eng.turn is not None and eng.turn.text == "typed in the terminal" and eng.ends == []


def test_the_open_sends_own_words_are_its_line() -> None:
    """An ended turn and the open send with the same words cannot be told apart: the line is the send's (as
    without the list), and the ended turn is forgotten so that a later line of the send is not taken for stale."""
    eng = Engine("continue")
    eng.turn = Turn("continue")
    d = Dispatch(eng, host=None)  # type: ignore[arg-type]
    d([Ev("prompt", "continue")])
    assert eng.turn.witnessed and not eng.unrecorded
    d([Ev("complete", "Done.")])
    assert eng.ends == [("complete", "Done.")]


def test_lines_of_a_prompt_nobody_sent_reach_the_open_turn() -> None:
    """A prompt the list does not hold (the common case) is handled as before: it verifies the open send."""
    eng = Engine("something else")
    eng.turn = Turn("hello")
    d = Dispatch(eng, host=None)  # type: ignore[arg-type]
    d([Ev("prompt", "hello"), Ev("complete", "Hi.")])
    assert eng.ends == [("complete", "Hi.")] and list(eng.unrecorded) == ["something else"]
