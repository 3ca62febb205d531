"""The SQLite record source against a real database in WAL mode written by another connection at the same time:
every committed row arrives once and in order, an open write transaction neither blocks the poll nor shows, the
writer is never blocked (and can checkpoint the whole WAL between polls), and nothing can be written through it."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from litbridge.drivers.records import SqliteRows

SQL = "SELECT id, session, body FROM message WHERE session = :session AND id > :cursor ORDER BY id"


def _writer(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=0, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS message (id INTEGER PRIMARY KEY AUTOINCREMENT, session TEXT, body TEXT)"
    )
    return conn


def test_rows_of_a_wal_database_written_concurrently(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    rows = SqliteRows(db, SQL, "id", params={"session": "s1"})
    assert rows.poll() == []  # no database yet: nothing, no error
    w = _writer(db)
    assert w.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    total = 300
    stop = threading.Event()
    errors: list[BaseException] = []

    def write() -> None:
        try:
            for i in range(total):
                w.execute("BEGIN IMMEDIATE")  # timeout=0: any lock held by the reader would raise here
                w.execute("INSERT INTO message (session, body) VALUES (?, ?)", ("s1", f"m{i}"))
                w.execute("INSERT INTO message (session, body) VALUES (?, ?)", ("s2", f"other{i}"))
                w.execute("COMMIT")
                if i % 50 == 49:
                    w.execute(
                        "PRAGMA wal_checkpoint(PASSIVE)"
                    )  # the WAL is reset under the reader now and then
        except BaseException as exc:
            errors.append(exc)
        finally:
            stop.set()

    t = threading.Thread(target=write)
    t.start()
    got: list[str] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        got.extend(r["body"] for r in rows.poll())
        if stop.is_set() and len(got) >= total:
            break
        time.sleep(0.001)
    t.join(30)
    got.extend(r["body"] for r in rows.poll())
    assert not errors, errors
    assert got == [f"m{i}" for i in range(total)]  # each once, in order, only this session's
    assert rows.cursor == 2 * total - 1


def test_an_open_write_transaction_neither_blocks_nor_shows(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    w = _writer(db)
    w.execute("INSERT INTO message (session, body) VALUES ('s1', 'committed')")
    rows = SqliteRows(db, SQL, "id", params={"session": "s1"})
    w.execute("BEGIN IMMEDIATE")
    w.execute("INSERT INTO message (session, body) VALUES ('s1', 'pending')")
    t0 = time.monotonic()
    assert [r["body"] for r in rows.poll()] == ["committed"]
    assert (
        time.monotonic() - t0 < 5.0
    )  # generous: the point is that it returned while the writer holds the lock
    w.execute("COMMIT")
    assert [r["body"] for r in rows.poll()] == ["pending"]
    w.execute("BEGIN EXCLUSIVE")  # even an exclusive writer: WAL readers still read the last commit
    assert rows.poll() == []
    w.execute("ROLLBACK")
    # between polls the reader holds no read transaction: the writer can checkpoint the whole WAL away
    busy, _log, _done = w.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    assert busy == 0 and rows._conn is not None


def test_read_only_history_skip_and_a_table_created_late(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    plain = sqlite3.connect(db, isolation_level=None)
    plain.execute("PRAGMA journal_mode=WAL")
    rows = SqliteRows(db, SQL, "id", params={"session": "s1"})
    assert rows.poll() == [] and rows.errors == 1  # no such table yet
    w = _writer(db)
    w.execute("INSERT INTO message (session, body) VALUES ('s1', 'history')")
    resumed = SqliteRows(db, SQL, "id", params={"session": "s1"})
    resumed.catch_up()
    w.execute("INSERT INTO message (session, body) VALUES ('s1', 'new')")
    assert [r["body"] for r in resumed.poll()] == ["new"]
    assert [r["body"] for r in rows.poll()] == ["history", "new"]
    conn = resumed._connect()
    assert conn is not None
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("INSERT INTO message (session, body) VALUES ('s1', 'from us')")
    resumed.close()
    rows.close()
    plain.close()
