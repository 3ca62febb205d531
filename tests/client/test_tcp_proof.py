"""TCP: the daemon proves it knows the token before the client sends anything but a nonce.

An impostor (a plain asyncio server here, or a process of another user) that holds the port receives one line
with no secret in it, and the Python client and the `litbridge` CLI refuse it with `UntrustedDaemon` / exit
status 5. The real daemon still accepts the legacy `hello{token}` first line, and refuses a wrong proof.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
import sys
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from _daemon import Daemon, free_port, run_cli, running_daemon, spawn, stop
from _impostor import Impostor, OtherUserListener, Relay, Reply
from lbd_helpers import check_event

from litbridge.client import AuthFailed, Client, ConnectionLost, UntrustedDaemon, read_token
from litbridge.protocol import auth
from litbridge.protocol import events as ev
from litbridge.protocol.framing import encode

EXIT_UNTRUSTED = 5
TOKEN = secrets.token_hex(32)
SECRET = "sk-test-" + secrets.token_hex(16)


async def _wrong_proof(hello: dict[str, Any], w: asyncio.StreamWriter) -> None:
    w.write(encode(ev.auth_challenge(auth.new_nonce(), secrets.token_hex(32), hello.get("id"))))


async def _like_a_daemon(hello: dict[str, Any], w: asyncio.StreamWriter) -> None:
    """What an old daemon that skips auth, or a proxy, would say: monitor_ready and a hello reply."""
    w.write(encode(ev.monitor_ready(0, 0, ["claude"], 0, "x")))
    w.write(encode(ev.capabilities(["claude"], "*", 0, None, hello.get("id"))))


async def _refuse(hello: dict[str, Any], w: asyncio.StreamWriter) -> None:
    w.write(encode(ev.error("TCP clients must first send hello{token}", "unauthorized")))
    w.close()


async def _refuse_with_escapes(hello: dict[str, Any], w: asyncio.StreamWriter) -> None:
    w.write(encode(ev.error("\x1b]0;pwned\x07\x1b[2J", "unauthorized")))


async def _close(hello: dict[str, Any], w: asyncio.StreamWriter) -> None:
    w.close()


def _assert_only_a_nonce(impostor: Impostor) -> None:
    """The impostor got exactly the no-secret first line: cmd, id and auth.nonce, nothing else."""
    raw = bytes(impostor.received)
    assert TOKEN.encode() not in raw and SECRET.encode() not in raw
    lines = impostor.lines()
    assert len(lines) == 1, lines
    (first,) = lines
    assert set(first) == {"cmd", "id", "auth"} and first["cmd"] == "hello", first
    assert set(first["auth"]) == {"nonce"} and auth.valid_nonce(first["auth"]["nonce"]), first


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "reply",
    [_wrong_proof, _like_a_daemon, _refuse, _refuse_with_escapes, _close, None],
    ids=lambda f: getattr(f, "__name__", "silent"),
)
async def test_impostor_gets_only_a_nonce(reply: Reply | None) -> None:
    async with Impostor(reply) as imp:
        with pytest.raises(UntrustedDaemon) as info:
            async with Client.connect(port=imp.port, token=TOKEN, connect_timeout=3, reconnect=False) as c:
                await c.create("x", "bash", env={"API_KEY": SECRET})
        await asyncio.sleep(0.2)  # let the impostor read whatever else might have been sent
    assert info.value.code == "untrusted_daemon"
    assert isinstance(info.value, AuthFailed)  # callers that catch AuthFailed keep working
    assert f"127.0.0.1:{imp.port}" in info.value.message
    assert info.value.message.isprintable()  # what it said is escaped before anyone prints it
    _assert_only_a_nonce(imp)


@pytest.mark.asyncio
async def test_cli_refuses_an_impostor_with_exit_status_5() -> None:
    async with Impostor(_wrong_proof) as imp:
        code, out, text = await run_cli(
            *("create", "work", "--cli", "bash", "--env", f"API_KEY={SECRET}"),
            *("--port", str(imp.port)),
            env={"LITBRIDGE_TOKEN": TOKEN},
        )
        await asyncio.sleep(0.2)
    assert code == EXIT_UNTRUSTED, (out, text)
    assert "did not prove it is the litbridge daemon" in text and "untrusted_daemon" in text, text
    assert TOKEN not in text and SECRET not in text
    _assert_only_a_nonce(imp)


@pytest.mark.asyncio
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="listener owner from /proc/net/tcp")
@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to listen as nobody")
async def test_listener_of_another_user_is_refused_before_any_byte() -> None:
    async with OtherUserListener() as listener:
        with pytest.raises(UntrustedDaemon) as info:
            async with Client.connect(port=listener.port, token=TOKEN, connect_timeout=3, reconnect=False):
                pass
        received = await listener.received()
    assert "runs as uid" in info.value.message and "(nobody)" in info.value.message, info.value.message
    assert received.strip() == b"b''", received  # not even the nonce


# ------------------------------------------------------------------------------------------ the real daemon


@pytest.fixture(scope="module")
def tcp_daemon() -> Iterator[tuple[Daemon, int]]:
    port = free_port()
    with running_daemon(port=port) as d:
        yield d, port


async def _read_events(r: asyncio.StreamReader, n: int) -> list[dict[str, Any]]:
    out = []
    for _ in range(n):
        line = await asyncio.wait_for(r.readline(), 30)
        if not line:
            break
        e = orjson.loads(line)
        check_event(e)
        out.append(e)
    return out


@pytest.mark.asyncio
async def test_daemon_still_accepts_the_legacy_hello_token(tcp_daemon: tuple[Daemon, int]) -> None:
    daemon, port = tcp_daemon
    r, w = await asyncio.open_connection("127.0.0.1", port)
    w.write(
        encode({"cmd": "hello", "id": "h", "token": read_token(daemon.socket)}) + b'{"cmd":"ping","id":2}\n'
    )
    got = await _read_events(r, 3)
    w.close()
    assert [e["event"] for e in got] == ["monitor_ready", "capabilities", "pong"], got
    assert "auth_challenge" in got[0]["events"]  # the handshake is advertised


async def _challenge(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, str, dict[str, Any]]:
    r, w = await asyncio.open_connection("127.0.0.1", port)
    nonce = auth.new_nonce()
    w.write(encode({"cmd": "hello", "id": "a", "auth": {"nonce": nonce}}))
    (challenge,) = await _read_events(r, 1)
    return r, w, nonce, challenge


@pytest.mark.asyncio
async def test_daemon_proof_verifies_and_a_right_client_proof_is_served(
    tcp_daemon: tuple[Daemon, int],
) -> None:
    daemon, port = tcp_daemon
    token = read_token(daemon.socket)
    assert token
    r, w, nonce, ch = await _challenge(port)
    assert ch["event"] == "auth_challenge" and ch["re"] == "a"
    where = f"127.0.0.1:{port}"
    assert auth.same(auth.server_proof(token, nonce, ch["nonce"], where), ch["proof"])
    assert not auth.same(auth.server_proof(token, nonce, ch["nonce"], f"127.0.0.1:{port + 1}"), ch["proof"])
    proof = auth.client_proof(token, nonce, ch["nonce"], where)
    w.write(encode({"cmd": "hello", "id": "b", "auth": {"proof": proof}}) + b'{"cmd":"ping","id":3}\n')
    got = await _read_events(r, 3)
    w.close()
    assert [e["event"] for e in got] == ["monitor_ready", "capabilities", "pong"], got


@pytest.mark.asyncio
async def test_daemon_refuses_a_wrong_client_proof(tcp_daemon: tuple[Daemon, int]) -> None:
    daemon, port = tcp_daemon
    token = read_token(daemon.socket)
    assert token
    wrong = [
        lambda n, d: auth.client_proof("0" * 64, n, d, f"127.0.0.1:{port}"),  # another token
        lambda n, d: auth.server_proof(token, n, d, f"127.0.0.1:{port}"),  # the daemon's own proof echoed
        lambda n, d: auth.client_proof(token, n, d, f"127.0.0.1:{port + 7}"),  # relayed from elsewhere
        lambda n, d: token,  # the token itself is no proof
        lambda n, d: None,
    ]
    for make in wrong:
        r, w, nonce, ch = await _challenge(port)
        w.write(encode({"cmd": "hello", "id": "b", "auth": {"proof": make(nonce, ch["nonce"])}}))
        w.write(b'{"cmd":"list","id":4}\n')
        got = await _read_events(r, 5)
        w.close()
        assert [(e["event"], e.get("code")) for e in got] == [("error", "unauthorized")], got
    for bad_nonce in ("", "x" * 64, auth.new_nonce().upper(), auth.new_nonce()[:-1], 7):
        r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write(encode({"cmd": "hello", "id": "a", "auth": {"nonce": bad_nonce}}))
        got = await _read_events(r, 5)
        w.close()
        assert [(e["event"], e.get("code")) for e in got] == [("error", "unauthorized")], (bad_nonce, got)
    async with Client.connect(port=port, socket=daemon.socket) as c:  # and the daemon is fine
        assert (await c.ping())["event"] == "pong"


@pytest.mark.asyncio
async def test_client_with_a_wrong_token_refuses_the_real_daemon(tcp_daemon: tuple[Daemon, int]) -> None:
    _, port = tcp_daemon
    with pytest.raises(UntrustedDaemon) as info:
        async with Client.connect(port=port, token=TOKEN, reconnect=False):
            pass
    assert "proof of the token is wrong" in info.value.message


@pytest.mark.asyncio
async def test_a_relay_on_another_port_is_refused_and_never_sees_the_token(
    tcp_daemon: tuple[Daemon, int],
) -> None:
    """A recording relay on another port in front of the real daemon: the CLI refuses it (exit 5), the token
    never crosses it; straight to the daemon the same command works."""
    daemon, port = tcp_daemon
    token = read_token(daemon.socket)
    assert token
    # A relay on another port is exactly what the endpoint in the proof refuses: the daemon's proof names
    # 127.0.0.1:<its port>, the client expects the port it dialled.
    async with Relay(port) as relay:
        code, out, err = await run_cli("list", "--port", str(relay.port), env={"LITBRIDGE_TOKEN": token})
    assert code == EXIT_UNTRUSTED, (out, err)
    assert token.encode() not in relay.seen
    # Straight to the daemon it works.
    code, out, err = await run_cli("list", "--port", str(port), "--socket", daemon.socket)
    assert code == 0, (out, err)


@pytest.mark.asyncio
async def test_reconnect_after_a_restart_reads_the_new_token() -> None:
    """A restarted daemon writes a new token; a client that read the token file reads it again to reconnect."""
    port = free_port()
    with running_daemon(port=port) as daemon:
        async with Client.connect(port=port, socket=daemon.socket, reconnect_timeout=60) as c:
            first = (c.server_info["daemon_id"], read_token(daemon.socket))
            stop(daemon.proc)
            daemon.proc = spawn(daemon.socket, daemon.env, daemon.log, port)
            assert (await c.ping())["event"] == "pong"  # waits for the reconnect
            assert (c.server_info["daemon_id"], read_token(daemon.socket)) != first
            assert c.reconnects == 1


@pytest.mark.asyncio
async def test_an_impostor_that_takes_the_port_during_a_restart_gets_only_a_nonce() -> None:
    port = free_port()
    with running_daemon(port=port) as daemon:
        async with Client.connect(port=port, socket=daemon.socket, reconnect_timeout=60) as c:
            await c.ping()
            stop(daemon.proc)  # the client starts reconnecting; someone else binds the port first
            async with Impostor(_wrong_proof, port) as imp:
                with pytest.raises(ConnectionLost) as info:
                    await c.create("after", "bash", env={"API_KEY": SECRET}, timeout=60)
                await asyncio.sleep(0.2)
    assert isinstance(info.value.__cause__, UntrustedDaemon), info.value
    assert "did not prove it is the litbridge daemon" in info.value.message
    _assert_only_a_nonce(imp)


def test_proofs_are_directional_and_bound_to_everything() -> None:
    nc, nd, where = auth.new_nonce(), auth.new_nonce(), "127.0.0.1:7800"
    base = auth.server_proof(TOKEN, nc, nd, where)
    assert base != auth.client_proof(TOKEN, nc, nd, where)
    for other in (
        auth.server_proof(TOKEN[:-1] + ("0" if TOKEN[-1] != "0" else "1"), nc, nd, where),
        auth.server_proof(TOKEN, nd, nc, where),
        auth.server_proof(TOKEN, nc, auth.new_nonce(), where),
        auth.server_proof(TOKEN, nc, nd, "127.0.0.1:7801"),
    ):
        assert other != base
    assert auth.same(base, base) and not auth.same(base, base.upper()) and not auth.same(base, None)
    assert auth.endpoint(socket.getaddrinfo("127.0.0.1", 7800)[0][4]) == where
