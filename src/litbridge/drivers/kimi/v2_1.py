"""Kimi Code 2.1.x screen knowledge: `Rules`, pure methods over the screen rows.

Kimi renders inline: the history scrolls up, the live area is at the bottom. Idle, the editor is a rounded box
(`╭─`, `│ > text`, `╰─`) with the footer below; while a turn runs a braille loader sits above it (`⠦ Working… ·
Tip: ...`). A dialog replaces the editor with a panel between two full-width rules: the first-start trust panel
(`Trust this folder?`, options with a `❯` cursor, no digits) and the approval panel (`▶ Run this command?`, the
cwd and `$ command`, numbered options `▶ 1. Approve once` ... `4. Reject with feedback`, `1/2/3/4 choose`: a digit
picks its option at once). The welcome box prints `Version:   2.1.0`. A later version subclasses `Rules`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from litbridge.drivers.dialog import Dialog, Option
from litbridge.drivers.kit import Rules as BaseRules

__all__ = ["Rules", "ScreenState"]


@dataclass
class ScreenState:
    state: str  # blank, idle, busy, dialog, other
    dialog: Dialog | None = None
    draft: str = ""
    live_prompt: bool = False
    spinner: str | None = None
    version: str | None = None


class Rules(BaseRules):
    VERSION = "2.1"
    VERSION_RE = re.compile(r"^\s*│\s+Version:\s+(\d+\.\d+\.\d+)")
    RULE_RE = re.compile(r"^\s?─{40,}\s*$")
    BOX_TOP_RE = re.compile(r"^\s?╭─{20,}")
    BOX_BOTTOM_RE = re.compile(r"^\s?╰─{20,}")
    EDITOR_RE = re.compile(r"^\s?│ (?:> )?(.*?)\s*│?\s*$")
    LOADER_RE = re.compile(r"^\s{0,3}([\u2800-\u28ff\U0001f311-\U0001f318])\s+(?:· )?(\S.*?)\s*$")
    """The loader above the editor: a braille spinner, or (waiting for the model's first token) a moon-phase one
    with a tip (`🌒 · Tip: ...`)."""
    OPTION_RE = re.compile(r"^\s*(▶|❯)?\s*(\d+)\. (.+?)\s*$")
    TRUST_TITLE = "Trust this folder?"
    TRUST_OPTIONS = ("Trust this folder", "Don't trust")
    CURSOR = "❯"
    QUESTION_KIND: ClassVar[Mapping[str, str]] = {"permission": "permission", "trust": "trust"}
    STARTUP_ACCEPT: ClassVar[Mapping[str, str]] = {"trust": "Trust this folder"}

    def classify(self, rows: list[str]) -> ScreenState:
        if not any(r.strip() for r in rows):
            return ScreenState("blank")
        version = self.version_of(rows)
        dialog = self.parse_dialog(rows)
        if dialog is not None:
            return ScreenState("dialog", dialog, version=version)
        editor = self.editor(rows)
        if editor is None:
            return ScreenState("other", version=version)
        top, bottom = editor
        lines = []
        for r in rows[top + 1 : bottom]:
            m = self.EDITOR_RE.match(r)
            lines.append(m.group(1) if m else r.strip())
        draft = "\n".join(lines).strip()
        spinner = self.loader(rows, top)
        return ScreenState(
            "idle" if spinner is None else "busy",
            draft=draft,
            live_prompt=True,
            spinner=spinner,
            version=version,
        )

    def version_of(self, rows: list[str]) -> str | None:
        for r in rows[:20]:
            m = self.VERSION_RE.match(r)
            if m:
                return m.group(1)
        return None

    def editor(self, rows: list[str]) -> tuple[int, int] | None:
        """Rows of the editor box's top and bottom (the last rounded box on screen)."""
        bottom = next((i for i in range(len(rows) - 1, -1, -1) if self.BOX_BOTTOM_RE.match(rows[i])), None)
        if bottom is None:
            return None
        top = next((i for i in range(bottom - 1, -1, -1) if self.BOX_TOP_RE.match(rows[i])), None)
        if top is None or bottom - top > 12:
            return None
        return top, bottom

    def panel(self, rows: list[str]) -> tuple[int, int] | None:
        """The last two full-width rules with no editor box below them: a dialog panel."""
        rules = [i for i, r in enumerate(rows) if self.RULE_RE.match(r)]
        if len(rules) < 2:
            return None
        top, bottom = rules[-2], rules[-1]
        if any(self.BOX_TOP_RE.match(r) for r in rows[bottom:]):
            return None
        return top, bottom

    def loader(self, rows: list[str], top: int) -> str | None:
        for r in rows[max(0, top - 4) : top]:
            m = self.LOADER_RE.match(r)
            if m:
                return m.group(2)
        return None

    def parse_dialog(self, rows: list[str]) -> Dialog | None:
        panel = self.panel(rows)
        if panel is None:
            return None
        body = [r.rstrip() for r in rows[panel[0] + 1 : panel[1]]]
        texts = [r.strip() for r in body if r.strip()]
        if not texts:
            return None
        options: list[Option] = []
        if texts[0] == self.TRUST_TITLE:
            for y, r in enumerate(body):
                s = r.strip()
                label = s.lstrip(self.CURSOR).strip()
                if label in self.TRUST_OPTIONS:
                    options.append(
                        Option(str(len(options) + 1), label, s.startswith(self.CURSOR), panel[0] + 1 + y)
                    )
            folder = next((t for t in texts[1:] if t.startswith("/")), "")
            return Dialog(
                "trust", self.TRUST_TITLE, options, detail=folder, fields={"folder": folder} if folder else {}
            )
        for y, r in enumerate(body):
            m = self.OPTION_RE.match(r)
            if m:
                options.append(Option(m.group(2), m.group(3), bool(m.group(1)), panel[0] + 1 + y))
        if not options:
            return None
        title = texts[0].lstrip("▶").strip()
        first_option = options[0].row - panel[0] - 1
        info = [r.strip() for r in body[1:first_option] if r.strip()]
        fields: dict[str, str] = {}
        for line in info:
            if line.startswith("$ "):
                fields["command"] = line[2:]
            elif line.startswith("cwd: "):
                fields["cwd"] = line[5:]
        kind = "permission" if any(o.label.startswith("Approve") for o in options) else "choice"
        return Dialog(kind, title, options, detail="\n".join(info), fields=fields)

    def dialog_keys(self, dialog: Dialog, index: int) -> list[str]:
        """Approval panel: the digit picks at once. Trust panel (no digits on screen): arrows, then Enter."""
        if dialog.kind != "trust":
            return [str(dialog.options[index].digit)]
        cur = dialog.selected_index() or 0
        return ["Down" if index > cur else "Up"] * abs(index - cur) + ["Enter"]

    def find_prompt(self, rows: list[str], text: str | None) -> int | None:
        """Row of the echoed prompt (`✨ <first line>`) above the live area."""
        first = (text or "").strip().split("\n", 1)[0].strip()[:150]
        end = self.editor(rows) or self.panel(rows)
        stop = end[0] if end else len(rows)
        for i in range(stop - 1, -1, -1):
            s = rows[i].strip()
            if s.startswith("✨ ") and (
                not first or s[2:].strip().startswith(first[:60]) or first.startswith(s[2:].strip())
            ):
                return i
        return None

    def extract_response(self, rows: list[str], start: int | None) -> str:
        """The answer's `● ` blocks after the prompt (tool lines and the loader left out), indent removed."""
        if start is None:
            return ""
        end = self.editor(rows) or self.panel(rows)
        stop = end[0] if end else len(rows)
        out: list[str] = []
        keep = False
        for r in rows[start + 1 : stop]:
            s = r.rstrip()
            if s.startswith(" ● "):
                body = s[3:]
                keep = not (body.startswith(("Running a command", "Ran a command", "Used ")))
                if keep:
                    out.append(body)
            elif s.startswith(" ✗ ") or self.LOADER_RE.match(s):
                keep = False
            elif keep:
                out.append(s[3:] if s.startswith("   ") else s.strip())
        while out and not out[-1].strip():
            out.pop()
        return "\n".join(out)

    def modal_excerpt(self, rows: list[str]) -> str | None:
        panel = self.panel(rows)
        if panel is None:
            return None
        return "\n".join(r.strip() for r in rows[panel[0] + 1 : panel[1]] if r.strip())[:600] or None

    def footer_model(self, rows: list[str]) -> str | None:
        box = self.editor(rows)
        if box is None:
            return None
        for r in rows[box[1] + 1 : box[1] + 3]:
            parts = r.strip().split("  ", 1)
            if parts and parts[0]:
                return parts[0]
        return None
