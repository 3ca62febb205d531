"""Copilot CLI's command line: the record pinned by `--session-id`, `--resume=<id>`, the model, updates and
client telemetry off.

`Launch` is the 1.0 `kit.Launch` plug-in (the driver's `launch()` is its `spec()`). Nothing of the user's
`~/.copilot` is written by the driver: the folder trust dialog is answered on screen for this run only ("Yes");
with `preapprove` the driver picks "Yes, and remember this folder" instead, which Copilot itself records.
An offline run is the caller's env (`COPILOT_OFFLINE=true`, `COPILOT_PROVIDER_BASE_URL`, `COPILOT_MODEL`).
"""

from __future__ import annotations

import uuid
from typing import Any, ClassVar, Protocol

from litbridge.drivers import kit
from litbridge.drivers.base import DriverError, DriverHost, LaunchSpec
from litbridge.drivers.copilot.events import events_path, is_session_id

__all__ = ["ENV", "CopilotLaunchHost", "Launch", "flag_value"]

ENV: dict[str, str] = {"COPILOT_AUTO_UPDATE": "false"}
"""The session's own env additions (a caller's `create.env` still wins)."""
FLAGS = ("--no-auto-update", "--disable-client-telemetry")
RESUME_FLAGS = ("--resume", "-r", "--continue")
ENV_REMOVE: tuple[str, ...] = ("COPILOT_ALLOW_ALL",)
"""An inherited `COPILOT_ALLOW_ALL` would approve every tool (and trust the folder) without asking: the bridge
relays approvals as questions; a caller who wants it passes it in `create.env`."""


class CopilotLaunchHost(Protocol):
    """What `Launch` reads from the driver and the launch state it sets there."""

    host: DriverHost
    options: dict[str, Any]
    cwd: str
    env: dict[str, str]
    args: list[str]
    model: str | None
    resume_token: str | None
    resumed: bool
    rules: Any
    session_id: str | None

    def binary(self) -> str: ...


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


class Launch(kit.Launch["CopilotLaunchHost"]):
    """Copilot CLI 1.0: `copilot --no-auto-update --disable-client-telemetry (--session-id <uuid> |
    --resume=<uuid>) [--model M]`."""

    VERSION = "1.0"
    ENV_REMOVE: ClassVar[tuple[str, ...]] = ENV_REMOVE

    def spec(self) -> LaunchSpec:
        d = self.driver
        args = [f for f in FLAGS if f not in d.args] + list(d.args)
        token = str(d.resume_token) if d.resume_token else None
        explicit = flag_value(args, RESUME_FLAGS)
        pinned = flag_value(args, ("--session-id",))
        if explicit is not None:
            d.session_id = explicit if explicit and is_session_id(explicit) else None
            d.resumed = True
        elif pinned is not None:
            if not is_session_id(pinned):
                raise DriverError("bad_field", f"copilot --session-id {pinned!r} is not a UUID")
            d.session_id = pinned
            d.resumed = events_path(d.env, pinned).exists()
        elif token and is_session_id(token) and events_path(d.env, token).exists():
            args.append(f"--resume={token}")
            d.session_id, d.resumed = token, True
        else:
            if token:
                d.host.log.warning("copilot: no session record for resume token %s; starting fresh", token)
            d.session_id = str(uuid.uuid4())  # the record's folder is known before it exists
            args += ["--session-id", d.session_id]
        if d.model and flag_value(args, ("--model",)) is None:
            args += ["--model", str(d.model)]
        return LaunchSpec(
            argv=[d.binary(), *args],
            env=dict(ENV),
            cwd=d.cwd,
            transport="pty",
            env_remove=list(self.ENV_REMOVE),
        )

    def startup_answer(self, dialog: Any) -> str | None:
        if dialog.kind == "trust" and self.driver.options.get("preapprove"):
            return "Yes, and remember"
        return super().startup_answer(dialog)
