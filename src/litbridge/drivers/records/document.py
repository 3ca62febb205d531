"""A record the CLI rewrites whole (a JSON document such as a `messages.json`): re-read when it changed, and only
the entries not handed over before are handed over.

A change is a new (inode, size, mtime) signature: an atomic rename over the file and an in-place rewrite both
give one. A half-written document (the CLI is between its truncate and its last write) is read again on the next
poll. Entries are named by `key(entry)` when given (a message id: one that changes is handed over again when
`updates` is set), else by their place in the list (a shorter list is a conversation started over: read from
its start).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

import orjson

from litbridge.drivers.records.jsonl import stat_signature


def _as_list(doc: Any) -> list[Any]:
    return doc if isinstance(doc, list) else []


class JsonDocument:
    """New entries of one rewritten JSON file per `poll()`; `entries(doc)` picks the list out of the document."""

    def __init__(
        self,
        path: Path | None = None,
        *,
        entries: Callable[[Any], list[Any]] = _as_list,
        key: Callable[[Any], Hashable] | None = None,
        updates: bool = False,
        from_start: bool = True,
    ) -> None:
        self.entries, self.key, self.updates = entries, key, updates
        self.path: Path | None = None
        self.doc: Any = None
        self.bad_reads = 0
        self._sig: tuple[int, int, int] | None = None
        self._count = 0
        self._seen: dict[Hashable, bytes] = {}
        if path is not None:
            self.pin(path, from_start=from_start)

    def pin(self, path: Path, *, from_start: bool = True) -> None:
        """Follow `path` from now on; `from_start=False` takes what it holds now as already handed over."""
        self.path, self.doc, self._sig, self._count, self._seen = Path(path), None, None, 0, {}
        if not from_start:
            self.poll()

    def signature(self) -> tuple[Any, ...]:
        """(inode, size, mtime) of the document, a stat only, and the count of bad reads: a document caught
        mid-write is read again though its stamp did not move since."""
        return stat_signature(self.path), self.bad_reads

    def poll(self) -> list[Any]:
        if self.path is None:
            return []
        try:
            with open(self.path, "rb") as fh:
                st = os.fstat(fh.fileno())
                sig = (st.st_ino, st.st_size, st.st_mtime_ns)
                if sig == self._sig:
                    return []
                data = fh.read()
        except OSError:
            return []
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError:
            self.bad_reads += 1  # caught mid-write: the signature stays old, so the next poll reads it again
            return []
        self._sig, self.doc = sig, doc
        try:
            items = list(self.entries(doc))
        except (KeyError, TypeError, AttributeError, IndexError):
            items = []
        if self.key is None:
            if len(items) < self._count:
                self._count = 0  # a shorter list: the conversation started over
            new, self._count = items[self._count :], len(items)
            return new
        out = []
        for item in items:
            try:
                k = self.key(item)
            except (KeyError, TypeError, AttributeError, IndexError):
                continue
            stamp = orjson.dumps(item, option=orjson.OPT_SORT_KEYS) if self.updates else b""
            if k not in self._seen or (self.updates and self._seen[k] != stamp):
                self._seen[k] = stamp
                out.append(item)
        return out
