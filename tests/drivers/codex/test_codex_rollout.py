"""The rollout JSONL side: finding this session's file, incremental reads, and the turn events of each recording
(the endings INDEX.md lists for the captures)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from codex_env import FIXTURES

from litbridge.drivers.codex import rollout as ro


def rollout_of(capture: str) -> Path:
    (path,) = (FIXTURES / capture / "transcripts" / "sessions").glob("*/*/*/rollout-*.jsonl")
    return path


def events_of(path: Path) -> list[ro.TurnEvent]:
    reader = ro.RolloutReader(path)
    return ro.TurnTracker().feed(reader.poll())


def endings(events: list[ro.TurnEvent]) -> list[tuple[str, str]]:
    return [(e.kind, e.text) for e in events if e.kind in ("complete", "error", "interrupted")]


def test_plain_qa_three_completed_turns_with_exact_text_and_usage() -> None:
    evs = events_of(rollout_of("codex_plain_qa"))
    assert [e.text for e in evs if e.kind == "prompt"] == [
        "What is the capital of France?",
        "What is 2+2?",
        "Name three colours.",
    ]
    ends = [e for e in evs if e.kind == "complete"]
    assert ends[0].text == "The capital of France is **Paris**."  # the raw markdown; the screen shows it bold
    assert len(ends) == 3 and all(e.data["usage"]["input_tokens"] > 0 for e in ends)


def test_api_errors_are_errors_then_one_completion() -> None:
    ends = endings(events_of(rollout_of("codex_api_error")))
    assert [k for k, _ in ends] == ["error", "error", "error", "complete"]
    assert ends[0][1].startswith("We’re currently experiencing high demand")
    assert "429 Too Many Requests" in ends[1][1]


def test_interrupts_are_aborted_turns_then_a_completion() -> None:
    ends = endings(events_of(rollout_of("codex_interrupt")))
    assert [k for k, _ in ends] == ["interrupted", "interrupted", "interrupted", "complete"]
    assert ends[0][1] == ""  # the partial answer is not recorded (reference §8)


def test_code_mode_tool_call_then_rejected_command() -> None:
    evs = events_of(rollout_of("codex_tool_approval"))
    uses = [e for e in evs if e.kind == "tool_use"]
    results = [e for e in evs if e.kind == "tool_result"]
    assert uses[0].text == "exec" and "tools.exec_command" in uses[0].data["input"]["input"]
    assert results[0].data["tool_use_id"] == uses[0].data["tool_use_id"]
    assert "hi-from-shell" in results[0].text and not results[0].data["is_error"]
    assert [k for k, _ in endings(evs)] == ["complete", "interrupted"]


def test_function_call_approved_then_rejected() -> None:
    evs = events_of(rollout_of("codex_tool_approval_fn"))
    uses = [e for e in evs if e.kind == "tool_use"]
    results = [e for e in evs if e.kind == "tool_result"]
    assert uses[0].text == "exec_command"
    assert uses[0].data["input"]["cmd"] == "touch created_by_codex.txt && echo hi-from-shell"
    assert results[0].text.endswith("Output:\nhi-from-shell\n") and not results[0].data["is_error"]
    assert results[1].text.endswith("aborted by user") and results[1].data["is_error"]
    assert endings(evs) == [("complete", "Done: the file was created."), ("interrupted", "")]


def test_resumed_session_appends_to_the_same_file() -> None:
    path = rollout_of("codex_resume/resumed")
    tracker = ro.TurnTracker()
    evs = tracker.feed(ro.RolloutReader(path).poll())
    assert tracker.thread_id == ro.thread_id_of(path)
    assert [k for k, _ in endings(evs)] == ["complete", "complete"]


def test_reader_returns_only_whole_lines(tmp_path: Path) -> None:
    f = tmp_path / "rollout-2026-12-01T01-37-39-01a22f40-19a1-7521-9421-1e69dd7362a3.jsonl"
    f.write_bytes(b"")
    r = ro.RolloutReader(f)
    line = json.dumps({"type": "event_msg", "payload": {"type": "task_started", "turn_id": "t"}}).encode()
    with open(f, "ab") as fh:
        fh.write(line[:10])
    assert r.poll() == []
    with open(f, "ab") as fh:
        fh.write(line[10:] + b"\n{broken\n")
    assert [e["payload"]["type"] for e in r.poll()] == ["task_started"]  # the broken line is skipped
    assert ro.thread_id_of(f) == "01a22f40-19a1-7521-9421-1e69dd7362a3"


def test_finding_files_by_thread_and_first_prompt(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    src = rollout_of("codex_plain_qa")
    day = root / "2026" / "12" / "01"
    day.mkdir(parents=True)
    dst = day / src.name
    dst.write_bytes(src.read_bytes())
    (day / "notes.txt").write_text("not a rollout")
    assert ro.rollout_files(root) == [dst]
    assert ro.find_thread(root, "01a22f40-19a1-7521-9421-1e69dd7362a3") == dst
    assert ro.find_thread(root, "01a22f40-0000-7521-9421-1e69dd7362a3") is None
    assert ro.first_user_text(dst) == "What is the capital of France?"


def test_codex_home_follows_the_session_env(monkeypatch) -> None:
    monkeypatch.delenv("CODEX_HOME", raising=False)
    assert ro.codex_home({"HOME": "/h"}) == Path("/h/.codex")
    assert ro.codex_home({"HOME": "/h", "CODEX_HOME": "/c"}) == Path("/c")
    monkeypatch.setenv("CODEX_HOME", "/daemon-codex")
    assert ro.codex_home({"HOME": "/h"}) == Path("/daemon-codex")  # the child inherits the daemon's
    assert ro.sessions_dir({"HOME": os.sep + "x"}) == Path("/daemon-codex/sessions")


def test_rollout_head_has_the_session_cwd_and_first_prompt() -> None:
    assert ro.rollout_head(rollout_of("codex_plain_qa")) == (
        "/home/dev/work/plain_qa",
        "What is the capital of France?",
    )


def test_date_dirs_cover_the_span_in_local_time_and_utc(tmp_path: Path) -> None:
    import time

    t = time.mktime((2026, 12, 31, 23, 59, 0, 0, 0, -1))  # local 23:59 on New Year's Eve
    dirs = ro.date_dirs(tmp_path, t, t + 120)
    assert tmp_path / "2026" / "12" / "31" in dirs and tmp_path / "2027" / "01" / "01" in dirs
    g = time.gmtime(t)
    assert tmp_path / f"{g.tm_year:04d}" / f"{g.tm_mon:02d}" / f"{g.tm_mday:02d}" in dirs
    assert len(ro.date_dirs(tmp_path, t - 10 * 86400, t)) >= 11


def test_reasoning_items_are_reasoning_events() -> None:
    """A rollout `reasoning` item is a `reasoning` event with its summary text (else its raw reasoning text); one
    with only encrypted content is none."""
    lines = [
        {
            "type": "response_item",
            "payload": {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"},
        },
        {
            "type": "response_item",
            "payload": {
                "type": "reasoning",
                "summary": [
                    {"type": "summary_text", "text": "**Checking the files**"},
                    {"type": "summary_text", "text": "Then answer."},
                ],
                "content": None,
                "encrypted_content": "gAAA",
            },
        },
        {
            "type": "response_item",
            "payload": {
                "type": "reasoning",
                "summary": [],
                "content": [{"type": "reasoning_text", "text": "raw"}],
            },
        },
    ]
    evs = ro.TurnTracker().feed(lines)
    assert [(e.kind, e.text) for e in evs] == [
        ("reasoning", "**Checking the files**\n\nThen answer."),
        ("reasoning", "raw"),
    ]
