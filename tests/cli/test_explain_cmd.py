"""`litbridge explain`: what a CLI's rules read, offline, in a saved screen or a recording folder, per frame."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "captures"


def _explain(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "litbridge", "explain", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=check,
    )


def _frames(*args: str) -> list[dict]:
    return [json.loads(line) for line in _explain(*args, "--json").stdout.splitlines()]


def test_a_saved_screen_shows_the_question_and_its_options() -> None:
    screen = CAPTURES / "gemini" / "screens" / "gemini_first_start__02_trust_dialog_quiet.txt"
    [frame] = _frames("--cli", "gemini", str(screen))
    assert frame["state"] == "dialog"
    q = frame["question"]
    assert (q["kind"], q["text"]) == ("trust", "Do you trust the files in this folder?")
    assert q["options"][0] == {"digit": "1", "label": "Trust folder (first_start)", "selected": True}
    assert [o["digit"] for o in q["options"]] == ["1", "2", "3"]
    text = _explain("--cli", "gemini", str(screen)).stdout
    assert "question (trust" in text and "> 1. Trust folder (first_start)" in text


def test_a_recording_is_explained_frame_by_frame_with_the_recorded_cli() -> None:
    """The Claude permission recording: idle, typing, busy, then the permission question with its detail, the
    cursor moving to option 2 in a later frame; the CLI comes from the recording."""
    folder = CAPTURES / "claude" / "s04a_tools_manual_mode_permission_dialogs"
    frames = _frames(str(folder))
    states = [f["state"] for f in frames]
    assert states[0] == "blank" and "idle" in states and "busy" in states and "dialog" in states
    assert all(isinstance(f["t"], float) for f in frames) and [f["t"] for f in frames] == sorted(
        f["t"] for f in frames
    )
    asks = [f["question"] for f in frames if f["question"] is not None]
    first = asks[0]
    assert first["kind"] == "permission" and first["text"] == "Do you want to proceed?"
    assert "touch created_by_bash.txt && echo hi" in first["detail"]
    assert [o["selected"] for o in first["options"]][:2] == [True, False]
    assert any(q["options"][1]["selected"] for q in asks)  # the cursor moved down in a later frame


def test_codex_detail_is_its_named_facts() -> None:
    folder = CAPTURES / "codex" / "codex_tool_approval"
    if not folder.is_dir():
        pytest.skip("no codex approval recording")
    asks = [f["question"] for f in _frames("--cli", "codex", str(folder)) if f["question"]]
    assert asks and asks[0]["kind"] == "permission" and "command" in asks[0]["detail"]


def test_a_cli_without_screen_rules_or_a_screen_without_cli_is_a_usage_error(tmp_path: Path) -> None:
    screen = tmp_path / "screen.txt"
    screen.write_text("$ \n")
    assert _explain(str(screen), check=False).returncode == 2
    proc = _explain("--cli", "rift", str(screen), check=False)
    assert proc.returncode == 2 and "no screen rules" in proc.stderr
