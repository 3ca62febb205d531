"""The screen primitives every CLI's rules use on their hot path, in one place.

The rules read a frame many times over (state, dialog, spinner, response) and the next frame is mostly the same
rows again. What they all do to rows is here, done once per frame or once per distinct row rather than per call:

- `strip_rows`: a `Terminal` hands its rows out as `term.ScreenRows`, one shared list per change whose
  right-stripped twin it already holds (rows that did not change are never stripped again);
- `last_match` / `first_match`: the last/first row in a range a marker pattern matches (the prompt box's rules,
  a dialog's footer), each distinct row text tested once per pattern (a bounded memo: a row that did not change
  is a dict lookup, not a regex run);
- `last_kind` / `first_kind`: the same for the rules' own per-row tests (a spinner row, a row that ends the
  scan), memoised per rules class;
- `cached_match`: a pattern's match object for a row (groups the rules read), once per distinct row text;
- `has_any`: does a row hold any of a set of characters (box drawing); `joined`: the frame as one text;
- `FrameFacts`: a rules' own per-row facts (bits) of each frame, kept from the last frame: which rows changed (a
  row the core did not re-render is the same str object, so an unchanged row costs an identity check) and only
  those looked up, with the questions an incremental reading asks (did a row change in this range, in which
  facts; which row last holds a fact) answered in one compiled loop each.

The loops run in the compiled core (`litbridge._core.ops`) when it is built; the functions below are the
fallback and what the compiled twin is tested against. Either way the result is what the plain loop gives.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from litbridge import _core
from litbridge.term import ScreenRows

__all__ = [
    "FrameFacts",
    "cached_match",
    "first_kind",
    "first_match",
    "has_any",
    "joined",
    "last_kind",
    "last_match",
    "memo",
    "needles_in",
    "strip_rows",
]

MEMO_MAX = 4096
"""Distinct row texts remembered per memo; a memo starts over past it (a long session's scrolled rows)."""

_memos: dict[Any, dict[str, int]] = {}

Kind = Callable[[str], int]
"""A row's kind as the rules see it: 0 = not what the scan looks for (keep going), else the rules' own code."""


def strip_rows(rows: Sequence[str]) -> list[str]:
    """`rows` right-stripped: the frame's own stripped rows when `rows` are a terminal's (never mutate them),
    else a new list."""
    if type(rows) is ScreenRows:
        return rows.stripped
    return [r.rstrip() for r in rows]


def has_any(s: str, chars: frozenset[str]) -> bool:
    """`s` holds a character of `chars` (`any(ch in chars for ch in s)`, as one C loop)."""
    return not chars.isdisjoint(s)


def memo(key: Any) -> dict[str, int]:
    """The row text -> kind memo under `key` (what names the test: a pattern, or the rules class and a name; a
    kind must follow from the row's text alone)."""
    m = _memos.get(key)
    if m is None or len(m) > MEMO_MAX:
        m = _memos[key] = {}
    return m


def _bounds(rows: Sequence[Any], start: int | None, stop: int | None) -> tuple[list[Any], int, int]:
    """`rows` as a list, and start/stop clipped to [0, len(rows)] (None: the ends; no negative indexing)."""
    lst = rows if isinstance(rows, list) else list(rows)
    n = len(lst)
    a = 0 if start is None else max(0, min(start, n))
    b = n if stop is None else max(0, min(stop, n))
    return lst, a, b


def last_kind(
    rows: Sequence[str], kind: Kind, key: Any, start: int | None = None, stop: int | None = None
) -> tuple[int | None, int]:
    """Scanning rows[start:stop] up: (y, kind) of the first row whose `kind` is not 0, else (None, 0). `key`
    names the memo of `kind` (see `memo`)."""
    lst, a, b = _bounds(rows, start, stop)
    m = memo(key)
    for y in range(b - 1, a - 1, -1):
        r = lst[y]
        k = m.get(r)
        if k is None:
            k = m[r] = kind(r)
        if k:
            return y, k
    return None, 0


def first_kind(
    rows: Sequence[str], kind: Kind, key: Any, start: int | None = None, stop: int | None = None
) -> tuple[int | None, int]:
    """Scanning rows[start:stop] down: (y, kind) of the first row whose `kind` is not 0, else (None, 0)."""
    lst, a, b = _bounds(rows, start, stop)
    m = memo(key)
    for y in range(a, b):
        r = lst[y]
        k = m.get(r)
        if k is None:
            k = m[r] = kind(r)
        if k:
            return y, k
    return None, 0


_matchers: dict[tuple[re.Pattern[str], bool], Kind] = {}


def _matcher(pattern: re.Pattern[str], search: bool) -> Kind:
    kind = _matchers.get((pattern, search))
    if kind is None:
        test = pattern.search if search else pattern.match

        def kind(r: str) -> int:
            return 1 if test(r) is not None else 0

        _matchers[(pattern, search)] = kind
    return kind


def last_match(
    rows: Sequence[str],
    pattern: re.Pattern[str],
    start: int | None = None,
    stop: int | None = None,
    *,
    search: bool = False,
) -> int | None:
    """The last y in rows[start:stop] whose row `pattern` matches (at its start, or anywhere with `search`)."""
    return last_kind(rows, _matcher(pattern, search), (pattern, search), start, stop)[0]


def first_match(
    rows: Sequence[str],
    pattern: re.Pattern[str],
    start: int | None = None,
    stop: int | None = None,
    *,
    search: bool = False,
) -> int | None:
    """The first y in rows[start:stop] whose row `pattern` matches (at its start, or anywhere with `search`)."""
    return first_kind(rows, _matcher(pattern, search), (pattern, search), start, stop)[0]


def needles_in(rows: Sequence[str], needles: tuple[str, ...]) -> int:
    """Bit i set iff needles[i] is in some row: `needles[i] in "\\n".join(rows)` for needles without a newline
    (at most 63), each row text looked at once per needle set."""
    m = memo(("needles", needles))
    mask = 0
    for r in rows:
        bits = m.get(r)
        if bits is None:
            bits = m[r] = sum(1 << i for i, needle in enumerate(needles) if needle in r)
        mask |= bits
    return mask


class FrameFacts:
    """Per-row facts of the frames a rules instance reads, one after the other: `kind(row) -> int` (bits the
    rules define) for every row, where only the rows whose text changed since the previous frame are looked up
    (memoised per row text under `key`, as the scans). The rules then ask what changed and where (`changed_in`)
    and which row holds a fact (`last` / `first`) instead of looping over rows themselves. Never mutate a frame
    handed to `update`: it is kept as the previous one."""

    def __init__(self, kind: Kind, key: Any) -> None:
        self._kind = kind
        self._key = key
        self._rows: list[str] | None = None
        self._facts: list[int] = []
        self._old: list[int] = []
        self._chg: list[bool] = []
        self.delta = -1
        """OR of old ^ new facts over the rows the last `update` found changed; -1 when it read every row anew."""
        self.count = 0
        """How many rows the last `update` found changed (all of them after a fresh read)."""

    def update(self, rows: Sequence[str]) -> int:
        """Take `rows` as the next frame; returns `delta`. A first frame, or one of another height, is read
        whole (`delta` -1, every row counted changed)."""
        lst = rows if isinstance(rows, list) else list(rows)
        last, m, kind = self._rows, memo(self._key), self._kind
        n = len(lst)
        self._rows = lst
        if last is None or len(last) != n:
            self._facts = [m[r] if r in m else m.setdefault(r, kind(r)) for r in lst]
            self._old = [0] * n
            self._chg = [True] * n
            self.delta, self.count = -1, n
            return -1
        d = c = 0
        for y in range(n):
            r = lst[y]
            if r is last[y] or r == last[y]:
                self._chg[y] = False
                continue
            k = m.get(r)
            if k is None:
                k = m[r] = kind(r)
            self._old[y] = self._facts[y]
            self._facts[y] = k
            self._chg[y] = True
            d |= self._old[y] ^ k
            c += 1
        self.delta, self.count = d, c
        return d

    @property
    def rows(self) -> list[str] | None:
        """The frame the last `update` took (None before the first)."""
        return self._rows

    @property
    def changed(self) -> list[int]:
        """The y of the rows the last `update` found changed, in order."""
        return [y for y, c in enumerate(self._chg) if c]

    def __len__(self) -> int:
        return len(self._facts)

    def __getitem__(self, y: int) -> int:
        """The facts of row y of the current frame."""
        if not 0 <= y < len(self._facts):
            raise IndexError(f"row {y} out of range")
        return self._facts[y]

    def changed_in(
        self, start: int | None = None, stop: int | None = None, mask: int = 0, has: int = 0
    ) -> bool:
        """Some row in [start, stop) changed in the last `update` (with `mask`: in a fact of `mask`; with
        `has`: and now holds a fact of `has`)."""
        _, a, b = _bounds(self._facts, start, stop)
        return any(
            self._chg[y]
            and (not mask or (self._old[y] ^ self._facts[y]) & mask)
            and (not has or self._facts[y] & has)
            for y in range(a, b)
        )

    def last(self, mask: int, start: int | None = None, stop: int | None = None) -> int | None:
        """The last y in [start, stop) whose facts hold a bit of `mask`, else None."""
        _, a, b = _bounds(self._facts, start, stop)
        return next((y for y in range(b - 1, a - 1, -1) if self._facts[y] & mask), None)

    def first(self, mask: int, start: int | None = None, stop: int | None = None) -> int | None:
        """The first y in [start, stop) whose facts hold a bit of `mask`, else None."""
        _, a, b = _bounds(self._facts, start, stop)
        return next((y for y in range(a, b) if self._facts[y] & mask), None)


PURE = {
    "memo": memo,
    "last_kind": last_kind,
    "first_kind": first_kind,
    "last_match": last_match,
    "first_match": first_match,
    "needles_in": needles_in,
    "FrameFacts": FrameFacts,
}
"""The pure-Python implementations (what the compiled ones are tested against)."""

if _core.AVAILABLE:  # pragma: no branch - depends on the build
    try:
        from litbridge._core.ops import (  # type: ignore[assignment]
            FrameFacts,
            first_kind,
            first_match,
            last_kind,
            last_match,
            memo,
            needles_in,
        )
    except ImportError:  # pragma: no cover - an older build without the ops module
        pass


def cached_match(pattern: re.Pattern[str], row: str) -> re.Match[str] | None:
    """`pattern.match(row)`, run once per distinct row text (for a pattern whose groups the rules read)."""
    m = _match_memos.get(pattern)
    if m is None or len(m) > MEMO_MAX:
        m = _match_memos[pattern] = {}
    if row in m:
        return m[row]
    hit = m[row] = pattern.match(row)
    return hit


_match_memos: dict[re.Pattern[str], dict[str, re.Match[str] | None]] = {}


def joined(rows: Sequence[str]) -> str:
    """`"\n".join(rows)`, once per frame for a terminal's rows."""
    if type(rows) is ScreenRows:
        text = getattr(rows, "text", None)
        if text is None:
            text = rows.text = "\n".join(rows)
        return text
    return "\n".join(rows)
