"""Codex CLI's command line: `--no-daemon`, the model, the cwd trusted as a `-c` override, resume of a thread.

`Launch` is the 0.169 `kit.Launch` plug-in (the driver's `launch()` is its `spec()`). The user's config.toml is
never rewritten: everything is a command-line override for this run only.
"""

from __future__ import annotations

import json
import os
from typing import Any, Protocol

from litbridge.drivers import kit
from litbridge.drivers.base import DriverError, LaunchSpec
from litbridge.drivers.codex import rollout as ro


def _toml_str(s: str) -> str:
    """A TOML basic string (JSON escapes are valid TOML escapes)."""
    return json.dumps(s, ensure_ascii=False)


class LaunchHost(kit.LaunchHost, Protocol):
    """What Codex's launch sets on the driver besides `resumed`: the thread it resumes (its rollout is followed)."""

    resume_thread: str | None


class Launch(kit.Launch[LaunchHost]):
    """Codex 0.169: `codex --no-daemon [-m M] [-c projects=...] [resume <thread>]`; the trust and model-migration
    dialogs are answered (the rules' `STARTUP_ACCEPT`), the login screen is an error with what to do."""

    VERSION = "0.169"

    def spec(self) -> LaunchSpec:
        d = self.driver
        argv = [d.binary()]
        args = list(d.args)
        if "--no-daemon" not in args:
            # the default mode starts two detached app-server processes that outlive the TUI (reference §0.2)
            args.insert(0, "--no-daemon")
        if d.model and not any(a in ("-m", "--model") or a.startswith("--model=") for a in args):
            args += ["-m", str(d.model)]
        if d.options.get("preapprove"):
            # trust the cwd for this run only, as a `-c` override (the user's config.toml is never rewritten).
            # The dotted form `projects."<cwd>".trust_level=...` is ignored by 0.169 (the dialog still shows);
            # an inline table works. It stands in for the `projects` table during this run only.
            cwd = _toml_str(os.path.abspath(d.cwd))
            args += ["-c", f"projects={{{cwd}={{trust_level={_toml_str('trusted')}}}}}"]
        root = ro.sessions_dir(d.env)
        thread_id = None
        if "resume" in args:
            # `codex resume <id>` given by the caller: follow that thread's file (found again if not there yet)
            i = args.index("resume")
            if i + 1 < len(args) and not args[i + 1].startswith("-"):
                thread_id = args[i + 1]
                d.resumed = True
        elif d.resume_token:
            if ro.find_thread(root, str(d.resume_token)) is None:
                # `codex resume` of a thread that is not on disk opens a picker: start a fresh one instead
                d.host.log.warning("codex: no rollout for resume token %s; starting fresh", d.resume_token)
            else:
                args += ["resume", str(d.resume_token)]
                thread_id = str(d.resume_token)
                d.resumed = True
        d.resume_thread = thread_id
        d.host.log.debug("codex argv: %s", argv + args)
        return LaunchSpec(argv=argv + args, env={}, cwd=d.cwd, transport="pty")

    def startup_answer(self, dialog: Any) -> str | None:
        if dialog.kind == "login":  # never a hang on a screen we cannot pass by ourselves
            raise DriverError("spawn_failed", self.driver.rules.LOGIN_HELP)
        return super().startup_answer(dialog)
