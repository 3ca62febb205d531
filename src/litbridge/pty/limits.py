"""The daemon's open-file limit: raised to its hard limit at start, given back to the CLIs it starts.

Every session holds descriptors for its whole life (its PTY, its CLI's `/proc/<pid>/stat`, its record), so a
daemon under a login's usual soft limit of 1024 ran out of them at a few hundred sessions: a create failed at
its PTY. `raise_open_files()` lifts the soft limit to the hard one (the daemon's own, as Go's runtime does for
every program), and the children get the soft limit the daemon started with back before their exec (the
compiled spawner and the fork path's preexec alike): a program that still uses `select()` keeps the limit it
was written for.
"""

from __future__ import annotations

import logging

try:
    import resource
except ImportError:  # Windows: no such limit to raise
    resource = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

MACOS_OPEN_MAX = 10240
"""macOS refuses a soft limit above OPEN_MAX even when the hard limit says unlimited."""

_child_soft: int | None = None


def raise_open_files() -> tuple[int, int] | None:
    """Lift this process's soft open-file limit to its hard limit; -> (before, after), or None when there is no
    such limit or it was already there. The children started afterwards get `before` back (`child_soft`)."""
    global _child_soft
    if resource is None:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    bounded = hard != resource.RLIM_INFINITY
    for target in (hard, MACOS_OPEN_MAX):
        if target == resource.RLIM_INFINITY or target <= soft or (bounded and target > hard):
            continue
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            continue
        raised = resource.getrlimit(resource.RLIMIT_NOFILE)[0]  # what the kernel made of it (macOS caps it)
        if raised <= soft:
            continue
        if _child_soft is None:
            _child_soft = soft
            try:
                from litbridge.pty._spawn import set_child_open_files
            except ImportError:  # the pure-Python package: the fork path's preexec gives it back
                pass
            else:
                set_child_open_files(soft)
        log.info("open-file limit raised from %d to %d", soft, raised)
        return soft, raised
    return None


def child_soft() -> int | None:
    """The soft open-file limit a started program gets (the daemon's before `raise_open_files`), or None: the
    daemon's own, unchanged."""
    return _child_soft
