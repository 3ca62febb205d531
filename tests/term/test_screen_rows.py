"""A `Terminal`'s rows are one shared snapshot per change (`generation`), with their right-stripped twin.

The rules read a frame many times over: the rows must be built once per change (not per read), a redraw of the
same text must not count as a change, and a row that did not change must not be processed again. Both
implementations (the compiled core and the pyte fallback) keep the same contract.
"""

from __future__ import annotations

import gc

import pytest

from litbridge import _core
from litbridge.term import NativeTerminal, PyteTerminal, ScreenRows

IMPLS = [PyteTerminal] + ([NativeTerminal] if _core.AVAILABLE else [])


@pytest.fixture(params=IMPLS, ids=lambda c: c.implementation)
def term(request: pytest.FixtureRequest) -> PyteTerminal | NativeTerminal:
    t: PyteTerminal | NativeTerminal = request.param(20, 4)
    return t


def test_rows_are_one_shared_list_until_the_text_changes(term) -> None:
    term.feed(b"hello\r\nworld")
    rows, gen = term.display, term.generation
    assert isinstance(rows, ScreenRows)
    assert rows[0] == "hello".ljust(20) and rows[1] == "world".ljust(20)
    assert term.display is rows and term.generation == gen
    term.feed(b"\x1b[H")  # the cursor moved: no row changed
    assert term.display is rows and term.generation == gen
    term.feed(b"\rhello")  # the same text drawn again over itself
    assert term.display is rows and term.generation == gen
    term.feed(b"!")
    assert term.generation != gen
    assert term.display is not rows and term.display[0] == "hello!".ljust(20)


def test_changed_rows_between_reads_do_not_hide_a_change(term) -> None:
    """The session takes the changed rows between two reads of the rules: the next read still sees the change."""
    term.feed(b"one")
    term.changed_rows()
    gen = term.generation
    term.feed(b"\r\ntwo")
    assert [t.rstrip() for _, t in term.changed_rows()] == ["two"]
    assert term.generation != gen and term.display[1].startswith("two")


def test_stripped_twin_and_logical_lines(term) -> None:
    term.feed(b"a  \r\n\r\n  b c  ")
    rows = term.display
    assert rows.stripped == [r.rstrip() for r in rows]
    assert rows.stripped.stripped is rows.stripped
    assert term.logical_lines() == ["a", "", "  b c", ""]
    assert term.logical_lines() is term.logical_lines()
    first = rows.stripped[0]
    term.feed(b"\x1b[4;1Hz")  # only the last row changes: the others keep their stripped text
    assert term.display.stripped[0] is first
    assert term.display.stripped[3] == "z"


def test_a_frame_read_is_freed_without_the_garbage_collector(term) -> None:
    """A frame's rows go when the next frame replaces them, by reference count alone: rows that are their own
    stripped twin refer to nothing (a list holding a reference to itself is a cycle that waits for a collection,
    and a busy daemon read thousands of frames between two)."""

    def alive() -> int:
        return sum(1 for o in gc.get_objects() if type(o) is ScreenRows)

    gc.collect()
    gc.disable()
    try:
        before = alive()
        for i in range(40):
            term.feed(f"\x1b[Hline {i}".encode())
            assert term.display.stripped.stripped is term.display.stripped
            term.logical_lines()
        assert alive() - before <= 4  # the current frame's rows, stripped rows and logical lines
    finally:
        gc.enable()


@pytest.mark.skipif(not _core.AVAILABLE, reason="compiled core not built")
def test_native_logical_lines_join_soft_wrapped_rows() -> None:
    term = NativeTerminal(5, 3)
    term.feed(b"abcdefg \r\nxy")
    assert term.logical_lines() == ["abcdefg", "xy"]
    gen = term.generation
    term.feed(b"\x1b[1;1Habcde")  # same text again, the wrap flag kept
    assert term.generation == gen
    term.feed(b"\x1b[2J")
    assert term.generation != gen and all(not r for r in term.logical_lines())


def test_snapshot_follows_every_change_whoever_reads_first(term) -> None:
    """The snapshot re-reads only the rows marked changed since it was taken, including the rows a `changed_rows`
    call cleared in between: over random edits (text, scrolls, inserted and deleted lines, clears, the alternate
    screen, wraps) read in random order, it always equals a fresh render, and the generation moves exactly when
    the text or a wrap flag did."""
    import random

    rnd = random.Random(7501)
    edits = [
        b"\x1b[%d;%dH%s",
        b"\r\n",
        b"\x1b[L",
        b"\x1b[M",
        b"\x1b[2J",
        b"\x1b[K",
        b"\x1bM",
        b"\x1b[?1049h",
        b"\x1b[?1049l",
        b"\x1b[1;3r",
        b"\x1b[r",
        b"\x1b[S",
        b"\x1b[T",
    ]
    last_rows: list[str] | None = None
    last_gen = None
    for _ in range(3000):
        e = rnd.choice(edits)
        if b"%" in e:
            text = "".join(rnd.choice("ab ") for _ in range(rnd.randint(0, 30))).encode()
            e = e % (rnd.randint(1, 4), rnd.randint(1, 20), text)
        elif rnd.random() < 0.05:
            e = b"\x1b[4;15H" + b"w" * rnd.randint(5, 12)  # past the right margin: a soft wrap
        term.feed(e)
        if rnd.random() < 0.5:
            term.changed_rows()
        if rnd.random() < 0.6:
            fresh = [term.line(y) for y in range(4)]
            rows, gen = term.display, term.generation
            assert list(rows) == fresh
            assert rows.stripped == [r.rstrip() for r in fresh]
            logical, cur = [], ""
            for y, r in enumerate(fresh):
                cur += r
                if not term.wrapped(y) or y == 3:
                    logical.append(cur.rstrip())
                    cur = ""
            assert term.logical_lines() == logical
            if last_rows is not None and fresh != last_rows:
                assert gen != last_gen
            if last_rows is not None and gen == last_gen:
                assert rows == last_rows
            last_rows, last_gen = list(rows), gen
