"""Unix PTY host: spawn under a GRID (200x50) PTY in the child's own session and process group, with the PTY
as its controlling terminal; on Linux the child is killed if the daemon dies (PR_SET_PDEATHSIG).

Two ways to start the child, same result (`spawner.py`): on Linux the compiled vfork + exec spawner, elsewhere,
in the pure-Python package, or with `LITBRIDGE_SPAWN=fork`, ptyprocess (fork, then Python in the child until
exec). Reads are event-driven (`loop.add_reader` on the master fd); the exit is noticed through the pidfd /
waitpid watcher in `base.py`, and we reap the child ourselves (ptyprocess's own wait/close is not used).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct
import termios

from ptyprocess import PtyProcess

from litbridge.protocol.spec import GRID
from litbridge.pty.base import TAG_VAR, ChildProcess, SpawnError, child_preexec
from litbridge.pty.spawner import METHODS, Priority, check_method, spawn_method, vfork_spawn

__all__ = ["METHODS", "UnixPty", "spawn_method"]


class UnixPty(ChildProcess):
    """A program running under a PTY of `columns` x `lines` (never resized)."""

    transport = "pty"

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: str | None,
        columns: int = GRID[0],
        lines: int = GRID[1],
        method: str | None = None,
        priority: Priority | None = None,
    ) -> None:
        """`priority`: what the vfork path lowers the child to before its exec (the fork path leaves it to the
        caller, `pty.spawn`)."""
        super().__init__()
        self.method = check_method(method)
        self._proc: PtyProcess | None = None
        env = {**env, TAG_VAR: self.tag}
        try:
            if self.method == "vfork":
                self.pid, self.fd = _spawn_vfork(argv, env, cwd, columns, lines, priority)
            else:
                self._proc = PtyProcess.spawn(
                    argv,
                    cwd=cwd,
                    env=env,
                    dimensions=(lines, columns),
                    preexec_fn=child_preexec(),
                )
                self._proc.delayafterclose = 0
                self.pid, self.fd = self._proc.pid, self._proc.fd
        except (OSError, ValueError) as exc:
            raise SpawnError(f"spawn failed: {exc}") from exc
        self.pgid = self.pid  # setsid: the child leads its own session and group
        os.set_blocking(self.fd, False)
        self._write_fd = self.fd
        self._reading = False
        self._closed = False

    def _start_io(self) -> None:
        assert self.loop is not None
        self.loop.add_reader(self.fd, self._on_readable)
        self._reading = True

    def _on_readable(self) -> None:
        if not self._read_fd(self.fd, self._on_output):
            # EIO: every slave fd is closed (the child is exiting); the pidfd watcher reports the exit.
            self._stop_reading()

    def _stop_reading(self) -> None:
        if self._reading and self.loop is not None:
            self.loop.remove_reader(self.fd)
            self._reading = False

    def _drain(self) -> None:
        for _ in range(256):  # bounded: a grandchild could keep writing forever
            if self._closed or not _readable(self.fd) or not self._read_fd(self.fd, self._on_output):
                break

    def _close_io(self) -> None:
        self._stop_reading()
        if self._closed:
            return
        self._closed = True
        if self._proc is None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            return
        self._proc.terminated = True  # we reaped it; keep ptyprocess from waiting again
        self._proc.exitstatus = self.exit_code
        with contextlib.suppress(OSError):
            self._proc.fileobj.close()
        self._proc.closed = True


def _spawn_vfork(
    argv: list[str],
    env: dict[str, str],
    cwd: str | None,
    columns: int,
    lines: int,
    priority: Priority | None = None,
) -> tuple[int, int]:
    """Open a PTY of `columns` x `lines` and start `argv` on its slave through the compiled spawner;
    -> (pid, master fd). The slave is closed here once the child has it, so the master reads EIO when the
    child and everything it started have let go of the terminal."""
    master, slave = os.openpty()
    try:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))
        pid = vfork_spawn(argv, env, cwd, (slave, slave, slave), slave, priority)
    except BaseException:
        os.close(master)
        raise
    finally:
        os.close(slave)
    return pid, master


def _readable(fd: int) -> bool:
    """Whether `fd` has bytes to read now. `poll`, not `select`: with hundreds of sessions the PTY masters are
    past select's 1024 descriptors, where it refuses them and the exit drain read nothing."""
    import select

    p = select.poll()
    try:
        p.register(fd, select.POLLIN)
        return bool(p.poll(0))
    except (OSError, ValueError):
        return False
