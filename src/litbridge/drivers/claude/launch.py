"""Claude Code's command line and config files: session pinning, resume, model, preapproval.

`Launch` is the 2.1 `kit.Launch` plug-in (the driver's `launch()` is its `spec()`); the helpers under it are pure
(no PTY, no screen): which argv pins the JSONL transcript (`--session-id`), how a resume token becomes
`--resume`, and the config keys that make the trust / API-key / bypass dialogs never show (reference §6).
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol

from litbridge.drivers import kit
from litbridge.drivers.base import DriverError, LaunchSpec
from litbridge.drivers.claude.transcript import config_dir, global_config_path, project_dir

RESUME_FLAGS = ("--resume", "-r", "--continue", "-c")
ENV_REMOVE = ("CLAUDECODE", "CLAUDE_CODE_*")
"""The daemon's own Claude Code variables (set when litbridge itself runs under Claude Code): never inherited
by a Claude child, which would otherwise think it is nested."""


class LaunchHost(kit.LaunchHost, Protocol):
    """What Claude's launch reads from the driver, and sets there: the session id the launch pinned."""

    launch_session_id: str | None


class Launch(kit.Launch[LaunchHost]):
    """Claude Code 2.1: `--session-id` pins the transcript (or `--resume <token>` when its transcript exists),
    `--model`, the preapproval config keys; the daemon's own Claude Code variables are not inherited."""

    VERSION = "2.1"
    ENV_REMOVE: ClassVar[tuple[str, ...]] = ENV_REMOVE

    def spec(self) -> LaunchSpec:
        d = self.driver
        pdir = project_dir(d.cwd, d.env)
        resume = d.resume_token
        if resume and not (is_uuid(str(resume)) and (pdir / f"{resume}.jsonl").exists()):
            # `--resume` of a conversation that is not on disk makes Claude exit: start a fresh one instead
            d.host.log.warning("claude: no transcript for resume token %s; starting fresh", resume)
            resume = None
        try:
            plan = plan_args(list(d.args), resume, d.model, pdir)
        except ValueError as exc:
            raise DriverError("bad_field", str(exc)) from exc
        d.launch_session_id, d.resumed = plan.session_id, plan.resumed
        if d.options.get("preapprove"):
            preapprove(d.cwd, d.env)
        return LaunchSpec(
            argv=[d.binary(), *plan.args], cwd=d.cwd, transport="pty", env_remove=list(self.ENV_REMOVE)
        )


@dataclass
class Plan:
    args: list[str]
    session_id: str | None
    resumed: bool


def plan_args(args: list[str], resume_token: str | None, model: str | None, project: Path) -> Plan:
    """The argv tail for a session: the caller's args, plus `--resume <token>` or a fresh `--session-id`
    (so the transcript file is known before it exists), plus `--model`."""
    args = list(args)
    session_id: str | None = None
    resumed = False
    has_resume = any(a in RESUME_FLAGS or a.startswith("--resume=") for a in args)
    if resume_token and not has_resume:
        args += ["--resume", resume_token]
        session_id, resumed = resume_token, True
    elif has_resume:
        resumed = True
        if "--continue" in args or "-c" in args:
            session_id = newest_transcript(project)
        for i, a in enumerate(args):
            # a value that is not a UUID is Claude's picker search term: no transcript to pin from it
            if a in ("--resume", "-r") and i + 1 < len(args) and is_uuid(args[i + 1]):
                session_id = args[i + 1]
            elif a.startswith("--resume=") and is_uuid(a.split("=", 1)[1]):
                session_id = a.split("=", 1)[1]
    elif "--session-id" in args:
        i = args.index("--session-id")
        session_id = args[i + 1] if i + 1 < len(args) else None
    else:
        session_id = str(uuid.uuid4())
        args += ["--session-id", session_id]
    if session_id is not None and not is_uuid(session_id):
        # The id names the transcript file (<project>/<id>.jsonl): anything but a UUID could point outside it.
        raise ValueError(f"claude session id {session_id!r} is not a UUID")
    if model and "--model" not in args:
        args += ["--model", str(model)]
    return Plan(args, session_id, resumed)


def is_uuid(value: str) -> bool:
    """Claude Code's session ids are UUIDs (it refuses any other `--session-id`)."""
    try:
        return str(uuid.UUID(value)) == value.lower()
    except ValueError:
        return False


def preapprove(cwd: str, env: dict[str, str]) -> None:
    """Write Claude's own config keys so the trust / API-key / bypass dialogs never show (reference §6)."""
    gpath = global_config_path(env)
    data = _read_json(gpath)
    data.setdefault("hasCompletedOnboarding", True)
    data.setdefault("theme", "dark")
    data["hasSeenAutoDefaultNotice"] = True
    projects = data.setdefault("projects", {})
    proj = projects.setdefault(os.path.abspath(cwd), {})
    proj["hasTrustDialogAccepted"] = True
    key = env.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_API_KEY")
    if key:
        resp = data.setdefault("customApiKeyResponses", {"approved": [], "rejected": []})
        approved = resp.setdefault("approved", [])
        resp.setdefault("rejected", [])
        if key[-20:] not in approved:
            approved.append(key[-20:])
        if key[-20:] in resp["rejected"]:
            resp["rejected"].remove(key[-20:])
    _write_json(gpath, data)
    spath = config_dir(env) / "settings.json"
    settings = _read_json(spath)
    settings["skipDangerousModePermissionPrompt"] = True
    _write_json(spath, settings)


def newest_transcript(directory: Path) -> str | None:
    """Stem of the most recently modified transcript (what `--continue` resumes)."""
    best: tuple[float, str] | None = None
    for p in directory.glob("*.jsonl"):
        try:
            m = p.stat().st_mtime
        except OSError:
            continue
        if best is None or m > best[0]:
            best = (m, p.stem)
    return best[1] if best else None


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2), encoding="utf-8")
    os.replace(tmp, path)
