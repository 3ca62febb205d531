"""TCP loopback transport: the token handshake (read from the token file, `--token-file`, `$LITBRIDGE_TOKEN`, or
given), `--token` on the command line warning, and a bad token."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _daemon import Daemon, free_port, run_cli, running_daemon

from litbridge.client import TOKEN_ENV, AuthFailed, Client, read_token


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


@pytest.mark.asyncio
async def test_client_takes_the_token_from_a_file_or_the_environment(
    tcp_daemon: tuple[Daemon, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`token_file=` and `$LITBRIDGE_TOKEN`: with no token file next to `socket`, either one is enough."""
    daemon, port = tcp_daemon
    token = read_token(daemon.socket)
    assert token
    elsewhere = str(tmp_path / "none.sock")  # no token file next to it
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    with pytest.raises(AuthFailed) as info:
        async with Client.connect(port=port, socket=elsewhere, reconnect=False):
            pass
    assert "no TCP token" in info.value.message and TOKEN_ENV in info.value.message, info.value.message
    (tmp_path / "tok").write_text(token + "\n")
    async with Client.connect(port=port, socket=elsewhere, token_file=tmp_path / "tok") as c:
        assert (await c.ping())["event"] == "pong"
    monkeypatch.setenv(TOKEN_ENV, token)
    async with Client.connect(port=port, socket=elsewhere) as c:
        assert (await c.ping())["event"] == "pong"


@pytest.mark.asyncio
async def test_cli_takes_the_token_from_the_environment_or_a_file(
    tcp_daemon: tuple[Daemon, int], tmp_path: Path
) -> None:
    """`litbridge list --port N` with the token in $LITBRIDGE_TOKEN or `--token-file FILE` (which wins over the
    environment); neither puts it on the command line, so neither warns."""
    daemon, port = tcp_daemon
    token = read_token(daemon.socket)
    assert token
    where = ("list", "--port", str(port), "--socket", str(tmp_path / "none.sock"))  # no token file next to it
    code, out, err = await run_cli(*where, env={TOKEN_ENV: ""})
    assert code == 1 and "no TCP token" in err and TOKEN_ENV in err, (out, err)
    code, out, err = await run_cli(*where, env={TOKEN_ENV: token})
    assert code == 0 and "warning" not in err, (out, err)
    tok = tmp_path / "tok"
    tok.write_text(token + "\n")
    tok.chmod(0o600)
    code, out, err = await run_cli(*where, "--token-file", str(tok), env={TOKEN_ENV: "not-the-token"})
    assert code == 0 and "warning" not in err, (out, err)
    code, out, err = await run_cli(*where, "--token-file", str(tmp_path / "missing"), env={TOKEN_ENV: token})
    assert code == 1 and f"{tmp_path / 'missing'} (--token-file) is unreadable" in err, (out, err)


@pytest.mark.asyncio
async def test_cli_token_on_the_command_line_still_works_and_warns(
    tcp_daemon: tuple[Daemon, int], tmp_path: Path
) -> None:
    """`--token T` (old scripts) still connects, and says once on stderr that other users can read it."""
    daemon, port = tcp_daemon
    token = read_token(daemon.socket)
    assert token
    code, out, err = await run_cli(
        *("list", "--port", str(port), "--socket", str(tmp_path / "none.sock"), "--token", token)
    )
    assert code == 0, (out, err)
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "--token" in warnings[0] and "--token-file" in warnings[0], err
    assert "/proc" in warnings[0] and token not in err, err
