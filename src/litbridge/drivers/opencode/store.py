"""opencode's session store: a SQLite database (`<data dir>/opencode/opencode.db`) and what its rows mean.

opencode 1.18 keeps every session in one database per user, written in WAL mode by each running opencode. Next to
the `session`, `message` and `part` tables it appends every change to the `event` table (`session.created.1`,
`message.updated.1`, `message.part.updated.1`, ...), each row holding the whole updated object; its implicit
`rowid` only grows, so it is the cursor the follower reads new rows by (`records.SqliteRows`, read-only).

A turn in the rows: the user `message` and its `text` part (the prompt, exactly as sent), then one assistant
message per model step: `step-start`, `text` parts, `tool` parts (`state.status` pending/running/completed/error,
`input`, `output`), `step-finish` (`reason`, `tokens`), and the message's own update with `time.completed` and
`finish` (`stop`, `tool-calls`, ...) or `error` (`MessageAbortedError` for an interrupt, `APIError` ...). A step
that finished with `tool-calls` is followed by another step, unless a tool was rejected (the loop stops there).
Text streams only on the screen: a text part is stored whole when its step ends.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from litbridge.drivers.records import UsageTally, tokens

EVENTS_SQL = "SELECT rowid AS rid, aggregate_id AS sid, type, data FROM event WHERE rowid > :cursor ORDER BY rowid LIMIT 2000"
"""New event rows of every session (while this session's id is not known yet)."""
SESSION_EVENTS_SQL = (
    "SELECT rowid AS rid, aggregate_id AS sid, type, data FROM event "
    "WHERE rowid > :cursor AND aggregate_id = :sid ORDER BY rowid LIMIT 2000"
)
"""New event rows of one session."""
LAST_ROW_SQL = "SELECT max(rowid) AS rid FROM event"
SESSION_EXISTS_SQL = "SELECT id AS rid FROM session WHERE id = :sid"

ABORTED = "MessageAbortedError"
REJECTED = "rejected permission"


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """opencode's data folder: `$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode`."""
    env = env if env is not None else os.environ
    xdg = env.get("XDG_DATA_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "opencode"
    home = env.get("HOME") or os.path.expanduser("~")
    return Path(home) / ".local" / "share" / "opencode"


def db_path(env: Mapping[str, str] | None = None) -> Path | None:
    """The database opencode opens: `$OPENCODE_DB` (absolute, or relative to the data folder), else
    `opencode.db` in the data folder; None for an in-memory database (nothing to follow)."""
    env = env if env is not None else os.environ
    base = data_dir(env)
    custom = env.get("OPENCODE_DB", "")
    if custom == ":memory:":
        return None
    if custom:
        return Path(custom) if os.path.isabs(custom) else base / custom
    return base / "opencode.db"


@dataclass
class StoreEvent:
    """One turn event read from the store (`kind`: prompt, tool_use, tool_result, complete, interrupted, error)."""

    kind: str
    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)


def row_payload(row: Mapping[str, Any]) -> dict[str, Any] | None:
    """An event row's JSON `data`, or None for a row that is not a JSON object."""
    try:
        obj = json.loads(row.get("data") or "")
    except (TypeError, ValueError):
        return None
    return obj if isinstance(obj, dict) else None


class SessionTurns:
    """Event rows of one session -> turn events (`feed(rows) -> events`). Pure: no I/O."""

    def __init__(self) -> None:
        self.roles: dict[str, str] = {}
        self.parts: dict[str, dict[str, Any]] = {}  # part id -> part (the latest update)
        self.prompted: set[str] = set()
        self.tools_started: set[str] = set()
        self.tools_done: set[str] = set()
        self.ended: set[str] = set()
        self.usage = UsageTally()

    def feed(self, rows: Iterable[Mapping[str, Any]]) -> list[StoreEvent]:
        out: list[StoreEvent] = []
        for row in rows:
            payload = row_payload(row)
            if payload is None:
                continue
            kind = str(row.get("type") or "")
            if kind.startswith("message.updated"):
                out += self._message(payload.get("info") or {})
            elif kind.startswith("message.part.updated"):
                out += self._part(payload.get("part") or {})
        return out

    def message_text(self, message_id: str) -> str:
        """The message's text parts, in part order (ids sort by creation), joined."""
        texts = [
            p.get("text") or ""
            for pid, p in sorted(self.parts.items())
            if p.get("messageID") == message_id and p.get("type") == "text" and not p.get("synthetic")
        ]
        return "".join(t for t in texts if t)

    def _message(self, info: Mapping[str, Any]) -> list[StoreEvent]:
        mid, role = str(info.get("id") or ""), str(info.get("role") or "")
        if not mid:
            return []
        self.roles[mid] = role
        if role != "assistant" or mid in self.ended:
            return []
        completed = (info.get("time") or {}).get("completed")
        if not completed:
            return []
        self.ended.add(mid)
        text = self.message_text(mid)
        error = info.get("error")
        if isinstance(error, dict):
            name = str(error.get("name") or "")
            if name == ABORTED:
                return [StoreEvent("interrupted", text, {"message_id": mid})]
            message = str((error.get("data") or {}).get("message") or name or "opencode reported an error")
            return [StoreEvent("error", message, {"message_id": mid, "name": name})]
        if info.get("finish") == "tool-calls" and not self._rejected(mid):
            return []  # the loop goes on with another step
        return [StoreEvent("complete", text, {"message_id": mid, "usage": self.usage.total})]

    def _rejected(self, message_id: str) -> bool:
        """A tool call of this step was rejected at its permission prompt: opencode stops the loop there."""
        for p in self.parts.values():
            if p.get("messageID") == message_id and p.get("type") == "tool":
                state = p.get("state") or {}
                if state.get("status") == "error" and REJECTED in str(state.get("error") or ""):
                    return True
        return False

    def _part(self, part: Mapping[str, Any]) -> list[StoreEvent]:
        pid, mid = str(part.get("id") or ""), str(part.get("messageID") or "")
        if not pid:
            return []
        self.parts[pid] = dict(part)
        ptype = part.get("type")
        role = self.roles.get(mid)
        if role == "user":
            if ptype == "text" and not part.get("synthetic") and mid not in self.prompted:
                self.prompted.add(mid)
                self.usage.reset()
                return [StoreEvent("prompt", str(part.get("text") or ""), {"message_id": mid})]
            return []
        if ptype == "step-finish":
            t = part.get("tokens") or {}
            cache = t.get("cache") or {}
            self.usage.put(
                pid, tokens(t.get("input"), t.get("output"), cache.get("read"), cache.get("write"))
            )
            return []
        if ptype != "tool":
            return []
        call = str(part.get("callID") or pid)
        state = part.get("state") or {}
        status = state.get("status")
        out: list[StoreEvent] = []
        if status in ("running", "completed", "error") and call not in self.tools_started:
            self.tools_started.add(call)
            out.append(
                StoreEvent("tool_use", str(part.get("tool") or ""), {"id": call, "input": state.get("input")})
            )
        if status in ("completed", "error") and call not in self.tools_done:
            self.tools_done.add(call)
            is_error = status == "error"
            result = str(state.get("error") if is_error else state.get("output") or "")
            out.append(StoreEvent("tool_result", result, {"id": call, "is_error": is_error}))
        return out


@dataclass
class Candidate:
    """A session another opencode may own: what its rows said so far (for finding ours)."""

    sid: str
    directory: str | None = None
    user_ids: set[str] = field(default_factory=set)
    first_prompt: str | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)

    def note(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        payload = row_payload(row) or {}
        kind = str(row.get("type") or "")
        if kind.startswith("session.created"):
            self.directory = str((payload.get("info") or {}).get("directory") or "") or None
        elif kind.startswith("message.updated"):
            info = payload.get("info") or {}
            if info.get("role") == "user" and info.get("id"):
                self.user_ids.add(str(info["id"]))
        elif kind.startswith("message.part.updated") and self.first_prompt is None:
            part = payload.get("part") or {}
            if (
                part.get("messageID") in self.user_ids
                and part.get("type") == "text"
                and not part.get("synthetic")
            ):
                self.first_prompt = str(part.get("text") or "")
