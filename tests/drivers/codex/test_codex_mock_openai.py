"""The project's mock of the OpenAI Responses API, checked over real HTTP: the SSE event sequence Codex relies on
(reference §9), tool-call items, HTTP errors, failed / dropped / truncated streams and the request log."""

from __future__ import annotations

import http.client
import json
from typing import Any

import pytest
from mock_openai import MockOpenAI, last_user_text, output_text, tool_outputs, user_texts

TITLE_META = json.dumps({"thread_source": "thread_title", "thread_id": "t-title"})
USER_META = json.dumps({"thread_source": "user", "thread_id": "t-1"})


def body(text: str, extra: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "model": "gpt-6-astra",
        "stream": True,
        "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "<environment_context>"}],
            },
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]},
            *(extra or []),
        ],
    }


def post(
    mock: MockOpenAI, payload: dict[str, Any], meta: str = USER_META
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", mock.port, timeout=10)
    try:
        conn.request(
            "POST",
            "/v1/responses",
            body=json.dumps(payload),
            headers={
                "Content-Type": "application/json",
                "Authorization": "Bearer k",
                "x-codex-turn-metadata": meta,
            },
        )
        resp = conn.getresponse()
        try:
            data = resp.read()
        except http.client.IncompleteRead as exc:
            data = exc.partial
        return resp.status, dict(resp.getheaders()), data
    finally:
        conn.close()


def sse(data: bytes) -> list[dict[str, Any]]:
    out = []
    for block in data.decode().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in lines:
            ev = json.loads(lines["data"])
            assert ev["type"] == lines["event"]
            out.append(ev)
    return out


def test_text_answer_streams_the_full_event_sequence() -> None:
    with MockOpenAI([{"label": "qa", "text": "Hello there, world.", "chunk": 5, "delay": 0}]) as mock:
        status, headers, data = post(mock, body("Say hi"))
    assert status == 200 and headers["Content-Type"].startswith("text/event-stream")
    evs = sse(data)
    assert [e["type"] for e in evs][:5] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
    ]
    assert [e["type"] for e in evs][-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert (
        "".join(e["delta"] for e in evs if e["type"] == "response.output_text.delta") == "Hello there, world."
    )
    assert [e["sequence_number"] for e in evs] == list(range(len(evs)))
    done = evs[-1]["response"]
    assert done["status"] == "completed" and done["usage"]["total_tokens"] > 0
    assert done["output"][0]["content"][0]["text"] == "Hello there, world."
    assert (
        mock.requests[0]["last_user"] == "Say hi"
        and mock.requests[0]["main"]
        and mock.requests[0]["authorized"]
    )


def test_function_and_custom_tool_calls() -> None:
    entry = {
        "items": [
            {"type": "reasoning", "summary": "Thinking it over."},
            {"type": "function_call", "name": "exec_command", "arguments": {"cmd": "ls"}},
            {
                "type": "custom_tool_call",
                "name": "exec",
                "input": "text(await tools.exec_command({cmd: 'ls'}))",
            },
        ],
        "delay": 0,
    }
    with MockOpenAI([entry]) as mock:
        _, _, data = post(mock, body("list files"))
    evs = sse(data)
    done = [e["item"] for e in evs if e["type"] == "response.output_item.done"]
    assert [i["type"] for i in done] == ["reasoning", "function_call", "custom_tool_call"]
    assert done[0]["summary"][0]["text"] == "Thinking it over."
    assert json.loads(done[1]["arguments"]) == {"cmd": "ls"} and done[1]["call_id"].startswith("call_mock_")
    args = "".join(e["delta"] for e in evs if e["type"] == "response.function_call_arguments.delta")
    assert json.loads(args) == {"cmd": "ls"}
    code = "".join(e["delta"] for e in evs if e["type"] == "response.custom_tool_call_input.delta")
    assert code == done[2]["input"] == "text(await tools.exec_command({cmd: 'ls'}))"


def test_http_errors_times_and_persistent() -> None:
    script = [
        {"label": "rl", "status": 429, "times": 2, "headers": {"retry-after": "1"}},
        {"label": "e500", "status": 500, "persistent": True},
    ]
    with MockOpenAI(script) as mock:
        r1, r2 = post(mock, body("a")), post(mock, body("a"))
        assert r1[0] == r2[0] == 429 and r1[1]["retry-after"] == "1"
        assert json.loads(r1[2])["error"]["type"] == "rate_limit_exceeded"
        assert [post(mock, body("b"))[0] for _ in range(3)] == [500, 500, 500]
        mock.set_script([{"text": "ok now", "delay": 0}])
        status, _, data = post(mock, body("c"))
        assert status == 200 and sse(data)[-1]["type"] == "response.completed"


def test_failed_dropped_and_truncated_streams() -> None:
    script = [
        {"label": "f", "failed": "mock: response.failed"},
        {"label": "d", "drop": True},
        {"label": "t", "truncate": True, "text": "partial answer", "delay": 0},
    ]
    with MockOpenAI(script) as mock:
        evs = sse(post(mock, body("x"))[2])
        assert evs[-1]["type"] == "response.failed"
        assert evs[-1]["response"]["error"]["message"] == "mock: response.failed"
        with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
            post(mock, body("x"))
        evs = sse(post(mock, body("x"))[2])
        assert evs[-1]["type"] == "response.output_item.done"
        assert "response.completed" not in [e["type"] for e in evs]
        assert [e["event"] for e in mock.events if e["event"] in ("dropped", "truncated")] == [
            "dropped",
            "truncated",
        ]


def test_title_requests_never_consume_the_script_and_when_entries_match() -> None:
    script = [
        {"label": "plain", "text": "first", "delay": 0},
        {"when": "beta", "text": "for beta", "delay": 0},
    ]
    with MockOpenAI(script, title_text="A title") as mock:
        title = sse(post(mock, body("Generate a concise title"), TITLE_META)[2])
        assert title[-1]["response"]["output"][0]["content"][0]["text"] == "A title"
        beta = sse(post(mock, body("question beta"))[2])
        assert beta[-1]["response"]["output"][0]["content"][0]["text"] == "for beta"
        plain = sse(post(mock, body("question alpha"))[2])
        assert plain[-1]["response"]["output"][0]["content"][0]["text"] == "first"
        empty = sse(post(mock, body("more"))[2])
        assert empty[-1]["response"]["output"][0]["content"][0]["text"] == mock.default_text
        assert [r["main"] for r in mock.requests] == [False, True, True, True]
        assert len(mock.main_requests()) == 3 and mock.remaining == 0


def test_request_helpers_read_codex_inputs() -> None:
    outputs = [
        {"type": "custom_tool_call", "call_id": "c1", "name": "exec", "input": "x"},
        {
            "type": "custom_tool_call_output",
            "call_id": "c1",
            "output": [{"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}],
        },
    ]
    b = body("run it", outputs)
    assert last_user_text(b) == "" and user_texts(b) == ["run it"]
    assert [output_text(o) for o in tool_outputs(b)] == ["ab"]
    aborted = body(
        "x",
        [
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "<turn_aborted>\n…"}],
            }
        ],
    )
    assert last_user_text(aborted) == "x"
