"""Robustness of the compiled core: arbitrary bytes, arbitrary splits and hostile state never crash it.

The daemon feeds untrusted program output, so a malformed sequence must never raise or corrupt memory.
Checks structural invariants only; behaviour is covered by the other core tests and the pyte suite.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from litbridge import _core

pytestmark = pytest.mark.skipif(not _core.AVAILABLE, reason="compiled core not built")

FRAGMENTS = [
    b"\x1b[",
    b"\x1b]",
    b"\x1bP",
    b"\x1b_",
    b"\x1b\\",
    b"\x07",
    b"\x1b",
    b"\x9b",
    b"\xc2\x9d",
    b"\xc2\x9c",
    b";",
    b":",
    b"?",
    b">",
    b"<",
    b"=",
    b"$",
    b" ",
    b"!",
    b"0",
    b"1",
    b"5",
    b"9999",
    b"99999999999",
    b"m",
    b"H",
    b"J",
    b"K",
    b"r",
    b"h",
    b"l",
    b"@",
    b"P",
    b"X",
    b"L",
    b"M",
    b"c",
    b"n",
    b"q",
    b"u",
    b"g",
    b"G",
    b"d",
    b"A",
    b"B",
    b"C",
    b"D",
    b"E",
    b"F",
    b"\r",
    b"\n",
    b"\t",
    b"\x08",
    b"\x0e",
    b"\x0f",
    b"\x18",
    b"\x1a",
    b"#8",
    b"%@",
    b"%G",
    b"(0",
    b")0",
    b"7",
    b"8",
    b"c",
    b"D",
    b"M",
    b"?1049",
    b"?47",
    b"?1047",
    b"?2026",
    b"?6",
    b"?5",
    b"?3",
    b"?7",
    b"?25",
    b"4",
    b"20",
    b"38;5;",
    b"38;2;",
    b"58;2;",
    b"7501;state=idle:msg=",
    b"0;title",
    "é€😀\u200d👩\u0301".encode(),
    b"\xff",
    b"\xe2\x82",
    b"\xf0\x9f",
    b"abcdef",
    b"x" * 30,
]


def _check(screen) -> None:
    d = screen.display
    assert len(d) == screen.lines
    assert all(isinstance(r, str) for r in d)
    screen.snapshot()
    screen.ansi_repaint()
    screen.changed_rows()
    screen.logical_lines()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=120), st.integers(0, 2**31))
def test_random_fragments_never_crash(parts: list[bytes], seed: int) -> None:
    s = _core.native.Screen(13, 7)
    p = _core.native.Parser(s)
    s.on_reply = lambda b: None
    s.on_status = lambda d: None
    data = b"".join(parts)
    rnd = random.Random(seed)
    i = 0
    while i < len(data):
        k = rnd.randint(1, 9)
        p.feed(data[i : i + k])
        i += k
    _check(s)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_never_crash(data: bytes) -> None:
    s = _core.native.Screen(9, 4)
    p = _core.native.Parser(s)
    p.feed(data)
    _check(s)


def test_hostile_state_is_clamped() -> None:
    s = _core.native.Screen(10, 5)
    p = _core.native.Parser(s)
    for x, y in [(10**6, 2), (-5, 1), (3, 10**6), (3, -9), (2**31 - 1, 2**31 - 1)]:
        s.cursor.x, s.cursor.y = x, y
        p.feed(b"ab\xe6\x97\xa5\x1b[K\x1b[1K\x1b[2J\x1b[@\x1b[P\x1b[X\x1b[L\x1b[M\n\x1bM\x08\t\xcc\x81")
        _check(s)
    s.margins = (3, 900)
    s.cursor.y = 4
    p.feed(b"\n\n\x1bM\x1bM\x1b[5L\x1b[5M")
    _check(s)
    s.resize(3, 4)
    s.cursor.x, s.cursor.y = 9, 9
    p.feed(b"zz\x1b[?1049hq\x1b[?1049l")
    _check(s)
    assert s.columns == 4 and s.lines == 3
