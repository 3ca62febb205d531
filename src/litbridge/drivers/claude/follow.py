"""Following Claude Code's JSONL transcript live, on the shared record pipeline (`drivers/records`).

What is Claude's here is finding the file: pinned by `--session-id`, found by time for `--continue`, followed
across a `/clear` roll (a new file in the same folder). Reading, watching and polling are `RecordFollower`'s;
the events come from the tracker the driver's picked `Record` plug-in makes (2.1: `transcript.TurnTracker`).
Knows no screen.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from litbridge.drivers.claude.transcript import TranscriptTailer, TurnEvent, TurnTracker
from litbridge.drivers.records import RecordFollower
from litbridge.drivers.records.jsonl import stat_signature
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
        self._folder_stamp = stat_signature(directory)

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
        """Our own file, or another new file (a `/clear` roll: its writes too, for a while, since its first line
        may come a moment after it appears); other sessions' writes in a shared folder are not, nor those to a
        new file already seen to be another conversation (`TranscriptTailer.ruled_out`)."""
        own = f"{self.tailer.session_id}.jsonl"
        if self.tailer.session_id is None or name == own:
            return True
        now = self.host.loop.time()
        if mask & (IN_CREATE | IN_MOVED_TO):
            self._new_file_until = now + 5.0
            return True
        tailer = self.tailer
        return now < self._new_file_until and name not in tailer.ruled_out and name not in tailer._snapshot

    def searching(self) -> bool:
        """No file yet (`--continue`), or a new file appeared lately: looked at on a pace until it is known."""
        return self.tailer.session_id is None or self.host.loop.time() < self._new_file_until

    def stamped(self, stamp: Hashable | None, fresh: bool = False) -> Hashable | None:
        """The transcript's stamp and, without a live folder watch, its folder's (a new file in it, such as a
        `/clear` roll, changes the folder's mtime): a safety-net visit reads, and so looks for a roll, when either
        moved. A read takes the folder stamp `locate()` compared just before it, not a stat after the poll: a roll
        that appears in between still differs from it. A live watch sees the new file itself (`accept`), so a
        read stats the transcript only."""
        watch = self.watch
        if watch is not None and watch.ready:
            return stamp, None
        return stamp, (stat_signature(self.tailer.directory) if fresh else self._folder_stamp)

    def _new_files(self) -> bool:
        """Without a live folder watch: whether the folder's mtime moved and a file other than ours is new since
        the pin. A stat per visit; the folder is listed only when it changed."""
        stamp = stat_signature(self.tailer.directory)
        if stamp == self._folder_stamp:
            return False
        self._folder_stamp = stamp
        own = f"{self.tailer.session_id}.jsonl"
        return bool(self.tailer._list() - self.tailer._snapshot - {own})

    def locate(self) -> bool:
        tailer = self.tailer
        now = self.host.loop.time()
        watch = self.watch
        if tailer.session_id is None:
            found = tailer.newest_since(self._spawn_wall - 1.0)
            if found:
                tailer.pin(found, from_start=not self.resumed)
                self._folder_stamp = stat_signature(tailer.directory)
            return True
        if (watch is None or not watch.ready) and self._new_files():
            self._new_file_until = now + 5.0
        if now < self._new_file_until and now - self._last_clear_check >= 0.5:
            # a roll is only looked for while a new file is about (a watch event, or the folder's mtime moved)
            self._last_clear_check = now
            rolled = tailer.find_clear_roll(self.cwd, now)
            if rolled and rolled != tailer.session_id:
                self.host.log.info("claude: /clear rolled the transcript to %s", rolled)
                tailer.pin(rolled, from_start=True)
                self._new_file_until = 0.0
        return True
