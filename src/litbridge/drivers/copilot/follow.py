"""Following this session's `events.jsonl` live, on the shared record pipeline (`drivers/records`).

What is Copilot's here is only where the record is: `--session-id` (or `--resume=<id>`) names its folder before
it exists, so nothing is searched for. A resumed session's history is skipped (read from the file's end).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from litbridge.drivers.records import JsonlFile, RecordFollower

RECORD_NAME = "events.jsonl"


class EventsFollower(RecordFollower):
    def __init__(
        self,
        host: Any,
        path: Path,
        resumed: bool,
        parser: Any,
        on_events: Callable[[list[Any]], None],
        busy: Callable[[], bool] | None = None,
    ) -> None:
        self.reader = JsonlFile(path, from_start=not resumed)
        self.tracker = parser
        super().__init__(host, self.reader, parser, on_events, busy=busy, label="copilot: events")

    @property
    def path(self) -> Path | None:
        return self.reader.path

    def start(self, delay: float = 0.0) -> None:
        if self.reader.path is not None:
            self.watch_folder(self.reader.path.parent)
        super().start(delay)

    def accept(self, mask: int, name: str) -> bool:
        return name == RECORD_NAME

    def searching(self) -> bool:
        """The session's folder is made at the first prompt: until the watch sits on it, poll at the busy pace."""
        return self.watch is None or not self.watch.ready
