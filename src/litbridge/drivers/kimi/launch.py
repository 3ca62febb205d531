"""Kimi Code's command line for a session: `kimi [-S <session id>] [-m <model alias>]`.

`Launch` is the 2.1 `kit.Launch` plug-in. Providers, models and the permission mode are the user's
(`config.toml` in `$KIMI_CODE_HOME`, else `~/.kimi-code`, of the session's environment); the driver writes no
config. It answers the first-start trust panel from the screen (the rules' `STARTUP_ACCEPT`). Kimi Code needs
Node >= 22.19 on the session's PATH.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar, Protocol

from litbridge.drivers import kit
from litbridge.drivers.base import LaunchSpec
from litbridge.drivers.kimi.wire import find_session, index_entries, kimi_home

ENV_DEFAULTS: dict[str, str] = {"KIMI_CODE_NO_AUTO_UPDATE": "1"}
"""Set unless the caller's env sets them: no self-update at start (it would re-exec the CLI under us)."""


class LaunchHost(kit.LaunchHost, Protocol):
    """What Kimi's launch sets on the driver besides `resumed` (kit.LaunchHost has the create options): Kimi's data
    folder, the sessions it held at the spawn (a new one is found among the others) and a resumed session's folder."""

    home: Path
    resume_dir: Path | None
    known_sessions: set[str]


class Launch(kit.Launch[LaunchHost]):
    """Kimi Code 2.1: `kimi [-S <id>] [-m M] <args>`."""

    VERSION = "2.1"
    ENV_REMOVE: ClassVar[tuple[str, ...]] = ()

    def spec(self) -> LaunchSpec:
        d = self.driver
        args = list(d.args)
        env = {**os.environ, **d.env}
        d.home = kimi_home(env)
        d.known_sessions = {str(e["sessionId"]) for e in index_entries(d.home)}
        explicit = any(a in args for a in ("-S", "--session", "-c", "--continue"))
        if not explicit and d.resume_token:
            folder = find_session(d.home, str(d.resume_token))
            if folder is None:
                d.host.log.warning("kimi: no session %s to resume; starting fresh", d.resume_token)
            else:
                args += ["-S", str(d.resume_token)]
                d.resume_dir, d.resumed = folder, True
        if d.model and "-m" not in args and "--model" not in args:
            args += ["-m", str(d.model)]
        extra = {k: v for k, v in ENV_DEFAULTS.items() if k not in env}
        return LaunchSpec(argv=[d.binary(), *args], env=extra, cwd=d.cwd, transport="pty")
