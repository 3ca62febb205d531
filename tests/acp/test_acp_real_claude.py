"""An editor driving the real Claude Code binary through `litbridge acp`: the model (the mock Anthropic API)
asks to run a Bash command, Claude's permission dialog reaches the editor as session/request_permission, the
editor allows it (the command runs, its output is the tool call's result) or rejects it (the tool call fails),
and the turn ends with the model's exact text; a prompt typed into Claude's terminal itself reaches the editor
as an organic turn; a new `litbridge acp` process loads the session with its history. Offline: the mock API, a
private HOME whose settings put Claude in manual permission mode (it asks before running a command)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _front_ends import claude_daemon
from acp import schema as S
from acp_helpers import Editor, acp_agent
from claude_env import ClaudeHome, make_home, offline_env, require_claude_binary, write_preapproval
from lbd_helpers import EventClient, ServeDaemon
from mock_anthropic import MockAnthropic, tool_results

pytestmark = [pytest.mark.real_claude, pytest.mark.asyncio]


@pytest.fixture
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeDaemon]:
    yield from claude_daemon(tmp_path_factory)  # `lb` (the conftest's) connects to it


def manual_home(tmp_path: Path) -> ClaudeHome:
    """A private HOME whose settings put Claude in manual permission mode, with no offer to switch to auto mode
    at startup (a dialog the driver leaves to a person)."""
    require_claude_binary()
    home = make_home(tmp_path)
    write_preapproval(home, default_mode="manual")
    settings = json.loads(home.settings_json.read_text())
    settings["permissions"]["disableAutoMode"] = "disable"
    home.settings_json.write_text(json.dumps(settings))
    return home


def bash_step(tool_id: str, command: str) -> dict[str, Any]:
    """The mock's answer asking to run `command` with Claude's Bash tool."""
    return {
        "label": "bash",
        "blocks": [
            {
                "type": "tool_use",
                "name": "Bash",
                "id": tool_id,
                "input": {"command": command, "description": "Create a file"},
            }
        ],
    }


async def new_claude(ed: Editor, home: ClaudeHome, mock: MockAnthropic) -> str:
    meta = {"litbridge": {"cli": str(require_claude_binary()), "env": offline_env(home, mock.url)}}
    return (await ed.conn.new_session(cwd=str(home.cwd), mcp_servers=[], **meta)).session_id


def tool_updates(ed: Editor, sid: str, tool_id: str) -> list[Any]:
    return [u for u in ed.rec.of(sid, "tool_call_update") if u.tool_call_id == tool_id]


def assert_names_the_tool_call(ed: Editor, sid: str, req: Any, real: str, shows: str) -> None:
    """The permission request names the real tool call, unless Claude had not recorded it yet: under load Claude
    Code can hold the tool call's transcript line back until the dialog is answered (seen: the line came 8.6 s
    after the dialog, with the tool's result). Then the request names a call made up for the question, started
    before the real one, which still follows, and shows what the dialog showed (the command)."""
    rid = req.tool_call.tool_call_id
    if rid == real:
        return
    starts = [
        (i, u.tool_call_id)
        for i, (s, u) in enumerate(ed.rec.updates)
        if s == sid and u.session_update == "tool_call"
    ]
    made_up = [i for i, t in starts if t == rid]
    later = [i for i, t in starts if t == real]
    assert rid.startswith("question-q") and made_up and later and made_up[0] < later[0], (rid, starts)
    assert shows in " ".join(c.content.text for c in req.tool_call.content or []), req.tool_call


def pick(kind: str, offered: list[list[S.PermissionOption]]) -> Any:
    def policy(options: list[S.PermissionOption]) -> str:
        offered.append(options)
        return next(o for o in options if o.kind == kind).option_id

    return policy


async def test_permission_request_allowed_runs_the_command(
    lb: EventClient, daemon: ServeDaemon, tmp_path: Path
) -> None:
    home = manual_home(tmp_path)
    command = "touch made_by_acp.txt && echo acp-tool-ran"
    offered: list[list[S.PermissionOption]] = []

    with MockAnthropic() as mock:
        after = [
            {"type": "thinking", "thinking": "The command ran; tell the user.", "signature": "sig"},
            {"type": "text", "text": "Created made_by_acp.txt for you."},
        ]
        mock.push(bash_step("toolu_acp_1", command), {"label": "after", "blocks": after})
        async with acp_agent(daemon.socket, policy=pick("allow_once", offered)) as ed:
            sid = await new_claude(ed, home, mock)
            done = await ed.prompt(sid, "Create the file please.")
            assert done.stop_reason == "end_turn"
            assert ed.rec.text(sid) == "Created made_by_acp.txt for you."
            # the model's reasoning, as Claude's transcript recorded it (not its spinner)
            assert ed.rec.text(sid, "agent_thought_chunk") == "The command ran; tell the user."

            (req,) = ed.rec.asked
            assert_names_the_tool_call(ed, sid, req, "toolu_acp_1", "touch made_by_acp.txt")
            kinds = [o.kind for o in req.options]
            assert kinds[0] == "allow_once" and kinds[-1] == "reject_once", req.options
            (start,) = [u for u in ed.rec.of(sid, "tool_call") if u.tool_call_id == "toolu_acp_1"]
            assert start.kind == "execute" and start.raw_input["command"] == command
            updates = tool_updates(ed, sid, "toolu_acp_1")
            statuses = [u.status for u in updates]
            assert statuses[-1] == "completed" and "in_progress" in statuses
            # the transcript's tool_result, not the turn end's closing of a call still open
            (result,) = [u for u in updates if u.raw_output is not None]
            assert result.status == "completed" and "acp-tool-ran" in str(result.raw_output)

            # a prompt typed into Claude's own terminal (as through `litbridge attach`): an organic turn, which
            # the editor following the session sees as a user message and the model's answer
            mock.push({"label": "typed", "text": "Hello from the terminal."})
            await lb.send("input", session=sid, content="Say hello.")

            async def answered() -> bool:
                return ed.rec.text(sid).endswith("Hello from the terminal.")

            deadline = asyncio.get_running_loop().time() + 90
            while not await answered():
                assert asyncio.get_running_loop().time() < deadline, ed.rec.updates[-5:]
                await asyncio.sleep(0.2)
            (user,) = ed.rec.of(sid, "user_message_chunk")
            assert user.content.text == "Say hello."  # as Claude's transcript recorded it
            await ed.conn.close_session(session_id=sid)
        assert (home.cwd / "made_by_acp.txt").exists()
        second = mock.main_requests()[1]["body"]
        (result,) = [r for r in tool_results(second) if r["tool_use_id"] == "toolu_acp_1"]
        assert "acp-tool-ran" in str(result["content"]) and not result.get("is_error")


async def test_permission_request_rejected_fails_the_tool_call(
    lb: EventClient, daemon: ServeDaemon, tmp_path: Path
) -> None:
    """The editor rejects the command: it does not run and its tool call ends `failed` with Claude's rejection as
    its output. Claude then stops the turn without asking the model again (it waits for the user to say what to
    do instead: the daemon's `interrupted`, ACP's `cancelled`); the next prompt gets the model's exact answer,
    which has seen the rejection."""
    home = manual_home(tmp_path)
    offered: list[list[S.PermissionOption]] = []

    with MockAnthropic() as mock:
        mock.push(
            bash_step("toolu_acp_no", "touch denied_by_acp.txt && echo acp-tool-ran"),
            {"label": "after", "text": "Understood, I left the file alone."},
        )
        async with acp_agent(daemon.socket, policy=pick("reject_once", offered)) as ed:
            sid = await new_claude(ed, home, mock)
            done = await ed.prompt(sid, "Create the file please.")
            (req,) = ed.rec.asked
            assert_names_the_tool_call(ed, sid, req, "toolu_acp_no", "touch denied_by_acp.txt")
            assert [o.kind for o in offered[0]][-1] == "reject_once"
            updates = tool_updates(ed, sid, "toolu_acp_no")
            assert updates[-1].status == "failed", updates
            (result,) = [u for u in updates if u.raw_output is not None]
            assert result.status == "failed" and "rejected" in str(result.raw_output), result
            assert done.stop_reason == "cancelled"
            assert len(mock.main_requests()) == 1  # the model was not asked again in that turn
            assert ed.rec.text(sid) == ""

            again = await ed.prompt(sid, "Never mind.")
            assert again.stop_reason == "end_turn"
            assert ed.rec.text(sid) == "Understood, I left the file alone."
            await ed.conn.close_session(session_id=sid)
        assert not (home.cwd / "denied_by_acp.txt").exists()
        second = mock.main_requests()[1]["body"]
        (rejected,) = [r for r in tool_results(second) if r["tool_use_id"] == "toolu_acp_no"]
        assert rejected.get("is_error") and "acp-tool-ran" not in str(rejected["content"])


async def test_load_after_restart_replays_the_tool_call_and_the_answer(
    lb: EventClient, daemon: ServeDaemon, tmp_path: Path
) -> None:
    """A turn with an allowed tool call; the editor's `litbridge acp` exits and a new one loads the session: the
    replayed history has the tool call (its id, its result) and the model's exact answer."""
    home = manual_home(tmp_path)
    offered: list[list[S.PermissionOption]] = []

    with MockAnthropic() as mock:
        mock.push(
            bash_step("toolu_acp_load", "echo acp-load-ran"),
            {"label": "after", "text": "It printed acp-load-ran."},
        )
        async with acp_agent(daemon.socket, policy=pick("allow_once", offered)) as ed:
            sid = await new_claude(ed, home, mock)
            assert (await ed.prompt(sid, "Run the command please.")).stop_reason == "end_turn"
            assert ed.rec.text(sid) == "It printed acp-load-ran."
        async with acp_agent(daemon.socket) as ed:  # a new ACP process: only the daemon's buffer to go by
            loaded = await ed.conn.load_session(cwd=str(home.cwd), session_id=sid, mcp_servers=[])
            assert loaded.field_meta["litbridge"]["replayed_events"] > 0
            (start,) = [u for u in ed.rec.of(sid, "tool_call") if u.tool_call_id == "toolu_acp_load"]
            assert start.kind == "execute" and start.raw_input["command"] == "echo acp-load-ran"
            (result,) = [u for u in tool_updates(ed, sid, "toolu_acp_load") if u.raw_output is not None]
            assert result.status == "completed" and "acp-load-ran" in str(result.raw_output)
            assert ed.rec.text(sid) == "It printed acp-load-ran."
            users = [u.content.text for u in ed.rec.of(sid, "user_message_chunk")]
            assert users == ["Run the command please."]
            assert ed.rec.asked == []  # the question was answered: not asked again
            await ed.conn.close_session(session_id=sid)
