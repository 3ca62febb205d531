"""The Claude driver's shared types: what a version's `Rules` read from a screen (no rules here).

Every rules version (`v2_1.Rules` and its subclasses) returns these, so the driver and the turn engine
never depend on a particular version module.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Option:
    digit: int
    label: str
    selected: bool
    row: int = -1

    def as_dict(self) -> dict:
        # `digit` is a string, as `answer{digit}` takes it (lit-bridge-rs sends it so too)
        return {"digit": str(self.digit), "label": self.label, "selected": self.selected}


@dataclass
class Dialog:
    """A modal: `kind` is trust/api_key/bypass/auto_mode_unavailable/permission/rewind/resume/choice."""

    kind: str
    text: str
    options: list[Option] = field(default_factory=list)
    detail: str = ""
    keys: dict[str, list[str]] = field(default_factory=dict)
    """Options answered by named keys instead of cursor moves (label -> key names)."""

    @property
    def selected_index(self) -> int | None:
        for i, o in enumerate(self.options):
            if o.selected:
                return i
        return None

    def find(self, *, digit: int | None = None, label: str | None = None) -> int | None:
        """Index of the option by digit or label (exact, then case-insensitive prefix)."""
        if digit is not None:
            for i, o in enumerate(self.options):
                if o.digit == digit:
                    return i
            return None
        if label is not None:
            want = label.strip().lower()
            for i, o in enumerate(self.options):
                if o.label.lower() == want:
                    return i
            for i, o in enumerate(self.options):
                if o.label.lower().startswith(want):
                    return i
        return None

    def signature(self) -> tuple:
        """Identity of the dialog ignoring the cursor position (used to tell dialogs apart)."""
        return (self.kind, self.text, tuple(o.label for o in self.options))


@dataclass
class ScreenState:
    """What one rendered frame says. `state`: blank, idle, busy, dialog or other."""

    state: str
    dialog: Dialog | None = None
    prompt_row: int | None = None
    footer: str = ""
    input_text: str = ""
    draft: str = ""
    """Text really typed into the input box (the rules leave Claude's dim placeholders out)."""
    spinner: str | None = None
    version: str | None = None

    @property
    def live_prompt(self) -> bool:
        return self.prompt_row is not None
