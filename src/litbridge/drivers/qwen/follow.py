"""Following this session's Qwen chat file: the Gemini follower (`gemini/follow.ChatFollower`) with Qwen's place
for it (`projects/<sanitized cwd>/chats/<session id>.jsonl`) and Qwen's parser (`chats.QwenChatTurns`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from litbridge.drivers.gemini.follow import ChatFollower
from litbridge.drivers.qwen.chats import ChatTailer, QwenChatTurns, chats_dir, find_chat_file


class QwenChatFollower(ChatFollower):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tailer = self.source = ChatTailer()  # type: ignore[assignment]
        self.turns = self.parser = QwenChatTurns()  # type: ignore[assignment]
        self.label = "qwen: chat"

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
        # what the file already holds (a resumed conversation) is replayed silently
        self.turns.feed(self.tailer.poll())
        self.turns.finish()
        self.host.log.info("qwen: chat file %s", path)
        return True
