"""The 0.61 title and screen rules (`v0_61.Rules`, pure methods) on screens of the real CLI's recordings."""

from __future__ import annotations

import pytest
from gemini_helpers import CAPTURES, FIXTURES

from litbridge.drivers.gemini import v0_61
from litbridge.drivers.gemini.versions import rules_for

SCREENS = FIXTURES / "screens"
R = v0_61.Rules()


def rows(name: str) -> list[str]:
    lines = (SCREENS / f"{name}.txt").read_text(encoding="utf-8").split("\n")
    return (lines + [""] * 50)[:50]


@pytest.mark.parametrize(
    ("title", "state"),
    [
        ("◇  Ready (plain_qa)" + " " * 58, "ready"),
        ("✦  Working… (tool_approval)" + " " * 50, "working"),
        ("✋  Action Required (tool_approval)", "action"),
        ("", None),
        ("bash", None),
    ],
)
def test_title_state(title: str, state: str | None) -> None:
    assert R.title_state(title) == state


@pytest.mark.parametrize(
    ("screen", "state", "draft"),
    [
        ("gemini_plain_qa__02_q1_busy", "busy", ""),
        ("gemini_plain_qa__03_q1_done", "idle", ""),
        ("gemini_interrupt__01_streaming_1", "busy", ""),
        ("gemini_interrupt__05_after_ctrl_c", "idle", ""),
        (
            "gemini_first_start__03_restarting",
            "other",
            "",
        ),  # the old dialog above the restart note is history
        ("gemini_first_start__04_idle", "idle", ""),  # ... and stays on screen above the new input box
        ("gemini_input__05_long_paste_before_enter", "idle", "[Pasted Text: 60 lines]"),
        ("gemini_question_mark__05_pasted_typed", "idle", "Third question?"),
        ("gemini_api_error__06_streamerr_done", "idle", ""),
        ("gemini_tool_approval__05_after_esc", "idle", ""),
    ],
)
def test_classify_states(screen: str, state: str, draft: str) -> None:
    cls = R.classify(rows(screen))
    assert (cls.state, cls.draft) == (state, draft)
    assert cls.dialog is None
    assert cls.live_prompt == (state in ("idle", "busy"))
    assert cls.version == ("0.61.0" if "Gemini CLI v0.61.0" in "\n".join(rows(screen)[:12]) else None)


def test_busy_spinner_and_seconds() -> None:
    cls = R.classify(rows("gemini_plain_qa__02_q1_busy"))
    assert cls.spinner == "⠋ Thinking... (esc to cancel, 0s)"
    assert cls.spinner_seconds == 0


def test_trust_dialog() -> None:
    cls = R.classify(rows("gemini_first_start__02_trust_dialog_quiet"))
    assert cls.state == "dialog"
    d = cls.dialog
    assert (d.kind, d.question_kind, d.text) == ("trust", "trust", "Do you trust the files in this folder?")
    assert [(o.digit, o.label, o.selected) for o in d.options] == [
        ("1", "Trust folder (first_start)", True),
        ("2", "Trust parent folder (work)", False),
        ("3", "Don't trust", False),
    ]
    assert d.find(label=R.STARTUP_ACCEPT["trust"]) == 0
    assert R.dialog_keys(d, 0) == ["Enter"]
    assert R.dialog_keys(d, 2) == ["Down", "Down", "Enter"]


def test_approval_dialog() -> None:
    cls = R.classify(rows("gemini_tool_approval__01_approval_1"))
    d = cls.dialog
    assert cls.state == "dialog" and d.kind == "permission" and d.question_kind == "permission"
    assert d.text == "Allow execution of [Shell]?"
    assert [o.label for o in d.options] == [
        "Allow once",
        "Allow for this session",
        "No, suggest changes (esc)",
    ]
    assert d.detail == (
        "Shell  touch created_by_gemini.txt && echo hi-from-shell\ntouch created_by_gemini.txt && echo hi-from-shell"
    )
    assert R.dialog_keys(d, 2) == ["Esc"]  # the option's own key
    assert R.dialog_keys(d, 1) == ["Down", "Enter"]
    # the title says Action Required while it is open; the reading is the dialog
    assert R.combined_state(cls, R.TITLE_ACTION) == "dialog"


def test_auth_dialog_is_a_choice() -> None:
    d = R.classify(rows("gemini_first_start_noconfig__10_auth_dialog")).dialog
    assert d is not None and d.kind == "auth" and d.question_kind == "choice"
    assert [o.label for o in d.options] == ["Sign in with Google", "Use Gemini API Key", "Vertex AI"]
    assert d.options[1].selected
    assert "auth" not in R.STARTUP_ACCEPT  # relayed to the client, never answered by the driver


def test_combined_state_title_leads_an_idle_looking_screen() -> None:
    idle = R.classify(rows("gemini_plain_qa__03_q1_done"))
    assert R.combined_state(idle, R.TITLE_READY) == "idle"
    assert R.combined_state(idle, None) == "idle"
    assert R.combined_state(idle, R.TITLE_WORKING) == "busy"  # request sent, spinner not drawn yet
    assert R.combined_state(idle, R.TITLE_ACTION) == "other"  # a dialog we could not parse


def test_response_extraction() -> None:
    r = rows("gemini_plain_qa__03_q1_done")
    start = R.find_prompt(r, "What is the capital of France")
    assert start is not None
    assert R.extract_response(r, start) == "The capital of France is Paris."  # as rendered (** removed)


def test_response_while_streaming_excludes_the_spinner() -> None:
    r = rows("gemini_interrupt__01_streaming_1")
    text = R.extract_response(r, R.find_prompt(r, "first slow answer please"))
    assert text.startswith("word0 word1 word2") and "esc to cancel" not in text


def test_long_markdown_rendering() -> None:
    r = rows("gemini_long_markdown__02_done")
    text = R.extract_response(r, R.find_prompt(r, None))
    assert "Thinking" not in text and "Type your message" not in text
    assert text.strip()


def test_error_lines_and_status_excerpt() -> None:
    r = rows("gemini_api_error__06_streamerr_done")
    assert R.error_lines(r) == ["Model stream ended without a finish reason."]
    busy = rows("gemini_plain_qa__02_q1_busy")
    assert "Thinking... (esc to cancel, 0s)" in R.status_excerpt(busy)


def test_rules_for_versions() -> None:
    assert rules_for("0.61.0") is v0_61.Rules
    assert rules_for(None) is v0_61.Rules  # before the header shows: the newest validated rules
    assert rules_for("9.9.9") is v0_61.Rules


def test_every_recorded_screen_classifies_without_error() -> None:
    """Robustness: the rules never raise on any recorded screen: the in-repo ones, plus each recording's screens
    when $LITBRIDGE_GEMINI_CAPTURES names the full set (the in-repo copy keeps none). Nothing outside the
    repository is read unless that variable says so."""
    files = sorted(CAPTURES.glob("gemini_*/screens/*.txt")) + sorted(SCREENS.glob("*.txt"))
    assert files
    for f in files:
        lines = (f.read_text(encoding="utf-8").split("\n") + [""] * 50)[:50]
        cls = R.classify(lines)
        assert cls.state in ("blank", "idle", "busy", "dialog", "other"), f


LOOP_DIALOG = [
    " > Write a long markdown report",
    "✦ Report",
    " ╭" + "─" * 196 + "╮",
    " │ ?  A potential loop was detected" + " " * 150 + "│",
    " │" + " " * 196 + "│",
    " │ This can happen due to repetitive tool calls or other model behavior. Do you want to keep loop detection "
    "enabled or disable it for this session?  │",
    " │" + " " * 196 + "│",
    " │ ● 1. Keep loop detection enabled (esc)" + " " * 150 + "│",
    " │   2. Disable loop detection for this session" + " " * 140 + "│",
    " ╰" + "─" * 196 + "╯",
]


def test_loop_detection_dialog_seen_live() -> None:
    """The dialog the real CLI showed on a repetitive mock answer (an early run of the long-markdown e2e test)."""
    cls = R.classify(LOOP_DIALOG + [""] * 40)
    d = cls.dialog
    assert cls.state == "dialog" and d.kind == "loop_detection" and d.question_kind == "choice"
    assert d.text == "A potential loop was detected"
    assert [o.label for o in d.options] == [
        "Keep loop detection enabled (esc)",
        "Disable loop detection for this session",
    ]
    assert R.dialog_keys(d, 0) == ["Esc"] and R.dialog_keys(d, 1) == ["Down", "Enter"]


@pytest.mark.parametrize(
    ("live", "expected"), [("", "Thinking... (esc to cancel, 0s)"), ("⠋ Retrying", "Retrying")]
)
def test_a_timeout_names_what_the_cli_showed(
    monkeypatch: pytest.MonkeyPatch, live: str, expected: str
) -> None:
    """The turn deadline's `detail`: the live area as it is, or, read between the reads of a repaint (blank for
    a moment), the spinner of the last settled screen."""
    from types import SimpleNamespace

    from litbridge.drivers.engine import TurnEngine
    from litbridge.drivers.gemini.driver import _Engine

    details: list[str | None] = []
    monkeypatch.setattr(
        TurnEngine, "failed", lambda self, message, kind="api_error", detail=None: details.append(detail)
    )
    engine = object.__new__(_Engine)
    engine.turns = SimpleNamespace(current=SimpleNamespace(phase="running"))
    engine._hooks = SimpleNamespace(shown=lambda: live)
    engine.screen = R.classify(rows("gemini_plain_qa__02_q1_busy"))
    _Engine.failed(engine, "the turn did not end within 12s", "timeout")
    assert details and expected in (details[0] or "")
