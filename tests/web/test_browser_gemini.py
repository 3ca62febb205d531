"""The web view in headless Chromium against the real Gemini CLI 0.61.0 (the project's mock Gemini API): the
terminal shows Gemini's screen as `dump` has it, a question with a `?` typed in the chat completes with the chat
file's text rendered as markdown, and a shell approval is answered by clicking its button (the command runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from gemini_helpers import make_home, offline_env
from mock_gemini import MockGemini
from web_helpers import (
    ARTIFACTS,
    WebDaemon,
    answer_by_click,
    first_answer,
    kill_from_page,
    open_when_idle,
    send_from_page,
)

from fetch_fixtures import gemini_launcher, gemini_missing

WAIT = 120_000  # ms: the real CLI (Node) on a loaded box


def test_gemini_terminal_chat_and_approval_click(
    web_daemon: WebDaemon, page: Any, gemini_mock: MockGemini, tmp_path: Path
) -> None:
    why = gemini_missing()
    if why:
        pytest.skip(why)
    home = make_home(tmp_path)
    home.trust()
    gemini_mock.push({"label": "qa", "text": "Is it **Paris**? Yes.\n\n- one\n- two"})
    create = {
        "cmd": "create",
        "session": "gm",
        "cli": str(gemini_launcher()),  # the basename picks the Gemini driver
        "working_dir": str(home.cwd),
        "env": offline_env(home, gemini_mock.url),
    }
    ready = web_daemon.request(create, "ready", timeout=180)
    assert ready["event"] == "ready", ready
    log = open_when_idle(page, web_daemon, "gm", WAIT)

    send_from_page(page, "Is the capital of France Paris?")
    assert first_answer(log, WAIT) == ("Paris", ["one", "two"])  # the complete text, rendered as markdown
    assert "Is the capital of France Paris?" in log.locator(".msg.user").first.inner_text()

    gemini_mock.push(
        {
            "label": "call",
            "text": "I'll create the file.",
            "function_call": {
                "name": "run_shell_command",
                "args": {"command": "touch made_in_browser.txt && echo hi-there", "description": "web test"},
            },
        },
        {"label": "after", "text": "Done: the file was created."},
    )
    send_from_page(page, "Please create a file with a shell command.")
    answer_by_click(page, "gm", "Allow once", WAIT)
    log.locator(".msg.assistant.done", has_text="Done: the file was created.").wait_for(timeout=WAIT)
    assert (home.cwd / "made_in_browser.txt").exists()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "gemini-chat.png"))

    kill_from_page(page, "gm", WAIT)
