"""Tests of the Anthropic Messages API mock itself (tests/fakes/mock_anthropic.py): SSE framing, scripted
sequences, error replies, the request log and the command-line entry point. No Claude Code binary needed."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

FAKES = Path(__file__).resolve().parents[2] / "fakes"

from mock_anthropic import DEFAULT_TEXT, MockAnthropic, last_user_text, tool_results  # noqa: E402
from mock_http import leave_mid_stream  # noqa: E402

TOOLS = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]


def agent_body(text: str = "hi", *, stream: bool = True, tools: bool = True, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "claude-opus-5-5",
        "max_tokens": 1000,
        "stream": stream,
        "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
        **extra,
    }
    if tools:
        body["tools"] = TOOLS
    return body


def post(
    mock: MockAnthropic, body: dict[str, Any], path: str = "/v1/messages?beta=true", timeout: float = 10
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", mock.port, timeout=timeout)
    try:
        conn.request(
            "POST",
            path,
            body=json.dumps(body),
            headers={
                "Content-Type": "application/json",
                "x-api-key": "sk-secret",
                "anthropic-version": "2023-06-01",
            },
        )
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def parse_sse(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    """Strict SSE parse: every event is exactly `event: X\\ndata: {json}\\n\\n` and data.type == X."""
    text = raw.decode()
    assert text.endswith("\n\n"), "stream must end with a blank line"
    events = []
    for block in text[:-2].split("\n\n"):
        lines = block.split("\n")
        assert len(lines) == 2 and lines[0].startswith("event: ") and lines[1].startswith("data: "), block
        name, data = lines[0][len("event: ") :], json.loads(lines[1][len("data: ") :])
        assert data["type"] == name
        events.append((name, data))
    return events


def sse_text(raw: bytes) -> str:
    return "".join(d["delta"].get("text", "") for n, d in parse_sse(raw) if n == "content_block_delta")


@pytest.fixture
def mock():
    with MockAnthropic() as m:
        yield m


def test_text_stream_framing_and_content(mock: MockAnthropic) -> None:
    mock.push({"label": "qa", "text": "Paris is the capital of France.", "chunk": 5, "delay": 0})
    status, headers, raw = post(mock, agent_body("capital?"))
    assert status == 200
    assert headers["content-type"].startswith("text/event-stream")
    assert headers["transfer-encoding"] == "chunked"
    events = parse_sse(raw)
    names = [n for n, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert names[1] == "content_block_start" and names[-3] == "content_block_stop"
    deltas = [d["delta"] for n, d in events if n == "content_block_delta"]
    assert all(d["type"] == "text_delta" for d in deltas)
    assert len(deltas) == 7  # 31 chars in chunks of 5
    assert "".join(d["text"] for d in deltas) == "Paris is the capital of France."
    start = events[0][1]["message"]
    assert (
        start["role"] == "assistant"
        and start["model"] == "claude-opus-5-5"
        and start["id"].startswith("msg_")
    )
    assert events[-2][1]["delta"]["stop_reason"] == "end_turn"
    assert events[-2][1]["usage"]["output_tokens"] >= 1


def test_thinking_and_tool_use_blocks(mock: MockAnthropic) -> None:
    mock.push(
        {
            "blocks": [
                {"type": "thinking", "thinking": "Let me think."},
                {"type": "text", "text": "Running it."},
                {
                    "type": "tool_use",
                    "name": "Bash",
                    "id": "toolu_1",
                    "input": {"command": "echo " + "x" * 200, "description": "echo"},
                },
            ],
            "delay": 0,
        }
    )
    _, _, raw = post(mock, agent_body())
    events = parse_sse(raw)
    starts = [d["content_block"] for n, d in events if n == "content_block_start"]
    assert [b["type"] for b in starts] == ["thinking", "text", "tool_use"]
    assert starts[2] == {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}
    by_index: dict[int, list[dict[str, Any]]] = {}
    for n, d in events:
        if n == "content_block_delta":
            by_index.setdefault(d["index"], []).append(d["delta"])
    assert "".join(d["thinking"] for d in by_index[0] if d["type"] == "thinking_delta") == "Let me think."
    assert by_index[0][-1]["type"] == "signature_delta"
    json_text = "".join(d["partial_json"] for d in by_index[2])
    assert len(by_index[2]) > 1  # the input is streamed in several pieces
    assert json.loads(json_text) == {"command": "echo " + "x" * 200, "description": "echo"}
    assert next(d for n, d in events if n == "message_delta")["delta"]["stop_reason"] == "tool_use"


def test_script_order_times_and_default_when_exhausted(mock: MockAnthropic) -> None:
    mock.push(
        {"label": "a", "text": "one", "delay": 0},
        {"label": "b", "status": 529, "times": 2},
        {"label": "c", "text": "three", "delay": 0},
    )
    results = [post(mock, agent_body(f"q{i}")) for i in range(5)]
    assert [s for s, _, _ in results] == [200, 529, 529, 200, 200]
    assert [r["label"] for r in mock.requests] == ["a", "b", "b", "c", "default"]
    assert [r["scripted"] for r in mock.requests] == [True, True, True, True, False]
    texts = [sse_text(raw) for s, _, raw in results if s == 200]
    assert texts == ["one", "three", DEFAULT_TEXT]
    assert mock.remaining == 0


def test_persistent_http_500_error_shape(mock: MockAnthropic) -> None:
    mock.push({"status": 500, "persistent": True}, {"text": "never served"})
    for _ in range(3):
        status, headers, raw = post(mock, agent_body())
        assert status == 500
        assert headers["content-type"] == "application/json"
        assert json.loads(raw) == {
            "type": "error",
            "error": {"type": "api_error", "message": "Internal server error"},
        }
    assert [e["status"] for e in mock.events if e["event"] == "http_error"] == [500, 500, 500]
    mock.set_script([{"text": "recovered", "delay": 0}])
    assert post(mock, agent_body())[0] == 200


def test_error_headers_and_sse_error_event(mock: MockAnthropic) -> None:
    mock.push(
        {"status": 429, "headers": {"retry-after": "1"}},
        {"text": "partial", "sse_error": "overloaded_error", "delay": 0},
    )
    status, headers, raw = post(mock, agent_body())
    assert status == 429 and headers["retry-after"] == "1"
    assert json.loads(raw)["error"]["type"] == "rate_limit_error"
    status, _, raw = post(mock, agent_body())
    events = parse_sse(raw)
    assert status == 200 and events[-1][0] == "error"
    assert events[-1][1]["error"]["type"] == "overloaded_error"
    assert "message_stop" not in [n for n, _ in events]


def test_drop_closes_connection_without_reply(mock: MockAnthropic) -> None:
    mock.push({"drop": True})
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        post(mock, agent_body())
    assert mock.events[-1]["event"] == "dropped"


def test_request_log_and_non_agent_requests(mock: MockAnthropic) -> None:
    mock.push({"label": "only", "text": "scripted", "delay": 0})
    # a request without tools (e.g. a title generation call) must not consume the script
    status, _, raw = post(mock, agent_body("title please", tools=False))
    assert status == 200 and sse_text(raw) == DEFAULT_TEXT
    status, _, raw = post(mock, agent_body("What is 2+2?", stream=False))
    assert status == 200
    msg = json.loads(raw)
    assert msg["content"] == [{"type": "text", "text": "scripted"}] and msg["stop_reason"] == "end_turn"
    assert post(mock, {"model": "m", "messages": []}, path="/v1/messages/count_tokens")[0] == 200
    assert [r["label"] for r in mock.requests] == ["default", "only", "count_tokens"]
    rec = mock.requests[1]
    assert rec["main"] and rec["last_user"] == "What is 2+2?" and rec["stream"] is False
    assert rec["body"]["tools"] == TOOLS
    assert "x-api-key" not in {k.lower() for k in rec["headers"]}
    assert rec["headers"]["anthropic-version"] == "2023-06-01"
    assert [r["rid"] for r in mock.main_requests()] == [rec["rid"]]
    assert mock.wait_for_requests(1, timeout=1) == [rec]
    with pytest.raises(TimeoutError, match="wanted 2"):
        mock.wait_for_requests(2, timeout=0.2)


def test_last_user_text_and_tool_results_helpers() -> None:
    body = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "<system-reminder>\nx</system-reminder>"},
                    {"type": "text", "text": "make a file"},
                ],
            },
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "hi"}]},
            {"role": "system", "content": "# Environment"},
        ]
    }
    assert last_user_text(body) == ""  # the last user message is a tool result
    assert tool_results(body) == [{"type": "tool_result", "tool_use_id": "t1", "content": "hi"}]
    assert last_user_text({"messages": body["messages"][:1]}) == "make a file"


def test_client_disconnect_mid_stream_is_logged(mock: MockAnthropic) -> None:
    mock.push({"label": "slow", "text": "word " * 200, "chunk": 5, "delay": 0.05})
    leave_mid_stream(mock.port, "/v1/messages", agent_body(), b"message_start")
    assert mock.wait_for_event("client_gone", "slow", timeout=30)
    assert not any(e["event"] == "message_stop" for e in mock.events)


def test_command_line_entry_point(tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    script.write_text(json.dumps({"label": "cli", "text": "from the script", "delay": 0}) + "\n")
    proc = subprocess.Popen(
        [sys.executable, str(FAKES / "mock_anthropic.py"), "--port", "0", "--script", str(script)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.startswith("mock_anthropic listening on http://127.0.0.1:"), line
        port = int(line.rsplit(":", 1)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request(
            "POST",
            "/v1/messages",
            body=json.dumps(agent_body()),
            headers={"Content-Type": "application/json"},
        )
        raw = conn.getresponse().read()
        conn.close()
        assert sse_text(raw) == "from the script"
    finally:
        proc.terminate()
        proc.wait(10)
