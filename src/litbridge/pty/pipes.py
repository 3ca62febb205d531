"""Pipes host: a program with stdin/stdout/stderr pipes in its own session and process group.

For drivers with `transport="pipes"` (e.g. `rift --serve`): stdout bytes go to `on_output`, stderr bytes
to `on_stderr`; the same exit watching, kill and reaping as the PTY host. No terminal here. Started like the
PTY host (`spawner.py`): the compiled vfork + exec spawner on Linux, else `subprocess` (fork + preexec_fn).
"""

from __future__ import annotations

import contextlib
import os
import subprocess

from litbridge.pty.base import TAG_VAR, ChildProcess, SpawnError, child_preexec
from litbridge.pty.spawner import Priority, check_method, vfork_spawn


class PipeProcess(ChildProcess):
    transport = "pipes"

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: str | None,
        method: str | None = None,
        priority: Priority | None = None,
    ) -> None:
        """`priority`: as for `UnixPty` (the vfork path only)."""
        super().__init__()
        self.method = check_method(method)
        self._proc: subprocess.Popen[bytes] | None = None
        env = {**env, TAG_VAR: self.tag}
        try:
            if self.method == "vfork":
                self.pid, (self._in, self._out, self._err) = _spawn_vfork(argv, env, cwd, priority)
            else:
                self._proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    cwd=cwd,
                    env=env,
                    start_new_session=True,
                    preexec_fn=child_preexec(),
                )
                self.pid = self._proc.pid
                assert self._proc.stdin and self._proc.stdout and self._proc.stderr
                self._in, self._out, self._err = (
                    self._proc.stdin.fileno(),
                    self._proc.stdout.fileno(),
                    self._proc.stderr.fileno(),
                )
        except (OSError, ValueError) as exc:
            raise SpawnError(f"spawn failed: {exc}") from exc
        self.pgid = self.pid
        for fd in (self._in, self._out, self._err):
            os.set_blocking(fd, False)
        self._write_fd = self._in
        self._open: set[int] = set()
        self._in_closed = False

    def close_stdin(self) -> None:
        """EOF for the child after everything queued so far is written."""
        self._stdin_closing = True
        self._maybe_close_stdin()

    def _flush(self) -> None:
        super()._flush()
        self._maybe_close_stdin()

    def _maybe_close_stdin(self) -> None:
        if self._stdin_closing and not self._wbuf and self._write_fd is not None:
            if self._writer_armed and self.loop is not None:
                self.loop.remove_writer(self._write_fd)
                self._writer_armed = False
            self._write_fd = None
            self._close_in()

    def _close_in(self) -> None:
        if self._in_closed:
            return
        self._in_closed = True
        with contextlib.suppress(OSError):
            if self._proc is not None:
                assert self._proc.stdin is not None
                self._proc.stdin.close()
            else:
                os.close(self._in)

    def _start_io(self) -> None:
        assert self.loop is not None
        for fd, cb in ((self._out, self._on_output), (self._err, self._on_stderr)):
            self.loop.add_reader(fd, self._make_reader(fd, cb))
            self._open.add(fd)

    def _make_reader(self, fd: int, cb):  # type: ignore[no-untyped-def]
        def on_readable() -> None:
            if not self._read_fd(fd, cb):
                self._stop(fd)

        return on_readable

    def _stop(self, fd: int) -> None:
        if fd in self._open and self.loop is not None:
            self.loop.remove_reader(fd)
            self._open.discard(fd)

    def _drain(self) -> None:
        for fd, cb in ((self._out, self._on_output), (self._err, self._on_stderr)):
            for _ in range(256):
                if fd not in self._open:
                    break
                try:
                    data = os.read(fd, 65536)
                except (BlockingIOError, OSError):
                    break
                if not data:
                    break
                cb(data)

    def _close_io(self) -> None:
        for fd in list(self._open):
            self._stop(fd)
        if self._proc is None:
            self._close_in()
            for fd in (self._out, self._err):
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._out = self._err = -1
            return
        self._proc.returncode = self.exit_code if self.exit_code is not None else -1
        for f in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            with contextlib.suppress(OSError):
                if f is not None:
                    f.close()


def _spawn_vfork(
    argv: list[str], env: dict[str, str], cwd: str | None, priority: Priority | None = None
) -> tuple[int, tuple[int, int, int]]:
    """Three pipes and the child on their far ends; -> (pid, (stdin writer, stdout reader, stderr reader))."""
    ours: list[int] = []
    theirs: list[int] = []
    try:
        for child_reads in (True, False, False):
            r, w = os.pipe()
            ours.append(w if child_reads else r)
            theirs.append(r if child_reads else w)
        pid = vfork_spawn(argv, env, cwd, (theirs[0], theirs[1], theirs[2]), priority=priority)
    except BaseException:
        for fd in ours:
            os.close(fd)
        raise
    finally:
        for fd in theirs:
            os.close(fd)
    return pid, (ours[0], ours[1], ours[2])
