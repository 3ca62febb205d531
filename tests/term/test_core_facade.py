"""The `litbridge.pyte` facade: dispatch-mode selection, native HistoryScreen, buffer proxies, fallback switch.

pyte's own suite covers pyte semantics; these tests cover what the facade adds on top (which parser runs,
history lines as packed rows, the `LITBRIDGE_NO_EXTENSIONS` switch).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pyte
import pytest

from litbridge import _core

pytestmark = pytest.mark.skipif(not _core.AVAILABLE, reason="compiled core not built")

PYTE_CAPTURED = Path(__file__).resolve().parents[2] / ".cache" / "pyte-0.8.2" / "tests" / "captured"


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
