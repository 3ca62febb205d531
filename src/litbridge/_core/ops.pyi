"""Type stubs for `litbridge._core.ops`: compiled twins of `litbridge.drivers.screen_ops` (same signatures)."""

import re
from collections.abc import Callable, Hashable, Sequence

def memo(key: Hashable) -> dict[str, int]: ...
def last_kind(
    rows: Sequence[str],
    kind: Callable[[str], int],
    key: Hashable,
    start: int | None = None,
    stop: int | None = None,
) -> tuple[int | None, int]: ...
def first_kind(
    rows: Sequence[str],
    kind: Callable[[str], int],
    key: Hashable,
    start: int | None = None,
    stop: int | None = None,
) -> tuple[int | None, int]: ...
def last_match(
    rows: Sequence[str],
    pattern: re.Pattern[str],
    start: int | None = None,
    stop: int | None = None,
    *,
    search: bool = False,
) -> int | None: ...
def first_match(
    rows: Sequence[str],
    pattern: re.Pattern[str],
    start: int | None = None,
    stop: int | None = None,
    *,
    search: bool = False,
) -> int | None: ...
def needles_in(rows: Sequence[str], needles: tuple[str, ...]) -> int: ...

class FrameFacts:
    delta: int
    count: int
    def __new__(cls, kind: Callable[[str], int], key: Hashable) -> FrameFacts: ...  # __cinit__ at runtime
    def update(self, rows: Sequence[str]) -> int: ...
    @property
    def rows(self) -> list[str] | None: ...
    @property
    def changed(self) -> list[int]: ...
    def __len__(self) -> int: ...
    def __getitem__(self, y: int) -> int: ...
    def changed_in(
        self, start: int | None = None, stop: int | None = None, mask: int = 0, has: int = 0
    ) -> bool: ...
    def last(self, mask: int, start: int | None = None, stop: int | None = None) -> int | None: ...
    def first(self, mask: int, start: int | None = None, stop: int | None = None) -> int | None: ...
