"""Qwen Code 0.24.x screen and title knowledge: `Rules`, a subclass of the Gemini CLI 0.61 rules it forked from.

What is the same as Gemini's: an inline TUI (no alternate screen) judged on its live area at the bottom, state in
the window title, the answer below the echoed prompt, Esc to cancel. What differs, overridden here:

- the title (OSC 0): `◐︎ Qwen - <dir>` working, `✳︎ Qwen - <dir>` waiting for an approval, `Qwen - <dir>` ready;
- the input box is framed by two full-width rules (a footer follows the second one): the live area starts at the
  rule *above* the `> ` input row; `>   Type your message or @path/to/file` is the empty box; while `⠏
  Initializing...` shows, typed keys are lost, so that screen is not ready;
- the spinner row `<glyph> <phrase> (12s · ↓ 6 tokens · esc to cancel)` above the input box;
- the echoed prompt is `  > text` (two spaces), the answer `  ◆︎ text` with four-space continuation rows;
- a dialog has no box: it replaces the input box and the footer, numbered options with a `›` cursor, the tool
  line (`? Shell <command> (<description>) ←`) and the command above the question, `⠏ Waiting for user
  confirmation...` below.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import ClassVar

from litbridge.drivers.dialog import Dialog, Option
from litbridge.drivers.gemini import v0_61
from litbridge.drivers.gemini.v0_61 import Reading, ScreenState

__all__ = ["Reading", "Rules", "ScreenState"]

VS15 = "\ufe0e"  # the text-presentation selector Qwen puts after its glyphs (kept in the cell's text)


class Rules(v0_61.Rules):
    """Qwen Code 0.24.x rules (see the module docstring for what differs from Gemini CLI 0.61)."""

    VERSION = "0.24"

    HEADER_RE = re.compile(r"Qwen Code \(v(\d+\.\d+\.\d+)\)")
    TITLE_WORKING_MARK, TITLE_ACTION_MARK, TITLE_NAME = "◐", "✳", "Qwen"
    SPINNER_RE = re.compile(r"^\s*(\S{1,2})\s+(.*\((?:(\d+)s\b)?[^()]*esc to cancel\))\s*$")
    INITIALIZING_RE = re.compile(r"^\s*\S{1,2}\s+Initializing\b")
    WAITING = "Waiting for user confirmation"
    INPUT_RE = re.compile(r"^> (.*)$")
    PROMPT_RE = re.compile(r"^  > (.*)$")  # the echoed prompt in the history
    ANSWER_RE = re.compile("^  ◆" + VS15 + "? (.*)$")
    # any glyph-marked history row (answer, tool, info, error)
    MARK_RE = re.compile(r"^  (\S)" + VS15 + r"? ")
    ERROR_MARK = "✕ "
    CANCELLED = "Request cancelled."
    OPTION_RE = re.compile(r"^\s*(›)?\s*(\d+)\.\s+(.+?)\s*$")
    TOOL_LINE_RE = re.compile(r"^\s*\? (.+?)\s*←?\s*$")
    DRAFT_JUNK = "\u200b"  # a zero-width space the box keeps after a prompt put back by a cancel

    DIALOGS: tuple[tuple[str, str, str], ...] = (
        ("permission", "permission", "Allow execution"),
        ("permission", "permission", "Do you want to proceed?"),
        ("permission", "permission", "Allow modification"),
        ("permission", "permission", "Apply this change?"),
        ("permission", "permission", "Allow "),
        ("trust", "trust", "Do you trust"),
        ("loop_detection", "choice", "A potential loop was detected"),
    )
    STARTUP_ACCEPT: ClassVar[Mapping[str, str]] = {"trust": "Trust folder"}
    PROVIDER_TITLE = "Connect a Provider"  # the box shown when no model provider is configured
    PROVIDER_HELP = (
        "Qwen Code has no model provider configured (it shows its 'Connect a Provider' screen): configure one in "
        "~/.qwen/settings.json (`modelProviders` and `security.auth.selectedType`) or run `qwen` once by hand"
    )
    BOX_ROW_RE = re.compile(r"^\s*│ (›| ) (\S.*?)\s*│\s*$")

    # ------------------------------------------------------------------------------------------ title
    def title_state(self, title: str | None) -> str | None:
        t = (title or "").strip()
        if t.startswith(self.TITLE_WORKING_MARK):
            return self.TITLE_WORKING
        if t.startswith(self.TITLE_ACTION_MARK):
            return self.TITLE_ACTION
        if t.startswith(self.TITLE_NAME):
            return self.TITLE_READY
        return None

    # ------------------------------------------------------------------------------------------ live area
    def input_box(self, rows: list[str]) -> tuple[int, int] | None:
        """(top rule, bottom rule) of the input box: the last two rules with `> ` right below the upper one."""
        rules = [i for i, r in enumerate(rows) if self.RULE_RE.match(r)]
        last = max((i for i, r in enumerate(rows) if r.strip()), default=0)
        for a, b in zip(reversed(rules[:-1]), reversed(rules[1:]), strict=True):
            if b > a + 1 and self.INPUT_RE.match(rows[a + 1]) and last - b <= 6:
                return a, b
        return None

    def last_rule(self, rows: list[str]) -> int | None:
        """The rule above the input box (the start of the live area), else None."""
        box = self.input_box([r.rstrip() for r in rows])
        return box[0] if box is not None else None

    def draft_of(self, rows: list[str], box: tuple[int, int]) -> str:
        lines = []
        for i, r in enumerate(rows[box[0] + 1 : box[1]]):
            text = r[2:] if i == 0 or r.startswith("  ") else r
            lines.append(text.replace(self.DRAFT_JUNK, "").rstrip())
        draft = "\n".join(lines).strip("\n")
        return "" if draft.strip() == self.PLACEHOLDER else draft.strip()

    # ------------------------------------------------------------------------------------------ dialogs
    def provider_dialog(self, rows: list[str]) -> Dialog | None:
        """The `Connect a Provider` box (no provider configured): its choices are the first rows of its
        blank-separated groups below the title, up to the rule inside the box."""
        title = next((i for i, r in enumerate(rows) if self.PROVIDER_TITLE in r), None)
        if title is None:
            return None
        options: list[Option] = []
        fresh = True
        for r in rows[title + 1 :]:
            inner = self._box_inner(r)
            if not r.strip().startswith("│") or inner.startswith("─"):
                break
            if not inner:
                fresh = True
                continue
            m = self.BOX_ROW_RE.match(r)
            if fresh and m:
                options.append(Option(str(len(options) + 1), m.group(2), m.group(1) == "›"))
            fresh = False
        return (
            Dialog("provider", self.PROVIDER_TITLE, options, "", question_kind="choice") if options else None
        )

    BOX_EDGE_RE = re.compile(r"^\s*[╭╰]─")
    BOX_LEFT_RE = re.compile(r"^(\s*)│ ?")

    def _unbox(self, row: str) -> str:
        """A row without the left border of a half-open box (the trust dialog's `│`); its top and bottom edges
        read as blank rows."""
        if self.BOX_EDGE_RE.match(row):
            return ""
        m = self.BOX_LEFT_RE.match(row)
        return (m.group(1) + "  " + row[m.end() :]).rstrip() if m else row

    def parse_dialog(self, rows: list[str]) -> Dialog | None:
        """The numbered dialog at the bottom of the screen (no input box below it), or None."""
        rows = [self._unbox(r) for r in self._strip(rows)]
        end = len(rows)
        while end > 0 and (not rows[end - 1].strip() or self.WAITING in rows[end - 1]):
            end -= 1
        options: list[Option] = []
        i = end
        while i > 0:
            m = self.OPTION_RE.match(rows[i - 1])
            if not m:
                break
            options.insert(0, Option(str(int(m.group(2))), m.group(3), bool(m.group(1))))
            i -= 1
        if not options or [o.digit for o in options] != [str(n) for n in range(1, len(options) + 1)]:
            return None
        first = i
        above = [r.strip() for r in rows[max(0, first - 12) : first]]
        # the dialog's own rows: back to the tool line (`? Shell ...`) or the last history mark
        start = len(above)
        for j in range(len(above) - 1, -1, -1):
            raw = rows[max(0, first - 12) + j]
            if self.TOOL_LINE_RE.match(raw):
                start = j
                break
            if self.PROMPT_RE.match(raw) or self.ANSWER_RE.match(raw) or self.MARK_RE.match(raw):
                start = j + 1
                break
        else:
            start = 0
        own = [s for s in above[start:] if s]
        text = own[-1] if own else ""
        kind, qkind = "unknown", "choice"
        for k, qk, needle in self.DIALOGS:
            hit = next((s for s in own if needle in s), None)
            if hit is not None:
                kind, qkind = k, qk
                if k != "permission":
                    text = hit
                break
        if kind == "unknown" and not text.endswith("?"):
            return None
        if kind != "permission":
            detail = "\n".join(s for s in own if s != text)
            return Dialog(kind, text, options, detail, question_kind=qkind, ident=(detail,))
        detail_rows = own[:-1]
        if detail_rows and (m := self.TOOL_LINE_RE.match(detail_rows[0])):
            detail_rows = [m.group(1), *detail_rows[1:]]
        detail = "\n".join(detail_rows)
        return Dialog(kind, text, options, detail, question_kind=qkind, ident=(detail,))

    def dialog_keys(self, dialog: Dialog, index: int) -> list[str]:
        """The option's digit: Qwen's dialogs pick an option by its number at once (seen live)."""
        return [dialog.options[index].digit]

    # ------------------------------------------------------------------------------------------ state
    def classify(self, rows: list[str]) -> ScreenState:
        rows = self._strip(rows)
        version = self.header_version(rows)
        if not any(r.strip() for r in rows):
            return ScreenState("blank", version=version)
        box = self.input_box(rows)
        if box is None:
            dialog = self.provider_dialog(rows) or self.parse_dialog(rows)
            if dialog is not None:
                return ScreenState("dialog", dialog=dialog, version=version)
            return ScreenState("other", version=version)
        spinner = seconds = None
        for r in rows[max(0, box[0] - 3) : box[0]]:
            if self.INITIALIZING_RE.match(r):
                return ScreenState("other", version=version)  # keys typed now are lost
            m = self.SPINNER_RE.match(r)
            if m:
                spinner = m.group(1) + " " + m.group(2).strip()
                seconds = int(m.group(3)) if m.group(3) else None
        draft = self.draft_of(rows, box)
        if spinner is not None:
            return ScreenState("busy", draft=draft, live_prompt=True, spinner=spinner, spinner_seconds=seconds,
                               version=version)  # fmt: skip
        return ScreenState("idle", draft=draft, live_prompt=True, version=version)

    def footer_model(self, rows: list[str]) -> str | None:
        """The model the footer names (`➜ <dir> · <model> · ...`), below the input box."""
        rows = self._strip(rows)
        box = self.input_box(rows)
        if box is None:
            return None
        for r in rows[box[1] + 1 : box[1] + 3]:
            s = r.strip()
            if s.startswith("➜"):
                cells = [c.strip() for c in s.split("·")]
                return cells[1] if len(cells) > 1 and cells[1] else None
        return None

    # ------------------------------------------------------------------------------------------ the answer
    def response_rows(self, rows: list[str], start: int | None) -> list[str]:
        """The answer rows (`◆︎` and their continuation) between the echoed prompt and the live area; tool,
        info and error rows (other glyphs) and their continuation rows left out."""
        rows = self._strip(rows)
        end = self.last_rule(rows)
        end = len(rows) if end is None else end
        out: list[str] = []
        inside = False
        for r in rows[(start + 1 if start is not None else 0) : end]:
            if self.SPINNER_RE.match(r) or self.INITIALIZING_RE.match(r):
                continue
            m = self.ANSWER_RE.match(r)
            if m:
                inside = True
                out.append(m.group(1))
            elif self.MARK_RE.match(r) or self.PROMPT_RE.match(r):
                inside = False
            elif inside:
                out.append(r[4:] if r.startswith("    ") else r.strip())
        while out and not out[-1].strip():
            out.pop()
        return out

    def error_lines(self, rows: list[str], start: int | None = None) -> list[str]:
        rows = self._strip(rows)
        marks = ("  " + self.ERROR_MARK.strip() + VS15 + " ", "  " + self.ERROR_MARK)
        out = []
        for r in rows[(start or 0) :]:
            for mark in marks:
                if r.startswith(mark):
                    out.append(r[len(mark) :])
                    break
        return out

    def cancelled_after(self, rows: list[str], start: int | None) -> bool:
        """`●︎ Request cancelled.` below the echoed prompt: the CLI cancelled the turn (Esc, a denied tool)."""
        rows = self._strip(rows)
        end = self.last_rule(rows)
        return any(r.strip().endswith(self.CANCELLED) for r in rows[(start or 0) : end])
