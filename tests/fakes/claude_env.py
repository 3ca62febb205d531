"""Helpers to run the real Claude Code 2.1.328 binary offline in tests: binary path, private HOMEs, offline env,
optional pre-approval config. Does not spawn or drive the binary (the daemon/driver do) nor mock the API
(tests/fakes/mock_anthropic.py).

Findings (observed here on the real binary under a 200x50 PTY against tests/fakes/mock_anthropic.py):
* Env that keeps it offline: ANTHROPIC_BASE_URL=http://127.0.0.1:<mock>, a fake ANTHROPIC_API_KEY, DISABLE_TELEMETRY,
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC, DISABLE_AUTOUPDATER, DISABLE_ERROR_REPORTING (all =1). With these the only
  traffic is `POST /v1/messages?beta=true` (stream=true, 13 tools, max_tokens 128000, model claude-opus-5-5);
  no GET /v1/models, no count_tokens, no title/classifier call at startup or per turn. Headers: anthropic-version
  2023-06-01, anthropic-beta claude-code-20250219,..., x-app cli, User-Agent claude-cli/2.1.328 (external, cli),
  X-Claude-Code-Session-Id <session uuid>, X-Stainless-Retry-Count. `messages` may end with a role=system message.
* The API answer must be standard Messages SSE (message_start, content_block_start/delta/stop, message_delta with
  stop_reason, message_stop) with chunked transfer; text/thinking/tool_use blocks all render. A persistent HTTP 500
  with CLAUDE_CODE_MAX_RETRIES=N gives N+1 requests then `● API Error: 500 Internal server error…` + OSC 7501 state=error.
* A truly empty HOME first shows the onboarding screen ("Welcome to Claude Code", theme picker) and a connectivity
  check to api.anthropic.com that fails offline ("Unable to connect to Anthropic services … ENOTFOUND") and hangs
  there. So every test HOME gets `~/.claude.json {"hasCompletedOnboarding": true, "theme": "dark"}` (what the
  captures' "fresh HOME" also had). From there the startup dialogs are: workspace trust (OSC 7501
  state=blocked kind=permission msg="trust this folder"; cursor on "No, exit") -> API-key ("Do you want to use
  this API key?"; cursor on "No (recommended)") -> REPL (state=idle). The key dialog shows the key's last 20 chars.
* Pre-approval keys that skip them (write_preapproval): projects[cwd].hasTrustDialogAccepted,
  customApiKeyResponses.approved = [key[-20:]], hasSeenAutoDefaultNotice; settings.json
  skipDangerousModePermissionPrompt for --dangerously-skip-permissions (root needs IS_SANDBOX=1).
* Transcript: $HOME/.claude/projects/<cwd with non-alphanumerics -> '-'>/<session-id>.jsonl (verified; session id =
  X-Claude-Code-Session-Id). Also written: ~/.claude/history.jsonl, sessions/<pid>.json, shell-snapshots/, backups/.
* Startup timing (2-core box, load avg ~7, measured with measure_startup / through the daemon): `--version` 0.11 s;
  spawn -> first output 0.34-0.54 s; -> trust dialog (OSC blocked) 0.47-0.68 s; -> idle prompt (OSC 7501 idle)
  with full pre-approval 0.81-1.05 s. Through `litbridge serve`: create -> ready 2.5-3.5 s pre-approved,
  5.0-5.9 s answering trust + API-key dialogs (the driver waits >= 0.5 s of quiet per dialog key).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fetch_fixtures import CLAUDE_VERSION, fetch_claude
from fetch_fixtures import claude_binary as _fixture_binary

# Fake key in the shape of a real one; the API-key dialog and customApiKeyResponses use its last 20 chars.
FAKE_API_KEY = "sk-ant-api03-mockkey-abcdefghijklmnopqrstuvwxyzABCDEFGH-AA"
OFFLINE_ENV = {
    "DISABLE_TELEMETRY": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


def claude_binary() -> Path:
    """Path of the native binary installed by tests/fetch_fixtures.py (may not exist)."""
    return _fixture_binary()


_status_cache: tuple[Path | None, str] | None = None


def binary_status(fetch: bool = True) -> tuple[Path | None, str]:
    """(path, "") if the binary is installed and `--version` reports 2.1.328, else (None, reason). Cached."""
    global _status_cache
    if _status_cache is not None:
        return _status_cache
    path = claude_binary()
    if not path.exists() and fetch:
        fetch_claude()
    if not path.exists():
        _status_cache = (
            None,
            f"Claude Code {CLAUDE_VERSION} binary not installed at {path} "
            "(tests/fetch_fixtures.py needs npm and network)",
        )
        return _status_cache
    try:
        out = subprocess.run(
            [str(path), "--version"],
            capture_output=True,
            text=True,
            timeout=30,
            env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", **OFFLINE_ENV},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        _status_cache = (None, f"Claude Code binary at {path} cannot run: {exc}")
        return _status_cache
    if CLAUDE_VERSION not in out.stdout:
        _status_cache = (
            None,
            f"Claude Code binary at {path} is not {CLAUDE_VERSION}: "
            f"rc={out.returncode} {out.stdout.strip()!r} {out.stderr.strip()[:200]!r}",
        )
        return _status_cache
    _status_cache = (path, "")
    return _status_cache


def require_claude_binary() -> Path:
    """The installed binary, or `pytest.skip` with the reason (never fetches: that is tests/fetch_fixtures.py's job)."""
    import pytest

    path, reason = binary_status(fetch=False)
    if path is None:
        pytest.skip(f"{reason}; run `python tests/fetch_fixtures.py` first")
    return path


def project_slug(cwd: str | os.PathLike[str]) -> str:
    """Claude Code's project-folder name for a cwd (the >200-char hash form is not needed for test paths)."""
    slug = re.sub(r"[^a-zA-Z0-9]", "-", str(cwd))
    if len(slug) > 200:
        raise ValueError("test cwd too long for the simple slug rule")
    return slug


@dataclass
class ClaudeHome:
    """A private HOME with a working directory inside it."""

    home: Path
    cwd: Path

    @property
    def config_json(self) -> Path:
        return self.home / ".claude.json"

    @property
    def settings_json(self) -> Path:
        return self.home / ".claude" / "settings.json"

    @property
    def projects_dir(self) -> Path:
        return self.home / ".claude" / "projects" / project_slug(self.cwd)

    def transcript(self, session_id: str) -> Path:
        return self.projects_dir / f"{session_id}.jsonl"

    def transcripts(self) -> list[Path]:
        return sorted(self.projects_dir.glob("*.jsonl")) if self.projects_dir.is_dir() else []

    def read_transcript(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """Entries of the given (or the only) transcript; whole lines only, corrupt lines skipped."""
        if session_id is None:
            files = self.transcripts()
            if len(files) != 1:
                raise AssertionError(f"expected one transcript in {self.projects_dir}, found {files}")
            path = files[0]
        else:
            path = self.transcript(session_id)
        out = []
        for line in path.read_text(errors="replace").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out

    def load_config(self) -> dict[str, Any]:
        return json.loads(self.config_json.read_text()) if self.config_json.exists() else {}


def make_home(base: Path, name: str = "proj", *, onboarded: bool = True) -> ClaudeHome:
    """Create base/home and base/home/work/<name>. `onboarded` writes the minimum that avoids the onboarding
    screen (which needs api.anthropic.com); it does NOT pre-approve the trust/API-key dialogs."""
    home = base / "home"
    cwd = home / "work" / name
    cwd.mkdir(parents=True, exist_ok=True)
    (home / ".claude").mkdir(exist_ok=True)
    if onboarded:
        _merge_json(home / ".claude.json", {"hasCompletedOnboarding": True, "theme": "dark"})
    return ClaudeHome(home=home.resolve(), cwd=cwd.resolve())


def offline_env(
    home: ClaudeHome | Path,
    base_url: str,
    *,
    api_key: str = FAKE_API_KEY,
    max_retries: int | None = None,
    **extra: str,
) -> dict[str, str]:
    """A complete environment (not merged with os.environ) for running Claude Code against the mock."""
    home_path = home.home if isinstance(home, ClaudeHome) else Path(home)
    env = {
        "HOME": str(home_path),
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "SHELL": "/bin/bash",
        "USER": os.environ.get("USER", "root"),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": api_key,
        **OFFLINE_ENV,
    }
    if max_retries is not None:
        env["CLAUDE_CODE_MAX_RETRIES"] = str(max_retries)
    if os.geteuid() == 0:
        env["IS_SANDBOX"] = "1"  # lets --dangerously-skip-permissions run as root; harmless otherwise
    env.update(extra)
    return env


def write_preapproval(
    home: ClaudeHome,
    *,
    api_key: str = FAKE_API_KEY,
    trust: bool = True,
    approve_key: bool = True,
    auto_notice: bool = True,
    bypass: bool = False,
    tui: str | None = None,
    default_mode: str | None = None,
) -> None:
    """Write Claude Code's own config so the chosen startup dialogs never appear (reference §6)."""
    cfg: dict[str, Any] = {"hasCompletedOnboarding": True, "theme": "dark"}
    if trust:
        cfg["projects"] = {str(home.cwd): {"hasTrustDialogAccepted": True}}
    if approve_key:
        cfg["customApiKeyResponses"] = {"approved": [api_key[-20:]], "rejected": []}
    if auto_notice:
        cfg["hasSeenAutoDefaultNotice"] = True
    _merge_json(home.config_json, cfg)
    settings: dict[str, Any] = {}
    if bypass:
        settings["skipDangerousModePermissionPrompt"] = True
    if tui is not None:
        settings["tui"] = tui
    if default_mode is not None:
        settings["permissions"] = {"defaultMode": default_mode}
    if settings:
        home.settings_json.parent.mkdir(parents=True, exist_ok=True)
        _merge_json(home.settings_json, settings)


def _merge_json(path: Path, update: dict[str, Any]) -> None:
    data = json.loads(path.read_text()) if path.exists() else {}
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    path.write_text(json.dumps(data, indent=2))


def new_session_id() -> str:
    return str(uuid.uuid4())


def measure_startup(
    base: Path, base_url: str, *, preapproved: bool = True, timeout: float = 30.0
) -> dict[str, float]:
    """Spawn the binary under a 200x50 PTY (ptyprocess + pyte, no daemon) and time first paint, first dialog
    and the idle prompt (OSC 7501 state=idle). Used for the report and as a smoke check of the binary."""
    import threading
    import time

    import ptyprocess
    import pyte

    path, reason = binary_status()
    if path is None:
        raise RuntimeError(reason)
    home = make_home(base, "startup")
    if preapproved:
        write_preapproval(home)
    screen = pyte.Screen(200, 50)
    stream = pyte.ByteStream(screen)
    marks: dict[str, float] = {}
    t0 = time.monotonic()
    proc = ptyprocess.PtyProcess.spawn(
        [str(path)], cwd=str(home.cwd), env=offline_env(home, base_url), dimensions=(50, 200)
    )
    screen.write_process_input = lambda data: proc.write(data.encode())  # type: ignore[method-assign]
    done = threading.Event()

    def reader() -> None:
        while not done.is_set():
            try:
                data = proc.read(65536)
            except EOFError:
                return
            now = time.monotonic() - t0
            marks.setdefault("first_output", now)
            if b"\x1b]7501;?\x07" in data:
                proc.write(b"\x1b]7501;?\x07")
            if b"state=blocked" in data:
                marks.setdefault("first_dialog", now)
            stream.feed(data)
            if b"state=idle" in data:
                marks.setdefault("idle", now)
                done.set()

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    done.wait(timeout)
    marks["prompt_row"] = float(any(r.startswith("❯") for r in screen.display))
    proc.terminate(force=True)
    done.set()
    return marks
