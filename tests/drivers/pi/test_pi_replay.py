"""`litbridge replay` / `explain` on the Pi 0.73.1 recordings (tests/fixtures/captures/pi): the real Session and Pi
driver over the recorded output and session-file lines, on the virtual clock."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from lbd_helpers import TurnOrder, busy_during_turn, check_event

from litbridge.drivers.pi.driver import PiDriver
from litbridge.replay import Capture, replay

CAPTURES = Path(__file__).resolve().parents[2] / "fixtures" / "captures" / "pi"
TERMINAL = ("complete", "interrupted", "turn_error")

EXPECTED = {
    "pi_plain_qa": [
        ("complete", "Is this exact?\n日本語のテキスト 🎉 and more?\n\n- a list item\n- 最後 ✅")
    ],
    "pi_tool": [("complete", "Done: made.txt holds hi-from-pi.")],
    "pi_interrupt": [
        ("interrupted", "word0 word1 word2 word3 word4 word5 word6 word7 word8 word9 word10 word11 word12"),
        ("complete", "Still here."),
    ],
}


def record_endings(cap: Capture) -> list[tuple[str, str]]:
    """The turn endings the recorded session file holds: each turn's last assistant message (`stop` / `aborted`)."""
    out = []
    for _t, _name, line in cap.transcript:
        entry = json.loads(line)
        msg = entry.get("message") or {}
        if entry.get("type") != "message" or msg.get("role") != "assistant":
            continue
        text = "".join(p.get("text", "") for p in msg.get("content", []) if p.get("type") == "text")
        reason = msg.get("stopReason")
        if reason in ("stop", "length"):
            out.append(("complete", text))
        elif reason == "aborted":
            out.append(("interrupted", text))
    return out


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_replay_ends_each_turn_once_with_the_records_content(name: str) -> None:
    cap = Capture.load(CAPTURES / name)
    assert record_endings(cap) == EXPECTED[name]  # the test's expectations are the record's
    events = replay(cap, fast=True)
    for ev in events:
        check_event({k: v for k, v in ev.items() if k != "t"})
    TurnOrder().check(events)  # the state settles before each terminal event
    ends = [e for e in events if e["event"] in TERMINAL]
    assert [(e["event"], e["content"]) for e in ends] == EXPECTED[name]
    accepted = [e["turn_id"] for e in events if e["event"] == "accepted"]
    assert sorted(e["turn_id"] for e in ends) == sorted(accepted)  # exactly one terminal event per turn
    for end in ends:
        assert busy_during_turn(events, end) & {"thinking", "responding"}, end
    assert [e["source"] for e in ends if e["event"] == "complete"] == ["transcript"] * sum(
        1 for e in ends if e["event"] == "complete"
    )
    assert next(e for e in events if e["event"] == "ready")["resumed"] is False
    assert [e for e in events if e["event"] == "question"] == []  # Pi runs tools without asking
    assert events[-1]["event"] == "exited"


def test_ready_waits_for_a_footer_painted_after_the_input_box() -> None:
    """The footer's model painted after the input box (as a busy machine delays it): the recording's paints show
    no model until the next one after 5.4 s (its ready is at 4.9 s; that paint comes 1.6 s after the last output).
    `ready` waits for it and names the model, and the turns end as recorded."""
    cap = Capture.load(CAPTURES / "pi_plain_qa")
    painted = 5.4
    cap.chunks = [(t, b.replace(b"mock-model", b" " * 10) if t < painted else b) for t, b in cap.chunks]
    events = replay(cap, fast=True)
    ready = next(e for e in events if e["event"] == "ready")
    assert ready["model"] == "mock-model" and ready["t"] >= painted, ready
    ends = [(e["event"], e["content"]) for e in events if e["event"] in TERMINAL]
    assert ends == EXPECTED["pi_plain_qa"]


def test_replay_relays_the_tool_call_from_the_record() -> None:
    events = replay(Capture.load(CAPTURES / "pi_tool"), fast=True)
    uses = [e for e in events if e["event"] == "tool_use"]
    results = [e for e in events if e["event"] == "tool_result"]
    assert [(u["name"], u["input"]) for u in uses] == [
        ("bash", {"command": "echo hi-from-pi > made.txt; cat made.txt"})
    ]
    assert [(r["tool_use_id"], r["content"]) for r in results] == [(uses[0]["tool_use_id"], "hi-from-pi\n")]


def test_replay_setup_pins_the_recorded_file_under_the_private_home(tmp_path: Path) -> None:
    """The recorded file's name, in Pi's folder for the recorded cwd under the replay's HOME; a `--session` the
    recording passed (a path under the recorder's HOME) is replaced, not kept."""
    cap = Capture.load(CAPTURES / "pi_plain_qa")
    name = cap.transcript[0][1]
    cap.meta = {**cap.meta, "argv": [*cap.meta["argv"], "--session", "/elsewhere/x.jsonl"]}
    options, folder = PiDriver.replay_setup(cap, tmp_path)
    assert options["env"] == {"HOME": str(tmp_path)}
    assert folder.is_relative_to(tmp_path / ".pi" / "agent" / "sessions")
    assert options["args"].count("--session") == 1
    assert options["args"][-2:] == ["--session", str(folder / name)]
    assert options["cli_version"] == "0.73.1"


def test_explain_reads_the_recorded_screens() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "litbridge", "explain", "--json", str(CAPTURES / "pi_tool")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    frames = [json.loads(line) for line in out.stdout.splitlines()]
    states = [f["state"] for f in frames]
    assert "busy" in states and states[-1] == "idle"
    assert any(f["draft"] == "Make a file with bash." for f in frames)
    assert all(f["question"] is None for f in frames)
