"""Pi's command line for a session: a session file of its own (or the one a resume token names), the model.

`Launch` is the 0.73 `kit.Launch` plug-in (the driver's `launch()` is its `spec()`). Pi has no start-up dialog
and no config the driver must write: the provider and models are the user's (`<agent dir>/models.json`, where
`<agent dir>` is `$PI_CODING_AGENT_DIR` or `~/.pi/agent` of the session's environment). The driver names the
session file with `--session <path>` (a path in Pi's own sessions folder, so `pi -r` lists it), so the record is
known before it exists; a resume passes the existing file the same way.
"""

from __future__ import annotations

import datetime as _dt
import os
import uuid
from pathlib import Path
from typing import ClassVar, Protocol

from litbridge.drivers import kit
from litbridge.drivers.base import LaunchSpec
from litbridge.drivers.pi.session import agent_dir, find_session, session_dir

ENV_DEFAULTS: dict[str, str] = {"PI_SKIP_VERSION_CHECK": "1"}
"""Set unless the caller's env sets them: no new-version notice drawn over the first frames."""


class LaunchHost(kit.LaunchHost, Protocol):
    """What Pi's launch sets on the driver besides `resumed` (kit.LaunchHost has the create options): the session
    file it names with `--session` and the resume token that names it."""

    session_path: Path | None
    session_token: str | None


def _flag_value(args: list[str], names: tuple[str, ...]) -> str | None:
    for i, a in enumerate(args):
        for n in names:
            if a == n:
                return args[i + 1] if i + 1 < len(args) else ""
            if a.startswith(n + "="):
                return a.split("=", 1)[1]
    return None


class Launch(kit.Launch[LaunchHost]):
    """Pi 0.73: `pi [--session <file>] [--model M] <args>`."""

    VERSION = "0.73"
    ENV_REMOVE: ClassVar[tuple[str, ...]] = ()

    def spec(self) -> LaunchSpec:
        d = self.driver
        args = list(d.args)
        env = {**os.environ, **d.env}
        agent = agent_dir(env)
        given = _flag_value(args, ("--session",))
        if given:
            # the caller named the session: follow that file when it is a path
            d.session_path = (
                Path(given) if ("/" in given or given.endswith(".jsonl")) else find_session(agent, given)
            )
            d.resumed = d.session_path is not None and d.session_path.exists()
        elif any(a in args for a in ("--no-session", "--continue", "-c", "--resume", "-r", "--fork")):
            d.session_path = None  # Pi picks (or keeps no) file: the driver follows the screen only
        else:
            found = find_session(agent, str(d.resume_token)) if d.resume_token else None
            if found is not None:
                d.session_path, d.resumed = found, True
                d.session_token = str(d.resume_token)
            else:
                if d.resume_token:
                    d.host.log.warning(
                        "pi: no session file for resume token %s; starting fresh", d.resume_token
                    )
                d.session_token = str(uuid.uuid4())
                stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H-%M-%S-%f")[:-3] + "Z"
                folder = session_dir(agent, os.path.abspath(d.cwd))
                d.session_path = folder / f"{stamp}_{d.session_token}.jsonl"
            args += ["--session", str(d.session_path)]
        if d.model and "--model" not in args:
            args += ["--model", str(d.model)]
        extra = {k: v for k, v in ENV_DEFAULTS.items() if k not in env}
        return LaunchSpec(argv=[d.binary(), *args], env=extra, cwd=d.cwd, transport="pty")
