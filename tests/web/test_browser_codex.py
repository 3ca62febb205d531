"""The web view in headless Chromium against the real Codex CLI 0.169.0 (the project's mock Responses API):
the terminal shows Codex's screen as `dump` has it, a message typed in the chat completes with the rollout's
text rendered as markdown, and an approval question is answered by clicking its button (the command runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codex_env import create_cmd, make_home, require_codex_binary, shell_approval_script
from mock_openai import MockOpenAI
from web_helpers import (
    ARTIFACTS,
    WebDaemon,
    answer_by_click,
    first_answer,
    kill_from_page,
    open_when_idle,
    send_from_page,
)

WAIT = 90_000  # ms: the real CLI on a loaded box


def test_codex_terminal_chat_and_approval_click(
    web_daemon: WebDaemon, page: Any, openai_mock: MockOpenAI, tmp_path: Path
) -> None:
    codex = require_codex_binary()
    home = make_home(tmp_path)
    openai_mock.push({"label": "q1", "text": "The capital of France is **Paris**.\n\n- one\n- two"})
    cmd = {**create_cmd("cx", home, openai_mock), "cli": str(codex)}  # the basename picks the Codex driver
    ready = web_daemon.request(cmd, "ready", timeout=120)
    assert ready["event"] == "ready", ready
    log = open_when_idle(page, web_daemon, "cx", WAIT)

    send_from_page(page, "What is the capital of France?")
    assert first_answer(log, WAIT) == ("Paris", ["one", "two"])  # the complete text, rendered as markdown

    openai_mock.push(*shell_approval_script("touch made_in_browser.txt && echo hi-from-shell"))
    send_from_page(page, "Please create a file with a shell command.")
    question = answer_by_click(page, "cx", "Yes, proceed", WAIT)
    assert question.locator(".reason").inner_text() == "answered"
    log.locator(".msg.assistant.done", has_text="Done: the file was created.").wait_for(timeout=WAIT)
    assert (home.cwd / "made_in_browser.txt").exists()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "codex-chat.png"))

    kill_from_page(page, "cx", WAIT)
