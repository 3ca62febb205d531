"""Unit tests of the pure rift event mapping (rift event -> host calls) and of the transcript rendering."""

from __future__ import annotations

import json
from typing import Any

import pytest

from litbridge.drivers.rift import render
from litbridge.drivers.rift.mapping import AnswerError, RiftMapping, ask_kind, parse_args, usage_from_stats
from litbridge.term import Terminal

READY = {
    "event": "ready",
    "model": "qwen3:8b",
    "session": "/h/.local/share/rift/sessions/1.json",
    "cwd": "/p",
    "version": "2.9.0",
    "protocol_version": 1,
    "num_ctx": 32768,
    "approve": True,
    "skills": [{"name": "explain", "description": "x"}],
    "commands": ["hello", "prompt", "cancel"],
}
STATS = {
    "iterations": 2,
    "prompt_tokens": 1500,
    "billed_prompt_tokens": 300,
    "output_tokens": 42,
    "duration_ms": 1234,
    "tokens_per_sec": 34.0,
}


class Host:
    """Records every host call in order; questions get ids q1, q2…"""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.n = 0

    def __getattr__(self, name: str) -> Any:
        def record(*args: Any) -> None:
            self.calls.append((name, args))

        return record

    def open_question(self, kind: str, text: str, options: list[dict], detail: Any, source: str) -> str:
        self.n += 1
        self.calls.append(("open_question", (kind, text, options, detail, source)))
        return f"q{self.n}"

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]

    def of(self, name: str) -> list[tuple]:
        return [c[1] for c in self.calls if c[0] == name]


@pytest.fixture
def m() -> tuple[RiftMapping, Host, list[dict], Terminal]:
    host, sent, term = Host(), [], Terminal(200, 50)
    mapping = RiftMapping(host, sent.append, term.feed, schedule=None, coalesce=0)
    mapping.on_event(READY)
    mapping.on_event({"event": "context", "used": 1200, "limit": 32768})
    host.calls.clear()
    return mapping, host, sent, term


def feed(mapping: RiftMapping, *events: dict) -> None:
    for e in events:
        mapping.on_line(json.dumps(e).encode())


def test_ready_sets_idle_and_metadata():
    host, term = Host(), Terminal(200, 50)
    mapping = RiftMapping(host, lambda c: None, term.feed, coalesce=0)
    assert not mapping.can_accept_input()
    feed(mapping, READY, {"event": "context", "used": 10, "limit": 32768})
    assert host.of("set_state") == [("idle",)]
    assert mapping.can_accept_input()
    info = mapping.info()
    assert info["model"] == "qwen3:8b" and info["cli_version"] == "2.9.0"
    assert info["transcript_path"] == READY["session"]
    assert info["rift"]["context"] == {"used": 10, "limit": 32768}
    assert info["rift"]["commands"] == ["hello", "prompt", "cancel"]
    assert "rift 2.9.0" in term.display[0]


def test_qa_turn_replace_coalesced_per_delta_and_one_complete(m):
    mapping, host, sent, term = m
    mapping.begin_turn("hi")
    assert sent == [{"cmd": "prompt", "text": "hi"}]
    assert not mapping.can_accept_input()
    feed(
        mapping,
        {"event": "iteration", "n": 1},
        {"event": "content", "text": "Hello"},
        {"event": "content", "text": " "},
        {"event": "content", "text": " world"},
        {"event": "done", "stats": STATS},
        {"event": "context", "used": 1300, "limit": 32768},
    )
    assert host.of("turn_text") == [("Hello",), ("Hello ",), ("Hello  world",)]  # whitespace deltas kept
    assert host.of("set_state") == [("thinking",), ("responding",), ("idle",)]
    ((content, usage, source),) = host.of("turn_complete")
    assert content == "Hello  world" and source == "transcript"
    assert usage == {
        "input_tokens": 1500,
        "output_tokens": 42,
        "cache_read_tokens": 1200,
        "cache_creation_tokens": 0,
        "iterations": 2,
        "duration_ms": 1234,
        "tokens_per_sec": 34.0,
    }
    assert host.names()[-1] == "input_ready"
    assert mapping.can_accept_input() and mapping.info()["rift"]["context"]["used"] == 1300
    screen = "\n".join(term.display)
    assert "❯ hi" in screen and "Hello  world" in screen and "done" in screen


def test_coalescing_defers_replace_until_the_scheduled_flush():
    host, scheduled = Host(), []
    mapping = RiftMapping(
        host, lambda c: None, lambda b: None, schedule=lambda d, fn: scheduled.append((d, fn)), coalesce=0.05
    )
    mapping.on_event(READY)
    mapping.begin_turn("x")
    for word in ("a", " b", " c"):
        mapping.on_event({"event": "content", "text": word})
    assert host.of("turn_text") == [] and len(scheduled) == 1 and scheduled[0][0] == 0.05
    scheduled[0][1]()
    assert host.of("turn_text") == [("a b c",)]
    mapping.on_event({"event": "content", "text": " d"})
    mapping.on_event({"event": "done", "stats": {}})  # done flushes what is pending before complete
    assert host.of("turn_text")[-1] == ("a b c d",)
    assert host.names().index("turn_complete") > max(
        i for i, n in enumerate(host.names()) if n == "turn_text"
    )


def test_tool_turn_fifo_ids_and_args_parsing(m):
    mapping, host, _, _ = m
    mapping.begin_turn("do it")
    feed(
        mapping,
        {"event": "iteration", "n": 1},
        {"event": "content", "text": "Running."},
        {"event": "tool_start", "name": "bash", "args": json.dumps({"command": "ls"})},
        {"event": "tool_result", "name": "bash", "ok": True, "preview": "a b"},
        {"event": "tool_start", "name": "weird", "args": "not json"},
        {"event": "tool_result", "name": "weird", "ok": False, "preview": "ERROR: nope"},
        {"event": "edit_diff", "path": "/p/x", "added": 1, "removed": 0, "diff": ["+x"]},
        {"event": "iteration", "n": 2},
        {"event": "content", "text": "Done."},
        {"event": "done", "stats": STATS},
    )
    (id1, name1, in1), (id2, name2, in2) = host.of("tool_use")
    assert (name1, in1) == ("bash", {"command": "ls"}) and (name2, in2) == ("weird", "not json")
    assert id1 != id2 and id1.startswith("rift-")
    assert host.of("tool_result") == [(id1, "a b", False), (id2, "ERROR: nope", True)]
    assert host.of("turn_complete")[0][0] == "Running.\n\nDone."
    assert mapping.info()["rift"]["last_diff"] == {"path": "/p/x", "added": 1, "removed": 0}


def test_edit_diff_is_attached_to_the_write_result(m):
    mapping, host, _, _ = m
    mapping.begin_turn("x")
    feed(
        mapping,
        {"event": "tool_start", "name": "write", "args": '{"path": "a.txt"}'},
        {"event": "tool_result", "name": "write", "ok": True, "preview": "wrote 1 lines to a.txt"},
    )
    assert host.of("tool_result") == []  # held until we know whether a diff follows
    feed(
        mapping,
        {"event": "edit_diff", "path": "/p/a.txt", "added": 1, "removed": 0, "diff": ["@@ line 1 @@", "+hi"]},
    )
    ((tool_id, content, is_error),) = host.of("tool_result")
    assert tool_id == host.of("tool_use")[0][0]
    assert content == "wrote 1 lines to a.txt\n/p/a.txt +1 -0\n@@ line 1 @@\n+hi" and is_error is False
    feed(
        mapping,
        {"event": "tool_start", "name": "edit", "args": "{}"},
        {"event": "tool_result", "name": "edit", "ok": True, "preview": "edited"},
        {"event": "iteration", "n": 2},
    )  # no diff came: released by the next event
    assert host.of("tool_result")[-1][1:] == ("edited", False)


def test_ask_is_a_question_answered_with_the_exact_choice(m):
    mapping, host, sent, _ = m
    mapping.begin_turn("x")
    choices = ["allow once", "always allow 'ls *'", "allow all bash this session", "deny"]
    feed(
        mapping,
        {"event": "tool_start", "name": "bash", "args": "{}"},
        {"event": "ask", "id": 7, "question": "Allow bash: ls", "detail": [], "choices": choices},
    )
    ((kind, text, options, _detail, source),) = host.of("open_question")
    assert kind == "permission" and text == "Allow bash: ls" and source == "rift"
    assert [o["label"] for o in options] == choices and options[0] == {
        "digit": "1",
        "label": "allow once",
        "selected": True,
    }
    assert host.of("set_state")[-1] == ("dialog",) and not mapping.can_accept_input()
    assert mapping.answer("q1", option="ALLOW ONCE") == "allow once"  # case-folded to the exact string
    assert sent[-1] == {"cmd": "answer", "id": 7, "text": "allow once"}
    assert host.of("close_question") == [("q1", "answered")]
    assert host.of("set_state")[-1] == ("thinking",)
    with pytest.raises(AnswerError) as e:
        mapping.answer("q1", digit="1")
    assert e.value.code == "no_question"


def test_answer_by_digit_and_bad_digits(m):
    mapping, _, sent, _ = m
    mapping.begin_turn("x")
    feed(mapping, {"event": "ask", "id": 3, "question": "Pick", "detail": [], "choices": ["a", "b"]})
    for bad in ("0", "3", "x"):
        with pytest.raises(AnswerError):
            mapping.answer("q1", digit=bad)
    with pytest.raises(AnswerError):
        mapping.answer("q1", option="c")
    mapping.answer("q1", digit="2")
    assert sent[-1] == {"cmd": "answer", "id": 3, "text": "b"}


def test_free_text_ask_and_kinds():
    assert ask_kind("What is your name?", []) == "text"
    assert ask_kind("Which?", ["a"]) == "choice"
    assert ask_kind("Allow write: x (1 lines)", ["allow", "deny"]) == "permission"
    assert (
        ask_kind(
            "Project plugin 'p' declares 1 tool(s) — t. Trust this manifest on this machine?",
            ["trust", "skip"],
        )
        == "trust"
    )
    assert (
        parse_args('{"a": 1}') == {"a": 1} and parse_args("[x") == "[x" and parse_args({"a": 1}) == {"a": 1}
    )
    assert usage_from_stats({"prompt_tokens": True})["input_tokens"] == 0


def test_unanswered_ask_is_orphaned_at_done_and_cancel_gives_interrupted(m):
    mapping, host, sent, _ = m
    mapping.begin_turn("x")
    feed(
        mapping,
        {"event": "iteration", "n": 1},
        {"event": "content", "text": "part"},
        {"event": "ask", "id": 1, "question": "Name?", "detail": [], "choices": []},
    )
    assert mapping.cancel() and mapping.cancel()
    assert sent.count({"cmd": "cancel"}) == 1
    feed(mapping, {"event": "warning", "text": "turn cancelled"}, {"event": "done", "stats": STATS})
    assert host.of("close_question") == [("q1", "orphaned")]
    assert host.of("turn_interrupted") == [("part",)]
    assert not host.of("turn_complete") and not host.of("turn_error")
    assert host.names().index("close_question") < host.names().index("turn_interrupted")
    assert host.of("set_state")[-1] == ("idle",) and mapping.can_accept_input()
    assert not mapping.cancel()  # idle: nothing to cancel, nothing sent
    assert sent.count({"cmd": "cancel"}) == 1


def test_error_warning_then_done_is_turn_error(m):
    mapping, host, _, _ = m
    mapping.begin_turn("x")
    feed(
        mapping,
        {"event": "iteration", "n": 1},
        {"event": "warning", "text": "error: model server returned 500"},
        {"event": "done", "stats": dict.fromkeys(STATS, 0)},
    )
    assert host.of("turn_error") == [("model server returned 500", "api_error")]
    assert not host.of("turn_complete")


def test_edit_review_maps_to_apply_reject_and_edit_decision(m):
    mapping, host, sent, term = m
    mapping.begin_turn("x")
    feed(
        mapping,
        {"event": "tool_start", "name": "write", "args": "{}"},
        {
            "event": "edit_review",
            "id": 2,
            "tool": "write",
            "path": "/p/a.txt",
            "old": "",
            "new": "hi",
            "segments": [{"same": False, "old": [], "new": ["hi"]}],
        },
    )
    ((kind, text, options, detail, _),) = host.of("open_question")
    assert kind == "permission" and "/p/a.txt" in text
    assert [o["label"] for o in options] == ["apply", "reject"] and detail["new"] == "hi"
    mapping.answer("q1", digit="1")
    assert sent[-1] == {"cmd": "edit_decision", "id": 2, "apply": True}
    assert "+hi" in "\n".join(term.display)


def test_edit_review_closed_orphans_the_question(m):
    mapping, host, _, _ = m
    mapping.begin_turn("x")
    feed(
        mapping,
        {
            "event": "edit_review",
            "id": 5,
            "tool": "edit",
            "path": "/p/b",
            "old": "a",
            "new": "b",
            "segments": [],
        },
        {"event": "edit_review_closed", "id": 5},
    )
    assert host.of("close_question") == [("q1", "orphaned")]
    feed(mapping, {"event": "edit_review_closed", "id": 5})  # twice: ignored
    assert len(host.of("close_question")) == 1


def test_plugin_trust_ask_while_idle_survives_turns(m):
    mapping, host, sent, _ = m
    feed(
        mapping,
        {
            "event": "ask",
            "id": 1,
            "question": "Project plugin 'p' declares 1 tool(s) — t. Trust this manifest on this machine?",
            "detail": ["t: ./t"],
            "choices": ["trust", "skip"],
        },
    )
    assert host.of("open_question")[0][0] == "trust"
    assert host.of("set_state")[-1] == ("dialog",) and not mapping.can_accept_input()
    mapping.answer("q1", text="trust")
    assert sent[-1] == {"cmd": "answer", "id": 1, "text": "trust"}
    assert host.of("set_state")[-1] == ("idle",) and host.names()[-1] == "input_ready"


def test_rift_exit_mid_turn_orphans_questions_and_errors_the_turn(m):
    mapping, host, _, term = m
    mapping.begin_turn("x")
    feed(mapping, {"event": "ask", "id": 1, "question": "Q?", "detail": [], "choices": []})
    mapping.on_exit(101)
    assert host.of("close_question") == [("q1", "orphaned")]
    assert host.of("turn_error") == [("rift exited (code 101)", "cli_exited")]
    assert "rift exited (code 101)" in "\n".join(term.display)


def test_metadata_events_and_unknown_events(m):
    mapping, host, _, _ = m
    host.calls.clear()
    feed(
        mapping,
        {"event": "model_changed", "model": "llama3.1:8b", "num_ctx": 8192, "note": ""},
        {"event": "approval_changed", "approve": False},
        {"event": "models", "models": ["a"], "current": "a"},
        {"event": "plan", "items": [{"text": "one", "done": True}]},
        {"event": "brand_new_event", "x": 1},
        {"event": "task_started", "id": 1, "label": "bg"},
        {"event": "info", "text": "compacted: 3 turns"},
    )
    mapping.on_line(b"garbage that is not json")
    info = mapping.info()
    assert info["model"] == "llama3.1:8b" and info["rift"]["num_ctx"] == 8192
    assert info["rift"]["approve"] is False and info["rift"]["plan"] == [{"text": "one", "done": True}]
    assert "compacted: 3 turns" in info["rift"]["notices"]
    assert [c for c in host.calls if c[0] != "turn_thinking"] == []  # none of these touch the turn or state


def test_done_without_our_turn_is_rendered_not_reported(m):
    mapping, host, _, _ = m
    feed(
        mapping,
        {"event": "iteration", "n": 1},
        {"event": "content", "text": "x"},
        {"event": "done", "stats": {}},
    )
    assert not host.of("turn_complete") and not host.of("turn_text")


def test_render_uses_crlf_and_thinking_is_styled():
    assert render.content("a\nb") == b"a\r\nb"
    assert render.thinking("hm").startswith(b"\x1b[2;3m")
    term = Terminal(200, 50)
    term.feed(render.ask("Allow bash: ls", ["allow once", "deny"], []))
    rows = [r.rstrip() for r in term.display if r.strip()]
    assert rows == ["? Allow bash: ls", "  1. allow once", "  2. deny"]


def test_thinking_is_relayed_as_a_one_line_tail(m):
    mapping, host, _, term = m
    mapping.begin_turn("x")
    feed(mapping, {"event": "iteration", "n": 1}, {"event": "thinking", "text": "first\nline"})
    assert host.of("turn_thinking") == [("first line",)]
    feed(mapping, {"event": "thinking", "text": " " + "y" * 500})
    tail = host.of("turn_thinking")[-1][0]
    assert len(tail) == 200 and tail.startswith("…") and tail.endswith("y")
    feed(mapping, {"event": "content", "text": "answer"}, {"event": "done", "stats": {}})
    assert host.of("turn_complete")[0][0] == "answer"  # reasoning never leaks into the reply
    rows = [r.rstrip() for r in term.display]
    assert "answer" in rows  # the reply starts on its own line under the reasoning
