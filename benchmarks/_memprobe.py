"""Memory probe, run in a fresh subprocess per measurement: bytes per 200x50 screen or per history line.

`python benchmarks/_memprobe.py IMPL KIND METHOD N HISTORY` prints one JSON object. IMPL is pyte|litbridge, KIND
screen|history, METHOD tracemalloc|rss (tracemalloc misses raw malloc in C code; RSS catches it but is coarse).
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import sys
import tracemalloc

from inputs import COLS, LINES, chunks, mem_fill


def rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def main() -> None:
    impl, kind, method, n, history = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    mod = importlib.import_module("pyte" if impl == "pyte" else "litbridge.pyte")
    small = chunks(mem_fill(LINES + 10))
    big = chunks(mem_fill(LINES + 10 + history))

    def make(parts: list[bytes]):
        screen = (
            mod.HistoryScreen(COLS, LINES, history=history) if kind == "history" else mod.Screen(COLS, LINES)
        )
        stream = mod.ByteStream(screen)
        for c in parts:
            stream.feed(c)
        return screen, stream

    warm = make(
        big if kind == "history" else small
    )  # module-level caches (Char interning, width tables) first
    keep: list = [warm]
    lines_small = lines_big = 0

    def measure(parts: list[bytes]) -> float:
        gc.collect()
        before = tracemalloc.get_traced_memory()[0] if method == "tracemalloc" else rss()
        for _ in range(n):
            keep.append(make(parts))
        gc.collect()
        after = tracemalloc.get_traced_memory()[0] if method == "tracemalloc" else rss()
        return (after - before) / n

    if method == "tracemalloc":
        tracemalloc.start()
    per_small = measure(small)
    out: dict[str, float] = {"per_screen": per_small}
    if kind == "history":
        lines_small = len(keep[-1][0].history.top)
        per_big = measure(big)
        lines_big = len(keep[-1][0].history.top)
        out.update(
            per_big=per_big,
            history_lines=lines_big - lines_small,
            per_1000_lines=(per_big - per_small) / max(1, lines_big - lines_small) * 1000,
        )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
