"""The project's mock Gemini API: the response shapes the real CLI accepted (reference §9), scripted errors, the
request log. Plain HTTP here; the e2e tests run the real CLI against it."""

from __future__ import annotations

import http.client
import json

import pytest
from mock_gemini import MockGemini, fill_schema, function_responses, last_user_text

MAIN = "/v1beta/models/gemini-3.8-flash:streamGenerateContent?alt=sse"
TOOLS = [{"functionDeclarations": [{"name": "run_shell_command"}]}]


def body(text: str = "hi", tools: bool = True, **extra) -> dict:
    b = {"contents": [{"role": "user", "parts": [{"text": text}]}], **extra}
    if tools:
        b["tools"] = TOOLS
    return b


def post(mock: MockGemini, path: str, payload: dict) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", mock.port, timeout=10)
    try:
        conn.request(
            "POST", path, json.dumps(payload), {"Content-Type": "application/json", "x-goog-api-key": "k"}
        )
        resp = conn.getresponse()
        return resp.status, resp.read()
    except (ConnectionError, http.client.RemoteDisconnected):
        return -1, b""
    finally:
        conn.close()


def sse(data: bytes) -> list[dict]:
    out = []
    for block in data.replace(b"\r\n", b"\n").split(b"\n\n"):
        if block.startswith(b"data: "):
            out.append(json.loads(block[6:]))
    return out


@pytest.fixture
def mock():
    with MockGemini() as m:
        yield m


def test_text_stream_chunks_and_finish_reason(mock: MockGemini) -> None:
    mock.push({"label": "qa", "text": "The capital is **Paris**.", "chunk": 10, "delay": 0})
    status, data = post(mock, MAIN, body("What is the capital of France?"))
    assert status == 200
    chunks = sse(data)
    texts = [p["text"] for c in chunks for p in c["candidates"][0]["content"]["parts"]]
    assert "".join(texts) == "The capital is **Paris**." and len(chunks) == 3
    assert [c["candidates"][0].get("finishReason") for c in chunks] == [None, None, "STOP"]
    assert all(c["candidates"][0]["content"]["role"] == "model" for c in chunks)
    req = mock.main_requests()[0]
    assert req["label"] == "qa" and req["last_user"] == "What is the capital of France?" and req["api_key"]
    assert "x-goog-api-key" not in {k.lower() for k in req["headers"]}  # the key is never logged
    assert mock.last_chunk_times() and mock.remaining == 0


def test_function_call_part(mock: MockGemini) -> None:
    call = {"name": "run_shell_command", "args": {"command": "ls", "description": "list"}}
    mock.push({"text": "I'll run it.", "function_call": call})
    chunks = sse(post(mock, MAIN, body())[1])
    parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
    assert parts == [{"text": "I'll run it."}, {"functionCall": call}]
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"


def test_http_errors_times_then_next_entry(mock: MockGemini) -> None:
    mock.push({"status": 500, "times": 2}, {"status": 429}, {"text": "ok"})
    got = [post(mock, MAIN, body()) for _ in range(4)]
    assert [s for s, _ in got] == [500, 500, 429, 200]
    err = json.loads(got[2][1])["error"]
    assert (err["code"], err["status"]) == (429, "RESOURCE_EXHAUSTED")
    assert json.loads(got[0][1])["error"]["status"] == "INTERNAL"


def test_persistent_error_until_the_script_is_replaced(mock: MockGemini) -> None:
    mock.push({"status": 500, "persistent": True})
    assert [post(mock, MAIN, body())[0] for _ in range(3)] == [500, 500, 500]
    mock.set_script([{"text": "back"}])
    assert post(mock, MAIN, body())[0] == 200


def test_in_stream_error_after_partial_text(mock: MockGemini) -> None:
    mock.push({"text": "partial text", "stream_error": 500})
    chunks = sse(post(mock, MAIN, body())[1])
    assert chunks[0]["candidates"][0]["content"]["parts"] == [{"text": "partial text"}]
    assert "finishReason" not in chunks[0]["candidates"][0]
    assert chunks[-1] == {"error": {"code": 500, "message": "mock in-stream error", "status": "INTERNAL"}}


def test_dropped_connection(mock: MockGemini) -> None:
    mock.push({"drop": True}, {"text": "after"})
    assert post(mock, MAIN, body())[0] == -1
    assert post(mock, MAIN, body())[0] == 200
    assert next(e["event"] for e in mock.events) == "dropped"


def test_router_and_side_requests_never_consume_the_script(mock: MockGemini) -> None:
    schema = {
        "type": "OBJECT",
        "properties": {"complexity_reasoning": {"type": "STRING"}, "complexity_score": {"type": "INTEGER"}},
    }
    mock.push({"label": "main", "text": "scripted"})
    status, data = post(
        mock,
        "/v1beta/models/gemini-3.5-flash-lite:generateContent",
        body(tools=False, generationConfig={"responseJsonSchema": schema}),
    )
    assert status == 200
    answer = json.loads(json.loads(data)["candidates"][0]["content"]["parts"][0]["text"])
    assert answer == {"complexity_reasoning": "mock", "complexity_score": 10}
    status, data = post(mock, "/v1beta/models/x:generateContent", body(tools=False))
    assert json.loads(data)["candidates"][0]["content"]["parts"][0]["text"] == mock.default_text
    assert mock.remaining == 1 and mock.main_requests() == []
    assert post(mock, "/v1beta/models/x:countTokens", body())[0] == 200
    assert post(mock, "/nope", body())[0] == 404


def test_helpers() -> None:
    assert fill_schema({"type": "ARRAY", "items": {"type": "BOOLEAN"}}) == [False]
    assert fill_schema({"type": "STRING", "enum": ["a", "b"]}) == "a"
    b = {
        "contents": [
            {"role": "user", "parts": [{"text": "q"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "f"}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"output": "o"}}}]},
        ]
    }
    assert last_user_text(b) == ""
    assert function_responses(b) == [{"name": "f", "response": {"output": "o"}}]


def test_wait_for_requests_times_out_with_a_summary(mock: MockGemini) -> None:
    with pytest.raises(TimeoutError, match="mock saw 0 requests"):
        mock.wait_for_requests(1, timeout=0.1)
