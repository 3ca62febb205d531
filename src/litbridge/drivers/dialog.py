"""The one dialog model every screen driver's rules return: what a CLI asks, its options, and how to tell it apart.

A version's `Rules` parse a modal into a `Dialog`; the turn engine relays it as the wire `question` event
(`Option.as_dict` for `options`, `Dialog.wire_detail` for `detail`), `answer` finds the option by digit or
label (`Dialog.find`) and the rules turn it into keys (`Dialog.selected_index` is where the cursor is). The web
view and `litbridge explain` read the same shape. Knows no CLI.

Forms, the same for every CLI:
- `Option.digit` is always a string ("1"): what `question.options[].digit` carries and `answer{digit}` takes.
- `Option.selected` is a bool; at most one option of a dialog is selected (`Dialog.selected_index`).
- `Dialog.detail` is always a string: the text the CLI shows with the question ("" when none). Named facts the
  rules read (Codex's `command`/`reason`/`environment`, a trust dialog's `folder`) go in `Dialog.fields`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Option:
    """One choice of a dialog. `row` is the screen row it was read from (-1: not from a row)."""

    digit: str
    label: str
    selected: bool = False
    row: int = -1

    def __post_init__(self) -> None:
        self.digit = str(self.digit)

    def as_dict(self) -> dict[str, Any]:
        """The wire form (`question.options[]`)."""
        return {"digit": self.digit, "label": self.label, "selected": self.selected}


@dataclass
class Dialog:
    """A modal the rules parsed. `kind` is the rules' own name for it (trust, permission, login...);
    `question_kind` the wire kind when the rules know it (else the driver maps `kind`)."""

    kind: str
    text: str
    options: list[Option] = field(default_factory=list)
    detail: str = ""
    fields: dict[str, str] = field(default_factory=dict)
    """Named facts read off the dialog (e.g. `command`, `reason`); relayed as the wire `detail` object."""
    keys: dict[str, list[str]] = field(default_factory=dict)
    """Options answered by named keys instead of cursor moves (label -> key names)."""
    question_kind: str | None = None
    ident: tuple[Any, ...] = ()
    """What else tells this dialog from another with the same kind, text and labels (the rules choose: e.g.
    the detail or the fields); part of `signature`."""

    def selected_index(self) -> int | None:
        """Index of the selected option (where the cursor is), or None when none is marked."""
        for i, o in enumerate(self.options):
            if o.selected:
                return i
        return None

    def find(self, *, digit: str | int | None = None, label: str | None = None) -> int | None:
        """Index of the option with this digit, else the one whose label equals (then starts with) `label`,
        case-insensitively; None when there is none."""
        if digit is not None:
            want = str(digit).strip()
            return next((i for i, o in enumerate(self.options) if o.digit == want), None)
        if label is not None:
            want = label.strip().lower()
            for exact in (True, False):
                for i, o in enumerate(self.options):
                    have = o.label.lower()
                    if have == want if exact else have.startswith(want):
                        return i
        return None

    def signature(self) -> tuple[Any, ...]:
        """Identity of the dialog ignoring the cursor position (the engine tells dialogs apart by it)."""
        return (self.kind, self.text, tuple(o.label for o in self.options), self.ident)

    def grew_from(self, earlier: Dialog) -> bool:
        """This dialog is `earlier` painted further: another signature, but the same kind, text and options and
        every fact `earlier` showed still there, only more. A CLI that draws a modal in steps (opencode: the
        options and title, then the command) can have its first paint taken as the dialog on a busy machine; an
        answer given to that paint is meant for the whole."""
        return (
            self.signature() != earlier.signature()
            and (self.kind, self.text) == (earlier.kind, earlier.text)
            and [o.label for o in self.options] == [o.label for o in earlier.options]
            and all(self.fields.get(k) == v for k, v in earlier.fields.items())
            and self.detail.startswith(earlier.detail)
        )

    def wire_detail(self) -> str | dict[str, str] | None:
        """The wire `question.detail`: the named facts when the rules read any, else the text, else None."""
        if self.fields:
            return dict(self.fields)
        return self.detail or None
