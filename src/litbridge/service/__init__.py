"""Run `litbridge serve` as a per-user service: a systemd user unit (Linux) or a launchd agent (macOS).

`litbridge service install|uninstall|status` (see `litbridge/cli/service.py`) writes, removes and inspects the
unit. The unit starts this very interpreter (`<sys.executable> -m litbridge serve`), so a venv install keeps
working. It names no socket unless one was asked for: the daemon resolves its default when it starts (systemd
gives the user manager `$XDG_RUNTIME_DIR`), so a path computed in the installing shell (say `/tmp/litbridge-<uid>`,
a directory another user could have created first) is never frozen into the unit. The unit also sets a 077
umask, a PATH that finds the user's CLIs (`~/.local/bin`, npm's global bin, the installing shell's PATH) and
no restart loop when another daemon already owns the socket (systemd: `RestartPreventExitStatus=3`; launchd,
which restarts on any failure: `serve --already-running-ok`, which makes that case exit 0). Nothing here needs root.
"""

from __future__ import annotations

import os
import plistlib
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

UNIT_NAME = "litbridge.service"
AGENT_LABEL = "dev.litbridge"


class ServiceError(Exception):
    """Installing or controlling the service failed; the message says what to do."""


@dataclass(frozen=True)
class Unit:
    """One service definition: where it goes, what it says, how the service manager is driven."""

    manager: str  # "systemd" | "launchd"
    path: Path
    text: str
    socket: str  # the socket the daemon is expected on (the one asked for, else the default as resolved here)

    def start_commands(self) -> list[list[str]]:
        if self.manager == "systemd":
            return [
                ["systemctl", "--user", "daemon-reload"],
                ["systemctl", "--user", "enable", "--now", UNIT_NAME],
            ]
        return [["launchctl", "bootstrap", f"gui/{os.getuid()}", str(self.path)]]

    def stop_commands(self) -> list[list[str]]:
        if self.manager == "systemd":
            return [["systemctl", "--user", "disable", "--now", UNIT_NAME]]
        return [["launchctl", "bootout", f"gui/{os.getuid()}/{AGENT_LABEL}"]]

    def status_command(self) -> list[str]:
        if self.manager == "systemd":
            return ["systemctl", "--user", "is-active", UNIT_NAME]
        return ["launchctl", "print", f"gui/{os.getuid()}/{AGENT_LABEL}"]


def serve_argv(socket: str | None, *extra: str) -> list[str]:
    """The daemon's command line; `--socket` only when one was asked for (else the daemon's own default)."""
    return [sys.executable, "-m", "litbridge", "serve", *extra, *(["--socket", socket] if socket else [])]


def service_path(environ: Mapping[str, str] = os.environ) -> str:
    """PATH for the service: the installing shell's PATH, then `~/.local/bin` and npm's global bin if missing.

    A service manager starts the daemon with a minimal PATH (systemd: /usr/local/bin:/usr/bin...), where the
    CLIs installed per user (`npm install -g`, Claude Code's installer in ~/.local/bin) are not found."""
    dirs = [d for d in environ.get("PATH", "").split(os.pathsep) if d]
    dirs += [str(Path.home() / ".local" / "bin"), *filter(None, [_npm_global_bin()])]
    return os.pathsep.join(dict.fromkeys(dirs))


def _npm_global_bin() -> str | None:
    """`$(npm config get prefix)/bin` when npm is installed and that directory exists."""
    npm = shutil.which("npm")
    if npm is None:
        return None
    try:
        out = subprocess.run([npm, "config", "get", "prefix"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    prefix = out.stdout.strip()
    if out.returncode != 0 or not prefix:
        return None
    path = Path(prefix) / "bin"
    return str(path) if path.is_dir() else None


def systemd_unit(socket: str | None, path: str) -> str:
    from litbridge.daemon.server import EXIT_ALREADY_RUNNING

    exec_start = " ".join(_systemd_quote(a) for a in serve_argv(socket))
    return (
        "# Written by `litbridge service install`; `litbridge service uninstall` removes it.\n"
        "[Unit]\n"
        "Description=litbridge daemon (drives AI coding CLIs over a JSON-lines socket)\n"
        "Documentation=https://github.com/litbridge/litbridge#readme\n"
        "\n"
        "[Service]\n"
        "Type=exec\n"
        f"ExecStart={exec_start}\n"
        "# the CLIs the daemon starts are looked up on this PATH (the installing shell's, plus per-user bins)\n"
        f"Environment={_systemd_quote('PATH=' + path, expand=False)}\n"
        "UMask=0077\n"
        "Restart=on-failure\n"
        "RestartSec=2\n"
        f"# exit status {EXIT_ALREADY_RUNNING}: a live daemon already owns the socket; restarting cannot help\n"
        f"RestartPreventExitStatus={EXIT_ALREADY_RUNNING}\n"
        "# SIGTERM: the daemon kills its sessions and removes its socket\n"
        "KillSignal=SIGTERM\n"
        "TimeoutStopSec=30\n"
        "\n"
        "[Install]\n"
        "WantedBy=default.target\n"
    )


def _systemd_quote(arg: str, expand: bool = True) -> str:
    """systemd's quoting: double quotes when needed, `%` doubled (specifiers), and `$` doubled where the line
    expands variables (`expand`: ExecStart does, Environment= does not)."""
    arg = arg.replace("%", "%%")
    if expand:
        arg = arg.replace("$", "$$")
    if not arg or any(c in arg for c in " \t\"\\'") or arg != arg.strip():
        return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return arg


def launchd_plist(socket: str | None, path: str) -> str:
    """The launchd agent. launchd has no RestartPreventExitStatus: `KeepAlive{SuccessfulExit:false}` restarts
    after every non-zero exit, so "a live daemon already owns the socket" must be a successful exit
    (`serve --already-running-ok`), else launchd would retry it forever (throttled to every 10 s)."""
    logs = Path.home() / "Library" / "Logs" / "litbridge.log"
    plist = {
        "Label": AGENT_LABEL,
        "ProgramArguments": serve_argv(socket, "--already-running-ok"),
        "EnvironmentVariables": {"PATH": path},
        "Umask": 0o077,
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},  # restart after a crash, not after a clean stop or "running"
        "StandardErrorPath": str(logs),
        "StandardOutPath": str(logs),
        "ProcessType": "Background",
    }
    return plistlib.dumps(plist, sort_keys=False).decode()


def unit_for(socket: str | None = None, platform: str = sys.platform) -> Unit:
    """The unit this platform uses. `socket`: a path the user asked for, written into the unit; without it the
    unit names none and `Unit.socket` is the default path as this environment resolves it (for messages)."""
    from litbridge.daemon.paths import default_socket_path

    asked = os.path.abspath(socket) if socket else None
    sock = asked or default_socket_path()
    path = service_path()
    if platform.startswith("linux"):
        config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
        return Unit("systemd", config / "systemd" / "user" / UNIT_NAME, systemd_unit(asked, path), sock)
    if platform == "darwin":
        where = Path.home() / "Library" / "LaunchAgents" / f"{AGENT_LABEL}.plist"
        return Unit("launchd", where, launchd_plist(asked, path), sock)
    raise ServiceError(
        f"no service manager support on {platform}: run `litbridge serve --port N` from your startup tasks"
    )


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    if shutil.which(cmd[0]) is None:
        raise ServiceError(f"{cmd[0]} not found: run `{shlex.join(cmd)}` where it exists")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def install(unit: Unit, start: bool = True) -> list[str]:
    """Write the unit (replacing an older one) and, if `start`, enable and start it. -> what was done."""
    done = []
    unit.path.parent.mkdir(parents=True, exist_ok=True)
    tmp = unit.path.with_name(unit.path.name + ".tmp")
    tmp.write_text(unit.text, encoding="utf-8")
    os.replace(tmp, unit.path)
    done.append(f"wrote {unit.path}")
    if not start:
        done.append("start it with: " + " && ".join(shlex.join(c) for c in unit.start_commands()))
        return done
    if unit.manager == "launchd":  # bootstrap refuses an already-loaded agent: unload a previous one first
        _run(unit.stop_commands()[0])
    for cmd in unit.start_commands():
        out = _run(cmd)
        if out.returncode != 0:
            raise ServiceError(f"`{shlex.join(cmd)}` failed: {(out.stderr or out.stdout).strip()}")
        done.append(f"ran {shlex.join(cmd)}")
    return done


def uninstall(unit: Unit, stop: bool = True) -> list[str]:
    """Stop and disable the service (if `stop`), remove the unit file. -> what was done."""
    done = []
    if stop:
        for cmd in unit.stop_commands():
            try:
                out = _run(cmd)
            except ServiceError as exc:
                done.append(str(exc))
                continue
            done.append(f"ran {shlex.join(cmd)}" + ("" if out.returncode == 0 else " (it was not running)"))
    if unit.path.exists():
        unit.path.unlink()
        done.append(f"removed {unit.path}")
        if unit.manager == "systemd" and stop and shutil.which("systemctl"):
            _run(["systemctl", "--user", "daemon-reload"])
    else:
        done.append(f"{unit.path} was not installed")
    return done


def status(unit: Unit) -> dict[str, object]:
    """Installed? Which socket does the installed unit use? What does the service manager say? Live socket?"""
    from litbridge.daemon.paths import is_live

    info: dict[str, object] = {
        "manager": unit.manager,
        "unit": str(unit.path),
        "installed": unit.path.exists(),
    }
    installed_text = unit.path.read_text(encoding="utf-8") if unit.path.exists() else ""
    info["socket"] = _socket_of(installed_text) or unit.socket
    info["up_to_date"] = installed_text == unit.text if installed_text else None
    try:
        out = _run(unit.status_command())
        info["manager_says"] = (out.stdout.strip().splitlines() or [out.stderr.strip()])[0]
    except ServiceError as exc:
        info["manager_says"] = str(exc)
    info["daemon_listening"] = is_live(str(info["socket"]))
    return info


def _socket_of(text: str) -> str | None:
    """The `--socket` an installed unit passes (so status checks the socket that unit really uses)."""
    if text.lstrip().startswith("<?xml"):
        args = plistlib.loads(text.encode()).get("ProgramArguments", [])
    else:
        line = next((ln for ln in text.splitlines() if ln.startswith("ExecStart=")), "")
        args = shlex.split(line.partition("=")[2].replace("%%", "%").replace("$$", "$"))
    if "--socket" in args and args.index("--socket") + 1 < len(args):
        return str(args[args.index("--socket") + 1])
    return None
