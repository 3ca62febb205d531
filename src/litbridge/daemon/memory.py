"""Give memory back to the system after bursts of frees (ended sessions, cut-off clients).

An ended session leaves reference cycles that only a full garbage collection frees, and glibc keeps freed
memory in its arenas: a daemon that ran 2000 short sessions stayed at its peak RSS with no session left.
`trim_soon()` asks for one `gc.collect()` then `malloc_trim(0)` shortly after, debounced (TRIM_DELAY) and
rate-limited (TRIM_EVERY), which returns that memory. `malloc_trim` is skipped where the C library has none
(musl, macOS, BSD); the collection still runs.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import logging
import sys
from collections.abc import Callable

log = logging.getLogger(__name__)

TRIM_DELAY = 1.0  # seconds: frees that come in a burst (a kill of many sessions) are trimmed once
TRIM_EVERY = 5.0  # seconds at least between two runs (a full collection costs a few ms per 100k objects)


def _find_malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None).malloc_trim  # the libc the interpreter is linked against
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn  # type: ignore[no-any-return]


_malloc_trim = _find_malloc_trim()
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
