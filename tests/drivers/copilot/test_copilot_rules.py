"""Copilot CLI 1.0 rules on the screens of the real 1.0.102 recordings (tests/fixtures/captures/copilot/)."""

from __future__ import annotations

from pathlib import Path

from fetch_fixtures import COPILOT_CAPTURES
from litbridge.drivers.copilot.v1_0 import Rules

RULES = Rules()


def screen(capture: str, name: str) -> list[str]:
    return (COPILOT_CAPTURES / capture / "screens" / f"{name}.txt").read_text(encoding="utf-8").split("\n")


def test_trust_dialog() -> None:
    r = RULES.classify(screen("copilot_first_start_qa", "01_trust"))
    assert r.state == "dialog" and r.version == "1.0.102"
    d = r.dialog
    assert d is not None and d.kind == "trust" and RULES.question_kind(d) == "trust"
    assert d.text == "Do you trust the files in this folder?"
    assert [(o.digit, o.selected) for o in d.options] == [("1", True), ("2", False), ("3", False)]
    assert [o.label for o in d.options] == [
        "Yes",
        "Yes, and remember this folder for future sessions",
        "No (Esc)",
    ]
    assert d.fields["folder"].endswith("/work")
    assert d.find(label=RULES.STARTUP_ACCEPT["trust"]) == 0  # "Yes": this run only
    assert RULES.dialog_keys(d, 0) == ["Enter"] and RULES.dialog_keys(d, 1) == ["Down", "Enter"]


def test_idle_and_busy() -> None:
    idle = RULES.classify(screen("copilot_first_start_qa", "02_idle"))
    assert (idle.state, idle.live_prompt, idle.draft, idle.spinner) == ("idle", True, "", None)
    assert RULES.footer_model(screen("copilot_first_start_qa", "02_idle")) == "mock-model"
    busy = RULES.classify(screen("copilot_first_start_qa", "03_busy"))
    assert busy.state == "busy" and busy.live_prompt  # the input stays live: a message typed now is queued
    assert busy.spinner is not None and busy.spinner.endswith("esc esc edit prompt")


def test_answer_as_drawn_below_a_multi_line_prompt() -> None:
    rows = screen("copilot_first_start_qa", "04_answer")
    start = RULES.find_prompt(rows, "Say it?\nTwo lines 日本 🎉")
    assert start is not None and rows[start].startswith(" ❯ Say it?")
    assert RULES.extract_response(rows, start) == (
        "Line one?\n二行目は日本語です 🎉\n\n• a list item\n\nDone? Yes! 👍"
    )


def test_permission_dialog_detail_and_keys() -> None:
    r = RULES.classify(screen("copilot_tool_approval", "01_permission"))
    d = r.dialog
    assert r.state == "dialog" and d is not None and d.kind == "permission"
    assert RULES.question_kind(d) == "permission"
    assert d.text == "Do you want to run this command?"
    assert d.fields == {"intention": "write a marker", "command": "echo ran > approved.txt"}
    assert d.wire_detail() == d.fields
    assert [o.label for o in d.options] == [
        "Yes",
        "No, and tell Copilot what to do differently (Esc to stop)",
    ]
    assert RULES.dialog_keys(d, 0) == ["Enter"]
    assert RULES.dialog_keys(d, 1) == ["Esc"]  # Enter on that row waits for typed feedback
    moved = RULES.classify(screen("copilot_tool_approval", "03_deny_selected")).dialog
    assert moved is not None and moved.selected_index() == 1
    assert moved.fields["command"] == "echo no > denied.txt"


def test_no_dialog_after_the_approval_and_the_answer_after_a_tool() -> None:
    rows = screen("copilot_tool_approval", "02_approved")
    r = RULES.classify(rows)
    assert r.state == "idle" and r.dialog is None
    start = RULES.find_prompt(rows, "Write the marker file.")
    assert RULES.extract_response(rows, start) == "Written."


def test_scrollbar_column_is_ignored() -> None:
    rows = screen("copilot_first_start_qa", "02_idle")
    with_bar = [r.ljust(199)[:199] + "┃" for r in rows]
    assert RULES.classify(with_bar).state == "idle"


def test_captures_folder_is_the_repository_copy() -> None:
    assert isinstance(COPILOT_CAPTURES, Path) and (COPILOT_CAPTURES / "copilot_first_start_qa").is_dir()


def test_busy_spinner_without_the_byte_counter_and_the_streamed_text() -> None:
    """The footer's `· 28 B` changes with every chunk: left out, `thinking` is relayed once per real change."""
    rows = screen("copilot_interrupt_error", "01_streaming")
    r = RULES.classify(rows)
    assert r.state == "busy" and r.spinner == "◎ Working esc esc interrupt"
    start = RULES.find_prompt(rows, "Tell me a long story.")
    assert RULES.extract_response(rows, start).startswith("Once upon a time")


def test_after_an_interrupt_and_an_api_error_the_status_rows_are_no_answer() -> None:
    rows = screen("copilot_interrupt_error", "03_error")
    assert RULES.classify(rows).state == "idle"
    assert RULES.extract_response(rows, RULES.find_prompt(rows, "This one fails.")) == ""
    rows = screen("copilot_interrupt_error", "02_interrupted")
    text = RULES.extract_response(rows, RULES.find_prompt(rows, "Tell me a long story."))
    assert text.startswith("Once upon a time") and "Operation cancelled" not in text


def _pane(name: str) -> list[str]:
    """A screen saved from a 200x50 tmux pane running the real 1.0.102 binary (screens/, see the README)."""
    rows = (COPILOT_CAPTURES / "screens" / f"{name}.txt").read_text(encoding="utf-8").split("\n")
    return (rows + [""] * 50)[:50]


def test_file_create_approval_names_the_path_and_the_preview() -> None:
    d = RULES.classify(_pane("create_file_permission")).dialog
    assert d is not None and d.kind == "permission"
    assert d.text.startswith("Do you want to create /") and d.text.endswith("/work/new.txt?")
    assert d.fields["intention"] == "Create file"
    assert d.fields["path"].endswith("/work/new.txt")
    assert d.fields["preview"].startswith("new.txt +2 -0") and "hello" in d.fields["preview"]
    assert "command" not in d.fields
    assert [o.digit for o in d.options] == ["1", "2", "3"]
    assert d.options[1].label.startswith("Yes, and don't ask again for file operations")
    assert RULES.dialog_keys(d, 1) == ["Down", "Enter"] and RULES.dialog_keys(d, 2) == ["Esc"]


def test_ask_user_form_is_a_choice_with_numbered_options() -> None:
    r = RULES.classify(_pane("ask_user_form"))
    d = r.dialog
    assert r.state == "dialog" and d is not None and d.kind == "ask_user"
    assert RULES.question_kind(d) == "choice"
    assert d.text == "Which color do you like?" and d.fields == {"field": "color"}
    assert [(o.digit, o.label, o.selected) for o in d.options] == [
        ("1", "red", True),
        ("2", "blue", False),
        ("3", "Other (type your answer)", False),
    ]
    assert RULES.dialog_keys(d, 1) == ["Down", "Enter"]


def test_finished_tool_items_are_no_answer_text() -> None:
    rows = [
        " ❯ create it" + " " * 150 + "11:09",
        "",
        " ● Create new.txt +2" + " " * 160 + "8s",
        "",
        " ● Created.",
    ]
    rows += [""] * 3 + [" ~/work", "─" * 200, "❯", "─" * 200, " ← open sidebar · Interactive"]
    assert RULES.extract_response(rows, 0) == "Created."
