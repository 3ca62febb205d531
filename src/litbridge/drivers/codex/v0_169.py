"""Codex CLI 0.169.x screen, title and OSC 7501 knowledge as pure functions (no I/O, no driver state).

Everything here is read off the recordings in `captures-codex/` and `reference/codex-0.169.0.md` §3-§5, §7. A later
Codex version gets a sibling module (`v0_170.py`) with `class Rules(v0_169.Rules)` overriding what changed, and one
line in `RULES` in `driver.py`, which picks the class by the version the header row shows (`>_ OpenAI Codex
(v0.169.0)`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from litbridge.drivers.dialog import Dialog, Option
from litbridge.drivers.kit import Rules as BaseRules
from litbridge.drivers.osc7501 import state_of
from litbridge.drivers.screen_ops import first_kind, first_match, last_kind, strip_rows

__all__ = ["Dialog", "Option", "Rules", "ScreenState"]


@dataclass
class ScreenState:
    """One frame read (the engine's `Reading`): `state` blank / dialog / busy / idle / other (a screen without
    composer we cannot parse); `composer` the composer row index or None; `draft` the composer's unsent text."""

    state: str
    dialog: Dialog | None = None
    composer: int | None = None
    busy_row: str | None = None
    version: str | None = None
    draft: str = ""

    @property
    def spinner(self) -> str | None:
        """The `• Working (3s • esc to interrupt)` row, relayed as `thinking`."""
        return self.busy_row

    @property
    def live_prompt(self) -> bool:
        return self.composer is not None and self.dialog is None


class Rules(BaseRules):
    """Codex 0.169.x rules: every marker and reading is an attribute or method, so a later version's
    `class Rules(v0_169.Rules)` overrides one thing at a time (methods call each other through `self`)."""

    VERSION = "0.169"

    SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
    """Braille frames that prefix the window title while Codex works (reference §3.2)."""
    BUSY_STATES = ("working", "blocked")
    """OSC 7501 states inside a turn: `blocked` is an approval Codex asks ~0.7 s before it draws the dialog."""
    ACTION_REQUIRED_RE = re.compile(r"^\[ [!.] \] Action Required\b")
    HEADER_RE = re.compile(r">_ OpenAI Codex \(v(\d+\.\d+\.\d+)\)")
    WORKING_RE = re.compile(
        r"^[•◦] (Working|Reconnecting\.\.\.|Server is busy)[^(]*\((\d+)s • esc to interrupt\)"
    )
    ESC_TO_INTERRUPT = "esc to interrupt"
    COMPOSER_PREFIX = "› "
    PLACEHOLDER = "Ask Codex to do anything"
    """The empty composer's dim placeholder (the only one in every 0.169 recording)."""
    PROMPT_PREFIX = "› "
    COMPLETION_RE = re.compile(r"^  Worked for \S+( \d+m)?( \d+s)? • \d{2}:\d{2}$")
    OPTION_RE = re.compile(r"^\s{0,2}([›>])?\s*(\d+)\. (\S.*?)\s*$")
    SHORTCUT_RE = re.compile(r"\((y|p|n|a|esc)\)$")
    INTERRUPTED_MARK = "■ Conversation interrupted"
    ERROR_MARK = "■ "

    # Dialog markers, by kind (reference §5). A dialog is recognised by its marker row and its option rows below it.
    TRUST_MARK = "Trust this folder?"
    MIGRATION_RE = re.compile(r"^  Meet (GPT-\S+.*)$")
    LOGIN_MARK = "Choose how you want to use Codex."
    APPROVAL_MARKS = (
        "Would you like to run the following command?",
        "Would you like to make the following edits?",
    )

    STARTUP_ACCEPT = {"trust": "Trust and continue", "model_migration": "Use existing model"}
    """Startup dialogs answered by the driver, and the option it picks: the user chose the cwd and the model."""
    QUESTION_KIND = {"permission": "permission", "trust": "trust", "model_migration": "choice"}
    LOGIN_HELP = (
        "Codex wants you to sign in (its login screen is open): run `codex login` (or `codex login --with-api-key`) "
        "once in a terminal, or configure a provider in ~/.codex/config.toml or with `-c model_provider=...` args"
    )
    TOOL_ITEM_RE = re.compile(r"^(• (Running|Ran|Exited|Waiting|Explored|Edited|Read|Searched) |[✔✗■] )")
    """Rows that start a tool/status item in the conversation (not the assistant's words)."""

    def _options_below(self, rows: list[str], start: int) -> tuple[list[Option], int]:
        """Consecutive numbered options from `start` on (blank/indented description rows between them allowed)."""
        opts: list[Option] = []
        last = start
        for i in range(start, min(len(rows), start + 20)):
            row = rows[i].rstrip()
            m = self.OPTION_RE.match(row)
            if m and int(m.group(2)) == len(opts) + 1:
                opts.append(Option(m.group(2), m.group(3), bool(m.group(1))))
                last = i
            elif opts and row and not row.startswith("     "):
                break
        return opts, last

    def _dialog(
        self, kind: str, text: str, opts: list[Option], facts: dict[str, str] | None = None
    ) -> Dialog:
        """A dialog whose named facts (command, reason, folder...) also tell it from another."""
        facts = facts or {}
        detail = "\n".join(f"{k}: {v}" for k, v in facts.items())
        return Dialog(kind, text, opts, detail, facts, ident=tuple(sorted(facts.items())))

    def parse_dialog(self, rows: list[str]) -> Dialog | None:
        """The modal on screen, if any (its marker row, then numbered options under it)."""
        stripped = strip_rows(rows)
        i = -1
        while True:
            # only rows that can head a dialog (memoised per row text): every other row does nothing below
            found, _ = first_kind(stripped, self._dialog_head_kind, (type(self), "dialog_head"), i + 1)
            if found is None:
                break
            i = found
            row = stripped[i]
            text = row.strip()
            if text in self.APPROVAL_MARKS:
                opts, _ = self._options_below(rows, i + 1)
                if not opts:
                    continue
                facts: dict[str, str] = {}
                for r in rows[i + 1 : i + 12]:
                    s = r.strip()
                    if s.startswith("Reason: "):
                        facts["reason"] = s[len("Reason: ") :]
                    elif s.startswith("Environment: "):
                        facts["environment"] = s[len("Environment: ") :]
                    elif s.startswith("$ ") and "command" not in facts:
                        facts["command"] = s[2:]
                    elif self.OPTION_RE.match(r.rstrip()):
                        break
                return self._dialog("permission", text, opts, facts)
            if text.startswith(self.TRUST_MARK):
                opts, _ = self._options_below(rows, i + 1)
                if opts:
                    above = [r.strip() for r in rows[max(0, i - 3) : i] if r.strip()]
                    folder = above[-1] if above and above[-1][:1] in "/~" else ""
                    return self._dialog("trust", self.TRUST_MARK, opts, {"folder": folder} if folder else {})
            m = self.MIGRATION_RE.match(row)
            if m:
                opts, _ = self._options_below(rows, i + 1)
                if opts and any("existing model" in o.label for o in opts):
                    return self._dialog("model_migration", f"Meet {m.group(1)}", opts)
            if text == self.LOGIN_MARK:
                opts, _ = self._options_below(rows, i + 1)
                return self._dialog("login", self.LOGIN_MARK, opts)
        return None

    def _dialog_head_kind(self, row: str) -> int:
        """1 for a row `parse_dialog` looks under (an approval, trust, migration or login marker), else 0."""
        if not row:
            return 0
        text = row.strip()
        return int(
            text in self.APPROVAL_MARKS
            or text.startswith(self.TRUST_MARK)
            or self.MIGRATION_RE.match(row) is not None
            or text == self.LOGIN_MARK
        )

    def composer_row(self, rows: list[str]) -> int | None:
        """Index of the composer (`› …` row just above the model/cwd footer), or None (no live composer)."""
        n = len(rows)
        for i in range(n - 1, max(n - 12, -1), -1):
            row = rows[i]
            if row.startswith(self.COMPOSER_PREFIX):
                below = [r for r in rows[i + 1 :] if r.strip()]
                if below and all(r.startswith("  ") for r in below):
                    return i
        return None

    def version_of(self, rows: list[str]) -> str | None:
        y = first_match(rows, self.HEADER_RE, 0, 6, search=True)  # each row text searched once
        m = self.HEADER_RE.search(rows[y]) if y is not None else None
        return m.group(1) if m else None

    def draft_of(self, rows: list[str], composer: int | None) -> str:
        """The composer's unsent text (its first line; "" for the placeholder)."""
        if composer is None:
            return ""
        text = rows[composer][len(self.COMPOSER_PREFIX) :].rstrip()
        return "" if text == self.PLACEHOLDER else text

    def classify(self, rows: list[str]) -> ScreenState:
        """What the frame shows. Busy only from the `• Working (Ns • esc to interrupt)` row: it disappears while text
        streams, so the driver prefers OSC 7501 and the title spinner (`title_busy`)."""
        if not any(strip_rows(rows)):  # the frame's right-stripped twin: a row with text is a non-empty one
            return ScreenState("blank")
        version = self.version_of(rows)
        dialog = self.parse_dialog(rows)
        if dialog is not None:
            return ScreenState("dialog", dialog, None, None, version)
        comp = self.composer_row(rows)
        draft = self.draft_of(rows, comp)
        # the last `• Working (Ns • esc to interrupt)` row of the bottom 12 (each row text tested once)
        y, _ = last_kind(rows, self._working_kind, (type(self), "working"), len(rows) - 12)
        busy = rows[y].strip() if y is not None else None
        if busy is not None:
            return ScreenState("busy", None, comp, busy, version, draft)
        return ScreenState("idle" if comp is not None else "other", None, comp, None, version, draft)

    def _working_kind(self, row: str) -> int:
        """1 for the busy row (`• Working (Ns • esc to interrupt)`), else 0."""
        return 1 if self.ESC_TO_INTERRUPT in row and self.WORKING_RE.match(row.strip()) else 0

    def title_busy(self, title: str | None) -> bool:
        """The window title carries a spinner frame while Codex works."""
        return bool(title and title[0] in self.SPINNER)

    def title_action_required(self, title: str | None) -> bool:
        return bool(title) and bool(self.ACTION_REQUIRED_RE.match(title or ""))

    def osc_state(self, fields: dict[str, Any]) -> tuple[str | None, str | None]:
        """(state, kind) of an OSC 7501 report from Codex (`state=blocked:app=codex:kind=permission`)."""
        state = state_of(fields)
        if not isinstance(state, str):
            return None, None
        kind = fields.get("kind")
        return state, kind if isinstance(kind, str) else None

    def answer_keys(self, dialog: Dialog, index: int) -> list[str]:
        """Key names (litbridge.keys) that pick option `index`: its shortcut letter when it shows one (`y` approves
        without Enter), else arrows from the selected row and Enter."""
        m = self.SHORTCUT_RE.search(dialog.options[index].label)
        sc = m.group(1) if m else None
        if sc == "esc":
            return ["Esc"]
        if sc:
            return [sc]
        cur = dialog.selected_index()
        if cur is None:
            cur = 0
        step = "Down" if index > cur else "Up"
        return [step] * abs(index - cur) + ["Enter"]

    def find_prompt(self, rows: list[str], prompt: str | None, composer: int | None) -> int | None:
        """Row index of the turn's `› <prompt>` row in the conversation (the newest one above the composer)."""
        stop = composer if composer is not None else len(rows)
        first = (prompt or "").strip().split("\n", 1)[0][:60]
        best = None
        for i in range(stop):
            row = rows[i]
            if row.startswith(self.PROMPT_PREFIX) and (
                not first or row[2:].startswith(first) or first.startswith(row[2:])
            ):
                best = i
        return best

    def extract_response(self, rows: list[str], start: int | None, composer: int | None) -> str:
        """The assistant's words drawn below the prompt row: its `• ` items with the 2-space continuation indent
        removed; tool items (`• Running …`, `  └ …`), status lines and any dialog left out. A best-effort stream:
        the rollout has the exact text."""
        if start is None:
            return ""
        stop = composer if composer is not None else len(rows)
        out: list[str] = []
        skipping = False
        for row in rows[start + 1 : stop]:
            r = row.rstrip()
            s = r.strip()
            if r.startswith(self.PROMPT_PREFIX) or s in self.APPROVAL_MARKS or s.startswith(self.TRUST_MARK):
                break
            if self.COMPLETION_RE.match(r) or self.WORKING_RE.match(s) or r.startswith(self.INTERRUPTED_MARK):
                break
            if self.TOOL_ITEM_RE.match(r):
                skipping = True
                continue
            if r.startswith("• ") or r.startswith("◦ "):
                skipping = False
                out.append(r[2:])
            elif skipping:
                continue
            elif r.startswith("  "):
                out.append(r[2:])
            else:
                out.append(r)
        text = "\n".join(out)
        return re.sub(r"\n{3,}", "\n\n", text).strip("\n")

    def modal_excerpt(self, rows: list[str]) -> str | None:
        """A few non-empty rows of an unknown full-screen modal (no composer, not blank), for `unknown_dialog`."""
        if self.composer_row(rows) is not None:
            return None
        text = [r.strip() for r in rows if r.strip()]
        return "\n".join(text[-8:]) if text else None
