"""`litbridge explain` on the recordings of the real opencode 1.18.33 (tests/fixtures/captures/opencode): the
rules read each recorded screen (idle, busy, the permission prompt with its numbered options), and a recording
folder read frame by frame reaches the permission question."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
CAPS = ROOT / "tests" / "fixtures" / "captures" / "opencode"


def explain(target: Path, *extra: str) -> list[dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, "-m", "litbridge", "explain", "--json", *extra, str(target)],
        capture_output=True, text=True, env=env, timeout=300, check=True,
    ).stdout  # fmt: skip
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_recorded_screens_read_as_what_they_show() -> None:
    def screen(capture: str, label: str) -> dict[str, Any]:
        (path,) = (CAPS / capture / "screens").glob(f"*_{label}.txt")
        (reading,) = explain(path, "--cli", "opencode")
        assert reading["version"] == "1.18.33"
        return reading

    assert screen("opencode_plain_qa", "ready")["state"] == "idle"
    assert screen("opencode_plain_qa", "answer")["state"] == "idle"
    assert screen("opencode_interrupt", "streaming")["state"] == "busy"
    assert screen("opencode_interrupt", "interrupted")["state"] == "idle"
    q = screen("opencode_approval", "permission")["question"]
    assert q["kind"] == "permission"
    assert [(o["digit"], o["label"], o["selected"]) for o in q["options"]] == [
        ("1", "Allow once", True),
        ("2", "Allow always", False),
        ("3", "Reject", False),
    ]
    assert q["detail"] == {"title": "Shell command", "command": "touch made.txt && echo hi-there"}


def test_a_recording_read_frame_by_frame_asks_the_permission_question() -> None:
    frames = explain(CAPS / "opencode_approval")
    states = [f["state"] for f in frames]
    asked = [f for f in frames if f["question"]]
    assert asked and asked[0]["question"]["options"][0]["label"] == "Allow once"
    assert "busy" in states and states[-1] in ("other", "blank", "idle")
