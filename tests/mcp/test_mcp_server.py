"""`litbridge mcp` against a real daemon, driven by the MCP SDK's own stdio client: tools, progress,
concurrency (interrupt while send waits), the question round trip, the transcript resource, errors, exit."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _daemon import Daemon, running_daemon, spawn, stop
from _front_ends import StdioPeer, check_no_daemon_error, until, wait_turn_running
from mcp_helpers import mcp_session, server_argv, tool, tool_error

from litbridge.client import Client

BASH = {"cli": "bash", "args": ["--norc", "--noprofile"], "env": {"PS1": "$ "}, "cwd": "/tmp"}
TOOLS = {"list_sessions", "create_session", "send", "wait", "answer", "screen", "interrupt", "kill"}


@pytest.mark.asyncio
async def test_tools_and_their_schemas(daemon: Daemon, watcher: Client) -> None:
    async with mcp_session(daemon.socket) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert set(tools) == TOOLS
        send = tools["send"].input_schema
        assert send["required"] == ["session", "prompt"]
        assert set(send["properties"]) == {"session", "prompt", "timeout"}
        create = tools["create_session"].input_schema["properties"]
        assert {"name", "cli", "cwd", "args", "worktree", "worktree_allow_dirty"} <= set(create)
        assert create["worktree_allow_dirty"]["type"] == "boolean"
        assert {"type": "boolean"} in create["worktree"]["anyOf"] and {"type": "string"} in create[
            "worktree"
        ]["anyOf"]
        assert all(t.description for t in tools.values())


@pytest.mark.asyncio
async def test_create_send_screen_list_transcript_kill(daemon: Daemon, watcher: Client) -> None:
    async with mcp_session(daemon.socket) as s:
        ready = await tool(s, "create_session", {"name": "mcp-sh", **BASH})
        assert ready["session"] == "mcp-sh" and ready["resumed"] is False
        progress: list[str] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(message or "")

        done = await tool(
            s, "send", {"session": "mcp-sh", "prompt": "echo one; echo two"}, progress_callback=on_progress
        )
        assert (done["status"], done["content"], done["exit_code"]) == ("complete", "one\ntwo", 0)
        assert "state idle -> thinking" in progress, progress  # from the turn's first event on

        failed = await tool(s, "send", {"session": "mcp-sh", "prompt": "false"})
        assert (failed["status"], failed["exit_code"]) == ("complete", 1)

        shown = await tool(s, "screen", {"session": "mcp-sh"})
        assert "$ echo one; echo two\none\ntwo\n" in shown["screen"] and shown["state"] == "idle"

        listed = (await tool(s, "list_sessions"))["sessions"]
        (row,) = [r for r in listed if r["name"] == "mcp-sh"]
        assert (row["cli"], row["state"], row["cwd"], row["pending_question"]) == (
            "bash",
            "idle",
            "/tmp",
            None,
        )

        resources = (await s.list_resources()).resources
        uri = "litbridge://session/mcp-sh/transcript"
        assert uri in [str(r.uri) for r in resources]
        text = (await s.read_resource(uri)).contents[0].text
        assert f"## Turn {done['turn_id']} (complete)" in text
        assert "> echo one; echo two\n\none\ntwo\n" in text and "exit status 1" in text

        killed = await tool(s, "kill", {"session": "mcp-sh"})
        assert killed["killed"] is True
        assert "mcp-sh" not in [r["name"] for r in (await tool(s, "list_sessions"))["sessions"]]


@pytest.mark.asyncio
async def test_interrupt_while_send_waits(daemon: Daemon, watcher: Client) -> None:
    """Tool calls run concurrently: `interrupt` ends the turn a `send` is waiting for, at once (the command
    would otherwise run 60 s and `send` return `complete`)."""
    async with mcp_session(daemon.socket) as s:
        await tool(s, "create_session", {"name": "mcp-intr", **BASH})
        sending = asyncio.ensure_future(
            tool(s, "send", {"session": "mcp-intr", "prompt": "sleep 60; echo never", "timeout": 120})
        )

        async def running() -> Any:
            rows = (await tool(s, "list_sessions"))["sessions"]
            return [r for r in rows if r["name"] == "mcp-intr" and r["turn_id"]]

        (row,) = await until(running, "the turn to start")
        assert not sending.done()
        stopped = await tool(s, "interrupt", {"session": "mcp-intr"})
        assert stopped["status"] == "interrupted" and stopped["turn_id"] == row["turn_id"]
        done = await asyncio.wait_for(sending, 60)
        assert (done["status"], done["turn_id"]) == ("interrupted", row["turn_id"])
        assert "never" not in done["content"]
        await tool(s, "kill", {"session": "mcp-intr"})


@pytest.mark.asyncio
async def test_timeout_then_wait_for_the_same_turn(daemon: Daemon, watcher: Client) -> None:
    async with mcp_session(daemon.socket) as s:
        await tool(s, "create_session", {"name": "mcp-slow", **BASH})
        early = await tool(s, "send", {"session": "mcp-slow", "prompt": "sleep 2; echo late", "timeout": 0.1})
        assert early["status"] == "timeout" and early["turn_id"]
        done = await tool(s, "wait", {"session": "mcp-slow", "turn_id": early["turn_id"], "timeout": 60})
        assert (done["status"], done["content"], done["turn_id"]) == ("complete", "late", early["turn_id"])
        again = await tool(s, "wait", {"session": "mcp-slow", "turn_id": early["turn_id"]})
        assert again == done  # a finished turn answers at once
        await tool(s, "kill", {"session": "mcp-slow"})


@pytest.mark.asyncio
async def test_question_is_returned_answered_and_the_turn_continues(daemon: Daemon, watcher: Client) -> None:
    """The fake rift asks `Pick a colour`: `send` returns the question instead of hanging, `answer` picks an
    option by label, `wait` returns the rest of the turn."""
    async with mcp_session(daemon.socket) as s:
        await tool(s, "create_session", {"name": "mcp-ask", "cli": "rift", "cwd": "/tmp"})
        asked = await tool(s, "send", {"session": "mcp-ask", "prompt": "hi [ask:Pick a colour|red|blue]"})
        assert asked["status"] == "question", asked
        assert asked["text"] == "Pick a colour" and asked["kind"] == "choice"
        assert asked["options"] == [{"digit": "1", "label": "red"}, {"digit": "2", "label": "blue"}]
        assert asked["question_id"] and asked["turn_id"]

        (row,) = [r for r in (await tool(s, "list_sessions"))["sessions"] if r["name"] == "mcp-ask"]
        assert row["pending_question"]["question_id"] == asked["question_id"]
        # reported once: waiting again does not return the same question (it times out instead)
        pending = await tool(s, "wait", {"session": "mcp-ask", "turn_id": asked["turn_id"], "timeout": 0.5})
        assert pending["status"] == "timeout"

        answered = await tool(s, "answer", {"session": "mcp-ask", "choice": "blue"})
        assert answered == {"session": "mcp-ask", "question_id": asked["question_id"], "digit": "2"}
        done = await tool(s, "wait", {"session": "mcp-ask", "turn_id": asked["turn_id"], "timeout": 60})
        assert done["status"] == "complete" and done["turn_id"] == asked["turn_id"]
        transcript = (await s.read_resource("litbridge://session/mcp-ask/transcript")).contents[0].text
        assert "tool ask_user" in transcript and "result: blue" in transcript

        # by digit, with no turn_id: `wait` follows the session's running (or else latest) turn
        asked2 = await tool(s, "send", {"session": "mcp-ask", "prompt": "[ask:Yes or no|yes|no]"})
        assert asked2["status"] == "question"
        await tool(s, "answer", {"session": "mcp-ask", "choice": "1", "question_id": asked2["question_id"]})
        done2 = await tool(s, "wait", {"session": "mcp-ask", "timeout": 60})
        assert done2["status"] == "complete" and done2["turn_id"] == asked2["turn_id"]
        await tool(s, "kill", {"session": "mcp-ask"})


@pytest.mark.asyncio
async def test_a_failed_turn_is_returned_as_turn_error(daemon: Daemon, watcher: Client) -> None:
    """The fake rift fails an `[error]` turn with a model-server 500: `send` returns `turn_error` with the
    daemon's error kind and message (and the text streamed before it), not an MCP tool error; the session
    stays usable."""
    async with mcp_session(daemon.socket) as s:
        await tool(s, "create_session", {"name": "mcp-fail", "cli": "rift", "cwd": "/tmp"})
        failed = await tool(s, "send", {"session": "mcp-fail", "prompt": "[error]", "timeout": 90})
        assert failed["status"] == "turn_error", failed
        assert failed["session"] == "mcp-fail" and failed["turn_id"]
        assert failed["error_kind"] == "api_error", failed
        assert "500 Internal Server Error" in failed["message"], failed
        assert failed.get("content", "").startswith("Starting"), failed
        transcript = (await s.read_resource("litbridge://session/mcp-fail/transcript")).contents[0].text
        assert f"## Turn {failed['turn_id']} (turn_error)" in transcript
        assert "error [api_error]: " in transcript
        done = await tool(s, "send", {"session": "mcp-fail", "prompt": "hello again", "timeout": 90})
        assert done["status"] == "complete" and done["content"], done
        await tool(s, "kill", {"session": "mcp-fail"})


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True, timeout=60)
    return done.stdout


@pytest.fixture
def dirty_repo() -> Iterator[Path]:
    """A git repository with one commit and an untracked file in its checkout (real path: git reports
    resolved paths)."""
    base = Path(tempfile.mkdtemp(prefix="lbmw-")).resolve()
    repo = base / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "t@example.invalid")
    _git(repo, "config", "user.name", "t")
    (repo / "README").write_text("hello\n")
    _git(repo, "add", "README")
    _git(repo, "commit", "-q", "-m", "first")
    (repo / "scratch.txt").write_text("not committed\n")
    yield repo
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.asyncio
async def test_create_session_in_a_worktree_and_kill_removes_it(
    daemon: Daemon, watcher: Client, dirty_repo: Path
) -> None:
    """`create_session(worktree=true)` in a git repository: refused while the main checkout is dirty, made
    with `worktree_allow_dirty`; the result names the worktree and its branch, the CLI runs there, and `kill`
    removes the clean worktree (the branch stays)."""
    repo = dirty_repo
    root = os.environ.get("LITBRIDGE_WORKTREE_ROOT")
    path = Path(root, "repo", "mcp-wt") if root else repo / ".litbridge" / "worktrees" / "mcp-wt"

    def git_state() -> tuple[bool, str, str]:
        """(the worktree directory exists, `git worktree list`, `git branch --list`)"""
        return path.exists(), _git(repo, "worktree", "list"), _git(repo, "branch", "--list")

    create = {"name": "mcp-wt", **BASH, "cwd": str(repo), "worktree": True}
    async with mcp_session(daemon.socket) as s:
        refused = await tool_error(s, "create_session", create)
        assert "worktree_failed" in refused and "uncommitted changes" in refused, refused
        exists, worktrees, branches = await asyncio.to_thread(git_state)
        assert not exists and str(path) not in worktrees and "litbridge/mcp-wt" not in branches

        ready = await tool(s, "create_session", {**create, "worktree_allow_dirty": True})
        assert ready["worktree"] == {"path": str(path), "branch": "litbridge/mcp-wt"}, ready
        done = await tool(s, "send", {"session": "mcp-wt", "prompt": "pwd; ls", "timeout": 60})
        assert done["content"] == f"{path}\nREADME", done  # the worktree, from HEAD: no scratch.txt
        (row,) = [r for r in (await tool(s, "list_sessions"))["sessions"] if r["name"] == "mcp-wt"]
        assert row["cwd"] == str(path)

        killed = await tool(s, "kill", {"session": "mcp-wt"})
        assert killed["killed"] is True
        assert killed["worktree"] == {"path": str(path), "branch": "litbridge/mcp-wt", "removed": True}
        exists, worktrees, branches = await asyncio.to_thread(git_state)
        assert not exists and str(path) not in worktrees
        assert "litbridge/mcp-wt" in branches  # the branch is kept


@pytest.mark.asyncio
async def test_errors_are_tool_errors_and_the_server_goes_on(daemon: Daemon, watcher: Client) -> None:
    async with mcp_session(daemon.socket) as s:
        for name, args in [
            ("send", {"session": "mcp-nope", "prompt": "hi"}),
            ("screen", {"session": "mcp-nope"}),
            ("interrupt", {"session": "mcp-nope"}),
            ("kill", {"session": "mcp-nope"}),
            ("wait", {"session": "mcp-nope"}),
            ("answer", {"session": "mcp-nope", "choice": "1"}),
        ]:
            message = await tool_error(s, name, args)
            assert "mcp-nope: session not found [session_not_found]" in message, (name, message)
        assert "prompt" in await tool_error(s, "send", {"session": "mcp-nope"})  # a required argument missing
        assert "timeout" in await tool_error(s, "send", {"session": "x", "prompt": "y", "timeout": -1})
        assert "cli_not_found" in await tool_error(
            s, "create_session", {"name": "mcp-bad", "cli": "/nonexistent/cli"}
        )
        await tool(s, "create_session", {"name": "mcp-err", **BASH})
        assert "no open question" in await tool_error(s, "answer", {"session": "mcp-err", "choice": "1"})
        assert "no turn seen yet" in await tool_error(s, "wait", {"session": "mcp-err"})
        assert "unknown turn" in await tool_error(s, "wait", {"session": "mcp-err", "turn_id": "t-none"})
        assert "no_turn" in await tool_error(s, "interrupt", {"session": "mcp-err"})
        assert "unknown tool" in (await tool_error(s, "frobnicate")).lower()
        done = await tool(s, "send", {"session": "mcp-err", "prompt": "echo still fine"})
        assert done["content"] == "still fine"
        await tool(s, "kill", {"session": "mcp-err"})


@pytest.mark.asyncio
async def test_daemon_gone_is_a_tool_error_then_a_new_daemon_is_used() -> None:
    with running_daemon() as d:
        async with mcp_session(d.socket) as s:
            await tool(s, "create_session", {"name": "mcp-gone", **BASH})
            stop(d.proc)
            message = await tool_error(s, "list_sessions")
            assert "daemon" in message, message
            d.proc = spawn(d.socket, d.env, d.log)  # the same socket again: the next call reconnects to it
            assert (await tool(s, "list_sessions"))["sessions"] == []  # a fresh daemon: its session is gone


def test_no_daemon_is_a_clear_error(tmp_path: Path) -> None:
    check_no_daemon_error(server_argv, tmp_path)


def test_closed_stdin_ends_the_server_cleanly(daemon: Daemon) -> None:
    """Stdin closing ends the server with status 0, also while a `send` waits for a turn that would run for
    minutes (the wait is dropped; the turn goes on in the daemon)."""
    assert daemon.cli("create", "mcp-eof", "--cli", "bash").returncode == 0
    try:
        with StdioPeer(server_argv(daemon.socket)) as server:
            client = {"name": "test", "version": "0"}
            server.send(
                {
                    "id": 1,
                    "method": "initialize",
                    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client},
                }
            )
            reply = server.read()
            assert reply["id"] == 1 and reply["result"]["serverInfo"]["name"] == "litbridge"
            server.send({"method": "notifications/initialized"})
            send = {"session": "mcp-eof", "prompt": "sleep 600", "timeout": 900}
            server.send({"id": 2, "method": "tools/call", "params": {"name": "send", "arguments": send}})
            assert daemon.cli("list").stdout.count("mcp-eof") == 1
            wait_turn_running(daemon)
            rc = server.close_and_wait()
            assert rc == 0, server.stderr()
    finally:
        daemon.cli("kill", "mcp-eof")


@pytest.mark.asyncio
async def test_transcript_uri_of_an_odd_name(daemon: Daemon, watcher: Client) -> None:
    """Names are percent-encoded in the URI and decoded once (a `%41` in the name stays `%41`)."""
    name = "mcp odd%41/ü"
    async with mcp_session(daemon.socket) as s:
        await tool(s, "create_session", {"name": name, **BASH})
        await tool(s, "send", {"session": name, "prompt": "echo odd"})
        (uri,) = [str(r.uri) for r in (await s.list_resources()).resources if "odd" in str(r.uri)]
        assert uri == "litbridge://session/mcp%20odd%2541%2F%C3%BC/transcript"
        text = (await s.read_resource(uri)).contents[0].text
        assert text.startswith(f"# litbridge session {name}\n") and "> echo odd\n\nodd\n" in text
        await tool(s, "kill", {"session": name})
