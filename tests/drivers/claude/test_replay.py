"""Replaying every capture through the real driver: the events the daemon would emit match the recording."""

from __future__ import annotations

import itertools
import subprocess
import sys
from functools import cache
from pathlib import Path

import orjson
import pytest
from claude_captures import capture, capture_dirs, or_skip
from lbd_helpers import TurnOrder, check_event

from litbridge.drivers.claude.transcript import TurnTracker
from litbridge.protocol.spec import STATES
from litbridge.replay import Capture, replay

TERMINAL = ("complete", "interrupted", "turn_error")


@cache
def _events(name: str) -> tuple[dict, ...]:
    events = tuple(replay(capture(name)))
    for ev in events:
        check_event(
            {k: v for k, v in ev.items() if k != "t"}
        )  # every replayed event obeys `litbridge schema`
    return events


def _turn_ids(events: tuple[dict, ...]) -> list[str]:
    """Turn ids in the order the session accepted them (ids are unique per daemon, not per session)."""
    return [e["turn_id"] for e in events if e["event"] == "accepted"]


def _expected_turns(capdir: Path) -> list[tuple[str, str, str]]:
    """(prompt, terminal kind, content) per prompt, straight from the transcript files."""
    out = []
    cap = Capture.load(capdir)
    tracker = TurnTracker()
    prompt = None
    for _, _, line in cap.transcript:  # in the order the lines hit the disk
        for ev in tracker.feed([orjson.loads(line)]):
            if ev.kind == "prompt":
                prompt = ev.text
            elif ev.kind in ("complete", "interrupted", "error", "abandoned"):
                out.append((prompt or "", ev.kind, ev.text))
    return out


@pytest.mark.parametrize("capdir", or_skip(capture_dirs()), ids=lambda p: getattr(p, "name", p))
def test_replay_matches_the_transcript(capdir: Path) -> None:
    events = _events(capdir.name)
    names = [e["event"] for e in events]
    assert names.count("ready") == 1
    assert names[-1] == "exited"
    for e in events:
        if e["event"] == "state":
            assert e["to"] in STATES and e["from"] in STATES and e["from"] != e["to"]
    # exactly one terminal event per turn, carrying that turn's id
    turns = [e["turn_id"] for e in events if e["event"] == "accepted"]
    ends = [e for e in events if e["event"] in TERMINAL]
    assert [e["turn_id"] for e in ends] == turns
    expected = _expected_turns(capdir)
    assert len(ends) == len(expected)
    kind_map = {
        "complete": "complete",
        "interrupted": "interrupted",
        "abandoned": "interrupted",
        "error": "turn_error",
    }
    for end, (_prompt, kind, content) in zip(ends, expected, strict=True):
        assert end["event"] == kind_map[kind], (end, kind)
        if end["event"] == "complete":
            assert end["content"] == content
            assert end["source"] == "transcript"
            assert end["usage"]["output_tokens"] > 0
        elif end["event"] == "turn_error":
            assert end["message"] == content and end["kind"] == "api_error"
    # every question is closed, and turn-bound events only carry open turns
    opened = {e["question_id"] for e in events if e["event"] == "question"}
    closed = {e["question_id"] for e in events if e["event"] == "question_closed"}
    assert opened == closed
    live: str | None = None
    for e in events:
        if e["event"] == "accepted":
            live = e["turn_id"]
        elif e["event"] in ("replace", "tool_use", "tool_result"):
            assert e["turn_id"] == live
        elif e["event"] in TERMINAL:
            live = None


@pytest.mark.parametrize("capdir", or_skip(capture_dirs()), ids=lambda p: getattr(p, "name", p))
def test_replace_is_this_turns_text_and_never_collapses(capdir: Path) -> None:
    events = _events(capdir.name)
    finals = {e["turn_id"]: e.get("content") for e in events if e["event"] in TERMINAL}
    last: dict[str, str] = {}
    previous_final = None
    for e in events:
        if e["event"] == "replace":
            prev = last.get(e["turn_id"], "")
            assert len(e["text"]) * 2 >= len(prev), "replace collapsed to a fragment"
            # never the previous turn's text (unless this turn really answered the same words)
            assert e["text"] != previous_final or e["text"] == finals.get(e["turn_id"])
            assert "✻" not in e["text"] and "❯" not in e["text"] and "esc to interrupt" not in e["text"]
            last[e["turn_id"]] = e["text"]
        elif e["event"] in TERMINAL:
            previous_final = last.get(e["turn_id"], previous_final)


def test_startup_dialogs_are_dismissed_with_cursor_keys() -> None:
    ev = _events("s01a")
    dismissed = [(e["dialog"], e["keys"]) for e in ev if e["event"] == "dialog_dismissed"]
    # the same keys the recording's harness typed (down+enter, up+enter): the driver is as quick as it was
    assert dismissed == [("trust", ["Down", "Enter"]), ("api_key", ["Up", "Enter"])]
    ready = next(e for e in ev if e["event"] == "ready")
    assert ready["model"] == "Opus 5.5" and ready["resumed"] is False
    assert all(e["t"] <= ready["t"] for e in ev if e["event"] == "dialog_dismissed")
    ev = _events("s01d")
    assert [e["dialog"] for e in ev if e["event"] == "dialog_dismissed"] == ["trust", "api_key", "bypass"]
    assert not any(e["event"] == "question" for e in ev)


def test_permission_questions_follow_the_dialogs() -> None:
    ev = _events("s04a")
    qs = [e for e in ev if e["event"] == "question"]
    assert [q["text"] for q in qs] == [
        "Do you want to proceed?",
        "Do you want to create hello.py?",
        "Do you want to make this edit to hello.py?",
        "Do you want to proceed?",
    ]
    assert all(q["kind"] == "permission" and q["source"] == "cli-dialog" for q in qs)
    # `digit` is a string, as `answer{digit}` takes it back (a client echoes the option)
    assert qs[0]["options"][0] == {"digit": "1", "label": "Yes", "selected": True}
    # the rejected one (Esc) is orphaned by the interrupted turn
    closes = {e["question_id"]: e["reason"] for e in ev if e["event"] == "question_closed"}
    assert closes[qs[-1]["question_id"]] == "orphaned"
    states = [e["to"] for e in ev if e["event"] == "state"]
    assert states.count("dialog") >= 3


def test_osc7501_capture_reports_drive_state() -> None:
    ev = _events("s10")
    ends = [e["event"] for e in ev if e["event"] in TERMINAL]
    assert ends == ["complete", "complete", "interrupted", "turn_error"]
    assert [e["dialog"] for e in ev if e["event"] == "dialog_dismissed"] == ["trust", "api_key"]
    q = next(e for e in ev if e["event"] == "question")
    assert q["text"] == "Do you want to create f.txt?"


def test_thinking_relays_the_spinner_before_text() -> None:
    ev = _events("s03")
    first_turn = [e for e in ev if e["event"] in ("thinking", "replace", "accepted")]
    thinking = [e["text"] for e in first_turn if e["event"] == "thinking"]
    assert any("thinking" in t or "thought for" in t for t in thinking)


def test_streaming_answer_reaches_the_full_text_before_complete() -> None:
    ev = _events("s02_")
    first = _turn_ids(ev)[0]
    replaces = [e["text"] for e in ev if e["event"] == "replace" and e["turn_id"] == first]
    complete = next(e for e in ev if e["event"] == "complete")
    assert replaces[-1] == complete["content"]


def test_cast_file_replays_like_chunks() -> None:
    d = capture("s02_")
    ev = replay(d / "session.cast")
    ends = [e for e in ev if e["event"] == "complete"]
    assert [e["content"] for e in ends] == [c for _, _, c in _expected_turns(d)]


def test_cli_smoke() -> None:
    d = capture("s05d")
    out = subprocess.run(
        [sys.executable, "-m", "litbridge", "replay", "--fast", "--no-thinking", str(d)],
        capture_output=True,
        timeout=120,
        check=True,
    ).stdout
    events = [orjson.loads(x) for x in out.splitlines()]
    assert [e["event"] for e in events if e["event"] in TERMINAL] == ["turn_error"]
    assert not any(e["event"] == "thinking" for e in events)
    bad = subprocess.run(
        [sys.executable, "-m", "litbridge", "replay", "/nonexistent/capture"], capture_output=True, timeout=60
    )
    assert bad.returncode == 2 and b"cannot load" in bad.stderr


def test_recorded_timing_mode_gives_the_same_turns() -> None:
    d = capture("s05d")
    ev = replay(d, fast=False, speed=1.0, tail=1.0)  # recorded timing: the driver's timers see real gaps
    assert [e["event"] for e in ev if e["event"] in TERMINAL] == ["turn_error"]
    ts = [e["t"] for e in ev]
    assert ts == sorted(ts) and ts[-1] < 60  # recording-relative times, not the loop's clock


def test_an_answer_longer_than_the_screen_is_stitched_not_windowed() -> None:
    """The prompt scrolls off while a 6 kB answer streams: `replace` keeps growing to the whole answer
    (screen windows stitched on their overlap), read between frames (no half-drawn garbage)."""
    ev = _events("s03")
    third = _turn_ids(ev)[2]
    t3 = [e["text"] for e in ev if e["event"] == "replace" and e["turn_id"] == third]
    done = next(e for e in ev if e["event"] == "complete" and e["turn_id"] == third)
    assert len(t3) >= 3
    assert all(len(b) >= len(a) for a, b in itertools.pairwise(t3))
    assert all(done["content"].startswith(x.rsplit("\n", 1)[0]) for x in t3)  # every step a true prefix
    assert t3[-1] == done["content"].rstrip("\n")


@pytest.mark.parametrize("capdir", or_skip(capture_dirs()), ids=lambda p: getattr(p, "name", p))
def test_state_settles_before_the_terminal_event(capdir: Path) -> None:
    """A client that reads `state` after a terminal event never sees the turn's own state (or a dialog the turn
    left behind): the idle (or next-busy) state comes first."""
    TurnOrder().check(_events(capdir.name))


def test_esc_typed_before_the_first_token_ends_the_turn_within_a_second() -> None:
    """s06: the recorder pressed Esc before the first token (typed as attach input in the replay); Claude went
    idle 0.08 s later and put the prompt back. The turn ends `interrupted` within 1 s of that, not 6 s late."""
    d = capture("s06")
    keys = [orjson.loads(x) for x in (d / "keys.jsonl").read_bytes().splitlines() if x.strip()]
    esc = next(k["t"] for k in keys if k["label"].startswith("esc (interrupt before first token)"))
    ev = _events("s06")
    ends = [e for e in ev if e["event"] in TERMINAL and e["t"] > esc]
    assert ends[0]["event"] == "interrupted"
    assert ends[0]["t"] - esc < 0.08 + 1.0, ends[0]
