"""Socket ownership when the lock file goes away: a second `serve` never unlinks a socket that has a
listener, and the live daemon locks a removed or replaced `<socket>.lock` again. Against real daemons."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import socket
from pathlib import Path

import pytest
from hardening_helpers import connect, fill_backlog, lbd, refused_serve, spawn_daemon, wait_until

L = lbd()
ASYNC = pytest.mark.asyncio(loop_scope="function")


def held_by_another(lock: str) -> bool:
    """Someone holds the flock on the file now at `lock` (we cannot take it)."""
    try:
        fd = os.open(lock, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # also drops a lock we took
    return False


async def pings(path: str) -> bool:
    c = await connect(path)
    try:
        return (await c.request({"cmd": "ping"}, "pong"))["event"] == "pong"
    finally:
        await c.close()


@ASYNC
async def test_a_removed_lock_file_does_not_let_a_second_daemon_steal_the_socket(tmp_short: str) -> None:
    """`<socket>.lock` is deleted under a live daemon (which is told not to re-create it during this test): a
    second `serve` takes a fresh lock, but the socket has a listener, so it exits 3 and unlinks nothing. The
    same when the first daemon is SIGSTOPped with its accept backlog full (a connect fails with EAGAIN)."""
    sock = os.path.join(tmp_short, "l.sock")
    d1 = spawn_daemon(sock, env={"LITBRIDGE_LOCK_CHECK": "3600"})
    pending: list[socket.socket] = []
    try:
        ino, attach_ino = os.lstat(sock).st_ino, os.lstat(sock + ".attach").st_ino
        for stopped in (False, True):
            os.unlink(sock + ".lock")
            if stopped:
                d1.proc.send_signal(signal.SIGSTOP)
                fill_backlog(sock, pending)
            log = refused_serve(sock)
            assert "already listens" in log, log
            assert os.lstat(sock).st_ino == ino, "the live daemon's socket was replaced"
            assert os.lstat(sock + ".attach").st_ino == attach_ino, "its attach socket was replaced"
        for s in pending:
            s.close()
        d1.proc.send_signal(signal.SIGCONT)
        for _ in range(100):  # until the resumed daemon has drained the closed connections from its backlog
            with contextlib.suppress(OSError):
                assert await pings(sock)
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError(f"the first daemon stopped answering\n{d1.log()}")
    finally:
        for s in pending:
            s.close()
        d1.proc.send_signal(signal.SIGCONT)
        assert d1.stop() == 0, d1.log()
    assert not os.path.lexists(sock), "the owner unlinks its own socket at exit"


@ASYNC
async def test_the_live_daemon_locks_a_removed_or_replaced_lock_file_again(tmp_short: str) -> None:
    """The daemon checks its lock file periodically (LITBRIDGE_LOCK_CHECK, lowered from 5 s to 0.2 s here):
    removed, it is created and locked again; replaced by another file, that file is locked. A later `serve` is
    then refused by the lock itself ("already owns", exit 3)."""
    sock = os.path.join(tmp_short, "k.sock")
    lock = sock + ".lock"
    d1 = spawn_daemon(sock, env={"LITBRIDGE_LOCK_CHECK": "0.2"})
    try:
        pid = f"{d1.proc.pid}\n"
        assert held_by_another(lock) and Path(lock).read_text() == pid
        os.unlink(lock)
        assert await wait_until(lambda: os.path.exists(lock) and held_by_another(lock), timeout=30), d1.log()
        assert Path(lock).read_text() == pid
        other = lock + ".new"
        Path(other).write_text("someone else's\n")
        os.replace(other, lock)
        assert await wait_until(lambda: Path(lock).read_text() == pid, timeout=30), d1.log()
        assert held_by_another(lock)
        # the file is locked and written before the line is logged
        assert await wait_until(lambda: "was replaced; locked it again" in d1.log(), timeout=30), d1.log()
        assert "was removed; locked it again" in d1.log()
        log = refused_serve(sock)
        assert f"(pid {d1.proc.pid}) already owns" in log, log
        assert await pings(sock)
    finally:
        assert d1.stop() == 0, d1.log()
