"""How `send`/`chat` draw: the live text rewritten in place (checked by rendering the bytes with pyte), status
lines kept above it, answers parsed from what the user typed, tables aligned. Plus `send` under a real pty."""

from __future__ import annotations

import io
import os
import sys

import pyte
import pytest
from _daemon import Daemon
from _pty import finish
from ptyprocess import PtyProcess

from litbridge.cli.common import table
from litbridge.cli.send import LiveText, TurnPrinter, answer_fields, question_lines

COLS, ROWS = 40, 24


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _render(text: str) -> list[str]:
    """What a COLSxROWS terminal shows after `text` (with the tty's \\n -> \\r\\n translation)."""
    screen = pyte.Screen(COLS, ROWS)
    pyte.Stream(screen).feed(text.replace("\n", "\r\n"))
    rows = [r.rstrip() for r in screen.display]
    while rows and not rows[-1]:
        rows.pop()
    return rows


@pytest.fixture(autouse=True)
def _terminal_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", str(COLS))
    monkeypatch.setenv("LINES", str(ROWS))


def test_live_text_rewrites_in_place_with_notes_above() -> None:
    tty = _Tty()
    live = LiveText(tty, tty)
    assert live.live and live.shared
    live.note("· idle → thinking")
    live.update("hello")
    live.update("hello world, this line is long enough to wrap past forty columns")
    live.note("⏺ Bash(ls)")
    live.update("totally different\nsecond line")
    live.update("x" * COLS)  # exactly one full row: the cursor stays on it (deferred wrap)
    live.update("y" * COLS + "\nz")
    live.finish("final answer\nline two")
    assert _render(tty.getvalue()) == ["· idle → thinking", "⏺ Bash(ls)", "final answer", "line two"]


def test_live_text_appends_growing_text_without_erasing() -> None:
    tty = _Tty()
    live = LiveText(tty, tty)
    for text in ("a", "ab", "abc\n", "abc\nd"):
        live.update(text)
    assert tty.getvalue() == "abc\nd"
    live.finish("abc\nd")
    assert _render(tty.getvalue()) == ["abc", "d"]


def test_not_a_terminal_prints_the_final_text_once() -> None:
    out, err = io.StringIO(), io.StringIO()
    live = LiveText(out, err)
    live.update("partial")
    live.note("· state")
    live.finish("done")
    assert out.getvalue() == "done\n"
    assert err.getvalue() == "· state\n"


def test_text_taller_than_the_screen_falls_back_to_reprinting() -> None:
    tty = _Tty()
    live = LiveText(tty, tty)
    live.update("\n".join(f"row {i}" for i in range(ROWS + 5)))
    live.update("short")
    live.finish("short")
    assert _render(tty.getvalue())[-1] == "short"


def test_answer_fields() -> None:
    q = {
        "question_id": "q1",
        "options": [{"digit": "1", "label": "Yes"}, {"digit": "2", "label": "No, tell it"}],
    }
    assert answer_fields(q, "2") == {"digit": "2"}
    assert answer_fields(q, "  yes ") == {"option": "Yes"}
    assert answer_fields(q, "no, TELL it") == {"option": "No, tell it"}
    assert answer_fields(q, "do something else") == {"text": "do something else"}
    assert answer_fields(q, "   ") is None
    assert answer_fields({"options": []}, "7") == {"text": "7"}
    lines = question_lines(
        {
            **q,
            "kind": "permission",
            "text": "Run ls?",
            "options": [
                {"digit": "1", "label": "Yes", "selected": True},
                {"digit": "2", "label": "No", "selected": False},
            ],
        }
    )
    assert lines == ["? [permission] Run ls?", " › 1. Yes", "   2. No"]


def test_table_aligns_wide_characters() -> None:
    out = table([["日本", "idle", None], ["ab", "thinking", 3]], ["NAME", "STATE", "N"])
    assert out.splitlines() == ["NAME  STATE     N", "日本  idle      -", "ab    thinking  3"]


def test_send_under_a_pty_shows_the_final_text(daemon: Daemon) -> None:
    """On a terminal, the streamed text ends as exactly the final answer (pyte renders the raw bytes)."""
    py = ["--cli", sys.executable, "--arg=-q", "--arg=-u", "--arg=-i"]
    assert daemon.cli("create", "ptysend", *py).returncode == 0
    code = "print('aaa', end='', flush=True); __import__('time').sleep(0.3); print('\\rbbb'); print('ccc')"
    argv = [sys.executable, "-m", "litbridge", "send", "ptysend", code, "--socket", daemon.socket]
    proc = PtyProcess.spawn(
        argv, dimensions=(ROWS, 100), env={**os.environ, "COLUMNS": "100", "LINES": str(ROWS)}
    )
    buf = bytearray()
    try:
        status = finish(proc, buf)
    finally:
        if proc.isalive():
            proc.terminate(force=True)
    assert status == 0, bytes(buf)
    screen = pyte.Screen(100, ROWS)
    pyte.ByteStream(screen).feed(bytes(buf))
    rows = [r.rstrip() for r in screen.display if r.strip()]
    answer = [r for r in rows if not r.startswith(("·", "⏺", "  ⎿"))]
    assert answer == ["bbb", "ccc"], rows


def test_thinking_lines_are_shown_once_per_activity() -> None:
    out, err = io.StringIO(), io.StringIO()
    printer = TurnPrinter(LiveText(out, err))
    for text in (
        "✢ Doing… (0s · ↓ 3 tokens)",
        "✽ Doing… (1s · ↓ 9 tokens)",
        "✶ Forming…",
        "Compacting conversation… 17%",
        "Compacting conversation… 18%  ██░",
    ):
        printer.show({"event": "thinking", "session": "s", "text": text})
    assert err.getvalue().splitlines() == [
        "· ✢ Doing… (0s · ↓ 3 tokens)",
        "· ✶ Forming…",
        "· Compacting conversation… 17%",
    ]


def test_prompt_steps_the_live_text_aside() -> None:
    tty = _Tty()
    live = LiveText(tty, tty)
    live.update("partial answer")
    live.note("? [choice] Pick")
    live.prompt("answer> ")
    tty.write("2\n")  # what the terminal echoes while the user types
    live.resume()
    live.finish("partial answer, then the rest")
    assert _render(tty.getvalue()) == ["? [choice] Pick", "answer> 2", "partial answer, then the rest"]


def test_streamed_deltas_are_written_as_they_come_and_a_rewrite_redraws() -> None:
    """`replace` events carrying the wire's `delta` (the client's rebuilt `append`s): a piece continuing the
    shown text is written as it is; one that cuts earlier text redraws; the screen ends with the final text."""
    tty = _Tty()
    printer = TurnPrinter(LiveText(tty, tty))
    shown = ""
    for offset, piece in (
        (0, "Hello"),
        (5, " world\n"),
        (12, "line 2"),
        (6, "WORLD\nline 2!"),
        (19, "\nend"),
    ):
        shown = shown[:offset] + piece
        printer.show(
            {"event": "replace", "session": "s", "text": shown, "delta": {"offset": offset, "text": piece}}
        )
    assert tty.getvalue().startswith("Hello world\nline 2"), "growth written as pieces, nothing erased"
    printer.show({"event": "complete", "session": "s", "content": shown})
    assert _render(tty.getvalue()) == ["Hello WORLD", "line 2!", "end"]
