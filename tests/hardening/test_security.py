"""Security: private socket files whatever the umask, other uids refused, TCP token auth (constant-time compare),
secrets passed in `create.env` never echoed, keystroke names typing only their own bytes, no shell anywhere.

Real `litbridge serve` processes; the other-uid test forks a client that setuid()s to `nobody` (root only).
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import os
import pwd
import secrets
import socket
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import orjson
import pytest
from hardening_helpers import connect, lbd, spawn_daemon, wait_until
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from litbridge import keys as keymod
from litbridge.daemon import attach as attach_mod
from litbridge.daemon import server as server_mod

L = lbd()
Conn = L.Conn
ASYNC = pytest.mark.asyncio(loop_scope="function")


def mode(path: str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def read_token(path: str) -> str:
    return Path(path).read_text().strip()


def exists(path: str | Path) -> bool:
    return os.path.lexists(path)


# ------------------------------------------------------------------------------------------ file modes


def _umask0() -> None:
    os.umask(0)


def test_socket_dir_0700_and_sockets_0600_with_umask_0(tmp_short: str) -> None:
    sock = os.path.join(tmp_short, "new", "dir", "s.sock")
    d = spawn_daemon(sock, preexec=_umask0)
    try:
        assert mode(os.path.dirname(sock)) == 0o700
        assert mode(sock) == 0o600 and stat.S_ISSOCK(os.stat(sock).st_mode)
        assert mode(sock + ".attach") == 0o600
    finally:
        assert d.stop() == 0, d.log()


def test_default_socket_dir_is_made_private(tmp_short: str) -> None:
    runtime = Path(tmp_short) / "run"
    (runtime / "litbridge").mkdir(parents=True)
    (runtime / "litbridge").chmod(0o777)  # someone loosened it: the daemon tightens its own dir
    sock = str(runtime / "litbridge" / "litbridge.sock")
    d = spawn_daemon(sock, env={"XDG_RUNTIME_DIR": str(runtime)}, preexec=_umask0)
    try:
        assert mode(str(runtime / "litbridge")) == 0o700
        assert mode(sock) == 0o600
    finally:
        assert d.stop() == 0, d.log()


def _free_port_pair() -> int:
    for _ in range(50):
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            port = a.getsockname()[1]
            with socket.socket() as b:
                try:
                    b.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
            return port
    raise RuntimeError("no free port pair")


@pytest.fixture
def tcp_daemon(tmp_short: str) -> Any:
    port = _free_port_pair()
    d = spawn_daemon(os.path.join(tmp_short, "tcp.sock"), "--port", str(port), preexec=_umask0)
    d.port = port
    yield d
    assert d.stop() == 0, d.log()
    assert not exists(os.path.join(tmp_short, "tcp.sock.token")), "token file left behind"


# ------------------------------------------------------------------------------------------ other uid

NOBODY_CLIENT = textwrap.dedent(
    """
    import os, socket, sys, pwd
    nobody = pwd.getpwnam("nobody")
    os.setgroups([]); os.setgid(nobody.pw_gid); os.setuid(nobody.pw_uid)
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(sys.argv[1])
    except PermissionError:
        print("EACCES"); sys.exit(0)
    s.settimeout(10)
    try:
        s.sendall(sys.argv[2].encode() + b"\\n")
    except (BrokenPipeError, ConnectionResetError):
        pass  # already closed on us; what it said is still readable
    data = b""
    try:
        while chunk := s.recv(65536):
            data += chunk
    except (ConnectionResetError, socket.timeout):
        data += b"<reset-or-timeout>"
    sys.stdout.write(data.decode("utf-8", "replace"))
    """
)


def _as_nobody(path: str, line: str) -> str:
    out = subprocess.run([sys.executable, "-c", NOBODY_CLIENT, path, line], capture_output=True, timeout=30)
    assert out.returncode == 0, out.stderr.decode()
    return out.stdout.decode()


@pytest.mark.skipif(
    not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to switch to another uid"
)
def test_peer_with_another_uid_is_refused(tmp_short: str) -> None:
    pwd.getpwnam("nobody")
    os.chmod(tmp_short, 0o755)  # mkdtemp's 0700 would refuse nobody before the daemon's own checks
    sock = os.path.join(tmp_short, "u", "s.sock")
    d = spawn_daemon(sock)
    try:
        # layer 1: the 0700 dir / 0600 socket keep other users from even connecting
        assert _as_nobody(sock, '{"cmd":"ping"}').strip() == "EACCES"
        # layer 2: with the file modes loosened by hand, the peer-uid check still refuses (control and attach)
        os.chmod(os.path.dirname(sock), 0o755)
        os.chmod(sock, 0o666)
        os.chmod(sock + ".attach", 0o666)
        got = _as_nobody(sock, '{"cmd":"list","id":1}')
        lines = [orjson.loads(x) for x in got.splitlines() if x.startswith("{")]
        assert lines and lines[0]["event"] == "error" and lines[0]["code"] == "unauthorized", got
        assert not any(e.get("event") in ("monitor_ready", "sessions") for e in lines), got
        attach = _as_nobody(sock + ".attach", '{"list":true}')
        assert "sessions" not in attach and "pid" not in attach, attach
        assert "refused a connection from uid" in d.log()
    finally:
        assert d.stop() == 0, d.log()


# ------------------------------------------------------------------------------------------ TCP token


async def _tcp_exchange(port: int, first: bytes | None, *, then: bytes = b"") -> bytes:
    r, w = await asyncio.open_connection("127.0.0.1", port)
    if first is not None:
        w.write(first)
    if then:
        w.write(then)
    await w.drain()
    try:
        return await asyncio.wait_for(r.read(), 40.0)
    finally:
        w.close()


@ASYNC
async def test_tcp_refuses_clients_without_the_token(tcp_daemon: Any) -> None:
    tok_path = tcp_daemon.socket + ".token"
    assert mode(tok_path) == 0o600
    token = read_token(tok_path)
    assert len(token) >= 32
    ping = b'{"cmd":"ping","id":1}\n'
    for first in (
        ping,
        b'{"cmd":"hello"}\n',
        b'{"cmd":"hello","token":"' + b"0" * len(token) + b'"}\n',
        b'{"cmd":"hello","token":"' + token[:-1].encode() + b'"}\n',
        b'{"cmd":"hello","token":' + str(int(token[:8], 16)).encode() + b"}\n",
        b'{"cmd":"hello","token":["' + token.encode() + b'"]}\n',
        b'{"cmd":"hello","token":"' + token.upper().encode() + b'x"}\n',
        b"garbage\n",
    ):
        data = await _tcp_exchange(tcp_daemon.port, first, then=ping)
        events = [orjson.loads(x) for x in data.splitlines() if x.strip()]
        assert [e["event"] for e in events] == ["error"], (first, events)
        assert events[0]["code"] == "unauthorized"
    # attach over TCP without the token: refused, nothing listed
    data = await _tcp_exchange(tcp_daemon.port + 1, b'{"list":true}\n')
    assert b"sessions" not in data and b"token" in data
    # the right token: served
    r, w = await asyncio.open_connection("127.0.0.1", tcp_daemon.port)
    w.write(b'{"cmd":"hello","token":"' + token.encode() + b'","id":"h"}\n' + ping)
    got = []
    while len(got) < 3:
        got.append(orjson.loads(await asyncio.wait_for(r.readline(), 20.0)))
    w.close()
    assert [e["event"] for e in got] == ["monitor_ready", "capabilities", "pong"], got
    r, w = await asyncio.open_connection("127.0.0.1", tcp_daemon.port + 1)
    w.write(b'{"list":true,"token":"' + token.encode() + b'"}\n')
    listing = await asyncio.wait_for(r.read(), 20.0)
    w.close()
    assert b'"sessions"' in listing


def _token_compares(obj: Any) -> list[str]:
    """Every comparison in `obj`'s source that involves a name/attribute called `token` (for ==/!= misuse)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(obj)))
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops):
            names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            names |= {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
            if "token" in names:
                bad.append(ast.unparse(node))
    return bad


def test_token_compare_is_constant_time() -> None:
    for fn in (server_mod.Daemon._tcp_auth, attach_mod.AttachServer._tcp_selector):
        src = inspect.getsource(fn)
        assert "compare_digest(" in src, f"{fn.__qualname__} must use hmac/secrets.compare_digest"
        assert _token_compares(fn) == [], f"{fn.__qualname__} compares the token with ==/!="
    assert _token_compares(server_mod.Daemon) == [] and _token_compares(attach_mod.AttachServer) == []


# ------------------------------------------------------------------------------------------ secrets


@ASYNC
async def test_env_secrets_never_appear_in_logs_dump_list_or_errors(tmp_short: str) -> None:
    secret = "sk-ant-api03-" + secrets.token_hex(20)
    env = {"ANTHROPIC_API_KEY": secret, "LBH_SECRET": secret, "LBH_PLAIN": "visible-value"}
    d = spawn_daemon(os.path.join(tmp_short, "sec.sock"))
    raw: list[bytes] = []
    try:
        c = await connect(d.socket)
        ok = await c.request(L.fake_create("sec-1", env=env), "ready")
        assert ok["event"] == "ready", ok
        replies = [
            ok,
            await c.request(L.fake_create("sec-1", env=env), "ready"),  # reused
            await c.request({"cmd": "list"}, "sessions"),
            await c.request({"cmd": "dump", "session": "sec-1"}, "dump"),
            await c.request(
                {"cmd": "create", "session": "sec-2", "cli": "no-such-cli-" + secret[-6:], "env": env}
            ),
            await c.request(
                {
                    "cmd": "create",
                    "session": "sec-3",
                    "cli": "bash",
                    "env": env,
                    "working_dir": "/nonexistent/" + secrets.token_hex(4),
                }
            ),
            await c.request({"cmd": "create", "session": "sec-4", "cli": "bash", "env": {**env, "BAD": 5}}),
            await c.request({"cmd": "create", "session": "sec-5", "cli": "bash", "env": env, "args": "x"}),
            await c.request({"cmd": "create", "session": "sec-6", "cli": "bash", "env": [secret]}),
            await c.request({"cmd": "create", "session": 7, "env": env}),
        ]
        assert [r["event"] for r in replies[:4]] == ["ready", "ready", "sessions", "dump"], replies[:4]
        assert [r.get("code") for r in replies[4:]] == [
            "cli_not_found",
            "spawn_failed",
            "bad_field",
            "bad_field",
            "bad_field",
            "bad_field",
        ], replies[4:]
        # the env really reached the child (positive control, with the non-secret variable)
        await c.request({"cmd": "input", "session": "sec-1", "content": "env LBH_PLAIN"}, "input_sent")

        async def shows_plain() -> bool:
            dump = await c.request({"cmd": "dump", "session": "sec-1"}, "dump")
            return "LBH_PLAIN=visible-value" in dump["capture"]

        for _ in range(100):
            if await shows_plain():
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the create env never reached the child")
        await c.request({"cmd": "kill", "session": "sec-1"}, "killed")
        raw = [orjson.dumps(e) for e in c.events]
        await c.close()
    finally:
        assert d.stop() == 0, d.log()
    log = d.log()
    assert "sec-1" in log and "spawned" in log, "the log (at --log-level debug) talks about the session"
    assert secret not in log, "an env value leaked into the daemon's log"
    assert secret[-20:] not in log
    leaked = [r for r in raw if secret.encode() in r or secret[-20:].encode() in r]
    assert not leaked, f"an env value leaked to the client: {leaked[:2]}"


# ------------------------------------------------------------------------------------------ keystrokes

DOCUMENTED = {
    "Enter": b"\r",
    "Esc": b"\x1b",
    "Escape": b"\x1b",
    "Tab": b"\t",
    "BTab": b"\x1b[Z",
    "Space": b" ",
    "BSpace": b"\x7f",
    "Up": b"\x1b[A",
    "Down": b"\x1b[B",
    "Right": b"\x1b[C",
    "Left": b"\x1b[D",
    "Home": b"\x1b[H",
    "End": b"\x1b[F",
    "PageUp": b"\x1b[5~",
    "PageDown": b"\x1b[6~",
    "Delete": b"\x1b[3~",
    **{f"C-{c}": bytes([i + 1]) for i, c in enumerate("abcdefghijklmnopqrstuvwxyz")},
}
TRICKY = [
    "C-a; rm -rf /",
    "Enter\n",
    "Enter\r",
    "\x1b[2J",
    "$(id)",
    "`id`",
    "ab",
    "",
    "C-",
    "C-1",
    "M-",
    "M-ab",
    "M-C-a",
    "F13",
    "up up",
    " Up",
    "Up ",
    "\u00e9",
    "💥",
    "C-é",
    "M-Enter",
    "S-Tab",
    "PPage",
    "IC",
    "f12",
    "\n",
]
KEY_NAMES = st.one_of(st.sampled_from(sorted(DOCUMENTED)), st.sampled_from(TRICKY), st.text(max_size=5))


def expected_bytes(name: str) -> bytes | None:
    """Independent expectation: documented names -> their bytes; one character -> itself; else None
    (rejected, or an alias whose bytes are checked structurally)."""
    if name in DOCUMENTED:
        return DOCUMENTED[name]
    if len(name) == 1:
        return name.encode()
    return None


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(name=KEY_NAMES)
def test_key_names_encode_only_their_own_bytes(name: str) -> None:
    try:
        data = keymod.encode_key(name)
    except keymod.BadKey:
        assert expected_bytes(name) is None or name == "", name
        return
    exp = expected_bytes(name)
    if exp is not None:
        assert data == exp, (name, data)
        return
    # an alias (tmux names, M-x, F-keys): a short key sequence that never types the name itself
    assert 1 <= len(data) <= 8, (name, data)
    assert name.encode() not in data, (name, data)


@pytest.fixture(scope="module")
def key_log(daemon: Any, module_tmp_short: str) -> dict[str, Any]:
    path = Path(module_tmp_short) / "keys.log"

    async def make() -> None:
        c = await connect(daemon.socket)
        r = await c.request(
            L.fake_create("sec-keys", "--silent-start", env={"FAKE_TUI_LOG": str(path)}), "ready"
        )
        assert r["event"] == "ready", r
        await c.close()

    asyncio.run(make())
    return {"path": path, "seen": 0}


def _typed(state: dict[str, Any]) -> bytes:
    with contextlib.suppress(FileNotFoundError):
        return b"".join(bytes.fromhex(x) for x in state["path"].read_text().split())
    return b""


@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(names=st.lists(KEY_NAMES, min_size=1, max_size=6))
def test_keystrokes_through_the_daemon_type_exactly_their_bytes(
    daemon: Any, key_log: dict[str, Any], names: list[str]
) -> None:
    # Enter (\r) would run a line in the fake TUI: such names are left out
    names = [n for n in names if not (keymod.is_key(n) and b"\r" in keymod.encode_key(n))]
    assume(names)
    try:
        want: bytes | None = keymod.encode_keys(names)
    except keymod.BadKey:
        want = None
    marker = "\x1a"

    async def run() -> bytes:
        c = await connect(daemon.socket)
        r = await c.request({"cmd": "keystroke", "session": "sec-keys", "keys": names})
        if want is None:
            assert r["event"] == "error" and r["code"] == "bad_key", (names, r)
        else:
            assert r["event"] == "keystroke_sent" and r["keys"] == names, (names, r)
        await c.request({"cmd": "keystroke", "session": "sec-keys", "keys": [marker]}, "keystroke_sent")
        ok = await wait_until(lambda: _typed(key_log)[key_log["seen"] :].endswith(marker.encode()), 20.0)
        await c.close()
        assert ok, "marker never reached the PTY"
        data = _typed(key_log)
        got = data[key_log["seen"] : -1]
        key_log["seen"] = len(data)
        return got

    got = asyncio.run(run())
    assert got == (want or b""), (names, got, want)


# ------------------------------------------------------------------------------------------ no shell


@ASYNC
async def test_cli_and_working_dir_are_not_interpreted_by_a_shell(daemon: Any, tmp_short: str) -> None:
    canary = Path(tmp_short) / "pwned"
    t = str(canary)
    c = await connect(daemon.socket)
    for cli in (
        f"bash; touch {t}",
        f"$(touch {t})",
        f"`touch {t}`",
        f"sh -c 'touch {t}'",
        f"bash && touch {t}",
        f"bash|touch {t}",
        f"/bin/sh -c touch {t}",
    ):
        err = await c.request({"cmd": "create", "session": "sec-sh", "cli": cli})
        assert err["event"] == "error" and err["code"] == "cli_not_found", (cli, err)
    for wd in (f"/tmp; touch {t}", f"$(touch {t})", f"`touch {t}`", f"~/$(touch {t})"):
        err = await c.request({"cmd": "create", "session": "sec-sh", "cli": "bash", "working_dir": wd})
        assert err["event"] == "error" and err["code"] == "spawn_failed", (wd, err)
    # args reach the program verbatim (echo prints them; no shell expands them); `model` is not an argument of
    # an arbitrary program (the generic driver passes no `--model`), and no shell expands it either
    key = "sec-echo"
    await c.send(
        {
            "cmd": "create",
            "session": key,
            "cli": "/bin/echo",
            "args": [f"$(touch {t})", ";", "touch", t],
            "model": f"m`touch {t}`",
            "working_dir": tmp_short,
            "quiescence": 0.2,
            "id": "echo",
        }
    )
    await c.wait(lambda e: e.get("session") == key and e.get("event") in ("exited", "error"), timeout=30.0)
    await c.drain_for(0.3)
    text = orjson.dumps([e for e in c.events if e.get("session") == key]).decode()
    assert f"$(touch {t}) ; touch {t}" in text.replace("\\n", " ") and "--model" not in text, text
    await asyncio.sleep(0.3)
    assert not exists(canary), "a shell interpreted cli/working_dir/args/model"
    with contextlib.suppress(Exception):
        await c.request({"cmd": "kill", "session": key})
    await c.close()


@ASYNC
async def test_unexecutable_env_or_args_are_refused_before_fork(daemon: Any) -> None:
    c = await connect(daemon.socket)
    bad = [
        {"env": {"A": "x\x00y"}},
        {"env": {"A=B": "1"}},
        {"env": {"": "1"}},
        {"args": ["a\x00b"]},
    ]
    for i, extra in enumerate(bad):
        key = f"sec-nul-{i}"
        await c.send(
            {"cmd": "create", "session": key, "cli": "cat", "working_dir": "/tmp", "id": key, **extra}
        )
        err = await c.wait(lambda e, k=key: e.get("re") == k, timeout=20.0)
        await c.drain_for(0.3)
        mine = [e for e in c.events if e.get("session") == key]
        assert err["event"] == "error" and err["code"] in ("bad_field", "spawn_failed"), (extra, err)
        for text in ("uv__", "Assertion", "Traceback", "Task"):
            assert text not in err["message"], (extra, err["message"][:300])
        assert not [e for e in mine if e["event"] == "exited"], f"a child was forked for {extra}: {mine}"
    await c.close()


@ASYNC
async def test_session_keys_cannot_forge_log_lines(tmp_short: str) -> None:
    d = spawn_daemon(os.path.join(tmp_short, "log.sock"))
    forged = "2026-01-01 00:00:00,000 WARNING litbridge.daemon: refused a connection from uid 0"
    try:
        c = await connect(d.socket)
        key = "inj\n" + forged + "\n\x1b[2J"
        r = await c.request(
            {"cmd": "create", "session": key, "cli": "cat", "working_dir": "/tmp", "quiescence": 0.1}, "ready"
        )
        assert (r["event"], r["code"]) == ("error", "bad_field"), r  # such a name is never created
        assert "\x1b" not in r["message"] and "\n" not in r["message"]
        # the working directory is the client's choice too, and is logged when the CLI spawns
        cwd = os.path.join(tmp_short, "d\n" + forged.replace("/", "_") + "\n\x1b[2J")
        os.mkdir(cwd)
        r = await c.request(
            {"cmd": "create", "session": "inj", "cli": "cat", "working_dir": cwd, "quiescence": 0.1}, "ready"
        )
        assert r["event"] == "ready", r
        await c.request({"cmd": "kill", "session": "inj"}, "killed")
        await c.close()
    finally:
        assert d.stop() == 0, d.log()
    lines = d.log().splitlines()
    assert forged not in lines and forged.replace("/", "_") not in lines, (
        "a client's choice forged a log line"
    )
    assert any("spawned" in line and "inj" in line for line in lines), "the spawn (with its cwd) was logged"
    assert not any("\x1b" in line for line in lines), "raw escape sequences from a client reached the log"
