"""Helpers of the Qwen Code driver tests: a private HOME whose `~/.qwen/settings.json` points the CLI at the
shared chat-completions mock (tests/fakes/mock_chat.py), the daemon, and a client (lbd_helpers.EventClient).

Qwen Code needs Node >= 22: the session's PATH starts with the fetched Node 22 (`fetch_fixtures.node22_bin()`),
then the folder of the `qwen` launcher. Qwen's background requests (memory extraction after a turn, follow-up
suggestions) are answered by the mock on the side, never from the script.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lbd_helpers import EventClient, ServeDaemon
from mock_chat import SIDE_MARKERS, MockChat

from fetch_fixtures import node22_bin, qwen_launcher

TERMINAL = ("complete", "interrupted", "turn_error")
QWEN_SIDE_MARKERS = (
    *SIDE_MARKERS,
    "managed memory extraction subagent",  # the memory extraction after a turn (its system prompt)
    "[suggestion mode:",  # a follow-up suggestion for the input box (its user prompt)
)


def qwen_mock(script: list[dict[str, Any]] | None = None) -> MockChat:
    return MockChat(script or [], side_markers=QWEN_SIDE_MARKERS, side_text="")


@dataclass
class QwenHome:
    home: Path
    cwd: Path

    @property
    def dot(self) -> Path:
        return self.home / ".qwen"

    def chat_files(self) -> list[Path]:
        return sorted(self.dot.glob("projects/*/chats/*.jsonl"))

    def configure(self, mock_url: str, folder_trust: bool = False) -> None:
        """The user's own settings: the mock as an OpenAI provider (the driver reads them, never writes them);
        `folder_trust` turns Qwen's folder trust on (its trust dialog at start)."""
        self.dot.mkdir(parents=True, exist_ok=True)
        settings = {
            "modelProviders": {
                "openai": [
                    {"id": "mock-model", "name": "mock", "baseUrl": mock_url, "envKey": "MOCK_API_KEY"}
                ]
            },
            "env": {"MOCK_API_KEY": "dummy"},
            "security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": folder_trust}},
            "model": {"name": "mock-model"},
            "privacy": {"usageStatisticsEnabled": False},
        }
        (self.dot / "settings.json").write_text(json.dumps(settings, indent=2))


def make_home(base: Path, name: str = "proj") -> QwenHome:
    home = base / "home"
    cwd = home / "work" / name
    cwd.mkdir(parents=True)
    (cwd / "README.md").write_text("A test project.\n")
    return QwenHome(home, cwd)


def session_path() -> str:
    return f"{node22_bin()}:{qwen_launcher().parent}:/usr/local/bin:/usr/bin:/bin"


def create_cmd(key: str, home: QwenHome, **extra: Any) -> dict[str, Any]:
    env = {"HOME": str(home.home), "PATH": session_path(), **extra.pop("env", {})}
    return {"cmd": "create", "session": key, "cli": "qwen", "working_dir": str(home.cwd), "env": env, **extra}


class Daemon(ServeDaemon):
    """The daemon (lbd_helpers.ServeDaemon) started as from a CI job (`CI=true`): the driver keeps it from the
    child, whose PATH is the session's own (`create_cmd`)."""

    def __init__(self, base: Path) -> None:
        super().__init__(
            base,
            ("LANG", "LC_ALL", "USER", "TMPDIR", "LITBRIDGE_NO_EXTENSIONS"),
            PATH="/usr/local/bin:/usr/bin:/bin",
            CI="true",
        )


class LBClient(EventClient):
    EVENT_TIMEOUT = 120.0  # a Qwen turn on a busy 2-core machine: generous


def check_invariants(lb: LBClient, key: str) -> None:
    """One terminal event per accepted turn; every question closed."""
    events = lb.since(key, 0)
    turns = [e["turn_id"] for e in events if e["event"] == "accepted"]
    ends = [e["turn_id"] for e in events if e["event"] in TERMINAL]
    assert sorted(ends) == sorted(turns), f"terminal events {ends} for turns {turns}"
    asked = {e["question_id"] for e in events if e["event"] == "question"}
    closed = {e["question_id"] for e in events if e["event"] == "question_closed"}
    assert asked == closed
