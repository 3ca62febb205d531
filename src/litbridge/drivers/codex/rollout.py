"""Codex's rollout JSONL (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`): finding this
session's file, reading it incrementally, and turning its lines into turn events (reference §8).

The file appears at the first prompt, not at startup; `codex resume <id>` appends to the same file. Every line is
`{"timestamp", "ordinal", "type", "payload"}`. Pure parsing here; `follow.py` finds and follows the file.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from litbridge.drivers.records import JsonlFile, UsageTally, tokens

ROLLOUT_RE = re.compile(
    r"^rollout-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$"
)
EXIT_CODE_RE = re.compile(r"Process exited with code (-?\d+)")
ABORTED_RE = re.compile(r"(?:^|\n)aborted by user(?: after [^\n]*)?\s*$")
"""A rejected call's output: its last line is `aborted by user` (a function call) or `aborted by user after 1.8s`
(code mode's `exec`)."""


def codex_home(env: Mapping[str, str] | None = None) -> Path:
    """`$CODEX_HOME`, else `$HOME/.codex`, as the child sees them (the session's env over the daemon's)."""
    env = env or {}
    home = env.get("CODEX_HOME") or os.environ.get("CODEX_HOME")
    if home:
        return Path(home).expanduser()
    base = env.get("HOME") or os.environ.get("HOME") or os.path.expanduser("~")
    return Path(base) / ".codex"


def sessions_dir(env: Mapping[str, str] | None = None) -> Path:
    return codex_home(env) / "sessions"


def thread_id_of(path: str | os.PathLike[str]) -> str | None:
    m = ROLLOUT_RE.match(os.path.basename(path))
    return m.group(1) if m else None


def rollout_files(root: Path) -> list[Path]:
    """Every rollout file under `sessions/YYYY/MM/DD/` (three fixed levels: no recursive walk)."""
    out: list[Path] = []
    try:
        years = [p for p in root.iterdir() if p.is_dir()]
    except OSError:
        return out
    for y in years:
        for m in _subdirs(y):
            for d in _subdirs(m):
                try:
                    out.extend(p for p in d.iterdir() if ROLLOUT_RE.match(p.name))
                except OSError:
                    continue
    return out


def _subdirs(p: Path) -> list[Path]:
    try:
        return [c for c in p.iterdir() if c.is_dir()]
    except OSError:
        return []


def date_dirs(root: Path, since: float, now: float | None = None) -> list[Path]:
    """The `YYYY/MM/DD` folders a file created between `since` and `now` (epoch) can be in: each day of the span,
    by local time and by UTC (the folder follows Codex's clock; both are cheap to look at)."""
    now = time.time() if now is None else now
    days: list[Path] = []
    t = since
    while True:
        for stamp in (time.localtime(t), time.gmtime(t)):
            d = root / f"{stamp.tm_year:04d}" / f"{stamp.tm_mon:02d}" / f"{stamp.tm_mday:02d}"
            if d not in days:
                days.append(d)
        if t >= now:
            return days
        t = min(t + 86400.0, now)


def files_in(dirs: list[Path]) -> list[Path]:
    out: list[Path] = []
    for d in dirs:
        try:
            out.extend(p for p in d.iterdir() if ROLLOUT_RE.match(p.name))
        except OSError:
            continue
    return out


def find_thread(root: Path, thread_id: str) -> Path | None:
    """The rollout file of `thread_id` (any date folder), or None."""
    for p in rollout_files(root):
        if thread_id_of(p) == thread_id:
            return p
    return None


def rollout_head(path: Path, limit: int = 256 * 1024) -> tuple[str | None, str | None]:
    """(session cwd, first user-typed prompt) of a rollout file: its `session_meta` cwd and its first
    `item_completed` UserMessage; None for what is not written yet."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit)
    except OSError:
        return None, None
    cwd: str | None = None
    for line in data.split(b"\n"):
        if cwd is None and b'"session_meta"' in line[:200]:
            try:
                meta = json.loads(line).get("payload") or {}
            except ValueError:
                continue
            cwd = meta.get("cwd") if isinstance(meta.get("cwd"), str) else None
        elif b'"UserMessage"' in line:
            try:
                text = user_message_text(json.loads(line))
            except ValueError:
                continue
            if text is not None:
                return cwd, text
    return cwd, None


def first_user_text(path: Path) -> str | None:
    """The first user-typed prompt of a rollout file, or None yet."""
    return rollout_head(path)[1]


def user_message_text(entry: Mapping[str, Any]) -> str | None:
    p = entry.get("payload") or {}
    if entry.get("type") != "event_msg" or p.get("type") != "item_completed":
        return None
    item = p.get("item") or {}
    if item.get("type") != "UserMessage":
        return None
    return "".join(c.get("text", "") for c in item.get("content") or [] if isinstance(c, dict))


class RolloutReader(JsonlFile):
    """Incremental reader of one rollout file (`records.JsonlFile`: whole lines, truncation and replacement)."""

    def __init__(self, path: Path | None = None, *, from_end: bool = False) -> None:
        super().__init__(path, from_start=not from_end)


@dataclass
class TurnEvent:
    """kind: prompt / text / tool_use / tool_result / complete / error / interrupted."""

    kind: str
    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)


def flatten_output(output: Any) -> str:
    """A tool output as text: a string, or code mode's list of `input_text` parts joined."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "".join(p.get("text", "") for p in output if isinstance(p, dict))
    if output is None:
        return ""
    return json.dumps(output)


def usage_of(u: Mapping[str, Any] | None) -> dict[str, int] | None:
    """Codex token usage -> the protocol's `{input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens}`."""
    if not isinstance(u, Mapping):
        return None
    return tokens(
        u.get("input_tokens"),
        u.get("output_tokens"),
        u.get("cached_input_tokens"),
        u.get("cache_write_input_tokens"),
    )


class TurnTracker:
    """Rollout lines -> turn events. A turn runs from `task_started` to `task_complete` / `turn_aborted`."""

    def __init__(self) -> None:
        self.open = False
        self.turn_id: str | None = None
        self.thread_id: str | None = None
        self.parts: list[str] = []
        self.tally = UsageTally()  # one key: the turn's running total (a later report replaces it)

    @property
    def usage(self) -> dict[str, int] | None:
        return self.tally.total

    @property
    def content(self) -> str:
        """The turn's agent messages so far, joined by blank lines (what `replace` shows before the end)."""
        return "\n\n".join(self.parts)

    def feed(self, entries: Iterable[Mapping[str, Any]]) -> list[TurnEvent]:
        out: list[TurnEvent] = []
        for e in entries:
            out.extend(self._feed_one(e))
        return out

    def _feed_one(self, e: Mapping[str, Any]) -> list[TurnEvent]:
        kind = e.get("type")
        p = e.get("payload")
        if not isinstance(p, Mapping):
            return []
        if kind == "session_meta":
            self.thread_id = p.get("id") or p.get("session_id") or self.thread_id
            return []
        if kind == "response_item":
            return self._response_item(p)
        if kind == "token_usage_record":
            u = usage_of(p.get("turn_token_usage"))
            if u is not None:
                self.tally.put("turn", u)
            return []
        if kind != "event_msg":
            return []
        t = p.get("type")
        if t == "task_started":
            self.open = True
            self.turn_id = p.get("turn_id")
            self.parts = []
            self.tally.reset()
            return []
        if t == "item_completed":
            item = p.get("item") or {}
            if item.get("type") == "UserMessage":
                text = user_message_text(e) or ""
                return [TurnEvent("prompt", text, {"turn_id": p.get("turn_id")})]
            if item.get("type") == "AgentMessage":
                text = "".join(c.get("text", "") for c in item.get("content") or [] if isinstance(c, dict))
                if text:
                    self.parts.append(text)
                    return [TurnEvent("text", self.content)]
            return []
        if t == "token_count" and not self.tally:
            info = p.get("info") or {}
            u = usage_of(info.get("last_token_usage"))
            if u is not None:
                self.tally.put("turn", u)
            return []
        if t == "task_complete":
            self.open = False
            err = p.get("error")
            if err:
                msg = err.get("message") if isinstance(err, Mapping) else str(err)
                return [TurnEvent("error", str(msg or "Codex reported an error"), {"error": err})]
            last = p.get("last_agent_message")
            text = last if isinstance(last, str) else self.content
            return [TurnEvent("complete", text, {"usage": self.usage, "duration_ms": p.get("duration_ms")})]
        if t == "turn_aborted":
            self.open = False
            return [TurnEvent("interrupted", self.content, {"reason": p.get("reason")})]
        return []

    def _response_item(self, p: Mapping[str, Any]) -> list[TurnEvent]:
        t = p.get("type")
        if t == "function_call":
            raw = p.get("arguments")
            try:
                args: Any = json.loads(raw) if isinstance(raw, str) else raw
            except ValueError:
                args = raw
            return [
                TurnEvent(
                    "tool_use", str(p.get("name") or ""), {"tool_use_id": p.get("call_id"), "input": args}
                )
            ]
        if t == "custom_tool_call":
            return [
                TurnEvent(
                    "tool_use",
                    str(p.get("name") or ""),
                    {"tool_use_id": p.get("call_id"), "input": {"input": p.get("input")}},
                )
            ]
        if t == "reasoning":
            text = reasoning_text(p)
            return [TurnEvent("reasoning", text)] if text else []
        if t in ("function_call_output", "custom_tool_call_output"):
            text = flatten_output(p.get("output"))
            m = EXIT_CODE_RE.search(text)
            is_error = bool(m and m.group(1) != "0") or bool(ABORTED_RE.search(text))
            return [TurnEvent("tool_result", text, {"tool_use_id": p.get("call_id"), "is_error": is_error})]
        return []


def reasoning_text(item: Mapping[str, Any]) -> str:
    """A `reasoning` item's readable text: its summary parts (what Codex shows), else its raw `reasoning_text`
    content (models that record it); the encrypted content is never readable."""
    for key, part in (("summary", "summary_text"), ("content", "reasoning_text")):
        parts = item.get(key)
        parts = parts if isinstance(parts, list) else []
        texts = [str(c.get("text") or "") for c in parts if isinstance(c, Mapping) and c.get("type") == part]
        text = "\n\n".join(t for t in texts if t.strip())
        if text:
            return text
    return ""
