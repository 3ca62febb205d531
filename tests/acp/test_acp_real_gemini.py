"""An editor driving the real Gemini CLI 0.61.0 through `litbridge acp --cli gemini`, offline against the mock
Gemini API (tests/fakes/mock_gemini.py, set up as the Gemini driver tests do: tests/drivers/gemini/
gemini_helpers.py): one prompt, its answer as one chunk at the turn's end (Gemini's screen shows rendered
markdown, so nothing is streamed) with the mock's exact text, end_turn.
Skipped when the CLI is not installed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from acp_helpers import acp_agent
from gemini_helpers import Daemon, make_home, offline_env
from lbd_helpers import EventClient
from mock_gemini import MockGemini

from fetch_fixtures import gemini_launcher, gemini_missing

pytestmark = [pytest.mark.real_gemini, pytest.mark.asyncio]


@pytest.fixture
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    why = gemini_missing()
    if why:
        pytest.skip(why)
    d = Daemon(tmp_path_factory.mktemp("lbd"), gemini_launcher().parent)
    yield d
    d.stop()  # `lb` (the conftest's) connects to it


async def test_prompt_gets_the_exact_answer_at_the_end(
    lb: EventClient, daemon: Daemon, tmp_path: Path
) -> None:
    h = make_home(tmp_path)
    h.trust()
    answer = "The capital of France is **Paris**.\n\n- one\n- two"
    with MockGemini() as mock:
        mock.push({"label": "qa", "text": answer, "chunk": 8})
        async with acp_agent(daemon.socket) as ed:
            meta = {"litbridge": {"cli": "gemini", "env": offline_env(h, mock.url)}}
            sid = (await ed.conn.new_session(cwd=str(h.cwd), mcp_servers=[], **meta)).session_id
            done = await ed.prompt(sid, "What is the capital of France?")
            assert done.stop_reason == "end_turn"
            assert ed.rec.text(sid) == answer
            assert len(ed.rec.of(sid, "agent_message_chunk")) == 1  # rendered markdown: whole at the end
            assert [u.title for u in ed.rec.of(sid, "session_info_update")][:1] == [sid]
            await ed.conn.close_session(session_id=sid)
        assert mock.main_requests()[-1]["last_user"] == "What is the capital of France?"
