"""`litbridge acp` against a real daemon, driven by the ACP SDK's own client side: initialize, authenticate,
sessions (new with or without `_meta`, list by cwd, load, resume, close), prompts streamed as chunks, cancel,
the CLI's questions as permission requests, errors, exit. Every ACP message is checked against the SDK's
schema (acp_helpers), every daemon event against `litbridge schema` (the `watcher` fixture)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import tempfile
from pathlib import Path
from typing import Any

import pytest
from _daemon import Daemon, running_daemon, spawn, stop
from _front_ends import StdioPeer, check_no_daemon_error, until, wait_turn_running
from acp import RequestError
from acp import schema as S
from acp_helpers import acp_agent, agent_argv

from litbridge.client import Client

BASH = {"cli": "bash", "args": ["--norc", "--noprofile"], "env": {"PS1": "$ "}}


async def _sessions(c: Client) -> dict[str, Any]:
    return {s["name"]: s for s in await c.list()}


@pytest.mark.asyncio
async def test_initialize_advertises_what_is_served(daemon: Daemon, watcher: Client) -> None:
    async with acp_agent(daemon.socket) as ed:
        init = next(m for way, m in ed.checker.messages if way == "in" and "result" in m)["result"]
        caps = init["agentCapabilities"]
        assert caps["loadSession"] is True
        assert caps["promptCapabilities"] == {"image": False, "audio": False, "embeddedContext": False}
        assert caps["mcpCapabilities"] == {"http": True, "sse": True}  # what _mcp_args passes on
        assert set(caps["sessionCapabilities"]) == {"list", "resume", "close"}
        assert init["agentInfo"]["name"] == "litbridge" and init["authMethods"] == []


@pytest.mark.asyncio
async def test_authenticate_is_a_harmless_no_op(daemon: Daemon, watcher: Client) -> None:
    """No auth method is advertised, but a client that calls `authenticate` anyway gets an empty result, and the
    agent serves on as before."""
    async with acp_agent(daemon.socket) as ed:
        assert (await ed.conn.authenticate(method_id="anything")).model_dump(exclude_none=True) == {}
        sid = await ed.new({**BASH, "name": "acp-auth"})
        assert (await ed.prompt(sid, "echo still-served")).stop_reason == "end_turn"
        assert ed.rec.text(sid) == "still-served"
        await ed.conn.close_session(session_id=sid)


@pytest.mark.asyncio
async def test_cli_from_the_command_line_without_meta(
    daemon: Daemon, watcher: Client, tmp_path: Path
) -> None:
    """`litbridge acp --cli bash --arg ... --env ...` with a client that sends no `_meta`: `session/new` makes a
    bash session in the client's `cwd` with the command line's options."""
    async with acp_agent(
        daemon.socket, "--cli", "bash", "--arg=--norc", "--arg=--noprofile", "--env", "ACP_FROM_ARGV=yes"
    ) as ed:
        sid = (await ed.conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        row = (await _sessions(watcher))[sid]
        assert row["cli"] == "bash" and row["working_dir"] == str(tmp_path)
        assert (await ed.prompt(sid, 'echo "$ACP_FROM_ARGV in $PWD"')).stop_reason == "end_turn"
        assert ed.rec.text(sid) == f"yes in {tmp_path}"
        await ed.conn.close_session(session_id=sid)


@pytest.mark.asyncio
async def test_list_filtered_by_cwd(daemon: Daemon, watcher: Client, tmp_path: Path) -> None:
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    async with acp_agent(daemon.socket) as ed:
        a = await ed.conn.new_session(cwd=str(here), mcp_servers=[], litbridge={**BASH, "name": "acp-here"})
        b = await ed.conn.new_session(cwd=str(there), mcp_servers=[], litbridge={**BASH, "name": "acp-there"})
        assert {a.session_id, b.session_id} == {"acp-here", "acp-there"}
        listed = (await ed.conn.list_sessions(cwd=str(here))).sessions
        assert [(s.session_id, s.cwd) for s in listed] == [("acp-here", str(here))]
        assert (await ed.conn.list_sessions(cwd=str(tmp_path / "nowhere"))).sessions == []
        everything = {s.session_id for s in (await ed.conn.list_sessions()).sessions}
        assert {"acp-here", "acp-there"} <= everything
        for sid in ("acp-here", "acp-there"):
            await ed.conn.close_session(session_id=sid)


@pytest.mark.asyncio
async def test_session_killed_by_another_client_fails_the_waiting_prompt(
    daemon: Daemon, watcher: Client
) -> None:
    """Another client kills the session while the editor's prompt waits for its turn: the prompt ends with a
    JSON-RPC error (the session is gone), not a hang, and the agent serves on."""
    async with acp_agent(daemon.socket) as ed:
        sid = await ed.new({**BASH, "name": "acp-killed"})
        prompting = asyncio.ensure_future(ed.prompt(sid, "sleep 60; echo never"))

        async def running() -> Any:
            return (await _sessions(watcher))["acp-killed"]["turn_id"]

        await until(running, "the turn to start")
        await watcher.kill(sid)
        with pytest.raises(RequestError) as err:
            await asyncio.wait_for(prompting, 60)
        # the daemon ends the running turn as the CLI dies (`turn_error{cli_exited}`), before `killed`
        assert err.value.code == -32603 and "killed" in str(err.value), err.value
        assert err.value.data["code"] == "turn_error" and err.value.data["kind"] == "cli_exited"
        with pytest.raises(RequestError) as err:
            await ed.prompt(sid, "echo gone")
        assert err.value.code == -32002
        assert (await ed.conn.list_sessions(cwd="/nowhere")).sessions == []


@pytest.mark.asyncio
async def test_bash_prompt_streams_the_output_and_ends_the_turn(daemon: Daemon, watcher: Client) -> None:
    async with acp_agent(daemon.socket) as ed:
        sid = await ed.new({**BASH, "name": "acp-sh"})
        assert sid == "acp-sh"
        assert (await _sessions(watcher))["acp-sh"]["cli"] == "bash"
        done = await ed.prompt(sid, "for i in 1 2 3; do echo line$i; sleep 0.3; done")
        assert done.stop_reason == "end_turn"
        assert ed.rec.text(sid) == "line1\nline2\nline3"
        assert ed.rec.of(sid, "user_message_chunk") == []  # the editor shows its own prompt

        failed = await ed.prompt(sid, "echo oops; false")
        assert failed.stop_reason == "end_turn" and failed.field_meta["litbridge"]["exit_code"] == 1
        assert ed.rec.text(sid).endswith("oops")


@pytest.mark.asyncio
async def test_a_long_streamed_answer_joins_to_the_final_text(daemon: Daemon, watcher: Client) -> None:
    """The agent's client gets the text as `append` deltas on the wire; the chunks it streams join to exactly
    the turn's final text."""
    async with acp_agent(daemon.socket) as ed:
        sid = await ed.new({**BASH, "name": "acp-long"})
        done = await ed.prompt(
            sid, 'for i in $(seq 1 800); do echo "line $i of the answer"; (( i % 40 )) || sleep 0.03; done'
        )
        assert done.stop_reason == "end_turn"
        chunks = ed.rec.of(sid, "agent_message_chunk")
        assert len(chunks) > 1, "streamed, not sent once at the end"
        assert ed.rec.text(sid) == "\n".join(f"line {i} of the answer" for i in range(1, 801))


@pytest.mark.asyncio
async def test_cancel_during_a_long_command(daemon: Daemon, watcher: Client) -> None:
    async with acp_agent(daemon.socket) as ed:
        sid = await ed.new({**BASH, "name": "acp-cancel"})
        prompting = asyncio.ensure_future(ed.prompt(sid, "sleep 60; echo never"))

        async def running() -> Any:
            return (await _sessions(watcher))["acp-cancel"]["turn_id"]

        await until(running, "the turn to start")
        assert not prompting.done()
        await ed.conn.cancel(session_id=sid)
        done = await asyncio.wait_for(prompting, 60)
        assert done.stop_reason == "cancelled"
        assert "never" not in ed.rec.text(sid)
        again = await ed.prompt(sid, "echo after")
        assert again.stop_reason == "end_turn" and ed.rec.text(sid).endswith("after")


@pytest.mark.asyncio
async def test_question_becomes_a_permission_request_and_the_choice_answers_it(
    daemon: Daemon, watcher: Client
) -> None:
    """The fake rift asks `Pick a colour`: the editor gets session/request_permission with one option per
    choice, its choice is the answer, and the turn ends."""
    picked: list[list[S.PermissionOption]] = []

    def pick_blue(options: list[S.PermissionOption]) -> str:
        picked.append(options)
        return next(o for o in options if o.name == "blue").option_id

    async with acp_agent(daemon.socket, policy=pick_blue) as ed:
        sid = await ed.new({"cli": "rift", "name": "acp-ask"})
        done = await ed.prompt(sid, "hi [ask:Pick a colour|red|blue]")
        assert done.stop_reason == "end_turn"
        (req,) = ed.rec.asked
        assert req.session_id == sid and req.tool_call.title == "Pick a colour"
        assert [(o.option_id, o.name, o.kind) for o in req.options] == [
            ("1", "red", "allow_once"),
            ("2", "blue", "allow_once"),
        ]
        # the question hangs off the tool call it came from (rift's ask_user), which then completes
        starts = ed.rec.of(sid, "tool_call")
        assert [s.tool_call_id for s in starts if s.tool_call_id == req.tool_call.tool_call_id]
        (tool,) = [s for s in starts if s.tool_call_id == req.tool_call.tool_call_id]
        assert tool.kind == "other" and tool.status == "pending"
        ends = [u for u in ed.rec.of(sid, "tool_call_update") if u.tool_call_id == tool.tool_call_id]
        assert [u.status for u in ends if u.status] == ["in_progress", "completed"]
        assert ends[-1].raw_output == "blue"


@pytest.mark.asyncio
async def test_yes_no_question_allow_and_reject(daemon: Daemon, watcher: Client) -> None:
    """Options map by meaning (yes -> allow_once, no -> reject_once); the client's reject is the CLI's `no`;
    a cancelled permission request interrupts the turn."""
    answers = iter(["allow", "reject", None])

    def policy(options: list[S.PermissionOption]) -> str | None:
        kind = {"allow": "allow_once", "reject": "reject_once"}
        want = next(answers)
        if want is None:
            return None
        return next(o for o in options if o.kind == kind[want]).option_id

    async with acp_agent(daemon.socket, policy=policy) as ed:
        sid = await ed.new({"cli": "rift", "name": "acp-yn"})
        allowed = await ed.prompt(sid, "[ask:Run it?|yes|no]")
        assert allowed.stop_reason == "end_turn"
        assert [(o.name, o.kind) for o in ed.rec.asked[0].options] == [
            ("yes", "allow_once"),
            ("no", "reject_once"),
        ]
        results = [u.raw_output for u in ed.rec.of(sid, "tool_call_update") if u.raw_output is not None]
        assert results == ["yes"]
        rejected = await ed.prompt(sid, "[ask:Run it?|yes|no]")
        assert rejected.stop_reason == "end_turn"
        results = [u.raw_output for u in ed.rec.of(sid, "tool_call_update") if u.raw_output is not None]
        assert results == ["yes", "no"]
        cancelled = await ed.prompt(sid, "[ask:Run it?|yes|no]")
        assert cancelled.stop_reason == "cancelled"
        assert len(ed.rec.asked) == 3


@pytest.mark.asyncio
async def test_choice_question_is_an_elicitation_form_permission_stays_a_permission(
    daemon: Daemon, watcher: Client
) -> None:
    """With an editor that takes forms, rift's `Pick a colour` (a multiple-choice question, not a permission) is
    an `elicitation/create` form whose accepted choice answers it; the bash approval that follows is still a
    permission request. A declined form interrupts the turn."""
    choices = iter([{"choice": "2"}, None])

    def fill(mode: S.ElicitationFormSessionMode) -> dict[str, Any] | None:
        return next(choices)

    def allow(options: list[S.PermissionOption]) -> str:
        return next(o for o in options if o.kind == "allow_once").option_id

    async with acp_agent(daemon.socket, policy=allow, elicit=fill) as ed:
        sid = await ed.new({"cli": "rift", "name": "acp-form"})
        done = await ed.prompt(sid, "[ask:Pick a colour|red|blue] [bash:echo from-bash]")
        assert done.stop_reason == "end_turn"
        ((message, mode),) = ed.rec.forms
        assert message == "Pick a colour" and mode.session_id == sid
        prop = mode.requested_schema.properties["choice"]
        assert [(o.const, o.title) for o in prop.one_of] == [("1", "red"), ("2", "blue")]
        assert mode.requested_schema.required == ["choice"]
        # the form hangs off rift's ask_user tool call, whose result is the answer
        (ask,) = [s for s in ed.rec.of(sid, "tool_call") if s.tool_call_id == mode.tool_call_id]
        assert ask.title.startswith("ask_user")
        results = [u.raw_output for u in ed.rec.of(sid, "tool_call_update") if u.raw_output is not None]
        assert results[0] == "blue" and "from-bash" in results[1]
        (perm,) = ed.rec.asked
        assert perm.tool_call.title.startswith("Allow bash")
        declined = await ed.prompt(sid, "[ask:Pick a colour|red|blue]")
        assert declined.stop_reason == "cancelled" and len(ed.rec.forms) == 2
        await ed.conn.close_session(session_id=sid)


@pytest.mark.asyncio
async def test_title_on_new_load_and_when_the_cli_reports_one(daemon: Daemon, watcher: Client) -> None:
    """The session's title is its name, sent after `session/new` answered; a title the CLI reports (OSC 7501
    `title`, base64) is sent at the end of the turn that set it, and a later `session/load` starts with it."""
    async with acp_agent(daemon.socket) as ed:
        sid = await ed.new({**BASH, "name": "acp-title"})

        async def titles() -> list[str | None]:
            return [u.title for u in ed.rec.of(sid, "session_info_update")]

        assert await until(titles, "the title") == ["acp-title"]
        # the update came after the response of session/new, which told the editor the session's id
        out = [m for way, m in ed.checker.messages if way == "in"]
        answered = next(i for i, m in enumerate(out) if "sessionId" in m.get("result", {}))
        titled = next(i for i, m in enumerate(out) if m.get("method") == "session/update")
        assert answered < titled
        osc = r"printf '\033]7501;title=%s\007' $(printf 'Fixing the login' | base64); echo set"
        assert (await ed.prompt(sid, osc)).stop_reason == "end_turn"
        assert await titles() == ["acp-title", "Fixing the login"]
        assert (await ed.prompt(sid, "echo again")).stop_reason == "end_turn"
        assert await titles() == ["acp-title", "Fixing the login"]  # unchanged: not sent again
    async with acp_agent(daemon.socket) as ed:
        await ed.conn.load_session(cwd="/tmp", session_id="acp-title", mcp_servers=[])
        assert [u.title for u in ed.rec.of("acp-title", "session_info_update")] == ["Fixing the login"]
        await ed.conn.close_session(session_id="acp-title")


@pytest.mark.asyncio
async def test_load_after_restart_replays_the_history(daemon: Daemon, watcher: Client) -> None:
    async with acp_agent(daemon.socket) as ed:
        sid = await ed.new({**BASH, "name": "acp-load"})
        assert (await ed.prompt(sid, "echo first")).stop_reason == "end_turn"
        assert (await ed.prompt(sid, "echo second")).stop_reason == "end_turn"
    assert daemon.cli("send", "acp-load", "echo third").returncode == 0  # another client's turn
    async with acp_agent(daemon.socket) as ed:  # a new ACP process: only the daemon's buffer to go by
        listed = (await ed.conn.list_sessions()).sessions
        (info,) = [s for s in listed if s.session_id == "acp-load"]
        assert info.cwd == "/tmp" and "bash" in (info.title or "")
        loaded = await ed.conn.load_session(cwd="/tmp", session_id="acp-load", mcp_servers=[])
        assert loaded.field_meta["litbridge"]["replayed_events"] > 0
        users = [u.content.text for u in ed.rec.of("acp-load", "user_message_chunk")]
        assert users == ["echo first", "echo second", "echo third"]  # the daemon's `accepted.content`
        assert ed.rec.text("acp-load") == "firstsecondthird"
        # and it is followed from now on
        assert (await ed.prompt("acp-load", "echo fourth")).stop_reason == "end_turn"
        assert ed.rec.text("acp-load").endswith("fourth")
        # a load in the same process knows the prompts it sent
        ed.rec.updates.clear()
        await ed.conn.load_session(cwd="/tmp", session_id="acp-load", mcp_servers=[])
        users = [u.content.text for u in ed.rec.of("acp-load", "user_message_chunk")]
        assert users[-1] == "echo fourth"


@pytest.mark.asyncio
async def test_load_asks_a_question_still_open(daemon: Daemon, watcher: Client) -> None:
    """An editor that went away while the CLI asked: loading the session in a new `litbridge acp` asks the
    question again, and its answer finishes the turn."""
    never = asyncio.Event()

    async def hold(options: list[S.PermissionOption]) -> str | None:
        await never.wait()
        return None

    async with acp_agent(daemon.socket, policy=hold) as ed:
        sid = await ed.new({"cli": "rift", "name": "acp-reask"})
        prompting = asyncio.ensure_future(ed.prompt(sid, "[ask:Pick a colour|red|blue]"))

        async def asked() -> bool:
            return bool(ed.rec.asked)

        await until(asked, "the permission request")
        prompting.cancel()
    async with acp_agent(daemon.socket, policy=lambda options: options[1].option_id) as ed:
        await ed.conn.load_session(cwd="/tmp", session_id=sid, mcp_servers=[])

        async def asked_again() -> bool:
            return bool(ed.rec.asked)

        await until(asked_again, "the question asked again")
        (req,) = ed.rec.asked
        assert req.tool_call.title == "Pick a colour" and [o.name for o in req.options] == ["red", "blue"]

        async def finished() -> bool:
            return ed.rec.text(sid).endswith("Done: blue")

        await until(finished, "the rest of the turn")
        await ed.conn.close_session(session_id=sid)


@pytest.mark.asyncio
async def test_organic_turn_is_shown_as_a_user_message(daemon: Daemon, watcher: Client) -> None:
    """A turn sent to the CLI by someone else (here: another client's `send`) streams to the editor that follows
    the session, with its user message (the daemon's `accepted.content`)."""
    async with acp_agent(daemon.socket) as ed:
        sid = await ed.new({**BASH, "name": "acp-other"})
        assert daemon.cli("send", "acp-other", "echo from elsewhere").returncode == 0

        async def shown() -> bool:
            return ed.rec.text(sid) == "from elsewhere"

        await until(shown, "the other client's turn")
        (user,) = ed.rec.of(sid, "user_message_chunk")
        assert user.content.text == "echo from elsewhere"


@pytest.mark.asyncio
async def test_resume_and_close(daemon: Daemon, watcher: Client) -> None:
    async with acp_agent(daemon.socket) as ed:
        sid = await ed.new({**BASH, "name": "acp-close"})
    async with acp_agent(daemon.socket) as ed:
        await ed.conn.resume_session(session_id=sid, cwd="/tmp")

        async def titled() -> bool:
            return bool(ed.rec.of(sid, "session_info_update"))

        await until(titled, "the session's title")
        assert [u.session_update for _, u in ed.rec.updates] == ["session_info_update"]  # resume: no history
        assert (await ed.prompt(sid, "echo resumed")).stop_reason == "end_turn"
        assert ed.rec.text(sid) == "resumed"
        prompting = asyncio.ensure_future(ed.prompt(sid, "sleep 60"))

        async def running() -> Any:
            return (await _sessions(watcher))["acp-close"]["turn_id"]

        await until(running, "the turn to start")
        await ed.conn.close_session(session_id=sid)
        assert (await asyncio.wait_for(prompting, 60)).stop_reason == "cancelled"  # closing cancels it
        assert "acp-close" not in await _sessions(watcher)
        with pytest.raises(RequestError) as err:
            await ed.prompt(sid, "echo gone")
        assert err.value.code == -32002 and "session not found" in str(err.value)


@pytest.mark.asyncio
async def test_errors_are_jsonrpc_errors_and_the_agent_goes_on(daemon: Daemon, watcher: Client) -> None:
    async with acp_agent(daemon.socket) as ed:
        for call in (
            ed.prompt("acp-nope", "hi"),
            ed.conn.load_session(cwd="/tmp", session_id="acp-nope", mcp_servers=[]),
            ed.conn.resume_session(session_id="acp-nope", cwd="/tmp"),
            ed.conn.close_session(session_id="acp-nope"),
        ):
            with pytest.raises(RequestError) as err:
                await call
            assert err.value.code == -32002, err.value
            assert str(err.value) == "acp-nope: session not found", err.value
            assert err.value.data == {"code": "session_not_found", "session": "acp-nope"}
        with pytest.raises(RequestError) as err:
            await ed.new({"cli": "/nonexistent/cli", "name": "acp-bad"})
        assert err.value.code == -32602 and err.value.data["code"] == "cli_not_found"
        with pytest.raises(RequestError) as err:
            await ed.new({"cli": 7})
        assert err.value.code == -32602 and "_meta.litbridge.cli" in json.dumps(err.value.data)
        sid = await ed.new({**BASH, "name": "acp-err"})
        with pytest.raises(RequestError) as err:
            await ed.conn.prompt(
                session_id=sid,
                prompt=[S.ImageContentBlock(type="image", data="AAAA", mime_type="image/png")],
            )
        assert err.value.code == -32602 and "'image' is not supported" in json.dumps(err.value.data)
        with pytest.raises(RequestError) as err:
            await ed.conn.prompt(session_id=sid, prompt=[S.TextContentBlock(type="text", text="  ")])
        assert err.value.code == -32602
        await ed.conn.cancel(session_id=sid)  # nothing running: a notification, no error and no harm
        with pytest.raises(RequestError) as err:
            await ed.conn._conn.send_request("session/frobnicate", {})
        assert err.value.code == -32601
        link = S.ResourceContentBlock(type="resource_link", name="f", uri="file:///etc/host%6Ename")
        done = await ed.conn.prompt(
            session_id=sid, prompt=[S.TextContentBlock(type="text", text="cat"), link]
        )
        assert done.stop_reason == "end_turn" and ed.rec.text(sid).strip()  # ran `cat /etc/hostname`
        await ed.conn.close_session(session_id=sid)


@pytest.mark.asyncio
async def test_daemon_gone_is_an_error_then_a_new_daemon_is_used() -> None:
    with running_daemon() as d:
        async with acp_agent(d.socket) as ed:
            sid = await ed.new({**BASH, "name": "acp-gone"})
            prompting = asyncio.ensure_future(ed.prompt(sid, "sleep 60"))
            await asyncio.sleep(1)
            stop(d.proc)
            with pytest.raises(RequestError) as err:
                await asyncio.wait_for(prompting, 60)
            # the daemon ends its sessions as it stops (the turn fails), or is just gone
            assert err.value.code == -32603, err.value
            with pytest.raises(RequestError) as err:
                await ed.conn.list_sessions()
            assert "daemon" in str(err.value)
            d.proc = spawn(d.socket, d.env, d.log)  # the same socket again: the next request reconnects
            assert (await ed.conn.list_sessions()).sessions == []


@pytest.mark.asyncio
async def test_turn_error_is_a_jsonrpc_error(daemon: Daemon, watcher: Client) -> None:
    async with acp_agent(daemon.socket) as ed:
        sid = await ed.new({**BASH, "name": "acp-exit"})
        with pytest.raises(RequestError) as err:
            await ed.prompt(sid, "exit 3")
        assert err.value.data["code"] == "turn_error" and err.value.data["kind"] == "cli_exited", err.value
        await ed.conn.close_session(session_id=sid)


def test_no_daemon_is_a_clear_error(tmp_path: Path) -> None:
    check_no_daemon_error(agent_argv, tmp_path)


def test_spawn_daemon_starts_one() -> None:
    base = tempfile.mkdtemp(prefix="lba-")
    sock = f"{base}/d.sock"
    home = f"{base}/home"
    os.mkdir(home)
    env = {**os.environ, "HOME": home, "XDG_RUNTIME_DIR": base}  # the daemon's state stays in `base`
    try:
        with StdioPeer(agent_argv(sock, "--spawn-daemon"), env=env) as agent:
            agent.send({"id": 1, "method": "session/list", "params": {}})
            assert agent.read() == {"jsonrpc": "2.0", "id": 1, "result": {"sessions": []}}
            assert agent.close_and_wait() == 0
            assert "started a daemon" in agent.stderr()
    finally:
        _stop_daemon_at(sock)


def _stop_daemon_at(sock: str) -> None:
    """Stop the daemon --spawn-daemon started (found by its socket in /proc: it is not our child)."""
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                argv = (p / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"serve" in argv and sock.encode() in argv:
                os.kill(int(p.name), signal.SIGTERM)


def test_closed_stdin_ends_the_agent_cleanly(daemon: Daemon) -> None:
    """Stdin closing ends the agent with status 0, also while a prompt waits for a turn that would run for
    minutes (the turn goes on in the daemon)."""
    assert daemon.cli("create", "acp-eof", "--cli", "bash").returncode == 0
    try:
        with StdioPeer(agent_argv(daemon.socket)) as agent:
            agent.send({"id": 0, "method": "initialize", "params": {"protocolVersion": 1}})
            assert agent.read()["result"]["protocolVersion"] == 1
            agent.send(
                {"id": 1, "method": "session/resume", "params": {"sessionId": "acp-eof", "cwd": "/tmp"}}
            )
            assert agent.read() == {"jsonrpc": "2.0", "id": 1, "result": {}}
            prompt = [{"type": "text", "text": "sleep 600"}]
            agent.send(
                {"id": 2, "method": "session/prompt", "params": {"sessionId": "acp-eof", "prompt": prompt}}
            )
            wait_turn_running(daemon)
            rc = agent.close_and_wait()
            assert rc == 0, agent.stderr()
    finally:
        daemon.cli("kill", "acp-eof")


def test_closed_stdin_while_a_permission_request_is_pending(daemon: Daemon) -> None:
    """The editor goes away while the agent waits for its answer: the agent exits 0 (the question stays open
    in the daemon, for `attach` or the next editor)."""
    assert daemon.cli("create", "acp-eof-ask", "--cli", "rift").returncode == 0
    try:
        with StdioPeer(agent_argv(daemon.socket)) as agent:
            for msg in (
                {"id": 0, "method": "initialize", "params": {"protocolVersion": 1}},
                {"id": 1, "method": "session/resume", "params": {"sessionId": "acp-eof-ask", "cwd": "/tmp"}},
                {
                    "id": 2,
                    "method": "session/prompt",
                    "params": {
                        "sessionId": "acp-eof-ask",
                        "prompt": [{"type": "text", "text": "[ask:Go?|yes|no]"}],
                    },
                },
            ):
                agent.send(msg)
            while agent.read().get("method") != "session/request_permission":
                pass  # updates, replies... until the agent asks
            rc = agent.close_and_wait()
            assert rc == 0, agent.stderr()
    finally:
        daemon.cli("kill", "acp-eof-ask")


def test_wire_deltas_stream_as_they_are_and_a_rewrite_holds_until_the_end() -> None:
    from litbridge.acp.agent import wire_delta
    from litbridge.acp.mapping import TextDeltas

    d = TextDeltas()
    chunks = []
    text = ""
    for offset, piece in ((0, "one\n"), (4, "two\n"), (8, "three")):
        text = text[:offset] + piece
        chunks.append(
            wire_delta(d, {"event": "replace", "text": text, "delta": {"offset": offset, "text": piece}})
        )
    assert chunks == ["one\n", "two\n", "three"]
    text = text[:4] + "TWO\nthree"  # earlier text rewritten: held, as for a plain `replace`
    assert (
        wire_delta(d, {"event": "replace", "text": text, "delta": {"offset": 4, "text": "TWO\nthree"}}) == ""
    )
    assert wire_delta(d, {"event": "replace", "text": text + "!"}) == ""
    assert d.finish("one\ntwo\nthree and more") == " and more"
