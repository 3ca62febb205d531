"""Type stubs for `litbridge._core.ops` (compiled twins of `litbridge.drivers.screen_ops`' row loops)."""

from collections.abc import Callable

def last_kind(
    rows: list[str], kind: Callable[[str], int], memo: dict[str, int], start: int, stop: int
) -> tuple[int, int]: ...
def first_kind(
    rows: list[str], kind: Callable[[str], int], memo: dict[str, int], start: int, stop: int
) -> tuple[int, int]: ...
