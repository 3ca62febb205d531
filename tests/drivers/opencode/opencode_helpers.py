"""Helpers of the opencode driver tests (a uniquely named module: test folders share one import namespace): a
private HOME whose user config names the mock as the only provider, the plugin package opencode installs into a
fresh config folder seeded from the fixture cache (no registry at run time: npm is pointed at a closed port), and
the daemon with `opencode` on its PATH."""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lbd_helpers import ServeDaemon

from fetch_fixtures import opencode_plugin_dir

TERMINAL = ("complete", "interrupted", "turn_error")


@dataclass
class OpencodeHome:
    home: Path
    cwd: Path
    mock_url: str

    @property
    def db(self) -> Path:
        return self.home / ".local" / "share" / "opencode" / "opencode.db"

    def env(self) -> dict[str, str]:
        """The session's create.env: its HOME (and the XDG folders under it, so a daemon started with XDG_* set,
        as the test suite does, does not point opencode at an empty config), offline switches, npm pointed at
        nothing."""
        return {
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "OPENCODE_DISABLE_MODELS_FETCH": "true",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "true",
            "npm_config_registry": "http://127.0.0.1:9/",
        }

    def rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """Read the session store (read-only, like the driver)."""
        conn = sqlite3.connect(self.db.resolve().as_uri() + "?mode=ro", uri=True, timeout=5)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()


def make_home(base: Path, mock_url: str, name: str = "proj") -> OpencodeHome:
    home = base / "home"
    cwd = home / "work" / name
    cwd.mkdir(parents=True)
    (cwd / "README.md").write_text("A test project.\n")
    cfg = home / ".config" / "opencode"
    cfg.mkdir(parents=True)
    config = {
        "$schema": "https://opencode.ai/config.json",
        "model": "mock/mock-model",
        "small_model": "mock/mock-model",
        "autoupdate": False,
        "share": "disabled",
        "provider": {
            "mock": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Mock",
                "options": {"baseURL": mock_url, "apiKey": "dummy"},
                "models": {"mock-model": {"name": "Mock"}},
            }
        },
    }
    (cfg / "opencode.json").write_text(json.dumps(config, indent=2))
    plugin = opencode_plugin_dir()
    (cfg / "package.json").write_text((plugin / "package.json").read_text())
    os.symlink(plugin / "node_modules", cfg / "node_modules")
    return OpencodeHome(home, cwd, mock_url)


class Daemon(ServeDaemon):
    """The daemon with the real `opencode` binary's folder first on its PATH."""

    def __init__(self, base: Path, binary: Path) -> None:
        path = [str(binary.parent), "/usr/local/bin", "/usr/bin", "/bin"]
        super().__init__(base, ("LANG", "LC_ALL", "USER", "TMPDIR"), PATH=os.pathsep.join(path))
