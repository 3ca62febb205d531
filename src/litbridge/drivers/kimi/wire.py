"""Kimi Code's `wire.jsonl`: where a session's record is and what its entries mean for a turn.

Kimi Code 2.1 keeps its data in `$KIMI_CODE_HOME` (else `~/.kimi-code`). A session is created with the first
message: `sessions/wd_<folder>_<hash>/session_<uuid>/agents/main/wire.jsonl` (the main agent; subagents have
their own folders), and a line `{"sessionId", "sessionDir", "workDir"}` is appended to `session_index.jsonl`.
The wire file is an append-only event log; what a turn needs of it:

- `turn.prompt` (`input` text parts): the user's prompt;
- `context.append_loop_event` with `event.type` `tool.call` (`toolCallId`, `name`, `args`) and `tool.result`
  (`result.output`, `result.isError`); `interaction.request` / `interaction.resolved` around an approval;
- `agent.message.appended` with an assistant `message`: the exact text of each model step;
- `usage.record` (`inputOther`, `output`, `inputCacheRead`, `inputCacheCreation`) per model call;
- `turn.ended` with `reason` `completed`, `cancelled` (Esc) or `failed` (`error.message`), then
  `prompt.completed` / `prompt.aborted`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from litbridge.drivers.records import UsageTally, tokens

__all__ = ["KimiEvent", "WireTurns", "find_session", "kimi_home", "wire_path"]


@dataclass
class KimiEvent:
    kind: str  # prompt, text, tool_use, tool_result, complete, interrupted, error
    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)


def kimi_home(env: Mapping[str, str]) -> Path:
    """Kimi Code's data folder for an environment (`KIMI_CODE_HOME`, else `$HOME/.kimi-code`)."""
    explicit = env.get("KIMI_CODE_HOME")
    if explicit:
        return Path(os.path.expanduser(explicit))
    return Path(env.get("HOME") or os.path.expanduser("~")) / ".kimi-code"


def wire_path(session_dir: str | Path) -> Path:
    return Path(session_dir) / "agents" / "main" / "wire.jsonl"


def index_entries(home: Path) -> list[dict[str, Any]]:
    """The lines of `session_index.jsonl` (one per session: sessionId, sessionDir, workDir)."""
    try:
        text = (home / "session_index.jsonl").read_text(encoding="utf-8")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and obj.get("sessionId"):
            out.append(obj)
    return out


def find_session(home: Path, session_id: str) -> Path | None:
    """The folder of session `session_id` (from the index, else by name under `sessions/`), if it exists."""
    for entry in index_entries(home):
        if entry.get("sessionId") == session_id and entry.get("sessionDir"):
            folder = Path(entry["sessionDir"])
            if folder.is_dir():
                return folder
    if "/" in session_id or not session_id:
        return None
    found = sorted((home / "sessions").glob(f"wd_*/{session_id}"))
    return found[0] if found else None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


class WireTurns:
    """Wire entries -> turn events (pure: `feed(entries)` returns the events; usage summed per turn)."""

    def __init__(self) -> None:
        self.usage = UsageTally()
        self.answer = ""  # the last assistant message's text in the open turn
        self._calls = 0

    def feed(self, entries: list[dict[str, Any]]) -> list[KimiEvent]:
        out: list[KimiEvent] = []
        for e in entries:
            out.extend(self._entry(e))
        return out

    def _entry(self, e: dict[str, Any]) -> list[KimiEvent]:
        kind = e.get("type")
        if kind == "turn.prompt":
            self.usage.reset()
            self.answer, self._calls = "", 0
            return [KimiEvent("prompt", _text(e.get("input")))]
        if kind == "usage.record" and isinstance(e.get("usage"), dict):
            u = e["usage"]
            self._calls += 1
            self.usage.put(
                self._calls,
                tokens(
                    u.get("inputOther"), u.get("output"), u.get("inputCacheRead"), u.get("inputCacheCreation")
                ),
            )
            return []
        if kind == "context.append_loop_event":
            ev = e.get("event") or {}
            if ev.get("type") == "tool.call":
                data = {"tool_use_id": str(ev.get("toolCallId") or ""), "input": ev.get("args")}
                return [KimiEvent("tool_use", str(ev.get("name") or ""), data)]
            if ev.get("type") == "tool.result":
                result = ev.get("result") or {}
                output = result.get("output")
                text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
                data = {
                    "tool_use_id": str(ev.get("toolCallId") or ""),
                    "is_error": bool(result.get("isError")),
                }
                return [KimiEvent("tool_result", text, data)]
            return []
        if kind == "agent.message.appended":
            msg = (e.get("message") or {}).get("message") or {}
            if msg.get("role") == "assistant":
                self.answer = _text(msg.get("content"))
                return [KimiEvent("text", self.answer)] if self.answer else []
            return []
        if kind == "turn.ended":
            reason = e.get("reason")
            if reason == "completed":
                return [KimiEvent("complete", self.answer, {"usage": self.usage.total})]
            if reason == "cancelled":
                return [KimiEvent("interrupted", self.answer)]
            err = e.get("error") or {}
            message = str(err.get("message") or reason or "turn failed")
            if err.get("code"):
                message = f"[{err['code']}] {message}"
            return [KimiEvent("error", message)]
        return []
