"""The Claude driver's shared types: what a version's `Rules` read from a screen (no rules here).

`Dialog` and `Option` are the model every driver shares (`drivers/dialog.py`); `ScreenState` is Claude's reading.

Every rules version (`v2_1.Rules` and its subclasses) returns these, so the driver and the turn engine
never depend on a particular version module.
"""

from __future__ import annotations

from dataclasses import dataclass

from litbridge.drivers.dialog import Dialog, Option

__all__ = ["Dialog", "Option", "ScreenState"]


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
