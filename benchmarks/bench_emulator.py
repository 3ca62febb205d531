"""Emulator benchmarks at 200x50, litbridge beside pyte 0.8.2 in the same run (ratios printed at the end).

Throughput of `ByteStream.feed` in 4 KiB chunks on pyte's captures, each real Claude recording and synthetic
streams; full-redraw cost; `display`; `Terminal.changed_rows`; memory per screen and per 1000 history lines.
Timing only: correctness lives in tests/term/.
"""

from __future__ import annotations

import itertools
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import Impl, Results, load_impl  # type: ignore[import-not-found]
from inputs import (  # type: ignore[import-not-found]
    COLS,
    LINES,
    SMOKE,
    chunks,
    claude_recordings,
    diff_frames,
    full_redraw_frames,
    pyte_captured,
    synthetic,
)

HERE = Path(__file__).resolve().parent
pytestmark = pytest.mark.timeout(900)


def _inputs() -> dict[str, bytes]:
    out = {f"pyte:{k}": v for k, v in pyte_captured().items()}
    out.update({"claude:all" if k == "claude_all" else f"claude:{k}": v for k, v in claude_recordings().items()})
    out.update({f"synth:{k.removeprefix('synth_')}": v for k, v in synthetic().items()})
    return out


INPUTS = _inputs()


def _rounds(impl: Impl, slow: int, fast: int) -> int:
    return 1 if SMOKE else (slow if impl.name == "pyte" else fast)


def _stream(impl: Impl):
    screen = impl.pyte.Screen(COLS, LINES)
    return screen, impl.pyte.ByteStream(screen)


@pytest.mark.parametrize("name", list(INPUTS))
def test_throughput(benchmark, impl: Impl, results: Results, name: str) -> None:
    """MB/s of ByteStream.feed in 4 KiB chunks; one screen per input, state carried across rounds."""
    data = INPUTS[name]
    parts = chunks(data)
    _, stream = _stream(impl)
    feed = stream.feed

    def run() -> None:
        for c in parts:
            feed(c)

    iterations = 1 if SMOKE or impl.name == "pyte" else max(1, 1_000_000 // len(data))
    benchmark.group = f"throughput {name}"
    benchmark.extra_info["bytes"] = len(data)
    benchmark.pedantic(run, rounds=_rounds(impl, 3, 7), iterations=iterations, warmup_rounds=0 if SMOKE else 1)
    results.add("throughput", "MB/s", name, impl, len(data) / benchmark.stats.stats.median / 1e6)


@pytest.mark.parametrize("name", [n for n in INPUTS if n.startswith("claude:")])
def test_throughput_same_round(results: Results, name: str) -> None:
    """Ratio litbridge/pyte with both timed alternately in each round (robust to load on a shared VM)."""
    data = INPUTS[name]
    parts = chunks(data)
    pyte_impl, lit_impl = load_impl("pyte"), load_impl("litbridge")
    feeds = [_stream(pyte_impl)[1].feed, _stream(lit_impl)[1].feed]
    reps = [1, 1 if SMOKE else max(1, 1_000_000 // len(data))]
    ratios = []
    for _ in range(1 if SMOKE else 3):
        per_byte = []
        for feed, n in zip(feeds, reps, strict=True):
            t0 = time.perf_counter()
            for _ in range(n):
                for c in parts:
                    feed(c)
            per_byte.append((time.perf_counter() - t0) / (n * len(data)))
        ratios.append(per_byte[0] / per_byte[1])
    results.same_round[("throughput", "MB/s", name)] = statistics.median(ratios)


def test_full_redraw(benchmark, impl: Impl, results: Results) -> None:
    """One full 200x50 Claude-like frame (sync, erase 49 rows, 49 styled rows), fed in 4 KiB chunks."""
    frames = full_redraw_frames(9)
    _, stream = _stream(impl)
    stream.feed(frames[0])
    cycle = itertools.cycle([chunks(f) for f in frames[1:]])

    def run() -> None:
        for c in next(cycle):
            stream.feed(c)

    size = sum(len(f) for f in frames[1:]) // 8
    benchmark.group = "full redraw"
    benchmark.pedantic(run, rounds=_rounds(impl, 5, 20), iterations=1 if SMOKE or impl.name == "pyte" else 20,
                       warmup_rounds=0 if SMOKE else 1)
    results.add("redraw", "us", f"full 200x50 frame ({size / 1000:.1f} KB)", impl, benchmark.stats.stats.median * 1e6)


def test_display(benchmark, impl: Impl, results: Results) -> None:
    """`screen.display` right after a full redraw (every row changed, so no row cache can be reused)."""
    frames = full_redraw_frames(9)
    screen, stream = _stream(impl)
    stream.feed(frames[0])
    cycle = itertools.cycle(frames[1:])

    def setup() -> None:
        stream.feed(next(cycle))

    benchmark.group = "display"
    benchmark.pedantic(lambda: screen.display, setup=setup, rounds=_rounds(impl, 5, 200),
                       warmup_rounds=0 if SMOKE else 1)
    results.add("display", "us", "display after a full redraw", impl, benchmark.stats.stats.median * 1e6)


def test_changed_rows(benchmark, impl: Impl, results: Results) -> None:
    """`Terminal.changed_rows()` after a differential frame that rewrites 3-8 rows (pyte: the fallback Terminal)."""
    if impl.terminal is None:
        pytest.skip("no Terminal class for this implementation")
    term = impl.terminal(COLS, LINES)
    term.feed(full_redraw_frames(1)[0])
    term.changed_rows()
    cycle = itertools.cycle(diff_frames(32))

    def setup() -> None:
        term.feed(next(cycle))

    benchmark.group = "changed_rows"
    benchmark.pedantic(term.changed_rows, setup=setup, rounds=_rounds(impl, 20, 300),
                       warmup_rounds=0 if SMOKE else 1)
    results.add("diff", "us", "changed_rows after a diff frame (3-8 rows)", impl,
                benchmark.stats.stats.median * 1e6)


def _probe(impl: Impl, kind: str, method: str, n: int, history: int) -> dict[str, float]:
    proc = subprocess.run([sys.executable, str(HERE / "_memprobe.py"), impl.name, kind, method, str(n), str(history)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("method", ["tracemalloc", "rss"])
def test_memory_per_screen(impl: Impl, results: Results, method: str) -> None:
    """Bytes per filled 200x50 Screen (+ its ByteStream), averaged over N instances in a fresh process."""
    n = 1 if SMOKE else 10
    out = _probe(impl, "screen", method, n, 0)
    results.add("memory", "KB", f"per screen [{method}]", impl, out["per_screen"] / 1024)


@pytest.mark.parametrize("method", ["tracemalloc", "rss"])
def test_memory_per_1000_history_lines(impl: Impl, results: Results, method: str) -> None:
    """HistoryScreen(history=1000) filled with styled full-width rows, minus one with ~10 lines of history."""
    history = 100 if SMOKE else 1000
    n = 1 if SMOKE or impl.name == "pyte" else 3
    out = _probe(impl, "history", method, n, history)
    if out["history_lines"] < 0.9 * (history - 10):
        pytest.skip(f"{impl.label} HistoryScreen kept only {out['history_lines']:.0f} lines of history "
                    f"(expected ~{history - 10}); measurement invalid")
    results.add("memory", "KB", f"per 1000 history lines [{method}]", impl, out["per_1000_lines"] / 1024)
