"""`litbridge replay` / `explain` on the Kimi Code 2.1.0 recordings (tests/fixtures/captures/kimi): the real Session
and Kimi driver over the recorded output and wire-log lines, on the virtual clock."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from lbd_helpers import TurnOrder, busy_during_turn, check_event

from litbridge.drivers.kimi.driver import KimiDriver
from litbridge.replay import Capture, replay

CAPTURES = Path(__file__).resolve().parents[2] / "fixtures" / "captures" / "kimi"
TERMINAL = ("complete", "interrupted", "turn_error")

EXPECTED = {
    "kimi_plain_qa": [
        ("complete", "Is this exact?\n日本語のテキスト 🎉 and more?\n\n- a list item\n- 最後 ✅")
    ],
    "kimi_tool_approval": [("complete", "Done: made.txt holds hi-from-kimi.")],
    "kimi_interrupt": [
        ("interrupted", "word0 word1 word2 word3 word4 word5 word6 word7 word8 word9 word10 word11 word12"),
        ("complete", "Still here."),
    ],
}


def record_endings(cap: Capture) -> list[str]:
    """The turn endings the recorded wire log holds (`turn.ended` reasons)."""
    out = []
    for _t, _name, line in cap.transcript:
        entry = json.loads(line)
        if entry.get("type") == "turn.ended":
            out.append(
                {"completed": "complete", "cancelled": "interrupted"}.get(entry["reason"], entry["reason"])
            )
    return out


def last_answer(cap: Capture) -> str:
    """The last assistant message the wire log holds."""
    text = ""
    for _t, _name, line in cap.transcript:
        entry = json.loads(line)
        msg = (entry.get("message") or {}).get("message") or {}
        if entry.get("type") == "agent.message.appended" and msg.get("role") == "assistant":
            text = "".join(p.get("text", "") for p in msg.get("content", []) if p.get("type") == "text")
    return text


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_replay_ends_each_turn_once_with_the_records_content(name: str) -> None:
    cap = Capture.load(CAPTURES / name)
    assert record_endings(cap) == [kind for kind, _ in EXPECTED[name]]
    assert last_answer(cap) == EXPECTED[name][-1][1]  # the expectations are the record's
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
    assert all(e["source"] == "transcript" for e in ends if e["event"] == "complete")
    assert [d["dialog"] for d in events if d["event"] == "dialog_dismissed"] == ["trust"]
    assert events[-1]["event"] == "exited"


def test_replay_asks_the_approval_as_a_question() -> None:
    events = replay(Capture.load(CAPTURES / "kimi_tool_approval"), fast=True)
    qs = [e for e in events if e["event"] == "question"]
    assert len(qs) == 1
    q = qs[0]
    assert q["kind"] == "permission" and q["text"] == "Run this command?"
    assert [(o["digit"], o["label"]) for o in q["options"]] == [
        ("1", "Approve once"),
        ("2", "Approve for this session"),
        ("3", "Reject"),
        ("4", "Reject with feedback"),
    ]
    assert q["detail"]["command"] == "echo hi-from-kimi > made.txt; cat made.txt"
    # the recorder pressed 1 (keys the replay types, not an `answer`): the question closes, the tool runs
    closed = [e for e in events if e["event"] == "question_closed"]
    assert [c["question_id"] for c in closed] == [q["question_id"]]
    i = events.index(q)
    assert [e["name"] for e in events[i:] if e["event"] == "tool_use"] == ["Bash"]
    results = [e for e in events[i:] if e["event"] == "tool_result"]
    assert [(r["content"], r["is_error"]) for r in results] == [("hi-from-kimi\n", False)]


def test_replay_setup_follows_the_recorded_session_folder(tmp_path: Path) -> None:
    """The recorded session's folder under the replay's HOME, named as the resume token; its wire log's folder
    takes the recorded lines."""
    cap = Capture.load(CAPTURES / "kimi_plain_qa")
    options, folder = KimiDriver.replay_setup(cap, tmp_path)
    session = folder.parents[1]
    assert folder == session / "agents" / "main"
    assert session.parent.parent == tmp_path / ".kimi-code" / "sessions"
    assert session.is_dir() and options["resume"] == session.name
    assert session.name.startswith("session_")
    assert options["env"] == {"HOME": str(tmp_path)}
    assert options["cli_version"] == "2.1.0"


def test_explain_reads_the_trust_and_approval_panels() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "litbridge", "explain", "--json", str(CAPTURES / "kimi_tool_approval")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    frames = [json.loads(line) for line in out.stdout.splitlines()]
    kinds = [f["question"]["kind"] for f in frames if f["question"]]
    assert kinds[0] == "trust" and "permission" in kinds
    assert frames[-1]["state"] == "idle"
