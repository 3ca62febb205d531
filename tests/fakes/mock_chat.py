"""Scripted mock of the OpenAI Chat Completions API (HTTP + SSE) on 127.0.0.1, for running chat-completions CLIs
offline (Copilot CLI, opencode, Qwen Code, Pi, Kimi Code: anything with an OpenAI-compatible `base_url`).

Routes: `GET /v1/models` (and `/models`, `/v1/models/<id>`) list the configured model ids; `POST
/v1/chat/completions` (and `/chat/completions`) answers `"stream": true` with `data: {chunk}` SSE events
(`choices[0].delta.content` / `reasoning_content` / `tool_calls`, a last chunk with `finish_reason`, a usage chunk when
`stream_options.include_usage`) and `data: [DONE]`, and `"stream": false` with one `chat.completion` object.

Owns: the HTTP server (thread-based, in-process or as a script), the response script (one entry per agent request:
text, reasoning, tool calls, HTTP errors, in-stream errors, dropped or truncated streams, pacing) and the
request/event log. Does not own: any CLI's configuration (each driver's tests point their CLI here). The server,
script bookkeeping, request log and chunked-SSE plumbing are shared with the other mocks (tests/fakes/mock_http.py);
this module keeps the API's routes and wire format.

Script entries (dicts; a JSON list or JSON-lines file when run as a script)::

    {"label": "qa", "text": "Paris."}                                    # one assistant message, finish "stop"
    {"reasoning": "thinking...", "text": "Let me run it.",
     "tool_calls": [{"name": "shell", "arguments": {"cmd": "ls"}}]}     # finish "tool_calls"; ids filled in
    {"status": 500, "persistent": true}           # HTTP 500 for every agent request until set_script()
    {"status": 429, "times": 2, "headers": {"retry-after": "1"}}   # served twice, then the next entry
    {"stream_error": "mock: overloaded"}          # the deltas, then `data: {"error": ...}` and the end of the body
    {"drop": true}                                # close the socket before any byte of a response
    {"truncate": true, "text": "partial"}         # stream the deltas, then end without finish_reason / [DONE]
    {"when": "capital", "text": "Paris."}         # served to the first request whose last user text contains it
    pacing: "delay" (s between deltas, default 0.01), "chunk" (chars per delta, default 16; tool arguments use
            at least 8 so they arrive in several pieces), "first_delay" (s before the first byte);
    "usage": {"prompt_tokens", "completion_tokens"}; "finish_reason" overrides the computed one;
    "reasoning_field": the delta key for reasoning (default "reasoning_content"; some clients read "reasoning").

Several CLIs make **side requests** besides the agent loop (title generation through a small model, classifiers,
memory extraction, prompt suggestions). A request is side when the `side` predicate says so (default: its model is
one of `side_models`, or its system or user text contains one of `side_markers`, case-insensitive): side requests
never consume the script and get `side_text`. Agent requests that find the script empty get `default_text` (and the
log says so), so a test never hangs on a missing entry.
"""

from __future__ import annotations

import copy
import json
import sys
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from mock_http import ClientGone, MockHandler, MockServer, load_script, run_main

__all__ = ["ClientGone", "MockChat", "last_user_text", "load_script", "tool_results"]

DEFAULT_TEXT = "(mock: no scripted response left)"
SIDE_TEXT = "Mock task title"
DEFAULT_MODEL = "mock-model"
# Phrases of the title/summary prompts chat CLIs send on the side (matched case-insensitively).
SIDE_MARKERS = (
    "you are a title generator",
    "generate a title",
    "generate a short title",
    "title for this conversation",
)
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_api_key",
    403: "permission_denied",
    404: "not_found_error",
    429: "rate_limit_exceeded",
    500: "server_error",
    503: "service_unavailable",
}
ERROR_MESSAGES = {
    429: "Rate limit reached (mock)",
    500: "The server had an error while processing your request (mock)",
}

SidePredicate = Callable[[dict[str, Any], Any], bool]  # (request body, request headers) -> side?


def content_text(content: Any) -> str:
    """A message's text: a string, or the joined `text` parts of a content list (images etc. are skipped)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def last_user_text(body: dict[str, Any]) -> str:
    """Text of the last user message; "" when a tool result comes after it (the model is answering a tool)."""
    for msg in reversed(body.get("messages") or []):
        if not isinstance(msg, dict):
            continue
        if msg.get("role") == "tool":
            return ""
        if msg.get("role") == "user":
            return content_text(msg.get("content"))
    return ""


def user_texts(body: dict[str, Any]) -> list[str]:
    """Every user message's text in order (the history the model sees, e.g. after a resume)."""
    return [
        content_text(m.get("content"))
        for m in body.get("messages") or []
        if isinstance(m, dict) and m.get("role") == "user"
    ]


def system_text(body: dict[str, Any]) -> str:
    """The system (and developer) messages' text, joined."""
    return "\n".join(
        content_text(m.get("content"))
        for m in body.get("messages") or []
        if isinstance(m, dict) and m.get("role") in ("system", "developer")
    )


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The `role: tool` messages as {"tool_call_id", "content"} (what the CLI reports back after running a tool)."""
    return [
        {"tool_call_id": m.get("tool_call_id"), "content": content_text(m.get("content"))}
        for m in body.get("messages") or []
        if isinstance(m, dict) and m.get("role") == "tool"
    ]


class MockChat(MockServer):
    """The mock server. Use as a context manager (in-process, background thread) or `serve_forever()`."""

    name = "mock-chat"

    def __init__(
        self,
        script: Iterable[dict[str, Any]] = (),
        *,
        port: int = 0,
        default_text: str = DEFAULT_TEXT,
        side_text: str = SIDE_TEXT,
        models: Iterable[str] = (DEFAULT_MODEL,),
        side_models: Iterable[str] = (),
        side_markers: Iterable[str] = SIDE_MARKERS,
        side: SidePredicate | None = None,
    ) -> None:
        self.side_text = side_text
        self.models = list(models)
        self.side_models = set(side_models)
        self.side_markers = tuple(m.lower() for m in side_markers)
        self.side = side or self.default_side
        super().__init__(script, port=port, default_text=default_text, handler=_Handler)

    @property
    def url(self) -> str:
        """The `base_url` a client takes (it appends `/chat/completions`)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def default_side(self, body: dict[str, Any], headers: Any) -> bool:
        """Side when the model is a side model, or the system/user text carries a side marker."""
        if body.get("model") in self.side_models:
            return True
        if not self.side_markers:
            return False
        text = (system_text(body) + "\n" + "\n".join(user_texts(body))).lower()
        return any(m in text for m in self.side_markers)

    def _next_entry(self, main: bool, user_text: str = "") -> tuple[dict[str, Any], bool]:
        """Pick the entry for a request; returns (entry, from_script). An entry with `when` answers only a
        request whose last user text contains it (concurrent sessions); the others are served in order."""
        with self._lock:
            if not main:
                return {"label": "side", "text": self.side_text}, False
            for i, e in enumerate(self._script):
                if e.get("when") and user_text and e["when"] in user_text:
                    return self._script.pop(i), True
            plain = [e for e in self._script if not e.get("when")]
            if not plain:
                return {"label": "default", "text": self.default_text}, False
            return self._serve_head(plain[0])

    def side_requests(self) -> list[dict[str, Any]]:
        """The side requests (title generation etc.) seen so far."""
        with self._lock:
            return [r for r in self.requests if r.get("side")]

    def wait_for_event(self, event: str, label: str | None = None, timeout: float = 60.0) -> dict[str, Any]:
        """Block until the mock has sent `event` (for an entry labelled `label`); returns its log record."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for e in self.events:
                    if e["event"] == event and (label is None or e.get("label") == label):
                        return e
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"mock never sent {event} ({label}): {[e['event'] for e in self.events]}"
                    )
                self._changed.wait(left)


class _Handler(MockHandler):
    mock: MockChat
    request_id_header = "x-request-id"
    secret_headers = ("authorization", "api-key", "x-api-key")

    # -- routes ------------------------------------------------------------------------------------------------
    def do_GET(self) -> None:
        rid = next(self.mock._rid)
        self.mock._log_request(self._record(rid, None, main=False, label="get"))
        path = self.path.split("?")[0].rstrip("/")
        models = list(dict.fromkeys([*self.mock.models, *sorted(self.mock.side_models)]))
        objs = {m: {"id": m, "object": "model", "created": 1767225600, "owned_by": "mock"} for m in models}
        if path in ("/v1/models", "/models"):
            self._send_json(200, {"object": "list", "data": list(objs.values())})
        elif path.rsplit("/", 1)[0] in ("/v1/models", "/models") and path.rsplit("/", 1)[1] in objs:
            self._send_json(200, objs[path.rsplit("/", 1)[1]])
        else:
            self._send_json(404, _error(f"mock: no GET {self.path}", "not_found_error"))

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        rid = next(self.mock._rid)
        body = self._read_body()
        path = self.path.split("?")[0].rstrip("/")
        if path not in ("/v1/chat/completions", "/chat/completions") or not isinstance(body, dict):
            self.mock._log_request(self._record(rid, body, main=False, label="unknown"))
            self._send_json(404, _error(f"mock: no route {self.path}", "not_found_error"))
            return
        side = bool(self.mock.side(body, self.headers))
        entry, from_script = self.mock._next_entry(not side, last_user_text(body))
        label = str(entry.get("label") or ("scripted" if from_script else "default"))
        self.mock._log_request(self._record(rid, body, main=not side, label=label, scripted=from_script))
        self._answering(rid, label, self._answer, rid, body, entry, label)

    def _record(
        self, rid: int, body: Any, *, main: bool, label: str, scripted: bool = False
    ) -> dict[str, Any]:
        authorized = bool(self.headers.get("Authorization") or self.headers.get("api-key"))
        rec = self._base_record(rid, body, main=main, label=label, scripted=scripted, authorized=authorized)
        rec["side"] = isinstance(body, dict) and not main
        if isinstance(body, dict):
            rec["stream"] = bool(body.get("stream"))
            rec["model"] = body.get("model")
            rec["last_user"] = last_user_text(body)
        return rec

    # -- answers -----------------------------------------------------------------------------------------------
    def _data(self, rid: int, label: str, payload: Any, event: str, **log: Any) -> None:
        """One `data: ...` SSE event in its own HTTP chunk, logged as `event`."""
        data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
        self._write_chunk(f"data: {data}\n\n".encode())
        self.mock._log_event(rid, event, label=label, **log)

    def _answer(self, rid: int, body: dict[str, Any], entry: dict[str, Any], label: str) -> None:
        self._sleep(float(entry.get("first_delay", 0)))
        if entry.get("drop"):
            self._drop(rid, label)
            return
        status = int(entry.get("status", 200))
        if status != 200:
            etype = entry.get("error_type") or ERROR_TYPES.get(status, "server_error")
            message = entry.get("message") or ERROR_MESSAGES.get(status, f"mock error {status}")
            self.mock._log_event(rid, "http_error", label=label, status=status)
            self._send_json(status, _error(message, etype), dict(entry.get("headers") or {}))
            return
        text = entry.get("text")
        reasoning = entry.get("reasoning")
        calls = _tool_calls(entry)
        if text is None and reasoning is None and not calls:
            text = DEFAULT_TEXT
        finish = entry.get("finish_reason") or ("tool_calls" if calls else "stop")
        n_in = int((entry.get("usage") or {}).get("prompt_tokens", max(1, len(json.dumps(body)) // 4)))
        n_out = int(
            (entry.get("usage") or {}).get(
                "completion_tokens",
                max(1, len(json.dumps([text, reasoning, calls], ensure_ascii=False)) // 4),
            )
        )
        usage = {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out}
        cid = f"chatcmpl-mock{uuid.uuid4().hex[:20]}"
        model = body.get("model") or (self.mock.models[0] if self.mock.models else DEFAULT_MODEL)
        created = int(time.time())
        rfield = str(entry.get("reasoning_field") or "reasoning_content")
        if not body.get("stream"):
            reply: dict[str, Any] = {"role": "assistant", "content": text}
            if reasoning is not None:
                reply[rfield] = reasoning
            if calls:
                reply["tool_calls"] = [_call_object(c, c["arguments"]) for c in calls]
            completion = {
                "id": cid,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "message": reply, "finish_reason": finish, "logprobs": None}],
                "usage": usage,
            }
            self._send_json(200, completion, dict(entry.get("headers") or {}))
            self.mock._log_event(rid, "completion", label=label, finish_reason=finish)
            return

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
            return {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [choice],
            }

        delay = float(entry.get("delay", 0.01))
        size = max(1, int(entry.get("chunk", 16)))
        self._start_stream("text/event-stream; charset=utf-8", entry.get("headers"))
        self._data(rid, label, chunk({"role": "assistant", "content": ""}), "role")
        for piece in _split(reasoning, size) if reasoning else []:
            self._sleep(delay)
            self._data(rid, label, chunk({rfield: piece}), "reasoning_delta")
        for piece in _split(text, size) if text else []:
            self._sleep(delay)
            self._data(rid, label, chunk({"content": piece}), "text_delta")
        for index, call in enumerate(calls):
            self._sleep(delay)
            start = {**_call_object(call, ""), "index": index}
            self._data(rid, label, chunk({"tool_calls": [start]}), "tool_start", name=call["name"])
            for piece in _split(call["arguments"], max(size, 8)):
                self._sleep(delay)
                delta = {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
                self._data(rid, label, chunk(delta), "tool_delta")
        if entry.get("stream_error"):
            error = _error(str(entry["stream_error"]), "server_error")
            self._data(rid, label, error, "stream_error")
            self._write_chunk(b"")
            return
        if entry.get("truncate"):
            self.mock._log_event(rid, "truncated", label=label)
            self._write_chunk(b"")  # a clean end of body, but no finish_reason and no [DONE]
            return
        self._sleep(delay)
        self._data(rid, label, chunk({}, finish), "finish", finish_reason=finish)
        options = body.get("stream_options")
        if isinstance(options, dict) and options.get("include_usage"):
            usage_chunk = {**chunk({}), "choices": [], "usage": usage}
            self._data(rid, label, usage_chunk, "usage")
        self._data(rid, label, "[DONE]", "done", final=True)
        self._write_chunk(b"")


def _error(message: str, etype: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": etype, "param": None, "code": etype}}


def _split(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _call_object(call: dict[str, Any], arguments: str) -> dict[str, Any]:
    return {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": arguments}}


def _tool_calls(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """Normalize an entry's tool calls: ids filled in, arguments as a JSON string."""
    calls = copy.deepcopy(entry.get("tool_calls") or [])
    for c in calls:
        c.setdefault("id", f"call_mock_{uuid.uuid4().hex[:16]}")
        args = c.get("arguments", {})
        c["arguments"] = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    return calls


def main(argv: list[str] | None = None) -> int:
    return run_main(MockChat, __doc__ or "", "mock_chat", argv, log_opt=True)


if __name__ == "__main__":
    sys.exit(main())
