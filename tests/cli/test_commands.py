"""The `litbridge` client subcommands as subprocesses against a real daemon: output, exit codes, errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from _daemon import Daemon
from lbd_helpers import check_event

BASH = ["--cli", "bash", "--arg=--norc", "--arg=--noprofile", "--env", "PS1=$ "]
NO_DAEMON = "no litbridge daemon at"


def _events(stdout: str) -> list[dict]:
    """The events a `--json` command printed, each checked against `litbridge schema`."""
    events = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    for ev in events:
        check_event(ev)
    return events


@pytest.mark.parametrize(
    "argv",
    [
        ["list"],
        ["create", "x", "--cli", "bash"],
        ["send", "x", "hi"],
        ["chat", "x"],
        ["dump", "x"],
        ["kill", "x"],
        ["attach", "x"],
    ],
)
def test_friendly_error_without_daemon(tmp_path, argv: list[str]) -> None:
    sock = str(tmp_path / "nobody.sock")
    out = subprocess.run(
        [sys.executable, "-m", "litbridge", *argv, "--socket", sock],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 1, out
    assert f"{NO_DAEMON} {sock}" in out.stderr
    assert "start it with `litbridge serve`" in out.stderr
    assert "Traceback" not in out.stderr


def test_create_list_dump_kill(daemon: Daemon) -> None:
    out = daemon.cli("create", "cmds", *BASH, "--cwd", str(daemon.home))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("cmds: ready")

    again = daemon.cli("create", "cmds", *BASH, "--json")
    assert again.returncode == 0
    assert _events(again.stdout)[0]["reused"] is True

    table = daemon.cli("list")
    assert table.returncode == 0
    header, *rows = table.stdout.splitlines()
    assert header.split()[:3] == ["SESSION", "STATE", "CLI"]
    row = next(r.split() for r in rows if r.split()[0] == "cmds")
    assert row[2] == "bash"

    raw = daemon.cli("list", "--json")
    names = [s["name"] for s in _events(raw.stdout)[0]["sessions"]]
    assert "cmds" in names

    assert daemon.cli("send", "cmds", "echo dumped-$((6*7))").returncode == 0
    dump = daemon.cli("dump", "cmds")
    assert dump.returncode == 0
    first, ruler, *screen = dump.stdout.splitlines()
    assert first.startswith("session cmds  state ")
    assert set(ruler) == {"─"}
    assert "dumped-42" in screen
    full = daemon.cli("dump", "cmds", "--full")
    assert len(full.stdout.splitlines()) == 2 + 50
    as_json = _events(daemon.cli("dump", "cmds", "--json").stdout)[0]
    assert as_json["event"] == "dump" and "dumped-42" in as_json["capture"]

    killed = daemon.cli("kill", "cmds")
    assert killed.returncode == 0 and killed.stdout.startswith("cmds: killed")
    gone = daemon.cli("dump", "cmds")
    assert gone.returncode == 1 and "session_not_found" in gone.stderr


def test_create_bad_env_and_missing_cli(daemon: Daemon) -> None:
    bad = daemon.cli("create", "badenv", "--cli", "bash", "--env", "NOEQUALS")
    assert bad.returncode == 2 and "KEY=VALUE" in bad.stderr
    bad_opt = daemon.cli("create", "badopt", "--cli", "bash", "--opt", "novalue")
    assert bad_opt.returncode == 2
    opts = daemon.cli("create", "opts", *BASH, "--opt", "quiescence=0.25", "--opt", "label=plain text")
    assert opts.returncode == 0, opts.stderr
    dump = _events(daemon.cli("dump", "opts", "--json").stdout)[0]
    assert dump["quiescence"] == 0.25  # --opt values reach the driver, JSON-typed
    missing = daemon.cli("create", "nocli", "--cli", "definitely-not-a-program-xyz")
    assert missing.returncode == 1
    assert "cli_not_found" in missing.stderr or "spawn_failed" in missing.stderr


def test_send_prints_answer_and_status_lines(daemon: Daemon) -> None:
    assert daemon.cli("create", "snd", *BASH).returncode == 0
    out = daemon.cli("send", "snd", "echo first; echo second")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "first\nsecond\n"  # not a terminal: only the final text, once
    assert "· idle → thinking" in out.stderr

    raw = daemon.cli("send", "snd", "echo json", "--json")
    evs = _events(raw.stdout)
    assert evs[0]["event"] == "accepted"
    assert evs[-1]["event"] == "complete" and evs[-1]["content"] == "json"
    assert {ev["turn_id"] for ev in evs if "turn_id" in ev} == {evs[0]["turn_id"]}

    piped = daemon.cli("send", "snd", "-", input="echo from-stdin\n")
    assert piped.stdout == "from-stdin\n"

    missing = daemon.cli("send", "no-such-session", "hi")
    assert missing.returncode == 1 and "session not found" in missing.stderr


def test_send_exit_code_on_turn_error(daemon: Daemon) -> None:
    assert daemon.cli("create", "dies", *BASH).returncode == 0
    out = daemon.cli("send", "dies", "exit 7")  # the CLI exits mid-turn: turn_error{cli_exited}
    assert out.returncode == 3, (out.stdout, out.stderr)
    assert "turn failed" in out.stderr and "cli_exited" in out.stderr


def test_send_exit_code_when_interrupted(daemon: Daemon) -> None:
    py = ["--cli", sys.executable, "--arg=-q", "--arg=-u", "--arg=-i"]
    assert daemon.cli("create", "intr", *py).returncode == 0
    argv = [
        sys.executable,
        "-m",
        "litbridge",
        "send",
        "intr",
        "--socket",
        daemon.socket,
        "[(print('tick', i, flush=True), __import__('time').sleep(0.05)) for i in range(10**6)]",
    ]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # wait until the turn is running
            if "tick" in daemon.cli("dump", "intr").stdout:
                break
            time.sleep(0.2)
        import asyncio

        from litbridge.client import Client  # interrupt from another client

        async def interrupt() -> None:
            async with Client.connect(socket=daemon.socket) as c:
                await c.interrupt("intr")

        asyncio.run(interrupt())
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 4, err
    assert "interrupted" in err


def test_chat_piped_lines(daemon: Daemon) -> None:
    assert daemon.cli("create", "chatty", *BASH).returncode == 0
    out = daemon.cli(
        "chat", "chatty", input="echo one\n\n:keys NoSuchKey\necho two\n:dump\n:quit\necho never\n"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["one", "two"]
    assert "bad_key" in out.stderr  # a failed :command is reported, the chat goes on
    assert "Traceback" not in out.stderr and "Exception" not in out.stderr
    assert "· state " in out.stderr  # :dump
    raw = daemon.cli("chat", "chatty", "--json", input="echo three\n")
    evs = _events(raw.stdout)
    assert evs[0]["event"] == "accepted" and evs[-1]["event"] == "complete" and evs[-1]["content"] == "three"
    missing = daemon.cli("chat", "nobody-here", input=":quit\n")
    assert missing.returncode == 1 and "litbridge create" in missing.stderr


def test_chat_answers_a_question_inline(daemon: Daemon) -> None:
    """The fake rift asks `Pick a colour`; the next stdin line answers it by label."""
    assert daemon.cli("create", "asker", "--cli", "rift").returncode == 0
    out = daemon.cli("chat", "asker", input="hello [ask:Pick a colour|red|blue]\nblue\n:quit\n")
    assert out.returncode == 0, out.stderr
    assert "? [choice] Pick a colour" in out.stderr
    assert "2. blue" in out.stderr
    assert "question answered" in out.stderr
    assert "blue" in out.stdout


def test_send_answers_by_digit_with_answer_flag_off(daemon: Daemon) -> None:
    """`send` does not read stdin for answers unless it is a terminal; the question is still shown."""
    assert daemon.cli("create", "asker2", "--cli", "rift").returncode == 0
    argv = [
        sys.executable,
        "-m",
        "litbridge",
        "send",
        "asker2",
        "q [ask:Yes or no|yes|no]",
        "--socket",
        daemon.socket,
    ]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True
    )
    try:
        import asyncio

        from litbridge.client import Client

        async def answer() -> None:
            async with Client.connect(socket=daemon.socket) as c:
                for _ in range(300):
                    item = next(s for s in await c.list() if s["name"] == "asker2")
                    if item.get("state") == "dialog":
                        break
                    await asyncio.sleep(0.1)
                dump = await c.dump("asker2")
                assert dump["state"] == "dialog"
                await c.answer("asker2", digit=2)

        asyncio.run(answer())
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "? [" in err and "Yes or no" in err
    assert "no" in out


def test_kill_store_resume_then_create_resumes(daemon: Daemon) -> None:
    """With the fake rift (which saves sessions): kill --store-resume, and the next create resumes."""
    assert daemon.cli("create", "resumable", "--cli", "rift").returncode == 0
    assert daemon.cli("send", "resumable", "remember the word pineapple").returncode == 0
    killed = daemon.cli("kill", "resumable", "--store-resume")
    assert killed.returncode == 0 and "the next create resumes" in killed.stdout
    again = daemon.cli("create", "resumable", "--cli", "rift", "--json")
    assert again.returncode == 0, again.stderr
    assert _events(again.stdout)[0]["resumed"] is True
    recall = daemon.cli("send", "resumable", "[recall]")
    assert "pineapple" in recall.stdout


def test_send_exits_with_a_failed_shell_commands_status(daemon: Daemon) -> None:
    """`send sh false` printed nothing and exited 0: a failed command's status is shown and becomes ours."""
    assert daemon.cli("create", "status", *BASH).returncode == 0
    try:
        failed = daemon.cli("send", "status", "false")
        assert failed.returncode == 1, failed
        assert failed.stdout == "" and "· exit status 1" in failed.stderr
        seven = daemon.cli("send", "status", "(exit 7)")
        assert seven.returncode == 7 and "· exit status 7" in seven.stderr
        ok = daemon.cli("send", "status", "true")
        assert ok.returncode == 0 and "exit status" not in ok.stderr
        as_json = daemon.cli("send", "status", "false", "--json")
        assert as_json.returncode == 1 and _events(as_json.stdout)[-1]["exit_code"] == 1
    finally:
        daemon.cli("kill", "status")


def test_create_starts_the_cli_in_the_callers_directory(daemon: Daemon, tmp_path) -> None:
    """Without --cwd the CLI used to start in the daemon's $HOME; now in the directory `create` ran in."""
    here = tmp_path / "project dir"
    here.mkdir()
    assert daemon.cli("create", "here", *BASH, cwd=str(here)).returncode == 0
    try:
        assert daemon.cli("send", "here", "pwd").stdout.strip() == str(here)
    finally:
        daemon.cli("kill", "here")
    assert daemon.cli("create", "home", *BASH, "--cwd", "~", cwd=str(here)).returncode == 0
    try:  # `--cwd ~` is the caller's home
        assert daemon.cli("send", "home", "pwd").stdout.strip() == os.path.expanduser("~")
    finally:
        daemon.cli("kill", "home")


def test_kill_store_resume_says_when_nothing_was_stored(daemon: Daemon) -> None:
    """bash gives no resume token: `kill --store-resume` must not promise a resume (the daemon's reason shown)."""
    assert daemon.cli("create", "noresume", *BASH).returncode == 0
    killed = daemon.cli("kill", "noresume", "--store-resume")
    assert killed.returncode == 0 and killed.stdout.startswith("noresume: killed")
    assert (
        "the next create resumes" not in killed.stdout and "not resumable: the CLI gave no" in killed.stdout
    )


def test_serve_and_clients_share_litbridge_socket(tmp_path) -> None:
    """`serve` without --socket binds $LITBRIDGE_SOCKET, where the client subcommands look by default."""
    import os

    from _daemon import _wait_listening, stop

    sock = str(tmp_path / "env.sock")
    env = {**os.environ, "LITBRIDGE_SOCKET": sock}
    log = tmp_path / "serve.log"
    with open(log, "ab") as logf:
        proc = subprocess.Popen(
            [sys.executable, "-m", "litbridge", "serve"],
            stdout=logf,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    try:
        _wait_listening(sock, proc, log)
        out = subprocess.run(
            [sys.executable, "-m", "litbridge", "list", "--json"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        assert out.returncode == 0, out.stderr
        assert _events(out.stdout)[-1]["event"] == "sessions"
    finally:
        stop(proc)
    assert proc.returncode == 0 and not os.path.exists(sock)
