"""opencode 1.18.x screen knowledge as pure functions (no I/O, no driver state).

What a frame shows (200x50, observed on 1.18.33):
- the input box: rows drawn with a `┃` bar, the agent/model row (`┃  Build · Mock Mock`) last, closed by a
  `╹▀▀▀…` row; before the first prompt it sits in the middle under the logo with the placeholder
  `Ask anything… "…"`, later at the bottom of the conversation;
- busy: the row under the box starts with a progress bar (`■■■⬝⬝⬝⬝⬝`) and says `esc interrupt` (after one Esc:
  `esc again to interrupt`; a second Esc interrupts);
- the version at the right end of the last row (`1.18.33` on the home screen, `• OpenCode 1.18.33` later);
- a permission prompt replaces the box: `△ Permission required`, a title (`# Shell command`), what it is about
  (`$ echo hi`), and one row of options without digits (`Allow once   Allow always   Reject`), the selected one
  drawn on a coloured background, moved with Left/Right and confirmed with Enter; the rules number the options.
- each turn of the conversation: the prompt drawn with a `┃` bar, the answer indented 5 columns, and a
  `▣  Build · Mock · 2.7s` row after it (`· interrupted` when interrupted); a sidebar fills the right columns.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from litbridge.drivers.dialog import Dialog, Option
from litbridge.drivers.kit import Rules as BaseRules

__all__ = ["Reading", "Rules"]

Highlight = Callable[[int, int], bool]
"""(row, column) -> the cell is drawn highlighted (the selected option); given by the driver, which sees colours."""


@dataclass
class Reading:
    """One frame read (the engine's `Reading`)."""

    state: str
    dialog: Dialog | None = None
    spinner: str | None = None
    live_prompt: bool = False
    draft: str = ""
    version: str | None = None
    box: int | None = None
    """Row of the input box's agent/model row (None: no box)."""


class Rules(BaseRules):
    """opencode 1.18.x rules: markers are class attributes, readings methods (a later version overrides one)."""

    VERSION = "1.18"
    BAR = "┃"
    BOX_END_RE = re.compile(r"^\s*╹▀{8,}")
    BUSY_RE = re.compile(r"^\s*([■⬝]{4,})\s+(esc (?:again to )?interrupt)\b")
    PLACEHOLDER_RE = re.compile(r"^Ask anything…")
    VERSION_RE = re.compile(r"(?:OpenCode )?(\d+\.\d+\.\d+)\s*$")
    PERMISSION_MARK = "△ Permission required"
    OPTIONS_END_RE = re.compile(r"\s{2,}(ctrl\+f |⇆ |enter ).*$")
    TURN_END_RE = re.compile(r"^\s{5}▣  \S")
    SIDEBAR_GAP_RE = re.compile(r"\s{6,}\S.*$")
    QUESTION_KIND = {"permission": "permission"}

    # ------------------------------------------------------------------------------------------ reading
    def classify(self, rows: list[str], highlight: Highlight | None = None) -> Reading:
        if not any(r.strip() for r in rows):
            return Reading("blank")
        version = self.version_of(rows)
        dialog = self.parse_dialog(rows, highlight)
        if dialog is not None:
            return Reading("dialog", dialog, version=version)
        box = self.box_row(rows)
        busy = self.busy_row(rows)
        draft = self.draft_of(rows, box)
        if busy is not None:
            return Reading("busy", None, busy, box is not None, draft, version, box)
        if box is not None:
            return Reading("idle", None, None, True, draft, version, box)
        return Reading("other", version=version)

    def read(self, rows: list[str], title: str | None = None, highlight: Highlight | None = None) -> Reading:
        return self.classify(rows, highlight)

    def version_of(self, rows: list[str]) -> str | None:
        for row in reversed(rows):
            if row.strip():
                m = self.VERSION_RE.search(row)
                return m.group(1) if m else None
        return None

    def busy_row(self, rows: list[str]) -> str | None:
        """The progress row (`■■■⬝⬝⬝⬝⬝  esc interrupt`), relayed as `thinking`."""
        for row in rows[-4:]:
            m = self.BUSY_RE.match(row)
            if m:
                return f"{m.group(1)}  {m.group(2)}"
        return None

    def box_row(self, rows: list[str]) -> int | None:
        """Index of the input box's agent/model row (the `┃` row just above the `╹▀▀▀` row), or None."""
        for i in range(len(rows) - 1, 0, -1):
            if self.BOX_END_RE.match(rows[i]):
                above = rows[i - 1].lstrip()
                return i - 1 if above.startswith(self.BAR) else None
        return None

    def _bar_text(self, row: str) -> str | None:
        """The text right of a `┃` bar (the sidebar cut off), or None for a row without one."""
        s = row.lstrip()
        if not s.startswith(self.BAR):
            return None
        text = s[1:].strip()
        return self.SIDEBAR_GAP_RE.sub("", text)

    def draft_of(self, rows: list[str], box: int | None) -> str:
        """The box's unsent text ("" for the placeholder or an empty box)."""
        if box is None:
            return ""
        lines: list[str] = []
        i = box - 1
        while i >= 0:
            text = self._bar_text(rows[i])
            if text is None:
                break
            lines.append(text)
            i -= 1
        lines.reverse()
        text = "\n".join(lines).strip("\n").strip()
        return "" if self.PLACEHOLDER_RE.match(text) else text

    # ------------------------------------------------------------------------------------------ dialogs
    def parse_dialog(self, rows: list[str], highlight: Highlight | None = None) -> Dialog | None:
        """The permission prompt, if one is drawn: its title, what it asks about, its options numbered 1..n."""
        for i, row in enumerate(rows):
            if self.PERMISSION_MARK not in row:
                continue
            facts: dict[str, str] = {}
            for j in range(i + 1, min(len(rows), i + 25)):
                text = self._bar_text(rows[j])
                if text is None:
                    continue
                if text.startswith("# ") and "title" not in facts:
                    facts["title"] = text[2:].strip()
                elif text.startswith("$ ") and "command" not in facts:
                    facts["command"] = text[2:].strip()
                elif text.startswith("← ") and "path" not in facts:
                    facts["path"] = text[2:].strip()
                options = self._options(rows[j], j, highlight)
                if options:
                    detail = "\n".join(f"{k}: {v}" for k, v in facts.items())
                    return Dialog(
                        "permission",
                        self.PERMISSION_MARK[2:],
                        options,
                        detail,
                        facts,
                        ident=tuple(sorted(facts.items())),
                    )
            return None
        return None

    def _options(self, row: str, y: int, highlight: Highlight | None) -> list[Option]:
        """`Allow once   Allow always   Reject` (the key hints cut off) as numbered options; the highlighted one is
        selected (the first when colours are not known: where the cursor starts)."""
        s = row.lstrip()
        if not s.startswith(self.BAR) or ("Allow" not in s and "Reject" not in s):
            return []
        start = len(row) - len(s) + 1
        body = self.OPTIONS_END_RE.sub("", row[start:])
        opts: list[Option] = []
        for m in re.finditer(r"\S+(?: \S+)*", body):
            x = start + m.start()
            selected = bool(highlight(y, x)) if highlight is not None else not opts
            opts.append(Option(str(len(opts) + 1), m.group(0), selected, y))
        if highlight is not None and not any(o.selected for o in opts) and opts:
            opts[0].selected = True
        return opts if len(opts) >= 2 else []

    def dialog_keys(self, dialog: Dialog, index: int) -> list[str]:
        """Left/Right from the selected option, then Enter (the prompt takes no digits)."""
        cur = dialog.selected_index() or 0
        step = "Right" if index > cur else "Left"
        return [step] * abs(index - cur) + ["Enter"]

    # ------------------------------------------------------------------------------------------ the answer
    def find_prompt(self, rows: list[str], prompt: str | None, box: int | None) -> int | None:
        """Row of the turn's prompt (`┃  <first line>`, the newest above the input box)."""
        stop = box if box is not None else len(rows)
        first = (prompt or "").strip().split("\n", 1)[0][:60].strip()
        best = None
        i = 0
        while i < stop:
            text = self._bar_text(rows[i])
            if text and (not first or text.startswith(first) or first.startswith(text)):
                # not the box itself: the box's rows run down to `stop`
                j = i
                while j < stop and self._bar_text(rows[j]) is not None:
                    j += 1
                if j < stop:
                    best = i
            i += 1
        return best

    def extract_response(self, rows: list[str], start: int | None, box: int | None) -> str:
        """The answer drawn below the prompt: the rows indented 5 columns up to the `▣  Build · …` row, the sidebar
        cut off. Best effort while it streams: the database has the exact text."""
        if start is None:
            return ""
        stop = box if box is not None else len(rows)
        i = start
        while i < stop and self._bar_text(rows[i]) is not None:
            i += 1
        out: list[str] = []
        for row in rows[i:stop]:
            if self.TURN_END_RE.match(row) or row.lstrip().startswith(self.BAR):
                break
            text = self.SIDEBAR_GAP_RE.sub("", row[5:] if row.startswith("     ") else row.strip())
            out.append(text.rstrip())
        text = "\n".join(out)
        return re.sub(r"\n{3,}", "\n\n", text).strip("\n")

    def modal_excerpt(self, rows: list[str]) -> str | None:
        return None
