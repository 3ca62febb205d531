"""Event-driven directory watch for the drivers that follow a CLI's files on disk (Claude's transcript, Codex's
rollout, Gemini's chat): Linux inotify through ctypes, one fd per event loop. Knows no CLI.

Sessions share one inotify instance (the per-user limit is 128 instances) which is closed when the last watch
goes; a folder that does not exist yet is awaited through its nearest existing ancestor. Other platforms (or an
inotify failure) get `None` from `DirWatch.start` and the driver keeps its timer poll. No polling here.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import logging
import os
import struct
import sys
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

IN_MODIFY, IN_CREATE, IN_MOVED_TO, IN_IGNORED, IN_Q_OVERFLOW = 0x2, 0x100, 0x80, 0x8000, 0x4000
MASK = IN_MODIFY | IN_CREATE | IN_MOVED_TO
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (then `len` bytes of NUL-padded name)

_libc: ctypes.CDLL | None = None


def _lib() -> ctypes.CDLL | None:
    global _libc
    if _libc is None and sys.platform.startswith("linux"):
        try:
            lib = ctypes.CDLL(None, use_errno=True)
            lib.inotify_init1, lib.inotify_add_watch, lib.inotify_rm_watch  # noqa: B018 - present?
            _libc = lib
        except (OSError, AttributeError):
            return None
    return _libc


class _Hub:
    """One inotify fd registered with `loop.add_reader`; callbacks per watch descriptor, run once per read."""

    def __init__(self, loop: asyncio.AbstractEventLoop, lib: ctypes.CDLL) -> None:
        fd = lib.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"inotify_init1: {os.strerror(err)}")
        self.loop, self.lib, self.fd = loop, lib, fd
        self.callbacks: dict[int, list[Callable[[list[tuple[int, str]]], None]]] = {}
        loop.add_reader(fd, self._readable)

    def add(self, path: str, cb: Callable[[list[tuple[int, str]]], None]) -> int | None:
        wd = self.lib.inotify_add_watch(self.fd, os.fsencode(path), MASK)
        if wd < 0:
            return None
        self.callbacks.setdefault(wd, []).append(cb)
        return wd

    def remove(self, wd: int, cb: Callable[[list[tuple[int, str]]], None]) -> None:
        cbs = self.callbacks.get(wd)
        if cbs is None:
            return
        try:
            cbs.remove(cb)
        except ValueError:
            pass
        if not cbs:
            del self.callbacks[wd]
            self.lib.inotify_rm_watch(self.fd, wd)  # EINVAL when the folder is gone: harmless

    def _readable(self) -> None:
        fired: dict[int, list[tuple[int, str]]] = {}
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                log.warning("inotify read failed: %s", exc)
                break
            if not data:
                break
            pos = 0
            while pos + _EVENT.size <= len(data):
                wd, mask, _cookie, length = _EVENT.unpack_from(data, pos)
                name = data[pos + _EVENT.size : pos + _EVENT.size + length].rstrip(b"\0")
                pos += _EVENT.size + length
                fired.setdefault(wd, []).append((mask, os.fsdecode(name)))
        if -1 in fired:  # the kernel queue overflowed: events were lost, everyone re-reads
            overflow = fired.pop(-1)
            for wd in self.callbacks:
                fired.setdefault(wd, []).extend(overflow)
        for wd, events in fired.items():
            gone = any(m & IN_IGNORED for m, _ in events)  # the folder was removed: its watch is gone
            cbs = self.callbacks.pop(wd, []) if gone else list(self.callbacks.get(wd, ()))
            for cb in cbs:
                try:
                    cb(events)
                except Exception:
                    log.exception("directory watch callback")

    def close(self) -> None:
        try:
            self.loop.remove_reader(self.fd)
        except Exception:  # the loop is closed already
            pass
        os.close(self.fd)
        self.fd = -1


_hubs: dict[asyncio.AbstractEventLoop, _Hub] = {}


def open_fds() -> int:
    """Inotify instances this module holds open (for tests: 0 once every watch is closed)."""
    return sum(1 for h in _hubs.values() if h.fd >= 0)


class DirWatch:
    """Calls `on_change()` when a file in `directory` is created, moved in or written (and `accept(mask, name)`,
    when given, is true for one of the batch's events: sessions sharing a project folder skip each other's writes).

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
        lib = _lib()
        if lib is None:
            return None
        hub = _hubs.get(loop)
        if hub is None or hub.fd < 0:
            try:
                hub = _hubs[loop] = _Hub(loop, lib)
            except (OSError, NotImplementedError, RuntimeError) as exc:
                log.info("inotify unavailable (%s): the driver polls instead", exc)
                return None
        w = cls(hub, directory, on_change, accept)
        if not w._arm():
            w.close()
            return None
        return w

    @property
    def ready(self) -> bool:
        """True once the target folder itself is watched."""
        return self.watched == self.directory

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
        return True

    def refresh(self) -> bool:
        """For a fallback timer: move the watch down if our folder appeared unseen. True when that happened."""
        if self.closed or self.ready:
            return False
        self._arm()
        return self.ready

    def _fired(self, events: list[tuple[int, str]]) -> None:
        if self.closed:
            return
        if any(m & IN_IGNORED for m, _ in events):
            self.wd = self.watched = None  # our folder went away: wait for it again from an ancestor
            self._arm()
        elif not self.ready:
            self._arm()  # an ancestor changed: maybe our folder (and file) appeared
            if not self.ready:
                return  # still no folder, so no file to read (other sessions' folders appearing)
        elif self.accept is not None and not any(m & IN_Q_OVERFLOW or self.accept(m, n) for m, n in events):
            return
        self.on_change()

    def close(self) -> None:
        """Drop the watch; the shared fd is closed with the last one."""
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
