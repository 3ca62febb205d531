"""Pure translations between the daemon's events and ACP's vocabulary, for `litbridge acp`.

No SDK here (plain strings and dicts), so the rules are testable on their own: which ACP tool kind a CLI's
tool name is, which permission-option kind a question's option label means, and how the daemon's `replace`
events (the full text so far) become append-only `agent_message_chunk` deltas, which tool calls are todo
lists (a `plan` update), and the form a multiple-choice question is as an `elicitation/create`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # checked in order, on the lower-cased name with `mcp__server__` prefixes removed
    ("fetch", ("webfetch", "fetch", "http", "url", "download", "curl")),
    ("search", ("grep", "glob", "search", "find", "websearch", "ls", "list")),
    ("edit", ("edit", "write", "patch", "replace", "create", "multiedit", "notebookedit", "apply")),
    ("read", ("read", "view", "cat", "open", "notebookread", "get")),
    ("execute", ("bash", "shell", "exec", "run", "command", "terminal", "powershell", "sh")),
)


_NOT_TOOLS = frozenset({"todowrite", "todoread", "task", "agent", "exitplanmode", "askuserquestion"})
"""Claude's bookkeeping tools, whose names would otherwise look like edits or commands."""


def tool_kind(name: str) -> str:
    """ACP `ToolKind` for a CLI's tool name (Claude's `Bash`, `Read`, `Edit`..., Codex's `shell`, Gemini's
    `read_file`...): execute, read, edit, search, fetch, or other when nothing in the name says."""
    bare = name.rsplit("__", 1)[-1]  # an MCP tool: mcp__server__tool
    base = re.sub(r"[^a-z0-9]", "", bare.lower())
    if base in _NOT_TOOLS:
        return "other"
    words = set(re.split(r"[^a-z0-9]+", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", bare).lower())) | {base}
    for kind, keys in _KINDS:
        if words & set(keys):
            return kind
    return "other"


_ALWAYS = re.compile(
    r"\b(always|never|don'?t ask|do not ask|for (this|the) (session|project)|all\b|every)", re.I
)
_NEGATIVE = re.compile(
    r"^\s*(\d+[.)]\s*)?(no|n|nope|deny|denied|reject|decline|cancel|abort|stop|skip|never|refuse|don'?t|do not)\b"
    r"|tell .* (what to do|differently)|\b(deny|reject|decline)\b",
    re.I,
)
_POSITIVE = re.compile(
    r"^\s*(\d+[.)]\s*)?(yes|y|yep|ok|okay|proceed|continue|trust|sure|run|go|confirm)\b|\b(allow|approve|accept)",
    re.I,
)


def option_kind(label: str, first_positive: bool) -> str:
    """ACP `PermissionOptionKind` for a question's option, by the meaning of its label: a refusal is
    reject_once (reject_always with "always"/"never ask"), an "always"/"don't ask again" consent is
    allow_always, any other option (the first positive one, or a plain choice such as `red`) is allow_once."""
    if _NEGATIVE.search(label):
        return "reject_always" if _ALWAYS.search(label) else "reject_once"
    if _POSITIVE.search(label) and _ALWAYS.search(label) and not first_positive:
        return "allow_always"
    return "allow_once"


def option_kinds(labels: list[str]) -> list[str]:
    """`option_kind` for each option of a question (the first positive one is always allow_once)."""
    out: list[str] = []
    seen_positive = False
    for label in labels:
        kind = option_kind(label, first_positive=not seen_positive and bool(_POSITIVE.search(label)))
        if kind.startswith("allow") and _POSITIVE.search(label):
            seen_positive = True
        out.append(kind)
    return out


_PLAN_TOOLS = {"todowrite": ("todos", "content"), "updateplan": ("plan", "step")}
"""Tools whose input is the whole todo list: Claude Code's TodoWrite and Codex's update_plan (list key, text key)."""
_PLAN_STATUSES = ("pending", "in_progress", "completed")
_PRIORITIES = ("high", "medium", "low")


def plan_entries(name: str, tool_input: Any) -> list[dict[str, str]] | None:
    """The todo list a tool call sets, as ACP plan entries {content, status, priority}, or None when the call
    is not one that sets a todo list (or its input is not a list).

    Claude Code's `TodoWrite` has `{"todos": [{"content", "status", "activeForm"}]}`, Codex's `update_plan`
    `{"plan": [{"step", "status"}]}`; both send the whole list each time, as ACP's `plan` update does. A
    status outside pending / in_progress / completed counts as pending; the priority is the item's own when
    it has a valid one (older TodoWrite inputs did), else medium. Items without text are left out."""
    bare = re.sub(r"[^a-z0-9]", "", name.rsplit("__", 1)[-1].lower())
    shape = _PLAN_TOOLS.get(bare)
    if shape is None or not isinstance(tool_input, dict) or not isinstance(tool_input.get(shape[0]), list):
        return None
    entries: list[dict[str, str]] = []
    for item in tool_input[shape[0]]:
        text = item.get(shape[1]) if isinstance(item, dict) else None
        if not isinstance(text, str) or not text.strip():
            continue
        status, priority = item.get("status"), item.get("priority")
        entries.append(
            {
                "content": text,
                "status": status if status in _PLAN_STATUSES else "pending",
                "priority": priority if priority in _PRIORITIES else "medium",
            }
        )
    return entries


def choice_schema(labels: list[str], digits: list[str]) -> dict[str, Any]:
    """The form of `elicitation/create` for a multiple-choice question: one required string property, `choice`,
    whose titled one-of values are the options' digits (what the daemon's `answer` takes) with their labels."""
    return {
        "type": "object",
        "properties": {
            "choice": {
                "type": "string",
                "title": "Choice",
                "oneOf": [{"const": d, "title": label} for d, label in zip(digits, labels, strict=True)],
            }
        },
        "required": ["choice"],
    }


REVISED = "\n\n[litbridge: the CLI revised the text streamed above; its final text follows]\n\n"
"""Sent in the rare case where a turn's final text does not begin with what was already streamed."""


SCREEN_TEXT_DRIVERS = frozenset({"claude", "codex", "gemini"})
"""Drivers whose `replace` text is read off the CLI's rendered screen (markdown drawn, not written: `**Paris**`
shows as `Paris`): it is no prefix of the final `complete.content`, so streaming it could not join to that text
exactly. Their turns' text goes out as one chunk at the turn's end; tool calls, plans and questions still stream."""


def streams_text(driver: str | None) -> bool:
    """Whether a session's `replace` events may be streamed as `agent_message_chunk` deltas (see above)."""
    return driver not in SCREEN_TEXT_DRIVERS


@dataclass
class TextDeltas:
    """Append-only chunks from the daemon's `replace` events (each one the full text so far).

    A `replace` that extends what was sent yields the new tail. One that does not (the CLI rewrote earlier
    text) stops the streaming: nothing more is sent until the turn's end, which sends the rest of the final
    text, so the chunks joined equal the final text whenever what was streamed is a prefix of it. When it is
    not (an earlier text that the final one no longer begins with), `finish` says so and sends the final
    text whole, after `REVISED`, instead of silently diverging."""

    sent: str = ""
    held: bool = False

    def replace(self, text: str) -> str:
        if self.held or not text.startswith(self.sent):
            self.held = True
            return ""
        delta, self.sent = text[len(self.sent) :], text
        return delta

    def finish(self, final: str) -> str:
        if final.startswith(self.sent):
            delta = final[len(self.sent) :]
        else:
            delta = REVISED + final
        self.sent, self.held = final, False
        return delta
