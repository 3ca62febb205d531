"""Scripted mock of the Anthropic Messages API (SSE streaming) on 127.0.0.1, for running the real Claude Code offline.

Owns: the HTTP server (thread-based, in-process or as a script), the response script (one entry per agent-loop
request: text / thinking / tool_use blocks, HTTP errors, SSE errors, dropped connections, pacing) and the request log.
Does not own: anything Claude-Code specific beyond the request shapes it sends (see tests/fakes/claude_env.py).
The server, script bookkeeping, request log and chunked-SSE plumbing are shared with the other mocks
(tests/fakes/mock_http.py); this module keeps the API's routes and wire format.

Script entries (dicts; a JSON list or JSON-lines file when run as a script)::

    {"label": "qa", "text": "Paris."}                                   # one text block, end_turn
    {"blocks": [{"type": "thinking", "thinking": "hmm"},
                {"type": "text", "text": "Let me run it."},
                {"type": "tool_use", "name": "Bash", "input": {"command": "ls"}}]}   # stop_reason tool_use
    {"status": 500, "persistent": true}                                 # HTTP 500 for every request from now on
    {"status": 529, "times": 2}                                         # served twice, then the next entry
    {"sse_error": "overloaded_error"} / {"drop": true}                  # error event mid-stream / close the socket
    pacing: "delay" (s between deltas, default 0.01), "chunk" (chars per text delta, default 24),
            "first_delay" (s before message_start), "headers" (extra response headers)

Requests that are not agent-loop requests (no `tools`, e.g. a title or classifier call) never consume the script:
they get `default_text`. When the script is exhausted, agent-loop requests get `default_text` too (and the log says
so), so a test never hangs on a missing entry.
"""

from __future__ import annotations

import copy
import json
import sys
import uuid
from collections.abc import Iterable
from typing import Any

from mock_http import ClientGone, MockHandler, MockServer, load_script, run_main

__all__ = ["ClientGone", "MockAnthropic", "load_script"]

DEFAULT_TEXT = "(mock: no scripted response left)"
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
ERROR_MESSAGES = {
    500: "Internal server error",
    529: "Overloaded",
    429: "Number of request tokens has exceeded your per-minute rate limit",
}


def last_user_text(body: dict[str, Any]) -> str:
    """Text of the last *user* message's last text block (skipping role=system env messages and tool results)."""
    for msg in reversed(body.get("messages") or []):
        if msg.get("role") != "user":
            continue
        content = msg.get("content")
        if isinstance(content, str):
            return content
        texts = [c.get("text", "") for c in content or [] if isinstance(c, dict) and c.get("type") == "text"]
        texts = [t for t in texts if not t.lstrip().startswith("<system-reminder>")]
        if texts:
            return texts[-1]
        if any(isinstance(c, dict) and c.get("type") == "tool_result" for c in content or []):
            return ""
    return ""


def all_text(body: dict[str, Any]) -> str:
    """Every text/tool_result string of the request's messages, joined (for 'does the model see X' checks)."""
    out: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, str):
            out.append(node)
        elif isinstance(node, list):
            for n in node:
                walk(n)
        elif isinstance(node, dict):
            for key in ("text", "content", "thinking"):
                if key in node:
                    walk(node[key])
            if node.get("type") == "tool_use":
                out.append(json.dumps(node.get("input")))

    walk(body.get("messages") or [])
    return "\n".join(out)


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """All tool_result blocks in the request's messages (what Claude Code reports back after running a tool)."""
    found = []
    for msg in body.get("messages") or []:
        content = msg.get("content")
        if isinstance(content, list):
            found.extend(c for c in content if isinstance(c, dict) and c.get("type") == "tool_result")
    return found


class MockAnthropic(MockServer):
    """The mock server. Use as a context manager (in-process, background thread) or `serve_forever()`."""

    name = "mock-anthropic"

    def __init__(
        self,
        script: Iterable[dict[str, Any]] = (),
        *,
        port: int = 0,
        default_text: str = DEFAULT_TEXT,
        model: str = "claude-opus-5-5",
    ) -> None:
        self.model = model
        super().__init__(script, port=port, default_text=default_text, handler=_Handler)


class _Handler(MockHandler):
    mock: MockAnthropic
    request_id_header = "request-id"
    secret_headers = ("x-api-key", "authorization")

    def _sse(self, rid: int, label: str, name: str, payload: dict[str, Any], **log: Any) -> None:
        self._sse_event(name, payload)
        self.mock._log_event(rid, name, label=label, **log)

    # -- routes ------------------------------------------------------------------------------------------------
    def do_GET(self) -> None:
        rid = next(self.mock._rid)
        self.mock._log_request(self._record(rid, None, main=False, label="get"))
        path = self.path.split("?")[0]
        if path.rstrip("/") == "/v1/models":
            self._send_json(
                200,
                {
                    "data": [
                        {
                            "type": "model",
                            "id": self.mock.model,
                            "display_name": "Mock",
                            "created_at": "2026-01-01T00:00:00Z",
                        }
                    ],
                    "has_more": False,
                    "first_id": self.mock.model,
                    "last_id": self.mock.model,
                },
            )
        else:
            self._send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        rid = next(self.mock._rid)
        body = self._read_body()
        path = self.path.split("?")[0]
        if path.endswith("/count_tokens"):
            self.mock._log_request(self._record(rid, body, main=False, label="count_tokens"))
            n = len(json.dumps(body)) // 4 if body else 0
            self._send_json(200, {"input_tokens": n})
            return
        if path != "/v1/messages" or not isinstance(body, dict):
            self.mock._log_request(self._record(rid, body, main=False, label="unknown"))
            self._send_json(
                404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}}
            )
            return
        main = bool(body.get("tools"))
        entry, from_script = self.mock._next_entry(main)
        label = str(entry.get("label") or ("scripted" if from_script else "default"))
        self.mock._log_request(self._record(rid, body, main=main, label=label, scripted=from_script))
        self._answering(rid, label, self._answer, rid, body, entry, label)

    def _record(
        self, rid: int, body: Any, *, main: bool, label: str, scripted: bool = False
    ) -> dict[str, Any]:
        rec = self._base_record(rid, body, main=main, label=label, scripted=scripted)
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
            etype = entry.get("error_type") or ERROR_TYPES.get(status, "api_error")
            message = entry.get("message") or ERROR_MESSAGES.get(status, f"mock error {status}")
            extra = dict(entry.get("headers") or {})
            self.mock._log_event(rid, "http_error", label=label, status=status, error_type=etype)
            self._send_json(status, {"type": "error", "error": {"type": etype, "message": message}}, extra)
            return
        blocks = _blocks(entry)
        stop_reason = entry.get("stop_reason") or (
            "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        )
        usage = {
            "input_tokens": int(entry.get("input_tokens", 12)),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 1,
        }
        out_tokens = int(entry.get("output_tokens", max(1, sum(len(json.dumps(b)) for b in blocks) // 4)))
        msg_id = f"msg_mock_{uuid.uuid4().hex[:24]}"
        model = body.get("model") or self.mock.model
        if not body.get("stream"):
            self._send_json(
                200,
                {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": blocks,
                    "stop_reason": stop_reason,
                    "stop_sequence": None,
                    "usage": {**usage, "output_tokens": out_tokens},
                },
            )
            self.mock._log_event(rid, "message", label=label, stop_reason=stop_reason)
            return
        self._start_stream("text/event-stream; charset=utf-8", entry.get("headers"))
        delay = float(entry.get("delay", 0.01))
        chunk = max(1, int(entry.get("chunk", 24)))
        self._sse(
            rid,
            label,
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                },
            },
        )
        for index, block in enumerate(blocks):
            self._stream_block(rid, label, index, block, delay, chunk)
            if entry.get("sse_error") and index == len(blocks) - 1:
                etype = entry["sse_error"]
                self._sse(
                    rid,
                    label,
                    "error",
                    {
                        "type": "error",
                        "error": {
                            "type": etype,
                            "message": ERROR_MESSAGES.get(
                                529 if etype == "overloaded_error" else 500, "mock stream error"
                            ),
                        },
                    },
                )
                self._write_chunk(b"")  # zero-length chunk = end of body
                return
        self._sse(
            rid,
            label,
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": out_tokens},
            },
            stop_reason=stop_reason,
        )
        self._sse(rid, label, "message_stop", {"type": "message_stop"})
        self._write_chunk(b"")

    def _stream_block(
        self, rid: int, label: str, index: int, block: dict[str, Any], delay: float, chunk: int
    ) -> None:
        kind = block["type"]
        if kind == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            pieces = [("text_delta", "text", p) for p in _split(block["text"], chunk)]
        elif kind == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
            pieces = [("thinking_delta", "thinking", p) for p in _split(block["thinking"], chunk)]
            pieces.append(("signature_delta", "signature", block.get("signature") or "bW9jay1zaWduYXR1cmU="))
        elif kind == "tool_use":
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            pieces = [
                ("input_json_delta", "partial_json", p)
                for p in _split(json.dumps(block.get("input") or {}), max(chunk, 64))
            ]
        else:
            raise ValueError(f"mock: unknown block type {kind!r}")
        self._sse(
            rid,
            label,
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
            kind=kind,
        )
        for dtype, key, piece in pieces:
            self._sleep(delay)
            self._sse(
                rid,
                label,
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": {"type": dtype, key: piece}},
                kind=dtype,
            )
        self._sleep(delay)
        self._sse(rid, label, "content_block_stop", {"type": "content_block_stop", "index": index})


def _split(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _blocks(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """Normalize an entry to content blocks (ids filled in for tool_use)."""
    blocks = copy.deepcopy(entry.get("blocks") or [])
    if "text" in entry:
        blocks.append({"type": "text", "text": entry["text"]})
    if not blocks:
        blocks = [{"type": "text", "text": DEFAULT_TEXT}]
    for b in blocks:
        if b.get("type") == "tool_use":
            b.setdefault("id", f"toolu_mock_{uuid.uuid4().hex[:20]}")
            b.setdefault("input", {})
    return blocks


def main(argv: list[str] | None = None) -> int:
    return run_main(MockAnthropic, __doc__ or "", "mock_anthropic", argv, log_opt=True)


if __name__ == "__main__":
    sys.exit(main())
