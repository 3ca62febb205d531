"""The rules' shared row primitives: what the plain loops give, compiled (`litbridge._core.ops`) or not.

Every scan is memoised per row text, so the second look at a frame must answer as the first; the compiled
twins must answer as the pure functions on any rows (hypothesis), which in turn answer as the loops they replace.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from litbridge import _core
from litbridge.drivers import screen_ops
from litbridge.term import ScreenRows

PURE = screen_ops.PURE
COMPILED = screen_ops if _core.AVAILABLE else None
needs_core = pytest.mark.skipif(not _core.AVAILABLE, reason="compiled core not built")

ALPHABET = st.sampled_from(list("ab ─❯●✻x\u00a0…"))
PIECES = st.sampled_from(["Esc to cancel", "──", "● b", "a"]) | st.text(ALPHABET, max_size=6)
ROW = st.lists(PIECES, max_size=4).map("".join)
ROWS = st.lists(ROW, max_size=12)
BOUND = st.none() | st.integers(-3, 15)
PATTERNS = [re.compile(r"^─{2,}$"), re.compile(r"Esc to cancel"), re.compile(r"^[●✻] \S"), re.compile(r"b+")]


def plain_last(rows: list[str], test, start, stop) -> int | None:
    n = len(rows)
    a = 0 if start is None else max(0, min(start, n))
    b = n if stop is None else max(0, min(stop, n))
    return next((y for y in range(b - 1, a - 1, -1) if test(rows[y])), None)


def plain_first(rows: list[str], test, start, stop) -> int | None:
    n = len(rows)
    a = 0 if start is None else max(0, min(start, n))
    b = n if stop is None else max(0, min(stop, n))
    return next((y for y in range(a, b) if test(rows[y])), None)


def kind(row: str) -> int:
    """1 for a row of rules, 2 for a bullet row, 0 otherwise (what a rules' scan up/down looks for)."""
    return 1 if row.startswith("─") else 2 if row.startswith("●") else 0


@settings(max_examples=300, deadline=None)
@given(ROWS, BOUND, BOUND, st.sampled_from(PATTERNS), st.booleans())
def test_pure_scans_answer_as_the_loops(rows: list[str], start, stop, pattern, search: bool) -> None:
    test = pattern.search if search else pattern.match
    for _ in range(2):  # the second look is served by the memo
        assert PURE["last_match"](rows, pattern, start, stop, search=search) == plain_last(
            rows, test, start, stop
        )
        assert PURE["first_match"](rows, pattern, start, stop, search=search) == plain_first(
            rows, test, start, stop
        )
        y = plain_last(rows, kind, start, stop)
        assert PURE["last_kind"](rows, kind, "t-kind", start, stop) == (
            (y, kind(rows[y])) if y is not None else (None, 0)
        )
        y = plain_first(rows, kind, start, stop)
        assert PURE["first_kind"](rows, kind, "t-kind", start, stop) == (
            (y, kind(rows[y])) if y is not None else (None, 0)
        )


@settings(max_examples=300, deadline=None)
@given(
    ROWS,
    st.lists(
        st.text(ALPHABET, min_size=1, max_size=4) | st.just("Esc to cancel"),
        min_size=1,
        max_size=6,
        unique=True,
    ),
)
def test_needles_in_is_a_search_of_the_joined_text(rows: list[str], needles: list[str]) -> None:
    text = "\n".join(rows)
    want = sum(1 << i for i, n in enumerate(needles) if n in text)
    assert PURE["needles_in"](rows, tuple(needles)) == want
    if COMPILED is not None:
        assert COMPILED.needles_in(rows, tuple(needles)) == want
        assert COMPILED.needles_in(rows, tuple(needles)) == want  # memoised


@needs_core
@settings(max_examples=300, deadline=None)
@given(ROWS, BOUND, BOUND, st.sampled_from(PATTERNS), st.booleans())
def test_compiled_scans_answer_as_the_pure_ones(rows: list[str], start, stop, pattern, search: bool) -> None:
    assert COMPILED is not None and screen_ops.last_match is not PURE["last_match"]
    for as_rows in (rows, ScreenRows(rows), tuple(rows)):
        for name in ("last_match", "first_match"):
            assert getattr(COMPILED, name)(as_rows, pattern, start, stop, search=search) == PURE[name](
                rows, pattern, start, stop, search=search
            )
        for name in ("last_kind", "first_kind"):
            assert getattr(COMPILED, name)(as_rows, kind, "t-kind", start, stop) == PURE[name](
                rows, kind, "t-kind", start, stop
            )


def test_memo_starts_over_past_its_bound() -> None:
    for impl in [PURE] + ([{"memo": COMPILED.memo}] if COMPILED is not None else []):
        m = impl["memo"](("t-bound", id(impl)))
        m.update({str(i): 0 for i in range(screen_ops.MEMO_MAX + 1)})
        assert impl["memo"](("t-bound", id(impl))) == {}


def test_strip_rows_uses_the_frames_own_twin() -> None:
    rows = ScreenRows(["a  ", " b "])
    rows.stripped = ScreenRows(["a", " b"])
    assert screen_ops.strip_rows(rows) is rows.stripped
    assert screen_ops.strip_rows(["a  ", " b "]) == ["a", " b"]
    assert screen_ops.has_any("ab─", frozenset("─│")) and not screen_ops.has_any("ab", frozenset("─│"))


@settings(max_examples=200, deadline=None)
@given(ROWS, st.sampled_from(PATTERNS))
def test_cached_match_is_the_patterns_match(rows: list[str], pattern) -> None:
    for _ in range(2):
        for r in rows:
            got, want = screen_ops.cached_match(pattern, r), pattern.match(r)
            assert (got is None) == (want is None)
            if want is not None:
                assert got is not None and got.groups() == want.groups() and got.span() == want.span()


@settings(max_examples=300, deadline=None)
@given(ROWS, ROWS)
def test_frame_facts_list_the_rows_that_differ(old: list[str], new: list[str]) -> None:
    """What changed between two frames of the same height is the rows whose text differs: found by identity
    where the row is the same object, by text where it is another object."""
    want = [y for y in range(len(new)) if old[y] != new[y]] if len(old) == len(new) else list(range(len(new)))
    same_objects = list(old)  # identical rows: found by identity
    impls = [PURE["FrameFacts"]] + ([screen_ops.FrameFacts] if COMPILED is not None else [])

    def changed(impl: type, a, b) -> list[int]:
        ff = impl(facts, ("t-frame-changed", impl))
        ff.update(a)
        ff.update(b)
        return ff.changed

    for impl in impls:
        assert changed(impl, old, new) == want
        assert changed(impl, old, [r + "" for r in old]) == []  # equal text, another object: not changed
        assert changed(impl, old, same_objects) == []
        assert changed(impl, ScreenRows(old), tuple(new)) == want


def facts(row: str) -> int:
    """Bits of a row: 1 a rule row, 2 a bullet row, 4 holds `b`, 8 any text (a rules' `_row_facts`)."""
    return (
        (1 if row.startswith("─") else 0)
        | (2 if row.startswith("●") else 0)
        | (4 if "b" in row else 0)
        | (8 if row else 0)
    )


MASKS = st.sampled_from([1, 2, 4, 8, 3, 12, 15])


@settings(max_examples=300, deadline=None)
@given(st.lists(ROWS, min_size=1, max_size=5), BOUND, BOUND, MASKS, st.sampled_from([0, 1, 2, 4, 8, 6]))
def test_frame_facts_answer_as_loops_over_each_frame(frames, start, stop, mask: int, has: int) -> None:
    """Each frame's facts, what changed since the frame before (a frame of another height: all of it) and the
    scans over them are what loops over the frame give, compiled or not."""
    impls = [PURE["FrameFacts"]] + ([screen_ops.FrameFacts] if COMPILED is not None else [])
    for impl in impls:
        ff = impl(facts, ("t-frame-facts", impl))
        prev: list[str] | None = None
        for frame in frames:
            got = ff.update(ScreenRows(frame))
            n = len(frame)
            fresh = prev is None or len(prev) != n
            ys = list(range(n)) if fresh else [y for y in range(n) if frame[y] != prev[y]]
            assert ff.changed == ys and ff.count == len(ys) and len(ff) == n
            assert got == ff.delta
            want_delta = -1 if fresh else 0
            if not fresh:
                for y in ys:
                    want_delta |= facts(prev[y]) ^ facts(frame[y])
            assert got == want_delta
            assert [ff[y] for y in range(n)] == [facts(r) for r in frame]
            a = 0 if start is None else max(0, min(start, n))
            b = n if stop is None else max(0, min(stop, n))
            hits = [y for y in range(a, b) if facts(frame[y]) & mask]
            assert ff.last(mask, start, stop) == (hits[-1] if hits else None)
            assert ff.first(mask, start, stop) == (hits[0] if hits else None)
            old = {y: (0 if fresh else facts(prev[y])) for y in ys}
            want_in = any(
                a <= y < b
                and (not mask or (old[y] ^ facts(frame[y])) & mask)
                and (not has or facts(frame[y]) & has)
                for y in ys
            )
            assert ff.changed_in(start, stop, mask, has) == want_in
            assert ff.rows == frame
            prev = frame


def test_frame_facts_reads_only_the_rows_that_changed() -> None:
    impls = [PURE["FrameFacts"]] + ([screen_ops.FrameFacts] if COMPILED is not None else [])
    for impl in impls:
        seen: list[str] = []

        def kind(row: str, seen: list[str] = seen) -> int:
            seen.append(row)
            return facts(row)

        ff = impl(kind, ("t-frame-facts-reads", impl))
        frame = [f"row {i}" for i in range(50)]
        assert ff.update(frame) == -1 and len(seen) == 50
        nxt = list(frame)
        nxt[7] = "● b"
        assert ff.update(nxt) == 2 | 4 and ff.changed == [7] and seen[50:] == ["● b"]
        assert ff.update(frame) == 2 | 4 and seen[50:] == ["● b"]  # back again: the memo answers
        with pytest.raises(IndexError):
            ff[50]
