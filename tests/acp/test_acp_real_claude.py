"""An editor driving the real Claude Code binary through `litbridge acp`: the model (the mock Anthropic API)
asks to run a Bash command, Claude's permission dialog reaches the editor as session/request_permission, the
editor allows it, the command runs and the turn ends with the model's exact text; then a prompt typed into
Claude's terminal itself reaches the editor as an organic turn. Offline: the mock API, a
private HOME whose settings put Claude in manual permission mode (it asks before running a command)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from _front_ends import claude_daemon
from acp import schema as S
from acp_helpers import acp_agent
from claude_env import make_home, offline_env, require_claude_binary, write_preapproval
from lbd_helpers import EventClient, ServeDaemon
from mock_anthropic import MockAnthropic, tool_results

pytestmark = [pytest.mark.real_claude, pytest.mark.asyncio]


@pytest.fixture
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeDaemon]:
    yield from claude_daemon(tmp_path_factory)  # `lb` (the conftest's) connects to it


async def test_permission_request_allowed_runs_the_command(
    lb: EventClient, daemon: ServeDaemon, tmp_path: Path
) -> None:
    claude = require_claude_binary()
    home = make_home(tmp_path)
    write_preapproval(home, default_mode="manual")
    # and no offer to switch to auto mode at startup (a dialog the driver leaves to a person)
    settings = json.loads(home.settings_json.read_text())
    settings["permissions"]["disableAutoMode"] = "disable"
    home.settings_json.write_text(json.dumps(settings))
    command = "touch made_by_acp.txt && echo acp-tool-ran"
    offered: list[list[S.PermissionOption]] = []

    def allow(options: list[S.PermissionOption]) -> str:
        offered.append(options)
        return next(o for o in options if o.kind == "allow_once").option_id

    with MockAnthropic() as mock:
        mock.push(
            {
                "label": "bash",
                "blocks": [
                    {
                        "type": "tool_use",
                        "name": "Bash",
                        "id": "toolu_acp_1",
                        "input": {"command": command, "description": "Create a file"},
                    }
                ],
            },
            {"label": "after", "text": "Created made_by_acp.txt for you."},
        )
        async with acp_agent(daemon.socket, policy=allow) as ed:
            meta = {"litbridge": {"cli": str(claude), "env": offline_env(home, mock.url)}}
            sid = (await ed.conn.new_session(cwd=str(home.cwd), mcp_servers=[], **meta)).session_id
            done = await ed.prompt(sid, "Create the file please.")
            assert done.stop_reason == "end_turn"
            assert ed.rec.text(sid) == "Created made_by_acp.txt for you."

            (req,) = ed.rec.asked
            assert req.tool_call.tool_call_id == "toolu_acp_1"
            kinds = [o.kind for o in req.options]
            assert kinds[0] == "allow_once" and kinds[-1] == "reject_once", req.options
            (start,) = [u for u in ed.rec.of(sid, "tool_call") if u.tool_call_id == "toolu_acp_1"]
            assert start.kind == "execute" and start.raw_input["command"] == command
            statuses = [
                u.status for u in ed.rec.of(sid, "tool_call_update") if u.tool_call_id == "toolu_acp_1"
            ]
            assert statuses[-1] == "completed" and "in_progress" in statuses

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
            assert "typed into the CLI directly" in user.content.text
            await ed.conn.close_session(session_id=sid)
        assert (home.cwd / "made_by_acp.txt").exists()
        second = mock.main_requests()[1]["body"]
        (result,) = [r for r in tool_results(second) if r["tool_use_id"] == "toolu_acp_1"]
        assert "acp-tool-ran" in str(result["content"]) and not result.get("is_error")
