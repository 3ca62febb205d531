"""Shared HTTP/SSE machinery of the scripted model-API mocks (mock_anthropic, mock_openai, mock_gemini).

The three mocks used to repeat the same server plumbing: a ThreadingHTTPServer on 127.0.0.1 run in a background
thread (or in the foreground as a script), the response script with "times"/"persistent" entries, the request and
event logs with their waits, JSON replies, chunked SSE writing, pacing that stops with the server, and dropped
connections. That lives here once; each mock keeps only its API's routes, request classification and wire format.
"""

from __future__ import annotations

import gzip
import itertools
import json
import socket
import threading
import time
import uuid
import zlib
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

_M = TypeVar("_M", bound="MockServer")


class ClientGone(Exception):
    """The HTTP client closed the connection (e.g. the CLI was interrupted), or the mock is stopping."""


class MockServer:
    """Server, script and log shared by the mocks. Subclasses pass their MockHandler subclass and set `name`.

    Use as a context manager (in-process, background thread) or `serve_forever()`.
    """

    name = "mock"  # the server thread is named "{name}-{port}"

    def __init__(
        self,
        script: Iterable[dict[str, Any]] = (),
        *,
        port: int = 0,
        default_text: str,
        handler: type[MockHandler],
    ) -> None:
        self.default_text = default_text
        self._lock = threading.Lock()
        self._script: list[dict[str, Any]] = [dict(e) for e in script]
        self._served_times = 0  # how often the head entry was served (for "times")
        self.requests: list[dict[str, Any]] = []  # every HTTP request, in arrival order
        self.events: list[dict[str, Any]] = []  # everything sent back (SSE event names, errors, client_gone)
        self._rid = itertools.count(1)
        self._changed = threading.Condition(self._lock)  # a request or an event was logged
        self._stopping = threading.Event()
        bound = type("Handler", (handler,), {"mock": self})  # a handler class bound to this server
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), bound)
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self: _M) -> _M:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"{self.name}-{self.port}",
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

    def __enter__(self: _M) -> _M:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- script ------------------------------------------------------------------------------------------------
    def push(self, *entries: dict[str, Any]) -> None:
        """Append response entries to the script (served to main requests in order)."""
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

    def _serve_head(self, head: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """Count one serving of `head` (a script entry; lock held), dropping it once its "times" are used up."""
        self._served_times += 1
        if not head.get("persistent") and self._served_times >= int(head.get("times", 1)):
            self._script.remove(head)
            self._served_times = 0
        return head, True

    def _side_entry(self) -> dict[str, Any]:
        """What a side request (one the script never answers) gets; a mock with its own side text overrides it."""
        return {"label": "default", "text": self.default_text}

    def _next_entry(self, main: bool, user_text: str = "") -> tuple[dict[str, Any], bool]:
        """Pick the entry for a request; returns (entry, from_script). An entry with `when` answers only a
        request whose last user text contains it (concurrent sessions; for the mocks that pass `user_text`); the
        others are served in order."""
        with self._lock:
            if not main:
                return self._side_entry(), False
            for i, e in enumerate(self._script):
                if e.get("when") and user_text and e["when"] in user_text:
                    return self._script.pop(i), True
            plain = [e for e in self._script if not e.get("when")]
            if not plain:
                return {"label": "default", "text": self.default_text}, False
            return self._serve_head(plain[0])

    # -- log ---------------------------------------------------------------------------------------------------
    def main_requests(self) -> list[dict[str, Any]]:
        """Main (agent-loop) requests - what the scripted entries answer."""
        with self._lock:
            return [r for r in self.requests if r["main"]]

    def wait_for_requests(
        self, n: int, timeout: float = 60.0, main_only: bool = True
    ) -> list[dict[str, Any]]:
        """Block until at least n (main) requests arrived; raises TimeoutError with the log summary."""
        deadline = time.monotonic() + timeout
        with self._changed:
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
                self._changed.wait(left)

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

    def _log_event(self, rid: int, event: str, **fields: Any) -> None:
        with self._changed:
            self.events.append({"t": time.time(), "rid": rid, "event": event, **fields})
            self._changed.notify_all()

    def _log_request(self, entry: dict[str, Any]) -> None:
        with self._changed:
            self.requests.append(entry)
            self._changed.notify_all()


class MockHandler(BaseHTTPRequestHandler):
    """Request plumbing shared by the mocks' handlers: body decoding, JSON replies, chunked SSE, pacing, drops."""

    protocol_version = "HTTP/1.1"
    mock: Any  # the MockServer subclass instance (set per server by MockServer)
    json_content_type = "application/json"
    request_id_header: str | None = None  # a response header carrying a fresh mock request id
    secret_headers: tuple[str, ...] = ("authorization",)  # lower-case; left out of the logged headers

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the request log is the record
        pass

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

    def _request_id(self) -> None:
        if self.request_id_header:
            self.send_header(self.request_id_header, f"req_mock_{uuid.uuid4().hex[:20]}")

    def _send_json(self, status: int, obj: Any, extra: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", self.json_content_type)
        self.send_header("Content-Length", str(len(data)))
        self._request_id()
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _start_stream(self, content_type: str, extra: dict[str, str] | None = None) -> None:
        """Send the headers of a chunked event stream (the body then goes out with `_write_chunk`)."""
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self._request_id()
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()

    def _write_chunk(self, data: bytes) -> None:
        """One HTTP chunk; b"" ends the body. Raises ClientGone if the client left or the mock is stopping."""
        if self.mock._stopping.is_set():
            raise ClientGone("mock stopping")
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        except OSError as exc:
            raise ClientGone(str(exc)) from exc

    def _sse_event(self, name: str, payload: dict[str, Any]) -> None:
        """One `event: NAME` / `data: JSON` SSE event in its own chunk."""
        self._write_chunk(f"event: {name}\ndata: {json.dumps(payload, separators=(',', ':'))}\n\n".encode())

    def _sleep(self, seconds: float) -> None:
        if seconds > 0 and self.mock._stopping.wait(seconds):
            raise ClientGone("mock stopping")

    def _drop(self, rid: int, label: str) -> None:
        """Close the socket without answering (the "drop" script entry)."""
        self.mock._log_event(rid, "dropped", label=label)
        self.close_connection = True
        self.connection.close()

    def _answering(self, rid: int, label: str, answer: Any, *args: Any) -> None:
        """Run `answer(*args)`, logging a client that went away instead of raising."""
        try:
            answer(*args)
        except ClientGone as exc:
            self.mock._log_event(rid, "client_gone", label=label, err=str(exc))
            self.close_connection = True

    def _base_record(
        self, rid: int, body: Any, *, main: bool, label: str, scripted: bool, **extra: Any
    ) -> dict[str, Any]:
        """The request log record's common fields (`extra` comes after `headers`, before `main`)."""
        return {
            "t": time.time(),
            "rid": rid,
            "method": self.command,
            "path": self.path,
            "headers": {k: v for k, v in self.headers.items() if k.lower() not in self.secret_headers},
            **extra,
            "main": main,
            "label": label,
            "scripted": scripted,
            "body": body,
        }


def leave_mid_stream(port: int, path: str, body: Any, marker: bytes) -> None:
    """POST `body` as JSON to `path` on the mock at `port`, read the answer until `marker` arrived, then close the
    connection: a client that goes away mid-answer (the mock logs `client_gone`)."""
    payload = json.dumps(body).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(
            b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (path.encode(), len(payload), payload)
        )
        got = b""
        while marker not in got:
            chunk = sock.recv(65536)
            assert chunk, got
            got += chunk


def load_script(path: str | Path) -> list[dict[str, Any]]:
    """A JSON list, or JSON lines (one entry per line)."""
    text = Path(path).read_text()
    stripped = text.lstrip()
    if stripped.startswith("["):
        return list(json.loads(stripped))
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def run_main(mock_cls: type[MockServer], doc: str, prog: str, argv: list[str] | None, log_opt: bool) -> int:
    """The `python mock_X.py --port --script [--log]` entry point."""
    import argparse

    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0 = a free one, printed)")
    ap.add_argument("--script", help="JSON list or JSON-lines file of response entries")
    if log_opt:
        ap.add_argument("--log", help="append every request (JSON lines) to this file at exit")
    args = ap.parse_args(argv)
    mock = mock_cls(load_script(args.script) if args.script else [], port=args.port)
    print(f"{prog} listening on {mock.url}", flush=True)
    try:
        mock.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        if log_opt and args.log:
            with open(args.log, "a") as fh:
                for r in mock.requests:
                    fh.write(json.dumps(r) + "\n")
    return 0
