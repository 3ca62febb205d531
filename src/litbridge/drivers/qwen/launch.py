"""Qwen Code's command line and per-session settings: session id or resume, model, approval mode, a private
`QWEN_HOME`.

`Launch` is the 0.24 `kit.Launch` plug-in, shaped as the Gemini CLI's (`--session-id`/`--resume`, settings merged
over the user's in a per-session folder, the user's own files read, never written, with the Gemini launch's
helpers); what is Qwen's is the folder (`QWEN_HOME` names `~/.qwen` itself), its settings and `--approval-mode`.
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
from litbridge.drivers.gemini.launch import _deep_merge, _read_json, flag_value, turn_timeout
from litbridge.drivers.qwen.chats import find_chat_file

if TYPE_CHECKING:
    from litbridge.drivers.engine import TurnEngine

APPROVAL_MODES = ("plan", "default", "auto-edit", "auto", "yolo")
"""`--approval-mode` values (create field `approval_mode`): `default` asks before edits and commands (relayed as
questions); `auto` lets a classifier request approve them; unset leaves the user's settings in charge."""

SESSION_SETTINGS: dict[str, Any] = {
    "general": {"enableAutoUpdate": False, "disableAutoUpdate": True},
    "ui": {"enableFollowupSuggestions": False},
    "ide": {"enabled": False},
}
"""Merged over the user's settings for this session only: no update check, and no follow-up suggestion (a
background request per turn whose answer is drawn as grey text in the input box, where it reads as a draft)."""

OWN_FILES = frozenset({"settings.json", "trustedFolders.json"})
"""What the session's `QWEN_HOME` holds of its own (the rest are links to the user's `~/.qwen`)."""

ENV_REMOVE: tuple[str, ...] = ("CI", "GITHUB_ACTIONS")
"""Inherited variables the child must not see (under `CI` the Gemini CLI family runs headless)."""


def approval_mode(raw: Any) -> str | None:
    """The `approval_mode` create field, checked (a bad value is the client's `bad_field`)."""
    if raw is None:
        return None
    if raw not in APPROVAL_MODES:
        raise DriverError(
            "bad_field", f"approval_mode must be one of {', '.join(APPROVAL_MODES)}, got {raw!r}"
        )
    return str(raw)


class LaunchHost(kit.LaunchHost, Protocol):
    """What Qwen's launch reads from the driver besides the options (the user's `~/.qwen`, the engine whose
    per-turn deadline it sets) and the launch state it sets: the session id and the session's own `QWEN_HOME`."""

    engine: TurnEngine
    home: Path
    session_id: str | None
    session_home: str | None


class Launch(kit.Launch[LaunchHost]):
    """Qwen Code 0.24: `qwen [--resume <id> | --session-id <uuid>] [--model M] [--approval-mode X]` with this
    session's own `QWEN_HOME` (`session_files`)."""

    VERSION = "0.24"
    ENV_REMOVE: ClassVar[tuple[str, ...]] = ENV_REMOVE

    def spec(self) -> LaunchSpec:
        d = self.driver
        d.engine.timing.turn_deadline = turn_timeout(d.options.get("turn_timeout"))
        args = list(d.args)
        mode = approval_mode(d.options.get("approval_mode"))
        token = d.resume_token
        explicit = flag_value(args, ("--resume", "-r"))
        if explicit is not None:
            d.session_id, d.resumed = explicit or None, True
        elif token and find_chat_file(d.home, str(token), d.cwd) is not None:
            args += ["--resume", str(token)]
            d.session_id, d.resumed = str(token), True
        else:
            if token:
                d.host.log.warning("qwen: no chat file for resume token %s; starting fresh", token)
            d.session_id = flag_value(args, ("--session-id",)) or None
            if d.session_id is None:
                d.session_id = str(uuid.uuid4())
                args += ["--session-id", d.session_id]
        if d.model and "--model" not in args and "-m" not in args:
            args += ["--model", str(d.model)]
        if (
            mode
            and flag_value(args, ("--approval-mode",)) is None
            and "--yolo" not in args
            and "-y" not in args
        ):
            args += ["--approval-mode", mode]
        env = self.session_files()
        return LaunchSpec(
            argv=[d.binary(), *args], env=env, cwd=d.cwd, transport="pty", env_remove=list(self.ENV_REMOVE)
        )

    def startup_answer(self, dialog: Any) -> str | None:
        # API keys typed into a form: never a hang on a screen nobody here can pass
        if dialog.kind == "provider":
            raise DriverError("spawn_failed", self.driver.rules.PROVIDER_HELP)
        return super().startup_answer(dialog)

    def session_files(self) -> dict[str, str]:
        """A per-session `QWEN_HOME` holding this session's own `settings.json` (the user's merged with
        SESSION_SETTINGS) and `trustedFolders.json` (a copy: a trust answer lands there; `preapprove:true` trusts
        the folder up front), and symlinks to everything else of the user's `~/.qwen` (`projects/`, where the chats
        are, above all): the user's own files are read, never written."""
        d = self.driver
        user: Path = d.home
        (user / "projects").mkdir(parents=True, exist_ok=True)  # the chats land in the user's own folder
        d.session_home = home = tempfile.mkdtemp(prefix="litbridge-qwen-")
        settings = _deep_merge(_read_json(user / "settings.json"), SESSION_SETTINGS)
        Path(home, "settings.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
        trusted = _read_json(user / "trustedFolders.json")
        if d.options.get("preapprove"):
            trusted[os.path.abspath(d.cwd)] = "TRUST_FOLDER"
        Path(home, "trustedFolders.json").write_text(json.dumps(trusted, indent=2), encoding="utf-8")
        for p in sorted(user.iterdir()):
            if p.name not in OWN_FILES:
                os.symlink(p, Path(home, p.name))
        return {"QWEN_HOME": home}
