"""Gemini CLI 0.61.x screen and title knowledge, as pure functions of the window title and the screen rows.

Validated on the recordings of `@google/gemini-cli@0.61.0` (reference gemini-cli-0.61.0.md §3-§5). The TUI renders
inline (no alternate screen): old output, old dialogs and old prompts stay on screen, so everything here is judged
relative to the *live area* at the bottom - the full-width rule above the input box. A dialog replaces the input
box; a dialog box above the last rule is history.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

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
STARTUP_ACCEPT = {"trust": "Trust folder"}
"""Startup dialogs the driver answers itself: kind -> label prefix of the option to pick."""


def title_state(title: str | None) -> str | None:
    """`ready` / `working` / `action` for the CLI's own titles; None for an empty or foreign title."""
    t = (title or "").strip()
    for mark, word, state in _TITLES:
        if t.startswith(mark) and word in t[:24]:
            return state
    return None


@dataclass
class Option:
    digit: int
    label: str
    selected: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"digit": str(self.digit), "label": self.label, "selected": self.selected}


@dataclass
class Dialog:
    kind: str  # trust, auth, api_key, permission, unknown
    question_kind: str
    text: str
    options: list[Option] = field(default_factory=list)
    detail: str = ""

    def signature(self) -> tuple:
        return (self.kind, self.text, self.detail, tuple(o.label for o in self.options))

    def find(self, digit: int | None = None, label: str | None = None) -> int | None:
        """Index of the option with this digit, or whose label equals / starts with `label` (case-insensitive)."""
        for i, o in enumerate(self.options):
            if digit is not None and o.digit == digit:
                return i
        if label is not None:
            want = label.strip().lower()
            for exact in (True, False):
                for i, o in enumerate(self.options):
                    have = o.label.lower()
                    if have == want if exact else have.startswith(want):
                        return i
        return None

    def selected_index(self) -> int:
        for i, o in enumerate(self.options):
            if o.selected:
                return i
        return 0


@dataclass
class ScreenState:
    state: str  # blank, idle, busy, dialog, other
    dialog: Dialog | None = None
    draft: str = ""
    live_prompt: bool = False
    spinner: str | None = None
    spinner_seconds: int | None = None
    version: str | None = None


def _strip(rows: list[str]) -> list[str]:
    return [r.rstrip() for r in rows]


def last_rule(rows: list[str]) -> int | None:
    """Row index of the full-width rule above the input box (the start of the live area)."""
    for i in range(len(rows) - 1, -1, -1):
        if RULE_RE.match(rows[i]):
            return i
    return None


def _box_inner(row: str) -> str:
    s = row.strip()
    if s.startswith("│"):
        s = s[1:]
    if s.endswith("│"):
        s = s[:-1]
    return s.strip()


def parse_dialog(rows: list[str]) -> Dialog | None:
    """The dialog box at the bottom of `rows` (below any input rule), or None."""
    bottom = None
    for i in range(len(rows) - 1, -1, -1):
        if rows[i].strip():
            if BOX_BOTTOM_RE.match(rows[i]):
                bottom = i
            break
    if bottom is None:
        return None
    top = None
    for i in range(bottom - 1, -1, -1):
        if BOX_TOP_RE.match(rows[i]):
            top = i
            break
        if RULE_RE.match(rows[i]):
            return None
    if top is None:
        return None
    body = rows[top + 1 : bottom]
    inner = [_box_inner(r) for r in body]
    options: list[Option] = []
    for r in body:
        m = OPTION_RE.match(r)
        if m and r.lstrip().startswith("│") and not r.lstrip()[1:].lstrip().startswith("│"):
            options.append(Option(int(m.group(2)), m.group(3).strip(), bool(m.group(1))))
    if not options:
        return None
    joined = "\n".join(inner)
    kind, qkind, text = "unknown", "choice", ""
    for k, qk, needle in DIALOGS:
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
        inner_box = [_box_inner(_box_inner(r)) for r in body if r.lstrip().startswith("│ │")]
        detail = "\n".join(x for x in [tool[2:].strip(), *inner_box] if x)
    return Dialog(kind, qkind, text, options, detail)


def classify(rows: list[str]) -> ScreenState:
    """One screen -> state. Judged on the live area only: everything above the last rule is history."""
    rows = _strip(rows)
    version = None
    for r in rows[:12]:
        m = HEADER_RE.search(r)
        if m:
            version = m.group(1)
            break
    if not any(r.strip() for r in rows):
        return ScreenState("blank", version=version)
    rule = last_rule(rows)
    tail = rows if rule is None else rows[rule + 1 :]
    dialog = parse_dialog(tail)
    if dialog is not None:
        return ScreenState("dialog", dialog=dialog, version=version)
    spinner = seconds = None
    if rule is not None:
        for r in rows[max(0, rule - 3) : rule]:
            m = SPINNER_RE.match(r)
            if m:
                spinner = m.group(1) + " " + m.group(2).strip()
                seconds = int(m.group(3))
    live, draft = False, ""
    if rule is not None:
        for r in rows[rule + 1 : rule + 5]:
            m = PROMPT_RE.match(r)
            if m:
                live = True
                text = m.group(1).strip()
                draft = "" if text == PLACEHOLDER else text
                break
    if spinner is not None:
        return ScreenState("busy", draft=draft, live_prompt=live, spinner=spinner, spinner_seconds=seconds,
                           version=version)  # fmt: skip
    if live:
        return ScreenState("idle", draft=draft, live_prompt=True, version=version)
    return ScreenState("other", version=version)


MODEL_HEADING = "/model"
_FOOTER_CELL_RE = re.compile(r"\S+(?: \S+)*")


def footer_model(rows: list[str]) -> str | None:
    """The model the footer names below its `/model` heading (`Auto`, or the `--model` given, e.g.
    `gemini-2.5-flash`), right-aligned under it; None when the footer is not drawn (a dialog replaces it)."""
    rows = _strip(rows)
    rule = last_rule(rows)
    for i in range(len(rows) - 2, -1 if rule is None else rule, -1):
        if rows[i].endswith(" " + MODEL_HEADING):
            col = len(rows[i]) - len(MODEL_HEADING)
            cells = list(_FOOTER_CELL_RE.finditer(rows[i + 1]))
            return cells[-1].group() if cells and cells[-1].end() > col else None
    return None


def find_prompt(rows: list[str], text: str | None) -> int | None:
    """Row of the last echoed prompt (` > <first line of text>`) above the live area."""
    rows = _strip(rows)
    end = last_rule(rows)
    end = len(rows) if end is None else end
    first = (text or "").strip().split("\n", 1)[0][:150].strip()
    for i in range(end - 1, -1, -1):
        m = PROMPT_RE.match(rows[i])
        if m and (
            not first or m.group(1).strip().startswith(first[:60]) or first.startswith(m.group(1).strip())
        ):
            return i
    return None


def response_rows(rows: list[str], start: int | None) -> list[str]:
    """The answer's rows between the echoed prompt (`start`) and the live area, without the `✦ ` mark and indent,
    tool boxes, status lines or the spinner."""
    rows = _strip(rows)
    end = last_rule(rows)
    end = len(rows) if end is None else end
    out: list[str] = []
    in_box = False
    for r in rows[(start + 1 if start is not None else 0) : end]:
        s = r.strip()
        if BOX_TOP_RE.match(r):
            in_box = True
            continue
        if in_box:
            if BOX_BOTTOM_RE.match(r):
                in_box = False
            continue
        if (
            HALF_BLOCK_RE.match(r)
            or SPINNER_RE.match(r)
            or (s.endswith(SHORTCUTS_HINT) and not s.startswith(ANSWER_MARK.strip()))
        ):
            continue
        if r.startswith(ERROR_MARK) or r.startswith(INFO_MARK) or s.startswith("Press Ctrl+"):
            continue
        if r.startswith(ANSWER_MARK):
            out.append(r[len(ANSWER_MARK) :])
        elif r.startswith("  ") or not r:
            out.append(r[2:])
        else:
            out.append(r)
    while out and not out[-1].strip():
        out.pop()
    while out and not out[0].strip():
        out.pop(0)
    return out


def extract_response(rows: list[str], start: int | None) -> str:
    """The answer as shown on screen (markdown rendered: for `replace` while streaming; `complete` uses the chat)."""
    return "\n".join(response_rows(rows, start))


def error_lines(rows: list[str], start: int | None = None) -> list[str]:
    """`✕ …` error lines below the echoed prompt (what the CLI showed for a failed request)."""
    rows = _strip(rows)
    return [r[len(ERROR_MARK) :] for r in rows[(start or 0) :] if r.startswith(ERROR_MARK)]


def status_excerpt(rows: list[str]) -> str:
    """What the live area shows right now (spinner, errors, last answer rows), for a `turn_error` detail."""
    rows = _strip(rows)
    rule = last_rule(rows)
    end = len(rows) if rule is None else rule
    tail = [r.strip() for r in rows[max(0, end - 6) : end] if r.strip()]
    return "\n".join(tail)


def combined_state(screen: ScreenState, title: str | None) -> str:
    """The reading's state from the screen and the title: a dialog or spinner on screen wins; the title says
    busy while the screen has no spinner yet (request in flight, tool running); `Action Required` without a
    dialog we can parse is `other` (never typed into)."""
    if screen.state in ("dialog", "busy", "blank"):
        return screen.state
    if title == TITLE_WORKING:
        return "busy"
    if title == TITLE_ACTION:
        return "other"
    return screen.state


def dialog_keys(dialog: Dialog, index: int) -> list[str]:
    """Keys that pick option `index`: the option's own key when its label names one (`... (esc)`), else the
    highlight moved with arrows and Enter (the engine sends them one per repaint)."""
    if "(esc)" in dialog.options[index].label.lower():
        return ["Esc"]
    return cursor_keys(dialog, index)


def cursor_keys(dialog: Dialog, index: int) -> list[str]:
    """Arrow keys that move the dialog's highlight to option `index`, then Enter."""
    cur = dialog.selected_index()
    if index > cur:
        return ["Down"] * (index - cur) + ["Enter"]
    if index < cur:
        return ["Up"] * (cur - index) + ["Enter"]
    return ["Enter"]
