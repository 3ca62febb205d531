"""JSON-lines framing shared by the daemon and the client: orjson encode, lenient decode, 1 MiB lines.

`encode` makes one compact line; `LineSplitter` turns arbitrary byte chunks into lines (or `TooLarge`
markers for over-long lines, whose bytes are discarded up to the next newline); `decode` parses one line,
replacing invalid UTF-8 rather than failing. No sockets here: callers feed bytes from wherever they read.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import orjson

from litbridge.protocol.spec import MAX_LINE, ProtocolError


def encode(obj: Any) -> bytes:
    """One compact JSON line, `\\n`-terminated (non-str keys allowed, NaN never produced).

    Never fails on what a CLI handed a driver: sets/tuples become arrays, bytes text, other objects their
    str(); integers beyond 64 bits (stdlib-parsed tool input) go through the stdlib encoder, exactly."""
    try:
        return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS, default=_jsonable) + b"\n"
    except TypeError:
        return json.dumps(obj, default=_jsonable, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def _jsonable(value: Any) -> Any:
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def decode(line: bytes | str) -> Any:
    """Parse one line. Invalid UTF-8 is replaced by U+FFFD; bad JSON raises ProtocolError(bad_json)."""
    if isinstance(line, bytes):
        try:
            return orjson.loads(line)
        except orjson.JSONDecodeError:
            text = line.decode("utf-8", "replace")
            if text.encode("utf-8") == line:
                return _loads_or_raise(line)
            return _loads_or_raise(text)
    return _loads_or_raise(line)


def _loads_or_raise(data: bytes | str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError("bad_json", f"invalid JSON: {exc}") from None


class TooLarge:
    """Marker yielded in place of a line longer than the limit (its bytes were discarded)."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __repr__(self) -> str:
        return f"TooLarge({self.size})"


class LineSplitter:
    """Incremental splitter: feed(chunk) -> list of complete lines (bytes, `\\r\\n`/`\\n` stripped) or TooLarge."""

    def __init__(self, max_line: int = MAX_LINE) -> None:
        self.max_line = max_line
        self._buf = bytearray()
        self._discarding = 0  # >0 while skipping the rest of an over-long line (bytes skipped so far)

    def feed(self, data: bytes) -> list[bytes | TooLarge]:
        out: list[bytes | TooLarge] = []
        start = 0
        n = len(data)
        while start < n:
            nl = data.find(b"\n", start)
            if nl < 0:
                piece = data[start:]
                if self._discarding:
                    self._discarding += len(piece)
                else:
                    self._buf += piece
                    if len(self._buf) > self.max_line:
                        self._discarding = len(self._buf)
                        self._buf.clear()
                break
            piece = data[start:nl]
            start = nl + 1
            if self._discarding:
                out.append(TooLarge(self._discarding + len(piece)))
                self._discarding = 0
                continue
            if len(self._buf) + len(piece) > self.max_line:
                out.append(TooLarge(len(self._buf) + len(piece)))
                self._buf.clear()
                continue
            line = bytes(self._buf + piece) if self._buf else bytes(piece)
            self._buf.clear()
            if line.endswith(b"\r"):
                line = line[:-1]
            out.append(line)
        return out

    @property
    def pending(self) -> int:
        return len(self._buf)

    def take_rest(self) -> bytes:
        """The unterminated tail (at EOF), emptied."""
        rest = bytes(self._buf)
        self._buf.clear()
        return rest


async def read_lines(
    reader: asyncio.StreamReader, max_line: int = MAX_LINE
) -> AsyncIterator[bytes | TooLarge]:
    """Yield lines (blank ones skipped) or TooLarge markers from a stream until EOF."""
    splitter = LineSplitter(max_line)
    while True:
        chunk = await reader.read(65536)
        if not chunk:
            return
        for item in splitter.feed(chunk):
            if isinstance(item, TooLarge) or item.strip():
                yield item
