"""Following this session's Qwen chat file: the Gemini follower (`gemini/follow.ChatFollower`) with Qwen's place
for it (`projects/<sanitized cwd>/chats/<session id>.jsonl`); the tracker is the picked `Record` plug-in's
(`versions.Record.tracker()`: `chats.QwenChatTurns`). Unlike Gemini's, the file does not exist before the first
prompt: only a file there at the start is history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from litbridge.drivers.gemini.follow import ChatFollower
from litbridge.drivers.qwen.chats import QwenChatTurns, chats_dir, find_chat_file


class QwenChatFollower(ChatFollower):
    """Same arguments as `ChatFollower`; `tracker` is a `QwenChatTurns`."""

    tracker: QwenChatTurns  # type: ignore[assignment]  # the Qwen `Record` plug-in's tracker

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # its tailer reads Qwen's JSONL as well (`records.JsonlFile`)
        self.label = "qwen: chat"
        self._at_start = False

    def start(self, delay: float | None = None) -> None:
        self._at_start = True  # a file found now is a resumed conversation's history
        try:
            super().start(delay)
        finally:
            self._at_start = False

    def chat_dir(self) -> Path:
        return chats_dir(self.home, self.cwd)

    def accept(self, mask: int, name: str) -> bool:
        sid = self.session()[0]
        return sid is None or name == f"{sid}.jsonl"

    def locate(self) -> bool:
        if self.tailer.path is not None:
            return True
        sid, hint = self.session()
        if sid is None:
            return False
        path = hint if hint is not None and hint.exists() else find_chat_file(self.home, sid, self.cwd)
        if path is None:
            return False
        self.tailer.pin(path, from_start=True)
        if self._at_start:
            # what the file already holds when the session starts (a resumed conversation) is replayed silently;
            # a file that appears later (Qwen creates it at the first prompt) is read as it comes
            self.fed = True
            self.tracker.feed(self.tailer.poll())
            self.tracker.finish()
        self.host.log.info("qwen: chat file %s", path)
        return True
