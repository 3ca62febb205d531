"""Helpers shared by the Claude driver tests: where the recorded captures are, how to read their screens, and a
terminal stand-in that shows one captured screen (for driver tests without a PTY)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

_TESTS = Path(__file__).resolve().parents[2]
if str(_TESTS) not in sys.path:
    sys.path.append(str(_TESTS))

from fetch_fixtures import CAPTURES  # noqa: E402


def capture_dirs() -> list[Path]:
    if not CAPTURES.is_dir():
        return []
    return sorted(p for p in CAPTURES.iterdir() if p.is_dir() and (p / "chunks.jsonl").exists())


def or_skip(params: list[Any], arity: int = 1) -> list[Any]:
    """`params` for a parametrize over the captures, or one skipped case saying where the captures were looked for
    (instead of pytest's bare "got empty parameter set")."""
    if params:
        return params
    reason = f"no Claude captures under {CAPTURES} (set LITBRIDGE_CAPTURES or put them at ../shared/captures)"
    return [pytest.param(*([None] * arity), marks=pytest.mark.skip(reason=reason), id="no-captures")]


def screen_files() -> list[Path]:
    return sorted(f for d in capture_dirs() for f in (d / "screens").glob("*.txt") if ".full." not in f.name)


def read_screen(path: Path) -> tuple[dict[str, str], list[str]]:
    """(header fields, 50 rows) of a captures' `screens/NN_label.txt`."""
    text = path.read_text(encoding="utf-8")
    header, _, body = text.partition("\n")
    fields = dict(part.split("=", 1) for part in header.lstrip("# ").split() if "=" in part)
    rows = body.split("\n")[:50]
    rows += [""] * (50 - len(rows))
    return fields, rows


def capture(name: str) -> Path:
    matches = [d for d in capture_dirs() if d.name.startswith(name)]
    if not matches:
        pytest.skip(f"capture {name} not available under {CAPTURES}")
    return matches[0]


def screen(cap: str, name: str) -> list[str]:
    """The 50 rows of screen `name` of the capture whose folder starts with `cap` (skips if absent)."""
    return read_screen(capture(cap) / "screens" / name)[1]


class FakeTerminal:
    """Just the `Terminal` surface the Claude driver reads: `display`, `logical_lines()`, `modes`."""

    def __init__(self, rows: list[str]) -> None:
        self.rows = rows
        self.modes = {"bracketed_paste": True}

    @property
    def display(self) -> list[str]:
        return [r.ljust(200) for r in self.rows]

    def logical_lines(self) -> list[str]:
        return list(self.rows)


def driver_options(tmp_path: Path, **options: Any) -> dict[str, Any]:
    """A validated-create-like options dict for `ClaudeDriver`: private HOME / config dir and cwd under tmp_path."""
    opts: dict[str, Any] = {
        "session": "k",
        "cli": "claude",
        "args": [],
        "working_dir": str(tmp_path / "work"),
        "env": {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / ".claude")},
    }
    opts.update(options)
    return opts
