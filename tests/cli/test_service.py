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


def _unit_lines(text: str, key: str) -> list[str]:
    return [ln.removeprefix(key + "=") for ln in text.splitlines() if ln.startswith(key + "=")]


@pytest.fixture
def fake_npm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An `npm` on PATH whose global prefix is tmp_path/npm-global (with a bin/): the unit's PATH must list it."""
    tools = tmp_path / "tools"
    tools.mkdir()
    prefix = tmp_path / "npm-global"
    (prefix / "bin").mkdir(parents=True)
    npm = tools / "npm"
    npm.write_text(f'#!/bin/sh\n[ "$1 $2 $3" = "config get prefix" ] && echo {prefix}\n')
    npm.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}/usr/bin{os.pathsep}/bin")
    return prefix / "bin"


def test_systemd_unit_bakes_no_socket_and_is_private(
    config_home: Path, fake_npm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without $XDG_RUNTIME_DIR the default socket is under /tmp: the unit must not freeze that path (systemd
    sets the variable for the daemon), must create files 0600/0700, must not loop on "already running", and
    must give the daemon a PATH on which the user's CLIs are found."""
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    unit = service.unit_for(platform="linux")
    assert unit.manager == "systemd"
    assert unit.path == config_home / "systemd" / "user" / "litbridge.service"
    assert unit.socket == default_socket_path()  # for messages only
    (exec_start,) = _unit_lines(unit.text, "ExecStart")
    assert shlex.split(exec_start) == [sys.executable, "-m", "litbridge", "serve"]
    assert "--socket" not in unit.text and default_socket_path() not in unit.text
    assert _unit_lines(unit.text, "UMask") == ["0077"]
    from litbridge.daemon.server import EXIT_ALREADY_RUNNING

    assert _unit_lines(unit.text, "RestartPreventExitStatus") == [str(EXIT_ALREADY_RUNNING)]
    (env,) = _unit_lines(unit.text, "Environment")
    path = shlex.split(env)[0].removeprefix("PATH=").split(os.pathsep)
    tools = os.environ["PATH"].split(os.pathsep)[0]
    assert path == [tools, "/usr/bin", "/bin", str(Path.home() / ".local" / "bin"), str(fake_npm)]
    assert "[Install]\nWantedBy=default.target" in unit.text and "Restart=on-failure" in unit.text


def test_systemd_unit_keeps_an_explicit_socket(config_home: Path) -> None:
    unit = service.unit_for("/run/user/1000/lb/custom.sock", platform="linux")
    (exec_start,) = _unit_lines(unit.text, "ExecStart")
    assert shlex.split(exec_start)[-2:] == ["--socket", "/run/user/1000/lb/custom.sock"]
    assert unit.socket == "/run/user/1000/lb/custom.sock" and service._socket_of(unit.text) == unit.socket


def test_systemd_quoting_of_odd_paths() -> None:
    assert service._systemd_quote("/a b/py") == '"/a b/py"'
    assert service._systemd_quote("/x/100%") == "/x/100%%"  # a systemd specifier otherwise
    assert service._systemd_quote("/x/$HOME") == "/x/$$HOME"  # an environment expansion otherwise
    assert (
        service._systemd_quote("PATH=/a b:/$x", expand=False) == '"PATH=/a b:/$x"'
    )  # Environment= expands none


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the systemd unit (launchd: plist test below)"
)
@pytest.mark.parametrize("explicit", [False, True], ids=["default-socket", "explicit-socket"])
def test_the_units_command_line_runs_a_daemon_clients_reach(config_home: Path, explicit: bool) -> None:
    """The unit's ExecStart, run as systemd would (its Environment, $XDG_RUNTIME_DIR set), serves the socket the
    clients find; a second copy exits with the status the unit's RestartPreventExitStatus names."""
    base = Path(tempfile.mkdtemp(prefix="lbs-"))  # short: AF_UNIX path limit
    sock = str(base / "svc.sock") if explicit else str(base / "litbridge" / "litbridge.sock")
    env = {"XDG_RUNTIME_DIR": str(base)}
    try:
        out = _cli("service", "install", "--no-start", *(["--socket", sock] if explicit else []), env=env)
        assert out.returncode == 0, out.stderr
        unit_path = config_home / "systemd" / "user" / "litbridge.service"
        assert (
            f"wrote {unit_path}" in out.stdout
            and "start it with: systemctl --user daemon-reload" in out.stdout
            and sock in out.stdout
        )
        text = unit_path.read_text()
        argv = shlex.split(_unit_lines(text, "ExecStart")[0])
        (unit_env,) = _unit_lines(text, "Environment")
        run_env = {k: v for k, v in os.environ.items() if k != "LITBRIDGE_SOCKET"}
        run_env.update(env, PATH=shlex.split(unit_env)[0].removeprefix("PATH="))
        proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, env=run_env
        )
        try:
            deadline = time.monotonic() + 30
            while not is_live(sock) and time.monotonic() < deadline:
                assert proc.poll() is None, "the unit's ExecStart exited"
                time.sleep(0.1)
            listed = _cli("list", "--socket", sock, "--json")
            assert listed.returncode == 0, listed.stderr
            status = _cli("service", "status", "--json", env=env)
            info = json.loads(status.stdout)
            assert status.returncode == 0 and info["installed"] is True and info["socket"] == sock
            assert info["daemon_listening"] is True
            second = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=run_env)
            assert "already" in second.stderr
            assert [str(second.returncode)] == _unit_lines(text, "RestartPreventExitStatus")
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
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake_npm: Path
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
        "--already-running-ok",
        "--socket",
        "/tmp/lb.sock",
    ]
    assert service._socket_of(unit.text) == "/tmp/lb.sock"
    assert plist["Umask"] == 63  # 0o077
    path = plist["EnvironmentVariables"]["PATH"].split(os.pathsep)
    assert str(tmp_path / ".local" / "bin") in path and str(fake_npm) in path and "/usr/bin" in path


def test_launchd_agent_bakes_no_socket_by_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    plist = plistlib.loads(service.unit_for(platform="darwin").text.encode())
    assert plist["ProgramArguments"] == [sys.executable, "-m", "litbridge", "serve", "--already-running-ok"]


def test_launchd_agent_does_not_loop_when_a_daemon_already_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """launchd has no RestartPreventExitStatus: `KeepAlive{SuccessfulExit:false}` restarts after any non-zero
    exit. So the agent's command, started while a live daemon owns the socket, must exit 0 (and leave that
    daemon alone), where plain `serve` exits 3 for systemd; once the socket is free the same command serves."""
    monkeypatch.setenv("HOME", str(tmp_path))
    base = Path(tempfile.mkdtemp(prefix="lbl-"))  # short: AF_UNIX path limit
    sock = str(base / "agent.sock")
    try:
        plist = plistlib.loads(service.unit_for(sock, platform="darwin").text.encode())
        assert plist["KeepAlive"] == {"SuccessfulExit": False}  # restarts exactly the non-zero exits
        argv = plist["ProgramArguments"]
        env = {k: v for k, v in os.environ.items() if k != "LITBRIDGE_SOCKET"}
        live = subprocess.Popen(
            [sys.executable, "-m", "litbridge", "serve", "--socket", sock],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )
        try:
            deadline = time.monotonic() + 30
            while not is_live(sock) and time.monotonic() < deadline:
                assert live.poll() is None, "the first daemon exited"
                time.sleep(0.1)
            agent = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
            assert agent.returncode == 0 and "already" in agent.stderr, (agent.returncode, agent.stderr)
            plain = subprocess.run(
                [a for a in argv if a != "--already-running-ok"],
                capture_output=True,
                text=True,
                timeout=60,
                env=env,
            )
            from litbridge.daemon.server import EXIT_ALREADY_RUNNING

            assert plain.returncode == EXIT_ALREADY_RUNNING, plain.stderr  # what systemd's unit relies on
            assert live.poll() is None and is_live(sock)
        finally:
            live.send_signal(signal.SIGTERM)
            live.wait(20)
        agent_daemon = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, env=env
        )
        try:
            deadline = time.monotonic() + 30
            while not is_live(sock) and time.monotonic() < deadline:
                assert agent_daemon.poll() is None, "the agent's command exited with the socket free"
                time.sleep(0.1)
            assert is_live(sock)
        finally:
            agent_daemon.send_signal(signal.SIGTERM)
            agent_daemon.wait(20)
    finally:
        shutil.rmtree(base, ignore_errors=True)


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
