"""The follow loop: a CLI's record read as it changes, parsed, and its events handed on.

`RecordFollower` ties a source (`JsonlFile`, `JsonDocument`, `SqliteRows`: anything with `poll() -> entries`, and
best a `signature()`, a stat-only stamp of what `poll()` reads, and a `stamp`: that stamp as its last poll took
it), a tracker (the CLI's mapping of its entries to
turn events, `feed(entries) -> events`: what the driver's picked `kit.Record` plug-in makes, `record.tracker()`)
and a callback (usually a `Dispatch`). It reads when the folder watch (inotify, `watch.DirWatch`, one instance per
loop) sees a change there. No follower has a timer of its own: one sweep per loop (`_Sweep`, one timer) stats
the watched followers' records every `POLL_WATCHED` seconds as a safety net (a missed event), and paces the
others (no inotify, or still looking for their record) each on its own schedule: fast after a change, backing off
while the record stays the same, stat-only once the record is found. A CLI's follower subclasses it for what is
its own: `locate()` finds (and re-finds, e.g. after a `/clear` roll) the record.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from litbridge.drivers.records.watch import DirWatch

POLL_BUSY, POLL_IDLE = 0.05, 0.25  # no watch (or still looking): the pace after a change / its cap while busy
POLL_SLOW = 1.0  # no watch: the cap of the back-off while the CLI is idle and its record unchanged
POLL_WATCHED = 2.0  # the shared safety-net sweep over the watched followers (stat only)


class Source(Protocol):
    def poll(self) -> list[Any]: ...


class Tracker(Protocol):
    def feed(self, entries: Any) -> list[Any]: ...


T = TypeVar("T", bound=Tracker)


class RecordFollower(Generic[T]):
    """One session's record followed live. `on_events(events)` gets each non-empty batch of the tracker's events;
    `busy()` says whether the CLI is working (the unwatched pace backs off less then)."""

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
        self._sweep: _Sweep | None = None
        self._due: float | None = None  # loop time of this follower's paced visit (None: none pending)
        self._pace = POLL_BUSY
        self._sig: Hashable | None = None  # the record's signature when it was last read
        self._got = False  # the last read found entries

    # -------------------------------------------------------------------------------------------- for subclasses
    def locate(self) -> bool:
        """Find (or re-find) the record before a read; False while there is none to read."""
        return True

    def searching(self) -> bool:
        """Still looking for the record where a folder watch may not see it appear: paced visits call `locate()`."""
        return False

    def accept(self, mask: int, name: str) -> bool:
        """Whether a change in the watched folder may concern this record (another session's file may not)."""
        return True

    def signature(self) -> Hashable | None:
        """A stat-only stamp of what a read would read (the source's `signature()`, `stamped`); None: unknown, so
        every visit reads. An unchanged stamp skips the read on a safety-net or paced visit."""
        sig = getattr(self.source, "signature", None)
        return self.stamped(sig(), fresh=True) if sig is not None else None

    def stamped(self, stamp: Hashable | None, fresh: bool = False) -> Hashable | None:
        """The follower's signature for the source's stamp: the stamp itself; a subclass adds what else its reads
        depend on (Claude's: the folder, where a `/clear` roll appears). `fresh`: stat that now (a look); else
        what the read just looked at (a read: a change since then must still differ from it)."""
        return stamp

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
        self._got = False
        if self.closed or not self.locate():
            return []
        source = self.source
        stamping = hasattr(source, "stamp")  # its poll stamps what it read, from the stat it reads by
        if not stamping:
            self._sig = self.signature()  # before the read: a write after it changes the next stamp
        entries = source.poll()
        if stamping:
            self._sig = self.stamped(source.stamp)  # type: ignore[attr-defined]
        if not entries:
            return []
        self._got = True
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
        if self._sweep is not None:
            self._reschedule()

    def start(self, delay: float = 0.0) -> None:
        """Take part in the loop's sweep; the first look comes after `delay` seconds."""
        if self.closed:
            return
        if self._sweep is None:
            self._sweep = _Sweep.of(self.host.loop)
        if self._due is None:
            self._pace = self.interval()
            self._sweep.schedule(self, delay)

    def close(self) -> None:
        self.closed = True
        if self._sweep is not None:
            self._sweep.remove(self)
            self._sweep = None
        if self._watch is not None:
            self._watch.close()
            self._watch = None
        close = getattr(self.source, "close", None)
        if close is not None:
            close()

    def interval(self) -> float:
        """The present pace: the shared sweep's period while watched, else this follower's own."""
        if not self._paced():
            return POLL_WATCHED
        return POLL_BUSY if self.busy is not None and self.busy() else POLL_IDLE

    def _paced(self) -> bool:
        """Needs visits of its own: no watch, or still looking for the record."""
        return self._watch is None or self.searching()

    def _changed(self) -> None:
        """A watch event: read now (inotify delivers a busy turn's writes as they come)."""
        if self.closed:
            return
        paced = self._paced()
        self._safe_read()
        if self._sweep is not None and (paced or self._paced()):
            self._pace = POLL_BUSY  # something moved here: the next paced look comes soon
            self._reschedule(soon=True)

    def _safe_read(self) -> None:
        try:
            self.read()
        except Exception:
            self.host.log.exception("%s: read", self.label)

    def _visit(self) -> None:
        """The sweep's call: a paced look, or the safety net's (a stat; the read only when the record changed)."""
        changed = False
        try:
            if self._watch is not None:
                self._watch.refresh()  # the folder appeared without the watch seeing it
            if self.searching():
                self._safe_read()
                changed = self._got
            else:
                sig = self.signature()
                if sig is None or sig != self._sig:
                    self._safe_read()
                    changed = True
        finally:
            if not self.closed:
                cap = POLL_IDLE if self.busy is not None and self.busy() else POLL_SLOW
                self._pace = POLL_BUSY if changed else min(max(self._pace, POLL_BUSY / 2) * 2, cap)
                self._reschedule()

    def _reschedule(self, soon: bool = False) -> None:
        sweep = self._sweep
        if sweep is None or self.closed:
            return
        if not self._paced():
            sweep.watched_add(self)
        elif soon and self._due is not None and self._due <= self.host.loop.time() + self._pace:
            return  # a paced look is due soon enough already
        else:
            sweep.schedule(self, self._pace)


class _Sweep:
    """Every follower's timer on one loop, as one timer: a heap of paced visits (each follower's due time) and a
    safety-net pass over the watched followers every `POLL_WATCHED` seconds. Gone with its last follower."""

    _all: dict[asyncio.AbstractEventLoop, _Sweep] = {}

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.watched: dict[RecordFollower[Any], None] = {}
        self.paced: set[RecordFollower[Any]] = set()
        self.heap: list[tuple[float, int, RecordFollower[Any]]] = []
        self._seq = itertools.count()
        self.handle: asyncio.TimerHandle | None = None
        self.handle_at = math.inf
        self.next_pass = math.inf

    @classmethod
    def of(cls, loop: asyncio.AbstractEventLoop) -> _Sweep:
        sweep = cls._all.get(loop)
        if sweep is None:
            sweep = cls._all[loop] = cls(loop)
        return sweep

    def schedule(self, fw: RecordFollower[Any], delay: float) -> None:
        self.watched.pop(fw, None)
        fw._due = due = self.loop.time() + delay
        self.paced.add(fw)
        heapq.heappush(self.heap, (due, next(self._seq), fw))
        self._arm()

    def watched_add(self, fw: RecordFollower[Any]) -> None:
        fw._due = None
        self.paced.discard(fw)
        if fw not in self.watched:
            self.watched[fw] = None
            if self.next_pass == math.inf:
                self.next_pass = self.loop.time() + POLL_WATCHED
            self._arm()

    def remove(self, fw: RecordFollower[Any]) -> None:
        fw._due = None
        self.paced.discard(fw)
        self.watched.pop(fw, None)
        if not self.paced and not self.watched:
            self.heap.clear()
            if self.handle is not None:
                self.handle.cancel()
            self.handle, self.handle_at = None, math.inf
            if self._all.get(self.loop) is self:
                del self._all[self.loop]

    def _arm(self) -> None:
        if not self.watched:
            self.next_pass = math.inf
        at = min(self.heap[0][0] if self.heap else math.inf, self.next_pass)
        if at == math.inf or (self.handle is not None and self.handle_at <= at):
            return  # nothing to do, or the armed timer comes first (it arms the next one)
        if self.handle is not None:
            self.handle.cancel()
        self.handle, self.handle_at = self.loop.call_at(at, self._run), at

    @staticmethod
    def _visit(fw: RecordFollower[Any]) -> None:
        try:
            fw._visit()
        except Exception:  # one follower's failure never stops the others' sweep
            fw.host.log.exception("%s: visit", fw.label)

    def _run(self) -> None:
        self.handle, self.handle_at = None, math.inf
        now = self.loop.time()
        while self.heap and self.heap[0][0] <= now:
            due, _, fw = heapq.heappop(self.heap)
            if fw._due != due or fw.closed:
                continue  # rescheduled or closed since: a stale entry
            fw._due = None
            self.paced.discard(fw)
            self._visit(fw)
        if self.watched and now >= self.next_pass:
            self.next_pass = now + POLL_WATCHED
            for fw in list(self.watched):
                if not fw.closed and fw in self.watched:
                    self._visit(fw)
        if self._all.get(self.loop) is self and (self.paced or self.watched):
            self._arm()
