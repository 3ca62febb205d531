"""GitHub Copilot CLI 1.0.x screen rules, pure (no I/O, no timing, no driver state).

Read off the 1.0.102 recordings in tests/fixtures/captures/copilot/. The bottom of the main screen is the live
area: the cwd row, a full-width rule, the input row `❯ <draft>`, another rule and the footer (`← open sidebar ·
Interactive · Manual Approval · …  <model>` when idle, `◉ Working · 16 B esc esc interrupt  <model>` while busy).
A dialog (folder trust, a tool approval) replaces the input area with a rounded box whose options are
`│ ❯ 1. Yes │`. A scrollbar (`┃`) may take the last column once the conversation is taller than the screen.

A later version: `v1_1.py` with `class Rules(v1_0.Rules)` overriding what changed, and one line in `versions.py`.
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
    """One frame read (the engine's `Reading`): `state` blank / dialog / busy / idle / other; `input_row` the
    input row's index (None when no input is drawn); `footer` the footer row's text."""

    state: str
    dialog: Dialog | None = None
    spinner: str | None = None
    input_row: int | None = None
    draft: str = ""
    footer: str = ""
    version: str | None = None

    @property
    def live_prompt(self) -> bool:
        return self.input_row is not None and self.dialog is None


class Rules(BaseRules):
    """Copilot CLI 1.0 rules: every marker a class attribute, every reading a method."""

    VERSION = "1.0"

    HEADER_RE = re.compile(r"Copilot v(\d+\.\d+\.\d+)")
    RULE_RE = re.compile(r"^─{40,}$")
    INPUT_PREFIX = "❯"
    BUSY_RE = re.compile(r"^\s*\S?\s*(Working|Thinking|Running|Compacting)\b.*\besc\b")
    """The footer while a turn runs (`◉ Working · 16 B esc esc interrupt`, `◎ Working esc esc edit prompt`)."""
    BUSY_MARKS = ("esc to cancel", "esc interrupt")
    COUNTER_RE = re.compile(r" · [\d.,]+ ?[kKMG]?B\b")
    """The streamed-bytes counter in the busy footer (`· 16 B`): left out of the spinner, which is relayed as
    `thinking` once per change of its text."""
    SCROLLBAR = "┃"
    BOX_TOP, BOX_BOTTOM, BOX_SIDE = "╭", "╰", "│"
    OPTION_RE = re.compile(r"^(❯)?\s*(\d+)\.\s+(.+?)$")
    NAV_HINT = "to navigate"
    TRUST_TITLE = "Confirm folder trust"
    TRUST_QUESTION = "Do you trust the files in this folder?"
    PERMISSION_RE = re.compile(r"^Do you want to .+\?$")
    ANSWER_MARK = "● "
    PROMPT_ROW_RE = re.compile(r"^ ❯ (.*?)(?:\s{2,}\d{1,2}:\d{2})?$")
    """A prompt as the conversation shows it (` ❯ Say hello   10:39`)."""
    TOOL_MARKS = ("$ ", "✗ ", "✓ ", "○ ", "◐ ")
    STATUS_TEXTS = (
        "Operation cancelled by user",
        "Request failed due to a transient API error",
        "Response was interrupted due to a server error",
    )
    TOOL_ROW_RE = re.compile(r"\S\s{6,}\d+(\.\d+)?(ms|s|m( \d+s)?)$")
    """A finished tool item (`● Create new.txt +2      8s`): its duration at the right end of the row."""
    PERMISSION_PATH_RE = re.compile(r"^Do you want to (\w+) (/.+)\?$")
    ASK_TITLE = "Copilot needs information."
    ASK_HINT = "enter accept"
    ASK_OPTION_RE = re.compile(r"^ (❯| ) (\S.*)$")

    STARTUP_ACCEPT: ClassVar[Mapping[str, str]] = {"trust": "Yes"}
    """The folder trust dialog: `1. Yes` trusts it for this run only (`Launch` picks "Yes, and remember" when
    the caller preapproves)."""
    QUESTION_KIND: ClassVar[Mapping[str, str]] = {
        "permission": "permission",
        "trust": "trust",
        "ask_user": "choice",
    }

    # -------------------------------------------------------------------------------------------- rows
    def clean(self, rows: list[str]) -> list[str]:
        """Rows without trailing blanks and the scrollbar column."""
        out = []
        for r in rows:
            r = r.rstrip()
            if r.endswith(self.SCROLLBAR):
                r = r[:-1].rstrip()
            out.append(r)
        return out

    def version_of(self, rows: list[str]) -> str | None:
        for r in rows[:12]:
            m = self.HEADER_RE.search(r)
            if m:
                return m.group(1)
        return None

    def input_area(self, rows: list[str]) -> tuple[int, int] | None:
        """(input row, footer row) of the live area: a rule, `❯ …` rows, a rule, the footer; None when not drawn."""
        n = len(rows)
        for i in range(n - 1, max(n - 16, 0), -1):
            if not self.RULE_RE.match(rows[i]):
                continue
            # rows[i] is the rule under the input; the one above the input is further up
            for j in range(i - 1, max(i - 10, -1), -1):
                if self.RULE_RE.match(rows[j]):
                    if rows[j + 1].startswith(self.INPUT_PREFIX):
                        footer = next((k for k in range(i + 1, n) if rows[k].strip()), i + 1)
                        return j + 1, footer
                    break
        return None

    # -------------------------------------------------------------------------------------------- dialogs
    def _box(self, rows: list[str]) -> tuple[int, int] | None:
        """(top, bottom) of the rounded box at the bottom of the screen, or None."""
        last = next((i for i in range(len(rows) - 1, -1, -1) if rows[i].strip()), None)
        if last is None or not rows[last].lstrip().startswith(self.BOX_BOTTOM):
            return None
        for i in range(last - 1, -1, -1):
            s = rows[i].lstrip()
            if s.startswith(self.BOX_TOP) and not rows[i].startswith(self.BOX_SIDE):
                if len(rows[i]) - len(s) == 0 or i == 0 or not rows[i - 1].startswith(self.BOX_SIDE):
                    return i, last
            if not s.startswith((self.BOX_SIDE, self.BOX_TOP)):
                return None
        return None

    def _inner(self, row: str) -> str:
        s = row.strip()
        if s.startswith(self.BOX_SIDE):
            s = s[1:]
        if s.endswith(self.BOX_SIDE):
            s = s[:-1]
        return s.strip()

    def parse_dialog(self, rows: list[str]) -> Dialog | None:
        """The dialog box at the bottom of the screen, or None."""
        box = self._box(rows)
        if box is None:
            return None
        top, bottom = box
        inner = [self._inner(r) for r in rows[top + 1 : bottom]]
        options: list[Option] = []
        for k, s in enumerate(inner):
            m = self.OPTION_RE.match(s)
            if m and int(m.group(2)) == len(options) + 1:
                options.append(Option(m.group(2), m.group(3).strip(), bool(m.group(1)), top + 1 + k))
        if not options or not any(self.NAV_HINT in s for s in inner):
            return None
        text = next((s for s in inner if s.endswith("?")), "")
        if self.TRUST_TITLE in inner or text == self.TRUST_QUESTION:
            folder = next((self._inner(s) for s in inner if self._inner(s).startswith(("/", "~"))), "")
            fields = {"folder": folder} if folder else {}
            return Dialog("trust", text or self.TRUST_QUESTION, options, folder, fields, ident=(folder,))
        if self.PERMISSION_RE.match(text):
            return self._permission(inner, text, options)
        return Dialog("unknown", text or next((s for s in inner if s), ""), options)

    def _permission(self, inner: list[str], text: str, options: list[Option]) -> Dialog:
        """A tool approval: its title row (a shell command's stated intention, `Create file`, ...), the command in
        the inner box (shell), the preview rows (a file's name, folder and diff) and the path the question names."""
        title = ""
        command: list[str] = []
        preview: list[str] = []
        in_box = after_rule = False
        for s in inner:
            if s == text:
                break
            if s.startswith(self.BOX_TOP):
                in_box = True
            elif s.startswith(self.BOX_BOTTOM):
                in_box = False
            elif in_box:
                command.append(self._inner(s))
            elif s.startswith("─"):
                after_rule = True
            elif not after_rule:
                title = f"{title} {s}".strip() if s else title
            else:
                preview.append(s)
        fields: dict[str, str] = {}
        if title:
            fields["intention"] = title
        if command:
            fields["command"] = "\n".join(command).strip()
        m = self.PERMISSION_PATH_RE.match(text)
        if m:
            fields["path"] = m.group(2)
        body = "\n".join(preview).strip("\n")
        if body:
            fields["preview"] = body
        detail = "\n".join(x for x in (title, fields.get("command"), body) if x)
        return Dialog("permission", text, options, detail, fields, ident=tuple(sorted(fields.items())))

    def parse_ask(self, rows: list[str]) -> Dialog | None:
        """Copilot's `ask_user` form between two rules at the bottom: `Copilot needs information.`, the message,
        the field (`color:`), its choices (no digits on screen: numbered here, `❯` marks the highlighted one), and
        `↑/↓ select · enter accept · ctrl+d decline · esc cancel`."""
        n = len(rows)
        hint = next((i for i in range(n - 1, max(n - 6, -1), -1) if self.ASK_HINT in rows[i]), None)
        if hint is None:
            return None
        top = next(
            (i for i in range(hint - 1, max(hint - 30, -1), -1) if rows[i].strip() == self.ASK_TITLE), None
        )
        if top is None:
            return None
        body = rows[top + 1 : hint]
        first = next(
            (k for k, r in enumerate(body) if self.ASK_OPTION_RE.match(r) and r.startswith(" ❯")), None
        )
        if first is None:
            return None
        while first > 0 and self.ASK_OPTION_RE.match(body[first - 1]) and body[first - 1].startswith("   "):
            first -= 1
        options: list[Option] = []
        for k in range(first, len(body)):
            m = self.ASK_OPTION_RE.match(body[k])
            if not m:
                break
            options.append(Option(str(len(options) + 1), m.group(2).strip(), m.group(1) == "❯", top + 1 + k))
        head = [r.strip() for r in body[:first] if r.strip()]
        field_name = head[-1][:-1] if head and head[-1].endswith(":") else ""
        message = "\n".join(head[:-1] if field_name else head)
        fields = {"field": field_name} if field_name else {}
        return Dialog(
            "ask_user", message, options, message, fields, question_kind="choice", ident=(field_name,)
        )

    def dialog_keys(self, dialog: Dialog, index: int) -> list[str]:
        """Keys that pick option `index`: Esc for the option whose label says so (`… (Esc to stop)`: a bare
        Enter there waits for typed feedback), else arrows from the highlighted row and Enter."""
        if "(esc" in dialog.options[index].label.lower():
            return ["Esc"]
        cur = dialog.selected_index() or 0
        step = "Down" if index > cur else "Up"
        return [step] * abs(index - cur) + ["Enter"]

    # -------------------------------------------------------------------------------------------- state
    def classify(self, rows: list[str]) -> ScreenState:
        rows = self.clean(rows)
        version = self.version_of(rows)
        if not any(r.strip() for r in rows):
            return ScreenState("blank", version=version)
        dialog = self.parse_dialog(rows) or self.parse_ask(rows)
        if dialog is not None:
            return ScreenState("dialog", dialog, version=version)
        area = self.input_area(rows)
        if area is None:
            return ScreenState("other", version=version)
        inp, foot = area
        draft = rows[inp][len(self.INPUT_PREFIX) :].strip()
        footer = rows[foot].strip() if foot < len(rows) else ""
        if self.BUSY_RE.match(footer) or any(m in footer for m in self.BUSY_MARKS):
            spinner = self.COUNTER_RE.sub("", re.split(r"\s{2,}", footer)[0])
            return ScreenState("busy", None, spinner, inp, draft, footer, version)
        return ScreenState("idle", None, None, inp, draft, footer, version)

    # -------------------------------------------------------------------------------------------- text
    def find_prompt(self, rows: list[str], text: str | None) -> int | None:
        """Row of the turn's prompt in the conversation (the newest ` ❯ <first line>` above the live area)."""
        rows = self.clean(rows)
        area = self.input_area(rows)
        end = area[0] - 1 if area else len(rows)
        first = (text or "").strip().split("\n", 1)[0][:60].strip()
        for i in range(end - 1, -1, -1):
            m = self.PROMPT_ROW_RE.match(rows[i])
            if m and (not first or m.group(1).startswith(first) or first.startswith(m.group(1).strip())):
                return i
        return None

    def extract_response(self, rows: list[str], start: int | None) -> str:
        """The assistant's words below the prompt row, as drawn: its `● ` items and their 3-space continuation
        rows; the prompt's own continuation rows, tool items, status lines and the cwd row left out. Streaming
        only: `complete` carries the record's exact text."""
        if start is None:
            return ""
        rows = self.clean(rows)
        area = self.input_area(rows)
        end = area[0] - 1 if area else len(rows)
        out: list[str] = []
        in_answer = False
        for r in rows[start + 1 : end]:
            if r.startswith(" " + self.ANSWER_MARK):
                text = r[1 + len(self.ANSWER_MARK) :]
                in_answer = not any(
                    text.startswith(s) for s in self.STATUS_TEXTS
                ) and not self.TOOL_ROW_RE.search(r)
                if in_answer:
                    if out:
                        out.append("")
                    out.append(text)
            elif in_answer and r.startswith("   "):
                out.append(r[3:])
            elif in_answer and not r.strip():
                out.append("")
            elif r.strip():
                in_answer = False  # a tool item, the cwd row, the prompt's own continuation rows
        text = "\n".join(out).strip("\n")
        return re.sub(r"\n{3,}", "\n\n", text)

    def footer_model(self, rows: list[str]) -> str | None:
        """The model named at the right end of the idle footer (`… · tab next tab      mock-model`)."""
        rows = self.clean(rows)
        area = self.input_area(rows)
        if area is None or area[1] >= len(rows):
            return None
        cells = re.split(r"\s{2,}", rows[area[1]].strip())
        return cells[-1] if len(cells) > 1 and " " not in cells[-1] else None

    def modal_excerpt(self, rows: list[str]) -> str | None:
        rows = self.clean(rows)
        if self.input_area(rows) is not None:
            return None
        box = self._box(rows)
        if box is None:
            return None
        text = [self._inner(r) for r in rows[box[0] : box[1] + 1] if self._inner(r)]
        return "\n".join(text[-8:]) or None
