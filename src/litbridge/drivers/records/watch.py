"""Folder watches for the record followers: Linux inotify through `inotify_simple`, one instance per event loop.

Sessions share one inotify instance (the per-user limit is 128 instances), closed when the last watch goes; a
folder that does not exist yet is awaited through its nearest existing ancestor. Where inotify is missing (other
platforms, or an inotify failure) `DirWatch.start` returns None and the follower polls on its timer instead.

The instance's fd is read from the loop (`add_reader`), everything pending at once (`read(timeout=0)`: plain
(wd, mask, cookie, name) tuples, about a microsecond an event, where a path object per event cost ten), so
closing the last watch removes the reader and closes the fd at once, with no reader task left to unwind.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

try:
    if not sys.platform.startswith("linux"):
        raise ImportError("inotify is Linux's")
    from inotify_simple import INotify, flags
except (ImportError, OSError, AttributeError):  # not Linux (no inotify in the C library)
    INotify = None  # type: ignore[assignment,misc]
    IN_MODIFY = IN_CREATE = IN_MOVED_TO = IN_IGNORED = IN_Q_OVERFLOW = 0
else:
    IN_MODIFY, IN_CREATE, IN_MOVED_TO = int(flags.MODIFY), int(flags.CREATE), int(flags.MOVED_TO)
    IN_IGNORED, IN_Q_OVERFLOW = int(flags.IGNORED), int(flags.Q_OVERFLOW)

MASK = IN_MODIFY | IN_CREATE | IN_MOVED_TO
Callback = Callable[[list[tuple[int, str]]], None]


class _Hub:
    """One inotify instance read on `loop`; callbacks per watch descriptor, each called once per batch read."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        assert INotify is not None
        self.ino: Any = INotify(nonblocking=True)
        self.loop, self.fd = loop, self.ino.fileno()
        self.callbacks: dict[int, list[Callback]] = {}
        try:
            loop.add_reader(self.fd, self._readable)
        except Exception:
            self.ino.close()
            raise

    def add(self, path: str, cb: Callback) -> int | None:
        try:
            wd = int(self.ino.add_watch(path, MASK))
        except OSError:
            return None
        self.callbacks.setdefault(wd, []).append(cb)  # a folder watched twice gets the same wd
        return wd

    def remove(self, wd: int, cb: Callback) -> None:
        cbs = self.callbacks.get(wd)
        if cbs is None:
            return
        if cb in cbs:
            cbs.remove(cb)
        if not cbs:
            del self.callbacks[wd]
            try:
                self.ino.rm_watch(wd)
            except OSError:  # EINVAL when the folder is gone: its watch went with it
                pass

    def _readable(self) -> None:
        fired: dict[int, list[tuple[int, str]]] = {}
        overflow: list[tuple[int, str]] = []
        try:
            events = self.ino.read(timeout=0)
        except (BlockingIOError, InterruptedError):
            return
        except (OSError, ValueError) as exc:
            log.warning("inotify read failed: %s", exc)
            return
        callbacks = self.callbacks
        for wd, mask, _cookie, name in events:
            if mask & IN_Q_OVERFLOW:  # the kernel queue overflowed: events were lost, everyone re-reads
                overflow.append((mask, name))
            elif wd in callbacks:  # (a watch removed a moment ago may still have events queued: nobody's)
                fired.setdefault(wd, []).append((mask, name))
        if overflow:
            for wd in self.callbacks:
                fired.setdefault(wd, []).extend(overflow)
        for wd, events in fired.items():
            gone = any(m & IN_IGNORED for m, _ in events)  # the folder was removed: its watch is gone
            cbs = self.callbacks.pop(wd, []) if gone else list(self.callbacks.get(wd, ()))
            for cb in cbs:
                try:
                    cb(events)
                except Exception:
                    log.exception("folder watch callback")

    def close(self) -> None:
        try:
            self.loop.remove_reader(self.fd)
        except Exception:  # the loop is closed already
            pass
        self.ino.close()
        self.fd = -1


_hubs: dict[asyncio.AbstractEventLoop, _Hub] = {}


def available() -> bool:
    """inotify can be used here (Linux, inotify_simple installed)."""
    return INotify is not None


def open_fds() -> int:
    """Inotify instances this module holds open (for tests: 0 once every watch is closed)."""
    return sum(1 for h in _hubs.values() if h.fd >= 0)


class DirWatch:
    """Calls `on_change()` when a file in `directory` is created, moved in or written (and `accept(mask, name)`,
    when given, is true for one of the batch's events: sessions sharing a folder skip each other's writes).

    While `directory` does not exist, its nearest existing ancestor is watched and the watch moves down as the
    folders appear (a change callback is also made then: the file may already be there).
    """

    def __init__(
        self,
        hub: _Hub,
        directory: Path,
        on_change: Callable[[], None],
        accept: Callable[[int, str], bool] | None = None,
    ) -> None:
        self.hub, self.directory, self.on_change, self.accept = hub, Path(directory), on_change, accept
        self.wd: int | None = None
        self.watched: Path | None = None
        self._next_name = ""  # the folder under `watched` on the way to `directory` ("" once it is watched)
        self.closed = False

    @classmethod
    def start(
        cls,
        loop: asyncio.AbstractEventLoop,
        directory: Path,
        on_change: Callable[[], None],
        accept: Callable[[int, str], bool] | None = None,
    ) -> DirWatch | None:
        """A live watch, or None where inotify is unavailable (the caller keeps polling)."""
        if not available():
            return None
        hub = _hubs.get(loop)
        if hub is None or hub.fd < 0:
            try:
                hub = _hubs[loop] = _Hub(loop)
            except (OSError, NotImplementedError, RuntimeError, ValueError, AttributeError) as exc:
                log.info("inotify unavailable (%s): the follower polls instead", exc)
                return None
        w = cls(hub, directory, on_change, accept)
        if not w._arm():
            w.close()
            return None
        return w

    @property
    def ready(self) -> bool:
        """True once the target folder itself is watched (no folder left on the way: cheaper than comparing
        two Paths)."""
        return self.watched is not None and not self._next_name

    def _arm(self) -> bool:
        """Watch the deepest existing folder on the way to ours. Repeated until stable: a folder created just
        before the watch on its parent took effect sends no event, so it is looked for once more after."""
        for _ in range(len(self.directory.parts) + 1):
            target: Path | None = self.directory
            while target is not None and not target.is_dir():
                target = target.parent if target.parent != target else None
            if target is None:
                return False
            if target == self.watched:
                return True
            wd = self.hub.add(str(target), self._fired)
            if wd is None:
                return self.wd is not None
            if self.wd is not None and self.wd != wd:
                self.hub.remove(self.wd, self._fired)
            self.wd, self.watched = wd, target
            depth = len(target.parts)
            self._next_name = self.directory.parts[depth] if len(self.directory.parts) > depth else ""
        return True

    def refresh(self) -> bool:
        """For a fallback timer: move the watch down if our folder appeared unseen. True when that happened."""
        if self.closed or self.ready:
            return False
        watched = self.watched
        if watched is not None and not os.path.isdir(watched / self._next_name) and watched.is_dir():
            return False  # the next folder on our way is still missing: the watch stays (two stats, no walk)
        self._arm()
        return self.ready

    def _fired(self, events: list[tuple[int, str]]) -> None:
        if self.closed:
            return
        if any(m & IN_IGNORED for m, _ in events):
            self.wd = self.watched = None  # our folder went away: wait for it again from an ancestor
            self._arm()
        elif not self.ready:
            if not self._toward_us(events):
                return  # other sessions' folders appearing beside the one we wait for: nothing to look at
            self._arm()  # the next folder on our way changed: maybe our folder (and file) appeared
            if not self.ready:
                return  # still no folder, so no file to read
        elif self.accept is not None and not any(m & IN_Q_OVERFLOW or self.accept(m, n) for m, n in events):
            return
        self.on_change()

    def _toward_us(self, events: list[tuple[int, str]]) -> bool:
        """Whether events on the watched ancestor may concern our folder: one names the next folder on our way
        (or none, or the queue overflowed). A burst of creates makes one folder per session under the same
        ancestor, and each waiting watch looking at the disk for every one of them was quadratic."""
        nxt = self._next_name
        return not nxt or any(not n or n == nxt or m & IN_Q_OVERFLOW for m, n in events)

    def close(self) -> None:
        """Drop the watch; the shared instance is closed with the last one."""
        if self.closed:
            return
        self.closed = True
        if self.wd is not None:
            self.hub.remove(self.wd, self._fired)
            self.wd = None
        hub = self.hub
        if not hub.callbacks and hub.fd >= 0:
            hub.close()
            if _hubs.get(hub.loop) is hub:
                del _hubs[hub.loop]
