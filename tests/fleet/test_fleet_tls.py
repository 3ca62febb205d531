"""Fleet mode over a TLS nats-server (a throwaway CA from the `tls_files` fixture): the daemon and the client
connect encrypted (the server's own connection list says so), and `create(env=...)` is accepted on both sides
without any plaintext opt-in, while a client that does not trust the CA cannot connect at all."""

from __future__ import annotations

import asyncio
import json
import socket
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from fleet_helpers import WAIT, TlsFiles, _wait
from lbd_helpers import start_daemon

from litbridge.client import Client, LitbridgeError
from litbridge.fleet.client import Fleet

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(240)]

BASH = {"cli": "bash", "args": ["--norc", "--noprofile"], "working_dir": "/tmp"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


MONITOR = _free_port()  # nats-server's HTTP monitoring port (/connz lists each connection's TLS version)


@pytest.fixture
def nats_config(tls_files: TlsFiles) -> str:
    return (
        f'tls {{ cert_file: "{tls_files.cert}", key_file: "{tls_files.key}" }}\nhttp: "127.0.0.1:{MONITOR}"\n'
    )


def connections() -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{MONITOR}/connz", timeout=10) as r:
        return list(json.load(r).get("connections") or [])


async def test_daemon_and_client_over_tls_accept_env(
    nats_server: Any, fleet_daemons: Any, tls_files: TlsFiles, tmp_path: Path
) -> None:
    tls_url = f"tls://127.0.0.1:{nats_server.port}"
    (d0,) = await asyncio.to_thread(
        fleet_daemons,
        1,
        "--nats-tls-ca",
        str(tls_files.ca),
        url=lambda name: tls_url,
        allow_plaintext_env=False,  # the daemon refuses create.env unless its link is TLS
    )
    # nats:// plus a CA: the client upgrades because the server requires TLS (is_tls reads the socket, not the URL)
    async with Fleet.connect(nats_server.url, tls_ca=str(tls_files.ca)) as fleet:
        assert fleet.tls is True and fleet.allow_plaintext_env is False
        await _wait(
            fleet.daemons,
            lambda ds: any(d["daemon"] == "d0" and d["available"] for d in ds),
            WAIT,
            "d0 live in the registry",
            repr,
        )
        ready = await fleet.create("sh", on="d0", env={"LB_SECRET": "over-tls"}, **BASH)
        assert (ready["event"], ready["daemon"]) == ("ready", "d0"), ready
        done = await (await fleet.send("d0/sh", "echo $LB_SECRET")).result(WAIT)
        assert (done["event"], done["content"]) == ("complete", "over-tls"), done

        conns = {c.get("name"): c for c in await asyncio.to_thread(connections)}
        daemon, client = (
            conns.get("litbridge d0"),
            next((c for n, c in conns.items() if n and n.startswith("litbridge-client")), None),
        )
        assert daemon and client, sorted(n or "" for n in conns)
        for conn in (daemon, client):
            assert conn.get("tls_version", "").startswith("1.") and conn.get("tls_cipher_suite"), conn

    assert "over-tls" not in d0.log()


async def test_untrusted_server_certificate_fails_instead_of_hanging(
    nats_server: Any, tmp_path: Path
) -> None:
    """Without the CA (the system's CAs do not know the throwaway one) the client fails with `no_nats` at once,
    naming the certificate, and a daemon says so in its log and retries while its socket keeps serving
    (nats-py alone retries such a server for ever, never returning from its connect)."""
    d = start_daemon(
        str(tmp_path / "d.sock"), "--nats", f"tls://127.0.0.1:{nats_server.port}", "--daemon-id", "dx"
    )
    try:
        with pytest.raises(LitbridgeError) as untrusted:
            async with asyncio.timeout(120):
                async with Fleet.connect(nats_server.url, allow_plaintext_env=True):
                    pass
        message = untrusted.value.message
        assert untrusted.value.code == "no_nats" and "--nats-tls-ca" in message, untrusted.value
        # the refused certificate ended the connect, not the connect's time limit
        assert "certificate is not trusted" in message and "no answer in" not in message, message
        await _wait(
            lambda: asyncio.sleep(0, d.log()),
            lambda log: log.count("its TLS certificate is not trusted") >= 2,
            WAIT,
            "the daemon reports the untrusted certificate, twice (it retries)",
            lambda log: log[-2000:],
        )
        async with Client.connect(socket=d.socket) as local:
            assert (await local.ping())["event"] == "pong"
    finally:
        d.stop()
