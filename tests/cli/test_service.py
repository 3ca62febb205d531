"""`litbridge service` (systemd user unit / launchd agent) and `litbridge completion` (bash, zsh, fish).

The unit files are checked by what they do: the systemd ExecStart line, parsed back the way systemd splits it,
starts a daemon on the socket the clients use; the launchd plist is a valid plist running the same command.
Service managers themselves (systemctl, launchctl) are not driven here: `--no-start` writes the files only.
"""

from __future__ import annotations

import json
import os
import plistlib
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from litbridge import service
from litbridge.daemon.paths import default_socket_path, is_live


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "config"


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "litbridge", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
    )


def test_systemd_unit_defaults_to_the_clients_socket(config_home: Path) -> None:
    unit = service.unit_for(platform="linux")
    assert unit.manager == "systemd"
    assert unit.path == config_home / "systemd" / "user" / "litbridge.service"
    assert unit.socket == os.path.abspath(default_socket_path())
    exec_start = next(line for line in unit.text.splitlines() if line.startswith("ExecStart="))
    assert shlex.split(exec_start.removeprefix("ExecStart=")) == [
        sys.executable,
        "-m",
        "litbridge",
        "serve",
        "--socket",
        unit.socket,
    ]
    assert "[Install]\nWantedBy=default.target" in unit.text and "Restart=on-failure" in unit.text


def test_systemd_quoting_of_odd_paths() -> None:
    assert service._systemd_quote("/a b/py") == '"/a b/py"'
    assert service._systemd_quote("/x/100%") == "/x/100%%"  # a systemd specifier otherwise
    assert service._systemd_quote("/x/$HOME") == "/x/$$HOME"  # an environment expansion otherwise


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the systemd unit (launchd: plist test below)"
)
def test_the_units_command_line_runs_a_daemon_clients_reach(config_home: Path) -> None:
    base = Path(tempfile.mkdtemp(prefix="lbs-"))  # short: AF_UNIX path limit
    sock = str(base / "svc.sock")
    try:
        out = _cli("service", "install", "--no-start", "--socket", sock)
        assert out.returncode == 0, out.stderr
        unit_path = config_home / "systemd" / "user" / "litbridge.service"
        assert (
            f"wrote {unit_path}" in out.stdout
            and "start it with: systemctl --user daemon-reload" in out.stdout
        )
        text = unit_path.read_text()
        argv = shlex.split(next(ln for ln in text.splitlines() if ln.startswith("ExecStart="))[10:])
        proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        try:
            deadline = time.monotonic() + 30
            while not is_live(sock) and time.monotonic() < deadline:
                assert proc.poll() is None, "the unit's ExecStart exited"
                time.sleep(0.1)
            listed = _cli("list", "--socket", sock, "--json")
            assert listed.returncode == 0, listed.stderr
            status = _cli("service", "status", "--json")
            info = json.loads(status.stdout)
            assert status.returncode == 0 and info["installed"] is True and info["socket"] == sock
            assert info["daemon_listening"] is True
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(20)
        removed = _cli("service", "uninstall", "--no-start")
        assert removed.returncode == 0 and f"removed {unit_path}" in removed.stdout
        assert not unit_path.exists()
        gone = _cli("service", "status")
        assert gone.returncode == 1 and "installed: False" in gone.stdout
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_launchd_agent_is_a_plist_running_the_same_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    unit = service.unit_for("/tmp/lb.sock", platform="darwin")
    assert unit.path == tmp_path / "Library" / "LaunchAgents" / "dev.litbridge.plist"
    plist = plistlib.loads(unit.text.encode())
    assert plist["Label"] == "dev.litbridge" and plist["RunAtLoad"] is True
    assert plist["ProgramArguments"] == [
        sys.executable,
        "-m",
        "litbridge",
        "serve",
        "--socket",
        "/tmp/lb.sock",
    ]
    assert service._socket_of(unit.text) == "/tmp/lb.sock"


def test_unsupported_platform_says_what_to_do() -> None:
    with pytest.raises(service.ServiceError, match="litbridge serve --port"):
        service.unit_for(platform="win32")


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_code_for_each_shell(shell: str) -> None:
    out = _cli("completion", shell)
    assert out.returncode == 0, out.stderr
    assert "litbridge" in out.stdout and "_ARGCOMPLETE" in out.stdout
    checker = {"bash": ["bash", "-n"], "zsh": ["zsh", "-n"], "fish": ["fish", "--no-execute"]}[shell]
    if shutil.which(checker[0]):
        syntax = subprocess.run([*checker], input=out.stdout, capture_output=True, text=True, timeout=30)
        assert syntax.returncode == 0, syntax.stderr


def _complete(line: str, tmp_path: Path) -> list[str]:
    """What the shell code gets back for `line` (argcomplete's protocol, as its bash function drives it)."""
    result = tmp_path / "completions.txt"
    env = {
        "_ARGCOMPLETE": "1",
        "_ARGCOMPLETE_IFS": "\n",
        "COMP_LINE": line,
        "COMP_POINT": str(len(line)),
        "_ARGCOMPLETE_STDOUT_FILENAME": str(result),
    }
    out = _cli(env=env)
    assert out.returncode == 0, out.stderr
    return [c.strip() for c in result.read_text().split("\n")]


def test_completion_answers_from_the_real_parser(tmp_path: Path) -> None:
    assert {"serve", "send", "service"} <= set(_complete("litbridge se", tmp_path))
    assert {"install", "uninstall", "status"} <= set(_complete("litbridge service ", tmp_path))
    assert "--store-resume" in _complete("litbridge kill work --st", tmp_path)
