"""Gemini CLI's command line and per-session settings: session id or resume, model, a private `GEMINI_CLI_HOME`.

`Launch` is the 0.61 `kit.Launch` plug-in (the driver's `launch()` is its `spec()`); it answers the trust dialog
(the rules' `STARTUP_ACCEPT`) and relays the sign-in dialog. The user's own `~/.gemini` files are read, never
written.
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from litbridge.drivers import kit
from litbridge.drivers.base import DriverError, LaunchSpec
from litbridge.drivers.gemini.chat import find_chat_file

if TYPE_CHECKING:
    from litbridge.drivers.engine import TurnEngine

TURN_TIMEOUT = 600.0
"""Default per-turn deadline (create field `turn_timeout`): Gemini retries 5xx/429 silently for minutes."""

SESSION_SETTINGS: dict[str, Any] = {
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "ide": {"enabled": False, "hasSeenNudge": True},
    "ui": {"showCompatibilityWarnings": False, "dynamicWindowTitle": True},
}
"""Merged over the user's settings for this session only (see `Launch.session_files`): no update prompts or IDE nudge, no
true-colour warning, and the window title the driver reads kept on."""


ENV_REMOVE: tuple[str, ...] = ("CI", "GITHUB_ACTIONS")
"""Inherited variables the child must not see: with `CI=true` or `GITHUB_ACTIONS=true` Gemini CLI runs headless
even on a terminal (`isHeadlessMode`) and exits 42 at once ("No input provided via stdin"), so a daemon started
from a CI job could not run it. The bridge always wants the interactive TUI; a caller's `create.env` still wins."""


def turn_timeout(raw: Any) -> float:
    """The `turn_timeout` create field (seconds, default TURN_TIMEOUT); a bad value is the client's `bad_field`."""
    if raw is None:
        return TURN_TIMEOUT
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise DriverError("bad_field", f"turn_timeout must be a number of seconds, got {raw!r}") from None
    if not value > 0 or value == float("inf"):
        raise DriverError("bad_field", f"turn_timeout must be a positive number of seconds, got {raw!r}")
    return value


def flag_value(args: list[str], names: tuple[str, ...]) -> str | None:
    """The value of the first of `names` in args ("" when the flag has none); None when absent."""
    for i, a in enumerate(args):
        for n in names:
            if a == n:
                nxt = args[i + 1] if i + 1 < len(args) else ""
                return "" if nxt.startswith("-") else nxt
            if a.startswith(n + "="):
                return a.split("=", 1)[1]
    return None


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class LaunchHost(kit.LaunchHost, Protocol):
    """What Gemini's launch reads from the driver besides the options (the user's `~/.gemini`, the engine whose
    per-turn deadline it sets) and the launch state it sets: session id, the resumed chat file, the session's
    own `GEMINI_CLI_HOME`."""

    engine: TurnEngine
    home: Path
    session_id: str | None
    chat_path_hint: Path | None
    session_home: str | None


class Launch(kit.Launch[LaunchHost]):
    """Gemini CLI 0.61: `gemini [--resume <id> | --session-id <uuid>] [--model M]` with this session's own
    settings (`session_files`); `turn_timeout` becomes the engine's per-turn deadline."""

    VERSION = "0.61"
    ENV_REMOVE: ClassVar[tuple[str, ...]] = ENV_REMOVE

    def spec(self) -> LaunchSpec:
        d = self.driver
        d.engine.timing.turn_deadline = turn_timeout(d.options.get("turn_timeout"))
        args = list(d.args)
        token = d.resume_token
        explicit = flag_value(args, ("--resume", "-r"))
        if explicit is not None:
            d.session_id, d.resumed = explicit or None, True
        elif token and find_chat_file(d.home, str(token)) is not None:
            args += ["--resume", str(token)]
            d.session_id, d.resumed = str(token), True
            # `--resume` appends to this file, but also starts an empty one named by the current minute (seen
            # live when the minute had changed): the conversation's own file is the one that exists now
            d.chat_path_hint = find_chat_file(d.home, str(token))
        else:
            if token:
                d.host.log.warning("gemini: no chat file for resume token %s; starting fresh", token)
            d.session_id = flag_value(args, ("--session-id",)) or None
            if d.session_id is None:
                d.session_id = str(uuid.uuid4())
                args += ["--session-id", d.session_id]
        if d.model and "--model" not in args and "-m" not in args:
            args += ["--model", str(d.model)]
        env = self.session_files()
        argv = [d.binary(), *args]
        return LaunchSpec(argv=argv, env=env, cwd=d.cwd, transport="pty", env_remove=list(self.ENV_REMOVE))

    def session_files(self) -> dict[str, str]:
        """A per-session `GEMINI_CLI_HOME` whose `.gemini/` holds this session's own `settings.json` (the user's,
        merged with SESSION_SETTINGS) and `trustedFolders.json` (a copy: a trust answer lands there), and
        symlinks to everything else of the user's `~/.gemini` (chats, projects, credentials). The user's own
        files are read, never written. (The CLI only honours root-owned system settings files, so a settings
        file of our own cannot be layered in any other way.)"""
        d = self.driver
        merged_env = {**os.environ, **d.env}
        user = d.home
        for sub in ("tmp", "history"):  # the chats must land in the user's own folder (resume, `gemini -r`)
            (user / sub).mkdir(parents=True, exist_ok=True)
        d.session_home = home = tempfile.mkdtemp(prefix="litbridge-gemini-")
        dot = Path(home) / ".gemini"
        dot.mkdir()
        settings = _deep_merge(_read_json(user / "settings.json"), SESSION_SETTINGS)
        auth = (settings.get("security") or {}).get("auth") or {}
        if merged_env.get("GEMINI_API_KEY") and not auth.get("selectedType"):
            # a key in the environment and no sign-in method chosen: use the key (no auth dialog)
            settings = _deep_merge(settings, {"security": {"auth": {"selectedType": "gemini-api-key"}}})
        trusted = _read_json(user / "trustedFolders.json")
        if d.options.get("preapprove"):
            trusted[os.path.abspath(d.cwd)] = "TRUST_FOLDER"
        (dot / "settings.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
        (dot / "trustedFolders.json").write_text(json.dumps(trusted, indent=2), encoding="utf-8")
        names = {p.name for p in user.iterdir()} | {"tmp", "history", "projects.json", "state.json"}
        for name in sorted(names - {"settings.json", "trustedFolders.json"}):
            os.symlink(user / name, dot / name)
        return {"GEMINI_CLI_HOME": home}
