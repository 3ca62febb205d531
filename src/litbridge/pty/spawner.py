"""Which way a child is started, and the compiled vfork + exec path shared by the PTY and pipes hosts.

`spawn_method()` is `vfork` on Linux with the compiled `_spawn` (nothing of the daemon is copied, so a spawn
costs the same at 50 MB as at 500 MB, and no Python runs in the child), else `fork` (ptyprocess / subprocess,
the fallback; `LITBRIDGE_SPAWN=fork` selects it). `vfork_spawn` starts a program on given fds in its own
session, with every other fd closed, SIGKILL as its parent-death signal, and the priority `serve --cli-nice`
asks for and the cgroup of `serve --cli-cgroup` (`cgroup.py`) already set when it starts.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys

from litbridge.pty import cgroup

try:
    from litbridge.pty._spawn import available as _available
    from litbridge.pty._spawn import spawn as _cspawn
except ImportError:  # the pure-Python package (LITBRIDGE_NO_EXTENSIONS=1)
    _available = _cspawn = None  # type: ignore[assignment]

METHODS = ("vfork", "fork")

Priority = tuple[int, "int | None"]
"""(the child's nice, its session group's nice or None to leave the group as it is): see `pty.priority_for`."""


def spawn_method() -> str:
    """`vfork` where the compiled spawner works, else `fork`; `LITBRIDGE_SPAWN=fork` forces the fork path (a
    fallback kept for comparison and for platforms without the compiled spawner)."""
    if os.environ.get("LITBRIDGE_SPAWN") == "fork" or _available is None or not _available():
        return "fork"
    return "vfork"


def check_method(method: str | None) -> str:
    method = method or spawn_method()
    if method not in METHODS:
        raise ValueError(f"unknown spawn method {method!r}")
    return method


def vfork_spawn(
    argv: list[str],
    env: dict[str, str],
    cwd: str | None,
    fds: tuple[int, int, int],
    ctty: int = -1,
    priority: Priority | None = None,
) -> int:
    """Start `argv` with `fds` as its stdin/stdout/stderr (and `ctty`, a terminal's slave, as its controlling
    terminal) through the compiled spawner, at `priority` from its first instruction; -> pid once it has been
    exec'd. Raises OSError / ValueError. The caller keeps (and closes) its fds."""
    assert _cspawn is not None
    program = argv[0]
    if os.sep not in program:  # a bare name: looked up on the child's PATH, as execvpe would
        found = shutil.which(program, path=env.get("PATH", os.defpath))
        if found is None:
            raise FileNotFoundError(f"The command was not found or was not executable: {program}.")
        program = found
    high: dict[int, int] = {}
    try:
        for fd in {*fds, ctty} - {-1}:
            if fd < 3:  # a daemon started with stdio closed: the child's dup2s onto 0-2 must not hit it
                import fcntl

                high[fd] = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
        stdin, stdout, stderr = (high.get(fd, fd) for fd in fds)
        return _cspawn(
            os.fsencode(program),
            [os.fsencode(a) for a in argv],
            [os.fsencode(f"{k}={v}") for k, v in env.items()],
            None if cwd is None else os.fsencode(cwd),
            stdin,
            stdout,
            stderr,
            high.get(ctty, ctty),
            int(signal.SIGKILL) if sys.platform.startswith("linux") else 0,
            None if priority is None else priority[0],
            None if priority is None else priority[1],
            cgroup.fd(),
        )
    finally:
        for fd in high.values():
            os.close(fd)
