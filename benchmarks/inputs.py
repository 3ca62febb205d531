"""Benchmark inputs: pyte's captured streams, the real Claude Code recordings, and deterministic synthetic streams.

Everything is bytes as the emulator sees them after the pty (CRLF line ends). Sizes shrink under
LITBRIDGE_BENCH_SMOKE=1. This module only produces inputs; it times nothing.
"""

from __future__ import annotations

import base64
import json
import os
import random
from functools import cache

from wcwidth import wcswidth

from fetch_fixtures import CAPTURES, PYTE_DIR

SMOKE = os.environ.get("LITBRIDGE_BENCH_SMOKE", "") not in ("", "0")
"""The smoke switch (`tests/benchmarks_smoke/` sets it), defined here, where the inputs' sizes follow it:
the tests load this file by path, and `report` takes it from here."""
PYTE_CAPTURED = PYTE_DIR / "tests" / "captured"

COLS, LINES = 200, 50
CHUNK = 4096  # a pty read returns at most 4 KiB
SMOKE_BYTES = 24_000
SYNTH_BYTES = SMOKE_BYTES if SMOKE else 400_000

GLYPHS = "●✻⎿╭─╮│╰╯▶✓✗…"
WORDS = (
    "the quick brown fox jumps over lazy dog function return const await import from class def self "
    "value error result stream screen buffer cursor render frame token session claude"
).split()


def chunks(data: bytes, size: int = CHUNK) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def _cap(data: bytes) -> bytes:
    return data[:SMOKE_BYTES] if SMOKE else data


@cache
def pyte_captured() -> dict[str, bytes]:
    """pyte 0.8.2's `tests/captured/*.input` (80x24 captures, replayed at 200x50) plus their concatenation."""
    if not PYTE_CAPTURED.is_dir():
        return {}
    out = {p.stem: p.read_bytes() for p in sorted(PYTE_CAPTURED.glob("*.input"))}
    out["captured_all"] = b"".join(out.values())
    if SMOKE:
        out = {k: _cap(out[k]) for k in ("ls", "captured_all")}
    return out


@cache
def claude_recordings() -> dict[str, bytes]:
    """Each real Claude Code 2.1.328 recording (base64 PTY chunks, concatenated in order) plus all of them."""
    out: dict[str, bytes] = {}
    for path in sorted(CAPTURES.glob("*/chunks.jsonl")):
        with path.open() as fh:
            out[path.parent.name] = b"".join(
                base64.b64decode(json.loads(ln)["b64"]) for ln in fh if ln.strip()
            )
    if not out:
        return {}
    out["claude_all"] = b"".join(out.values())
    if SMOKE:
        small = sorted(out, key=lambda k: len(out[k]))[:1]
        out = {k: _cap(out[k]) for k in [*small, "claude_all"]}
    return out


@cache
def claude_recording_reads() -> dict[str, list[bytes]]:
    """Each Claude recording as its real PTY reads (`chunks.jsonl` boundaries: what the daemon feeds)."""
    out: dict[str, list[bytes]] = {}
    for path in sorted(CAPTURES.glob("*/chunks.jsonl")):
        with path.open() as fh:
            out[path.parent.name] = [base64.b64decode(json.loads(ln)["b64"]) for ln in fh if ln.strip()]
    if SMOKE and out:
        small = sorted(out, key=lambda k: sum(map(len, out[k])))[:2]
        out = {k: out[k] for k in small}
    return out


def _fit(rng: random.Random, width: int) -> str:
    """Random words (and the odd glyph) filling at most `width` columns."""
    text = ""
    while True:
        w = rng.choice(WORDS) if rng.random() > 0.1 else rng.choice(GLYPHS)
        if wcswidth(text + " " + w) > width:
            return text
        text = f"{text} {w}" if text else w


def _styled_row(rng: random.Random, width: int = COLS - 2) -> str:
    """One Claude-like row: 2-5 runs of 24-bit/256 colour, bold or dim text, filling the width."""
    parts, used = [], 0
    runs = rng.randint(2, 5)
    for i in range(runs):
        budget = (width - used) // (runs - i)
        text = _fit(rng, budget)
        used += wcswidth(text)
        style = rng.choice(("1;", "2;", "", "3;", "7;"))
        colour = (
            f"38;2;{rng.randrange(256)};{rng.randrange(256)};{rng.randrange(256)}"
            if rng.random() < 0.7
            else f"38;5;{rng.randrange(256)}"
        )
        parts.append(f"\x1b[{style}{colour}m{text}\x1b[0m")
    return "".join(parts)


def full_redraw_frames(n: int, seed: int = 1) -> list[bytes]:
    """Ink log-update style frames: sync begin, erase the previous 49 rows, redraw 49 full-width rows, sync end."""
    rng = random.Random(seed)
    erase = "\x1b[2K\x1b[1A" * 48 + "\x1b[2K\x1b[G"
    frames = []
    for i in range(n):
        rows = [_styled_row(rng) for _ in range(46)]
        rows.append(f"\x1b[38;5;174m{GLYPHS[i % 4]} Thinking… ({i} s · esc to interrupt)\x1b[0m")
        rows.append("\x1b[2m╭" + "─" * 196 + "╮\x1b[0m")
        rows.append("\x1b[2m│\x1b[0m > " + _fit(rng, 150) + "\x1b[2m│\x1b[0m")
        frames.append(
            ("\x1b[?2026h" + (erase if i else "\x1b[H\x1b[2J") + "\r\n".join(rows) + "\x1b[?2026l").encode()
        )
    return frames


def diff_frames(n: int, seed: int = 2) -> list[bytes]:
    """Differential-renderer frames: inside sync, rewrite 3-8 random rows (CUP + EL + new text) and the spinner."""
    rng = random.Random(seed)
    frames = []
    for i in range(n):
        out = ["\x1b[?2026h"]
        for y in rng.sample(range(1, 46), rng.randint(3, 8)):
            out.append(f"\x1b[{y};1H\x1b[2K{_styled_row(rng)}")
        out.append(f"\x1b[47;1H\x1b[2K\x1b[38;5;174m{GLYPHS[i % 4]} Working… ({i} s)\x1b[0m\x1b[?2026l")
        frames.append("".join(out).encode())
    return frames


def scroll_heavy(size: int = SYNTH_BYTES, seed: int = 3) -> bytes:
    """Pager/vim/log-like: wrapped ASCII lines, DECSTBM regions scrolled with LF and RI, IL/DL, DECSC/DECRC."""
    rng = random.Random(seed)
    out: list[str] = ["\x1b[H\x1b[2J"]
    total = 0
    while total < size:
        kind = rng.random()
        if kind < 0.5:  # plain log output, full-screen scroll, some lines wrap
            s = "".join(f"{_fit(rng, rng.randint(40, 390))}\r\n" for _ in range(rng.randint(5, 30)))
        elif kind < 0.85:  # scroll inside a region, both directions
            top = rng.randint(1, 20)
            bottom = rng.randint(top + 5, LINES - 1)
            body = []
            for _ in range(rng.randint(5, 25)):
                if rng.random() < 0.75:
                    body.append(f"\x1b[{bottom};1H\n\r{_fit(rng, rng.randint(20, 199))}")
                else:
                    body.append(f"\x1b[{top};1H\x1bM{_fit(rng, rng.randint(20, 199))}")
            s = f"\x1b7\x1b[{top};{bottom}r" + "".join(body) + "\x1b[r\x1b8"
        else:  # insert/delete lines and a reverse-video status line
            y = rng.randint(1, LINES - 10)
            s = (
                f"\x1b[{y};1H\x1b[{rng.randint(1, 5)}L{_fit(rng, 120)}\x1b[{y + 3};1H\x1b[{rng.randint(1, 5)}M"
                f"\x1b[{LINES};1H\x1b[7m{_fit(rng, 199)}\x1b[0m\x1b[{LINES - 1};1H"
            )
        total += len(s.encode())
        out.append(s)
    return "".join(out).encode()


def full_redraw_stream(size: int = SYNTH_BYTES) -> bytes:
    frames = full_redraw_frames(8)
    reps = max(1, size // sum(len(f) for f in frames[1:]))
    return frames[0] + b"".join(frames[1:] * reps)[:size]


def mem_fill(rows: int = 1100, seed: int = 4) -> bytes:
    """`rows` styled full-width rows (CRLF): fills a 200x50 screen and then `rows - 50` lines of history."""
    rng = random.Random(seed)
    return ("\r\n".join(_styled_row(rng, COLS) for _ in range(rows)) + "\r\n").encode()


@cache
def synthetic() -> dict[str, bytes]:
    return {"synth_fullredraw": full_redraw_stream(), "synth_scroll": scroll_heavy()}
