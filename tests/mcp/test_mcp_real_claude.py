"""One agent driving another: the real Claude Code binary, configured with `--mcp-config` to run `litbridge mcp`,
calls the `send` tool (the mock API scripts the call) to run a command in a bash session of the same daemon, and
the command's output comes back into Claude's turn. Offline: the mock Anthropic API, a private HOME."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _front_ends import claude_daemon
from claude_env import make_home, offline_env, require_claude_binary, write_preapproval
from lbd_helpers import EventClient, ServeDaemon
from mcp_helpers import server_argv
from mock_anthropic import MockAnthropic, tool_results

pytestmark = [pytest.mark.real_claude, pytest.mark.asyncio]

TERMINAL = ("complete", "interrupted", "turn_error")


@pytest.fixture
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeDaemon]:
    yield from claude_daemon(tmp_path_factory)  # `lb` (the conftest's) connects to it


async def _create(lb: EventClient, key: str, **fields: Any) -> dict[str, Any]:
    begin = len(lb.events)
    await lb.send("create", session=key, **fields)
    return await lb.session_event(key, "ready", start=begin, timeout=90)


async def test_claude_drives_a_bash_session_through_litbridge_mcp(
    lb: EventClient, daemon: ServeDaemon, tmp_path: Path
) -> None:
    claude = require_claude_binary()
    home = make_home(tmp_path)
    write_preapproval(home)
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {"mcpServers": {"litbridge": {"command": sys.executable, "args": server_argv(daemon.socket)}}}
        )
    )
    await _create(
        lb, "worker", cli="bash", args=["--norc", "--noprofile"], env={"PS1": "$ "}, working_dir=str(tmp_path)
    )
    with MockAnthropic() as mock:
        mock.push(
            {
                "label": "drive",
                "blocks": [
                    {
                        "type": "tool_use",
                        "name": "mcp__litbridge__send",
                        "id": "toolu_mcp_1",
                        "input": {"session": "worker", "prompt": "echo agent-$((6*7))", "timeout": 60},
                    }
                ],
            },
            {"label": "report", "text": "The worker answered."},
        )
        await _create(
            lb,
            "boss",
            cli=str(claude),
            args=["--mcp-config", str(config), "--allowedTools", "mcp__litbridge__send"],
            working_dir=str(home.cwd),
            env=offline_env(home, mock.url),
        )
        begin = len(lb.events)
        await lb.send("send", session="boss", content="Ask the worker session what 6*7 is.")
        acc = await lb.session_event("boss", "accepted", start=begin)
        end = await lb.session_event("boss", TERMINAL, start=begin, turn_id=acc["turn_id"], timeout=120)
        assert (end["event"], end["content"]) == ("complete", "The worker answered."), end

        first, second = mock.main_requests()[:2]
        # announced to the model (Claude Code defers MCP tools behind its ToolSearch: by name, not schema)
        assert "mcp__litbridge__send" in json.dumps(first["body"])
        (result,) = [r for r in tool_results(second["body"]) if r["tool_use_id"] == "toolu_mcp_1"]
        assert not result.get("is_error"), result
        content = result["content"]
        text = content if isinstance(content, str) else "".join(c.get("text", "") for c in content)
        reply = json.loads(text)  # the tool's structured result, as JSON text
        assert (reply["status"], reply["session"], reply["content"]) == ("complete", "worker", "agent-42")
    # the worker really ran it: a turn of its own, through the daemon
    worker = [e for e in lb.since("worker", begin) if e["event"] == "complete"]
    assert [e["content"] for e in worker] == ["agent-42"]
    used = [e for e in lb.since("boss", begin) if e["event"] == "tool_use"]
    assert [(u["name"], u["input"]["session"]) for u in used] == [("mcp__litbridge__send", "worker")]
