"""Transcript side: slug/path rules, whole-line tailing, /clear roll, and the turn tracker on real transcripts."""

from __future__ import annotations

import os
import time
from pathlib import Path

import orjson
import pytest
from claude_captures import capture

from litbridge.drivers.claude.transcript import (
    TOOL_RESULT_LIMIT,
    TranscriptTailer,
    TurnTracker,
    config_dir,
    global_config_path,
    project_dir,
    project_slug,
)

# ---------------------------------------------------------------------------------------------- paths


def test_slug_rule() -> None:
    assert project_slug("/home/dev/work/s01a_startup_dialogs") == "-home-dev-work-s01a-startup-dialogs"
    assert project_slug("slug test.dir_with-üñí") == "slug-test-dir-with----"  # reference §8.1
    assert project_slug("/x/😀é") == "-x----"  # per UTF-16 code unit (computed with node)
    assert project_slug("C:\\Users\\ben\\x") == "C--Users-ben-x"


def test_long_slug_gets_the_js_hash_suffix() -> None:
    # expected values computed with node: s.slice(0,200) + "-" + Math.abs(h).toString(36)
    p = "/home/dev/work/" + "y" * 213 + "ü😀"
    s = project_slug(p)
    assert len(s) == 207 and s.endswith("yyyy-u2rcvr") and s[:200] == project_slug(p)[:200]
    q = "/tmp/" + "abc/" * 60
    assert project_slug(q)[195:] == "c-abc-ctco8j"
    assert len(project_slug("/" + "a" * 199)) == 200  # exactly 200: no suffix


def test_config_dir_respects_claude_config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    assert config_dir({"HOME": "/h"}) == Path("/h/.claude")
    assert global_config_path({"HOME": "/h"}) == Path("/h/.claude.json")
    env = {"HOME": "/h", "CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
    assert project_dir("/w/p", env) == tmp_path / "cfg" / "projects" / "-w-p"
    assert global_config_path(env) == tmp_path / "cfg" / ".claude.json"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", "/daemon/cfg")
    assert config_dir({"HOME": "/h"}) == Path("/daemon/cfg")


# ---------------------------------------------------------------------------------------------- tailer


def _line(obj: dict) -> bytes:
    return orjson.dumps(obj) + b"\n"


def test_tailer_reads_whole_lines_only_and_skips_corrupt(tmp_path: Path) -> None:
    t = TranscriptTailer(tmp_path, "sid")
    assert t.poll() == []  # no file yet
    f = tmp_path / "sid.jsonl"
    a = _line({"type": "user", "n": 1})
    f.write_bytes(a + b'{"type":"assist')
    assert [e["n"] for e in t.poll()] == [1]  # the partial line waits
    with open(f, "ab") as fh:
        fh.write(b'ant","n":2}\n{not json}\n[1,2]\n')
    got = t.poll()
    assert [e["n"] for e in got] == [2]
    assert t.corrupt_lines == 2
    assert t.poll() == []


def test_tailer_starts_at_eof_of_an_existing_file_and_rereads_a_replaced_one(tmp_path: Path) -> None:
    f = tmp_path / "sid.jsonl"
    f.write_bytes(_line({"n": 0}))
    t = TranscriptTailer(tmp_path, "sid")  # resume: history is skipped
    assert t.poll() == []
    with open(f, "ab") as fh:
        fh.write(_line({"n": 1}))
    assert [e["n"] for e in t.poll()] == [1]
    f.write_bytes(_line({"n": 9}))  # truncated/replaced: read from the start again
    assert [e["n"] for e in t.poll()] == [9]


def test_tailer_never_flaps_to_a_newer_sibling_but_follows_clear(tmp_path: Path) -> None:
    (tmp_path / "mine.jsonl").write_bytes(_line({"type": "user", "n": 1}))
    (tmp_path / "old-sibling.jsonl").write_bytes(_line({"type": "user", "n": 2}))
    t = TranscriptTailer(tmp_path, "mine", from_start=True)
    assert [e["n"] for e in t.poll()] == [1]
    (tmp_path / "newer-sibling.jsonl").write_bytes(_line({"type": "user", "message": {"content": "hi"}}))
    assert t.poll() == [] and t.session_id == "mine"
    assert t.find_clear_roll("/w") is None  # a sibling's ordinary conversation is not a roll
    clear = {
        "type": "user",
        "cwd": "/w",
        "message": {
            "content": "<command-name>/clear</command-name>\n<command-message>clear</command-message>"
        },
    }
    (tmp_path / "rolled.jsonl").write_bytes(_line({"type": "mode"}) + _line(clear))
    assert t.find_clear_roll("/w") == "rolled"
    assert t.find_clear_roll("/elsewhere") is None
    t.pin("rolled")
    assert [e["type"] for e in t.poll()] == [
        "user"
    ] and t.skipped == 1  # `mode` is bookkeeping, left unparsed


def test_a_sibling_conversation_is_read_once_and_a_roll_is_found_behind_meta_entries(tmp_path: Path) -> None:
    """Sessions sharing a project folder each start a file in it: a file that starts with a typed prompt is read
    once (`ruled_out`), a file with no prompt yet is read again, and a roll's `/clear` is found behind the meta
    entries before it."""
    (tmp_path / "mine.jsonl").write_bytes(_line({"type": "user", "n": 1}))
    t = TranscriptTailer(tmp_path, "mine")
    (tmp_path / "other.jsonl").write_bytes(_line({"type": "user", "message": {"content": "hi"}}))
    pending = tmp_path / "pending.jsonl"
    pending.write_bytes(_line({"type": "mode"}))
    assert t.find_clear_roll("/w") is None
    assert t.ruled_out == {"other.jsonl"}
    caveat = {
        "type": "user",
        "isMeta": True,
        "message": {"content": "<local-command-caveat>x</local-command-caveat>"},
    }
    clear = {"type": "user", "cwd": "/w", "message": {"content": "<command-name>/clear</command-name>"}}
    with open(pending, "ab") as fh:
        fh.write(_line(caveat) + _line(clear))
    assert t.find_clear_roll("/w") == "pending"


# ---------------------------------------------------------------------------------------------- tracker


def _entries(name: str) -> list[dict]:
    out = []
    for f in sorted((capture(name) / "transcripts").glob("*/*.jsonl")):
        out.extend(orjson.loads(x) for x in f.read_bytes().splitlines())
    return out


def _kinds(events) -> list[str]:
    return [e.kind for e in events if e.kind != "text"]


def test_simple_turns_complete_with_usage_once_per_message() -> None:
    entries = _entries("s02_")
    evs = TurnTracker().feed(entries)
    assert _kinds(evs) == ["prompt", "complete", "prompt", "complete"]
    first = next(e for e in evs if e.kind == "complete")
    texts = [
        b["text"]
        for e in entries
        if e["type"] == "assistant"
        for b in e["message"]["content"]
        if b["type"] == "text"
    ]
    assert first.text == texts[0]
    assert first.data["usage"]["output_tokens"] == 49


def test_usage_is_counted_once_per_message_id() -> None:
    msg = {"id": "m1", "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 3}}
    entries = [
        {"type": "user", "message": {"content": "q"}},
        {"type": "assistant", "message": {**msg, "content": [{"type": "thinking", "thinking": "x"}]}},
        {
            "type": "assistant",
            "message": {**msg, "stop_reason": "end_turn", "content": [{"type": "text", "text": "a"}]},
        },
        {"type": "system", "subtype": "turn_duration"},
    ]
    evs = TurnTracker().feed(entries)
    done = evs[-1]
    assert done.kind == "complete" and done.text == "a"
    assert done.data["usage"] == {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_read_tokens": 3,
        "cache_creation_tokens": 0,
    }


def test_end_turn_waits_for_turn_duration() -> None:
    tr = TurnTracker()
    tr.feed([{"type": "user", "message": {"content": "q"}}])
    evs = tr.feed(
        [
            {
                "type": "assistant",
                "message": {"id": "m", "stop_reason": "end_turn", "content": [{"type": "text", "text": "a"}]},
            }
        ]
    )
    assert "complete" not in _kinds(evs)
    assert _kinds(tr.feed([{"type": "system", "subtype": "turn_duration"}])) == ["complete"]


def test_tool_pairing_and_truncation() -> None:
    evs = TurnTracker().feed(_entries("s04b"))
    uses = [e for e in evs if e.kind == "tool_use"]
    results = [e for e in evs if e.kind == "tool_result"]
    assert len(uses) == len(results) == 8
    assert {e.data["tool_use_id"] for e in uses} == {e.data["tool_use_id"] for e in results}
    failed = [e for e in results if e.data["is_error"]]
    assert len(failed) == 1 and failed[0].text.startswith("Exit code 1")
    big = "x" * (TOOL_RESULT_LIMIT + 50)
    tr = TurnTracker()
    tr.feed([{"type": "user", "message": {"content": "q"}}])
    (ev,) = tr.feed(
        [
            {
                "type": "user",
                "message": {"content": [{"type": "tool_result", "tool_use_id": "t", "content": big}]},
            }
        ]
    )
    assert len(ev.text) == TOOL_RESULT_LIMIT + 1 and ev.text.endswith("…")


def test_api_error_ends_the_turn_as_error() -> None:
    evs = TurnTracker().feed(_entries("s05d"))
    assert _kinds(evs) == ["prompt", "error"]
    assert evs[-1].text.startswith("API Error: 500")


def test_retried_then_ok_is_one_complete() -> None:
    assert _kinds(TurnTracker().feed(_entries("s05a"))) == ["prompt", "complete"]


def test_interrupts() -> None:
    evs = TurnTracker().feed(_entries("s06"))
    assert _kinds(evs) == [
        "prompt",
        "interrupted",  # Esc while streaming: partial text kept
        "prompt",
        "abandoned",  # Esc before the first token: nothing after the prompt, the next prompt closes it
        "prompt",
        "interrupted",  # Ctrl+C while streaming
        "prompt",
        "tool_use",
        "tool_result",
        "interrupted",  # Esc while a tool runs ("…for tool use]")
        "prompt",
        "complete",
        "prompt",
        "complete",  # the queued prompt
    ]
    first = next(e for e in evs if e.kind == "interrupted")
    assert first.text.startswith("This is a slow streaming answer")


def test_meta_command_and_compact_entries_are_not_prompts() -> None:
    evs = TurnTracker().feed(_entries("s07b"))
    prompts = [e.text for e in evs if e.kind == "prompt"]
    assert prompts == ["question after clear", "first question", "second question"]


def test_every_capture_transcript_has_one_terminal_event_per_prompt() -> None:
    for name in ("s02_", "s02b", "s03", "s04a", "s04b", "s05a", "s05d", "s06", "s07a", "s08a", "s09c", "s10"):
        kinds = _kinds(TurnTracker().feed(_entries(name)))
        prompts = kinds.count("prompt")
        terminal = sum(kinds.count(k) for k in ("complete", "interrupted", "error", "abandoned"))
        assert prompts == terminal, (name, kinds)


def test_thinking_blocks_are_reasoning_events() -> None:
    """An assistant entry's `thinking` blocks are `reasoning` events (their text, in order, before the text that
    follows them); a redacted block (a signature, no text) is none."""
    entries = [
        {"type": "user", "message": {"content": "Why?"}},
        {
            "type": "assistant",
            "message": {
                "id": "m1",
                "content": [
                    {"type": "thinking", "thinking": "The user asks why.\nLet me think.", "signature": "s1"},
                    {"type": "thinking", "thinking": "", "signature": "s2"},
                    {"type": "text", "text": "Because."},
                ],
                "stop_reason": "end_turn",
            },
        },
        {"type": "system", "subtype": "turn_duration"},
    ]
    evs = TurnTracker().feed(entries)
    assert [(e.kind, e.text) for e in evs] == [
        ("prompt", "Why?"),
        ("reasoning", "The user asks why.\nLet me think."),
        ("text", "Because."),
        ("complete", "Because."),
    ]


def test_a_follower_in_a_shared_folder_is_woken_only_by_files_that_may_be_its_roll(tmp_path: Path) -> None:
    """After another file appears (maybe a `/clear` roll) the follower takes writes to new files for a while, but
    not to files that were there at its pin nor to one already seen to be another conversation."""
    from types import SimpleNamespace

    from litbridge.drivers.claude.follow import TranscriptFollower
    from litbridge.drivers.claude.transcript import TurnTracker
    from litbridge.drivers.records.watch import IN_CREATE, IN_MODIFY

    (tmp_path / "mine.jsonl").write_bytes(_line({"type": "user", "n": 1}))
    (tmp_path / "old.jsonl").write_bytes(_line({"type": "user", "n": 2}))
    host = SimpleNamespace(loop=SimpleNamespace(time=lambda: 100.0), log=None)
    f = TranscriptFollower(host, tmp_path, "/w", "mine", False, TurnTracker(), lambda evs: None)
    (tmp_path / "other.jsonl").write_bytes(_line({"type": "user", "message": {"content": "hi"}}))
    (tmp_path / "maybe.jsonl").write_bytes(b"")
    assert f.accept(IN_CREATE, "other.jsonl")  # a new file: look, it may be a roll
    assert f.accept(IN_MODIFY, "mine.jsonl")
    assert not f.accept(IN_MODIFY, "old.jsonl")  # there before the pin: never a roll
    assert f.accept(IN_MODIFY, "other.jsonl") and f.accept(IN_MODIFY, "maybe.jsonl")
    assert f.tailer.find_clear_roll("/w") is None
    assert not f.accept(IN_MODIFY, "other.jsonl")  # read once: another conversation
    assert f.accept(IN_MODIFY, "maybe.jsonl")  # no prompt yet: still a candidate


CAPTURED = ("s02_", "s02b", "s03", "s04a", "s04b", "s05a", "s05d", "s06", "s07a", "s08a", "s09c", "s10")


@pytest.mark.parametrize("name", CAPTURED)
def test_the_tailer_leaves_unparsed_only_entries_the_tracker_never_reads(name: str, tmp_path: Path) -> None:
    """Every captured transcript through the tailer: the lines it skips unparsed are exactly the bookkeeping and
    `attachment` entries, and the tracker's events are the same as from every entry parsed."""
    for f in sorted((capture(name) / "transcripts").glob("*/*.jsonl")):
        everything = [orjson.loads(x) for x in f.read_bytes().splitlines() if x.strip()]
        t = TranscriptTailer(tmp_path, None)
        t.pin(f.stem, from_start=True)
        (tmp_path / f.name).write_bytes(f.read_bytes())
        kept = t.poll()
        skipped = [e for e in everything if e not in kept]
        assert t.skipped == len(skipped) == len(everything) - len(kept) > 0
        assert {e["type"] for e in skipped} <= {
            "api-request-shape",
            "api-request-blob",
            "api-request",
            "file-history-snapshot",
            "mode",
            "permission-mode",
            "atis-latch",
            "last-prompt",
            "cost-state",
            "attachment",
        }
        assert {"user", "assistant"} <= {e["type"] for e in kept}
        assert TurnTracker().feed(kept) == TurnTracker().feed(everything)


def test_a_line_that_only_quotes_a_skipped_entry_is_still_read(tmp_path: Path) -> None:
    """The skip pattern matches keys, never text: a prompt that quotes an attachment entry is a prompt."""
    quoted = '{"type":"attachment"} and {"parentUuid":null,"isSidechain":false,"attachment":{}}'
    t = TranscriptTailer(tmp_path, "q")
    (tmp_path / "q.jsonl").write_bytes(
        _line({"type": "user", "message": {"role": "user", "content": quoted}, "uuid": "u1"})
        + _line({"type": "mode", "mode": "normal"})
    )
    got = t.poll()
    assert [e["type"] for e in got] == ["user"] and got[0]["message"]["content"] == quoted
    assert t.skipped == 1


def _prompt(text: str) -> dict:
    return {"type": "user", "message": {"role": "user", "content": text}, "uuid": "u1"}


def test_sessions_in_one_folder_read_a_new_file_and_the_folder_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A burst of sessions in one project folder: each new file there is a possible `/clear` roll for every
    session, but its head is read once per growth and the folder listed once per change, not once per session."""
    from litbridge.drivers.claude import transcript

    for i in range(20):
        (tmp_path / f"s{i}.jsonl").write_bytes(_line({"type": "mode"}))
    os.utime(tmp_path, ns=(time.time_ns() - 10**9,) * 2)  # a folder that settled a moment ago
    tailers = [TranscriptTailer(tmp_path, f"s{i}") for i in range(20)]
    reads: list[str] = []
    real_open, real_scandir = open, os.scandir
    monkeypatch.setattr(
        transcript, "open", lambda p, *a: reads.append(str(p)) or real_open(p, *a), raising=False
    )
    listings: list[str] = []
    monkeypatch.setattr(transcript.os, "scandir", lambda p: listings.append(str(p)) or real_scandir(p))
    (tmp_path / "other.jsonl").write_bytes(_line({"type": "mode"}) + _line(_prompt("hello")))
    os.utime(tmp_path, ns=(time.time_ns() - 10**9,) * 2)
    assert [t.find_clear_roll("/w", 100.0) for t in tailers] == [None] * 20
    assert reads == [str(tmp_path / "other.jsonl")] and len(listings) == 1
    assert all(t.ruled_out == {"other.jsonl"} for t in tailers)
    clear = {"type": "user", "cwd": "/w", "message": {"content": "<command-name>/clear</command-name>"}}
    (tmp_path / "rolled.jsonl").write_bytes(_line({"type": "mode"}))
    os.utime(tmp_path, ns=(time.time_ns() - 10**9,) * 2)
    assert [t.find_clear_roll("/w", 101.0) for t in tailers] == [None] * 20  # no user entry yet: undecided
    with open(tmp_path / "rolled.jsonl", "ab") as fh:
        fh.write(_line(clear))  # it grew: once the first look has aged, read once more, for everyone
    assert [t.find_clear_roll("/w", 101.1) for t in tailers] == [None] * 20
    assert [t.find_clear_roll("/w", 101.5) for t in tailers] == ["rolled"] * 20
    assert reads.count(str(tmp_path / "rolled.jsonl")) == 2 and len(listings) == 2


def test_a_folder_listed_while_it_changes_is_listed_again(tmp_path: Path) -> None:
    """A file created in the same clock tick as the listing before it does not move the folder's mtime: a
    listing of a folder that changed a moment ago is not kept."""
    from litbridge.drivers.claude.transcript import folder_names

    (tmp_path / "a.jsonl").write_bytes(b"")
    assert folder_names(tmp_path) == {"a.jsonl"}
    (tmp_path / "b.jsonl").write_bytes(b"")
    assert folder_names(tmp_path) == {"a.jsonl", "b.jsonl"}
