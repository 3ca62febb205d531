"""The `litbridge.pyte` facade: dispatch-mode selection, native HistoryScreen, buffer proxies, fallback switch.

pyte's own suite covers pyte semantics; these tests cover what the facade adds on top (which parser runs,
history lines as packed rows, the `LITBRIDGE_NO_EXTENSIONS` switch).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys

import pyte
import pytest

from fetch_fixtures import PYTE_DIR
from litbridge import _core

pytestmark = pytest.mark.skipif(not _core.AVAILABLE, reason="compiled core not built")

PYTE_CAPTURED = PYTE_DIR / "tests" / "captured"  # honours $LITBRIDGE_TEST_CACHE


def lp():
    import litbridge.pyte as mod

    return mod


def test_plain_native_screen_takes_the_fast_path() -> None:
    m = lp()
    screen = m.Screen(20, 4)
    assert type(screen).__module__ == "litbridge._core.screen"
    stream = m.ByteStream(screen)
    assert stream._native is not None
    stream.feed(b"\x1b[1mhi")
    assert screen.display[0].startswith("hi") and screen.buffer[0][0].bold


def test_overridden_event_uses_pyte_dispatch() -> None:
    m = lp()
    seen: list[str] = []

    class Recording(m.Screen):
        def draw(self, data: str) -> None:
            seen.append(data)
            super().draw(data)

    screen = Recording(20, 4)
    stream = m.ByteStream(screen)
    assert stream._native is None
    stream.feed(b"ab\x1b[2Ccd")
    assert seen == ["ab", "cd"]
    assert screen.display[0].startswith("ab  cd")


def test_instance_handler_uses_pyte_dispatch() -> None:
    m = lp()
    screen = m.Screen(20, 4)
    calls: list[tuple] = []
    screen.cursor_position = lambda *a, **k: calls.append(a)
    stream = m.Stream(screen)
    stream.feed("\x1b[3;5H")
    assert calls == [(3, 5)]


def test_title_hook_override_keeps_fast_path() -> None:
    m = lp()
    titles: list[str] = []

    class Titled(m.Screen):
        def set_title(self, param: str) -> None:
            titles.append(param)
            super().set_title(param)

    screen = Titled(20, 4)
    stream = m.ByteStream(screen)
    assert stream._native is not None
    stream.feed("\x1b]2;héllo\x07".encode())
    assert titles == ["héllo"] and screen.title == "héllo"


def test_patched_escape_table_switches_to_pyte_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    m = lp()
    screen = m.Screen(20, 4)
    stream = m.Stream(screen)
    hits: list[int] = []
    screen.next_page = lambda: hits.append(1)
    escape = dict(m.Stream.escape)
    escape["N"] = "next_page"
    monkeypatch.setattr(m.Stream, "escape", escape)
    stream.attach(screen)
    stream.feed("\x1bN")
    assert hits == [1]


def test_diffscreen_warns_and_is_native() -> None:
    m = lp()
    with pytest.warns(DeprecationWarning):
        screen = m.DiffScreen(10, 3)
    assert isinstance(screen, m.Screen)


def test_buffer_proxy_reads_and_writes_cells() -> None:
    m = lp()
    screen = m.Screen(6, 2)
    screen.buffer[1][2] = m.screens.Char("Z", fg="red", bold=True)
    assert screen.display[1] == "  Z   "
    assert screen.buffer[1][2] == m.screens.Char("Z", fg="red", bold=True)
    assert 2 in screen.buffer[1] and 3 not in screen.buffer[1]
    assert screen.buffer[0][99] == screen.default_char


@pytest.mark.skipif(not PYTE_CAPTURED.is_dir(), reason="pyte sdist not fetched")
def test_history_screen_matches_pyte_on_scrolling_input() -> None:
    m = lp()
    data = (PYTE_CAPTURED / "find-etc.input").read_bytes() + (PYTE_CAPTURED / "cat-gpl3.input").read_bytes()
    ref = pyte.HistoryScreen(200, 50, history=300)
    ref_stream = pyte.ByteStream(ref)
    sub = m.HistoryScreen(200, 50, history=300)
    sub_stream = m.ByteStream(sub)
    assert sub_stream._native is not None
    rnd = random.Random(5)
    i = 0
    while i < len(data):
        k = rnd.randint(1, 4096)
        ref_stream.feed(data[i : i + k])
        sub_stream.feed(data[i : i + k])
        i += k

    def text(rows):
        return ["".join(r[x].data for x in range(200)) for r in rows]

    assert sub.display == ref.display
    assert len(sub.history.top) == len(ref.history.top) == 300
    assert text(sub.history.top) == text(ref.history.top)
    for s in (ref, sub):
        s.prev_page()
        s.prev_page()
    assert sub.display == ref.display and sub.history.position == ref.history.position
    assert text(sub.history.bottom) == text(ref.history.bottom)
    ref_stream.feed(b"!")
    sub_stream.feed(b"!")  # any event scrolls back to the bottom first
    assert sub.history.position == sub.history.size
    assert sub.display == ref.display


def test_history_row_object_follows_its_line() -> None:
    m = lp()
    screen = m.HistoryScreen(5, 3, history=10)
    stream = m.ByteStream(screen)
    stream.feed(b"a\r\nb\r\nc")
    line = screen.buffer[0]
    stream.feed(b"\r\nd")
    assert screen.history.top[-1] is line
    assert line[0].data == "a"
    assert screen.display == ["b    ", "c    ", "d    "]


@pytest.mark.parametrize("forced", [True, False])
def test_no_extensions_switch(forced: bool) -> None:
    env = dict(os.environ)
    if forced:
        env["LITBRIDGE_NO_EXTENSIONS"] = "1"
    else:
        env.pop("LITBRIDGE_NO_EXTENSIONS", None)
    code = (
        "import warnings, pyte\n"
        "warnings.simplefilter('error')\n"
        "import litbridge.pyte as lp\n"
        "from litbridge.term import Terminal\n"
        "print(lp.Screen is pyte.Screen, Terminal.implementation)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == (["True", "pyte"] if forced else ["False", "native"])


@pytest.mark.parametrize("size", [1, 3, 100])
def test_compat_path_consumes_private_csi_and_strings(size: int) -> None:
    m = lp()

    class Observed(m.Screen):
        def cursor_up(self, count=None):
            super().cursor_up(count)

    screen = Observed(20, 3)
    stream = m.ByteStream(screen)
    assert stream._native is None
    raw = b"\x1b[>4;2mA\x1bPpayload\x1b\\B\x1b[=1uC\x1b[4:3mD\x1b_Gi=1\x1b\\\x1b[1;31mE\x1b[2 q\x1b[A"
    for i in range(0, len(raw), size):
        stream.feed(raw[i : i + size])
    assert screen.display[0] == "ABCDE" + " " * 15
    assert not screen.buffer[0][0].underscore and not screen.buffer[0][3].underscore
    assert screen.buffer[0][4].bold and screen.buffer[0][4].fg == "red"


# --- what the compiled core changed under the hood: the observable contract stays pyte's --------------------


def test_fast_stream_feed_is_the_native_parser_and_leaves_on_an_in_place_table_edit() -> None:
    m = lp()
    screen = m.Screen(20, 4)
    stream = m.Stream(screen)
    assert stream.feed == stream._native.feed  # no Python frame per call on the fast path
    hits: list[int] = []
    screen.next_page = lambda: hits.append(1)
    m.Stream.escape["N"] = "next_page"  # edits the shared default table in place
    try:
        assert stream._native is None
        stream.feed("\x1bNab")
        assert hits == [1] and screen.display[0].startswith("ab")
    finally:
        del m.Stream.escape["N"]
    fresh = m.Stream(m.Screen(20, 4))
    assert fresh._native is not None  # the default table is default again


def test_instance_table_assignment_leaves_the_fast_path() -> None:
    m = lp()
    screen = m.Screen(20, 4)
    stream = m.ByteStream(screen)
    stream.feed(b"\x1b%@")  # Latin-1 decoding, chosen on the fast path, carries over
    hits: list[int] = []
    screen.next_page = lambda: hits.append(1)
    stream.escape = {**m.ByteStream.escape, "N": "next_page"}
    assert stream._native is None
    stream.feed(b"\x1bN\xe9")
    assert hits == [1] and screen.display[0].startswith("é")


def test_subclass_feed_stays_in_charge() -> None:
    m = lp()
    seen: list[bytes] = []

    class Logged(m.ByteStream):
        def feed(self, data: bytes) -> None:
            seen.append(data)
            super().feed(data)

    screen = m.Screen(20, 4)
    stream = Logged(screen)
    stream.feed(b"hi")
    assert seen == [b"hi"] and screen.display[0].startswith("hi")


def test_mode_set_edits_write_through() -> None:
    m = lp()
    screen = m.Screen(5, 3)
    stream = m.ByteStream(screen)
    screen.mode.discard(pyte.modes.DECAWM)
    stream.feed(b"abcdefg")
    assert screen.display[0] == "abcdg" and screen.cursor.y == 0  # no autowrap
    screen.mode.add(pyte.modes.DECAWM)
    stream.feed(b"\rabcdefg")
    assert screen.display[1].startswith("fg")
    stream.feed(b"\x1b[?1000h\x1b[?2004h")
    assert {1000 << 5, 2004 << 5} <= screen.mode
    stream.feed(b"\x1b[?1000l")
    assert 1000 << 5 not in screen.mode and 2004 << 5 in screen.mode
    screen.mode = {pyte.modes.DECTCEM}
    assert screen.mode == {pyte.modes.DECTCEM}
    screen.mode = set()  # an empty assignment clears what `mode` reads, as the core's modes are cleared
    assert screen.mode == set()
    stream.feed(b"\r\nabcdefg")  # and DECAWM is really off: no wrap
    assert screen.cursor.y == 2 and screen.display[2] == "abcdg"


def test_savepoints_read_as_pyte_savepoints_and_can_be_assigned() -> None:
    m = lp()
    screen = m.Screen(20, 5)
    stream = m.ByteStream(screen)
    stream.feed(b"\x1b[3;4H\x1b[1;31m\x1b7\x1b[5;9H\x1b7")
    sps = screen.savepoints
    assert [(s.cursor.y, s.cursor.x) for s in sps] == [(2, 3), (4, 8)]
    assert sps[0].cursor.attrs.bold and sps[0].cursor.attrs.fg == "red" and sps[0].wrap and not sps[0].origin
    screen.savepoints = sps[:1]
    stream.feed(b"\x1b[0m\x1b8x")
    assert screen.cursor.y == 2 and screen.buffer[2][3].data == "x" and screen.buffer[2][3].bold
    assert screen.savepoints == []
    stream.feed(b"\x1b8")  # empty stack: home, as pyte
    assert (screen.cursor.y, screen.cursor.x) == (0, 0)


@pytest.mark.parametrize("reenter", [b"\x1b[?1049h", b"\x1b[?1047h\x1b[?1047l\x1b[?1047h"])
def test_alternate_screen_reentry_is_blank_everywhere(reenter: bytes) -> None:
    """The alternate grid is cleared lazily: nothing written before may show through any reader or writer."""
    m = lp()
    screen = m.HistoryScreen(10, 4, history=10)
    stream = m.ByteStream(screen)
    stream.feed(b"main")
    stream.feed(b"\x1b[?1049h\x1b[41m" + b"X" * 40 + b"\x1b[0m\x1b[?1049l")
    assert screen.display[0] == "main      "
    stream.feed(reenter)
    blank = [" " * 10] * 4
    assert screen.display == blank
    assert all(screen.buffer[y][x] == screen.default_char for y in range(4) for x in range(10))
    assert 0 not in screen.buffer[0]  # not even a present default cell
    stream.feed(b"\x1b[44m\x1b[2J\x1b[0m")  # coloured ED repaints present cells only: none
    assert screen.buffer[1][1].bg == "default"
    stream.feed(b"\x1b[2;3H\x1b[2@\x1b[1P")  # ICH / DCH on a pending row
    assert screen.display == blank
    stream.feed(b"\x1b[4;1H\n\n")  # scroll twice: the rows pushed to history are blank too
    assert all(all(line[x].data == " " for x in line.keys()) for line in list(screen.history.top)[-2:])
    stream.feed(b"\x1b[?1049l")
    assert screen.display[0] == "main      "


def test_runs_of_one_character_match_drawing_them_one_by_one() -> None:
    m = lp()
    dash = "─".encode()
    for prefix in (b"", b"\x1b[?7l", b"\x1b[4h", b"\x1b(0"):
        fast = m.Screen(7, 3)
        m.ByteStream(fast).feed(prefix + b"ab" + dash * 9 + b"c")
        slow = m.Screen(7, 3)
        s = m.ByteStream(slow)
        s.feed(prefix + b"ab")
        for _ in range(9):
            s.feed(dash)
        s.feed(b"c")
        assert fast.display == slow.display, prefix
        assert (fast.cursor.x, fast.cursor.y) == (slow.cursor.x, slow.cursor.y)


def test_normal_screen_survives_a_long_alternate_screen_session() -> None:
    """After 32 feeds on the alternate screen the hidden normal grid is packed; leaving restores it exactly."""
    m = lp()
    screen = m.Screen(12, 4)
    stream = m.ByteStream(screen)
    stream.feed(b"\x1b[1;31mred\x1b[0m\r\n\r\n  third")
    before = (screen.display, [[screen.buffer[y][x] for x in range(12)] for y in range(4)])
    stream.feed(b"\x1b[?1049h")
    for i in range(40):
        stream.feed(b"\x1b[H\x1b[2Jframe %d" % i)
    assert screen.display[0].startswith("frame 39") and screen.switch_feeds >= 32  # packed by now
    stream.feed(b"\x1b[?1049l")
    assert (screen.display, [[screen.buffer[y][x] for x in range(12)] for y in range(4)]) == before
    stream.feed(b"\x1b[?1049h")
    assert screen.display == [" " * 12] * 4


def test_alternate_screen_left_long_ago_keeps_its_cells() -> None:
    """Back on the normal screen for 32 feeds, the hidden alternate grid is packed: entering it again without a
    clear (47h) shows it exactly as left, a resize meanwhile keeps it, and 1049h still clears it."""
    m = lp()
    screen = m.Screen(12, 4)
    stream = m.ByteStream(screen)
    stream.feed(b"main")
    stream.feed(b"\x1b[?47h\x1b[H\x1b[2J\x1b[1;32mgreen\x1b[0m\r\n\r\n\x1b[7mrev\x1b[0m")
    alt = (screen.display, [[screen.buffer[y][x] for x in range(12)] for y in range(4)])
    stream.feed(b"\x1b[?47l")
    for i in range(40):
        stream.feed(b"\x1b[1;1Hline %d" % i)
    assert screen.switch_feeds >= 32  # the packing point was passed
    stream.feed(b"\x1b[?47h")
    assert (screen.display, [[screen.buffer[y][x] for x in range(12)] for y in range(4)]) == alt
    stream.feed(b"\x1b[?47l")
    for i in range(40):
        stream.feed(b"\x1b[1;1Hline %d" % i)
    screen.resize(5, 12)
    stream.feed(b"\x1b[?47h")
    assert screen.display[:4] == alt[0] and screen.buffer[0][0].fg == "green"
    stream.feed(b"\x1b[?47l")
    for i in range(40):
        stream.feed(b"\x1b[1;1Hline %d" % i)
    assert screen.display[0] == "line 39     "
    stream.feed(b"\x1b[?1049h")
    assert screen.display == [" " * 12] * 5
    stream.feed(b"\x1b[?1049l")
    assert screen.display[0] == "line 39     "


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_freed_grids_give_their_memory_back() -> None:
    """A grid's cells are pages of their own: freed, they leave the process (beyond the few kept for reuse), even
    where the C heap around them stays in use and could not shrink."""
    m = lp()

    def resident() -> int:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    frame = b"\x1b[H" + b"\x1b[1;33m" + (b"x" * 200) * 50
    screens, pins = [], []
    for _ in range(40):
        screen = m.Screen(200, 50)
        m.ByteStream(screen).feed(frame)  # every row written: the whole grid is resident
        screens.append(screen)
        # a heap allocation after each grid, kept: a heap could not shrink below it
        pins.append(bytearray(4096))
    before = resident()
    del screens
    after = resident()
    grid = 200 * 50 * 12  # bytes: 12 a cell
    kept = 8  # freed blocks the core keeps for reuse (LB_POOL in screen.pyx)
    assert before - after >= (40 - kept) * grid * 0.9, (before, after)


def test_title_icon_and_bell_hooks_set_on_the_instance_are_called() -> None:
    """The parser applies OSC 0/1/2 and BEL in C only while the hooks are the native ones."""
    m = lp()
    screen = m.Screen(20, 2)
    stream = m.ByteStream(screen)
    stream.feed(b"\x1b]0;both\x07")
    assert (screen.title, screen.icon_name) == ("both", "both")
    calls: list[object] = []
    screen.set_title = calls.append
    screen.set_icon_name = lambda p: calls.append(("icon", p))
    screen.bell = lambda *a: calls.append("bell")
    assert stream._native is not None  # hooks do not cost the fast path
    stream.feed(b"\x1b]2;T\x1b\\\x1b]1;I\x07\x07")
    assert calls == ["T", ("icon", "I"), "bell"] and screen.title == "both"
