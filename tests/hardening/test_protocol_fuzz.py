"""Protocol fuzzing against a real `litbridge serve`: every bad line gets an `error` with a code, nothing reaches a PTY.

Wrong types for every field of every command (iterating `litbridge.protocol.spec.COMMANDS`), missing required
fields, malformed JSON, binary garbage, invalid UTF-8, >1 MiB lines, random command objects (hypothesis),
floods of thousands of commands, and clients that vanish mid-line, while a control client keeps pinging.
A live fake-TUI session logs every byte it reads: rejected commands must type nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import struct
from pathlib import Path
from typing import Any

import orjson
import pytest
from hardening_helpers import connect, lbd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from litbridge.protocol.spec import COMMANDS, ERROR_CODES, Field

L = lbd()
Conn = L.Conn
ASYNC = pytest.mark.asyncio(loop_scope="function")

LOGGED = "pf-log"  # the session whose fake TUI logs every byte it reads
SAMPLES: list[Any] = [7, -1, 1.5, True, False, "s", "", [], ["x"], [1], {}, {"a": 1}, {"a": "b"}]
_PY = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "object": dict, "array": list}


def accepts(spec: Field, value: Any) -> bool:
    """Does the spec table accept `value` for this field (type, then items/values)?"""
    types = (spec.type,) if isinstance(spec.type, str) else spec.type
    ok = False
    for t in types:
        if t == "any":
            return True
        if t == "null":
            continue
        if isinstance(value, bool) and t in ("integer", "number"):
            continue
        if isinstance(value, _PY[t]):
            ok = True
    if ok and spec.items and isinstance(value, list):
        ok = all(accepts(Field(spec.items), v) for v in value)
    if ok and spec.values and isinstance(value, dict):
        ok = all(accepts(Field(spec.values), v) for v in value.values())
    return ok


def base_command(name: str) -> dict[str, Any]:
    """A valid command aimed at the logged live session (so a skipped check would act on it)."""
    cmd: dict[str, Any] = {"cmd": name}
    if COMMANDS[name].per_session:
        cmd["session"] = LOGGED
    if name == "keystroke":
        cmd["keys"] = ["x"]
    if name in ("send", "input"):
        cmd["content"] = "typed-by-a-rejected-command"
    if name == "answer":
        cmd["digit"] = "1"
    return cmd


def wrong_type_cases() -> list[tuple[str, str, Any]]:
    cases = []
    for name, cmd in COMMANDS.items():
        for fname, spec in cmd.fields.items():
            for value in SAMPLES:
                if not accepts(spec, value):
                    cases.append((name, fname, value))
    return cases


async def replies_until_sync(c: Conn, tag: str) -> list[dict[str, Any]]:
    """Send a ping tagged `tag`; return every event read before its pong (the ping flushes the pipeline)."""
    await c.send({"cmd": "ping", "id": tag})
    await c.wait("pong", re=tag, timeout=60.0)
    return list(c.events)


class TypedLog:
    """The fake TUI's byte log: `delta()` returns the bytes read by the CLI since the last call."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seen = 0

    def read(self) -> bytes:
        try:
            lines = self.path.read_text().split()
        except FileNotFoundError:
            return b""
        return b"".join(bytes.fromhex(x) for x in lines)

    async def delta_until_marker(self, c: Conn, marker: str = "\x1a") -> bytes:
        """Type `marker` with a valid keystroke; once it arrives, return what came before it since last time."""
        r = await c.request({"cmd": "keystroke", "session": LOGGED, "keys": [marker]}, "keystroke_sent")
        assert r["event"] == "keystroke_sent", r
        for _ in range(400):
            data = self.read()
            if data[self.seen :].endswith(marker.encode()):
                out = data[self.seen : -len(marker.encode())]
                self.seen = len(data)
                return out
            await asyncio.sleep(0.05)
        raise AssertionError(f"marker never reached the PTY; log: {self.read()[self.seen :]!r}")


@pytest.fixture(scope="module")
def logged(daemon: Any, module_tmp_short: str) -> TypedLog:
    """Create the logged fake-TUI session once (synchronously, on a private loop)."""
    log_path = Path(module_tmp_short) / "typed.log"

    async def make() -> None:
        c = await connect(daemon.socket)
        r = await c.request(
            L.fake_create(LOGGED, "--silent-start", env={"FAKE_TUI_LOG": str(log_path)}), "ready"
        )
        assert r["event"] == "ready", r
        await c.close()

    asyncio.run(make())
    return TypedLog(log_path)


class Pinger:
    """A control client that pings every 20 ms throughout a test; every ping must be answered."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.count = 0
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    async def __aenter__(self) -> Pinger:
        self.conn = await connect(self.path)
        self._task = asyncio.create_task(self._run())
        return self

    async def _run(self) -> None:
        while not self._stop.is_set():
            r = await self.conn.request({"cmd": "ping"}, "pong", timeout=30.0)
            assert r["event"] == "pong"
            self.count += 1
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._stop.wait(), 0.02)

    async def __aexit__(self, *exc: Any) -> None:
        self._stop.set()
        assert self._task is not None
        await self._task  # re-raises if a ping went unanswered
        assert self.count > 0
        await self.conn.close()


# ------------------------------------------------------------------------------------------ field validation


@ASYNC
async def test_wrong_type_for_every_field_of_every_command(daemon: Any, logged: TypedLog) -> None:
    cases = wrong_type_cases()
    assert len(cases) > 100 and {n for n, _, _ in cases} == {n for n, c in COMMANDS.items() if c.fields}
    async with Pinger(daemon.socket):
        c = await connect(daemon.socket)
        for i, (name, fname, value) in enumerate(cases):
            await c.send({**base_command(name), fname: value, "id": f"wt{i}"})
        events = await replies_until_sync(c, "wt-sync")
        for i, (name, fname, value) in enumerate(cases):
            got = [e for e in events if e.get("re") == f"wt{i}"]
            assert len(got) == 1, (name, fname, value, got)
            err = got[0]
            assert err["event"] == "error" and err["code"] == "bad_field", (name, fname, value, err)
            assert fname in err["message"]
        assert await logged.delta_until_marker(c) == b"", "a rejected command typed into the PTY"
        await c.close()


@ASYNC
async def test_missing_required_fields(daemon: Any, logged: TypedLog) -> None:
    c = await connect(daemon.socket)
    n = 0
    for name, cmd in COMMANDS.items():
        for fname, spec in cmd.fields.items():
            if spec.required:
                msg = {**base_command(name), "id": f"mf-{name}-{fname}"}
                msg.pop(fname, None)
                err = await c.request(msg)
                assert err["event"] == "error" and err["code"] == "bad_field", (name, fname, err)
                err = await c.request({**msg, fname: None})  # null counts as absent
                assert err["event"] == "error" and err["code"] == "bad_field", (name, fname, err)
                n += 1
    assert n >= 9  # session of every per-session command + keystroke.keys
    assert await logged.delta_until_marker(c) == b""
    await c.close()


@ASYNC
async def test_bad_id_types_are_errors_without_re(daemon: Any) -> None:
    c = await connect(daemon.socket)
    for bad in (1.5, [1], {"a": 1}, True):
        await c.send({"cmd": "ping", "id": bad})
    events = await replies_until_sync(c, "bid-sync")
    errors = [e for e in events if e["event"] == "error"]
    assert len(errors) == 4 and all(e["code"] == "bad_field" and "re" not in e for e in errors), errors
    assert not any(e["event"] == "pong" and e.get("re") != "bid-sync" for e in events)
    await c.close()


@ASYNC
async def test_semantically_rejected_commands_type_nothing(daemon: Any, logged: TypedLog) -> None:
    c = await connect(daemon.socket)
    rejected = [
        ({"cmd": "keystroke", "keys": ["a", "b", "NoSuchKey"]}, "bad_key"),
        ({"cmd": "keystroke", "keys": ["Enter", "C-"]}, "bad_key"),
        ({"cmd": "keystroke", "keys": [""]}, "bad_key"),
        ({"cmd": "keystroke", "keys": ["x; rm -rf /"]}, "bad_key"),
        ({"cmd": "answer", "question_id": "q999999"}, "no_question"),
        ({"cmd": "answer", "digit": "12"}, "bad_field"),
        ({"cmd": "answer", "digit": "x"}, "bad_field"),
        ({"cmd": "interrupt"}, "no_turn"),
        ({"cmd": "send", "session": "ghost-session", "content": "hello"}, "session_not_found"),
    ]
    for msg, code in rejected:
        err = await c.request({"session": LOGGED, **msg})
        assert err["event"] == "error" and err["code"] == code, (msg, err)
    assert await logged.delta_until_marker(c) == b""
    # the log is live (this check can fail): a valid keystroke arrives byte-exact
    ok = await c.request(
        {"cmd": "keystroke", "session": LOGGED, "keys": ["q", "Up", "C-a"]}, "keystroke_sent"
    )
    assert ok["event"] == "keystroke_sent"
    assert await logged.delta_until_marker(c) == b"q\x1b[A\x01"
    await c.close()


# ------------------------------------------------------------------------------------------ malformed lines

GARBAGE = [
    b"{",
    b"}",
    b"not json",
    b'{"cmd": "ping"',
    b'{"cmd": 5, "id": "g5"}',
    b'{"cmd": null}',
    b'{"cmd": "PING"}',
    b"[1, 2, 3]",
    b'"ping"',
    b"123",
    b"null",
    b"true",
    b"\x00\x01\x02\x03",
    b"\xff\xfe\xfd",
    b"\xc3\x28",
    b'{"cmd":"nope\xff"}',
    b'{"cmd":"send","session":"\xed\xa0\x80","content":"x"}',
    b"\x1b[2J\x1b]0;pwn\x07",
    b'{"cmd": "ping"}}',
    b'{"cmd": "ping", "cmd": "list"' + b"}" * 1000,
    b"[" * 100000 + b"]" * 100000,
    b'{"a":' * 2000 + b"1" + b"}" * 2000,
    b'{"cmd":"ping","id":123456789012345678901234567890}',  # beyond 64 bits: orjson refuses it
    os.urandom(4096).replace(b"\n", b"").replace(b"\r", b"x"),
]


@ASYNC
async def test_garbage_lines_each_get_one_error(daemon: Any, logged: TypedLog) -> None:
    async with Pinger(daemon.socket):
        c = await connect(daemon.socket)
        await c.send(b"\n".join(GARBAGE) + b"\n")
        events = await replies_until_sync(c, "garbage-sync")
        errors = [e for e in events if e["event"] == "error"]
        assert len(errors) == len(GARBAGE), [e.get("code") for e in errors]
        assert all(
            e["code"] in ("bad_json", "unknown_command", "bad_field", "session_not_found") for e in errors
        )
        assert all(isinstance(e["message"], str) and e["message"] for e in errors)
        assert await logged.delta_until_marker(c) == b""
        await c.close()


@ASYNC
async def test_huge_lines_are_too_large_and_the_connection_stays(daemon: Any, logged: TypedLog) -> None:
    c = await connect(daemon.socket)
    pad = b"x" * (1024 * 1024 + 1)
    await c.send(b'{"cmd":"keystroke","session":"' + LOGGED.encode() + b'","keys":["' + pad + b'"]}\n')
    await c.send(b"\xff" * (3 * 1024 * 1024) + b"\n")  # 3 MiB of binary, no JSON at all
    events = await replies_until_sync(c, "huge-sync")
    errors = [e for e in events if e["event"] == "error"]
    assert [e["code"] for e in errors] == ["too_large", "too_large"], errors
    assert await logged.delta_until_marker(c) == b""
    await c.close()


JSON_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=20),
)
JSON = st.recursive(
    JSON_LEAF,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
SAFE_CMDS = sorted(set(COMMANDS) - {"create"})  # a random create might really start a program


@st.composite
def random_commands(draw: Any) -> dict[str, Any]:
    name = draw(st.sampled_from(SAFE_CMDS))
    msg: dict[str, Any] = {"cmd": name}
    for fname in draw(st.lists(st.sampled_from(sorted(COMMANDS[name].fields) or ["x"]), max_size=6)):
        msg[fname] = draw(JSON)
    msg.update(draw(st.dictionaries(st.text(max_size=6), JSON, max_size=2)))
    if COMMANDS[name].per_session:
        msg["session"] = "fz-" + draw(st.text(max_size=6))  # never a live session
    msg["cmd"] = name
    return msg


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    batch=st.lists(random_commands(), min_size=1, max_size=40),
    raw=st.lists(st.binary(max_size=200), max_size=5),
)
def test_random_commands_and_bytes_each_get_exactly_one_reply(
    daemon: Any, batch: list[dict[str, Any]], raw: list[bytes]
) -> None:
    raw = [r.replace(b"\n", b" ") for r in raw if r.replace(b"\n", b" ").strip()]

    async def run() -> None:
        c = await connect(daemon.socket)
        for i, msg in enumerate(batch):
            msg["id"] = f"fz{i}"
        payload = b"".join(orjson.dumps(m, option=orjson.OPT_NON_STR_KEYS) + b"\n" for m in batch)
        await c.send(payload + b"".join(r + b"\n" for r in raw))
        events = await replies_until_sync(c, "fz-sync")
        for i, msg in enumerate(batch):
            got = [e for e in events if e.get("re") == f"fz{i}"]
            assert len(got) == 1, (msg, got)
            reply = got[0]
            if reply["event"] == "error":
                assert reply["code"] in ERROR_CODES and reply["message"], reply
            else:
                assert reply["event"] in COMMANDS[msg["cmd"]].replies, (msg, reply)
        unanswered_raw = [e for e in events if e["event"] == "error" and "re" not in e]
        assert len(unanswered_raw) >= len(raw)  # every garbage line got its own error
        await c.close()

    asyncio.run(run())


# ------------------------------------------------------------------------------------------ load and vanishing


@ASYNC
async def test_thousands_of_commands_per_second(daemon: Any) -> None:
    """5 clients x 2000 pipelined pings/lists/bad lines: every one answered, in order, per client."""
    async with Pinger(daemon.socket):

        async def one(k: int) -> None:
            c = await connect(daemon.socket)
            lines = []
            for i in range(2000):
                kind = i % 4
                if kind == 3:
                    lines.append(b"{bad json " + str(i).encode() + b"\n")
                else:
                    lines.append(orjson.dumps({"cmd": ("ping", "list", "hello")[kind], "id": i}) + b"\n")
            await c.send(b"".join(lines))
            events = await replies_until_sync(c, f"flood-sync-{k}")
            res = [
                e.get("re")
                for e in events
                if e["event"] in ("pong", "sessions", "capabilities") and isinstance(e.get("re"), int)
            ]
            assert res == [i for i in range(2000) if i % 4 != 3]
            assert sum(1 for e in events if e["event"] == "error" and e["code"] == "bad_json") == 500
            await c.close()

        await asyncio.gather(*(one(k) for k in range(5)))


def _rst(sock: socket.socket) -> None:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


@ASYNC
async def test_clients_vanishing_mid_line(daemon: Any, logged: TypedLog) -> None:
    partials = [
        b'{"cmd":"keystroke","session":"' + LOGGED.encode() + b'","keys":["z"',
        b'{"cmd":"send","session":"' + LOGGED.encode() + b'","content":"half',
        b'{"cmd":"input","session":"' + LOGGED.encode() + b'","content":"x"}',  # no newline: never a command
        b"x" * 200000,
        b"\xff\xfe",
        b"",
    ]
    async with Pinger(daemon.socket):
        for round_ in range(8):
            socks = []
            for i, partial in enumerate(partials):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(daemon.socket)
                s.setblocking(False)
                with contextlib.suppress(BlockingIOError):
                    s.send(partial)
                if (i + round_) % 2:
                    _rst(s)
                socks.append(s)
            await asyncio.sleep(0.01)
            for s in socks:
                s.close()
        # half-closed writers: a complete command then shutdown(SHUT_WR) is still answered
        r, w = await asyncio.open_unix_connection(daemon.socket)
        w.write(b'{"cmd":"ping","id":"last"}\n')
        w.write_eof()
        data = await asyncio.wait_for(r.read(), 30.0)
        assert b'"re":"last"' in data
        w.close()
    c = await connect(daemon.socket)
    assert await logged.delta_until_marker(c) == b"", "a partial line from a vanished client was executed"
    lst = await c.request({"cmd": "list"}, "sessions")
    assert next(s for s in lst["sessions"] if s["name"] == LOGGED)["alive"] is True
    await c.close()
    assert daemon.proc.poll() is None


@ASYNC
async def test_attach_socket_garbage_selectors(daemon: Any, logged: TypedLog) -> None:
    """Garbage, huge and half selectors on the attach socket: refused or ignored, the daemon serves on."""
    selectors = [
        b"\xff\xfe\n",
        b"{\n",
        b'{"session": 5}\n',
        b'{"session": "nope"}\n',
        b"x" * 100000 + b"\n",
        b'{"list": "yes"}\n',
        b"[]\n",
        b"\n",
        b'{"session":"' + LOGGED.encode() + b'"',
        b"",
    ]
    async with Pinger(daemon.socket):
        for sel in selectors:
            r, w = await asyncio.open_unix_connection(daemon.socket + ".attach")
            w.write(sel)
            with contextlib.suppress(ConnectionError):
                await w.drain()
            if sel.endswith(b"\n"):
                with contextlib.suppress(ConnectionError):
                    data = await asyncio.wait_for(r.read(), 40.0)
                    assert b"\x1b[" not in data or sel.startswith(b'{"session":"pf'), (sel[:40], data[:200])
            w.close()
    c = await connect(daemon.socket)
    assert await logged.delta_until_marker(c) == b"", "an attach selector reached the PTY"
    await c.close()
