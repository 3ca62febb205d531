"""What the `litbridge` command says when something is wrong, as a user sees it from a clean install.

Each message names our program and the thing asked for (session, socket path), never a traceback; a bad flag
gets the usage of the subcommand it was given to; a closed stdout ends the command quietly.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _daemon import Daemon

from litbridge.cli import common

ROOT = Path(__file__).resolve().parents[2]
BASH = ["--cli", "bash", "--arg=--norc", "--arg=--noprofile", "--env", "PS1=$ "]


def test_attach_to_a_missing_session_names_it_in_our_words(daemon: Daemon) -> None:
    out = daemon.cli("attach", "nosuch")
    assert out.returncode == 1
    assert out.stderr.startswith("litbridge: no such session 'nosuch'"), out.stderr
    assert "lit-bridge-rs" not in out.stderr and "Traceback" not in out.stderr


def test_attach_to_a_missing_session_lists_the_live_ones(daemon: Daemon) -> None:
    assert daemon.cli("create", "msg-live", *BASH).returncode == 0
    try:
        out = daemon.cli("attach", "nosuch")
        assert out.returncode == 1
        assert "no such session 'nosuch' (running: " in out.stderr and "msg-live" in out.stderr, out.stderr
    finally:
        daemon.cli("kill", "msg-live")


@pytest.mark.parametrize("argv", [["kill", "nosuch"], ["dump", "nosuch"], ["send", "nosuch", "hi"]])
def test_session_not_found_names_the_session(daemon: Daemon, argv: list[str]) -> None:
    out = daemon.cli(*argv)
    assert out.returncode == 1
    assert out.stderr.strip() == "litbridge: nosuch: session not found [session_not_found]", out.stderr


PWN = "x\x1b]0;pwn\x07y"  # would retitle the terminal (OSC 0 ... BEL) if printed raw


@pytest.mark.parametrize(
    "argv", [["dump", PWN], ["kill", PWN], ["send", PWN, "hi"], ["create", PWN, *BASH], ["attach", PWN]]
)
def test_control_characters_in_a_name_never_reach_the_terminal(daemon: Daemon, argv: list[str]) -> None:
    """The daemon refuses the name (`bad_field`, or no such session for attach); our message shows it escaped."""
    out = daemon.cli(*argv)
    assert out.returncode == 1, out
    assert "x\\x1b]0;pwn\\x07y" in out.stderr, out.stderr
    assert "\x1b" not in out.stdout + out.stderr and "\x07" not in out.stdout + out.stderr, out


def test_names_the_daemon_accepts_are_still_printed_safely(daemon: Daemon) -> None:
    """A zero-width space is not a control character (the daemon keeps it) but is invisible: every line that
    names the session shows it escaped, as attach does."""
    name = "zw\u200bname"
    created = daemon.cli("create", name, *BASH)
    assert created.returncode == 0, created.stderr
    try:
        assert created.stdout.startswith("zw\\u200bname: ready, started"), created.stdout
        assert "zw\\u200bname" in daemon.cli("list").stdout
        assert daemon.cli("dump", name).stdout.startswith("session zw\\u200bname  state ")
    finally:
        killed = daemon.cli("kill", name)
    assert killed.stdout.startswith("zw\\u200bname: killed"), killed.stdout
    missing = daemon.cli("dump", name)
    assert missing.stderr.strip() == "litbridge: zw\\u200bname: session not found [session_not_found]"


def test_error_text_escapes_a_session_named_by_the_daemon() -> None:
    """A daemon that still accepts such names (an older one) echoes them in `session`: shown escaped."""
    from litbridge.client import LitbridgeError

    exc = LitbridgeError("session_not_found", "session not found", {"session": PWN, "channel_id": "c\x9b"})
    assert common.error_text(exc) == "x\\x1b]0;pwn\\x07y:c\\x9b: session not found [session_not_found]"


def test_kill_reports_how_the_cli_really_ended(daemon: Daemon) -> None:
    assert daemon.cli("create", "msg-kill", *BASH).returncode == 0
    out = daemon.cli("kill", "msg-kill")
    assert out.returncode == 0, out.stderr
    # bash dies of the SIGHUP the kill sends its process group: said as such, not as a bare "-1"
    assert out.stdout.strip() == "msg-kill: killed (CLI ended by SIGHUP, signal 1)", out.stdout
    raw = daemon.cli("create", "msg-kill", *BASH)
    assert raw.returncode == 0
    assert '"exit_code":-1' in daemon.cli("kill", "msg-kill", "--json").stdout  # the wire keeps the number


def test_describe_exit() -> None:
    assert common.describe_exit(0) == "exit status 0"
    assert common.describe_exit(3) == "exit status 3"
    assert common.describe_exit(-15) == "ended by SIGTERM, signal 15"
    assert common.describe_exit(-200) == "ended by signal 200"
    assert common.describe_exit(None) == "exit status unknown"


def _serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`litbridge serve ARGS` run to its end (each caller's arguments make it exit at once)."""
    return subprocess.run(
        [sys.executable, "-m", "litbridge", "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        # /proc refuses new files (ENOENT even for root): the OS names only the lock file we tried to create
        ("/proc/lb.sock", "its directory /proc is not writable (creating /proc/lb.sock.lock: "),
        ("/proc/nosuchdir/lb.sock", "its directory /proc/nosuchdir does not exist and cannot be created ("),
        ("/dev/null/lb.sock", "its directory /dev/null is not a directory"),
    ],
)
def test_serve_names_the_socket_it_cannot_use(path: str, problem: str) -> None:
    out = _serve("--socket", path)
    assert out.returncode == 1
    assert f"litbridge serve: cannot listen on {path}: {problem}" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def test_serve_logs_which_emulator_it_runs(tmp_path) -> None:
    from litbridge import term

    for env, expected in (
        ({}, None),
        ({"LITBRIDGE_NO_EXTENSIONS": "1"}, "pyte fallback (LITBRIDGE_NO_EXTENSIONS=1"),
    ):
        out = _serve("--socket", "/proc/lb.sock", env=env)
        if expected is None:
            expected = "compiled core (" if term.Terminal is term.NativeTerminal else "pyte fallback ("
        assert f"emulator: {expected}" in out.stderr, out.stderr


REPLAY = ["replay", "--fast", "tests/fixtures/captures/claude/s04b_tools_chain_auto_mode"]  # ~11 KB of events


@pytest.mark.parametrize("argv", [["schema"], ["schema", "--markdown"], REPLAY])
def test_closed_stdout_ends_quietly(argv: list[str]) -> None:
    """`litbridge schema | head -1`: the reader leaves early (mid-output); no BrokenPipeError traceback."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "litbridge", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        cwd=ROOT,
    )
    assert proc.stdout is not None and proc.stderr is not None
    if hasattr(fcntl, "F_SETPIPE_SZ"):  # a one-page pipe: the command is still writing when we close it
        fcntl.fcntl(proc.stdout.fileno(), fcntl.F_SETPIPE_SZ, 4096)
    proc.stdout.read(1)
    proc.stdout.close()  # like `head -c1` exiting
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert "Task was destroyed" not in err, err


def _run_with_stdout_closed(argv: list[str]) -> subprocess.CompletedProcess[bytes]:
    """`argv` with a stdout pipe whose reader is already gone: its first write meets EPIPE."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "litbridge", *argv],
            stdout=write_end,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            timeout=60,
            cwd=ROOT,
        )
    finally:
        os.close(write_end)


def test_closed_stdout_ends_replay_quietly() -> None:
    """`litbridge replay --fast CAPTURE | head -1`: the session reports each failed write as a logged
    traceback unless replay stops at the first one."""
    out = _run_with_stdout_closed(REPLAY)
    err = out.stderr.decode()
    assert "Traceback" not in err and "BrokenPipeError" not in err and "Task was destroyed" not in err, err
    assert out.returncode == 1


@pytest.mark.parametrize("argv", [["list"], ["dump", "msg-pipe"], ["send", "msg-pipe", "echo hi"]])
def test_closed_stdout_ends_client_commands_quietly(daemon: Daemon, argv: list[str]) -> None:
    assert daemon.cli("create", "msg-pipe", *BASH).returncode == 0  # started once, then reused
    out = _run_with_stdout_closed([*argv, "--socket", daemon.socket])
    err = out.stderr.decode()
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert out.returncode == 1


@pytest.mark.parametrize(
    ("argv", "usage"),
    [
        (["list", "--bogus"], "usage: litbridge list"),
        (["kill", "x", "--bogus"], "usage: litbridge kill"),
        (["send", "x", "hi", "--nope=1"], "usage: litbridge send"),
        (["serve", "--bogus"], "usage: litbridge serve"),
    ],
)
def test_bad_flag_prints_the_subcommands_usage(argv: list[str], usage: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "litbridge", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 2
    assert out.stderr.startswith(usage), out.stderr
    assert f"error: unrecognized arguments: {argv[-1]}" in out.stderr


def test_startup_error_excerpt_drops_banner_art() -> None:
    """What a create error quotes of a CLI that exited while starting: its last lines with words, frames and
    block-letter banners (Gemini CLI's, Claude Code's box) left out."""
    from litbridge.drivers.base import meaningful_lines

    screen = [
        "",
        " ███            █████████  ██████████ ██████   ██████",
        "░░░███         ███░░░░░███░░███░░░░░█░░██████ ██████",
        "  ░░░███      ███     ░░░  ░███  █ ░  ░███░█████░███",
        "╭─── Claude Code v2.1.328 ─────────────────────────────╮",
        "│                                                      │",
        "│      Welcome back!   ▐▛███▜▌                          │",
        "╰──────────────────────────────────────────────────────╯",
        "  _ __  ___  _ __",
        " | '_ \\/ _ \\| '_ \\",
        "Error: API key not set.",
        "   Set GEMINI_API_KEY   and try again.   ",
        "",
    ]
    assert meaningful_lines(screen) == (
        "Claude Code v2.1.328\nWelcome back!\nError: API key not set.\nSet GEMINI_API_KEY and try again."
    )
    assert meaningful_lines(screen, keep=1) == "Set GEMINI_API_KEY and try again."
    assert meaningful_lines(["", "─" * 40, "█▀▀ █▀█"]) == ""


@pytest.mark.parametrize("value", ["20", "-1"])
def test_serve_refuses_a_cli_nice_out_of_range(value: str) -> None:
    out = _serve("--socket", "/proc/lb.sock", "--cli-nice", value)
    assert out.returncode == 2
    assert f"--cli-nice must be 0-19, not {value}" in out.stderr, out.stderr
