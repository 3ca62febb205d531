"""Scripted mock of the Anthropic Messages API (SSE streaming) on 127.0.0.1, for running the real Claude Code offline.

Owns: the HTTP server (thread-based, in-process or as a script), the response script (one entry per agent-loop
request: text / thinking / tool_use blocks, HTTP errors, SSE errors, dropped connections, pacing) and the request log.
Does not own: anything Claude-Code specific beyond the request shapes it sends (see tests/fakes/claude_env.py).

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

import argparse
import copy
import gzip
import itertools
import json
import sys
import threading
import time
import uuid
import zlib
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

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


class ClientGone(Exception):
    """The HTTP client closed the connection (e.g. Claude Code was interrupted)."""


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


class MockAnthropic:
    """The mock server. Use as a context manager (in-process, background thread) or `serve_forever()`."""

    def __init__(
        self,
        script: Iterable[dict[str, Any]] = (),
        *,
        port: int = 0,
        default_text: str = DEFAULT_TEXT,
        model: str = "claude-opus-5-5",
    ) -> None:
        self._lock = threading.Lock()
        self._script: list[dict[str, Any]] = [dict(e) for e in script]
        self._served_times = 0  # how often the head entry was served (for "times")
        self.default_text = default_text
        self.model = model
        self.requests: list[dict[str, Any]] = []  # every HTTP request, in arrival order
        self.events: list[dict[str, Any]] = []  # everything sent back (SSE event names, errors, client_gone)
        self._rid = itertools.count(1)
        self._new_request = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> MockAnthropic:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"mock-anthropic-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def serve_forever(self) -> None:
        try:
            self._httpd.serve_forever(poll_interval=0.05)
        finally:
            self._httpd.server_close()

    def __enter__(self) -> MockAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- script ------------------------------------------------------------------------------------------------
    def push(self, *entries: dict[str, Any]) -> None:
        """Append response entries to the script (served to agent-loop requests in order)."""
        with self._lock:
            self._script.extend(dict(e) for e in entries)

    def set_script(self, entries: Iterable[dict[str, Any]]) -> None:
        """Replace the remaining script (also clears a persistent entry)."""
        with self._lock:
            self._script = [dict(e) for e in entries]
            self._served_times = 0

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    def _next_entry(self, main: bool) -> tuple[dict[str, Any], bool]:
        """Pick the entry for a request; returns (entry, from_script)."""
        with self._lock:
            if not main or not self._script:
                return {"label": "default", "text": self.default_text}, False
            head = self._script[0]
            self._served_times += 1
            if head.get("persistent"):
                return head, True
            if self._served_times >= int(head.get("times", 1)):
                self._script.pop(0)
                self._served_times = 0
            return head, True

    # -- log ---------------------------------------------------------------------------------------------------
    def main_requests(self) -> list[dict[str, Any]]:
        """Agent-loop requests (those carrying tools) - what the scripted entries answer."""
        with self._lock:
            return [r for r in self.requests if r["main"]]

    def wait_for_requests(
        self, n: int, timeout: float = 60.0, main_only: bool = True
    ) -> list[dict[str, Any]]:
        """Block until at least n (agent-loop) requests arrived; raises TimeoutError with the log summary."""
        deadline = time.monotonic() + timeout
        with self._new_request:
            while True:
                got = [r for r in self.requests if r["main"] or not main_only]
                if len(got) >= n:
                    return got
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"mock saw {len(got)} requests, wanted {n}: "
                        f"{[(r['path'], r['label']) for r in self.requests]}"
                    )
                self._new_request.wait(left)

    def _log_event(self, rid: int, event: str, **fields: Any) -> None:
        with self._lock:
            self.events.append({"t": time.time(), "rid": rid, "event": event, **fields})

    def _log_request(self, entry: dict[str, Any]) -> None:
        with self._new_request:
            self.requests.append(entry)
            self._new_request.notify_all()


def _make_handler(mock: MockAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        pass

    Handler.mock = mock
    return Handler


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    mock: MockAnthropic

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the request log is the record
        pass

    # -- plumbing ----------------------------------------------------------------------------------------------
    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        enc = (self.headers.get("Content-Encoding") or "").lower()
        if enc == "gzip":
            raw = gzip.decompress(raw)
        elif enc == "deflate":
            raw = zlib.decompress(raw)
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _send_json(self, status: int, obj: Any, extra: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", f"req_mock_{uuid.uuid4().hex[:20]}")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _write_chunk(self, data: bytes) -> None:
        if self.mock._stopping.is_set():
            raise ClientGone("mock stopping")
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        except OSError as exc:
            raise ClientGone(str(exc)) from exc

    def _sse(self, rid: int, label: str, name: str, payload: dict[str, Any], **log: Any) -> None:
        self._write_chunk(f"event: {name}\ndata: {json.dumps(payload, separators=(',', ':'))}\n\n".encode())
        self.mock._log_event(rid, name, label=label, **log)

    def _sleep(self, seconds: float) -> None:
        if seconds > 0 and self.mock._stopping.wait(seconds):
            raise ClientGone("mock stopping")

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
        try:
            self._answer(rid, body, entry, label)
        except ClientGone as exc:
            self.mock._log_event(rid, "client_gone", label=label, err=str(exc))
            self.close_connection = True

    def _record(
        self, rid: int, body: Any, *, main: bool, label: str, scripted: bool = False
    ) -> dict[str, Any]:
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("x-api-key", "authorization")}
        rec: dict[str, Any] = {
            "t": time.time(),
            "rid": rid,
            "method": self.command,
            "path": self.path,
            "headers": headers,
            "main": main,
            "label": label,
            "scripted": scripted,
            "body": body,
        }
        if isinstance(body, dict):
            rec["stream"] = bool(body.get("stream"))
            rec["model"] = body.get("model")
            rec["last_user"] = last_user_text(body)
        return rec

    # -- answers -----------------------------------------------------------------------------------------------
    def _answer(self, rid: int, body: dict[str, Any], entry: dict[str, Any], label: str) -> None:
        self._sleep(float(entry.get("first_delay", 0)))
        if entry.get("drop"):
            self.mock._log_event(rid, "dropped", label=label)
            self.close_connection = True
            self.connection.close()
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
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("request-id", f"req_mock_{uuid.uuid4().hex[:20]}")
        for k, v in (entry.get("headers") or {}).items():
            self.send_header(k, v)
        self.end_headers()
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


def load_script(path: str | Path) -> list[dict[str, Any]]:
    """A JSON list, or JSON lines (one entry per line)."""
    text = Path(path).read_text()
    stripped = text.lstrip()
    if stripped.startswith("["):
        return list(json.loads(stripped))
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0 = a free one, printed)")
    ap.add_argument("--script", help="JSON list or JSON-lines file of response entries")
    ap.add_argument("--log", help="append every request (JSON lines) to this file at exit")
    args = ap.parse_args(argv)
    mock = MockAnthropic(load_script(args.script) if args.script else [], port=args.port)
    print(f"mock_anthropic listening on {mock.url}", flush=True)
    try:
        mock.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        if args.log:
            with open(args.log, "a") as fh:
                for r in mock.requests:
                    fh.write(json.dumps(r) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
