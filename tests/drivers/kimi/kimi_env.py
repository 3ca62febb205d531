"""Helpers for the Kimi Code driver tests (conftest.py holds the fixtures): a private HOME whose
`~/.kimi-code/config.toml` points Kimi at the mock chat-completions API (manual approvals), the `create` command,
a `litbridge serve` subprocess with `kimi` and a Node 22 on PATH, and the shared real-CLI client.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lbd_helpers import EventClient, ServeDaemon

CONFIG = """default_model = "mock"
default_permission_mode = "manual"
telemetry = false

[providers.mock]
type = "openai"
base_url = "{url}"
api_key = "dummy"

[models.mock]
provider = "mock"
model = "mock-model"
max_context_size = 128000
capabilities = ["tool_use"]
"""


@dataclass
class KimiHome:
    home: Path
    cwd: Path

    @property
    def data(self) -> Path:
        return self.home / ".kimi-code"

    def wires(self) -> list[Path]:
        return sorted((self.data / "sessions").glob("wd_*/session_*/agents/main/wire.jsonl"))


def make_home(base: Path, mock_url: str) -> KimiHome:
    home = base / "home"
    cwd = home / "work"
    cwd.mkdir(parents=True)
    (cwd / "README.md").write_text("hello\n")
    data = home / ".kimi-code"
    data.mkdir()
    (data / "config.toml").write_text(CONFIG.format(url=mock_url), encoding="utf-8")
    return KimiHome(home, cwd)


def create_cmd(key: str, h: KimiHome, **kw: Any) -> dict[str, Any]:
    cmd: dict[str, Any] = {
        "cmd": "create",
        "session": key,
        "cli": "kimi",
        "working_dir": str(h.cwd),
        "env": {"HOME": str(h.home)},
    }
    cmd.update(kw)
    return cmd


class Daemon(ServeDaemon):
    """The daemon: `kimi` on its PATH is the fetched launcher, with the Node 22 fixture in front of the system's."""

    def __init__(self, base: Path, kimi_bin: Path, node_bin: Path) -> None:
        super().__init__(
            base,
            ("LANG", "LC_ALL", "USER", "TMPDIR", "LITBRIDGE_NO_EXTENSIONS"),
            PATH=f"{node_bin}:{kimi_bin}:/usr/local/bin:/usr/bin:/bin",
            SHELL="/bin/bash",
        )


LBClient = EventClient  # the shared real-CLI client (lbd_helpers: create, turn, waits)
