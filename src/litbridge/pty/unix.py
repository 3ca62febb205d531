"""Unix PTY host over ptyprocess: spawn under a GRID (200x50) PTY (setsid -> own session and process group; on Linux
the child is killed if the daemon dies).

Reads are event-driven (`loop.add_reader` on the master fd); the exit is noticed through the pidfd /
waitpid watcher in `base.py`, and we reap the child ourselves (ptyprocess's own wait/close is not used).
"""

from __future__ import annotations

import contextlib
import os

from ptyprocess import PtyProcess

from litbridge.protocol.spec import GRID
from litbridge.pty.base import TAG_VAR, ChildProcess, SpawnError, parent_death_preexec


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
    ) -> None:
        super().__init__()
        try:
            self._proc = PtyProcess.spawn(
                argv,
                cwd=cwd,
                env={**env, TAG_VAR: self.tag},
                dimensions=(lines, columns),
                preexec_fn=parent_death_preexec(),
            )
        except (OSError, ValueError) as exc:
            raise SpawnError(f"spawn failed: {exc}") from exc
        self._proc.delayafterclose = 0
        self.pid = self._proc.pid
        self.pgid = self.pid  # forkpty -> setsid: the child leads its own session and group
        self.fd = self._proc.fd
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
        if not self._closed:
            self._closed = True
            self._proc.terminated = True  # we reaped it; keep ptyprocess from waiting again
            self._proc.exitstatus = self.exit_code
            with contextlib.suppress(OSError):
                self._proc.fileobj.close()
            self._proc.closed = True


def _readable(fd: int) -> bool:
    import select

    try:
        r, _, _ = select.select([fd], [], [], 0)
    except (OSError, ValueError):
        return False
    return bool(r)
