"""Helpers for the Codex driver tests (conftest.py holds the fixtures): private HOMEs, the `create` command
against the mock Responses API, a `litbridge serve` subprocess with `codex` on PATH, and a JSON-lines client
whose every event is checked against `litbridge schema`.

Codex reaches the mock through a custom provider given as `-c` overrides in `create.args` (reference §1: the
built-in provider ignores OPENAI_BASE_URL and tries WebSockets first); nothing is written to a config.toml.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from lbd_helpers import EventClient, ServeDaemon
from mock_openai import MockOpenAI

from fetch_fixtures import CODEX_CAPTURES, codex_binary, codex_unavailable  # noqa: F401 - re-exported

TESTS = Path(__file__).resolve().parents[2]
ROOT = TESTS.parent
FIXTURES = TESTS / "fixtures" / "captures" / "codex"
"""The trimmed in-repo copy of the Codex recordings (its README); CODEX_CAPTURES is this folder unless
$LITBRIDGE_CODEX_CAPTURES names another (e.g. the full set)."""
MODEL = "gpt-6-astra"  # a catalog model without a migration dialog; tools arrive in code mode (custom `exec`)


def provider_args(mock_url: str, *, model: str = MODEL, approval: str = "on-request") -> list[str]:
    """`-c` overrides pointing Codex at the mock (custom provider, plain HTTP+SSE) for one session."""
    provider = (
        f'{{name="Mock",base_url="{mock_url}",wire_api="responses",env_key="LB_MOCK_KEY",'
        "request_max_retries=1,stream_max_retries=1,stream_idle_timeout_ms=20000}"
    )
    return [
        "-c",
        'model_provider="lbmock"',
        "-c",
        f"model_providers.lbmock={provider}",
        "-c",
        f'model="{model}"',
        "-c",
        f'approval_policy="{approval}"',
        "-c",
        'sandbox_mode="workspace-write"',
        "-c",
        "check_for_update_on_startup=false",
        "-c",
        "analytics.enabled=false",
        "-c",
        "feedback.enabled=false",
    ]


@dataclass
class CodexHome:
    home: Path
    cwd: Path

    @property
    def codex_home(self) -> Path:
        return self.home / ".codex"


def make_home(base: Path, name: str = "work", git: bool = True) -> CodexHome:
    """An empty private HOME with a project folder (a git repo, like the recordings' cwd)."""
    home = base / "home"
    cwd = home / name
    cwd.mkdir(parents=True)
    (cwd / "README.md").write_text("hello\n")
    if git:
        subprocess.run(["git", "init", "-q", str(cwd)], check=True)
    return CodexHome(home, cwd)


def create_cmd(
    key: str, h: CodexHome, mock: MockOpenAI, *, trust: bool = True, extra: list[str] | None = None, **kw: Any
) -> dict[str, Any]:
    """A `create` for codex in the private HOME against the mock; `trust`: the driver's `preapprove` (the cwd is
    trusted for the run, no trust dialog)."""
    cmd: dict[str, Any] = {
        "cmd": "create",
        "session": key,
        "cli": "codex",
        "working_dir": str(h.cwd),
        "args": provider_args(mock.url) + list(extra or []),
        "env": {"HOME": str(h.home), "LB_MOCK_KEY": "sk-mock-test"},
    }
    if trust:
        cmd["preapprove"] = True
    cmd.update(kw)
    return cmd


def require_codex_binary() -> Path:
    """The real Codex CLI 0.169.0 binary; skips with the reason when tests/fetch_fixtures.py could not install it
    or it does not run here."""
    reason = codex_unavailable()
    if reason:
        pytest.skip(reason)
    path = codex_binary()
    out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=60)
    if out.returncode != 0 or "0.169.0" not in out.stdout:
        pytest.skip(f"codex binary does not run here: {out.stdout} {out.stderr}")
    return path


def shell_approval_script(command: str, label: str = "call") -> list[dict[str, Any]]:
    """Two mock responses: a message plus a code-mode `exec` that runs `command` with escalated permissions (so
    Codex asks for approval), then the answer after the command's output came back."""
    js = (
        f"const r = await tools.exec_command({{cmd: {json.dumps(command)}, "
        'sandbox_permissions: "require_escalated", justification: "Create a file to test approvals"});\ntext(r);'
    )
    return [
        {
            "label": label,
            "items": [
                {"type": "message", "text": "I'll create the file."},
                {"type": "custom_tool_call", "name": "exec", "input": js},
            ],
        },
        {"label": "after", "text": "Done: the file was created."},
    ]


class Daemon(ServeDaemon):
    """The daemon (lbd_helpers.ServeDaemon): `codex` on its PATH is the fetched 0.169.0 binary."""

    def __init__(self, base: Path, codex_bin: Path) -> None:
        bindir = base / "bin"
        bindir.mkdir()
        (bindir / "codex").symlink_to(codex_bin)
        super().__init__(
            base,
            ("LANG", "LC_ALL", "USER", "TMPDIR", "LITBRIDGE_NO_EXTENSIONS"),
            PATH=f"{bindir}:/usr/local/bin:/usr/bin:/bin",
            SHELL="/bin/bash",
        )


LBClient = EventClient  # the shared real-CLI client (lbd_helpers: create, turn, waits)
