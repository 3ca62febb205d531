"""An append-only JSONL record (Claude's transcript, Codex's rollout, Gemini's chat log), read as it grows.

Whole lines only (a partial last line waits for its newline), corrupt lines skipped and counted, a file that
appears late read from its start, and a file truncated or replaced under the same name (a new inode) read again
from its start: the CLI started that record over, and the old copy is never read again.
"""

from __future__ import annotations

import logging
import os
import re
import weakref
from pathlib import Path
from typing import Any, ClassVar

import orjson

log = logging.getLogger(__name__)

KEEP_OPEN = os.name != "nt"
"""Whether a followed file's descriptor stays open between polls. On Windows an open handle would keep the CLI
from replacing or deleting its own record, so each poll opens and closes it there."""


def stat_signature(path: Path | None) -> tuple[int, int, int] | None:
    """(inode, size, mtime in ns) of `path`, or None when it is not there: what a follower compares between reads."""
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


class JsonlFile:
    """New complete entries of one JSONL file per `poll()` (a list of dicts; other JSON values count as corrupt).

    `from_start=False` skips what the file holds when it is pinned (a resumed conversation's history); a file that
    does not exist yet is read from its start once it appears.

    A poll is a stat of the path and a `pread` of what was added, on a descriptor kept open while the path names
    the same file (`KEEP_OPEN`; on Windows the descriptor is closed after each poll): the open, fstat and close a
    poll made before were two thirds of its system calls,
    and a busy session polls on every record write. The stat also gives `stamp`, the signature (`signature()`'s
    form) of what the poll read, so a follower need not stat the file again to know it.

    `skip` (a subclass's): lines its reader never needs, told by their first bytes without parsing them. A CLI's
    record can be mostly such lines (Claude Code writes its whole system prompt and request shape, tens of KB,
    into every conversation), and a parse is the dearest step of a poll; skipped lines are counted (`skipped`).
    """

    skip: ClassVar[re.Pattern[bytes] | None] = None

    def __init__(self, path: Path | None = None, *, from_start: bool = True) -> None:
        self.path: Path | None = None
        self.offset = 0
        self.corrupt_lines = 0
        self.skipped = 0
        self.stamp: tuple[int, int, int] | None = None
        """(inode, size, mtime in ns) of the file as the last poll found it, before it read; None: not there. A
        source with a `stamp` is one `RecordFollower.read` need not stat itself."""
        self._buf = b""
        self._ino: int | None = None
        self._fd: int | None = None  # kept open (KEEP_OPEN) on the file of inode `_ino`
        self._closer: weakref.finalize | None = None  # closes `_fd` if this object goes without `close()`
        if path is not None:
            self.pin(path, from_start=from_start)

    def close(self) -> None:
        """Close the kept descriptor (the next poll opens the file again)."""
        closer, self._closer, self._fd = self._closer, None, None
        if closer is not None:
            closer()

    def pin(self, path: Path, *, from_start: bool = True) -> None:
        """Follow `path` from now on (its start, or its current end)."""
        self.close()
        self.path, self.offset, self._buf, self._ino = Path(path), 0, b"", None
        if not from_start:
            try:
                st = self.path.stat()
            except OSError:
                return
            self.offset, self._ino = st.st_size, st.st_ino

    def signature(self) -> tuple[int, int, int] | None:
        """(inode, size, mtime) of the file, a stat only: the same stamp means nothing new to read."""
        return stat_signature(self.path)

    def poll(self) -> list[dict[str, Any]]:
        """New complete entries since the last poll."""
        if self.path is None:
            return []
        try:
            data = self._read_new()
        except OSError:  # not there (yet, or for a moment), a folder, unreadable: nothing now
            self.stamp = None
            self.close()
            return []
        finally:
            if not KEEP_OPEN:
                self.close()
        if not data:
            return []
        self.offset += len(data)
        data = self._buf + data
        cut = data.rfind(b"\n")
        if cut < 0:
            self._buf = data
            return []
        self._buf = data[cut + 1 :]
        out: list[dict[str, Any]] = []
        skip = self.skip
        for line in data[:cut].split(b"\n"):
            line = line.strip()
            if not line:
                continue
            if skip is not None and skip.match(line):
                self.skipped += 1
                continue
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                obj = None
            if isinstance(obj, dict):
                out.append(obj)
            else:
                self.corrupt_lines += 1
                log.warning("%s: skipping a line that is not a JSON object (%d bytes)", self.path, len(line))
        return out

    def _read_new(self) -> bytes:
        """What was appended since the last poll, read through the kept descriptor (opened again when the path
        names another file, or after `close()`)."""
        assert self.path is not None
        st = os.stat(self.path)
        self.stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        if self._fd is None or st.st_ino != self._ino:
            self.close()
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
            self._closer = weakref.finalize(self, os.close, fd)
            self._fd = fd
            if os.fstat(fd).st_ino != st.st_ino:  # replaced again since the stat: read it at the next poll
                self.close()
                self.stamp = None
                return b""
        return self._take(self._fd, st.st_ino, st.st_size)

    def _take(self, fd: int, ino: int, size: int) -> bytes:
        """The bytes of `fd` past `offset` up to `size`; from its start when it is another file than the last
        poll's or shorter than what was read (the CLI started it over)."""
        if self._ino is not None and (ino != self._ino or size < self.offset):
            self.offset, self._buf = 0, b""  # replaced or truncated: read it again from the start
        self._ino = ino
        if size <= self.offset:
            return b""
        return _read_range(fd, self.offset, size - self.offset)


def _read_range(fd: int, offset: int, size: int) -> bytes:
    """`size` bytes of `fd` from `offset` (fewer at its end), by `pread` where there is one."""
    pread = getattr(os, "pread", None)
    if pread is None:  # Windows: seek and read
        os.lseek(fd, offset, os.SEEK_SET)
        parts = []
        while size > 0:
            chunk = os.read(fd, size)
            if not chunk:
                break
            parts.append(chunk)
            size -= len(chunk)
        return b"".join(parts)
    parts = []
    while size > 0:
        chunk = pread(fd, size, offset)
        if not chunk:
            break
        parts.append(chunk)
        offset += len(chunk)
        size -= len(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)
