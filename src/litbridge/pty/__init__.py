"""Spawning CLIs: under a 200x50 PTY or with pipes, in their own process group (vfork + exec on Linux, else
ptyprocess / subprocess; pywinpty on Windows).

`spawn(argv, env, cwd, transport)` returns a `ChildProcess` (see `base.py`); `child_env` builds the
environment (nesting vars stripped, TERM/COLORTERM, then the caller's env); `resolve` finds the program;
`priority_for` is where a CLI runs below the daemon (`serve --cli-nice`): the vfork path starts it there,
`lower_priority` moves one already running; `cgroup` is the one CPU group every CLI can be put in
(`serve --cli-cgroup`); `cpus` the CPUs the daemon and its CLIs run on (`serve --cpus`, `--cli-cpus`). Knows
nothing about screens or JSON.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import MappingProxyType
from typing import Any

from litbridge.protocol.spec import GRID
from litbridge.pty import cgroup, cpus
from litbridge.pty.base import ChildProcess, SpawnError, WriteQueueFull
from litbridge.pty.spawner import Priority

__all__ = [
    "COLUMNS",
    "LINES",
    "SPAWN_THREADS",
    "ChildProcess",
    "SpawnError",
    "WriteQueueFull",
    "check_exec_args",
    "child_env",
    "daemon_env",
    "lower_priority",
    "priority_for",
    "resolve",
    "spawn",
    "spawn_executor",
]

COLUMNS, LINES = GRID
NICE_MAX = 19  # the lowest priority a Unix nice value gives

log = logging.getLogger(__name__)


_decoded_env: tuple[dict[Any, Any], Mapping[str, str]] | None = None


def daemon_env() -> Mapping[str, str]:
    """`os.environ` decoded, as a read-only mapping kept while the environment is unchanged. Iterating
    `os.environ` decodes every name and value through two Python calls each: over a thousand creates that was a
    tenth of the daemon's profile samples. Whether it changed is one compare of its raw table (CPython keeps it
    as `os.environ._data`; elsewhere every call decodes)."""
    global _decoded_env
    raw = getattr(os.environ, "_data", None)
    if not isinstance(raw, dict):
        return dict(os.environ)
    kept = _decoded_env
    if kept is not None and kept[0] == raw:
        return kept[1]
    # the raw table before decoding: a change in between is seen by the next call, never hidden from it
    snapshot = dict(raw)
    decoded = MappingProxyType(dict(os.environ))
    _decoded_env = (snapshot, decoded)
    return decoded


def child_env(
    driver_env: Mapping[str, str] | None = None,
    caller_env: Mapping[str, str] | None = None,
    base: Mapping[str, str] | None = None,
    remove: Sequence[str] = (),
) -> dict[str, str]:
    """The daemon's env minus the driver's `remove` names, then TERM/COLORTERM, then driver env, then caller env.

    `remove` comes from the driver's launch spec (`LaunchSpec.env_remove`; e.g. Claude's nesting variables):
    a name, or a prefix ending in `*`. It applies to the inherited env only: the same names passed explicitly
    by the driver or the caller are kept.
    """
    names = {r for r in remove if not r.endswith("*")}
    prefixes = tuple(r[:-1] for r in remove if r.endswith("*"))
    env = {
        k: v
        for k, v in (daemon_env() if base is None else base).items()
        if k not in names and not (prefixes and k.startswith(prefixes))
    }
    env["TERM"] = "xterm-256color"
    env["COLORTERM"] = "truecolor"
    env.update(driver_env or {})
    env.update(caller_env or {})
    return env


def resolve(program: str, env: Mapping[str, str]) -> str | None:
    """Absolute path of `program` looked up on the child's PATH (None if not found / not executable)."""
    if os.sep in program or (os.altsep and os.altsep in program):
        return program if os.access(program, os.X_OK) and os.path.isfile(program) else None
    return shutil.which(program, path=env.get("PATH", os.defpath))


def check_exec_args(argv: list[str], env: Mapping[str, str], cwd: str | None) -> None:
    """Refuse what exec cannot take, before forking (a failing exec in a forked daemon child is a hazard):
    NUL anywhere, empty env names, '=' in env names. Raises ValueError naming the offender."""
    for i, arg in enumerate(argv):
        if "\0" in arg:
            raise ValueError(f"argument {i} contains a NUL byte")
    if cwd is not None and "\0" in cwd:
        raise ValueError("working_dir contains a NUL byte")
    for k, v in env.items():
        if not k or "=" in k or "\0" in k:
            raise ValueError(f"invalid environment variable name {k!r}")
        if "\0" in v:
            raise ValueError(f"environment variable {k} contains a NUL byte")


SPAWN_THREADS = 32
"""Spawns run side by side in their own threads (`spawn_executor`): each waits for its child's exec, which on
a machine saturated by starting CLIs takes tens to hundreds of milliseconds of waiting for a CPU and almost
none of using one; the loop's default executor (a few threads) would queue them behind one another."""

_spawn_pool: ThreadPoolExecutor | None = None


def spawn_executor() -> ThreadPoolExecutor:
    """The threads `Session.spawn_async` runs `spawn` in (SPAWN_THREADS, made on first use). Kept for the
    daemon's life, never shut down or swapped for a pool that retires idle threads: a CLI's parent-death
    signal (PR_SET_PDEATHSIG) fires when the *thread* that spawned it exits."""
    global _spawn_pool
    if _spawn_pool is None:
        _spawn_pool = ThreadPoolExecutor(SPAWN_THREADS, thread_name_prefix="litbridge-spawn")
    return _spawn_pool


def spawn(
    argv: list[str],
    env: dict[str, str],
    cwd: str | None,
    transport: str = "pty",
    columns: int = COLUMNS,
    lines: int = LINES,
    method: str | None = None,
    nice: int = 0,
) -> ChildProcess:
    """Start the program (argv[0] should already be resolved). Raises SpawnError. `method` picks how a child
    is started on Unix (`vfork`, `fork`; default `spawner.spawn_method()`), for tests and benchmarks; `nice`
    > 0 runs it that many nice levels below the daemon (`lower_priority`); the cgroup in use (`cgroup.use`,
    `serve --cli-cgroup`) takes it before it runs (vfork) or right after (the fork paths); the CLIs' CPUs
    (`cpus.use_for_clis`, `serve --cli-cpus`) right after, every path (`cpus.apply`)."""
    priority = priority_for(nice) if nice > 0 and sys.platform != "win32" else None
    child = _start(argv, env, cwd, transport, columns, lines, method, priority)
    if sys.platform != "win32":
        cpus.apply(child.pid)
    if getattr(child, "method", None) != "vfork" and sys.platform != "win32":  # the fork paths: afterwards
        cgroup.join(child.pid)
        if priority is not None:
            lower_priority(child.pid, nice)
    return child


def priority_for(nice: int) -> Priority:
    """(the nice of a CLI started `nice` levels below the daemon, capped at 19; its session group's nice, or
    None without autogroup here). What the vfork path gives the child before its exec; `lower_priority` gives
    it to a process already running."""
    value = min(NICE_MAX, os.getpriority(os.PRIO_PROCESS, 0) + max(0, nice))
    mine = _autogroup("self")
    return value, None if mine is None else min(NICE_MAX, mine[1] + max(0, nice))


def lower_priority(pid: int, nice: int) -> tuple[int, int | None]:
    """Run process `pid` (a CLI just started, leading its own session) `nice` levels below the daemon (capped
    at 19): its own nice value and, on Linux with autogroup scheduling, its session's group. Under autogroup
    the kernel shares the CPU between sessions first, so a process's own nice only ranks it inside its
    session, and a few hundred CLIs, each leading a session, each weigh as much as the daemon: the group's
    nice is what keeps the daemon's events prompt when the CLIs saturate the machine. A group the daemon
    shares is never touched. Best effort (a failure is logged, the CLI runs on); what the CLI starts later
    inherits both. -> (the process's nice, its session group's nice or None where that was not set)."""
    value, group = priority_for(nice)
    try:
        os.setpriority(os.PRIO_PROCESS, pid, value)
    except OSError as exc:
        log.warning("cannot lower the priority of pid %d: %s", pid, exc)
    mine, theirs = _autogroup("self"), _autogroup(str(pid))
    if group is None or mine is None or theirs is None or theirs[0] == mine[0]:  # none here, or the daemon's
        return value, None
    try:
        with open(f"/proc/{pid}/autogroup", "w") as f:
            f.write(str(group))
    except OSError as exc:
        log.warning("cannot lower the session group priority of pid %d: %s", pid, exc)
        return value, None
    return value, group


def _autogroup(pid: str) -> tuple[str, int] | None:
    """A process's autogroup and its nice value (`/proc/<pid>/autogroup`: "/autogroup-N nice V"), or None
    (not Linux, a kernel without autogroup, a process whose scheduling group is a cgroup's rather than an
    autogroup — the file then reads empty, as in many containers — or the process gone)."""
    try:
        with open(f"/proc/{pid}/autogroup") as f:
            name, _, value = f.read().split()
        return name, int(value)
    except (OSError, ValueError):
        return None


def _start(
    argv: list[str],
    env: dict[str, str],
    cwd: str | None,
    transport: str,
    columns: int,
    lines: int,
    method: str | None,
    priority: Priority | None = None,
) -> ChildProcess:
    try:
        check_exec_args(argv, env, cwd)
    except ValueError as exc:
        raise SpawnError(f"spawn failed: {exc}") from exc
    if cwd is not None and not os.path.isdir(cwd):
        raise SpawnError(f"spawn failed: working_dir does not exist: {cwd}")
    if transport == "pipes":
        from litbridge.pty.pipes import PipeProcess

        return PipeProcess(argv, env, cwd, method, priority)
    if sys.platform == "win32":  # pragma: no cover
        from litbridge.pty.windows import WinPty

        return WinPty(argv, env, cwd, columns, lines)
    from litbridge.pty.unix import UnixPty

    return UnixPty(argv, env, cwd, columns, lines, method, priority)
