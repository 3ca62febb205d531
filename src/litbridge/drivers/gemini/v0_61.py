"""Gemini CLI 0.61.x screen and title knowledge: `Rules`, pure methods over the window title and the screen rows.

Validated on the recordings of `@google/gemini-cli@0.61.0` (reference gemini-cli-0.61.0.md §3-§5). The TUI renders
inline (no alternate screen): old output, old dialogs and old prompts stay on screen, so everything here is judged
relative to the *live area* at the bottom - the full-width rule above the input box. A dialog replaces the input
box; a dialog box above the last rule is history. A later version subclasses `Rules` (`class Rules(v0_61.Rules)`)
overriding only what changed, registered in `versions.py`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from litbridge.drivers.dialog import Dialog, Option
from litbridge.drivers.kit import Rules as BaseRules
from litbridge.drivers.screen_ops import cached_match, first_match, last_kind, last_match, strip_rows

__all__ = ["Dialog", "Option", "Reading", "Rules", "ScreenState"]


@dataclass
class ScreenState:
    state: str  # blank, idle, busy, dialog, other
    dialog: Dialog | None = None
    draft: str = ""
    live_prompt: bool = False
    spinner: str | None = None
    spinner_seconds: int | None = None
    version: str | None = None


class Rules(BaseRules):
    """Gemini CLI 0.61.x rules: every marker is a class attribute and every reading a method (they call each other
    through `self`), so a later version's `class Rules(v0_61.Rules)` overrides one thing at a time."""

    VERSION = "0.61"

    # Window title (OSC 0, space-padded to 80 columns): `◇  Ready (dir)`, `✦  Working… (dir)`, `✋  Action Required (dir)`
    TITLE_READY, TITLE_WORKING, TITLE_ACTION = "ready", "working", "action"
    _TITLES = (
        ("◇", "Ready", TITLE_READY),
        ("✦", "Working", TITLE_WORKING),
        ("✋", "Action Required", TITLE_ACTION),
    )

    HEADER_RE = re.compile(r"Gemini CLI v(\d+\.\d+\.\d+)")
    RULE_RE = re.compile(r"^─{40,}\s*$")
    SPINNER_RE = re.compile(r"^\s*(\S)\s+(.*\(esc to cancel, (\d+)s\))")
    PROMPT_RE = re.compile(r"^ > (.*)$")
    PLACEHOLDER = "Type your message or @path/to/file"
    OPTION_RE = re.compile(r"^\s*│\s*(●)?\s*(\d+)\.\s+(.+?)\s*│?\s*$")
    BOX_TOP_RE = re.compile(r"^\s?╭─")
    BOX_BOTTOM_RE = re.compile(r"^\s?╰─")
    SHORTCUTS_HINT = "? for shortcuts"
    HALF_BLOCK_RE = re.compile(r"^\s*(▀+|▄+)\s*$")  # the bars above/below an echoed prompt (colour terminals)
    ERROR_MARK, INFO_MARK, ANSWER_MARK = "✕ ", "ℹ ", "✦ "

    # dialog kind -> (question kind for the protocol, text that identifies it)
    DIALOGS: tuple[tuple[str, str, str], ...] = (
        ("trust", "trust", "Do you trust the files in this folder?"),
        ("auth", "choice", "How would you like to authenticate"),
        ("api_key", "text", "Enter Gemini API Key"),
        ("permission", "permission", "Allow execution"),
        ("permission", "permission", "Do you want to proceed?"),
        ("permission", "permission", "Allow modification"),
        ("permission", "permission", "Apply this change?"),
        ("loop_detection", "choice", "A potential loop was detected"),  # seen live on repetitive answers
    )
    STARTUP_ACCEPT: ClassVar[Mapping[str, str]] = {"trust": "Trust folder"}
    """Startup dialogs the driver answers itself: kind -> label prefix of the option to pick."""

    def title_state(self, title: str | None) -> str | None:
        """`ready` / `working` / `action` for the CLI's own titles; None for an empty or foreign title."""
        t = (title or "").strip()
        for mark, word, state in self._TITLES:
            if t.startswith(mark) and word in t[:24]:
                return state
        return None

    @staticmethod
    def _strip(rows: list[str]) -> list[str]:
        return strip_rows(rows)

    def last_rule(self, rows: list[str]) -> int | None:
        """Row index of the full-width rule above the input box (the start of the live area)."""
        return last_match(rows, self.RULE_RE)

    @staticmethod
    def _box_inner(row: str) -> str:
        s = row.strip()
        if s.startswith("│"):
            s = s[1:]
        if s.endswith("│"):
            s = s[:-1]
        return s.strip()

    def parse_dialog(self, rows: list[str]) -> Dialog | None:
        """The dialog box at the bottom of `rows` (below any input rule), or None."""
        # the last row with text, if it is a box's bottom (each row text tested once)
        last, what = last_kind(rows, self._bottom_kind, (type(self), "bottom"))
        bottom = last if what == 1 else None
        if bottom is None:
            return None
        top = None
        for i in range(bottom - 1, -1, -1):
            if self.BOX_TOP_RE.match(rows[i]):
                top = i
                break
            if self.RULE_RE.match(rows[i]):
                return None
        if top is None:
            return None
        body = rows[top + 1 : bottom]
        inner = [self._box_inner(r) for r in body]
        options: list[Option] = []
        for r in body:
            m = cached_match(self.OPTION_RE, r)  # a box row's test backtracks: once per distinct row text
            if m and r.lstrip().startswith("│") and not r.lstrip()[1:].lstrip().startswith("│"):
                options.append(Option(str(int(m.group(2))), m.group(3).strip(), bool(m.group(1))))
        if not options:
            return None
        joined = "\n".join(inner)
        kind, qkind, text = "unknown", "choice", ""
        for k, qk, needle in self.DIALOGS:
            if needle in joined:
                kind, qkind = k, qk
                text = next((s for s in inner if needle in s), needle)
                text = text[1:].lstrip() if text.startswith("? ") else text  # the box's question icon
                break
        if kind == "unknown":
            text = next((s for s in inner if s.endswith("?")), next((s for s in inner if s), ""))
        detail = ""
        if kind == "permission":
            # the tool line (`? Shell  <command>`) and the command inside the inner box
            tool = next((s for s in inner if s.startswith("? ")), "")
            inner_box = [self._box_inner(self._box_inner(r)) for r in body if r.lstrip().startswith("│ │")]
            detail = "\n".join(x for x in [tool[2:].strip(), *inner_box] if x)
        return Dialog(kind, text, options, detail, question_kind=qkind, ident=(detail,))

    def _bottom_kind(self, row: str) -> int:
        """For `parse_dialog`'s scan up: 1 a box's bottom row, 2 another row with text, 0 a blank row."""
        if not row.strip():
            return 0
        return 1 if self.BOX_BOTTOM_RE.match(row) else 2

    def header_version(self, rows: list[str]) -> str | None:
        """The version the header names in the first rows (`HEADER_RE`), None before it is drawn."""
        y = first_match(rows, self.HEADER_RE, 0, 12, search=True)  # each row text searched once
        m = self.HEADER_RE.search(rows[y]) if y is not None else None
        return str(m.group(1)) if m else None

    def classify(self, rows: list[str]) -> ScreenState:
        """One screen -> state. Judged on the live area only: everything above the last rule is history."""
        rows = self._strip(rows)
        version = self.header_version(rows)
        if not any(rows):  # right-stripped: a row with text is a non-empty one
            return ScreenState("blank", version=version)
        rule = self.last_rule(rows)
        tail = rows if rule is None else rows[rule + 1 :]
        dialog = self.parse_dialog(tail)
        if dialog is not None:
            return ScreenState("dialog", dialog=dialog, version=version)
        spinner = seconds = None
        if rule is not None:
            for r in rows[max(0, rule - 3) : rule]:
                m = self.SPINNER_RE.match(r)
                if m:
                    spinner = m.group(1) + " " + m.group(2).strip()
                    seconds = int(m.group(3))
        live, draft = False, ""
        if rule is not None:
            for r in rows[rule + 1 : rule + 5]:
                m = self.PROMPT_RE.match(r)
                if m:
                    live = True
                    text = m.group(1).strip()
                    draft = "" if text == self.PLACEHOLDER else text
                    break
        if spinner is not None:
            return ScreenState("busy", draft=draft, live_prompt=live, spinner=spinner, spinner_seconds=seconds,
                               version=version)  # fmt: skip
        if live:
            return ScreenState("idle", draft=draft, live_prompt=True, version=version)
        return ScreenState("other", version=version)

    MODEL_HEADING = "/model"
    _FOOTER_CELL_RE = re.compile(r"\S+(?: \S+)*")

    def footer_model(self, rows: list[str]) -> str | None:
        """The model the footer names below its `/model` heading (`Auto`, or the `--model` given, e.g.
        `gemini-2.5-flash`), right-aligned under it; None when the footer is not drawn (a dialog replaces it)."""
        rows = self._strip(rows)
        rule = self.last_rule(rows)
        for i in range(len(rows) - 2, -1 if rule is None else rule, -1):
            if rows[i].endswith(" " + self.MODEL_HEADING):
                col = len(rows[i]) - len(self.MODEL_HEADING)
                cells = list(self._FOOTER_CELL_RE.finditer(rows[i + 1]))
                return cells[-1].group() if cells and cells[-1].end() > col else None
        return None

    def find_prompt(self, rows: list[str], text: str | None) -> int | None:
        """Row of the last echoed prompt (` > <first line of text>`) above the live area."""
        rows = self._strip(rows)
        end = self.last_rule(rows)
        end = len(rows) if end is None else end
        first = (text or "").strip().split("\n", 1)[0][:150].strip()
        for i in range(end - 1, -1, -1):
            m = self.PROMPT_RE.match(rows[i])
            if m and (
                not first or m.group(1).strip().startswith(first[:60]) or first.startswith(m.group(1).strip())
            ):
                return i
        return None

    def response_rows(self, rows: list[str], start: int | None) -> list[str]:
        """The answer's rows between the echoed prompt (`start`) and the live area, without the `✦ ` mark and indent,
        tool boxes, status lines or the spinner."""
        rows = self._strip(rows)
        end = self.last_rule(rows)
        end = len(rows) if end is None else end
        out: list[str] = []
        in_box = False
        for r in rows[(start + 1 if start is not None else 0) : end]:
            s = r.strip()
            if self.BOX_TOP_RE.match(r):
                in_box = True
                continue
            if in_box:
                if self.BOX_BOTTOM_RE.match(r):
                    in_box = False
                continue
            if (
                self.HALF_BLOCK_RE.match(r)
                or self.SPINNER_RE.match(r)
                or (s.endswith(self.SHORTCUTS_HINT) and not s.startswith(self.ANSWER_MARK.strip()))
            ):
                continue
            if r.startswith(self.ERROR_MARK) or r.startswith(self.INFO_MARK) or s.startswith("Press Ctrl+"):
                continue
            if r.startswith(self.ANSWER_MARK):
                out.append(r[len(self.ANSWER_MARK) :])
            elif r.startswith("  ") or not r:
                out.append(r[2:])
            else:
                out.append(r)
        while out and not out[-1].strip():
            out.pop()
        while out and not out[0].strip():
            out.pop(0)
        return out

    def extract_response(self, rows: list[str], start: int | None) -> str:
        """The answer as shown on screen (markdown rendered: for `replace` while streaming; `complete` uses the chat)."""
        return "\n".join(self.response_rows(rows, start))

    def error_lines(self, rows: list[str], start: int | None = None) -> list[str]:
        """`✕ …` error lines below the echoed prompt (what the CLI showed for a failed request)."""
        rows = self._strip(rows)
        return [r[len(self.ERROR_MARK) :] for r in rows[(start or 0) :] if r.startswith(self.ERROR_MARK)]

    def status_excerpt(self, rows: list[str]) -> str:
        """What the live area shows right now (spinner, errors, last answer rows), for a `turn_error` detail."""
        rows = self._strip(rows)
        rule = self.last_rule(rows)
        end = len(rows) if rule is None else rule
        tail = [r.strip() for r in rows[max(0, end - 6) : end] if r.strip()]
        return "\n".join(tail)

    def combined_state(self, screen: ScreenState, title: str | None) -> str:
        """The reading's state from the screen and the title: a dialog or spinner on screen wins; the title says
        busy while the screen has no spinner yet (request in flight, tool running); `Action Required` without a
        dialog we can parse is `other` (never typed into)."""
        if screen.state in ("dialog", "busy", "blank"):
            return screen.state
        if title == self.TITLE_WORKING:
            return "busy"
        if title == self.TITLE_ACTION:
            return "other"
        return screen.state

    def dialog_keys(self, dialog: Dialog, index: int) -> list[str]:
        """Keys that pick option `index`: the option's own key when its label names one (`... (esc)`), else the
        highlight moved with arrows and Enter (the engine sends them one per repaint)."""
        if "(esc)" in dialog.options[index].label.lower():
            return ["Esc"]
        return self.cursor_keys(dialog, index)

    def cursor_keys(self, dialog: Dialog, index: int) -> list[str]:
        """Arrow keys that move the dialog's highlight to option `index`, then Enter."""
        cur = dialog.selected_index() or 0
        if index > cur:
            return ["Down"] * (index - cur) + ["Enter"]
        if index < cur:
            return ["Up"] * (cur - index) + ["Enter"]
        return ["Enter"]

    def read(self, rows: list[str], title: str | None = None) -> Reading:
        """The engine's reading: the screen, and the window title (raw) read by `title_state`."""
        return Reading(self.classify(rows), self.title_state(title), self)


@dataclass
class Reading:
    """One screen + window title as the engine sees it (the `engine.Reading` attributes)."""

    screen: ScreenState
    title: str | None  # `Rules.title_state` of the window title
    rules: Rules = field(repr=False)
    state: str = field(init=False)

    def __post_init__(self) -> None:
        self.state = self.rules.combined_state(self.screen, self.title)

    @property
    def dialog(self) -> Dialog | None:
        return self.screen.dialog

    @property
    def spinner(self) -> str | None:
        return self.screen.spinner

    @property
    def live_prompt(self) -> bool:
        return self.screen.live_prompt

    @property
    def draft(self) -> str:
        return self.screen.draft

    @property
    def version(self) -> str | None:
        return self.screen.version
