"""The Qwen Code 0.24.4 recordings (tests/fixtures/captures/qwen, made by its record.py): `litbridge replay`
through the real Session + Qwen driver gives each turn exactly one terminal event with the record's content,
every event valid against the protocol schema; the rules read the recorded screens (rendered by litbridge's own
terminal: the recorder's pyte renderings drop the text after Qwen's `●︎` marks) and the chat parser the
recorded chat files."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from lbd_helpers import TurnOrder, check_event

from litbridge.drivers.qwen.chats import QwenChatTurns
from litbridge.drivers.qwen.v0_24 import Rules
from litbridge.replay import Capture, replay
from litbridge.term import Terminal

CAPTURES = Path(__file__).resolve().parents[2] / "fixtures" / "captures" / "qwen"
TERMINAL = ("complete", "interrupted", "turn_error")
ANSWER = "Line one? Yes: 你好 🎉\n\n- two\n- three?"

EXPECTED = {
    "qwen_answer": [("complete", ANSWER), ("complete", "2 + 2 = 4.")],
    "qwen_approval": [
        ("complete", "I'll create the file.\n\nDone: the file was created."),
        ("interrupted", ""),  # the tool call denied with `4`: the CLI stops the turn
    ],
    "qwen_interrupt_error": [
        ("interrupted", None),  # Esc mid-stream: the partial answer
        ("turn_error", None),  # HTTP 400: not retried
        ("complete", "Still alive."),
    ],
}


def load(name: str) -> Capture:
    return Capture.load(CAPTURES / name)


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
    asked = {e["question_id"] for e in events if e["event"] == "question"}
    assert asked == {e["question_id"] for e in events if e["event"] == "question_closed"}
    assert next(e for e in events if e["event"] == "ready")["resumed"] is False
    assert events[-1]["event"] == "exited"


def test_replay_interrupt_keeps_the_partial_answer_and_the_error_says_what_failed() -> None:
    ends = [e for e in replay(load("qwen_interrupt_error"), fast=True) if e["event"] in TERMINAL]
    assert ends[0]["content"].startswith("word0 word1 word2")
    assert ends[1]["kind"] == "api_error" and "400" in ends[1]["message"]


def test_replay_approval_question_carries_the_command() -> None:
    events = replay(load("qwen_approval"), fast=True)
    q = [e for e in events if e["event"] == "question"]
    assert [e["kind"] for e in q] == ["permission", "permission"]
    assert q[0]["text"] == "Allow execution of: 'touch'?"
    assert [o["digit"] for o in q[0]["options"]] == ["1", "2", "3", "4"]
    assert q[0]["options"][0] == {"digit": "1", "label": "Yes, allow once", "selected": True}
    assert q[0]["options"][3]["label"] == "No, suggest changes (esc)"
    assert (
        q[0]["detail"]
        == "Shell touch made.txt && echo hi-there (test approvals)\ntouch made.txt && echo hi-there"
    )
    uses = [e for e in events if e["event"] == "tool_use"]
    results = [e for e in events if e["event"] == "tool_result"]
    assert [u["name"] for u in uses] == ["run_shell_command"] * 2
    assert "hi-there" in results[0]["content"] and not results[0]["is_error"]
    assert results[1]["is_error"] and "did not allow" in results[1]["content"]


# ----------------------------------------------------------------------------------------- screens
def screen_before(name: str, label: str) -> tuple[list[str], str]:
    """The screen and title just before the recording typed the key labelled `label`."""
    folder = CAPTURES / name
    keys = [json.loads(x) for x in (folder / "keys.jsonl").read_text().splitlines() if x.strip()]
    t = next(k["t"] for k in keys if k["label"] == label)
    term = Terminal(200, 50)
    for line in (folder / "chunks.jsonl").read_text().splitlines():
        c = json.loads(line)
        if c["t"] >= t:
            break
        term.feed(base64.b64decode(c["b64"]))
    return list(term.display), term.title


def test_rules_ready_screen_and_title() -> None:
    rows, title = screen_before("qwen_answer", "q1")
    rules = Rules()
    reading = rules.read(rows, title)
    assert reading.state == "idle" and reading.draft == "" and reading.live_prompt
    assert reading.version == "0.24.4"
    assert rules.title_state(title) == rules.TITLE_READY
    assert rules.footer_model(rows) == "mock"


def test_rules_approval_dialog_and_its_keys() -> None:
    rows, title = screen_before("qwen_approval", "q1:answer")
    rules = Rules()
    reading = rules.read(rows, title)
    assert rules.title_state(title) == rules.TITLE_ACTION  # `✳︎ Qwen - proj`
    assert reading.state == "dialog"
    d = reading.dialog
    assert d.kind == "permission" and d.text == "Allow execution of: 'touch'?"
    assert [o.digit for o in d.options] == ["1", "2", "3", "4"] and d.options[0].selected
    assert rules.dialog_keys(d, 3) == ["4"]  # Qwen picks an option by its digit at once


def test_rules_busy_then_cancelled_prompt_put_back() -> None:
    rules = Rules()
    rows, title = screen_before("qwen_interrupt_error", "q1:interrupt")
    busy = rules.read(rows, title)
    assert busy.state == "busy" and "esc to cancel" in (busy.spinner or "")
    assert rules.title_state(title) == rules.TITLE_WORKING
    start = rules.find_prompt(rows, "Say many words")
    assert rules.extract_response(rows, start).startswith("word0 word1")
    rows, title = screen_before("qwen_interrupt_error", "clear")
    after = rules.read(rows, title)
    assert after.state == "idle" and after.draft == "Say many words"  # put back, without its zero-width space
    assert rules.cancelled_after(rows, rules.find_prompt(rows, "Say many words"))


def test_rules_api_error_line() -> None:
    rows, _title = screen_before("qwen_interrupt_error", "q3:text")
    rules = Rules()
    start = rules.find_prompt(rows, "this request fails")
    assert rules.error_lines(rows, start) == ["[API Error: 400 mock error 400] (Press Ctrl+Y to retry)"]


def test_rules_initializing_is_not_ready() -> None:
    rules = Rules()
    rule = "─" * 200
    rows = ["  ⠏ Initializing...", rule, ">   Type your message or @path/to/file", rule, "  ➜ proj · mock"]
    assert rules.classify(rows).state == "other"
    assert rules.classify(rows[1:]).state == "idle"


PROVIDER_SCREEN = """\
  ●︎ Extensions changed on disk. Run /reload-plugins to apply updates.
  ┌──────────────────────────────────────────────────────────────────┐
  │                                                                  │
  │ Connect a Provider                                               │
  │                                                                  │
  │ › Alibaba ModelStudio                                            │
  │   Official recommended setup: Coding Plan, Token Plan, or Standa │
  │                                                                  │
  │   Third-party Providers                                          │
  │   Choose a built-in provider and connect with an API key         │
  │                                                                  │
  │   Custom Provider                                                │
  │   Manually connect a local server, proxy, or unsupported provide │
  │                                                                  │
  │ ──────────────────────────────────────────────────               │
  │                                                                  │
  │ Terms of Services and Privacy Notice:                            │
  └──────────────────────────────────────────────────────────────────┘"""


def test_rules_provider_screen_is_a_dialog_the_launch_refuses() -> None:
    """No provider configured: Qwen shows a form for API keys, which nobody here can fill in (seen live, its
    rows cut to width here)."""
    reading = Rules().classify(PROVIDER_SCREEN.split("\n"))
    assert reading.state == "dialog"
    d = reading.dialog
    assert d.kind == "provider" and d.text == "Connect a Provider"
    assert [(o.digit, o.label, o.selected) for o in d.options] == [
        ("1", "Alibaba ModelStudio", True),
        ("2", "Third-party Providers", False),
        ("3", "Custom Provider", False),
    ]


# ----------------------------------------------------------------------------------------- the record
def chat_lines(name: str) -> list[dict]:
    (path,) = (CAPTURES / name / "transcripts").rglob("*.jsonl")
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_chat_parser_on_the_recorded_tool_turns() -> None:
    turns = QwenChatTurns()
    events = turns.feed(chat_lines("qwen_approval"))
    kinds = [e.kind for e in events]
    assert kinds.count("prompt") == 2
    assert kinds[: kinds.index("prompt", 1)] == [
        "prompt",
        "text",
        "tool_use",
        "tool_result",
        "text",
        "answer",
    ]
    answer = next(e for e in events if e.kind == "answer")
    assert answer.text == "I'll create the file.\n\nDone: the file was created."
    assert answer.data["usage"]["input_tokens"] > 0
    assert turns.cancelled and turns.pending is None  # the denied call ends the record


def test_chat_parser_api_error_is_the_turns_own_and_background_work_is_not_an_answer() -> None:
    turns = QwenChatTurns()
    lines = chat_lines("qwen_interrupt_error")
    prompts = [i for i, x in enumerate(lines) if x.get("type") == "user"]
    turns.feed(lines[: prompts[2]])  # through the failed turn
    assert turns.prompt == "this request fails"
    assert turns.error is not None and "400" in turns.error.text and turns.pending is None
    events = turns.feed(lines[prompts[2] :])
    assert turns.error is None and [e.text for e in events if e.kind == "answer"] == ["Still alive."]
    # memory extraction after a turn is telemetry of another prompt id: never an error or an answer
    background = [
        x for x in lines if "managed-auto-memory" in json.dumps(x) and x.get("subtype") == "ui_telemetry"
    ]
    assert background
    assert not [e for e in turns.feed(background) if e.kind in ("answer", "text")] and turns.error is None
