"""Following this session's rollout file: finding it, watching its folder, reading it as it grows.

The file appears at the first prompt (`sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl` under the session's
CODEX_HOME); it is this session's when it was created after the spawn, is no other live session's, is for this
cwd (its `session_meta`) and starts with this session's first prompt, or when its thread id is the one being
resumed. New lines are read on inotify (the shared `DirWatch`) with a timer as the safety net, and
turned into `rollout.TurnEvent`s for the driver.
"""

from __future__ import annotations

import datetime as _dt
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from litbridge.drivers.codex import rollout as ro
from litbridge.drivers.dirwatch import DirWatch

POLL_FIND = 0.2  # looking for the file (it appears at the first prompt)
POLL_WATCHED = 0.5  # with an inotify watch the timer poll is only a safety net
FULL_SCAN_EVERY = (
    2.0  # the whole sessions/ tree is walked at most this often (normally: the dated folders only)
)

_claimed: set[str] = set()
"""Rollout files owned by a live session of this daemon: two sessions in one HOME never share one."""


class RolloutFollower:
    """One session's rollout. `wanted()` says whether a first prompt went in and, for a send, its text (None for
    a prompt typed into Codex itself); `on_events` gets each batch of turn events."""

    def __init__(
        self,
        host: Any,
        env: dict[str, str],
        cwd: str,
        wanted: Callable[[], tuple[bool, str | None]],
        on_events: Callable[[list[ro.TurnEvent]], None],
    ) -> None:
        self.host = host
        self.root = ro.sessions_dir(env)
        self.cwd = os.path.realpath(cwd)
        self.wanted = wanted
        self.on_events = on_events
        self.reader: ro.RolloutReader | None = None
        self.tracker = ro.TurnTracker()
        self.thread_id: str | None = None
        self.spawn_wall = time.time()
        self.last_line_at = 0.0  # loop time of the last line read
        self.closed = False
        self._prompted = False
        self._last_full_scan = -FULL_SCAN_EVERY
        self._poll_handle: Any = None
        self._watch: DirWatch | None = None
        self._watching: Path | None = None

    @property
    def path(self) -> Path | None:
        return self.reader.path if self.reader is not None else None

    def follow_thread(self, thread_id: str) -> None:
        """A resumed thread: its file is known by name; if it is there now, its history is not read again."""
        self.thread_id = thread_id
        path = ro.find_thread(self.root, thread_id)
        if path is not None:
            self._pin(path, from_end=True)

    def start(self) -> None:
        self.spawn_wall = min(self.spawn_wall, time.time())
        self._schedule(0.0)

    def close(self) -> None:
        self.closed = True
        if self.reader is not None:
            _claimed.discard(str(self.reader.path))
        if self._watch is not None:
            self._watch.close()
            self._watch = None
        if self._poll_handle is not None:
            self._poll_handle.cancel()
            self._poll_handle = None

    # -------------------------------------------------------------------------------------------- reading
    def poll(self) -> None:
        """Read what was written since the last call (finding the file first if need be)."""
        if self.closed:
            return
        if self.reader is None:
            self._find()
            if self.reader is None:
                return
        entries = self.reader.poll()
        if entries:
            self.last_line_at = self.host.loop.time()
            events = self.tracker.feed(entries)
            if events:
                self.on_events(events)

    def _pin(self, path: Path, *, from_end: bool) -> None:
        self.reader = ro.RolloutReader(path, from_end=from_end)
        _claimed.add(str(path))
        self.thread_id = ro.thread_id_of(path) or self.thread_id
        self._rewatch(path.parent)

    def _find(self) -> None:
        if self._watch is None:
            today = _dt.datetime.now()
            self._rewatch(self.root / f"{today:%Y}" / f"{today:%m}" / f"{today:%d}")
        if self.thread_id:
            path = ro.find_thread(self.root, self.thread_id)
            if path is not None:
                self._pin(path, from_end=False)
            return
        prompted, want = self.wanted()
        self._prompted = self._prompted or prompted  # a first prompt went in: the file exists from now on
        if not self._prompted:
            return
        now = self.host.loop.time()
        files = ro.files_in(ro.date_dirs(self.root, self.spawn_wall - 1.0))
        if not files and now - self._last_full_scan >= FULL_SCAN_EVERY:
            self._last_full_scan = now  # a clock or date-folder surprise (e.g. a replayed recording's date)
            files = ro.rollout_files(self.root)
        candidates = []
        for p in files:
            if str(p) in _claimed:
                continue
            try:
                mtime = p.stat().st_mtime
            except OSError:
                continue
            if mtime >= self.spawn_wall - 1.0:
                candidates.append((mtime, p))
        for _, p in sorted(candidates):
            cwd, first = ro.rollout_head(p)
            if first is None or (cwd is not None and os.path.realpath(cwd) != self.cwd):
                continue  # not written yet, or another project's session in this HOME
            if want is None or first.strip() == want.strip():
                self._pin(p, from_end=False)
                return

    # -------------------------------------------------------------------------------------------- timers
    def _rewatch(self, directory: Path) -> None:
        """inotify on the folder the rollout is (or will be) in; the timer poll stays as a safety net."""
        if self._watching == directory or self.closed:
            return
        if self._watch is not None:
            self._watch.close()
        self._watch = DirWatch.start(self.host.loop, directory, self._changed)
        self._watching = directory

    def _changed(self) -> None:
        try:
            self.poll()
        except Exception:
            self.host.log.exception("codex: rollout poll")

    def _schedule(self, delay: float | None = None) -> None:
        if self.closed:
            return
        if delay is None:
            delay = POLL_WATCHED if self.reader is not None and self._watch is not None else POLL_FIND
        self._poll_handle = self.host.call_later(delay, self._tick)

    def _tick(self) -> None:
        self._poll_handle = None
        try:
            if self._watch is not None:
                self._watch.refresh()
            self.poll()
        finally:
            self._schedule()
