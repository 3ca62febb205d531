"""The chat JSONL side: locating the file, tailing it, replaying upserts and `$set` patches, turn events - on
the chat files the real CLI wrote in the recordings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gemini_helpers import FIXTURES

from litbridge.drivers.gemini.chat import (
    ChatLog,
    ChatTailer,
    ChatTurns,
    chat_file_matches,
    find_chat_file,
    gemini_home,
    project_slug,
    prompt_text,
)


def chat_lines(capture: str) -> list[dict]:
    if capture.endswith(".jsonl"):
        path = FIXTURES / "chats" / capture
    else:
        (path,) = sorted((FIXTURES / capture / "transcripts").rglob("session-*.jsonl"))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def events(lines: list[dict]) -> list[tuple[str, str]]:
    turns = ChatTurns()
    return [(e.kind, e.text) for e in turns.feed(lines)]


def test_plain_qa_turns() -> None:
    evs = [e for e in events(chat_lines("gemini_plain_qa")) if e[0] in ("prompt", "answer")]
    assert evs == [
        (
            "prompt",
            "What is the capital of France",
        ),  # the `?` was lost in a plain write [gemini_question_mark]
        ("answer", "The capital of France is **Paris**."),
        ("prompt", "What is 2+2"),
        ("answer", "2 + 2 = 4."),
        ("prompt", "Name three colours."),
        ("answer", "Red, green and blue.\n\n- red\n- green\n- blue"),
    ]


def test_tool_turn_upserts_withdraw_the_early_answer() -> None:
    turns = ChatTurns()
    lines = chat_lines("gemini_tool_approval")
    seen: list[tuple[str, bool]] = []
    for line in lines:
        for ev in turns.feed([line]):
            seen.append((ev.kind, turns.pending is not None))
    kinds = [k for k, _ in seen]
    # first turn: the text record, then the same id re-appended with its tool call (the answer is withdrawn),
    # the tool's result, the final answer; second turn: the call is cancelled at the approval (Esc)
    assert kinds[:8] == ["prompt", "text", "answer", "text", "tool_use", "tool_result", "text", "answer"]
    assert kinds[8:] == ["prompt", "answer", "tool_use", "tool_result", "interrupted"]
    assert not turns.open and turns.pending is None


def test_tool_events_and_content() -> None:
    turns = ChatTurns()
    evs = turns.feed(chat_lines("gemini_tool_approval")[:12])
    use = next(e for e in evs if e.kind == "tool_use")
    res = next(e for e in evs if e.kind == "tool_result")
    assert use.text == "run_shell_command" and use.data["input"]["command"].startswith(
        "touch created_by_gemini"
    )
    assert res.data["id"] == use.data["id"] and "hi-from-shell" in res.text and not res.data["is_error"]
    final = [e for e in evs if e.kind == "answer"][-1]
    assert final.text == "I'll create the file.\n\nDone: the file was created."
    assert final.data["usage"] == {
        "input_tokens": 2400,
        "output_tokens": 40,
        "cache_read_tokens": 0,
        "cache_creation_tokens": 0,
    }


def test_cancelled_tool_result_is_an_error_and_history_replay_is_ignored() -> None:
    turns = ChatTurns()
    evs = turns.feed(chat_lines("gemini_tool_approval"))
    cancelled = [e for e in evs if e.kind == "tool_result"][-1]
    assert cancelled.data["is_error"] and "User denied execution" in cancelled.text
    # after `Request cancelled.` the CLI re-appends the API-visible history as new records: no new turn
    assert [e.kind for e in evs].count("prompt") == 2


def test_interrupts_and_recovery() -> None:
    evs = events(chat_lines("gemini_interrupt"))
    assert [k for k, _ in evs] == [
        "prompt", "interrupted", "prompt", "interrupted", "prompt", "interrupted", "prompt", "text", "answer",
    ]  # fmt: skip
    assert evs[-1] == ("answer", "Still alive after interrupts.")


def test_api_errors() -> None:
    evs = [e for e in events(chat_lines("gemini_api_error.jsonl")) if e[0] != "text"]
    assert evs == [
        ("prompt", "trigger a server error"),
        ("answer", "OK (default mock reply)."),  # after ~50 s of silent retries
        ("prompt", "trigger a rate limit"),
        ("answer", "OK (default mock reply)."),
        ("prompt", "trigger a stream error"),
        ("error", "Model stream ended without a finish reason."),
        ("prompt", "recover now"),
        ("answer", "Recovered fine."),
    ]


def test_resumed_file_has_two_headers_and_both_turns() -> None:
    lines = chat_lines("gemini_resume/resumed")
    log = ChatLog()
    kinds = [log.apply(line)[0] for line in lines]
    assert kinds.count("header") == 2  # `--resume` appends a second header to the same file
    assert [p for p in (prompt_text(r) for r in log.messages()) if p] == [
        "first turn",
        "second turn after resume",
    ]


def test_chatlog_replays_upserts_and_set() -> None:
    log = ChatLog()
    log.apply({"sessionId": "s", "kind": "main", "lastUpdated": "1"})
    log.apply({"$set": {"lastUpdated": "2", "messages": [1, 2]}})
    assert log.apply({"id": "a", "type": "gemini", "content": "x"}) == (
        "record",
        {"id": "a", "type": "gemini", "content": "x"},
        False,
    )
    kind, rec, update = log.apply({"id": "a", "type": "gemini", "content": "x", "toolCalls": []})
    assert (kind, update, rec["toolCalls"]) == ("record", True, [])
    assert log.session == {"sessionId": "s", "kind": "main", "lastUpdated": "2", "messages": [1, 2]}
    assert [r["id"] for r in log.messages()] == ["a"] and "toolCalls" in log.messages()[0]
    assert log.apply({"unrelated": 1})[0] == "other"


def test_tailer_whole_lines_only_and_bad_lines_skipped(tmp_path: Path) -> None:
    f = tmp_path / "session-2026-12-01T01-42-8f720737.jsonl"
    f.write_bytes(b'{"a": 1}\n{"b": ')
    t = ChatTailer(f)
    assert t.poll() == [{"a": 1}]
    with open(f, "ab") as fh:
        fh.write(b'2}\nnot json\n{"c": 3}\n')
    assert t.poll() == [{"b": 2}, {"c": 3}]
    assert t.poll() == []
    f.write_bytes(b'{"d": 4}\n')  # rewritten shorter: read again from the start
    assert t.poll() == [{"d": 4}]
    late = ChatTailer(f, from_start=False)
    assert late.poll() == []
    with open(f, "ab") as fh:
        fh.write(b'{"e": 5}\n')
    assert late.poll() == [{"e": 5}]
    assert ChatTailer(tmp_path / "absent.jsonl").poll() == []


def test_locating_the_chat_file(tmp_path: Path) -> None:
    home = gemini_home({"HOME": str(tmp_path)})
    assert home == tmp_path / ".gemini"
    assert gemini_home({"HOME": "/x", "GEMINI_CLI_HOME": str(tmp_path / "g")}) == tmp_path / "g" / ".gemini"
    assert project_slug("/home/dev/work/plain_qa", home) == "plain-qa"  # the CLI's rule for a new project
    home.mkdir()
    (home / "projects.json").write_text(json.dumps({"projects": {"/home/dev/work/plain_qa": "plain-qa-1"}}))
    assert project_slug("/home/dev/work/plain_qa", home) == "plain-qa-1"  # its own mapping wins
    sid = "8f720737-cb89-4548-ab43-a22e29ae42d1"
    assert find_chat_file(home, sid) is None
    chats = home / "tmp" / "plain-qa-1" / "chats"
    chats.mkdir(parents=True)
    (chats / "session-2026-12-01T01-42-8f720737.jsonl").write_text("")
    (chats / "session-2026-12-01T01-42-00000000.jsonl").write_text("")
    assert find_chat_file(home, sid, "plain-qa-1") == chats / "session-2026-12-01T01-42-8f720737.jsonl"
    assert find_chat_file(home, sid) == chats / "session-2026-12-01T01-42-8f720737.jsonl"  # any project
    assert chat_file_matches("session-2026-12-01T01-42-8f720737.jsonl", sid)
    assert not chat_file_matches("logs.json", sid)


@pytest.mark.parametrize("bad", ["../../..", "*", "latest", "", "8f72073/", "..%2f"])
def test_a_session_id_that_is_not_hex_names_no_file(tmp_path, bad) -> None:
    """A resume token from a client never widens the glob or leaves `tmp/<project>/chats/`."""
    chats = tmp_path / "tmp" / "p" / "chats"
    chats.mkdir(parents=True)
    (chats / "session-2026-12-01T01-42-8f720737.jsonl").write_text("{}\n")
    (tmp_path / "session-x-..jsonl").write_text("{}\n")
    assert find_chat_file(tmp_path, bad) is None
    assert (
        find_chat_file(tmp_path, "8f720737-0000-4000-8000-000000000000")
        == chats / "session-2026-12-01T01-42-8f720737.jsonl"
    )
