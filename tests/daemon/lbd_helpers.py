"""Helpers for the daemon conformance suite: start a real `python -m litbridge serve`, and a tiny
JSON-lines client (`Conn`) over its real socket. Imported by conftest.py and the test modules.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[2]  # the repository (the daemons' cwd)
FAKE_TUI = str(ROOT / "tests" / "fakes" / "fake_tui.py")
_validators: dict[str, Any] = {}


def check_event(ev: Any) -> None:
    """AssertionError unless `ev` validates against its own schema in `litbridge schema` (an event kind the
    spec does not list fails too). Every helper that reads events calls it, so each test checks the wire contract
    of everything it sees."""
    from jsonschema import Draft202012Validator

    from litbridge.protocol import jsonschema as lbschema

    if not _validators:
        schema = lbschema.protocol_schema()
        for key, sub in schema["$defs"].items():
            if key.startswith("event."):
                _validators[key[6:]] = Draft202012Validator({**sub, "$defs": schema["$defs"]})
    name = ev.get("event") if isinstance(ev, dict) else None
    validator = _validators.get(name) if isinstance(name, str) else None
    if validator is None:
        raise AssertionError(f"event kind {name!r} is not in the protocol spec: {ev!r}")
    errors = sorted(validator.iter_errors(ev), key=lambda e: list(e.path))
    if errors:
        where = "; ".join(f"{'/'.join(map(str, e.path)) or '(event)'}: {e.message}" for e in errors[:3])
        raise AssertionError(f"{name} event violates `litbridge schema`: {where}\n{ev!r}")


def busy_during_turn(events: list[dict[str, Any]], end: dict[str, Any]) -> set[str]:
    """The states a session was in between its turn's `accepted` (the state then included) and the turn's end
    `end`: an organic turn opens when the record shows its prompt, maybe after the screen already read busy."""
    state, seen, open_ = "starting", set(), False
    for e in events[: events.index(end)]:
        if e["event"] == "accepted" and e["turn_id"] == end["turn_id"]:
            open_ = True
            seen.add(state)
        elif e["event"] == "state":
            state = e["to"]
            if open_:
                seen.add(state)
    return seen


class TurnOrder:
    """The turn contract, checked over an event stream as it arrives: each turn ends exactly once, and its
    terminal event comes after `state` has settled (never while the session still reads `thinking`, `responding`
    or `dialog`, the states of the turn itself, or `starting`). `observe` returns a violation's description, or None."""

    TERMINAL = ("complete", "interrupted", "turn_error")
    UNSETTLED = ("starting", "thinking", "responding", "dialog")

    def __init__(self) -> None:
        self.state: dict[tuple[Any, Any], str] = {}
        self.ended: set[str] = set()

    def observe(self, ev: dict[str, Any]) -> str | None:
        key = (ev.get("session"), ev.get("channel_id"))
        kind = ev.get("event")
        if kind == "state":
            self.state[key] = ev.get("to")
        elif kind in self.TERMINAL:
            state = self.state.get(key)
            if state in self.UNSETTLED:
                return f"{kind} of turn {ev.get('turn_id')} of {key[0]!r} while `state` still reads {state!r}"
            tid = ev.get("turn_id")
            if tid in self.ended:
                return f"a second terminal event ({kind}) for turn {tid}"
            if tid is not None:
                self.ended.add(tid)
        return None

    def check(self, events: list[dict[str, Any]]) -> None:
        """AssertionError at the first violation in `events`."""
        for ev in events:
            problem = self.observe(ev)
            assert problem is None, problem


WAIT = 20.0  # generous: the CI box is loaded


class DaemonProc:
    def __init__(self, socket_path: str, proc: subprocess.Popen[bytes], log_path: str) -> None:
        self.socket = socket_path
        self.proc = proc
        self.log_path = log_path

    def log(self) -> str:
        return Path(self.log_path).read_text(errors="replace")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                return self.proc.wait(5)
        return self.proc.returncode


def pid_alive(pid: int) -> bool:
    """The process exists and is not a zombie (a killed child not yet reaped still has a /proc entry)."""
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False


def start_daemon(
    socket_path: str,
    *extra: str,
    env: dict[str, str] | None = None,
    base_env: Mapping[str, str] | None = None,
    launcher: list[str] | None = None,
    preexec: Callable[[], Any] | None = None,
    cwd: str | None = None,
    log_path: str | None = None,
    wait: bool = True,
) -> DaemonProc:
    """Start `litbridge serve --socket PATH --log-level debug *extra`, stderr to a log file, and wait until it listens.

    `launcher` replaces `python -m litbridge` (e.g. a patched entry point); the child's environment is `base_env`
    (default os.environ) updated with `env`; `log_path` defaults to PATH + ".stderr"; `preexec` runs in the child.
    """
    log_path = log_path or socket_path + ".stderr"
    full_env = {**(os.environ if base_env is None else base_env), **(env or {})}
    argv = [*(launcher or [sys.executable, "-m", "litbridge"]), "serve", "--socket", socket_path]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [*argv, "--log-level", "debug", *extra],
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=full_env,
            cwd=cwd,
            preexec_fn=preexec,
        )
    d = DaemonProc(socket_path, proc, log_path)
    if wait:
        wait_listening(d)
    return d


def wait_listening(d: DaemonProc, timeout: float = WAIT) -> None:
    """Return once the daemon accepts on its socket; stop it and raise (with its log) if it exits or never does."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if d.proc.poll() is not None:
            raise RuntimeError(f"daemon exited with {d.proc.returncode}:\n{d.log()}")
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as s:
            s.connect(d.socket)
            return
        time.sleep(0.05)
    d.stop()
    raise RuntimeError(f"daemon did not listen within {timeout}s:\n{d.log()}")


def processes_with_home(home: Path | str) -> list[int]:
    """Pids of live processes whose environment has HOME=<home>: every process a session starts inherits the
    session's private HOME, so this finds the CLI and anything it spawned, whatever it was re-parented to."""
    needle = f"HOME={home}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                env = fh.read().split(b"\0")
        except OSError:
            continue
        if needle in env:
            found.append(int(entry))
    return found


async def processes_left(home: Path | str, timeout: float = 15.0) -> list[int]:
    """`processes_with_home(home)` once it is empty, or what is still there after `timeout` seconds (after a kill,
    the process group takes a moment to go)."""
    deadline = time.monotonic() + timeout
    while True:
        left = processes_with_home(home)
        if not left or time.monotonic() > deadline:
            return left
        await asyncio.sleep(0.1)


class ServeDaemon:
    """`python -m litbridge serve` for the real-CLI driver suites (claude, codex, gemini): socket, log, HOME and
    XDG_RUNTIME_DIR all in `base`, the environment whitelisted - only the `passthrough` variables of ours, plus
    `env` (e.g. a PATH with the CLI on it) - so nothing of the developer's own CLI setup leaks in."""

    def __init__(self, base: Path, passthrough: tuple[str, ...], **env: str) -> None:
        self.dir = base
        self.socket = str(base / "lb.sock")
        self.log_path = base / "daemon.log"
        full_env = {k: os.environ[k] for k in passthrough if k in os.environ}
        full_env.update(HOME=str(base), PYTHONUNBUFFERED="1", XDG_RUNTIME_DIR=str(base), **env)
        self._d = start_daemon(
            self.socket, base_env=full_env, cwd=str(ROOT), log_path=str(self.log_path), wait=False
        )
        self.proc = self._d.proc
        try:
            wait_listening(self._d, timeout=30)
        except RuntimeError as e:
            raise RuntimeError(
                f"litbridge serve did not come up (rc={self.proc.returncode}):\n{self.log_tail()}"
            ) from e

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def stop(self) -> None:
        self._d.stop()


class EventClient:
    """The real-CLI suites' JSON-lines client: every event is kept, schema- and turn-order-checked on arrival (a violation
    fails the next wait and the close), waits scan forward from a cursor, a timeout reports the events since, each
    created session's screen and the daemon's log. Sessions it creates are killed at `close`."""

    EVENT_TIMEOUT = 60.0

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, daemon: ServeDaemon
    ) -> None:
        self.reader, self.writer, self.daemon = reader, writer, daemon
        self.events: list[dict[str, Any]] = []
        self.violations: list[str] = []
        self.order = TurnOrder()
        self.created: list[str] = []
        self._changed = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def connect(cls, daemon: ServeDaemon) -> Any:
        reader, writer = await asyncio.open_unix_connection(daemon.socket, limit=4 * 1024 * 1024)
        client = cls(reader, writer, daemon)
        await client.wait(lambda e: e["event"] == "monitor_ready", timeout=15)
        return client

    async def _read(self) -> None:
        while True:
            line = await self.reader.readline()
            if not line:
                self.events.append({"event": "_eof"})
                self._changed.set()
                return
            if line.strip():
                ev = orjson.loads(line)
                self.events.append(ev)
                try:
                    check_event(ev)  # every event a test sees obeys `litbridge schema`
                except AssertionError as exc:
                    self.violations.append(str(exc))
                problem = self.order.observe(ev)  # ... and the turn contract
                if problem is not None:
                    self.violations.append(problem)
                self._changed.set()

    async def send(self, cmd: str, **fields: Any) -> None:
        if cmd == "create" and fields.get("session") not in self.created:
            self.created.append(fields["session"])
        self.writer.write(orjson.dumps({"cmd": cmd, **fields}) + b"\n")
        await self.writer.drain()

    async def command(self, msg: dict[str, Any]) -> None:
        await self.send(msg["cmd"], **{k: v for k, v in msg.items() if k != "cmd"})

    async def wait(
        self,
        pred: Callable[[dict[str, Any]], bool],
        timeout: float | None = None,
        start: int = 0,
        what: str = "",
    ) -> dict[str, Any]:
        """First event at index >= start matching pred; on timeout fail with the events seen and a dump."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (self.EVENT_TIMEOUT if timeout is None else timeout)
        i = start
        while True:
            assert not self.violations, "\n".join(self.violations[:5])
            while i < len(self.events):
                ev = self.events[i]
                i += 1
                if pred(ev):
                    ev.setdefault("_index", i - 1)
                    return ev
                if ev["event"] == "_eof":
                    raise AssertionError(
                        f"daemon closed the connection while waiting for {what}\n{self.daemon.log_tail()}"
                    )
            left = deadline - loop.time()
            if left <= 0:
                raise AssertionError(await self.describe_timeout(what or repr(pred), start))
            self._changed.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._changed.wait(), left)

    async def create(self, cmd: dict[str, Any], timeout: float = 120.0) -> dict[str, Any]:
        """Send a `create` and wait for the session's `ready` (a real CLI's start on a busy machine: generous)."""
        start = len(self.events)
        await self.command(cmd)
        return await self.session_event(cmd["session"], "ready", start=start, timeout=timeout)

    async def turn(self, session: str, content: str, timeout: float | None = 120.0) -> dict[str, Any]:
        """Send and wait for the turn's terminal event (complete / interrupted / turn_error)."""
        start = len(self.events)
        await self.send("send", session=session, content=content)
        return await self.session_event(
            session, ("complete", "interrupted", "turn_error"), start=start, timeout=timeout
        )

    async def describe_timeout(self, what: str, start: int) -> str:
        tail = [e for e in self.events[start:] if e.get("event") != "replace"][-40:]
        text = f"timed out waiting for {what}; events since: {orjson.dumps(tail).decode()[:6000]}"
        for key in self.created:
            try:
                await self.send("dump", session=key, id="timeout-dump")
                dump = await asyncio.wait_for(self._next_dump(), 5)
                screen = "\n".join(r.rstrip() for r in (dump.get("capture") or "").splitlines() if r.strip())
                text += f"\n--- dump {key}: state={dump.get('state')} driver={dump.get('driver')}\n{screen}"
            except (asyncio.TimeoutError, OSError):
                pass
        return text + "\n--- daemon log tail:\n" + self.daemon.log_tail(30)

    async def _next_dump(self) -> dict[str, Any]:
        n = len(self.events)
        while True:
            for ev in self.events[n:]:
                if ev.get("event") == "dump" or (
                    ev.get("event") == "error" and ev.get("re") == "timeout-dump"
                ):
                    return ev
            self._changed.clear()
            await self._changed.wait()

    async def session_event(
        self,
        session: str,
        name: str | tuple[str, ...],
        start: int = 0,
        timeout: float | None = None,
        **match: Any,
    ) -> dict[str, Any]:
        """Next `name` event of `session` (fields in `match` must be equal); an `error` for it fails fast."""
        names = (name,) if isinstance(name, str) else name

        def pred(ev: dict[str, Any]) -> bool:
            if ev.get("session") != session and not (
                ev.get("event") == "error" and ev.get("session") in (None, session)
            ):
                return False
            if ev["event"] == "error" and "error" not in names:
                raise AssertionError(f"daemon error while waiting for {names}: {ev}")
            return ev["event"] in names and all(ev.get(k) == v for k, v in match.items())

        return await self.wait(pred, timeout=timeout, start=start, what=f"{names} of {session} {match or ''}")

    def since(self, session: str, start: int, name: str | None = None) -> list[dict[str, Any]]:
        return [
            e
            for e in self.events[start:]
            if e.get("session") == session and (name is None or e["event"] == name)
        ]

    async def close(self) -> None:
        for key in self.created:
            with contextlib.suppress(OSError):
                await self.send("kill", session=key)
        await asyncio.sleep(0.3)
        self._task.cancel()
        self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()
        assert not self.violations, f"events not matching `litbridge schema`: {self.violations[:5]}"


class Conn:
    """A control connection: send commands, wait for events matching a predicate (everything is kept)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.events: list[dict[str, Any]] = []
        self._taken: set[int] = set()

    @classmethod
    async def open(cls, path: str) -> Conn:
        reader, writer = await asyncio.open_unix_connection(path, limit=8 * 1024 * 1024)
        return cls(reader, writer)

    async def send(self, obj: Any) -> None:
        data = obj if isinstance(obj, bytes) else orjson.dumps(obj) + b"\n"
        self.writer.write(data)
        await self.writer.drain()

    async def _read_one(self, timeout: float) -> dict[str, Any]:
        line = await asyncio.wait_for(self.reader.readline(), timeout)
        if not line:
            raise EOFError("connection closed")
        ev = orjson.loads(line)
        self.events.append(ev)
        check_event(ev)
        return ev

    async def wait(
        self, pred: Callable[[dict[str, Any]], bool] | str, timeout: float = WAIT, **match: Any
    ) -> dict[str, Any]:
        """First event not returned by an earlier wait that matches pred / event name and field values."""
        if isinstance(pred, str):
            name = pred

            def pred(e: dict[str, Any]) -> bool:
                return e.get("event") == name and all(e.get(k) == v for k, v in match.items())

        for i, ev in enumerate(self.events):
            if i not in self._taken and pred(ev):
                self._taken.add(i)
                return ev
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            left = deadline - asyncio.get_running_loop().time()
            try:
                if left <= 0:
                    raise TimeoutError
                ev = await self._read_one(left)
            except TimeoutError:
                raise TimeoutError(
                    f"no matching event within {timeout} s; got: {self.events[-15:]}"
                ) from None
            if pred(ev):
                self._taken.add(len(self.events) - 1)
                return ev

    async def request(
        self, obj: dict[str, Any], reply: str | None = None, timeout: float = WAIT
    ) -> dict[str, Any]:
        """Send with a fresh id; return the first event echoing it (`re`)."""
        Conn._ids += 1
        rid = f"r{Conn._ids}"
        await self.send({**obj, "id": rid})
        return await self.wait(
            lambda e: e.get("re") == rid and (reply is None or e.get("event") in (reply, "error")), timeout
        )

    async def drain_for(self, seconds: float) -> list[dict[str, Any]]:
        out = []
        end = asyncio.get_running_loop().time() + seconds
        with contextlib.suppress(asyncio.TimeoutError, TimeoutError):
            while True:
                left = end - asyncio.get_running_loop().time()
                if left <= 0:
                    break
                out.append(await self._read_one(left))
        return out

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(Exception):
            await self.writer.wait_closed()

    _ids = 0


def bash_create(key: str, **extra: Any) -> dict[str, Any]:
    """A `create` for a plain bash (no rc files, history off, prompt `$ `)."""
    return {
        "cmd": "create",
        "session": key,
        "cli": "bash",
        "args": ["--norc", "--noprofile"],
        "env": {"PS1": "$ ", "HISTFILE": "/dev/null"},
        "working_dir": "/tmp",
        "quiescence": 0.6,
        **extra,
    }


def fake_create(key: str, *args: str, **extra: Any) -> dict[str, Any]:
    return {
        "cmd": "create",
        "session": key,
        "cli": sys.executable,
        "args": [FAKE_TUI, *args],
        "working_dir": "/tmp",
        "quiescence": 0.3,
        **extra,
    }


CGROUP_MOUNTS = (Path("/sys/fs/cgroup/cpu"), Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup"))
"""Where a test cgroup is tried: cgroup v1's cpu hierarchy, a hybrid system's v2 mount, a v2-only system."""


def make_cgroup() -> Path | None:
    """A fresh, empty cgroup this process may move processes into (for `serve --cli-cgroup`), or None where
    none can be made (not root, no cgroup mount)."""
    for mount in CGROUP_MOUNTS:
        if not (mount / "cgroup.procs").is_file():
            continue
        group = mount / f"litbridge-test-{os.getpid()}-{time.monotonic_ns()}"
        try:
            group.mkdir()
        except OSError:
            continue
        if os.access(group / "cgroup.procs", os.W_OK):
            return group
        group.rmdir()
    return None


def remove_cgroup(group: Path) -> None:
    """A test cgroup gone again, once the processes in it (all killed by then) have been reaped."""
    error: OSError | None = None
    for _ in range(250):
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            error = exc
            time.sleep(0.02)
    raise AssertionError(f"test cgroup {group} left behind: {error}")


def cgroup_paths(text: str) -> list[str]:
    """The cgroup paths of a `/proc/<pid>/cgroup` text, one per hierarchy ("4:memory:/a/b" -> "/a/b")."""
    return [line.split(":", 2)[2] for line in text.splitlines() if line.count(":") >= 2]


def cgroups_of(pid: int | str) -> list[str]:
    """`cgroup_paths` of process `pid` ("self" for this one), [] when it is gone."""
    try:
        return cgroup_paths(Path(f"/proc/{pid}/cgroup").read_text())
    except OSError:
        return []


def in_cgroup(paths: list[str], group: Path) -> bool:
    """Whether `paths` (`cgroup_paths`) put a process in `group`, a cgroup made by `make_cgroup`."""
    mount = next(m for m in CGROUP_MOUNTS if group.parent == m)
    return "/" + str(group.relative_to(mount)) in paths


def cgroup_member(pid: int | str, group: Path) -> bool:
    """Whether process `pid` is in `group`, a cgroup made by `make_cgroup`."""
    return in_cgroup(cgroups_of(pid), group)
