"""Copilot CLI's own record of a session, `<COPILOT_HOME>/session-state/<session id>/events.jsonl`, and what its
entries mean for a turn.

Every entry is `{"type", "data", "id", "timestamp", "parentId"}`. One user turn, as 1.0.102 writes it:
`user.message` (`content` exactly as typed), then per model call `assistant.turn_start`, `session.usage_record`,
`assistant.message` (`content`, `toolRequests`), for each tool `tool.execution_start`, `permission.requested` /
`permission.completed` around an approval, `tool.execution_complete`, and `assistant.turn_end`. The user turn is
over at the `assistant.turn_end` of a model call whose message asked for no tool; an `assistant.turn_end` after no
message is followed by `abort` (Esc Esc, or Esc on an approval) or `session.error` (an API error the CLI gave up
on). An interrupted answer's partial text is not recorded.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from litbridge.drivers.records import UsageTally
from litbridge.drivers.records.usage import tokens

__all__ = ["RecordEvent", "TurnTracker", "copilot_home", "events_path", "is_session_id"]


def copilot_home(env: Mapping[str, str] | None = None) -> Path:
    """The CLI's config and state folder: `COPILOT_HOME`, else `$HOME/.copilot` (the session's env first)."""
    env = env or {}
    home = env.get("COPILOT_HOME") or os.environ.get("COPILOT_HOME")
    if home:
        return Path(home)
    return Path(env.get("HOME") or os.environ.get("HOME") or os.path.expanduser("~")) / ".copilot"


def events_path(env: Mapping[str, str] | None, session_id: str) -> Path:
    return copilot_home(env) / "session-state" / session_id / "events.jsonl"


def is_session_id(value: str) -> bool:
    """A session id names a folder: only a UUID is taken (nothing else can point outside `session-state/`)."""
    try:
        return str(uuid.UUID(value)) == value.lower()
    except ValueError:
        return False


@dataclass
class RecordEvent:
    """kind: prompt, text, tool_use, tool_result, permission, complete, interrupted, error."""

    kind: str
    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)


def _tool_output(data: Mapping[str, Any]) -> str:
    result = data.get("result")
    if isinstance(result, dict) and isinstance(result.get("content"), str):
        return str(result["content"])
    error = data.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    return ""


class TurnTracker:
    """Record entries -> turn events. A `user.message` opens a turn; its final `assistant.turn_end`, an `abort` or
    a `session.error` closes it."""

    def __init__(self) -> None:
        self.open = False
        self.text = ""  # the last assistant message's content in this turn
        self.tally = UsageTally()
        self.message_in_call = False  # the current model call wrote its assistant.message
        self.asked_tools = False  # ... and that message asked for tools
        self.ended_without_answer = False  # an assistant.turn_end after no message: abort or error follows

    @property
    def usage(self) -> dict[str, int] | None:
        return self.tally.total

    def feed(self, entries: Iterable[Mapping[str, Any]]) -> list[RecordEvent]:
        out: list[RecordEvent] = []
        for entry in entries:
            out.extend(self.entry(entry))
        return out

    def entry(self, entry: Mapping[str, Any]) -> list[RecordEvent]:
        typ = entry.get("type")
        data = entry.get("data") if isinstance(entry.get("data"), dict) else {}
        assert isinstance(data, dict)
        if typ == "user.message":
            self.open, self.text, self.tally = True, "", UsageTally()
            self.message_in_call = self.asked_tools = self.ended_without_answer = False
            return [RecordEvent("prompt", str(data.get("content") or ""), {"id": data.get("messageId")})]
        if not self.open:
            return []
        if typ == "assistant.turn_start":
            self.message_in_call = self.asked_tools = self.ended_without_answer = False
            return []
        if typ == "session.usage_record":
            u = data.get("usage") if isinstance(data.get("usage"), dict) else None
            if u:
                key = u.get("apiCallId") or entry.get("id")
                self.tally.put(key, tokens(u.get("inputTokens"), u.get("outputTokens"), u.get("cacheReadTokens"),
                                           u.get("cacheWriteTokens")))  # fmt: skip
            return []
        if typ == "assistant.message":
            out: list[RecordEvent] = []
            self.message_in_call = True
            content = data.get("content")
            if isinstance(content, str) and content:
                self.text = content
                out.append(RecordEvent("text", content, {"id": data.get("messageId")}))
            requests = [r for r in data.get("toolRequests") or [] if isinstance(r, dict)]
            self.asked_tools = bool(requests)
            for r in requests:
                out.append(
                    RecordEvent(
                        "tool_use",
                        str(r.get("name") or ""),
                        {"tool_use_id": r.get("toolCallId"), "input": r.get("arguments")},
                    )
                )
            return out
        if typ == "tool.execution_complete":
            return [
                RecordEvent(
                    "tool_result",
                    _tool_output(data),
                    {"tool_use_id": data.get("toolCallId"), "is_error": not data.get("success", False)},
                )
            ]
        if typ in ("permission.requested", "permission.completed"):
            return [RecordEvent("permission", typ.split(".", 1)[1], dict(data))]
        if typ == "assistant.turn_end":
            if self.message_in_call and not self.asked_tools:
                self.open = False
                return [RecordEvent("complete", self.text, {"usage": self.usage})]
            if not self.message_in_call:
                self.ended_without_answer = True
            return []
        if typ == "abort":
            self.open = False
            return [RecordEvent("interrupted", "", {"reason": data.get("reason")})]
        if typ == "session.error":
            self.open = False
            return [
                RecordEvent(
                    "error",
                    str(data.get("message") or "Copilot reported an error"),
                    {"status": data.get("statusCode"), "error_type": data.get("errorType")},
                )
            ]
        return []
