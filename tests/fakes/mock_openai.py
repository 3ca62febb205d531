"""Scripted mock of the OpenAI Responses API (HTTP + SSE) on 127.0.0.1, for running the real Codex CLI offline.

Codex 0.169.0 reaches it through a custom `[model_providers.<name>]` with `wire_api = "responses"`: every model
call is `POST {base_url}/responses` with `"stream": true`.

Owns: the HTTP server (thread-based, in-process or as a script), the response script (one entry per agent request:
assistant text, function calls, custom tool calls, reasoning summaries, HTTP errors, `response.failed`, dropped or
truncated streams, pacing) and the request/event log. Does not own: the Codex configuration (tests/drivers/codex).
The server, script bookkeeping, request log and chunked-SSE plumbing are shared with the other mocks
(tests/fakes/mock_http.py); this module keeps the API's routes and wire format.

Script entries (dicts; a JSON list or JSON-lines file when run as a script)::

    {"label": "qa", "text": "Paris."}                                    # one assistant message
    {"items": [{"type": "reasoning", "summary": "thinking..."},
               {"type": "message", "text": "Let me run it."},
               {"type": "function_call", "name": "exec_command", "arguments": {"cmd": "ls"}},
               {"type": "custom_tool_call", "name": "exec", "input": "text(1)"}]}
    {"status": 500, "persistent": true}           # HTTP 500 for every agent request until set_script()
    {"status": 429, "times": 2, "headers": {"retry-after": "1"}}   # served twice, then the next entry
    {"failed": "mock: response.failed"}           # response.created, then response.failed
    {"drop": true}                                # close the socket before any byte of a response
    {"truncate": true, "text": "partial"}         # stream the items, then close without response.completed
    {"when": "capital", "text": "Paris."}         # served to the first request whose user text contains "capital"
    pacing: "delay" (s between deltas, default 0.01), "chunk" (chars per delta, default 16),
            "first_delay" (s before response.created), "usage": {"input_tokens", "output_tokens"}

Codex also makes one **title-generation** request per thread (`x-codex-turn-metadata` `thread_source:
"thread_title"`): such side requests never consume the script and get `title_text`. Agent requests that find the
script empty get `default_text` (and the log says so), so a test never hangs on a missing entry.
"""

from __future__ import annotations

import copy
import json
import sys
import time
import uuid
from collections.abc import Iterable
from typing import Any

from mock_http import ClientGone, MockHandler, MockServer, load_script, run_main

__all__ = ["ClientGone", "MockOpenAI", "load_script"]

DEFAULT_TEXT = "(mock: no scripted response left)"
TITLE_TEXT = "Mock task title"
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_api_key",
    429: "rate_limit_exceeded",
    500: "server_error",
}
ERROR_MESSAGES = {
    429: "Rate limit reached (mock)",
    500: "The server had an error while processing your request (mock)",
}
_CONTEXT_PREFIXES = ("<environment_context>", "<turn_aborted>", "<user_instructions>", "# AGENTS.md")


def turn_metadata(headers: Any) -> dict[str, Any]:
    """The decoded `x-codex-turn-metadata` header ({} when absent or not JSON)."""
    raw = headers.get("x-codex-turn-metadata") if headers is not None else None
    if not raw:
        return {}
    try:
        meta = json.loads(raw)
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) else {}


def _input_texts(item: dict[str, Any]) -> list[str]:
    content = item.get("content")
    if isinstance(content, str):
        return [content]
    return [c.get("text", "") for c in content or [] if isinstance(c, dict) and "text" in c]


def last_user_text(body: dict[str, Any]) -> str:
    """Text of the last user message typed by the user (skipping Codex's context messages); "" after a tool call."""
    for item in reversed(body.get("input") or []):
        if not isinstance(item, dict):
            continue
        if item.get("type") in ("function_call_output", "custom_tool_call_output"):
            return ""
        if item.get("type") != "message" or item.get("role") != "user":
            continue
        texts = [t for t in _input_texts(item) if not t.lstrip().startswith(_CONTEXT_PREFIXES)]
        if texts:
            return texts[-1]
    return ""


def user_texts(body: dict[str, Any]) -> list[str]:
    """Every user-typed message of the request in order (the history the model sees, e.g. after a resume)."""
    out = []
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("type") == "message" and item.get("role") == "user":
            out.extend(t for t in _input_texts(item) if not t.lstrip().startswith(_CONTEXT_PREFIXES))
    return out


def tool_outputs(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The function/custom tool call outputs in the request's input (what Codex reports back after a tool)."""
    return [
        i
        for i in body.get("input") or []
        if isinstance(i, dict) and i.get("type") in ("function_call_output", "custom_tool_call_output")
    ]


def output_text(item: dict[str, Any]) -> str:
    """A tool output item's text (a string, or the joined `input_text` parts code mode sends)."""
    out = item.get("output")
    if isinstance(out, str):
        return out
    if isinstance(out, list):
        return "".join(p.get("text", "") for p in out if isinstance(p, dict))
    return json.dumps(out)


class MockOpenAI(MockServer):
    """The mock server. Use as a context manager (in-process, background thread) or `serve_forever()`."""

    name = "mock-openai"

    def __init__(
        self,
        script: Iterable[dict[str, Any]] = (),
        *,
        port: int = 0,
        default_text: str = DEFAULT_TEXT,
        title_text: str = TITLE_TEXT,
    ) -> None:
        self.title_text = title_text
        super().__init__(script, port=port, default_text=default_text, handler=_Handler)

    @property
    def url(self) -> str:
        """The provider `base_url` (Codex appends `/responses`)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def _side_entry(self) -> dict[str, Any]:
        return {"label": "title", "text": self.title_text}


class _Handler(MockHandler):
    mock: MockOpenAI
    request_id_header = "x-request-id"
    secret_headers = ("authorization",)

    def _sse(self, rid: int, label: str, payload: dict[str, Any], **log: Any) -> None:
        name = payload["type"]
        payload = {**payload, "sequence_number": self._seq}
        self._seq += 1
        self._sse_event(name, payload)
        self.mock._log_event(rid, name, label=label, **log)

    # -- routes ------------------------------------------------------------------------------------------------
    def do_GET(self) -> None:  # the built-in provider's WebSocket upgrade; a custom provider never sends one
        rid = next(self.mock._rid)
        self.mock._log_request(self._record(rid, None, main=False, label="get"))
        self._send_json(
            404, {"error": {"message": f"mock: no GET {self.path}", "type": "invalid_request_error"}}
        )

    def do_POST(self) -> None:
        rid = next(self.mock._rid)
        body = self._read_body()
        path = self.path.split("?")[0]
        if not path.endswith("/responses") or not isinstance(body, dict):
            self.mock._log_request(self._record(rid, body, main=False, label="unknown"))
            self._send_json(404, {"error": {"message": f"mock: no route {self.path}", "type": "not_found"}})
            return
        meta = turn_metadata(self.headers)
        main = meta.get("thread_source") != "thread_title"
        entry, from_script = self.mock._next_entry(main, last_user_text(body))
        label = str(entry.get("label") or ("scripted" if from_script else "default"))
        self.mock._log_request(
            self._record(rid, body, main=main, label=label, scripted=from_script, meta=meta)
        )
        self._seq = 0
        self._answering(rid, label, self._answer, rid, body, entry, label)

    def _record(
        self,
        rid: int,
        body: Any,
        *,
        main: bool,
        label: str,
        scripted: bool = False,
        meta: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        authorized = bool(self.headers.get("Authorization"))
        rec = self._base_record(rid, body, main=main, label=label, scripted=scripted, authorized=authorized)
        rec["thread_id"] = (meta or {}).get("thread_id") or self.headers.get("thread-id")
        rec["thread_source"] = (meta or {}).get("thread_source")
        if isinstance(body, dict):
            rec["stream"] = bool(body.get("stream"))
            rec["model"] = body.get("model")
            rec["last_user"] = last_user_text(body)
        return rec

    # -- answers -----------------------------------------------------------------------------------------------
    def _answer(self, rid: int, body: dict[str, Any], entry: dict[str, Any], label: str) -> None:
        self._sleep(float(entry.get("first_delay", 0)))
        if entry.get("drop"):
            self._drop(rid, label)
            return
        status = int(entry.get("status", 200))
        if status != 200:
            etype = entry.get("error_type") or ERROR_TYPES.get(status, "server_error")
            message = entry.get("message") or ERROR_MESSAGES.get(status, f"mock error {status}")
            error = {"message": message, "type": etype, "param": None, "code": etype}
            self.mock._log_event(rid, "http_error", label=label, status=status)
            self._send_json(status, {"error": error}, dict(entry.get("headers") or {}))
            return
        items = _items(entry)
        resp_id = f"resp_mock_{uuid.uuid4().hex[:20]}"
        model = body.get("model") or "mock"
        response: dict[str, Any] = {
            "id": resp_id,
            "object": "response",
            "created_at": int(time.time()),
            "status": "in_progress",
            "model": model,
            "output": [],
        }
        self._start_stream("text/event-stream; charset=utf-8", entry.get("headers"))
        self._sse(rid, label, {"type": "response.created", "response": response})
        self._sse(rid, label, {"type": "response.in_progress", "response": response})
        if entry.get("failed"):
            error = {"code": "server_error", "message": str(entry["failed"])}
            failed = {**response, "status": "failed", "error": error}
            self._sse(rid, label, {"type": "response.failed", "response": failed}, error=error)
            self._write_chunk(b"")
            return
        delay = float(entry.get("delay", 0.01))
        chunk = max(1, int(entry.get("chunk", 16)))
        done_items = [self._stream_item(rid, label, i, item, delay, chunk) for i, item in enumerate(items)]
        if entry.get("truncate"):
            self.mock._log_event(rid, "truncated", label=label)
            self._write_chunk(b"")  # a clean end of body, but no response.completed
            return
        usage_in = dict(entry.get("usage") or {})
        n_in = int(usage_in.get("input_tokens", 1200))
        n_out = int(usage_in.get("output_tokens", max(1, sum(len(json.dumps(i)) for i in done_items) // 40)))
        usage = {
            "input_tokens": n_in,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": n_out,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": n_in + n_out,
        }
        completed = {**response, "status": "completed", "output": done_items, "usage": usage}
        self._sse(rid, label, {"type": "response.completed", "response": completed}, final=True)
        self._write_chunk(b"")

    def _stream_item(
        self, rid: int, label: str, index: int, item: dict[str, Any], delay: float, chunk: int
    ) -> dict[str, Any]:
        """added -> deltas -> done -> output_item.done for one output item; returns the finished item."""
        kind = item["type"]
        item_id = item["id"]
        base = {"output_index": index, "item_id": item_id}
        if kind == "message":
            text = item["text"]
            start = {
                "id": item_id,
                "type": "message",
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            }
            part = {"type": "output_text", "text": "", "annotations": []}
            final = {**start, "status": "completed", "content": [{**part, "text": text}]}
            self._sse(
                rid, label, {"type": "response.output_item.added", "output_index": index, "item": start}
            )
            self._sse(
                rid, label, {"type": "response.content_part.added", **base, "content_index": 0, "part": part}
            )
            for piece in _split(text, chunk):
                self._sleep(delay)
                self._sse(
                    rid,
                    label,
                    {"type": "response.output_text.delta", **base, "content_index": 0, "delta": piece},
                    kind="text_delta",
                )
            self._sse(
                rid, label, {"type": "response.output_text.done", **base, "content_index": 0, "text": text}
            )
            self._sse(
                rid,
                label,
                {
                    "type": "response.content_part.done",
                    **base,
                    "content_index": 0,
                    "part": {**part, "text": text},
                },
            )
        elif kind == "reasoning":
            summary = item["summary"]
            start = {"id": item_id, "type": "reasoning", "summary": []}
            final = {**start, "summary": [{"type": "summary_text", "text": summary}]}
            self._sse(
                rid, label, {"type": "response.output_item.added", "output_index": index, "item": start}
            )
            part = {"type": "summary_text", "text": ""}
            self._sse(
                rid,
                label,
                {"type": "response.reasoning_summary_part.added", **base, "summary_index": 0, "part": part},
            )
            for piece in _split(summary, chunk):
                self._sleep(delay)
                self._sse(
                    rid,
                    label,
                    {
                        "type": "response.reasoning_summary_text.delta",
                        **base,
                        "summary_index": 0,
                        "delta": piece,
                    },
                    kind="reasoning_delta",
                )
            self._sse(
                rid,
                label,
                {"type": "response.reasoning_summary_text.done", **base, "summary_index": 0, "text": summary},
            )
        elif kind in ("function_call", "custom_tool_call"):
            is_fn = kind == "function_call"
            field = "arguments" if is_fn else "input"
            value = item[field] if isinstance(item[field], str) else json.dumps(item[field])
            start = {"id": item_id, "type": kind, "status": "in_progress", "call_id": item["call_id"]}
            start.update({"name": item["name"], field: ""})
            final = {**start, "status": "completed", field: value}
            delta_type = "response.function_call_arguments" if is_fn else "response.custom_tool_call_input"
            self._sse(
                rid, label, {"type": "response.output_item.added", "output_index": index, "item": start}
            )
            for piece in _split(value, max(chunk, 64)):
                self._sleep(delay)
                self._sse(
                    rid, label, {"type": f"{delta_type}.delta", **base, "delta": piece}, kind="tool_delta"
                )
            self._sse(rid, label, {"type": f"{delta_type}.done", **base, field: value})
        else:
            raise ValueError(f"mock: unknown output item type {kind!r}")
        self._sse(
            rid, label, {"type": "response.output_item.done", "output_index": index, "item": final}, kind=kind
        )
        return final


def _split(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _items(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """Normalize an entry to output items (ids and call ids filled in)."""
    items = copy.deepcopy(entry.get("items") or [])
    if "text" in entry:
        items.append({"type": "message", "text": entry["text"]})
    if not items:
        items = [{"type": "message", "text": DEFAULT_TEXT}]
    prefixes = {"message": "msg", "reasoning": "rs", "function_call": "fc", "custom_tool_call": "ctc"}
    for item in items:
        item.setdefault("id", f"{prefixes.get(item.get('type'), 'item')}_mock_{uuid.uuid4().hex[:16]}")
        if item.get("type") in ("function_call", "custom_tool_call"):
            item.setdefault("call_id", f"call_mock_{uuid.uuid4().hex[:16]}")
    return items


def main(argv: list[str] | None = None) -> int:
    return run_main(MockOpenAI, __doc__ or "", "mock_openai", argv, log_opt=True)


if __name__ == "__main__":
    sys.exit(main())
