"""Pi 0.73.x screen knowledge: `Rules`, pure methods over the screen rows.

Pi renders inline (no alternate screen, history scrolls up): the editor is the text between the last two
full-width rules at the bottom, with the working folder and the model footer below it. While a turn runs a braille
loader sits above the editor (` ⠇ Working...`, ` ⠸ Retrying (1/3) in 2s... (escape to cancel)`). The header
prints ` pi v0.73.1`. Pi never asks anything in a turn (tools run without approval), so these rules parse no
dialog. A later version subclasses `Rules` overriding only what changed, registered in `versions.py`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from litbridge.drivers.dialog import Dialog
from litbridge.drivers.kit import Rules as BaseRules

__all__ = ["Rules", "ScreenState"]


@dataclass
class ScreenState:
    state: str  # blank, idle, busy, other
    dialog: Dialog | None = None
    draft: str = ""
    live_prompt: bool = False
    spinner: str | None = None
    version: str | None = None


class Rules(BaseRules):
    """Pi 0.73.x rules: every marker a class attribute, every reading a method."""

    VERSION = "0.73"
    HEADER_RE = re.compile(r"^\s*pi v(\d+\.\d+\.\d+)\s*$")
    RULE_RE = re.compile(r"^─{40,}\s*$")
    LOADER_RE = re.compile(r"^\s?([\u2800-\u28ff])\s+(\S.*?)\s*$")
    LOADER_LOOKBACK = 4  # rows above the editor searched for the loader
    ABORTED = "Operation aborted"
    ERROR_PREFIX = "Error: "

    def classify(self, rows: list[str]) -> ScreenState:
        if not any(r.strip() for r in rows):
            return ScreenState("blank")
        version = self.version_of(rows)
        editor = self.editor(rows)
        if editor is None:
            return ScreenState("other", version=version)
        top, bottom = editor
        draft = "\n".join(r.rstrip() for r in rows[top + 1 : bottom]).strip("\n")
        draft = draft if draft.strip() else ""
        spinner = self.loader(rows, top)
        state = "idle" if spinner is None else "busy"
        return ScreenState(state, draft=draft, live_prompt=True, spinner=spinner, version=version)

    def version_of(self, rows: list[str]) -> str | None:
        for r in rows[:12]:
            m = self.HEADER_RE.match(r)
            if m:
                return m.group(1)
        return None

    def editor(self, rows: list[str]) -> tuple[int, int] | None:
        """Rows of the editor's top and bottom rules (the last two full-width rules), or None."""
        rules = [i for i, r in enumerate(rows) if self.RULE_RE.match(r)]
        if len(rules) < 2:
            return None
        return rules[-2], rules[-1]

    def loader(self, rows: list[str], top: int) -> str | None:
        """The loader's text (`Working...`, `Retrying (1/3) in 2s... (escape to cancel)`) above the editor."""
        for r in rows[max(0, top - self.LOADER_LOOKBACK) : top]:
            m = self.LOADER_RE.match(r)
            if m:
                return m.group(2)
        return None

    def find_prompt(self, rows: list[str], text: str | None) -> int | None:
        """Row of the last line of the echoed prompt `text` above the editor (Pi indents it one column)."""
        editor = self.editor(rows)
        end = editor[0] if editor else len(rows)
        lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
        if not lines:
            return None
        last = lines[-1][:190]
        for i in range(end - 1, -1, -1):
            shown = rows[i].strip()
            if shown and (shown == last or (len(shown) > 20 and last.startswith(shown))):
                return i
        return None

    def extract_response(self, rows: list[str], start: int | None) -> str:
        """The answer's rows between the echoed prompt (`start`) and the editor, without the loader and the
        one-column indent."""
        if start is None:
            return ""
        editor = self.editor(rows)
        end = editor[0] if editor else len(rows)
        out: list[str] = []
        for r in rows[start + 1 : end]:
            if self.LOADER_RE.match(r):
                continue
            out.append(r[1:].rstrip() if r.startswith(" ") else r.rstrip())
        while out and not out[-1].strip():
            out.pop()
        while out and not out[0].strip():
            out.pop(0)
        return "\n".join(out)

    def error_lines(self, rows: list[str]) -> list[str]:
        """`Error: ...` rows above the editor (what Pi showed of an API error)."""
        editor = self.editor(rows)
        end = editor[0] if editor else len(rows)
        return [r.strip() for r in rows[:end] if r.strip().startswith(self.ERROR_PREFIX)]

    def footer_model(self, rows: list[str]) -> str | None:
        """The model the footer names (right-aligned on the row below the working folder)."""
        editor = self.editor(rows)
        if editor is None:
            return None
        for r in rows[editor[1] + 1 : editor[1] + 4]:
            parts = r.rstrip().rsplit("  ", 1)
            if len(parts) == 2 and parts[1].strip() and "%/" in parts[0]:
                return parts[1].strip()
        return None
