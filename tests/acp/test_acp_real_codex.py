"""An editor driving the real Codex CLI 0.169.0 through `litbridge acp --cli codex`, offline against the mock
Responses API (tests/fakes/mock_openai.py, set up as the Codex driver tests do: tests/drivers/codex/codex_env.py):
a prompt's reasoning summary reaches the editor as a thought and its answer as one chunk at the turn's end, the
mock's exact text (Codex's screen shows rendered markdown, so nothing is streamed); Codex's todo list
(`update_plan`) reaches the editor as its plan; an approval (a command run with escalated permissions) is a
session/request_permission whose allow runs the command and completes the tool call. Skipped when the binary
cannot run here."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from acp import schema as S
from acp_helpers import acp_agent
from codex_env import Daemon, make_home, provider_args, require_codex_binary, shell_approval_script
from lbd_helpers import EventClient
from mock_openai import MockOpenAI

pytestmark = pytest.mark.asyncio


@pytest.fixture
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    d = Daemon(tmp_path_factory.mktemp("lbd"), require_codex_binary())
    yield d
    d.stop()  # `lb` (the conftest's) connects to it


def _meta(home: Path, mock: MockOpenAI) -> dict[str, object]:
    return {
        "litbridge": {
            "cli": "codex",
            "args": provider_args(mock.url),
            "env": {"HOME": str(home), "LB_MOCK_KEY": "sk-mock-test"},
        }
    }


async def test_prompt_gets_the_exact_answer_at_the_end(
    lb: EventClient, daemon: Daemon, tmp_path: Path
) -> None:
    h = make_home(tmp_path)
    answer = "The capital of France is **Paris**.\n\n- one\n- two"
    with MockOpenAI() as mock:
        mock.push(
            {
                "label": "qa",
                "items": [
                    {"type": "reasoning", "summary": "Recalling the capital."},
                    {"type": "message", "text": answer},
                ],
                "chunk": 8,
            }
        )
        async with acp_agent(daemon.socket, "--opt", "preapprove=true") as ed:
            sid = (
                await ed.conn.new_session(cwd=str(h.cwd), mcp_servers=[], **_meta(h.home, mock))
            ).session_id
            done = await ed.prompt(sid, "What is the capital of France?")
            assert done.stop_reason == "end_turn"
            assert ed.rec.text(sid) == answer
            assert len(ed.rec.of(sid, "agent_message_chunk")) == 1  # rendered markdown: whole at the end
            # the rollout's reasoning summary, as the model's thought
            assert ed.rec.text(sid, "agent_thought_chunk") == "Recalling the capital."
            assert done.usage is not None and done.usage.input_tokens > 0
            await ed.conn.close_session(session_id=sid)
        assert [r["last_user"] for r in mock.main_requests()] == ["What is the capital of France?"]


async def test_plan_then_an_allowed_approval(lb: EventClient, daemon: Daemon, tmp_path: Path) -> None:
    h = make_home(tmp_path)
    steps = [
        {"step": "Look around", "status": "completed"},
        {"step": "Create the file", "status": "in_progress"},
    ]

    def allow(options: list[S.PermissionOption]) -> str:
        return next(o for o in options if o.kind == "allow_once").option_id

    with MockOpenAI() as mock:
        mock.push(
            {
                "label": "plan",
                "items": [{"type": "function_call", "name": "update_plan", "arguments": {"plan": steps}}],
            },
            {"label": "planned", "text": "Planned."},
            *shell_approval_script("touch made_by_acp.txt && echo hi-from-shell"),
        )
        async with acp_agent(daemon.socket, "--opt", "preapprove=true", policy=allow) as ed:
            sid = (
                await ed.conn.new_session(cwd=str(h.cwd), mcp_servers=[], **_meta(h.home, mock))
            ).session_id
            planned = await ed.prompt(sid, "Make a plan.")
            assert planned.stop_reason == "end_turn" and ed.rec.text(sid).endswith("Planned.")
            (plan,) = ed.rec.of(sid, "plan")
            assert [(e.content, e.status, e.priority) for e in plan.entries] == [
                ("Look around", "completed", "medium"),
                ("Create the file", "in_progress", "medium"),
            ]
            assert not [t for t in ed.rec.of(sid, "tool_call") if t.title.startswith("update_plan")]

            done = await ed.prompt(sid, "Please create a file with a shell command.")
            assert done.stop_reason == "end_turn"
            assert ed.rec.text(sid).endswith("Done: the file was created.")
            (req,) = ed.rec.asked
            kinds = [o.kind for o in req.options]
            assert kinds[0] == "allow_once" and kinds[-1] == "reject_once", req.options
            (call,) = [t for t in ed.rec.of(sid, "tool_call") if t.title.startswith("exec")]
            updates = [u for u in ed.rec.of(sid, "tool_call_update") if u.tool_call_id == call.tool_call_id]
            assert updates[-1].status == "completed" and "hi-from-shell" in str(updates[-1].raw_output)
            await ed.conn.close_session(session_id=sid)
        assert (h.cwd / "made_by_acp.txt").exists()
