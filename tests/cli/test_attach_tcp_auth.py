"""TCP attach (port N+1): the daemon proves it knows the token before `litbridge attach` sends anything else.

An impostor on the attach port receives one line, `{"auth":{"nonce"}}` (no token, no session name), and the CLI
exits with status 5. The real daemon answers `auth_challenge`, serves a selector carrying the right
`auth.proof`, still serves the legacy `{"token"}` selector, and refuses wrong proofs and tokens, staying up.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from _daemon import Daemon, free_port, run_cli, running_daemon
from _impostor import Impostor, OtherUserListener, Relay, Reply
from lbd_helpers import check_event

from litbridge.client import read_token
from litbridge.protocol import auth
from litbridge.protocol import events as ev
from litbridge.protocol.framing import encode

EXIT_UNTRUSTED = 5
TOKEN = secrets.token_hex(32)
SESSION = "secret-session-name"
BASH = ["--cli", "bash", "--arg=--norc", "--arg=--noprofile", "--env", "PS1=$ "]


async def _wrong_proof(first: dict[str, Any], w: asyncio.StreamWriter) -> None:
    w.write(encode(ev.auth_challenge(auth.new_nonce(), secrets.token_hex(32))))


async def _old_daemon(first: dict[str, Any], w: asyncio.StreamWriter) -> None:
    """What a daemon without the handshake says to a selector without a token, then closes."""
    w.write(b'\r\nlitbridge: attach over TCP needs {"token":...} in the selector\r\n')
    w.close()


async def _escapes(first: dict[str, Any], w: asyncio.StreamWriter) -> None:
    w.write(b"\x1b]0;pwned\x07\x1b[2Jhello\n")


async def _paint(first: dict[str, Any], w: asyncio.StreamWriter) -> None:
    """A listener that pretends to be a session at once (no handshake at all)."""
    w.write(b"\x1b[H\x1b[2J$ \n")


async def _close(first: dict[str, Any], w: asyncio.StreamWriter) -> None:
    w.close()


async def _run_attach(port: int, *extra: str, token: str | None = None) -> tuple[int, str]:
    """`litbridge attach SESSION --port PORT ...` (no tty: it stops before the terminal is touched), with
    `token` in $LITBRIDGE_TOKEN when given."""
    env = {"LITBRIDGE_TOKEN": token} if token is not None else None
    code, _, err = await run_cli("attach", SESSION, "--control", "--port", str(port), *extra, env=env)
    return code, err


def _assert_only_a_nonce(received: bytes, token: str = TOKEN) -> None:
    """Exactly the no-secret first line: `{"auth":{"nonce"}}`, nothing else (no token, no selector)."""
    assert token.encode() not in received and SESSION.encode() not in received, received
    lines = [orjson.loads(x) for x in received.splitlines() if x.strip()]
    assert len(lines) == 1, lines
    assert set(lines[0]) == {"auth"} and set(lines[0]["auth"]) == {"nonce"}, lines
    assert auth.valid_nonce(lines[0]["auth"]["nonce"]), lines


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "reply",
    [_wrong_proof, _old_daemon, _escapes, _paint, _close],
    ids=lambda f: f.__name__.strip("_"),
)
async def test_impostor_on_the_attach_port_gets_only_a_nonce(reply: Reply) -> None:
    async with Impostor(reply) as imp:
        code, err = await _run_attach(imp.port - 1, token=TOKEN)  # attach uses --port + 1
        await asyncio.sleep(0.2)  # let the impostor read whatever else might have been sent
    assert code == EXIT_UNTRUSTED, err
    assert f"127.0.0.1:{imp.port} did not prove it is the litbridge daemon" in err, err
    assert "[untrusted_daemon]" in err and TOKEN not in err, err
    assert "\x1b" not in err and "\x07" not in err, err  # what it said is escaped
    _assert_only_a_nonce(bytes(imp.received))


@pytest.mark.asyncio
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="listener owner from /proc/net/tcp")
@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to listen as nobody")
async def test_attach_port_of_another_user_is_refused_before_any_byte() -> None:
    async with OtherUserListener() as listener:
        code, err = await _run_attach(listener.port - 1, token=TOKEN)
        received = await listener.received()
    assert code == EXIT_UNTRUSTED, err
    assert "runs as uid" in err and "(nobody)" in err, err
    assert received.strip() == b"b''", received  # not even the nonce


# ------------------------------------------------------------------------------------------ the real daemon


@pytest.fixture(scope="module")
def tcp_daemon() -> Iterator[tuple[Daemon, int]]:
    port = free_port()
    with running_daemon(port=port) as d:
        assert d.cli("create", "tauth", *BASH).returncode == 0
        assert d.cli("send", "tauth", "echo auth-$((6*7))-ok").returncode == 0
        yield d, port


async def _read_all(r: asyncio.StreamReader, until: bytes | None = None) -> bytes:
    """Read until EOF (a refusal closes), or until `until` shows up (a paint keeps the connection open)."""
    data = b""
    while until is None or until not in data:
        chunk = await asyncio.wait_for(r.read(65536), 30)
        if not chunk:
            break
        data += chunk
    return data


async def _challenge(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, str, dict[str, Any]]:
    """Open the attach port, send a nonce, return the daemon's auth_challenge (checked against the schema)."""
    r, w = await asyncio.open_connection("127.0.0.1", port + 1)
    nonce = auth.new_nonce()
    w.write(orjson.dumps({"auth": {"nonce": nonce}}) + b"\n")
    challenge = orjson.loads(await asyncio.wait_for(r.readline(), 30))
    check_event(challenge)
    assert challenge["event"] == "auth_challenge", challenge
    return r, w, nonce, challenge


@pytest.mark.asyncio
async def test_daemon_proves_itself_and_serves_a_proven_selector(tcp_daemon: tuple[Daemon, int]) -> None:
    daemon, port = tcp_daemon
    token = read_token(daemon.socket)
    assert token
    where = f"127.0.0.1:{port + 1}"  # the attach port's own endpoint, not the control port's
    r, w, nonce, ch = await _challenge(port)
    assert auth.same(auth.server_proof(token, nonce, ch["nonce"], where), ch["proof"])
    assert not auth.same(auth.server_proof(token, nonce, ch["nonce"], f"127.0.0.1:{port}"), ch["proof"])
    proof = auth.client_proof(token, nonce, ch["nonce"], where)
    w.write(orjson.dumps({"session": "tauth", "control": False, "auth": {"proof": proof}}) + b"\n")
    paint = await _read_all(r, b"auth-42-ok")
    w.close()
    assert b"auth-42-ok" in paint and b"\x1b[" in paint
    # `list` works the same way behind the proof.
    r, w, nonce, ch = await _challenge(port)
    proof = auth.client_proof(token, nonce, ch["nonce"], where)
    w.write(orjson.dumps({"list": True, "auth": {"proof": proof}}) + b"\n")
    listed = orjson.loads(await _read_all(r))
    w.close()
    assert [s["name"] for s in listed["sessions"]] == ["tauth"], listed


@pytest.mark.asyncio
async def test_daemon_still_serves_the_legacy_token_selector(tcp_daemon: tuple[Daemon, int]) -> None:
    daemon, port = tcp_daemon
    r, w = await asyncio.open_connection("127.0.0.1", port + 1)
    w.write(orjson.dumps({"session": "tauth", "control": False, "token": read_token(daemon.socket)}) + b"\n")
    paint = await _read_all(r, b"auth-42-ok")
    w.close()
    assert b"auth-42-ok" in paint


@pytest.mark.asyncio
async def test_daemon_refuses_wrong_proofs_and_tokens_and_stays_up(tcp_daemon: tuple[Daemon, int]) -> None:
    daemon, port = tcp_daemon
    token = read_token(daemon.socket)
    assert token
    where = f"127.0.0.1:{port + 1}"
    wrong = [
        lambda n, d: {"proof": auth.client_proof("0" * 64, n, d, where)},  # another token
        lambda n, d: {"proof": auth.server_proof(token, n, d, where)},  # the daemon's own proof echoed
        lambda n, d: {"proof": auth.client_proof(token, n, d, f"127.0.0.1:{port}")},  # the control port's
        lambda n, d: {"proof": token},  # the token itself is no proof
        lambda n, d: {"proof": None},
        lambda n, d: None,  # no auth at all on the second line
    ]
    for make in wrong:
        r, w, nonce, ch = await _challenge(port)
        second: dict[str, Any] = {"session": "tauth", "token": token}  # a token here does not stand in
        if (given := make(nonce, ch["nonce"])) is not None:
            second["auth"] = given
        w.write(orjson.dumps(second) + b"\n" + b"echo typed-by-the-refused\r")
        out = await _read_all(r)
        w.close()
        assert b"wrong nonce or proof" in out and b"auth-42-ok" not in out, out
    refusals: list[dict[str, Any]] = [
        {"auth": {"nonce": bad}, "session": "tauth"}
        for bad in ("", "x" * 64, auth.new_nonce().upper(), auth.new_nonce()[:-1], 7, None)
    ]
    refusals += [{"auth": "yes", "session": "tauth"}, {"session": "tauth", "token": TOKEN}]
    refusals += [
        {"session": "tauth", "token": "tökén"},
        {"session": "tauth", "token": 12},
        {"session": "tauth"},
    ]
    for selector in refusals:
        r, w = await asyncio.open_connection("127.0.0.1", port + 1)
        w.write(orjson.dumps(selector) + b"\n")
        out = await _read_all(r)
        w.close()
        assert out.startswith(b"\r\nlitbridge: ") and b"auth-42-ok" not in out, (selector, out)
        assert b"auth" in out and b"selector" in out, (selector, out)
    for line in (b"tauth\n", b"list\n"):  # bare keys carry no auth at all
        r, w = await asyncio.open_connection("127.0.0.1", port + 1)
        w.write(line)
        out = await _read_all(r)
        w.close()
        assert out.startswith(b"\r\nlitbridge: ") and b"tauth" not in out, (line, out)
    assert daemon.proc.poll() is None
    dump = daemon.cli("dump", "tauth")
    assert dump.returncode == 0 and "typed-by-the-refused" not in dump.stdout
    assert daemon.cli("list", "--port", str(port), "--socket", daemon.socket).returncode == 0


@pytest.mark.asyncio
async def test_cli_with_a_wrong_token_refuses_the_real_daemon(tcp_daemon: tuple[Daemon, int]) -> None:
    _, port = tcp_daemon
    code, err = await _run_attach(port, token=TOKEN)
    assert code == EXIT_UNTRUSTED, err
    assert "proof of the token is wrong" in err and TOKEN not in err, err


@pytest.mark.asyncio
async def test_a_relay_in_front_of_the_attach_port_is_refused_and_never_sees_the_token(
    tcp_daemon: tuple[Daemon, int],
) -> None:
    """A recording relay on another port forwarding to the real attach port: the daemon's proof names its own
    endpoint, so the CLI refuses (exit 5) and the relay sees only the nonce."""
    daemon, port = tcp_daemon
    token = read_token(daemon.socket)
    assert token
    async with Relay(port + 1) as relay:
        code, err = await _run_attach(relay.port - 1, token=token)
    assert code == EXIT_UNTRUSTED, err
    assert "proof of the token is wrong" in err, err
    _assert_only_a_nonce(bytes(relay.seen), token)


@pytest.mark.asyncio
async def test_cli_attaches_over_tcp_with_stdin_from_dev_null(tcp_daemon: tuple[Daemon, int]) -> None:
    """`litbridge attach S --port N --read-only < /dev/null > log`: the proof-first handshake, then the paint
    and the live output go to stdout (a stdin that cannot be polled is treated as already at EOF)."""
    daemon, port = tcp_daemon
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "litbridge", "attach", "tauth", "--read-only"),
        *("--port", str(port), "--socket", daemon.socket),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    out = b""
    try:
        while b"auth-42-ok" not in out:
            chunk = await asyncio.wait_for(proc.stdout.read(65536), 60)
            assert chunk, (out, await proc.stderr.read())
            out += chunk
        assert daemon.cli("send", "tauth", "echo live-$((5*5))-too").returncode == 0
        while b"live-25-too" not in out:
            chunk = await asyncio.wait_for(proc.stdout.read(65536), 60)
            assert chunk, (out, await proc.stderr.read())
            out += chunk
        assert proc.returncode is None  # still attached
    finally:
        if proc.returncode is None:
            proc.terminate()
        await proc.wait()
    assert b"Traceback" not in await proc.stderr.read()
