"""The newcomer quick start of docs/clients.md, with the real Claude Code 2.1.328 binary against the scripted mock
Anthropic API: `litbridge create` (start-up dialogs answered by the driver), `send`, `chat` answering a tool
permission question inline, `list`, `kill` — all as subprocesses, the way a user types them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _daemon import Daemon
from claude_env import binary_status, make_home, offline_env
from mock_anthropic import MockAnthropic

pytestmark = pytest.mark.real_claude


@pytest.fixture(scope="module")
def claude_bin() -> Path:
    path, reason = binary_status(fetch=False)
    if path is None:
        pytest.skip(f"{reason}; run `python tests/fetch_fixtures.py` first")
    return path


@pytest.fixture
def mock() -> Iterator[MockAnthropic]:
    with MockAnthropic() as m:
        yield m


def test_quick_start(daemon: Daemon, claude_bin: Path, mock: MockAnthropic, tmp_path: Path) -> None:
    home = make_home(tmp_path)  # onboarded only: the trust and API-key dialogs are the driver's job
    env_flags = [f"--env={k}={v}" for k, v in offline_env(home, mock.url).items()]
    mock._script.extend(
        [
            {"text": "Paris is the capital of France."},
            {
                "blocks": [
                    {"type": "text", "text": "Let me check."},
                    {
                        "type": "tool_use",
                        "name": "Bash",
                        "input": {"command": "touch made_by_tool.txt", "description": "Create a file"},
                    },
                ]
            },
            {"text": "Created made_by_tool.txt."},
        ]
    )

    created = daemon.cli(
        "create",
        "work",
        "--cli",
        str(claude_bin),
        "--cwd",
        str(home.cwd),
        *env_flags,
        "--arg=--permission-mode",
        "--arg=manual",  # ask before every tool, so the chat gets a question
        timeout=180,
    )
    assert created.returncode == 0, created.stderr
    assert created.stdout.startswith("work: ready")
    assert "answered a start-up dialog" in created.stderr  # trust / API-key dialogs, handled by the driver

    sent = daemon.cli("send", "work", "What is the capital of France?", timeout=180)
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout == "Paris is the capital of France.\n"
    assert "· idle → thinking" in sent.stderr or "→ responding" in sent.stderr

    chat = daemon.cli("chat", "work", input="Create the file please\n1\n:quit\n", timeout=180)
    assert chat.returncode == 0, chat.stderr
    assert "? [permission]" in chat.stderr, chat.stderr
    assert "1. Yes" in chat.stderr
    assert "question answered" in chat.stderr
    assert "⏺ Bash(touch made_by_tool.txt)" in chat.stderr
    assert chat.stdout.strip().endswith("Created made_by_tool.txt.")
    assert (home.cwd / "made_by_tool.txt").exists()

    listed = daemon.cli("list")
    row = next(line.split() for line in listed.stdout.splitlines() if line.startswith("work "))
    assert row[1] == "idle"
    killed = daemon.cli("kill", "work")
    assert killed.returncode == 0 and killed.stdout.startswith("work: killed")
