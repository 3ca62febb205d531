"""Following Claude Code's JSONL transcript live: an inotify watch on its folder plus a timer poll.

Finds the file (pinned by `--session-id`, found by time for `--continue`, followed across a `/clear` roll),
reads whole new lines with `TranscriptTailer` and turns them into `TurnEvent`s with `TurnTracker`, handed to
the driver's callback. Knows no screen.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from litbridge.drivers.claude.transcript import TranscriptTailer, TurnEvent, TurnTracker
from litbridge.drivers.dirwatch import IN_CREATE, IN_MOVED_TO, DirWatch

if TYPE_CHECKING:
    from litbridge.drivers.engine import Turn, TurnEngine

POLL_BUSY, POLL_IDLE = 0.05, 0.25
POLL_WATCHED = 0.5  # with an inotify watch the timer poll is only a fallback


class TranscriptFollower:
    def __init__(
        self,
        host: Any,
        directory: Path,
        cwd: str,
        session_id: str | None,
        resumed: bool,
        on_event: Callable[[TurnEvent], None],
    ) -> None:
        self.host = host
        self.resumed = resumed
        self.cwd = cwd
        # A resumed file's history is skipped: reading starts at its end.
        self.tailer = TranscriptTailer(directory, session_id, from_start=False)
        self.tracker = TurnTracker()
        self.on_event = on_event
        self.last_entry_at = 0.0
        self._spawn_wall = time.time()
        self._engine: TurnEngine | None = None
        self._watch: DirWatch | None = None
        self._poll_handle: Any = None
        self._last_clear_check = 0.0
        self._new_file_until = 0.0  # a file appeared recently: look for a `/clear` roll
        self.closed = False

    @property
    def session_id(self) -> str | None:
        return self.tailer.session_id

    def start(self, engine: TurnEngine) -> None:
        self._engine = engine
        if self._watch is None and not self.closed:
            self._watch = DirWatch.start(self.host.loop, self.tailer.directory, self._changed, self._wants)
        self._schedule(0.0)

    def close(self) -> None:
        self.closed = True
        if self._poll_handle is not None:
            self._poll_handle.cancel()
            self._poll_handle = None
        if self._watch is not None:
            self._watch.close()
            self._watch = None

    def quiet_for(self, turn: Turn) -> float:
        """Seconds since the transcript last grew (or since the turn started, if later)."""
        return self.host.loop.time() - max(self.last_entry_at, turn.started)

    def _wants(self, mask: int, name: str) -> bool:
        """Our own file, or a new file (a `/clear` roll); other sessions' writes in a shared folder are not."""
        if self.tailer.session_id is None:
            return True
        if mask & (IN_CREATE | IN_MOVED_TO):
            self._new_file_until = self.host.loop.time() + 5.0  # its first line may come a moment later
            return True
        return name == f"{self.tailer.session_id}.jsonl"

    def _changed(self) -> None:
        if self.closed:
            return
        try:
            self.poll_once()
        except Exception:
            self.host.log.exception("claude: transcript poll")

    def _schedule(self, delay: float | None = None) -> None:
        if self.closed:
            return
        if delay is None:
            eng = self._engine
            if self._watch is not None:
                delay = POLL_WATCHED
            elif eng is not None and (
                eng.turn is not None or (eng.screen is not None and eng.screen.state != "idle")
            ):
                delay = POLL_BUSY
            else:
                delay = POLL_IDLE
        self._poll_handle = self.host.call_later(delay, self._poll)

    def _poll(self) -> None:
        self._poll_handle = None
        if self._watch is not None:
            self._watch.refresh()  # safety net: the folder appeared without the watch seeing it
        try:
            self.poll_once()
        finally:
            self._schedule()

    def poll_once(self) -> None:
        tailer = self.tailer
        now = self.host.loop.time()
        if tailer.session_id is None:
            found = tailer.newest_since(self._spawn_wall - 1.0)
            if found:
                tailer.pin(found, from_start=not self.resumed)
        elif now - self._last_clear_check >= 0.5 and (
            self._watch is None or not self._watch.ready or now < self._new_file_until
        ):
            # with a live folder watch a roll is only looked for when a new file appeared (no globbing)
            self._last_clear_check = now
            rolled = tailer.find_clear_roll(self.cwd)
            if rolled and rolled != tailer.session_id:
                self.host.log.info("claude: /clear rolled the transcript to %s", rolled)
                tailer.pin(rolled, from_start=True)
        entries = tailer.poll()
        if entries:
            self.last_entry_at = now
            for ev in self.tracker.feed(entries):
                self.on_event(ev)
