"""Helpers for the Copilot driver tests (conftest.py holds the fixtures): private HOMEs, the `create` command
against the shared chat-completions mock, a `litbridge serve` subprocess with `copilot` on PATH, and a JSON-lines
client whose every event is checked against `litbridge schema`.

Copilot reaches the mock through its own offline/BYOK variables in `create.env` (`COPILOT_OFFLINE`,
`COPILOT_PROVIDER_BASE_URL`, `COPILOT_MODEL`): no GitHub sign-in, nothing written to a config file.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from lbd_helpers import EventClient, ServeDaemon
from mock_chat import MockChat

from fetch_fixtures import COPILOT_CAPTURES, COPILOT_VERSION, copilot_binary, copilot_missing  # noqa: F401

MODEL = "mock-model"


@dataclass
class CopilotHome:
    home: Path
    cwd: Path

    @property
    def copilot_home(self) -> Path:
        return self.home / ".copilot"

    def events(self, session_id: str) -> Path:
        return self.copilot_home / "session-state" / session_id / "events.jsonl"


def make_home(base: Path, name: str = "work") -> CopilotHome:
    """An empty private HOME with a project folder."""
    home = base / "home"
    cwd = home / name
    cwd.mkdir(parents=True)
    (cwd / "README.md").write_text("hello\n")
    return CopilotHome(home, cwd)


def offline_env(h: CopilotHome, mock: MockChat) -> dict[str, str]:
    """The session env that runs Copilot offline against the mock (chat completions)."""
    return {
        "HOME": str(h.home),
        "COPILOT_OFFLINE": "true",
        "COPILOT_PROVIDER_BASE_URL": mock.url,
        "COPILOT_PROVIDER_API_KEY": "sk-mock-test",
        "COPILOT_MODEL": MODEL,
        "COPILOT_PROVIDER_MAX_PROMPT_TOKENS": "128000",
        "COPILOT_PROVIDER_MAX_OUTPUT_TOKENS": "8192",
    }


def create_cmd(key: str, h: CopilotHome, mock: MockChat, **kw: Any) -> dict[str, Any]:
    cmd: dict[str, Any] = {
        "cmd": "create",
        "session": key,
        "cli": "copilot",
        "working_dir": str(h.cwd),
        "env": offline_env(h, mock),
    }
    cmd.update(kw)
    return cmd


def require_copilot_binary() -> Path:
    """The real Copilot CLI binary; skips with the reason when tests/fetch_fixtures.py could not install it or it
    does not run here."""
    reason = copilot_missing()
    if reason:
        pytest.skip(reason)
    path = copilot_binary()
    out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=60)
    if out.returncode != 0 or COPILOT_VERSION not in out.stdout:
        pytest.skip(f"copilot binary does not run here: {out.stdout} {out.stderr}")
    return path


def processes_with_home(home: Path) -> list[int]:
    """Pids of live processes whose environment has HOME=<home> (every process of the session inherits it)."""
    needle = f"HOME={home}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                env = fh.read().split(b"\0")
        except OSError:
            continue
        if needle in env:
            found.append(int(entry))
    return found


def shell_call(command: str, description: str = "run it") -> dict[str, Any]:
    """A mock response asking Copilot's `bash` tool to run `command` (Copilot asks before running it)."""
    return {"tool_calls": [{"name": "bash", "arguments": {"command": command, "description": description}}]}


class Daemon(ServeDaemon):
    """The daemon (lbd_helpers.ServeDaemon): `copilot` on its PATH is the fetched binary."""

    def __init__(self, base: Path, copilot_bin: Path) -> None:
        bindir = base / "bin"
        bindir.mkdir()
        (bindir / "copilot").symlink_to(copilot_bin)
        super().__init__(
            base,
            ("LANG", "LC_ALL", "USER", "TMPDIR", "LITBRIDGE_NO_EXTENSIONS"),
            PATH=f"{bindir}:/usr/local/bin:/usr/bin:/bin",
            SHELL="/bin/bash",
        )


LBClient = EventClient  # the shared real-CLI client (lbd_helpers: create, turn, waits)
