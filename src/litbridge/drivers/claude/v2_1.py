"""Claude Code 2.1.x screen rules: state, dialogs, spinner line and response text from rendered rows.

`Rules` is pure (no PTY, timing or transcript) over the 200x50 rows a `Terminal` renders (fullscreen and
classic renderers alike), validated against the 2.1.328 captures. A later CLI version is a subclass in its own
module (`v2_2.py`: `class Rules(v2_1.Rules)`) overriding only the markers or methods that changed, registered
in `drivers/claude/versions.py`; this module is never edited for it. The types it returns live in `model.py`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from wcwidth import wcswidth

from litbridge.drivers.claude.model import Dialog, Option, ScreenState
from litbridge.drivers.kit import Rules as BaseRules
from litbridge.drivers.screen_ops import (
    MEMO_MAX,
    FrameFacts,
    has_any,
    last_kind,
    last_match,
    needles_in,
    strip_rows,
)
from litbridge.term import ScreenRows


def _strip(rows: Sequence[str]) -> list[str]:
    return strip_rows(rows)


def _indent(row: str) -> int:
    return len(row) - len(row.lstrip(" "))


def _width(s: str) -> int:
    w = wcswidth(s)
    return w if w >= 0 else len(s)


def _first_word(s: str) -> str:
    s = s.strip()
    return s.split(" ", 1)[0] if s else ""


_ReflowFacts = tuple[str, int, bool, bool, "int | None", int, int]
_reflow_memos: dict[type, dict[str, _ReflowFacts]] = {}


def _reflow_memo(rules: type) -> dict[str, _ReflowFacts]:
    """Row text -> `Rules._reflow_facts` for a rules class, started over past `screen_ops.MEMO_MAX` rows."""
    m = _reflow_memos.get(rules)
    if m is None or len(m) > MEMO_MAX:
        m = _reflow_memos[rules] = {}
    return m


_block_memos: dict[type, dict[tuple[Any, ...], str]] = {}


def _block_memo(rules: type) -> dict[tuple[Any, ...], str]:
    """(cols, block rows) -> the block's text for a rules class: the tick extracts a streaming answer again and
    again, and every block but the last is the same rows each time. Started over past `screen_ops.MEMO_MAX`."""
    m = _block_memos.get(rules)
    if m is None or len(m) > MEMO_MAX:
        m = _block_memos[rules] = {}
    return m


class Screen(BaseRules):
    """Claude Code 2.1.x markers (class attributes) and a frame's state. `Rules` below is the whole set: every
    marker, dialog text and key choice is a class attribute or a method, so a later version subclasses `Rules`
    and overrides only what changed (`versions.py`). Instances hold no state but `Rules`' memo of its last
    response extraction (one per session is cheap)."""

    VERSION = "2.1"
    VERSIONS = ("2.1",)
    """CLI version prefixes this module was validated on."""

    PROMPT = "❯"

    NBSP = "\u00a0"

    BUSY_MARK = "esc to interrupt"

    RULE_RE = re.compile(r"^─{10,}$")

    PANEL_TOP_RE = re.compile(r"^▔{10,}$")

    SPINNER_RE = re.compile(r"^[·✢*✳✶✻✽] \S.*…")

    COMPLETION_RE = re.compile(
        r"^✻ (Baked|Brewed|Churned|Cogitated|Cooked|Crunched|Sautéed|Worked) for \d+[smh]"
    )

    VERSION_RE = re.compile(r"Claude Code v(\d+\.\d+\.\d+)")

    DIALOG_FOOTER_RE = re.compile(
        r"(Enter to confirm|Esc to cancel|Enter to select|Esc to close|Enter to continue|Enter to stay in auto mode)"
    )

    PERMISSION_Q_RE = re.compile(r"^ ?Do you want to .*\?$")

    NUMBERED_RE = re.compile(r"^(\d+)\.\s+(\S.*)$")

    TOOL_CALL_RE = re.compile(r"^[A-Z][\w-]*\(")

    TOOL_SUMMARY_RE = re.compile(
        r"^((Ran|Read|Listed|Searched|Wrote|Edited|Updated|Created|Fetched|Searched for) \d+ \w+"
        r"|Did not run \d+ |No result recorded for \d+ )"
    )

    THINKING_ROW_RE = re.compile(r"^(Thinking for \d+\w*…?|Thought for \d+\w*)$")

    BOX_CHARS = frozenset(chr(c) for c in range(0x2500, 0x25A0))

    PLACEHOLDER_RE = re.compile(
        r"^(Resend your message to try again|Once fixed, resend your message|Press up to edit queued messages"
        r'|Try ".*")$'
    )
    """Dim hints Claude draws inside an empty input box (not a draft): after an API error, after a 401
    (`Once fixed, resend your message`), while a message is queued, and the idle suggestions."""

    PASTED_RE = re.compile(r"^\[Pasted text #\d+( \+\d+ lines)?\]")

    LIST_MARKER_RE = re.compile(r"^([-*+•] |\d+[.)] |▎)")

    # Startup dialogs: how to recognise them and which option accepts them (label, compared exactly).

    STARTUP_ACCEPT = {
        "trust": "Yes, I trust this folder",
        "api_key": "Yes",
        "bypass": "Yes, I accept",
    }

    QUESTION_KIND = {"permission": "permission", "trust": "trust", "api_key": "trust", "bypass": "trust"}

    REWIND_SUB = "Restore the code and/or conversation to the point before"

    RESUME_TITLE = "Resume session"

    RESUME_FOOTER = "Enter to resume"

    STATUS_ELLIPSIS_RE = re.compile(r"^[A-Z][a-z]+ing\b[^.!?]*…$")

    _LOGO_CHARS = " " + "".join(chr(c) for c in range(0x2580, 0x25A0))

    def is_prompt_line(self, row: str) -> bool:
        """The live input line: `❯` + self.NBSP (right-stripping turns an empty one into a bare `❯`)."""
        return row == self.PROMPT or row.startswith(self.PROMPT + self.NBSP)

    def find_prompt_row(self, rows: Sequence[str]) -> int | None:
        return last_kind(rows, self._prompt_kind, (type(self), "prompt"))[0]

    def _prompt_kind(self, row: str) -> int:
        return 1 if self.is_prompt_line(row) else 0

    def spinner_line(self, rows: Sequence[str], end: int | None = None) -> str | None:
        """The busy spinner/progress line (`✶ Verb… (3s · ↓ 2 tokens)`), scanning up from `end`."""
        rows = _strip(rows)
        y, kind = self._spinner_at(rows, len(rows) if end is None else end)
        return rows[y].strip() if y is not None and kind == 1 else None

    def _spinner_at(self, rows: list[str], end: int) -> tuple[int | None, int]:
        """Where `spinner_line`'s scan up from `end` stops: (y, 1) the spinner row, (y, 2) a row that ends the
        scan, (None, 0) none."""
        return last_kind(rows, self._spinner_kind, (type(self), "spinner"), 0, end)

    def _spinner_kind(self, row: str) -> int:
        """For `spinner_line`'s scan up: 1 the spinner row, 2 a row that ends the scan, 0 keep going."""
        r = row.strip()
        if not r:
            return 0
        if self.SPINNER_RE.match(r):
            return 1
        if r.startswith("●") or self.COMPLETION_RE.match(r) or self.is_prompt_line(row) or r.startswith("❯ "):
            return 2
        return 0

    def _footer_row(self, rows: list[str]) -> int | None:
        """The last row showing a dialog footer (`Esc to cancel`...), or None: no modal owns the screen."""
        return last_match(rows, self.DIALOG_FOOTER_RE, search=True)

    def parse_dialog(self, rows: Sequence[str]) -> Dialog | None:
        """The modal on the screen, or None: implemented by `Dialogs` below (`classify` needs it)."""
        raise NotImplementedError

    # What the rules read of a row besides its text (`_row_facts`), as bits: `classify`'s here, the response's
    # (`Rules`: 32, 64, 128) below; the spinner scan's kind is the highest (times `_F_SPIN`).
    _F_VERSION, _F_FOOTER, _F_PROMPT, _F_RULE, _F_TEXT, _F_SPIN = 1, 2, 4, 8, 16, 256
    _F_SHAPE = _F_VERSION | _F_FOOTER | _F_PROMPT | _F_RULE
    """The facts of a row above the prompt box that change the reading wherever the row is."""

    def _row_facts(self, row: str) -> int:
        """Every test `classify` puts to a (stripped) row: the logo's version, a dialog footer, the prompt line,
        a box rule, any text, and the spinner scan's kind (`_spinner_kind`, times `_F_SPIN`). One memo per rules
        class: a row of the screen and the same logical line are tested once."""
        return (
            (self._F_VERSION if self.VERSION_RE.search(row) else 0)
            | (self._F_FOOTER if self.DIALOG_FOOTER_RE.search(row) else 0)
            | (self._F_PROMPT if self.is_prompt_line(row) else 0)
            | (self._F_RULE if self.RULE_RE.match(row) else 0)
            | (self._F_TEXT if row else 0)
            | self._spinner_kind(row) * self._F_SPIN
        )

    _F_SPINS = ~(_F_SPIN - 1)
    """The spinner scan's kind, as bits of the facts."""

    _last_frame: tuple[ScreenState, int, int, int, int, int | None] | None = None
    """The last frame `classify` read with no dialog footer on it: (its reading, prompt row, input end, first row
    of the footer scan, end of the spinner scan, where that scan stopped). Its rows are `_frame_facts.rows`."""

    _frame_facts: FrameFacts | None = None

    def _facts(self) -> FrameFacts:
        """The facts (`_row_facts`) of the frames `classify` read, kept from one frame to the next."""
        ff = self._frame_facts
        if ff is None:
            ff = self._frame_facts = FrameFacts(self._row_facts, (type(self), "facts"))
        return ff

    def classify(self, rows: Sequence[str]) -> ScreenState:
        """Classify one frame (the capture harness's rules, reference §10, plus dialog parsing).

        Every scan for a marker row reads the frame's facts (`_row_facts`, looked up for the rows that changed
        since the last frame only). Most frames differ from the previous one in the spinner row, the input line
        or conversation rows above the prompt box; `_reclassify` reads such a frame from the last one's reading
        (the same answer)."""
        rows = _strip(rows)
        ff = self._facts()
        ff.update(rows)
        last, self._last_frame = self._last_frame, None  # set again once this frame is read
        if last is not None:
            cls = self._reclassify(rows, ff, *last)
            if cls is not None:
                return cls
        # the first row showing the version is where a search of the whole text finds it (one row's pattern)
        version_y = ff.first(self._F_VERSION)
        version_m = self.VERSION_RE.search(rows[version_y]) if version_y is not None else None
        version = version_m.group(1) if version_m else None
        if ff.first(self._F_TEXT) is None:
            return ScreenState("blank")
        footer_y = ff.last(self._F_FOOTER)
        dialog = self.parse_dialog(rows) if footer_y is not None else None
        if dialog is not None and dialog.kind != "choice":
            return ScreenState("dialog", dialog=dialog, version=version)
        prompt_row = ff.last(self._F_PROMPT)
        if prompt_row is None:
            return ScreenState("other", dialog=dialog, version=version)
        top = ff.last(self._F_RULE, 0, prompt_row)
        bottom = ff.first(self._F_RULE, prompt_row + 1)
        input_end = bottom if bottom is not None else prompt_row + 1
        lines = [rows[prompt_row][2:]] + [r[2:] for r in rows[prompt_row + 1 : input_end]]
        input_text = "\n".join(lines).rstrip()
        foot_from = input_end + (1 if bottom is not None else 0)
        footer = self._footer_from(rows, foot_from)
        bound = top if top is not None else prompt_row
        spin_y = ff.last(self._F_SPINS, 0, bound)
        spin = rows[spin_y].strip() if spin_y is not None and ff[spin_y] // self._F_SPIN == 1 else None
        # The footer drops `esc to interrupt` while the input holds a draft; the spinner still shows busy.
        state = "busy" if self.BUSY_MARK in footer or spin is not None else "idle"
        draft = "" if self.PLACEHOLDER_RE.match(input_text.strip()) else input_text.strip()
        cls = ScreenState(
            state,
            prompt_row=prompt_row,
            footer=footer,
            input_text=input_text,
            draft=draft,
            spinner=spin,
            version=version,
        )
        if footer_y is None:
            self._last_frame = (cls, prompt_row, input_end, foot_from, bound, spin_y)
        return cls

    @staticmethod
    def _footer_from(rows: list[str], start: int) -> str:
        """The first row with text from `start` down (below the prompt box), stripped; "" if none."""
        for y in range(start, len(rows)):
            if rows[y].strip():
                return rows[y].strip()
        return ""

    def _reclassify(
        self,
        rows: list[str],
        ff: FrameFacts,
        prev: ScreenState,
        prompt_row: int,
        input_end: int,
        foot_from: int,
        bound: int,
        spin_y: int | None,
    ) -> ScreenState | None:
        """`classify(rows)` from the reading of the last frame (no dialog footer on it; `ff` holds what changed
        since), or None for a full read. Every row that changed must keep the facts that shape the reading
        (`_F_SHAPE`: a version, a dialog footer, the prompt line, a box rule); then the dialog (none: no footer),
        the prompt row and the box are the last frame's. What a changed row may still change is read again: the
        version (a logo row), the input (a row of the box), the footer (a row below the box) and the spinner.
        Above the box, whether a row holds text is never read (the prompt row keeps the screen from being
        blank), and above the row where the spinner scan stopped neither is its scan kind: most rows of a
        streaming answer change only in those; a row below that stop whose scan kind changed would move the
        stop, so that frame is read in full. A frame that changes none of it is read as the last one (the same
        reading)."""
        d = ff.delta
        if d < 0 or d & self._F_SHAPE:
            return None
        if ff.changed_in(spin_y, bound, self._F_SPINS):
            return None  # the spinner scan would stop elsewhere
        version = prev.version
        if ff.changed_in(has=self._F_VERSION):
            version_y = ff.first(self._F_VERSION)
            version_m = self.VERSION_RE.search(rows[version_y]) if version_y is not None else None
            if (version_m.group(1) if version_m else None) != version:
                return None
        spin = prev.spinner
        if spin_y is not None and ff[spin_y] // self._F_SPIN == 1 and ff.changed_in(spin_y, spin_y + 1):
            spin = rows[spin_y].strip()
        reinput = ff.changed_in(prompt_row, input_end)
        refoot = ff.changed_in(foot_from)
        self._last_frame = (prev, prompt_row, input_end, foot_from, bound, spin_y)
        if not reinput and not refoot and spin == prev.spinner:
            return prev
        input_text, draft = prev.input_text, prev.draft
        if reinput:
            lines = [rows[prompt_row][2:]] + [r[2:] for r in rows[prompt_row + 1 : input_end]]
            input_text = "\n".join(lines).rstrip()
            draft = "" if self.PLACEHOLDER_RE.match(input_text.strip()) else input_text.strip()
        footer = self._footer_from(rows, foot_from) if refoot else prev.footer
        state = "busy" if self.BUSY_MARK in footer or spin is not None else "idle"
        cls = ScreenState(
            state,
            prompt_row=prompt_row,
            footer=footer,
            input_text=input_text,
            draft=draft,
            spinner=spin,
            version=version,
        )
        self._last_frame = (cls, prompt_row, input_end, foot_from, bound, spin_y)
        return cls

    # ---------------------------------------------------------------------------------------------- dialogs


class Dialogs(Screen):
    """Claude Code 2.1.x modals: kind, question text, options, the keys that answer them."""

    def _dialog_kind(self, rows: list[str]) -> str | None:
        # which marker texts the screen shows (as `in "\n".join(rows)`: none holds a newline), each row looked at
        # once per distinct text
        found = needles_in(
            rows,
            (
                "Yes, I trust this folder",
                "Do you want to use this API key?",
                "Bypass Permissions mode",
                "Yes, I accept",
                "Auto mode can't check actions in this session",
                "Enter to stay in auto mode",
                "Esc to cancel",
                self.RESUME_FOOTER,
                self.REWIND_SUB,
            ),
        )
        if found & 1:
            return "trust"
        if found & 2:
            return "api_key"
        if found & 4 and found & 8:
            return "bypass"
        if found & 16 and found & 32:
            return "auto_mode_unavailable"
        if found & 64 and any(self.PERMISSION_Q_RE.match(r) for r in rows):
            return "permission"
        if found & 128 and any(r.strip() == self.RESUME_TITLE for r in rows):
            return "resume"
        if found & 256 and any(r.strip() == "Rewind" for r in rows) and self.find_prompt_row(rows) is None:
            return "rewind"
        return None

    def _parse_blocks(self, rows: list[str], footer: int) -> tuple[list[Option], int | None, str]:
        """The rewind list [s06]: entries separated by blank rows, each a prompt row with its description rows
        at the same indent below it (`No code changes`); the `❯` marks the selected entry. -> (options, first row,
        one `label — description` line per entry for the detail)."""
        head = next((y for y in range(footer) if self.REWIND_SUB in rows[y]), None)
        if head is None:
            return [], None, ""
        return self._blocks_as_options(rows, self._blocks(rows, head, footer))

    def _parse_resume(self, rows: list[str], footer: int) -> tuple[list[Option], int | None, str]:
        """The `--resume` picker: below its search box, one block per conversation (its first prompt, then a
        `2 seconds ago · HEAD · 156.1KB` row); a block of one row is a project heading, not an entry."""
        head = next((y for y in range(footer) if rows[y].strip() == self.RESUME_TITLE), None)
        if head is None:
            return [], None, ""
        box = next((y for y in range(head + 1, footer) if rows[y].strip().startswith("╰")), head)
        return self._blocks_as_options(rows, [b for b in self._blocks(rows, box, footer) if len(b) > 1])

    def _blocks(self, rows: list[str], head: int, footer: int) -> list[list[int]]:
        """Rows between `head` and `footer` grouped into blocks separated by blank rows."""
        blocks: list[list[int]] = []
        cur: list[int] = []
        for y in range(head + 1, footer):
            if rows[y].strip():
                cur.append(y)
            elif cur:
                blocks.append(cur)
                cur = []
        if cur:
            blocks.append(cur)
        return blocks

    def _blocks_as_options(
        self, rows: list[str], blocks: list[list[int]]
    ) -> tuple[list[Option], int | None, str]:
        """One option per block: its first row the label (`❯` = selected), the rest its description."""
        options: list[Option] = []
        lines: list[str] = []
        for i, block in enumerate(blocks):
            first = rows[block[0]].strip()
            selected = first.startswith(self.PROMPT + " ")
            label = first[2:].strip() if selected else first
            desc = " ".join(rows[y].strip() for y in block[1:])
            options.append(Option(str(i + 1), label, selected, block[0]))
            lines.append(f"{i + 1}. {label}" + (f" — {desc}" if desc else ""))
        return options, (blocks[0][0] if blocks else None), "\n".join(lines)

    def _parse_options(self, rows: list[str], footer: int) -> tuple[list[Option], int | None]:
        """Options drawn above `footer`: the `❯` row and its siblings whose text starts in the same column."""
        sel = None
        for y in range(footer - 1, -1, -1):
            r = rows[y]
            s = r.lstrip(" ")
            if s.startswith(self.PROMPT + " ") and not self.is_prompt_line(r):
                sel = y
                break
            if self.RULE_RE.match(r) or self.PANEL_TOP_RE.match(r):
                break
        if sel is None:
            return [], None
        col = _indent(rows[sel]) + 2

        def is_sibling(y: int) -> bool:
            r = rows[y]
            return len(r) > col and r[:col].strip() == "" and r[col] != " "

        first = sel
        while first - 1 >= 0 and is_sibling(first - 1):
            first -= 1
        opt_rows = []
        y = first
        while y < footer:
            r = rows[y]
            if y == sel or is_sibling(y):
                opt_rows.append(y)
            elif not r.strip() or _indent(r) < col:
                # a blank or shallower row ends the list, unless another sibling follows a blank (spaced lists)
                if r.strip():
                    break
            y += 1
        options: list[Option] = []
        for i, y in enumerate(opt_rows):
            label = rows[y][col:].strip()
            m = self.NUMBERED_RE.match(label)
            digit = i + 1
            if m:
                digit, label = int(m.group(1)), m.group(2).strip()
            options.append(Option(str(digit), label, y == sel, y))
        return options, first

    def parse_dialog(self, rows: Sequence[str]) -> Dialog | None:
        """Parse the modal at the bottom of the screen into {kind, text, options, detail}; None if no modal."""
        rows = _strip(rows)
        footer = self._footer_row(rows)
        if footer is None:
            return None  # most frames: no modal (the marker scan below is not needed)
        kind = self._dialog_kind(rows)
        if kind is None:
            prompt = self.find_prompt_row(rows)
            if prompt is not None and prompt > footer:
                return None  # modal text quoted in the conversation above a live prompt
            kind = "choice"
        options, first = self._parse_options(rows, footer)
        keys: dict[str, list[str]] = {}
        if kind == "rewind":
            options, _first, listing = self._parse_blocks(rows, footer)
            if not any(o.selected for o in options):
                return None
            head = next(r.strip() for r in rows if self.REWIND_SUB in r)
            return Dialog(kind, f"Rewind: {head}", options, listing)
        if kind == "resume":
            options, _first, listing = self._parse_resume(rows, footer)
            if not any(o.selected for o in options):
                return None
            return Dialog(kind, self.RESUME_TITLE, options, listing)
        if kind == "auto_mode_unavailable":
            options = [
                Option("1", "Stay in auto mode", True),
                Option("2", "Leave for accept edits mode and stop", False),
                Option("3", "Cancel", False),
            ]
            keys = {
                "Stay in auto mode": ["Enter"],
                "Leave for accept edits mode and stop": ["BTab"],
                "Cancel": ["Esc"],
            }
            first = footer
        if kind == "choice" and len(options) < 2:
            return None
        # The dialog's body: from its top rule down to the options.
        top = 0
        for y in range((first if first is not None else footer) - 1, -1, -1):
            if self.RULE_RE.match(rows[y]) or self.PANEL_TOP_RE.match(rows[y]):
                top = y + 1
                break
        body = [r for r in rows[top : first if first is not None else footer]]
        body = [r for r in body if not re.match(r"^╌+$", r.strip())]
        while body and not body[-1].strip():
            body.pop()
        while body and not body[0].strip():
            body.pop(0)
        question_idx = next((i for i in range(len(body) - 1, -1, -1) if body[i].strip().endswith("?")), None)
        if question_idx is None:
            question_idx = next((i for i in range(len(body) - 1, -1, -1) if "?" in body[i]), None)
        if question_idx is None and body:
            question_idx = 0
        if kind == "auto_mode_unavailable":
            question_idx = 0
        text = body[question_idx].strip() if question_idx is not None else ""
        detail_rows = [r for i, r in enumerate(body) if i != question_idx]
        base = min((_indent(r) for r in detail_rows if r.strip()), default=0)
        detail = "\n".join(r[base:] for r in detail_rows).strip("\n")
        detail = re.sub(r"\n{3,}", "\n\n", detail)
        return Dialog(kind, text, options, detail, keys=keys)

    def modal_excerpt(self, rows: Sequence[str]) -> str | None:
        """The bottom of the screen when a modal we cannot parse owns it (a dialog footer, no live prompt)."""
        rows = _strip(rows)
        if (
            self.find_prompt_row(rows) is not None
            or self.parse_dialog(rows) is not None
            or self._footer_row(rows) is None
        ):
            return None
        tail = [r for r in rows if r.strip()][-12:]
        return "\n".join(tail)[-600:]

    def cursor_keys(self, dialog: Dialog, target: int) -> list[str]:
        """Named keys moving the dialog's cursor one step toward option `target` (or Enter when on it)."""
        label = dialog.options[target].label
        if label in dialog.keys:
            return list(dialog.keys[label])
        cur = dialog.selected_index()
        if cur is None:
            return []
        if cur == target:
            return ["Enter"]
        return ["Down"] if target > cur else ["Up"]

    # ---------------------------------------------------------------------------------------------- response


class Rules(Dialogs):
    """Claude Code 2.1.x screen rules (see the module docstring): this level reads the response text."""

    _last_extract: tuple[tuple[object, ...], str] | None = None
    """`extract_response`'s last (what it read, its text): the streaming tick asks on every frame."""

    def _is_chrome(self, row: str) -> bool:
        s = row.strip()
        return bool(
            not s
            or self.SPINNER_RE.match(s)
            or self.COMPLETION_RE.match(s)
            or s.startswith("⎿  Tip:")
            or (s.startswith("◐ ") and "/effort" in s)
            or s in ("ctrl+g to edit in Vim",)
            or _indent(row) >= 60  # right-aligned transient hints above the prompt box
        )

    _last_end: tuple[list[str], int] | None = None
    """`_content_end`'s last (terminal frame, answer): the streaming tick asks twice per frame."""

    def _content_end(self, lines: list[str]) -> int:
        """Index one past the last conversation line (above the prompt box / dialog / spinner / hints)."""
        last = self._last_end
        if last is not None and last[0] is lines:
            return last[1]
        end = self._content_end_of(lines)
        if type(lines) is ScreenRows:  # a terminal's frame never changes (a caller's list may)
            self._last_end = (lines, end)
        return end

    # What `_content_end` and `find_turn_start` read of a row besides `classify`'s facts, as bits of `_row_facts`.
    _F_PANEL, _F_CONTENT, _F_USER = 32, 64, 128

    def _row_facts(self, row: str) -> int:
        """`classify`'s facts, and the response prelude's: a panel's top, a conversation row (`_content_kind`)
        and a user prompt row (`_user_prompt_kind`)."""
        return (
            super()._row_facts(row)
            | (self._F_PANEL if self.PANEL_TOP_RE.match(row) else 0)
            | (self._F_CONTENT if self._content_kind(row) else 0)
            | (self._F_USER if self._user_prompt_kind(row) else 0)
        )

    _line_facts: FrameFacts | None = None

    def _facts_of_lines(self, lines: list[str]) -> FrameFacts:
        """`lines`' facts (`_row_facts`): the streaming tick reads the logical lines of one frame after another,
        so only the lines that changed are looked up."""
        ff = self._line_facts
        if ff is None:
            ff = self._line_facts = FrameFacts(self._row_facts, (type(self), "facts"))
        if ff.rows is not lines or type(lines) is not ScreenRows:  # a terminal's frame never changes
            ff.update(lines)
        return ff

    def _content_end_of(self, lines: list[str]) -> int:
        ff = self._facts_of_lines(lines)
        prompt = ff.last(self._F_PROMPT)
        end = len(lines)
        if prompt is not None:
            top = ff.last(self._F_RULE, 0, prompt)
            end = top if top is not None else prompt
        else:
            footer = ff.last(self._F_FOOTER)
            if footer is not None:
                y = ff.last(self._F_RULE | self._F_PANEL, 0, footer)
                if y is not None:
                    end = y
        last = ff.last(self._F_CONTENT, 0, end)
        return 0 if last is None else last + 1

    def _content_kind(self, row: str) -> int:
        """For `_content_end`'s scan up over trailing chrome: 1 a conversation row, 0 chrome."""
        return 0 if self._is_chrome(row) else 1

    def reflow(self, rows: list[str], cols: int = 200) -> list[str]:
        """Rejoin prose rows the renderer wrapped at `cols`; box-drawn rows and list items stay as drawn.

        `rows` keep their screen indentation. A row continues the previous one iff it is prose with the
        continuation indent of the current logical line and its first word could not have fitted on the
        previous display row (the break was a wrap, not a newline).
        """
        out: list[str] = []
        cont_indent: int | None = None
        prev_width = 0
        facts = _reflow_memo(type(self))
        for row in rows:
            f = facts.get(row)
            if f is None:
                f = facts[row] = self._reflow_facts(row)
            s, ind, boxy, listed, next_indent, word_width, width = f
            if (
                out
                and s
                and not boxy
                and cont_indent is not None
                and ind == cont_indent
                and not listed
                and prev_width + 1 + word_width > cols - 1
            ):
                out[-1] = out[-1].rstrip() + " " + s
                prev_width = width
                continue
            out.append(row.rstrip())
            prev_width = width
            cont_indent = next_indent
        return out

    def _reflow_facts(self, row: str) -> _ReflowFacts:
        """What `reflow` reads of a row (its text alone decides): stripped text, indent, box-drawn, a list item,
        the continuation indent it sets, its first word's width and its own width."""
        s = row.strip()
        ind = _indent(row)
        boxy = has_any(s, self.BOX_CHARS)
        m = self.LIST_MARKER_RE.match(s)
        if not s or boxy:
            next_indent = None
        else:
            next_indent = ind + (len(m.group(1)) if m and not s.startswith("▎") else 0)
        return s, ind, boxy, m is not None, next_indent, _width(_first_word(s)), _width(row)

    def _block_is_tool(self, head: str, following: list[str]) -> bool:
        if (
            self.TOOL_CALL_RE.match(head)
            or self.STATUS_ELLIPSIS_RE.match(head)
            or head.startswith("API Error")
        ):
            return True
        nxt = next((r.strip() for r in following if r.strip()), "")
        return nxt.startswith("⎿")

    def _paragraph_is_tool(self, first: str, following: list[str]) -> bool:
        """A paragraph that is tool chrome: a condensed tool summary, a thinking row, a status, or a call + `⎿`."""
        if (
            self.TOOL_SUMMARY_RE.match(first)
            or self.THINKING_ROW_RE.match(first)
            or self.STATUS_ELLIPSIS_RE.match(first)
        ):
            return True
        return bool(following) and following[0].strip().startswith("⎿")

    def find_turn_start(self, lines: Sequence[str], prompt_text: str | None = None) -> int | None:
        """Row of the current turn's user prompt (`❯ text`, normal space), matched on its first line if given."""
        rows = _strip(lines)
        end = self._content_end(rows)
        ff = self._facts_of_lines(rows)
        needle = ""
        if prompt_text and prompt_text.strip():
            needle = prompt_text.strip().splitlines()[0].strip()[:40]
        paste_like = bool(prompt_text and ("\n" in prompt_text.strip() or len(prompt_text) > 200))
        stop = end
        while True:
            # the next user prompt row up (the scan of rows in the compiled loop; the needle test on its hits)
            y = ff.last(self._F_USER, 0, stop)
            if y is None:
                return None
            shown = rows[y][2:].strip()
            if not needle or shown.startswith(needle) or needle.startswith(shown[:40]):
                return y
            if paste_like and self.PASTED_RE.match(shown):
                return y  # Claude collapsed our pasted message into a placeholder
            stop = y

    def _user_prompt_kind(self, row: str) -> int:
        """1 for a prompt row of the conversation (`❯ text`, normal space; not the live input line)."""
        return 1 if row.startswith(self.PROMPT + " ") and not self.is_prompt_line(row) else 0

    def extract_response(self, lines: Sequence[str], start: int | None = None, cols: int = 200) -> str:
        """The current turn's assistant text from rendered logical lines, chrome removed, prose rejoined.

        `start` is the row of the turn's user prompt (or None when it scrolled off the top: everything
        visible belongs to the turn). Only text blocks (`● prose`) are kept; tool calls, results, thinking
        and spinner/completion lines are chrome.
        """
        lines = _strip(lines)
        end = self._content_end(lines)
        # What the text follows from: the rows from the prompt's (or the top) to one past the content's end, and
        # whether the row after that starts with `⎿` (all a block's head reads two rows ahead: that row is most
        # often the spinner, redrawn every frame). The streaming tick asks again on every frame, and most frames
        # change only rows outside it (the spinner, the input box): the last answer is kept for its rows.
        a = 0 if start is None else start
        after = lines[end + 1].strip().startswith("⎿") if end + 1 < len(lines) else False
        key = (cols, start is None, end - a, tuple(lines[a : end + 1]), after)
        last = self._last_extract
        if last is not None and last[0] == key:
            return last[1]
        text = self._extract(lines, start, end, cols)
        self._last_extract = (key, text)
        return text

    def _extract(self, lines: list[str], start: int | None, end: int, cols: int) -> str:
        """`extract_response` for `lines` (stripped) whose content ends at `end`."""
        y = 0 if start is None else start + 1
        header = start is None and any(self.VERSION_RE.search(r) for r in lines[: min(end, 6)])
        if header:
            return ""  # the prompt row should be visible below the logo; without it nothing is this turn's
        blocks: list[list[str]] = []
        current: list[str] | None = None
        in_tool = False
        seen_bullet = False
        if start is None:
            # the turn's prompt scrolled off the top: the first visible rows continue a text block
            current = []
            blocks.append(current)
            seen_bullet = True
        while y < end:
            r = lines[y]
            s = r.strip()
            if r.startswith("● ") or r == "●":
                seen_bullet = True
                head = r[2:].strip()
                in_tool = self._block_is_tool(head, lines[y + 1 : y + 3])
                current = None
                if not in_tool and head:
                    current = [" " * 2 + head]
                    blocks.append(current)
                elif not in_tool:
                    current = []
                    blocks.append(current)
                y += 1
                continue
            if not seen_bullet:
                y += 1
                continue
            if (
                r.startswith("  ")
                and s
                and (y == 0 or not lines[y - 1].strip())
                and self._paragraph_is_tool(s, lines[y + 1 : y + 2])
            ):
                in_tool = True
                current = None
                y += 1
                continue
            if s.startswith("⎿") or (in_tool and (not s or r.startswith("  "))):
                y += 1
                continue
            if current is not None and (not s or r.startswith("  ")):
                current.append(r)
            y += 1
        texts = []
        done = _block_memo(type(self))
        for b in blocks:
            while b and not b[-1].strip():
                b.pop()
            if not b:
                continue
            key = (cols, *b)
            text = done.get(key)
            if text is None:
                flowed = self.reflow(b, cols)
                text = done[key] = "\n".join(
                    x[2:] if x.startswith("  ") else x.lstrip() for x in flowed
                ).strip("\n")
            texts.append(text)
        return "\n\n".join(t for t in texts if t)

    def header_info(self, rows: Sequence[str]) -> tuple[str | None, str | None]:
        """(CLI version, model display name) from the logo header, e.g. ("2.1.328", "Opus 5.5")."""
        rows = _strip(rows)
        for i, r in enumerate(rows[:12]):
            m = self.VERSION_RE.search(r)
            if m:
                model = None
                if i + 1 < len(rows):
                    rest = rows[i + 1].lstrip(self._LOGO_CHARS).strip()
                    model = rest.split(" · ", 1)[0].strip() or None
                return m.group(1), model
        return None, None
