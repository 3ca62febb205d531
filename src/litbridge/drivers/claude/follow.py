"""Following Claude Code's JSONL transcript live, on the shared record pipeline (`drivers/records`).

What is Claude's here is finding the file: pinned by `--session-id`, found by time for `--continue`, followed
across a `/clear` roll (a new file in the same folder). Reading, watching and polling are `RecordFollower`'s;
the events come from the tracker the driver's picked `Record` plug-in makes (2.1: `transcript.TurnTracker`).
Knows no screen.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from litbridge.drivers.claude.transcript import TranscriptTailer, TurnEvent, TurnTracker
from litbridge.drivers.records import RecordFollower
from litbridge.drivers.records.watch import IN_CREATE, IN_MOVED_TO

if TYPE_CHECKING:
    from litbridge.drivers.engine import TurnEngine


class TranscriptFollower(RecordFollower[TurnTracker]):
    """`tracker`: the picked `Record` plug-in's (`driver.record.tracker()`)."""

    def __init__(
        self,
        host: Any,
        directory: Path,
        cwd: str,
        session_id: str | None,
        resumed: bool,
        tracker: TurnTracker,
        on_events: Callable[[list[TurnEvent]], None],
    ) -> None:
        # A resumed file's history is skipped: reading starts at its end.
        self.tailer = TranscriptTailer(directory, session_id, from_start=False)
        super().__init__(host, self.tailer, tracker, on_events, label="claude: transcript")
        self.resumed = resumed
        self.cwd = cwd
        self._spawn_wall = time.time()
        self._engine: TurnEngine | None = None
        self._last_clear_check = 0.0
        self._new_file_until = 0.0  # a file appeared recently: look for a `/clear` roll

    @property
    def session_id(self) -> str | None:
        return self.tailer.session_id

    def start(self, engine: TurnEngine) -> None:  # type: ignore[override]
        self._engine = engine
        self.busy = lambda: (
            engine.turn is not None or (engine.screen is not None and engine.screen.state != "idle")
        )
        self.watch_folder(self.tailer.directory)
        super().start()

    def accept(self, mask: int, name: str) -> bool:
        """Our own file, or a new file (a `/clear` roll); other sessions' writes in a shared folder are not."""
        if self.tailer.session_id is None:
            return True
        if mask & (IN_CREATE | IN_MOVED_TO):
            self._new_file_until = self.host.loop.time() + 5.0  # its first line may come a moment later
            return True
        return name == f"{self.tailer.session_id}.jsonl"

    def locate(self) -> bool:
        tailer = self.tailer
        now = self.host.loop.time()
        watch = self.watch
        if tailer.session_id is None:
            found = tailer.newest_since(self._spawn_wall - 1.0)
            if found:
                tailer.pin(found, from_start=not self.resumed)
        elif now - self._last_clear_check >= 0.5 and (
            watch is None or not watch.ready or now < self._new_file_until
        ):
            # with a live folder watch a roll is only looked for when a new file appeared (no globbing)
            self._last_clear_check = now
            rolled = tailer.find_clear_roll(self.cwd)
            if rolled and rolled != tailer.session_id:
                self.host.log.info("claude: /clear rolled the transcript to %s", rolled)
                tailer.pin(rolled, from_start=True)
        return True
