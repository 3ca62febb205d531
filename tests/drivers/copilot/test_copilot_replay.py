"""`litbridge replay` and `litbridge explain` on the real Copilot CLI 1.0.102 recordings: the real Session + Copilot
driver over the recorded output and `events.jsonl` lines give each turn exactly one ending with the record's text,
the state settled before it, and every event validates against the protocol schema."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from lbd_helpers import TurnOrder, check_event

from fetch_fixtures import COPILOT_CAPTURES
from litbridge.replay import Capture, replay

TERMINAL = ("complete", "interrupted", "turn_error")

EXPECTED = {
    "copilot_first_start_qa": [
        ("complete", "Line one?\n二行目は日本語です 🎉\n\n- a *list* item\n\nDone? Yes! 👍")
    ],
    "copilot_tool_approval": [
        ("complete", "Written."),
        ("interrupted", ""),  # Esc at the approval: Copilot cancels the request
    ],
    "copilot_interrupt_error": [
        ("interrupted", None),  # the partial answer as the screen showed it
        ("turn_error", None),
        ("complete", "Recovered."),
    ],
}


def load(name: str) -> Capture:
    return Capture.load(COPILOT_CAPTURES / name)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_replay_endings(name: str) -> None:
    events = replay(load(name), fast=True)
    for ev in events:
        check_event({k: v for k, v in ev.items() if k != "t"})
    TurnOrder().check(events)  # state settles before each terminal event; one per turn
    ends = [e for e in events if e["event"] in TERMINAL]
    got = [(e["event"], e.get("content")) for e in ends]
    want = EXPECTED[name]
    assert [g[0] for g in got] == [w[0] for w in want], got
    for (_, content), (_, expected) in zip(got, want, strict=True):
        if expected is not None:
            assert content == expected
    accepted = [e["turn_id"] for e in events if e["event"] == "accepted"]
    assert sorted(e["turn_id"] for e in ends) == sorted(accepted)
    assert [e["dialog"] for e in events if e["event"] == "dialog_dismissed"] == ["trust"]
    assert events[-1]["event"] == "exited"


def test_replay_tools_questions_interrupt_and_error() -> None:
    events = replay(load("copilot_tool_approval"), fast=True)
    questions = [e for e in events if e["event"] == "question"]
    assert [q["kind"] for q in questions] == ["permission", "permission"]
    assert questions[0]["detail"] == {"intention": "write a marker", "command": "echo ran > approved.txt"}
    uses = [e for e in events if e["event"] == "tool_use"]
    assert [u["input"]["command"] for u in uses] == ["echo ran > approved.txt", "echo no > denied.txt"]
    results = [e for e in events if e["event"] == "tool_result"]
    assert len(results) == 1 and results[0]["is_error"] is False  # the cancelled call has no result
    events = replay(load("copilot_interrupt_error"), fast=True)
    ends = [e for e in events if e["event"] in TERMINAL]
    assert ends[0]["content"].startswith("Once upon a time")
    assert ends[1]["kind"] == "api_error" and "400" in ends[1]["message"]


def test_replay_streams_the_answer_then_the_exact_text() -> None:
    events = replay(load("copilot_first_start_qa"), fast=True)
    replaces = [e["text"] for e in events if e["event"] == "replace"]
    assert len(replaces) >= 2
    assert all("Two lines" not in r for r in replaces)  # the prompt's own second row is not the answer
    assert replaces[-1] == EXPECTED["copilot_first_start_qa"][0][1]
    assert next(e for e in events if e["event"] == "ready")["model"] == "mock-model"


def test_explain_reads_the_recording_with_the_copilot_rules() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "litbridge",
            "explain",
            "--json",
            str(COPILOT_CAPTURES / "copilot_tool_approval"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    frames = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    states = {f.get("state") for f in frames}
    assert {"dialog", "idle", "busy"} <= states, states
    kinds = {(f.get("question") or {}).get("kind") for f in frames}
    assert {"trust", "permission"} <= kinds, kinds
