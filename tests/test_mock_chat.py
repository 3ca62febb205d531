"""The project's mock of the OpenAI Chat Completions API (tests/fakes/mock_chat.py), checked over real HTTP: the
SSE chunk stream chat CLIs rely on (text, reasoning and tool-call deltas, finish chunk, usage chunk, [DONE]), the
non-streamed completion, side requests, HTTP and in-stream errors, `when`, the models route and the script entry
point. No CLI needed."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mock_chat import DEFAULT_TEXT, SIDE_TEXT, MockChat, last_user_text, tool_results, user_texts

FAKES = Path(__file__).resolve().parent / "fakes"
TOOLS = [{"type": "function", "function": {"name": "shell", "parameters": {"type": "object"}}}]


def body(text: str = "hi", *, stream: bool = True, **extra: Any) -> dict[str, Any]:
    return {
        "model": "mock-model",
        "stream": stream,
        "messages": [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": [{"type": "text", "text": text}]},
        ],
        "tools": TOOLS,
        **extra,
    }


def post(
    mock_or_port: MockChat | int, payload: Any, path: str = "/v1/chat/completions"
) -> tuple[int, dict[str, str], bytes]:
    port = mock_or_port if isinstance(mock_or_port, int) else mock_or_port.port
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(
            "POST",
            path,
            body=json.dumps(payload),
            headers={"Content-Type": "application/json", "Authorization": "Bearer sk-secret"},
        )
        resp = conn.getresponse()
        try:
            data = resp.read()
        except http.client.IncompleteRead as exc:
            data = exc.partial
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
    finally:
        conn.close()


def get(mock: MockChat, path: str) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", mock.port, timeout=10)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def sse(raw: bytes) -> list[Any]:
    """Strict parse: every event is exactly `data: X\\n\\n`; JSON payloads decoded, "[DONE]" kept as a string."""
    text = raw.decode("utf-8")
    assert text.endswith("\n\n"), "stream must end with a blank line"
    out: list[Any] = []
    for block in text[:-2].split("\n\n"):
        assert block.startswith("data: ") and "\n" not in block, block
        data = block[len("data: ") :]
        out.append(data if data == "[DONE]" else json.loads(data))
    return out


def deltas(events: list[Any]) -> list[dict[str, Any]]:
    return [e["choices"][0]["delta"] for e in events if isinstance(e, dict) and e.get("choices")]


def streamed_text(events: list[Any], key: str = "content") -> str:
    return "".join(d.get(key) or "" for d in deltas(events))


def streamed_calls(events: list[Any]) -> list[dict[str, Any]]:
    """Reassemble tool calls from their deltas the way an OpenAI client does (by index)."""
    calls: dict[int, dict[str, Any]] = {}
    for d in deltas(events):
        for tc in d.get("tool_calls") or []:
            call = calls.setdefault(tc["index"], {"id": None, "name": "", "arguments": ""})
            call["id"] = tc.get("id") or call["id"]
            fn = tc.get("function") or {}
            call["name"] += fn.get("name") or ""
            call["arguments"] += fn.get("arguments") or ""
    return [calls[i] for i in sorted(calls)]


@pytest.fixture
def mock():
    with MockChat() as m:
        yield m


TRICKY = "你好，世界! 🙂 emoji 👩‍👩‍👧 and a question? «ok» " * 3


def test_streamed_text_reassembles_exactly(mock: MockChat) -> None:
    mock.push({"label": "qa", "text": TRICKY, "chunk": 5, "delay": 0})
    status, headers, raw = post(mock, body("say it"))
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    events = sse(raw)
    assert events[-1] == "[DONE]"
    assert deltas(events)[0] == {"role": "assistant", "content": ""}
    assert streamed_text(events) == TRICKY
    assert len([d for d in deltas(events) if d.get("content")]) > 5  # really streamed in pieces
    finishes = [e["choices"][0]["finish_reason"] for e in events[:-1]]
    assert finishes[-1] == "stop" and set(finishes[:-1]) == {None}
    assert all(e["object"] == "chat.completion.chunk" and e["id"] == events[0]["id"] for e in events[:-1])
    assert not any("usage" in e for e in events[:-1])  # no include_usage asked
    assert mock.wait_for_event("done", "qa")["final"] is True


def test_tool_calls_stream_as_valid_json_and_reasoning(mock: MockChat) -> None:
    args = {"cmd": "echo '你好 🙂?' && ls -la", "nested": {"list": [1, 2, 3], "q": 'a"b'}}
    mock.push(
        {
            "reasoning": "I should list files.",
            "text": "Running it.",
            "tool_calls": [
                {"name": "shell", "arguments": args},
                {"name": "read", "arguments": '{"path":"a"}'},
            ],
            "chunk": 4,
            "delay": 0,
        }
    )
    payload = body("list files", stream_options={"include_usage": True})
    events = sse(post(mock, payload)[2])
    assert streamed_text(events, "reasoning_content") == "I should list files."
    assert streamed_text(events) == "Running it."
    calls = streamed_calls(events)
    assert [c["name"] for c in calls] == ["shell", "read"]
    assert json.loads(calls[0]["arguments"]) == args and json.loads(calls[1]["arguments"]) == {"path": "a"}
    assert all(c["id"].startswith("call_") for c in calls) and calls[0]["id"] != calls[1]["id"]
    assert sum(1 for d in deltas(events) if d.get("tool_calls")) > 4  # arguments came in several pieces
    finish = [e for e in events[:-1] if e["choices"] and e["choices"][0]["finish_reason"]]
    assert [f["choices"][0]["finish_reason"] for f in finish] == ["tool_calls"]
    usage = events[-2]
    assert usage["choices"] == [] and usage["usage"]["total_tokens"] > 0


def test_non_streamed_completion(mock: MockChat) -> None:
    mock.push(
        {
            "text": TRICKY,
            "reasoning": "hm",
            "tool_calls": [{"name": "shell", "arguments": {"cmd": "ls"}}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3},
        }
    )
    status, headers, raw = post(mock, body(stream=False))
    assert status == 200 and headers["content-type"] == "application/json"
    obj = json.loads(raw)
    assert obj["object"] == "chat.completion"
    choice = obj["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == TRICKY and choice["message"]["reasoning_content"] == "hm"
    (call,) = choice["message"]["tool_calls"]
    assert call["function"]["name"] == "shell" and json.loads(call["function"]["arguments"]) == {"cmd": "ls"}
    assert obj["usage"] == {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}


def test_side_requests_never_consume_the_script() -> None:
    with MockChat([{"label": "one", "text": "first"}], side_models=["small-model"]) as mock:
        title = {
            "model": "mock-model",
            "stream": True,
            "messages": [
                {"role": "system", "content": "You are a title generator. You output ONLY a thread title."},
                {"role": "user", "content": "what is this project?"},
            ],
        }
        assert streamed_text(sse(post(mock, title)[2])) == SIDE_TEXT
        small = {**body("classify this"), "model": "small-model", "stream": False}
        assert json.loads(post(mock, small)[2])["choices"][0]["message"]["content"] == SIDE_TEXT
        assert mock.remaining == 1
        assert streamed_text(sse(post(mock, body("the real question"))[2])) == "first"
        assert [r["side"] for r in mock.requests] == [True, True, False]
        assert [r["label"] for r in mock.side_requests()] == ["side", "side"]
        assert [r["label"] for r in mock.wait_for_requests(1)] == ["one"]


def test_custom_side_predicate() -> None:
    def side(body: dict[str, Any], headers: Any) -> bool:
        return headers.get("x-purpose") == "suggest"

    with MockChat([{"text": "agent"}], side=side) as mock:
        conn = http.client.HTTPConnection("127.0.0.1", mock.port, timeout=10)
        conn.request(
            "POST",
            "/chat/completions",
            body=json.dumps(body("generate a title please")),
            headers={"Content-Type": "application/json", "x-purpose": "suggest"},
        )
        assert streamed_text(sse(conn.getresponse().read())) == SIDE_TEXT
        conn.close()
        # the default markers are not consulted any more: this one is an agent request
        assert streamed_text(sse(post(mock, body("generate a title please"))[2])) == "agent"


def test_script_order_times_persistent_and_default(mock: MockChat) -> None:
    mock.push(
        {"label": "busy", "status": 429, "times": 2, "headers": {"retry-after": "1"}},
        {"label": "a", "text": "A"},
    )
    for _ in range(2):
        status, headers, raw = post(mock, body())
        assert status == 429 and headers["retry-after"] == "1"
        assert json.loads(raw)["error"]["type"] == "rate_limit_exceeded"
    assert streamed_text(sse(post(mock, body())[2])) == "A"
    assert streamed_text(sse(post(mock, body())[2])) == DEFAULT_TEXT
    assert [r["label"] for r in mock.requests] == ["busy", "busy", "a", "default"]
    assert [r["scripted"] for r in mock.requests] == [True, True, True, False]
    mock.set_script([{"label": "down", "status": 500, "persistent": True}])
    for _ in range(3):
        status, _, raw = post(mock, body())
        assert status == 500 and json.loads(raw)["error"]["type"] == "server_error"
    assert mock.remaining == 1
    mock.set_script([])
    assert post(mock, body())[0] == 200


def test_when_matches_the_last_user_text(mock: MockChat) -> None:
    mock.push({"label": "plain", "text": "in order"}, {"label": "cap", "when": "capital", "text": "Paris."})
    assert streamed_text(sse(post(mock, body("the capital of France?"))[2])) == "Paris."
    assert streamed_text(sse(post(mock, body("anything"))[2])) == "in order"
    assert mock.remaining == 0


def test_stream_error_truncate_and_drop(mock: MockChat) -> None:
    mock.push(
        {"label": "err", "text": "partial", "stream_error": "mock: overloaded", "delay": 0},
        {"label": "cut", "text": "half", "truncate": True, "delay": 0},
        {"label": "gone", "drop": True},
    )
    events = sse(post(mock, body())[2])
    assert events[-1]["error"]["message"] == "mock: overloaded" and "[DONE]" not in events
    events = sse(post(mock, body())[2])
    assert streamed_text(events) == "half" and "[DONE]" not in events
    assert not any(e["choices"][0]["finish_reason"] for e in events)
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        post(mock, body())
    assert mock.wait_for_event("dropped", "gone")
    assert mock.wait_for_event("truncated", "cut")


def test_client_disconnect_mid_stream_is_logged(mock: MockChat) -> None:
    mock.push({"label": "slow", "text": "word " * 200, "chunk": 5, "delay": 0.05})
    sock = socket.create_connection(("127.0.0.1", mock.port), timeout=5)
    payload = json.dumps(body()).encode()
    sock.sendall(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload)
    )
    got = b""
    while b"data: " not in got:
        chunk = sock.recv(65536)
        assert chunk, got
        got += chunk
    sock.close()
    assert mock.wait_for_event("client_gone", "slow", timeout=30)
    assert not any(e["event"] == "done" for e in mock.events)


def test_models_route_and_request_log() -> None:
    with MockChat(models=["big-one", "other"], side_models=["small-one"]) as mock:
        status, listing = get(mock, "/v1/models")
        assert status == 200 and [m["id"] for m in listing["data"]] == ["big-one", "other", "small-one"]
        assert get(mock, "/models")[1] == listing
        assert get(mock, "/v1/models/other") == (200, {**listing["data"][1]})
        assert get(mock, "/v1/nothing")[0] == 404
        assert post(mock, {"x": 1}, "/v1/embeddings")[0] == 404
        post(mock, body("hello there"))
        rec = mock.wait_for_requests(1)[0]
        assert rec["last_user"] == "hello there" and rec["stream"] is True and rec["model"] == "mock-model"
        assert rec["authorized"] is True and "authorization" not in {k.lower() for k in rec["headers"]}
        assert [r["label"] for r in mock.requests] == ["get", "get", "get", "get", "unknown", "default"]
        assert mock.url == f"http://127.0.0.1:{mock.port}/v1"


def test_helpers() -> None:
    b = {
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]},
            {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "out"}]},
        ]
    }
    assert last_user_text(b) == ""  # answering a tool result
    assert tool_results(b) == [{"tool_call_id": "c1", "content": "out"}]
    b["messages"].append({"role": "user", "content": [{"type": "text", "text": "next"}]})
    assert last_user_text(b) == "next" and user_texts(b) == ["first", "next"]


def test_command_line_entry_point(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"label": "cli", "text": "from the script", "delay": 0}]))
    proc = subprocess.Popen(
        [sys.executable, str(FAKES / "mock_chat.py"), "--port", "0", "--script", str(script)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.startswith("mock_chat listening on http://127.0.0.1:"), line
        port = int(line.strip().rsplit(":", 1)[1].split("/")[0])
        deadline = time.monotonic() + 30
        while True:
            try:
                raw = post(port, body())[2]
                break
            except ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        assert streamed_text(sse(raw)) == "from the script"
    finally:
        proc.terminate()
        proc.wait(10)
