"""The child-process interface shared by the PTY and pipes hosts: event-driven output, exit, kill, reap.

`ChildProcess` subclasses spawn one program in its own session/process group and report through
callbacks on the event loop: `on_output(bytes)` (and `on_stderr(bytes)` for pipes), then exactly one
`on_exit(exit_code)` once the child is reaped and its output drained. No screens, no JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import logging
import os
import secrets
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable

log = logging.getLogger(__name__)

OutputCallback = Callable[[bytes], None]
ExitCallback = Callable[[int | None], None]

READ_SIZE = 65536
# Bytes queued for a child that is not reading (stopped, or stuck): past this a write fails at once instead of
# growing the daemon (the largest single input is one 1 MiB protocol line).
WRITE_QUEUE_MAX = int(os.environ.get("LITBRIDGE_CHILD_WRITE_QUEUE", str(4 * 1024 * 1024)))


class SpawnError(Exception):
    """The program could not be started (`spawn_failed`)."""


class WriteQueueFull(Exception):
    """The child is not reading its input and `WRITE_QUEUE_MAX` bytes already wait for it; nothing was queued."""

    def __init__(self, pid: int, queued: int, size: int) -> None:
        super().__init__(
            f"the CLI (pid {pid}) is not reading its input: {queued} bytes already wait for it, "
            f"{size} more would pass the {WRITE_QUEUE_MAX}-byte limit; nothing was written"
        )


def child_preexec() -> Callable[[], None] | None:
    """The fork paths' preexec_fn: every signal back to its default (a daemon started in the background by a
    shell ignores SIGINT and SIGQUIT, and an ignored signal stays ignored across exec: the CLI would never see the
    Ctrl-C typed into its terminal), and on Linux SIGKILL when the daemon dies (PR_SET_PDEATHSIG), so a CLI that
    ignores SIGHUP does not outlive a `kill -9` of the daemon. The death signal follows the forking thread (the
    daemon's spawn pool keeps its threads for its whole life). Only C calls in the child (`signal.signal` refuses
    to run outside the main thread, which the forking thread may not be); None when libc cannot be loaded."""
    if sys.platform == "win32":
        return None
    import resource

    from litbridge.pty import limits

    try:
        libc = ctypes.CDLL(None, use_errno=True)  # loaded before the fork: nothing to load in the child
        c_signal = libc.signal
    except (OSError, AttributeError):
        return None
    c_signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
    c_signal.restype = ctypes.c_void_p
    prctl = getattr(libc, "prctl", None) if sys.platform.startswith("linux") else None
    signals = [int(s) for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP)]
    parent = os.getpid()
    soft = limits.child_soft()  # the open-file limit the daemon started with (it raised its own)

    def preexec() -> None:
        for sig in signals:
            c_signal(sig, None)  # SIG_DFL
        # ptyprocess calls this after closing the daemon's fds (bounded by the limit); subprocess before its own
        # close_fds pass, which does not depend on it where there is close_range or /proc/self/fd (and the
        # daemon's descriptors are close-on-exec anyway)
        if soft is not None:
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(
                    resource.RLIMIT_NOFILE, (soft, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
                )
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
            if os.getppid() != parent:  # the daemon died between fork and prctl
                os._exit(1)

    return preexec


PR_SET_PDEATHSIG = 1


def _proc_stat(pid: int | str) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the `(comm)` (so [0] is the state, [1] the ppid, [19] the start
    time), or None when the process is gone or there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    return _stat_fields(raw)


def _stat_fields(raw: bytes) -> list[str]:
    """The fields of a /proc/<pid>/stat text after the `(comm)` (a name may hold spaces and parentheses)."""
    return raw[raw.rfind(b")") + 2 :].decode("ascii", "replace").split()


TAG_VAR = "LITBRIDGE_SESSION_TAG"
_TAG_NEEDLE = f"\0{TAG_VAR}=".encode()


def machine_forks() -> int | None:
    """How many processes and threads the machine has created since boot (`processes` in /proc/stat), or None
    without /proc: while it stands still, no process is new."""
    try:
        with open("/proc/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    i = data.find(b"\nprocesses ")
    if i < 0:
        return None
    end = data.find(b"\n", i + 1)
    try:
        return int(data[i + 11 : end if end > 0 else len(data)])
    except ValueError:
        return None


class ProcTable:
    """One read of /proc (Linux; empty elsewhere): each process's parent, start time and session tag.

    What a kill needs to find a session's processes that left its process group (`descendants`) or the CLI's
    tree (`tagged`). Reading /proc costs 10-20 µs a process, so a kill that read it alone made a wave of N kills
    (a daemon's shutdown, a client killing its sessions one after another) cost N times every process on the
    machine, with the loop blocked (300 kills among 600 sessions ran at 89 a second). `ProcTable.current()`
    hands out the last table while the machine has created no process since it was read (`machine_forks`),
    which is exact: a process that is gone is skipped by `_kill_if_same`, and one that is new means a new read."""

    def __init__(self) -> None:
        self.children: dict[int, list[tuple[int, str]]] = {}
        self.by_tag: dict[bytes, list[tuple[int, str]]] = {}
        self.forks: int | None = None

    _last: ProcTable | None = None

    @classmethod
    def read(cls) -> ProcTable:
        table = cls()
        table.forks = machine_forks()  # before the listing: a fork during it makes the next call read again
        try:
            names = os.listdir("/proc")
        except OSError:
            return table
        for name in names:
            if not name.isdigit():
                continue
            fields = _proc_stat(name)
            if fields is None or len(fields) < 20:
                continue
            entry = (int(name), fields[19])
            table.children.setdefault(int(fields[1]), []).append(entry)
            tag = _environ_tag(name)
            if tag is not None:
                table.by_tag.setdefault(tag, []).append(entry)
        return table

    @classmethod
    def current(cls) -> ProcTable:
        """The last table if no process was created since it was read, else a fresh one."""
        last = cls._last
        if last is not None and last.forks is not None and last.forks == machine_forks():
            return last
        cls._last = table = cls.read()
        return table

    def descendants(self, pid: int) -> list[tuple[int, str]]:
        """Every process below `pid` as (pid, start time): what left the process group (setsid, setpgid) while
        it is still below the CLI."""
        out: list[tuple[int, str]] = []
        todo = [pid]
        while todo:
            for child in self.children.get(todo.pop(), []):
                out.append(child)
                todo.append(child[0])
        return out

    def tagged(self, tag: str) -> list[tuple[int, str]]:
        """Every process whose environment carries `TAG_VAR=tag` as (pid, start time): what a session started,
        even after it was reparented (a double fork, `setsid` as a group leader). Own uid only."""
        return list(self.by_tag.get(tag.encode(), []))


def _environ_tag(pid: str) -> bytes | None:
    """The value of `TAG_VAR` in a process's environment, or None (none, or not ours to read)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = b"\0" + f.read()
    except OSError:
        return None
    i = env.find(_TAG_NEEDLE)
    if i < 0:
        return None
    start = i + len(_TAG_NEEDLE)
    end = env.find(b"\0", start)
    return env[start : end if end >= 0 else len(env)]


def _kill_if_same(procs: list[tuple[int, str]], sig: int) -> None:
    """Signal each (pid, start time) that is still that same process (a reused pid is left alone)."""
    for pid, started in procs:
        fields = _proc_stat(pid)
        if fields is not None and len(fields) >= 20 and fields[19] == started and fields[0] != "Z":
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)


class ChildProcess:
    """One spawned child. Subclasses set pid/pgid and the fds, then call `_start_watch`."""

    pid: int
    pgid: int

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.exit_code: int | None = None
        self.exited = False
        self._exit_future: asyncio.Future[int | None] | None = None
        self._on_output: OutputCallback = lambda b: None
        self._on_stderr: OutputCallback = lambda b: None
        self._on_exit: ExitCallback = lambda c: None
        self._write_fd: int | None = None
        self._wbuf: deque[bytes] = deque()
        self._wbuf_bytes = 0
        self._writer_armed = False
        self._pidfd: int | None = None
        self._stat_fd: int | None = None  # /proc/<pid>/stat, opened at the first `stopped` (Linux)
        self._stdin_closing = False  # close_stdin() was called: accept no more writes
        self.tag = secrets.token_hex(8)  # in the child's env as TAG_VAR: finds its processes on kill

    # -- public --------------------------------------------------------------------------------------
    def start(
        self,
        loop: asyncio.AbstractEventLoop,
        on_output: OutputCallback,
        on_exit: ExitCallback,
        on_stderr: OutputCallback | None = None,
    ) -> None:
        """Begin event-driven reads and exit watching on `loop`."""
        self.loop = loop
        self._on_output, self._on_exit = on_output, on_exit
        if on_stderr is not None:
            self._on_stderr = on_stderr
        self._exit_future = loop.create_future()
        self._start_io()
        self._start_watch()

    @property
    def alive(self) -> bool:
        return not self.exited

    @property
    def stopped(self) -> bool:
        """The child is stopped (SIGSTOP, SIGTSTP, a tracer): it runs nothing and reads nothing (Linux only)."""
        if self.exited:
            return False
        return self._proc_state() in ("T", "t")

    def _proc_state(self) -> str | None:
        """The child's state letter in /proc/<pid>/stat, or None (gone, or no /proc). Read through a descriptor
        kept open for the child's life: the daemon asks once a second for every session, and opening the path
        each time (a lookup in /proc) was nearly all of an idle daemon's CPU."""
        fd = self._stat_fd
        if fd is None:
            try:
                fd = self._stat_fd = os.open(f"/proc/{self.pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
            except OSError:  # no /proc, or out of descriptors: the path each time
                fields = _proc_stat(self.pid)
                return fields[0] if fields else None
        try:
            fields = _stat_fields(os.pread(fd, 1024, 0))
        except OSError:  # ESRCH: the process is gone
            return None
        return fields[0] if fields else None

    def write(self, data: bytes) -> None:
        """Queue bytes for the child; written without blocking the loop (EAGAIN -> add_writer).
        Raises WriteQueueFull (queueing nothing) when the child has not read `WRITE_QUEUE_MAX` bytes."""
        if self.exited or self._write_fd is None or self._stdin_closing or not data:
            return
        if self._wbuf_bytes + len(data) > WRITE_QUEUE_MAX:
            raise WriteQueueFull(self.pid, self._wbuf_bytes, len(data))
        self._wbuf.append(data)
        self._wbuf_bytes += len(data)
        self._flush()

    def close_stdin(self) -> None:
        """Close the child's stdin once the queued writes are flushed (pipes; a no-op for a PTY)."""

    async def wait(self) -> int | None:
        assert self._exit_future is not None
        return await asyncio.shield(self._exit_future)

    async def kill(self, grace: float = 2.0) -> int | None:
        """SIGTERM (+SIGHUP, as a closing terminal would) to the group, SIGKILL after `grace`; reaped."""
        # also what left the group (setsid) and what was reparented away from the CLI (double fork)
        procs = ProcTable.current()
        below = [] if self.exited else procs.descendants(self.pid)
        below += [p for p in procs.tagged(self.tag) if p[0] != self.pid and p not in below]
        if not self.exited:
            self._signal_group(signal.SIGTERM)
            self._signal_group(signal.SIGHUP)
            self._signal_group(signal.SIGCONT)  # a stopped group would not act on SIGTERM until continued
            _kill_if_same(below, signal.SIGTERM)
            try:
                await asyncio.wait_for(self.wait(), grace)
            except asyncio.TimeoutError:
                log.info("pid %d ignored SIGTERM for %.1fs; SIGKILL", self.pid, grace)
                self._signal_group(signal.SIGKILL)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self.wait(), 10.0)
        self._signal_group(signal.SIGKILL)  # leftovers of the group (background jobs)
        _kill_if_same(below, signal.SIGKILL)  # and of the session: nothing outlives it
        return self.exit_code

    # -- subclass hooks ------------------------------------------------------------------------------
    def _start_io(self) -> None:
        raise NotImplementedError

    def _drain(self) -> None:
        """Read whatever output is left (called once the child is reaped)."""

    def _close_io(self) -> None:
        raise NotImplementedError

    # -- helpers -------------------------------------------------------------------------------------
    def _signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def _read_fd(self, fd: int, callback: OutputCallback) -> bool:
        """One non-blocking read; False on EOF or a read error (the reader should be removed: an fd that keeps
        failing would otherwise be reported readable, and fail, on every loop iteration)."""
        try:
            data = os.read(fd, READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return True
        except OSError as exc:
            if exc.errno not in (errno.EIO, errno.EBADF):
                log.warning("reading output of pid %d failed: %s", self.pid, exc)
            return False
        if not data:
            return False
        callback(data)
        return True

    def _flush(self) -> None:
        fd = self._write_fd
        assert self.loop is not None
        while self._wbuf and fd is not None:
            chunk = self._wbuf[0]
            try:
                n = os.write(fd, chunk)
            except BlockingIOError:
                break
            except OSError as exc:
                log.debug("write to pid %d failed: %s", self.pid, exc)
                self._wbuf.clear()
                self._wbuf_bytes = 0
                break
            self._wbuf_bytes -= n
            if n < len(chunk):
                self._wbuf[0] = chunk[n:]
            else:
                self._wbuf.popleft()
        if self._wbuf and not self._writer_armed and fd is not None:
            self.loop.add_writer(fd, self._flush)
            self._writer_armed = True
        elif not self._wbuf and self._writer_armed and fd is not None:
            self.loop.remove_writer(fd)
            self._writer_armed = False

    def _start_watch(self) -> None:
        """Notice the exit at once: a pidfd on Linux, else a thread blocked in waitpid."""
        assert self.loop is not None
        try:
            self._pidfd = os.pidfd_open(self.pid)  # type: ignore[attr-defined]
        except (AttributeError, OSError):
            self._pidfd = None
        if self._pidfd is not None:
            self.loop.add_reader(self._pidfd, self._on_pidfd)
            return
        loop = self.loop

        def wait_thread() -> None:
            try:
                _, status = os.waitpid(self.pid, 0)
                code: int | None = os.waitstatus_to_exitcode(status)
            except ChildProcessError:
                code = None
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._reaped, code)

        threading.Thread(target=wait_thread, name=f"waitpid-{self.pid}", daemon=True).start()

    def _on_pidfd(self) -> None:
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            pid, status = self.pid, None
        if pid == 0:
            return
        assert self.loop is not None and self._pidfd is not None
        self.loop.remove_reader(self._pidfd)
        os.close(self._pidfd)
        self._pidfd = None
        self._reaped(os.waitstatus_to_exitcode(status) if status is not None else None)

    def _reaped(self, code: int | None) -> None:
        if self.exited:
            return
        try:
            self._drain()
        except Exception:  # pragma: no cover - draining must never prevent the exit report
            log.exception("draining pid %d", self.pid)
        self.exited = True
        self.exit_code = code
        self._wbuf.clear()
        self._wbuf_bytes = 0
        if self._writer_armed and self._write_fd is not None and self.loop is not None:
            self.loop.remove_writer(self._write_fd)
            self._writer_armed = False
        self._close_io()
        if self._stat_fd is not None:
            os.close(self._stat_fd)
            self._stat_fd = None
        self._signal_group(signal.SIGHUP)
        if self._exit_future is not None and not self._exit_future.done():
            self._exit_future.set_result(code)
        try:
            self._on_exit(code)
        except Exception:
            log.exception("exit callback for pid %d", self.pid)
