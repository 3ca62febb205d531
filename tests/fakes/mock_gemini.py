"""Scripted mock of the Gemini API (`streamGenerateContent?alt=sse`, `generateContent`) on 127.0.0.1, for running
the real Gemini CLI offline (`GOOGLE_GEMINI_BASE_URL` + `GEMINI_API_KEY`, reference gemini-cli-0.61.0.md §1, §9).

Owns: the HTTP server (thread-based, in-process or as a script), the response script (one entry per main agent
request: text, function calls, HTTP errors, in-stream errors, dropped connections, pacing) and the request log.
The server, script bookkeeping, request log and chunked-SSE plumbing are shared with the other mocks
(tests/fakes/mock_http.py); this module keeps the API's routes and wire format.

Script entries (dicts; a JSON list or JSON-lines file when run as a script)::

    {"label": "qa", "text": "Paris."}                                    # text, finishReason STOP
    {"text": "I'll run it.", "function_call": {"name": "run_shell_command",
                                               "args": {"command": "ls", "description": "list"}}}
    {"status": 500, "times": 20}                                         # HTTP 500 twenty times, then the next entry
    {"status": 429, "persistent": true}                                  # HTTP 429 for every main request from now on
    {"text": "partial", "stream_error": 500, "times": 2}                 # text, then an in-stream {"error": ...}
    {"drop": true}                                                       # close the socket without an answer
    pacing: "delay" (s between chunks, default 0.01), "chunk" (chars per text chunk, default 24),
            "first_delay" (s before the first chunk)

Main requests are the streaming ones carrying `tools` (the agent loop); everything else (the `Auto` model router's
`generateContent` with a `responseJsonSchema`, ...) never consumes the script: a JSON schema gets a schema-shaped
object (the router then picks Flash), other requests `default_text`. An exhausted script answers `default_text`.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterable
from typing import Any

from mock_http import ClientGone, MockHandler, MockServer, load_script, run_main

__all__ = ["ClientGone", "MockGemini", "load_script"]

DEFAULT_TEXT = "OK (default mock reply)."
STATUS_NAMES = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED",
                500: "INTERNAL", 503: "UNAVAILABLE"}  # fmt: skip


def last_user_text(body: dict[str, Any]) -> str:
    """Text of the last `user` content's text parts (function responses give "")."""
    for content in reversed(body.get("contents") or []):
        if content.get("role") != "user":
            continue
        texts = [p["text"] for p in content.get("parts") or [] if isinstance(p, dict) and "text" in p]
        return texts[-1] if texts else ""
    return ""


def function_responses(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every `functionResponse` part of the request (what the CLI reports back after running a tool)."""
    out = []
    for content in body.get("contents") or []:
        for part in content.get("parts") or []:
            if isinstance(part, dict) and "functionResponse" in part:
                out.append(part["functionResponse"])
    return out


def fill_schema(schema: dict[str, Any]) -> Any:
    """A value shaped like an OpenAPI-style (Gemini) JSON schema; numbers are 10 (the router then picks Flash)."""
    kind = str(schema.get("type", "OBJECT")).upper()
    if kind == "OBJECT":
        return {k: fill_schema(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "ARRAY":
        return [fill_schema(schema.get("items") or {"type": "STRING"})]
    if kind in ("INTEGER", "NUMBER"):
        return 10
    if kind == "BOOLEAN":
        return False
    if schema.get("enum"):
        return schema["enum"][0]
    return "mock"


class MockGemini(MockServer):
    """The mock server. Use as a context manager (in-process, background thread) or `serve_forever()`."""

    name = "mock-gemini"

    def __init__(
        self,
        script: Iterable[dict[str, Any]] = (),
        *,
        port: int = 0,
        default_text: str = DEFAULT_TEXT,
    ) -> None:
        super().__init__(script, port=port, default_text=default_text, handler=_Handler)

    def last_chunk_times(self) -> list[float]:
        """Wall-clock time of each completed stream's final chunk (finishReason sent), in order."""
        with self._lock:
            return [e["t"] for e in self.events if e["event"] == "chunk" and e.get("final")]


class _Handler(MockHandler):
    mock: MockGemini
    json_content_type = "application/json; charset=UTF-8"
    secret_headers = ("x-goog-api-key",)

    def do_GET(self) -> None:
        rid = next(self.mock._rid)
        self.mock._log_request(self._record(rid, None, main=False, label="get"))
        self._send_json(404, _error(404, f"mock: no GET route {self.path}"))

    def do_POST(self) -> None:
        rid = next(self.mock._rid)
        body = self._read_body()
        path = self.path.split("?")[0]
        method = path.rsplit(":", 1)[-1] if ":" in path else ""
        if not path.startswith("/v1beta/models/") or not isinstance(body, dict) or not method:
            self.mock._log_request(self._record(rid, body, main=False, label="unknown"))
            self._send_json(404, _error(404, f"mock: no route {self.path}"))
            return
        if method == "countTokens":
            self.mock._log_request(self._record(rid, body, main=False, label="countTokens"))
            self._send_json(200, {"totalTokens": len(json.dumps(body)) // 4})
            return
        stream = method == "streamGenerateContent"
        main = stream and bool(body.get("tools"))
        entry, scripted = self.mock._next_entry(main)
        schema = (body.get("generationConfig") or {}).get("responseJsonSchema")
        label = str(entry.get("label") or ("scripted" if scripted else "default"))
        if not main and schema:
            label = "schema"
        self.mock._log_request(self._record(rid, body, main=main, label=label, scripted=scripted))
        model = path[len("/v1beta/models/") :].rsplit(":", 1)[0]
        if not main and schema:
            self._answering(rid, label, self._answer_schema, rid, label, schema, model)
        else:
            self._answering(rid, label, self._answer, rid, entry, label, model, stream)

    def _answer_schema(self, rid: int, label: str, schema: dict[str, Any], model: str) -> None:
        text = json.dumps(fill_schema(schema))
        self._send_json(200, _response([{"text": text}], model, final=True))
        self.mock._log_event(rid, "json_response", label=label)

    def _record(
        self, rid: int, body: Any, *, main: bool, label: str, scripted: bool = False
    ) -> dict[str, Any]:
        api_key = bool(self.headers.get("x-goog-api-key"))
        rec = self._base_record(rid, body, main=main, label=label, scripted=scripted, api_key=api_key)
        if isinstance(body, dict):
            rec["last_user"] = last_user_text(body)
        return rec

    def _answer(self, rid: int, entry: dict[str, Any], label: str, model: str, stream: bool) -> None:
        self._sleep(float(entry.get("first_delay", 0)))
        if entry.get("drop"):
            self._drop(rid, label)
            return
        status = int(entry.get("status", 200))
        if status != 200:
            self.mock._log_event(rid, "http_error", label=label, status=status)
            self._send_json(status, _error(status, entry.get("message") or f"mock error {status}"))
            return
        text = str(entry.get("text", "" if entry.get("function_call") else self.mock.default_text))
        size = max(1, int(entry.get("chunk", 24)))
        pieces: list[dict[str, Any]] = [{"text": text[i : i + size]} for i in range(0, len(text), size)]
        calls = entry.get("function_call") or []
        for call in [calls] if isinstance(calls, dict) else calls:
            pieces.append({"functionCall": {"name": call["name"], "args": call.get("args") or {}}})
        if not stream:
            parts = [{"text": text}] if text else []
            parts += [p for p in pieces if "functionCall" in p]
            self._send_json(200, _response(parts, model, final=True))
            self.mock._log_event(rid, "json_response", label=label)
            return
        self._start_stream("text/event-stream")
        delay = float(entry.get("delay", 0.01))
        err = entry.get("stream_error")
        response_id = uuid.uuid4().hex[:20]
        for i, part in enumerate(pieces or [{"text": ""}]):
            final = i == len(pieces) - 1 and not err
            self._sleep(delay if i else 0)
            data = _response([part], model, final=final, response_id=response_id)
            self._write_chunk(b"data: " + json.dumps(data, separators=(",", ":")).encode() + b"\r\n\r\n")
            kind = "function_call" if "functionCall" in part else "text"
            self.mock._log_event(rid, "chunk", label=label, kind=kind, final=final)
        if err:
            self._sleep(delay)
            code = int(err) if isinstance(err, (int, str)) and str(err).isdigit() else 500
            payload = _error(code, "mock in-stream error")
            self._write_chunk(b"data: " + json.dumps(payload).encode() + b"\r\n\r\n")
            self.mock._log_event(rid, "stream_error", label=label, error=payload["error"])
        self._write_chunk(b"")


def _error(code: int, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": STATUS_NAMES.get(code, "UNKNOWN")}}


def _response(
    parts: list[dict[str, Any]], model: str, *, final: bool, response_id: str | None = None
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if final:
        candidate["finishReason"] = "STOP"
    return {
        "candidates": [candidate],
        "usageMetadata": {"promptTokenCount": 1200, "candidatesTokenCount": 20, "totalTokenCount": 1220},
        "modelVersion": model,
        "responseId": response_id or uuid.uuid4().hex[:20],
    }


def main(argv: list[str] | None = None) -> int:
    return run_main(MockGemini, __doc__ or "", "mock_gemini", argv, log_opt=False)


if __name__ == "__main__":
    sys.exit(main())
