"""Qwen Code's chat JSONL: where it is and what its lines mean for a turn.

Unlike its Gemini CLI ancestor's chat log, Qwen Code 0.24 appends one immutable entry per line to
`~/.qwen/projects/<sanitized cwd>/chats/<session id>.jsonl` (`QWEN_HOME` relocates `~/.qwen`), each with `uuid`,
`parentUuid`, `sessionId` and a `type`:

- `user` with `provenance: "real_user"`: a prompt (`message.parts[].text`);
- `tool_result`: a tool's `functionResponse` part and `toolCallResult.status`;
- `assistant`: one model message, written whole when it ends (or when it is cancelled, with the partial text):
  `text` parts (`thought: true` ones are reasoning) and `functionCall` parts, `usageMetadata`;
- `system`: `file_history_snapshot` (its `promptId` names the turn's API requests), `ui_telemetry` (API
  responses and errors of the turn *and* of background work: memory extraction, suggestions), others.

A denied tool call is a `tool_result` with status `cancelled`, after which the CLI stops the turn. There is no
turn-end entry and no entry for an Esc: like Gemini, a turn is over when its last entry is an
answer with no pending tool call and the CLI is idle (the driver decides with the screen); an API error is an
`api_error` telemetry entry for the turn's own `prompt_id`, final once the CLI is idle again (it retries 5xx
silently, logging each try).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from litbridge.drivers.gemini.chat import ChatEvent
from litbridge.drivers.records import UsageTally
from litbridge.drivers.records.usage import tokens as usage_tokens

__all__ = ["ChatEvent", "QwenChatTurns", "chats_dir", "find_chat_file", "project_id", "qwen_home"]

_UUIDISH = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]{0,127}")


def qwen_home(env: Mapping[str, str] | None = None) -> Path:
    """The CLI's `~/.qwen` (`QWEN_HOME` names it directly)."""
    env = env if env is not None else os.environ
    if env.get("QWEN_HOME"):
        return Path(env["QWEN_HOME"])
    return Path(env.get("HOME") or os.path.expanduser("~")) / ".qwen"


def project_id(cwd: str) -> str:
    """The project folder name under `projects/`: the absolute cwd with every non-alphanumeric as `-`."""
    return re.sub(r"[^a-zA-Z0-9]", "-", os.path.abspath(cwd))


def chats_dir(home: Path, cwd: str) -> Path:
    return home / "projects" / project_id(cwd) / "chats"


def find_chat_file(home: Path, session_id: str, cwd: str | None = None) -> Path | None:
    """`<session id>.jsonl` in the project's chats folder, else in any project's (the newest); None for an id
    that cannot name a file (no glob widens on a client's token)."""
    if not _UUIDISH.fullmatch(session_id):
        return None
    if cwd is not None:
        path = chats_dir(home, cwd) / f"{session_id}.jsonl"
        if path.exists():
            return path
    hits = list((home / "projects").glob(f"*/chats/{session_id}.jsonl"))
    if not hits:
        return None
    return max(hits, key=lambda p: p.stat().st_mtime if p.exists() else 0.0)


def _parts(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    message = entry.get("message")
    parts = message.get("parts") if isinstance(message, dict) else None
    return [p for p in parts or [] if isinstance(p, dict)]


def _text(parts: list[dict[str, Any]]) -> str:
    return "".join(p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought"))


def _tool_output(response: Mapping[str, Any]) -> tuple[str, bool]:
    body = response.get("response")
    if isinstance(body, dict):
        for key, is_error in (("output", False), ("error", True)):
            if isinstance(body.get(key), str):
                return body[key], is_error
        return json.dumps(body, ensure_ascii=False), False
    return (body if isinstance(body, str) else ""), False


class QwenChatTurns:
    """Chat entries -> turn events (`ChatEvent`), with the interface the Gemini driver's follower and turn end
    use: `pending` (the `answer` candidate while it is the turn's last word), `finish()`, `content`, `usage`."""

    def __init__(self) -> None:
        self.open = False
        self.prompt: str | None = None
        self.prompt_id: str | None = None
        self.answers: list[str] = []
        self.tally = UsageTally()
        self.calls: dict[str, str] = {}  # functionCall id -> name, this turn
        self.pending: ChatEvent | None = None
        self.error: ChatEvent | None = None  # the turn's last API error, until something else follows it
        self.cancelled = False  # the last entry is a tool call the user denied: the CLI stops the turn there
        self.last_error: str | None = None

    @property
    def content(self) -> str:
        return "\n\n".join(t for t in self.answers if t)

    @property
    def usage(self) -> dict[str, int] | None:
        return self.tally.total

    def finish(self) -> None:
        """The driver ended the turn."""
        self.open = False
        self.pending = None
        self.error = None
        self.cancelled = False

    def feed(self, lines: Iterable[Mapping[str, Any]]) -> list[ChatEvent]:
        out: list[ChatEvent] = []
        for line in lines:
            if isinstance(line, Mapping):
                out.extend(self._entry(line))
        return out

    def _entry(self, entry: Mapping[str, Any]) -> list[ChatEvent]:
        typ = entry.get("type")
        parts = _parts(entry)
        responses = [p["functionResponse"] for p in parts if isinstance(p.get("functionResponse"), dict)]
        if typ == "tool_result" or (typ == "user" and responses):
            result = entry.get("toolCallResult")
            status = result.get("status") if isinstance(result, dict) else None
            return self._results(responses, status)
        if typ == "user":
            if entry.get("provenance", "real_user") != "real_user":
                return []
            text = _text(parts)
            self.open, self.prompt, self.prompt_id = True, text, None
            self.answers, self.tally, self.calls = [], UsageTally(), {}
            self.pending = self.error = None
            self.last_error, self.cancelled = None, False
            return [ChatEvent("prompt", text, {"id": entry.get("uuid")})]
        if not self.open:
            return []
        if typ == "system":
            return self._system(entry)
        if typ != "assistant":
            return []
        self.pending = self.error = None
        self.cancelled = False
        out: list[ChatEvent] = []
        text = _text(parts)
        rid = str(entry.get("uuid"))
        meta = entry.get("usageMetadata")
        if isinstance(meta, dict):
            self.tally.put(
                rid,
                usage_tokens(
                    meta.get("promptTokenCount"),
                    meta.get("candidatesTokenCount"),
                    meta.get("cachedContentTokenCount"),
                ),
            )
        if text:
            self.answers.append(text)
            out.append(ChatEvent("text", self.content, {"id": rid}))
        calls = [p["functionCall"] for p in parts if isinstance(p.get("functionCall"), dict)]
        for call in calls:
            cid = str(call.get("id") or f"{rid}:{len(self.calls)}")
            self.calls[cid] = str(call.get("name") or "")
            out.append(ChatEvent("tool_use", self.calls[cid], {"id": cid, "input": call.get("args")}))
        if not calls:
            self.pending = ChatEvent("answer", self.content, {"usage": self.usage, "id": rid})
            out.append(self.pending)
        return out

    def _results(self, responses: list[dict[str, Any]], status: Any = None) -> list[ChatEvent]:
        if not self.open:
            return []
        self.pending = self.error = None
        self.cancelled = status == "cancelled"
        out = []
        for resp in responses:
            output, is_error = _tool_output(resp)
            is_error = is_error or (status is not None and status != "success")
            cid = str(resp.get("id") or "")
            out.append(ChatEvent("tool_result", output, {"id": cid, "is_error": is_error}))
        return out

    def _system(self, entry: Mapping[str, Any]) -> list[ChatEvent]:
        payload = entry.get("systemPayload")
        payload = payload if isinstance(payload, dict) else {}
        sub = entry.get("subtype")
        if sub == "file_history_snapshot" and self.prompt_id is None:
            snaps = payload.get("snapshots")
            if isinstance(snaps, list) and snaps and isinstance(snaps[-1], dict):
                pid = snaps[-1].get("promptId")
                self.prompt_id = pid if isinstance(pid, str) else None
        elif sub == "ui_telemetry":
            ev = payload.get("uiEvent")
            if (
                isinstance(ev, dict)
                and ev.get("event.name") == "qwen-code.api_error"
                and self.prompt_id is not None
                and ev.get("prompt_id") == self.prompt_id
            ):
                message = str(ev.get("error_message") or ev.get("error") or "API error")
                code = ev.get("status_code")
                self.last_error = message
                self.error = ChatEvent("api_error", message, {"status": code})
                self.pending = None
        return []
