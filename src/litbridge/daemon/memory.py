"""Give memory back to the system after bursts of frees (ended sessions, cut-off clients).

An ended session leaves reference cycles that only a full garbage collection frees, and glibc keeps freed
memory in its arenas: a daemon that ran 2000 short sessions stayed at its peak RSS with no session left.
`trim_soon()` asks for one `gc.collect()` then `malloc_trim(0)` shortly after, debounced (TRIM_DELAY) and
rate-limited (TRIM_EVERY), which returns that memory. `malloc_trim` is skipped where the C library has none
(musl, macOS, BSD); the collection still runs.

`configure()` (once, at daemon start) pins glibc's mmap threshold: by default it rises to the size of the
largest block freed, after which every transient megabyte-sized buffer (a `replace` line, a turn's text)
lands in the heap and fragments it; pinned, such buffers are mapped and unmapped and their memory returns
at once.

`tune_gc()` (once, once the daemon is up) sets the collector for a loop that makes short-lived objects by the
thousand a second (timers, events, readings): a young generation of GC_YOUNG objects rather than 700, so most of
them are gone by refcount before a collection walks them (300 streaming sessions, their creates and turns: the
collector's CPU fell from 154 to 47 ms, 3.2 to 1.1 % of the daemon's; its longest young collection rose from 3.6
to 8.9 ms, and the one full collection of 18 ms before did not run), and what the start-up
imported is frozen out of the full collections.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import logging
import os
import sys
from collections.abc import Callable

log = logging.getLogger(__name__)

TRIM_DELAY = 1.0  # seconds: frees that come in a burst (a kill of many sessions) are trimmed once
TRIM_EVERY = 5.0  # seconds at least between two runs (a full collection costs a few ms per 100k objects)
MMAP_THRESHOLD = 256 * 1024  # bytes: larger allocations get their own mapping
_M_MMAP_THRESHOLD = -3  # mallopt parameter (malloc.h)


def _libc_function(name: str, argtypes: list[type]) -> Callable[..., int] | None:
    """`name` from the libc the interpreter is linked against (glibc on Linux), or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None
    fn.argtypes = argtypes
    fn.restype = ctypes.c_int
    return fn  # type: ignore[no-any-return]


_malloc_trim = _libc_function("malloc_trim", [ctypes.c_size_t])


def configure() -> bool:
    """Pin the mmap threshold (glibc), unless the environment already tunes it; True when set."""
    if _malloc_trim is None or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    if "mmap_threshold" in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    mallopt = _libc_function("mallopt", [ctypes.c_int, ctypes.c_int])
    return mallopt is not None and mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1


GC_YOUNG = 10_000
"""Objects allocated (net) between two young collections; Python's default is 700."""


def tune_gc() -> None:
    """See the module docstring: a larger young generation, and the start-up's objects frozen."""
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG, middle, old)
    gc.collect()  # start-up's garbage is freed, not frozen for good
    gc.freeze()


_pending: asyncio.TimerHandle | None = None
_pending_loop: asyncio.AbstractEventLoop | None = None
_last_run = float("-inf")


def trim_now() -> bool:
    """Collect cycles and return freed heap to the system now; False when this C library cannot trim."""
    gc.collect()
    if _malloc_trim is None:
        return False
    _malloc_trim(0)
    return True


def trim_soon() -> None:
    """One `trim_now()` TRIM_DELAY seconds from now (TRIM_EVERY after the previous one at the earliest),
    unless one is already due. Call from the event loop."""
    global _pending, _pending_loop
    loop = asyncio.get_running_loop()
    if _pending is not None and _pending_loop is loop:
        return
    delay = max(TRIM_DELAY, _last_run + TRIM_EVERY - loop.time())
    _pending, _pending_loop = loop.call_later(delay, _run), loop


def _run() -> None:
    global _pending, _pending_loop, _last_run
    loop = _pending_loop
    _pending = _pending_loop = None
    if loop is not None:
        _last_run = loop.time()
    try:
        trim_now()
    except Exception as exc:  # housekeeping never takes the loop down
        log.debug("malloc_trim failed: %s", exc)
