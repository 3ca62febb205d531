"""Helpers for the Pi driver tests (conftest.py holds the fixtures): a private HOME whose `~/.pi/agent/models.json`
points Pi at the mock chat-completions API, the `create` command, a `litbridge serve` subprocess with `pi` on
PATH, and the shared real-CLI client whose every event is checked against `litbridge schema`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lbd_helpers import EventClient, ServeDaemon

MODEL = "mock-model"


@dataclass
class PiHome:
    home: Path
    cwd: Path

    @property
    def agent(self) -> Path:
        return self.home / ".pi" / "agent"

    def sessions(self) -> list[Path]:
        return sorted((self.agent / "sessions").glob("*/*.jsonl"))


def make_home(base: Path, mock_url: str) -> PiHome:
    """An empty private HOME with a project folder and a `mock` provider in Pi's models.json."""
    home = base / "home"
    cwd = home / "work"
    cwd.mkdir(parents=True)
    (cwd / "README.md").write_text("hello\n")
    agent = home / ".pi" / "agent"
    agent.mkdir(parents=True)
    provider = {
        "baseUrl": mock_url,
        "api": "openai-completions",
        "apiKey": "dummy",
        "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
        "models": [{"id": MODEL}],
    }
    (agent / "models.json").write_text(json.dumps({"providers": {"mock": provider}}), encoding="utf-8")
    return PiHome(home, cwd)


def create_cmd(key: str, h: PiHome, **kw: Any) -> dict[str, Any]:
    cmd: dict[str, Any] = {
        "cmd": "create",
        "session": key,
        "cli": "pi",
        "working_dir": str(h.cwd),
        "args": ["--provider", "mock", "--offline"],
        "model": f"mock/{MODEL}",
        "env": {"HOME": str(h.home), "PI_OFFLINE": "1"},
    }
    cmd.update(kw)
    return cmd


class Daemon(ServeDaemon):
    """The daemon (lbd_helpers.ServeDaemon): `pi` on its PATH is the fetched launcher, node from the system."""

    def __init__(self, base: Path, pi_bin: Path) -> None:
        super().__init__(
            base,
            ("LANG", "LC_ALL", "USER", "TMPDIR", "LITBRIDGE_NO_EXTENSIONS"),
            PATH=f"{pi_bin}:/usr/local/bin:/usr/bin:/bin",
            SHELL="/bin/bash",
        )


LBClient = EventClient  # the shared real-CLI client (lbd_helpers: create, turn, waits)
