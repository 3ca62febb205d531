"""Following this session's rows in opencode's database, on the shared record pipeline (`drivers/records`).

What is opencode's here is finding the session. A resumed one is named on the command line (`--session`); a new
one is created by opencode at the first prompt, in the one database every opencode of this user writes. Ours is
the session created after the spawn (its `session.created` row comes after the last row there was then), for
this working directory, whose first prompt is the text this session sent, and that no other live session of this
daemon has claimed; while two such sessions would fit (the same first text sent from the same folder at the same
moment), none is taken, so records never cross. Rows are read read-only (`records.SqliteRows`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from litbridge.drivers.opencode.store import (
    EVENTS_SQL,
    LAST_ROW_SQL,
    SESSION_EVENTS_SQL,
    SESSION_EXISTS_SQL,
    Candidate,
    SessionTurns,
    db_path,
)
from litbridge.drivers.records import RecordFollower, SqliteRows

_claimed: set[str] = set()
"""Session ids followed by a live session of this daemon: two sessions never follow one."""


def _same_text(a: str, b: str) -> bool:
    return a.replace("\r\n", "\n").strip() == b.replace("\r\n", "\n").strip()


def session_exists(path: Path | None, sid: str) -> bool:
    """The database holds session `sid` (read-only; False when it cannot be read)."""
    if path is None or not path.exists():
        return False
    probe = SqliteRows(path, SESSION_EXISTS_SQL, "rid", cursor=None, params={"sid": sid}, busy_timeout=1.0)
    try:
        return bool(probe.poll())
    finally:
        probe.close()


class StoreFollower(RecordFollower[SessionTurns]):
    """One session's rows. `wanted()` gives the first send's text (None before any send, "" for a prompt typed
    into opencode itself); `tracker` is the picked `Record` plug-in's (`driver.record.tracker()`, a
    `store.SessionTurns`); `on_events` gets each batch of turn events."""

    def __init__(
        self,
        host: Any,
        env: dict[str, str],
        cwd: str,
        wanted: Callable[[], str | None],
        tracker: SessionTurns,
        on_events: Callable[[list[Any]], None],
        busy: Callable[[], bool] | None = None,
    ) -> None:
        self.db = db_path({**os.environ, **env})
        self.rows = SqliteRows(self.db or Path(os.devnull), EVENTS_SQL, "rid")
        super().__init__(host, self.rows, tracker, on_events, busy=busy, label="opencode: store")
        self.cwd = os.path.realpath(cwd)
        self.wanted = wanted
        self.session_id: str | None = None
        self.candidates: dict[str, Candidate] = {}
        self._ambiguous_logged = False

    # ------------------------------------------------------------------------------------------ lifecycle
    def begin(self, resume: str | None = None) -> None:
        """Before the spawn: take what the database holds now as read; follow `resume` when it is given."""
        if self.db is None:
            return
        last = SqliteRows(self.db, LAST_ROW_SQL, "rid", cursor=None, busy_timeout=1.0)
        try:
            rows = last.poll()
        finally:
            last.close()
        self.rows.cursor = (rows[0].get("rid") if rows else None) or 0
        if resume:
            self._claim(resume)

    def start(self, delay: float | None = None) -> None:
        if self.db is not None:
            self.watch_folder(self.db.parent)
        super().start(self.interval() if delay is None else delay)

    def close(self) -> None:
        if self.session_id is not None:
            _claimed.discard(self.session_id)
        super().close()  # closes the rows (the source)

    @property
    def path(self) -> Path | None:
        return self.db

    def accept(self, mask: int, name: str) -> bool:
        return self.db is not None and name.startswith(self.db.name)

    def searching(self) -> bool:
        return self.session_id is None

    # ------------------------------------------------------------------------------------------ reading
    def read(self) -> list[Any]:
        if self.closed or self.db is None:
            return []
        rows = self.rows.poll()
        if rows:
            self.last_entry_at = self.host.loop.time()
        if self.session_id is None:
            for row in rows:
                sid = str(row.get("sid") or "")
                cand = self.candidates.get(sid)
                if cand is None:
                    if not str(row.get("type") or "").startswith("session.created"):
                        continue  # a session older than our spawn: never ours
                    cand = self.candidates[sid] = Candidate(sid)
                cand.note(row)
            picked = self._pick()
            if picked is None:
                return []
            rows = picked.rows
            self.candidates.clear()
        if not rows:
            return []
        self.fed = True
        events = self.tracker.feed(rows)
        if events:
            self.on_events(events)
        return events

    def _pick(self) -> Candidate | None:
        want = self.wanted()
        if want is None:
            return None
        fits = [
            c
            for c in self.candidates.values()
            if c.sid not in _claimed
            and c.first_prompt is not None
            and c.directory is not None
            and os.path.realpath(c.directory) == self.cwd
            and (want == "" or _same_text(c.first_prompt, want))
        ]
        if len(fits) != 1:
            if len(fits) > 1 and not self._ambiguous_logged:
                self._ambiguous_logged = True
                self.host.log.warning(
                    "opencode: %d new sessions in %s fit this session's first prompt; waiting",
                    len(fits),
                    self.cwd,
                )
            return None
        self._claim(fits[0].sid)
        self.host.log.info("opencode: session %s", fits[0].sid)
        return fits[0]

    def _claim(self, sid: str) -> None:
        self.session_id = sid
        _claimed.add(sid)
        self.rows.sql = SESSION_EVENTS_SQL
        self.rows.params = {"sid": sid}
