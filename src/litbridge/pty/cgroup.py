"""One CPU group for every CLI the daemon starts (`serve --cli-cgroup DIR`, Linux).

`--cli-nice` lowers each CLI and, under autogroup scheduling, each CLI's session group. But every CLI leads its
own session, so each is its own group: a thousand CLIs starting or streaming at once weigh a thousand groups
against the daemon's one, however low each is. Put into one cgroup, they weigh what that cgroup's weight says
(`cpu.shares` in cgroup v1, `cpu.weight` in v2) whatever their number, and the daemon keeps its share of a CPU.

The daemon does not create the cgroup or set its weight; the machine's owner does, once (as root on cgroup v1:
`mkdir /sys/fs/cgroup/cpu/litbridge-clis && echo 256 > /sys/fs/cgroup/cpu/litbridge-clis/cpu.shares`; on v2, a
delegated subtree, e.g. a systemd unit with `Delegate=yes`). `use(DIR)` opens `DIR/cgroup.procs` once and tries
it on a throwaway child; the vfork spawner writes each child's pid into it before the exec (`fd()`; a refused
move is logged), the fork paths right after the CLI started (`join(pid)`: what it started before stays out).
A process started this way leaves autogroup scheduling (which applies to the root group only); its nice still
ranks it among the other CLIs.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

_fd = -1
_path: Path | None = None

WEIGHT_FILES = ("cpu.shares", "cpu.weight")
"""A cgroup's CPU weight, v1 and v2: without either, its CPU controller is off and grouping changes nothing."""


class CgroupError(ValueError):
    """`--cli-cgroup` names something the daemon cannot put processes into."""


def use(directory: str | os.PathLike[str] | None) -> Path | None:
    """Start every CLI in the cgroup `directory` from now on (None: where the daemon is, the default). Called
    once, before any spawn runs (`serve` does, at start): a spawn already under way would write to the old fd.

    Raises CgroupError when it is not a cgroup directory whose `cgroup.procs` this process may write, or when the
    cgroup refuses a process (tried with a throwaway child: cgroup v2 refuses one that has children of its own
    with controllers on, or outside the daemon's delegated subtree)."""
    global _fd, _path
    if directory is None:
        _close()
        return None
    procs = Path(directory) / "cgroup.procs"
    try:
        fd = os.open(procs, os.O_WRONLY | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EISDIR):
            raise CgroupError(f"{directory} is not a cgroup directory (no cgroup.procs in it)") from None
        raise CgroupError(f"cannot write {procs}: {exc.strerror}") from None
    try:
        _probe(fd)
    except OSError as exc:
        os.close(fd)
        raise CgroupError(f"{directory} refuses processes: {exc.strerror}") from None
    _close()
    _fd, _path = fd, procs.parent
    if not any((_path / name).exists() for name in WEIGHT_FILES):
        log.warning(
            "the cgroup %s has no CPU weight (%s): the CLIs are grouped there but not weighed against the daemon "
            "(on cgroup v2, enable the cpu controller in its parent's cgroup.subtree_control)",
            _path,
            " / ".join(WEIGHT_FILES),
        )
    return _path


def _probe(fd: int) -> None:
    """Move a throwaway child (forked, waiting on a pipe, then gone) through `fd`; raises the move's OSError."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child only waits for the parent to let go
        os.close(w)
        os.read(r, 1)
        os._exit(0)
    os.close(r)
    try:
        os.write(fd, str(pid).encode())
    finally:
        os.close(w)
        os.waitpid(pid, 0)


def _close() -> None:
    global _fd, _path
    fd, _fd, _path = _fd, -1, None
    if fd >= 0:
        with contextlib.suppress(OSError):
            os.close(fd)


def fd() -> int:
    """The open `cgroup.procs` of the CLIs' cgroup, or -1 for none (what the vfork spawner's child writes to)."""
    return _fd


def path() -> Path | None:
    """The CLIs' cgroup directory, or None."""
    return _path


def join(pid: int) -> bool:
    """Move process `pid` (a CLI just started by a fork path) into the CLIs' cgroup; False when there is none
    or the move failed (`refused`; the CLI runs on where it is)."""
    if _fd < 0:
        return False
    try:
        os.write(_fd, str(pid).encode())
    except OSError as exc:
        refused(pid, exc.errno or 0)
        return False
    return True


def refused(pid: int, err: int) -> None:
    """Say that the cgroup refused CLI `pid` (errno `err`), by either spawn path: it runs on in the daemon's."""
    log.warning("pid %d stays in the daemon's cgroup: %s refused it (%s)", pid, _path, os.strerror(err))
