"""A record kept in a SQLite database another program writes (e.g. a CLI's session store), polled read-only.

The database is opened through a `file:…?mode=ro` URI with `query_only` set, so nothing here can write it; each
poll is one autocommit SELECT whose rows are fetched at once, so no read transaction stays open to hold back the
writer's WAL checkpoints; the busy timeout is short, so a locked database costs a poll, never a stalled loop. New
rows are found by the caller's SQL and a monotonic cursor column (an autoincrement id, a time stamp): the query
gets the last cursor seen as `:cursor` and must return rows in cursor order.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any

from litbridge.drivers.records.jsonl import stat_signature

log = logging.getLogger(__name__)

BUSY_TIMEOUT = 0.05  # seconds: a writer holding the lock makes this poll empty, not slow


class SqliteRows:
    """New rows (as dicts) of `sql` per `poll()`, e.g.
    `SELECT id, data FROM message WHERE session_id = 'x' AND id > :cursor ORDER BY id` with `cursor_column="id"`.

    A database that does not exist yet, a table not created yet, or a database busy right now give no rows (the
    next poll tries again). A database replaced by a new file (a new inode) is opened again; the cursor stays.
    """

    def __init__(
        self,
        path: Path,
        sql: str,
        cursor_column: str,
        *,
        cursor: Any = 0,
        params: dict[str, Any] | None = None,
        busy_timeout: float = BUSY_TIMEOUT,
    ) -> None:
        self.path, self.sql, self.cursor_column = Path(path), sql, cursor_column
        self.cursor = cursor
        self.params = dict(params or {})
        self.busy_timeout = busy_timeout
        self.errors = 0
        self._conn: sqlite3.Connection | None = None
        self._ino: int | None = None

    def _connect(self) -> sqlite3.Connection | None:
        try:
            ino = self.path.stat().st_ino
        except OSError:
            self.close()
            return None
        if self._conn is not None and ino == self._ino:
            return self._conn
        self.close()
        uri = self.path.resolve().as_uri() + "?mode=ro"
        try:
            conn = sqlite3.connect(
                uri, uri=True, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
            )
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA query_only = ON")
        except sqlite3.Error as exc:
            log.debug("%s: not readable yet (%s)", self.path, exc)
            return None
        self._conn, self._ino = conn, ino
        return conn

    def signature(self) -> tuple[Any, ...]:
        """Stats of the database and its write-ahead log (a commit in WAL mode changes only the log), and the error
        count: a poll that failed (the database busy) is tried again though nothing changed since."""
        files = tuple(stat_signature(self.path.with_name(self.path.name + ext)) for ext in ("", "-wal"))
        return (*files, self.errors)

    def poll(self) -> list[dict[str, Any]]:
        conn = self._connect()
        if conn is None:
            return []
        try:
            rows = conn.execute(self.sql, {**self.params, "cursor": self.cursor}).fetchall()
        except sqlite3.OperationalError as exc:  # busy/locked, or the table is not there yet
            self.errors += 1
            log.debug("%s: %s", self.path, exc)
            return []
        except sqlite3.DatabaseError as exc:  # e.g. replaced by something that is not a database
            self.errors += 1
            log.warning("%s: %s", self.path, exc)
            self.close()
            return []
        out = [dict(r) for r in rows]
        for row in out:
            value = row.get(self.cursor_column)
            if value is not None and (self.cursor is None or value > self.cursor):
                self.cursor = value
        return out

    def catch_up(self) -> None:
        """Take what the database holds now as already read (a resumed session's history)."""
        self.poll()

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
        self._conn, self._ino = None, None
