"""opencode's command line and the session's own config: `opencode [--session <id>] [--model M]`.

The session's config is a file of its own in a private folder, named by `OPENCODE_CONFIG`: opencode merges it over
the user's config (and, with it set, writes no default config file of its own). It carries what `create` asked
for (`permission`), so the user's files are read, never written. The database is the user's own (resume, and
`opencode --session` from a terminal, find the conversation there).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, ClassVar, Protocol

from litbridge.drivers import kit
from litbridge.drivers.base import DriverError, LaunchSpec

PERMISSION_PRESETS: dict[str, dict[str, str]] = {
    "ask": {"bash": "ask", "edit": "ask", "webfetch": "ask"},
    "allow": {"bash": "allow", "edit": "allow", "webfetch": "allow"},
    "deny": {"bash": "deny", "edit": "deny", "webfetch": "deny"},
}
"""The `permission` create option's words -> opencode's `permission` config (an object is passed as it is)."""

SESSION_ENV = {"OPENCODE_DISABLE_AUTOUPDATE": "true"}
"""No self-update (and restart) in the middle of a session."""


class LaunchHost(kit.LaunchHost, Protocol):
    """What opencode's launch sets on the driver besides `resumed`: the private folder of the session's config (the
    driver removes it at exit); and what it asks it: whether a stored session id is still in the database."""

    session_dir: str | None

    def resume_exists(self, sid: str) -> bool: ...


def permission_config(raw: Any) -> dict[str, Any] | None:
    """The `permission` create option as opencode config (None: opencode's own default, which allows all)."""
    if raw is None:
        return None
    if isinstance(raw, str) and raw in PERMISSION_PRESETS:
        return dict(PERMISSION_PRESETS[raw])
    if isinstance(raw, dict):
        return dict(raw)
    raise DriverError(
        "bad_field",
        f"permission must be one of {', '.join(PERMISSION_PRESETS)} or an opencode permission object, got {raw!r}",
    )


def flag_value(args: list[str], names: tuple[str, ...]) -> str | None:
    """The value of the first of `names` in args; None when absent."""
    for i, a in enumerate(args):
        for n in names:
            if a == n and i + 1 < len(args):
                return args[i + 1]
            if a.startswith(n + "="):
                return a.split("=", 1)[1]
    return None


class Launch(kit.Launch[LaunchHost]):
    """opencode 1.18."""

    VERSION = "1.18"
    ENV_REMOVE: ClassVar[tuple[str, ...]] = ("OPENCODE", "OPENCODE_PID", "AGENT")
    """Set by an opencode this daemon may run under (its bash tool's children inherit them)."""

    def spec(self) -> LaunchSpec:
        d = self.driver
        args = list(d.args)
        explicit = flag_value(args, ("--session", "-s"))
        token = d.resume_token
        if explicit is not None:
            d.resumed = True
        elif token and d.resume_exists(str(token)):
            args += ["--session", str(token)]
            d.resumed = True
        if d.model and flag_value(args, ("--model", "-m")) is None:
            args += ["--model", str(d.model)]
        env = {**SESSION_ENV, **self.session_config()}
        return LaunchSpec(argv=[d.binary(), *args], env=env, cwd=d.cwd, env_remove=list(self.ENV_REMOVE))

    def session_config(self) -> dict[str, str]:
        """A private folder holding this session's `opencode.json`, named by `OPENCODE_CONFIG` (opencode merges it
        over the user's config). The permission also goes in `OPENCODE_PERMISSION`, which opencode merges last: a
        caller's own `OPENCODE_CONFIG` in `create.env` replaces the file, not the permission."""
        d = self.driver
        config: dict[str, Any] = {"$schema": "https://opencode.ai/config.json", "autoupdate": False}
        env: dict[str, str] = {}
        permission = permission_config(d.options.get("permission"))
        if permission is not None:
            config["permission"] = permission
            env["OPENCODE_PERMISSION"] = json.dumps(permission)
        d.session_dir = folder = tempfile.mkdtemp(prefix="litbridge-opencode-")
        path = Path(folder) / "opencode.json"
        path.write_text(json.dumps(config, indent=2), encoding="utf-8")
        env["OPENCODE_CONFIG"] = str(path)
        return env
