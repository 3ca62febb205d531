"""The Codex 0.169 screen/title/OSC rules (`v0_169.Rules`), pure, on the recorded screens (tests/fixtures/captures/codex)."""

from __future__ import annotations

import base64
import re

import orjson
import pytest
from codex_env import FIXTURES

from litbridge.drivers.codex import v0_169

rules = v0_169.Rules()


def screen(capture: str, name: str) -> list[str]:
    rows = (FIXTURES / capture / "screens" / name).read_text(encoding="utf-8").split("\n")
    return (rows + [""] * 50)[:50]


def test_idle_screen_has_a_composer_and_the_version() -> None:
    s = rules.classify(screen("codex_plain_qa", "01_idle_start.txt"))
    assert s.state == "idle" and s.dialog is None
    assert s.composer == 46 and s.version == "0.169.0"


def test_busy_before_the_first_token_is_the_working_row() -> None:
    s = rules.classify(screen("codex_plain_qa", "02_q1_busy.txt"))
    assert s.state == "busy" and s.busy_row == "• Working (0s • esc to interrupt)"
    assert s.composer == 46  # the composer stays on screen during a turn: not evidence of idle by itself


def test_streaming_text_has_no_working_row() -> None:
    """Reference §0.4: the Working row is removed while text streams, so the screen reads idle: the driver
    must not believe it alone (OSC 7501 / the title spinner say busy)."""
    rows = screen("codex_interrupt", "01_streaming_1.txt")
    assert rules.classify(rows).state == "idle"
    start = rules.find_prompt(rows, "first slow answer please", rules.composer_row(rows))
    text = rules.extract_response(rows, start, rules.composer_row(rows))
    assert text.startswith("word0 word1 word2") and "Working" not in text


def test_completed_answer_is_extracted_without_the_completion_line() -> None:
    rows = screen("codex_plain_qa", "03_q1_done.txt")
    comp = rules.composer_row(rows)
    start = rules.find_prompt(rows, "What is the capital of France?", comp)
    assert start == 5
    assert rules.extract_response(rows, start, comp) == "The capital of France is Paris."


@pytest.mark.parametrize("capture", ["codex_tool_approval", "codex_tool_approval_fn"])
def test_approval_dialog(capture: str) -> None:
    s = rules.classify(screen(capture, "01_approval_1.txt"))
    assert s.state == "dialog"
    d = s.dialog
    assert d is not None and d.kind == "permission"
    assert d.text == "Would you like to run the following command?"
    assert [o.digit for o in d.options] == ["1", "2", "3"]
    assert d.options[0].label == "Yes, proceed (y)" and d.options[0].selected
    assert d.fields == {
        "environment": "local",
        "reason": "Create a file to test approvals",
        "command": "touch created_by_codex.txt && echo hi-from-shell",
    }
    assert rules.answer_keys(d, 0) == ["y"]
    assert rules.answer_keys(d, 1) == ["p"]
    assert rules.answer_keys(d, 2) == ["Esc"]
    assert d.find(label="no") == 2 and d.find(digit=2) == 1 and d.find(digit="9") is None


def test_rejected_approval_screen_is_idle() -> None:
    s = rules.classify(screen("codex_tool_approval", "05_after_esc.txt"))
    assert s.state == "idle" and s.dialog is None


def test_trust_dialog_is_accepted_with_enter() -> None:
    d = rules.parse_dialog(screen("codex_first_start", "02_trust_dialog_quiet.txt"))
    assert d is not None and d.kind == "trust"
    assert d.fields == {"folder": "/home/dev/work/first_start"}
    idx = d.find(label=rules.STARTUP_ACCEPT["trust"])
    assert idx == 0 and rules.answer_keys(d, idx) == ["Enter"]


def test_migration_dialog_keeps_the_model() -> None:
    """Enter on the default would silently switch models (reference §11): the driver picks option 2."""
    d = rules.parse_dialog(screen("codex_migration_dialog", "02_migration_dialog_quiet.txt"))
    assert d is not None and d.kind == "model_migration" and d.text == "Meet GPT-6 Sol"
    idx = d.find(label=rules.STARTUP_ACCEPT["model_migration"])
    assert idx == 1 and rules.answer_keys(d, idx) == ["Down", "Enter"]


def test_login_screen_is_recognised() -> None:
    rows = screen("codex_first_start_noconfig", "07_settled.txt")
    d = rules.parse_dialog(rows)
    assert d is not None and d.kind == "login"
    assert d.options[0].label == "Sign in with ChatGPT" and d.options[0].selected
    assert "codex login" in rules.LOGIN_HELP


def test_title_spinner_and_action_required() -> None:
    assert rules.title_busy("⠧ plain_qa") and not rules.title_busy("plain_qa") and not rules.title_busy("")
    assert rules.title_action_required("[ ! ] Action Required | tool_approval")
    assert not rules.title_action_required("tool_approval")


def test_every_recorded_title_and_osc_report_is_understood() -> None:
    """The classifier's view of each recorded title / OSC 7501 report matches what the recording says."""
    seen_states = set()
    for capture in ("codex_plain_qa", "codex_tool_approval", "codex_interrupt", "codex_api_error"):
        for line in (FIXTURES / capture / "states.jsonl").read_bytes().splitlines():
            rec = orjson.loads(line)
            if rec.get("title"):
                busy = rec["title"][0] in "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
                assert rules.title_busy(rec["title"]) == busy
        stream = b"".join(
            base64.b64decode(orjson.loads(c)["b64"])
            for c in (FIXTURES / capture / "chunks.jsonl").read_bytes().splitlines()
        )
        for payload in re.findall(rb"\x1b\]7501;([^\x07\x1b]*)", stream):
            parts = dict(p.split("=", 1) for p in payload.decode().split(":") if "=" in p)
            state, kind = rules.osc_state(parts)
            assert state in ("idle", "working", "blocked", "done", "error", "clear"), payload
            if state == "blocked":
                assert kind == "permission"
            seen_states.add(state)
    assert seen_states == {"idle", "working", "blocked", "done", "error", "clear"}


def test_a_later_version_overrides_one_marker() -> None:
    """The extension point: a subclass changing one marker reads frames edited to use it, nothing else changes."""

    class Later(v0_169.Rules):
        PLACEHOLDER = "Ask Codex anything"

    rows = screen("codex_plain_qa", "01_idle_start.txt")
    rows[46] = "› Ask Codex anything"
    assert Later().classify(rows).draft == ""
    assert rules.classify(rows).draft == "Ask Codex anything"
    assert Later().classify(screen("codex_tool_approval", "01_approval_1.txt")).dialog.kind == "permission"
