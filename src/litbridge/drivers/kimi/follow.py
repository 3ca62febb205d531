"""Following this session's Kimi Code wire log on the shared record pipeline (`drivers/records`).

A new session's folder is not known at launch: Kimi creates it with the first message and appends a line for it to
`session_index.jsonl`. The follower watches Kimi's home until a line names a session that is new since the spawn,
for this working folder, and no other live session's; then it follows that session's `agents/main/wire.jsonl`
from its start. A resumed session's wire log is followed from its current end. The events come from the tracker
the driver's picked `Record` plug-in makes (2.1: `wire.WireTurns`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from litbridge.drivers.kimi.wire import KimiEvent, WireTurns, index_entries, wire_path
from litbridge.drivers.records import JsonlFile, RecordFollower

_claimed: set[str] = set()
"""Sessions followed by a live Kimi session of this daemon: two sessions in one folder never share one."""


class WireFollower(RecordFollower[WireTurns]):
    """`tracker` is the picked `Record` plug-in's (`driver.record.tracker()`)."""

    def __init__(
        self,
        host: Any,
        tracker: WireTurns,
        on_events: Callable[[list[KimiEvent]], None],
        busy: Callable[[], bool] | None = None,
    ) -> None:
        self.file = JsonlFile()
        super().__init__(host, self.file, tracker, on_events, busy=busy, label="kimi: wire")
        self.home: Path | None = None
        self.cwd = ""
        self.known: set[str] = set()
        self.session_id: str | None = None

    @property
    def path(self) -> Path | None:
        return self.file.path

    def begin(self, home: Path, cwd: str, known: set[str], resume_dir: Path | None) -> None:
        """Start following: the resumed session's log from its end, else look for the new session."""
        self.home, self.cwd, self.known = home, os.path.realpath(cwd), set(known)
        if resume_dir is not None:
            self._pin(resume_dir, from_start=False)
        else:
            self.watch_folder(home)
        self.start(self.interval())

    def _pin(self, folder: Path, *, from_start: bool) -> None:
        self.session_id = folder.name
        _claimed.add(folder.name)
        path = wire_path(folder)
        self.file.pin(path, from_start=from_start)
        self.watch_folder(path.parent)
        self.host.log.info("kimi: wire log %s", path)

    def searching(self) -> bool:
        return self.file.path is None

    def accept(self, mask: int, name: str) -> bool:
        if self.file.path is None:
            return name == "session_index.jsonl"
        return name == self.file.path.name

    def locate(self) -> bool:
        if self.file.path is not None:
            return True
        if self.home is None:
            return False
        for entry in index_entries(self.home):
            sid = str(entry["sessionId"])
            if sid in self.known or sid in _claimed:
                continue
            work = entry.get("workDir")
            if work and os.path.realpath(str(work)) != self.cwd:
                continue
            if entry.get("sessionDir"):
                self._pin(Path(entry["sessionDir"]), from_start=True)
                return True
        return False

    def close(self) -> None:
        if self.session_id is not None:
            _claimed.discard(self.session_id)
        super().close()
