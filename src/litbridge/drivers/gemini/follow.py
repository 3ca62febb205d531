"""Following this session's Gemini chat file, on the shared record pipeline (`drivers/records`).

What is Gemini's here is finding the file: named by the session id (`session-…-<id8>.jsonl`) in the project's
`chats/` folder (for `--resume`, the file that held the conversation, not the empty one the CLI also starts), and
replaying what it already holds silently. The events come from the tracker the driver's picked `Record` plug-in
makes (0.61: `chat.ChatTurns`); a turn end needs the screen too, so the driver's `after()` runs after every read.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from litbridge.drivers.gemini.chat import (
    ChatEvent,
    ChatTailer,
    ChatTurns,
    chat_file_matches,
    find_chat_file,
    project_slug,
)
from litbridge.drivers.records import RecordFollower


class ChatFollower(RecordFollower[ChatTurns]):
    """`session()` gives the session id (None: not known yet) and the file a resume named (or None); `tracker` is
    the picked `Record` plug-in's (`driver.record.tracker()`)."""

    def __init__(
        self,
        host: Any,
        home: Path,
        cwd: str,
        session: Callable[[], tuple[str | None, Path | None]],
        tracker: ChatTurns,
        on_events: Callable[[list[ChatEvent]], None],
        after: Callable[[], None],
        busy: Callable[[], bool] | None = None,
    ) -> None:
        self.tailer = ChatTailer()
        super().__init__(host, self.tailer, tracker, on_events, busy=busy, label="gemini: chat")
        self.home, self.cwd, self.session, self.after = home, cwd, session, after

    @property
    def path(self) -> Path | None:
        return self.tailer.path

    def chat_dir(self) -> Path:
        return self.home / "tmp" / project_slug(self.cwd, self.home) / "chats"

    def start(self, delay: float | None = None) -> None:
        """Watch the project's chat folder and pin our file; the timer's first look comes after one interval."""
        self.watch_folder(self.chat_dir())
        self.locate()
        super().start(self.interval() if delay is None else delay)

    def accept(self, mask: int, name: str) -> bool:
        sid = self.session()[0]
        return sid is None or chat_file_matches(name, sid)

    def searching(self) -> bool:
        return self.tailer.path is None

    def locate(self) -> bool:
        if self.tailer.path is not None:
            return True
        sid, hint = self.session()
        if sid is None:
            return False
        if hint is not None and hint.exists():
            path: Path | None = hint
        else:
            path = find_chat_file(self.home, sid, project_slug(self.cwd, self.home))
        if path is None:
            return False
        self.tailer.pin(path, from_start=True)
        # what the file already holds (a resumed session's history, the startup preamble) is replayed silently
        self.fed = True
        self.tracker.feed(self.tailer.poll())
        self.tracker.finish()
        self.host.log.info("gemini: chat file %s", path)
        return True

    def read(self) -> list[Any]:
        events = super().read()
        if not self.closed:
            self.after()
        return events
