"""The web view in headless Chromium against the real Claude Code 2.1.328 (scripted mock Anthropic API):
the terminal shows Claude's screen as `dump` has it, a message typed in the chat streams and completes as
rendered markdown, a tool permission question is answered by clicking its button, Interrupt ends a streaming
turn, and Kill shows the session dead."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from claude_env import make_home, offline_env, require_claude_binary
from mock_anthropic import MockAnthropic
from web_helpers import (
    ARTIFACTS,
    WebDaemon,
    answer_by_click,
    first_answer,
    kill_from_page,
    open_when_idle,
    send_from_page,
)

pytestmark = pytest.mark.real_claude
WAIT = 90_000  # ms: the real CLI on a loaded box


def test_claude_terminal_chat_markdown_and_permission_click(
    web_daemon: WebDaemon, page: Any, anthropic_mock: MockAnthropic, tmp_path: Path
) -> None:
    claude = require_claude_binary()
    home = make_home(tmp_path)
    anthropic_mock.set_script(
        [
            {"text": "**Paris** is the capital of France.\n\n- one\n- two", "chunk": 4, "delay": 0.05},
            {
                "blocks": [
                    {"type": "text", "text": "Let me check."},
                    {
                        "type": "tool_use",
                        "name": "Bash",
                        "input": {"command": "touch made_in_browser.txt", "description": "Create a file"},
                    },
                ]
            },
            {"text": "Created made_in_browser.txt."},
            {"text": "Counting slowly: " + " ".join(str(i) for i in range(400)), "chunk": 3, "delay": 0.1},
        ]
    )
    ready = web_daemon.request(
        {
            "cmd": "create",
            "session": "cc",
            "cli": str(claude),
            "working_dir": str(home.cwd),
            "env": offline_env(home, anthropic_mock.url),
            "args": ["--permission-mode", "manual"],  # ask before every tool: the page gets a question
        },
        "ready",
        timeout=180,
    )
    assert ready["event"] == "ready", ready
    # the xterm.js rows are Claude's screen as the daemon's own emulator has it
    log = open_when_idle(page, web_daemon, "cc", WAIT)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "claude-terminal.png"))

    send_from_page(page, "What is the capital of France?")
    assert first_answer(log, WAIT) == ("Paris", ["one", "two"])  # the complete text, rendered as markdown
    events = page.evaluate("() => window.litbridge.events.filter(e => e.session === 'cc')")
    kinds = [e["event"] for e in events]
    assert "append" in kinds and kinds.index("append") < kinds.index(
        "complete"
    )  # it streamed first (as deltas)

    send_from_page(page, "Create the file please")
    question = answer_by_click(page, "cc", "Yes", WAIT)
    assert question.locator(".reason").inner_text() == "answered"
    log.locator(".msg.assistant.done", has_text="Created made_in_browser.txt.").wait_for(timeout=WAIT)
    assert log.locator("details.tool summary", has_text="Bash").count() >= 1
    assert (home.cwd / "made_in_browser.txt").exists()
    page.screenshot(path=str(ARTIFACTS / "claude-chat.png"))  # the README's screenshot comes from here

    # a long answer streams; the Interrupt button ends the turn as `interrupted`
    send_from_page(page, "Count slowly")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.chat-log[data-session=\"cc\"] .msg.assistant:not(.done)')]"
        ".some(e => e.textContent.includes('Counting slowly'))",
        timeout=WAIT,
    )
    page.locator("#interrupt").click()
    log.locator(".msg.assistant.interrupted").wait_for(timeout=WAIT)
    assert "Counting slowly" in log.locator(".msg.assistant.interrupted").inner_text()

    # Kill from the page: the session shows dead
    kill_from_page(page, "cc", WAIT)
    log.locator(".msg.notice", has_text="session killed").wait_for(timeout=WAIT)
