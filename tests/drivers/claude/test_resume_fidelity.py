"""Claude's `--resume` picker read off the screen (one option per conversation), and the model a resumed
conversation's transcript names (its logo may never be drawn at the top of the screen)."""

from __future__ import annotations

import json
from pathlib import Path

from litbridge.drivers.claude.transcript import last_model
from litbridge.drivers.claude.v2_1 import Rules

BOX = "─" * 196
PICKER = [
    "",
    "─" * 200,
    "  Resume session",
    f"  ╭{BOX}╮",
    "  │ ⌕ Search…" + " " * 185 + "│",
    f"  ╰{BOX}╯",
    "    proj",
    "",
    "  ❯ Remember the word BRAVO.",
    "    1 second ago · HEAD · 156.1KB",
    "",
    "    Remember the word ALPHA.",
    "    4 seconds ago · HEAD · 156.1KB",
    "",
    "  Ctrl+A to show all projects · Ctrl+B to only show current branch · Space to preview · Ctrl+R to rename ·"
    " Type to search · Enter to resume · Esc to close",
] + [""] * 35
"""The picker as Claude Code 2.1.328 draws it (200x50) over two conversations of the project `proj`."""


def test_picker_is_one_option_per_conversation() -> None:
    cls = Rules().classify(PICKER)
    assert cls.state == "dialog"
    d = cls.dialog
    assert d is not None and d.kind == "resume" and d.text == "Resume session"
    assert [(o.digit, o.label, o.selected) for o in d.options] == [
        ("1", "Remember the word BRAVO.", True),
        ("2", "Remember the word ALPHA.", False),
    ]
    assert d.detail.splitlines() == [
        "1. Remember the word BRAVO. — 1 second ago · HEAD · 156.1KB",
        "2. Remember the word ALPHA. — 4 seconds ago · HEAD · 156.1KB",
    ]


def test_picker_identity_does_not_change_as_time_passes() -> None:
    """The `N seconds ago` rows tick while the question is open: the dialog stays the same question."""
    later = [r.replace("1 second ago", "9 seconds ago").replace("4 seconds", "12 seconds") for r in PICKER]
    assert Rules().parse_dialog(later).signature() == Rules().parse_dialog(PICKER).signature()


def test_picker_cursor_moves_one_entry_per_key() -> None:
    rules = Rules()
    d = rules.parse_dialog(PICKER)
    assert rules.cursor_keys(d, 1) == ["Down"] and rules.cursor_keys(d, 0) == ["Enter"]
    moved = list(PICKER)
    moved[8], moved[11] = "    Remember the word BRAVO.", "  ❯ Remember the word ALPHA."
    d2 = rules.parse_dialog(moved)
    assert d2.signature() == d.signature() and rules.cursor_keys(d2, 1) == ["Enter"]


def test_last_model_names_the_model_as_the_logo_does(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = [
        {"type": "user", "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "message": {"model": "claude-sonnet-4-20250514", "content": []}},
        {"type": "assistant", "message": {"model": "claude-opus-5-5", "content": []}},
        {"type": "assistant", "message": {"model": "<synthetic>", "content": []}},
        {"type": "system", "subtype": "turn_duration"},
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert last_model(path) == "Opus 5.5"
    path.write_text(json.dumps(lines[1]) + "\n")
    assert last_model(path) == "Sonnet 4"
    path.write_text(json.dumps({"type": "assistant", "message": {"model": "my-proxy-model"}}) + "\n")
    assert last_model(path) == "my-proxy-model"
    assert last_model(tmp_path / "missing.jsonl") is None and last_model(None) is None
