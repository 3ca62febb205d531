"""Pi's session JSONL: where it is and what its entries mean for a turn.

Pi 0.73 appends one JSON object per entry to `<agent dir>/sessions/--<cwd with / as ->--/<time>_<id>.jsonl`
(`<agent dir>` is `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`): a `session` header, `model_change` /
`thinking_level_change`, and `message` entries whose `message.role` is `user`, `assistant` or `toolResult`. An
assistant entry is written once the message is finished, with its `stopReason`: `stop` (or `length`) ends the
turn, `toolUse` is followed by one `toolResult` entry per call and the next assistant message, `aborted` is an
interrupt (Esc), `error` an API error (`errorMessage`; Pi may retry it: the driver decides when it is final).
Nothing is written before the first assistant message: the file appears then, holding the first prompt too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from litbridge.drivers.records import UsageTally, tokens

__all__ = ["PiEvent", "SessionTurns", "agent_dir", "find_session", "session_dir"]


@dataclass
class PiEvent:
    kind: str  # prompt, text, tool_use, tool_result, complete, interrupted, error
    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)


def agent_dir(env: Mapping[str, str]) -> Path:
    """Pi's agent folder for an environment (`PI_CODING_AGENT_DIR`, else `$HOME/.pi/agent`)."""
    explicit = env.get("PI_CODING_AGENT_DIR")
    if explicit:
        return Path(os.path.expanduser(explicit))
    return Path(env.get("HOME") or os.path.expanduser("~")) / ".pi" / "agent"


def session_dir(agent: Path, cwd: str) -> Path:
    """The folder Pi files a working directory's sessions in (`--tmp-work--` for /tmp/work)."""
    safe = cwd.lstrip("/\\")
    for ch in "/\\:":
        safe = safe.replace(ch, "-")
    return agent / "sessions" / f"--{safe}--"


def find_session(agent: Path, token: str) -> Path | None:
    """The session file a resume token names: a file `*_<token>.jsonl` under `sessions/`, else one whose header
    id is `token` (a session Pi named itself)."""
    root = agent / "sessions"
    if not token or not root.is_dir() or "/" in token:
        return None
    named = sorted(root.glob(f"*/*_{token}.jsonl"))
    if named:
        return named[0]
    for path in sorted(root.glob("*/*.jsonl")):
        try:
            with open(path, encoding="utf-8") as fh:
                header = json.loads(fh.readline() or "{}")
        except (OSError, ValueError):
            continue
        if isinstance(header, dict) and header.get("type") == "session" and header.get("id") == token:
            return path
    return None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


class SessionTurns:
    """Session entries -> turn events (pure: `feed(entries)` returns the events; usage summed per turn)."""

    def __init__(self) -> None:
        self.usage = UsageTally()

    def feed(self, entries: list[dict[str, Any]]) -> list[PiEvent]:
        out: list[PiEvent] = []
        for entry in entries:
            msg = entry.get("message") if entry.get("type") == "message" else None
            if isinstance(msg, dict):
                out.extend(self._message(str(entry.get("id") or ""), msg))
        return out

    def _message(self, entry_id: str, msg: dict[str, Any]) -> list[PiEvent]:
        role = msg.get("role")
        if role == "user":
            self.usage.reset()
            return [PiEvent("prompt", _text(msg.get("content")))]
        if role == "toolResult":
            data = {"tool_use_id": str(msg.get("toolCallId") or ""), "is_error": bool(msg.get("isError"))}
            return [PiEvent("tool_result", _text(msg.get("content")), data)]
        if role != "assistant":
            return []  # e.g. `bashExecution` (a `!` command typed into Pi): not a model turn
        out: list[PiEvent] = []
        text = _text(msg.get("content"))
        u = msg.get("usage") or {}
        if isinstance(u, dict):
            self.usage.put(
                entry_id, tokens(u.get("input"), u.get("output"), u.get("cacheRead"), u.get("cacheWrite"))
            )
        for part in msg.get("content") or []:
            if isinstance(part, dict) and part.get("type") == "toolCall":
                data = {"tool_use_id": str(part.get("id") or ""), "input": part.get("arguments")}
                out.append(PiEvent("tool_use", str(part.get("name") or ""), data))
        reason = msg.get("stopReason")
        if text:
            out.append(PiEvent("text", text))
        if reason in ("stop", "length"):
            out.append(PiEvent("complete", text, {"usage": self.usage.total}))
        elif reason == "aborted":
            out.append(PiEvent("interrupted", text))
        elif reason == "error":
            out.append(PiEvent("error", str(msg.get("errorMessage") or "API error")))
        return out
