"""Following this session's Pi session file on the shared record pipeline (`drivers/records`).

The file's path is known at launch (`--session <path>`), before Pi creates it with its first assistant message;
the folder watch sees it appear. A resumed session's file is read from its current end (its history is not this
session's turns). The events come from the tracker the driver's picked `Record` plug-in makes (0.73:
`session.SessionTurns`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from litbridge.drivers.pi.session import PiEvent, SessionTurns
from litbridge.drivers.records import JsonlFile, RecordFollower


class SessionFollower(RecordFollower[SessionTurns]):
    """`tracker` is the picked `Record` plug-in's (`driver.record.tracker()`)."""

    def __init__(
        self,
        host: Any,
        tracker: SessionTurns,
        on_events: Callable[[list[PiEvent]], None],
        busy: Callable[[], bool] | None = None,
    ) -> None:
        self.file = JsonlFile()
        super().__init__(host, self.file, tracker, on_events, busy=busy, label="pi: session")

    @property
    def path(self) -> Path | None:
        return self.file.path

    def follow(self, path: Path, *, from_start: bool) -> None:
        """Follow `path` (from its start, or from its end for a resumed conversation) and watch its folder."""
        self.file.pin(path, from_start=from_start)
        self.watch_folder(path.parent)
        self.start(self.interval())

    def accept(self, mask: int, name: str) -> bool:
        return self.file.path is None or name == self.file.path.name

    def locate(self) -> bool:
        return self.file.path is not None
