"""The follow loop: a CLI's record read as it changes, parsed, and its events handed on.

`RecordFollower` ties a source (`JsonlFile`, `JsonDocument`, `SqliteRows`: anything with `poll() -> entries`), a
tracker (the CLI's mapping of its entries to turn events, `feed(entries) -> events`: what the driver's picked
`kit.Record` plug-in makes, `record.tracker()`) and a callback (usually a `Dispatch`). It reads when the folder
watch (inotify, `watch.DirWatch`) sees a change there, and on a timer: a slow safety net while a watch is live,
else a poll that is fast while the CLI is busy and slower while it is idle. A CLI's follower subclasses it for
what is its own: `locate()` finds (and re-finds, e.g. after a `/clear` roll) the record.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from litbridge.drivers.records.watch import DirWatch

POLL_BUSY, POLL_IDLE = 0.05, 0.25  # no watch (or still looking for the record): the CLI is busy / idle
POLL_WATCHED = 0.5  # with an inotify watch the timer poll is only a safety net


class Source(Protocol):
    def poll(self) -> list[Any]: ...


class Tracker(Protocol):
    def feed(self, entries: Any) -> list[Any]: ...


T = TypeVar("T", bound=Tracker)


class RecordFollower(Generic[T]):
    """One session's record followed live. `on_events(events)` gets each non-empty batch of the tracker's events;
    `busy()` says whether the CLI is working (the unwatched poll is faster then)."""

    def __init__(
        self,
        host: Any,
        source: Source,
        tracker: T,
        on_events: Callable[[list[Any]], None],
        *,
        busy: Callable[[], bool] | None = None,
        label: str = "record",
    ) -> None:
        self.host = host
        self.source = source
        self.tracker = tracker
        self.fed = False
        """Entries went to `tracker`: from then on it keeps this record's turn state and is never swapped."""
        self.on_events = on_events
        self.busy = busy
        self.label = label
        self.last_entry_at = 0.0  # loop time of the last entry read
        self.closed = False
        self._watch: DirWatch | None = None
        self._watching: Path | None = None
        self._poll_handle: Any = None

    # -------------------------------------------------------------------------------------------- for subclasses
    def locate(self) -> bool:
        """Find (or re-find) the record before a read; False while there is none to read."""
        return True

    def searching(self) -> bool:
        """Still looking for the record where a folder watch may not see it appear: poll at the unwatched pace."""
        return False

    def accept(self, mask: int, name: str) -> bool:
        """Whether a change in the watched folder may concern this record (another session's file may not)."""
        return True

    def use_tracker(self, tracker: T) -> bool:
        """Map the record with `tracker` from now on (the CLI's version, and so its `Record` plug-in, became known
        after the follower was made). Refused (False) once entries were fed: a tracker's turn state is not moved
        over, so a record half-read by one mapping is never finished by another."""
        if self.fed:
            return False
        self.tracker = tracker
        return True

    # -------------------------------------------------------------------------------------------- reading
    def read(self) -> list[Any]:
        """Read what was written since the last call (finding the record first) and hand its events on."""
        if self.closed or not self.locate():
            return []
        entries = self.source.poll()
        if not entries:
            return []
        self.last_entry_at = self.host.loop.time()
        self.fed = True
        events = self.tracker.feed(entries)
        if events:
            self.on_events(events)
        return events

    def quiet_for(self, since: float = 0.0) -> float:
        """Seconds since the record last grew (or since `since`, loop time, if later)."""
        return self.host.loop.time() - max(self.last_entry_at, since)

    # -------------------------------------------------------------------------------------------- the loop
    @property
    def watch(self) -> DirWatch | None:
        return self._watch

    def watch_folder(self, directory: Path) -> None:
        """Point the inotify watch at the folder the record is (or will be) in; None where there is no inotify."""
        if self.closed or self._watching == directory:
            return
        if self._watch is not None:
            self._watch.close()
        self._watch = DirWatch.start(self.host.loop, directory, self._changed, self.accept)
        self._watching = directory

    def start(self, delay: float = 0.0) -> None:
        if self._poll_handle is None and not self.closed:
            self._schedule(delay)

    def close(self) -> None:
        self.closed = True
        if self._poll_handle is not None:
            self._poll_handle.cancel()
            self._poll_handle = None
        if self._watch is not None:
            self._watch.close()
            self._watch = None

    def interval(self) -> float:
        if self._watch is not None and not self.searching():
            return POLL_WATCHED
        return POLL_BUSY if self.busy is not None and self.busy() else POLL_IDLE

    def _changed(self) -> None:
        if self.closed:
            return
        try:
            self.read()
        except Exception:
            self.host.log.exception("%s: read", self.label)

    def _schedule(self, delay: float | None = None) -> None:
        if self.closed:
            return
        self._poll_handle = self.host.call_later(self.interval() if delay is None else delay, self._tick)

    def _tick(self) -> None:
        self._poll_handle = None
        try:
            if self._watch is not None:
                self._watch.refresh()  # safety net: the folder appeared without the watch seeing it
            self._changed()
        finally:
            self._schedule()
