"""Following this session's rollout file: finding it, watching its folder, reading it as it grows.

The file appears at the first prompt (`sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl` under the session's
CODEX_HOME); it is this session's when it was created after the spawn, is no other live session's, is for this
cwd (its `session_meta`) and starts with this session's first prompt, or when its thread id is the one being
resumed. Reading, watching and polling are the shared record pipeline's (`drivers/records`); the events come from
the tracker the driver's picked `Record` plug-in makes (0.169: `rollout.TurnTracker`).
"""

from __future__ import annotations

import datetime as _dt
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from litbridge.drivers.codex import rollout as ro
from litbridge.drivers.records import RecordFollower
from litbridge.drivers.records.jsonl import stat_signature

FULL_SCAN_EVERY = (
    2.0  # the whole sessions/ tree is walked at most this often (normally: the dated folders only)
)

_claimed: set[str] = set()
"""Rollout files owned by a live session of this daemon: two sessions in one HOME never share one."""


class RolloutFollower(RecordFollower[ro.TurnTracker]):
    """One session's rollout. `wanted()` says whether a first prompt went in and, for a send, its text (None for
    a prompt typed into Codex itself); `tracker` is the picked `Record` plug-in's (`driver.record.tracker()`);
    `on_events` gets each batch of turn events."""

    def __init__(
        self,
        host: Any,
        env: dict[str, str],
        cwd: str,
        wanted: Callable[[], tuple[bool, str | None]],
        tracker: ro.TurnTracker,
        on_events: Callable[[list[ro.TurnEvent]], None],
    ) -> None:
        self.reader = ro.RolloutReader()  # pinned once found
        super().__init__(host, self.reader, tracker, on_events, label="codex: rollout")
        self.root = ro.sessions_dir(env)
        self.cwd = os.path.realpath(cwd)
        self.wanted = wanted
        self.thread_id: str | None = None
        self.spawn_wall = time.time()
        self._prompted = False
        self._last_full_scan = -FULL_SCAN_EVERY
        self._dirs_stamp: tuple[object, ...] | None = None  # the date folders' stamps when last listed
        self._dated_files = False  # the last listing of the date folders found rollout files
        self._undecided = False  # a fresh file there was not written enough to tell whose it is

    @property
    def path(self) -> Path | None:
        return self.reader.path

    @property
    def last_line_at(self) -> float:
        """Loop time of the last line read."""
        return self.last_entry_at

    def follow_thread(self, thread_id: str) -> None:
        """A resumed thread: its file is known by name; if it is there now, its history is not read again."""
        self.thread_id = thread_id
        path = ro.find_thread(self.root, thread_id)
        if path is not None:
            self._pin(path, from_end=True)

    def start(self, delay: float = 0.0) -> None:
        self.spawn_wall = min(self.spawn_wall, time.time())
        super().start(delay)

    def close(self) -> None:
        if self.reader.path is not None:
            _claimed.discard(str(self.reader.path))
        super().close()

    def poll(self) -> None:
        """Read what was written since the last call (finding the file first if need be)."""
        self.read()

    def searching(self) -> bool:
        return self.reader.path is None  # the file may land in another date folder than the one watched

    # -------------------------------------------------------------------------------------------- finding
    def locate(self) -> bool:
        if self.reader.path is None:
            self._find()
        return self.reader.path is not None

    def _pin(self, path: Path, *, from_end: bool) -> None:
        self.reader.pin(path, from_start=not from_end)
        _claimed.add(str(path))
        self.thread_id = ro.thread_id_of(path) or self.thread_id
        self.watch_folder(path.parent)

    def _find(self) -> None:
        if self.watch is None:
            today = _dt.datetime.now()
            self.watch_folder(self.root / f"{today:%Y}" / f"{today:%m}" / f"{today:%d}")
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
        dirs = ro.date_dirs(self.root, self.spawn_wall - 1.0)
        stamp = tuple(stat_signature(d) for d in dirs)  # a stat per folder: listed only when one changed
        files: list[Path] = []
        if stamp != self._dirs_stamp or self._undecided:
            self._dirs_stamp, self._undecided = stamp, False
            files = ro.files_in(dirs)
            self._dated_files = bool(files)
        if not self._dated_files and now - self._last_full_scan >= FULL_SCAN_EVERY:
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
            if first is None and (cwd is None or os.path.realpath(cwd) == self.cwd):
                self._undecided = True  # not written yet: looked at again on the next visit
            if first is None or (cwd is not None and os.path.realpath(cwd) != self.cwd):
                continue  # not written yet, or another project's session in this HOME
            if want is None or first.strip() == want.strip():
                self._pin(p, from_end=False)
                return
