"""TCP loopback transport: the token handshake (read from the token file, or given), and a bad token."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _daemon import Daemon, free_port, running_daemon

from litbridge.client import AuthFailed, Client, read_token


@pytest.fixture(scope="module")
def tcp_daemon() -> Iterator[tuple[Daemon, int]]:
    port = free_port()
    with running_daemon(port=port) as d:
        yield d, port


@pytest.mark.asyncio
async def test_tcp_with_token_file(tcp_daemon: tuple[Daemon, int]) -> None:
    daemon, port = tcp_daemon
    assert read_token(daemon.socket)  # written next to the socket path
    async with Client.connect(port=port, socket=daemon.socket) as c:
        assert c.address == f"127.0.0.1:{port}"
        assert c.server_info["protocol_version"] == 1
        assert c.capabilities["event"] == "capabilities"  # the auth hello's reply
        await c.create("tcp1", "bash", args=["--norc"], quiescence=0.3, timeout=60)
        turn = await c.send("tcp1", "echo over-tcp")
        assert (await turn.result(timeout=60))["content"] == "over-tcp"


@pytest.mark.asyncio
async def test_tcp_explicit_token_and_wrong_token(tcp_daemon: tuple[Daemon, int]) -> None:
    daemon, port = tcp_daemon
    token = read_token(daemon.socket)
    async with Client.connect(port=port, token=token) as c:
        assert (await c.ping())["event"] == "pong"
    with pytest.raises(AuthFailed) as info:  # UntrustedDaemon: the daemon's proof of this token fails
        async with Client.connect(port=port, token="not-the-token"):
            pass
    assert info.value.code == "untrusted_daemon"
