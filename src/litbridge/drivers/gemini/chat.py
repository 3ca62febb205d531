"""Gemini CLI's chat JSONL: where it is, how to read it incrementally, and what its lines mean for a turn.

The file (`~/.gemini/tmp/<project>/chats/session-<date>T<HH-MM>-<id8>.jsonl`, reference §8) is an append log, not
a list of messages: records carry an `id` and are re-appended whole when they change (a `gemini` record gains its
`toolCalls`, a tool call its result), and `{"$set": {...}}` lines patch the session object (`lastUpdated`, or the
whole API-visible `messages` array after a cancellation). `ChatLog` replays it; `ChatTurns` turns the replayed
records into turn events. No turn-end marker exists: a turn is over when its last record is a `gemini` answer with
no pending tool call *and* the CLI is idle, which only the driver (screen, title) can tell.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from litbridge.drivers.records import JsonlFile, UsageTally
from litbridge.drivers.records.usage import tokens as usage_tokens

log = logging.getLogger(__name__)

CANCELLED = "Request cancelled."
SESSION_CONTEXT = "<session_context>"
_HEX8 = re.compile(r"[0-9a-fA-F]{8}")


def gemini_home(env: Mapping[str, str] | None = None) -> Path:
    """The CLI's `~/.gemini` (`GEMINI_CLI_HOME` relocates the home it lives in)."""
    env = env if env is not None else os.environ
    base = env.get("GEMINI_CLI_HOME") or env.get("HOME") or os.path.expanduser("~")
    return Path(base) / ".gemini"


def project_slug(cwd: str, home: Path) -> str:
    """The project folder name under `~/.gemini/tmp/`: `projects.json` when it maps `cwd`, else the CLI's rule
    for a new project (the cwd basename, lower-cased, non-alphanumerics -> `-`)."""
    try:
        projects = json.loads((home / "projects.json").read_text(encoding="utf-8")).get("projects") or {}
    except (OSError, ValueError, AttributeError):
        projects = {}
    slug = projects.get(os.path.abspath(cwd))
    if isinstance(slug, str) and slug:
        return slug
    base = os.path.basename(os.path.abspath(cwd)).lower()
    return "".join(c if c.isalnum() else "-" for c in base).strip("-") or "project"


def chat_id8(session_id: str) -> str | None:
    """What names a session's chat file (`session-…-<id8>.jsonl`): the first 8 characters of its id (a UUID), or
    None when they are not hex digits: such an id (a client's resume token) names no file, so no glob widens
    and nothing but `tmp/<project>/chats/session-*-<hex8>.jsonl` is ever read."""
    id8 = session_id[:8]
    return id8 if _HEX8.fullmatch(id8) else None


def chat_file_matches(name: str, session_id: str) -> bool:
    """`session-…-<id8>.jsonl` is this session's chat file."""
    id8 = chat_id8(session_id)
    return id8 is not None and name.startswith("session-") and name.endswith(f"-{id8}.jsonl")


def find_chat_file(home: Path, session_id: str, slug: str | None = None) -> Path | None:
    """This session's chat file: in the project's folder when known, else in any project folder (newest)."""
    id8 = chat_id8(session_id)
    if id8 is None:
        return None
    pattern = f"session-*-{id8}.jsonl"
    dirs = [home / "tmp" / slug / "chats"] if slug else []
    for d in dirs:
        hits = sorted(d.glob(pattern)) if d.is_dir() else []
        if hits:
            return hits[-1]
    hits = list((home / "tmp").glob(f"*/chats/{pattern}"))
    if not hits:
        return None
    return max(hits, key=lambda p: p.stat().st_mtime if p.exists() else 0.0)


class ChatTailer(JsonlFile):
    """Reads new complete lines of one chat file as parsed JSON (`records.JsonlFile`).

    `from_start=False` skips what the file already holds when it is pinned (a resumed session's history).
    """


def content_text(content: Any) -> str:
    """A record's `content` as text: a string as is; a parts list -> its text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return ""


def prompt_text(record: Mapping[str, Any]) -> str | None:
    """A `user` record typed by the user (not the `<session_context>` preamble nor a function response)."""
    if record.get("type") != "user":
        return None
    content = record.get("content")
    if isinstance(content, list) and any(isinstance(p, dict) and "functionResponse" in p for p in content):
        return None
    text = content_text(content)
    if text.lstrip().startswith(SESSION_CONTEXT):
        return None
    return text


class ChatLog:
    """The replayed file: the session object (header + `$set` patches) and records by id (last write wins)."""

    def __init__(self) -> None:
        self.session: dict[str, Any] = {}
        self.records: dict[str, dict[str, Any]] = {}
        self.order: list[str] = []

    def apply(self, line: Mapping[str, Any]) -> tuple[str, dict[str, Any] | None, bool]:
        """-> (kind, record, is_update): kind `header`, `set`, `record` (is_update when the id was seen)."""
        if "$set" in line and isinstance(line["$set"], dict):
            self.session.update(line["$set"])
            return "set", None, False
        rid = line.get("id")
        if isinstance(rid, str) and "type" in line:
            update = rid in self.records
            self.records[rid] = dict(line)
            if not update:
                self.order.append(rid)
            return "record", self.records[rid], update
        if "sessionId" in line:
            self.session.update(line)
            return "header", None, False
        return "other", None, False

    def messages(self) -> list[dict[str, Any]]:
        """Records in first-append order, each at its latest version."""
        return [self.records[i] for i in self.order]


@dataclass
class ChatEvent:
    """kind = prompt, text, tool_use, tool_result, answer, interrupted, error. `answer` is a candidate turn end:
    the driver completes the turn on it once the CLI is idle (a later record of the same turn withdraws it)."""

    kind: str
    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)


def _usage(tokens: Any) -> dict[str, int] | None:
    if not isinstance(tokens, dict):
        return None
    return usage_tokens(tokens.get("input"), tokens.get("output"), tokens.get("cached"))


def _tool_output(call: Mapping[str, Any]) -> str:
    for r in call.get("result") or []:
        resp = (r.get("functionResponse") or {}).get("response") if isinstance(r, dict) else None
        if isinstance(resp, dict):
            for key in ("output", "error"):
                if isinstance(resp.get(key), str):
                    return resp[key]
            return json.dumps(resp)
    display = call.get("resultDisplay")
    return display if isinstance(display, str) else ""


class ChatTurns:
    """Replays chat lines into turn events; one prompt opens a turn, `finish()` (driver) or a terminal record
    closes it. Records outside an open turn (history re-appended after a cancellation) produce nothing."""

    def __init__(self) -> None:
        self.chat = ChatLog()
        self.open = False
        self.prompt: str | None = None
        self.answers: dict[str, str] = {}  # gemini record id -> text, this turn, in first-append order
        self.tally = UsageTally()  # per `gemini` record id (re-appended whole as it changes)
        self.tools_seen: set[str] = set()
        self.results_seen: set[str] = set()
        self.pending: ChatEvent | None = None  # the `answer` candidate, while it is the turn's last record
        self.last_error: str | None = None
        self.prompts: set[str] = set()  # every prompt seen (a history rewrite re-appends them)
        self.rewriting = False  # inside the history Gemini re-appends after a cancelled tool call

    @property
    def content(self) -> str:
        return "\n\n".join(t for t in self.answers.values() if t)

    @property
    def usage(self) -> dict[str, int] | None:
        return self.tally.total

    def finish(self) -> None:
        """The driver ended the turn (complete on an idle CLI, or its own deadline/interrupt)."""
        self.open = False
        self.pending = None

    def feed(self, lines: Iterable[Mapping[str, Any]]) -> list[ChatEvent]:
        out: list[ChatEvent] = []
        for line in lines:
            kind, rec, _update = self.chat.apply(line)
            if kind == "set" and "messages" in line["$set"]:
                self.rewriting = False  # the rewrite ends with the whole `messages` array
            elif kind == "record" and rec is not None:
                out.extend(self._record(rec))
        return out

    def _record(self, rec: dict[str, Any]) -> list[ChatEvent]:
        typ = rec.get("type")
        if typ == "user" and content_text(rec.get("content")).lstrip().startswith(SESSION_CONTEXT):
            # after a cancelled tool call Gemini re-appends the conversation so far, preamble first, every
            # earlier prompt and answer as a new record: history, not a turn
            self.rewriting = True
            return []
        prompt = prompt_text(rec)
        if prompt is not None and self.rewriting and prompt in self.prompts:
            return []
        if self.rewriting and typ == "gemini":
            return []
        if prompt is not None:
            self.rewriting = False
            self.prompts.add(prompt)
            self.open, self.prompt = True, prompt
            self.answers, self.tally = {}, UsageTally()
            self.tools_seen, self.results_seen = set(), set()
            self.pending, self.last_error = None, None
            return [ChatEvent("prompt", prompt, {"id": rec.get("id")})]
        if not self.open:
            return []
        out: list[ChatEvent] = []
        self.pending = None
        if typ == "gemini":
            rid = str(rec.get("id"))
            text = content_text(rec.get("content"))
            self.answers[rid] = text
            usage = _usage(rec.get("tokens"))
            if usage is not None:
                self.tally.put(rid, usage)
            if text:
                out.append(ChatEvent("text", self.content, {"id": rid}))
            calls = [c for c in rec.get("toolCalls") or [] if isinstance(c, dict)]
            for call in calls:
                cid = str(call.get("id"))
                if cid not in self.tools_seen:
                    self.tools_seen.add(cid)
                    out.append(
                        ChatEvent(
                            "tool_use", str(call.get("name") or ""), {"id": cid, "input": call.get("args")}
                        )
                    )
                status = call.get("status")
                if status in ("success", "error", "cancelled") and cid not in self.results_seen:
                    self.results_seen.add(cid)
                    out.append(
                        ChatEvent(
                            "tool_result", _tool_output(call), {"id": cid, "is_error": status != "success"}
                        )
                    )
            if not calls:
                self.pending = ChatEvent("answer", self.content, {"usage": self.usage, "id": rid})
                out.append(self.pending)
        elif typ == "info" and content_text(rec.get("content")) == CANCELLED:
            self.open = False
            out.append(ChatEvent("interrupted", self.content))
        elif typ == "error":
            self.open = False
            self.last_error = content_text(rec.get("content"))
            out.append(ChatEvent("error", self.last_error))
        return out
