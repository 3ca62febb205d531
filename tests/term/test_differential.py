"""Differential test at 200x50: `litbridge.pyte` against real pyte 0.8.2 plus the documented corrections only.

The oracle is pyte with exactly the deliberate fixes of docs/emulator-divergences.md applied (alternate screen,
private/intermediate CSI, CSIs cut short by ESC, the first ESC of ESC ESC and DCS/APC/PM/SOS strings removed from
its input, SGR 58 arguments skipped), so any other difference fails. Also holds the focused tests that pin each deliberate fix on litbridge alone.
"""

from __future__ import annotations

import bisect
import os
import random
import re
import unicodedata
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pyte  # real pyte 0.8.2; litbridge.pyte is a different module
import pytest
from pyte.screens import StaticDefaultDict
from wcwidth import wcswidth, wcwidth

COLS, LINES = 200, 50
CELL_EVERY = 10  # compare every cell (all Char fields) every N chunks, and after the last one
DEFAULT_SEEDS = (0, 1, 2)
SLOW_SEEDS = tuple(range(3, 12))
MAX_CHUNK = 8192
CLUSTER_MAX = 32  # D13: codepoints one cell's grapheme cluster keeps (the documented cap the oracle applies)

# ---------------------------------------------------------------------------------------------------------------
# The oracle: pyte + the documented corrections (each names its section in docs/emulator-divergences.md).
# ---------------------------------------------------------------------------------------------------------------

# D2/D3: sequences a real terminal consumes whole but pyte 0.8.2 half-executes. A CSI whose parameter bytes carry a
# private marker other than a leading "?" (`<`, `=`, `>`) or a colon sub-parameter, or that has intermediate bytes
# (0x20-0x2f); and DCS/SOS/PM/APC strings (ESC P/X/^/_ ... up to ST = ESC \; an ESC followed by anything else is
# payload). The oracle never sees them; litbridge gets the raw bytes.
# D8: a CSI cut short by ESC is abandoned (the ESC starts the next sequence); pyte draws the rest as text.
# D11: C0 controls pyte executes inside a CSI (BEL BS HT LF VT FF CR) run in place, as in VT500; when the CSI is
# then removed (D2, or cut short by ESC) the controls stay in the oracle's input, only the CSI's own bytes go.
# D12: ESC ESC - the second ESC restarts the escape (VT500 "anywhere" rule); pyte takes it as the first one's final
# byte and draws what follows. The first ESC is removed. OSC strings (ESC ] ... BEL/ST, `ESC x` pairs inside them
# are payload in both) are matched only to be skipped, so an ESC ESC inside one is left alone.
_C0_IN_CSI = rb"\x07-\x0d"
_NORMALISE_RE = re.compile(
    rb"\x1b\[(?P<params>[0-?"
    + _C0_IN_CSI
    + rb"]*)(?P<inter>[ -/"
    + _C0_IN_CSI
    + rb"]*)(?P<final>[@-~]|(?=\x1b))"
    rb"|\x1b[P_^X](?:[^\x1b]|\x1b(?!\\))*(?:\x1b\\)?"
    rb"|(?P<osc>\x1b\](?:[RP]|[\s\S](?:[^\x1b\x07\xc2]|\xc2(?!\x9c)|\x1b(?!\\)[\s\S])*(?:\x07|\x1b\\|\xc2\x9c|\Z)))"
    rb"|(?P<escesc>\x1b(?=\x1b))"
)
_C0_IN_CSI_RUN = re.compile(rb"[" + _C0_IN_CSI + rb"]+")


def _removable(m: re.Match[bytes]) -> bool:
    if m.group("osc") is not None:
        return False  # skipped over, never removed
    if m.group(0)[1:2] != b"[" or not m.group("final"):
        return True  # a DCS/SOS/PM/APC string, a CSI interrupted by ESC, or the first ESC of ESC ESC
    return (
        re.search(rb"[ -/]", m.group("inter")) is not None
        or re.search(rb"[<=>:]", m.group("params")) is not None
    )


def _removed_spans(m: re.Match[bytes]) -> list[tuple[int, int]]:
    """The byte ranges of a removable match that go: all of it, except C0 controls inside a CSI (D11)."""
    if m.group(0)[1:2] != b"[":
        return [(m.start(), m.end())]
    spans, last = [], m.start()
    for c in _C0_IN_CSI_RUN.finditer(m.group(0)):
        if m.start() + c.start() > last:
            spans.append((last, m.start() + c.start()))
        last = m.start() + c.end()
    if m.end() > last:
        spans.append((last, m.end()))
    return spans


@dataclass
class Normalised:
    """`data` without the removed sequences, and a map from offsets in the raw stream to offsets in `data`."""

    data: bytes
    span_starts: list[int]
    span_ends: list[int]
    removed_before: list[int]  # bytes removed by spans[:i]

    def map(self, pos: int) -> int:
        i = bisect.bisect_right(self.span_starts, pos) - 1  # the last span starting at or before pos
        if i < 0:
            return pos
        if pos < self.span_ends[i]:  # inside a removed span: map to its start
            return self.span_starts[i] - self.removed_before[i]
        return pos - self.removed_before[i] - (self.span_ends[i] - self.span_starts[i])


def normalise(raw: bytes) -> Normalised:
    keep: list[bytes] = []
    starts: list[int] = []
    ends: list[int] = []
    before: list[int] = []
    last = removed = 0
    for m in _NORMALISE_RE.finditer(raw):
        if not _removable(m):
            continue
        for start, end in _removed_spans(m):
            keep.append(raw[last:start])
            starts.append(start)
            ends.append(end)
            before.append(removed)
            removed += end - start
            last = end
    keep.append(raw[last:])
    return Normalised(b"".join(keep), starts, ends, before)


def _fresh_buffer(screen: pyte.Screen) -> defaultdict:
    return defaultdict(lambda: StaticDefaultDict(screen.default_char))


class OracleScreen(pyte.Screen):
    """pyte 0.8.2 Screen with the deliberate fixes of docs/emulator-divergences.md, and nothing else."""

    ALT_MODES = (47, 1047, 1049)

    def reset(self) -> None:
        super().reset()
        self._main_buffer: defaultdict | None = None  # the normal screen while the alternate one is shown
        self._alt_buffer = _fresh_buffer(self)
        self._alt_saved: Any = None
        self._join = None

    # D1: alternate screen, xterm semantics (ctlseqs: 47 and 1047 switch, 1047l clears the alternate screen
    # first, 1049h saves the cursor as DECSC then switches and clears - the clear also when already there, the
    # save then going to the alternate screen's own slot - and 1049l switches back and restores).
    def _inactive_follows_decscnm(self, modes: tuple[int, ...], private: bool) -> None:
        """DECSCNM is screen-wide: pyte re-bases the blank cells of its (only) buffer; do it for the hidden one too."""
        if private and 5 in modes:
            hidden = self._alt_buffer if self._main_buffer is None else self._main_buffer
            for line in hidden.values():
                line.default = self.default_char

    def set_mode(self, *modes: int, **kwargs: Any) -> None:
        super().set_mode(*modes, **kwargs)
        self._inactive_follows_decscnm(modes, bool(kwargs.get("private")))
        if not kwargs.get("private"):
            return
        for m in modes:
            if m == 1049 and self._main_buffer is not None:  # xterm: ClearScreen is unconditional on 1049h
                self.buffer = self._alt_buffer = _fresh_buffer(self)
                self.dirty.update(range(self.lines))
            elif m in self.ALT_MODES and self._main_buffer is None:
                if m == 1049:
                    self.save_cursor()
                    self._alt_saved = self.savepoints.pop()
                    self._alt_buffer = _fresh_buffer(self)
                self._main_buffer, self.buffer = self.buffer, self._alt_buffer
                self.dirty.update(range(self.lines))

    def reset_mode(self, *modes: int, **kwargs: Any) -> None:
        super().reset_mode(*modes, **kwargs)
        self._inactive_follows_decscnm(modes, bool(kwargs.get("private")))
        if not kwargs.get("private"):
            return
        for m in modes:
            if m in self.ALT_MODES and self._main_buffer is not None:
                self._alt_buffer = _fresh_buffer(self) if m == 1047 else self.buffer
                self.buffer, self._main_buffer = self._main_buffer, None
                self.dirty.update(range(self.lines))
                if m == 1049 and self._alt_saved is not None:
                    self.savepoints.append(self._alt_saved)
                    self._alt_saved = None
                    self.restore_cursor()

    # D6: grapheme clusters. pyte's draw() stops at the first zero-width non-combining or unprintable char and
    # drops the rest of the run, merges a combining mark after a wide char into the invisible stub, and gives
    # ZWJ emoji sequences / skin-tone modifiers / flags their own cells. The fix, char by char on the rare runs:
    # zero-width chars join the previous cell (NFC only for combining marks; a wide stub is skipped); a non-ASCII
    # char drawn where a ZWJ left the cursor, the second regional indicator of a flag, and a skin-tone modifier
    # after a wide char join that cell; VS16 after a narrow emoji-presentation base right before the cursor
    # widens it to 2 cells; width -1 is skipped. D13: a cell's cluster keeps at most CLUSTER_MAX codepoints.
    _join: tuple[str, int, int] | None = None  # ("zwj" | "ri", x, y): where the next char may join the cell

    def draw(self, data: str) -> None:
        special = (self._join is not None and not data[:1].isascii()) or any(
            wcwidth(ch) < 1 or 0x1F3FB <= ord(ch) <= 0x1F3FF or 0x1F1E6 <= ord(ch) <= 0x1F1FF for ch in data
        )
        if not special:
            self._join = None
            super().draw(data)
            return
        for ch in data:
            w = wcwidth(ch)
            if w < 0:
                continue
            if w == 0:
                self._attach(ch, normalize=bool(unicodedata.combining(ch)))
                continue
            join, self._join = self._join, None
            ri = 0x1F1E6 <= ord(ch) <= 0x1F1FF
            if (
                join is not None
                and join[1:] == (self.cursor.x, self.cursor.y)
                and ((join[0] == "zwj" and ord(ch) >= 0x80) or (join[0] == "ri" and ri))
            ):
                self._attach(ch, normalize=False)
            elif 0x1F3FB <= ord(ch) <= 0x1F3FF and self._after_wide():
                self._attach(ch, normalize=False)
            else:
                super().draw(ch)
                if ri:
                    self._join = ("ri", self.cursor.x, self.cursor.y)
        self.dirty.add(self.cursor.y)

    def _attach_target(self) -> tuple[int, int] | None:
        x, y = min(self.cursor.x, self.columns), self.cursor.y
        if x > 0:
            x -= 1
        elif y > 0:
            y, x = y - 1, self.columns - 1
        else:
            return None
        if x > 0 and self.buffer[y][x].data == "":
            x -= 1  # a wide char's stub: the mark belongs to the wide char
        return y, x

    def _attach(self, ch: str, normalize: bool) -> None:
        target = self._attach_target()
        if target is None:
            return
        y, x = target
        last = self.buffer[y][x]
        if len(last.data) >= CLUSTER_MAX:
            return  # D13: a full cluster drops the character
        data = unicodedata.normalize("NFC", last.data + ch)[:CLUSTER_MAX] if normalize else last.data + ch
        self.buffer[y][x] = last._replace(data=data)
        self.dirty.add(y)
        cx = self.cursor.x
        if ch == "\u200d":
            self._join = ("zwj", cx, self.cursor.y)
        elif (
            ch == "\ufe0f"
            and y == self.cursor.y
            and x + 1 == cx < self.columns
            and last.data
            and wcwidth(last.data[0]) == 1
            and wcswidth(last.data[0] + "\ufe0f") == 2
        ):
            self.buffer[y][cx] = last._replace(data="")
            self.cursor.x += 1
            if self._join is not None:
                self._join = (self._join[0], self.cursor.x, self._join[2])

    def _after_wide(self) -> bool:
        target = self._attach_target()
        if target is None:
            return False
        data = self.buffer[target[0]][target[1]].data
        return bool(data) and wcwidth(data[0]) == 2

    @property
    def display(self) -> list[str]:
        """pyte's display minus its assertion that a cell holds one wide/narrow char plus zero-width ones (D6)."""

        def render(line: Any) -> str:
            out, skip = [], False
            for x in range(self.columns):
                if skip:
                    skip = False
                    continue
                data = line[x].data
                skip = bool(data) and wcwidth(data[0]) == 2
                out.append(data)
            return "".join(out)

        return [render(self.buffer[y]) for y in range(self.lines)]

    # D7: DL moves every line up. pyte only moves lines present in its sparse buffer dict, so a never-touched
    # (blank) line moving up leaves the old text in place; materialising the rows first makes its loop exact.
    def delete_lines(self, count: int | None = None) -> None:
        for y in range(self.lines):
            self.buffer[y]
        super().delete_lines(count)

    # D5: SGR 58 (underline colour) takes its arguments with it: 58;5;n and 58;2;r;g;b are skipped whole.
    def select_graphic_rendition(self, *attrs: int, **kwargs: Any) -> None:
        kept: list[int] = []
        i = 0
        while i < len(attrs):
            a = attrs[i]
            if a in (38, 48) and i + 1 < len(attrs):  # keep pyte's own 38/48 handling intact
                n = 3 if attrs[i + 1] == 5 else 5 if attrs[i + 1] == 2 else 2
                kept.extend(attrs[i : i + n])
                i += n
            elif a == 58:
                i += (
                    3
                    if i + 1 < len(attrs) and attrs[i + 1] == 5
                    else 5
                    if i + 1 < len(attrs) and attrs[i + 1] == 2
                    else 1
                )
            else:
                kept.append(a)
                i += 1
        if attrs and not kept:
            return  # only skipped codes: no change (pyte would treat an empty SGR as reset)
        super().select_graphic_rendition(*kept, **kwargs)


class OracleByteStream(pyte.ByteStream):
    """pyte's ByteStream; D10: HPA is CSI Pn ` (ECMA-48 0x60). pyte binds it to "'" (an intermediate byte)."""

    csi = {**pyte.ByteStream.csi, "`": "cursor_to_column"}


# ---------------------------------------------------------------------------------------------------------------
# The comparison loop.
# ---------------------------------------------------------------------------------------------------------------


def chunk_cuts(size: int, seed: int, name: str) -> list[int]:
    """Cut offsets for log-uniform chunk sizes of 1 B .. 8 KiB, deterministic per (input, seed)."""
    rng = random.Random(f"{name}:{seed}")
    cuts, pos = [], 0
    while pos < size:
        pos = min(size, pos + int(2 ** rng.uniform(0, 13.0)))
        cuts.append(pos)
    return cuts


def _state(screen: Any) -> dict[str, Any]:
    c = screen.cursor
    m = screen.margins
    return {
        "cursor": (c.x, c.y, c.hidden),
        "cursor.attrs": tuple(c.attrs),
        "title": screen.title,
        "icon_name": screen.icon_name,
        "margins": None if m is None else (m.top, m.bottom),
        "mode": set(screen.mode),
        "dirty": set(screen.dirty),
    }


def _cells(screen: Any) -> list[list[tuple]]:
    buf = screen.buffer
    return [[tuple(row[x]) for x in range(screen.columns)] for row in (buf[y] for y in range(screen.lines))]


def _describe_rows(a: list[str], b: list[str], limit: int = 4) -> str:
    rows = [y for y in range(min(len(a), len(b))) if a[y] != b[y]]
    out = [f"  row {y}:\n    litbridge {a[y]!r}\n    oracle    {b[y]!r}" for y in rows[:limit]]
    return "\n".join(out) + (f"\n  ... {len(rows)} rows differ" if len(rows) > limit else "")


def _describe_cells(a: list[list[tuple]], b: list[list[tuple]], limit: int = 6) -> str:
    diffs = [(y, x) for y in range(len(a)) for x in range(len(a[y])) if a[y][x] != b[y][x]]
    out = [f"  cell (y={y}, x={x}): litbridge {a[y][x]} oracle {b[y][x]}" for y, x in diffs[:limit]]
    return "\n".join(out) + f"\n  {len(diffs)} cells differ"


def first_divergence(
    make_subject: Callable[[], tuple[Any, Any]],
    raw: bytes,
    name: str,
    seed: int,
    *,
    oracle_cls: Callable[[int, int], Any] = OracleScreen,
    oracle_stream_cls: type[pyte.ByteStream] = OracleByteStream,
    normalise_input: bool = True,
    normalise_subject: bool = False,
    state: Callable[[Any], dict[str, Any]] = _state,
    cell_state: Callable[[Any], Any] = _cells,
) -> str | None:
    """Feed `raw` to the subject and to the oracle in the same chunking; describe the first difference.

    `normalise_subject` also strips the D2/D3 sequences from the subject's input (to test everything else on a
    path that does not implement those fixes).
    """
    subject, subject_stream = make_subject()
    oracle = oracle_cls(COLS, LINES)
    oracle_stream = oracle_stream_cls(oracle)
    norm = normalise(raw) if normalise_input else Normalised(raw, [], [], [])
    prev = prev_o = 0
    for i, cut in enumerate(chunk_cuts(len(raw), seed, name)):
        cut_o = norm.map(cut)
        subject_stream.feed(norm.data[prev_o:cut_o] if normalise_subject else raw[prev:cut])
        oracle_stream.feed(norm.data[prev_o:cut_o])
        where = f"{name} seed={seed} chunk #{i} raw bytes [{prev}:{cut}] = {raw[prev:cut][:160]!r}"
        prev, prev_o = cut, cut_o
        a, b = subject.display, oracle.display
        if a != b:
            return f"display differs after {where}\n{_describe_rows(a, b)}"
        sa, sb = state(subject), state(oracle)
        for key in sa:
            if sa[key] != sb[key]:
                return f"{key} differs after {where}\n  litbridge {sa[key]!r}\n  oracle    {sb[key]!r}"
        subject.dirty.clear()
        oracle.dirty.clear()
        if i % CELL_EVERY == CELL_EVERY - 1 or cut == len(raw):
            ca, cb = cell_state(subject), cell_state(oracle)
            if ca != cb:
                detail = (
                    _describe_cells(ca, cb) if cell_state is _cells else f"  litbridge {ca}\n  oracle    {cb}"
                )
                return f"cells differ after {where}\n{detail}"
    return None


def _subject_factory(mod: ModuleType) -> Callable[[], tuple[Any, Any]]:
    def make() -> tuple[Any, Any]:
        screen = mod.Screen(COLS, LINES)
        return screen, mod.ByteStream(screen)

    return make


def _check(native_pyte: ModuleType, emu_input: tuple[str, bytes], seed: int) -> None:
    name, raw = emu_input
    problem = first_divergence(_subject_factory(native_pyte), raw, name, seed)
    assert problem is None, (
        f"litbridge.pyte diverges from pyte+documented fixes (see docs/emulator-divergences.md):\n{problem}"
    )


@pytest.mark.parametrize("seed", DEFAULT_SEEDS)
def test_differential(native_pyte: ModuleType, emu_input: tuple[str, bytes], seed: int) -> None:
    _check(native_pyte, emu_input, seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SLOW_SEEDS)
def test_differential_more_seeds(native_pyte: ModuleType, emu_input: tuple[str, bytes], seed: int) -> None:
    _check(native_pyte, emu_input, seed)


def test_terminal_changed_rows_is_exact(emu_input: tuple[str, bytes]) -> None:
    """`Terminal.changed_rows()` after every chunk = exactly the rows whose display text changed since the last call."""
    from litbridge.term import Terminal

    name, raw = emu_input
    term = Terminal(COLS, LINES)
    term.changed_rows()  # baseline: the blank screen
    prev = list(term.display)
    last = 0
    for i, cut in enumerate(chunk_cuts(len(raw), 0, name)):
        term.feed(raw[last:cut])
        last = cut
        now = list(term.display)
        expected = [(y, now[y]) for y in range(LINES) if now[y] != prev[y]]
        got = sorted(term.changed_rows())
        assert got == expected, (
            f"{name}: changed_rows after chunk #{i} (raw offset {cut}) reported rows "
            f"{[y for y, _ in got]}, display changed in rows {[y for y, _ in expected]}"
        )
        prev = now


def _compat_factory(mod: ModuleType) -> Callable[[], tuple[Any, Any]]:
    """A Screen subclass overriding one event: litbridge takes its pyte-compatible (per-event) path."""

    class Observed(mod.Screen):  # type: ignore[misc,name-defined]
        def cursor_up(self, count: int | None = None) -> None:
            super().cursor_up(count)

    def make() -> tuple[Any, Any]:
        screen = Observed(COLS, LINES)
        return screen, mod.ByteStream(screen)

    return make


def test_differential_compat_path(native_pyte: ModuleType, emu_input: tuple[str, bytes]) -> None:
    """The per-event path (a subclass overriding an event method) matches the oracle too, raw input included."""
    name, raw = emu_input
    problem = first_divergence(_compat_factory(native_pyte), raw, name, 0)
    assert problem is None, f"litbridge.pyte compat path diverges:\n{problem}"


def test_compat_path_consumes_private_csi_and_strings(native_pyte: ModuleType) -> None:
    screen, stream = _compat_factory(native_pyte)()
    stream.feed(b"\x1b[>4;2mA\x1bPpayload\x1b\\B\x1b[=1uC")
    assert screen.display[0].rstrip() == "ABC"
    assert not screen.buffer[0][0].underscore


def test_erase_keeps_cells_written_for_later_coloured_erase(native_pyte: ModuleType) -> None:
    screen = _feed(native_pyte, b"\x1b[1K\x1b[41m\x1b[2J")
    assert screen.buffer[0][0].bg == "red"  # pyte: the EL-erased cell is present, so ED paints it


def _history_state(screen: Any) -> dict[str, Any]:
    h = screen.history
    out = _state(screen)
    out.update(history=(len(h.top), len(h.bottom), h.position, h.size))
    out["last_top_line"] = _row_text(h.top[-1], screen.columns) if h.top else None
    return out


def _row_text(row: Any, columns: int) -> str:
    return "".join(row[x].data for x in range(columns))


def _history_cells(screen: Any) -> Any:
    return [_row_text(r, screen.columns) for r in screen.history.top], _cells(screen)


class OracleHistoryScreen(OracleScreen, pyte.HistoryScreen):
    """pyte's HistoryScreen with the same documented fixes as `OracleScreen`."""


def test_differential_history_screen(native_pyte: ModuleType, emu_input: tuple[str, bytes]) -> None:
    """`HistoryScreen` (default history=100): screen as above plus history top/bottom/position and line texts."""
    name, raw = emu_input

    def make() -> tuple[Any, Any]:
        screen = native_pyte.HistoryScreen(COLS, LINES)
        return screen, native_pyte.ByteStream(screen)

    problem = first_divergence(
        make, raw, name, 0, oracle_cls=OracleHistoryScreen, state=_history_state, cell_state=_history_cells
    )
    assert problem is None, f"litbridge.pyte HistoryScreen diverges:\n{problem}"


# ---------------------------------------------------------------------------------------------------------------
# The harness itself: it must be able to fail, and the normaliser must be exact.
# ---------------------------------------------------------------------------------------------------------------


def test_harness_flags_plain_pyte_quirks() -> None:
    """Plain pyte against the oracle diverges on every deliberate fix, so a silent pass would be noticed."""
    plain = _subject_factory(pyte)
    cases = {
        "xtmodkeys": b"\x1b[>4;2mA",
        "kitty-set": b"\x1b[=1uA",
        "kitty-pop": b"\x1b[<uA",
        "colon-sgr": b"\x1b[4:3mA",
        "dcs": b"\x1bPq#0;2;0;0;0\x1b\\A",
        "apc": b"\x1b_Gf=100;AAAA\x1b\\A",
        "alt-1049": b"main\x1b[?1049halt",
        "alt-47": b"main\x1b[?47halt\x1b[?47l",
        "sgr58-idx": b"\x1b[58;5;1mA",
        "sgr58-rgb": b"\x1b[1;58;2;255;0;0mA",
        "c0-then-esc": b"ab\x1b[\n\x1b[2Jx",
        "esc-esc": b"ab\x1b\x1b[2Jx",
    }
    for case, raw in cases.items():
        assert first_divergence(plain, raw, case, 0) is not None, case


def test_harness_plain_pyte_agrees_with_itself_without_fixes(emu_input: tuple[str, bytes]) -> None:
    """With no corrections the loop reports nothing for pyte vs pyte (no false positives from the loop)."""
    name, raw = emu_input
    raw = raw[:20000]
    assert (
        first_divergence(
            _subject_factory(pyte),
            raw,
            name,
            0,
            oracle_cls=pyte.Screen,
            oracle_stream_cls=pyte.ByteStream,
            normalise_input=False,
        )
        is None
    )


def test_normaliser_maps_offsets() -> None:
    raw = b"ab\x1b[>4mcd\x1bPxyz\x1b\\ef\x1b[1mg"
    norm = normalise(raw)
    assert norm.data == b"abcdef\x1b[1mg"
    assert [norm.map(p) for p in (0, 2, 3, 7, 8, 9, 10, 16, 17, 18, len(raw))] == [
        0,
        2,
        2,
        2,
        3,
        4,
        4,
        4,
        5,
        6,
        11,
    ]
    assert normalise(b"\x1b[?25l\x1b[2J\x1b]0;t\x07").data == b"\x1b[?25l\x1b[2J\x1b]0;t\x07"
    assert normalise(b"a\x1bPq\x1b[31mx\x1b\\b\x1b_unterminated").data == b"ab"


def test_chunking_covers_small_and_large() -> None:
    cuts = chunk_cuts(1 << 20, 0, "x")
    sizes = [b - a for a, b in zip([0, *cuts], cuts, strict=False)]
    assert cuts[-1] == 1 << 20 and min(sizes) == 1 and max(sizes) > 4096 and max(sizes) <= MAX_CHUNK


# ---------------------------------------------------------------------------------------------------------------
# Focused tests: each deliberate fix, asserted on litbridge alone (names match docs/emulator-divergences.md).
# ---------------------------------------------------------------------------------------------------------------


def _feed(mod: ModuleType, data: bytes, cols: int = 20, lines: int = 5) -> Any:
    screen = mod.Screen(cols, lines)
    mod.ByteStream(screen).feed(data)
    return screen


def _plain(screen: Any) -> tuple:
    return tuple(screen.default_char)


@pytest.mark.parametrize(
    "seq",
    [
        b"\x1b[>4;2m",
        b"\x1b[>4m",
        b"\x1b[>1u",
        b"\x1b[<u",
        b"\x1b[=1u",
        b"\x1b[=1;1u",
        b"\x1b[4:3m",
        b"\x1b[58:2::255:0:0m",
        b"\x1b[>0q",
        b"\x1b[2 q",
        b"\x1b[!p",
        b"\x1b[?1$p",
    ],
)
def test_private_and_intermediate_csi_is_consumed_whole(native_pyte: ModuleType, seq: bytes) -> None:
    screen = _feed(native_pyte, seq + b"A")
    assert screen.display[0] == "A" + " " * 19
    assert tuple(screen.buffer[0][0]) == ("A", *_plain(screen)[1:])
    assert tuple(screen.cursor.attrs) == _plain(screen)
    assert (screen.cursor.x, screen.cursor.y) == (1, 0)


@pytest.mark.parametrize("intro", [b"\x1bP", b"\x1b_", b"\x1b^", b"\x1bX"], ids=["DCS", "APC", "PM", "SOS"])
def test_string_sequences_do_not_print(native_pyte: ModuleType, intro: bytes) -> None:
    screen = _feed(native_pyte, b"\x1b[1m" + intro + b"1;2|payload\x1b[31m text\x1b\\B")
    assert screen.display[0] == "B" + " " * 19
    assert screen.buffer[0][0].bold and screen.buffer[0][0].fg == "default"


def test_string_sequence_split_across_feeds(native_pyte: ModuleType) -> None:
    screen = native_pyte.Screen(20, 5)
    stream = native_pyte.ByteStream(screen)
    for part in (b"X\x1bP", b"q#0;2", b";0;0\x1b", b"\\Y"):
        stream.feed(part)
    assert screen.display[0].rstrip() == "XY"


def test_sgr58_indexed_is_skipped_whole(native_pyte: ModuleType) -> None:
    screen = _feed(native_pyte, b"\x1b[58;5;1mA")
    cell = screen.buffer[0][0]
    assert not cell.blink and not cell.bold and cell.fg == "default"


def test_sgr58_truecolor_does_not_reset(native_pyte: ModuleType) -> None:
    screen = _feed(native_pyte, b"\x1b[1;31;58;2;255;0;0;4mA")
    cell = screen.buffer[0][0]
    assert cell.bold and cell.underscore and cell.fg == "red"


def test_sgr_dim_does_not_change_pyte_fields(native_pyte: ModuleType) -> None:
    """SGR 2 is kept by litbridge (see docs) but pyte's 9 Char fields have no slot for it; they stay put."""
    screen = _feed(native_pyte, b"\x1b[2mA\x1b[22mB")
    assert tuple(screen.buffer[0][0])[1:] == _plain(screen)[1:]
    assert tuple(screen.buffer[0][1])[1:] == _plain(screen)[1:]


def test_zero_width_does_not_truncate_run(native_pyte: ModuleType) -> None:
    screen = _feed(native_pyte, "❤\ufe0f OK a\u200bb".encode())
    assert screen.display[0].rstrip() == "❤\ufe0f OK a\u200bb"
    assert (screen.cursor.x, screen.cursor.y) == (8, 0)  # ❤️ is 2 columns wide (VS16), the text after it kept
    real = _feed(pyte, "❤\ufe0f OK".encode())
    assert real.display[0].rstrip() == "❤"  # the pyte bug this fixes


def test_grapheme_clusters_share_a_cell(native_pyte: ModuleType) -> None:
    screen = _feed(native_pyte, "A👍🏽B👨\u200d👩\u200d👧C".encode())
    cells = [screen.buffer[0][x].data for x in range(8)]
    assert cells == ["A", "👍🏽", "", "B", "👨\u200d👩\u200d👧", "", "C", " "]
    assert screen.cursor.x == 7


def test_grapheme_cluster_split_across_feeds(native_pyte: ModuleType) -> None:
    screen = native_pyte.Screen(20, 5)
    stream = native_pyte.ByteStream(screen)
    for part in "👨\u200d👩\u200d👧".encode():
        stream.feed(bytes([part]))
    assert screen.buffer[0][0].data == "👨\u200d👩\u200d👧" and screen.cursor.x == 2


# Grapheme clusters as the CLIs lay them out (Ink's string-width, wcwidth's wcswidth): every codepoint kept in
# the cell's text, the cluster's width decides the columns. (cluster, columns, cells' data).
CLUSTERS = [
    ("🇯🇵", 2, ["🇯🇵", ""]),  # a flag: two regional indicators, one 2-column cell
    ("🇯🇵🇺🇸", 4, ["🇯🇵", "", "🇺🇸", ""]),  # the third indicator starts a new flag
    ("🇯", 2, ["🇯", ""]),  # a lone indicator stays a (wide) cell of its own
    ("❤\ufe0f", 2, ["❤\ufe0f", ""]),  # VS16: a narrow emoji-presentation base becomes 2 columns
    ("❤\ufe0e", 1, ["❤\ufe0e"]),  # VS15: text presentation, stays narrow
    ("⌚\ufe0e", 2, ["⌚\ufe0e", ""]),  # VS15 does not narrow a wide base (string-width, xterm, VTE)
    ("#\ufe0f\u20e3", 2, ["#\ufe0f\u20e3", ""]),  # keycap: VS16 widens, the enclosing mark joins
    ("👍🏽", 2, ["👍🏽", ""]),  # skin tone modifier
    ("👨\u200d👩\u200d👧", 2, ["👨\u200d👩\u200d👧", ""]),  # ZWJ family
    ("🏃\u200d♀\ufe0f", 2, ["🏃\u200d♀\ufe0f", ""]),  # ZWJ then a narrow sign with VS16: one cluster
    ("❤\ufe0f\u200d🔥", 2, ["❤\ufe0f\u200d🔥", ""]),  # VS16-widened base continued by a ZWJ sequence
    ("e\u0301", 1, ["é"]),  # combining mark: NFC-merged, as pyte does
    ("中", 2, ["中", ""]),  # CJK
    ("中\u0301", 2, ["中\u0301", ""]),  # combining mark on a wide char joins the char, not its stub
]


@pytest.mark.parametrize(("cluster", "width", "cells"), CLUSTERS)
def test_grapheme_cluster_width_and_text(
    native_pyte: ModuleType, cluster: str, width: int, cells: list[str]
) -> None:
    from wcwidth import wcswidth as ws

    for chunk in (0, 1):  # whole, and one byte per feed (a cluster split across pty reads)
        screen = native_pyte.Screen(12, 2)
        stream = native_pyte.ByteStream(screen)
        raw = ("a" + cluster + "z").encode()
        for part in [raw] if chunk == 0 else [raw[i : i + 1] for i in range(len(raw))]:
            stream.feed(part)
        assert screen.display[0].rstrip() == "a" + unicodedata.normalize("NFC", cluster) + "z"
        assert [screen.buffer[0][1 + i].data for i in range(len(cells))] == cells
        assert screen.buffer[0][1 + width].data == "z" and screen.cursor.x == 2 + width
    if not cluster.startswith(
        "⌚"
    ):  # wcwidth narrows VS15 after a wide base; string-width and terminals do not
        assert ws(cluster) == width


def test_zwj_then_ascii_or_cursor_move_does_not_join(native_pyte: ModuleType) -> None:
    screen = _feed(native_pyte, "👨\u200dx".encode())
    assert [screen.buffer[0][x].data for x in range(3)] == ["👨\u200d", "", "x"]
    screen = _feed(native_pyte, "👨\u200d\x1b[C👩".encode())  # cursor moved between: a new cell
    assert [screen.buffer[0][x].data for x in range(5)] == ["👨\u200d", "", " ", "👩", ""]


def test_flag_across_a_line_wrap_stays_one_cluster(native_pyte: ModuleType) -> None:
    screen = _feed(native_pyte, "abc🇯🇵x".encode(), cols=5)
    assert screen.buffer[0][3].data == "🇯🇵" and screen.display[1].rstrip() == "x"


def test_vs16_at_the_last_column_does_not_widen(native_pyte: ModuleType) -> None:
    screen = _feed(native_pyte, "abc❤\ufe0fx".encode(), cols=4)
    assert screen.display[0] == "abc❤\ufe0f" and screen.display[1].rstrip() == "x"


def test_combining_after_wide_char_attaches_to_it(native_pyte: ModuleType) -> None:
    screen = _feed(native_pyte, "中\u0301x".encode(), cols=4)
    assert screen.buffer[0][0].data == "中\u0301" and screen.buffer[0][1].data == ""
    assert screen.display[0] == "中\u0301x "
    screen = _feed(native_pyte, b"abcd\r\n\xcc\x81", cols=4)  # column 0: joins the previous row's last cell
    assert screen.buffer[0][3].data == "d\u0301"


FLOOD_SECONDS = 3.0
"""The combining-mark flood's bound: "well under a second" with room for a loaded machine."""


def test_combining_mark_flood_is_capped_per_cell(native_pyte: ModuleType) -> None:
    """D13: 1 MB of combining marks on one base feeds "well under a second" and interns at most CLUSTER_MAX
    strings; the cell keeps CLUSTER_MAX codepoints and the next character still gets its own cell. The bound,
    FLOOD_SECONDS, is what a loaded 2-core machine still meets (an unloaded one: tens of ms); the quadratic
    code it guards against took hours."""
    import time

    from litbridge._core import screen as core

    assert core.CLUSTER_MAX_CODEPOINTS == CLUSTER_MAX
    marks = "".join(chr(0x300 + i % 0x30) for i in range(CLUSTER_MAX * 4))  # zalgo-like: varied marks
    flood = ("x" + marks * (1 + 500_000 // len(marks))).encode()  # 2 bytes per mark: just over 1 MB
    screen = native_pyte.Screen(20, 3)
    stream = native_pyte.ByteStream(screen)
    interned = core.interned_cluster_count()
    start = time.monotonic()
    for i in range(
        0, len(flood), 4096
    ):  # a PTY's reads; quadratic code overruns the bound within a few chunks
        stream.feed(flood[i : i + 4096])
        elapsed = time.monotonic() - start
        assert elapsed < FLOOD_SECONDS, (
            f"combining-mark flood still feeding after {elapsed:.1f} s at byte {i}"
        )
    print(f"combining-mark flood: {len(flood) / 1e6:.2f} MB fed in {elapsed * 1000:.0f} ms")
    assert core.interned_cluster_count() - interned <= CLUSTER_MAX
    stream.feed("\u200d👩z".encode())  # a ZWJ on the full cell is dropped too: the emoji starts its own cell
    cell = screen.buffer[0][0].data
    assert len(cell) == CLUSTER_MAX and cell[0] == "x" and set(cell[1:]) <= set(marks)
    assert [screen.buffer[0][x].data for x in (1, 2, 3)] == ["👩", "", "z"] and screen.cursor.x == 4


def test_sgr_dim_is_kept(native_pyte: ModuleType) -> None:
    """SGR 2 is stored per cell (`Screen.dim_at`), cleared by 22 together with bold, and repainted as SGR 2."""
    screen = _feed(native_pyte, b"\x1b[2mA\x1b[1mB\x1b[22mC\x1b[2mD\x1b[0mE")
    assert [screen.dim_at(0, x) for x in range(5)] == [True, True, False, True, False]
    assert [screen.buffer[0][x].bold for x in range(5)] == [False, True, False, False, False]
    from litbridge.term import Terminal

    term = Terminal(20, 5)
    term.feed(b"\x1b[2mfaint\x1b[0m")
    assert b"\x1b[0;2mfaint" in term.ansi_repaint()


def test_delete_lines_moves_blank_lines_up(native_pyte: ModuleType) -> None:
    screen = _feed(native_pyte, b"A\x1b[2M")
    assert screen.display[0].strip() == ""
    screen = _feed(native_pyte, b"\x1b[3;1HC\x1b[1;1HA\x1b[M")
    assert [row.rstrip() for row in screen.display[:3]] == ["", "C", ""]
    real = _feed(pyte, b"A\x1b[2M")
    assert real.display[0].rstrip() == "A"  # the pyte bug this fixes


def test_esc_inside_csi_starts_a_new_sequence(native_pyte: ModuleType) -> None:
    screen = _feed(native_pyte, b"X\x1b[1\x1b[2J")
    assert screen.display[0].strip() == ""


def test_c0_control_inside_csi_runs_then_esc_aborts_the_csi(native_pyte: ModuleType) -> None:
    """D11: LF inside the CSI moves the cursor, the ESC abandons the CSI and `ESC [ 2 J` erases."""
    screen = _feed(native_pyte, b"ab\x1b[\n\x1b[2Jx")
    assert [row.rstrip() for row in screen.display[:2]] == ["", "  x"]
    screen = _feed(native_pyte, b"ab\x1b[\r\x1b[1mx")
    assert screen.display[0].rstrip() == "xb" and screen.buffer[0][0].bold
    real = _feed(pyte, b"ab\x1b[\n\x1b[2Jx")
    assert real.display[1].rstrip() == "  [2Jx"  # the pyte behaviour this corrects


def test_esc_esc_restarts_the_escape(native_pyte: ModuleType) -> None:
    """D12: the second ESC starts a new sequence, so `ESC ESC [ 2 J` erases and `ESC ESC # 8` runs DECALN."""
    screen = _feed(native_pyte, b"ab\x1b\x1b[2Jx")
    assert screen.display[0].rstrip() == "  x"
    screen = _feed(native_pyte, b"\x1b\x1b#8")
    assert screen.display[0] == "E" * 20
    real = _feed(pyte, b"ab\x1b\x1b[2Jx")
    assert real.display[0].rstrip() == "ab[2Jx"  # the pyte behaviour this corrects


def test_normaliser_keeps_controls_and_osc_payload() -> None:
    """D11 keeps the C0 controls of a removed CSI in place; D12 leaves an ESC ESC inside an OSC string alone."""
    norm = normalise(b"ab\x1b[1\n2\x1b[2Jx")
    assert norm.data == b"ab\n\x1b[2Jx"
    assert [norm.map(p) for p in (2, 4, 5, 6, 7)] == [2, 2, 2, 3, 3]
    assert normalise(b"a\x1b[>4\rm\x1b\x1b[Hz").data == b"a\r\x1b[Hz"
    osc = b"\x1b]0;t\x1b\x1b[2J\x07\x1b\x1b]2;u\x1b\\"
    assert normalise(osc).data == b"\x1b]0;t\x1b\x1b[2J\x07\x1b]2;u\x1b\\"
    assert normalise(b"\x1b[2\x07Jx").data == b"\x1b[2\x07Jx"  # not removable: left to pyte, which agrees


def test_docs_switch_applies_to_the_next_byte(native_pyte: ModuleType) -> None:
    screen = _feed(native_pyte, b"\x1b%@\xe9\x1b%G\xc3\xa9")
    assert screen.display[0].rstrip() == "éé"


def test_hpa_backtick(native_pyte: ModuleType) -> None:
    screen = _feed(native_pyte, b"\x1b[5`A")
    assert screen.display[0].index("A") == 4


def test_cpr_in_origin_mode_without_margins_does_not_raise(native_pyte: ModuleType) -> None:
    from litbridge.term import Terminal

    replies: list[bytes] = []
    term = Terminal(20, 5, on_reply=replies.append)
    term.feed(b"\x1b[?6h\x1b[6n")
    assert replies == [b"\x1b[1;1R"]


def test_resize_keeps_alternate_screen(native_pyte: ModuleType) -> None:
    screen = _feed(native_pyte, b"main\x1b[?47h\x1b[3;4Hx", cols=10)
    screen.resize(5, 12)
    assert screen.display[2].rstrip() == "   x"
    native_pyte.ByteStream(screen).feed(b"\x1b[?47l")
    assert screen.display[0].rstrip() == "main"


def test_alternate_screen_1049(native_pyte: ModuleType) -> None:
    screen = _feed(native_pyte, b"main\r\nline2\x1b[?1049h")
    assert screen.display[0].strip() == "" and screen.display[1].strip() == ""
    assert (screen.cursor.x, screen.cursor.y) == (5, 1)  # 1049h keeps the position
    stream = native_pyte.ByteStream(screen)
    stream.feed(b"\x1b[Halt\x1b[?1049l")
    assert screen.display[0].rstrip() == "main" and screen.display[1].rstrip() == "line2"
    assert (screen.cursor.x, screen.cursor.y) == (5, 1)  # restored
    stream.feed(b"\x1b[?1049h")
    assert screen.display[0].strip() == ""  # 1049h clears the alternate screen on entry


def test_alternate_screen_47_keeps_contents(native_pyte: ModuleType) -> None:
    screen = _feed(native_pyte, b"main\x1b[?47h\x1b[Halt\x1b[?47l")
    assert screen.display[0].rstrip() == "main"
    native_pyte.ByteStream(screen).feed(b"\x1b[?47h")
    assert screen.display[0].rstrip() == "alt"


def test_alternate_screen_1047_clears_on_exit(native_pyte: ModuleType) -> None:
    screen = _feed(native_pyte, b"main\x1b[?1047h\x1b[Halt\x1b[?1047l")
    assert screen.display[0].rstrip() == "main"
    native_pyte.ByteStream(screen).feed(b"\x1b[?1047h")
    assert screen.display[0].strip() == ""


def test_alternate_screen_switch_marks_all_dirty(native_pyte: ModuleType) -> None:
    screen = _feed(native_pyte, b"main")
    screen.dirty.clear()
    native_pyte.ByteStream(screen).feed(b"\x1b[?1049h")
    assert set(screen.dirty) == set(range(screen.lines))


def test_oracle_alternate_screen_matches_focused_expectations() -> None:
    """The oracle's own D1 implementation passes the same expectations as the focused tests above."""
    screen = OracleScreen(20, 5)
    stream = pyte.ByteStream(screen)
    stream.feed(b"main\r\nline2\x1b[?1049h")
    assert screen.display[0].strip() == "" and (screen.cursor.x, screen.cursor.y) == (5, 1)
    stream.feed(b"\x1b[Halt\x1b[?1049l")
    assert screen.display[0].rstrip() == "main" and (screen.cursor.x, screen.cursor.y) == (5, 1)
    screen = OracleScreen(20, 5)
    pyte.ByteStream(screen).feed(b"\x1b[1;31;58;2;255;0;0;4mA")
    assert screen.buffer[0][0].bold and screen.buffer[0][0].underscore and screen.buffer[0][0].fg == "red"


if os.environ.get(
    "LITBRIDGE_DIFF_DEBUG"
):  # pragma: no cover - manual aid: print the first divergence per input

    def test_print_all_divergences(native_pyte: ModuleType, emu_input: tuple[str, bytes]) -> None:
        print("\n", first_divergence(_subject_factory(native_pyte), emu_input[1], emu_input[0], 0))
